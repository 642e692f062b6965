//! Flocking kernels, one per stage of a step. All rule and grid math is `murmur_common::flock`.
//!
//! Device layout per boid: `Body` (position + id, 16 bytes, one aligned load), velocity (`Vec3`,
//! 12 bytes), both double-buffered; `slot` (u32, the boid's rank in its cell, counting sort);
//! `values` (u32, sorted index array, `scattered`); `keys` (u32, radix sort only). Per grid
//! cell: one u32 (`cells`: counts, then, scanned in place, the lower-bound table of the search,
//! `cell_count + 1` entries).

use crate::thread::{self, block, block_dim, shared, sync, tid, warp_max, warp_min};
use core::sync::atomic::{AtomicU32, Ordering};
use murmur_common::flock::{
    fill_cell_start, grid_sums, initial_position, integrate_position, naive_sums, new_velocity,
    Body, CellOrder, FlockParams, Grid, RuleSums,
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

/// `atomicAdd(&cells[key], 1)`: the boid's rank among the boids counted into its cell.
#[inline(always)]
unsafe fn count_into(cells: *mut u32, key: u32) -> u32 {
    AtomicU32::from_ptr(cells.add(key as usize)).fetch_add(1, Ordering::Relaxed)
}

/// Stage `init_flock`: the CIS 565 start (uniform positions, zero velocities, ids `0..n`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn init_flock(
    n: u32,
    seed: u64,
    scale: f32,
    body: *mut Body,
    vel: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    *body.add(i as usize) = Body {
        pos: initial_position(seed, i as u64, scale),
        id: i,
    };
    *vel.add(i as usize) = Vec3::ZERO;
}

/// Stage `count_cells`: `slot[i] = atomicAdd(&cells[key(pos[i])], 1)` (cells zeroed before).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn count_cells(
    n: u32,
    grid: Grid,
    body: *const Body,
    cells: *mut u32,
    slot: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    *slot.add(i as usize) = count_into(cells, grid.key((*body.add(i as usize)).pos));
}

/// Stage `scatter_cells` (`coherent`, counting sort): move each boid to
/// `cell_start[key] + slot`, so the state ends up in cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_cells(
    n: u32,
    grid: Grid,
    body_in: *const Body,
    vel_in: *const Vec3,
    cell_start: *const u32,
    slot: *const u32,
    body_out: *mut Body,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let b = *body_in.add(i as usize);
    let dest = *cell_start.add(grid.key(b.pos) as usize) + *slot.add(i as usize);
    *body_out.add(dest as usize) = b;
    *vel_out.add(dest as usize) = *vel_in.add(i as usize);
}

/// Stage `scatter_index` (`scattered`, counting sort): the sorted index array.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_index(
    n: u32,
    grid: Grid,
    body: *const Body,
    cell_start: *const u32,
    slot: *const u32,
    values: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    let key = grid.key((*body.add(i as usize)).pos);
    *values.add((*cell_start.add(key as usize) + *slot.add(i as usize)) as usize) = i;
}

/// Stage `compute_keys` (radix sort path): `keys[i]` = cell key of boid `i`, `values[i] = i`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn compute_keys(
    n: u32,
    grid: Grid,
    body: *const Body,
    keys: *mut u32,
    values: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    *keys.add(i as usize) = grid.key((*body.add(i as usize)).pos);
    *values.add(i as usize) = i;
}

/// Stage `cell_bounds` (radix sort path): the lower-bound table from sorted keys.
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

/// Stage `gather` (radix sort path, `coherent`): reorder bodies and velocities into cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gather(
    n: u32,
    values: *const u32,
    body_in: *const Body,
    vel_in: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let j = *values.add(i as usize) as usize;
    *body_out.add(i as usize) = *body_in.add(j);
    *vel_out.add(i as usize) = *vel_in.add(j);
}

/// Stage `update_velocity_naive`: every other boid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_naive(
    n: u32,
    params: FlockParams,
    body: *const Body,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = ((*body.add(i as usize)).pos, *vel.add(i as usize));
    let s = naive_sums(&params, n, i, x, |j| {
        ((*body.add(j as usize)).pos, *vel.add(j as usize))
    });
    *vel_out.add(i as usize) = new_velocity(&params, v, &s);
}

/// Stage `update_velocity_scattered`: grid search through the sorted index array.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_scattered(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    values: *const u32,
    body: *const Body,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = ((*body.add(i as usize)).pos, *vel.add(i as usize));
    let s = grid_sums(
        &params,
        &grid,
        x,
        v,
        |key| *cell_start.add(key as usize),
        |k| {
            let j = *values.add(k as usize) as usize;
            ((*body.add(j)).pos, *vel.add(j))
        },
    );
    *vel_out.add(i as usize) = new_velocity(&params, v, &s);
}

/// Stage `update_velocity_coherent`: grid search over state already in cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_coherent(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    body: *const Body,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let (x, v) = ((*body.add(i as usize)).pos, *vel.add(i as usize));
    let s = grid_sums(
        &params,
        &grid,
        x,
        v,
        |key| *cell_start.add(key as usize),
        |k| ((*body.add(k as usize)).pos, *vel.add(k as usize)),
    );
    *vel_out.add(i as usize) = new_velocity(&params, v, &s);
}

/// Stage `update_velocity_coherent_warp`: a warp's 32 boids are consecutive in cell order, so
/// their search boxes nearly coincide; the warp walks the runs of their union together, every
/// lane reading the same candidate (one broadcast load, no divergence in the loop), each lane
/// keeping those in its own range. More candidates than `coherent`, all lanes busy.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_coherent_warp(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    body: *const Body,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    // Threads past `n` stay: the warp reductions need every lane.
    let i = thread::index() as u32;
    let valid = i < n;
    let (x, v) = if valid {
        ((*body.add(i as usize)).pos, *vel.add(i as usize))
    } else {
        (Vec3::ZERO, Vec3::ZERO)
    };
    let b = grid.search_box(x, params.max_distance());
    let lo = [
        warp_min(if valid { b.lo[0] } else { u32::MAX }),
        warp_min(if valid { b.lo[1] } else { u32::MAX }),
        warp_min(if valid { b.lo[2] } else { u32::MAX }),
    ];
    let hi = [
        warp_max(if valid { b.hi[0] } else { 0 }),
        warp_max(if valid { b.hi[1] } else { 0 }),
        warp_max(if valid { b.hi[2] } else { 0 }),
    ];
    let linear = grid.order == CellOrder::Linear as u32;
    let mut s = RuleSums::default();
    let mut z = lo[2];
    while z <= hi[2] {
        let mut y = lo[1];
        while y <= hi[1] {
            let mut cx = lo[0];
            while cx <= hi[0] {
                let last = if linear { hi[0] } else { cx };
                let start = *cell_start.add(grid.key_of_cell([cx, y, z]) as usize);
                let end = *cell_start.add(grid.key_of_cell([last, y, z]) as usize + 1);
                let mut k = start;
                while k < end {
                    let q = (*body.add(k as usize)).pos;
                    if k != i {
                        s.accumulate_with(&params, x, q, || *vel.add(k as usize));
                    }
                    k += 1;
                }
                cx = last + 1;
            }
            y += 1;
        }
        z += 1;
    }
    if valid {
        *vel_out.add(i as usize) = new_velocity(&params, v, &s);
    }
}

/// Stage `update_velocity_coherent_shared` (seed 000's shared-memory variant): the block's boids
/// are consecutive in cell order; the block walks the runs of the union of their search boxes,
/// staging `block_dim` candidates at a time in shared memory; each thread keeps those in range.
/// Shared memory: `32 + block_dim * 28` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_velocity_coherent_shared(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_start: *const u32,
    body: *const Body,
    vel: *const Vec3,
    vel_out: *mut Vec3,
) {
    let smem = shared::<u32>();
    let bounds = smem; // lo x,y,z then hi x,y,z (8 slots, 32 bytes)
    let sbody = smem.add(8) as *mut Body;
    let bd = block_dim();
    let svel = sbody.add(bd as usize) as *mut Vec3;
    let t = tid();
    let i = block() * bd + t;
    let valid = i < n;
    if t < 3 {
        *bounds.add(t as usize) = u32::MAX;
        *bounds.add(t as usize + 3) = 0;
    }
    sync();
    let (x, v) = if valid {
        ((*body.add(i as usize)).pos, *vel.add(i as usize))
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
    let linear = grid.order == CellOrder::Linear as u32;
    let mut s = RuleSums::default();
    let mut z = lo[2];
    while z <= hi[2] {
        let mut y = lo[1];
        while y <= hi[1] {
            let mut cx = lo[0];
            while cx <= hi[0] {
                // One run: a whole x-row for Linear keys, one cell for Morton keys.
                let last = if linear { hi[0] } else { cx };
                let start = *cell_start.add(grid.key_of_cell([cx, y, z]) as usize);
                let end = *cell_start.add(grid.key_of_cell([last, y, z]) as usize + 1);
                let mut chunk = start;
                while chunk < end {
                    let k = chunk + t;
                    if k < end {
                        *sbody.add(t as usize) = *body.add(k as usize);
                        *svel.add(t as usize) = *vel.add(k as usize);
                    }
                    sync();
                    let len = if end - chunk < bd { end - chunk } else { bd };
                    if valid {
                        let mut c = 0;
                        while c < len {
                            if chunk + c != i {
                                s.accumulate_with(&params, x, (*sbody.add(c as usize)).pos, || {
                                    *svel.add(c as usize)
                                });
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
        *vel_out.add(i as usize) = new_velocity(&params, v, &s);
    }
}

/// Stage `update_position`: `pos[i] += vel[i] * dt`, wrapped at `±scale`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_position(
    n: u32,
    params: FlockParams,
    body: *mut Body,
    vel: *const Vec3,
) {
    let Some(i) = boid_index(n) else { return };
    let b = body.add(i as usize);
    (*b).pos = integrate_position(&params, (*b).pos, *vel.add(i as usize));
}

/// Stage `update_position_count`: the position update fused with the next step's cell count
/// (counting sort): `slot[i] = atomicAdd(&cells[key(new pos)], 1)` (cells zeroed before).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_position_count(
    n: u32,
    params: FlockParams,
    grid: Grid,
    body: *mut Body,
    vel: *const Vec3,
    cells: *mut u32,
    slot: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    let b = body.add(i as usize);
    let p = integrate_position(&params, (*b).pos, *vel.add(i as usize));
    (*b).pos = p;
    *slot.add(i as usize) = count_into(cells, grid.key(p));
}
