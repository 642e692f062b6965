//! `murmur`: the command line (`murmur::internals::cli`). Parser errors and library errors become one-line
//! messages here, and only here.

use murmur::internals::cli::errors::{outcome, Outcome};
use murmur::internals::cli::Cli;
use murmur::internals::stop::{SignalStop, StopRequest, EXIT_STOPPED};

fn main() {
    // `murmur ... | head` should end quietly, as Unix tools do, not panic on the closed pipe.
    #[cfg(unix)]
    // SAFETY: restores the default SIGPIPE action at start-up, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // SIGINT / SIGTERM: a run loop finishes its step and stops (exit 75), a second signal or one
    // outside a run loop exits at once (130 / 143): `host/src/stop.rs`. The library installs none.
    if let Err(e) = StopRequest::install() {
        eprintln!("murmur: warning: no SIGINT/SIGTERM handler ({e}): a signal kills the run");
    }
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let cli = match Cli::parse_args(&args) {
        Ok(cli) => cli,
        Err(e) => match outcome(&e, &murmur::internals::cli::command(), &args) {
            Outcome::Clap => e.exit(),
            Outcome::Line(line, code) => {
                eprintln!("{line}");
                std::process::exit(code);
            }
        },
    };
    if let Err(e) = cli.run() {
        if let Some(stop) = e.downcast_ref::<SignalStop>() {
            if stop.lead {
                eprintln!("murmur: {stop}");
            }
            std::process::exit(EXIT_STOPPED);
        }
        // A launcher whose ranks stopped on a signal: each rank printed its own line.
        if e.chain().any(|c| {
            matches!(
                c.downcast_ref::<murmur::internals::ranks::CommError>(),
                Some(murmur::internals::ranks::CommError::Stopped)
            )
        }) {
            std::process::exit(EXIT_STOPPED);
        }
        match murmur::internals::ranks::env::rank_label() {
            Some(r) => eprintln!("murmur: error: rank {r}: {}", one_line(&e)),
            None => eprintln!("murmur: error: {}", one_line(&e)),
        }
        std::process::exit(1);
    }
}

/// The error and its causes on one line.
fn one_line(e: &anyhow::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    for c in e.chain() {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
    }
    parts.join(": ").replace('\n', " ")
}
