//! The CPU reference's state capture and restore ([`crate::fluid::state`]): the populations
//! converted straight from and into its buffers.

use super::CpuFluid;
use crate::fluid::state::{self, OutletVelocity, SmallState};
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::lbm::Storage;
use std::ops::Range;

impl<S: Storage> CpuFluid<S> {
    /// Refuses a slab (its cells are not the global lattice's).
    fn whole(&self) -> Result<(), FluidError> {
        match self.halo {
            Some(_) => Err(state::unsupported("a rank's slab")),
            None => Ok(()),
        }
    }

    pub(super) fn read_piece(&self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        self.whole()?;
        state::check_piece(self.params.lattice, S::KIND, &cells, out.len())?;
        let f = &self.f;
        state::gather(&self.now(), cells, |i| f.get(i).copied(), out)
    }

    pub(super) fn write_piece(
        &mut self,
        cells: Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        self.whole()?;
        state::check_piece(self.params.lattice, S::KIND, &cells, data.len())?;
        let pops = self.now();
        let (f, next) = (&mut self.f, &mut self.f_next);
        let pull = !next.is_empty();
        state::scatter(&pops, cells, data, |i, e| match f.get_mut(i) {
            Some(slot) => {
                *slot = e;
                // The pull scheme's copies are the same size.
                if pull {
                    next[i] = e;
                }
                true
            }
            None => false,
        })
    }

    pub(super) fn capture_small(&mut self) -> Result<SmallState, FluidError> {
        self.whole()?;
        let lattice = self.params.lattice;
        let outlet_u = if self.outlet_u.is_empty() {
            Vec::new()
        } else {
            state::outlet_cells(lattice, &self.flags)
                .into_iter()
                .map(|cell| {
                    let c = 3 * cell as usize;
                    let u = [self.outlet_u[c], self.outlet_u[c + 1], self.outlet_u[c + 2]];
                    OutletVelocity { cell, u }
                })
                .collect()
        };
        let step = self.step;
        let immersed = match self.ib.as_mut() {
            Some(ib) => Some(ib.capture(step, None)?),
            None => None,
        };
        Ok(SmallState {
            lattice,
            model: self.model,
            storage: S::KIND,
            streaming: self.streaming(),
            step,
            inlet_scale: self.params.inlet_scale,
            rates: self.params.rates,
            outlet_u,
            immersed,
        })
    }

    pub(super) fn restore_small(&mut self, s: &SmallState) -> Result<(), FluidError> {
        self.whole()?;
        state::check_small(
            s,
            self.params.lattice,
            self.model,
            S::KIND,
            self.streaming(),
        )?;
        let cells = if self.outlet_u.is_empty() {
            Vec::new()
        } else {
            state::outlet_cells(self.params.lattice, &self.flags)
        };
        state::check_outlet_cells(&s.outlet_u, &cells)?;
        let solids = self.ib.as_ref().map(|ib| ib.solid_states(s.step));
        let samples = self.ib.as_ref().map_or(0, |ib| ib.plan.body.len());
        state::check_immersed(
            s.immersed.as_ref(),
            solids.as_deref().map(|st| (st, samples)),
        )?;
        for v in &s.outlet_u {
            let c = 3 * v.cell as usize;
            self.outlet_u[c..c + 3].copy_from_slice(&v.u);
        }
        if let (Some(ib), Some(captured)) = (self.ib.as_mut(), s.immersed.as_ref()) {
            ib.restore(captured);
        }
        self.step = s.step;
        self.params.inlet_scale = s.inlet_scale;
        self.params.rates = s.rates;
        Ok(())
    }
}
