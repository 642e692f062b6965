//! The CUDA flock backend: the CPU reference's stages as Rust kernels (`kernels-gpu/src/flock.rs`),
//! buffers allocated once and ping-ponged, every stage timed with CUDA events.

use super::{FlockBackend, FlockSettings, FlockState, Method, SimError};
use crate::gpu::sort::RadixSort;
use crate::gpu::{grid_1d, DriverContext, Gpu, GpuError, StageClock};
use crate::timing::StageTimes;
use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use murmur_common::flock::Grid;
use murmur_common::Vec3;

/// The flock kernels, looked up once.
struct Kernels {
    init_flock: CudaFunction,
    compute_keys: CudaFunction,
    cell_bounds: CudaFunction,
    gather: CudaFunction,
    update_velocity_naive: CudaFunction,
    update_velocity_scattered: CudaFunction,
    update_velocity_coherent: CudaFunction,
    update_velocity_coherent_shared: CudaFunction,
    update_position: CudaFunction,
}

impl Kernels {
    fn load(gpu: &Gpu) -> Result<Kernels, GpuError> {
        Ok(Kernels {
            init_flock: gpu.kernel("init_flock")?,
            compute_keys: gpu.kernel("compute_keys")?,
            cell_bounds: gpu.kernel("cell_bounds")?,
            gather: gpu.kernel("gather")?,
            update_velocity_naive: gpu.kernel("update_velocity_naive")?,
            update_velocity_scattered: gpu.kernel("update_velocity_scattered")?,
            update_velocity_coherent: gpu.kernel("update_velocity_coherent")?,
            update_velocity_coherent_shared: gpu.kernel("update_velocity_coherent_shared")?,
            update_position: gpu.kernel("update_position")?,
        })
    }
}

/// Device buffers for `n` boids.
struct Buffers {
    n: u32,
    pos: CudaSlice<Vec3>,
    vel: CudaSlice<Vec3>,
    id: CudaSlice<u32>,
    pos_alt: CudaSlice<Vec3>,
    vel_alt: CudaSlice<Vec3>,
    id_alt: CudaSlice<u32>,
    keys: CudaSlice<u32>,
    values: CudaSlice<u32>,
    sort: RadixSort,
}

impl Buffers {
    /// Bytes per boid: pos, vel (x2, 12 B each), id (x2), keys and values (x2 with the sort's).
    const BYTES_PER_BOID: u64 = 4 * 12 + 2 * 4;

    fn bytes(n: u32) -> u64 {
        n as u64 * Self::BYTES_PER_BOID + RadixSort::bytes_needed(n) + 2 * n as u64 * 4
    }

    fn new(gpu: &Gpu, n: u32) -> Result<Buffers, GpuError> {
        let z = n as usize;
        Ok(Buffers {
            n,
            pos: gpu.zeros(z)?,
            vel: gpu.zeros(z)?,
            id: gpu.zeros(z)?,
            pos_alt: gpu.zeros(z)?,
            vel_alt: gpu.zeros(z)?,
            id_alt: gpu.zeros(z)?,
            keys: gpu.zeros(z)?,
            values: gpu.zeros(z)?,
            sort: RadixSort::new(gpu, n)?,
        })
    }
}

/// A flock on the GPU.
pub struct CudaFlock {
    gpu: Gpu,
    k: Kernels,
    settings: FlockSettings,
    grid: Grid,
    b: Buffers,
    /// Lower-bound table of the grid, `cell_count + 1` entries.
    cell_start: CudaSlice<u32>,
    clock: StageClock,
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

impl CudaFlock {
    /// Allocates everything for `n` boids (state zeroed). Fails with both figures when the GPU's
    /// free memory is short.
    pub fn new(settings: &FlockSettings, n: u32) -> Result<CudaFlock, GpuError> {
        let gpu = Gpu::open()?;
        let grid = settings.grid();
        let cells = grid.cell_count() as u64 + 1;
        gpu.check_fits(
            &format!("a flock of {n} boids with {cells} grid cells"),
            Buffers::bytes(n) + cells * 4,
        )?;
        let k = Kernels::load(&gpu)?;
        let b = Buffers::new(&gpu, n)?;
        let cell_start = gpu.zeros(cells as usize)?;
        let clock = StageClock::new(&gpu.ctx);
        Ok(CudaFlock {
            gpu,
            k,
            settings: settings.clone(),
            grid,
            b,
            cell_start,
            clock,
        })
    }

    /// The CIS 565 start generated on the GPU (same numbers as `FlockState::random`).
    pub fn init_random(&mut self, seed: u64) -> Result<(), GpuError> {
        let cfg = self.cfg(0);
        let b = &mut self.b;
        let mut l = self.gpu.stream.launch_builder(&self.k.init_flock);
        l.arg(&b.n)
            .arg(&seed)
            .arg(&self.settings.params.scale)
            .arg(&mut b.pos)
            .arg(&mut b.vel)
            .arg(&mut b.id);
        // SAFETY: matches init_flock(n, seed, scale, pos, vel, id); buffers hold n elements.
        unsafe { l.launch(cfg) }.ctx("init_flock")?;
        Ok(())
    }

    fn upload(&mut self, state: &FlockState) -> Result<(), GpuError> {
        let s = &self.gpu.stream;
        s.memcpy_htod(&state.pos, &mut self.b.pos)
            .ctx("uploading positions")?;
        s.memcpy_htod(&state.vel, &mut self.b.vel)
            .ctx("uploading velocities")?;
        s.memcpy_htod(&state.id, &mut self.b.id)
            .ctx("uploading ids")?;
        Ok(())
    }

    fn cfg(&self, shared: u32) -> cudarc::driver::LaunchConfig {
        grid_1d(self.b.n, self.settings.block_size, shared)
    }

    /// Stages `compute_keys`, `sort`, `cell_bounds`.
    fn bin(&mut self) -> Result<(), GpuError> {
        let stream = self.gpu.stream.clone();
        let cfg = self.cfg(0);
        let b = &mut self.b;
        let mut l = stream.launch_builder(&self.k.compute_keys);
        l.arg(&b.n)
            .arg(&self.grid)
            .arg(&b.pos)
            .arg(&mut b.keys)
            .arg(&mut b.values);
        // SAFETY: matches compute_keys(n, grid, pos, keys, values); one thread per boid.
        unsafe { l.launch(cfg) }.ctx("compute_keys")?;
        self.clock.mark(&stream, "compute_keys")?;
        b.sort.sort(
            &stream,
            b.n,
            self.grid.key_bits(),
            &mut b.keys,
            &mut b.values,
        )?;
        self.clock.mark(&stream, "sort")?;
        let cells = self.grid.cell_count();
        let mut l = stream.launch_builder(&self.k.cell_bounds);
        l.arg(&b.n)
            .arg(&cells)
            .arg(&b.keys)
            .arg(&mut self.cell_start);
        // SAFETY: matches cell_bounds(n, cell_count, keys, cell_start); cell_start holds
        // cell_count + 1 entries and keys are < cell_count.
        unsafe { l.launch(cfg) }.ctx("cell_bounds")?;
        self.clock.mark(&stream, "cell_bounds")?;
        Ok(())
    }

    fn step_gpu(&mut self) -> Result<(), GpuError> {
        let stream = self.gpu.stream.clone();
        let p = self.settings.params;
        let cfg = self.cfg(0);
        self.clock.begin(&stream)?;
        match self.settings.method {
            Method::Naive => {
                let b = &mut self.b;
                let mut l = stream.launch_builder(&self.k.update_velocity_naive);
                l.arg(&b.n)
                    .arg(&p)
                    .arg(&b.pos)
                    .arg(&b.vel)
                    .arg(&mut b.vel_alt);
                // SAFETY: matches update_velocity_naive(n, params, pos, vel, vel_out).
                unsafe { l.launch(cfg) }.ctx("update_velocity_naive")?;
                self.clock.mark(&stream, "update_velocity_naive")?;
            }
            Method::Scattered => {
                self.bin()?;
                let b = &mut self.b;
                let mut l = stream.launch_builder(&self.k.update_velocity_scattered);
                l.arg(&b.n)
                    .arg(&p)
                    .arg(&self.grid)
                    .arg(&self.cell_start)
                    .arg(&b.values)
                    .arg(&b.pos)
                    .arg(&b.vel)
                    .arg(&mut b.vel_alt);
                // SAFETY: matches update_velocity_scattered(n, params, grid, cell_start, values,
                // pos, vel, vel_out); values is a permutation of 0..n.
                unsafe { l.launch(cfg) }.ctx("update_velocity_scattered")?;
                self.clock.mark(&stream, "update_velocity_scattered")?;
            }
            Method::Coherent | Method::CoherentShared => {
                self.bin()?;
                let b = &mut self.b;
                let mut l = stream.launch_builder(&self.k.gather);
                l.arg(&b.n)
                    .arg(&b.values)
                    .arg(&b.pos)
                    .arg(&b.vel)
                    .arg(&b.id)
                    .arg(&mut b.pos_alt)
                    .arg(&mut b.vel_alt)
                    .arg(&mut b.id_alt);
                // SAFETY: matches gather(n, values, pos_in, vel_in, id_in, pos_out, vel_out,
                // id_out); values is a permutation of 0..n.
                unsafe { l.launch(cfg) }.ctx("gather")?;
                std::mem::swap(&mut b.pos, &mut b.pos_alt);
                std::mem::swap(&mut b.vel, &mut b.vel_alt);
                std::mem::swap(&mut b.id, &mut b.id_alt);
                self.clock.mark(&stream, "gather")?;
                let shared = self.settings.method == Method::CoherentShared;
                let (kernel, name, smem) = if shared {
                    (
                        &self.k.update_velocity_coherent_shared,
                        "update_velocity_coherent_shared",
                        32 + self.settings.block_size * 24,
                    )
                } else {
                    (
                        &self.k.update_velocity_coherent,
                        "update_velocity_coherent",
                        0,
                    )
                };
                let mut l = stream.launch_builder(kernel);
                l.arg(&b.n)
                    .arg(&p)
                    .arg(&self.grid)
                    .arg(&self.cell_start)
                    .arg(&b.pos)
                    .arg(&b.vel)
                    .arg(&mut b.vel_alt);
                // SAFETY: matches update_velocity_coherent[_shared](n, params, grid, cell_start,
                // pos, vel, vel_out); the shared variant gets 32 + block * 24 bytes.
                unsafe { l.launch(grid_1d(b.n, self.settings.block_size, smem)) }.ctx(name)?;
                self.clock.mark(&stream, name)?;
            }
        }
        let b = &mut self.b;
        std::mem::swap(&mut b.vel, &mut b.vel_alt);
        let mut l = stream.launch_builder(&self.k.update_position);
        l.arg(&b.n).arg(&p).arg(&mut b.pos).arg(&b.vel);
        // SAFETY: matches update_position(n, params, pos, vel).
        unsafe { l.launch(cfg) }.ctx("update_position")?;
        self.clock.mark(&stream, "update_position")?;
        self.clock.end();
        Ok(())
    }
}

impl FlockBackend for CudaFlock {
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn len(&self) -> usize {
        self.b.n as usize
    }

    fn step(&mut self) -> Result<(), SimError> {
        Ok(self.step_gpu()?)
    }

    fn state(&mut self) -> Result<FlockState, SimError> {
        let b = &self.b;
        Ok(FlockState {
            pos: self.gpu.download(&b.pos)?,
            vel: self.gpu.download(&b.vel)?,
            id: self.gpu.download(&b.id)?,
        }
        .sorted_by_id())
    }

    fn set_state(&mut self, state: &FlockState) -> Result<(), SimError> {
        if state.len() as u32 != self.b.n {
            let n = state.len() as u32;
            self.gpu
                .check_fits(&format!("a flock of {n} boids"), Buffers::bytes(n))?;
            self.b = Buffers::new(&self.gpu, n)?;
        }
        Ok(self.upload(state)?)
    }

    fn set_settings(&mut self, settings: &FlockSettings) -> Result<(), SimError> {
        let grid = settings.grid();
        if grid.cell_count() != self.grid.cell_count() {
            self.cell_start = self.gpu.zeros(grid.cell_count() as usize + 1)?;
        }
        self.grid = grid;
        self.settings = settings.clone();
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
}
