//! The coupled flock's kernels, one per stage of a substep, each taking its argument struct
//! from `murmur_common::coupling::abi` (where the buffers are described). All the math is
//! `murmur_common::coupling` (`substep`, `grid`, `sdf`), the functions the CPU reference calls.
//!
//! A substep: `coupling_keys`, the device radix sort of (key, index) pairs, `coupling_starts`,
//! `coupling_gather` (the boids into cell order), `coupling_rules` (new relative velocities
//! into the second buffer), `coupling_move` (in place, each thread its own boid).

use crate::thread::index_below;
use murmur_common::coupling::abi::{
    CouplingGather, CouplingKeys, CouplingMove, CouplingRules, CouplingStarts, DeviceAir,
};
use murmur_common::coupling::sdf::{Obstacle, Obstacles};
use murmur_common::coupling::substep::{add_push, air_between, move_boid, rules_velocity};
use murmur_common::flock::fill_cell_start;
use murmur_common::{DevSlice, Vec3};

/// Stage `coupling_keys`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn coupling_keys(a: CouplingKeys) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    a.keys.write(i, a.grid.key(a.grid.cell_of(a.pos.read(i))));
    a.values.write(i, i as u32);
}

/// Stage `coupling_starts`: sorted entry `i` writes the starts it owns (every key in
/// `0..=cell_count` is written by exactly one entry).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn coupling_starts(a: CouplingStarts) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    fill_cell_start(
        i as u32,
        a.n,
        a.cell_count,
        |k| a.keys.read(k as usize),
        |key, v| a.starts.write(key as usize, v),
    );
}

/// Stage `coupling_gather`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn coupling_gather(a: CouplingGather) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let j = a.values.read(i) as usize;
    a.pos_out.write(i, a.pos_in.read(j));
    a.vel_out.write(i, a.vel_in.read(j));
    a.rel_out.write(i, a.rel_in.read(j));
    a.id_out.write(i, a.id_in.read(j));
    if !a.push_in.is_empty() {
        for c in 0..3 {
            a.push_out.write(3 * i + c, a.push_in.read(3 * j + c));
        }
    }
}

/// A kernel's obstacles: the list and the grids' samples of its arguments.
#[derive(Clone, Copy)]
struct DeviceObstacles {
    list: DevSlice<Obstacle>,
    samples: DevSlice<f32>,
}

impl Obstacles for DeviceObstacles {
    #[inline(always)]
    fn count(&self) -> usize {
        self.list.len() as usize
    }
    #[inline(always)]
    fn obstacle(&self, i: usize) -> Obstacle {
        // SAFETY: `i < count()`, the list's length, as the host uploaded it.
        unsafe { self.list.read(i) }
    }
    #[inline(always)]
    fn sample(&self, k: u32) -> f32 {
        // SAFETY: a grid's indices lie in `samples` (built with it on the host).
        unsafe { self.samples.read(k as usize) }
    }
}

/// Stage `coupling_rules`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn coupling_rules(a: CouplingRules) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let w = rules_velocity(
        &a.params,
        &a.grid,
        &a.avoidance,
        &DeviceObstacles {
            list: a.obstacles,
            samples: a.samples,
        },
        a.pos.read(i),
        a.rel.read(i),
        |k| a.starts.read(k as usize),
        |k| (a.pos.read(k as usize), a.rel.read(k as usize)),
    );
    a.rel_out.write(i, w);
}

/// The air at `x` a fraction `s` into the substep (`None` without fields or fluid nodes near).
#[inline(always)]
unsafe fn air_at(air: &DeviceAir, x: Vec3, s: f32) -> Option<Vec3> {
    if air.before.is_empty() {
        return None;
    }
    let n = air.domain.lattice.cells();
    let u =
        |f: DevSlice<f32>| move |c: usize| [f.read(n + c), f.read(2 * n + c), f.read(3 * n + c)];
    air_between(
        &air.domain,
        x,
        air.time.at(s),
        |c| air.fluid.read(c) != 0,
        u(air.before),
        u(air.after),
    )
}

/// Stage `coupling_move`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn coupling_move(a: CouplingMove) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let (x, v, w, push) = move_boid(
        &a.motion,
        &a.bounds,
        &a.avoidance,
        &DeviceObstacles {
            list: a.obstacles,
            samples: a.samples,
        },
        a.mass,
        a.pos.read(i),
        a.vel.read(i),
        a.rel.read(i),
        |x, s| air_at(&a.air, x, s),
    );
    a.pos.write(i, x);
    a.vel.write(i, v);
    a.rel.write(i, w);
    if a.mass > 0.0 {
        let acc = [0, 1, 2].map(|c| a.push.read(3 * i + c));
        let sum = add_push(acc, push);
        for (c, &v) in sum.iter().enumerate() {
            a.push.write(3 * i + c, v);
        }
    }
}
