//! `murmur ... --gpus N` on one machine: starts N copies of the same command line, one per GPU,
//! each told its rank through `MURMUR_RANK` / `MURMUR_WORLD_SIZE` / `MURMUR_LOCAL_RANK` and
//! meeting the others through a fresh rendezvous file. When one ends with an error, the others
//! are stopped (SIGTERM, then SIGKILL after a grace period) and the error names the rank, so a
//! failed rank never leaves the rest hanging.

use super::CommError;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// Seconds the other ranks get to stop after one failed, before they are killed.
const GRACE: Duration = Duration::from_secs(5);

/// Whether this process must start the ranks itself: `--gpus N` with N > 1 and no rank
/// variables of a launcher (a process started by [`launch`] has them).
pub fn is_launcher(gpus: Option<usize>) -> bool {
    matches!(gpus, Some(n) if n > 1) && std::env::var_os("MURMUR_RANK").is_none()
}

/// Starts `gpus` copies of this process's command line and waits for them. `Ok` when every
/// rank succeeded.
pub fn launch(gpus: usize) -> Result<(), CommError> {
    let exe = std::env::current_exe()
        .map_err(|e| CommError::Setup(format!("cannot find murmur's own executable: {e}")))?;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let dir = std::env::temp_dir().join(format!("murmur-ranks-{}", std::process::id()));
    std::fs::create_dir_all(&dir)
        .map_err(|e| CommError::Setup(format!("cannot create {}: {e}", dir.display())))?;
    let rendezvous = dir.join("nccl-id");
    let lib_dir = nccl_link_dir(&dir);
    let mut children: Vec<Child> = Vec::with_capacity(gpus);
    for rank in 0..gpus {
        let mut cmd = Command::new(&exe);
        cmd.args(&args)
            .env("MURMUR_RANK", rank.to_string())
            .env("MURMUR_WORLD_SIZE", gpus.to_string())
            .env("MURMUR_LOCAL_RANK", rank.to_string())
            .env(
                "MURMUR_RENDEZVOUS",
                format!("file:{}", rendezvous.display()),
            )
            .env("NCCL_NVLS_ENABLE", "0");
        if let Some(lib) = &lib_dir {
            let old = std::env::var_os("LD_LIBRARY_PATH").unwrap_or_default();
            let mut path = lib.clone().into_os_string();
            if !old.is_empty() {
                path.push(":");
                path.push(old);
            }
            cmd.env("LD_LIBRARY_PATH", path);
        }
        // Its own process group: a terminal's Ctrl-C reaches the launcher only, which passes
        // every signal on once ([`wait_ranks`]).
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        match cmd.spawn() {
            Ok(c) => children.push(c),
            Err(e) => {
                stop_all(&mut children);
                let _ = std::fs::remove_dir_all(&dir);
                return Err(CommError::Setup(format!(
                    "rank {rank} could not start: {e}"
                )));
            }
        }
    }
    let result = wait_ranks(&mut children);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Waits for every rank, passing on each SIGINT or SIGTERM the launcher gets to the ranks still
/// running (the first: each finishes its step, checkpoints and exits with
/// [`crate::stop::EXIT_STOPPED`]; the second: they exit at once). [`CommError::Stopped`] when
/// the ranks stopped so; a rank that fails stops the others.
pub fn wait_ranks(children: &mut [Child]) -> Result<(), CommError> {
    let relay = crate::stop::Relay::new();
    let mut done = vec![false; children.len()];
    let mut stopped = false;
    loop {
        for sig in relay.take() {
            for (rank, c) in children.iter().enumerate() {
                if !done[rank] {
                    // SAFETY: signals a child process of ours by its pid.
                    unsafe {
                        libc::kill(c.id() as i32, sig);
                    }
                }
            }
        }
        for (rank, c) in children.iter_mut().enumerate() {
            if done[rank] {
                continue;
            }
            match c.try_wait() {
                Ok(Some(status)) if status.success() => done[rank] = true,
                Ok(Some(status)) if status.code() == Some(crate::stop::EXIT_STOPPED) => {
                    done[rank] = true;
                    stopped = true;
                }
                Ok(Some(status)) => {
                    done[rank] = true;
                    let others: Vec<usize> = (0..done.len()).filter(|&r| !done[r]).collect();
                    stop_some(children, &others);
                    let what = match status.code() {
                        Some(c) => format!("exit status {c}"),
                        None => "killed by a signal".into(),
                    };
                    return Err(CommError::Setup(format!(
                        "rank {rank} failed ({what}); the other ranks were stopped"
                    )));
                }
                Ok(None) => {}
                Err(e) => return Err(CommError::Setup(format!("waiting for rank {rank}: {e}"))),
            }
        }
        if done.iter().all(|&d| d) {
            return match stopped {
                true => Err(CommError::Stopped),
                false => Ok(()),
            };
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stop_all(children: &mut [Child]) {
    let all: Vec<usize> = (0..children.len()).collect();
    stop_some(children, &all);
}

/// SIGTERM to `ranks`, SIGKILL to those still running after [`GRACE`].
fn stop_some(children: &mut [Child], ranks: &[usize]) {
    for &r in ranks {
        // SAFETY: signals a child process of ours by its pid.
        unsafe {
            libc::kill(children[r].id() as i32, libc::SIGTERM);
        }
    }
    let t0 = Instant::now();
    for &r in ranks {
        while t0.elapsed() < GRACE {
            if matches!(children[r].try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = children[r].kill();
        let _ = children[r].wait();
    }
}

/// When NCCL is installed only as `libnccl.so.2` (as Python wheels ship it) the dynamic loader
/// does not find it under the names cudarc asks for: a folder holding a `libnccl.so` link to
/// the library that loads, put first on the ranks' library path. `None` when not needed or not
/// found (the ranks then report the missing library).
fn nccl_link_dir(dir: &std::path::Path) -> Option<std::path::PathBuf> {
    if super::nccl::check_library().is_ok() {
        return None;
    }
    let path = loaded_path("libnccl.so.2", b"ncclGetVersion\0")?;
    let link_dir = dir.join("lib");
    std::fs::create_dir_all(&link_dir).ok()?;
    std::os::unix::fs::symlink(&path, link_dir.join("libnccl.so")).ok()?;
    Some(link_dir)
}

/// The file the dynamic loader opens for `name`, found through one of its symbols.
fn loaded_path(name: &str, symbol: &[u8]) -> Option<std::path::PathBuf> {
    let cname = std::ffi::CString::new(name).ok()?;
    // SAFETY: dlopen/dlsym/dladdr with valid C strings; the handle stays open (harmless).
    unsafe {
        let h = libc::dlopen(cname.as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
        if h.is_null() {
            return None;
        }
        let sym = libc::dlsym(h, symbol.as_ptr() as *const _);
        if sym.is_null() {
            return None;
        }
        let mut info: libc::Dl_info = std::mem::zeroed();
        if libc::dladdr(sym, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let p = std::ffi::CStr::from_ptr(info.dli_fname).to_str().ok()?;
        Some(std::path::PathBuf::from(p))
    }
}
