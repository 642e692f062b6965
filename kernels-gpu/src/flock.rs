//! Flocking kernels, one per stage of a step. All rule and grid math is `murmur_common::flock`.
//!
//! Buffers: `pos`/`vel` (`Vec3`, 12 bytes each), `id` (u32) per boid; `keys`/`values` (u32) for
//! the sort; `cell_start` (u32, `cell_count + 1` entries: the lower-bound table of the search).

use crate::thread::{self, block, block_dim, shared, sync, tid};
use core::sync::atomic::{AtomicU32, Ordering};
use murmur_common::flock::{
    fill_cell_start, grid_sums, initial_position, integrate_position, naive_sums, new_velocity,
    FlockParams, Grid, RuleSums,
};
use murmur_common::Vec3;

/// The boid this thread updates, or `None` past the end.
#[inline(always)]
fn boid_index(n: u32) -> Option<u32> {
    let i = thread::index();
    if i < n as usize {
        Some(i as u32)
    } else {
        None
    }
}

/// Stage `init_flock`: the CIS 565 start (uniform positions, zero velocities, ids `0..n`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn init_flock(
    n: u32,
    seed: u64,
    scale: f32,
    pos: *mut Vec3,
    vel: *mut Vec3,
    id: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    *pos.add(i as usize) = initial_position(seed, i as u64, scale);
    *vel.add(i as usize) = Vec3::ZERO;
    *id.add(i as usize) = i;
}

/// Stage `compute_keys`: `keys[i]` = cell key of boid `i`, `values[i] = i`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn compute_keys(
    n: u32,
    grid: Grid,
    pos: *const Vec3,
    keys: *mut u32,
    values: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    *keys.add(i as usize) = grid.key(*pos.add(i as usize));
    *values.add(i as usize) = i;
}

/// Stage `cell_bounds`: the lower-bound table `cell_start[0..=cell_count]` from sorted keys.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn cell_bounds(
    n: u32,
    cell_count: u32,
    keys: *const u32,
    cell_start: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    fill_cell_start(
        i,
        n,
        cell_count,
        |k| *keys.add(k as usize),
        |key, v| *cell_start.add(key as usize) = v,
    );
}

/// Stage `gather`: reorder positions, velocities and ids into cell order (`coherent`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gather(
    n: u32,
    values: *const u32,
    pos_in: *const Vec3,
    vel_in: *const Vec3,
    id_in: *const u32,
    pos_out: *mut Vec3,
    vel_out: *mut Vec3,
    id_out: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    let j = *values.add(i as usize) as usize;
    *pos_out.add(i as usize) = *pos_in.add(j);
    *vel_out.add(i as usize) = *vel_in.add(j);
    *id_out.add(i as usize) = *id_in.add(j);
}

/// Stage `update_velocity_naive`: every other boid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_naive(
    n: u32,
    params: FlockParams,
    pos: *const Vec3,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = (*pos.add(i as usize), *vel.add(i as usize));
    let s = naive_sums(&params, n, i, x, |j| {
        (*pos.add(j as usize), *vel.add(j as usize))
    });
    *vel_out.add(i as usize) = new_velocity(&params, x, v, &s);
}

/// Stage `update_velocity_scattered`: grid search through the sorted index array.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_scattered(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    values: *const u32,
    pos: *const Vec3,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = (*pos.add(i as usize), *vel.add(i as usize));
    let s = grid_sums(
        &params,
        &grid,
        i,
        x,
        |key| *cell_start.add(key as usize),
        |k| {
            let j = *values.add(k as usize);
            (j, *pos.add(j as usize), *vel.add(j as usize))
        },
    );
    *vel_out.add(i as usize) = new_velocity(&params, x, v, &s);
}

/// Stage `update_velocity_coherent`: grid search over state already in cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_coherent(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    pos: *const Vec3,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = (*pos.add(i as usize), *vel.add(i as usize));
    let s = grid_sums(
        &params,
        &grid,
        i,
        x,
        |key| *cell_start.add(key as usize),
        |k| (k, *pos.add(k as usize), *vel.add(k as usize)),
    );
    *vel_out.add(i as usize) = new_velocity(&params, x, v, &s);
}

/// Stage `update_velocity_coherent_shared` (seed 000's shared-memory variant): the block's boids
/// are consecutive in cell order; the block walks the runs of the union of their search boxes,
/// staging `block_dim` candidates at a time in shared memory; each thread keeps those in range.
/// Shared memory: `32 + block_dim * 24` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_coherent_shared(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    pos: *const Vec3,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let smem = shared::<u32>();
    let bounds = smem; // lo x,y,z then hi x,y,z (8 slots)
    let spos = smem.add(8) as *mut Vec3;
    let bd = block_dim();
    let svel = spos.add(bd as usize);
    let t = tid();
    let i = block() * bd + t;
    let valid = i < n;
    if t < 3 {
        *bounds.add(t as usize) = u32::MAX;
        *bounds.add(t as usize + 3) = 0;
    }
    sync();
    let (x, v) = if valid {
        (*pos.add(i as usize), *vel.add(i as usize))
    } else {
        (Vec3::ZERO, Vec3::ZERO)
    };
    if valid {
        let b = grid.search_box(x, params.max_distance());
        for a in 0..3 {
            AtomicU32::from_ptr(bounds.add(a)).fetch_min(b.lo[a], Ordering::Relaxed);
            AtomicU32::from_ptr(bounds.add(a + 3)).fetch_max(b.hi[a], Ordering::Relaxed);
        }
    }
    sync();
    let lo = [*bounds, *bounds.add(1), *bounds.add(2)];
    let hi = [*bounds.add(3), *bounds.add(4), *bounds.add(5)];
    let mut s = RuleSums::default();
    let mut z = lo[2];
    while z <= hi[2] {
        let mut y = lo[1];
        while y <= hi[1] {
            let mut cx = lo[0];
            while cx <= hi[0] {
                // One run: a whole x-row for Linear keys, one cell for Morton keys.
                let linear = grid.order == murmur_common::flock::CellOrder::Linear as u32;
                let last = if linear { hi[0] } else { cx };
                let start = *cell_start.add(grid.key_of_cell([cx, y, z]) as usize);
                let end = *cell_start.add(grid.key_of_cell([last, y, z]) as usize + 1);
                let mut chunk = start;
                while chunk < end {
                    let k = chunk + t;
                    if k < end {
                        *spos.add(t as usize) = *pos.add(k as usize);
                        *svel.add(t as usize) = *vel.add(k as usize);
                    }
                    sync();
                    let len = if end - chunk < bd { end - chunk } else { bd };
                    if valid {
                        let mut c = 0;
                        while c < len {
                            if chunk + c != i {
                                s.accumulate(
                                    &params,
                                    x,
                                    *spos.add(c as usize),
                                    *svel.add(c as usize),
                                );
                            }
                            c += 1;
                        }
                    }
                    sync();
                    chunk += bd;
                }
                cx = last + 1;
            }
            y += 1;
        }
        z += 1;
    }
    if valid {
        *vel_out.add(i as usize) = new_velocity(&params, x, v, &s);
    }
}

/// Stage `update_position`: `pos[i] += vel[i] * dt`, wrapped at `±scale`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_position(
    n: u32,
    params: FlockParams,
    pos: *mut Vec3,
    vel: *const Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    *pos.add(i as usize) = integrate_position(&params, *pos.add(i as usize), *vel.add(i as usize));
}
