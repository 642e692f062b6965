//! The whole command line: [`Cli`] (`murmur flock ...`, `murmur fluid ...`), the tree as murmur
//! parses it ([`command`]), parser errors as one line ([`errors`]), and the dispatch of both
//! command trees above each simulation and its viewer.
//!
//! Each simulation's own commands (`crate::flock::cli`, `crate::fluid::cli`) and its viewer's
//! (`crate::view::cli`, `crate::view::fluid::cli`: view, render) meet here, so that neither
//! simulation depends on its viewer.

pub mod errors;

use crate::flock::cli as flock;
use crate::fluid;
use crate::view::cli as view;
use crate::view::fluid::cli as fluid_view;
use anyhow::Result;
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use std::ffi::OsString;

/// `murmur`: the top of the command tree.
#[derive(Parser)]
#[command(
    name = "murmur",
    version,
    about = "GPU simulation lab: flocks of millions of boids, Rust kernels on NVIDIA GPUs",
    long_about = None
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Top,
}

#[derive(Subcommand)]
// Parsed once per process: the size difference between the variants costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Top {
    /// Reynolds flocking (CIS 565 rules)
    #[command(subcommand)]
    Flock(FlockCmd),
    /// Kinetic fluid (D3Q27 lattice Boltzmann: BGK, RM-MRT, ACM-MRT)
    #[command(subcommand)]
    Fluid(FluidCmd),
}

/// The command tree as murmur parses it: clap's tree of [`Cli`] with every value-taking
/// argument accepting a leading minus (so that `--steps -1` reaches the value parser and gets
/// its own message, rather than being taken for a flag), and the top level's lines listing the
/// visible subcommands of `flock` and `fluid` (hidden ones left out).
pub fn command() -> clap::Command {
    let cmd = allow_negative_numbers(<Cli as CommandFactory>::command());
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    names.iter().fold(cmd, |cmd, name| {
        cmd.mut_subcommand(name, |sub| {
            let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
            let about = format!("{about}: {}.", visible_subcommands(&sub).join(", "));
            sub.about(about)
        })
    })
}

/// Every value-taking argument of `cmd` and of its subcommands, to any depth, accepts values
/// that start with a minus and read as a number.
fn allow_negative_numbers(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| {
        if a.get_action().takes_values() {
            a.allow_negative_numbers(true)
        } else {
            a
        }
    })
    .mut_subcommands(allow_negative_numbers)
}

/// The names of `cmd`'s subcommands that `--help` shows, in their order.
pub fn visible_subcommands(cmd: &clap::Command) -> Vec<String> {
    cmd.get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

impl Cli {
    /// Parses `args` (the program name first) through [`command`]; help and version requests
    /// come back as errors of their kinds, as clap gives them.
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let matches = command().try_get_matches_from(args)?;
        Cli::from_arg_matches(&matches)
    }

    /// Runs the command.
    pub fn run(&self) -> Result<()> {
        match &self.cmd {
            Top::Flock(cmd) => run_flock(cmd),
            Top::Fluid(cmd) => run_fluid(cmd),
        }
    }
}

/// Runs a flock command.
pub fn run_flock(cmd: &FlockCmd) -> Result<()> {
    match cmd {
        FlockCmd::Run(a) => {
            if crate::flock::ranks::split(&a.ranks, a.cpu_ranks)? {
                crate::flock::ranks::run(a)
            } else {
                flock::run(a)
            }
        }
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

/// Runs a fluid command.
pub fn run_fluid(cmd: &FluidCmd) -> Result<()> {
    match cmd {
        FluidCmd::Run(a) => fluid::run::run(a, crate::coupling::scene::open_rider),
        FluidCmd::Validate(a) => fluid::commands::validate::validate(
            a,
            &[(
                "the coupled flock's cases (one-way)",
                crate::coupling::validate::run_all,
            )],
        ),
        FluidCmd::Bench(a) => fluid::commands::bench::bench(a),
        FluidCmd::RanksCheck(a) => fluid::multi::ranks_check(a),
        FluidCmd::Scale(a) => fluid::multi::scale(a),
        FluidCmd::Parity(a) => fluid::commands::parity::parity(a),
        FluidCmd::Case(a) => fluid::commands::case::case(a),
        FluidCmd::Convergence(a) => fluid::commands::convergence::convergence(a),
        FluidCmd::CheckpointBench(a) => fluid::commands::checkpoint_bench::checkpoint_bench(a),
        FluidCmd::IbBench(a) => fluid::ib::bench::ib_bench_cmd(a),
        FluidCmd::CouplingBench(a) => crate::coupling::bench::bench_cmd(a),
        FluidCmd::FlockCase(a) => crate::coupling::case::flock_case(a),
        FluidCmd::BoundaryBench(a) => fluid::boundary_bench::boundary_bench_cmd(a),
        FluidCmd::Tune(a) => fluid::tune::tune_cmd(a),
        FluidCmd::Noise(a) => fluid::noise::noise_cmd(a),
        FluidCmd::View(a) => fluid_view::view(a, crate::coupling::scene::open_rider),
        FluidCmd::Render(a) => fluid_view::render(a, crate::coupling::scene::open_rider),
    }
}

#[derive(Subcommand)]
pub enum FluidCmd {
    /// Run a scene (TOML, see assets/fluid/) and write the fields as .vti (ParaView) or .npz.
    Run(fluid::cli::RunArgs),
    /// Validation against known answers: Taylor-Green decay, Poiseuille flow, the lid-driven
    /// cavity against Ghia et al. (1982), and the immersed-boundary cases (cylindrical Couette
    /// flow, the DFG cylinder benchmarks, the Galilean check).
    ///
    /// Every case runs for each collision model (the immersed-boundary ones ACM-MRT only) and
    /// storage. The full grids add the cavity at Re 1000 and DFG 2D-2 (vortex shedding); --quick
    /// runs small grids. Prints an error table; exits non-zero when any case misses its target.
    Validate(fluid::cli::ValidateArgs),
    /// Throughput per collision model: MLUPs/s, bytes per cell update, fraction of bandwidth.
    Bench(fluid::cli::BenchArgs),
    /// CPU vs CUDA: largest relative field difference after some steps on small scenes.
    #[command(hide = true)]
    Parity(fluid::cli::ParityArgs),
    /// One immersed-boundary validation case at a chosen resolution: the DFG cylinder
    /// benchmarks (Schaefer & Turek 1996), the Galilean check, cylindrical Couette flow. Prints
    /// the measured figures beside the reference values.
    Case(fluid::cli::CaseArgs),
    /// A DFG cylinder case over a ladder of resolutions (cells per diameter), each the mean
    /// over sub-cell positions of the cylinder: the drag against the reference value and the
    /// observed order of convergence.
    Convergence(fluid::commands::convergence::ConvergenceArgs),
    /// What a checkpoint costs a run: a periodic box checkpointed as `fluid run` does and
    /// restored from the disk (its pages dropped from the page cache), the container alone on
    /// the same bytes, the cost per step at an interval, and the peak resident memory.
    CheckpointBench(fluid::commands::checkpoint_bench::CheckpointBenchArgs),
    /// What a coupled flock costs a fluid step: a periodic box and boids through it, the
    /// fluid's step alone, the flock's alone and the two coupled (two-way by default), the
    /// ratio, and where the coupled step's time goes.
    CouplingBench(crate::coupling::bench::CouplingBenchArgs),
    /// One of the coupled flock's validation cases (the rows of `fluid validate`) at a size of
    /// your choosing, e.g. `flock-case torus --coarsen 1 --boids 1000000 --steps 10000`.
    FlockCase(crate::coupling::case::FlockCaseArgs),
    /// The immersed boundary's spreading methods (scatter, binned scatter, gather, block gather) timed stage by
    /// stage on one scene, against the same grid without its solids.
    IbBench(fluid::ib::bench::IbBenchArgs),
    /// What a scene's walls, inlets and outlets cost: the scene (its solids left out) against a
    /// periodic box of the same size, the boundary kernel beside the interior kernel and after
    /// it; MLUPs/s of each, the ratio and the stage times.
    BoundaryBench(fluid::boundary_bench::BoundaryBenchArgs),
    /// The same lattice on one rank and on several (GPUs joined by NCCL, or CPU ranks in this
    /// process), compared bit for bit: the decomposition must not change a single value.
    /// `--gpus 1` runs the slab path on one GPU (its faces exchanged with itself).
    RanksCheck(fluid::multi::RanksCheckArgs),
    /// Strong and weak scaling of a periodic box over the GPUs of the run (`--gpus N`, or
    /// mpirun / srun), against one GPU. `--gpus 1` times the slab path on one GPU (one rank,
    /// its faces exchanged with itself) against the plain step.
    Scale(fluid::multi::ScaleArgs),
    /// Watch a scene in a window: slices, vorticity or Q volumes, lit smoke; orbit camera, live
    /// model, inlet velocity and Reynolds number; the scene file is reloaded when saved.
    ///
    /// Drag to orbit, wheel to zoom; space pause, `.` single step, `r` reset, `v` next view, Esc
    /// quit. Needs a display (X11); without one use `murmur fluid render`.
    View(fluid_view::FluidViewArgs),
    /// Write PNG frames (and, with --gif, an animated GIF) of a scene, without any display:
    /// slices, volumes or smoke; --compare draws BGK, RM-MRT and ACM-MRT side by side.
    ///
    /// Frame k shows the state after skip + k * every steps; the summary separates the
    /// simulation, the smoke's advection, drawing + copying and encoding.
    Render(fluid_view::FluidRenderArgs),
    /// Finds the fastest population layout, thread blocks and spreading method of a scene on
    /// this device (a pruned search under a time cap) and stores them in the tuning cache,
    /// which `fluid run` then uses.
    Tune(fluid::tune::TuneArgs),
    /// Grid-scale noise of a scene every few steps: RMS of the velocity and density minus
    /// their 3 x 3 x 3 box averages over a range of x, and the mean velocity there.
    #[command(hide = true)]
    Noise(fluid::noise::NoiseArgs),
}
