//! The CUDA flock backend: the CPU reference's methods as Rust kernels (`kernels-gpu/src/flock.rs`),
//! buffers allocated once and double-buffered, each step either replayed as one CUDA graph or
//! launched stage by stage with CUDA-event timers. The viewer's frames are rasterised here too
//! (`render_*` kernels on the flock's own buffers, one copy of the frame back).
//!
//! A step is a flat list of stages: binning, then one `update_boids_*` kernel that computes the
//! new velocity and position of every boid from the previous state (written to the other buffer
//! of each pair) and counts it into its new cell. Binning (`SortArg`): `Counting` scans those
//! counts into the cell table in one pass (zeroing them for the next step), then scatters the
//! state into cell order, each boid claiming the next entry of its cell with an atomic add;
//! `Radix` computes keys, radix-sorts (key, index) pairs, builds the table from sorted keys and
//! gathers. `coherent` with the counting sort scatters back into the buffer it updates from, so
//! its step graph is the same every step.

use super::{FlockBackend, FlockSettings, FlockState, Method, SimError, SortArg};
use crate::gpu::scan::CellScan;
use crate::gpu::sort::RadixSort;
use crate::gpu::{grid_1d, DriverContext, Gpu, GpuError, Launch, StageClock};
use crate::timing::StageTimes;
use crate::view::raster::check_frame;
use cudarc::driver::{CudaFunction, CudaGraph, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use murmur_common::flock::{Body, Grid};
use murmur_common::render::View;
use murmur_common::Vec3;
use std::sync::Arc;

/// Up to this many boids, `coherent` updates with `update_boids_coherent_predicated`: a flock this
/// small leaves the GPU latency-bound, and the predicated kernel trades issue slots for latency.
/// Measured on the H200 (`docs/performance.md`, cell width 1, x-split 4, blocks of 256, the
/// predicated kernel then capped at 48 registers): 0.0341 against 0.0420 ms/step at 100k, 0.0893
/// against 0.1041 at 300k, 0.1741 against 0.1718 at 500k. Uncapped, it is faster still up to 400k
/// (`REGISTER_CAPS` in `xtask/src/link.rs`).
pub const SMALL_FLOCK: u32 = 400_000;

/// The flock kernels, looked up once.
struct Kernels {
    init_flock: CudaFunction,
    count_cells: CudaFunction,
    scatter_cells: CudaFunction,
    scatter_index: CudaFunction,
    compute_keys: CudaFunction,
    cell_bounds: CudaFunction,
    gather: CudaFunction,
    update_boids_naive: CudaFunction,
    update_boids_scattered: CudaFunction,
    update_boids_coherent: CudaFunction,
    update_boids_coherent_predicated: CudaFunction,
    update_boids_coherent_shared: CudaFunction,
    update_boids_coherent_warp: CudaFunction,
    render_clear: CudaFunction,
    render_splat: CudaFunction,
    render_resolve: CudaFunction,
}

impl Kernels {
    fn load(gpu: &Gpu) -> Result<Kernels, GpuError> {
        Ok(Kernels {
            init_flock: gpu.kernel("init_flock")?,
            count_cells: gpu.kernel("count_cells")?,
            scatter_cells: gpu.kernel("scatter_cells")?,
            scatter_index: gpu.kernel("scatter_index")?,
            compute_keys: gpu.kernel("compute_keys")?,
            cell_bounds: gpu.kernel("cell_bounds")?,
            gather: gpu.kernel("gather")?,
            update_boids_naive: gpu.kernel("update_boids_naive")?,
            update_boids_scattered: gpu.kernel("update_boids_scattered")?,
            update_boids_coherent: gpu.kernel("update_boids_coherent")?,
            update_boids_coherent_predicated: gpu.kernel("update_boids_coherent_predicated")?,
            update_boids_coherent_shared: gpu.kernel("update_boids_coherent_shared")?,
            update_boids_coherent_warp: gpu.kernel("update_boids_coherent_warp")?,
            render_clear: gpu.kernel("render_clear")?,
            render_splat: gpu.kernel("render_splat")?,
            render_resolve: gpu.kernel("render_resolve")?,
        })
    }
}

/// Scratch of the radix-sort path.
struct RadixPath {
    keys: CudaSlice<u32>,
    sort: RadixSort,
}

/// Device memory of a flock, in bytes, for `n` boids and `cells` grid cells: what
/// `CudaFlock::new` allocates (checked against free memory first).
pub fn device_bytes(settings: &FlockSettings, n: u32, cells: u64) -> u64 {
    let n64 = n as u64;
    // Two bodies (16 B) and two velocities (12 B); per cell a count and the cell table.
    let mut bytes = n64 * (2 * 16 + 2 * 12) + cells * 8 + CellScan::bytes_needed(cells as u32);
    if settings.method == Method::Scattered || settings.sort == SortArg::Radix {
        bytes += n64 * 4; // values (sorted index array)
    }
    if settings.sort == SortArg::Radix && settings.method != Method::Naive {
        bytes += n64 * 4 + RadixSort::bytes_needed(n);
    }
    bytes
}

/// The viewer's frame on the GPU: one `u64` depth+colour key and one `RGBA8` pixel per pixel
/// (12 bytes per pixel: 11 MiB at 1280x720), allocated on the first frame of a size.
struct FrameBuffers {
    pixels: u32,
    keys: CudaSlice<u64>,
    rgba: CudaSlice<u8>,
}

/// Threads per block of the per-pixel render kernels.
const RENDER_BLOCK: u32 = 256;

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
    gpu: Gpu,
    /// The stream every launch goes to (not the legacy default stream: graphs capture it).
    stream: Arc<CudaStream>,
    k: Kernels,
    settings: FlockSettings,
    grid: Grid,
    n: u32,
    body: [CudaSlice<Body>; 2],
    vel: [CudaSlice<Vec3>; 2],
    /// Which buffer of each pair holds the current state.
    cur: usize,
    /// Per cell: boids counted into it (by the last update, for the next binning).
    counts: CudaSlice<u32>,
    /// Per cell: the scanned counts (cell starts), which the scatter turns into cell ends.
    cell_end: CudaSlice<u32>,
    /// True when `counts` holds the counts of the current positions.
    counted: bool,
    cell_scan: CellScan,
    values: Option<CudaSlice<u32>>,
    radix: Option<RadixPath>,
    /// Captured steps by the current buffer they start from, with the one they leave.
    graphs: [Option<StepGraph>; 2],
    clock: StageClock,
    /// The viewer's frame (None until the first `render_into`).
    frame: Option<FrameBuffers>,
    /// How `coherent` sums the candidates.
    update_form: UpdateForm,
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

/// Opens the CUDA backend on GPU 0 with `state` uploaded.
pub fn open(
    settings: &FlockSettings,
    state: &FlockState,
) -> Result<Box<dyn FlockBackend>, GpuError> {
    let mut f = CudaFlock::new(settings, state.len() as u32)?;
    f.upload(state)?;
    Ok(Box::new(f))
}

/// Opens the CUDA backend with the random CIS 565 start generated on the GPU (no host copy:
/// this is how flocks of hundreds of millions of boids start).
pub fn open_random(
    settings: &FlockSettings,
    n: u32,
    seed: u64,
) -> Result<Box<dyn FlockBackend>, GpuError> {
    let mut f = CudaFlock::new(settings, n)?;
    f.init_random(seed)?;
    Ok(Box::new(f))
}

impl CudaFlock {
    /// Allocates everything for `n` boids (state zeroed). Fails with both figures when the GPU's
    /// free memory is short.
    pub fn new(settings: &FlockSettings, n: u32) -> Result<CudaFlock, GpuError> {
        let gpu = Gpu::open()?;
        let grid = settings.grid();
        let cells = grid.cell_count() as u64;
        gpu.check_fits(
            &format!("a flock of {n} boids with {cells} grid cells"),
            device_bytes(settings, n, cells),
        )?;
        let stream = gpu.ctx.new_stream().ctx("creating a stream")?;
        let k = Kernels::load(&gpu)?;
        let z = n as usize;
        let mut f = CudaFlock {
            body: [gpu.zeros(z)?, gpu.zeros(z)?],
            vel: [gpu.zeros(z)?, gpu.zeros(z)?],
            cur: 0,
            counts: gpu.zeros(cells as usize)?,
            cell_end: gpu.zeros(cells as usize)?,
            counted: false,
            cell_scan: CellScan::new(&gpu, &stream, cells as u32)?,
            values: None,
            radix: None,
            graphs: Default::default(),
            clock: StageClock::new(&gpu.ctx),
            frame: None,
            update_form: UpdateForm::Auto,
            stream,
            k,
            settings: settings.clone(),
            grid,
            n,
            gpu,
        };
        f.ensure_scratch()?;
        Ok(f)
    }

    /// Chooses `coherent`'s update kernel (the checks run both; the default is `Auto`).
    pub fn set_update_form(&mut self, form: UpdateForm) {
        self.update_form = form;
        self.graphs = Default::default();
    }

    /// The update kernel `coherent` runs with this flock's size and form.
    pub fn coherent_predicated(&self) -> bool {
        match self.update_form {
            UpdateForm::Auto => self.n <= SMALL_FLOCK,
            UpdateForm::Branched => false,
            UpdateForm::Predicated => true,
        }
    }

    /// The name of the update kernel a step runs.
    pub fn update_kernel(&self) -> &'static str {
        match self.settings.method {
            Method::Naive => "update_boids_naive",
            Method::Scattered => "update_boids_scattered",
            Method::Coherent if self.coherent_predicated() => "update_boids_coherent_predicated",
            Method::Coherent => "update_boids_coherent",
            Method::CoherentWarp => "update_boids_coherent_warp",
            Method::CoherentShared => "update_boids_coherent_shared",
        }
    }

    /// Device bytes per boid actually allocated (all buffers, cell table included).
    pub fn bytes_per_boid(&self) -> f64 {
        device_bytes(&self.settings, self.n, self.grid.cell_count() as u64) as f64 / self.n as f64
    }

    /// Allocates the buffers the current method and sort need (once).
    fn ensure_scratch(&mut self) -> Result<(), GpuError> {
        let s = &self.settings;
        let z = self.n as usize;
        if (s.method == Method::Scattered || s.sort == SortArg::Radix) && self.values.is_none() {
            self.values = Some(self.gpu.zeros(z)?);
        }
        if s.sort == SortArg::Radix && s.method != Method::Naive && self.radix.is_none() {
            self.radix = Some(RadixPath {
                keys: self.gpu.zeros(z)?,
                sort: RadixSort::new(&self.gpu, self.n)?,
            });
        }
        Ok(())
    }

    fn cfg(&self) -> LaunchConfig {
        grid_1d(self.n, self.settings.block_size, 0)
    }

    /// The random CIS 565 start, generated on the GPU (same numbers as `FlockState::random`).
    pub fn init_random(&mut self, seed: u64) -> Result<(), GpuError> {
        self.clock.chain_break()?;
        let cfg = self.cfg();
        let mut l = self.stream.launch_builder(&self.k.init_flock);
        l.arg(&self.n)
            .arg(&seed)
            .arg(&self.settings.params.scale)
            .arg(&mut self.body[self.cur])
            .arg(&mut self.vel[self.cur]);
        // SAFETY: matches init_flock(n, seed, scale, body, vel); buffers hold n elements.
        unsafe { l.launch(cfg) }.ctx("init_flock")?;
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
        let s = &self.stream;
        s.memcpy_htod(&bodies, &mut self.body[self.cur])
            .ctx("uploading positions")?;
        s.memcpy_htod(&state.vel, &mut self.vel[self.cur])
            .ctx("uploading velocities")?;
        self.counted = false;
        Ok(())
    }

    /// Stage `count_cells` (outside graphs: only after a reset of the state or the grid).
    fn count(&mut self) -> Result<(), GpuError> {
        self.clock.chain_break()?;
        let cfg = self.cfg();
        self.stream
            .memset_zeros(&mut self.counts)
            .ctx("clearing cell counts")?;
        let mut l = self.stream.launch_builder(&self.k.count_cells);
        l.arg(&self.n)
            .arg(&self.grid)
            .arg(&self.body[self.cur])
            .arg(&mut self.counts);
        // SAFETY: matches count_cells(n, grid, body, counts); keys < cell_count.
        unsafe { l.launch(cfg) }.ctx("count_cells")?;
        self.counted = true;
        Ok(())
    }

    /// True when steps bin with the counting sort (and so count in the update kernel).
    fn counting(&self) -> bool {
        self.settings.sort == SortArg::Counting && self.settings.method != Method::Naive
    }

    /// Issues one step's launches (recorded into a graph when capturing), marking stages when
    /// `timed`, and advances the current buffer.
    fn issue_step(&mut self, timed: bool) -> Result<(), GpuError> {
        let stream = self.stream.clone();
        let p = self.settings.params;
        let grid = self.grid;
        let n = self.n;
        let cfg = self.cfg();
        let counting = self.counting();
        let method = self.settings.method;
        let cells = grid.cell_count();
        // Programmatic dependent launch for the counting path's chain: scan, scatter, update.
        let pdl = self.settings.pdl && counting;
        macro_rules! mark {
            ($name:expr) => {
                if timed {
                    self.clock.mark(&stream, $name)?;
                }
            };
        }
        // Binning: after it `cell_end` holds the cell ends, and for the coherent methods the
        // state is in cell order in buffer `src`.
        let mut src = self.cur;
        let reorder = !matches!(method, Method::Naive | Method::Scattered);
        if method != Method::Naive {
            if counting {
                self.cell_scan
                    .run(&stream, &mut self.counts, &mut self.cell_end, cells, pdl)?;
                mark!("scan_cells");
                if method == Method::Scattered {
                    let values = self.values.as_mut().expect("allocated for scattered");
                    let mut l = Launch::new(&stream, &self.k.scatter_index);
                    l.arg(&n)
                        .arg(&grid)
                        .buf(&self.body[src])
                        .buf(&self.cell_end)
                        .buf(values)
                        .after_previous(pdl);
                    // SAFETY: matches scatter_index(n, grid, body, cell_end, values); the claimed
                    // entries are a permutation of 0..n.
                    unsafe { l.launch(cfg) }.ctx("scatter_index")?;
                    mark!("scatter_index");
                } else {
                    let (bin, bout) = ping_pong(&mut self.body, src);
                    let (vin, vout) = ping_pong(&mut self.vel, src);
                    let mut l = Launch::new(&stream, &self.k.scatter_cells);
                    l.arg(&n)
                        .arg(&grid)
                        .buf(bin)
                        .buf(vin)
                        .buf(&self.cell_end)
                        .buf(bout)
                        .buf(vout)
                        .after_previous(pdl);
                    // SAFETY: matches scatter_cells(n, grid, body_in, vel_in, cell_end, body_out,
                    // vel_out); the claimed entries are a permutation of 0..n.
                    unsafe { l.launch(cfg) }.ctx("scatter_cells")?;
                    src ^= 1;
                    mark!("scatter_cells");
                }
            } else {
                let values = self.values.as_mut().expect("allocated for radix");
                let radix = self.radix.as_mut().expect("allocated for radix");
                let mut l = stream.launch_builder(&self.k.compute_keys);
                l.arg(&n)
                    .arg(&grid)
                    .arg(&self.body[src])
                    .arg(&mut radix.keys)
                    .arg(&mut *values);
                // SAFETY: matches compute_keys(n, grid, body, keys, values).
                unsafe { l.launch(cfg) }.ctx("compute_keys")?;
                mark!("compute_keys");
                radix
                    .sort
                    .sort(&stream, n, grid.key_bits(), &mut radix.keys, values)?;
                mark!("sort");
                let mut l = stream.launch_builder(&self.k.cell_bounds);
                l.arg(&n)
                    .arg(&cells)
                    .arg(&radix.keys)
                    .arg(&mut self.cell_end);
                // SAFETY: matches cell_bounds(n, cell_count, keys, cell_end); keys sorted,
                // < cell_count; the table has cell_count entries.
                unsafe { l.launch(cfg) }.ctx("cell_bounds")?;
                mark!("cell_bounds");
                if reorder {
                    let (bin, bout) = ping_pong(&mut self.body, src);
                    let (vin, vout) = ping_pong(&mut self.vel, src);
                    let mut l = stream.launch_builder(&self.k.gather);
                    l.arg(&n)
                        .arg(&*values)
                        .arg(bin)
                        .arg(vin)
                        .arg(bout)
                        .arg(vout);
                    // SAFETY: matches gather(n, values, body_in, vel_in, body_out, vel_out);
                    // values is a permutation of 0..n.
                    unsafe { l.launch(cfg) }.ctx("gather")?;
                    src ^= 1;
                    mark!("gather");
                }
            }
        }
        // Update: reads buffer `src`, writes the other one, counts when counting.
        let (name, predicated) = (self.update_kernel(), self.coherent_predicated());
        let (bin, bout) = ping_pong(&mut self.body, src);
        let (vin, vout) = ping_pong(&mut self.vel, src);
        let (kernel, smem) = match method {
            Method::Naive => (&self.k.update_boids_naive, 0),
            Method::Scattered => (&self.k.update_boids_scattered, 0),
            Method::Coherent if predicated => (&self.k.update_boids_coherent_predicated, 0),
            Method::Coherent => (&self.k.update_boids_coherent, 0),
            Method::CoherentWarp => (&self.k.update_boids_coherent_warp, 0),
            Method::CoherentShared => (
                &self.k.update_boids_coherent_shared,
                32 + self.settings.block_size * 28,
            ),
        };
        let null: u64 = 0;
        let mut l = Launch::new(&stream, kernel);
        l.arg(&n).arg(&p).arg(&grid);
        if method != Method::Naive {
            l.buf(&self.cell_end);
        }
        if method == Method::Scattered {
            l.buf(self.values.as_ref().expect("allocated for scattered"));
        }
        l.buf(bin).buf(vin).buf(bout).buf(vout);
        if counting {
            l.buf(&self.counts);
        } else {
            l.arg(&null);
        }
        l.after_previous(pdl);
        // SAFETY: matches update_boids_{naive(n, params, grid, body, vel, body_out, vel_out,
        // counts) | scattered(n, params, grid, cell_end, values, body, vel, body_out, vel_out,
        // counts) | coherent[_predicated|_warp|_shared](n, params, grid, cell_end, body, vel,
        // body_out, vel_out, counts)}; counts is null or holds cell_count zeroed-then-counted
        // entries; the shared variant gets 32 + block * 28 bytes of shared memory.
        unsafe { l.launch(grid_1d(n, self.settings.block_size, smem)) }.ctx(name)?;
        mark!(name);
        self.cur = src ^ 1;
        Ok(())
    }

    fn step_gpu(&mut self) -> Result<(), GpuError> {
        let counting = self.counting();
        if counting && !self.counted {
            self.count()?;
        }
        let stream = self.stream.clone();
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

impl CudaFlock {
    /// Stages `render_clear`, `render_splat`, `render_resolve` on the flock's current buffers,
    /// then one copy of the `RGBA8` frame into `rgba` (synchronises the stream).
    fn render_gpu(
        &mut self,
        view: &View,
        background: u32,
        rgba: &mut [u8],
    ) -> Result<(), GpuError> {
        self.clock.chain_break()?;
        let pixels = view.width * view.height;
        if self.frame.as_ref().is_none_or(|f| f.pixels != pixels) {
            self.frame = None;
            self.gpu.check_fits(
                &format!("a {}x{} frame", view.width, view.height),
                pixels as u64 * 12,
            )?;
            self.frame = Some(FrameBuffers {
                pixels,
                keys: self.gpu.zeros(pixels as usize)?,
                rgba: self.gpu.zeros(pixels as usize * 4)?,
            });
        }
        let (per_pixel, per_boid) = (grid_1d(pixels, RENDER_BLOCK, 0), self.cfg());
        let Some(f) = self.frame.as_mut() else {
            unreachable!("allocated above");
        };
        let stream = &self.stream;
        let mut l = stream.launch_builder(&self.k.render_clear);
        l.arg(&pixels).arg(&mut f.keys);
        // SAFETY: matches render_clear(pixels, frame); keys holds `pixels` entries.
        unsafe { l.launch(per_pixel) }.ctx("render_clear")?;
        let mut l = stream.launch_builder(&self.k.render_splat);
        l.arg(&self.n)
            .arg(view)
            .arg(&self.body[self.cur])
            .arg(&self.vel[self.cur])
            .arg(&mut f.keys);
        // SAFETY: matches render_splat(n, view, body, vel, frame); the current body and velocity
        // buffers hold n boids in the same order; the kernel writes only pixels inside
        // view.width x view.height = `pixels` keys.
        unsafe { l.launch(per_boid) }.ctx("render_splat")?;
        let mut l = stream.launch_builder(&self.k.render_resolve);
        l.arg(&pixels)
            .arg(&background)
            .arg(&f.keys)
            .arg(&mut f.rgba);
        // SAFETY: matches render_resolve(pixels, background, frame, rgba); rgba holds 4 * pixels
        // bytes (device allocations are 256-byte aligned, so u32 stores are aligned).
        unsafe { l.launch(per_pixel) }.ctx("render_resolve")?;
        stream
            .memcpy_dtoh(&f.rgba, rgba)
            .ctx("copying the frame from the GPU")?;
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

    fn state(&mut self) -> Result<FlockState, SimError> {
        self.clock.chain_break()?;
        let bodies = self
            .stream
            .clone_dtoh(&self.body[self.cur])
            .ctx("copying from the GPU")?;
        let vel = self
            .stream
            .clone_dtoh(&self.vel[self.cur])
            .ctx("copying from the GPU")?;
        Ok(FlockState {
            pos: bodies.iter().map(|b| b.pos).collect(),
            id: bodies.iter().map(|b| b.id).collect(),
            vel,
        }
        .sorted_by_id())
    }

    fn set_state(&mut self, state: &FlockState) -> Result<(), SimError> {
        if state.len() as u32 != self.n {
            *self = CudaFlock::new(&self.settings, state.len() as u32)?;
        }
        self.graphs = Default::default();
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
            self.cell_scan = CellScan::new(&self.gpu, &self.stream, cells)?;
        }
        self.grid = grid;
        self.settings = settings.clone();
        self.ensure_scratch()?;
        self.counted = false;
        self.graphs = Default::default();
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
        Ok(self.render_gpu(view, background, rgba)?)
    }
}
