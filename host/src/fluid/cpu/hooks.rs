//! The CPU reference's hooks for the viewer (live knobs, smoke, frames drawn by the rasteriser)
//! and for the bench (the memory-bandwidth probe).

use super::CpuFluid;
use crate::fluid::{BenchHooks, FluidBackend, FluidError, SmokeSetup, ViewHooks};
use murmur_common::lbm::{CollisionModel, Rates, Storage};
use rayon::prelude::*;

impl<S: Storage> ViewHooks for CpuFluid<S> {
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
        let fields = self.fields()?;
        let n = self.params.lattice.cells();
        let state = self
            .smoke
            .get_or_insert_with(|| crate::raster::fluid::CpuSmoke::new(n, smoke.sources.clone()));
        state.sources.clone_from(&smoke.sources);
        state.advect(
            &smoke.params(self.params.lattice),
            &fields.data,
            &self.flags,
        );
        Ok(())
    }

    fn smoke(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(match &self.smoke {
            Some(s) => s.s.clone(),
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
        let fields = self.fields()?;
        let solids = self
            .ib
            .as_ref()
            .map_or_else(Vec::new, |ib| ib.plan.positions(self.step));
        let input = crate::raster::fluid::FrameInput {
            fields: &fields.data,
            flags: &self.flags,
            smoke: self.smoke.as_ref().map_or(&[][..], |s| &s.s[..]),
            solids: &solids,
            solid_radius,
            points,
        };
        self.raster
            .draw(frame, &input, rgba)
            .map_err(|e| FluidError::Invalid(e.to_string()))
    }
}

impl<S: Storage> BenchHooks for CpuFluid<S> {
    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        let src = vec![0.0f32; self.f.len() * std::mem::size_of::<S::Elem>() / 4];
        let mut dst = vec![0.0f32; src.len()];
        let bytes = 2.0 * 4.0 * src.len() as f64;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            dst.par_chunks_mut(1 << 16)
                .zip(src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok(bytes / best)
    }
}
