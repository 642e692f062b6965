//! The launcher of `--gpus N` passes each SIGINT or SIGTERM it gets on to its ranks once (they
//! run in a process group of their own, so a terminal's Ctrl-C reaches the launcher only):
//! ranks that stop cleanly (exit 75) make a clean stop of the whole, a second signal ends them
//! at once. Here the ranks are shell loops that behave as a rank does on a signal.
#![cfg(unix)]

use murmur::internals::ranks::{spawn::wait_ranks, CommError};
use murmur::internals::stop::StopRequest;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::Duration;

/// A rank: its first SIGINT or SIGTERM "finishes the step and checkpoints" (0.4 s) and exits
/// 75; a second exits 130 at once.
const RANK: &str = "n=0; stop=0; \
    on() { n=$((n+1)); if [ $n -ge 2 ]; then exit 130; fi; stop=1; }; \
    trap on INT TERM; \
    while [ $stop = 0 ]; do sleep 0.02; done; \
    i=0; while [ $i -lt 20 ]; do sleep 0.02; i=$((i+1)); done; exit 75";

fn ranks(n: usize) -> Vec<Child> {
    (0..n)
        .map(|_| {
            Command::new("sh")
                .args(["-c", RANK])
                .process_group(0)
                .spawn()
                .unwrap()
        })
        .collect()
}

/// Sends `sig` to this process (the launcher) after each delay in `after`, one after another.
fn signal_later(sig: i32, after: &'static [u64]) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        for ms in after {
            std::thread::sleep(Duration::from_millis(*ms));
            // SAFETY: signals this process; its handlers are installed.
            unsafe {
                libc::kill(libc::getpid(), sig);
            }
        }
    })
}

#[test]
fn a_signal_reaches_every_rank_once_and_a_second_ends_them() {
    StopRequest::install().unwrap();
    // One SIGTERM: every rank gets it once, stops cleanly, and so does the whole.
    let mut children = ranks(3);
    let t = signal_later(libc::SIGTERM, &[300]);
    let r = wait_ranks(&mut children);
    t.join().unwrap();
    assert!(matches!(r, Err(CommError::Stopped)), "{r:?}");
    // Two SIGINTs: the second ends the ranks at once (a rank's 130 is a failure).
    let mut children = ranks(2);
    let t = signal_later(libc::SIGINT, &[300, 200]);
    let r = wait_ranks(&mut children);
    t.join().unwrap();
    let e = r.unwrap_err().to_string();
    assert!(e.contains("exit status 130"), "{e}");
    // No signal: ranks that finish make a finished whole.
    let mut children: Vec<Child> = (0..2)
        .map(|_| Command::new("true").process_group(0).spawn().unwrap())
        .collect();
    wait_ranks(&mut children).unwrap();
}
