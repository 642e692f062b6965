//! Throughput: million lattice updates per second (MLUPs/s) per collision model and grid size,
//! bytes moved per cell update and the fraction of the measured memory bandwidth.
//!
//! The grid is a periodic box (every cell fluid, a Taylor-Green start). Bytes per cell update
//! are 27 loads and 27 stores of one population each (4 bytes in FP32, 2 in FP16) and the
//! cell-type byte ([`bytes_per_update`]), and with WALE the velocity field's 12 bytes written
//! and 12 read ([`WALE_BYTES`]); the bandwidth reference is the best of a few device-to-device
//! copies of a buffer the size of the populations on the same backend.

use super::scene::file::{Les, DEFAULT_SMAGORINSKY, DEFAULT_WALE};
use super::scene::taylor_green;
use super::timed::{timed_steps, StepOptions, WARMUP_STEPS};
use super::validate::Opener;
use super::FluidError;
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming, Q};

/// Bytes moved per cell update: every population read and written once, plus the cell byte.
pub const fn bytes_per_update(storage: StorageKind) -> u64 {
    (2 * Q * storage.bytes() + 1) as u64
}

/// WALE's bytes per cell update beside the populations': the cell's velocity written, and the
/// field read at the neighbours, each value once from memory (the other five reads of it hit
/// the caches).
pub const WALE_BYTES: u64 = 24;

/// Bytes moved per cell update with subgrid model `les`.
pub const fn bytes_per_update_with(storage: StorageKind, les: Les) -> u64 {
    bytes_per_update(storage)
        + match les {
            Les::Wale => WALE_BYTES,
            _ => 0,
        }
}

/// Bytes of device memory per cell of a periodic box: the copies of the populations the
/// streaming scheme keeps and the cell byte; nothing else scales with the lattice.
pub const fn bytes_per_cell(storage: StorageKind, streaming: Streaming) -> u64 {
    streaming.copies() * (Q * storage.bytes()) as u64 + 1
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct BenchResult {
    pub model: CollisionModel,
    /// The subgrid model the step ran with.
    pub les: Les,
    pub storage: StorageKind,
    pub streaming: Streaming,
    pub layout: Layout,
    /// Bytes the backend held for the lattice.
    pub allocated: u64,
    pub n: u32,
    pub steps: u64,
    pub ms_per_step: f64,
    pub mlups: f64,
    /// Achieved bandwidth, GB/s (`MLUPs x` [`bytes_per_update`]).
    pub gbs: f64,
    /// Measured copy bandwidth of the backend, GB/s.
    pub copy_gbs: f64,
    /// True when the time comes from CUDA events.
    pub gpu_timed: bool,
}

/// Measures `model` with subgrid model `les` on an `n^3` periodic box for `steps` steps.
pub fn bench_one(
    open: &mut Opener,
    model: CollisionModel,
    les: Les,
    n: u32,
    steps: u64,
) -> Result<BenchResult, FluidError> {
    let mut setup = taylor_green(n, n, 0.05, 0.01, model)?;
    match les {
        Les::None => {}
        Les::Smagorinsky => {
            setup.params.smagorinsky = murmur_common::lbm::les::factor(DEFAULT_SMAGORINSKY)
        }
        Les::Wale => setup.params.wale = murmur_common::lbm::wale::factor(DEFAULT_WALE),
    }
    let mut b = open(&setup)?;
    let storage = b.storage();
    let allocated = b.allocated_bytes();
    let copy_gbs = b.bench()?.memory_bandwidth()? / 1e9;
    let timed = timed_steps(b.as_mut(), WARMUP_STEPS, steps, StepOptions::PLAIN)?;
    let ms = timed.ms_per_step();
    let mlups = setup.lattice().cells() as f64 / ms / 1e3;
    Ok(BenchResult {
        model,
        les,
        storage,
        streaming: b.streaming(),
        layout: b.layout(),
        allocated,
        n,
        steps,
        ms_per_step: ms,
        mlups,
        gbs: mlups * 1e6 * bytes_per_update_with(storage, les) as f64 / 1e9,
        copy_gbs,
        gpu_timed: timed.gpu_ms.is_some(),
    })
}

/// The results as a Markdown table.
pub fn table(results: &[BenchResult]) -> String {
    let mut s = String::from(
        "| model | storage | streaming | layout | grid | steps | ms/step | MLUPs/s | B/cell update \
         | GB/s | copy GB/s | fraction | allocated |\n\
         |---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        s += &format!(
            "| {}{} | {} | {} | {} | {n}^3 | {} | {:.3} | {:.1} | {} | {:.1} | {:.1} | {:.1} % | {:.1} MiB \
             ({:.1} B/cell) |\n",
            r.model.name(),
            match r.les {
                Les::None => "",
                Les::Smagorinsky => " + smagorinsky",
                Les::Wale => " + wale",
            },
            r.storage.name(),
            r.streaming.name(),
            r.layout.describe(),
            r.steps,
            r.ms_per_step,
            r.mlups,
            bytes_per_update_with(r.storage, r.les),
            r.gbs,
            r.copy_gbs,
            100.0 * r.gbs / r.copy_gbs,
            r.allocated as f64 / (1u64 << 20) as f64,
            r.allocated as f64 / (r.n as f64).powi(3),
            n = r.n,
        );
    }
    s
}

/// Memory per cell of each storage and the largest periodic cube that fits the device's free
/// memory (`memory`: `(free, total)` bytes; the table says so when unknown).
pub fn capacity_table(
    storages: &[StorageKind],
    streamings: &[Streaming],
    memory: Option<(u64, u64)>,
) -> String {
    let mut s = String::from(
        "| storage | streaming | bytes per cell | largest cube on this device |\n|---|---|---|---|\n",
    );
    for (&st, &sm) in storages
        .iter()
        .flat_map(|s| streamings.iter().map(move |t| (s, t)))
    {
        let per = bytes_per_cell(st, sm);
        let fit = match memory {
            // The same margin as the allocation check: 5 % and 256 MiB kept free.
            Some((free, _)) => {
                let usable = (free as f64 * 0.95 - (256u64 << 20) as f64).max(0.0);
                let n = (usable / per as f64).cbrt().floor() as u64;
                format!("{n}^3 ({:.2e} cells)", (n as f64).powi(3))
            }
            None => "(no device memory figure on this backend)".to_string(),
        };
        s += &format!("| {} | {} | {per} | {fit} |\n", st.name(), sm.name());
    }
    if let Some((free, total)) = memory {
        s += &format!(
            "(device memory: {:.1} GiB free of {:.1} GiB)\n",
            free as f64 / (1u64 << 30) as f64,
            total as f64 / (1u64 << 30) as f64
        );
    }
    s
}
