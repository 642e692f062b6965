//! The `murmur` command's stop signals (`host/src/stop.rs`): a SIGINT or SIGTERM during
//! `flock run` finishes the step, prints one line and exits with 75; a second SIGINT while a long
//! step runs exits at once with 130.
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

/// The step `S` of the line `murmur: stopped by SIG after step S of 1000000; ...`.
fn stopped_step(stderr: &str, sig: &str) -> u64 {
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line, got {stderr:?}");
    let rest = lines[0]
        .strip_prefix(&format!("murmur: stopped by {sig} after step "))
        .unwrap_or_else(|| panic!("unexpected line {:?}", lines[0]));
    let (step, tail) = rest.split_once(' ').unwrap();
    assert_eq!(tail, "of 1000000; no checkpoint written");
    step.parse().unwrap()
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

#[test]
fn first_sigint_or_sigterm_stops_at_a_step_with_75() {
    for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
        let child = start(&LONG_RUN);
        std::thread::sleep(Duration::from_millis(500));
        signal(&child, sig);
        let (code, stderr, took) = wait(child, Duration::from_secs(2));
        assert_eq!(code, EXIT_STOPPED, "{name}: {stderr}");
        let step = stopped_step(&stderr, name);
        assert!(step > 0 && step < 1_000_000, "{name}: step {step}");
        assert!(took < Duration::from_secs(2), "{name}: {took:?}");
    }
}

#[test]
fn second_sigint_exits_at_once_with_130() {
    // Naive steps of 20,000 boids take seconds on the CPU: the first SIGINT waits for the step
    // (the process stays), the second ends it without waiting.
    let child = start(&[
        "flock",
        "run",
        "--steps",
        "1000000",
        "--n",
        "20000",
        "--method",
        "naive",
        "--backend",
        "cpu",
    ]);
    std::thread::sleep(Duration::from_millis(700));
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    let mut child = child;
    assert!(
        child.try_wait().unwrap().is_none(),
        "the first SIGINT waits for the step to finish"
    );
    signal(&child, libc::SIGINT);
    let (code, stderr, took) = wait(child, Duration::from_secs(1));
    assert_eq!(code, EXIT_SIGINT, "{stderr}");
    assert!(!stderr.contains("stopped by"), "{stderr}");
    assert!(took < Duration::from_secs(1), "{took:?}");
}
