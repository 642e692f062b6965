//! The CUDA fluid backend: the CPU reference's stage as Rust kernels (`kernels-gpu/src/lbm.rs`),
//! launched through `crate::gpu`, population buffers allocated once and ping-ponged, the step
//! timed with CUDA events.

use super::cpu::band_overflow;
use super::forces::ForceSample;
use super::immersed::{IbPlan, RecordRing, SampleSnapshot, RING_STEPS};
use super::{Fields, FluidBackend, FluidError, Setup};
use crate::gpu::scan::CellScan;
use crate::gpu::{DriverContext, Gpu, Shape, StageClock};
use crate::timing::StageTimes;
use cudarc::driver::CudaSlice;
use murmur_common::lbm::abi::{
    Bins, Boundary, Health, IbBin, IbClear, IbForce, IbGather, IbMark, IbPlace, IbUpdate,
    IbVelocity, Init, SampleSet, StreamCollide, StreamCollideBand, BIN_BLOCK, RECORD_FLOATS,
    SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::band::{counter, pass_len, pool_len, BandMut, BandRef};
use murmur_common::lbm::boundary::FLUID;
use murmur_common::lbm::health::{self, word, Report};
use murmur_common::lbm::immersed::clear_items;
use murmur_common::lbm::layout::BYTES_PER_CELL_STORED;
use murmur_common::lbm::{CollisionModel, Lattice, LbmParams, Model, Populations};
use murmur_common::{with_model, DevSlice, DevSliceMut};

/// Threads per block of the lattice kernels (one thread per cell, x fastest: coalesced). 128:
/// at the interior kernels' 56-72 registers (sm_90, ptxas) it fits 7-9 blocks per SM.
pub const BLOCK_SIZE: u32 = 128;

/// A lattice on the GPU.
pub struct CudaFluid {
    gpu: Gpu,
    model: CollisionModel,
    params: LbmParams,
    flags: CudaSlice<u8>,
    /// Cells handled by the boundary kernel (a one-element dummy when there are none).
    boundary_cells: CudaSlice<u32>,
    boundary_count: u32,
    f_src: CudaSlice<f32>,
    f_dst: CudaSlice<f32>,
    fields: CudaSlice<f32>,
    clock: StageClock,
    /// Steps done.
    step: u64,
    ib: Option<CudaIb>,
    /// The health reduction's words.
    health: CudaSlice<u32>,
}

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

    /// Reads the ring's pending records (waits for the queued steps).
    fn drain(&mut self, gpu: &Gpu) -> Result<(), FluidError> {
        if self.records.pending.is_empty() {
            return Ok(());
        }
        let ring = gpu.download(&self.ring)?;
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

    /// The immersed-boundary stages of step `step` (see `murmur_common::lbm::immersed`).
    fn stages(
        &mut self,
        gpu: &Gpu,
        clock: &mut StageClock,
        p: &LbmParams,
        flags: &CudaSlice<u8>,
        src: &CudaSlice<f32>,
        step: u64,
    ) -> Result<(), FluidError> {
        if self.records.next_slot().is_none() {
            self.drain(gpu)?;
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
                flags: l.read(flags),
                src: l.read(src),
                band: self.band(&mut l),
            };
            // SAFETY: one thread per band cell, each writing its own values.
            unsafe { l.run(a, Shape::per_item(items, BLOCK_SIZE)) }?;
            clock.mark(&gpu.stream, "ib_velocity")?;
        }
        for pass in 0..self.plan.passes {
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

/// Opens the CUDA backend on GPU 0 with `setup` uploaded and initialised.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    Ok(Box::new(CudaFluid::new(setup)?))
}

impl CudaFluid {
    pub fn new(setup: &Setup) -> Result<CudaFluid, FluidError> {
        let l = setup.lattice();
        let n = l.cells();
        if setup.flags.len() != n || setup.init.data.len() != 4 * n {
            return Err(FluidError::Invalid(
                "setup sizes disagree with the lattice".into(),
            ));
        }
        let gpu = Gpu::open()?;
        gpu.check_fits(
            &format!("a {} x {} x {} lattice", l.nx, l.ny, l.nz),
            n as u64 * BYTES_PER_CELL_STORED,
        )?;
        let prepared = setup.prepared_flags();
        let list: Vec<u32> = (0..n as u32)
            .filter(|&c| prepared[c as usize] != FLUID)
            .collect();
        let flags = gpu.upload(&prepared)?;
        let boundary_cells = gpu.upload(if list.is_empty() { &[0u32][..] } else { &list })?;
        let fields = gpu.upload(&setup.init.data)?;
        let pops = Populations::new(l);
        let mut f_src = gpu.zeros::<f32>(pops.len())?;
        let f_dst = gpu.zeros::<f32>(pops.len())?;
        let mut launch = gpu.launch();
        let args = Init {
            lattice: l,
            _pad: 0,
            fields: launch.read(&fields),
            f: launch.write(&mut f_src),
        };
        // SAFETY: fields holds 4 n floats, f a time level; one thread per cell.
        unsafe { launch.run(args, Shape::per_item(n as u64, BLOCK_SIZE)) }?;
        let clock = StageClock::new(&gpu.ctx);
        let ib = match IbPlan::new(l, &setup.immersed) {
            Some(plan) => Some(CudaIb::new(&gpu, plan)?),
            None => None,
        };
        let health = gpu.zeros(word::WORDS)?;
        Ok(CudaFluid {
            step: 0,
            ib,
            health,
            gpu,
            model: setup.model,
            params: setup.params,
            flags,
            boundary_count: list.len() as u32,
            boundary_cells,
            f_src,
            f_dst,
            fields,
            clock,
        })
    }

    /// Stage `stream_collide` of model `M` (interior kernel, then the boundary kernel over the
    /// listed cells).
    fn stream_collide<M: Model>(&mut self, p: LbmParams) -> Result<(), FluidError>
    where
        StreamCollide<M>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        StreamCollideBand<M>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
        Boundary<M>: murmur_common::Kernel + cudarc::driver::DeviceRepr,
    {
        let cells = p.lattice.cells() as u64;
        let mut l = self.gpu.launch();
        let band = match self.ib.as_ref() {
            Some(ib) => BandRef::new(ib.plan.bricks, l.read(&ib.table), l.read(&ib.pool)),
            None => BandRef::NONE,
        };
        let step = StreamCollide::<M>::new(
            p,
            l.read(&self.flags),
            l.read(&self.f_src),
            l.write(&mut self.f_dst),
            l.write(&mut self.fields),
        )
        .with_band(band);
        // SAFETY: flags holds n bytes, src and dst a time level each (distinct buffers), fields
        // 4 n floats, the band's table and pool their plan's sizes; one thread per cell.
        unsafe {
            if band.active != 0 {
                l.run(
                    StreamCollideBand { step },
                    Shape::per_item(cells, BLOCK_SIZE),
                )
            } else {
                l.run(step, Shape::per_item(cells, BLOCK_SIZE))
            }
        }?;
        self.clock.mark(&self.gpu.stream, "stream_collide")?;
        if self.boundary_count > 0 {
            let mut l = self.gpu.launch();
            let args = Boundary {
                step,
                // The list's first `boundary_count` entries are the cells (the buffer holds one
                // dummy entry when there are none).
                cells: l
                    .read(&self.boundary_cells)
                    .prefix(self.boundary_count as u64),
            };
            // SAFETY: cells holds distinct cell numbers < n (those the interior kernel skips).
            unsafe {
                l.run(
                    args,
                    Shape::per_item(self.boundary_count as u64, BLOCK_SIZE),
                )
            }?;
            self.clock.mark(&self.gpu.stream, "boundary")?;
        }
        Ok(())
    }
}

impl FluidBackend for CudaFluid {
    fn describe(&self) -> String {
        format!("cuda ({})", self.gpu.name)
    }

    fn lattice(&self) -> Lattice {
        self.params.lattice
    }

    fn model(&self) -> CollisionModel {
        self.model
    }

    fn step(&mut self, store_fields: bool) -> Result<(), FluidError> {
        let mut p = self.params;
        p.store_fields = store_fields as u32;
        let step = self.step + 1;
        self.clock.begin(&self.gpu.stream)?;
        if let Some(ib) = self.ib.as_mut() {
            ib.stages(
                &self.gpu,
                &mut self.clock,
                &p,
                &self.flags,
                &self.f_src,
                step,
            )?;
        }
        with_model!(self.model, M => self.stream_collide::<M>(p))?;
        self.clock.end();
        self.step = step;
        std::mem::swap(&mut self.f_src, &mut self.f_dst);
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        let Some(ib) = self.ib.as_mut() else {
            return Ok(Vec::new());
        };
        ib.drain(&self.gpu)?;
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
        let mut l = self.gpu.launch();
        let a = Health {
            lattice: self.params.lattice,
            bounds: *bounds,
            flags: l.read(&self.flags),
            fields: l.read(&self.fields),
            out: l.write(&mut self.health),
        };
        // SAFETY: one thread per cell; the words are reduced with atomic maxima.
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
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.gpu.download(&self.fields)?,
        })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(self.gpu.download(&self.f_src)?)
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        let stream = &self.gpu.stream;
        let bytes = 2.0 * 4.0 * self.f_src.len() as f64;
        let mut best = f64::INFINITY;
        for _ in 0..5 {
            let start = self.gpu.record_timing_event()?;
            stream
                .memcpy_dtod(&self.f_src, &mut self.f_dst)
                .ctx("copying the populations")?;
            let end = self.gpu.record_timing_event()?;
            end.synchronize().ctx("waiting for a CUDA event")?;
            let ms = start.elapsed_ms(&end).ctx("reading a CUDA event")? as f64;
            best = best.min(ms / 1e3);
        }
        Ok(bytes / best)
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
    }

    fn set_inlet_scale(&mut self, scale: f32) {
        self.params.inlet_scale = scale;
    }

    fn gpu_ms_per_step(&mut self) -> Option<f64> {
        self.clock.mean_step_ms().ok().flatten()
    }
}
