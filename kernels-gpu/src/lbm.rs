//! Lattice Boltzmann kernels: initialisation, the fused stream-collide step (pull from one
//! copy into the other, or in place), fields and health, one entry point per collision model
//! and storage (so each is compiled with only its own registers), generated from
//! `murmur_common::lbm_variants!`. Arguments are `murmur_common::lbm::abi`; all math, and every
//! population access, is `murmur_common::lbm`.

use crate::thread::{
    ballot, index, index_below, lattice_cell, red_add_u64, shfl_idx, warp_max, warp_sum_u64,
};
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use murmur_common::lbm::abi::{
    BandPack, BandUnpack, Boundary, FieldsArgs, HaloPack, HaloUnpack, Health, IbBin, IbClear,
    IbForce, IbGather, IbMark, IbPlace, IbUpdate, IbVelocity, Init, StreamCollide,
    StreamCollideBand, StreamCollideLayer, StreamCollideSponge, FORCE_RECORD,
};
use murmur_common::lbm::halo;
use murmur_common::lbm::health::{self, cell_words, word};
use murmur_common::lbm::ib::band::BRICK_CELLS;
use murmur_common::lbm::ib::gather;
use murmur_common::lbm::ib::stages::{self, record_fixed, record_index, Reaction};
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

            /// Stage `ib_velocity`: one thread per band cell (`capacity x 64`).
            #[export_name = concat!("ib_velocity_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn ib_velocity(a: IbVelocity<$storage>) {
                let Some(i) = index_below(a.band.capacity as u64 * BRICK_CELLS as u64) else {
                    return;
                };
                stages::band_velocity(&a, i);
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

/// Stage `ib_force`: one thread per sample; spreading with atomic fixed-point adds (or the
/// sample's force stored for `ib_gather`); the reactions summed per warp (fixed point, so in
/// any order to the same total) when all its lanes hold samples of one solid (samples are
/// stored solid by solid; in block order a warp may mix solids), else per lane, into this
/// step's force record.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_force(a: IbForce) {
    let s = index();
    let active = (s as u64) < a.samples.body.len();
    let r = if active {
        stages::sample_force(&a, s, |p, v| red_add_u64(p, v))
    } else {
        Reaction {
            solid: u32::MAX,
            ..Reaction::default()
        }
    };
    let first = shfl_idx(r.solid, 0);
    let uniform = ballot(r.solid == first) == u32::MAX && first != u32::MAX;
    let values = [
        r.force[0],
        r.force[1],
        r.force[2],
        r.torque[0],
        r.torque[1],
        r.torque[2],
    ];
    let lane = crate::thread::tid() & 31;
    let mut c = 0;
    while c < FORCE_RECORD {
        let v = if active { record_fixed(values[c]) } else { 0 };
        if uniform {
            let total = warp_sum_u64(v);
            if lane == 0 {
                red_add_u64(a.record.at(record_index(first, c)), total);
            }
        } else if active {
            red_add_u64(a.record.at(record_index(r.solid, c)), v);
        }
        c += 1;
    }
}

/// Stage `ib_update`: one thread per band cell, between multi-direct-forcing passes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_update(a: IbUpdate) {
    let Some(i) = index_below(a.band.capacity as u64 * BRICK_CELLS as u64) else {
        return;
    };
    stages::band_update(&a, i);
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

/// Stage `ib_gather`: one thread per band cell (`capacity x 64`): the pass's force summed over
/// the samples of the bins its support reaches, then the update of `ib_update`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn ib_gather(a: IbGather) {
    let Some(i) = index_below(a.band.capacity as u64 * BRICK_CELLS as u64) else {
        return;
    };
    gather::gather(&a, i);
}
