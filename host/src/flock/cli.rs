//! `murmur flock run | bench | check | sort-bench`: the flock's arguments (clap, [`FlockArgs`],
//! shared with the viewer's commands in `crate::view::cli`), the configuration layering
//! (defaults < `--config` < flags < `--set`) and the commands. Errors go up to `main` as `anyhow`
//! errors and become one line there; the viewer's config reload calls [`FlockArgs::reload`].

use super::config::{validate_params, ConfigError, FlockConfig};
use super::driver::{self, BackendChoice, Start};
use super::{resume, snapshot, CellOrder, Method, SimError, SortArg};
use crate::checkpoint::Schedule;
use crate::preflight;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct BenchArgs {
    #[command(flatten)]
    flock: FlockArgs,
    /// Flock sizes to sweep [default: --n, or 100000,1000000,5000000 on the GPU and
    /// 10000,100000 on the CPU].
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Methods to sweep [default: --method, or coherent].
    #[arg(long, value_delimiter = ',', value_enum)]
    methods: Vec<Method>,
    /// Cell-width factors to sweep [default: --cell-width-factor, or 1,2].
    #[arg(long, value_delimiter = ',')]
    factors: Vec<f32>,
    /// x-splits to sweep [default: --x-split, or the configuration's (4)].
    #[arg(long, value_delimiter = ',')]
    x_splits: Vec<u32>,
    /// Block sizes to sweep [default: --block-size, or the configuration's (256)].
    #[arg(long, value_delimiter = ',')]
    block_sizes: Vec<u32>,
    /// Scales to sweep (comma-separated) [default: --scale, or 100].
    #[arg(long, value_delimiter = ',', conflicts_with = "constant_density")]
    scales: Vec<f32>,
    /// Scale each N to the density of 1M boids at scale 100 (instead of a fixed --scale).
    #[arg(long)]
    constant_density: bool,
    /// Steps run and discarded before measuring [default: 200 on the GPU, 20 on the CPU].
    #[arg(long)]
    warmup: Option<u64>,
    /// Measured steps per configuration [default: 1000 on the GPU, 100 on the CPU].
    #[arg(long)]
    steps: Option<u64>,
    /// Run a CPU sweep estimated to take more than an hour.
    #[arg(long)]
    yes: bool,
    /// Output folder (steps.csv, summary.csv, summary.md, PNG plots).
    #[arg(long, default_value = "bench-out")]
    out: PathBuf,
    /// Run nothing: redraw the plots of an earlier run from its steps.csv into --out.
    #[arg(long, value_name = "STEPS_CSV")]
    replot: Option<PathBuf>,
}

#[derive(Args)]
pub struct SortBenchArgs {
    /// Numbers of pairs (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "10000000,100000000")]
    sizes: Vec<u32>,
    /// Significant key bits (1 to 32).
    #[arg(long, default_value_t = 32)]
    bits: u32,
    /// Timed repetitions per size (the mean is reported; the first, untimed run warms up).
    #[arg(long, default_value_t = 10)]
    repeat: u32,
}

#[derive(Args)]
pub struct CheckArgs {
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
pub struct FlockArgs {
    /// Configuration file (TOML with [params] and [sim]; see assets/flock/default.toml).
    #[arg(long, value_name = "FILE.toml")]
    pub(crate) config: Option<PathBuf>,
    /// Number of boids [default: 100000, or the config's sim.n].
    #[arg(long)]
    n: Option<u64>,
    /// Half-width of the domain [-scale, scale]^3 (same as --set scale=...) [default: 100].
    #[arg(long)]
    scale: Option<f32>,
    /// Seed of the random start (uniform positions, zero velocities) [default: 1].
    #[arg(long)]
    seed: Option<u64>,
    /// Neighbour search [default: coherent].
    #[arg(long, value_enum)]
    method: Option<Method>,
    /// Cell width / largest rule distance: 1 searches 27 cells, 2 searches 8 [default: by
    /// density; see the README].
    #[arg(long, value_name = "F")]
    cell_width_factor: Option<f32>,
    /// Cells along x are N times narrower than along y and z, 1 to 16: the runs of cells the
    /// search walks along x are trimmed closer to the search sphere [default: by density; see
    /// the README].
    #[arg(long, value_name = "N")]
    x_split: Option<u32>,
    /// GPU threads per block, a multiple of 32 up to 1024 [default: 256].
    #[arg(long)]
    block_size: Option<u32>,
    /// Cell numbering of the grid [default: linear].
    #[arg(long, value_enum)]
    cell_order: Option<CellOrder>,
    /// GPU binning: counting sort (fast) or the stable device radix sort [default: counting].
    #[arg(long, value_enum)]
    sort: Option<SortArg>,
    /// GPU: time every stage with CUDA events instead of replaying each step as one CUDA graph.
    #[arg(long)]
    stages: bool,
    /// Set a rule parameter, e.g. --set rule1_scale=0.02 (repeatable). Names: rule1_distance,
    /// rule2_distance, rule3_distance, rule1_scale, rule2_scale, rule3_scale, max_speed, scale, dt.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Start from a snapshot (.npz with pos, vel, id) instead of a random flock.
    #[arg(long, value_name = "FILE.npz", value_parser = npz_path)]
    pub(crate) init: Option<PathBuf>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) backend: BackendChoice,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub(crate) flock: FlockArgs,
    /// Steps to run.
    #[arg(long, default_value_t = 100)]
    pub(crate) steps: u64,
    /// Write the final state to this snapshot (.npz; written atomically; on several ranks
    /// gathered on rank 0, ordered by id).
    #[arg(long, value_name = "FILE.npz", value_parser = npz_path)]
    pub(crate) save: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub(crate) quiet: bool,
    #[command(flatten)]
    pub(crate) ranks: crate::ranks::Ranks,
    /// Split the flock into N slabs along x run by N CPU ranks (threads of this process,
    /// exchanging boids by memory copies: the decomposition of --gpus without a GPU).
    #[arg(long = "ranks", value_name = "N", conflicts_with = "gpus")]
    pub(crate) cpu_ranks: Option<usize>,
    /// GPU: no CUDA events between steps, so nothing but the steps goes into the stream; only
    /// the wall time is reported (an event per step costs a few microseconds at 100k boids).
    #[arg(long)]
    no_gpu_timer: bool,
    #[command(flatten)]
    pub(crate) checkpoint: crate::checkpoint::CheckpointArgs,
}

/// A snapshot's file name (`--save`, `--init`): one that ends in `.npz`, refused otherwise
/// before any work.
pub fn npz_path(s: &str) -> Result<PathBuf, String> {
    let p = PathBuf::from(s);
    let npz = p
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("npz"));
    if npz {
        Ok(p)
    } else {
        Err(format!("expected a file name ending in .npz, got \"{s}\""))
    }
}

impl FlockArgs {
    /// Defaults < config file < flags < `--set` (not yet validated: see
    /// [`FlockConfig::settings`]).
    pub fn config(&self) -> Result<FlockConfig, ConfigError> {
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
        if let Some(x) = self.x_split {
            c.sim.x_split = x;
        }
        if let Some(b) = self.block_size {
            c.sim.block_size = b;
        }
        if let Some(o) = self.cell_order {
            c.sim.cell_order = o;
        }
        if let Some(o) = self.sort {
            c.sim.sort = o;
        }
        if self.stages {
            c.sim.cuda_graph = false;
        }
        for s in &self.set {
            c.set(s)?;
        }
        Ok(c)
    }

    /// The validated settings and the initial state (random or from `--init`).
    pub fn build(&self) -> Result<(super::FlockSettings, Start)> {
        let (c, start) = self.build_config()?;
        Ok((c.settings()?, start))
    }

    /// The configuration (with `sim.n` from `--init` when given) and where the flock starts.
    pub fn build_config(&self) -> Result<(FlockConfig, Start)> {
        self.build_config_for(1)
    }

    /// [`FlockArgs::build_config`] for a flock split across `ranks` ranks (larger flocks).
    pub fn build_config_for(&self, ranks: usize) -> Result<(FlockConfig, Start)> {
        let mut c = self.config()?;
        let state = match &self.init {
            Some(path) => {
                let (s, notes) = snapshot::load_with_notes(path)?;
                for note in notes {
                    eprintln!("murmur: note: {note}");
                }
                if self.n.is_some_and(|n| n != s.len() as u64) {
                    bail!(
                        "--n {} disagrees with the {} boids in {}",
                        self.n.unwrap(),
                        s.len(),
                        path.display()
                    );
                }
                c.sim.n = s.len() as u64;
                validate_params(&c.params)?;
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
                Start::State(s)
            }
            None => Start::Random {
                n: c.sim.n as usize,
                seed: c.sim.seed,
            },
        };
        if !self.grid_given()? {
            pick_grid_for(&mut c, ranks);
        }
        c.settings_for(ranks)?;
        Ok((c, state))
    }

    /// These options for a run resumed from `r`: its flock's size (`--n` may only repeat it);
    /// `--init` is refused (the checkpoint is the start).
    pub fn resuming(&self, r: &resume::Resume) -> Result<FlockArgs> {
        let n = r.capture.state.len() as u64;
        if self.init.is_some() {
            bail!("--resume and --init both give the flock's start: drop one");
        }
        if self.n.is_some_and(|m| m != n) {
            bail!(
                "checkpoint {} was written for n {n}, this run uses n {}",
                r.path.display(),
                self.n.unwrap()
            );
        }
        let mut f = self.clone();
        f.n = Some(n);
        Ok(f)
    }

    /// The configuration the viewer reloads when the `--config` file is saved: the layering
    /// again, `n` (the snapshot's N when the flock came from `--init`) and the grid picked as at
    /// the start.
    pub fn reload(&self, n: Option<u64>) -> Result<FlockConfig, ConfigError> {
        let mut c = self.config()?;
        c.sim.n = n.unwrap_or(c.sim.n);
        if !self.grid_given()? {
            pick_grid(&mut c);
        }
        Ok(c)
    }

    /// True when the cell width or the x-split is set by a flag or the `--config` file; false
    /// when [`pick_grid`] picks them from the density.
    pub fn grid_given(&self) -> Result<bool, ConfigError> {
        if self.cell_width_factor.is_some() || self.x_split.is_some() {
            return Ok(true);
        }
        match &self.config {
            Some(path) => FlockConfig::sets_grid(path),
            None => Ok(false),
        }
    }
}

/// Grid by density (boids per unit volume, `n / (2 scale)^3`) for runs that set neither the cell
/// width nor the x-split: `(densities below, cell-width factor, x-split)`. From the H200 sweep
/// in docs/performance.md: 100k boids at scale 100 (density 0.0125) ran fastest with 1x cells
/// and x-split 4, 1M (0.125) with 1x and x-split 8, 5M (0.625) with 0.5x and x-split 8; the
/// bounds are the geometric means of neighbouring densities.
pub const GRID_BY_DENSITY: [(f64, f32, u32); 3] =
    [(0.04, 1.0, 4), (0.28, 1.0, 8), (f64::INFINITY, 0.5, 8)];

/// Sets `c`'s cell width and x-split from [`GRID_BY_DENSITY`]; where that grid exceeds the
/// keys' range, the largest smaller x-split that fits (else 1, and validation says why).
pub fn pick_grid(c: &mut FlockConfig) {
    pick_grid_for(c, 1)
}

/// [`pick_grid`] for a flock split across `ranks` ranks.
pub fn pick_grid_for(c: &mut FlockConfig, ranks: usize) {
    let side = 2.0 * c.params.scale as f64;
    let density = c.sim.n as f64 / (side * side * side);
    if !density.is_finite() {
        return;
    }
    let &(_, factor, x_split) = GRID_BY_DENSITY
        .iter()
        .find(|(below, ..)| density < *below)
        .unwrap_or(&GRID_BY_DENSITY[GRID_BY_DENSITY.len() - 1]);
    c.sim.cell_width_factor = factor;
    for x in (1..=x_split).rev() {
        c.sim.x_split = x;
        if c.settings_for(ranks).is_ok() {
            return;
        }
    }
}

/// `flock run` on one rank (the command line sends a run on several ranks to `ranks::run`).
pub fn run(a: &RunArgs) -> Result<()> {
    if let Some(out) = &a.save {
        preflight::check_output_file(out)?;
    }
    let resumed = match &a.checkpoint.resume {
        Some(p) => Some(resume::open(p, a.steps)?),
        None => None,
    };
    let flock_args = match &resumed {
        Some(r) => a.flock.resuming(r)?,
        None => a.flock.clone(),
    };
    let (mut settings, state) = flock_args.build()?;
    settings.gpu_timer = !a.no_gpu_timer;
    if let Some(r) = &resumed {
        r.check(&settings)?;
    }
    let schedule = Schedule::new(
        &a.checkpoint,
        &checkpoint_prefix(&a.flock),
        a.save.as_deref(),
        false,
    );
    schedule.prepare()?;
    // The library's flock: the CLI is built on the API.
    let mut flock = crate::Flock::from_parts(settings.clone(), state, a.flock.backend, 0)?;
    if let Some(note) = flock.fallback() {
        eprintln!("murmur: {note}");
    }
    if let Some(r) = &resumed {
        flock.backend_mut().restore(&r.capture)?;
    }
    if a.save.is_some() {
        let n = flock.len() as u64;
        preflight::check_host_memory(
            &format!("the snapshot of {n} boids"),
            super::snapshot_host_bytes(n),
        )?;
    }
    let picked = if flock_args.grid_given()? {
        ""
    } else {
        ", picked for the density"
    };
    let progress = !a.quiet && std::io::stderr().is_terminal();
    let first = resumed.as_ref().map_or(0, |r| r.step());
    let describe = flock.describe();
    let backend = resume::backend_name(&describe).to_string();
    // The last checkpoint written: (step, path).
    let mut written: Option<(u64, PathBuf)> = None;
    let mut write = |b: &mut dyn super::FlockBackend, step: u64| -> Result<PathBuf, SimError> {
        if let Some((s, p)) = &written {
            if *s == step {
                return Ok(p.clone());
            }
        }
        let w = resume::save(&schedule.path(step), step, &b.capture()?, &backend)?;
        schedule.rotate(&w.path)?;
        written = Some((step, w.path.clone()));
        Ok(w.path)
    };
    let report = {
        // SIGINT / SIGTERM (the command's handlers): stop after the current step.
        let mut stop = crate::stop::command_probe(None, 1);
        let mut after = |b: &mut dyn super::FlockBackend, done: u64| {
            if schedule.due(first + done) {
                write(b, first + done)?;
            }
            Ok(())
        };
        driver::run_with(
            flock.backend_mut(),
            a.steps - first,
            progress,
            &mut *stop,
            &mut after,
        )?
    };
    if let Some(s) = report.stopped {
        // Every stop leaves a checkpoint of the step it stopped at.
        let step = first + s.step;
        let path = write(flock.backend_mut(), step)?;
        return Err(crate::stop::SignalStop::new(step, a.steps, true)
            .with_checkpoint(&path)
            .into());
    }
    let what = format!(
        "{describe}, {}, scale {}, cell width factor {}, x-split {}{picked}",
        settings.method.name(),
        settings.params.scale,
        settings.cell_width_factor,
        settings.x_split
    );
    if let Some(r) = &resumed {
        println!("resumed from step {} ({})", r.step(), r.path.display());
    }
    println!("{}", report.summary(&what));
    if !report.stages.is_empty() {
        println!("stages (mean per step): {}", report.stages);
    }
    if let Some(out) = &a.save {
        let s = flock.state()?;
        snapshot::save(out, &s)?;
        println!("saved {} boids to {}", s.len(), out.display());
    }
    Ok(())
}

/// The name before `-STEP.npz` of `flock run`'s checkpoints: the `--config` file's stem, else
/// `flock`.
pub(crate) fn checkpoint_prefix(f: &FlockArgs) -> String {
    f.config
        .as_deref()
        .and_then(|p| p.file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "flock".into())
}

pub fn bench(a: &BenchArgs) -> Result<()> {
    use super::bench::{self, BenchPlan};
    if let Some(csv) = &a.replot {
        for file in bench::replot(csv, &a.out)? {
            println!("wrote {}", file.display());
        }
        return Ok(());
    }
    let f = &a.flock;
    if f.init.is_some() {
        bail!("flock bench starts every configuration from a random flock: drop --init");
    }
    let base = f.config()?.settings()?;
    preflight::check_output_dir(&a.out)?;
    // The defaults follow the backend: auto benchmarks the CPU when no GPU is usable.
    let backend = match f.backend {
        BackendChoice::Auto => match crate::gpu::Gpu::open() {
            Ok(_) => BackendChoice::Auto,
            Err(e) => {
                eprintln!("murmur: {e}; benchmarking the CPU backend");
                BackendChoice::Cpu
            }
        },
        b => b,
    };
    let cpu = backend == BackendChoice::Cpu;
    let plan = BenchPlan {
        ns: or(
            &a.sizes,
            f.n.map(|n| n as usize),
            if cpu {
                vec![10_000, 100_000]
            } else {
                vec![100_000, 1_000_000, 5_000_000]
            },
        ),
        scales: (!a.constant_density).then(|| or(&a.scales, Some(base.params.scale), vec![])),
        methods: or(&a.methods, f.method, vec![Method::Coherent]),
        factors: or(&a.factors, f.cell_width_factor, vec![1.0, 2.0]),
        x_splits: or(&a.x_splits, f.x_split, vec![base.x_split]),
        block_sizes: or(&a.block_sizes, f.block_size, vec![base.block_size]),
        warmup: a.warmup.unwrap_or(if cpu { 20 } else { 200 }),
        steps: a.steps.unwrap_or(if cpu { 100 } else { 1000 }),
        backend,
        seed: base_seed(f)?,
        out: a.out.clone(),
        base,
    };
    if plan.steps == 0 {
        bail!("--steps must be at least 1");
    }
    // Every configuration must be valid before minutes of sweeping start.
    let mut configs = 0u64;
    let mut boid_steps = 0f64;
    for &n in &plan.ns {
        let scales = match &plan.scales {
            Some(list) => list.clone(),
            None => vec![bench::constant_density_scale(n.max(1))],
        };
        for scale in scales {
            for &factor in &plan.factors {
                for &x_split in &plan.x_splits {
                    for &b in &plan.block_sizes {
                        let mut c = f.config()?;
                        c.sim.n = n as u64;
                        c.sim.cell_width_factor = factor;
                        c.sim.x_split = x_split;
                        c.sim.block_size = b;
                        c.params.scale = scale;
                        c.settings()?;
                        configs += plan.methods.len() as u64;
                        boid_steps +=
                            (plan.methods.len() * n) as f64 * (plan.warmup + plan.steps) as f64;
                    }
                }
            }
        }
    }
    if cpu {
        let threads = rayon::current_num_threads();
        let seconds = boid_steps * CPU_CORE_SECONDS_PER_BOID_STEP / threads as f64;
        let what = format!(
            "{configs} configuration{} of {} steps, {} on {threads} threads",
            if configs == 1 { "" } else { "s" },
            plan.warmup + plan.steps,
            duration(seconds)
        );
        if seconds > 3600.0 && !a.yes {
            bail!(
                "this CPU sweep would take long ({what}): pass --yes to run it, or sweep fewer \
                 or smaller --sizes or fewer --steps"
            );
        }
        eprintln!("murmur: CPU sweep: {what}");
    }
    let rows = bench::run(&plan)?;
    print!("{}", bench::markdown(&rows, &plan));
    println!(
        "wrote {}/steps.csv, summary.csv, summary.md, ms_per_step.png",
        plan.out.display()
    );
    Ok(())
}

/// The CPU backend's cost of one boid-step at the default density (1M boids at scale 100 take
/// 1.15 s per step on 2 cores): a rough figure for the sweep's time estimate.
const CPU_CORE_SECONDS_PER_BOID_STEP: f64 = 2.3e-6;

/// An estimate: `under a second`, `about 45 s`, `about 12 min`, `about 3.4 h`.
fn duration(seconds: f64) -> String {
    if seconds < 1.0 {
        "under a second".into()
    } else if seconds < 90.0 {
        format!("about {seconds:.0} s")
    } else if seconds < 5400.0 {
        format!("about {:.0} min", seconds / 60.0)
    } else {
        format!("about {:.1} h", seconds / 3600.0)
    }
}

/// A sweep list: the list flag, else the single-value flag, else the default.
fn or<T: Clone>(list: &[T], one: Option<T>, default: Vec<T>) -> Vec<T> {
    if !list.is_empty() {
        list.to_vec()
    } else if let Some(x) = one {
        vec![x]
    } else {
        default
    }
}

fn base_seed(f: &FlockArgs) -> Result<u64> {
    Ok(f.config()?.sim.seed)
}

pub fn sort_bench(a: &SortBenchArgs) -> Result<()> {
    use crate::gpu::sort::{check_sort, RadixSort};
    if !(1..=32).contains(&a.bits) {
        bail!("--bits must be from 1 to 32, got {}", a.bits);
    }
    if a.sizes.contains(&0) || a.repeat == 0 {
        bail!("--sizes and --repeat must be positive");
    }
    let gpu = crate::gpu::Gpu::open()?;
    println!(
        "device radix sort, {} (u32 keys with {} significant bits, u32 values)",
        gpu.name, a.bits
    );
    println!("| pairs | mean ms | Gpairs/s | matches CPU sort |");
    println!("|---|---|---|---|");
    for &n in &a.sizes {
        let mut sorter = RadixSort::new(&gpu, n)?;
        let first = check_sort(&gpu, &mut sorter, n, a.bits, 1)?;
        let mut ms = 0.0;
        let mut pass = first.pass;
        for r in 0..a.repeat {
            let c = check_sort(&gpu, &mut sorter, n, a.bits, 2 + r as u64)?;
            ms += c.ms;
            pass &= c.pass;
        }
        let ms = ms / a.repeat as f64;
        println!(
            "| {n} | {ms:.3} | {:.2} | {} |",
            n as f64 / ms / 1e6,
            if pass { "yes" } else { "NO" }
        );
        if !pass {
            bail!("the device sort disagreed with the CPU sort at {n} pairs");
        }
    }
    Ok(())
}

pub fn check(a: &CheckArgs) -> Result<()> {
    let settings = FlockConfig::default().settings()?;
    if a.sizes.contains(&0) {
        bail!("--sizes must be positive");
    }
    let passed = super::check::run(&settings, &a.sizes, a.sort_max.max(1), a.seed)
        .context("flock check compares the GPU with the CPU reference and needs a CUDA GPU")?;
    if !passed {
        bail!("some checks failed (see the FAIL rows above)");
    }
    println!("all checks passed");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        flock: FlockArgs,
    }

    fn config(args: &[&str]) -> FlockConfig {
        let cli =
            Cli::try_parse_from(std::iter::once("murmur").chain(args.iter().copied())).unwrap();
        cli.flock.config().unwrap()
    }

    fn asset(name: &str) -> String {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../assets/flock")
            .join(name)
            .display()
            .to_string()
    }

    #[test]
    fn defaults_then_config_then_flags_then_set() {
        let swarm = asset("tight-swarm.toml");
        // Defaults: the CIS 565 rules, 100k boids.
        let c = config(&[]);
        assert_eq!(c.params, murmur_common::flock::FlockParams::CIS565);
        assert_eq!(c.sim.n, 100_000);
        // The config file overrides the defaults.
        let c = config(&["--config", &swarm]);
        assert_eq!((c.params.scale, c.params.rule1_scale), (50.0, 0.03));
        assert_eq!((c.sim.n, c.sim.seed), (50_000, 7));
        // Flags override the file.
        let c = config(&["--config", &swarm, "--scale", "80", "--n", "1000"]);
        assert_eq!((c.params.scale, c.sim.n), (80.0, 1000));
        assert_eq!(c.params.rule1_scale, 0.03);
        // --set overrides flags (scale is both a flag and a rule parameter).
        let c = config(&["--config", &swarm, "--scale", "80", "--set", "scale=90"]);
        assert_eq!(c.params.scale, 90.0);
        let c = config(&["--set", "rule1_scale=0.02", "--set", "rule1_scale=0.04"]);
        assert_eq!(c.params.rule1_scale, 0.04);
    }

    #[test]
    fn the_tight_swarm_loads_and_validates() {
        let c = FlockConfig::load(Path::new(&asset("tight-swarm.toml"))).unwrap();
        assert_eq!(c.params.rule2_distance, 2.0);
        assert_eq!(c.sim.method, Method::Coherent);
        assert!(c.settings().is_ok());
    }
}
