//! A scene's flocks on the GPU of a CUDA fluid: each flock a [`CudaBoids`], the air the
//! fluid's fields computed straight into the flocks' buffer after each step (no copy, no trip
//! to the host), the substeps' kernels queued on the flock's stream. The CPU reference ([`super::riding`]) and
//! this ride take the same functions in the same order.

use super::cuda::{Air, AirFields, BoidArrays, CudaBoids, Level};
use super::riding::RidingFlock;
use crate::fluid::{Fields, FluidBackend, FluidError, Setup};
use crate::gpu::Gpu;
use murmur_common::coupling::sdf::Obstacle;
use murmur_common::coupling::substep::SubstepTime;

/// The flocks of a scene on the fluid's GPU.
pub struct GpuRide {
    pub flocks: Vec<(CudaBoids, u32)>,
    air: AirFields,
}

fn err(e: impl std::fmt::Display) -> FluidError {
    FluidError::Invalid(e.to_string())
}

impl GpuRide {
    /// The CPU flocks `flocks` moved to the GPU of `backend`'s device fields, their air before
    /// the step `backend` has just taken being `before` (the CPU ride's); `None` when the fluid
    /// keeps no fields on a GPU (the CPU backend).
    pub fn open(
        setup: &Setup,
        backend: &mut dyn FluidBackend,
        flocks: &[RidingFlock],
        before: &Fields,
    ) -> Result<Option<GpuRide>, FluidError> {
        let Some(raw) = backend.device_fields()? else {
            return Ok(None);
        };
        // A handle of the fluid's GPU per flock; the air on the first flock's stream.
        let flocks = flocks
            .iter()
            .map(|f| {
                let gpu = Gpu::open_device(raw.device()).map_err(err)?;
                Ok((CudaBoids::from_cpu(gpu, &f.boids).map_err(err)?, f.substeps))
            })
            .collect::<Result<Vec<_>, FluidError>>()?;
        let Some((first, _)) = flocks.first() else {
            return Ok(None);
        };
        let mut air = AirFields::for_setup(first.gpu(), setup).map_err(err)?;
        air.upload(Level::Before, before).map_err(err)?;
        Ok(Some(GpuRide { flocks, air }))
    }

    /// The flocks' substeps over the fluid step `backend` has just taken; `obstacles(s)` as
    /// [`super::riding::Riding::ride`]'s.
    pub fn ride(
        &mut self,
        backend: &mut dyn FluidBackend,
        obstacles: &dyn Fn(f64) -> Vec<Obstacle>,
    ) -> Result<(), FluidError> {
        let fluid = self.fetch_air(backend)?;
        // The step just taken applied the pending pushes (the flocks' streams wait for it
        // before they write their impulses and positions again).
        for (boids, _) in self.flocks.iter_mut().filter(|(b, _)| b.mass() > 0.0) {
            let stream = &boids.gpu().stream;
            if !std::sync::Arc::ptr_eq(stream, &fluid) {
                stream.join(&fluid).map_err(err)?;
            }
            boids.clear_pushes().map_err(err)?;
        }
        self.substeps(obstacles)?;
        self.air.advance();
        self.push(backend)
    }

    /// The air after the step `backend` has just taken: its fields computed straight into
    /// the flocks' after level (no copy). Every flock reads the air: the write waits for their
    /// earlier reads, their later work for the write. Returns the fluid's stream, which queued
    /// the write.
    pub fn fetch_air(
        &mut self,
        backend: &mut dyn FluidBackend,
    ) -> Result<std::sync::Arc<cudarc::driver::CudaStream>, FluidError> {
        // The air lives on the first flock's stream, which the fluid's write waits for.
        let Some(((first, _), others)) = self.flocks.split_first() else {
            return Err(err("no flock rides the air"));
        };
        let air = &first.gpu().stream;
        for (b, _) in others {
            let s = &b.gpu().stream;
            if !std::sync::Arc::ptr_eq(s, air) {
                air.join(s).map_err(err)?;
            }
        }
        let Some(fluid) = backend.fields_into(self.air.level_mut(Level::After))? else {
            return Err(err("the fluid's fields left the GPU"));
        };
        self.air.written(Level::After, &fluid).map_err(err)?;
        for (b, _) in self.flocks.iter().skip(1) {
            let s = &b.gpu().stream;
            if !std::sync::Arc::ptr_eq(s, &fluid) {
                s.join(&fluid).map_err(err)?;
            }
        }
        Ok(fluid)
    }

    /// Hands the two-way flocks' impulses to `backend` for its next step: one flock's copied
    /// on the device, several through the host.
    pub fn push(&self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let two: Vec<&CudaBoids> = self
            .flocks
            .iter()
            .map(|(b, _)| b)
            .filter(|b| b.mass() > 0.0 && !b.is_empty())
            .collect();
        match two.as_slice() {
            [] => Ok(()),
            [one] => match one.push_buffers() {
                Some((pos, total)) => backend.push_device(&pos, &total),
                None => Ok(()),
            },
            several => {
                let (mut pos, mut total) = (Vec::new(), Vec::new());
                for b in several {
                    let a = b.download().map_err(err)?;
                    pos.extend(a.pos.iter().map(|p| p.to_array()));
                    total.extend(a.push);
                }
                backend.push(&pos, &total)
            }
        }
    }

    /// The substeps of every flock in the air as it stands (no new fields): the flock's step
    /// alone, for the coupling bench.
    pub fn substeps(&mut self, obstacles: &dyn Fn(f64) -> Vec<Obstacle>) -> Result<(), FluidError> {
        for (boids, n) in &mut self.flocks {
            for k in 0..*n {
                let air = Air {
                    fields: &self.air,
                    time: SubstepTime { k, n: *n },
                };
                let solids = obstacles((k + 1) as f64 / *n as f64);
                boids.substep_among(Some(air), &solids).map_err(err)?;
            }
        }
        Ok(())
    }

    /// Holds the air at `fields` (before and after the step alike).
    pub fn hold(&mut self, fields: &Fields) -> Result<(), FluidError> {
        self.air.upload(Level::Before, fields).map_err(err)?;
        self.air.upload(Level::After, fields).map_err(err)
    }

    /// Starts the ride again from the fluid's `fields` (the air before its next step).
    pub fn restart(&mut self, fields: &Fields) -> Result<(), FluidError> {
        // The after level is filled by the next ride's copy.
        self.air.upload(Level::Before, fields).map_err(err)
    }

    /// Flock `k`'s boids copied back in its order.
    pub fn state(&self, k: usize) -> Result<BoidArrays, FluidError> {
        self.flocks[k].0.download().map_err(err)
    }

    /// Waits for the flocks' queued work (for timing).
    pub fn synchronize(&self) -> Result<(), FluidError> {
        match self.flocks.first() {
            Some((b, _)) => b.gpu().stream.synchronize().map_err(err),
            None => Ok(()),
        }
    }
}
