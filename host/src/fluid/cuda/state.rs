//! The CUDA backend's state capture and restore ([`crate::fluid::state`]): a piece's window of
//! the population buffer ([`Window`]: its cells' groups, in place one layer pair more) is
//! copied to the host and converted there; a restore copies the window back into both copies
//! of the pull scheme. The outlet velocities (kept per boundary-list entry on the GPU) are
//! mapped to cell numbers through the list. On a rank's slab the pieces' cells are its own
//! box's ([`crate::fluid::slab::state`]), the outlet cells local ones (the slab's adapter
//! numbers them globally), and a restore leaves the ghost layers to the next step's exchange.

use super::CudaFluid;
use crate::fluid::slab::state::piece_cells;
use crate::fluid::state::snapshot::{PieceSource, Snapshot};
use crate::fluid::state::{self, window::Window, OutletVelocity, SmallState};
use crate::fluid::FluidError;
use crate::gpu::DriverContext;
use cudarc::driver::CudaSlice;
use cudarc::driver::CudaStream;
use murmur_common::lbm::{Lattice, Populations, Storage};
use std::ops::Range;
use std::sync::Arc;

/// The boundary list's cells and the cells next to an outlet (ascending).
type OutletEntries = (Vec<u32>, Vec<u32>);

impl<S: Storage> CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
{
    /// Fills a slab's ghost layers from its neighbours' face layers (all of it, now: at the
    /// start and after a restore, where the step's own exchange has not run).
    pub(super) fn exchange_ghosts(&mut self) -> Result<(), FluidError> {
        let Some(halo) = self.halo.as_mut() else {
            return Ok(());
        };
        let pops = self.pops.at_step(self.step + 1);
        halo.fork(&self.gpu)?;
        halo.send(&self.gpu, &pops, &mut self.lat.f)?;
        halo.receive(&self.gpu, &pops, &mut self.lat.f)?;
        halo.join(&self.gpu)?;
        Ok(self
            .gpu
            .stream
            .synchronize()
            .ctx("the slab's ghost exchange")?)
    }

    /// The buffer's cells of piece `cells` (a slab's: of its own box, [`piece_cells`]) and
    /// the window of the population buffer that holds them.
    fn piece_window(
        &self,
        cells: &Range<usize>,
        bytes: usize,
    ) -> Result<(impl Iterator<Item = usize>, Window), FluidError> {
        let slab = self.halo.as_ref().map(|h| h.axis as usize);
        let (local, span) = piece_cells(self.params.lattice, slab, S::KIND, cells, bytes)?;
        Ok((local, Window::of(&self.now(), span)))
    }

    /// The window's ranges of `f`, copied to the host one after the other.
    fn download_window(&self, w: &Window) -> Result<Vec<S::Elem>, FluidError> {
        download_window(&self.gpu.stream, &self.lat.f, w)
    }

    /// A copy of the populations on the GPU (the whole lattice's, where free memory holds it
    /// with a margin; a slab's are read where they are), taken on the run's stream and read
    /// on a stream of its own.
    pub(super) fn snapshot_copy(&self) -> Result<Option<Snapshot>, FluidError> {
        let n = self.lat.f.len();
        let bytes = (n * std::mem::size_of::<S::Elem>()) as u64;
        let (free, _) = self.gpu.memory()?;
        if self.halo.is_some() || bytes + bytes / 20 + (1 << 30) > free {
            return Ok(None);
        }
        let stream = self.gpu.ctx.new_stream().ctx("a stream for the snapshot")?;
        let mut copy = self
            .gpu
            .stream
            .alloc_zeros::<S::Elem>(n)
            .ctx("the snapshot's buffer")?;
        self.gpu
            .stream
            .memcpy_dtod(&self.lat.f, &mut copy)
            .ctx("copying the populations to the snapshot")?;
        // The copy's stream reads it after the copy; the run's stream goes on at once (its
        // next step writes the other buffer of the pull scheme, or `f` after the copy).
        stream
            .join(&self.gpu.stream)
            .ctx("ordering the snapshot's reads after its copy")?;
        Ok(Some(Box::new(DeviceCopy::<S> {
            lattice: self.params.lattice,
            pops: self.now(),
            stream,
            f: copy,
        })))
    }

    pub(super) fn read_piece(&self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        let (local, w) = self.piece_window(&cells, out.len())?;
        let host = self.download_window(&w)?;
        state::gather(&self.now(), local, |i| w.at(i).map(|k| host[k]), out)
    }

    pub(super) fn write_piece(
        &mut self,
        cells: Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        let (local, w) = self.piece_window(&cells, data.len())?;
        let mut host = self.download_window(&w)?;
        state::scatter(&self.now(), local, data, |i| w.at(i), &mut host)?;
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
        // The ghost layers now lag the owned cells: the next step exchanges them first.
        self.stale_ghosts = self.halo.is_some();
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
        let comm = self.comm();
        // A band for pushes alone holds no state between steps.
        let immersed = match self.ib.as_mut().filter(|ib| ib.plan.has_samples()) {
            // The pending records are summed over a slab's ranks (collective).
            Some(ib) => Some(ib.capture(&self.gpu, step, comm.as_deref())?),
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
            // On a slab: local cells, the ghost layers' included ([`crate::fluid::slab`]
            // keeps the owned ones).
            band: match &self.ib {
                Some(ib) => ib.band_forces(&self.gpu)?,
                None => Vec::new(),
            },
            velocity: match &self.lat.velocity {
                Some(v) => self.gpu.download(&v[(step & 1) as usize])?,
                None => Vec::new(),
            },
        })
    }

    pub(super) fn restore_small(&mut self, s: &SmallState) -> Result<(), FluidError> {
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
        let velocity_len = self.lat.velocity.as_ref().map_or(0, |v| v[0].len());
        state::check_velocity(&s.velocity, velocity_len)?;
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
        if let Some(v) = self.lat.velocity.as_mut() {
            self.gpu
                .stream
                .memcpy_htod(&s.velocity, &mut v[(s.step & 1) as usize])
                .ctx("restoring the WALE velocity field")?;
        }
        if let (Some(ib), Some(captured)) = (self.ib.as_mut(), s.immersed.as_ref()) {
            ib.restore(&self.gpu, captured)?;
        }
        // The band's force for the fields; a band for pushes alone is made later (when what
        // pushes opens), which puts it back then.
        self.kept_band = s.band.clone();
        if let Some(ib) = self.ib.as_mut() {
            ib.set_band(&self.gpu, &s.band)?;
        }
        self.gpu.synchronize()?;
        self.step = s.step;
        self.params.inlet_scale = s.inlet_scale;
        self.params.rates = s.rates;
        self.lat.fields_step = None;
        Ok(())
    }
}

/// The window's ranges of `f`, copied to the host on `stream` one after the other.
fn download_window<T>(
    stream: &Arc<CudaStream>,
    f: &CudaSlice<T>,
    w: &Window,
) -> Result<Vec<T>, FluidError>
where
    T: cudarc::driver::DeviceRepr + Default + Clone,
{
    let mut host = vec![T::default(); w.len];
    for (r, at) in &w.ranges {
        stream
            .memcpy_dtoh(&f.slice(r.clone()), &mut host[*at..*at + r.len()])
            .ctx("copying a state piece from the GPU")?;
    }
    stream
        .synchronize()
        .ctx("copying a state piece from the GPU")?;
    Ok(host)
}

/// The populations copied on the GPU between two steps ([`CudaFluid::snapshot_copy`]), read
/// on a stream of their own; freed on it when dropped.
struct DeviceCopy<S: Storage> {
    lattice: Lattice,
    pops: Populations<S>,
    stream: Arc<CudaStream>,
    f: CudaSlice<S::Elem>,
}

impl<S: Storage> PieceSource for DeviceCopy<S>
where
    S::Elem: cudarc::driver::DeviceRepr,
{
    fn read_piece(&mut self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        let (local, span) = piece_cells(self.lattice, None, S::KIND, &cells, out.len())?;
        let w = Window::of(&self.pops, span);
        let host = download_window(&self.stream, &self.f, &w)?;
        state::gather(&self.pops, local, |i| w.at(i).map(|k| host[k]), out)
    }
}
