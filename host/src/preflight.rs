//! Checks made before any work starts, so that a run fails in its first second with one line
//! rather than after minutes of simulation (an unwritable output path) or in the kernel's
//! out-of-memory killer (a state larger than the host's memory).
//!
//! - [`check_host_memory`]: the bytes a CPU allocation needs against the available memory
//!   ([`available_memory`]: `MemAvailable` from `/proc/meminfo`, or the bytes in
//!   [`AVAILABLE_MEMORY_ENV`] where that is set; where neither exists the check passes and the
//!   allocation decides). [`check_memory`] is the same check against a figure the caller gives.
//! - [`check_output_file`]: the folder exists, the name is not a folder, and a file can be
//!   created there.
//! - [`check_output_dir`]: the folder is one, or the nearest folder above it that exists can
//!   take it, and files can be written there; nothing is created. [`create_output_dir`] creates
//!   it, called once every other check has passed, so a refused run leaves no empty folder.

use std::path::{Path, PathBuf};

/// Why a run was refused before it started.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    #[error(
        "not enough memory for {what}: it needs {} ({needed} bytes), {} ({available} bytes) \
         are available",
        human_bytes(*needed),
        human_bytes(*available)
    )]
    Memory {
        what: String,
        needed: u64,
        available: u64,
    },
    #[error("{AVAILABLE_MEMORY_ENV} must be a number of bytes, got `{value}`")]
    MemoryFigure { value: String },
    #[error("cannot write {}: it is a folder, not a file", path.display())]
    IsADirectory { path: PathBuf },
    #[error("cannot write {}: folder {} does not exist", path.display(), folder.display())]
    NoFolder { path: PathBuf, folder: PathBuf },
    #[error("cannot write into {}: it is a file, not a folder", path.display())]
    NotADirectory { path: PathBuf },
    #[error("cannot create folder {}: {source}", path.display())]
    CreateDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    NotWritable {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// `13.50 GB`-style sizes (decimal units, as `free -h --si` and the error messages of allocators).
pub fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1e12 {
        format!("{:.2} TB", b / 1e12)
    } else if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b} B")
    }
}

/// The environment variable that, where set, gives the available memory in bytes instead of
/// `/proc/meminfo` (a smaller budget than the machine's, and the tests' fixed figure).
pub const AVAILABLE_MEMORY_ENV: &str = "MURMUR_AVAILABLE_MEMORY";

/// Memory available for new allocations (bytes): [`AVAILABLE_MEMORY_ENV`] where it is set,
/// else what the kernel reports as available without swapping; `None` where neither exists
/// (no `/proc/meminfo`, or no `MemAvailable` line in it).
pub fn available_memory() -> Result<Option<u64>, PreflightError> {
    let set = std::env::var(AVAILABLE_MEMORY_ENV).ok();
    available_from(set.as_deref(), || {
        std::fs::read_to_string("/proc/meminfo").ok()
    })
}

/// The available memory from the variable's value (`set`) or, without one, from the text of
/// `/proc/meminfo` (`meminfo`, read only then).
fn available_from(
    set: Option<&str>,
    meminfo: impl FnOnce() -> Option<String>,
) -> Result<Option<u64>, PreflightError> {
    match set {
        Some(v) => match v.trim().parse() {
            Ok(bytes) => Ok(Some(bytes)),
            Err(_) => Err(PreflightError::MemoryFigure {
                value: v.to_string(),
            }),
        },
        None => Ok(meminfo().as_deref().and_then(parse_mem_available)),
    }
}

fn parse_mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let mut words = line["MemAvailable:".len()..].split_whitespace();
    let value: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") | None => value.checked_mul(1024),
        Some(_) => None,
    }
}

/// Refuses an allocation of `bytes` for `what` (e.g. `"the CPU flock of 2000000000 boids"`)
/// that exceeds the [`available_memory`]. Passes when the available memory is unknown.
pub fn check_host_memory(what: &str, bytes: u64) -> Result<(), PreflightError> {
    check_memory(what, bytes, available_memory()?)
}

/// Refuses an allocation of `bytes` for `what` larger than `available` bytes; passes when
/// `available` is `None` (unknown).
pub fn check_memory(what: &str, bytes: u64, available: Option<u64>) -> Result<(), PreflightError> {
    match available {
        Some(available) if bytes > available => Err(PreflightError::Memory {
            what: what.to_string(),
            needed: bytes,
            available,
        }),
        _ => Ok(()),
    }
}

/// Checks that `path` can be written as a file: its folder exists, `path` is not a folder, and
/// a file can be created in the folder (a probe file, removed at once). An existing file at
/// `path` is fine: outputs replace it atomically when the run succeeds.
pub fn check_output_file(path: &Path) -> Result<(), PreflightError> {
    if path.is_dir() {
        return Err(PreflightError::IsADirectory { path: path.into() });
    }
    let folder = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !folder.is_dir() {
        return Err(PreflightError::NoFolder {
            path: path.into(),
            folder: folder.into(),
        });
    }
    probe(folder).map_err(|source| PreflightError::NotWritable {
        path: path.into(),
        source,
    })
}

/// Checks that files can be written into the folder `path` without creating it: an existing
/// `path` must be a writable folder; a missing one needs its nearest existing ancestor to be a
/// writable folder (where [`create_output_dir`] will make it).
pub fn check_output_dir(path: &Path) -> Result<(), PreflightError> {
    if path.exists() {
        if !path.is_dir() {
            return Err(PreflightError::NotADirectory { path: path.into() });
        }
        return probe(path).map_err(|source| PreflightError::NotWritable {
            path: path.into(),
            source,
        });
    }
    let mut above = path.parent();
    while let Some(p) = above {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        if p.exists() {
            if !p.is_dir() {
                return Err(PreflightError::CreateDir {
                    path: path.into(),
                    source: std::io::Error::other(format!("{} is a file", p.display())),
                });
            }
            return probe(p).map_err(|source| PreflightError::CreateDir {
                path: path.into(),
                source,
            });
        }
        above = if p == Path::new(".") {
            None
        } else {
            p.parent()
        };
    }
    Ok(())
}

/// Creates the folder `path` (and its parents) that [`check_output_dir`] accepted: the last
/// step before a command writes into it.
pub fn create_output_dir(path: &Path) -> Result<(), PreflightError> {
    std::fs::create_dir_all(path).map_err(|source| PreflightError::CreateDir {
        path: path.into(),
        source,
    })
}

/// Creates and removes a hidden file in `folder`: the one test of writability that covers
/// permissions, read-only mounts and ACLs alike. The probe's name is this process's and a count, so threads (CPU ranks) never share one.
fn probe(folder: &Path) -> std::io::Result<()> {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let k = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = folder.join(format!(".murmur-probe-{}-{k}", std::process::id()));
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&p)?;
    std::fs::remove_file(&p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meminfo_parsing() {
        let text = "MemTotal:       16000000 kB\nMemFree: 100 kB\nMemAvailable:    8000000 kB\n";
        assert_eq!(parse_mem_available(text), Some(8_000_000 * 1024));
        assert_eq!(parse_mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(parse_mem_available("MemAvailable: lots kB\n"), None);
    }

    #[test]
    fn memory_check_names_both_figures() {
        let e = check_memory("the test", 13_500_000_000, Some(8_000_000_000)).unwrap_err();
        let s = e.to_string();
        assert!(
            s.contains("13500000000 bytes") && s.contains("8000000000 bytes"),
            "{s}"
        );
        assert!(s.contains("13.50 GB"), "{s}");
        assert!(
            check_memory("x", 10, Some(10)).is_ok(),
            "exactly what is there fits"
        );
        assert!(matches!(
            check_memory("x", 11, Some(10)),
            Err(PreflightError::Memory {
                needed: 11,
                available: 10,
                ..
            })
        ));
        assert!(check_memory("x", u64::MAX, None).is_ok(), "unknown: passes");
    }

    #[test]
    fn the_variable_sets_the_available_memory() {
        let never = || -> Option<String> { panic!("meminfo read although the variable is set") };
        assert_eq!(available_from(Some("1000"), never).unwrap(), Some(1000));
        assert_eq!(available_from(Some(" 0\n"), never).unwrap(), Some(0));
        for bad in ["", "lots", "-1", "1e9", "8 GB"] {
            let e = available_from(Some(bad), never).unwrap_err();
            assert!(matches!(e, PreflightError::MemoryFigure { .. }), "{bad}");
            assert!(e.to_string().contains(AVAILABLE_MEMORY_ENV), "{e}");
        }
        let meminfo = || Some("MemTotal: 4 kB\nMemAvailable: 3 kB\n".to_string());
        assert_eq!(available_from(None, meminfo).unwrap(), Some(3 * 1024));
        assert_eq!(
            available_from(None, || None).unwrap(),
            None,
            "no /proc/meminfo"
        );
    }

    #[test]
    fn output_paths() {
        let dir = std::env::temp_dir().join(format!("murmur-preflight-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(check_output_file(&dir.join("a.npz")).is_ok());
        assert!(matches!(
            check_output_file(&dir),
            Err(PreflightError::IsADirectory { .. })
        ));
        assert!(matches!(
            check_output_file(&dir.join("missing/a.npz")),
            Err(PreflightError::NoFolder { .. })
        ));
        let sub = dir.join("made/here");
        check_output_dir(&sub).unwrap();
        assert!(!dir.join("made").exists(), "the check creates nothing");
        create_output_dir(&sub).unwrap();
        assert!(sub.is_dir());
        check_output_dir(&sub).unwrap();
        let file = dir.join("f.txt");
        std::fs::write(&file, b"x").unwrap();
        assert!(matches!(
            check_output_dir(&file),
            Err(PreflightError::NotADirectory { .. })
        ));
        assert!(matches!(
            check_output_dir(&file.join("below")),
            Err(PreflightError::CreateDir { .. })
        ));
        assert_eq!(std::fs::read_dir(&sub).unwrap().count(), 0, "no probe left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
