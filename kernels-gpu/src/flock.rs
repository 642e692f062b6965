//! Flocking kernels, one per stage of a step, each taking its argument struct from
//! `murmur_common::flock::abi` (where the buffers are described). All rule and grid math is
//! `murmur_common::flock`.
//!
//! A step updates velocity and position in one kernel (`update_boids_*`): boid `i` reads the
//! previous state and writes its new state to index `i` of the other buffer, and counts itself
//! into its new cell for the next step's binning.

use crate::thread::{
    ballot, block, block_dim, index, index_below, lanemask_lt, shared, shfl_idx, sync, tid,
    wait_for_previous_grid,
};
use core::sync::atomic::{AtomicU32, Ordering};
use murmur_common::flock::abi::{
    CellBounds, ComputeKeys, CountCells, Gather, InitFlock, OrderCells, ScatterCells, ScatterIndex,
    SharedBox, UpdateBoids, UpdateCoherent, UpdateCoherentPredicated, UpdateCoherentShared,
    UpdateNaive, UpdateScattered,
};
use murmur_common::flock::slab::{
    tally, Fate, InitSlab, RouteSlab, ScatterSlab, SlabSends, UnpackSlab, UpdateSlab, HOLE,
};
use murmur_common::flock::{
    fill_cell_start, for_each_box_run, grid_sums, grid_sums_as, initial_position,
    integrate_position, naive_sums, new_velocity, order_cell_by_id, Body, RuleSums,
};
use murmur_common::{DevSlice, Vec3};

/// Start of cell `key`'s entries: the end of cell `key - 1` (0 for the first cell). Defined for
/// every key in `0..=cell_count`.
#[inline(always)]
unsafe fn cell_start(cell_end: DevSlice<u32>, key: u32) -> u32 {
    if key == 0 {
        0
    } else {
        cell_end.read(key as usize - 1)
    }
}

/// The start of every stage a step launches with programmatic dependent launch (PDL): wait
/// for the previous stage's grid. The next stage's blocks may start as this grid's blocks exit
/// (no earlier `griddepcontrol.launch_dependents`: slower on the H200, `docs/performance.md`).
#[inline(always)]
fn follow_previous_stage() {
    wait_for_previous_grid();
}

/// Stage `init_flock`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn init_flock(a: InitFlock) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    a.body.write(
        i,
        Body {
            pos: initial_position(a.seed, i as u64, a.scale),
            id: i as u32,
        },
    );
    a.vel.write(i, Vec3::ZERO);
}

/// Stage `count_cells` (only after a reset of the state: steps count in `update_boids_*`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn count_cells(a: CountCells) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    a.counts
        .fetch_add(a.grid.key(a.body.read(i).pos) as usize, 1);
}

/// Stage `scatter_cells`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_cells(a: ScatterCells) {
    // The state was written two stages back, by the update kernel, which had finished before
    // the scan passed its wait (and this grid starts only as the scan's blocks exit): it loads
    // while the scan ends; the table only after.
    let i = index_below(a.n as u64);
    let (b, v) = match i {
        Some(i) => (a.body_in.read(i), a.vel_in.read(i)),
        None => (Body::default(), Vec3::ZERO),
    };
    follow_previous_stage();
    let Some(_) = i else { return };
    let dest = a.cell_end.fetch_add(a.grid.key(b.pos) as usize, 1) as usize;
    a.body_out.write(dest, b);
    a.vel_out.write(dest, v);
}

/// Stage `scatter_index`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scatter_index(a: ScatterIndex) {
    follow_previous_stage();
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let key = a.grid.key(a.body.read(i).pos);
    a.values
        .write(a.cell_end.fetch_add(key as usize, 1) as usize, i as u32);
}

/// Stage `compute_keys`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn compute_keys(a: ComputeKeys) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    a.keys.write(i, a.grid.key(a.body.read(i).pos));
    a.values.write(i, i as u32);
}

/// Stage `cell_bounds` (the lower-bound table shifted by one cell: `cell_end[k]` = start of
/// cell `k + 1`).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn cell_bounds(a: CellBounds) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    fill_cell_start(
        i as u32,
        a.n,
        a.cell_count,
        |k| a.keys.read(k as usize),
        |key, v| {
            if key > 0 {
                a.cell_end.write(key as usize - 1, v);
            }
        },
    );
}

/// Stage `gather`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn gather(a: Gather) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let j = a.values.read(i) as usize;
    a.body_out.write(i, a.body_in.read(j));
    a.vel_out.write(i, a.vel_in.read(j));
}

/// Stage `order_cells_by_id` (`WithinCell::ById`): one thread per cell sorts its entries by id,
/// so a boid's neighbours are summed in the same order whatever order binning left (one GPU or
/// several, counting or radix sort). Launched without programmatic dependent launch: it starts
/// after the binning has finished.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn order_cells_by_id(a: OrderCells) {
    let Some(k) = index_below(a.cell_count as u64) else {
        return;
    };
    order_cell_by_id(
        cell_start(a.cell_end, k as u32),
        a.cell_end.read(k),
        |r: &(Body, Vec3)| r.0.id,
        |e| (a.body.read(e as usize), a.vel.read(e as usize)),
        |e, (b, v)| {
            a.body.write(e as usize, b);
            a.vel.write(e as usize, v);
        },
    );
}

/// The end of every `update_boids_*` kernel: new velocity from the sums, new position, both
/// written to index `i` of the output buffers, and (unless `counts` is empty) the boid counted
/// into its new cell.
#[inline(always)]
unsafe fn finish<S>(a: &UpdateBoids<S>, i: usize, b: Body, v: Vec3, s: &RuleSums) {
    let v = new_velocity(&a.params, v, s);
    let pos = integrate_position(&a.params, b.pos, v);
    a.body_out.write(i, Body { pos, id: b.id });
    a.vel_out.write(i, v);
    if !a.counts.is_empty() {
        a.counts.fetch_add(a.grid.key(pos) as usize, 1);
    }
}

/// Stage `update_boids_naive`: every other boid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_naive(a: UpdateNaive) {
    follow_previous_stage();
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let (b, v) = (a.body.read(i), a.vel.read(i));
    let s = naive_sums(&a.params, a.n, i as u32, b.pos, |j| {
        (a.body.read(j as usize).pos, a.vel.read(j as usize))
    });
    finish(&a, i, b, v, &s);
}

/// Stage `update_boids_scattered`: grid search through the sorted index array.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_scattered(a: UpdateScattered) {
    follow_previous_stage();
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let (b, v) = (a.body.read(i), a.vel.read(i));
    let s = grid_sums(
        &a.params,
        &a.grid,
        b.pos,
        v,
        |key| cell_start(a.cell_end, key),
        |k| {
            let j = a.values.read(k as usize) as usize;
            (a.body.read(j).pos, a.vel.read(j))
        },
    );
    finish(&a, i, b, v, &s);
}

/// Stage `update_boids_coherent`: grid search over state already in cell order.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent(a: UpdateCoherent) {
    update_coherent::<false, _>(&a);
}

/// Stage `update_boids_coherent_predicated`: `update_boids_coherent` with the candidates' sums
/// predicated instead of branched on ([`grid_sums_as`]): both of a candidate's loads in flight
/// at once, for flocks too small to fill the GPU, where latency, not issue slots, is the limit.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent_predicated(a: UpdateCoherentPredicated) {
    update_coherent::<true, _>(&a);
}

#[inline(always)]
unsafe fn update_coherent<const PREDICATED: bool, S>(a: &UpdateBoids<S>) {
    follow_previous_stage();
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let (b, v) = (a.body.read(i), a.vel.read(i));
    let start = |key| cell_start(a.cell_end, key);
    let entry = |k: u32| (a.body.read(k as usize).pos, a.vel.read(k as usize));
    let s = grid_sums_as::<PREDICATED, _, _>(&a.params, &a.grid, b.pos, v, start, entry);
    finish(a, i, b, v, &s);
}

/// Stage `update_boids_coherent_shared` (the shared-memory method of the CIS 565 write-ups):
/// the block's boids are consecutive in cell order; the block walks the runs of the union of
/// their search boxes (`for_each_box_run`, common's grid walk), staging `block_dim`
/// candidates at a time in shared memory; each thread keeps those in range. Shared memory:
/// `coherent_shared_bytes(block_dim)` (a [`SharedBox`], then the staged bodies and velocities).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_coherent_shared(a: UpdateCoherentShared) {
    follow_previous_stage();
    let bounds = shared::<SharedBox>();
    let sbody = bounds.add(1) as *mut Body;
    let bd = block_dim();
    let svel = sbody.add(bd as usize) as *mut Vec3;
    let t = tid();
    let i = block() * bd + t;
    let valid = i < a.n;
    if t < 3 {
        (*bounds).lo[t as usize] = u32::MAX;
        (*bounds).hi[t as usize] = 0;
    }
    sync();
    let (b, v) = if valid {
        (a.body.read(i as usize), a.vel.read(i as usize))
    } else {
        (Body::default(), Vec3::ZERO)
    };
    let x = b.pos;
    if valid {
        let sb = a.grid.search_box(x, a.params.max_distance());
        for axis in 0..3 {
            AtomicU32::from_ptr(&mut (*bounds).lo[axis]).fetch_min(sb.lo[axis], Ordering::Relaxed);
            AtomicU32::from_ptr(&mut (*bounds).hi[axis]).fetch_max(sb.hi[axis], Ordering::Relaxed);
        }
    }
    sync();
    let (lo, hi) = ((*bounds).lo, (*bounds).hi);
    let mut s = RuleSums::default();
    for_each_box_run(
        &a.grid,
        lo,
        hi,
        |key| cell_start(a.cell_end, key),
        |start, end| {
            let mut chunk = start;
            while chunk < end {
                let k = chunk + t;
                if k < end {
                    *sbody.add(t as usize) = a.body.read(k as usize);
                    *svel.add(t as usize) = a.vel.read(k as usize);
                }
                sync();
                let len = if end - chunk < bd { end - chunk } else { bd };
                if valid {
                    let mut c = 0;
                    while c < len {
                        if chunk + c != i {
                            s.accumulate_with(&a.params, x, (*sbody.add(c as usize)).pos, || {
                                *svel.add(c as usize)
                            });
                        }
                        c += 1;
                    }
                }
                sync();
                chunk += bd;
            }
        },
    );
    if valid {
        finish(&a, i as usize, b, v, &s);
    }
}

// ---- The flock on several ranks (slabs along x): `murmur_common::flock::slab`. ----

/// Claims one entry of the counter at `counter` for every lane whose `want` holds, with one
/// atomic add per warp; returns this lane's entry (meaningless where `want` is false).
///
/// # Safety
/// All 32 lanes of the warp call it together (blocks are whole warps); `counter` points to a
/// `u32` in global memory that every concurrent access reaches atomically.
#[inline(always)]
unsafe fn warp_claim(counter: *mut u32, want: bool) -> u32 {
    let mask = ballot(want);
    if mask == 0 {
        return 0;
    }
    let leader = mask.trailing_zeros();
    let lane = tid() & 31;
    let mut base = 0;
    if lane == leader {
        base = AtomicU32::from_ptr(counter).fetch_add(mask.count_ones(), Ordering::Relaxed);
    }
    shfl_idx(base, leader) + (mask & lanemask_lt()).count_ones()
}

/// Sends `b`, `v` to send slot `slot` where `want` holds (the claim past the buffer's end is
/// only tallied: the host reports it).
///
/// # Safety
/// As [`warp_claim`]; `s` holds valid views.
#[inline(always)]
unsafe fn send_to(s: &SlabSends, slot: usize, want: bool, b: Body, v: Vec3) {
    let k = warp_claim(s.tally.at(tally::SENT + slot), want) as u64;
    if want && k < s.body[slot].len() {
        s.body[slot].write(k as usize, b);
        s.vel[slot].write(k as usize, v);
    }
}

/// Stage `slab_init`: the random start, each rank keeping the boids of its slab.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn slab_init(a: InitSlab) {
    let t = index();
    let valid = t < a.n as usize;
    let i = a.base + t as u64;
    let pos = initial_position(a.seed, i, a.scale);
    let own = valid && a.slab.owns(pos.x);
    let k = warp_claim(a.tally.at(tally::KEPT), own) as u64;
    if own && k < a.body.len() {
        a.body.write(k as usize, Body { pos, id: i as u32 });
        a.vel.write(k as usize, Vec3::ZERO);
    }
}

/// Stage `slab_route`: the start's own boids counted into their cells and sent as halo.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn slab_route(a: RouteSlab) {
    let i = index();
    let mut fate = Fate::default();
    let (mut b, mut v) = (Body::default(), Vec3::ZERO);
    if i < a.n as usize {
        b = a.body.read(i);
        v = a.vel.read(i);
        fate = a.slab.fate(b.pos.x);
        a.counts.fetch_add(a.grid.key(b.pos) as usize, 1);
    }
    send_to(&a.sends, 0, fate.send[0], b, v);
    send_to(&a.sends, 1, fate.send[1], b, v);
}

/// Stage `slab_scatter`: `scatter_cells`, skipping holes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn slab_scatter(a: ScatterSlab) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let b = a.body_in.read(i);
    if b.id == HOLE {
        return;
    }
    let dest = a.cell_end.fetch_add(a.grid.key(b.pos) as usize, 1) as usize;
    a.body_out.write(dest, b);
    a.vel_out.write(dest, a.vel_in.read(i));
}

/// Stage `update_boids_slab`: the coherent update of own boids (halo boids are only searched),
/// each new state kept, sent, or both ([`murmur_common::flock::slab::Slab::fate`]).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_boids_slab(a: UpdateSlab) {
    let i = index();
    let mut fate = Fate::default();
    let mut out = Body {
        pos: Vec3::ZERO,
        id: HOLE,
    };
    let mut v_new = Vec3::ZERO;
    if i < a.n as usize {
        let (b, v) = (a.body.read(i), a.vel.read(i));
        if a.slab.owns(b.pos.x) {
            let start = |key| cell_start(a.cell_end, key);
            let entry = |k: u32| (a.body.read(k as usize).pos, a.vel.read(k as usize));
            let s = grid_sums_as::<false, _, _>(&a.params, &a.grid, b.pos, v, start, entry);
            v_new = new_velocity(&a.params, v, &s);
            let pos = integrate_position(&a.params, b.pos, v_new);
            fate = a.slab.fate(pos.x);
            out = Body { pos, id: b.id };
        }
        let id = if fate.keep { out.id } else { HOLE };
        a.body_out.write(i, Body { pos: out.pos, id });
        a.vel_out.write(i, v_new);
        if fate.keep {
            a.counts.fetch_add(a.grid.key(out.pos) as usize, 1);
        }
    }
    send_to(&a.sends, 0, fate.send[0], out, v_new);
    send_to(&a.sends, 1, fate.send[1], out, v_new);
    warp_claim(
        a.sends.tally.at(tally::DROPPED),
        i < a.n as usize && !fate.keep,
    );
    warp_claim(a.sends.tally.at(tally::LOST), fate.lost);
}

/// Stage `slab_unpack`: received boids appended and counted.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn slab_unpack(a: UnpackSlab) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let b = a.body_in.read(i);
    a.body_out.write(i, b);
    a.vel_out.write(i, a.vel_in.read(i));
    a.counts.fetch_add(a.grid.key(b.pos) as usize, 1);
}
