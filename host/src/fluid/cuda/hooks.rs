//! The CUDA backend's hooks for the viewer (live knobs, smoke, frames drawn on the GPU) and for
//! the bench (the memory-bandwidth probe).

use super::CudaFluid;
use crate::fluid::{BenchHooks, FluidError, SmokeSetup, ViewHooks};
use crate::gpu::DriverContext;
use crate::timing::StageTimes;
use murmur_common::lbm::abi::{FieldsArgs, Health};
use murmur_common::lbm::{CollisionModel, Rates, Storage};
use murmur_common::render::abi::PlaneFields;

impl<S: Storage> ViewHooks for CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    FieldsArgs<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    PlaneFields<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Health<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    fn set_model(&mut self, model: CollisionModel) {
        self.model = model;
    }

    fn set_rates(&mut self, rates: Rates) {
        self.params.rates = rates;
    }

    fn rates(&self) -> Rates {
        self.params.rates
    }

    fn advect_smoke(&mut self, smoke: &SmokeSetup) -> Result<(), FluidError> {
        self.compute_fields()?;
        let n = self.params.lattice.cells();
        if self.smoke.is_none() {
            self.smoke = Some(crate::raster::fluid_cuda::CudaSmoke::new(
                &self.gpu,
                n,
                &smoke.sources,
            )?);
        }
        let (Some(state), Some(fields)) = (self.smoke.as_mut(), self.lat.fields.as_ref()) else {
            unreachable!("allocated above")
        };
        state.advect(
            &self.gpu,
            &smoke.params(self.params.lattice),
            fields,
            &self.lat.flags,
        )?;
        Ok(())
    }

    fn smoke(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(match &self.smoke {
            Some(s) => self.gpu.download(s.density())?,
            None => vec![0.0; self.params.lattice.cells()],
        })
    }

    fn render_into(
        &mut self,
        frame: &murmur_common::render::fluid::FluidFrame,
        solid_radius: f32,
        points: crate::fluid::Points,
        rgba: &mut [u8],
    ) -> Result<(), FluidError> {
        crate::raster::check_frame(&frame.view, rgba)
            .map_err(|e| FluidError::Invalid(e.to_string()))?;
        self.raster.begin(&self.gpu)?;
        // The fields the frame reads: a slice's planes alone, every cell for a volume, none for
        // the smoke (a buffer to point at, once).
        match frame.field_planes() {
            Some(planes) if !planes.is_all(&self.params.lattice) => {
                self.compute_plane_fields(planes)?
            }
            Some(_) => self.compute_fields()?,
            None if self.lat.fields.is_none() => self.compute_fields()?,
            None => {}
        }
        let solids = self
            .ib
            .as_ref()
            .map_or_else(Vec::new, |ib| ib.plan.positions(self.step));
        let Some(fields) = self.lat.fields.as_ref() else {
            unreachable!("computed above")
        };
        let input = crate::raster::fluid_cuda::DeviceInput {
            fields,
            flags: &self.lat.flags,
            smoke: self.smoke.as_ref(),
            step: self.step,
            solids: &solids,
            solid_radius,
            points,
        };
        self.raster.draw(&self.gpu, frame, &input, rgba)?;
        Ok(())
    }

    fn render_times(&mut self) -> Option<StageTimes> {
        self.raster.times().ok().filter(|t| t.steps > 0)
    }
}

impl<S: Storage> BenchHooks for CudaFluid<S> {
    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        // Scratch buffers the size of the populations (at most 4 GiB: enough for a steady
        // figure), freed on return.
        let bytes = (self.lat.f.len() * std::mem::size_of::<S::Elem>()).min(4 << 30);
        let words = bytes / 4;
        self.gpu
            .check_fits("the bandwidth probe's scratch buffers", 2 * bytes as u64)?;
        let a = self.gpu.zeros::<f32>(words)?;
        let mut b = self.gpu.zeros::<f32>(words)?;
        let stream = &self.gpu.stream;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = self.gpu.record_timing_event()?;
            stream
                .memcpy_dtod(&a, &mut b)
                .ctx("copying the bandwidth probe")?;
            let end = self.gpu.record_timing_event()?;
            end.synchronize().ctx("waiting for a CUDA event")?;
            let ms = start.elapsed_ms(&end).ctx("reading a CUDA event")? as f64;
            best = best.min(ms / 1e3);
        }
        Ok(2.0 * 4.0 * words as f64 / best)
    }
}
