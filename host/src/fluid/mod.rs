//! Kinetic fluid (D3Q27 lattice Boltzmann): setups, the CPU reference and CUDA backends, scenes,
//! validation cases, benchmark, field output and the run driver.
//!
//! Both backends implement [`FluidBackend`]: the same methods, the same step plan
//! ([`plan::FluidPlan`], walked stage by stage), the same math (`murmur_common::lbm`).
//! `host/tests/` checks that they agree bit for bit. What only the viewer or the bench asks of a
//! backend is in [`ViewHooks`] and [`BenchHooks`].

pub mod bench;
pub mod boundary_bench;
pub mod cli;
pub mod commands;
pub mod cpu;
pub mod cuda;
pub mod defaults;
pub mod derived;
pub mod driver;
mod fields;
pub mod forces;
pub mod ib;
pub mod inlet;
pub mod multi;
pub mod noise;
pub mod output;
pub mod pieces;
pub mod plan;
pub mod resume;
pub mod riders;
pub mod run;
pub mod scene;
pub mod sink;
pub mod slab;
pub mod slice_png;
pub mod state;
pub mod statistics;
pub mod timed;
pub mod tune;
pub mod tuning;
pub mod validate;
pub mod walls;

pub use fields::Fields;

use crate::timing::StageTimes;
use murmur_common::lbm::{CellKind, CollisionModel, Initial, Lattice, Layout, LbmParams};
use murmur_common::lbm::{Populations, StorageKind, Streaming};

/// Everything a backend is built from: the model, the kernel parameters, the cell types, the
/// initial fields (the populations start at their equilibrium, computed per cell where they
/// live), and how the populations are stored.
#[derive(Clone, Debug)]
pub struct Setup {
    pub model: CollisionModel,
    pub params: LbmParams,
    /// One [`CellKind`] byte per cell.
    pub flags: Vec<u8>,
    pub initial: Initial,
    /// Solids coupled by the immersed boundary (empty: none).
    pub immersed: ib::Immersed,
    /// Fixed solids with interpolated bounce-back, their nodes already cut solid nodes in
    /// `flags` (empty: none).
    pub walls: walls::Walls,
    /// Number format of the populations.
    pub storage: StorageKind,
    /// Memory layout of the populations (CSoA granularity).
    pub layout: Layout,
    /// Thread blocks of the interior stream-collide kernel (GPU only).
    pub block: Block,
    /// Streaming scheme; `None`: pull (two copies) when both fit, else in place.
    pub streaming: Option<Streaming>,
    /// Where the GPU runs the boundary kernel with respect to the interior one.
    pub boundary_launch: BoundaryLaunch,
    /// Launch each step as one CUDA graph (GPU only; one lattice, not a rank's slab: see
    /// `cuda::graph`). The stage times then hold one stage, `step (CUDA graph)`.
    pub graph: bool,
    /// GPU: run the outlet layer's interior cells in a kernel of their own over the layer's
    /// box (stage `stream_collide_sponge`) instead of in the interior kernel (the default: the
    /// layer's cells then run in the interior kernel's warps, `lbm_stream_collide_layer_*`).
    pub layer_kernel: bool,
}

/// Where the GPU runs the boundary kernel (the listed fluid cells next to walls, inlets and
/// outlets) with respect to the interior kernel. The two write disjoint cells and read nothing
/// the other writes, in both streaming schemes, so every choice stores the same bits. With a
/// second stream, stage `stream_collide` is the interior kernel sharing the GPU and `boundary`
/// the time the step still waits for the boundary kernel after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BoundaryLaunch {
    /// After the interior kernel on the same stream: each kernel's own time in its stage.
    Serial,
    /// On a second stream, launched after the interior kernel: its blocks start as soon as the
    /// interior kernel's last blocks are placed, on the SMs its last wave leaves idle, instead
    /// of after its last block ends.
    #[default]
    Tail,
    /// On a second stream at the device's highest priority, launched before the interior
    /// kernel as launches of `blocks_per_sm` blocks per SM one after another, each over its
    /// part of the list: the latency-bound boundary kernel runs through the interior kernel
    /// on about that share of each SM.
    Beside { blocks_per_sm: u32 },
}

impl BoundaryLaunch {
    /// Most blocks per SM of [`BoundaryLaunch::Beside`].
    pub const MAX_BLOCKS_PER_SM: u32 = 16;

    /// `serial`, `tail`, `beside` (one block per SM) or `beside-N`.
    pub fn parse(s: &str) -> Result<BoundaryLaunch, String> {
        match s {
            "serial" => return Ok(BoundaryLaunch::Serial),
            "tail" => return Ok(BoundaryLaunch::Tail),
            "beside" => return Ok(BoundaryLaunch::Beside { blocks_per_sm: 1 }),
            _ => {}
        }
        match s.strip_prefix("beside-").map(str::parse::<u32>) {
            Some(Ok(n)) if (1..=Self::MAX_BLOCKS_PER_SM).contains(&n) => {
                Ok(BoundaryLaunch::Beside { blocks_per_sm: n })
            }
            _ => Err(format!(
                "expected serial, tail, beside or beside-N (N blocks per SM, 1..={}), got `{s}`",
                Self::MAX_BLOCKS_PER_SM
            )),
        }
    }
}

impl std::fmt::Display for BoundaryLaunch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BoundaryLaunch::Serial => write!(f, "serial"),
            BoundaryLaunch::Tail => write!(f, "tail"),
            BoundaryLaunch::Beside { blocks_per_sm } => write!(f, "beside-{blocks_per_sm}"),
        }
    }
}

/// Thread blocks of the interior stream-collide kernel: one thread per cell number in blocks of
/// 128 (`Flat`, any lattice size without idle threads), or 3D blocks of `x * y * z` threads over
/// the lattice's axes (`x` a multiple of 32, so a warp reads consecutive cells).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Block {
    #[default]
    Flat,
    ThreeD([u32; 3]),
}

impl Block {
    /// `flat` or `XxYxZ` (e.g. `32x4x2`): x a multiple of 32, at most 1024 threads.
    pub fn parse(s: &str) -> Result<Block, String> {
        if s.eq_ignore_ascii_case("flat") {
            return Ok(Block::Flat);
        }
        let parts: Vec<&str> = s.split('x').collect();
        let dims: Option<Vec<u32>> = parts.iter().map(|p| p.parse().ok()).collect();
        match dims.as_deref() {
            Some(&[x, y, z]) if x > 0 && x % 32 == 0 && y > 0 && z > 0 && (x * y * z) <= 1024 => {
                Ok(Block::ThreeD([x, y, z]))
            }
            _ => Err(format!(
                "expected `flat` or XxYxZ with x a multiple of 32 and at most 1024 threads, got \
                 `{s}`"
            )),
        }
    }
}

impl std::fmt::Display for Block {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Block::Flat => write!(f, "flat"),
            Block::ThreeD([x, y, z]) => write!(f, "{x}x{y}x{z}"),
        }
    }
}

impl Setup {
    /// Marks the outlet layer of the outlet on domain face `face` (0..6: x-, x+, y-, ...):
    /// `cells` layers of fluid cells before the outlet's own layer get
    /// [`murmur_common::lbm::boundary::SPONGE`], and the parameters its axis and ramp. The caller
    /// checks that `cells + 2` layers fit along the axis.
    pub fn mark_outlet_layer(&mut self, face: usize, cells: u32) {
        use murmur_common::lbm::boundary::{FLUID, SPONGE};
        let l = self.lattice();
        let axis = face / 2;
        let n = [l.nx, l.ny, l.nz][axis];
        // High face: the outlet is cell n - 1, the layer the `cells` before it; low face: the
        // outlet is cell 0 and the layer cells 1..=cells.
        let (start, inv, range) = if face % 2 == 1 {
            (
                (n - 1 - cells) as f32,
                1.0 / cells as f32,
                n - 1 - cells..n - 1,
            )
        } else {
            ((cells + 1) as f32, -1.0 / cells as f32, 1..cells + 1)
        };
        self.params.sponge_axis = axis as u32;
        self.params.sponge_start = start;
        self.params.sponge_inv = inv;
        for (cell, byte) in self.flags.iter_mut().enumerate() {
            let (x, y, z) = l.coords(cell);
            if *byte == FLUID && range.contains(&[x, y, z][axis]) {
                *byte |= SPONGE;
            }
        }
    }

    /// Every solid with a force row, in row order: the immersed solids, then the fixed solids
    /// with interpolated bounce-back.
    pub fn force_solids(&self) -> impl Iterator<Item = &ib::Solid> {
        self.immersed.solids.iter().chain(&self.walls.solids)
    }

    pub fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    /// The cell bytes the backends run with: the kinds plus the `NEAR_BOUNDARY` bit on fluid
    /// cells next to non-fluid ones.
    pub fn prepared_flags(&self) -> Vec<u8> {
        let mut flags = self.flags.clone();
        // A lattice of fluid cells only (a periodic box) has nothing to mark.
        if flags.iter().any(|&b| b != CellKind::Fluid as u8) {
            murmur_common::lbm::boundary::mark_near_boundary(&self.lattice(), &mut flags);
        }
        flags
    }

    /// The cells the GPU's boundary kernel updates, from [`Setup::prepared_flags`]: every fluid
    /// cell other than the interior ones (byte exactly `FLUID`, or `FLUID | SPONGE`: the outlet
    /// layer's, which have a kernel of their own, [`Setup::sponge_box`]) and the ghosts of a slab,
    /// grouped by their neighbourhood (the kinds of the 27 neighbours, and the outlet layer's
    /// bit), in cell order within a group. A warp then takes the same branches in every lane
    /// (cells along a wall, or next to the inlet, run together instead of alternating with the
    /// outlet's), and rows of cells along a wall stay consecutive, so their loads coalesce.
    pub fn boundary_list(&self, prepared: &[u8]) -> Vec<u32> {
        use murmur_common::lbm::boundary::{FLUID, GHOST, KIND_MASK, SPONGE};
        use rayon::prelude::*;
        let l = self.lattice();
        let mut keyed: Vec<(u128, u32)> = (0..prepared.len() as u32)
            .into_par_iter()
            .filter(|&c| {
                let b = prepared[c as usize];
                b & KIND_MASK == FLUID && b & !SPONGE != FLUID && b != GHOST
            })
            .map(|c| {
                let o = l.pull_offsets(c as usize);
                let mut key = (prepared[c as usize] & SPONGE != 0) as u128;
                for q in 0..murmur_common::lbm::Q {
                    let kind = prepared[murmur_common::lbm::access::neighbour(&o, q)] & KIND_MASK;
                    key = key << 3 | kind as u128;
                }
                (key, c)
            })
            .collect();
        keyed.par_sort_unstable();
        keyed.into_iter().map(|(_, c)| c).collect()
    }

    /// The box `lo .. hi` (cells, `hi` exclusive) of the outlet layer's interior cells (byte
    /// exactly `FLUID | SPONGE`, from [`Setup::prepared_flags`]), over which the GPU launches
    /// their kernel; `None` without such cells.
    pub fn sponge_box(&self, prepared: &[u8]) -> Option<([u32; 3], [u32; 3])> {
        use murmur_common::lbm::boundary::{FLUID, SPONGE};
        let l = self.lattice();
        let mut found: Option<([u32; 3], [u32; 3])> = None;
        for (cell, &b) in prepared.iter().enumerate() {
            if b != FLUID | SPONGE {
                continue;
            }
            let (x, y, z) = l.coords(cell);
            let (lo, hi) = found.get_or_insert(([x, y, z], [x + 1, y + 1, z + 1]));
            for (a, v) in [x, y, z].into_iter().enumerate() {
                lo[a] = lo[a].min(v);
                hi[a] = hi[a].max(v + 1);
            }
        }
        found
    }

    /// Stored population values of the lattice (padded to whole CSoA groups).
    pub fn population_values(&self) -> usize {
        // The element type does not change the count.
        Populations::<murmur_common::lbm::Fp32>::new(self.lattice(), self.layout, 0).len()
    }

    /// Bytes of memory the lattice needs with `streaming`: the populations (one or two
    /// copies), the cell bytes and the boundary list's entries (4 bytes each, 16 next to
    /// outlets), without the fields, which are allocated only when a run writes output.
    pub fn lattice_bytes(&self, streaming: Streaming, boundary_cells: usize) -> u64 {
        streaming.copies() * self.population_values() as u64 * self.storage.bytes() as u64
            + self.lattice().cells() as u64
            + 16 * boundary_cells as u64
            + if self.params.wale > 0.0 {
                24 * self.lattice().cells() as u64
            } else {
                0
            }
    }

    /// WALE's velocity field at the start ([`murmur_common::lbm::wale`]): every cell's initial
    /// velocity, three arrays of `cells` floats (x, y, z); empty without WALE.
    pub fn initial_velocity(&self) -> Vec<f32> {
        use murmur_common::lbm::boundary::{FLUID, KIND_MASK};
        use rayon::prelude::*;
        if self.params.wale <= 0.0 {
            return Vec::new();
        }
        let l = self.lattice();
        let n = l.cells();
        let cells: Vec<[f32; 3]> = (0..n)
            .into_par_iter()
            .map(|cell| {
                let (x, y, z) = l.coords(cell);
                let fluid = self.flags[cell] & KIND_MASK == FLUID;
                self.initial.at([x, y, z], fluid).1
            })
            .collect();
        let mut u = vec![0.0f32; 3 * n];
        for (cell, v) in cells.into_iter().enumerate() {
            for (a, c) in v.into_iter().enumerate() {
                u[a * n + cell] = c;
            }
        }
        u
    }

    /// Number of fluid cells.
    pub fn fluid_cells(&self) -> usize {
        self.flags
            .iter()
            .filter(|&&k| k & murmur_common::lbm::boundary::KIND_MASK == CellKind::Fluid as u8)
            .count()
    }
}

/// A fluid simulation: what every backend offers (the CPU reference and CUDA have the same
/// methods). What only the viewer or the bench asks of a backend is in [`ViewHooks`] and
/// [`BenchHooks`], offered through [`FluidBackend::view_hooks`] and
/// [`FluidBackend::bench_hooks`] by the backends that support it.
pub trait FluidBackend {
    /// `"cpu (rayon, 8 threads)"`, `"cuda (NVIDIA H200)"`.
    fn describe(&self) -> String;
    fn lattice(&self) -> Lattice;
    fn model(&self) -> CollisionModel;
    /// The number format of the populations.
    fn storage(&self) -> StorageKind;
    /// The layout of the populations.
    fn layout(&self) -> Layout;
    /// The streaming scheme in use.
    fn streaming(&self) -> Streaming;
    /// The stages one step runs, in order.
    fn plan(&self) -> &plan::FluidPlan;
    /// Advances one step.
    fn step(&mut self) -> Result<(), FluidError>;
    /// Density and velocity of every cell after the last step, computed from the populations
    /// on demand (the first call allocates the fields' buffer on the GPU).
    fn fields(&mut self) -> Result<Fields, FluidError>;
    /// Density and velocity of one cell after the last step (the health check's report).
    fn cell_state(&mut self, cell: usize) -> Result<(f32, [f32; 3]), FluidError> {
        let f = self.fields()?;
        Ok((f.rho(cell), f.u(cell)))
    }
    /// All populations, decoded, `f[q * n + cell]` (post-collision of the last step).
    fn populations(&mut self) -> Result<Vec<f32>, FluidError>;
    /// [`FluidBackend::fields`] computed where the lattice lives and left there (None on the
    /// CPU): `[rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]` as f32, valid until the next step.
    fn device_fields(&mut self) -> Result<Option<crate::gpu::exposed::RawBuffer>, FluidError> {
        Ok(None)
    }
    /// [`FluidBackend::fields`] computed on the GPU where the lattice lives straight into
    /// `dst` (another layer's buffer on the same device, 4 values per cell), the backend's own
    /// fields left alone. The write waits for the work queued so far on `dst`'s own stream (its
    /// readers); returns the stream the write is queued on (a reader orders its work after
    /// it), or None where the lattice is not on a GPU.
    fn fields_into(
        &mut self,
        dst: &mut cudarc::driver::CudaSlice<f32>,
    ) -> Result<Option<std::sync::Arc<cudarc::driver::CudaStream>>, FluidError> {
        let _ = dst;
        Ok(None)
    }
    /// Bytes of memory the backend holds for the lattice now (every buffer).
    fn allocated_bytes(&self) -> u64;
    /// `(free, total)` bytes of the device's memory (None on the CPU).
    fn device_memory(&self) -> Option<(u64, u64)> {
        None
    }
    /// Steps done since the start.
    fn step_count(&self) -> u64;
    /// The forces on the solids of every step since the last call (lattice units, oldest
    /// first); empty without solids.
    fn take_forces(&mut self) -> Result<Vec<forces::ForceSample>, FluidError>;
    /// The solids' samples after the last step, with their forces (`None` without solids).
    fn samples(&mut self) -> Result<Option<ib::plan::SampleSnapshot>, FluidError>;
    /// How full the immersed boundary's band was at the last step (`None` without solids, and
    /// by default).
    /// Makes room for up to `most` pushes per step (impulses from a layer above the fluid,
    /// [`murmur_common::lbm::ib::push`]): the band grows, and the step gains the pushes'
    /// stages. Before the first push.
    fn enable_pushes(&mut self, most: u32) -> Result<(), FluidError> {
        let _ = most;
        Err(FluidError::Invalid(format!(
            "the {} backend takes no pushes",
            self.describe()
        )))
    }

    /// The pushes the next step applies: per push its position (lattice coordinates) and
    /// three fixed-point totals of momentum (`total[3 i + c]`); at most the room made by
    /// [`FluidBackend::enable_pushes`]. A step without a call applies none.
    fn push(&mut self, pos: &[[f32; 3]], total: &[u64]) -> Result<(), FluidError> {
        let _ = (pos, total);
        Err(FluidError::Invalid(format!(
            "the {} backend takes no pushes",
            self.describe()
        )))
    }

    /// [`FluidBackend::push`] from device buffers on this backend's GPU: positions (12 bytes
    /// per push) and totals (24 bytes per push), copied on the device.
    fn push_device(
        &mut self,
        pos: &crate::gpu::exposed::RawBuffer,
        total: &crate::gpu::exposed::RawBuffer,
    ) -> Result<(), FluidError> {
        let _ = (pos, total);
        Err(FluidError::Invalid(format!(
            "the {} backend takes no pushes from a GPU",
            self.describe()
        )))
    }

    fn band(&mut self) -> Result<Option<ib::plan::BandStats>, FluidError> {
        Ok(None)
    }
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
    /// Every cell of `cells`' 27 stored populations in the canonical order of [`state`] into
    /// `out` (`cells.len() * 27 * storage.bytes()` bytes). The default: unsupported.
    fn read_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        out: &mut [u8],
    ) -> Result<(), FluidError> {
        let _ = (cells, out);
        Err(state::unsupported(&self.describe()))
    }
    /// Stores a piece [`FluidBackend::read_state_piece`] read, after
    /// [`FluidBackend::restore_small_state`] (which sets the step the slots depend on).
    fn write_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        let _ = (cells, data);
        Err(state::unsupported(&self.describe()))
    }
    /// A copy of the populations as they are now, for a checkpoint's writer on another thread
    /// ([`state::snapshot`]); `None` (the default) where the backend has no room for one: the
    /// writer then reads the backend itself, between two steps.
    fn snapshot(&mut self) -> Result<Option<state::snapshot::Snapshot>, FluidError> {
        Ok(None)
    }
    /// The state beside the populations ([`state::SmallState`]); takes the pending force
    /// records into it (the next [`FluidBackend::take_forces`] still returns them).
    fn capture_small_state(&mut self) -> Result<state::SmallState, FluidError> {
        Err(state::unsupported(&self.describe()))
    }
    /// Restores [`FluidBackend::capture_small_state`]'s state into a backend opened from the
    /// same setup (any layout), refusing one of another lattice, model, storage, streaming,
    /// outlet or solids.
    fn restore_small_state(&mut self, small: &state::SmallState) -> Result<(), FluidError> {
        let _ = small;
        Err(state::unsupported(&self.describe()))
    }
    /// The viewer's hooks, where the backend draws frames (None: it cannot be viewed).
    /// The turbulence statistics' sums (`None`: this backend keeps none, e.g. a rank's slab).
    fn statistics(&mut self) -> Option<&mut dyn statistics::Accumulate> {
        None
    }
    fn view_hooks(&mut self) -> Option<&mut dyn ViewHooks> {
        None
    }
    /// The bench's hooks (None: it cannot be benchmarked alone).
    fn bench_hooks(&mut self) -> Option<&mut dyn BenchHooks> {
        None
    }
    /// This backend as one rank's slab of a lattice cut among several (None: a whole
    /// lattice): what a layer riding the fluid needs of the cut.
    fn as_slab(&mut self) -> Option<&mut slab::SlabFluid> {
        None
    }
}

impl dyn FluidBackend + '_ {
    /// The viewer's hooks, or the error of a backend that cannot be viewed (a rank's slab).
    pub fn view(&mut self) -> Result<&mut dyn ViewHooks, FluidError> {
        self.view_hooks().ok_or_else(|| {
            FluidError::Invalid(
                "smoke and frames are drawn on one GPU: run the viewer without --gpus".into(),
            )
        })
    }

    /// The bench's hooks, or the error of a backend that cannot be benchmarked alone.
    pub fn bench(&mut self) -> Result<&mut dyn BenchHooks, FluidError> {
        self.bench_hooks().ok_or_else(|| {
            FluidError::Invalid("the bench measures one lattice, not a rank's slab".into())
        })
    }
}

/// What the viewer asks of a backend beyond stepping it: live knobs, smoke, frames.
/// Coloured points a frame draws over the fluid (a coupled flock's boids): positions (lattice
/// coordinates), packed colours (`0xAABBGGRR`) and one disc radius (cells).
#[derive(Clone, Copy, Debug)]
pub struct Points<'a> {
    pub pos: &'a [[f32; 3]],
    pub colour: &'a [u32],
    pub radius: f32,
}

impl Points<'_> {
    /// No points.
    pub const NONE: Points<'static> = Points {
        pos: &[],
        colour: &[],
        radius: 0.0,
    };
}

pub trait ViewHooks {
    /// Changes the collision model for the following steps (the viewer's panel).
    fn set_model(&mut self, model: CollisionModel);
    /// Changes the relaxation rates for the following steps (the viewer's Reynolds number).
    fn set_rates(&mut self, rates: murmur_common::lbm::Rates);
    /// The rates in use.
    fn rates(&self) -> murmur_common::lbm::Rates;
    /// One advection of the smoke by the velocity after the last step, over `smoke.every`
    /// steps (the first call starts it from none); where the backend's lattice lives.
    fn advect_smoke(&mut self, smoke: &SmokeSetup) -> Result<(), FluidError>;
    /// The smoke's density per cell (zeros before the first advection).
    fn smoke(&mut self) -> Result<Vec<f32>, FluidError>;
    /// Draws `frame` of the state after the last step into `rgba` (`width * height * 4` bytes
    /// of the frame's view), the solids' samples as discs of `solid_radius` cells: on the GPU
    /// by the `fluid_*` kernels and one copy back, on the CPU by their twin
    /// (`crate::raster::fluid`); the same bytes either way. `points` are drawn over the fluid
    /// as the solids' samples are, each in its colour.
    fn render_into(
        &mut self,
        frame: &murmur_common::render::fluid::FluidFrame,
        solid_radius: f32,
        points: Points,
        rgba: &mut [u8],
    ) -> Result<(), FluidError>;
    /// Per-frame GPU times of the stages of the frames drawn (`render_into`) since
    /// the backend's `reset_times`, from CUDA events (None on the CPU).
    fn render_times(&mut self) -> Option<StageTimes> {
        None
    }
}

/// What the bench asks of a backend beyond stepping it.
pub trait BenchHooks {
    /// Measured memory bandwidth in bytes/s: the best of a few copies of a scratch buffer the
    /// size of the populations (bytes read + written over time; the scratch is freed after).
    fn memory_bandwidth(&mut self) -> Result<f64, FluidError>;
}

/// A scene's smoke: its sources (lattice units) and how it advects.
#[derive(Clone, Debug, PartialEq)]
pub struct SmokeSetup {
    pub sources: Vec<murmur_common::render::smoke::SmokeSource>,
    /// Steps between two advections (the advection's time step).
    pub every: u32,
    /// Fraction kept per advection (1: the smoke never fades).
    pub keep: f32,
    /// Bit `a`: axis `a` is periodic.
    pub periodic: u32,
}

impl SmokeSetup {
    /// Steps between two advections unless the scene says otherwise: the advection (fields,
    /// forward and corrected steps) costs about two thirds of a lattice step, so once per 8
    /// steps keeps it near 10 % of the simulation; at the solver's lattice velocities (0.05 to
    /// 0.1) the smoke then moves 0.4 to 0.8 cells per advection.
    pub const DEFAULT_EVERY: u32 = 8;

    /// The advection's parameters on `lattice`.
    pub fn params(&self, lattice: Lattice) -> murmur_common::render::smoke::SmokeParams {
        murmur_common::render::smoke::SmokeParams {
            lattice,
            periodic: self.periodic,
            dt: self.every as f32,
            keep: self.keep,
            sources: self.sources.len() as u32,
        }
    }
}

/// Why a fluid simulation could not be set up or go on.
#[derive(Debug, thiserror::Error)]
pub enum FluidError {
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
    #[error(transparent)]
    Preflight(#[from] crate::preflight::PreflightError),
    #[error(transparent)]
    Comm(#[from] crate::ranks::CommError),
    /// Bad input: a setup, a scene or an argument murmur cannot run.
    #[error("{0}")]
    Invalid(String),
    /// A message from another rank that does not hold what this rank expects.
    #[error("{what} has the wrong size")]
    WrongSize { what: String },
    /// The immersed-boundary band outgrew its pool.
    #[error(
        "the immersed-boundary band needs more than its {capacity} bricks: a solid reaches \
         beyond its bounding radius"
    )]
    BandOverflow { capacity: u32 },
    /// The health check failed (`driver::check_health`, the one check of every command).
    #[error(
        "{} ({}; {})",
        breach(*step, *cell, what),
        match every {
            0 => "checked on output steps".to_string(),
            n => format!("checked every {n} steps and on output steps"),
        },
        match last_output {
            Some(s) => format!("the last output written, step {s}, passed"),
            None => "no output was written".to_string(),
        }
    )]
    Unhealthy {
        step: u64,
        every: u64,
        /// The first cell out of bounds; `None`: the mean density over all fluid cells.
        cell: Option<[u32; 3]>,
        what: String,
        last_output: Option<u64>,
    },
}

/// What a failed health check found, in the words of every command: `the flow left its bounds
/// at step S, cell (X, Y, Z): QUANTITY` (or `..., over all fluid cells: ...`).
pub fn breach(step: u64, cell: Option<[u32; 3]>, what: &str) -> String {
    match cell {
        Some([x, y, z]) => {
            format!("the flow left its bounds at step {step}, cell ({x}, {y}, {z}): {what}")
        }
        None => format!("the flow left its bounds at step {step}, over all fluid cells: {what}"),
    }
}

impl FluidError {
    /// [`breach`] of an [`FluidError::Unhealthy`] (without the check's interval and outputs).
    pub fn breach(&self) -> Option<String> {
        match self {
            FluidError::Unhealthy {
                step, cell, what, ..
            } => Some(breach(*step, *cell, what)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::scene::Geometry;
    use super::BoundaryLaunch;

    #[test]
    fn boundary_launches_parse_and_print_alike() {
        for s in ["serial", "tail", "beside-1", "beside-4"] {
            assert_eq!(BoundaryLaunch::parse(s).unwrap().to_string(), s);
        }
        assert_eq!(
            BoundaryLaunch::parse("beside"),
            Ok(BoundaryLaunch::Beside { blocks_per_sm: 1 })
        );
        for bad in ["", "overlap", "beside-0", "beside-17", "beside-x"] {
            assert!(BoundaryLaunch::parse(bad).is_err(), "{bad}");
        }
    }
    use murmur_common::lbm::boundary::{FLUID, KIND_MASK};
    use murmur_common::lbm::{CollisionModel, Rates};

    /// The boundary list holds every fluid cell but the interior ones (outlet-layer cells with
    /// only fluid neighbours among them), once, in groups of one neighbourhood (and outlet-layer
    /// bit) each, cell order within a group.
    #[test]
    fn boundary_list_groups_the_listed_cells() {
        // Outlet layers along x and along z.
        let mut along_x = Geometry::duct([20, 9, 7], 0)
            .setup(Rates::from_viscosity(0.02), CollisionModel::Bgk)
            .unwrap();
        along_x.mark_outlet_layer(1, 5);
        let mut along_z = Geometry::duct_z([7, 9, 20])
            .setup(Rates::from_viscosity(0.02), CollisionModel::Bgk)
            .unwrap();
        along_z.mark_outlet_layer(5, 5);
        // Lattice x 0..22: the outlet at 21, the layer 16..21, its last cells beside the outlet;
        // the cells beside the side walls (y 0 and 10, z 0 and 8) listed too.
        groups_of(&along_x, ([16, 2, 2], [20, 9, 7]));
        groups_of(&along_z, ([2, 2, 16], [7, 9, 20]));
    }

    /// [`boundary_list_groups_the_listed_cells`] for one setup whose outlet layer's interior
    /// cells fill the box `sponge`.
    fn groups_of(setup: &super::Setup, sponge: ([u32; 3], [u32; 3])) {
        use murmur_common::lbm::boundary::SPONGE;
        let prepared = setup.prepared_flags();
        let list = setup.boundary_list(&prepared);
        let mut sorted = list.clone();
        sorted.sort_unstable();
        let want: Vec<u32> = (0..prepared.len() as u32)
            .filter(|&c| {
                let b = prepared[c as usize];
                b & KIND_MASK == FLUID && b != FLUID && b != FLUID | SPONGE
            })
            .collect();
        assert_eq!(sorted, want);
        // Outlet-layer cells with non-fluid neighbours are listed; the others fill the box.
        assert_eq!(setup.sponge_box(&prepared), Some(sponge));
        let l = setup.lattice();
        let (lo, hi) = sponge;
        let in_box = (0..prepared.len()).filter(|&c| {
            let (x, y, z) = l.coords(c);
            (0..3).all(|a| (lo[a]..hi[a]).contains(&[x, y, z][a]))
        });
        assert!(in_box.into_iter().all(|c| prepared[c] == FLUID | SPONGE));
        assert!(list.iter().any(|&c| prepared[c as usize] & SPONGE != 0));
        // The neighbours' kinds and the cell's outlet-layer bit.
        let kinds = |c: u32| -> Vec<u8> {
            let o = l.pull_offsets(c as usize);
            (0..27)
                .map(|q| prepared[murmur_common::lbm::access::neighbour(&o, q)] & KIND_MASK)
                .chain([prepared[c as usize] & SPONGE])
                .collect()
        };
        // Each neighbourhood is one run of the list, its cells ascending.
        let mut seen: Vec<Vec<u8>> = Vec::new();
        for (i, &c) in list.iter().enumerate() {
            let k = kinds(c);
            if i > 0 && kinds(list[i - 1]) == k {
                assert!(list[i - 1] < c, "cells out of order within a group");
                continue;
            }
            assert!(!seen.contains(&k), "a neighbourhood in two runs");
            seen.push(k);
        }
        // The cells along the inlet come together, not alternating with the outlet's.
        assert!(seen.len() < list.len() / 4, "{} groups", seen.len());
    }
}
