//! Coupled flocks on several ranks (`fluid run --ranks N`, `--gpus N`): each rank holds the
//! boids that lie in its fluid slab (the rank owning the lower layer of a boid's stencil along
//! the slab axis, as the immersed boundary's samples are owned), rides them in the fields
//! around its slab, and per substep
//!
//! 1. sends the other ranks its boids within the rules' reach of its slab's faces (guests:
//!    position and relative velocity), which the rules see beside its own;
//! 2. after the motion, hands every boid now in another rank's slab to that rank, with its
//!    pending impulses (a boid respawned at an inlet may land anywhere).
//!
//! The fluid routes each push to every rank whose layers its stencil reaches
//! ([`crate::fluid::slab::SlabFluid`]), so a push near a slab face adds to the neighbour's
//! cells. A rank's boids are those of one lattice up to the order of the rules' sums.

use super::cuda::BoidArrays;
use super::CpuBoids;
use crate::fluid::slab::{AroundSlab, SlabPlan};
use crate::fluid::{FluidBackend, FluidError};
use crate::ranks::Comm;
use murmur_common::Vec3;
use std::sync::Arc;

/// A ride's part in a fluid cut among ranks (module docs).
pub struct SlabRide {
    comm: Arc<dyn Comm>,
    plan: SlabPlan,
}

/// Bytes of a guest: position and relative velocity.
const GUEST_BYTES: usize = 24;

fn put(out: &mut Vec<u8>, v: Vec3) {
    for c in v.to_array() {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

fn f32_at(m: &[u8], i: usize) -> f32 {
    f32::from_le_bytes([m[4 * i], m[4 * i + 1], m[4 * i + 2], m[4 * i + 3]])
}

fn vec_at(m: &[u8], i: usize) -> Vec3 {
    Vec3::new(f32_at(m, i), f32_at(m, i + 1), f32_at(m, i + 2))
}

fn bad(peer: usize, what: &str) -> FluidError {
    FluidError::WrongSize {
        what: format!("the {what} rank {peer} sent"),
    }
}

impl SlabRide {
    /// The cut of `fluid` when it is one rank's slab (None: a whole lattice).
    pub fn of(fluid: &mut dyn FluidBackend) -> Option<SlabRide> {
        let slab = fluid.as_slab()?;
        Some(SlabRide {
            comm: slab.comm().clone(),
            plan: slab.plan().clone(),
        })
    }

    pub fn rank(&self) -> usize {
        self.comm.rank()
    }

    pub fn ranks(&self) -> usize {
        self.comm.size()
    }

    /// The slab axis (for the run's header).
    pub fn axis(&self) -> usize {
        self.plan.axis
    }

    /// The fields around this rank's slab (collective).
    pub fn air(&self, fluid: &mut dyn FluidBackend) -> Result<AroundSlab, FluidError> {
        match fluid.as_slab() {
            Some(s) => s.fields_around(),
            None => Err(FluidError::Invalid(
                "a ride on several ranks needs the fluid's slab".into(),
            )),
        }
    }

    /// Whether this rank owns a boid at `p`.
    fn owns(&self, p: Vec3) -> bool {
        self.plan.owner_of(p.to_array()) == self.rank()
    }

    /// Drops the boids of `boids` that lie in another rank's slab (every rank starts from the
    /// whole flock).
    pub fn keep_own(&self, boids: &mut CpuBoids) {
        boids.take(|p| !self.owns(p));
    }

    /// The distance along the slab axis from `p` to `rank`'s slab (across the wrap where the
    /// axis wraps).
    fn distance_to(&self, p: f32, rank: usize) -> f32 {
        let r = &self.plan.ranges[rank];
        let (s, e) = (r.start as f32, r.end as f32);
        let d = |q: f32| (s - q).max(q - e).max(0.0);
        if self.plan.ib_periodic[self.plan.axis] {
            let n = [
                self.plan.global.nx,
                self.plan.global.ny,
                self.plan.global.nz,
            ][self.plan.axis] as f32;
            d(p).min(d(p - n)).min(d(p + n))
        } else {
            d(p)
        }
    }

    /// The other ranks' boids within the rules' reach of this rank's slab (collective).
    pub fn guests(&self, boids: &CpuBoids) -> Result<Vec<(Vec3, Vec3)>, FluidError> {
        // A margin: a neighbour a little farther costs one distance test, one closer must
        // never be missed.
        let reach = boids.reach() * 1.001 + 1e-4;
        let (me, a) = (self.rank(), self.plan.axis);
        let r = &self.plan.ranges[me];
        let (s, e) = (r.start as f32, r.end as f32);
        let mut out = Vec::new();
        for (x, w) in boids.pos.iter().zip(&boids.rel) {
            let p = x.to_array()[a];
            if p - s < reach || e - p < reach {
                put(&mut out, *x);
                put(&mut out, *w);
            }
        }
        let all = self.comm.all_gather(&out)?;
        let mut guests = Vec::new();
        for (peer, m) in all.iter().enumerate().filter(|(p, _)| *p != me) {
            if !m.len().is_multiple_of(GUEST_BYTES) {
                return Err(bad(peer, "guests"));
            }
            for g in m.chunks_exact(GUEST_BYTES) {
                let (x, w) = (vec_at(g, 0), vec_at(g, 3));
                if self.distance_to(x.to_array()[a], me) < reach {
                    guests.push((x, w));
                }
            }
        }
        Ok(guests)
    }

    /// Hands every boid of `boids` that now lies in another rank's slab to that rank and
    /// takes in those that arrive here (collective).
    pub fn migrate(&self, boids: &mut CpuBoids) -> Result<(), FluidError> {
        let leaving = boids.take(|p| !self.owns(p));
        let all = self.comm.all_gather(&encode(&leaving))?;
        let me = self.rank();
        let two_way = boids.mass() > 0.0;
        for (peer, m) in all.iter().enumerate().filter(|(p, _)| *p != me) {
            let mut arriving = decode(m, two_way).ok_or_else(|| bad(peer, "boids"))?;
            let mine: Vec<bool> = arriving.pos.iter().map(|&p| self.owns(p)).collect();
            if mine.iter().any(|&o| o) {
                arriving = select(arriving, &mine);
                boids
                    .append(arriving)
                    .map_err(|e| FluidError::Invalid(e.to_string()))?;
            }
        }
        Ok(())
    }

    /// Every rank's boids (collective), in id order.
    pub fn gather(&self, mine: BoidArrays, two_way: bool) -> Result<BoidArrays, FluidError> {
        let whole = self.gather_in_rank_order(mine, two_way)?;
        let mut order: Vec<usize> = (0..whole.id.len()).collect();
        order.sort_by_key(|&i| whole.id[i]);
        Ok(BoidArrays {
            pos: order.iter().map(|&i| whole.pos[i]).collect(),
            vel: order.iter().map(|&i| whole.vel[i]).collect(),
            rel: order.iter().map(|&i| whole.rel[i]).collect(),
            id: order.iter().map(|&i| whole.id[i]).collect(),
            push: if two_way {
                order
                    .iter()
                    .flat_map(|&i| whole.push[3 * i..3 * i + 3].to_vec())
                    .collect()
            } else {
                Vec::new()
            },
        })
    }

    /// Every rank's boids (collective): rank 0's in its order, then rank 1's, ... (a
    /// checkpoint's order: restored on as many ranks, each rank's boids come back in the order
    /// it kept them).
    pub fn gather_in_rank_order(
        &self,
        mine: BoidArrays,
        two_way: bool,
    ) -> Result<BoidArrays, FluidError> {
        let all = self.comm.all_gather(&encode(&mine))?;
        let mut whole = BoidArrays::default();
        for (peer, m) in all.iter().enumerate() {
            let b = decode(m, two_way).ok_or_else(|| bad(peer, "boids"))?;
            whole.pos.extend(b.pos);
            whole.vel.extend(b.vel);
            whole.rel.extend(b.rel);
            whole.id.extend(b.id);
            whole.push.extend(b.push);
        }
        Ok(whole)
    }

    /// A sum over the ranks of `v` (collective; added in rank order).
    pub fn sum(&self, v: [f64; 3]) -> Result<[f64; 3], FluidError> {
        let mut m = Vec::with_capacity(24);
        for c in v {
            m.extend_from_slice(&c.to_le_bytes());
        }
        let mut total = [0.0f64; 3];
        for (peer, m) in self.comm.all_gather(&m)?.iter().enumerate() {
            if m.len() != 24 {
                return Err(bad(peer, "sum"));
            }
            for (c, t) in total.iter_mut().enumerate() {
                let mut b = [0u8; 8];
                b.copy_from_slice(&m[8 * c..8 * c + 8]);
                *t += f64::from_le_bytes(b);
            }
        }
        Ok(total)
    }
}

/// The boids `keep` marks.
fn select(b: BoidArrays, keep: &[bool]) -> BoidArrays {
    let pick = |v: Vec<Vec3>| -> Vec<Vec3> {
        v.into_iter()
            .zip(keep)
            .filter(|(_, &k)| k)
            .map(|(x, _)| x)
            .collect()
    };
    let two_way = !b.push.is_empty();
    BoidArrays {
        push: if two_way {
            b.push
                .chunks_exact(3)
                .zip(keep)
                .filter(|(_, &k)| k)
                .flat_map(|(c, _)| c.to_vec())
                .collect()
        } else {
            Vec::new()
        },
        id: b
            .id
            .into_iter()
            .zip(keep)
            .filter(|(_, &k)| k)
            .map(|(i, _)| i)
            .collect(),
        pos: pick(b.pos),
        vel: pick(b.vel),
        rel: pick(b.rel),
    }
}

/// Bytes of a boid in a message: position, ground and relative velocity, id, and two-way its
/// three pending impulse sums.
fn boid_bytes(two_way: bool) -> usize {
    40 + if two_way { 24 } else { 0 }
}

fn encode(b: &BoidArrays) -> Vec<u8> {
    let two_way = !b.push.is_empty();
    let mut out = Vec::with_capacity(b.pos.len() * boid_bytes(two_way));
    for i in 0..b.pos.len() {
        put(&mut out, b.pos[i]);
        put(&mut out, b.vel[i]);
        put(&mut out, b.rel[i]);
        out.extend_from_slice(&b.id[i].to_le_bytes());
        if two_way {
            for c in &b.push[3 * i..3 * i + 3] {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
    out
}

fn decode(m: &[u8], two_way: bool) -> Option<BoidArrays> {
    let size = boid_bytes(two_way);
    if !m.len().is_multiple_of(size) {
        return None;
    }
    let mut b = BoidArrays::default();
    for r in m.chunks_exact(size) {
        b.pos.push(vec_at(r, 0));
        b.vel.push(vec_at(r, 3));
        b.rel.push(vec_at(r, 6));
        b.id.push(u32::from_le_bytes([r[36], r[37], r[38], r[39]]));
        if two_way {
            for c in 0..3 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&r[40 + 8 * c..48 + 8 * c]);
                b.push.push(u64::from_le_bytes(w));
            }
        }
    }
    Some(b)
}
