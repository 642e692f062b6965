//! The `murmur` command's stop signals (`host/src/stop.rs`): a SIGINT or SIGTERM during
//! `flock run` finishes the step, writes a checkpoint, prints one line naming it and exits with
//! 75; a second SIGINT while a long step runs exits at once with 130.
#![cfg(unix)]

use murmur::internals::stop::{EXIT_SIGINT, EXIT_STOPPED};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn start(args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_murmur"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("murmur starts")
}

fn signal(child: &Child, sig: libc::c_int) {
    // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill failed");
}

/// Waits up to `limit` for `child` to exit: its status code and stderr, and how long it took.
fn wait(mut child: Child, limit: Duration) -> (i32, String, Duration) {
    let t0 = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            let code = status.code().expect("an exit code, not a death by signal");
            return (
                code,
                String::from_utf8_lossy(&out.stderr).into(),
                t0.elapsed(),
            );
        }
        if t0.elapsed() > limit {
            let _ = child.kill();
            panic!("murmur still running {limit:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The step `S` of the line `murmur: stopped by SIG after step S of 1000000; wrote checkpoint
/// PATH`, with `PATH` the checkpoint of step S in `dir`.
fn stopped_step(stderr: &str, sig: &str, dir: &str) -> u64 {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got {stderr:?}");
    let rest = lines[0]
        .strip_prefix(&format!("murmur: stopped by {sig} after step "))
        .unwrap_or_else(|| panic!("unexpected line {:?}", lines[0]));
    let (step, tail) = rest.split_once(' ').unwrap();
    let step: u64 = step.parse().unwrap();
    let file = std::path::Path::new(dir).join(format!("flock-{step:010}.npz"));
    assert_eq!(
        tail,
        format!("of 1000000; wrote checkpoint {}", file.display())
    );
    assert!(file.is_file(), "{}", file.display());
    step
}

/// This test process's checkpoint folder (every stop writes a checkpoint).
fn checkpoint_dir() -> String {
    std::env::temp_dir()
        .join(format!("murmur-stop-{}", std::process::id()))
        .display()
        .to_string()
}

const LONG_RUN: [&str; 8] = [
    "flock",
    "run",
    "--steps",
    "1000000",
    "--n",
    "1000",
    "--backend",
    "cpu",
];

/// Waits before the first signal, longer on each try: a signal that comes before the run loop
/// is armed (a loaded machine can take a while to start the child) ends the process at once
/// (128 + the signal), which these tests cannot tell from the loop's own behaviour; such a try
/// is repeated with a longer wait, and the last one must pass.
const WAITS_MS: [u64; 4] = [500, 1_000, 2_000, 4_000];

#[test]
fn first_sigint_or_sigterm_stops_at_a_step_with_75() {
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        for (i, ms) in WAITS_MS.iter().enumerate() {
            let dir = checkpoint_dir();
            let mut args = LONG_RUN.to_vec();
            args.extend(["--checkpoint-dir", &dir]);
            let child = start(&args);
            std::thread::sleep(Duration::from_millis(*ms));
            signal(&child, sig);
            let (code, stderr, took) = wait(child, Duration::from_secs(2));
            let unarmed = code == 128 + sig && stderr.is_empty();
            if unarmed && i + 1 < WAITS_MS.len() {
                continue;
            }
            assert_eq!(code, EXIT_STOPPED, "{name}: {stderr}");
            let step = stopped_step(&stderr, name, &dir);
            assert!(step > 0 && step < 1_000_000, "{name}: step {step}");
            assert!(took < Duration::from_secs(2), "{name}: {took:?}");
            break;
        }
    }
}

#[test]
fn second_sigint_exits_at_once_with_130() {
    // Naive steps of 100,000 boids (10^10 pairs) take many seconds on the CPU: the first SIGINT
    // waits for the step (the process stays), the second ends it without waiting.
    for (i, ms) in WAITS_MS.iter().enumerate() {
        let dir = checkpoint_dir();
        let mut child = start(&[
            "flock",
            "run",
            "--checkpoint-dir",
            &dir,
            "--steps",
            "1000000",
            "--n",
            "100000",
            "--method",
            "naive",
            "--backend",
            "cpu",
        ]);
        std::thread::sleep(Duration::from_millis(ms + 200));
        signal(&child, libc::SIGINT);
        std::thread::sleep(Duration::from_millis(300));
        if let Some(status) = child.try_wait().unwrap() {
            // Ended by the first signal: it came before the loop was armed (a step that ended
            // within the 300 ms, exit 75, would make this test meaningless).
            assert_eq!(status.code(), Some(EXIT_SIGINT), "the step ended too soon");
            assert!(
                i + 1 < WAITS_MS.len(),
                "the first SIGINT never found the loop armed"
            );
            continue;
        }
        signal(&child, libc::SIGINT);
        let (code, stderr, took) = wait(child, Duration::from_secs(1));
        assert_eq!(code, EXIT_SIGINT, "{stderr}");
        assert!(!stderr.contains("stopped by"), "{stderr}");
        assert!(took < Duration::from_secs(1), "{took:?}");
        break;
    }
}
