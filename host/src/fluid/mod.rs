//! Kinetic fluid (D3Q27 lattice Boltzmann): setups, the CPU reference and CUDA backends, scenes,
//! validation cases, benchmark, field output and the run driver.
//!
//! Both backends implement [`FluidBackend`]: the same methods, the same single stage
//! (`stream_collide`, pull scheme), the same math (`murmur_common::lbm`). `host/tests/` checks
//! that they agree.

pub mod bench;
pub mod cli;
pub mod cpu;
pub mod cuda;
pub mod derived;
pub mod driver;
pub mod forces;
pub mod ib;
pub mod ib_bench;
pub mod immersed;
pub mod output;
pub mod scene;
pub mod sink;
pub mod validate;
pub mod validate_ib;

use crate::timing::StageTimes;
use murmur_common::lbm::{CellKind, CollisionModel, Lattice, LbmParams};

/// Everything a backend is built from: the model, the kernel parameters, the cell types and the
/// initial fields (the populations start at their equilibrium).
#[derive(Clone, Debug)]
pub struct Setup {
    pub model: CollisionModel,
    pub params: LbmParams,
    /// One [`CellKind`] byte per cell.
    pub flags: Vec<u8>,
    pub init: Fields,
    /// Solids coupled by the immersed boundary (empty: none).
    pub immersed: ib::Immersed,
}

impl Setup {
    pub fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    /// The cell bytes the backends run with: the kinds plus the `NEAR_BOUNDARY` bit on fluid
    /// cells next to non-fluid ones.
    pub fn prepared_flags(&self) -> Vec<u8> {
        let mut flags = self.flags.clone();
        murmur_common::lbm::boundary::mark_near_boundary(&self.lattice(), &mut flags);
        flags
    }

    /// Number of fluid cells.
    pub fn fluid_cells(&self) -> usize {
        self.flags
            .iter()
            .filter(|&&k| k & murmur_common::lbm::boundary::KIND_MASK == CellKind::Fluid as u8)
            .count()
    }
}

/// Macroscopic fields, lattice units, structure of arrays like the GPU buffer:
/// `data = [rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]` (16 B per cell).
#[derive(Clone, Debug, PartialEq)]
pub struct Fields {
    pub lattice: Lattice,
    pub data: Vec<f32>,
}

impl Fields {
    /// Density 1, velocity 0 everywhere.
    pub fn rest(lattice: Lattice) -> Fields {
        let n = lattice.cells();
        let mut data = vec![0.0; 4 * n];
        data[..n].fill(1.0);
        Fields { lattice, data }
    }

    pub fn n(&self) -> usize {
        self.lattice.cells()
    }

    pub fn rho(&self, cell: usize) -> f32 {
        self.data[cell]
    }

    pub fn u(&self, cell: usize) -> [f32; 3] {
        let n = self.n();
        [
            self.data[n + cell],
            self.data[2 * n + cell],
            self.data[3 * n + cell],
        ]
    }

    pub fn set(&mut self, cell: usize, rho: f32, u: [f32; 3]) {
        let n = self.n();
        self.data[cell] = rho;
        self.data[n + cell] = u[0];
        self.data[2 * n + cell] = u[1];
        self.data[3 * n + cell] = u[2];
    }

    /// The first fluid cell whose density or velocity is not finite, if any.
    pub fn first_non_finite(&self, flags: &[u8]) -> Option<usize> {
        let n = self.n();
        (0..n).find(|&c| {
            flags[c] == CellKind::Fluid as u8
                && !(self.data[c].is_finite()
                    && self.data[n + c].is_finite()
                    && self.data[2 * n + c].is_finite()
                    && self.data[3 * n + c].is_finite())
        })
    }

    /// Largest difference to `other` relative to the largest magnitude of `other`, for density
    /// deviation `rho - 1` and for velocity: `max |a - b| / max |b|` over all cells.
    pub fn max_relative_difference(&self, other: &Fields) -> (f64, f64) {
        let n = self.n().min(other.n());
        let (mut drho, mut rho_scale, mut du, mut u_scale) = (0f64, 0f64, 0f64, 0f64);
        for c in 0..n {
            drho = drho.max((self.data[c] as f64 - other.data[c] as f64).abs());
            rho_scale = rho_scale.max((other.data[c] as f64 - 1.0).abs());
            for a in 1..4 {
                let (x, y) = (self.data[a * n + c] as f64, other.data[a * n + c] as f64);
                du = du.max((x - y).abs());
                u_scale = u_scale.max(y.abs());
            }
        }
        (drho / rho_scale.max(1e-30), du / u_scale.max(1e-30))
    }
}

/// What every fluid backend offers: the CPU reference and CUDA have the same methods.
pub trait FluidBackend {
    /// `"cpu (rayon, 8 threads)"`, `"cuda (NVIDIA H200)"`.
    fn describe(&self) -> String;
    fn lattice(&self) -> Lattice;
    fn model(&self) -> CollisionModel;
    /// Advances one step; with `store_fields` the step also writes `rho, u` for [`Self::fields`].
    fn step(&mut self, store_fields: bool) -> Result<(), FluidError>;
    /// The fields written by the last step that stored them (the initial fields before that).
    fn fields(&mut self) -> Result<Fields, FluidError>;
    /// All populations, `f[q * n + cell]` (post-collision of the last step).
    fn populations(&mut self) -> Result<Vec<f32>, FluidError>;
    /// Measured memory bandwidth in bytes/s: a copy of the population buffer into the scratch
    /// buffer (bytes read + written over time). Leaves the state unchanged.
    fn memory_bandwidth(&mut self) -> Result<f64, FluidError>;
    /// Steps done since the start.
    fn step_count(&self) -> u64;
    /// The forces on the solids of every step since the last call (lattice units, oldest
    /// first); empty without solids.
    fn take_forces(&mut self) -> Result<Vec<forces::ForceSample>, FluidError>;
    /// The solids' samples after the last step, with their forces (`None` without solids).
    fn samples(&mut self) -> Result<Option<immersed::SampleSnapshot>, FluidError>;
    /// The health of the fields the last step stored (`None` when no fluid cell exists).
    fn health(
        &mut self,
        bounds: &murmur_common::lbm::health::Bounds,
    ) -> Result<Option<murmur_common::lbm::health::Report>, FluidError>;
    /// Waits until all submitted work is done.
    fn synchronize(&mut self) -> Result<(), FluidError> {
        Ok(())
    }
    /// Per-stage times accumulated since the last `reset_times`.
    fn times(&mut self) -> Result<StageTimes, FluidError>;
    fn reset_times(&mut self);
    /// Sets the factor on every inlet velocity for the following steps
    /// (`LbmParams::inlet_scale`: the inlet ramp).
    fn set_inlet_scale(&mut self, scale: f32);
    /// Mean GPU time per step from CUDA events since `reset_times` (None on the CPU).
    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        None
    }
}

/// Why a fluid simulation could not be set up or go on.
#[derive(Debug, thiserror::Error)]
pub enum FluidError {
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    #[error(transparent)]
    Preflight(#[from] crate::preflight::PreflightError),
    #[error("{0}")]
    Invalid(String),
    #[error(
        "the flow became unstable: non-finite density or velocity at cell ({x}, {y}, {z}) at step \
         {step} (fields are checked every {every} steps; last finite state: step {last_good})"
    )]
    NonFinite {
        step: u64,
        last_good: u64,
        every: u64,
        x: u32,
        y: u32,
        z: u32,
    },
    #[error(
        "the flow left its bounds at step {step}, cell ({x}, {y}, {z}): {what} (checked every \
         {every} steps and on output steps; {})",
        match last_output {
            Some(s) => format!("the last output written, step {s}, passed"),
            None => "no output was written".to_string(),
        }
    )]
    Unhealthy {
        step: u64,
        every: u64,
        x: u32,
        y: u32,
        z: u32,
        what: String,
        last_output: Option<u64>,
    },
}
