//! The host side of the immersed boundary, shared by both backends: the samples packed for the
//! stages, the band's size, the solids' states of each step (computed here once, so the CPU
//! reference and the kernels see the same values), and the decoding of the force records into
//! forces on the solids.

use super::spread::IbSpread;
use super::{Immersed, Solid};
use crate::fluid::forces::ForceSample;
use murmur_common::lbm::abi::{Bins, Solids, FORCE_RECORD, RECORD_FLOATS};
use murmur_common::lbm::ib::band::{capacity_for, pass_len, pool_len, Bricks, BRICK_CELLS};
use murmur_common::lbm::ib::solid::MAX_SOLIDS;
use murmur_common::lbm::ib::stages::record_value;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::Lattice;

/// Multi-direct-forcing passes `k` per step. Fixed for every scene, chosen with
/// [`RETRACTION`] on cylindrical Couette flow (`ib::validate::Couette`, docs/fluid/validation.md).
pub const PASSES: u32 = 3;

/// How far (cells) samples sit inside their solid, along the inward surface normal, at
/// relaxation time 1: the diffuse interface of the 2-point kernel puts the effective wall
/// outside the samples. Chosen with [`PASSES`] on cylindrical Couette flow at `tau = 1`; other
/// relaxation times take [`retraction_for`].
pub const RETRACTION: f64 = 0.25;

/// The Couette study's best retraction (cells) by relaxation time, `(tau, retraction)` (ACM-MRT,
/// [`PASSES`] passes; docs/fluid/validation.md): the effective wall of the diffuse interface
/// moves out as `tau` falls toward 1/2.
pub const RETRACTION_BY_TAU: [(f64, f64); 7] = [
    (0.52, 0.405),
    (0.533, 0.38),
    (0.55, 0.36),
    (0.6, 0.335),
    (0.7, 0.305),
    (0.8, 0.285),
    (1.0, RETRACTION),
];

/// The default retraction at relaxation time `tau` (the fluid's molecular one):
/// [`RETRACTION_BY_TAU`], linear in between its points and its end values outside them.
pub fn retraction_for(tau: f64) -> f64 {
    let t = &RETRACTION_BY_TAU;
    // NaN too takes the first point.
    if tau.is_nan() || tau <= t[0].0 {
        return t[0].1;
    }
    for w in t.windows(2) {
        let ((t0, r0), (t1, r1)) = (w[0], w[1]);
        if tau <= t1 {
            return r0 + (r1 - r0) * (tau - t0) / (t1 - t0);
        }
    }
    t[t.len() - 1].1
}

/// A scene's override of [`RETRACTION`] and [`PASSES`] (`[immersed] retraction`, `passes`),
/// for studies of the immersed boundary; `None` keeps the default ([`retraction_for`],
/// [`PASSES`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct IbTuning {
    /// Cells the samples sit inside their solid, 0 to 1.
    pub retraction: Option<f64>,
    /// Multi-direct-forcing passes per step, 1 to [`MAX_PASSES`].
    pub passes: Option<u32>,
}

/// Most forcing passes a scene may ask for.
pub const MAX_PASSES: u32 = 8;

impl IbTuning {
    /// The retraction in force (cells) at relaxation time `tau`: the one set, else
    /// [`retraction_for`]`(tau)`.
    pub fn retraction_at(&self, tau: f64) -> f64 {
        self.retraction.unwrap_or_else(|| retraction_for(tau))
    }

    /// The passes in force.
    pub fn passes(&self) -> u32 {
        self.passes.unwrap_or(PASSES)
    }

    /// Whether both are the fixed choices' defaults (nothing set).
    pub fn is_default(&self) -> bool {
        *self == IbTuning::default()
    }

    /// Checks the ranges; the error names the key.
    pub fn check(&self) -> Result<(), String> {
        if let Some(r) = self.retraction {
            if !(r.is_finite() && (0.0..=1.0).contains(&r)) {
                return Err(format!("retraction must be 0 to 1 cells, got {r}"));
            }
        }
        if let Some(k) = self.passes {
            if !(1..=MAX_PASSES).contains(&k) {
                return Err(format!("passes must be 1 to {MAX_PASSES}, got {k}"));
            }
        }
        Ok(())
    }

    /// The `[immersed]` keys of a scene's text that set these (empty for the defaults).
    pub fn scene_keys(&self) -> String {
        let mut s = String::new();
        if let Some(r) = self.retraction {
            s += &format!("retraction = {r:?}\n");
        }
        if let Some(k) = self.passes {
            s += &format!("passes = {k}\n");
        }
        s
    }

    /// `k 3, retraction 0.3` (one set) or `k 3, retraction by tau`: the choices in force, for
    /// tables.
    pub fn describe(&self) -> String {
        match self.retraction {
            Some(r) => format!("k {}, retraction {r}", self.passes()),
            None => format!("k {}, retraction by tau", self.passes()),
        }
    }
}

/// Steps of force records the backends keep before they must be read ([`RecordRing`]).
pub const RING_STEPS: usize = 1024;

/// Every sample's state at one step, lattice units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SampleSnapshot {
    pub step: u64,
    pub positions: Vec<[f32; 3]>,
    /// The solid's velocity at the sample.
    pub velocity: Vec<[f32; 3]>,
    /// The force the fluid exerts on the solid at the sample, `-F_s dA_s` over all passes.
    pub force: Vec<[f32; 3]>,
    pub area: Vec<f32>,
    pub solid: Vec<u32>,
}

/// How full the band was at the last step ([`crate::fluid::FluidBackend::band`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandStats {
    /// Slots the pool holds (bricks of 64 cells).
    pub capacity: u32,
    /// Slots the step claimed (at most the capacity).
    pub used: u32,
    /// Cells a stencil reached, the ones that pulled their populations.
    pub reached: u64,
}

impl BandStats {
    /// From the band's counter and reached bits.
    pub fn new(capacity: u32, counter: &[u32], reach: &[u64]) -> BandStats {
        use murmur_common::lbm::ib::band::counter;
        BandStats {
            capacity,
            used: counter[counter::USED].min(capacity),
            reached: reach.iter().map(|w| w.count_ones() as u64).sum(),
        }
    }

    /// `band: USED of CAPACITY slots (P %): CELLS cells in claimed bricks, REACHED reached by a
    /// stencil (Q %)`.
    pub fn line(&self) -> String {
        let cells = self.used as u64 * BRICK_CELLS as u64;
        let pct = |a: u64, b: u64| {
            if b == 0 {
                0.0
            } else {
                100.0 * a as f64 / b as f64
            }
        };
        format!(
            "band: {} of {} slots ({:.1} %): {} cells in claimed bricks, {} reached by a stencil \
             ({:.1} %)",
            self.used,
            self.capacity,
            pct(self.used as u64, self.capacity as u64),
            cells,
            self.reached,
            pct(self.reached, cells)
        )
    }
}

/// One band cell's force of the last step (lattice units), kept across a checkpoint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandForce {
    pub cell: u32,
    pub force: [f32; 3],
}

/// The band's cells with a non-zero force, ascending, from its buffers (`counter`'s slots in
/// use, `brick_of`, the pool's force values where they hold the force, the pushes' sums where
/// there are pushes), each as the stream-collide step reads it.
pub fn band_forces(
    bricks: &Bricks,
    capacity: u32,
    counter: &[u32],
    brick_of: &[u32],
    pool: Option<&[f32]>,
    pass: Option<&[u64]>,
) -> Vec<BandForce> {
    use murmur_common::lbm::ib::band::{
        counter as words, from_fixed, pass_index, pool_index, slot,
    };
    let used = counter[words::USED].min(capacity);
    let mut out = Vec::new();
    for s in 0..used {
        let brick = brick_of[s as usize] as usize;
        for local in 0..BRICK_CELLS {
            let Some(cell) = bricks.cell(brick, local) else {
                continue;
            };
            // As the stream-collide step reads it (`BandRef::force`).
            let mut force = [0.0f32; 3];
            if let Some(pool) = pool {
                force = [0, 1, 2].map(|c| pool[pool_index(s, slot::FORCE + c, local)]);
            }
            if let Some(pass) = pass {
                for (c, f) in force.iter_mut().enumerate() {
                    *f += from_fixed(pass[pass_index(s, c, local)]);
                }
            }
            if force != [0.0; 3] {
                out.push(BandForce {
                    cell: cell as u32,
                    force,
                });
            }
        }
    }
    out.sort_by_key(|b| b.cell);
    out
}

/// A band's host buffers: its table, the brick of each slot, the pool and the counter.
pub type BandBufs = (Vec<u32>, Vec<u32>, Vec<f32>, Vec<u32>);

/// The band buffers that hold `forces`, as a step would have left them for the fields to read;
/// `None` when they need more than `capacity` slots.
pub fn band_of(bricks: &Bricks, capacity: u32, forces: &[BandForce]) -> Option<BandBufs> {
    use murmur_common::lbm::ib::band::{counter as words, pool_index, slot, EMPTY};
    let mut table = vec![EMPTY; bricks.count()];
    let mut brick_of = vec![0u32; capacity as usize];
    let mut pool = vec![0.0f32; pool_len(capacity)];
    let mut used = 0u32;
    for b in forces {
        let (brick, local) = bricks.locate_cell(b.cell as usize);
        if table[brick] == EMPTY {
            if used >= capacity {
                return None;
            }
            table[brick] = used;
            brick_of[used as usize] = brick as u32;
            used += 1;
        }
        let s = table[brick];
        for c in 0..3 {
            pool[pool_index(s, slot::FORCE + c, local)] = b.force[c];
        }
    }
    let mut counter = vec![0u32; words::WORDS];
    counter[words::USED] = used;
    Some((table, brick_of, pool, counter))
}

/// The immersed boundary of a backend, ready to run.
#[derive(Clone, Debug)]
pub struct IbPlan {
    pub solids: Vec<Solid>,
    /// `(x, y, z, dA)` per sample, solid after solid.
    pub body: Vec<[f32; 4]>,
    pub solid_of: Vec<u32>,
    pub domain: Domain,
    pub bricks: Bricks,
    /// Band slots.
    pub capacity: u32,
    pub passes: u32,
    pub spread: IbSpread,
    /// The bins of the binned scatter and the gathers (`None` for the scatter).
    pub bins: Option<Bins>,
    /// Per solid, the largest `|body_j|` of its samples along each body axis: the half sides
    /// of a box about the centre holding them.
    pub half: Vec<[f32; 3]>,
    /// The most pushes a step takes (0: none; [`IbPlan::with_pushes`]).
    pub pushes: u32,
    /// Band slots the samples need (the capacity without pushes).
    pub sample_capacity: u32,
}

impl IbPlan {
    /// The plan of `immersed` on `lattice`, or `None` without samples.
    pub fn new(lattice: Lattice, immersed: &Immersed) -> Option<IbPlan> {
        if immersed.is_empty() {
            return None;
        }
        let mut body = Vec::with_capacity(immersed.samples());
        let mut solid_of = Vec::with_capacity(immersed.samples());
        for (i, s) in immersed.solids.iter().enumerate().take(MAX_SOLIDS) {
            for (b, &a) in s.body.iter().zip(&s.area) {
                body.push([b[0], b[1], b[2], a]);
                solid_of.push(i as u32);
            }
        }
        let bricks = Bricks::new(lattice);
        // At most `band::MAX_SLOTS`: band cells are numbered in `u32` (the gather's bins, the
        // spreading's band cells).
        let capacity = capacity_for(&bricks, immersed.solids.iter().map(|s| s.radius as f32));
        let mut half = vec![[0.0f32; 3]; immersed.solids.len().min(MAX_SOLIDS)];
        for (b, &i) in body.iter().zip(&solid_of) {
            for j in 0..3 {
                half[i as usize][j] = half[i as usize][j].max(b[j].abs());
            }
        }
        Some(IbPlan {
            half,
            spread: immersed.spread,
            bins: immersed.spread.bins(lattice, capacity),
            solids: immersed.solids.clone(),
            body,
            solid_of,
            domain: immersed.domain(lattice),
            bricks,
            capacity,
            passes: if immersed.passes == 0 {
                PASSES
            } else {
                immersed.passes
            },
            pushes: 0,
            sample_capacity: capacity,
        })
    }

    /// A band for pushes alone on `domain`'s lattice (no solids; on one rank of several, its
    /// slab).
    pub fn pushes_only(domain: Domain) -> IbPlan {
        IbPlan {
            solids: Vec::new(),
            body: Vec::new(),
            solid_of: Vec::new(),
            domain,
            bricks: Bricks::new(domain.lattice),
            capacity: 0,
            passes: 0,
            spread: IbSpread::default(),
            bins: None,
            half: Vec::new(),
            pushes: 0,
            sample_capacity: 0,
        }
    }

    /// The plan with room for `most` pushes per step
    /// ([`murmur_common::lbm::ib::push`]): the band grows by the 8 bricks a push's stencil may
    /// reach, up to every brick of the lattice.
    pub fn with_pushes(mut self, most: u32) -> IbPlan {
        let grown = self.sample_capacity as u64 + most as u64 * 8;
        self.capacity = grown.min(self.bricks.count() as u64) as u32;
        self.pushes = most;
        if self.bins.is_some() {
            self.bins = self.spread.bins(self.domain.lattice, self.capacity);
        }
        self
    }

    /// Whether solids' samples run their stages.
    pub fn has_samples(&self) -> bool {
        !self.body.is_empty()
    }

    /// Bytes of device memory the plan needs: samples, their forces, the band.
    pub fn bytes(&self) -> u64 {
        let samples = self.body.len() as u64 * (16 + 4 + 12);
        let band = self.bricks.count() as u64 * (4 + 8)
            + self.capacity as u64 * 4
            + pool_len(self.capacity) as u64 * 4
            + pass_len(self.capacity) as u64 * 8;
        // A push: its position and three fixed-point totals.
        let pushes = self.pushes as u64 * (12 + 24);
        samples + pushes + band + self.gather_bytes() + (RING_STEPS * RECORD_FLOATS * 8) as u64
    }

    /// Bytes of the bins' buffers: per sample its key, rank, place in the sorted list and,
    /// for a gather, its stored position and force; per bin its count and start.
    pub fn gather_bytes(&self) -> u64 {
        let stored = if self.spread.gathers() { 2 * 16 } else { 0 };
        match &self.bins {
            None => 0,
            Some(b) => self.body.len() as u64 * (3 * 4 + stored) + b.entries() as u64 * 8,
        }
    }

    /// Threads of the per-band-cell stages.
    pub fn band_items(&self) -> u64 {
        self.capacity as u64 * BRICK_CELLS as u64
    }

    /// The solids' states during step `step` (1-based: step 1 starts at time 0).
    pub fn states(&self, step: u64) -> Solids {
        let mut out = Solids::default();
        for (i, s) in self.solids.iter().enumerate().take(MAX_SOLIDS) {
            out.states[i] = s.state(step.saturating_sub(1));
        }
        out
    }

    /// On a slab ([`Domain::slab`]): whether a solid may reach the ghost layer below and the
    /// one above this slab during step `step` (the box of its samples, turned with the solid,
    /// within 2 cells of the face: a stencil reaches one cell past its sample). The neighbour across a face computes the
    /// same answer from the same states, so both skip the face's band exchange together.
    /// `[false; 2]` on one rank.
    pub fn faces_reached(&self, step: u64) -> [bool; 2] {
        let d = &self.domain;
        if d.slab_extent == 0 {
            return [false; 2];
        }
        let a = d.slab_axis as usize;
        let l = &d.lattice;
        let n = [l.nx, l.ny, l.nz][a] as i64;
        let extent = d.slab_extent as f64;
        let periodic = d.is_periodic(a);
        // Faces as whole-lattice layer numbers: the face lies just below that layer.
        let faces = [d.slab_origin as i64 + 1, d.slab_origin as i64 + n - 1];
        let states = self.states(step);
        faces.map(|face| {
            let plane = face as f64 - 0.5;
            self.half.iter().enumerate().any(|(i, h)| {
                let st = &states.states[i];
                let reach: f64 = (0..3)
                    .map(|j| (st.rotation[a][j].abs() * h[j]) as f64)
                    .sum();
                let c = st.center[a] as f64;
                let mut dist = (c - plane).abs();
                if periodic {
                    dist = dist.rem_euclid(extent);
                    dist = dist.min(extent - dist);
                }
                dist <= reach + 2.0
            })
        })
    }

    /// The forces of one step from its fixed-point record (lattice units: the reaction of the
    /// immersed-boundary force), with the inner fluid's inertia added for accelerating closed
    /// solids (reference density 1).
    pub fn rows(&self, step: u64, record: &[u64]) -> Vec<ForceSample> {
        self.solids
            .iter()
            .enumerate()
            .take(MAX_SOLIDS)
            .map(|(i, s)| {
                let r = &record[i * FORCE_RECORD..(i + 1) * FORCE_RECORD];
                let (fi, ti) = s.inner_inertia(step.saturating_sub(1), 1.0);
                ForceSample {
                    step,
                    solid: i,
                    force: [0, 1, 2].map(|a| record_value(r[a]) + fi[a]),
                    torque: [0, 1, 2].map(|a| record_value(r[3 + a]) + ti[a]),
                }
            })
            .collect()
    }

    /// Every sample's position after step `step` (lattice coordinates), as `snapshot` places
    /// them: what the viewer draws.
    pub fn positions(&self, step: u64) -> Vec<[f32; 3]> {
        let states = self.states(step);
        self.body
            .iter()
            .zip(&self.solid_of)
            .map(|(b, &s)| states.states[s as usize].position([b[0], b[1], b[2]]))
            .collect()
    }

    /// The samples after step `step` with their forces (`sample_force`: three per sample).
    pub fn snapshot(&self, step: u64, sample_force: &[f32]) -> SampleSnapshot {
        let states = self.states(step);
        let mut s = SampleSnapshot {
            step,
            ..SampleSnapshot::default()
        };
        for (i, b) in self.body.iter().enumerate() {
            let st = &states.states[self.solid_of[i] as usize];
            let arm = st.arm([b[0], b[1], b[2]]);
            s.positions.push(st.position([b[0], b[1], b[2]]));
            s.velocity.push(st.velocity_at(arm));
            s.force.push([0, 1, 2].map(|c| sample_force[3 * i + c]));
            s.area.push(b[3]);
            s.solid.push(self.solid_of[i]);
        }
        s
    }
}

/// Force records of up to [`RING_STEPS`] steps, one [`RECORD_FLOATS`] slice per step, with the
/// step each slice belongs to. Both backends keep their records in one (the CUDA one mirrors a
/// device ring), so reading them never waits on a step.
#[derive(Clone, Debug, Default)]
pub struct RecordRing {
    /// Steps recorded and not yet read, oldest first.
    pub pending: Vec<u64>,
}

impl RecordRing {
    /// Slot of the next step's record, or `None` when the ring is full (read it first).
    pub fn next_slot(&self) -> Option<usize> {
        (self.pending.len() < RING_STEPS).then_some(self.pending.len())
    }

    /// Values of the pending records at the ring's start.
    pub fn pending_values(&self) -> usize {
        self.pending.len() * RECORD_FLOATS
    }

    /// Decodes the pending records from the ring's floats and empties the ring.
    pub fn drain(&mut self, plan: &IbPlan, ring: &[u64]) -> Vec<ForceSample> {
        let mut rows = Vec::new();
        for (slot, &step) in self.pending.iter().enumerate() {
            rows.extend(plan.rows(
                step,
                &ring[slot * RECORD_FLOATS..(slot + 1) * RECORD_FLOATS],
            ));
        }
        self.pending.clear();
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retraction_follows_the_study_table_between_its_points() {
        for &(tau, r) in &RETRACTION_BY_TAU {
            assert_eq!(retraction_for(tau), r, "tau {tau}");
        }
        // Linear in between, the end values outside.
        let [(t0, r0), (t1, r1), ..] = RETRACTION_BY_TAU;
        assert!((retraction_for(0.5 * (t0 + t1)) - 0.5 * (r0 + r1)).abs() < 1e-12);
        assert_eq!(retraction_for(0.5001), r0);
        assert_eq!(retraction_for(1.7), RETRACTION);
        assert_eq!(retraction_for(f64::NAN), r0);
        // The effective wall moves out as tau falls: the retraction never shrinks.
        for w in RETRACTION_BY_TAU.windows(2) {
            assert!(w[0].0 < w[1].0 && w[0].1 >= w[1].1, "{w:?}");
        }
        assert_eq!(
            RETRACTION_BY_TAU[RETRACTION_BY_TAU.len() - 1],
            (1.0, RETRACTION)
        );
    }

    #[test]
    fn a_set_retraction_wins_over_the_table() {
        let set = IbTuning {
            retraction: Some(0.1),
            passes: None,
        };
        assert_eq!(set.retraction_at(0.55), 0.1);
        assert_eq!(
            IbTuning::default().retraction_at(0.55),
            retraction_for(0.55)
        );
        assert_eq!(set.describe(), "k 3, retraction 0.1");
        assert_eq!(IbTuning::default().describe(), "k 3, retraction by tau");
    }
}
