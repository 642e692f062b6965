//! The `murmur flock` command tree: the flock's own commands (`crate::flock::cli`: arguments,
//! configuration layering, run, bench, check, sort-bench) and the viewer's (`crate::view::cli`:
//! view, render). Here, above both, so that the flock module does not depend on the viewer.

use crate::flock::cli as flock;
use crate::view::cli as view;
use anyhow::Result;
use clap::Subcommand;

/// Runs a flock command.
pub fn run_flock(cmd: &FlockCmd) -> Result<()> {
    match cmd {
        FlockCmd::Run(a) => flock::run(a),
        FlockCmd::View(a) => view::view(a),
        FlockCmd::Render(a) => view::render(a),
        FlockCmd::Check(a) => flock::check(a),
        FlockCmd::Bench(a) => flock::bench(a),
        FlockCmd::SortBench(a) => flock::sort_bench(a),
        FlockCmd::CheckRanks(a) => crate::flock::ranks::check(a),
        FlockCmd::Scale(a) => crate::flock::ranks::scale(a),
    }
}

#[derive(Subcommand)]
pub enum FlockCmd {
    /// Run a flock for a number of steps and print a summary.
    Run(flock::RunArgs),
    /// Watch a flock in a window: orbit camera, live rule sliders, config file reloaded on save.
    ///
    /// Drag to orbit, wheel to zoom; space pause, `.` single step, `r` reset, `c` colour mode,
    /// Esc quit. Needs a display (X11); without one use `murmur flock render`.
    View(view::ViewArgs),
    /// Write PNG frames (and, with --gif, an animated GIF) of a running flock, without any
    /// display.
    ///
    /// Frame k shows the flock after k * every steps (frame 0: the initial state); the summary
    /// separates simulation time from rasterisation + copy time.
    Render(view::RenderArgs),
    /// Benchmark sweeps: per-step times to CSV, a markdown summary and PNG plots.
    Bench(flock::BenchArgs),
    /// Time the device radix sort of (u32 key, u32 value) pairs and check it against a CPU sort.
    SortBench(flock::SortBenchArgs),
    /// Check every GPU method against the CPU reference and the device sort against a CPU sort
    /// (needs a CUDA GPU; prints tables, fails when any row fails).
    Check(flock::CheckArgs),
    /// Run the same flock on one rank and split across N (--ranks N: CPU ranks in this
    /// process; --gpus N: one process per GPU) and compare every boid by id after --steps.
    CheckRanks(crate::flock::ranks::CheckRanksArgs),
    /// Strong and weak scaling of the flock on several GPUs (--gpus N): each size on all GPUs,
    /// then the reference sizes on one, at constant density. --gpus 1 times the slab path on
    /// one GPU (one rank, no neighbours) against the single-GPU path.
    Scale(crate::flock::ranks::ScaleArgs),
}
