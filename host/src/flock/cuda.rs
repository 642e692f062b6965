//! The CUDA flock backend: the CPU reference's methods as Rust kernels (`kernels-gpu/src/flock.rs`),
//! buffers allocated once and double-buffered, each step either replayed as one CUDA graph or
//! launched stage by stage with CUDA-event timers. The viewer's frames are drawn by
//! `crate::raster::cuda` on the flock's own buffers.
//!
//! A step is a flat list of stages ([`StepPlan`], built once per settings): binning, then one
//! `update_boids_*` kernel that computes the
//! new velocity and position of every boid from the previous state (written to the other buffer
//! of each pair) and counts it into its new cell. Binning (`SortArg`): `Counting` scans those
//! counts into the cell table in one pass (zeroing them for the next step), then scatters the
//! state into cell order, each boid claiming the next entry of its cell with an atomic add;
//! `Radix` computes keys, radix-sorts (key, index) pairs, builds the table from sorted keys and
//! gathers. `coherent` with the counting sort scatters back into the buffer it updates from, so
//! its step graph is the same every step.

use super::capture::FlockCapture;
use super::stage::{Search, Stage, StepPlan, Target};
use super::{FlockBackend, FlockSettings, FlockState, SimError, WithinCell};
use crate::gpu::exposed::RawBuffer;
use crate::gpu::scan::CellScan;
use crate::gpu::sort::RadixSort;
use crate::gpu::{DriverContext, Gpu, GpuError, Shape, StageClock};
use crate::raster::check_frame;
use crate::raster::cuda::{Boids, CudaRaster};
use crate::timing::StageTimes;
use cudarc::driver::{CudaGraph, CudaSlice, DeviceRepr};
use murmur_common::flock::abi::{
    self as k, coherent_shared_bytes, CellBounds, ComputeKeys, CountCells, Gather, InitFlock,
    OrderCells, ScatterCells, ScatterIndex, UpdateBoids,
};
use murmur_common::flock::{Body, Grid};
use murmur_common::kernel::{DevSlice, DevSliceMut, Kernel, Variant};
use murmur_common::render::View;
use murmur_common::Vec3;

mod binning;

pub use binning::device_bytes;
use binning::{Binning, BinningKind};

/// Up to this many boids, `coherent` updates with `update_boids_coherent_predicated`: a flock this
/// small leaves the GPU latency-bound, and the predicated kernel trades issue slots for latency.
/// Measured on the H200 (`docs/performance.md`, cell width 1, x-split 4, blocks of 256, the
/// predicated kernel then capped at 48 registers): 0.0341 against 0.0420 ms/step at 100k, 0.0893
/// against 0.1041 at 300k, 0.1741 against 0.1718 at 500k. Uncapped, it is faster still up to 400k
/// (`REGISTER_CAPS` in `xtask/src/link.rs`).
pub const SMALL_FLOCK: u32 = 400_000;

/// The current buffer of a double-buffered pair (read) and the other one (written).
fn ping_pong<T>(
    pair: &mut [CudaSlice<T>; 2],
    current: usize,
) -> (&CudaSlice<T>, &mut CudaSlice<T>) {
    let (a, b) = pair.split_at_mut(1);
    if current == 0 {
        (&a[0], &mut b[0])
    } else {
        (&b[0], &mut a[0])
    }
}

/// One captured step and the current buffer it leaves.
type StepGraph = (CudaGraph, usize);

/// A flock on the GPU.
pub struct CudaFlock {
    /// The device handle: every buffer here is owned by its stream, and every launch goes there.
    gpu: Gpu,
    settings: FlockSettings,
    /// The stages of a step for these settings and this flock's size.
    plan: StepPlan,
    grid: Grid,
    n: u32,
    body: [CudaSlice<Body>; 2],
    /// Velocities as `[f32; 3]` (glam's `Vec3` cannot carry cudarc's traits: orphan rule);
    /// kernels see them as `Vec3` through `Views::read_cast` / `write_cast`.
    vel: [CudaSlice<[f32; 3]>; 2],
    /// Which buffer of each pair holds the current state.
    cur: usize,
    /// Per cell: boids counted into it (by the last update, for the next binning).
    counts: CudaSlice<u32>,
    /// Per cell: the scanned counts (cell starts), which the scatter turns into cell ends.
    cell_end: CudaSlice<u32>,
    /// True when `counts` holds the counts of the current positions.
    counted: bool,
    cell_scan: CellScan,
    /// The buffers of the settings' binning.
    binning: Binning,
    /// Captured steps by the current buffer they start from, with the one they leave.
    graphs: [Option<StepGraph>; 2],
    clock: StageClock,
    /// The viewer's frames.
    raster: CudaRaster,
    /// How `coherent` sums the candidates.
    update_form: UpdateForm,
    /// The order inside a cell the update sees.
    within: WithinCell,
}

/// Which of `coherent`'s two update kernels a step runs (both give the same sums).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateForm {
    /// `update_boids_coherent_predicated` up to [`SMALL_FLOCK`] boids, else the branched one.
    Auto,
    /// `update_boids_coherent`.
    Branched,
    /// `update_boids_coherent_predicated`.
    Predicated,
}

/// Opens the CUDA backend on GPU `device` with `state` uploaded.
pub fn open(
    settings: &FlockSettings,
    state: &FlockState,
    device: usize,
) -> Result<Box<dyn FlockBackend>, GpuError> {
    let mut f = CudaFlock::new_on(Gpu::open_device(device)?, settings, state.len() as u32)?;
    f.upload(state)?;
    Ok(Box::new(f))
}

/// Opens the CUDA backend with the random CIS 565 start generated on the GPU (no host copy:
/// this is how flocks of hundreds of millions of boids start).
pub fn open_random(
    settings: &FlockSettings,
    n: u32,
    seed: u64,
    device: usize,
) -> Result<Box<dyn FlockBackend>, GpuError> {
    let mut f = CudaFlock::new_on(Gpu::open_device(device)?, settings, n)?;
    f.init_random(seed)?;
    Ok(Box::new(f))
}

/// The update kernel's name for a step with these settings, flock size and form.
fn coherent_search(n: u32, form: UpdateForm) -> Search {
    let predicated = match form {
        UpdateForm::Auto => n <= SMALL_FLOCK,
        UpdateForm::Branched => false,
        UpdateForm::Predicated => true,
    };
    if predicated {
        Search::CoherentPredicated
    } else {
        Search::Coherent
    }
}

impl CudaFlock {
    /// Allocates everything for `n` boids (state zeroed). Fails with both figures when the GPU's
    /// free memory is short.
    pub fn new(settings: &FlockSettings, n: u32) -> Result<CudaFlock, GpuError> {
        CudaFlock::new_on(Gpu::open()?, settings, n)
    }

    /// [`CudaFlock::new`] on an opened GPU.
    pub fn new_on(gpu: Gpu, settings: &FlockSettings, n: u32) -> Result<CudaFlock, GpuError> {
        let grid = settings.grid();
        let cells = grid.cell_count() as u64;
        gpu.check_fits(
            &format!("a flock of {n} boids with {cells} grid cells"),
            device_bytes(settings, n, cells),
        )?;
        let z = n as usize;
        let update_form = UpdateForm::Auto;
        let body = [gpu.zeros(z)?, gpu.zeros(z)?];
        let vel = [gpu.zeros(z)?, gpu.zeros(z)?];
        let counts = gpu.zeros(cells as usize)?;
        let cell_end = gpu.zeros(cells as usize)?;
        let cell_scan = CellScan::new(&gpu, cells as u32)?;
        let binning = Binning::new(&gpu, BinningKind::of(settings), n)?;
        Ok(CudaFlock {
            body,
            vel,
            cur: 0,
            counts,
            cell_end,
            counted: false,
            cell_scan,
            binning,
            graphs: Default::default(),
            clock: StageClock::new(&gpu.ctx),
            raster: CudaRaster::default(),
            update_form,
            within: WithinCell::Binned,
            plan: StepPlan::new(
                settings,
                Target::Cuda {
                    coherent: coherent_search(n, update_form),
                    radix_passes: RadixSort::passes(grid.key_bits()),
                },
            ),
            settings: settings.clone(),
            grid,
            n,
            gpu,
        })
    }

    /// Rebuilds the step plan (settings, size or update form changed); captured graphs go.
    fn replan(&mut self) {
        self.plan = StepPlan::new(
            &self.settings,
            Target::Cuda {
                coherent: coherent_search(self.n, self.update_form),
                radix_passes: RadixSort::passes(self.grid.key_bits()),
            },
        );
        if self.within == WithinCell::ById {
            self.plan = self.plan.clone().with_cells_by_id(&self.settings);
        }
        self.graphs = Default::default();
    }

    /// Chooses the order inside a cell the update sees ([`WithinCell::ById`]: one more stage,
    /// `order_cells_by_id`, for `coherent` and `coherent-shared`).
    pub fn set_within_cell(&mut self, within: WithinCell) {
        self.within = within;
        self.replan();
    }

    /// Chooses `coherent`'s update kernel (the checks run both; the default is `Auto`).
    pub fn set_update_form(&mut self, form: UpdateForm) {
        self.update_form = form;
        self.replan();
    }

    /// The name of the update kernel a step runs.
    pub fn update_kernel(&self) -> &'static str {
        self.plan
            .stages
            .last()
            .expect("a plan ends with its update")
            .stage
            .name()
    }

    /// Device bytes per boid actually allocated (all buffers, cell table included).
    pub fn bytes_per_boid(&self) -> f64 {
        device_bytes(&self.settings, self.n, self.grid.cell_count() as u64) as f64 / self.n as f64
    }

    /// The buffers of the settings' binning (kept while the binning stays).
    fn ensure_binning(&mut self) -> Result<(), GpuError> {
        let kind = BinningKind::of(&self.settings);
        if self.binning.kind() != kind {
            self.binning = Binning::None;
            self.binning = Binning::new(&self.gpu, kind, self.n)?;
        }
        Ok(())
    }

    /// One thread per boid.
    fn per_boid(&self) -> Result<Shape, GpuError> {
        Shape::try_per_item(self.n as u64, self.settings.block_size)
    }

    /// The random CIS 565 start, generated on the GPU (same numbers as `FlockState::random`).
    pub fn init_random(&mut self, seed: u64) -> Result<(), GpuError> {
        self.clock.chain_break()?;
        let shape = self.per_boid()?;
        let (n, scale) = (self.n, self.settings.params.scale);
        let buffers = (&mut self.body[self.cur], &mut self.vel[self.cur]);
        // SAFETY: both buffers hold n elements; one thread per boid.
        unsafe {
            self.gpu
                .launch()
                .run(shape, buffers, |l, (body, vel)| InitFlock {
                    n,
                    scale,
                    seed,
                    body: l.write(body),
                    vel: l.write_cast(vel),
                })
        }?;
        self.counted = false;
        Ok(())
    }

    fn upload(&mut self, state: &FlockState) -> Result<(), GpuError> {
        let bodies: Vec<Body> = state
            .pos
            .iter()
            .zip(&state.id)
            .map(|(&pos, &id)| Body { pos, id })
            .collect();
        self.clock.chain_break()?;
        let s = &self.gpu.stream;
        s.memcpy_htod(&bodies, &mut self.body[self.cur])
            .ctx("uploading positions")?;
        let vel: Vec<[f32; 3]> = state.vel.iter().map(|v| v.to_array()).collect();
        s.memcpy_htod(&vel, &mut self.vel[self.cur])
            .ctx("uploading velocities")?;
        self.counted = false;
        Ok(())
    }

    /// Stage `count_cells` (outside graphs: only after a reset of the state or the grid).
    fn count(&mut self) -> Result<(), GpuError> {
        self.clock.chain_break()?;
        let shape = self.per_boid()?;
        self.gpu
            .stream
            .memset_zeros(&mut self.counts)
            .ctx("clearing cell counts")?;
        let (n, grid, body) = (self.n, self.grid, &self.body[self.cur]);
        // SAFETY: body holds n boids, counts one entry per cell (keys < cell_count), zeroed.
        unsafe {
            self.gpu
                .launch()
                .run(shape, &mut self.counts, |l, counts| CountCells {
                    n,
                    grid,
                    body: l.read(body),
                    counts: l.write(counts),
                })
        }?;
        self.counted = true;
        Ok(())
    }

    /// Issues one step's stages (recorded into a graph when capturing), marking each when
    /// `timed`, and advances the current buffer.
    fn issue_step(&mut self, timed: bool) -> Result<(), GpuError> {
        // Stages bin into buffer `src` (the coherent methods' state in cell order); the update
        // reads it and writes the other one.
        let mut src = self.cur;
        let plan = std::mem::take(&mut self.plan.stages);
        let result = plan.iter().try_for_each(|p| {
            for round in 0..p.repeat {
                self.issue(p.stage, round, &mut src)?;
            }
            if timed {
                self.clock.mark(&self.gpu.stream, p.stage.name())?;
            }
            Ok(())
        });
        self.plan.stages = plan;
        result?;
        self.cur = src ^ 1;
        Ok(())
    }

    /// Issues one stage (its `round`-th run in a row). `src` is the buffer holding the state the
    /// next stage reads.
    fn issue(&mut self, stage: Stage, round: u32, src: &mut usize) -> Result<(), GpuError> {
        let (n, grid) = (self.n, self.grid);
        let cells = grid.cell_count();
        // Programmatic dependent launch for the counting path's chain: scan, scatter, update.
        let pdl = self.settings.pdl && self.plan.counting;
        let shape = self.per_boid()?.after_previous(pdl);
        let gpu = &self.gpu;
        let s = *src;
        match (stage, &mut self.binning) {
            (Stage::ScanCells, _) => {
                self.cell_scan
                    .run(gpu, &mut self.counts, &mut self.cell_end, cells, pdl)?;
            }
            (Stage::ScatterIndex, Binning::CountingIndex { values }) => {
                let body = &self.body[s];
                let buffers = (&mut self.cell_end, values);
                // SAFETY: the claimed entries are a permutation of 0..n.
                unsafe {
                    gpu.launch()
                        .run(shape, buffers, |l, (cell_end, values)| ScatterIndex {
                            n,
                            grid,
                            body: l.read(body),
                            cell_end: l.write(cell_end),
                            values: l.write(values),
                        })
                }?;
            }
            (Stage::ScatterCells, _) => {
                let (bin, bout) = ping_pong(&mut self.body, s);
                let (vin, vout) = ping_pong(&mut self.vel, s);
                let buffers = (&mut self.cell_end, bout, vout);
                // SAFETY: the claimed entries are a permutation of 0..n.
                unsafe {
                    gpu.launch()
                        .run(shape, buffers, |l, (cell_end, bout, vout)| ScatterCells {
                            n,
                            grid,
                            body_in: l.read(bin),
                            vel_in: l.read_cast(vin),
                            cell_end: l.write(cell_end),
                            body_out: l.write(bout),
                            vel_out: l.write_cast(vout),
                        })
                }?;
                *src ^= 1;
            }
            (Stage::ComputeKeys, Binning::Radix { keys, values, .. }) => {
                let body = &self.body[s];
                // SAFETY: every buffer holds n elements.
                unsafe {
                    gpu.launch()
                        .run(shape, (keys, values), |l, (keys, values)| ComputeKeys {
                            n,
                            grid,
                            body: l.read(body),
                            keys: l.write(keys),
                            values: l.write(values),
                        })
                }?;
            }
            (Stage::RadixCounts, Binning::Radix { keys, sort, .. }) => {
                sort.count(gpu, n, grid.key_bits(), keys)?;
            }
            (Stage::RadixPass, Binning::Radix { keys, values, sort }) => {
                sort.pass(gpu, n, round, keys, values)?;
            }
            (Stage::CellBounds, Binning::Radix { keys, .. }) => {
                let keys = &*keys;
                // SAFETY: keys sorted, < cell_count; the table has cell_count entries.
                unsafe {
                    gpu.launch()
                        .run(shape, &mut self.cell_end, |l, cell_end| CellBounds {
                            n,
                            cell_count: cells,
                            keys: l.read(keys),
                            cell_end: l.write(cell_end),
                        })
                }?;
            }
            (Stage::Gather, Binning::Radix { values, .. }) => {
                let values = &*values;
                let (bin, bout) = ping_pong(&mut self.body, s);
                let (vin, vout) = ping_pong(&mut self.vel, s);
                // SAFETY: values is a permutation of 0..n.
                unsafe {
                    gpu.launch()
                        .run(shape, (bout, vout), |l, (bout, vout)| Gather {
                            n,
                            values: l.read(values),
                            body_in: l.read(bin),
                            vel_in: l.read_cast(vin),
                            body_out: l.write(bout),
                            vel_out: l.write_cast(vout),
                        })
                }?;
                *src ^= 1;
            }
            (Stage::OrderCells, _) => {
                let per_cell = Shape::try_per_item(cells as u64, self.settings.block_size)?;
                let cell_end = &self.cell_end;
                let buffers = (&mut self.body[s], &mut self.vel[s]);
                // SAFETY: cell_end holds the ends of the binned cells (a partition of 0..n);
                // one thread per cell moves entries inside its own cell only. No programmatic
                // dependent launch: it starts once the binning has finished.
                unsafe {
                    gpu.launch()
                        .run(per_cell, buffers, |l, (body, vel)| OrderCells {
                            cell_count: cells,
                            cell_end: l.read(cell_end),
                            body: l.write(body),
                            vel: l.write_cast(vel),
                        })
                }?;
            }
            (Stage::Update(search), _) => {
                let shared = shape.shared_bytes(coherent_shared_bytes(self.settings.block_size));
                match search {
                    Search::Naive => self.update::<k::Naive>(s, shape),
                    Search::Scattered => self.update::<k::Scattered>(s, shape),
                    Search::Coherent => self.update::<k::Coherent>(s, shape),
                    Search::CoherentPredicated => self.update::<k::CoherentPredicated>(s, shape),
                    Search::CoherentShared => self.update::<k::CoherentShared>(s, shared),
                }?;
            }
            (Stage::Sort, _) => unreachable!("the CPU's sort stage is not in a GPU plan"),
            (
                Stage::ScatterIndex
                | Stage::ComputeKeys
                | Stage::RadixCounts
                | Stage::RadixPass
                | Stage::CellBounds
                | Stage::Gather,
                _,
            ) => {
                return Err(GpuError::Unsupported(format!(
                    "stage {} of a flock whose settings bin without it",
                    stage.name()
                )))
            }
        }
        Ok(())
    }

    /// Stage `update_boids_*` with search `S`: reads the state in buffer `src`, writes the
    /// other one (and, counting, the next step's cell counts).
    fn update<S>(&mut self, src: usize, shape: Shape) -> Result<(), GpuError>
    where
        UpdateBoids<S>: Kernel + DeviceRepr,
    {
        let (n, grid, params) = (self.n, self.grid, self.settings.params);
        let counting = self.plan.counting;
        let (cell_end, values) = (&self.cell_end, self.binning.values());
        let (bin, bout) = ping_pong(&mut self.body, src);
        let (vin, vout) = ping_pong(&mut self.vel, src);
        let buffers = (bout, vout, &mut self.counts);
        // SAFETY: the state buffers hold n boids; cell_end is the table of this step's binning
        // (cell_count entries); values the sorted index array when scattered; counts zeroed by
        // the scan and counted into, or empty.
        unsafe {
            self.gpu
                .launch()
                .run(shape, buffers, |l, (bout, vout, counts)| UpdateBoids::<S> {
                    n,
                    params,
                    grid,
                    cell_end: l.read(cell_end),
                    values: match values {
                        Some(v) => l.read(v),
                        None => DevSlice::empty(),
                    },
                    body: l.read(bin),
                    vel: l.read_cast(vin),
                    body_out: l.write(bout),
                    vel_out: l.write_cast(vout),
                    counts: if counting {
                        l.write(counts)
                    } else {
                        DevSliceMut::empty()
                    },
                    search: Variant::NEW,
                })
        }
    }

    fn step_gpu(&mut self) -> Result<(), GpuError> {
        let counting = self.plan.counting;
        if counting && !self.counted {
            self.count()?;
        }
        let stream = self.gpu.stream.clone();
        let timed = self.settings.gpu_timer;
        if self.settings.cuda_graph {
            if timed {
                self.clock.chain_begin(&stream)?;
            }
            let cur = self.cur;
            if self.graphs[cur].is_none() {
                stream
                    .begin_capture(
                        cudarc::driver::sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
                    )
                    .ctx("starting a graph capture")?;
                let issued = self.issue_step(false);
                let graph = stream
                    .end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0))
                    .ctx("capturing the step graph");
                issued?;
                let graph = graph?
                    .ok_or_else(|| GpuError::Unsupported("the step graph is empty".into()))?;
                // Capturing recorded the launches without running them: keep the buffer the
                // step leads to with the graph, and restore the current one.
                let next = self.cur;
                self.cur = cur;
                self.graphs[cur] = Some((graph, next));
            }
            let (graph, next) = self.graphs[cur].as_ref().expect("captured above");
            graph.launch().ctx("launching the step graph")?;
            self.cur = *next;
            if timed {
                self.clock.chain_end(&stream, "step (CUDA graph)")?;
            }
        } else if timed {
            self.clock.begin(&stream)?;
            self.issue_step(true)?;
            self.clock.end();
        } else {
            self.issue_step(false)?;
        }
        self.counted = counting;
        Ok(())
    }
}

impl FlockBackend for CudaFlock {
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn len(&self) -> usize {
        self.n as usize
    }

    fn step(&mut self) -> Result<(), SimError> {
        Ok(self.step_gpu()?)
    }

    fn synchronize(&mut self) -> Result<(), SimError> {
        Ok(self.gpu.synchronize()?)
    }

    fn state(&mut self) -> Result<FlockState, SimError> {
        self.clock.chain_break()?;
        let bodies = self.gpu.download(&self.body[self.cur])?;
        let vel = self.gpu.download(&self.vel[self.cur])?;
        Ok(FlockState {
            pos: bodies.iter().map(|b| b.pos).collect(),
            id: bodies.iter().map(|b| b.id).collect(),
            vel: vel.into_iter().map(Vec3::from_array).collect(),
        }
        .sorted_by_id())
    }

    fn device_state(&mut self) -> Result<Option<super::DeviceState>, SimError> {
        self.clock.chain_break()?;
        let s = &self.gpu.stream;
        Ok(Some(super::DeviceState {
            bodies: RawBuffer::of(&self.body[self.cur], s),
            velocities: RawBuffer::of(&self.vel[self.cur], s),
        }))
    }

    fn set_state(&mut self, state: &FlockState) -> Result<(), SimError> {
        if state.len() as u32 != self.n {
            let form = self.update_form;
            let gpu = Gpu::open_device(self.gpu.ctx.ordinal())?;
            *self = CudaFlock::new_on(gpu, &self.settings, state.len() as u32)?;
            self.set_update_form(form);
        }
        self.graphs = Default::default();
        Ok(self.upload(state)?)
    }

    fn capture(&mut self) -> Result<FlockCapture, SimError> {
        self.clock.chain_break()?;
        let bodies = self.gpu.download(&self.body[self.cur])?;
        let vel = self.gpu.download(&self.vel[self.cur])?;
        Ok(FlockCapture {
            state: FlockState {
                pos: bodies.iter().map(|b| b.pos).collect(),
                id: bodies.iter().map(|b| b.id).collect(),
                vel: vel.into_iter().map(Vec3::from_array).collect(),
            },
            buffer: self.cur as u8,
            within: self.within,
            settings: self.settings.clone(),
        })
    }

    fn restore(&mut self, capture: &FlockCapture) -> Result<(), SimError> {
        capture.check(&self.settings)?;
        let state = &capture.state;
        if state.len() as u32 != self.n {
            let form = self.update_form;
            let gpu = Gpu::open_device(self.gpu.ctx.ordinal())?;
            *self = CudaFlock::new_on(gpu, &self.settings, state.len() as u32)?;
            self.update_form = form;
        }
        // Replans, so the captured graphs go; the counts are recounted before the next step.
        self.set_within_cell(capture.within);
        self.cur = capture.buffer as usize;
        Ok(self.upload(state)?)
    }

    fn set_settings(&mut self, settings: &FlockSettings) -> Result<(), SimError> {
        let grid = settings.grid();
        if grid.cell_count() != self.grid.cell_count() {
            let cells = grid.cell_count();
            self.gpu.check_fits(
                &format!("a grid of {cells} cells"),
                device_bytes(settings, 0, cells as u64),
            )?;
            self.counts = self.gpu.zeros(cells as usize)?;
            self.cell_end = self.gpu.zeros(cells as usize)?;
            self.cell_scan = CellScan::new(&self.gpu, cells)?;
        }
        self.grid = grid;
        self.settings = settings.clone();
        self.ensure_binning()?;
        self.counted = false;
        self.replan();
        Ok(())
    }

    fn times(&mut self) -> Result<StageTimes, SimError> {
        Ok(self.clock.times()?)
    }

    fn reset_times(&mut self) {
        // Reading events only fails when the device is already broken; the next step reports it.
        let _ = self.clock.reset();
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }

    fn step_ms(&mut self) -> Result<Vec<f64>, SimError> {
        Ok(self.clock.step_ms()?)
    }

    fn device_bytes_per_boid(&self) -> Option<f64> {
        Some(self.bytes_per_boid())
    }

    fn render_into(
        &mut self,
        view: &View,
        background: u32,
        rgba: &mut [u8],
    ) -> Result<(), SimError> {
        check_frame(view, rgba)?;
        self.clock.chain_break()?;
        let cur = self.cur;
        Ok(self.raster.draw(
            &self.gpu,
            view,
            background,
            Boids {
                n: self.n,
                body: &self.body[cur],
                vel: &self.vel[cur],
            },
            rgba,
        )?)
    }
}
