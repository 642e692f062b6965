//! The CPU reference fluid: the GPU's stages, one for one, on all cores (rayon), walking the same
//! kind of [`FluidPlan`] in order and calling the same `murmur_common::lbm::stream_collide_cell`
//! the kernels call. Results equal the GPU's: the same operations in the same order, each rounded
//! once (`math::fma` included) on both.

mod hooks;
mod ib;
mod state;
mod statistics;
mod walls;

use self::ib::CpuIb;
use self::walls::CpuWalls;
use super::forces::ForceSample;
use super::ib::plan::{IbPlan, SampleSnapshot};
use super::plan::{FluidPlan, FluidStage, IbShape, PlanInputs, SlabShape, Target};
use super::{BenchHooks, Fields, FluidBackend, FluidError, Setup, ViewHooks};
use crate::timing::StageTimes;
use murmur_common::lbm::abi::{Health, Init, StreamCollide};
use murmur_common::lbm::boundary::{KIND_MASK, OUTLET};
use murmur_common::lbm::health::{self, cell_words, word, Report};
use murmur_common::lbm::ib::band::BandRef;
use murmur_common::lbm::{
    cell_fields, init_cell, stream_collide_cell, CollisionModel, Lattice, LbmParams, Model,
    Populations, Storage, StorageKind, Streaming, Q,
};
use murmur_common::{with_model, with_storage, DevSlice, DevSliceMut};
use rayon::prelude::*;

/// Cells per rayon task (a few z-rows: big enough to amortise scheduling).
pub(super) const CHUNK: usize = 4096;

/// CPU fluid with populations stored as `S`: one buffer streamed in place, or two (pull).
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
    /// WALE's velocity fields ([`murmur_common::lbm::wale`]): the one `velocity[steps done %
    /// 2]` holds the last step's collision velocities, the step writes the other (both empty
    /// without WALE).
    velocity: [Vec<f32>; 2],
    times: StageTimes,
    /// Steps done.
    step: u64,
    ib: Option<CpuIb>,
    /// Fixed solids with interpolated bounce-back (`None`: none).
    walls: Option<CpuWalls>,
    /// The immersed boundary's stencils' domain (the scene's periodic faces; a rank's slab):
    /// where pushes spread.
    push_domain: murmur_common::lbm::ib::stencil::Domain,
    /// The band's force a restore put back, until the next step (a band made for pushes after
    /// the restore takes it).
    kept_band: Vec<super::ib::plan::BandForce>,
    /// The slab exchange of a rank among several (None: the whole lattice).
    halo: Option<super::slab::CpuHalo>,
    /// A slab's faces packed by `halo_send` for `halo_receive`.
    packed: Option<super::slab::Packed>,
    /// A restore wrote a slab's owned cells: the next step exchanges its ghost layers first.
    stale_ghosts: bool,
    /// The stages of one step.
    plan: FluidPlan,
    /// The turbulence statistics' keys and sums (from their first `begin`).
    stats: Option<statistics::CpuStats>,
    /// The viewer's smoke (from the first advection) and frame scratch.
    smoke: Option<crate::raster::fluid::CpuSmoke>,
    raster: crate::raster::fluid::CpuFluidRaster,
}

/// Kernel arguments over host buffers that rayon tasks may share: every task writes disjoint
/// cells (the contract of `stream_collide_cell` and `init_cell`).
#[derive(Clone, Copy)]
pub(super) struct Shared<A>(A);
// SAFETY: see above; the buffers outlive the parallel loop that uses the arguments.
unsafe impl<A> Send for Shared<A> {}
unsafe impl<A> Sync for Shared<A> {}

pub(super) fn view<T>(v: &[T]) -> DevSlice<T> {
    // SAFETY: the slice's memory, for as long as the caller keeps it borrowed.
    unsafe { DevSlice::from_raw(v.as_ptr(), v.len() as u64) }
}

pub(crate) fn view_mut<T>(v: &mut [T]) -> DevSliceMut<T> {
    // SAFETY: as `view`, written only through the returned view meanwhile.
    unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
}

/// Opens the CPU reference with `setup` initialised, in its storage.
pub fn open(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
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

/// The CPU's plan of a step: the immersed boundary's stages, then every cell, then a slab's
/// exchange.
fn cpu_plan(ib: Option<&CpuIb>, slab: Option<SlabShape>, walls: bool) -> FluidPlan {
    FluidPlan::new(&PlanInputs {
        target: Target::Cpu,
        ib: ib.map(|ib| IbShape {
            samples: ib.plan.has_samples(),
            pushes: ib.plan.pushes > 0,
            passes: ib.plan.passes,
            bins: ib.plan.bins.is_some(),
            gather: ib.plan.spread.gathers(),
        }),
        slab,
        boundary: super::plan::BoundaryLane::None,
        sponge: false,
        walls,
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
        // Both copies start as the initial state: the slots of cells that never run (walls,
        // inlets, outlets) then hold the same values in both, whatever the step's parity.
        let f_next = if S::IN_PLACE { Vec::new() } else { f.clone() };
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
        let ib = IbPlan::new(lattice, &setup.immersed).map(CpuIb::new);
        Ok(CpuFluid {
            model: setup.model,
            params: setup.params,
            pops,
            layout: setup.layout,
            flags,
            f,
            f_next,
            outlet_u,
            velocity: {
                let u = setup.initial_velocity();
                [u.clone(), u]
            },
            times: StageTimes::default(),
            step: 0,
            plan: cpu_plan(ib.as_ref(), None, !setup.walls.is_empty()),
            ib,
            walls: CpuWalls::new(setup),
            push_domain: setup.immersed.domain(setup.params.lattice),
            kept_band: Vec::new(),
            halo: None,
            packed: None,
            stale_ghosts: false,
            stats: None,
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
        let l = self.params.lattice;
        let slab = SlabShape {
            axis: halo.axis,
            owned: [l.nx, l.ny, l.nz][halo.axis as usize] - 2,
        };
        self.plan = cpu_plan(self.ib.as_ref(), Some(slab), self.walls.is_some());
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

    /// Step `step` (1-based): the plan's entries in order; the time since the previous timed
    /// entry counts into the next one that is timed, as the GPU's events do.
    fn walk(&mut self, step: u64, times: &mut StageTimes) -> Result<(), FluidError> {
        if let Some(ib) = self.ib.as_mut() {
            ib.begin(step, self.halo.as_ref())?;
        }
        let mut t0 = std::time::Instant::now();
        for i in 0..self.plan.stages.len() {
            let entry = self.plan.stages[i];
            for _ in 0..entry.repeat {
                self.run_entry(entry.stage, step)?;
            }
            if let Some(name) = entry.timed() {
                let t1 = std::time::Instant::now();
                times.add(name, t1 - t0);
                t0 = t1;
            }
        }
        Ok(())
    }

    /// Runs stage `stage` of step `step`.
    fn run_entry(&mut self, stage: FluidStage, step: u64) -> Result<(), FluidError> {
        let p = self.params;
        let flags = view(&self.flags);
        match stage {
            FluidStage::WallLinks => {
                if let Some(walls) = self.walls.as_mut() {
                    walls.fill(self.pops.at_step(step), &mut self.f, step);
                }
            }
            FluidStage::StreamCollide(_) => {
                if let Some(ib) = self.ib.as_mut() {
                    ib.end(step)?;
                }
                with_model!(self.model, M => self.stream_collide::<M>(p, step));
            }
            FluidStage::HaloSend => {
                let pops = self.pops.at_step(step + 1);
                if let Some(halo) = self.halo.as_ref() {
                    self.packed = Some(halo.pack(&pops, &mut self.f_next));
                }
            }
            FluidStage::HaloReceive => {
                let pops = self.pops.at_step(step + 1);
                if let (Some(halo), Some(packed)) = (self.halo.as_ref(), self.packed.take()) {
                    halo.receive(packed, &pops, &mut self.f_next)?;
                }
            }
            FluidStage::Sponge(_)
            | FluidStage::Boundary
            | FluidStage::Fork(_)
            | FluidStage::Join(_) => {}
            ib_stage => {
                let Some(ib) = self.ib.as_mut() else {
                    return Ok(());
                };
                match ib_stage {
                    FluidStage::IbClear => ib.clear(),
                    FluidStage::IbMark => ib.mark(flags),
                    FluidStage::IbBin => ib.bin(),
                    FluidStage::IbScan => ib.scan(),
                    FluidStage::IbPlace => ib.place(),
                    FluidStage::IbVelocity => {
                        ib.velocity(&p, self.pops.at_step(step), flags, view(&self.f))
                    }
                    FluidStage::IbBandHalo => {
                        if let Some(halo) = self.halo.as_ref() {
                            ib.band_halo(halo, step)?;
                        }
                    }
                    FluidStage::IbForce { pass } => ib.force(flags, pass),
                    FluidStage::IbGather => ib.gather(),
                    FluidStage::IbUpdate => ib.update(),
                    FluidStage::PushMark => ib.push_mark(flags),
                    FluidStage::PushSpread => ib.push_spread(flags),
                    _ => unreachable!("every lattice stage is matched above"),
                }
            }
        }
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
        // WALE reads the velocities of the step before and writes this step's into the other
        // copy (step 1-based: step 1 reads copy 0).
        let [v0, v1] = &mut self.velocity;
        let (velocity, velocity_out) = if step & 1 == 1 { (v0, v1) } else { (v1, v0) };
        let a = Shared(
            StreamCollide::<M, S>::new(params, self.pops.at_step(step), view(&self.flags), f)
                .with_dst(dst)
                .with_band(band)
                .with_outlet_u(view_mut(&mut self.outlet_u))
                .with_velocity(view(velocity), view_mut(velocity_out)),
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

    fn plan(&self) -> &FluidPlan {
        &self.plan
    }

    fn step(&mut self) -> Result<(), FluidError> {
        if let (true, Some(halo)) = (self.stale_ghosts, self.halo.as_ref()) {
            halo.exchange(&self.now(), &mut self.f)?;
        }
        self.stale_ghosts = false;
        self.kept_band.clear();
        let step = self.step + 1;
        let mut times = std::mem::take(&mut self.times);
        let ran = self.walk(step, &mut times);
        if ran.is_ok() {
            times.steps += 1;
        }
        self.times = times;
        ran?;
        self.step = step;
        if !S::IN_PLACE {
            std::mem::swap(&mut self.f, &mut self.f_next);
        }
        Ok(())
    }

    fn step_count(&self) -> u64 {
        self.step
    }

    fn take_forces(&mut self) -> Result<Vec<ForceSample>, FluidError> {
        let mut rows = match self.ib.as_mut() {
            Some(ib) => {
                ib.drain(self.halo.as_ref())?;
                std::mem::take(&mut ib.taken)
            }
            None => Vec::new(),
        };
        if let Some(walls) = self.walls.as_mut() {
            rows.extend(walls.drain());
        }
        Ok(rows)
    }

    fn samples(&mut self) -> Result<Option<SampleSnapshot>, FluidError> {
        Ok(self
            .ib
            .as_ref()
            .filter(|ib| ib.plan.has_samples())
            .map(|ib| ib.plan.snapshot(self.step, &ib.sample_force)))
    }

    fn enable_pushes(&mut self, most: u32) -> Result<(), FluidError> {
        let domain = self.push_domain;
        let ib = self
            .ib
            .get_or_insert_with(|| CpuIb::new(IbPlan::pushes_only(domain)));
        ib.enable_pushes(most);
        ib.set_band(&self.kept_band)?;
        let slab = self.halo.as_ref().map(|h| {
            let l = self.params.lattice;
            SlabShape {
                axis: h.axis,
                owned: [l.nx, l.ny, l.nz][h.axis as usize] - 2,
            }
        });
        self.plan = cpu_plan(self.ib.as_ref(), slab, self.walls.is_some());
        Ok(())
    }

    fn push(&mut self, pos: &[[f32; 3]], total: &[u64]) -> Result<(), FluidError> {
        match self.ib.as_mut().filter(|ib| ib.plan.pushes > 0) {
            Some(ib) => ib.set_pushes(pos, total),
            None => Err(FluidError::Invalid(
                "this fluid takes no pushes (enable_pushes first)".into(),
            )),
        }
    }

    fn band(&mut self) -> Result<Option<super::ib::plan::BandStats>, FluidError> {
        Ok(self.ib.as_ref().map(|ib| ib.band_stats()))
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
            .reduce(|| [0u32; word::WORDS], health::combine);
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

    fn allocated_bytes(&self) -> u64 {
        ((self.f.len() + self.f_next.len()) * std::mem::size_of::<S::Elem>()
            + self.flags.len()
            + 4 * self.outlet_u.len()
            + 4 * (self.velocity[0].len() + self.velocity[1].len())) as u64
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

    fn read_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        out: &mut [u8],
    ) -> Result<(), FluidError> {
        self.read_piece(cells, out)
    }

    fn write_state_piece(
        &mut self,
        cells: std::ops::Range<usize>,
        data: &[u8],
    ) -> Result<(), FluidError> {
        self.write_piece(cells, data)
    }

    fn snapshot(&mut self) -> Result<Option<super::state::snapshot::Snapshot>, FluidError> {
        Ok(self.snapshot_copy())
    }

    fn capture_small_state(&mut self) -> Result<super::state::SmallState, FluidError> {
        self.capture_small()
    }

    fn restore_small_state(&mut self, small: &super::state::SmallState) -> Result<(), FluidError> {
        self.restore_small(small)
    }

    fn view_hooks(&mut self) -> Option<&mut dyn ViewHooks> {
        Some(self)
    }

    fn statistics(&mut self) -> Option<&mut dyn super::statistics::Accumulate> {
        match self.halo {
            Some(_) => None,
            None => Some(self),
        }
    }

    fn bench_hooks(&mut self) -> Option<&mut dyn BenchHooks> {
        Some(self)
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
    FluidError::BandOverflow { capacity }
}
