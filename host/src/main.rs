//! `murmur`: the command line. Library errors become one-line messages here, and only here.

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use murmur::flock::config::FlockConfig;
use murmur::flock::driver::{self, BackendChoice};
use murmur::flock::{snapshot, CellOrderArg, FlockState, Method};
use std::io::IsTerminal;
use std::path::PathBuf;

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
enum Top {
    /// Reynolds flocking (CIS 565 rules): run, snapshot.
    #[command(subcommand)]
    Flock(FlockCmd),
    /// Kinetic fluid (D3Q27 lattice Boltzmann: BGK, RM-MRT, ACM-MRT): run, validate, bench.
    #[command(subcommand)]
    Fluid(murmur::fluid::cli::FluidCmd),
}

#[derive(Subcommand)]
enum FlockCmd {
    /// Run a flock for a number of steps and print a summary.
    Run(RunArgs),
    /// Check every GPU method against the CPU reference and the device sort against a CPU sort
    /// (needs a CUDA GPU; prints tables, fails when any row fails).
    Check(CheckArgs),
}

#[derive(Args)]
struct CheckArgs {
    /// Flock sizes to compare (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1000,20000,100000")]
    sizes: Vec<usize>,
    /// Largest sort size checked.
    #[arg(long, default_value_t = 10_000_000)]
    sort_max: u32,
    /// Seed of the random starts and keys.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// Options shared by every command that builds a flock.
#[derive(Args, Clone)]
struct FlockArgs {
    /// Configuration file (TOML with [params] and [sim]; see assets/flock/default.toml).
    #[arg(long, value_name = "FILE.toml")]
    config: Option<PathBuf>,
    /// Number of boids [default: 100000, or the config's sim.n].
    #[arg(long, allow_negative_numbers = true)]
    n: Option<u64>,
    /// Half-width of the domain [-scale, scale]^3 (same as --set scale=...) [default: 100].
    #[arg(long, allow_negative_numbers = true)]
    scale: Option<f32>,
    /// Seed of the random start (uniform positions, zero velocities) [default: 1].
    #[arg(long, allow_negative_numbers = true)]
    seed: Option<u64>,
    /// Neighbour search [default: coherent].
    #[arg(long, value_enum)]
    method: Option<Method>,
    /// Cell width / largest rule distance: 1 searches 27 cells, 2 searches 8 [default: 1].
    #[arg(long, allow_negative_numbers = true, value_name = "F")]
    cell_width_factor: Option<f32>,
    /// GPU threads per block, a multiple of 32 up to 1024 [default: 128].
    #[arg(long, allow_negative_numbers = true)]
    block_size: Option<u32>,
    /// Cell numbering of the grid [default: linear].
    #[arg(long, value_enum)]
    cell_order: Option<CellOrderArg>,
    /// Set a rule parameter, e.g. --set rule1_scale=0.02 (repeatable). Names: rule1_distance,
    /// rule2_distance, rule3_distance, rule1_scale, rule2_scale, rule3_scale, max_speed, scale, dt.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Start from a snapshot (.npz with pos, vel, id) instead of a random flock.
    #[arg(long, value_name = "FILE.npz")]
    init: Option<PathBuf>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendChoice,
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    flock: FlockArgs,
    /// Steps to run.
    #[arg(long, default_value_t = 100, allow_negative_numbers = true)]
    steps: u64,
    /// Write the final state to this snapshot (.npz; written atomically).
    #[arg(long, value_name = "FILE.npz")]
    save: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

impl FlockArgs {
    /// Defaults < config file < flags < --set; then validation.
    fn config(&self) -> Result<FlockConfig> {
        let mut c = match &self.config {
            Some(p) => FlockConfig::load(p)?,
            None => FlockConfig::default(),
        };
        if let Some(n) = self.n {
            c.sim.n = n;
        }
        if let Some(s) = self.scale {
            c.params.scale = s;
        }
        if let Some(s) = self.seed {
            c.sim.seed = s;
        }
        if let Some(m) = self.method {
            c.sim.method = m;
        }
        if let Some(f) = self.cell_width_factor {
            c.sim.cell_width_factor = f;
        }
        if let Some(b) = self.block_size {
            c.sim.block_size = b;
        }
        if let Some(o) = self.cell_order {
            c.sim.cell_order = o;
        }
        for s in &self.set {
            c.set(s)?;
        }
        Ok(c)
    }

    /// The validated settings and the initial state (random or from `--init`).
    fn build(&self) -> Result<(murmur::flock::FlockSettings, FlockState)> {
        let mut c = self.config()?;
        let state = match &self.init {
            Some(path) => {
                let s = snapshot::load(path)?;
                if self.n.is_some_and(|n| n != s.len() as u64) {
                    bail!(
                        "--n {} disagrees with the {} boids in {}",
                        self.n.unwrap(),
                        s.len(),
                        path.display()
                    );
                }
                c.sim.n = s.len() as u64;
                let scale = c.params.scale;
                if let Some(p) = s
                    .pos
                    .iter()
                    .find(|p| p.to_array().iter().any(|x| x.abs() > scale))
                {
                    bail!(
                        "{} holds a boid at {:?}, outside [-{scale}, {scale}]^3: pass --scale",
                        path.display(),
                        p.to_array()
                    );
                }
                c.settings()?;
                s
            }
            None => {
                c.settings()?;
                FlockState::random(c.sim.n as usize, c.params.scale, c.sim.seed)
            }
        };
        Ok((c.settings()?, state))
    }
}

fn flock_run(a: &RunArgs) -> Result<()> {
    if let Some(out) = &a.save {
        murmur::atomic_file::check_writable_parent(out)
            .with_context(|| format!("cannot write {}", out.display()))?;
    }
    let (settings, state) = a.flock.build()?;
    let (mut backend, note) = driver::open_backend(a.flock.backend, &settings, &state)?;
    if let Some(note) = note {
        eprintln!("murmur: {note}");
    }
    let progress = !a.quiet && std::io::stderr().is_terminal();
    let report = driver::run(backend.as_mut(), a.steps, progress)?;
    let what = format!(
        "{}, {}, scale {}, cell width factor {}",
        backend.describe(),
        settings.method.name(),
        settings.params.scale,
        settings.cell_width_factor
    );
    println!("{}", report.summary(&what));
    println!("stages (mean per step): {}", report.stages);
    if let Some(out) = &a.save {
        let s = backend.state()?;
        snapshot::save(out, &s)?;
        println!("saved {} boids to {}", s.len(), out.display());
    }
    Ok(())
}

fn flock_check(a: &CheckArgs) -> Result<()> {
    let settings = FlockConfig::default().settings()?;
    if a.sizes.contains(&0) {
        bail!("--sizes must be positive");
    }
    if !murmur::flock::check::run(&settings, &a.sizes, a.sort_max.max(1), a.seed)? {
        bail!("some checks failed (see the FAIL rows above)");
    }
    println!("all checks passed");
    Ok(())
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.cmd {
        Top::Flock(FlockCmd::Run(a)) => flock_run(a),
        Top::Flock(FlockCmd::Check(a)) => flock_check(a),
        Top::Fluid(cmd) => murmur::fluid::cli::run(cmd),
    };
    if let Err(e) = result {
        eprintln!("murmur: error: {}", one_line(&e));
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
