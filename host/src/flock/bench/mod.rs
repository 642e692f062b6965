//! `murmur flock bench`: sweeps over N, scale, method, cell-width factor, x-split and block
//! size; discards warm-up steps; records every measured step's time (CUDA events on the GPU, wall
//! time on the CPU).
//!
//! This file runs the sweep; `stats.rs` computes each configuration's statistics once, `csv.rs`
//! writes (and reads back) the CSV files and the markdown table, `plot.rs` draws the PNG plots.

pub mod csv;
pub mod plot;
pub mod stats;

pub use csv::{markdown, rows_from_steps_csv, STEPS_HEADER};
use stats::StepStats;

use super::driver::{open_backend, BackendChoice, Start};
use super::{FlockSettings, Method, SimError};
use crate::preflight::{check_output_dir, create_output_dir, PreflightError};
use std::path::{Path, PathBuf};

/// Why a sweep or a replot failed.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Preflight(#[from] PreflightError),
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Csv { path: String, message: String },
    #[error("cannot write results to {path}: {source}")]
    Write {
        path: String,
        source: std::io::Error,
    },
}

/// Per-step times of the best published CIS 565 implementation (CUDA C++, Thrust sort, coherent
/// grid, scale 100), measured on the same H200: `(N, ms with 27 cells, ms with 8 cells)`
/// (figures, command and date in docs/performance.md).
pub const PEER_H200: [(usize, f64, f64); 3] = [
    (100_000, 0.160, 0.175),
    (1_000_000, 1.02, 2.05),
    (5_000_000, 14.5, 40.1),
];

/// The per-step targets at scale 100 this project set itself (H200): `(N, ms)`.
pub const TARGETS_SCALE100: [(usize, f64); 3] =
    [(100_000, 0.030), (1_000_000, 0.25), (5_000_000, 3.5)];

/// The constant-density target (density of 1M boids at scale 100): `(N, ms)`.
pub const TARGET_DENSITY: (usize, f64) = (100_000_000, 30.0);

/// What to sweep.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    pub base: FlockSettings,
    pub ns: Vec<usize>,
    /// Scales to sweep for every N, or `None` for constant density (that of 1M boids at scale
    /// 100, one scale per N).
    pub scales: Option<Vec<f32>>,
    pub methods: Vec<Method>,
    pub factors: Vec<f32>,
    pub x_splits: Vec<u32>,
    pub block_sizes: Vec<u32>,
    pub warmup: u64,
    pub steps: u64,
    pub backend: BackendChoice,
    pub seed: u64,
    pub out: PathBuf,
}

/// One configuration's figures.
#[derive(Clone, Debug)]
pub struct BenchRow {
    pub n: usize,
    pub scale: f32,
    pub method: Method,
    pub factor: f32,
    pub x_split: u32,
    pub block: u32,
    pub backend: String,
    /// The statistics of `steps_ms` (and the mean wall time), computed once.
    pub stats: StepStats,
    pub bytes_per_boid: Option<f64>,
    /// Per-step times of the measured steps (CUDA events on the GPU, wall time on the CPU).
    pub steps_ms: Vec<f64>,
    /// Host wall time of each measured `step()` call (the step itself on the CPU; on the GPU the
    /// time to enqueue it, which follows the GPU's pace once the launch queue is full).
    pub steps_wall_ms: Vec<f64>,
}

/// Which scales a set of rows covers (titles, labels and the peer's figures depend on it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scales {
    /// Every row at this scale.
    Fixed(f32),
    /// Rows at several fixed scales.
    Several,
    /// Each N at the density of 1M boids at scale 100.
    ConstantDensity,
}

impl Scales {
    /// What `rows` cover: one scale, the constant-density scale of each row's N, or several.
    pub fn of(rows: &[BenchRow]) -> Scales {
        let first = rows.first().map_or(100.0, |r| r.scale);
        if rows.iter().all(|r| r.scale == first) {
            Scales::Fixed(first)
        } else if rows.iter().all(|r| r.scale == constant_density_scale(r.n)) {
            Scales::ConstantDensity
        } else {
            Scales::Several
        }
    }
}

/// The scale of `n` boids at the density of 1M boids at scale 100.
pub fn constant_density_scale(n: usize) -> f32 {
    (100.0 * (n as f64 / 1e6).cbrt()) as f32
}

/// Runs the plan, writing `steps.csv`, `summary.csv`, `summary.md` and `ms_per_step.png` into
/// `plan.out`. Returns the rows.
pub fn run(plan: &BenchPlan) -> Result<Vec<BenchRow>, BenchError> {
    let mut configs = Vec::new();
    for &n in &plan.ns {
        let scales = match &plan.scales {
            Some(list) => list.clone(),
            None => vec![constant_density_scale(n)],
        };
        for scale in scales {
            for &m in &plan.methods {
                for &f in &plan.factors {
                    for &x in &plan.x_splits {
                        for &b in &plan.block_sizes {
                            configs.push((n, scale, m, f, x, b));
                        }
                    }
                }
            }
        }
    }
    let total = configs.len() as u64 * (plan.warmup + plan.steps);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} steps, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    for (n, scale, method, factor, x_split, block) in configs {
        let mut s = plan.base.clone();
        s.params.scale = scale;
        s.method = method;
        s.cell_width_factor = factor;
        s.x_split = x_split;
        s.block_size = block;
        bar.set_message(format!(
            "{} N={n} scale={scale} f={factor} x={x_split} b={block}",
            method.name()
        ));
        let start = Start::Random { n, seed: plan.seed };
        let (mut sim, _) = open_backend(plan.backend, &s, &start)?;
        for _ in 0..plan.warmup {
            sim.step()?;
            bar.inc(1);
        }
        sim.reset_times();
        let t0 = std::time::Instant::now();
        let mut steps_wall_ms = Vec::with_capacity(plan.steps as usize);
        for _ in 0..plan.steps {
            let t = std::time::Instant::now();
            sim.step()?;
            steps_wall_ms.push(t.elapsed().as_secs_f64() * 1e3);
            bar.inc(1);
        }
        sim.synchronize()?;
        let steps_ms = sim.step_ms()?;
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3 / plan.steps.max(1) as f64;
        rows.push(BenchRow {
            n,
            scale: s.params.scale,
            method,
            factor,
            x_split,
            block,
            backend: sim.describe(),
            stats: StepStats::of(&steps_ms, wall_ms),
            bytes_per_boid: sim.device_bytes_per_boid(),
            steps_ms,
            steps_wall_ms,
        });
    }
    bar.finish_and_clear();
    write_outputs(plan, &rows).map_err(|source| BenchError::Write {
        path: plan.out.display().to_string(),
        source,
    })?;
    Ok(rows)
}

fn write_outputs(plan: &BenchPlan, rows: &[BenchRow]) -> std::io::Result<()> {
    std::fs::create_dir_all(&plan.out)?;
    csv::write_tables(plan, rows)?;
    // Log-scale plots need positive, finite times.
    if !rows.iter().all(|r| r.stats.plottable()) {
        return Err(std::io::Error::other(
            "a configuration recorded no step times",
        ));
    }
    plot::ms_per_step(&plan.out.join("ms_per_step.png"), rows, Scales::of(rows))?;
    if plan.block_sizes.len() > 1 {
        plot::block_sizes(&plan.out.join("block_size.png"), rows)?;
    }
    Ok(())
}

/// Redraws the plots of an earlier run from its `steps.csv` into `out` (`ms_per_step.png`, and
/// `block_size.png` when it swept several block sizes). Returns the files written.
pub fn replot(steps_csv: &Path, out: &Path) -> Result<Vec<PathBuf>, BenchError> {
    let path = steps_csv.display().to_string();
    let text = std::fs::read_to_string(steps_csv).map_err(|source| BenchError::Read {
        path: path.clone(),
        source,
    })?;
    let rows = rows_from_steps_csv(&text).map_err(|message| BenchError::Csv { path, message })?;
    check_output_dir(out)?;
    create_output_dir(out)?;
    let write = |source| BenchError::Write {
        path: out.display().to_string(),
        source,
    };
    let mut written = vec![out.join("ms_per_step.png")];
    plot::ms_per_step(&written[0], &rows, Scales::of(&rows)).map_err(write)?;
    let mut blocks: Vec<u32> = rows.iter().map(|r| r.block).collect();
    blocks.sort();
    blocks.dedup();
    if blocks.len() > 1 {
        written.push(out.join("block_size.png"));
        plot::block_sizes(&written[1], &rows).map_err(write)?;
    }
    Ok(written)
}
