//! The CPU reference's immersed-boundary stages: the band's and the samples' host buffers and
//! one method per [`FluidStage`](crate::fluid::plan::FluidStage) of the immersed boundary, the
//! same stage functions as the kernels, samples in order (the spreading and the solids' sums
//! add in sample order), band cells in parallel.

use super::{view, view_mut, Shared, CHUNK};
use crate::fluid::forces::ForceSample;
use crate::fluid::ib::plan::{band_forces, band_of, BandForce, IbPlan, RecordRing};
use crate::fluid::ib::spread::IbSpread;
use crate::fluid::FluidError;
use murmur_common::lbm::abi::{
    IbBin, IbClear, IbForce, IbForceBins, IbGather, IbMark, IbPlace, IbUpdate, IbVelocity,
    SampleSet, Solids, BIN_BLOCK, RECORD_FLOATS, SPREAD_SCATTER, SPREAD_STORE,
};
use murmur_common::lbm::ib::band::{
    counter, pass_len, pool_len, BandMut, BandRef, BRICK_CELLS, EMPTY,
};
use murmur_common::lbm::ib::push::{self, PushPoints, Pushes};
use murmur_common::lbm::ib::stages::{self as immersed, record_fixed, record_index};
use murmur_common::lbm::ib::{binned, gather};
use murmur_common::lbm::{LbmParams, Populations, Storage};
use murmur_common::Vec3;
use murmur_common::{DevSlice, DevSliceMut};
use rayon::prelude::*;

/// The immersed boundary's buffers on the host, as on the GPU.
pub(super) struct CpuIb {
    pub(super) plan: IbPlan,
    table: Vec<u32>,
    brick_of: Vec<u32>,
    pool: Vec<f32>,
    pass: Vec<u64>,
    pub(super) counter: Vec<u32>,
    reach: Vec<u64>,
    pub(super) sample_force: Vec<f32>,
    ring: Vec<u64>,
    records: RecordRing,
    /// Rows read from a full ring and not yet taken.
    pub(super) taken: Vec<ForceSample>,
    /// The gather's buffers (empty for the scatter), as on the GPU.
    gather: GatherBufs,
    /// The step being taken: its record slot and the solids' states.
    slot: usize,
    solids: Solids,
    /// The pushes the next step applies (positions, three fixed-point totals each).
    push_pos: Vec<Vec3>,
    push_total: Vec<u64>,
    /// The band was restored ([`CpuIb::set_band`]) and no step has run since.
    restored: bool,
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
        // The binned scatter keeps no positions and forces per sample.
        let kept = if plan.spread.gathers() { n } else { 0 };
        GatherBufs {
            key: vec![0; n],
            rank: vec![0; n],
            list: vec![0; n],
            at: vec![[0.0; 4]; kept],
            force: vec![[0.0; 4]; kept],
            counts: vec![0; bins.entries()],
            starts: vec![0; bins.entries()],
        }
    }
}

impl CpuIb {
    pub(super) fn new(plan: IbPlan) -> CpuIb {
        CpuIb {
            gather: GatherBufs::new(&plan),
            table: vec![EMPTY; plan.bricks.count()],
            brick_of: vec![0; plan.capacity as usize],
            pool: vec![0.0; pool_len(plan.capacity)],
            pass: vec![0; pass_len(plan.capacity)],
            counter: vec![0; counter::WORDS],
            reach: vec![0; plan.bricks.count()],
            sample_force: vec![0.0; 3 * plan.body.len()],
            ring: vec![0; crate::fluid::ib::plan::RING_STEPS * RECORD_FLOATS],
            records: RecordRing::default(),
            taken: Vec::new(),
            slot: 0,
            solids: Solids::default(),
            push_pos: Vec::new(),
            push_total: Vec::new(),
            restored: false,
            plan,
        }
    }

    /// Room for `most` pushes per step: the band's pool grows (it is rebuilt every step, so
    /// nothing is lost between steps).
    pub(super) fn enable_pushes(&mut self, most: u32) {
        self.plan = self.plan.clone().with_pushes(most);
        self.brick_of = vec![0; self.plan.capacity as usize];
        self.pool = vec![0.0; pool_len(self.plan.capacity)];
        self.pass = vec![0; pass_len(self.plan.capacity)];
        self.gather = GatherBufs::new(&self.plan);
    }

    /// The band's force of the last step, per cell where it is not zero.
    pub(super) fn band_forces(&self) -> Vec<BandForce> {
        band_forces(
            &self.plan.bricks,
            self.plan.capacity,
            &self.counter,
            &self.brick_of,
            self.pool_forces().then_some(&self.pool[..]),
            (self.plan.pushes > 0).then_some(&self.pass[..]),
        )
    }

    /// The band as a step that left `forces` would (for the fields until the next step).
    pub(super) fn set_band(&mut self, forces: &[BandForce]) -> Result<(), FluidError> {
        let Some((table, brick_of, pool, counter)) =
            band_of(&self.plan.bricks, self.plan.capacity, forces)
        else {
            return Err(super::band_overflow(self.plan.capacity));
        };
        (self.table, self.brick_of, self.pool, self.counter) = (table, brick_of, pool, counter);
        self.pass.iter_mut().for_each(|v| *v = 0);
        self.restored = true;
        Ok(())
    }

    /// The pushes of the next step (`total`: three per push).
    pub(super) fn set_pushes(&mut self, pos: &[[f32; 3]], total: &[u64]) -> Result<(), FluidError> {
        if total.len() != 3 * pos.len() || pos.len() > self.plan.pushes as usize {
            return Err(FluidError::Invalid(format!(
                "{} pushes with {} totals for room of {}",
                pos.len(),
                total.len(),
                self.plan.pushes
            )));
        }
        self.push_pos.clear();
        self.push_pos
            .extend(pos.iter().map(|&p| Vec3::from_array(p)));
        self.push_total.clear();
        self.push_total.extend_from_slice(total);
        Ok(())
    }

    fn push_points(&mut self, flags: DevSlice<u8>) -> PushPoints {
        PushPoints {
            domain: self.plan.domain,
            flags,
            pushes: Pushes {
                pos: view(&self.push_pos),
                total: view(&self.push_total),
            },
            band: self.band(),
        }
    }

    /// Stage `push_mark`.
    pub(super) fn push_mark(&mut self, flags: DevSlice<u8>) {
        let a = self.push_points(flags);
        for i in 0..self.push_pos.len() {
            // SAFETY: `i` indexes the pushes; the table was cleared this step.
            unsafe { push::mark(&a, i) };
        }
    }

    /// Stage `push_spread` (pushes in order: plain additions are the atomic ones).
    pub(super) fn push_spread(&mut self, flags: DevSlice<u8>) {
        let a = self.push_points(flags);
        for i in 0..self.push_pos.len() {
            // SAFETY: as `push_mark`, after it this step; one push at a time.
            unsafe {
                push::spread(&a, i, |k, t| {
                    let p = a.band.pass.at(k);
                    *p = (*p).wrapping_add(t);
                })
            };
        }
        // The pushes are spent: the band's sums hold them for the stream-collide step.
        self.push_pos.clear();
        self.push_total.clear();
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
            reach: view_mut(&mut self.reach),
        }
    }

    /// The band stages' items: the cells of the slots in use (as the kernels' grid-stride
    /// loops take them), not of the whole pool.
    fn used_cells(&self) -> usize {
        let used = self.counter[counter::USED].min(self.plan.capacity) as usize;
        used * BRICK_CELLS
    }

    /// How full the band was at the last step.
    pub(super) fn band_stats(&self) -> crate::fluid::ib::plan::BandStats {
        crate::fluid::ib::plan::BandStats::new(self.plan.capacity, &self.counter, &self.reach)
    }

    pub(super) fn band_ref(&self) -> BandRef {
        let band = BandRef::new(self.plan.bricks, view(&self.table), view(&self.pool));
        match self.plan.pushes {
            0 => band,
            _ => band.with_pushes(view(&self.pass), self.pool_forces()),
        }
    }

    /// Whether the pool's force values hold the band's force: the samples ran, or the band
    /// was restored ([`CpuIb::set_band`]) and no step has run since.
    fn pool_forces(&self) -> bool {
        self.plan.has_samples() || self.restored
    }

    /// Decodes the pending force records into `taken`; on a slab, summed over every rank
    /// first (collective).
    pub(super) fn drain(
        &mut self,
        halo: Option<&crate::fluid::slab::CpuHalo>,
    ) -> Result<(), FluidError> {
        if let Some(h) = halo {
            let n = self.records.pending_values();
            crate::fluid::slab::sum_records(h.comm.as_ref(), &mut self.ring[..n])?;
        }
        let rows = self.records.drain(&self.plan, &self.ring);
        self.taken.extend(rows);
        Ok(())
    }

    /// Step `step` begins: a full ring is drained first, then its record slot and the solids'
    /// states are fixed for every stage of the step.
    pub(super) fn begin(
        &mut self,
        step: u64,
        halo: Option<&crate::fluid::slab::CpuHalo>,
    ) -> Result<(), FluidError> {
        if self.records.next_slot().is_none() {
            self.drain(halo)?;
        }
        self.slot = self.records.next_slot().unwrap_or(0);
        self.solids = self.plan.states(step);
        Ok(())
    }

    /// Step `step`'s stages ran: a band that outgrew its pool fails the step, else its record
    /// becomes pending.
    pub(super) fn end(&mut self, step: u64) -> Result<(), FluidError> {
        if self.counter[counter::OVERFLOW] != 0 {
            return Err(super::band_overflow(self.plan.capacity));
        }
        self.records.pending.push(step);
        Ok(())
    }

    fn record(&mut self) -> DevSliceMut<u64> {
        let s = self.slot;
        view_mut(&mut self.ring[s * RECORD_FLOATS..(s + 1) * RECORD_FLOATS])
    }

    fn samples(&self) -> SampleSet {
        SampleSet {
            body: view(&self.plan.body),
            solid: view(&self.plan.solid_of),
        }
    }

    /// Stage `ib_clear`.
    pub(super) fn clear(&mut self) {
        let a = IbClear {
            record: self.record(),
            table: view_mut(&mut self.table),
            counter: view_mut(&mut self.counter),
            reach: view_mut(&mut self.reach),
        };
        for i in 0..immersed::clear_items(&a) as usize {
            // SAFETY: the buffers are the plan's sizes; one call per element.
            unsafe { immersed::clear(&a, i) };
        }
        // The last step's pushes' sums (the samples' passes zero theirs as they go).
        if self.plan.pushes > 0 {
            self.pass.par_iter_mut().for_each(|v| *v = 0);
        }
        self.restored = false;
    }

    /// Stage `ib_mark`.
    pub(super) fn mark(&mut self, flags: DevSlice<u8>) {
        let a = IbMark {
            domain: self.plan.domain,
            flags,
            samples: self.samples(),
            band: self.band(),
            solids: self.solids,
        };
        for s in 0..self.plan.body.len() {
            // SAFETY: `s` indexes the samples; the table was just cleared.
            unsafe { immersed::mark(&a, s) };
        }
    }

    /// Stage `ib_bin` (gather only).
    pub(super) fn bin(&mut self) {
        let Some(bins) = self.plan.bins else { return };
        let (samples, band) = (self.samples(), self.band());
        let g = &mut self.gather;
        let a = IbBin {
            domain: self.plan.domain,
            bins,
            samples,
            band,
            counts: view_mut(&mut g.counts),
            key: view_mut(&mut g.key),
            rank: view_mut(&mut g.rank),
            solids: self.solids,
        };
        for s in 0..self.plan.body.len() {
            // SAFETY: `s` indexes the samples; the band table is complete, the counts zero
            // (the scan leaves them so).
            unsafe { gather::bin(&a, s) };
        }
    }

    /// Stage `ib_scan` (gather only).
    pub(super) fn scan(&mut self) {
        let g = &mut self.gather;
        gather::scan(&mut g.counts, &mut g.starts);
    }

    /// Stage `ib_place` (gather only).
    pub(super) fn place(&mut self) {
        let g = &mut self.gather;
        let a = IbPlace {
            key: view(&g.key),
            rank: view(&g.rank),
            starts: view(&g.starts),
            list: view_mut(&mut g.list),
        };
        for s in 0..self.plan.body.len() {
            // SAFETY: keys and ranks of this step's binning, starts their scan.
            unsafe { gather::place(&a, s) };
        }
    }

    /// Stage `ib_velocity`.
    pub(super) fn velocity<S: Storage>(
        &mut self,
        p: &LbmParams,
        pops: Populations<S>,
        flags: DevSlice<u8>,
        f: DevSlice<S::Elem>,
    ) {
        let items = self.used_cells();
        let a = Shared(IbVelocity {
            p: *p,
            pops,
            flags,
            f,
            band: self.band(),
        });
        (0..items)
            .into_par_iter()
            .with_min_len(CHUNK)
            .for_each(|i| {
                let a = &a;
                // SAFETY: each band cell writes only its own values.
                unsafe { immersed::band_velocity(&a.0, i) };
            });
    }

    /// Stage `ib_band_halo` (a slab's).
    pub(super) fn band_halo(
        &mut self,
        halo: &crate::fluid::slab::CpuHalo,
        step: u64,
    ) -> Result<(), FluidError> {
        let faces = self.plan.faces_reached(step);
        halo.exchange_band(self.band(), faces)
    }

    /// Stage `ib_force`, forcing pass `pass`.
    pub(super) fn force(&mut self, flags: DevSlice<u8>, pass: u32) {
        if self.plan.spread == IbSpread::Binned {
            return self.force_bins(flags, pass);
        }
        let blocks = self.plan.bins.is_some_and(|b| b.kind == BIN_BLOCK);
        let (samples, band, record) = (self.samples(), self.band(), self.record());
        let g = &mut self.gather;
        let a = IbForce {
            domain: self.plan.domain,
            pass,
            passes: self.plan.passes,
            spread: if self.plan.bins.is_some() {
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
            sample_force: view_mut(&mut self.sample_force),
            at: view_mut(&mut g.at),
            force: view_mut(&mut g.force),
            solids: self.solids,
        };
        for s in 0..self.plan.body.len() {
            // SAFETY: one sample at a time: plain additions are the atomic ones.
            let r = unsafe {
                let (r, spread) = immersed::sample_force(&a, s);
                immersed::spread_terms(spread.as_ref(), |t| {
                    if let Some((k, v)) = t {
                        for (c, &vc) in v.iter().enumerate() {
                            let p = a.band.pass.at(k + c * BRICK_CELLS);
                            *p = (*p).wrapping_add(vc);
                        }
                    }
                });
                r
            };
            add_reaction(record, &r);
        }
    }

    /// Stage `ib_force` of the binned scatter, forcing pass `pass`: the samples in the order of
    /// their bins.
    fn force_bins(&mut self, flags: DevSlice<u8>, pass: u32) {
        let (samples, band, record) = (self.samples(), self.band(), self.record());
        let g = &self.gather;
        let a = IbForceBins {
            force: IbForce {
                domain: self.plan.domain,
                pass,
                passes: self.plan.passes,
                spread: SPREAD_SCATTER,
                _pad: 0,
                flags,
                samples,
                order: view(&g.list),
                band,
                record,
                sample_force: view_mut(&mut self.sample_force),
                at: DevSliceMut::empty(),
                force: DevSliceMut::empty(),
                solids: self.solids,
            },
        };
        // SAFETY: the whole list as one run: plain additions are the atomic ones.
        unsafe {
            binned::run_force(
                &a,
                0,
                g.list.len(),
                |k, v| {
                    for (c, &vc) in v.iter().enumerate() {
                        let p = band.pass.at(k + c * BRICK_CELLS);
                        *p = (*p).wrapping_add(vc);
                    }
                },
                |r| add_reaction(record, r),
            );
        }
    }

    /// Stage `ib_gather` (gather only).
    pub(super) fn gather(&mut self) {
        let Some(bins) = self.plan.bins else { return };
        let items = self.used_cells();
        let band = self.band();
        let g = &self.gather;
        let a = Shared(IbGather {
            domain: self.plan.domain,
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
        // As the kernel runs it: per slot, the samples of the bins its brick reaches read once,
        // their terms summed per cell, then applied.
        (0..items / BRICK_CELLS).into_par_iter().for_each(|s| {
            let a = &a;
            let mut sums = [[0u64; 3]; BRICK_CELLS];
            // SAFETY: each slot reads the stored samples and updates only its own cells.
            unsafe {
                gather::brick_terms(&a.0, s as u32, |local, t| {
                    for (sum, v) in sums[local].iter_mut().zip(t) {
                        *sum = sum.wrapping_add(v);
                    }
                });
                for (local, &v) in sums.iter().enumerate() {
                    gather::brick_apply(&a.0, s as u32, local, v);
                }
            }
        });
    }

    /// Stage `ib_update` (scatter only).
    pub(super) fn update(&mut self) {
        let items = self.used_cells();
        let a = Shared(IbUpdate { band: self.band() });
        (0..items)
            .into_par_iter()
            .with_min_len(CHUNK)
            .for_each(|i| {
                let a = &a;
                // SAFETY: each band cell updates only its own values.
                unsafe { immersed::band_update(&a.0, i) };
            });
    }
}

impl CpuIb {
    /// The immersed boundary's state after step `step` ([`crate::fluid::state::ImmersedState`]):
    /// the pending records are decoded into `taken` first.
    pub(super) fn capture(
        &mut self,
        step: u64,
        halo: Option<&crate::fluid::slab::CpuHalo>,
    ) -> Result<crate::fluid::state::ImmersedState, FluidError> {
        self.drain(halo)?;
        Ok(crate::fluid::state::ImmersedState {
            solids: self.solid_states(step),
            sample_force: self.sample_force.clone(),
            pending: self.taken.clone(),
        })
    }

    /// The solids' states during the step after `step`.
    pub(super) fn solid_states(&self, step: u64) -> Vec<murmur_common::lbm::ib::solid::SolidState> {
        let n = self.plan.half.len();
        self.plan.states(step + 1).states[..n].to_vec()
    }

    /// Restores [`CpuIb::capture`]'s state (checked by the caller).
    pub(super) fn restore(&mut self, s: &crate::fluid::state::ImmersedState) {
        self.sample_force.clone_from(&s.sample_force);
        self.records.pending.clear();
        self.taken.clone_from(&s.pending);
    }
}

/// Adds a sample's reaction to its solid's values in this step's force record.
fn add_reaction(record: DevSliceMut<u64>, r: &immersed::Reaction) {
    for c in 0..3 {
        // SAFETY: the record holds every solid's values; one sample at a time.
        unsafe {
            let f = record.at(record_index(r.solid, c));
            *f = (*f).wrapping_add(record_fixed(r.force[c]));
            let t = record.at(record_index(r.solid, 3 + c));
            *t = (*t).wrapping_add(record_fixed(r.torque[c]));
        }
    }
}
