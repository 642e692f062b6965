//! Lattice Boltzmann kernels: initialisation, the fused stream-collide step (pull from one
//! copy into the other, or in place), fields and health, one entry point per collision model
//! and storage (so each is compiled with only its own registers), generated from
//! `murmur_common::lbm_variants!`. Arguments are `murmur_common::lbm::abi`; all math, and every
//! population access, is `murmur_common::lbm`.

use crate::thread::{
    ballot, block, grid_dim, grid_stride, index, index_below, lanemask_lt, lattice_cell, lds,
    lds_u64, match_any, red_add_f64, red_add_u64, shared, shared_add_u64, shared_addr, shfl_idx,
    sts, sts_u64, sync, sync_warp, tid, warp_max, warp_sum_f64, warp_sum_u64,
};
use core::mem::offset_of;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use murmur_common::lbm::abi::{
    BandPack, BandUnpack, Boundary, FieldsArgs, ForceShared, GatherShared, HaloPack, HaloUnpack,
    Health, IbBin, IbClear, IbForce, IbForceBins, IbGather, IbMark, IbPlace, IbUpdate, IbVelocity,
    Init, StreamCollide, StreamCollideBand, StreamCollideLayer, StreamCollideSponge,
    FORCE_BLOCK_WARPS, FORCE_RECORD, FORCE_RUN, GATHER_BLOCK, GATHER_WARPS, TERM_STRIDE,
};
use murmur_common::lbm::halo;
use murmur_common::lbm::health::{self, cell_words, word};
use murmur_common::lbm::ib::band::{pass_index_of, BRICK_CELLS};
use murmur_common::lbm::ib::stages::{self, record_fixed, record_index, Reaction, NO_NODE};
use murmur_common::lbm::ib::{binned, gather};
use murmur_common::lbm::links::{self, WallLinks};
use murmur_common::lbm::statistics::{self as stats, Statistics};
use murmur_common::lbm::{
    cell_fields, init_cell, store_fields, stream_collide_interior, stream_collide_interior_band,
    stream_collide_layer, stream_collide_listed, stream_collide_sponge,
};

macro_rules! storage_kernels {
    ($storage:ty, $sname:literal, $stream:literal) => {
        const _: () = {
            /// Stage `init`: every cell's populations = the equilibrium of its initial fields.
            #[export_name = concat!("lbm_init_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn init(a: Init<$storage>) {
                let Some(cell) = index_below(a.pops.lattice.cells() as u64) else {
                    return;
                };
                init_cell(&a, cell);
            }

            /// Stage `fields` (on demand): `rho, u` of every cell from the populations.
            #[export_name = concat!("lbm_fields_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn fields(a: FieldsArgs<$storage>) {
                let Some(cell) = index_below(a.p.lattice.cells() as u64) else {
                    return;
                };
                let (rho, u) = cell_fields(&a.p, &a.pops, a.flags, a.f, &a.band, cell);
                store_fields(a.fields, a.p.lattice.cells(), cell, rho, u);
            }

            /// Stage `health`: the density and velocity of every fluid cell reduced into `out`
            /// ([`murmur_common::lbm::health`]: the maximum of each of the first words, the
            /// wrapping sum of each `u64` after them): a warp reduction, then one atomic per
            /// warp and word.
            #[export_name = concat!("lbm_health_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn health(a: Health<$storage>) {
                let cell = index();
                let w = if (cell as u64) < a.p.lattice.cells() as u64 {
                    cell_words(&a, cell)
                } else {
                    [0; word::WORDS]
                };
                let lane = crate::thread::tid() & 31;
                let mut i = 0;
                while i < word::MAX_WORDS {
                    let m = warp_max(w[i]);
                    if lane == 0 && m != 0 {
                        AtomicU32::from_ptr(a.out.at(i)).fetch_max(m, Relaxed);
                    }
                    i += 1;
                }
                for i in [word::EXCESS, word::FLUID] {
                    let s = warp_sum_u64(health::wide(&w, i));
                    if lane == 0 && s != 0 {
                        // `out` is 8-byte aligned and `i` even: an aligned `u64`.
                        red_add_u64(a.out.at(i) as *mut u64, s);
                    }
                }
            }

            /// Stage `wall_links`: one thread per cut link fills its solid node's slot
            /// ([`links::fill_link`]); each solid's force and torque summed per warp in fixed
            /// point, one atomic per warp, solid and word (the links come sorted by solid, so
            /// a warp mostly holds one).
            #[export_name = concat!("lbm_wall_links_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn wall_links(a: WallLinks<$storage>) {
                let i = index();
                let (solid, values) = if (i as u64) < a.links.len() {
                    (a.links.read(i).solid(), links::fill_link(&a, i))
                } else {
                    (u32::MAX, [0.0; FORCE_RECORD])
                };
                let lane = crate::thread::tid() & 31;
                let mut s = 0;
                while s < a.solids {
                    let mine = solid == s;
                    if ballot(mine) != 0 {
                        let terms = links::record_terms(s, &values);
                        let mut c = 0;
                        while c < FORCE_RECORD {
                            let (k, v) = terms[c];
                            let sum = warp_sum_u64(if mine { v } else { 0 });
                            if lane == 0 && sum != 0 {
                                red_add_u64(a.record.at(k), sum);
                            }
                            c += 1;
                        }
                    }
                    s += 1;
                }
            }

            /// Stage `statistics` (every K steps from a start step): each fluid cell's sample
            /// added into the sums ([`murmur_common::lbm::statistics`]). Whole fields: each
            /// thread its own key. Profiles: per distinct key of the warp, a warp sum and one
            /// atomic add per value.
            #[export_name = concat!("lbm_statistics_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn statistics(a: Statistics<$storage>) {
                let cell = index();
                let (key, values) = if (cell as u64) < a.p.lattice.cells() as u64 {
                    stats::cell_sample(&a, cell)
                } else {
                    (stats::NO_KEY, [0.0; stats::VALUES])
                };
                if a.reduce.is_fields() {
                    if key != stats::NO_KEY {
                        stats::add_own(&a, key, &values);
                    }
                    return;
                }
                let lane = crate::thread::tid() & 31;
                let keys = a.reduce.keys();
                let mut pending = ballot(key != stats::NO_KEY);
                while pending != 0 {
                    let leader = pending.trailing_zeros();
                    let k = shfl_idx(key, leader);
                    let mine = key == k;
                    let mut v = 0;
                    while v < stats::VALUES {
                        let sum = warp_sum_f64(if mine { values[v] } else { 0.0 });
                        if lane == leader {
                            red_add_f64(a.sums.at(v * keys + k as usize), sum);
                        }
                        v += 1;
                    }
                    pending &= !ballot(mine);
                }
            }

            /// Stage `ib_velocity`: the band's cells in use (`used x 64`), grid-stride.
            #[export_name = concat!("ib_velocity_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn ib_velocity(a: IbVelocity<$storage>) {
                for i in grid_stride(a.band.used_cells()) {
                    stages::band_velocity(&a, i);
                }
            }
        };
    };
}

macro_rules! halo_kernels {
    ($format:ty, $fname:literal) => {
        const _: () = {
            /// Stage `halo` (several ranks): a face layer's 9 crossing populations into the
            /// exchange buffer, one thread per face cell.
            #[export_name = concat!("lbm_halo_pack_", $fname)]
            pub unsafe extern "ptx-kernel" fn pack(a: HaloPack<$format>) {
                let l = a.halo.pops.lattice;
                let Some(i) = index_below(halo::face_cells(&l, a.halo.axis) as u64) else {
                    return;
                };
                halo::pack(&a.halo, i);
            }

            /// Stage `halo`: the received populations into a ghost layer.
            #[export_name = concat!("lbm_halo_unpack_", $fname)]
            pub unsafe extern "ptx-kernel" fn unpack(a: HaloUnpack<$format>) {
                let l = a.halo.pops.lattice;
                let Some(i) = index_below(halo::face_cells(&l, a.halo.axis) as u64) else {
                    return;
                };
                halo::unpack(&a.halo, i);
            }
        };
    };
}

/// Stage `ib_band_halo` (several ranks, immersed solids): a face layer's band values into the
/// exchange buffer.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_band_pack(a: BandPack) {
    let l = a.halo.band.bricks.lattice;
    let Some(i) = index_below(halo::face_cells(&l, a.halo.axis) as u64) else {
        return;
    };
    halo::band_pack(&a.halo, i);
}

/// Stage `ib_band_halo`: the received band values into a ghost layer's band cells.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_band_unpack(a: BandUnpack) {
    let l = a.halo.band.bricks.lattice;
    let Some(i) = index_below(halo::face_cells(&l, a.halo.axis) as u64) else {
        return;
    };
    halo::band_unpack(&a.halo, i);
}

macro_rules! stream_collide_kernels {
    ($model:ty, $mname:literal, $storage:ty, $sname:literal, $stream:literal) => {
        const _: () = {
            /// Stage `stream_collide`, interior cells: every cell, returning at once unless it
            /// is fluid with only fluid neighbours.
            #[export_name = concat!("lbm_stream_collide_", $mname, "_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn interior(a: StreamCollide<$model, $storage>) {
                let Some(cell) = lattice_cell(&a.p.lattice, &a.launch) else {
                    return;
                };
                stream_collide_interior(&a, cell);
            }

            /// Stage `stream_collide` with immersed solids: the interior cells, band cells
            /// adding the immersed-boundary force.
            #[export_name = concat!("lbm_stream_collide_band_", $mname, "_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn band(a: StreamCollideBand<$model, $storage>) {
                let Some(cell) = lattice_cell(&a.step.p.lattice, &a.step.launch) else {
                    return;
                };
                stream_collide_interior_band(&a.step, cell);
            }

            /// Stage `stream_collide`, the outlet layer's interior cells: their own rates, the
            /// band's force.
            #[export_name = concat!("lbm_stream_collide_sponge_", $mname, "_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn sponge(a: StreamCollideSponge<$model, $storage>) {
                let Some(cell) = a.cell(index() as u64) else {
                    return;
                };
                stream_collide_sponge(&a.step, cell);
            }

            /// Stage `boundary`, the listed fluid cells next to non-fluid ones: boundary
            /// conditions are applied while pulling.
            #[export_name = concat!("lbm_boundary_", $mname, "_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn boundary(a: Boundary<$model, $storage>) {
                let Some(i) = index_below(a.cells.len()) else {
                    return;
                };
                stream_collide_listed(&a.step, a.cells.read(i) as usize, i);
            }

            /// Stage `stream_collide` with an outlet layer: the interior cells and the
            /// layer's interior cells, each with its rates, band cells adding the
            /// immersed-boundary force.
            #[export_name = concat!("lbm_stream_collide_layer_", $mname, "_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn layer(a: StreamCollideLayer<$model, $storage>) {
                let Some(cell) = lattice_cell(&a.step.p.lattice, &a.step.launch) else {
                    return;
                };
                stream_collide_layer(&a.step, cell);
            }
        };
    };
}

/// The lattice kernels of every storage (init, fields, health, band velocity), every format
/// (halo) and every model on every storage (the stream-collide family), from
/// [`murmur_common::lbm_variants!`]'s lists; each entry point is named from the same pieces as
/// the host's kernel table names it.
macro_rules! lbm_kernels {
    (
        formats: [$(($f:ty, $fname:literal),)*],
        storages: [$(($s:ty, $sname:literal, $stream:literal),)*],
        variants: [$(($m:ty, $mname:literal, $vs:ty, $vsname:literal, $vstream:literal),)*],
    ) => {
        $(storage_kernels!($s, $sname, $stream);)*
        $(halo_kernels!($f, $fname);)*
        $(stream_collide_kernels!($m, $mname, $vs, $vsname, $vstream);)*
    };
}

murmur_common::lbm_variants!(lbm_kernels);

/// Stage `ib_clear`: the band table emptied, its counter and this step's force record zeroed.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_clear(a: IbClear) {
    let Some(i) = index_below(stages::clear_items(&a)) else {
        return;
    };
    stages::clear(&a, i);
}

/// Stage `ib_mark`: one thread per sample puts the bricks of its stencil into the band.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_mark(a: IbMark) {
    let Some(s) = index_below(a.samples.body.len()) else {
        return;
    };
    stages::mark(&a, s);
}

/// Stage `ib_force`: one thread per sample, in blocks of `FORCE_BLOCK`; spreading with atomic
/// fixed-point adds (or the sample's force stored for `ib_gather`). The lanes of a warp whose
/// stencils cover the same band cells (one key, [`match_any`]) sum their terms first: each lane
/// stores its 24 terms and 8 band cells in shared memory, then per group lane `j < 24` sums
/// term `j` over the group's lanes and adds it with one atomic (fixed point: the same total in
/// any order). The reactions go into this step's force record summed per block when all its
/// samples belong to one solid (samples are stored solid by solid; in block order a warp may
/// mix solids), else per warp when its lanes do, else per lane. Shared memory: a
/// `ForceShared`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_force(a: IbForce) {
    let s = index();
    let t = crate::thread::tid();
    let (warp, lane) = (t as usize / 32, t & 31);
    let active = (s as u64) < a.samples.body.len();
    let (r, spread) = if active {
        stages::sample_force(&a, s)
    } else {
        let none = Reaction {
            solid: u32::MAX,
            ..Reaction::default()
        };
        (none, None)
    };
    // The lanes of one key share all their nodes' cells. Every lane takes part, those that
    // spread nothing under a key of their own, which leads no group.
    let key = spread.as_ref().map_or(u64::MAX, |sp| sp.group_key());
    let peers = match_any(key);
    let base = shared_addr();
    let row = |w: usize, l: usize| -> (u32, u32) {
        let cells = offset_of!(ForceShared, cells) + (w * 32 + l) * 8 * 4;
        let terms = offset_of!(ForceShared, terms) + (w * 32 + l) * TERM_STRIDE * 8;
        (base + cells as u32, base + terms as u32)
    };
    let (my_cells, my_terms) = row(warp, lane as usize);
    stages::spread_nodes(spread.as_ref(), |i, t| {
        let (cell, v) = t.unwrap_or((NO_NODE, [0; 3]));
        sts(my_cells + 4 * i as u32, cell);
        for (c, &vc) in v.iter().enumerate() {
            sts_u64(my_terms + 8 * (3 * i + c) as u32, vc);
        }
    });
    sync_warp();
    let mut leaders = ballot(key != u64::MAX && lane == peers.trailing_zeros());
    while leaders != 0 {
        let g = leaders.trailing_zeros();
        leaders &= leaders - 1;
        let members = shfl_idx(peers, g);
        if lane < 24 {
            let (cells, _) = row(warp, g as usize);
            let cell = lds(cells + 4 * (lane / 3));
            if cell != NO_NODE {
                let mut m = members;
                let mut sum = 0u64;
                while m != 0 {
                    let j = m.trailing_zeros();
                    m &= m - 1;
                    let (_, terms) = row(warp, j as usize);
                    sum = sum.wrapping_add(lds_u64(terms + 8 * lane));
                }
                red_add_u64(a.band.pass.at(pass_index_of(cell, lane as usize % 3)), sum);
            }
        }
    }
    let smem = shared::<ForceShared>();
    // The warp's sums into shared memory (lane 0), or the lanes' own adds when it mixes solids.
    let first = shfl_idx(r.solid, 0);
    let uniform = ballot(r.solid == first) == u32::MAX && first != u32::MAX;
    // Value `c` of the record (force x, y, z, torque x, y, z); called with constant `c`, so
    // the reaction stays in registers.
    let add = |c: usize, value: f32| {
        let v = if active { record_fixed(value) } else { 0 };
        if uniform {
            let total = warp_sum_u64(v);
            if lane == 0 {
                (*smem).sums[warp][c] = total;
            }
        } else if active {
            red_add_u64(a.record.at(record_index(r.solid, c)), v);
        }
    };
    const _: () = assert!(FORCE_RECORD == 6);
    add(0, r.force[0]);
    add(1, r.force[1]);
    add(2, r.force[2]);
    add(3, r.torque[0]);
    add(4, r.torque[1]);
    add(5, r.torque[2]);
    if lane == 0 {
        (*smem).solid[warp] = if uniform { first } else { u32::MAX };
    }
    sync();
    // Warp 0 adds the block's warps: one total per value when they all hold one solid.
    if warp != 0 {
        return;
    }
    let w = lane as usize;
    let solid = if w < FORCE_BLOCK_WARPS {
        (*smem).solid[w]
    } else {
        u32::MAX
    };
    let block_solid = shfl_idx(solid, 0);
    let whole = block_solid != u32::MAX
        && ballot(solid == block_solid || w >= FORCE_BLOCK_WARPS) == u32::MAX;
    let mut c = 0;
    while c < FORCE_RECORD {
        let v = if solid != u32::MAX {
            (*smem).sums[w][c]
        } else {
            0
        };
        if whole {
            let total = warp_sum_u64(v);
            if lane == 0 {
                red_add_u64(a.record.at(record_index(block_solid, c)), total);
            }
        } else if solid != u32::MAX {
            red_add_u64(a.record.at(record_index(solid, c)), v);
        }
        c += 1;
    }
}

/// Stage `ib_force` of the binned scatter (`ib_force_bins`): runs of `FORCE_RUN` entries of the
/// sorted sample list, grid-stride; the terms of consecutive samples with the same nodes
/// summed in the thread, one atomic per node and component. The thread sums its reactions
/// while they belong to one solid (adding them when the solid changes), then the warp adds its
/// lanes' sums with one atomic per value when they hold one solid.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_force_bins(a: IbForceBins) {
    let (band, record) = (&a.force.band, a.force.record);
    let mut solid = u32::MAX;
    let mut sums = [0u64; FORCE_RECORD];
    let add_record = |solid: u32, sums: &[u64; FORCE_RECORD]| {
        for (c, &v) in sums.iter().enumerate() {
            if v != 0 {
                red_add_u64(record.at(record_index(solid, c)), v);
            }
        }
    };
    let n = a.force.order.len() as usize;
    for run in grid_stride(n.div_ceil(FORCE_RUN)) {
        let lo = run * FORCE_RUN;
        binned::run_force(
            &a,
            lo,
            n.min(lo + FORCE_RUN),
            |k, v| {
                red_add_u64(band.pass.at(k), v[0]);
                red_add_u64(band.pass.at(k + BRICK_CELLS), v[1]);
                red_add_u64(band.pass.at(k + 2 * BRICK_CELLS), v[2]);
            },
            |r| {
                if r.solid != solid {
                    if solid != u32::MAX {
                        add_record(solid, &sums);
                    }
                    solid = r.solid;
                    sums = [0; FORCE_RECORD];
                }
                let values = [
                    r.force[0],
                    r.force[1],
                    r.force[2],
                    r.torque[0],
                    r.torque[1],
                    r.torque[2],
                ];
                for (s, v) in sums.iter_mut().zip(values) {
                    *s = s.wrapping_add(record_fixed(v));
                }
            },
        );
    }
    // Every lane of the warp is here (the grid is whole warps): one sum per value when the
    // lanes that hold sums hold one solid.
    let holding = ballot(solid != u32::MAX);
    if holding == 0 {
        return;
    }
    let first = shfl_idx(solid, holding.trailing_zeros());
    if ballot(solid == first || solid == u32::MAX) == u32::MAX {
        let lane = crate::thread::tid() & 31;
        for (c, &v) in sums.iter().enumerate() {
            let total = warp_sum_u64(if solid == u32::MAX { 0 } else { v });
            if lane == 0 && total != 0 {
                red_add_u64(record.at(record_index(first, c)), total);
            }
        }
    } else if solid != u32::MAX {
        add_record(solid, &sums);
    }
}

/// Stage `ib_update`: the band's cells in use, grid-stride, between multi-direct-forcing passes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_update(a: IbUpdate) {
    for i in grid_stride(a.band.used_cells()) {
        stages::band_update(&a, i);
    }
}

/// Stage `ib_bin`: one thread per sample; its bin and its rank in it (atomic count).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_bin(a: IbBin) {
    let Some(s) = index_below(a.samples.body.len()) else {
        return;
    };
    gather::bin(&a, s);
}

/// Stage `ib_place`: one thread per sample; the counting sort's scatter.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_place(a: IbPlace) {
    let Some(s) = index_below(a.key.len()) else {
        return;
    };
    gather::place(&a, s);
}

/// Stage `ib_gather`: one block per band slot in use (grid-stride over the slots). The warps
/// take the chunks of 32 entries of the brick's bins in turn ([`gather::BrickBins`]), test them
/// ([`gather::reaches`]) and queue those that reach the brick in shared memory; each time 32
/// are queued, the warp's lanes take one each and add their terms ([`gather::brick_sample`],
/// [`shared_add_u64`]) into the
/// brick's cell sums in shared memory (fixed point: the same sums in any order). Then the
/// first 64 threads apply the sums, one cell each. Shared memory: a `GatherShared`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_gather(a: IbGather) {
    let a = &a;
    let t = tid() as usize;
    let (warp, lane) = (t / 32, t as u32 & 31);
    let base = shared_addr();
    let sums = base + offset_of!(GatherShared, sums) as u32;
    let queue = base + (offset_of!(GatherShared, queue) + warp * 64 * 4) as u32;
    let mut add = |local: usize, v: [u64; 3]| {
        let at = sums + 24 * local as u32;
        shared_add_u64(at, v[0]);
        shared_add_u64(at + 8, v[1]);
        shared_add_u64(at + 16, v[2]);
    };
    let used = a.band.used();
    let mut s = block();
    while s < used {
        let mut i = t;
        while i < 3 * BRICK_CELLS {
            sts_u64(sums + 8 * i as u32, 0);
            i += GATHER_BLOCK as usize;
        }
        sync();
        let bins = gather::BrickBins::new(a, s);
        // Entries queued in this warp's queue, and chunks of 32 entries met so far over the
        // bins (both the same in every lane): chunk `c` is warp `c % GATHER_WARPS`'s.
        let (mut queued, mut chunk) = (0u32, 0usize);
        for j in 0..bins.len() {
            let (start, end) = bins.entries(a, j);
            let mut first = start;
            while first < end {
                if chunk % GATHER_WARPS == warp {
                    let k = first + lane as usize;
                    let hit = k < end && gather::reaches(a, k, bins.origin);
                    let found = ballot(hit);
                    if hit {
                        let at = queued + (found & lanemask_lt()).count_ones();
                        sts(queue + 4 * at, k as u32);
                    }
                    queued += found.count_ones();
                    sync_warp();
                    if queued >= 32 {
                        let k = lds(queue + 4 * lane) as usize;
                        gather::brick_sample(a, k, bins.origin, &mut add);
                        let rest = queued - 32;
                        let moved = if lane < rest {
                            lds(queue + 4 * (32 + lane))
                        } else {
                            0
                        };
                        sync_warp();
                        if lane < rest {
                            sts(queue + 4 * lane, moved);
                        }
                        sync_warp();
                        queued = rest;
                    }
                }
                chunk += 1;
                first += 32;
            }
        }
        if lane < queued {
            let k = lds(queue + 4 * lane) as usize;
            gather::brick_sample(a, k, bins.origin, &mut add);
        }
        sync();
        if t < BRICK_CELLS {
            let at = sums + 24 * t as u32;
            let v = [lds_u64(at), lds_u64(at + 8), lds_u64(at + 16)];
            gather::brick_apply(a, s, t, v);
        }
        sync();
        s += grid_dim();
    }
}
