//! The CUDA backend's immersed-boundary stages: the band's and the samples' device buffers and
//! one method per [`FluidStage`](crate::fluid::plan::FluidStage) of the immersed boundary, the
//! kernels of `murmur_common::lbm::immersed` and `murmur_common::lbm::gather`.

use super::BLOCK_SIZE;
use crate::fluid::cpu::band_overflow;
use crate::fluid::forces::ForceSample;
use crate::fluid::ib::plan::{IbPlan, RecordRing, RING_STEPS};
use crate::fluid::FluidError;
use crate::gpu::scan::CellScan;
use crate::gpu::{Gpu, Launch, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{
    Bins, IbBin, IbClear, IbForce, IbGather, IbMark, IbPlace, IbUpdate, IbVelocity, SampleSet,
    Solids, BIN_BLOCK, RECORD_FLOATS, SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::ib::band::{counter, pass_len, pool_len, BandMut, BandRef};
use murmur_common::lbm::ib::stages::clear_items;
use murmur_common::lbm::{LbmParams, Populations, Storage};
use murmur_common::{DevSlice, DevSliceMut};

/// The immersed boundary's device buffers (see [`IbPlan`]).
pub(super) struct CudaIb {
    pub(super) plan: IbPlan,
    body: CudaSlice<[f32; 4]>,
    solid_of: CudaSlice<u32>,
    pub(super) sample_force: CudaSlice<f32>,
    table: CudaSlice<u32>,
    brick_of: CudaSlice<u32>,
    pool: CudaSlice<f32>,
    pass: CudaSlice<u64>,
    counter: CudaSlice<u32>,
    /// [`RING_STEPS`] force records.
    ring: CudaSlice<u64>,
    records: RecordRing,
    /// Rows read from a full ring and not yet taken.
    pub(super) taken: Vec<ForceSample>,
    /// The gather's buffers (`None` for the scatter).
    gather: Option<CudaGather>,
    /// The step being taken: its record slot and the solids' states.
    now: Now,
}

/// What every stage of one step reads: the ring slot of its force record and the solids' states.
#[derive(Clone, Copy, Default)]
struct Now {
    slot: u64,
    solids: Solids,
}

/// The gather's device buffers (see `murmur_common::lbm::gather`).
struct CudaGather {
    bins: Bins,
    key: CudaSlice<u32>,
    rank: CudaSlice<u32>,
    list: CudaSlice<u32>,
    at: CudaSlice<[f32; 4]>,
    force: CudaSlice<[f32; 4]>,
    /// Zero between steps: the scan zeroes them as it reads them.
    counts: CudaSlice<u32>,
    starts: CudaSlice<u32>,
    scan: CellScan,
}

impl CudaGather {
    fn new(gpu: &Gpu, bins: Bins, samples: usize) -> Result<CudaGather, FluidError> {
        let m = bins.entries();
        Ok(CudaGather {
            bins,
            key: gpu.zeros(samples)?,
            rank: gpu.zeros(samples)?,
            list: gpu.zeros(samples)?,
            at: gpu.zeros(samples)?,
            force: gpu.zeros(samples)?,
            counts: gpu.zeros(m)?,
            starts: gpu.zeros(m)?,
            scan: CellScan::new(gpu, m as u32)?,
        })
    }
}

/// The lattice buffers an immersed-boundary stage reads.
pub(super) struct LatticeRef<'a, S: Storage> {
    pub p: &'a LbmParams,
    pub pops: Populations<S>,
    pub flags: &'a CudaSlice<u8>,
    pub f: &'a CudaSlice<S::Elem>,
}

impl CudaIb {
    pub(super) fn new(gpu: &Gpu, plan: IbPlan) -> Result<CudaIb, FluidError> {
        gpu.check_fits(
            "the immersed boundary's buffers",
            plan.bytes()
                + plan
                    .bins
                    .map_or(0, |b| CellScan::bytes_needed(b.entries() as u32)),
        )?;
        Ok(CudaIb {
            gather: match plan.bins {
                Some(b) => Some(CudaGather::new(gpu, b, plan.body.len())?),
                None => None,
            },
            body: gpu.upload(&plan.body)?,
            solid_of: gpu.upload(&plan.solid_of)?,
            sample_force: gpu.zeros(3 * plan.body.len())?,
            table: gpu.zeros(plan.bricks.count())?,
            brick_of: gpu.zeros(plan.capacity as usize)?,
            pool: gpu.zeros(pool_len(plan.capacity))?,
            pass: gpu.zeros(pass_len(plan.capacity))?,
            counter: gpu.zeros(counter::WORDS)?,
            ring: gpu.zeros(RING_STEPS * RECORD_FLOATS)?,
            records: RecordRing::default(),
            taken: Vec::new(),
            now: Now::default(),
            plan,
        })
    }

    /// Whether the samples are gathered by bins.
    pub(super) fn gathers(&self) -> bool {
        self.gather.is_some()
    }

    /// Reads the ring's pending records (waits for the queued steps); on a slab, summed over
    /// every rank (collective: every rank drains at the same step).
    pub(super) fn drain(
        &mut self,
        gpu: &Gpu,
        comm: Option<&dyn crate::ranks::Comm>,
    ) -> Result<(), FluidError> {
        if self.records.pending.is_empty() {
            return Ok(());
        }
        let mut ring = gpu.download(&self.ring)?;
        if let Some(comm) = comm {
            let n = self.records.pending_values();
            crate::fluid::slab::sum_records(comm, &mut ring[..n])?;
        }
        let rows = self.records.drain(&self.plan, &ring);
        self.taken.extend(rows);
        Ok(())
    }

    /// Fails when a claim found the band's pool full.
    pub(super) fn check_overflow(&self, gpu: &Gpu) -> Result<(), FluidError> {
        let c = gpu.download(&self.counter)?;
        if c[counter::OVERFLOW] != 0 {
            return Err(band_overflow(self.plan.capacity));
        }
        Ok(())
    }

    /// The band's views in launch `l`, written.
    pub(super) fn band(&mut self, l: &mut Launch<'_>) -> BandMut {
        BandMut {
            bricks: self.plan.bricks,
            capacity: self.plan.capacity,
            _pad: 0,
            table: l.write(&mut self.table),
            brick_of: l.write(&mut self.brick_of),
            pool: l.write(&mut self.pool),
            pass: l.write(&mut self.pass),
            counter: l.write(&mut self.counter),
        }
    }

    /// The band's force for the lattice kernels in launch `l`, read.
    pub(super) fn band_ref(&self, l: &mut Launch<'_>) -> BandRef {
        BandRef::new(self.plan.bricks, l.read(&self.table), l.read(&self.pool))
    }

    /// Step `step` begins: a full ring is drained first (summed over `comm`'s ranks on a slab),
    /// then its record slot and the solids' states are fixed for every stage of the step.
    pub(super) fn begin(
        &mut self,
        gpu: &Gpu,
        step: u64,
        comm: Option<&dyn crate::ranks::Comm>,
    ) -> Result<(), FluidError> {
        if self.records.next_slot().is_none() {
            self.drain(gpu, comm)?;
        }
        self.now = Now {
            slot: self.records.next_slot().unwrap_or(0) as u64,
            solids: self.plan.states(step),
        };
        Ok(())
    }

    /// Step `step`'s stages are queued: its record becomes pending.
    pub(super) fn end(&mut self, step: u64) {
        self.records.pending.push(step);
    }

    /// This step's force record in the ring.
    fn record(&mut self, l: &mut Launch<'_>) -> DevSliceMut<u64> {
        let slot = self.now.slot;
        // SAFETY: `slot < RING_STEPS`, so the record lies inside the ring.
        unsafe {
            l.write(&mut self.ring)
                .range(slot * RECORD_FLOATS as u64, RECORD_FLOATS as u64)
        }
    }

    fn samples(&self, l: &mut Launch<'_>) -> SampleSet {
        SampleSet {
            body: l.read(&self.body),
            solid: l.read(&self.solid_of),
        }
    }

    fn n_samples(&self) -> u64 {
        self.plan.body.len() as u64
    }

    /// Stage `ib_clear`.
    pub(super) fn clear(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let mut l = gpu.launch();
        let a = IbClear {
            table: l.write(&mut self.table),
            counter: l.write(&mut self.counter),
            record: self.record(&mut l),
        };
        // SAFETY: one thread per element of the cleared buffers.
        unsafe { l.run(a, Shape::per_item(clear_items(&a), BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_mark`.
    pub(super) fn mark(&mut self, gpu: &Gpu, flags: &CudaSlice<u8>) -> Result<(), FluidError> {
        let mut l = gpu.launch();
        let a = IbMark {
            domain: self.plan.domain,
            flags: l.read(flags),
            samples: self.samples(&mut l),
            band: self.band(&mut l),
            solids: self.now.solids,
        };
        // SAFETY: one thread per sample; claims are atomic.
        unsafe { l.run(a, Shape::per_item(self.n_samples(), BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_bin` (gather only).
    pub(super) fn bin(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let n = self.n_samples();
        let (domain, solids) = (self.plan.domain, self.now.solids);
        let mut l = gpu.launch();
        let samples = self.samples(&mut l);
        let band = self.band(&mut l);
        let Some(g) = self.gather.as_mut() else {
            return Ok(());
        };
        let a = IbBin {
            domain,
            bins: g.bins,
            samples,
            band,
            counts: l.write(&mut g.counts),
            key: l.write(&mut g.key),
            rank: l.write(&mut g.rank),
            solids,
        };
        // SAFETY: one thread per sample; the counts are zero (the previous scan left them so)
        // and raised atomically.
        unsafe { l.run(a, Shape::per_item(n, BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_scan` (gather only).
    pub(super) fn scan(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let Some(g) = self.gather.as_mut() else {
            return Ok(());
        };
        let m = g.bins.entries() as u32;
        g.scan.run(gpu, &mut g.counts, &mut g.starts, m, false)?;
        Ok(())
    }

    /// Stage `ib_place` (gather only).
    pub(super) fn place(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let n = self.n_samples();
        let Some(g) = self.gather.as_mut() else {
            return Ok(());
        };
        let mut l = gpu.launch();
        let a = IbPlace {
            key: l.read(&g.key),
            rank: l.read(&g.rank),
            starts: l.read(&g.starts),
            list: l.write(&mut g.list),
        };
        // SAFETY: one thread per sample; keys and ranks are a permutation's places.
        unsafe { l.run(a, Shape::per_item(n, BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_velocity`.
    pub(super) fn velocity<S: Storage>(
        &mut self,
        gpu: &Gpu,
        lat: LatticeRef<'_, S>,
    ) -> Result<(), FluidError>
    where
        IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let items = self.plan.band_items();
        let mut l = gpu.launch();
        let a = IbVelocity {
            p: *lat.p,
            pops: lat.pops,
            flags: l.read(lat.flags),
            f: l.read(lat.f),
            band: self.band(&mut l),
        };
        // SAFETY: one thread per band cell, each writing its own values.
        unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_band_halo` (a slab's): the band values of the face layers the solids reach
    /// this step exchanged with the neighbours.
    pub(super) fn band_halo<S: Storage>(
        &mut self,
        gpu: &Gpu,
        halo: &mut crate::fluid::slab::CudaHalo<S>,
        p: &LbmParams,
        step: u64,
    ) -> Result<(), FluidError> {
        let faces = self.plan.faces_reached(step);
        halo.exchange_band(gpu, &p.lattice, faces, |l| self.band(l))
    }

    /// Stage `ib_force`, forcing pass `pass`.
    pub(super) fn force(
        &mut self,
        gpu: &Gpu,
        flags: &CudaSlice<u8>,
        pass: u32,
    ) -> Result<(), FluidError> {
        let n = self.n_samples();
        let (domain, passes, solids) = (self.plan.domain, self.plan.passes, self.now.solids);
        let mut l = gpu.launch();
        let band = self.band(&mut l);
        let samples = self.samples(&mut l);
        let record = self.record(&mut l);
        let sample_force = l.write(&mut self.sample_force);
        let (spread, order, at, force) = match self.gather.as_mut() {
            None => (
                SPREAD_SCATTER,
                DevSlice::empty(),
                DevSliceMut::empty(),
                DevSliceMut::empty(),
            ),
            Some(g) => (
                SPREAD_STORE,
                if g.bins.kind == BIN_BLOCK {
                    l.read(&g.list)
                } else {
                    DevSlice::empty()
                },
                l.write(&mut g.at),
                l.write(&mut g.force),
            ),
        };
        let a = IbForce {
            domain,
            pass,
            passes,
            spread,
            _pad: 0,
            flags: l.read(flags),
            samples,
            order,
            band,
            record,
            sample_force,
            at,
            force,
            solids,
        };
        // SAFETY: one thread per sample (whole warps take part in the reduction); shared values
        // are added atomically; `order` is a permutation of the samples.
        unsafe { l.run(a, Shape::per_item(n, BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_gather` (gather only).
    pub(super) fn gather(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let items = self.plan.band_items();
        let domain = self.plan.domain;
        let mut l = gpu.launch();
        let band = self.band(&mut l);
        let Some(g) = self.gather.as_ref() else {
            return Ok(());
        };
        let a = IbGather {
            domain,
            bins: g.bins,
            band,
            starts: l.read(&g.starts),
            list: if g.bins.kind == BIN_BLOCK {
                DevSlice::empty()
            } else {
                l.read(&g.list)
            },
            at: l.read(&g.at),
            force: l.read(&g.force),
        };
        // SAFETY: one thread per band cell, each updating its own values from the samples
        // `ib_force` stored.
        unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
        Ok(())
    }

    /// Stage `ib_update` (scatter only).
    pub(super) fn update(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let items = self.plan.band_items();
        let mut l = gpu.launch();
        let a = IbUpdate {
            band: self.band(&mut l),
        };
        // SAFETY: one thread per band cell.
        unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
        Ok(())
    }
}
