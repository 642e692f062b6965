//! The checkpoint flags every run command shares (`--checkpoint-every`, `--checkpoint-dir`,
//! `--keep`, `--resume`) and what they decide: when a run writes a checkpoint, where, which
//! older ones go, and which checkpoint a resumed run reads.

use super::{checkpoint_name, newest_valid, remove_stale_temps, rotate, CheckpointError, Result};
use std::path::{Path, PathBuf};

/// The checkpoint flags of `fluid run` and `flock run`.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct CheckpointArgs {
    /// Write a checkpoint every K steps (steps counted from the run's start, step 0, so a
    /// resumed run keeps the same cadence). 0: only when a SIGINT or SIGTERM stops the run.
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub checkpoint_every: u64,
    /// Folder of the checkpoints [default: `checkpoints` beside the outputs: inside an --out
    /// folder, beside an --out or --save file, else in the current folder].
    #[arg(long, value_name = "DIR")]
    pub checkpoint_dir: Option<PathBuf>,
    /// Keep the newest N checkpoints of this run's name; older ones are deleted once a new one
    /// is complete. 0 keeps all.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub keep: usize,
    /// Resume from a checkpoint (a `.npz`, a `.manifest.toml` of several ranks, or a folder:
    /// its newest valid checkpoint) and run to the scene's (or --steps') end.
    #[arg(long, value_name = "PATH")]
    pub resume: Option<PathBuf>,
}

/// When and where a run writes its checkpoints.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The folder.
    pub dir: PathBuf,
    /// Every this many steps of the run's step count (0: only at a stop).
    pub every: u64,
    /// Checkpoints kept (0: all).
    pub keep: usize,
    /// The files' name before `-STEP.npz` (the scene's or the flock's name).
    pub prefix: String,
}

impl Schedule {
    /// The schedule of `args` for a run called `prefix` whose outputs go to `out` (a folder
    /// when `out_is_dir`, else a file; `None`: no outputs).
    pub fn new(args: &CheckpointArgs, prefix: &str, out: Option<&Path>, out_is_dir: bool) -> Self {
        Schedule {
            dir: args
                .checkpoint_dir
                .clone()
                .unwrap_or_else(|| default_dir(out, out_is_dir)),
            every: args.checkpoint_every,
            keep: args.keep,
            prefix: sanitize(prefix),
        }
    }

    /// Whether the step count `step` is a checkpoint step.
    pub fn due(&self, step: u64) -> bool {
        self.every > 0 && step > 0 && step.is_multiple_of(self.every)
    }

    /// The path of the one-rank checkpoint at `step`.
    pub fn path(&self, step: u64) -> PathBuf {
        self.dir.join(checkpoint_name(&self.prefix, step))
    }

    /// Creates the folder (with its parents) and removes temporary files a killed writer of
    /// this process's name left there. Call once, before the first step.
    pub fn prepare(&self) -> Result<()> {
        std::fs::create_dir_all(&self.dir).map_err(|e| CheckpointError::Write {
            path: self.dir.display().to_string(),
            message: super::one_line(e),
        })?;
        remove_stale_temps(&self.dir)?;
        Ok(())
    }

    /// After the checkpoint `newest` is complete: `--keep` deletes the older ones.
    pub fn rotate(&self, newest: &Path) -> Result<Vec<PathBuf>> {
        match self.keep {
            0 => Ok(Vec::new()),
            k => rotate(newest, k),
        }
    }
}

/// The default folder: `checkpoints` inside an output folder, beside an output file, else in
/// the current folder.
pub fn default_dir(out: Option<&Path>, out_is_dir: bool) -> PathBuf {
    match out {
        Some(d) if out_is_dir => d.join("checkpoints"),
        Some(f) => match f.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.join("checkpoints"),
            _ => PathBuf::from("checkpoints"),
        },
        None => PathBuf::from("checkpoints"),
    }
}

/// A name usable as a file prefix: letters, digits, `_`, `-`, `.` and `+`; anything else
/// becomes `_`.
fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' | '.' | '+' => c,
            _ => '_',
        })
        .collect();
    if s.is_empty() {
        "run".into()
    } else {
        s
    }
}

/// What `--resume PATH` names: a checkpoint file or manifest as given, or a folder's newest
/// valid checkpoint (with a note per newer one skipped).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResumeFrom {
    /// A `.npz` or a `.manifest.toml`.
    pub path: PathBuf,
    /// Whether it is a manifest of several ranks.
    pub manifest: bool,
    /// Newer checkpoints of the folder that failed their checks, one line each.
    pub notes: Vec<String>,
}

/// Resolves `--resume PATH`.
pub fn resolve(path: &Path) -> Result<ResumeFrom> {
    if path.is_dir() {
        let found = newest_valid(path)?;
        return Ok(ResumeFrom {
            manifest: found.kind == super::EntryKind::Manifest,
            path: found.path,
            notes: found.notes,
        });
    }
    if !path.exists() {
        return Err(CheckpointError::Read {
            path: path.display().to_string(),
            message: "no such file or folder".into(),
        });
    }
    let manifest = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".manifest.toml"));
    Ok(ResumeFrom {
        path: path.to_path_buf(),
        manifest,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_folders_sit_beside_the_outputs() {
        assert_eq!(
            default_dir(Some(Path::new("out")), true),
            PathBuf::from("out/checkpoints")
        );
        assert_eq!(
            default_dir(Some(Path::new("runs/a.npz")), false),
            PathBuf::from("runs/checkpoints")
        );
        assert_eq!(
            default_dir(Some(Path::new("a.npz")), false),
            PathBuf::from("checkpoints")
        );
        assert_eq!(default_dir(None, false), PathBuf::from("checkpoints"));
    }

    #[test]
    fn due_steps_count_from_the_start() {
        let s = Schedule::new(
            &CheckpointArgs {
                checkpoint_every: 50,
                ..Default::default()
            },
            "my scene",
            None,
            false,
        );
        assert_eq!(s.prefix, "my_scene");
        assert!(!s.due(0) && !s.due(49) && s.due(50) && s.due(100));
        assert_eq!(
            s.path(50),
            PathBuf::from("checkpoints/my_scene-0000000050.npz")
        );
    }
}
