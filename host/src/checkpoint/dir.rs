//! A folder of checkpoints: their names (`PREFIX-STEP.npz`, or a manifest
//! `PREFIX-STEP.manifest.toml` with `PREFIX-STEP.rankR.npz` beside it), the newest one that
//! passes its checks, `--keep N` rotation, and temporary files a killed writer left.

use super::reader::{read_manifest, verify_manifest, CheckpointReader};
use super::sink::{parent, sync_dir};
use super::{one_line, CheckpointError, Result};
use std::path::{Path, PathBuf};

/// The file name of a one-rank checkpoint: `PREFIX-STEP.npz`, the step in 10 digits (so names
/// sort by step).
pub fn checkpoint_name(prefix: &str, step: u64) -> String {
    format!("{prefix}-{step:010}.npz")
}

/// The file name of rank `rank`'s file of a checkpoint of several ranks:
/// `PREFIX-STEP.rankRRR.npz`.
pub fn rank_name(prefix: &str, step: u64, rank: u32) -> String {
    format!("{prefix}-{step:010}.rank{rank:03}.npz")
}

/// The file name of the manifest of a checkpoint of several ranks: `PREFIX-STEP.manifest.toml`.
pub fn manifest_name(prefix: &str, step: u64) -> String {
    format!("{prefix}-{step:010}.manifest.toml")
}

/// Whether a checkpoint is one file or a manifest of several.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// `PREFIX-STEP.npz`.
    File,
    /// `PREFIX-STEP.manifest.toml`.
    Manifest,
}

/// A checkpoint in a folder, as its name gives it (not yet opened).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its path.
    pub path: PathBuf,
    /// The name's prefix.
    pub prefix: String,
    /// The name's step.
    pub step: u64,
    /// One file or a manifest.
    pub kind: EntryKind,
}

/// The prefix, step and kind of a checkpoint's file name; `None` for other names (rank files,
/// temporary files included).
fn parse_name(name: &str) -> Option<(String, u64, EntryKind)> {
    let (stem, kind) = if let Some(s) = name.strip_suffix(".manifest.toml") {
        (s, EntryKind::Manifest)
    } else {
        (name.strip_suffix(".npz")?, EntryKind::File)
    };
    let (prefix, digits) = stem.rsplit_once('-')?;
    if prefix.is_empty() || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((prefix.to_string(), digits.parse().ok()?, kind))
}

/// The checkpoints in `dir`, by step (then name), oldest first.
pub fn list(dir: &Path) -> Result<Vec<Entry>> {
    let read = std::fs::read_dir(dir).map_err(|e| CheckpointError::Read {
        path: dir.display().to_string(),
        message: one_line(e),
    })?;
    let mut out: Vec<Entry> = read
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let (prefix, step, kind) = parse_name(&name)?;
            Some(Entry {
                path: e.path(),
                prefix,
                step,
                kind,
            })
        })
        .collect();
    out.sort_by(|a, b| (a.step, &a.path).cmp(&(b.step, &b.path)));
    Ok(out)
}

/// The checkpoint [`newest_valid`] picked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Its path (a `.npz`, or a manifest).
    pub path: PathBuf,
    /// Its step.
    pub step: u64,
    /// One file or a manifest.
    pub kind: EntryKind,
    /// One line per newer checkpoint skipped, saying why.
    pub notes: Vec<String>,
}

/// The newest checkpoint in `dir` (by the step in its name) whose header and checksums pass
/// (a manifest: every rank's file); newer ones that fail are skipped with a note each.
pub fn newest_valid(dir: &Path) -> Result<Found> {
    let mut notes = Vec::new();
    for e in list(dir)?.into_iter().rev() {
        let checked = match e.kind {
            EntryKind::File => CheckpointReader::open(&e.path).and_then(|mut r| {
                r.verify()?;
                Ok(r.header().step)
            }),
            EntryKind::Manifest => verify_manifest(&e.path).map(|m| m.step),
        };
        match checked {
            Ok(step) => {
                return Ok(Found {
                    path: e.path,
                    step,
                    kind: e.kind,
                    notes,
                })
            }
            Err(err) => notes.push(format!("skipped: {err}")),
        }
    }
    Err(CheckpointError::NoValid {
        dir: dir.display().to_string(),
        notes: match notes.is_empty() {
            true => String::new(),
            false => format!(" ({})", notes.join("; ")),
        },
    })
}

/// `--keep N`: after `newest` (a checkpoint just finished) is in place, deletes the checkpoints
/// of its prefix with an earlier step, all but the `keep - 1` latest of them; a manifest goes
/// before its rank files. Checkpoints with a later step than `newest` (another run's) and other
/// files are left alone. Returns what it deleted.
pub fn rotate(newest: &Path, keep: usize) -> Result<Vec<PathBuf>> {
    let p = newest.display().to_string();
    let usage = |message: String| CheckpointError::Usage {
        path: p.clone(),
        message,
    };
    if keep == 0 {
        return Err(usage("--keep must be at least 1".into()));
    }
    let name = newest.file_name().map(|n| n.to_string_lossy().into_owned());
    let (prefix, step, kind) = name
        .as_deref()
        .and_then(parse_name)
        .ok_or_else(|| usage("not named PREFIX-STEP.npz or PREFIX-STEP.manifest.toml".into()))?;
    match kind {
        EntryKind::File => CheckpointReader::open(newest).map(|_| ())?,
        EntryKind::Manifest => read_manifest(newest).map(|_| ())?,
    }
    let dir = parent(newest);
    let mut older: Vec<Entry> = list(dir)?
        .into_iter()
        .filter(|e| e.prefix == prefix && e.step < step)
        .collect();
    older.reverse();
    let mut removed = Vec::new();
    let remove = |path: &Path, removed: &mut Vec<PathBuf>| -> Result<()> {
        std::fs::remove_file(path).map_err(|e| CheckpointError::Write {
            path: path.display().to_string(),
            message: format!("could not delete an old checkpoint: {}", one_line(e)),
        })?;
        removed.push(path.to_path_buf());
        Ok(())
    };
    for e in older.into_iter().skip(keep - 1) {
        remove(&e.path, &mut removed)?;
        if e.kind == EntryKind::Manifest {
            let ranks = format!("{prefix}-{:010}.rank", e.step);
            for f in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let n = f.file_name().to_string_lossy().into_owned();
                if n.starts_with(&ranks) && n.ends_with(".npz") {
                    remove(&f.path(), &mut removed)?;
                }
            }
        }
    }
    if !removed.is_empty() {
        sync_dir(dir).map_err(|e| CheckpointError::Write {
            path: dir.display().to_string(),
            message: format!("fsync of the folder: {}", one_line(e)),
        })?;
    }
    Ok(removed)
}

/// Deletes the temporary files (`NAME.tmp-PID`) in `dir` that a writer which no longer runs
/// left (a killed run); those of running processes stay. Returns what it deleted. Off Unix it
/// deletes nothing.
pub fn remove_stale_temps(dir: &Path) -> Result<Vec<PathBuf>> {
    let read = std::fs::read_dir(dir).map_err(|e| CheckpointError::Read {
        path: dir.display().to_string(),
        message: one_line(e),
    })?;
    let mut removed = Vec::new();
    for e in read.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((stem, pid)) = name.rsplit_once(".tmp-") else {
            continue;
        };
        let is_ours = stem.ends_with(".npz") || stem.ends_with(".manifest.toml");
        let Ok(pid) = pid.parse::<u32>() else {
            continue;
        };
        if is_ours && pid != std::process::id() && !alive(pid) {
            std::fs::remove_file(e.path()).map_err(|err| CheckpointError::Write {
                path: e.path().display().to_string(),
                message: format!("could not delete a stale temporary file: {}", one_line(err)),
            })?;
            removed.push(e.path());
        }
    }
    Ok(removed)
}

/// Whether process `pid` runs (or may: off Unix, always).
fn alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else {
            return false;
        };
        // SAFETY: signal 0 only asks whether the process exists; nothing is sent.
        let r = unsafe { libc::kill(pid, 0) };
        r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        assert_eq!(
            parse_name(&checkpoint_name("fluid", 42)),
            Some(("fluid".into(), 42, EntryKind::File))
        );
        assert_eq!(
            parse_name(&manifest_name("my-run", 7)),
            Some(("my-run".into(), 7, EntryKind::Manifest))
        );
        assert_eq!(parse_name(&rank_name("fluid", 7, 1)), None);
        assert_eq!(parse_name("fluid-0000000001.npz.tmp-123"), None);
        assert_eq!(parse_name("flock.npz"), None);
    }
}
