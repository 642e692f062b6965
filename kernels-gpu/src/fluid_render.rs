//! Kernels of the fluid viewer: a slice's fields (its planes' cells only, one entry point per
//! storage), the derived fields (vorticity magnitude and Q), the smoke's
//! BFECC advection (forward, backward, then the clamped correction with the sources), its light
//! volume, the marches' occupancy bricks, the solids' splats and the per-pixel shading. Arguments are
//! `murmur_common::render::abi`; the math is `murmur_common::render::{fluid, smoke}` and
//! `murmur_common::lbm::derived`, the same functions the CPU twin calls.

use crate::thread::{ballot, index_below};
use core::sync::atomic::{AtomicU64, Ordering};
use murmur_common::lbm::derived::{curl, q_criterion, velocity_gradient};
use murmur_common::lbm::{cell_fields, store_fields};
use murmur_common::math::sqrt;
use murmur_common::render::abi::{
    FluidDerived, FluidOccupancy, FluidShade, FluidSplat, PlaneFields, SmokeBackward, SmokeCorrect,
    SmokeForward, SmokeLight,
};
use murmur_common::render::occupancy::{self, span_cell, Bricks};
use murmur_common::render::{fluid, smoke};

/// Stage `fluid_derived`: the cells of `a.planes` (a slice's plane, or every cell).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fluid_derived(a: FluidDerived) {
    let l = a.lattice;
    let n = l.cells();
    let Some(i) = index_below(a.planes.cells(&l) as u64) else {
        return;
    };
    let cell = a.planes.cell(&l, i);
    let periodic = [
        a.periodic & 1 != 0,
        a.periodic & 2 != 0,
        a.periodic & 4 != 0,
    ];
    let u = |c: usize| {
        [
            a.fields.read(n + c),
            a.fields.read(2 * n + c),
            a.fields.read(3 * n + c),
        ]
    };
    let (w, q) = match velocity_gradient(&l, periodic, cell, |c| a.flags.read(c), u) {
        Some(g) => {
            let w = curl(&g);
            (
                sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]),
                q_criterion(&g),
            )
        }
        None => (0.0, 0.0),
    };
    a.derived.write(cell, w);
    a.derived.write(n + cell, q);
}

/// Stage `fields` of a slice frame, one entry point per storage of
/// [`murmur_common::lbm_variants!`], named from its pieces as the host's kernel table names it.
macro_rules! plane_fields {
    (
        formats: $formats:tt,
        storages: [$(($storage:ty, $sname:literal, $stream:literal),)*],
        variants: $variants:tt,
    ) => {$(
        const _: () = {
            /// Stage `fields` of a slice frame: `rho, u` of the cells of `a.planes` only.
            #[export_name = concat!("fluid_plane_fields_", $sname, $stream)]
            pub unsafe extern "ptx-kernel" fn plane_fields(a: PlaneFields<$storage>) {
                let f = &a.fields;
                let l = f.p.lattice;
                let Some(i) = index_below(a.planes.cells(&l) as u64) else {
                    return;
                };
                let cell = a.planes.cell(&l, i);
                let (rho, u) = cell_fields(&f.p, &f.pops, f.flags, f.f, &f.band, cell);
                store_fields(f.fields, l.cells(), cell, rho, u);
            }
        };
    )*};
}

murmur_common::lbm_variants!(plane_fields);

/// Stage `smoke_forward`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn smoke_forward(a: SmokeForward) {
    let Some(cell) = index_below(a.p.lattice.cells() as u64) else {
        return;
    };
    a.s_hat
        .write(cell, smoke::forward(&a.p, &a.fields, &a.flags, &a.s, cell));
}

/// Stage `smoke_backward`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn smoke_backward(a: SmokeBackward) {
    let Some(cell) = index_below(a.p.lattice.cells() as u64) else {
        return;
    };
    let v = smoke::backward(&a.p, &a.fields, &a.flags, &a.s, &a.s_hat, cell);
    a.e.write(cell, v);
}

/// Stage `smoke_correct`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn smoke_correct(a: SmokeCorrect) {
    let Some(cell) = index_below(a.p.lattice.cells() as u64) else {
        return;
    };
    let v = smoke::correct(&a.p, &a.fields, &a.flags, &a.sources, &a.s, &a.e, cell);
    a.s_new.write(cell, v);
}

/// Stage `smoke_light`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn smoke_light(a: SmokeLight) {
    let l = a.lattice;
    let Some(i) = index_below(l.nx as u64 * l.nz as u64) else {
        return;
    };
    let (x, z) = (i as u32 % l.nx, i as u32 / l.nx);
    fluid::light_column(&l, x, z, a.sigma, &a.smoke, |c, t| a.light.write(c, t));
}

/// Stage `fluid_splat`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fluid_splat(a: FluidSplat) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    let write = |pixel: u32, key: u64| {
        // SAFETY: `pixel < width * height`, the frame's length; only atomics touch it here.
        let slot = AtomicU64::from_ptr(a.frame.at(pixel as usize));
        slot.fetch_min(key, Ordering::Relaxed);
    };
    if a.colours.is_empty() {
        fluid::splat_solid(&a.view, a.pos.read(i), a.radius, write);
    } else {
        fluid::splat_point(&a.view, a.pos.read(i), a.radius, a.colours.read(i), write);
    }
}

/// Stage `fluid_occupancy`: one warp per brick, its span's cells shared among the lanes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fluid_occupancy(a: FluidOccupancy) {
    let l = a.frame.lattice;
    let bricks = Bricks::of(&l);
    // Whole warps pass or leave together (the launch is whole warps): the ballot below has
    // every lane of its warp.
    let Some(i) = index_below(bricks.count() as u64 * 32) else {
        return;
    };
    let (brick, lane) = (i / 32, i as u32 % 32);
    let (first, extent) = Bricks::span(&l, bricks.coords(brick));
    let cells = extent[0] * extent[1] * extent[2];
    let mut any = false;
    let mut k = lane;
    while k < cells {
        if occupancy::drawn(&a.frame, &a.volumes, span_cell(&l, first, extent, k)) {
            any = true;
            break;
        }
        k += 32;
    }
    let votes = ballot(any);
    if lane == 0 {
        a.occupancy.write(brick, (votes != 0) as u8);
    }
}

/// Stage `fluid_shade`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn fluid_shade(a: FluidShade) {
    let Some(i) = index_below(a.rgba.len()) else {
        return;
    };
    let w = a.frame.view.width as usize;
    let (px, py) = ((i % w) as u32, (i / w) as u32);
    a.rgba.write(
        i,
        fluid::shade(&a.frame, &a.volumes, px, py, a.keys.read(i)),
    );
}
