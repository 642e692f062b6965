//! The CUDA fluid backend: the CPU reference's stage as Rust kernels (`kernels-gpu/src/lbm.rs`),
//! launched through `crate::gpu`, population buffers allocated once and ping-ponged, the step
//! timed with CUDA events.

use super::{Fields, FluidBackend, FluidError, Setup};
use crate::gpu::{DriverContext, Gpu, Shape, StageClock};
use crate::timing::StageTimes;
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{Boundary, Init, StreamCollide};
use murmur_common::lbm::boundary::FLUID;
use murmur_common::lbm::layout::BYTES_PER_CELL_STORED;
use murmur_common::lbm::{CollisionModel, Lattice, LbmParams, Model, Populations};
use murmur_common::with_model;

/// Threads per block of the lattice kernels (one thread per cell, x fastest: coalesced). 128:
/// at the interior kernels' 56-72 registers (sm_90, ptxas) it fits 7-9 blocks per SM.
pub const BLOCK_SIZE: u32 = 128;

/// A lattice on the GPU.
pub struct CudaFluid {
    gpu: Gpu,
    model: CollisionModel,
    params: LbmParams,
    flags: CudaSlice<u8>,
    /// Cells handled by the boundary kernel (a one-element dummy when there are none).
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
        let prepared = setup.prepared_flags();
        let list: Vec<u32> = (0..n as u32)
            .filter(|&c| prepared[c as usize] != FLUID)
            .collect();
        let flags = gpu.upload(&prepared)?;
        let boundary_cells = gpu.upload(if list.is_empty() { &[0u32][..] } else { &list })?;
        let fields = gpu.upload(&setup.init.data)?;
        let pops = Populations::new(l);
        let mut f_src = gpu.zeros::<f32>(pops.len())?;
        let f_dst = gpu.zeros::<f32>(pops.len())?;
        let mut launch = gpu.launch();
        let args = Init {
            lattice: l,
            _pad: 0,
            fields: launch.read(&fields),
            f: launch.write(&mut f_src),
        };
        // SAFETY: fields holds 4 n floats, f a time level; one thread per cell.
        unsafe { launch.run(args, Shape::per_item(n as u64, BLOCK_SIZE)) }?;
        let clock = StageClock::new(&gpu.ctx);
        Ok(CudaFluid {
            gpu,
            model: setup.model,
            params: setup.params,
            flags,
            boundary_count: list.len() as u32,
            boundary_cells,
            f_src,
            f_dst,
            fields,
            clock,
        })
    }

    /// Stage `stream_collide` of model `M` (interior kernel, then the boundary kernel over the
    /// listed cells).
    fn stream_collide<M: Model>(&mut self, p: LbmParams) -> Result<(), FluidError>
    where
        StreamCollide<M>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let cells = p.lattice.cells() as u64;
        let mut l = self.gpu.launch();
        let step = StreamCollide::<M>::new(
            p,
            l.read(&self.flags),
            l.read(&self.f_src),
            l.write(&mut self.f_dst),
            l.write(&mut self.fields),
        );
        // SAFETY: flags holds n bytes, src and dst a time level each (distinct buffers), fields
        // 4 n floats; one thread per cell.
        unsafe { l.run(step, Shape::per_item(cells, BLOCK_SIZE)) }?;
        self.clock.mark(&self.gpu.stream, "stream_collide")?;
        if self.boundary_count > 0 {
            let mut l = self.gpu.launch();
            let args = Boundary {
                step,
                // The list's first `boundary_count` entries are the cells (the buffer holds one
                // dummy entry when there are none).
                cells: l
                    .read(&self.boundary_cells)
                    .prefix(self.boundary_count as u64),
            };
            // SAFETY: cells holds distinct cell numbers < n (those the interior kernel skips).
            unsafe {
                l.run(
                    args,
                    Shape::per_item(self.boundary_count as u64, BLOCK_SIZE),
                )
            }?;
            self.clock.mark(&self.gpu.stream, "boundary")?;
        }
        Ok(())
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
        self.clock.begin(&self.gpu.stream)?;
        with_model!(self.model, M => self.stream_collide::<M>(p))?;
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
        let bytes = 2.0 * 4.0 * self.f_src.len() as f64;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = self.gpu.record_timing_event()?;
            stream
                .memcpy_dtod(&self.f_src, &mut self.f_dst)
                .ctx("copying the populations")?;
            let end = self.gpu.record_timing_event()?;
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

    fn set_inlet_scale(&mut self, scale: f32) {
        self.params.inlet_scale = scale;
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }
}
