//! The CUDA fluid backend: the CPU reference's stage as Rust kernels (`kernels-gpu/src/lbm.rs`),
//! launched through `crate::gpu`, population buffers allocated once and ping-ponged, the step
//! timed with CUDA events.

use super::{Fields, FluidBackend, FluidError, Setup};
use crate::gpu::{grid_1d, DriverContext, Gpu, StageClock};
use crate::timing::StageTimes;
use cudarc::driver::{CudaFunction, CudaSlice, PushKernelArg};
use murmur_common::lbm::layout::BYTES_PER_CELL_STORED;
use murmur_common::lbm::{CollisionModel, Lattice, LbmParams};

/// Threads per block of the lattice kernels (one thread per cell, x fastest: coalesced). 128:
/// at the interior kernels' 56-72 registers (sm_90, ptxas) it fits 7-9 blocks per SM.
pub const BLOCK_SIZE: u32 = 128;

/// The lattice kernels of one collision model, looked up once.
struct Kernels {
    init: CudaFunction,
    /// Interior cells (fluid with only fluid neighbours), one thread per cell of the lattice.
    interior: CudaFunction,
    /// The listed cells: non-fluid ones and fluid cells next to them.
    boundary: CudaFunction,
}

/// A lattice on the GPU.
pub struct CudaFluid {
    gpu: Gpu,
    k: Kernels,
    model: CollisionModel,
    params: LbmParams,
    n: u32,
    flags: CudaSlice<u8>,
    /// Cells handled by the boundary kernel, and how many.
    boundary_cells: CudaSlice<u32>,
    boundary_count: u32,
    f_src: CudaSlice<f32>,
    f_dst: CudaSlice<f32>,
    fields: CudaSlice<f32>,
    clock: StageClock,
}

/// Opens the CUDA backend on GPU 0 with `setup` uploaded and initialised.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    Ok(Box::new(CudaFluid::new(setup)?))
}

impl CudaFluid {
    pub fn new(setup: &Setup) -> Result<CudaFluid, FluidError> {
        let l = setup.lattice();
        let n = l.cells();
        if setup.flags.len() != n || setup.init.data.len() != 4 * n {
            return Err(FluidError::Invalid(
                "setup sizes disagree with the lattice".into(),
            ));
        }
        let gpu = Gpu::open()?;
        gpu.check_fits(
            &format!("a {} x {} x {} lattice", l.nx, l.ny, l.nz),
            n as u64 * BYTES_PER_CELL_STORED,
        )?;
        let model = match setup.model {
            CollisionModel::Bgk => "bgk",
            CollisionModel::RmMrt => "rm_mrt",
            CollisionModel::AcmMrt => "acm_mrt",
        };
        let k = Kernels {
            init: gpu.kernel("lbm_init")?,
            interior: gpu.kernel(&format!("lbm_stream_collide_{model}"))?,
            boundary: gpu.kernel(&format!("lbm_boundary_{model}"))?,
        };
        let prepared = setup.prepared_flags();
        let list: Vec<u32> = (0..n as u32)
            .filter(|&c| prepared[c as usize] != murmur_common::lbm::boundary::FLUID)
            .collect();
        let flags = gpu.upload(&prepared)?;
        // A one-element dummy when empty (no zero-byte allocations); the count stays 0.
        let boundary_cells = gpu.upload(if list.is_empty() { &[0u32][..] } else { &list })?;
        let fields = gpu.upload(&setup.init.data)?;
        let mut f_src = gpu.zeros::<f32>(27 * n)?;
        let f_dst = gpu.zeros::<f32>(27 * n)?;
        let n32 = n as u32;
        let mut l = gpu.stream.launch_builder(&k.init);
        l.arg(&n32).arg(&fields).arg(&mut f_src);
        // SAFETY: matches lbm_init(n, fields, f); fields holds 4 n floats, f 27 n.
        unsafe { l.launch(grid_1d(n32, BLOCK_SIZE, 0)) }.ctx("lbm_init")?;
        let clock = StageClock::new(&gpu.ctx);
        Ok(CudaFluid {
            gpu,
            k,
            model: setup.model,
            params: setup.params,
            n: n32,
            flags,
            boundary_count: list.len() as u32,
            boundary_cells,
            f_src,
            f_dst,
            fields,
            clock,
        })
    }
}

impl FluidBackend for CudaFluid {
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    fn model(&self) -> CollisionModel {
        self.model
    }

    fn step(&mut self, store_fields: bool) -> Result<(), FluidError> {
        let mut p = self.params;
        p.store_fields = store_fields as u32;
        let stream = &self.gpu.stream;
        self.clock.begin(stream)?;
        let mut l = stream.launch_builder(&self.k.interior);
        l.arg(&p)
            .arg(&self.flags)
            .arg(&self.f_src)
            .arg(&mut self.f_dst)
            .arg(&mut self.fields);
        // SAFETY: matches lbm_stream_collide_*(p, flags, src, dst, fields); flags holds n bytes,
        // src and dst 27 n floats (distinct buffers), fields 4 n; one thread per cell.
        unsafe { l.launch(grid_1d(self.n, BLOCK_SIZE, 0)) }.ctx("lbm_stream_collide")?;
        self.clock.mark(stream, "stream_collide")?;
        if self.boundary_count > 0 {
            let mut l = stream.launch_builder(&self.k.boundary);
            l.arg(&p)
                .arg(&self.boundary_count)
                .arg(&self.boundary_cells)
                .arg(&self.flags)
                .arg(&self.f_src)
                .arg(&mut self.f_dst)
                .arg(&mut self.fields);
            // SAFETY: matches lbm_boundary_*(p, count, cells, flags, src, dst, fields); cells
            // holds count distinct cell numbers < n (the cells the interior kernel skips).
            unsafe { l.launch(grid_1d(self.boundary_count, BLOCK_SIZE, 0)) }.ctx("lbm_boundary")?;
            self.clock.mark(stream, "boundary")?;
        }
        self.clock.end();
        std::mem::swap(&mut self.f_src, &mut self.f_dst);
        Ok(())
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.gpu.download(&self.fields)?,
        })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(self.gpu.download(&self.f_src)?)
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        let stream = &self.gpu.stream;
        // Timing events (events recorded without flags cannot be timed).
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let bytes = 2.0 * 4.0 * 27.0 * self.n as f64;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = stream.record_event(timing).ctx("recording a CUDA event")?;
            stream
                .memcpy_dtod(&self.f_src, &mut self.f_dst)
                .ctx("copying the populations")?;
            let end = stream.record_event(timing).ctx("recording a CUDA event")?;
            end.synchronize().ctx("waiting for a CUDA event")?;
            let ms = start.elapsed_ms(&end).ctx("reading a CUDA event")? as f64;
            best = best.min(ms / 1e3);
        }
        Ok(bytes / best)
    }

    fn synchronize(&mut self) -> Result<(), FluidError> {
        Ok(self.gpu.synchronize()?)
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        Ok(self.clock.times()?)
    }

    fn reset_times(&mut self) {
        // A failed read of old events only loses figures, never state.
        let _ = self.clock.reset();
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }
}
