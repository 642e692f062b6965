//! Throughput: million lattice updates per second (MLUPs/s) per collision model and grid size,
//! bytes moved per cell update and the fraction of the measured memory bandwidth.
//!
//! The grid is a periodic box (every cell fluid, a Taylor-Green start). Bytes per cell update
//! are [`BYTES_PER_CELL_UPDATE`] (27 loads + 27 stores of FP32 and the cell-type byte); the
//! bandwidth reference is a device-to-device copy of the population buffer on the same backend.

use super::scene::taylor_green;
use super::validate::Opener;
use super::FluidError;
use murmur_common::lbm::layout::BYTES_PER_CELL_UPDATE;
use murmur_common::lbm::CollisionModel;
use std::time::Instant;

/// Steps run before timing starts.
pub const WARMUP_STEPS: u64 = 10;

/// One measurement.
#[derive(Clone, Debug)]
pub struct BenchResult {
    pub model: CollisionModel,
    pub n: u32,
    pub steps: u64,
    pub ms_per_step: f64,
    pub mlups: f64,
    /// Achieved bandwidth, GB/s (`MLUPs x 217 B`).
    pub gbs: f64,
    /// Measured copy bandwidth of the backend, GB/s.
    pub copy_gbs: f64,
    /// True when the time comes from CUDA events.
    pub gpu_timed: bool,
}

/// Measures `model` on an `n^3` periodic box for `steps` steps.
pub fn bench_one(
    open: &mut Opener,
    model: CollisionModel,
    n: u32,
    steps: u64,
) -> Result<BenchResult, FluidError> {
    let setup = taylor_green(n, n, 0.05, 0.01, model)?;
    let mut b = open(&setup)?;
    let copy_gbs = b.memory_bandwidth()? / 1e9;
    for _ in 0..WARMUP_STEPS {
        b.step(false)?;
    }
    b.synchronize()?;
    b.reset_times();
    let t0 = Instant::now();
    for _ in 0..steps {
        b.step(false)?;
    }
    b.synchronize()?;
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let gpu = b.gpu_ms_per_step();
    let ms = gpu.unwrap_or(wall_ms);
    let mlups = setup.lattice().cells() as f64 / ms / 1e3;
    Ok(BenchResult {
        model,
        n,
        steps,
        ms_per_step: ms,
        mlups,
        gbs: mlups * 1e6 * BYTES_PER_CELL_UPDATE as f64 / 1e9,
        copy_gbs,
        gpu_timed: gpu.is_some(),
    })
}

/// The results as a Markdown table.
pub fn table(results: &[BenchResult]) -> String {
    let mut s = String::from(
        "| model | grid | steps | ms/step | MLUPs/s | B/cell update | GB/s | copy GB/s | fraction |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        s += &format!(
            "| {} | {n}^3 | {} | {:.3} | {:.1} | {} | {:.1} | {:.1} | {:.1} % |\n",
            r.model.name(),
            r.steps,
            r.ms_per_step,
            r.mlups,
            BYTES_PER_CELL_UPDATE,
            r.gbs,
            r.copy_gbs,
            100.0 * r.gbs / r.copy_gbs,
            n = r.n,
        );
    }
    s
}
