//! `murmur`: the command line. Library errors become one-line messages here, and only here.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "murmur",
    version,
    about = "GPU simulation lab: flocks of millions of boids, Rust kernels on NVIDIA GPUs",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    cmd: Top,
}

#[derive(Subcommand)]
// Parsed once per process: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
enum Top {
    /// Reynolds flocking (CIS 565 rules): run, view, render, bench, check, sort-bench.
    #[command(subcommand)]
    Flock(murmur::cli::FlockCmd),
    /// Kinetic fluid (D3Q27 lattice Boltzmann: BGK, RM-MRT, ACM-MRT): run, validate, bench.
    #[command(subcommand)]
    Fluid(murmur::cli::FluidCmd),
}

fn main() {
    // `murmur ... | head` should end quietly, as Unix tools do, not panic on the closed pipe.
    #[cfg(unix)]
    // SAFETY: restores the default SIGPIPE action at start-up, before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match &cli.cmd {
        Top::Flock(cmd) => murmur::cli::run_flock(cmd),
        Top::Fluid(cmd) => murmur::cli::run_fluid(cmd),
    };
    if let Err(e) = result {
        match murmur::ranks::env::rank_label() {
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
