//! The flock in the fluid on the host: the CPU reference of a coupled flock's substep. One-way
//! for now: the boids obey the rules on their velocities relative to the air, steer off the
//! solids within their avoidance distance, ride the air, stay in their box and are put back
//! outside any solid that swept over them; a scene's flocks ride `fluid run` ([`scene`]);
//! pushing back and the fluid plan's stages come next. It sits above `flock` and `fluid`
//! (neither imports it): the air comes in as a function and the math is
//! `murmur_common::coupling`'s, which the kernels will share.

use cuda::BoidArrays;
use murmur_common::coupling::grid::BoxGrid;
use murmur_common::coupling::sdf::{Avoidance, Obstacle, ObstacleList};
use murmur_common::coupling::substep::{add_push, move_boid, rules_velocity};
use murmur_common::coupling::{BoidBox, Motion, Rates};
use murmur_common::flock::params::FlockParams;
use murmur_common::Vec3;
use rayon::prelude::*;

pub mod bench;
pub mod case;
pub mod cuda;
pub mod distance;
pub mod gpu_ride;
pub mod ranks;
pub mod ranks_case;
pub mod riding;
pub mod scene;
pub mod spec;
pub mod validate;

/// The id of a guest: another rank's boid that a substep's rules see ([`CpuBoids::substep_beside`]).
pub const GUEST: u32 = u32::MAX;

/// Why a coupled flock cannot be set up, one line each.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BoidsError {
    #[error(
        "the flock's box is {extent} cells along {axis} (periodic), under twice its largest rule \
         distance {reach}: a neighbour could be in range at two images"
    )]
    ShortPeriod { axis: char, extent: f32, reach: f32 },
    #[error("boid {index} at ({x}, {y}, {z}) lies outside the flock's box")]
    Outside {
        index: usize,
        x: f32,
        y: f32,
        z: f32,
    },
    #[error("the flock's substep must be positive and its response time not negative, got dt = {dt}, tau_p = {tau_p}")]
    Times { dt: f64, tau_p: f64 },
    #[error("{0} positions but {1} velocities")]
    Lengths(usize, usize),
    #[error("a two-way flock's boid mass must be a finite number > 0, got {0}")]
    Mass(f32),
    #[error(
        "the flock's avoidance distance {reach} is not within 0..={most} cells (the box's \
         smallest extent), or its rate {rate}, margin {margin} or normal step {h} is not a \
         finite number >= 0 (the step > 0)"
    )]
    Avoidance {
        reach: f32,
        most: f32,
        rate: f32,
        margin: f32,
        h: f32,
    },
}

/// A coupled flock on the CPU: per boid its position, ground velocity, velocity relative to the
/// air and id, kept in cell order (each substep sorts them, ids moving with their boid).
pub struct CpuBoids {
    pub pos: Vec<Vec3>,
    pub vel: Vec<Vec3>,
    pub rel: Vec<Vec3>,
    pub id: Vec<u32>,
    /// Two-way: each boid's impulses on the air since the last [`CpuBoids::take_pushes`]
    /// (fixed point; empty one-way).
    pub push: Vec<[u64; 3]>,
    /// Mass of a boid (lattice units; 0: one-way).
    mass: f32,
    params: FlockParams,
    motion: Motion,
    bounds: BoidBox,
    grid: BoxGrid,
    starts: Vec<u32>,
    /// Scratch kept between substeps: each boid's cell key, the sorted order, and a spare of
    /// each array the sort permutes into (then swaps in).
    keys: Vec<u32>,
    order: Vec<usize>,
    spare: Vec<Vec3>,
    spare_id: Vec<u32>,
    spare_push: Vec<[u64; 3]>,
    avoidance: Avoidance,
    /// The samples of the sampled distances ([`murmur_common::coupling::sdf::GRID`]) of the obstacles the flock avoids
    /// (the scene's mesh solids): set once, read by every substep.
    samples: std::sync::Arc<[f32]>,
}

impl CpuBoids {
    /// A flock at `pos` with relative velocities `rel` (ground velocities the same: the air is
    /// not known yet), ids in order, substeps of `dt` fluid steps, response time `tau_p` (0:
    /// tracers that obey the rules), in `bounds` (lattice units).
    pub fn new(
        pos: Vec<Vec3>,
        rel: Vec<Vec3>,
        rates: Rates,
        dt: f64,
        tau_p: f64,
        bounds: BoidBox,
    ) -> Result<CpuBoids, BoidsError> {
        if pos.len() != rel.len() {
            return Err(BoidsError::Lengths(pos.len(), rel.len()));
        }
        if !(dt > 0.0 && tau_p >= 0.0) {
            return Err(BoidsError::Times { dt, tau_p });
        }
        let params = rates.scales(dt as f32);
        let reach = params.max_distance();
        if let Some(a) = BoxGrid::periodic_fits(&bounds, reach) {
            return Err(BoidsError::ShortPeriod {
                axis: ['x', 'y', 'z'][a],
                extent: bounds.hi[a] - bounds.lo[a],
                reach,
            });
        }
        if let Some(index) = pos.iter().position(|p| {
            let p = p.to_array();
            (0..3).any(|a| !(p[a] >= bounds.lo[a] && p[a] <= bounds.hi[a]))
        }) {
            let [x, y, z] = pos[index].to_array();
            return Err(BoidsError::Outside { index, x, y, z });
        }
        let grid = BoxGrid::new(&bounds, reach);
        Ok(CpuBoids {
            vel: rel.clone(),
            id: (0..pos.len() as u32).collect(),
            pos,
            rel,
            params,
            motion: Motion::new(dt, tau_p),
            bounds,
            starts: vec![0; grid.cell_count() as usize + 1],
            grid,
            keys: Vec::new(),
            order: Vec::new(),
            spare: Vec::new(),
            spare_id: Vec::new(),
            spare_push: Vec::new(),
            push: Vec::new(),
            mass: 0.0,
            avoidance: Avoidance::default(),
            samples: std::sync::Arc::from(Vec::new()),
        })
    }

    /// The flock pushing back on the air, each boid of `mass` (lattice units, `> 0`).
    pub fn two_way(mut self, mass: f32) -> Result<CpuBoids, BoidsError> {
        if !(mass > 0.0 && mass.is_finite()) {
            return Err(BoidsError::Mass(mass));
        }
        self.mass = mass;
        self.push = vec![[0; 3]; self.pos.len()];
        Ok(self)
    }

    /// Mass of a boid (0: one-way).
    pub fn mass(&self) -> f32 {
        self.mass
    }

    /// The boids' impulses on the air over the last fluid step, as the fluid takes them
    /// ([`crate::fluid::FluidBackend::push`]): positions and three fixed-point totals per
    /// boid. They stay pending (in checkpoints too) until [`CpuBoids::clear_pushes`].
    pub fn pushes(&self) -> (Vec<[f32; 3]>, Vec<u64>) {
        let pos = self.pos.iter().map(|p| p.to_array()).collect();
        let total = self.push.iter().flatten().copied().collect();
        (pos, total)
    }

    /// The pending impulses applied (the fluid took its step): the sums start from zero.
    pub fn clear_pushes(&mut self) {
        self.push.iter_mut().for_each(|p| *p = [0; 3]);
    }

    /// Puts back the pending impulses a checkpoint kept (in the boids' order).
    pub fn restore_pushes(&mut self, push: Vec<[u64; 3]>) -> Result<(), BoidsError> {
        if push.len() != self.pos.len() || self.mass == 0.0 {
            return Err(BoidsError::Lengths(self.pos.len(), push.len()));
        }
        self.push = push;
        Ok(())
    }

    /// The pending impulses, summed (lattice momentum).
    pub fn pending_push(&self) -> [f64; 3] {
        let mut sum = [0u64; 3];
        for p in &self.push {
            sum = add_push(sum, *p);
        }
        sum.map(|v| murmur_common::lbm::ib::band::from_fixed(v) as f64)
    }

    /// The boids' momentum `sum m v` (lattice units; 0 one-way).
    pub fn momentum(&self) -> [f64; 3] {
        let mut m = [0.0f64; 3];
        for v in &self.vel {
            for (c, x) in v.to_array().iter().enumerate() {
                m[c] += self.mass as f64 * *x as f64;
            }
        }
        m
    }

    /// The flock with avoidance `a` (the fourth rule and the projection; by default nothing
    /// steers and boids are put right on the surface).
    pub fn avoiding(mut self, a: Avoidance) -> Result<CpuBoids, BoidsError> {
        self.avoidance = checked_avoidance(&self.bounds, a)?;
        Ok(self)
    }

    /// The flock seeing obstacles whose sampled distances ([`murmur_common::coupling::sdf::GRID`]) read `samples`.
    pub fn seeing(mut self, samples: std::sync::Arc<[f32]>) -> CpuBoids {
        self.samples = samples;
        self
    }

    /// The samples of the obstacles' sampled distances ([`CpuBoids::seeing`]).
    pub fn samples(&self) -> &[f32] {
        &self.samples
    }

    /// One substep among no obstacles ([`CpuBoids::substep_among`]).
    pub fn substep(&mut self, air: impl Fn(Vec3, f32) -> Option<Vec3> + Sync) {
        self.substep_among(air, &[]);
    }

    /// The farthest a boid's rules see (its largest rule distance, cells).
    pub fn reach(&self) -> f32 {
        self.params.max_distance()
    }

    /// One substep among `obstacles` ([`CpuBoids::substep_among`]) beside `guests`: boids of
    /// other ranks near this one's slab, each a position and a relative velocity, which the
    /// rules see as neighbours but which do not move here.
    pub fn substep_beside(
        &mut self,
        air: impl Fn(Vec3, f32) -> Option<Vec3> + Sync,
        obstacles: &[Obstacle],
        guests: &[(Vec3, Vec3)],
    ) {
        if guests.is_empty() {
            return self.substep_among(air, obstacles);
        }
        let two_way = self.mass > 0.0;
        for &(x, w) in guests {
            self.pos.push(x);
            self.rel.push(w);
            self.vel.push(w);
            self.id.push(GUEST);
            if two_way {
                self.push.push([0; 3]);
            }
        }
        self.sort();
        self.rules(obstacles);
        // The guests leave before the motion (the order of the rest is kept).
        let keep: Vec<bool> = self.id.iter().map(|&i| i != GUEST).collect();
        self.retain(&keep);
        self.motion(air, obstacles);
    }

    /// Keeps the boids whose flag in `keep` is set (all of their state), in their order.
    fn retain(&mut self, keep: &[bool]) {
        fn retain_flagged<T>(v: &mut Vec<T>, keep: &[bool]) {
            let mut k = keep.iter();
            v.retain(|_| *k.next().unwrap_or(&true));
        }
        retain_flagged(&mut self.pos, keep);
        retain_flagged(&mut self.vel, keep);
        retain_flagged(&mut self.rel, keep);
        retain_flagged(&mut self.id, keep);
        // One-way flocks hold no pending impulses.
        retain_flagged(&mut self.push, keep);
    }

    /// Takes out the boids `leaving` picks by position (all of their state, pending impulses
    /// included); the rest keep their order.
    pub fn take(&mut self, leaving: impl Fn(Vec3) -> bool) -> BoidArrays {
        let out: Vec<bool> = self.pos.iter().map(|&p| leaving(p)).collect();
        let mut taken = BoidArrays::default();
        let two_way = self.mass > 0.0;
        for (i, _) in out.iter().enumerate().filter(|(_, &o)| o) {
            taken.pos.push(self.pos[i]);
            taken.vel.push(self.vel[i]);
            taken.rel.push(self.rel[i]);
            taken.id.push(self.id[i]);
            if two_way {
                taken.push.extend(self.push[i]);
            }
        }
        let keep: Vec<bool> = out.iter().map(|&o| !o).collect();
        self.retain(&keep);
        taken
    }

    /// Appends boids `b` ([`CpuBoids::take`]'s, maybe another rank's) after the present ones.
    pub fn append(&mut self, b: BoidArrays) -> Result<(), BoidsError> {
        let n = b.pos.len();
        let two_way = self.mass > 0.0;
        let pushes = if two_way { 3 * n } else { 0 };
        for len in [b.vel.len(), b.rel.len(), b.id.len()] {
            if len != n {
                return Err(BoidsError::Lengths(n, len));
            }
        }
        if b.push.len() != pushes {
            return Err(BoidsError::Lengths(pushes, b.push.len()));
        }
        self.pos.extend(b.pos);
        self.vel.extend(b.vel);
        self.rel.extend(b.rel);
        self.id.extend(b.id);
        self.push
            .extend(b.push.chunks_exact(3).map(|c| [c[0], c[1], c[2]]));
        Ok(())
    }

    /// The boids' state as the GPU's flock reports it (pending impulses flattened).
    pub fn arrays(&self) -> BoidArrays {
        BoidArrays {
            pos: self.pos.clone(),
            vel: self.vel.clone(),
            rel: self.rel.clone(),
            id: self.id.clone(),
            push: self.push.iter().flatten().copied().collect(),
        }
    }

    /// One substep: the boids sorted by cell (a stable counting sort), the rules on the
    /// relative velocities of each boid's neighbours (all read before any is written), the
    /// avoidance of `obstacles` (their states at the end of the substep) added and the speed
    /// limit applied again, the motion in the air (`air(x, s)`: the air velocity at `x` a
    /// fraction `s` into the substep, `None` where there is no fluid), then the box (a wall
    /// reflects the position and both velocities' components across it, a periodic face
    /// wraps) and the projection out of any obstacle the boid ends in.
    pub fn substep_among(
        &mut self,
        air: impl Fn(Vec3, f32) -> Option<Vec3> + Sync,
        obstacles: &[Obstacle],
    ) {
        self.sort();
        self.rules(obstacles);
        self.motion(air, obstacles);
    }

    /// The rules' new relative velocities of every boid (sorted by cell), each reading the
    /// old ones of its neighbours; guests ([`GUEST`]) keep theirs.
    fn rules(&mut self, obstacles: &[Obstacle]) {
        let (p, g, starts) = (&self.params, &self.grid, &self.starts);
        let (pos, rel) = (&self.pos, &self.rel);
        let a = &self.avoidance;
        let obstacles = &ObstacleList {
            list: obstacles,
            samples: &self.samples,
        };
        // The new relative velocities into the spare (every boid reads the old ones).
        let id = &self.id;
        self.spare.resize(pos.len(), Vec3::ZERO);
        self.spare.par_iter_mut().enumerate().for_each(|(i, w)| {
            if id[i] == GUEST {
                *w = rel[i];
                return;
            }
            *w = rules_velocity(
                p,
                g,
                a,
                obstacles,
                pos[i],
                rel[i],
                |k| starts[k as usize],
                |k| (pos[k as usize], rel[k as usize]),
            );
        });
        std::mem::swap(&mut self.rel, &mut self.spare);
    }

    /// The motion of every boid in the air, among `obstacles`, its impulse on the air added
    /// to its pending sums (two-way).
    fn motion(&mut self, air: impl Fn(Vec3, f32) -> Option<Vec3> + Sync, obstacles: &[Obstacle]) {
        let a = &self.avoidance;
        let obstacles = &ObstacleList {
            list: obstacles,
            samples: &self.samples,
        };
        let (motion, bounds, mass) = (self.motion, self.bounds, self.mass);
        let one_way = self.mass == 0.0;
        if one_way {
            self.spare_push.clear();
            self.spare_push.resize(self.pos.len(), [0; 3]);
        }
        let push = if one_way {
            &mut self.spare_push
        } else {
            &mut self.push
        };
        (&mut self.pos, &mut self.vel, &mut self.rel, push)
            .into_par_iter()
            .for_each(|(x, v, w, acc)| {
                let pushed;
                (*x, *v, *w, pushed) =
                    move_boid(&motion, &bounds, a, obstacles, mass, *x, *v, *w, &air);
                *acc = add_push(*acc, pushed);
            });
    }

    /// Puts back a flock's state as [`CpuBoids`] kept it (the same order: a run resumed from it
    /// goes on bit for bit): positions, ground and relative velocities, ids.
    pub fn restore(
        &mut self,
        pos: Vec<Vec3>,
        vel: Vec<Vec3>,
        rel: Vec<Vec3>,
        id: Vec<u32>,
    ) -> Result<(), BoidsError> {
        let n = pos.len();
        for len in [vel.len(), rel.len(), id.len()] {
            if len != n {
                return Err(BoidsError::Lengths(n, len));
            }
        }
        let b = self.bounds;
        if let Some(index) = pos.iter().position(|p| {
            let p = p.to_array();
            (0..3).any(|a| !(p[a] >= b.lo[a] && p[a] <= b.hi[a]))
        }) {
            let [x, y, z] = pos[index].to_array();
            return Err(BoidsError::Outside { index, x, y, z });
        }
        (self.pos, self.vel, self.rel, self.id) = (pos, vel, rel, id);
        Ok(())
    }

    /// The boids in SI units (positions in m, ground velocities in m/s; lattice coordinates
    /// times `dx`), as the flock's snapshots hold them.
    pub fn state_si(&self, units: &murmur_common::lbm::Units) -> crate::flock::FlockState {
        state_si(&self.pos, &self.vel, &self.id, units)
    }

    /// Writes the boids to `path` as a flock snapshot (`pos`, `vel`, `id`, ordered by id; SI
    /// units, [`CpuBoids::state_si`]): `NAME_STEP_boids.npz` of a coupled run. Atomic.
    pub fn save(
        &self,
        path: &std::path::Path,
        units: &murmur_common::lbm::Units,
    ) -> Result<(), crate::flock::snapshot::SnapshotError> {
        crate::flock::snapshot::save(path, &self.state_si(units))
    }

    /// Sorts the boids by cell (stable: equal keys keep their order) and fills the cells'
    /// starts.
    fn sort(&mut self) {
        let g = self.grid;
        self.keys.clear();
        self.keys
            .extend(self.pos.iter().map(|&p| g.key(g.cell_of(p))));
        self.starts.iter_mut().for_each(|s| *s = 0);
        for &k in &self.keys {
            self.starts[k as usize + 1] += 1;
        }
        for k in 0..g.cell_count() as usize {
            self.starts[k + 1] += self.starts[k];
        }
        // Each boid's place: its cell's start plus the boids of that cell before it.
        self.order.clear();
        self.order.resize(self.keys.len(), 0);
        for (i, &k) in self.keys.iter().enumerate() {
            let at = &mut self.starts[k as usize];
            self.order[*at as usize] = i;
            *at += 1;
        }
        // The raised starts are the next cells' starts: shift them back.
        for k in (1..=g.cell_count() as usize).rev() {
            self.starts[k] = self.starts[k - 1];
        }
        self.starts[0] = 0;
        let order = &self.order;
        for a in [&mut self.pos, &mut self.vel, &mut self.rel] {
            self.spare.clear();
            self.spare.extend(order.iter().map(|&i| a[i]));
            std::mem::swap(a, &mut self.spare);
        }
        self.spare_id.clear();
        self.spare_id.extend(order.iter().map(|&i| self.id[i]));
        std::mem::swap(&mut self.id, &mut self.spare_id);
        if self.mass > 0.0 {
            self.spare_push.clear();
            self.spare_push.extend(order.iter().map(|&i| self.push[i]));
            std::mem::swap(&mut self.push, &mut self.spare_push);
        }
    }
}

/// `a` when it suits a flock in `bounds` (the avoidance distance within `0..=` the box's
/// smallest extent, rate and margin finite and `>= 0`, the normal step finite and `> 0`).
fn checked_avoidance(bounds: &BoidBox, a: Avoidance) -> Result<Avoidance, BoidsError> {
    let most = (0..3)
        .map(|k| bounds.hi[k] - bounds.lo[k])
        .fold(f32::INFINITY, f32::min);
    let fine = |v: f32| v.is_finite() && v >= 0.0;
    let step = a.h > 0.0 && a.h.is_finite();
    if !(fine(a.reach) && a.reach <= most && fine(a.rate) && fine(a.margin) && step) {
        return Err(BoidsError::Avoidance {
            reach: a.reach,
            most,
            rate: a.rate,
            margin: a.margin,
            h: a.h,
        });
    }
    Ok(a)
}

/// Boids in SI units (positions in m, ground velocities in m/s; lattice coordinates times
/// `dx`), ids as given.
pub(crate) fn state_si(
    pos: &[Vec3],
    vel: &[Vec3],
    id: &[u32],
    units: &murmur_common::lbm::Units,
) -> crate::flock::FlockState {
    let si = |v: &[Vec3], f: &dyn Fn(f64) -> f64| -> Vec<Vec3> {
        v.iter()
            .map(|p| Vec3::from_array(p.to_array().map(|c| f(c as f64) as f32)))
            .collect()
    };
    crate::flock::FlockState {
        pos: si(pos, &|c| units.length_to_si(c)),
        vel: si(vel, &|c| units.velocity_to_si(c)),
        id: id.to_vec(),
    }
}

#[cfg(test)]
mod tests;
