//! The CUDA fluid backend: the CPU reference's stage as Rust kernels (`kernels-gpu/src/lbm.rs`),
//! launched through `crate::gpu`, one population buffer updated in place (esoteric pull), the
//! lattice initialised on the GPU, fields computed on demand, the step timed with CUDA events.

use super::cpu::band_overflow;
use super::forces::ForceSample;
use super::ib::plan::{IbPlan, RecordRing, SampleSnapshot, RING_STEPS};
use super::{Fields, FluidBackend, FluidError, Setup};
use crate::gpu::scan::CellScan;
use crate::gpu::{DriverContext, Gpu, Shape, Side, StageClock};
use crate::timing::StageTimes;
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{
    Bins, Boundary, CellLaunch, FieldsArgs, Health, IbBin, IbClear, IbForce, IbGather, IbMark,
    IbPlace, IbUpdate, IbVelocity, Init, SampleSet, SplitMoments, SplitRelax, StreamCollide,
    StreamCollideBand, StreamCollideSponge, BIN_BLOCK, RECORD_FLOATS, SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::boundary::{KIND_MASK, OUTLET};
use murmur_common::lbm::health::{self, word, Report};
use murmur_common::lbm::ib::band::{counter, pass_len, pool_len, BandMut, BandRef};
use murmur_common::lbm::ib::stages::clear_items;
use murmur_common::lbm::{
    split, CollisionModel, Fp32, Lattice, LbmParams, Model, Populations, Storage, StorageKind,
    Streaming,
};
use murmur_common::render::abi::PlaneFields;
use murmur_common::{with_model, with_storage, DevSlice, DevSliceMut};

/// Threads per block of the lattice kernels (one thread per cell, x fastest: coalesced). 128:
/// at the interior kernels' 56-72 registers (sm_90, ptxas) it fits 7-9 blocks per SM.
pub const BLOCK_SIZE: u32 = 128;

/// A lattice on the GPU, populations stored as `S`.
pub struct CudaFluid<S: Storage> {
    gpu: Gpu,
    model: CollisionModel,
    params: LbmParams,
    /// The populations' layout (at step 0; each step sets its parity).
    pops: Populations<S>,
    layout: murmur_common::lbm::Layout,
    block: super::Block,
    flags: CudaSlice<u8>,
    /// Fluid cells next to non-fluid ones, handled by the boundary kernel (a one-element dummy
    /// when there are none).
    boundary_cells: CudaSlice<u32>,
    boundary_count: u32,
    /// The box (`lo`, `hi` exclusive) of the outlet layer's interior cells, which the sponge
    /// kernel updates just before the interior kernel (`None`: no such cells).
    sponge: Option<([u32; 3], [u32; 3])>,
    /// Where the boundary kernel runs with respect to the interior kernel.
    boundary_launch: super::BoundaryLaunch,
    /// The second stream it runs on (a launch other than `Serial`, with listed cells, and not a
    /// slab's: `None` runs it after the interior kernel on the own stream).
    side: Option<Side>,
    /// The last collision velocity of each listed cell next to an outlet (three floats per
    /// list entry; one dummy value without outlets).
    outlet_u: CudaSlice<f32>,
    f: CudaSlice<S::Elem>,
    /// The second copy the pull scheme writes (`None` in place).
    f_next: Option<CudaSlice<S::Elem>>,
    /// `rho, u` of every cell, allocated by the first [`FluidBackend::fields`] call.
    fields: Option<CudaSlice<f32>>,
    /// The step whose fields the buffer holds (the viewer asks for them more than once a step).
    fields_step: Option<u64>,
    clock: StageClock,
    /// Steps done.
    step: u64,
    ib: Option<CudaIb>,
    /// The health reduction's words.
    health: CudaSlice<u32>,
    /// The slab exchange of a rank among several (None: the whole lattice).
    halo: Option<super::slab::CudaHalo<S>>,
    /// The viewer's smoke (from the first advection) and frame buffers.
    smoke: Option<crate::raster::fluid_cuda::CudaSmoke>,
    raster: crate::raster::fluid_cuda::CudaFluidRaster,
    /// ACM-MRT in two kernels ([`CudaFluid::split`], FP32 pull only): the moments between them
    /// and the step that launches them, which replaces the stream-collide stage.
    split: Option<(CudaSlice<f32>, SplitStep<S>)>,
}

/// The stage of [`CudaFluid::split_step`], kept as a function pointer since its kernels exist
/// for one storage only.
type SplitStep<S> = fn(&mut CudaFluid<S>, LbmParams, u64) -> Result<(), FluidError>;

/// The immersed boundary's device buffers (see [`IbPlan`]).
struct CudaIb {
    plan: IbPlan,
    body: CudaSlice<[f32; 4]>,
    solid_of: CudaSlice<u32>,
    sample_force: CudaSlice<f32>,
    table: CudaSlice<u32>,
    brick_of: CudaSlice<u32>,
    pool: CudaSlice<f32>,
    pass: CudaSlice<u64>,
    counter: CudaSlice<u32>,
    /// [`RING_STEPS`] force records.
    ring: CudaSlice<u64>,
    records: RecordRing,
    /// Rows read from a full ring and not yet taken.
    taken: Vec<ForceSample>,
    /// The gather's buffers (`None` for the scatter).
    gather: Option<CudaGather>,
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

impl CudaIb {
    fn new(gpu: &Gpu, plan: IbPlan) -> Result<CudaIb, FluidError> {
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
            plan,
        })
    }

    /// Reads the ring's pending records (waits for the queued steps); on a slab, summed over
    /// every rank (collective: every rank drains at the same step).
    fn drain(
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
            super::slab::sum_records(comm, &mut ring[..n])?;
        }
        let rows = self.records.drain(&self.plan, &ring);
        self.taken.extend(rows);
        Ok(())
    }

    /// Fails when a claim found the band's pool full.
    fn check_overflow(&self, gpu: &Gpu) -> Result<(), FluidError> {
        let c = gpu.download(&self.counter)?;
        if c[counter::OVERFLOW] != 0 {
            return Err(band_overflow(self.plan.capacity));
        }
        Ok(())
    }

    fn band(&mut self, l: &mut crate::gpu::Launch<'_>) -> BandMut {
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

    /// The immersed-boundary stages of step `step` (see `murmur_common::lbm::ib::stages`).
    #[allow(clippy::too_many_arguments)]
    fn stages<S: Storage>(
        &mut self,
        gpu: &Gpu,
        clock: &mut StageClock,
        p: &LbmParams,
        pops: Populations<S>,
        flags: &CudaSlice<u8>,
        f: &CudaSlice<S::Elem>,
        step: u64,
        mut halo: Option<&mut super::slab::CudaHalo<S>>,
    ) -> Result<(), FluidError>
    where
        IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        if self.records.next_slot().is_none() {
            let comm = halo
                .as_ref()
                .map(|h| h.comm.clone() as std::sync::Arc<dyn crate::ranks::Comm>);
            self.drain(gpu, comm.as_deref())?;
        }
        let slot = self.records.next_slot().unwrap_or(0) as u64;
        let solids = self.plan.states(step);
        let n_samples = self.plan.body.len() as u64;
        let items = self.plan.band_items();
        {
            let mut l = gpu.launch();
            let a = IbClear {
                table: l.write(&mut self.table),
                counter: l.write(&mut self.counter),
                // SAFETY: `slot < RING_STEPS`, so the record lies inside the ring.
                record: unsafe {
                    l.write(&mut self.ring)
                        .range(slot * RECORD_FLOATS as u64, RECORD_FLOATS as u64)
                },
            };
            // SAFETY: one thread per element of the cleared buffers.
            unsafe { l.run(a, Shape::per_item(clear_items(&a), BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_clear")?;
        }
        {
            let mut l = gpu.launch();
            let a = IbMark {
                domain: self.plan.domain,
                flags: l.read(flags),
                samples: SampleSet {
                    body: l.read(&self.body),
                    solid: l.read(&self.solid_of),
                },
                band: self.band(&mut l),
                solids,
            };
            // SAFETY: one thread per sample; claims are atomic.
            unsafe { l.run(a, Shape::per_item(n_samples, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_mark")?;
        }
        if let Some(g) = self.gather.as_mut() {
            let mut l = gpu.launch();
            let a = IbBin {
                domain: self.plan.domain,
                bins: g.bins,
                samples: SampleSet {
                    body: l.read(&self.body),
                    solid: l.read(&self.solid_of),
                },
                band: BandMut {
                    bricks: self.plan.bricks,
                    capacity: self.plan.capacity,
                    _pad: 0,
                    table: l.write(&mut self.table),
                    brick_of: l.write(&mut self.brick_of),
                    pool: l.write(&mut self.pool),
                    pass: l.write(&mut self.pass),
                    counter: l.write(&mut self.counter),
                },
                counts: l.write(&mut g.counts),
                key: l.write(&mut g.key),
                rank: l.write(&mut g.rank),
                solids,
            };
            // SAFETY: one thread per sample; the counts are zero (the previous scan left them
            // so) and raised atomically.
            unsafe { l.run(a, Shape::per_item(n_samples, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_bin")?;
            let m = g.bins.entries() as u32;
            g.scan.run(gpu, &mut g.counts, &mut g.starts, m, false)?;
            clock.mark(&gpu.stream, "ib_scan")?;
            let mut l = gpu.launch();
            let a = IbPlace {
                key: l.read(&g.key),
                rank: l.read(&g.rank),
                starts: l.read(&g.starts),
                list: l.write(&mut g.list),
            };
            // SAFETY: one thread per sample; keys and ranks are a permutation's places.
            unsafe { l.run(a, Shape::per_item(n_samples, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_place")?;
        }
        {
            let mut l = gpu.launch();
            let a = IbVelocity {
                p: *p,
                pops,
                flags: l.read(flags),
                f: l.read(f),
                band: self.band(&mut l),
            };
            // SAFETY: one thread per band cell, each writing its own values.
            unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_velocity")?;
        }
        for pass in 0..self.plan.passes {
            if let Some(h) = halo.as_deref_mut() {
                let faces = self.plan.faces_reached(step);
                h.exchange_band(gpu, &p.lattice, faces, |l| self.band(l))?;
                clock.mark(&gpu.stream, "ib_band_halo")?;
            }
            let mut l = gpu.launch();
            let band = self.band(&mut l);
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
                domain: self.plan.domain,
                pass,
                passes: self.plan.passes,
                spread,
                _pad: 0,
                flags: l.read(flags),
                samples: SampleSet {
                    body: l.read(&self.body),
                    solid: l.read(&self.solid_of),
                },
                order,
                band,
                // SAFETY: as for the clear.
                record: unsafe {
                    l.write(&mut self.ring)
                        .range(slot * RECORD_FLOATS as u64, RECORD_FLOATS as u64)
                },
                sample_force: l.write(&mut self.sample_force),
                at,
                force,
                solids,
            };
            // SAFETY: one thread per sample (whole warps take part in the reduction); shared
            // values are added atomically; `order` is a permutation of the samples.
            unsafe { l.run(a, Shape::per_item(n_samples, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_force")?;
            if let Some(g) = self.gather.as_ref() {
                let mut l = gpu.launch();
                let a = IbGather {
                    domain: self.plan.domain,
                    bins: g.bins,
                    band: BandMut {
                        bricks: self.plan.bricks,
                        capacity: self.plan.capacity,
                        _pad: 0,
                        table: l.write(&mut self.table),
                        brick_of: l.write(&mut self.brick_of),
                        pool: l.write(&mut self.pool),
                        pass: l.write(&mut self.pass),
                        counter: l.write(&mut self.counter),
                    },
                    starts: l.read(&g.starts),
                    list: if g.bins.kind == BIN_BLOCK {
                        DevSlice::empty()
                    } else {
                        l.read(&g.list)
                    },
                    at: l.read(&g.at),
                    force: l.read(&g.force),
                };
                // SAFETY: one thread per band cell, each updating its own values from the
                // samples `ib_force` stored.
                unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
                clock.mark(&gpu.stream, "ib_gather")?;
                continue;
            }
            let mut l = gpu.launch();
            let a = IbUpdate {
                band: self.band(&mut l),
            };
            // SAFETY: one thread per band cell.
            unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_update")?;
        }
        self.records.pending.push(step);
        Ok(())
    }
}

/// Opens one rank's slab on `gpu` (`setup` from [`super::slab::SlabPlan::local_setup`], pull
/// streaming), exchanging its faces through `comm`.
pub fn open_slab(
    gpu: Gpu,
    setup: &Setup,
    comm: std::sync::Arc<crate::ranks::nccl::NcclComm>,
    axis: u32,
) -> Result<Box<dyn FluidBackend>, FluidError> {
    use murmur_common::lbm::{Fp16C, Fp16S, Fp32};
    Ok(match setup.storage {
        StorageKind::Fp32 => Box::new(CudaFluid::<Fp32>::new(gpu, setup)?.with_halo(comm, axis)?),
        StorageKind::Fp16s => Box::new(CudaFluid::<Fp16S>::new(gpu, setup)?.with_halo(comm, axis)?),
        StorageKind::Fp16c => Box::new(CudaFluid::<Fp16C>::new(gpu, setup)?.with_halo(comm, axis)?),
    })
}

/// Opens the CUDA backend on GPU 0 with `setup` uploaded and initialised, in its storage.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    open_on(Gpu::open()?, setup)
}

/// [`open`] on a given GPU.
pub fn open_on(gpu: Gpu, setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    let streaming = match setup.streaming {
        Some(st) => st,
        // Pull (two copies, the faster scheme) when both fit (the boundary list is small
        // beside the populations: counted as every cell's worth would be far too much, so
        // it is left to the exact check in `new`).
        None => {
            let pull = setup.lattice_bytes(Streaming::Pull, 0);
            if gpu.check_fits("the lattice", pull).is_ok() {
                Streaming::Pull
            } else {
                Streaming::InPlace
            }
        }
    };
    if setup.split {
        if setup.storage != StorageKind::Fp32 || streaming != Streaming::Pull {
            return Err(FluidError::Invalid(
                "ACM-MRT's split kernels exist for FP32 pull storage only".into(),
            ));
        }
        return Ok(Box::new(CudaFluid::<Fp32>::new(gpu, setup)?.split()?));
    }
    with_storage!(setup.storage, streaming, S => Ok(Box::new(CudaFluid::<S>::new(gpu, setup)?)))
}

impl CudaFluid<Fp32> {
    /// The same lattice stepped by ACM-MRT's two split kernels instead of the fused one
    /// ([`murmur_common::lbm::split`]): the moments pass through a buffer of
    /// [`split::VALUES`] floats per cell. Interior cells only: a periodic box without solids
    /// (the benchmark's), with ACM-MRT.
    fn split(mut self) -> Result<Self, FluidError> {
        if self.model != CollisionModel::AcmMrt
            || self.boundary_count > 0
            || self.ib.is_some()
            || self.halo.is_some()
        {
            return Err(FluidError::Invalid(
                "ACM-MRT's split kernels run a periodic box without solids, model acm-mrt only"
                    .into(),
            ));
        }
        let n = self.params.lattice.cells();
        let bytes = (split::VALUES * n * 4) as u64;
        self.gpu
            .check_fits("the split kernels' moments (124 bytes per cell)", bytes)?;
        let scratch = self.gpu.zeros::<f32>(split::VALUES * n)?;
        self.split = Some((scratch, CudaFluid::<Fp32>::split_step));
        Ok(self)
    }

    /// Stages `split_moments` and `split_relax`: pull and moments, then relaxation and store.
    fn split_step(&mut self, p: LbmParams, step: u64) -> Result<(), FluidError> {
        let n = p.lattice.cells() as u64;
        let pops = self.pops.at_step(step);
        let Some((scratch, _)) = self.split.as_mut() else {
            unreachable!("set by split()")
        };
        let Some(next) = self.f_next.as_mut() else {
            unreachable!("pull storage keeps two copies")
        };
        let mut l = self.gpu.launch();
        let a = SplitMoments {
            p,
            pops,
            flags: l.read(&self.flags),
            f: l.read(&self.f),
            scratch: l.write(scratch),
        };
        // SAFETY: one thread per cell, reading the populations and writing its own moments.
        unsafe { l.run(a, Shape::per_item(n, BLOCK_SIZE)) }?;
        self.clock.mark(&self.gpu.stream, "split_moments")?;
        let mut l = self.gpu.launch();
        let a = SplitRelax {
            p,
            pops,
            flags: l.read(&self.flags),
            scratch: l.read(scratch),
            dst: l.write(next),
        };
        // SAFETY: one thread per cell, reading its own moments and writing its own slots of
        // the other copy.
        unsafe { l.run(a, Shape::per_item(n, BLOCK_SIZE)) }?;
        self.clock.mark(&self.gpu.stream, "split_relax")?;
        Ok(())
    }
}

impl<S: Storage> CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    Init<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    FieldsArgs<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    PlaneFields<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Health<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    /// `rho, u` of every cell into the device fields buffer (allocated by the first call),
    /// by `lbm_fields_*`, without copying them back.
    fn compute_fields(&mut self) -> Result<(), FluidError> {
        if self.fields_step == Some(self.step) {
            return Ok(());
        }
        let n = self.params.lattice.cells();
        if self.fields.is_none() {
            self.gpu
                .check_fits("the output fields (16 bytes per cell)", 16 * n as u64)?;
            self.fields = Some(self.gpu.zeros::<f32>(4 * n)?);
        }
        let pops = self.now();
        let mut l = self.gpu.launch();
        let band = self.band_ref(&mut l);
        let Some(fields) = self.fields.as_mut() else {
            unreachable!("allocated above")
        };
        let a = FieldsArgs {
            p: self.params,
            pops,
            flags: l.read(&self.flags),
            f: l.read(&self.f),
            band,
            fields: l.write(fields),
        };
        // SAFETY: one thread per cell, reading the populations and writing its own fields.
        unsafe { l.run(a, Shape::per_item(n as u64, BLOCK_SIZE)) }?;
        self.fields_step = Some(self.step);
        Ok(())
    }

    /// `rho, u` of the cells of `planes` alone (a slice frame's), by `fluid_plane_fields_*`,
    /// unless the buffer holds this step's fields of every cell; the buffer keeps the step of
    /// its last full computation (its other cells are older).
    fn compute_plane_fields(
        &mut self,
        planes: murmur_common::render::fluid::Planes,
    ) -> Result<(), FluidError> {
        if self.fields_step == Some(self.step) {
            return Ok(());
        }
        let lattice = self.params.lattice;
        if self.fields.is_none() {
            let n = lattice.cells();
            self.gpu
                .check_fits("the output fields (16 bytes per cell)", 16 * n as u64)?;
            self.fields = Some(self.gpu.zeros::<f32>(4 * n)?);
        }
        let pops = self.now();
        let mut l = self.gpu.launch();
        let band = self.band_ref(&mut l);
        let Some(fields) = self.fields.as_mut() else {
            unreachable!("allocated above")
        };
        let a = PlaneFields {
            fields: FieldsArgs {
                p: self.params,
                pops,
                flags: l.read(&self.flags),
                f: l.read(&self.f),
                band,
                fields: l.write(fields),
            },
            planes,
        };
        // SAFETY: one thread per cell of the planes, reading the populations and writing its
        // own fields.
        unsafe {
            l.run(
                a,
                Shape::per_item(planes.cells(&lattice) as u64, BLOCK_SIZE),
            )
        }?;
        Ok(())
    }

    /// The lattice of `setup` on `gpu`, stored and streamed as `S` says.
    pub fn new(gpu: Gpu, setup: &Setup) -> Result<CudaFluid<S>, FluidError> {
        let l = setup.lattice();
        let n = l.cells();
        if setup.flags.len() != n {
            return Err(FluidError::Invalid(
                "setup sizes disagree with the lattice".into(),
            ));
        }
        let prepared = setup.prepared_flags();
        let list = setup.boundary_list(&prepared);
        let has_outlet = prepared.iter().any(|&b| b & KIND_MASK == OUTLET);
        let streaming = super::cpu::streaming_of::<S>();
        let what = format!(
            "a {} x {} x {} lattice ({} storage, {} streaming)",
            l.nx,
            l.ny,
            l.nz,
            S::NAME,
            streaming.name()
        );
        gpu.check_fits(&what, setup.lattice_bytes(streaming, list.len()))?;
        let flags = gpu.upload(&prepared)?;
        let boundary_cells = gpu.upload(if list.is_empty() { &[0u32][..] } else { &list })?;
        let outlet_u = if has_outlet && !list.is_empty() {
            let u: Vec<f32> = list
                .iter()
                .flat_map(|&c| {
                    let (x, y, z) = l.coords(c as usize);
                    setup.initial.at([x, y, z], true).1
                })
                .collect();
            gpu.upload(&u)?
        } else {
            gpu.zeros(1)?
        };
        let pops = Populations::<S>::new(l, setup.layout, 0);
        let mut f = gpu.zeros::<S::Elem>(pops.len())?;
        let f_next = if S::IN_PLACE {
            None
        } else {
            Some(gpu.zeros::<S::Elem>(pops.len())?)
        };
        let mut launch = gpu.launch();
        let args = Init {
            pops,
            initial: setup.initial,
            flags: launch.read(&flags),
            f: launch.write(&mut f),
        };
        // SAFETY: flags holds n bytes, f the populations; one thread per cell, each writing
        // only its own slots.
        unsafe { launch.run(args, Shape::per_item(n as u64, BLOCK_SIZE)) }?;
        let clock = StageClock::new(&gpu.ctx);
        let ib = match IbPlan::new(l, &setup.immersed) {
            Some(plan) => Some(CudaIb::new(&gpu, plan)?),
            None => None,
        };
        let health = gpu.zeros(word::WORDS)?;
        let side = match setup.boundary_launch {
            _ if list.is_empty() => None,
            super::BoundaryLaunch::Serial => None,
            super::BoundaryLaunch::Tail => Some(Side::new(&gpu, false)?),
            super::BoundaryLaunch::Beside { .. } => Some(Side::new(&gpu, true)?),
        };
        Ok(CudaFluid {
            step: 0,
            ib,
            health,
            smoke: None,
            raster: Default::default(),
            fields_step: None,
            gpu,
            model: setup.model,
            params: setup.params,
            pops,
            layout: setup.layout,
            block: setup.block,
            flags,
            boundary_count: list.len() as u32,
            sponge: setup.sponge_box(&prepared),
            boundary_cells,
            boundary_launch: setup.boundary_launch,
            side,
            outlet_u,
            f,
            f_next,
            fields: None,
            clock,
            halo: None,
            split: None,
        })
    }

    /// This lattice as one rank's slab ([`super::slab`]), exchanging its faces through
    /// `comm`: the ghost layers are filled now and after every step.
    pub fn with_halo(
        mut self,
        comm: std::sync::Arc<crate::ranks::nccl::NcclComm>,
        axis: u32,
    ) -> Result<CudaFluid<S>, FluidError>
    where
        murmur_common::lbm::abi::HaloPack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        murmur_common::lbm::abi::HaloUnpack<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        if S::IN_PLACE {
            return Err(FluidError::Invalid(
                "slabs stream with pull, not in place".into(),
            ));
        }
        let mut halo = super::slab::CudaHalo::<S>::new(comm, &self.params.lattice, axis)?;
        let pops = self.now();
        halo.send(&self.gpu, &pops, &mut self.f)?;
        halo.receive(&self.gpu, &pops, &mut self.f)?;
        self.gpu
            .stream
            .synchronize()
            .ctx("the first slab exchange")?;
        self.halo = Some(halo);
        // A slab orders its boundary kernel (the face cells) before the exchange itself.
        self.side = None;
        Ok(self)
    }

    /// The populations as the next step finds them (for stages that write none).
    fn now(&self) -> Populations<S> {
        self.pops.at_step(self.step + 1)
    }

    /// Stages `stream_collide` and `boundary` of model `M` for step `step`: the interior kernel
    /// and the boundary kernel over the listed cells, the latter beside the former on the side
    /// stream or after it.
    fn stream_collide<M: Model>(&mut self, p: LbmParams, step: u64) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let mut l = self.gpu.launch();
        let band = match self.ib.as_ref() {
            Some(ib) => BandRef::new(ib.plan.bricks, l.read(&ib.table), l.read(&ib.pool)),
            None => BandRef::NONE,
        };
        let f = l.write(&mut self.f);
        let dst = match self.f_next.as_mut() {
            Some(next) => l.write(next),
            None => f,
        };
        let args = StreamCollide::<M, S>::new(p, self.pops.at_step(step), l.read(&self.flags), f)
            .with_dst(dst)
            .with_band(band)
            .with_outlet_u(l.write(&mut self.outlet_u));
        let args = args.with_launch(CellLaunch {
            three_d: matches!(self.block, super::Block::ThreeD(_)) as u32,
            ..CellLaunch::FLAT
        });
        drop(l);
        let band = band.active != 0;
        let Some(axis) = self.halo.as_ref().map(|h| h.axis) else {
            if let Some(side) = self.side.as_ref() {
                // The side stream waits for the work before the interior kernel only; the join
                // orders the next step after both kernels.
                side.fork(&self.gpu)?;
                if let super::BoundaryLaunch::Beside { .. } = self.boundary_launch {
                    // Launched first at high priority: its blocks take their share of each SM
                    // before the interior kernel's fill the rest.
                    self.boundary(args, true)?;
                    self.interior(args, 0, u32::MAX, band)?;
                } else {
                    // Launched second at the same priority: its blocks are placed once the
                    // interior kernel's last ones are.
                    self.interior(args, 0, u32::MAX, band)?;
                    self.boundary(args, true)?;
                }
                if let Some(side) = self.side.as_ref() {
                    side.join(&self.gpu)?;
                }
                self.clock.mark(&self.gpu.stream, "boundary")?;
                return Ok(());
            }
            self.interior(args, 0, u32::MAX, band)?;
            return self.boundary(args, false);
        };
        // A rank's slab: the face layers first, their crossing populations then travel on the
        // exchange stream while the middle updates. Slabs along z have contiguous face layers,
        // launched as layer ranges of the interior kernel; other axes pin the face cells to
        // the boundary list.
        let owned = [p.lattice.nx, p.lattice.ny, p.lattice.nz][axis as usize] - 2;
        if axis == 2 {
            self.interior(args, 1, 2, band)?;
            if owned > 1 {
                self.interior(args, owned, owned + 1, band)?;
            }
        }
        self.boundary(args, false)?;
        let pops = self.now_after(step);
        if let (Some(halo), Some(dst)) = (self.halo.as_mut(), self.f_next.as_mut()) {
            halo.send(&self.gpu, &pops, dst)?;
        }
        if axis == 2 {
            if owned > 2 {
                self.interior(args, 2, owned, band)?;
            }
        } else {
            self.interior(args, 0, u32::MAX, band)?;
        }
        if let (Some(halo), Some(dst)) = (self.halo.as_mut(), self.f_next.as_mut()) {
            halo.receive(&self.gpu, &pops, dst)?;
        }
        self.clock.mark(&self.gpu.stream, "halo")?;
        Ok(())
    }

    /// The populations as the step after `step` finds them.
    fn now_after(&self, step: u64) -> Populations<S> {
        self.pops.at_step(step + 1)
    }

    /// The interior kernel (plain, or adding the band's force) over the z layers `z0..z1`
    /// (clamped to the lattice).
    fn interior<M: Model>(
        &mut self,
        args: StreamCollide<M, S>,
        z0: u32,
        z1: u32,
        band: bool,
    ) -> Result<(), FluidError>
    where
        StreamCollide<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideSponge<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let lat = args.p.lattice;
        let (z0, z1) = args.launch.layers(z0, z1).range(lat.nz);
        if z1 == z0 {
            return Ok(());
        }
        let on = |a: u32, b: u32| args.with_launch(args.launch.layers(a, b));
        // The outlet layer's interior cells first, those of its box in these layers (a short
        // launch: the interior kernel's tail then overlaps a boundary launched beside).
        if let Some((lo, hi)) = self.sponge {
            let (s0, s1) = (lo[2].max(z0), hi[2].min(z1));
            if s1 > s0 {
                let l = self.gpu.launch();
                let args = StreamCollideSponge {
                    step: args,
                    lo: [lo[0], lo[1], s0],
                    dims: [hi[0] - lo[0], hi[1] - lo[1], s1 - s0],
                };
                let shape = Shape::per_item(args.threads(), BLOCK_SIZE);
                // SAFETY: flags holds n bytes, f the populations, the band's table and pool
                // their plan's sizes; one thread per cell of the box, each touching only its
                // own slots this step (cells of other bytes return at once). The views in
                // `args` were taken from this GPU's stream-owned buffers.
                unsafe { l.run(args, shape) }?;
            }
        }
        let l = self.gpu.launch();
        // SAFETY: as above, one thread per cell of the layers; each fluid cell is updated by
        // one kernel (its byte decides which).
        unsafe {
            let shape = self.layers_shape(&lat, z1 - z0);
            if band {
                l.run(StreamCollideBand { step: on(z0, z1) }, shape)
            } else {
                l.run(on(z0, z1), shape)
            }
        }?;
        self.clock.mark(&self.gpu.stream, "stream_collide")?;
        Ok(())
    }

    /// The launch shape of `layers` whole z layers of `lat` (flat, or the 3D blocks).
    fn layers_shape(&self, lat: &Lattice, layers: u32) -> Shape {
        match self.block {
            super::Block::Flat => {
                Shape::per_item(layers as u64 * lat.nx as u64 * lat.ny as u64, BLOCK_SIZE)
            }
            super::Block::ThreeD([bx, by, bz]) => Shape {
                grid: (
                    lat.nx.div_ceil(bx),
                    lat.ny.div_ceil(by),
                    layers.div_ceil(bz),
                ),
                block: (bx, by, bz),
                shared_bytes: 0,
                after_previous: false,
            },
        }
    }

    /// The boundary kernel over the listed cells (nothing without any): on the side stream
    /// when `beside` (between its fork and its join; the caller marks the stage after the
    /// join), else on the GPU's own stream, marked `boundary`.
    fn boundary<M: Model>(
        &mut self,
        args: StreamCollide<M, S>,
        beside: bool,
    ) -> Result<(), FluidError>
    where
        Boundary<M, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        if self.boundary_count == 0 {
            return Ok(());
        }
        let side = self.side.as_ref().filter(|_| beside);
        let count = self.boundary_count as u64;
        // `beside`: launches of `blocks_per_sm` blocks per SM, one after another on the side
        // stream, each over its part of the list (a fixed share of each SM at a time).
        let part = match (side, self.boundary_launch) {
            (Some(_), super::BoundaryLaunch::Beside { blocks_per_sm }) => {
                blocks_per_sm as u64 * self.gpu.sm_count as u64 * BLOCK_SIZE as u64
            }
            _ => count,
        };
        // Outlet velocities are kept per list entry when the scene has outlets.
        let per_entry_u = args.outlet_u.len() >= 3 * count;
        let mut start = 0;
        while start < count {
            let len = part.min(count - start);
            let mut l = match side {
                // SAFETY: until the join, the GPU's own stream runs only the interior kernel
                // and the outlet layer's, which write the slots of interior cells alone (the
                // destination copy's, or in place the slots those cells own this step) and
                // read no slot a listed cell
                // writes; both only read the cell bytes, the band and the source populations,
                // and the outlet velocities belong to listed cells.
                Some(side) => unsafe { side.launch(&self.gpu) },
                None => self.gpu.launch(),
            };
            // SAFETY: `start + len <= count`: entries of the list (the buffer holds
            // `boundary_count` of them, or one dummy entry when there are none) and, with
            // outlets, their three outlet floats each.
            let a = unsafe {
                Boundary {
                    step: if per_entry_u {
                        args.with_outlet_u(args.outlet_u.range(3 * start, 3 * len))
                    } else {
                        args
                    },
                    cells: l.read(&self.boundary_cells).offset(start).prefix(len),
                }
            };
            // SAFETY: cells holds distinct fluid cell numbers < n (those the interior kernel
            // skips); outlet_u three floats per entry when outlets exist.
            unsafe { l.run(a, Shape::per_item(len, BLOCK_SIZE)) }?;
            start += len;
        }
        if side.is_none() {
            self.clock.mark(&self.gpu.stream, "boundary")?;
        }
        Ok(())
    }

    fn band_ref(&self, l: &mut crate::gpu::Launch<'_>) -> BandRef {
        match self.ib.as_ref() {
            Some(ib) => BandRef::new(ib.plan.bricks, l.read(&ib.table), l.read(&ib.pool)),
            None => BandRef::NONE,
        }
    }
}

impl<S: Storage> FluidBackend for CudaFluid<S>
where
    S::Elem: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits,
    Init<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    FieldsArgs<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    PlaneFields<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Health<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    IbVelocity<S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<murmur_common::lbm::Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<murmur_common::lbm::Bgk, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<murmur_common::lbm::Bgk, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<murmur_common::lbm::Bgk, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<murmur_common::lbm::RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<murmur_common::lbm::RmMrt, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<murmur_common::lbm::RmMrt, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<murmur_common::lbm::RmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollide<murmur_common::lbm::AcmMrt, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideBand<murmur_common::lbm::AcmMrt, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    StreamCollideSponge<murmur_common::lbm::AcmMrt, S>:
        murmur_common::Kernel + cudarc::driver::DeviceRepr,
    Boundary<murmur_common::lbm::AcmMrt, S>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
{
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    fn model(&self) -> CollisionModel {
        self.model
    }

    fn storage(&self) -> StorageKind {
        S::KIND
    }

    fn layout(&self) -> murmur_common::lbm::Layout {
        self.layout
    }

    fn streaming(&self) -> Streaming {
        super::cpu::streaming_of::<S>()
    }

    fn step(&mut self) -> Result<(), FluidError> {
        let p = self.params;
        let step = self.step + 1;
        self.clock.begin(&self.gpu.stream)?;
        if let Some(ib) = self.ib.as_mut() {
            ib.stages(
                &self.gpu,
                &mut self.clock,
                &p,
                self.pops.at_step(step),
                &self.flags,
                &self.f,
                step,
                self.halo.as_mut(),
            )?;
        }
        match self.split.as_ref() {
            Some(&(_, split_step)) => split_step(self, p, step)?,
            None => with_model!(self.model, M => self.stream_collide::<M>(p, step))?,
        }
        self.clock.end();
        self.step = step;
        if let Some(next) = self.f_next.as_mut() {
            std::mem::swap(&mut self.f, next);
        }
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        let Some(ib) = self.ib.as_mut() else {
            return Ok(Vec::new());
        };
        let comm = self
            .halo
            .as_ref()
            .map(|h| h.comm.clone() as std::sync::Arc<dyn crate::ranks::Comm>);
        ib.drain(&self.gpu, comm.as_deref())?;
        ib.check_overflow(&self.gpu)?;
        Ok(std::mem::take(&mut ib.taken))
    }

    fn samples(&mut self) -> Result<Option<SampleSnapshot>, FluidError> {
        let Some(ib) = self.ib.as_ref() else {
            return Ok(None);
        };
        let force = self.gpu.download(&ib.sample_force)?;
        Ok(Some(ib.plan.snapshot(self.step, &force)))
    }

    fn health(&mut self, bounds: &health::Bounds) -> Result<Option<Report>, FluidError> {
        if let Some(ib) = self.ib.as_ref() {
            ib.check_overflow(&self.gpu)?;
        }
        self.gpu
            .stream
            .memset_zeros(&mut self.health)
            .ctx("clearing the health words")?;
        let pops = self.now();
        let mut l = self.gpu.launch();
        let band = self.band_ref(&mut l);
        let a = Health {
            p: self.params,
            pops,
            bounds: *bounds,
            flags: l.read(&self.flags),
            f: l.read(&self.f),
            band,
            out: l.write(&mut self.health),
        };
        // SAFETY: one thread per cell, reading the populations; the words are reduced with
        // atomic maxima.
        unsafe {
            l.run(
                a,
                Shape::per_item(self.params.lattice.cells() as u64, BLOCK_SIZE),
            )
        }?;
        let w = self.gpu.download(&self.health)?;
        Ok(Report::decode([w[0], w[1], w[2], w[3]]))
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        self.compute_fields()?;
        let Some(fields) = self.fields.as_ref() else {
            unreachable!("computed above")
        };
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.gpu.download(fields)?,
        })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        let raw = self.gpu.download(&self.f)?;
        Ok(super::cpu::canonical(&self.now(), &raw))
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        // Scratch buffers the size of the populations (at most 4 GiB: enough for a steady
        // figure), freed on return.
        let bytes = (self.f.len() * std::mem::size_of::<S::Elem>()).min(4 << 30);
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

    fn device_memory(&self) -> Option<(u64, u64)> {
        self.gpu.memory().ok()
    }

    fn allocated_bytes(&self) -> u64 {
        let ib = self.ib.as_ref().map_or(0, |ib| ib.plan.bytes());
        ((self.f.len() + self.f_next.as_ref().map_or(0, |f| f.len()))
            * std::mem::size_of::<S::Elem>()
            + self.flags.len()
            + 4 * self.boundary_cells.len()
            + 4 * self.outlet_u.len()
            + self.fields.as_ref().map_or(0, |f| 4 * f.len())
            + self.split.as_ref().map_or(0, |(m, _)| 4 * m.len())) as u64
            + ib
    }

    fn synchronize(&mut self) -> Result<(), FluidError> {
        Ok(self.gpu.synchronize()?)
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        Ok(self.clock.times()?)
    }

    fn reset_times(&mut self) {
        // A failed read of old events only loses figures, never state.
        let _ = self.clock.reset();
        let _ = self.raster.reset_times();
    }

    fn set_inlet_scale(&mut self, scale: f32) {
        self.params.inlet_scale = scale;
    }

    fn set_model(&mut self, model: CollisionModel) {
        self.model = model;
    }

    fn set_rates(&mut self, rates: murmur_common::lbm::Rates) {
        self.params.rates = rates;
    }

    fn rates(&self) -> murmur_common::lbm::Rates {
        self.params.rates
    }

    fn advect_smoke(&mut self, smoke: &super::SmokeSetup) -> Result<(), FluidError> {
        self.compute_fields()?;
        let n = self.params.lattice.cells();
        if self.smoke.is_none() {
            self.smoke = Some(crate::raster::fluid_cuda::CudaSmoke::new(
                &self.gpu,
                n,
                &smoke.sources,
            )?);
        }
        let (Some(state), Some(fields)) = (self.smoke.as_mut(), self.fields.as_ref()) else {
            unreachable!("allocated above")
        };
        state.advect(
            &self.gpu,
            &smoke.params(self.params.lattice),
            fields,
            &self.flags,
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
            None if self.fields.is_none() => self.compute_fields()?,
            None => {}
        }
        let solids = self
            .ib
            .as_ref()
            .map_or_else(Vec::new, |ib| ib.plan.positions(self.step));
        let Some(fields) = self.fields.as_ref() else {
            unreachable!("computed above")
        };
        let input = crate::raster::fluid_cuda::DeviceInput {
            fields,
            flags: &self.flags,
            smoke: self.smoke.as_ref(),
            step: self.step,
            solids: &solids,
            solid_radius,
        };
        self.raster.draw(&self.gpu, frame, &input, rgba)?;
        Ok(())
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }

    fn render_times(&mut self) -> Option<StageTimes> {
        self.raster.times().ok().filter(|t| t.steps > 0)
    }
}
