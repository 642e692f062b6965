//! The CUDA backend's state capture and restore ([`crate::fluid::state`]): a piece's window of
//! the population buffer ([`Window`]: its cells' groups, in place one layer pair more) is
//! copied to the host and converted there; a restore copies the window back into both copies
//! of the pull scheme. The outlet velocities (kept per boundary-list entry on the GPU) are
//! mapped to cell numbers through the list.

use super::CudaFluid;
use crate::fluid::state::{self, window::Window, OutletVelocity, SmallState};
use crate::fluid::FluidError;
use crate::gpu::DriverContext;
use cudarc::driver::CudaSlice;
use murmur_common::lbm::Storage;
use std::ops::Range;

/// The boundary list's cells and the cells next to an outlet (ascending).
type OutletEntries = (Vec<u32>, Vec<u32>);

impl<S: Storage> CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
{
    /// Refuses a slab (its cells are not the global lattice's).
    fn whole(&self) -> Result<(), FluidError> {
        match self.halo {
            Some(_) => Err(state::unsupported("a rank's slab")),
            None => Ok(()),
        }
    }

    /// The window's ranges of `f`, copied to the host one after the other.
    fn download_window(&self, w: &Window) -> Result<Vec<S::Elem>, FluidError> {
        let mut host = vec![S::Elem::default(); w.len];
        for (r, at) in &w.ranges {
            self.gpu
                .stream
                .memcpy_dtoh(&self.lat.f.slice(r.clone()), &mut host[*at..*at + r.len()])
                .ctx("copying a state piece from the GPU")?;
        }
        self.gpu.synchronize()?;
        Ok(host)
    }

    pub(super) fn read_piece(&self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        self.whole()?;
        state::check_piece(self.params.lattice, S::KIND, &cells, out.len())?;
        let pops = self.now();
        let w = Window::of(&pops, cells.clone());
        let host = self.download_window(&w)?;
        state::gather(&pops, cells, |i| w.at(i).map(|k| host[k]), out)
    }

    pub(super) fn write_piece(
        &mut self,
        cells: Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        self.whole()?;
        state::check_piece(self.params.lattice, S::KIND, &cells, data.len())?;
        let pops = self.now();
        let w = Window::of(&pops, cells.clone());
        let mut host = self.download_window(&w)?;
        state::scatter(&pops, cells, data, |i, e| match w.at(i) {
            Some(k) => {
                host[k] = e;
                true
            }
            None => false,
        })?;
        let upload = |gpu: &crate::gpu::Gpu, dst: &mut CudaSlice<S::Elem>| {
            for (r, at) in &w.ranges {
                gpu.stream
                    .memcpy_htod(&host[*at..*at + r.len()], &mut dst.slice_mut(r.clone()))
                    .ctx("copying a state piece to the GPU")?;
            }
            Ok::<(), FluidError>(())
        };
        upload(&self.gpu, &mut self.lat.f)?;
        if let Some(next) = self.lat.f_next.as_mut() {
            upload(&self.gpu, next)?;
        }
        self.gpu.synchronize()?;
        self.lat.fields_step = None;
        Ok(())
    }

    /// The boundary list and the cells next to an outlet, ascending (`None` without outlet
    /// velocities).
    fn outlet_entries(&self) -> Result<Option<OutletEntries>, FluidError> {
        let count = self.lat.boundary_count as usize;
        if count == 0 || self.lat.outlet_u.len() < 3 * count {
            return Ok(None);
        }
        let flags = self.gpu.download(&self.lat.flags)?;
        let cells = state::outlet_cells(self.params.lattice, &flags);
        let list = self.gpu.download(&self.lat.boundary_cells)?;
        Ok(Some((list[..count].to_vec(), cells)))
    }

    pub(super) fn capture_small(&mut self) -> Result<SmallState, FluidError> {
        self.whole()?;
        let mut outlet_u = Vec::new();
        if let Some((list, cells)) = self.outlet_entries()? {
            let u = self.gpu.download(&self.lat.outlet_u)?;
            for (k, &cell) in list.iter().enumerate() {
                if cells.binary_search(&cell).is_ok() {
                    let u = [u[3 * k], u[3 * k + 1], u[3 * k + 2]];
                    outlet_u.push(OutletVelocity { cell, u });
                }
            }
            outlet_u.sort_by_key(|v| v.cell);
        }
        let step = self.step;
        let immersed = match self.ib.as_mut() {
            Some(ib) => Some(ib.capture(&self.gpu, step)?),
            None => None,
        };
        Ok(SmallState {
            lattice: self.params.lattice,
            model: self.model,
            storage: S::KIND,
            streaming: super::super::cpu::streaming_of::<S>(),
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
            super::super::cpu::streaming_of::<S>(),
        )?;
        let entries = self.outlet_entries()?;
        let cells = entries.as_ref().map_or(&[][..], |(_, c)| &c[..]);
        state::check_outlet_cells(&s.outlet_u, cells)?;
        let solids = self.ib.as_ref().map(|ib| ib.solid_states(s.step));
        let samples = self.ib.as_ref().map_or(0, |ib| ib.plan.body.len());
        state::check_immersed(
            s.immersed.as_ref(),
            solids.as_deref().map(|st| (st, samples)),
        )?;
        if let Some((list, _)) = entries {
            let mut u = self.gpu.download(&self.lat.outlet_u)?;
            for (k, &cell) in list.iter().enumerate() {
                if let Ok(j) = s.outlet_u.binary_search_by_key(&cell, |v| v.cell) {
                    u[3 * k..3 * k + 3].copy_from_slice(&s.outlet_u[j].u);
                }
            }
            self.gpu
                .stream
                .memcpy_htod(&u, &mut self.lat.outlet_u)
                .ctx("restoring the outlet velocities")?;
        }
        if let (Some(ib), Some(captured)) = (self.ib.as_mut(), s.immersed.as_ref()) {
            ib.restore(&self.gpu, captured)?;
        }
        self.gpu.synchronize()?;
        self.step = s.step;
        self.params.inlet_scale = s.inlet_scale;
        self.params.rates = s.rates;
        self.lat.fields_step = None;
        Ok(())
    }
}
