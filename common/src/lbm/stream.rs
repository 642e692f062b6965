//! Streaming with boundaries, fused with collision: the update of one cell, pull scheme
//! (Krüger et al. 2017, Sec. 13.3.2). Populations are read and written only through
//! [`Populations`].

use super::abi::StreamCollide;
use super::access::{neighbour, Populations};
use super::boundary::{
    anti_bounce_back, moving_bounce_back, FLUID, KIND_MASK, NEAR_BOUNDARY, OUTLET,
};
use super::collide::{collide_with, Model};
use super::params::LbmParams;
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
            let (rho, u) = boundary_fields(p, flag);
            store_fields(a.fields, p.lattice.cells(), cell, rho, u);
        }
        return;
    }
    let pops = Populations::new(p.lattice);
    let mut f = pull_cell(p, a.flags, a.src, cell);
    finish::<M, true>(a, pops, cell, &mut f);
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
    finish::<M, BAND>(a, pops, cell, &mut f);
}

/// Collide the gathered populations, store them and (when asked) the fields. With `BAND`, a
/// band cell's immersed-boundary force joins the body force.
#[inline(always)]
unsafe fn finish<M: Model, const BAND: bool>(
    a: &StreamCollide<M>,
    pops: Populations,
    cell: usize,
    f: &mut [f32; Q],
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
    let (rho, u) = collide_with::<M>(f, &p.rates, force, has_force);
    pops.store(a.dst, cell, f);
    if a.p.store_fields != 0 {
        store_fields(a.fields, a.p.lattice.cells(), cell, rho, u);
    }
}

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours are pulled,
/// boundary neighbours apply their condition.
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
    let mut kinds = [0u8; Q];
    let mut mask = 0u32;
    for_q!(q => {
        kinds[q] = flags.read(neighbour(&o, q)) & KIND_MASK;
        mask |= 1 << kinds[q];
    });
    // Own velocity for the outlet (from this cell's post-collision populations).
    let mut u_own = [0.0f32; 3];
    if mask & (1 << OUTLET) != 0 {
        let own = pops.own_all(src, cell);
        let (rho, j) = moments::density_momentum(&own);
        let h = [-p.force[0], -p.force[1], -p.force[2]];
        u_own = moments::velocity(rho, j, h);
    }
    let mut f = [0.0f32; Q];
    for_q!(q => {
        f[q] = if kinds[q] == FLUID {
            pops.streamed(src, q, neighbour(&o, q))
        } else {
            let f_out = pops.reflected(src, q, cell);
            match CellKind::from_u8(kinds[q]) {
                CellKind::MovingWall => moving_bounce_back(q, f_out, p.wall_velocity),
                CellKind::Inlet => moving_bounce_back(q, f_out, p.inlet_velocity),
                CellKind::Outlet => anti_bounce_back(q, f_out, p.outlet_density, u_own),
                CellKind::Fluid | CellKind::Wall => f_out,
            }
        };
    });
    f
}

/// The fields reported for a non-fluid cell: density 1 (outlet: its density), its velocity.
#[inline(always)]
pub fn boundary_fields(p: &LbmParams, kind: u8) -> (f32, [f32; 3]) {
    match CellKind::from_u8(kind) {
        CellKind::MovingWall => (1.0, p.wall_velocity),
        CellKind::Inlet => (1.0, p.inlet_velocity),
        CellKind::Outlet => (p.outlet_density, [0.0; 3]),
        CellKind::Fluid | CellKind::Wall => (1.0, [0.0; 3]),
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
