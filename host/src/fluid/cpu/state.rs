//! The CPU reference's state capture and restore ([`crate::fluid::state`]): the populations
//! converted straight from and into its buffers. On a rank's slab the pieces' cells are its
//! own box's ([`crate::fluid::slab::state`]), the outlet cells local ones (the slab's adapter
//! numbers them globally), and a restore leaves the ghost layers to the next step's exchange.

use super::CpuFluid;
use crate::fluid::slab::state::piece_cells;
use crate::fluid::state::snapshot::{fits_host, PieceSource, Snapshot};
use crate::fluid::state::{self, OutletVelocity, SmallState};
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::lbm::{Populations, Storage};
use std::ops::Range;

impl<S: Storage> CpuFluid<S> {
    /// The buffer's cells of piece `cells` (a slab's: of its own box), checked against the
    /// piece's `bytes`.
    fn piece_cells(
        &self,
        cells: &Range<usize>,
        bytes: usize,
    ) -> Result<impl Iterator<Item = usize>, FluidError> {
        let slab = self.halo.as_ref().map(|h| h.axis as usize);
        Ok(piece_cells(self.params.lattice, slab, S::KIND, cells, bytes)?.0)
    }

    pub(super) fn read_piece(&self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        let cells = self.piece_cells(&cells, out.len())?;
        let f = &self.f;
        state::gather(&self.now(), cells, |i| f.get(i).copied(), out)
    }

    /// A host copy of the populations (the whole lattice's, where half the available memory
    /// holds it; a slab's are read where they are).
    pub(super) fn snapshot_copy(&self) -> Option<Snapshot> {
        let bytes = (self.f.len() * std::mem::size_of::<S::Elem>()) as u64;
        if self.halo.is_some() || !fits_host(bytes) {
            return None;
        }
        Some(Box::new(HostCopy::<S> {
            lattice: self.params.lattice,
            pops: self.now(),
            f: self.f.clone(),
        }))
    }

    pub(super) fn write_piece(
        &mut self,
        cells: Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        let cells = self.piece_cells(&cells, data.len())?;
        let pops = self.now();
        let cells: Vec<usize> = cells.collect();
        state::scatter(&pops, cells.iter().copied(), data, Some, &mut self.f)?;
        if !self.f_next.is_empty() {
            // The pull scheme's copies are the same size.
            state::scatter(&pops, cells, data, Some, &mut self.f_next)?;
        }
        // The ghost layers now lag the owned cells: the next step exchanges them first.
        self.stale_ghosts = self.halo.is_some();
        Ok(())
    }

    pub(super) fn capture_small(&mut self) -> Result<SmallState, FluidError> {
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
        // A band for pushes alone holds no state between steps.
        let immersed = match self.ib.as_mut().filter(|ib| ib.plan.has_samples()) {
            Some(ib) => Some(ib.capture(step, self.halo.as_ref())?),
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
            // On a slab: local cells, the ghost layers' included ([`crate::fluid::slab`]
            // keeps the owned ones).
            band: match &self.ib {
                Some(ib) => ib.band_forces(),
                None => Vec::new(),
            },
            velocity: self.velocity[(step & 1) as usize].clone(),
        })
    }

    pub(super) fn restore_small(&mut self, s: &SmallState) -> Result<(), FluidError> {
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
        state::check_velocity(&s.velocity, self.velocity[0].len())?;
        let solids = self
            .ib
            .as_ref()
            .filter(|ib| ib.plan.has_samples())
            .map(|ib| ib.solid_states(s.step));
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
        // The band's force for the fields; a band for pushes alone is made later (when what
        // pushes opens), which puts it back then.
        self.kept_band = s.band.clone();
        if let Some(ib) = self.ib.as_mut() {
            ib.set_band(&s.band)?;
        }
        self.velocity[(s.step & 1) as usize].copy_from_slice(&s.velocity);
        self.step = s.step;
        self.params.inlet_scale = s.inlet_scale;
        self.params.rates = s.rates;
        Ok(())
    }
}

/// The CPU reference's populations copied between two steps.
struct HostCopy<S: Storage> {
    lattice: murmur_common::lbm::Lattice,
    pops: Populations<S>,
    f: Vec<S::Elem>,
}

impl<S: Storage> PieceSource for HostCopy<S> {
    fn read_piece(&mut self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        let cells = piece_cells(self.lattice, None, S::KIND, &cells, out.len())?.0;
        let f = &self.f;
        state::gather(&self.pops, cells, |i| f.get(i).copied(), out)
    }
}
