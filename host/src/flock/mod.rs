//! Flocking: settings, state, the CPU reference and CUDA backends, snapshots and the run driver.
//!
//! Both backends implement [`FlockBackend`]: the same methods, the same stages, the same rule math
//! (`murmur_common::flock`). `host/tests/` checks that they agree.

pub mod bench;
pub mod capture;
pub mod check;
pub mod cli;
pub mod config;
pub mod cpu;
pub mod cuda;
pub mod driver;
pub mod ranks;
pub mod resume;
pub mod slab;
pub mod slab_cuda;
pub mod snapshot;
pub mod stage;

use crate::raster::{CpuRaster, RasterError};
use crate::timing::StageTimes;
pub use murmur_common::flock::CellOrder;
use murmur_common::flock::{FlockParams, Grid};
use murmur_common::render::View;
use murmur_common::Vec3;
use serde::{Deserialize, Serialize};

/// Neighbour search method (the three of CIS 565, plus the shared-memory coherent variant).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Method {
    /// Every boid checks every other boid: O(N^2).
    Naive,
    /// Uniform grid; boids are reached through the sorted index array.
    Scattered,
    /// Uniform grid; positions and velocities are reordered into cell order every step.
    Coherent,
    /// `coherent`, with each block staging its cells' boids in shared memory (the CIS 565
    /// write-ups' shared-memory method; GPU only: the CPU backend runs `coherent` for it, which
    /// it equals up to summation order).
    CoherentShared,
}

impl Method {
    pub const ALL: [Method; 4] = [
        Method::Naive,
        Method::Scattered,
        Method::Coherent,
        Method::CoherentShared,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Method::Naive => "naive",
            Method::Scattered => "scattered",
            Method::Coherent => "coherent",
            Method::CoherentShared => "coherent-shared",
        }
    }

    pub fn uses_grid(self) -> bool {
        self != Method::Naive
    }
}

/// How the GPU bins boids into cells each step (the CPU reference always uses a comparison sort).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SortArg {
    /// Counting sort by cell: counts fused into the update kernel (atomics), one scan, one
    /// scatter that also reorders the state. Fastest; the order of boids inside a cell varies
    /// from run to run.
    Counting,
    /// The device LSD radix sort (onesweep) of (cell, index) pairs, stable: runs are
    /// bit-reproducible.
    Radix,
}

/// The order of the boids inside each grid cell once binned: the order a boid's neighbours are
/// visited and their rule terms added in (float sums depend on it, to the last bits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WithinCell {
    /// As binning leaves them: the counting sort's atomics (varies from run to run), or the
    /// previous step's order (the radix sort and the CPU's comparison sort: reproducible).
    #[default]
    Binned,
    /// Sorted by id in every cell (`order_cells_by_id` on the GPU): the same order on one rank
    /// and on N, whatever the binning, so the same flock gives the same bits (the check of a
    /// flock split across ranks; costs one more stage).
    ById,
}

/// How two flocks of the same boids differ, matched by id.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Difference {
    /// Largest position component difference, per axis the shorter way round the periodic
    /// domain (`x = -scale` and `x = +scale` are the same point).
    pub pos: f32,
    /// Largest velocity component difference.
    pub vel: f32,
    /// Boids with a position or velocity component differing by more than the tolerance.
    pub beyond: u64,
    /// Boids whose position or velocity differ at all (compared as numbers).
    pub differ: u64,
}

/// Everything that defines a flock simulation besides its state.
#[derive(Clone, Debug, PartialEq)]
pub struct FlockSettings {
    pub params: FlockParams,
    pub method: Method,
    /// Cell width as a multiple of the largest rule distance (2 searches 8 cells, 1 searches 27).
    pub cell_width_factor: f32,
    /// Cells along x are this many times narrower than along y and z (>= 1): each run of cells
    /// the search walks along x is trimmed that much closer to the search sphere.
    pub x_split: u32,
    /// Threads per block of the GPU kernels.
    pub block_size: u32,
    pub cell_order: CellOrder,
    /// GPU binning: counting or radix sort.
    pub sort: SortArg,
    /// GPU: replay each step as one CUDA graph (per-stage times need it off).
    pub cuda_graph: bool,
    /// GPU: chain the counting path's stages (scan, scatter, update) with programmatic
    /// dependent launch, so each starts while the one before drains (sm_90+).
    pub pdl: bool,
    /// GPU: time steps with CUDA events (`flock run --no-gpu-timer` turns it off, to see how fast
    /// the steps go with nothing else in the stream; the bench always times).
    pub gpu_timer: bool,
}

impl FlockSettings {
    /// The grid these settings define.
    pub fn grid(&self) -> Grid {
        Grid::new(
            self.params.scale,
            self.cell_width_factor * self.params.max_distance(),
            self.x_split,
            self.cell_order,
        )
    }
}

/// Positions, velocities and ids of a flock, in the same (arbitrary) order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FlockState {
    pub pos: Vec<Vec3>,
    pub vel: Vec<Vec3>,
    /// Boid ids: a permutation of `0..n`; they travel with the boids through any reordering.
    pub id: Vec<u32>,
}

impl FlockState {
    /// The CIS 565 start: positions uniform in `[-scale, scale]^3`, velocities zero, ids `0..n`.
    pub fn random(n: usize, scale: f32, seed: u64) -> FlockState {
        use rayon::prelude::*;
        let pos = (0..n as u64)
            .into_par_iter()
            .map(|i| murmur_common::flock::initial_position(seed, i, scale))
            .collect();
        FlockState {
            pos,
            vel: vec![Vec3::ZERO; n],
            id: (0..n as u32).collect(),
        }
    }

    pub fn len(&self) -> usize {
        self.pos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The same boids, ordered by id (`pos[i]` is boid `i`). Ids must be a permutation of `0..n`.
    pub fn sorted_by_id(&self) -> FlockState {
        let n = self.len();
        let mut out = FlockState {
            pos: vec![Vec3::ZERO; n],
            vel: vec![Vec3::ZERO; n],
            id: (0..n as u32).collect(),
        };
        for k in 0..n {
            let i = self.id[k] as usize;
            out.pos[i] = self.pos[k];
            out.vel[i] = self.vel[k];
        }
        out
    }

    /// Largest `|pos|` and `|vel|` component difference between two flocks, matched by id.
    pub fn max_difference(&self, other: &FlockState) -> (f32, f32) {
        let a = self.sorted_by_id();
        let b = other.sorted_by_id();
        let mut dp = 0.0f32;
        let mut dv = 0.0f32;
        for i in 0..a.len().min(b.len()) {
            dp = dp.max(max_abs(a.pos[i] - b.pos[i]));
            dv = dv.max(max_abs(a.vel[i] - b.vel[i]));
        }
        (dp, dv)
    }

    /// [`Difference`] between two flocks of the same boids on the periodic domain of half-width
    /// `scale` (matched by id; `tolerance` counts the boids beyond it).
    pub fn difference(&self, other: &FlockState, scale: f32, tolerance: f32) -> Difference {
        let a = self.sorted_by_id();
        let b = other.sorted_by_id();
        let width = 2.0 * scale;
        let mut d = Difference::default();
        for i in 0..a.len().min(b.len()) {
            let dp = (a.pos[i] - b.pos[i]).abs();
            let dp = dp.min(Vec3::splat(width) - dp);
            let (dp, dv) = (max_abs(dp), max_abs(a.vel[i] - b.vel[i]));
            d.pos = d.pos.max(dp);
            d.vel = d.vel.max(dv);
            d.beyond += (dp > tolerance || dv > tolerance) as u64;
            d.differ += (a.pos[i] != b.pos[i] || a.vel[i] != b.vel[i]) as u64;
        }
        d
    }
}

fn max_abs(v: Vec3) -> f32 {
    v.x.abs().max(v.y.abs()).max(v.z.abs())
}

/// What every flock backend offers: the CPU reference and CUDA have the same methods.
pub trait FlockBackend {
    /// `"cpu (rayon, 8 threads)"`, `"cuda (NVIDIA H200)"`.
    fn describe(&self) -> String;
    /// Number of boids.
    fn len(&self) -> usize;
    /// True for an empty flock (never, once validated: n >= 1).
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Advances one step (queues it, on the GPU).
    fn step(&mut self) -> Result<(), SimError>;
    /// Waits until every queued step has finished: call it before a wall clock stops.
    fn synchronize(&mut self) -> Result<(), SimError> {
        Ok(())
    }
    /// Copies the state back, ordered by id.
    fn state(&mut self) -> Result<FlockState, SimError>;
    /// Replaces the whole state (same or different `n`).
    fn set_state(&mut self, state: &FlockState) -> Result<(), SimError>;
    /// The exact internal state ([`capture::FlockCapture`]): the boids in their internal order,
    /// the double-buffer index, the order inside cells and the settings in use.
    fn capture(&mut self) -> Result<capture::FlockCapture, SimError>;
    /// Restores a capture (same or different `n`), so the next step is the one the captured
    /// backend would have taken. Refused, with the field named, when the capture is malformed or
    /// was stepped with other rules or another grid than this backend's settings.
    fn restore(&mut self, capture: &capture::FlockCapture) -> Result<(), SimError>;
    /// Changes settings between steps (rule parameters, method, grid), without a restart.
    fn set_settings(&mut self, settings: &FlockSettings) -> Result<(), SimError>;
    /// Per-stage times accumulated since the last `reset_times`.
    fn times(&mut self) -> Result<StageTimes, SimError>;
    fn reset_times(&mut self);
    /// Mean GPU time per step from CUDA events (None on the CPU).
    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        None
    }
    /// Draws the flock as `view` sees it into `rgba` (`width * height * 4` bytes, `RGBA8`,
    /// row-major, `y` down; `background` where no boid lands), with `murmur_common::render`.
    ///
    /// This default copies the state back (`state()`) and rasterises it on the CPU; backends
    /// override it to draw where their boids live.
    fn render_into(
        &mut self,
        view: &View,
        background: u32,
        rgba: &mut [u8],
    ) -> Result<(), SimError> {
        let s = self.state()?;
        CpuRaster::default().draw(view, &s.pos, &s.vel, background, rgba)?;
        Ok(())
    }
    /// Each step's time (ms) since `reset_times`: GPU time from CUDA events on the GPU, wall time
    /// on the CPU.
    fn step_ms(&mut self) -> Result<Vec<f64>, SimError>;
    /// The current state where it lives on the GPU (None on the CPU): the bodies (`Body`:
    /// position then id, 16 B each, in the backend's internal order) and the velocities
    /// (`[f32; 3]`, the same order). Valid until the next step or state change.
    fn device_state(&mut self) -> Result<Option<DeviceState>, SimError> {
        Ok(None)
    }
    /// Device bytes per boid, all buffers counted (None on the CPU).
    fn device_bytes_per_boid(&self) -> Option<f64> {
        None
    }
}

/// A flock's state on the GPU ([`FlockBackend::device_state`]).
#[derive(Clone, Debug)]
pub struct DeviceState {
    /// `Body` per boid: position (3 x f32) then id (u32).
    pub bodies: crate::gpu::exposed::RawBuffer,
    /// `[f32; 3]` per boid.
    pub velocities: crate::gpu::exposed::RawBuffer,
}

/// Why a simulation could not go on.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    #[error(transparent)]
    Render(#[from] RasterError),
    #[error(transparent)]
    Preflight(#[from] crate::preflight::PreflightError),
    #[error(transparent)]
    Comm(#[from] crate::ranks::CommError),
    /// A checkpoint that could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    #[error("{0}")]
    Invalid(String),
}

/// Host bytes per boid of [`cpu::CpuFlock`]: positions, velocities and ids (28 B), their
/// cell-ordered copies (28 B), the new velocities (12 B) and the (key, index) pairs (8 B).
pub const CPU_BYTES_PER_BOID: u64 = 76;
/// Host bytes per boid of a [`FlockState`] (position, velocity, id).
pub const STATE_BYTES_PER_BOID: u64 = 28;

/// Host bytes the CPU backend needs for `n` boids on a grid of `cells` cells: its buffers, the
/// start state it copies them from and the cell table (4 B per cell).
pub fn cpu_host_bytes(n: u64, cells: u64) -> u64 {
    n * (CPU_BYTES_PER_BOID + STATE_BYTES_PER_BOID) + 4 * (cells + 1)
}

/// Host bytes of writing a snapshot of `n` boids: the state copied back, its id-ordered copy and
/// the arrays handed to the writer.
pub fn snapshot_host_bytes(n: u64) -> u64 {
    3 * STATE_BYTES_PER_BOID * n
}
