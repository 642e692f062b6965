//! The CUDA backend's fixed solids with interpolated bounce-back: the cut links on the device,
//! stage `wall_links` (`lbm_wall_links_*`, one thread per link) and a ring of per-step force
//! records read when forces are taken, as the immersed boundary keeps its own.

use super::BLOCK_SIZE;
use crate::fluid::forces::ForceSample;
use crate::fluid::ib::plan::RING_STEPS;
use crate::fluid::walls::Walls;
use crate::fluid::{FluidError, Setup};
use crate::gpu::{DriverContext, Gpu, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::lbm::links::{CutLink, WallLinks};
use murmur_common::lbm::{Populations, Storage};

/// The cut links on the device and the force ring.
pub(super) struct CudaWalls {
    walls: Walls,
    /// Force rows are numbered after the immersed solids'.
    first: usize,
    links: CudaSlice<CutLink>,
    /// [`RING_STEPS`] records, zero where no step has written.
    ring: CudaSlice<u64>,
    /// The steps whose records the ring holds, oldest first.
    pending: Vec<u64>,
    /// Rows read from a full ring and not yet taken.
    taken: Vec<ForceSample>,
}

impl CudaWalls {
    /// The walls of `setup` on `gpu`, if it has any.
    pub(super) fn new(gpu: &Gpu, setup: &Setup) -> Result<Option<CudaWalls>, FluidError> {
        if setup.walls.is_empty() {
            return Ok(None);
        }
        let walls = setup.walls.clone();
        let links = if walls.links.is_empty() {
            gpu.upload(&[CutLink::default()])?
        } else {
            gpu.upload(&walls.links)?
        };
        let ring = gpu.zeros::<u64>(RING_STEPS * walls.record_len())?;
        Ok(Some(CudaWalls {
            first: setup.immersed.solids.len(),
            walls,
            links,
            ring,
            pending: Vec::new(),
            taken: Vec::new(),
        }))
    }

    /// Bytes held on the device.
    pub(super) fn bytes(&self) -> u64 {
        (self.links.len() * std::mem::size_of::<CutLink>() + 8 * self.ring.len()) as u64
    }

    /// Before step `step`: a full ring is read first. Returns the step's record slot.
    pub(super) fn begin(&mut self, gpu: &Gpu) -> Result<u64, FluidError> {
        if self.pending.len() == RING_STEPS {
            self.drain(gpu)?;
        }
        Ok(self.pending.len() as u64)
    }

    /// Step `step`'s links are queued: its record becomes pending.
    pub(super) fn end(&mut self, step: u64) {
        self.pending.push(step);
    }

    /// Stage `wall_links` of the step whose populations are `pops`, reading and filling `f`
    /// (the copy the step reads), its forces into record `slot`.
    pub(super) fn fill<S: Storage>(
        &mut self,
        gpu: &Gpu,
        pops: Populations<S>,
        f: &mut CudaSlice<S::Elem>,
        slot: u64,
    ) -> Result<(), FluidError>
    where
        WallLinks<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let n = self.walls.links.len() as u64;
        if n == 0 {
            return Ok(());
        }
        let len = self.walls.record_len() as u64;
        let solids = self.walls.solids.len() as u32;
        let links = &self.links;
        // SAFETY: one thread per link (threads past the count add zeros); the links' cells are
        // fluid nodes of the lattice `f` holds; their writes and reads never meet
        // (`murmur_common::lbm::links`); `slot < RING_STEPS`, so the record lies in the ring.
        unsafe {
            gpu.launch().run(
                Shape::per_item(n, BLOCK_SIZE),
                (f, &mut self.ring),
                |l, (f, ring)| WallLinks::<S> {
                    pops,
                    links: l.read(links),
                    f: l.write(f),
                    record: l.write(ring).range(slot * len, len),
                    solids,
                    _pad: 0,
                },
            )
        }?;
        Ok(())
    }

    /// Reads the ring's pending records into rows (waits for the queued steps) and clears it.
    pub(super) fn drain(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let ring = gpu.download(&self.ring)?;
        let len = self.walls.record_len();
        for (i, &step) in self.pending.iter().enumerate() {
            let rows = self
                .walls
                .rows(self.first, step, &ring[i * len..(i + 1) * len]);
            self.taken.extend(rows);
        }
        self.pending.clear();
        gpu.stream
            .memset_zeros(&mut self.ring)
            .ctx("clearing the walls' force ring")?;
        Ok(())
    }

    /// Every row read so far, taken.
    pub(super) fn take(&mut self, gpu: &Gpu) -> Result<Vec<ForceSample>, FluidError> {
        self.drain(gpu)?;
        Ok(std::mem::take(&mut self.taken))
    }
}
