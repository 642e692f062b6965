//! Streaming with boundaries, fused with collision: the update of one cell, pull scheme
//! (Krüger et al. 2017, Sec. 13.3.2), in place (esoteric pull, [`super::access`]). Populations
//! are read and written only through [`Populations`].

use super::abi::{Init, StreamCollide};
use super::access::{neighbour, neighbour_without, Populations, Storage};
use super::band::BandRef;
use super::boundary::{
    anti_bounce_back, face_axis, face_of, inlet_velocity, mirrored, moving_bounce_back,
    sponge_rates, FLUID, GHOST, INLET, KIND_MASK, NEAR_BOUNDARY, OUTLET, SPONGE,
};
use super::collide::{collide_with, Model};
use super::d3q27::{velocity, velocity_f32};
use super::params::{LbmParams, FACES};
use super::{moments, CellKind, Q};
use crate::kernel::{DevSlice, DevSliceMut};

/// The full update of one fluid cell: gather the 27 populations arriving from the neighbours
/// `x - c_q`, applying the boundary of any non-fluid neighbour; collide; store in place.
/// Non-fluid cells do nothing (their fields come from [`cell_fields`]). `flags` must carry the
/// [`NEAR_BOUNDARY`] bits ([`super::boundary::mark_near_boundary`]).
///
/// `side` indexes `a.outlet_u` (three floats per entry): cells next to an outlet keep there
/// the velocity of their last collision, which the outlet condition needs (the populations the
/// cell left last step are partly overwritten by its neighbours during an in-place step).
///
/// The GPU splits the same work in two kernels: [`stream_collide_interior`] over all cells
/// (fluid cells without non-fluid neighbours: few registers, no boundary code) and this function
/// over a list of the other fluid cells.
///
/// # Safety
/// `cell < lattice.cells()`; `flags` holds `cells` bytes, `a.f` [`Populations::len`] values,
/// `a.outlet_u` `3 (side + 1)` floats when the cell has an outlet neighbour. Each call touches
/// only the slots of `cell` this step, so calls for different cells may run concurrently.
#[inline(always)]
pub unsafe fn stream_collide_cell<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
    side: usize,
) {
    let p = &a.p;
    let flag = a.flags.read(cell);
    if flag & KIND_MASK != FLUID || flag == GHOST {
        return;
    }
    let src = a.f.as_const();
    let (mut f, mask) = if flag & NEAR_BOUNDARY == 0 {
        (a.pops.pull(src, cell), 0)
    } else {
        pull_with_boundaries(p, &a.pops, cell, a.flags, src, || read_u(a.outlet_u, side))
    };
    let rates = if flag & SPONGE != 0 {
        let (x, y, z) = p.lattice.coords(cell);
        sponge_rates(p, [x, y, z])
    } else {
        p.rates
    };
    let u = finish::<M, S, true>(a, cell, &mut f, &rates);
    if mask & (1 << OUTLET) != 0 {
        a.outlet_u.write(3 * side, u[0]);
        a.outlet_u.write(3 * side + 1, u[1]);
        a.outlet_u.write(3 * side + 2, u[2]);
    }
}

#[inline(always)]
unsafe fn read_u(v: DevSliceMut<f32>, side: usize) -> [f32; 3] {
    [v.read(3 * side), v.read(3 * side + 1), v.read(3 * side + 2)]
}

/// The 27 populations fluid cell `cell` pulls this step, boundary conditions applied when it
/// has non-fluid neighbours (its [`NEAR_BOUNDARY`] bit), for a stage that writes no
/// populations (the immersed boundary's velocity): next to an outlet, the velocity the outlet
/// condition needs is the one of the populations the cell left last step.
///
/// # Safety
/// `cell` is a fluid cell, `flags` and `f` as for [`stream_collide_cell`].
#[inline(always)]
pub unsafe fn pull_cell<S: Storage>(
    p: &LbmParams,
    pops: &Populations<S>,
    flags: DevSlice<u8>,
    f: DevSlice<S::Elem>,
    cell: usize,
) -> [f32; Q] {
    if flags.read(cell) & NEAR_BOUNDARY == 0 {
        pops.pull(f, cell)
    } else {
        let own_u = || {
            let own = pops.own_all(f, cell);
            let (rho, j) = moments::density_momentum(&own);
            moments::velocity(rho, j, [-p.force[0], -p.force[1], -p.force[2]])
        };
        pull_with_boundaries(p, pops, cell, flags, f, own_u).0
    }
}

/// [`stream_collide_cell`] for interior fluid cells only (byte exactly [`CellKind::Fluid`]);
/// returns at once for every other cell, which [`stream_collide_cell`] handles from a list.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
pub unsafe fn stream_collide_interior<M: Model, S: Storage>(a: &StreamCollide<M, S>, cell: usize) {
    interior::<M, S, false>(a, cell)
}

/// [`stream_collide_interior`] adding the band's immersed-boundary force to band cells.
///
/// # Safety
/// As [`stream_collide_cell`], with `a.band` valid when active.
#[inline(always)]
pub unsafe fn stream_collide_interior_band<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
) {
    interior::<M, S, true>(a, cell)
}

#[inline(always)]
unsafe fn interior<M: Model, S: Storage, const BAND: bool>(a: &StreamCollide<M, S>, cell: usize) {
    if a.flags.read(cell) != FLUID {
        return;
    }
    let mut f = a.pops.pull(a.f.as_const(), cell);
    finish::<M, S, BAND>(a, cell, &mut f, &a.p.rates);
}

/// Collide the gathered populations and store them; returns the velocity of the collision.
/// With `BAND`, a band cell's immersed-boundary force joins the body force.
#[inline(always)]
unsafe fn finish<M: Model, S: Storage, const BAND: bool>(
    a: &StreamCollide<M, S>,
    cell: usize,
    f: &mut [f32; Q],
    rates: &super::Rates,
) -> [f32; 3] {
    let (force, has_force) = total_force::<BAND>(&a.p, &a.band, cell);
    let (_rho, u) = collide_with::<M>(f, rates, force, has_force);
    a.pops.store(a.dst, cell, f);
    u
}

/// The force density on `cell`: the body force plus, with `BAND`, the band's immersed-boundary
/// force; and whether it is non-zero.
#[inline(always)]
unsafe fn total_force<const BAND: bool>(
    p: &LbmParams,
    band: &BandRef,
    cell: usize,
) -> ([f32; 3], bool) {
    let ib = if BAND && band.active != 0 {
        band.force(cell)
    } else {
        None
    };
    match ib {
        None => (p.force, p.has_force != 0),
        Some(g) => (
            [p.force[0] + g[0], p.force[1] + g[1], p.force[2] + g[2]],
            true,
        ),
    }
}

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours are pulled,
/// boundary neighbours apply their condition with their face's data
/// ([`super::boundary`]). `outlet_u` gives the velocity the outlet condition extrapolates
/// (called only when an outlet is a neighbour). Also returns the mask of neighbour kinds
/// (bit `kind`).
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
unsafe fn pull_with_boundaries<S: Storage>(
    p: &LbmParams,
    pops: &Populations<S>,
    cell: usize,
    flags: DevSlice<u8>,
    src: DevSlice<S::Elem>,
    outlet_u: impl FnOnce() -> [f32; 3],
) -> ([f32; Q], u32) {
    let o = p.lattice.pull_offsets(cell);
    let mut bytes = [0u8; Q];
    let mut mask = 0u32;
    for_q!(q => {
        bytes[q] = flags.read(neighbour(&o, q));
        mask |= 1 << (bytes[q] & KIND_MASK);
    });
    let u_own = if mask & (1 << OUTLET) != 0 {
        outlet_u()
    } else {
        [0.0f32; 3]
    };
    // Position of the cell, for inlet profiles.
    let mut x = [0.0f32; 3];
    if mask & (1 << INLET) != 0 {
        let (cx, cy, cz) = p.lattice.coords(cell);
        x = [cx as f32, cy as f32, cz as f32];
    }
    let mut f = [0.0f32; Q];
    for_q!(q => {
        let kind = bytes[q] & KIND_MASK;
        f[q] = if kind == FLUID {
            pops.arriving(src, &o, q, cell)
        } else {
            let f_out = pops.reflected(src, &o, q, cell);
            let face = face_of(bytes[q]);
            match CellKind::from_u8(kind) {
                CellKind::MovingWall => moving_bounce_back(q, f_out, p.face(face).velocity),
                CellKind::Inlet => {
                    // The wall point of the link, halfway to the inlet cell.
                    let c = velocity_f32(q);
                    let at = [x[0] - 0.5 * c[0], x[1] - 0.5 * c[1], x[2] - 0.5 * c[2]];
                    moving_bounce_back(q, f_out, inlet_velocity(p, &p.face(face), at))
                }
                CellKind::Outlet => anti_bounce_back(q, f_out, p.face(face).density, u_own),
                CellKind::FreeSlip if (face as usize) < FACES => {
                    // Specular reflection off the wall of this face and off every other
                    // free-slip wall the link crosses (edges and corners where free-slip faces
                    // meet): those normal components are mirrored and the population comes
                    // from the cell beside `x` along the remaining ones.
                    let c = velocity(q);
                    let mut axes = 1u32 << face_axis(face);
                    let mut a = 0;
                    while a < 3 {
                        if c[a] != 0 && axes >> a & 1 == 0 {
                            let beside = neighbour_without(&o, q, 7 & !(1 << a));
                            if flags.read(beside) & KIND_MASK == CellKind::FreeSlip as u8 {
                                axes |= 1 << a;
                            }
                        }
                        a += 1;
                    }
                    let from = neighbour_without(&o, q, axes);
                    if flags.read(from) & KIND_MASK == FLUID {
                        let mut m = q;
                        let mut b = 0;
                        while b < 3 {
                            if axes >> b & 1 != 0 {
                                m = mirrored(m, b);
                            }
                            b += 1;
                        }
                        // `from + c_m` is the wall cell the mirrored link crosses: it does not
                        // run, so the slot is safe to read during the step.
                        pops.own(src, m, from)
                    } else {
                        f_out
                    }
                }
                CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip => f_out,
            }
        };
    });
    (f, mask)
}

/// The fields reported for a non-fluid cell of byte `byte` at `cell`: density 1 and its face's
/// velocity (moving walls; inlets: times the profile at the cell's centre and the inlet scale),
/// the face's density and velocity 0 at outlets, density 1 and velocity 0 at walls.
#[inline(always)]
pub fn boundary_fields(p: &LbmParams, byte: u8, cell: usize) -> (f32, [f32; 3]) {
    let face = p.face(face_of(byte));
    match CellKind::from_u8(byte) {
        CellKind::MovingWall => (1.0, face.velocity),
        CellKind::Inlet => {
            let (x, y, z) = p.lattice.coords(cell);
            (
                1.0,
                inlet_velocity(p, &face, [x as f32, y as f32, z as f32]),
            )
        }
        CellKind::Outlet => (face.density, [0.0; 3]),
        CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip => (1.0, [0.0; 3]),
    }
}

/// Density and velocity of `cell` after the last step: for a fluid cell the moments of the
/// populations it left (post-collision), the velocity corrected by half the force it felt
/// (body force plus the band's immersed-boundary force), which is the velocity its collision
/// used; for other cells [`boundary_fields`]. For stages that write no populations.
///
/// # Safety
/// `cell < cells`, `flags` and `f` as for [`stream_collide_cell`], `band` valid when active.
#[inline(always)]
pub unsafe fn cell_fields<S: Storage>(
    p: &LbmParams,
    pops: &Populations<S>,
    flags: DevSlice<u8>,
    f: DevSlice<S::Elem>,
    band: &BandRef,
    cell: usize,
) -> (f32, [f32; 3]) {
    let byte = flags.read(cell);
    if byte & KIND_MASK != FLUID {
        return boundary_fields(p, byte, cell);
    }
    let own = pops.own_all(f, cell);
    let (rho, j) = moments::density_momentum(&own);
    let (force, _) = total_force::<true>(p, band, cell);
    (
        rho,
        moments::velocity(rho, j, [-force[0], -force[1], -force[2]]),
    )
}

/// Writes `rho, ux, uy, uz` of `cell` to a fields buffer of `4 n` floats (structure of arrays).
///
/// # Safety
/// `fields` holds `4 n` floats and `cell < n`.
#[inline(always)]
pub unsafe fn store_fields(fields: DevSliceMut<f32>, n: usize, cell: usize, rho: f32, u: [f32; 3]) {
    fields.write(cell, rho);
    fields.write(n + cell, u[0]);
    fields.write(2 * n + cell, u[1]);
    fields.write(3 * n + cell, u[2]);
}

/// Initialises `cell`: the equilibrium of its initial fields ([`super::init::Initial`]) as the
/// post-collision state of step 0.
///
/// # Safety
/// `a.f` holds [`Populations::len`] values, `a.flags` `cells` bytes, `cell < cells`; calls for
/// different cells may run concurrently.
#[inline(always)]
pub unsafe fn init_cell<S: Storage>(a: &Init<S>, cell: usize) {
    let l = a.pops.lattice;
    let (x, y, z) = l.coords(cell);
    let fluid = a.flags.read(cell) & KIND_MASK == FLUID;
    let (rho, u) = a.initial.at([x, y, z], fluid);
    a.pops.store(a.f, cell, &super::initial_populations(rho, u));
}
