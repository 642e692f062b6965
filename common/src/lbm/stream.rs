//! Streaming with boundaries, fused with collision: the update of one cell, pull scheme
//! (Krüger et al. 2017, Sec. 13.3.2). Populations are read and written only through
//! [`Populations`].

use super::abi::StreamCollide;
use super::access::{neighbour, neighbour_without, Populations};
use super::boundary::{
    anti_bounce_back, face_axis, face_of, inlet_velocity, mirrored, moving_bounce_back,
    sponge_rates, FLUID, INLET, KIND_MASK, NEAR_BOUNDARY, OUTLET, SPONGE,
};
use super::collide::{collide_with, Model};
use super::d3q27::{velocity, velocity_f32};
use super::params::{LbmParams, FACES};
use super::{moments, CellKind, Q};
use crate::kernel::{DevSlice, DevSliceMut};

/// The full update of one cell: gather the 27 populations from the neighbours `x - c_q` of `src`
/// (post-collision of the previous step), applying the boundary of any non-fluid neighbour;
/// collide; store to `dst` at the cell itself; optionally store the fields. Non-fluid cells only
/// write their prescribed fields. `flags` must carry the [`NEAR_BOUNDARY`] bits
/// ([`super::boundary::mark_near_boundary`]).
///
/// The GPU splits the same work in two kernels: [`stream_collide_interior`] over all cells
/// (fluid cells without non-fluid neighbours: few registers, no boundary code) and this function
/// over a list of the other cells.
///
/// # Safety
/// `cell < lattice.cells()`; `flags` holds `cells` bytes, `src` and `dst` a time level each
/// ([`Populations::len`], `dst` not aliasing `src`), `fields` `4 cells` floats when
/// `store_fields != 0`. Each call writes only the slots of `cell`, so calls for different cells
/// may run concurrently.
#[inline(always)]
pub unsafe fn stream_collide_cell<M: Model>(a: &StreamCollide<M>, cell: usize) {
    let p = &a.p;
    let flag = a.flags.read(cell);
    if flag & KIND_MASK != FLUID {
        if p.store_fields != 0 {
            let (rho, u) = boundary_fields(p, flag, cell);
            store_fields(a.fields, p.lattice.cells(), cell, rho, u);
        }
        return;
    }
    let pops = Populations::new(p.lattice);
    let mut f = pull_cell(p, a.flags, a.src, cell);
    let rates = if flag & SPONGE != 0 {
        let (x, y, z) = p.lattice.coords(cell);
        sponge_rates(p, [x, y, z])
    } else {
        p.rates
    };
    finish::<M, true>(a, pops, cell, &mut f, &rates);
}

/// The 27 populations fluid cell `cell` pulls from `src` this step, boundary conditions
/// applied when it has non-fluid neighbours (its [`NEAR_BOUNDARY`] bit).
///
/// # Safety
/// As [`stream_collide_cell`], for a fluid cell.
#[inline(always)]
pub unsafe fn pull_cell(
    p: &LbmParams,
    flags: DevSlice<u8>,
    src: DevSlice<f32>,
    cell: usize,
) -> [f32; Q] {
    let pops = Populations::new(p.lattice);
    if flags.read(cell) & NEAR_BOUNDARY == 0 {
        pops.pull(src, cell)
    } else {
        pull_with_boundaries(p, pops, cell, flags, src)
    }
}

/// [`stream_collide_cell`] for interior fluid cells only (byte exactly [`CellKind::Fluid`]);
/// returns at once for every other cell, which [`stream_collide_cell`] handles from a list.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
pub unsafe fn stream_collide_interior<M: Model>(a: &StreamCollide<M>, cell: usize) {
    interior::<M, false>(a, cell)
}

/// [`stream_collide_interior`] adding the band's immersed-boundary force to band cells.
///
/// # Safety
/// As [`stream_collide_cell`], with `a.band` valid when active.
#[inline(always)]
pub unsafe fn stream_collide_interior_band<M: Model>(a: &StreamCollide<M>, cell: usize) {
    interior::<M, true>(a, cell)
}

#[inline(always)]
unsafe fn interior<M: Model, const BAND: bool>(a: &StreamCollide<M>, cell: usize) {
    if a.flags.read(cell) != FLUID {
        return;
    }
    let pops = Populations::new(a.p.lattice);
    let mut f = pops.pull(a.src, cell);
    finish::<M, BAND>(a, pops, cell, &mut f, &a.p.rates);
}

/// Collide the gathered populations, store them and (when asked) the fields. With `BAND`, a
/// band cell's immersed-boundary force joins the body force.
#[inline(always)]
unsafe fn finish<M: Model, const BAND: bool>(
    a: &StreamCollide<M>,
    pops: Populations,
    cell: usize,
    f: &mut [f32; Q],
    rates: &super::Rates,
) {
    let p = &a.p;
    let ib = if BAND && a.band.active != 0 {
        a.band.force(cell)
    } else {
        None
    };
    let (force, has_force) = match ib {
        None => (p.force, p.has_force != 0),
        Some(g) => (
            [p.force[0] + g[0], p.force[1] + g[1], p.force[2] + g[2]],
            true,
        ),
    };
    let (rho, u) = collide_with::<M>(f, rates, force, has_force);
    pops.store(a.dst, cell, f);
    if a.p.store_fields != 0 {
        store_fields(a.fields, a.p.lattice.cells(), cell, rho, u);
    }
}

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours are pulled,
/// boundary neighbours apply their condition with their face's data
/// ([`super::boundary`]).
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
unsafe fn pull_with_boundaries(
    p: &LbmParams,
    pops: Populations,
    cell: usize,
    flags: DevSlice<u8>,
    src: DevSlice<f32>,
) -> [f32; Q] {
    let o = p.lattice.pull_offsets(cell);
    let mut bytes = [0u8; Q];
    let mut mask = 0u32;
    for_q!(q => {
        bytes[q] = flags.read(neighbour(&o, q));
        mask |= 1 << (bytes[q] & KIND_MASK);
    });
    // Own velocity for the outlet (from this cell's post-collision populations).
    let mut u_own = [0.0f32; 3];
    if mask & (1 << OUTLET) != 0 {
        let own = pops.own_all(src, cell);
        let (rho, j) = moments::density_momentum(&own);
        let h = [-p.force[0], -p.force[1], -p.force[2]];
        u_own = moments::velocity(rho, j, h);
    }
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
            pops.streamed(src, q, neighbour(&o, q))
        } else {
            let f_out = pops.reflected(src, q, cell);
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
                        pops.streamed(src, m, from)
                    } else {
                        f_out
                    }
                }
                CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip => f_out,
            }
        };
    });
    f
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

/// Initialises `cell`: the equilibrium of its fields as the post-collision state of step 0.
///
/// # Safety
/// `fields` holds `4 cells` floats, `f` a time level, `cell < cells`.
#[inline(always)]
pub unsafe fn init_cell(a: &super::abi::Init, cell: usize) {
    let n = a.lattice.cells();
    let rho = a.fields.read(cell);
    let u = [
        a.fields.read(n + cell),
        a.fields.read(2 * n + cell),
        a.fields.read(3 * n + cell),
    ];
    Populations::new(a.lattice).store(a.f, cell, &super::initial_populations(rho, u));
}
