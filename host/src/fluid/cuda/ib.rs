//! The CUDA backend's immersed-boundary stages: the band's and the samples' device buffers and
//! one method per [`FluidStage`](crate::fluid::plan::FluidStage) of the immersed boundary, the
//! kernels of `murmur_common::lbm::ib::stages` and `murmur_common::lbm::ib::gather`.

use super::BLOCK_SIZE;
use crate::fluid::cpu::band_overflow;
use crate::fluid::forces::ForceSample;
use crate::fluid::ib::plan::{band_forces, band_of, BandForce, IbPlan, RecordRing, RING_STEPS};
use crate::fluid::ib::spread::IbSpread;
use crate::fluid::FluidError;
use crate::gpu::scan::CellScan;
use crate::gpu::{DriverContext, Gpu, Shape, Views};
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{
    Bins, ForceShared, GatherShared, IbBin, IbClear, IbForce, IbForceBins, IbGather, IbMark,
    IbPlace, IbUpdate, IbVelocity, SampleSet, Solids, BIN_BLOCK, FORCE_BLOCK, FORCE_RUN,
    GATHER_BLOCK, RECORD_FLOATS, SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::ib::band::{counter, pass_len, pool_len, BandMut, BandRef};
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::{LbmParams, Populations, Storage};
use murmur_common::{DevSlice, DevSliceMut};

/// Threads per SM of the band stages' grid-stride launches ([`CudaIb::band_shape`]): a full
/// SM of sm_80 and sm_90.
const BAND_THREADS_PER_SM: u64 = 2048;

/// The immersed boundary's device buffers (see [`IbPlan`]).
pub(super) struct CudaIb {
    pub(super) plan: IbPlan,
    body: CudaSlice<[f32; 4]>,
    solid_of: CudaSlice<u32>,
    pub(super) sample_force: CudaSlice<f32>,
    pub(super) band: BandBuffers,
    /// [`RING_STEPS`] force records.
    ring: CudaSlice<u64>,
    records: RecordRing,
    /// Rows read from a full ring and not yet taken.
    pub(super) taken: Vec<ForceSample>,
    /// The gather's buffers (`None` for the scatter).
    gather: Option<CudaGather>,
    /// The step being taken: its record slot and the solids' states.
    now: Now,
    /// The band was restored ([`CudaIb::set_band`]) and no step has run since.
    restored: bool,
}

/// The arguments of `ib_gather` (the block gather stores its samples in bin order: no list).
fn gather_args<'b>(
    l: &mut Views<'b>,
    band: &'b mut BandBuffers,
    domain: Domain,
    g: &'b CudaGather,
) -> IbGather {
    IbGather {
        domain,
        bins: g.bins,
        band: band.views(l),
        starts: l.read(&g.starts),
        list: if g.bins.kind == BIN_BLOCK {
            DevSlice::empty()
        } else {
            l.read(&g.list)
        },
        at: l.read(&g.at),
        force: l.read(&g.force),
    }
}

/// What every stage of one step reads: the ring slot of its force record and the solids' states.
#[derive(Clone, Copy, Default)]
struct Now {
    slot: u64,
    solids: Solids,
}

/// The band's device buffers (see `murmur_common::lbm::ib::band`).
pub(crate) struct BandBuffers {
    bricks: murmur_common::lbm::ib::band::Bricks,
    capacity: u32,
    table: CudaSlice<u32>,
    brick_of: CudaSlice<u32>,
    pool: CudaSlice<f32>,
    pass: CudaSlice<u64>,
    counter: CudaSlice<u32>,
    reach: CudaSlice<u64>,
}

impl BandBuffers {
    fn new(gpu: &Gpu, plan: &IbPlan) -> Result<BandBuffers, FluidError> {
        Ok(BandBuffers {
            bricks: plan.bricks,
            capacity: plan.capacity,
            table: gpu.zeros(plan.bricks.count())?,
            brick_of: gpu.zeros(plan.capacity as usize)?,
            pool: gpu.zeros(pool_len(plan.capacity))?,
            pass: gpu.zeros(pass_len(plan.capacity))?,
            counter: gpu.zeros(counter::WORDS)?,
            reach: gpu.zeros(plan.bricks.count())?,
        })
    }

    /// The band's views in a launch, written.
    pub(crate) fn views<'b>(&'b mut self, l: &mut Views<'b>) -> BandMut {
        BandMut {
            bricks: self.bricks,
            capacity: self.capacity,
            _pad: 0,
            table: l.write(&mut self.table),
            brick_of: l.write(&mut self.brick_of),
            pool: l.write(&mut self.pool),
            pass: l.write(&mut self.pass),
            counter: l.write(&mut self.counter),
            reach: l.write(&mut self.reach),
        }
    }
}

/// This step's force record in the ring.
fn record<'b>(l: &mut Views<'b>, ring: &'b mut CudaSlice<u64>, slot: u64) -> DevSliceMut<u64> {
    // SAFETY: `slot < RING_STEPS`, so the record lies inside the ring.
    unsafe {
        l.write(ring)
            .range(slot * RECORD_FLOATS as u64, RECORD_FLOATS as u64)
    }
}

/// The gather's device buffers (see `murmur_common::lbm::ib::gather`).
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
    /// The bins of `samples` samples; `stored`: the samples' positions and forces for
    /// `ib_gather` (not for the binned scatter).
    fn new(gpu: &Gpu, bins: Bins, samples: usize, stored: bool) -> Result<CudaGather, FluidError> {
        let m = bins.entries();
        let kept = if stored { samples } else { 0 };
        Ok(CudaGather {
            bins,
            key: gpu.zeros(samples)?,
            rank: gpu.zeros(samples)?,
            list: gpu.zeros(samples)?,
            at: gpu.zeros(kept)?,
            force: gpu.zeros(kept)?,
            counts: gpu.zeros(m)?,
            starts: gpu.zeros(m)?,
            scan: CellScan::new(gpu, m as u32)?,
        })
    }
}

/// `data` on the device, or one zero element when it is empty (no zero-sized allocations).
fn upload_or_one<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
    gpu: &Gpu,
    data: &[T],
) -> Result<CudaSlice<T>, FluidError> {
    Ok(if data.is_empty() {
        gpu.zeros(1)?
    } else {
        gpu.upload(data)?
    })
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
                Some(b) => Some(CudaGather::new(
                    gpu,
                    b,
                    plan.body.len(),
                    plan.spread.gathers(),
                )?),
                None => None,
            },
            body: upload_or_one(gpu, &plan.body)?,
            solid_of: upload_or_one(gpu, &plan.solid_of)?,
            sample_force: gpu.zeros(3 * plan.body.len())?,
            band: BandBuffers::new(gpu, &plan)?,
            ring: gpu.zeros(RING_STEPS * RECORD_FLOATS)?,
            records: RecordRing::default(),
            restored: false,
            taken: Vec::new(),
            now: Now::default(),
            plan,
        })
    }

    /// Room for `most` pushes per step: the band's pool grows (it is rebuilt every step, so
    /// nothing is lost between steps), and the gather's bins with it.
    pub(super) fn enable_pushes(&mut self, gpu: &Gpu, most: u32) -> Result<(), FluidError> {
        let plan = self.plan.clone().with_pushes(most);
        gpu.check_fits(
            "the band grown for pushes",
            plan.bytes().saturating_sub(self.plan.bytes()),
        )?;
        self.band = BandBuffers::new(gpu, &plan)?;
        if let Some(b) = plan.bins {
            self.gather = Some(CudaGather::new(
                gpu,
                b,
                plan.body.len(),
                plan.spread.gathers(),
            )?);
        }
        self.plan = plan;
        Ok(())
    }

    /// The band's force of the last step, per cell where it is not zero (waits for the
    /// queued steps).
    pub(super) fn band_forces(&self, gpu: &Gpu) -> Result<Vec<BandForce>, FluidError> {
        let pool = match self.pool_forces() {
            true => Some(gpu.download(&self.band.pool)?),
            false => None,
        };
        let pass = match self.plan.pushes {
            0 => None,
            _ => Some(gpu.download(&self.band.pass)?),
        };
        Ok(band_forces(
            &self.plan.bricks,
            self.plan.capacity,
            &gpu.download(&self.band.counter)?,
            &gpu.download(&self.band.brick_of)?,
            pool.as_deref(),
            pass.as_deref(),
        ))
    }

    /// Whether the pool's force values hold the band's force: the samples ran, or the band
    /// was restored and no step has run since.
    fn pool_forces(&self) -> bool {
        self.plan.has_samples() || self.restored
    }

    /// The band as a step that left `forces` would (for the fields until the next step).
    pub(super) fn set_band(&mut self, gpu: &Gpu, forces: &[BandForce]) -> Result<(), FluidError> {
        let Some((table, brick_of, pool, counter)) =
            band_of(&self.plan.bricks, self.plan.capacity, forces)
        else {
            return Err(band_overflow(self.plan.capacity));
        };
        let b = &mut self.band;
        let s = &gpu.stream;
        s.memcpy_htod(&table, &mut b.table)
            .ctx("restoring the band")?;
        s.memcpy_htod(&brick_of, &mut b.brick_of.slice_mut(..brick_of.len()))
            .ctx("restoring the band")?;
        s.memcpy_htod(&pool, &mut b.pool.slice_mut(..pool.len()))
            .ctx("restoring the band")?;
        s.memcpy_htod(&counter, &mut b.counter)
            .ctx("restoring the band")?;
        s.memset_zeros(&mut b.pass).ctx("restoring the band")?;
        self.restored = true;
        Ok(())
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

    /// How full the band was at the last step (waits for the queued steps).
    pub(super) fn band_stats(
        &self,
        gpu: &Gpu,
    ) -> Result<crate::fluid::ib::plan::BandStats, FluidError> {
        let counter = gpu.download(&self.band.counter)?;
        let reach = gpu.download(&self.band.reach)?;
        Ok(crate::fluid::ib::plan::BandStats::new(
            self.plan.capacity,
            &counter,
            &reach,
        ))
    }

    /// Fails when a claim found the band's pool full.
    pub(super) fn check_overflow(&self, gpu: &Gpu) -> Result<(), FluidError> {
        let c = gpu.download(&self.band.counter)?;
        if c[counter::OVERFLOW] != 0 {
            return Err(band_overflow(self.plan.capacity));
        }
        Ok(())
    }

    /// The band's force for the lattice kernels in a launch, read.
    pub(super) fn band_ref<'b>(&'b self, l: &mut Views<'b>) -> BandRef {
        let band = BandRef::new(
            self.plan.bricks,
            l.read(&self.band.table),
            l.read(&self.band.pool),
        );
        match self.plan.pushes {
            0 => band,
            _ => band.with_pushes(l.read(&self.band.pass), self.pool_forces()),
        }
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

    /// What the stages of the step [`CudaIb::begin`] fixed take by value: its record slot and
    /// the solids' states.
    pub(super) fn graph_key(&self) -> super::graph::IbKey {
        super::graph::IbKey {
            slot: self.now.slot,
            solids: self.now.solids,
            pushes: 0,
        }
    }

    fn n_samples(&self) -> u64 {
        self.plan.body.len() as u64
    }

    /// The launch of a stage over the band's cells: its kernel loops grid-stride over the
    /// cells of the slots in use (a count on the device), so the grid is what the GPU holds at
    /// once ([`BAND_THREADS_PER_SM`] threads per SM), or the whole pool if that is smaller, not one
    /// thread per cell of a pool sized for the solids' bounding boxes.
    pub(super) fn band_shape(&self, gpu: &Gpu) -> Shape {
        let resident = BAND_THREADS_PER_SM * gpu.sm_count as u64;
        Shape::per_item(self.plan.band_items().min(resident), BLOCK_SIZE)
    }

    /// Stage `ib_clear`.
    pub(super) fn clear(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let items = (self.band.table.len())
            .max(RECORD_FLOATS)
            .max(self.band.counter.len())
            .max(self.band.reach.len()) as u64;
        let slot = self.now.slot;
        let b = &mut self.band;
        let writes = (&mut b.table, &mut b.counter, &mut b.reach, &mut self.ring);
        // SAFETY: one thread per element of the cleared buffers (the longest of the four).
        unsafe {
            gpu.launch().run(
                Shape::per_item(items, BLOCK_SIZE),
                writes,
                |l, (table, counter, reach, ring)| IbClear {
                    table: l.write(table),
                    counter: l.write(counter),
                    record: record(l, ring, slot),
                    reach: l.write(reach),
                },
            )
        }?;
        // The last step's pushes' sums (the samples' passes zero theirs as they go).
        if self.plan.pushes > 0 {
            gpu.stream
                .memset_zeros(&mut self.band.pass)
                .ctx("clearing the pushes' sums")?;
        }
        self.restored = false;
        Ok(())
    }

    /// Stage `ib_mark`.
    pub(super) fn mark(&mut self, gpu: &Gpu, flags: &CudaSlice<u8>) -> Result<(), FluidError> {
        let shape = Shape::per_item(self.n_samples(), BLOCK_SIZE);
        let (domain, solids) = (self.plan.domain, self.now.solids);
        let (body, solid) = (&self.body, &self.solid_of);
        // SAFETY: one thread per sample; claims are atomic.
        unsafe {
            gpu.launch().run(shape, &mut self.band, |l, band| IbMark {
                domain,
                flags: l.read(flags),
                samples: SampleSet {
                    body: l.read(body),
                    solid: l.read(solid),
                },
                band: band.views(l),
                solids,
            })
        }?;
        Ok(())
    }

    /// Stage `ib_bin` (gather only).
    pub(super) fn bin(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let shape = Shape::per_item(self.n_samples(), BLOCK_SIZE);
        let (domain, solids) = (self.plan.domain, self.now.solids);
        let (body, solid) = (&self.body, &self.solid_of);
        let Some(g) = self.gather.as_mut() else {
            return Ok(());
        };
        let bins = g.bins;
        let writes = (&mut self.band, &mut g.counts, &mut g.key, &mut g.rank);
        // SAFETY: one thread per sample; the counts are zero (the previous scan left them so)
        // and raised atomically.
        unsafe {
            gpu.launch()
                .run(shape, writes, |l, (band, counts, key, rank)| IbBin {
                    domain,
                    bins,
                    samples: SampleSet {
                        body: l.read(body),
                        solid: l.read(solid),
                    },
                    band: band.views(l),
                    counts: l.write(counts),
                    key: l.write(key),
                    rank: l.write(rank),
                    solids,
                })
        }?;
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
        let shape = Shape::per_item(self.n_samples(), BLOCK_SIZE);
        let Some(g) = self.gather.as_mut() else {
            return Ok(());
        };
        let (key, rank, starts) = (&g.key, &g.rank, &g.starts);
        // SAFETY: one thread per sample; keys and ranks are a permutation's places.
        unsafe {
            gpu.launch().run(shape, &mut g.list, |l, list| IbPlace {
                key: l.read(key),
                rank: l.read(rank),
                starts: l.read(starts),
                list: l.write(list),
            })
        }?;
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
        let shape = self.band_shape(gpu);
        // SAFETY: each band cell handled by one thread (grid-stride), writing its own values.
        unsafe {
            gpu.launch()
                .run(shape, &mut self.band, |l, band| IbVelocity {
                    p: *lat.p,
                    pops: lat.pops,
                    flags: l.read(lat.flags),
                    f: l.read(lat.f),
                    band: band.views(l),
                })
        }?;
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
        halo.exchange_band(gpu, &p.lattice, faces, &mut self.band)
    }

    /// Stage `ib_force`, forcing pass `pass`.
    pub(super) fn force(
        &mut self,
        gpu: &Gpu,
        flags: &CudaSlice<u8>,
        pass: u32,
    ) -> Result<(), FluidError> {
        if self.plan.spread == IbSpread::Binned {
            return self.force_bins(gpu, flags, pass);
        }
        let shape = Shape::per_item(self.n_samples(), FORCE_BLOCK).shared_of::<ForceShared>();
        let (domain, passes, solids, slot) = (
            self.plan.domain,
            self.plan.passes,
            self.now.solids,
            self.now.slot,
        );
        let (body, solid) = (&self.body, &self.solid_of);
        let (spread, order, gather_writes) = match self.gather.as_mut() {
            None => (SPREAD_SCATTER, None, None),
            Some(g) => (
                SPREAD_STORE,
                (g.bins.kind == BIN_BLOCK).then_some(&g.list),
                Some((&mut g.at, &mut g.force)),
            ),
        };
        let writes = (
            &mut self.band,
            &mut self.ring,
            &mut self.sample_force,
            gather_writes,
        );
        // SAFETY: one thread per sample in blocks of `FORCE_BLOCK` with a `ForceShared` (whole
        // blocks take part in the reductions); shared values are added atomically; `order` is a
        // permutation of the samples.
        unsafe {
            gpu.launch()
                .run(shape, writes, |l, (band, ring, sample_force, gather)| {
                    let (at, force) = match gather {
                        Some((at, force)) => (l.write(at), l.write(force)),
                        None => (DevSliceMut::empty(), DevSliceMut::empty()),
                    };
                    IbForce {
                        domain,
                        pass,
                        passes,
                        spread,
                        _pad: 0,
                        flags: l.read(flags),
                        samples: SampleSet {
                            body: l.read(body),
                            solid: l.read(solid),
                        },
                        order: order.map_or(DevSlice::empty(), |o| l.read(o)),
                        band: band.views(l),
                        record: record(l, ring, slot),
                        sample_force: l.write(sample_force),
                        at,
                        force,
                        solids,
                    }
                })
        }?;
        Ok(())
    }

    /// Stage `ib_force` of the binned scatter (`ib_force_bins`), forcing pass `pass`: runs of
    /// [`FORCE_RUN`] entries of the sorted sample list, grid-stride.
    fn force_bins(
        &mut self,
        gpu: &Gpu,
        flags: &CudaSlice<u8>,
        pass: u32,
    ) -> Result<(), FluidError> {
        let resident = BAND_THREADS_PER_SM * gpu.sm_count as u64;
        let runs = self.n_samples().div_ceil(FORCE_RUN as u64);
        let shape = Shape::per_item(runs.min(resident), BLOCK_SIZE);
        let (domain, passes, solids, slot) = (
            self.plan.domain,
            self.plan.passes,
            self.now.solids,
            self.now.slot,
        );
        let (body, solid) = (&self.body, &self.solid_of);
        let Some(g) = self.gather.as_ref() else {
            return Ok(());
        };
        let writes = (&mut self.band, &mut self.ring, &mut self.sample_force);
        // SAFETY: each run of the list handled by one thread (grid-stride, whole warps: the
        // warps' record sums); shared values are added atomically; `list` holds every sample
        // once (this step's counting sort).
        unsafe {
            gpu.launch()
                .run(shape, writes, |l, (band, ring, sample_force)| IbForceBins {
                    force: IbForce {
                        domain,
                        pass,
                        passes,
                        spread: SPREAD_SCATTER,
                        _pad: 0,
                        flags: l.read(flags),
                        samples: SampleSet {
                            body: l.read(body),
                            solid: l.read(solid),
                        },
                        order: l.read(&g.list),
                        band: band.views(l),
                        record: record(l, ring, slot),
                        sample_force: l.write(sample_force),
                        at: DevSliceMut::empty(),
                        force: DevSliceMut::empty(),
                        solids,
                    },
                })
        }?;
        Ok(())
    }

    /// Stage `ib_gather` (gather only).
    pub(super) fn gather(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let domain = self.plan.domain;
        let Some(g) = self.gather.as_ref() else {
            return Ok(());
        };
        // One block per slot in use, grid-stride: as many blocks as the GPU holds at once or
        // the pool's slots, whichever is smaller.
        let resident = BAND_THREADS_PER_SM * gpu.sm_count as u64 / GATHER_BLOCK as u64;
        let blocks = resident.min(self.plan.capacity as u64) as u32;
        let shape = Shape::blocks(blocks, GATHER_BLOCK).shared_of::<GatherShared>();
        // SAFETY: each slot handled by one block (grid-stride over the slots), each of its
        // cells applied by one thread, from the samples `ib_force` stored.
        unsafe {
            gpu.launch().run(shape, &mut self.band, |l, band| {
                gather_args(l, band, domain, g)
            })
        }?;
        Ok(())
    }

    /// Stage `ib_update` (scatter only).
    pub(super) fn update(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        let shape = self.band_shape(gpu);
        // SAFETY: each band cell handled by one thread (grid-stride).
        unsafe {
            gpu.launch().run(shape, &mut self.band, |l, band| IbUpdate {
                band: band.views(l),
            })
        }?;
        Ok(())
    }
}

impl CudaIb {
    /// The immersed boundary's state after step `step` ([`crate::fluid::state::ImmersedState`]):
    /// the pending records are read into `taken` first (waits for the queued steps).
    pub(super) fn capture(
        &mut self,
        gpu: &Gpu,
        step: u64,
        comm: Option<&dyn crate::ranks::Comm>,
    ) -> Result<crate::fluid::state::ImmersedState, FluidError> {
        self.drain(gpu, comm)?;
        self.check_overflow(gpu)?;
        Ok(crate::fluid::state::ImmersedState {
            solids: self.solid_states(step),
            sample_force: gpu.download(&self.sample_force)?,
            pending: self.taken.clone(),
        })
    }

    /// The solids' states during the step after `step`.
    pub(super) fn solid_states(&self, step: u64) -> Vec<murmur_common::lbm::ib::solid::SolidState> {
        let n = self.plan.half.len();
        self.plan.states(step + 1).states[..n].to_vec()
    }

    /// Restores [`CudaIb::capture`]'s state (checked by the caller).
    pub(super) fn restore(
        &mut self,
        gpu: &Gpu,
        s: &crate::fluid::state::ImmersedState,
    ) -> Result<(), FluidError> {
        use crate::gpu::DriverContext;
        gpu.stream
            .memcpy_htod(&s.sample_force, &mut self.sample_force)
            .ctx("restoring the samples' forces")?;
        self.records.pending.clear();
        self.taken.clone_from(&s.pending);
        Ok(())
    }
}
