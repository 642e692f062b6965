//! The CPU reference fluid: the GPU's stage, one for one, on all cores (rayon), calling the same
//! `murmur_common::lbm::stream_collide_cell` the kernels call. Results equal the GPU's: the same
//! operations in the same order, each rounded once (`math::fma` included) on both.

use super::forces::ForceSample;
use super::ib::plan::{IbPlan, RecordRing, SampleSnapshot};
use super::{Fields, FluidBackend, FluidError, Setup};
use crate::timing::{stage, StageTimes};
use murmur_common::lbm::abi::{
    Health, IbBin, IbClear, IbForce, IbGather, IbMark, IbPlace, IbUpdate, IbVelocity, Init,
    SampleSet, StreamCollide, BIN_BLOCK, RECORD_FLOATS, SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::boundary::{KIND_MASK, OUTLET};
use murmur_common::lbm::health::{self, cell_words, word, Report};
use murmur_common::lbm::ib::band::{counter, pass_len, pool_len, BandMut, BandRef, EMPTY};
use murmur_common::lbm::ib::gather;
use murmur_common::lbm::ib::stages::{self, record_fixed, record_index};
use murmur_common::lbm::{
    cell_fields, init_cell, stream_collide_cell, CollisionModel, Lattice, LbmParams, Model,
    Populations, Storage, StorageKind, Streaming, Q,
};
use murmur_common::{with_model, with_storage, DevSlice, DevSliceMut};
use rayon::prelude::*;

/// Cells per rayon task (a few z-rows: big enough to amortise scheduling).
const CHUNK: usize = 4096;

/// CPU fluid with one population buffer (in-place streaming) stored as `S`.
pub struct CpuFluid<S: Storage> {
    model: CollisionModel,
    params: LbmParams,
    /// The populations' layout (at step 0; each step sets its parity).
    pops: Populations<S>,
    layout: murmur_common::lbm::Layout,
    flags: Vec<u8>,
    f: Vec<S::Elem>,
    /// The second copy the pull scheme writes (empty in place).
    f_next: Vec<S::Elem>,
    /// The last collision velocity of every cell next to an outlet (three floats per cell;
    /// empty without outlets).
    outlet_u: Vec<f32>,
    times: StageTimes,
    /// Steps done.
    step: u64,
    ib: Option<CpuIb>,
    /// The slab exchange of a rank among several (None: the whole lattice).
    halo: Option<super::slab::CpuHalo>,
    /// The viewer's smoke (from the first advection) and frame scratch.
    smoke: Option<crate::raster::fluid::CpuSmoke>,
    raster: crate::raster::fluid::CpuFluidRaster,
}

/// The immersed boundary's buffers on the host, as on the GPU.
struct CpuIb {
    plan: IbPlan,
    table: Vec<u32>,
    brick_of: Vec<u32>,
    pool: Vec<f32>,
    pass: Vec<u64>,
    counter: Vec<u32>,
    sample_force: Vec<f32>,
    ring: Vec<u64>,
    records: RecordRing,
    /// Rows read from a full ring and not yet taken.
    taken: Vec<ForceSample>,
    /// The gather's buffers (empty for the scatter), as on the GPU.
    gather: GatherBufs,
}

/// The gather's buffers: per sample its bin, rank, place in the sorted list, stored position
/// and force; per bin its count and start.
#[derive(Default)]
struct GatherBufs {
    key: Vec<u32>,
    rank: Vec<u32>,
    list: Vec<u32>,
    at: Vec<[f32; 4]>,
    force: Vec<[f32; 4]>,
    counts: Vec<u32>,
    starts: Vec<u32>,
}

impl GatherBufs {
    fn new(plan: &IbPlan) -> GatherBufs {
        let Some(bins) = plan.bins else {
            return GatherBufs::default();
        };
        let n = plan.body.len();
        GatherBufs {
            key: vec![0; n],
            rank: vec![0; n],
            list: vec![0; n],
            at: vec![[0.0; 4]; n],
            force: vec![[0.0; 4]; n],
            counts: vec![0; bins.entries()],
            starts: vec![0; bins.entries()],
        }
    }
}

impl CpuIb {
    fn new(plan: IbPlan) -> CpuIb {
        CpuIb {
            gather: GatherBufs::new(&plan),
            table: vec![EMPTY; plan.bricks.count()],
            brick_of: vec![0; plan.capacity as usize],
            pool: vec![0.0; pool_len(plan.capacity)],
            pass: vec![0; pass_len(plan.capacity)],
            counter: vec![0; counter::WORDS],
            sample_force: vec![0.0; 3 * plan.body.len()],
            ring: vec![0; super::ib::plan::RING_STEPS * RECORD_FLOATS],
            records: RecordRing::default(),
            taken: Vec::new(),
            plan,
        }
    }

    fn band(&mut self) -> BandMut {
        BandMut {
            bricks: self.plan.bricks,
            capacity: self.plan.capacity,
            _pad: 0,
            table: view_mut(&mut self.table),
            brick_of: view_mut(&mut self.brick_of),
            pool: view_mut(&mut self.pool),
            pass: view_mut(&mut self.pass),
            counter: view_mut(&mut self.counter),
        }
    }

    fn band_ref(&self) -> BandRef {
        BandRef::new(self.plan.bricks, view(&self.table), view(&self.pool))
    }

    /// Decodes the pending force records into `taken`; on a slab, summed over every rank
    /// first (collective).
    fn drain(&mut self, halo: Option<&super::slab::CpuHalo>) -> Result<(), FluidError> {
        if let Some(h) = halo {
            let n = self.records.pending_values();
            super::slab::sum_records(h.comm.as_ref(), &mut self.ring[..n])?;
        }
        let rows = self.records.drain(&self.plan, &self.ring);
        self.taken.extend(rows);
        Ok(())
    }
}

/// Kernel arguments over host buffers that rayon tasks may share: every task writes disjoint
/// cells (the contract of `stream_collide_cell` and `init_cell`).
#[derive(Clone, Copy)]
struct Shared<A>(A);
// SAFETY: see above; the buffers outlive the parallel loop that uses the arguments.
unsafe impl<A> Send for Shared<A> {}
unsafe impl<A> Sync for Shared<A> {}

fn view<T>(v: &[T]) -> DevSlice<T> {
    // SAFETY: the slice's memory, for as long as the caller keeps it borrowed.
    unsafe { DevSlice::from_raw(v.as_ptr(), v.len() as u64) }
}

pub(crate) fn view_mut<T>(v: &mut [T]) -> DevSliceMut<T> {
    // SAFETY: as `view`, written only through the returned view meanwhile.
    unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
}

/// Opens the CPU reference with `setup` initialised, in its storage.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    if setup.split {
        return Err(FluidError::Invalid(
            "ACM-MRT's split kernels are a GPU launch: use --backend cuda".into(),
        ));
    }
    let streaming = setup.streaming.unwrap_or_default();
    with_storage!(setup.storage, streaming, S => Ok(Box::new(CpuFluid::<S>::new(setup)?)))
}

/// Opens one rank's slab (`setup` from [`super::slab::SlabPlan::local_setup`], pull
/// streaming) exchanging its faces through `halo`.
pub fn open_slab(
    setup: &Setup,
    halo: super::slab::CpuHalo,
) -> Result<Box<dyn FluidBackend>, FluidError> {
    use murmur_common::lbm::{Fp16C, Fp16S, Fp32};
    Ok(match setup.storage {
        StorageKind::Fp32 => Box::new(CpuFluid::<Fp32>::new(setup)?.with_halo(halo)?),
        StorageKind::Fp16s => Box::new(CpuFluid::<Fp16S>::new(setup)?.with_halo(halo)?),
        StorageKind::Fp16c => Box::new(CpuFluid::<Fp16C>::new(setup)?.with_halo(halo)?),
    })
}

impl<S: Storage> CpuFluid<S> {
    pub fn new(setup: &Setup) -> Result<CpuFluid<S>, FluidError> {
        let lattice = setup.lattice();
        let n = lattice.cells();
        if setup.flags.len() != n {
            return Err(FluidError::Invalid(format!(
                "setup sizes disagree: {} cells, {} flags",
                n,
                setup.flags.len()
            )));
        }
        let flags = setup.prepared_flags();
        let pops = Populations::<S>::new(lattice, setup.layout, 0);
        let mut f = vec![S::Elem::default(); pops.len()];
        let f_next = if S::IN_PLACE { Vec::new() } else { f.clone() };
        let init = Shared(Init {
            pops,
            initial: setup.initial,
            flags: view(&flags),
            f: view_mut(&mut f),
        });
        (0..n).into_par_iter().with_min_len(CHUNK).for_each(|cell| {
            let a = &init;
            // SAFETY: the buffers are sized for the lattice (checked above); each cell writes
            // only its own slots.
            unsafe { init_cell(&a.0, cell) };
        });
        let outlet_u = if flags.iter().any(|&b| b & KIND_MASK == OUTLET) {
            let mut u = vec![0.0f32; 3 * n];
            u.par_chunks_mut(3).enumerate().for_each(|(cell, v)| {
                let (x, y, z) = lattice.coords(cell);
                let fluid = flags[cell] & KIND_MASK == murmur_common::lbm::boundary::FLUID;
                v.copy_from_slice(&setup.initial.at([x, y, z], fluid).1);
            });
            u
        } else {
            Vec::new()
        };
        Ok(CpuFluid {
            model: setup.model,
            params: setup.params,
            pops,
            layout: setup.layout,
            flags,
            f,
            f_next,
            outlet_u,
            times: StageTimes::default(),
            step: 0,
            ib: IbPlan::new(lattice, &setup.immersed).map(CpuIb::new),
            halo: None,
            smoke: None,
            raster: Default::default(),
        })
    }

    /// This lattice as one rank's slab ([`super::slab`]): the ghost layers are filled now and
    /// after every step.
    pub fn with_halo(mut self, halo: super::slab::CpuHalo) -> Result<CpuFluid<S>, FluidError> {
        if S::IN_PLACE {
            return Err(FluidError::Invalid(
                "slabs stream with pull, not in place".into(),
            ));
        }
        halo.exchange(&self.now(), &mut self.f)?;
        self.halo = Some(halo);
        Ok(self)
    }

    /// The populations as the next step finds them (for stages that write none).
    fn now(&self) -> Populations<S> {
        self.pops.at_step(self.step + 1)
    }

    fn band_ref(&self) -> BandRef {
        self.ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref())
    }

    /// The immersed-boundary stages of step `step` (1-based), before the stream-collide: the
    /// same stage functions as the kernels, samples in order (the spreading and the solids'
    /// sums add in sample order), band cells in parallel.
    fn immersed(
        &mut self,
        p: &LbmParams,
        step: u64,
        times: &mut StageTimes,
    ) -> Result<(), FluidError> {
        let Some(ib) = self.ib.as_mut() else {
            return Ok(());
        };
        if ib.records.next_slot().is_none() {
            ib.drain(self.halo.as_ref())?;
        }
        let slot = ib.records.next_slot().unwrap_or(0);
        let solids = ib.plan.states(step);
        let samples = SampleSet {
            body: view(&ib.plan.body),
            solid: view(&ib.plan.solid_of),
        };
        let record = view_mut(&mut ib.ring[slot * RECORD_FLOATS..(slot + 1) * RECORD_FLOATS]);
        stage(times, "ib_clear", || {
            let a = IbClear {
                table: view_mut(&mut ib.table),
                counter: view_mut(&mut ib.counter),
                record,
            };
            for i in 0..stages::clear_items(&a) as usize {
                // SAFETY: the buffers are the plan's sizes; one call per element.
                unsafe { stages::clear(&a, i) };
            }
        });
        let flags = view(&self.flags);
        let n_samples = ib.plan.body.len();
        let band = ib.band();
        stage(times, "ib_mark", || {
            let a = IbMark {
                domain: ib.plan.domain,
                flags,
                samples,
                band,
                solids,
            };
            for s in 0..n_samples {
                // SAFETY: `s` indexes the samples; the table was just cleared.
                unsafe { stages::mark(&a, s) };
            }
        });
        if let Some(bins) = ib.plan.bins {
            let g = &mut ib.gather;
            stage(times, "ib_bin", || {
                let a = IbBin {
                    domain: ib.plan.domain,
                    bins,
                    samples,
                    band,
                    counts: view_mut(&mut g.counts),
                    key: view_mut(&mut g.key),
                    rank: view_mut(&mut g.rank),
                    solids,
                };
                for s in 0..n_samples {
                    // SAFETY: `s` indexes the samples; the band table is complete, the counts
                    // zero (the scan leaves them so).
                    unsafe { gather::bin(&a, s) };
                }
            });
            stage(times, "ib_scan", || {
                gather::scan(&mut g.counts, &mut g.starts)
            });
            stage(times, "ib_place", || {
                let a = IbPlace {
                    key: view(&g.key),
                    rank: view(&g.rank),
                    starts: view(&g.starts),
                    list: view_mut(&mut g.list),
                };
                for s in 0..n_samples {
                    // SAFETY: keys and ranks of this step's binning, starts their scan.
                    unsafe { gather::place(&a, s) };
                }
            });
        }
        let items = ib.plan.band_items() as usize;
        stage(times, "ib_velocity", || {
            let a = Shared(IbVelocity {
                p: *p,
                pops: self.pops.at_step(step),
                flags,
                f: view(&self.f),
                band,
            });
            (0..items)
                .into_par_iter()
                .with_min_len(CHUNK)
                .for_each(|i| {
                    let a = &a;
                    // SAFETY: each band cell writes only its own values.
                    unsafe { stages::band_velocity(&a.0, i) };
                });
        });
        for pass in 0..ib.plan.passes {
            if let Some(halo) = self.halo.as_ref() {
                let faces = ib.plan.faces_reached(step);
                stage(times, "ib_band_halo", || halo.exchange_band(band, faces))?;
            }
            stage(times, "ib_force", || {
                let g = &mut ib.gather;
                let blocks = ib.plan.bins.is_some_and(|b| b.kind == BIN_BLOCK);
                let a = IbForce {
                    domain: ib.plan.domain,
                    pass,
                    passes: ib.plan.passes,
                    spread: if ib.plan.bins.is_some() {
                        SPREAD_STORE
                    } else {
                        SPREAD_SCATTER
                    },
                    _pad: 0,
                    flags,
                    samples,
                    order: if blocks {
                        view(&g.list)
                    } else {
                        DevSlice::empty()
                    },
                    band,
                    record,
                    sample_force: view_mut(&mut ib.sample_force),
                    at: view_mut(&mut g.at),
                    force: view_mut(&mut g.force),
                    solids,
                };
                for s in 0..n_samples {
                    // SAFETY: one sample at a time: plain additions are the atomic ones.
                    let r =
                        unsafe { stages::sample_force(&a, s, |p, v| *p = (*p).wrapping_add(v)) };
                    for c in 0..3 {
                        // SAFETY: the record holds every solid's values.
                        unsafe {
                            let f = record.at(record_index(r.solid, c));
                            *f = (*f).wrapping_add(record_fixed(r.force[c]));
                            let t = record.at(record_index(r.solid, 3 + c));
                            *t = (*t).wrapping_add(record_fixed(r.torque[c]));
                        }
                    }
                }
            });
            if let Some(bins) = ib.plan.bins {
                let g = &ib.gather;
                stage(times, "ib_gather", || {
                    let a = Shared(IbGather {
                        domain: ib.plan.domain,
                        bins,
                        band,
                        starts: view(&g.starts),
                        list: if bins.kind == BIN_BLOCK {
                            DevSlice::empty()
                        } else {
                            view(&g.list)
                        },
                        at: view(&g.at),
                        force: view(&g.force),
                    });
                    (0..items)
                        .into_par_iter()
                        .with_min_len(CHUNK)
                        .for_each(|i| {
                            let a = &a;
                            // SAFETY: each band cell reads the stored samples and updates
                            // only its own values.
                            unsafe { gather::gather(&a.0, i) };
                        });
                });
                continue;
            }
            stage(times, "ib_update", || {
                let a = Shared(IbUpdate { band });
                (0..items)
                    .into_par_iter()
                    .with_min_len(CHUNK)
                    .for_each(|i| {
                        let a = &a;
                        // SAFETY: each band cell updates only its own values.
                        unsafe { stages::band_update(&a.0, i) };
                    });
            });
        }
        if ib.counter[counter::OVERFLOW] != 0 {
            return Err(band_overflow(ib.plan.capacity));
        }
        ib.records.pending.push(step);
        Ok(())
    }

    /// Stage `stream_collide` of model `M` over every cell (in place, or into the other copy):
    /// the same arguments and cell function as the GPU's kernels.
    fn stream_collide<M: Model>(&mut self, params: LbmParams, step: u64) {
        let n = params.lattice.cells();
        let band = self.band_ref();
        let f = view_mut(&mut self.f);
        let dst = if S::IN_PLACE {
            f
        } else {
            view_mut(&mut self.f_next)
        };
        let a = Shared(
            StreamCollide::<M, S>::new(params, self.pops.at_step(step), view(&self.flags), f)
                .with_dst(dst)
                .with_band(band)
                .with_outlet_u(view_mut(&mut self.outlet_u)),
        );
        let fma = has_fma();
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|chunk| {
            let a = &a;
            let cells = chunk * CHUNK..((chunk + 1) * CHUNK).min(n);
            // SAFETY: buffers are sized for the lattice (checked in `new`); each cell touches
            // only its own slots this step and its own outlet velocity (indexed by cell); `fma`
            // says whether the CPU has FMA instructions.
            unsafe { stream_collide_cells(&a.0, cells, fma) };
        });
    }
}

/// Whether the CPU executes FMA instructions (x86-64 since Haswell / Piledriver; every AArch64
/// CPU, where `f32::mul_add` is one instruction without asking).
fn has_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `stream_collide_cell` over `cells`; with `fma`, compiled for FMA instructions (x86-64): the
/// collisions' `math::fma` (`f32::mul_add`) is then one instruction, otherwise a call to the C
/// library's `fmaf`, which also rounds once (the same results, a few times slower).
///
/// # Safety
/// As `stream_collide_cell` for every cell of `cells`; `fma` only if [`has_fma`].
unsafe fn stream_collide_cells<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cells: std::ops::Range<usize>,
    fma: bool,
) {
    #[cfg(target_arch = "x86_64")]
    if fma {
        // SAFETY: the CPU has FMA (the caller's word), the rest as `stream_collide_cell`.
        return unsafe { cells_fma(a, cells) };
    }
    let _ = fma;
    for cell in cells {
        // SAFETY: as `stream_collide_cell` (the caller's word).
        unsafe { stream_collide_cell(a, cell, cell) };
    }
}

/// The loop of [`stream_collide_cells`] compiled with the `fma` target feature (the cell
/// function is inlined into it, so its `f32::mul_add` become `vfmadd` instructions).
///
/// # Safety
/// The CPU has FMA; as `stream_collide_cell` for every cell of `cells`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn cells_fma<M: Model, S: Storage>(a: &StreamCollide<M, S>, cells: std::ops::Range<usize>) {
    for cell in cells {
        // SAFETY: as `stream_collide_cell` (the caller's word).
        unsafe { stream_collide_cell(a, cell, cell) };
    }
}

impl<S: Storage> CpuFluid<S> {
    /// The immersed-boundary force density of every cell after the last step (zero outside the
    /// band; `None` without solids): what the stream-collide step added.
    pub fn band_forces(&self) -> Option<Vec<[f32; 3]>> {
        let ib = self.ib.as_ref()?;
        let band = ib.band_ref();
        let cells = self.params.lattice.cells();
        // SAFETY: the table and pool are the plan's sizes; `cell < cells`.
        Some(
            (0..cells)
                .map(|c| unsafe { band.force(c) }.unwrap_or([0.0; 3]))
                .collect(),
        )
    }
}

impl<S: Storage> FluidBackend for CpuFluid<S> {
    fn describe(&self) -> String {
        format!("cpu (rayon, {} threads)", rayon::current_num_threads())
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
        streaming_of::<S>()
    }

    fn step(&mut self) -> Result<(), FluidError> {
        let p = self.params;
        let mut times = std::mem::take(&mut self.times);
        let step = self.step + 1;
        let ib = self.immersed(&p, step, &mut times);
        if ib.is_ok() {
            stage(
                &mut times,
                "stream_collide",
                || with_model!(self.model, M => self.stream_collide::<M>(p, step)),
            );
            times.steps += 1;
        }
        self.times = times;
        ib?;
        self.step = step;
        if !S::IN_PLACE {
            std::mem::swap(&mut self.f, &mut self.f_next);
        }
        if let Some(halo) = self.halo.as_ref() {
            let pops = self.pops.at_step(self.step + 1);
            let f = &mut self.f;
            stage(&mut self.times, "halo", || halo.exchange(&pops, f))?;
        }
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        Ok(match self.ib.as_mut() {
            Some(ib) => {
                ib.drain(self.halo.as_ref())?;
                std::mem::take(&mut ib.taken)
            }
            None => Vec::new(),
        })
    }

    fn samples(&mut self) -> Result<Option<SampleSnapshot>, FluidError> {
        Ok(self
            .ib
            .as_ref()
            .map(|ib| ib.plan.snapshot(self.step, &ib.sample_force)))
    }

    fn health(&mut self, bounds: &health::Bounds) -> Result<Option<Report>, FluidError> {
        let a = Shared(Health {
            p: self.params,
            pops: self.now(),
            bounds: *bounds,
            flags: view(&self.flags),
            f: view(&self.f),
            band: self.band_ref(),
            out: murmur_common::DevSliceMut::empty(),
        });
        let n = self.params.lattice.cells();
        let w = (0..n)
            .into_par_iter()
            .with_min_len(CHUNK)
            .map(|c| {
                let a = &a;
                // SAFETY: the buffers hold the lattice's cells; nothing writes meanwhile.
                unsafe { cell_words(&a.0, c) }
            })
            .reduce(
                || [0u32; word::WORDS],
                |x, y| std::array::from_fn(|i| x[i].max(y[i])),
            );
        Ok(Report::decode(w))
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        let lattice = self.params.lattice;
        let n = lattice.cells();
        let a = Shared((
            self.params,
            self.now(),
            view(&self.flags),
            view(&self.f),
            self.band_ref(),
        ));
        let values: Vec<(f32, [f32; 3])> = (0..n)
            .into_par_iter()
            .with_min_len(CHUNK)
            .map(|c| {
                let a = &a;
                let (p, pops, flags, f, band) = &a.0;
                // SAFETY: the buffers hold the lattice's cells; nothing writes meanwhile.
                unsafe { cell_fields(p, pops, *flags, *f, band, c) }
            })
            .collect();
        let mut data = vec![0.0f32; 4 * n];
        for (c, (rho, u)) in values.into_iter().enumerate() {
            data[c] = rho;
            data[n + c] = u[0];
            data[2 * n + c] = u[1];
            data[3 * n + c] = u[2];
        }
        Ok(Fields { lattice, data })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(canonical(&self.now(), &self.f))
    }

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

    fn allocated_bytes(&self) -> u64 {
        ((self.f.len() + self.f_next.len()) * std::mem::size_of::<S::Elem>()
            + self.flags.len()
            + 4 * self.outlet_u.len()) as u64
    }

    fn times(&mut self) -> Result<StageTimes, FluidError> {
        Ok(self.times.clone())
    }

    fn reset_times(&mut self) {
        self.times.reset();
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
        };
        self.raster
            .draw(frame, &input, rgba)
            .map_err(|e| FluidError::Invalid(e.to_string()))
    }
}

/// The streaming scheme of storage type `S`.
pub fn streaming_of<S: Storage>() -> Streaming {
    if S::IN_PLACE {
        Streaming::InPlace
    } else {
        Streaming::Pull
    }
}

/// The populations `f` (stored as `S`, as `pops` finds them) decoded into the canonical order
/// `f[q cells + cell]`.
pub fn canonical<S: Storage>(pops: &Populations<S>, f: &[S::Elem]) -> Vec<f32> {
    let n = pops.lattice.cells();
    let src = Shared(view(f));
    let cells: Vec<[f32; Q]> = (0..n)
        .into_par_iter()
        .with_min_len(CHUNK)
        .map(|c| {
            let f = &src;
            let f = f.0;
            // SAFETY: `f` holds the lattice in `pops`' layout.
            unsafe { pops.own_all(f, c) }
        })
        .collect();
    let mut out = vec![0.0f32; Q * n];
    for (c, v) in cells.iter().enumerate() {
        for (q, &x) in v.iter().enumerate() {
            out[q * n + c] = x;
        }
    }
    out
}

/// The error of a band that outgrew its pool (a solid larger than its bounding radius says).
pub fn band_overflow(capacity: u32) -> FluidError {
    FluidError::Invalid(format!(
        "the immersed-boundary band needs more than its {capacity} bricks: a solid reaches \
         beyond its bounding radius"
    ))
}
