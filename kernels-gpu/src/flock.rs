//! Flocking kernels, one per stage of a step. All rule and grid math is `murmur_common::flock`.
//!
//! Device layout per boid: `Body` (position + id, 16 bytes, one aligned load) and velocity
//! (`Vec3`, 12 bytes), both double-buffered (56 bytes); `values` (u32, sorted index array,
//! `scattered`) and `keys` (u32, radix sort only). Per grid cell: `counts` (u32, the next step's
//! cell populations) and `cell_end` (u32): the exclusive scan of the counts, which the scatter
//! advances cell by cell, so that after it `cell_end[k]` is the end of cell `k`'s entries and
//! the start of cell `k + 1`'s ([`cell_start`]).
//!
//! A step updates velocity and position in one kernel (`update_boids_*`): boid `i` reads the
//! previous state and writes its new state to index `i` of the other buffer, and counts itself
//! into its new cell for the next step's binning.

use crate::thread::{
    self, block, block_dim, shared, sync, tid, wait_for_previous_grid, warp_max, warp_min,
};
use core::sync::atomic::{AtomicU32, Ordering};
use murmur_common::flock::{
    fill_cell_start, grid_sums, grid_sums_as, initial_position, integrate_position, naive_sums,
    new_velocity, Body, CellOrder, FlockParams, Grid, RuleSums,
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

/// `atomicAdd(&counts[key], 1)`, result unused.
#[inline(always)]
unsafe fn count_into(counts: *mut u32, key: u32) {
    AtomicU32::from_ptr(counts.add(key as usize)).fetch_add(1, Ordering::Relaxed);
}

/// Claims the next free entry of cell `key`: `atomicAdd(&cell_end[key], 1)`.
#[inline(always)]
unsafe fn claim(cell_end: *mut u32, key: u32) -> u32 {
    AtomicU32::from_ptr(cell_end.add(key as usize)).fetch_add(1, Ordering::Relaxed)
}

/// Start of cell `key`'s entries: the end of cell `key - 1` (0 for the first cell). Defined for
/// every key in `0..=cell_count`.
#[inline(always)]
unsafe fn cell_start(cell_end: *const u32, key: u32) -> u32 {
    if key == 0 {
        0
    } else {
        *cell_end.add(key as usize - 1)
    }
}

/// The start of every stage a step launches with programmatic dependent launch (PDL): wait
/// for the previous stage's grid. The next stage's blocks may start as this grid's blocks exit
/// (no earlier `griddepcontrol.launch_dependents`: measured slower on the H200, see
/// `docs/performance.md`).
#[inline(always)]
fn follow_previous_stage() {
    wait_for_previous_grid();
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

/// Stage `count_cells`: `counts[key(pos[i])] += 1` (counts zeroed before; only after a reset of
/// the state: steps count in `update_boids_*`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn count_cells(
    n: u32,
    grid: Grid,
    body: *const Body,
    counts: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    count_into(counts, grid.key((*body.add(i as usize)).pos));
}

/// Stage `scatter_cells` (`coherent`, counting sort): each boid claims the next entry of its
/// cell (`cell_end` holds the cell starts before, the cell ends after), so the state ends up in
/// cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_cells(
    n: u32,
    grid: Grid,
    body_in: *const Body,
    vel_in: *const Vec3,
    cell_end: *mut u32,
    body_out: *mut Body,
    vel_out: *mut Vec3,
) {
    // The state was written two stages back, by the update kernel, which had finished before
    // the scan passed its wait (and this grid starts only as the scan's blocks exit): it loads
    // while the scan ends; the table only after.
    let i = thread::index();
    let (b, v) = if i < n as usize {
        (*body_in.add(i), *vel_in.add(i))
    } else {
        (Body::default(), Vec3::ZERO)
    };
    follow_previous_stage();
    if i >= n as usize {
        return;
    }
    let dest = claim(cell_end, grid.key(b.pos)) as usize;
    *body_out.add(dest) = b;
    *vel_out.add(dest) = v;
}

/// Stage `scatter_index` (`scattered`, counting sort): the sorted index array, claimed the same
/// way.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_index(
    n: u32,
    grid: Grid,
    body: *const Body,
    cell_end: *mut u32,
    values: *mut u32,
) {
    follow_previous_stage();
    let Some(i) = boid_index(n) else { return };
    let key = grid.key((*body.add(i as usize)).pos);
    *values.add(claim(cell_end, key) as usize) = i;
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

/// Stage `cell_bounds` (radix sort path): `cell_end` from sorted keys (the lower-bound table
/// shifted by one cell: `cell_end[k]` = start of cell `k + 1`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn cell_bounds(
    n: u32,
    cell_count: u32,
    keys: *const u32,
    cell_end: *mut u32,
) {
    let Some(i) = boid_index(n) else { return };
    fill_cell_start(
        i,
        n,
        cell_count,
        |k| *keys.add(k as usize),
        |key, v| {
            if key > 0 {
                *cell_end.add(key as usize - 1) = v;
            }
        },
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

/// The end of every `update_boids_*` kernel: new velocity from the sums, new position, both
/// written to index `i` of the output buffers, and (when `counts` is not null) the boid counted
/// into its new cell.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn finish(
    i: u32,
    p: &FlockParams,
    grid: &Grid,
    b: Body,
    v: Vec3,
    s: &RuleSums,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    let v = new_velocity(p, v, s);
    let pos = integrate_position(p, b.pos, v);
    *body_out.add(i as usize) = Body { pos, id: b.id };
    *vel_out.add(i as usize) = v;
    if !counts.is_null() {
        count_into(counts, grid.key(pos));
    }
}

/// Stage `update_boids_naive`: every other boid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_naive(
    n: u32,
    params: FlockParams,
    grid: Grid,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    follow_previous_stage();
    let Some(i) = boid_index(n) else { return };
    let (b, v) = (*body.add(i as usize), *vel.add(i as usize));
    let s = naive_sums(&params, n, i, b.pos, |j| {
        ((*body.add(j as usize)).pos, *vel.add(j as usize))
    });
    finish(i, &params, &grid, b, v, &s, body_out, vel_out, counts);
}

/// Stage `update_boids_scattered`: grid search through the sorted index array.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_scattered(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_end: *const u32,
    values: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    follow_previous_stage();
    let Some(i) = boid_index(n) else { return };
    let (b, v) = (*body.add(i as usize), *vel.add(i as usize));
    let s = grid_sums(
        &params,
        &grid,
        b.pos,
        v,
        |key| cell_start(cell_end, key),
        |k| {
            let j = *values.add(k as usize) as usize;
            ((*body.add(j)).pos, *vel.add(j))
        },
    );
    finish(i, &params, &grid, b, v, &s, body_out, vel_out, counts);
}

/// Stage `update_boids_coherent`: grid search over state already in cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_end: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    update_coherent::<false>(
        n, &params, &grid, cell_end, body, vel, body_out, vel_out, counts,
    );
}

/// Stage `update_boids_coherent_predicated`: `update_boids_coherent` with the candidates'
/// sums predicated instead of branched on ([`grid_sums_as`]): both of a candidate's loads
/// in flight at once, for flocks too small to fill the GPU, where latency, not issue slots, is
/// the limit. The host picks it for small flocks (`SMALL_FLOCK` in `host/src/flock/cuda.rs`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent_predicated(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_end: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    update_coherent::<true>(
        n, &params, &grid, cell_end, body, vel, body_out, vel_out, counts,
    );
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
unsafe fn update_coherent<const PREDICATED: bool>(
    n: u32,
    params: &FlockParams,
    grid: &Grid,
    cell_end: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    follow_previous_stage();
    let Some(i) = boid_index(n) else { return };
    let (b, v) = (*body.add(i as usize), *vel.add(i as usize));
    let start = |key| cell_start(cell_end, key);
    let entry = |k: u32| ((*body.add(k as usize)).pos, *vel.add(k as usize));
    let s = grid_sums_as::<PREDICATED, _, _>(params, grid, b.pos, v, start, entry);
    finish(i, params, grid, b, v, &s, body_out, vel_out, counts);
}

/// The cell box covering the search boxes of a group of boids consecutive in cell order (a warp
/// or a block), walked run by run: `visit(start, end)` per x-row (`Linear` keys) or per cell.
#[inline(always)]
unsafe fn for_each_union_run<V: FnMut(u32, u32)>(
    grid: &Grid,
    cell_end: *const u32,
    lo: [u32; 3],
    hi: [u32; 3],
    mut visit: V,
) {
    let linear = grid.order == CellOrder::Linear as u32;
    let mut z = lo[2];
    while z <= hi[2] {
        let mut y = lo[1];
        while y <= hi[1] {
            let mut cx = lo[0];
            while cx <= hi[0] {
                let last = if linear { hi[0] } else { cx };
                visit(
                    cell_start(cell_end, grid.key_of_cell([cx, y, z])),
                    cell_start(cell_end, grid.key_of_cell([last, y, z]) + 1),
                );
                cx = last + 1;
            }
            y += 1;
        }
        z += 1;
    }
}

/// Stage `update_boids_coherent_warp`: a warp's 32 boids are consecutive in cell order, so
/// their search boxes nearly coincide; the warp walks the runs of their union together, every
/// lane reading the same candidate (one broadcast load, no divergence in the loop), each lane
/// keeping those in its own range. More candidates than `coherent`, all lanes busy.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent_warp(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_end: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    follow_previous_stage();
    // Threads past `n` stay: the warp reductions need every lane.
    let i = thread::index() as u32;
    let valid = i < n;
    let (b, v) = if valid {
        (*body.add(i as usize), *vel.add(i as usize))
    } else {
        (Body::default(), Vec3::ZERO)
    };
    let x = b.pos;
    let sb = grid.search_box(x, params.max_distance());
    let lo = [
        warp_min(if valid { sb.lo[0] } else { u32::MAX }),
        warp_min(if valid { sb.lo[1] } else { u32::MAX }),
        warp_min(if valid { sb.lo[2] } else { u32::MAX }),
    ];
    let hi = [
        warp_max(if valid { sb.hi[0] } else { 0 }),
        warp_max(if valid { sb.hi[1] } else { 0 }),
        warp_max(if valid { sb.hi[2] } else { 0 }),
    ];
    let mut s = RuleSums::default();
    for_each_union_run(&grid, cell_end, lo, hi, |start, end| {
        let mut k = start;
        while k < end {
            let q = (*body.add(k as usize)).pos;
            if k != i {
                s.accumulate_with(&params, x, q, || *vel.add(k as usize));
            }
            k += 1;
        }
    });
    if valid {
        finish(i, &params, &grid, b, v, &s, body_out, vel_out, counts);
    }
}

/// Stage `update_boids_coherent_shared` (seed 000's shared-memory variant): the block's boids
/// are consecutive in cell order; the block walks the runs of the union of their search boxes,
/// staging `block_dim` candidates at a time in shared memory; each thread keeps those in range.
/// Shared memory: `32 + block_dim * 28` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent_shared(
    n: u32,
    params: FlockParams,
    grid: Grid,
    cell_end: *const u32,
    body: *const Body,
    vel: *const Vec3,
    body_out: *mut Body,
    vel_out: *mut Vec3,
    counts: *mut u32,
) {
    follow_previous_stage();
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
    let (b, v) = if valid {
        (*body.add(i as usize), *vel.add(i as usize))
    } else {
        (Body::default(), Vec3::ZERO)
    };
    let x = b.pos;
    if valid {
        let sb = grid.search_box(x, params.max_distance());
        for a in 0..3 {
            AtomicU32::from_ptr(bounds.add(a)).fetch_min(sb.lo[a], Ordering::Relaxed);
            AtomicU32::from_ptr(bounds.add(a + 3)).fetch_max(sb.hi[a], Ordering::Relaxed);
        }
    }
    sync();
    let lo = [*bounds, *bounds.add(1), *bounds.add(2)];
    let hi = [*bounds.add(3), *bounds.add(4), *bounds.add(5)];
    let mut s = RuleSums::default();
    for_each_union_run(&grid, cell_end, lo, hi, |start, end| {
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
    });
    if valid {
        finish(i, &params, &grid, b, v, &s, body_out, vel_out, counts);
    }
}
