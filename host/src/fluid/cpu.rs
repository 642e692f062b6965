//! The CPU reference fluid: the GPU's stage, one for one, on all cores (rayon), calling the same
//! `murmur_common::lbm::stream_collide_cell` the kernels call. Results equal the GPU's: the same
//! operations in the same order, each rounded once (`math::fma` included) on both.

use super::forces::ForceSample;
use super::immersed::{IbPlan, RecordRing, SampleSnapshot};
use super::{Fields, FluidBackend, FluidError, Setup};
use crate::timing::{stage, StageTimes};
use murmur_common::lbm::abi::{
    Health, IbClear, IbForce, IbMark, IbUpdate, IbVelocity, Init, SampleSet, StreamCollide,
    RECORD_FLOATS,
};
use murmur_common::lbm::band::{counter, pass_len, pool_len, BandMut, BandRef, EMPTY};
use murmur_common::lbm::health::{self, cell_words, word, Report};
use murmur_common::lbm::immersed::{self, record_fixed, record_index};
use murmur_common::lbm::{
    init_cell, stream_collide_cell, CollisionModel, Lattice, LbmParams, Model, Populations,
};
use murmur_common::{with_model, DevSlice, DevSliceMut};
use rayon::prelude::*;

/// Cells per rayon task (a few z-rows: big enough to amortise scheduling).
const CHUNK: usize = 4096;

/// CPU fluid with two population buffers (pull scheme, ping-pong) allocated once.
pub struct CpuFluid {
    model: CollisionModel,
    params: LbmParams,
    flags: Vec<u8>,
    f_src: Vec<f32>,
    f_dst: Vec<f32>,
    fields: Vec<f32>,
    times: StageTimes,
    /// Steps done.
    step: u64,
    ib: Option<CpuIb>,
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
}

impl CpuIb {
    fn new(plan: IbPlan) -> CpuIb {
        CpuIb {
            table: vec![EMPTY; plan.bricks.count()],
            brick_of: vec![0; plan.capacity as usize],
            pool: vec![0.0; pool_len(plan.capacity)],
            pass: vec![0; pass_len(plan.capacity)],
            counter: vec![0; counter::WORDS],
            sample_force: vec![0.0; 3 * plan.body.len()],
            ring: vec![0; super::immersed::RING_STEPS * RECORD_FLOATS],
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

fn view_mut<T>(v: &mut [T]) -> DevSliceMut<T> {
    // SAFETY: as `view`, written only through the returned view meanwhile.
    unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
}

impl CpuFluid {
    pub fn new(setup: &Setup) -> Result<CpuFluid, FluidError> {
        let n = setup.lattice().cells();
        if setup.flags.len() != n || setup.init.data.len() != 4 * n {
            return Err(FluidError::Invalid(format!(
                "setup sizes disagree: {} cells, {} flags, {} field values",
                n,
                setup.flags.len(),
                setup.init.data.len()
            )));
        }
        let lattice = setup.lattice();
        let mut f = vec![0.0f32; Populations::new(lattice).len()];
        let init = Shared(Init {
            lattice,
            _pad: 0,
            fields: view(&setup.init.data),
            f: view_mut(&mut f),
        });
        (0..n).into_par_iter().with_min_len(CHUNK).for_each(|cell| {
            let a = &init;
            // SAFETY: the buffers are sized for the lattice (checked above); each cell writes
            // only its own slots.
            unsafe { init_cell(&a.0, cell) };
        });
        Ok(CpuFluid {
            model: setup.model,
            params: setup.params,
            flags: setup.prepared_flags(),
            f_dst: f.clone(),
            f_src: f,
            fields: setup.init.data.clone(),
            times: StageTimes::default(),
            step: 0,
            ib: IbPlan::new(lattice, &setup.immersed).map(CpuIb::new),
        })
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
            let rows = ib.records.drain(&ib.plan, &ib.ring);
            ib.taken.extend(rows);
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
            for i in 0..immersed::clear_items(&a) as usize {
                // SAFETY: the buffers are the plan's sizes; one call per element.
                unsafe { immersed::clear(&a, i) };
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
                unsafe { immersed::mark(&a, s) };
            }
        });
        let items = ib.plan.band_items() as usize;
        stage(times, "ib_velocity", || {
            let a = Shared(IbVelocity {
                p: *p,
                flags,
                src: view(&self.f_src),
                band,
            });
            (0..items)
                .into_par_iter()
                .with_min_len(CHUNK)
                .for_each(|i| {
                    let a = &a;
                    // SAFETY: each band cell writes only its own values.
                    unsafe { immersed::band_velocity(&a.0, i) };
                });
        });
        for pass in 0..ib.plan.passes {
            stage(times, "ib_force", || {
                let a = IbForce {
                    domain: ib.plan.domain,
                    pass,
                    passes: ib.plan.passes,
                    flags,
                    samples,
                    band,
                    record,
                    sample_force: view_mut(&mut ib.sample_force),
                    solids,
                };
                for s in 0..n_samples {
                    // SAFETY: one sample at a time: plain additions are the atomic ones.
                    let r =
                        unsafe { immersed::sample_force(&a, s, |p, v| *p = (*p).wrapping_add(v)) };
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
            stage(times, "ib_update", || {
                let a = Shared(IbUpdate { band });
                (0..items)
                    .into_par_iter()
                    .with_min_len(CHUNK)
                    .for_each(|i| {
                        let a = &a;
                        // SAFETY: each band cell updates only its own values.
                        unsafe { immersed::band_update(&a.0, i) };
                    });
            });
        }
        if ib.counter[counter::OVERFLOW] != 0 {
            return Err(band_overflow(ib.plan.capacity));
        }
        ib.records.pending.push(step);
        Ok(())
    }

    /// Stage `stream_collide` of model `M` over every cell: the same arguments and cell
    /// function as the GPU's kernels.
    fn stream_collide<M: Model>(&mut self, params: LbmParams) {
        let n = params.lattice.cells();
        let band = self.ib.as_ref().map_or(BandRef::NONE, |ib| ib.band_ref());
        let step = Shared(
            StreamCollide::<M>::new(
                params,
                view(&self.flags),
                view(&self.f_src),
                view_mut(&mut self.f_dst),
                view_mut(&mut self.fields),
            )
            .with_band(band),
        );
        let fma = has_fma();
        (0..n.div_ceil(CHUNK)).into_par_iter().for_each(|chunk| {
            let a = &step;
            let cells = chunk * CHUNK..((chunk + 1) * CHUNK).min(n);
            // SAFETY: buffers are sized for the lattice (checked in `new`), `src` and `dst`
            // are different buffers, each cell writes only its own slots; `fma` says whether
            // the CPU has FMA instructions.
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
unsafe fn stream_collide_cells<M: Model>(
    a: &StreamCollide<M>,
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
        unsafe { stream_collide_cell(a, cell) };
    }
}

/// The loop of [`stream_collide_cells`] compiled with the `fma` target feature (the cell
/// function is inlined into it, so its `f32::mul_add` become `vfmadd` instructions).
///
/// # Safety
/// The CPU has FMA; as `stream_collide_cell` for every cell of `cells`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn cells_fma<M: Model>(a: &StreamCollide<M>, cells: std::ops::Range<usize>) {
    for cell in cells {
        // SAFETY: as `stream_collide_cell` (the caller's word).
        unsafe { stream_collide_cell(a, cell) };
    }
}

impl FluidBackend for CpuFluid {
    fn describe(&self) -> String {
        format!("cpu (rayon, {} threads)", rayon::current_num_threads())
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
        let mut times = std::mem::take(&mut self.times);
        let step = self.step + 1;
        let ib = self.immersed(&p, step, &mut times);
        if ib.is_ok() {
            stage(
                &mut times,
                "stream_collide",
                || with_model!(self.model, M => self.stream_collide::<M>(p)),
            );
            times.steps += 1;
        }
        self.times = times;
        ib?;
        self.step = step;
        std::mem::swap(&mut self.f_src, &mut self.f_dst);
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        Ok(match self.ib.as_mut() {
            Some(ib) => {
                let rows = ib.records.drain(&ib.plan, &ib.ring);
                let mut all = std::mem::take(&mut ib.taken);
                all.extend(rows);
                all
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
            lattice: self.params.lattice,
            bounds: *bounds,
            flags: view(&self.flags),
            fields: view(&self.fields),
            out: murmur_common::DevSliceMut::empty(),
        });
        let n = self.params.lattice.cells();
        let w = (0..n)
            .into_par_iter()
            .with_min_len(CHUNK)
            .map(|c| {
                let a = &a;
                // SAFETY: the fields and flags hold the lattice's cells.
                unsafe { cell_words(&a.0, c) }
            })
            .reduce(
                || [0u32; word::WORDS],
                |x, y| std::array::from_fn(|i| x[i].max(y[i])),
            );
        Ok(Report::decode(w))
    }

    fn fields(&mut self) -> Result<Fields, FluidError> {
        Ok(Fields {
            lattice: self.params.lattice,
            data: self.fields.clone(),
        })
    }

    fn populations(&mut self) -> Result<Vec<f32>, FluidError> {
        Ok(self.f_src.clone())
    }

    fn memory_bandwidth(&mut self) -> Result<f64, FluidError> {
        let bytes = 2.0 * 4.0 * self.f_src.len() as f64;
        let mut best = f64::INFINITY;
        for _ in 0..3 {
            let t0 = std::time::Instant::now();
            self.f_dst
                .par_chunks_mut(1 << 16)
                .zip(self.f_src.par_chunks(1 << 16))
                .for_each(|(d, s)| d.copy_from_slice(s));
            best = best.min(t0.elapsed().as_secs_f64());
        }
        Ok(bytes / best)
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
}

/// The error of a band that outgrew its pool (a solid larger than its bounding radius says).
pub fn band_overflow(capacity: u32) -> FluidError {
    FluidError::Invalid(format!(
        "the immersed-boundary band needs more than its {capacity} bricks: a solid reaches \
         beyond its bounding radius"
    ))
}
