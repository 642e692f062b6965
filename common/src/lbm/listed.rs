//! The cells of the boundary list: fluid cells next to walls, inlets, outlets or free-slip
//! cells, pulled with their boundary conditions applied ([`super::boundary`]): the boundary
//! kernel's [`stream_collide_listed`], whose 27 neighbours' bytes choose each direction's
//! condition, and the pull it shares with [`super::stream_collide_cell`].

use super::abi::StreamCollide;
use super::access::{neighbour, Populations, Storage};
use super::boundary::sponge_rates;
use super::boundary::{
    anti_bounce_back, face_axis, face_of, inlet_velocity, moving_bounce_back, FLUID, GHOST, INLET,
    KIND_MASK, OUTLET, SPONGE,
};
use super::collide::Model;
use super::d3q27::{velocity, velocity_f32, REST};
use super::params::{LbmParams, FACES};
use super::stream::{finish, own_rates};
use super::{CellKind, Q};
use crate::kernel::{DevSlice, DevSliceMut};

/// [`stream_collide_cell`] for an entry of the boundary list: a fluid cell that is neither an
/// interior cell (byte exactly [`FLUID`]) nor a ghost (next to non-fluid cells, in the outlet
/// layer, or a slab's face cell). The form the boundary kernel runs: the cell's own byte is
/// read with its neighbours' (it is neighbour 13 of itself), so a thread waits for one round of
/// loads fewer, and every listed cell pulls through [`pull_with_boundaries`], which for a cell
/// whose neighbours are all fluid loads what [`Populations::pull`] loads. The same values as
/// [`stream_collide_cell`] (tested); other cells do nothing.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
pub unsafe fn stream_collide_listed<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
    side: usize,
) {
    let src = a.f.as_const();
    let (f, mask, flag) =
        pull_with_boundaries::<S, false>(&a.p, &a.pops, cell, a.flags, src, || {
            read_u(a.outlet_u, side)
        });
    if flag & KIND_MASK != FLUID || flag == GHOST {
        return;
    }
    collide_listed(a, cell, side, flag, f, mask);
}

/// The rest of a fluid cell's update once its populations are pulled (`flag` its byte, `mask`
/// its neighbours' kinds): the outlet layer's rates, collision with the body and band forces,
/// the store, and next to an outlet the velocity of the collision kept at `side`.
#[inline(always)]
pub(super) unsafe fn collide_listed<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
    side: usize,
    flag: u8,
    mut f: [f32; Q],
    mask: u32,
) {
    let p = &a.p;
    let rates = if flag & SPONGE != 0 {
        let (x, y, z) = p.lattice.coords(cell);
        sponge_rates(p, [x, y, z])
    } else {
        p.rates
    };
    let u = finish::<M, S, true>(a, cell, &mut f, &own_rates(a, cell, &rates));
    if mask & (1 << OUTLET) != 0 {
        a.outlet_u.write(3 * side, u[0]);
        a.outlet_u.write(3 * side + 1, u[1]);
        a.outlet_u.write(3 * side + 2, u[2]);
    }
}

#[inline(always)]
pub(super) unsafe fn read_u(v: DevSliceMut<f32>, side: usize) -> [f32; 3] {
    [v.read(3 * side), v.read(3 * side + 1), v.read(3 * side + 2)]
}

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours (and cut solid
/// nodes, whose slots the wall-links stage filled) are pulled, boundary neighbours apply their condition with their face's data
/// ([`super::boundary`]). `outlet_u` gives the velocity the outlet condition extrapolates
/// (called only when an outlet is a neighbour, before the pull's loads with `U_FIRST`, after them
/// otherwise). Also returns the mask of neighbour kinds
/// (bit `kind`) and the cell's own byte (read with its neighbours': it is neighbour 13).
///
/// In passes, so that a thread has its loads in flight together rather than one direction
/// after another: every direction first loads the population of a fluid neighbour, or the
/// reflected one of a boundary neighbour (the neighbours' bytes choose, no branch); cells next
/// to free-slip cells then load the mirror images those links take instead (every byte that
/// choice needs is among the 27 already read, so no load waits on another beyond the bytes);
/// last, each boundary direction applies its formula to its value.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
pub(super) unsafe fn pull_with_boundaries<S: Storage, const U_FIRST: bool>(
    p: &LbmParams,
    pops: &Populations<S>,
    cell: usize,
    flags: DevSlice<u8>,
    src: DevSlice<S::Elem>,
    outlet_u: impl FnOnce() -> [f32; 3],
) -> ([f32; Q], u32, u8) {
    let o = p.lattice.pull_offsets(cell);
    let mut bytes = [0u8; Q];
    let mut mask = 0u32;
    // Bit q: the neighbour x - c_q is fluid / a free-slip cell / pulled from (fluid, or a
    // solid node whose slot the wall-links stage filled).
    let mut fluid = 0u32;
    let mut slip = 0u32;
    let mut pulled = 0u32;
    for_q!(q => {
        bytes[q] = flags.read(neighbour(&o, q));
        let kind = bytes[q] & KIND_MASK;
        mask |= 1 << kind;
        fluid |= ((kind == FLUID) as u32) << q;
        slip |= ((kind == CellKind::FreeSlip as u8) as u32) << q;
        pulled |= ((kind == FLUID || kind == CellKind::CutSolid as u8) as u32) << q;
    });
    // `U_FIRST`: before the pull's loads, so that an outlet velocity computed from the
    // populations (the immersed boundary's: 27 more loads) does not hold its values in
    // registers beside the pull's; a stored velocity (three loads) comes after them.
    let mut u_own = [0.0f32; 3];
    let mut late = None;
    if mask & (1 << OUTLET) != 0 {
        if U_FIRST {
            u_own = outlet_u();
        } else {
            late = Some(outlet_u);
        }
    }
    // The population arriving from a fluid neighbour, or the one `x` left toward a boundary
    // neighbour, `f*_{q̄}(x)`, which the boundary formulas turn around.
    let mut f = [0.0f32; Q];
    for_q!(q => {
        let i = if pulled >> q & 1 != 0 {
            pops.arriving_index(&o, q, cell)
        } else {
            pops.reflected_index(&o, q, cell)
        };
        f[q] = pops.load_index(src, q, i);
    });
    if slip != 0 {
        for_q!(q => {
            if let Some(i) = free_slip_index(pops, &o, q, bytes[q], fluid, slip) {
                f[q] = pops.load_index(src, q, i);
            }
        });
    }
    if let Some(u) = late {
        u_own = u();
    }
    // Position of the cell, for inlet profiles.
    let mut x = [0.0f32; 3];
    if mask & (1 << INLET) != 0 {
        let (cx, cy, cz) = p.lattice.coords(cell);
        x = [cx as f32, cy as f32, cz as f32];
    }
    for_q!(q => {
        let face = face_of(bytes[q]);
        match CellKind::from_u8(bytes[q]) {
            CellKind::MovingWall => {
                f[q] = moving_bounce_back(q, f[q], p.face(face).velocity);
            }
            CellKind::Inlet => {
                // The wall point of the link, halfway to the inlet cell.
                let c = velocity_f32(q);
                let at = [x[0] - 0.5 * c[0], x[1] - 0.5 * c[1], x[2] - 0.5 * c[2]];
                f[q] = moving_bounce_back(q, f[q], inlet_velocity(p, &p.face(face), at));
            }
            CellKind::Outlet => {
                f[q] = anti_bounce_back(q, f[q], p.face(face).density, u_own);
            }
            CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip | CellKind::CutSolid => {}
        }
    });
    (f, mask, bytes[REST])
}

/// Where direction `q` of a fluid cell takes its population from when its neighbour `x - c_q`
/// (byte `byte`) is a free-slip cell of a domain face and the reflection finds fluid:
/// specular reflection off the wall of this face and off every other free-slip wall the link
/// crosses (edges and corners where free-slip faces meet): those normal components are
/// mirrored and the population comes from the cell beside `x` along the remaining ones, when
/// that cell is fluid. `None` otherwise (the reflected population stands: corners, free-slip
/// cells of no face, other kinds).
///
/// Every cell involved is one of the 27 neighbours (the cell beside `x` along axis `a` is
/// `x - c_{q,a} e_a`, the source `x - c_q` without the mirrored components), so the masks of
/// fluid and free-slip neighbours (bit `q'` for `x - c_q'`) answer without further loads.
/// `from + c_m` is the wall cell the mirrored link crosses: it does not run, so the slot is
/// safe to read during the step.
#[inline(always)]
fn free_slip_index<S: Storage>(
    pops: &Populations<S>,
    o: &[[u32; 3]; 3],
    q: usize,
    byte: u8,
    fluid: u32,
    slip: u32,
) -> Option<usize> {
    let face = face_of(byte);
    if byte & KIND_MASK != CellKind::FreeSlip as u8 || face as usize >= FACES {
        return None;
    }
    let c = velocity(q);
    let mut axes = 1u32 << face_axis(face);
    unroll!(a in [0, 1, 2] => {
        // The neighbour beside x along axis a alone.
        if c[a] != 0 && slip >> along(q, a) & 1 != 0 {
            axes |= 1 << a;
        }
    });
    if fluid >> without(q, axes) & 1 == 0 {
        return None;
    }
    Some(pops.mirrored_index(o, q, axes, mirror(q, axes)))
}

/// Stride of axis `a` in a direction's number (`q = 9 (cz + 1) + 3 (cy + 1) + (cx + 1)`).
#[inline(always)]
const fn stride(a: usize) -> i32 {
    match a {
        0 => 1,
        1 => 3,
        _ => 9,
    }
}

/// The direction of `c_q`'s component along axis `a` alone.
#[inline(always)]
pub(super) const fn along(q: usize, a: usize) -> usize {
    (REST as i32 + velocity(q)[a] * stride(a)) as usize
}

/// The direction of `c_q` without its components along the axes of bit mask `axes`.
#[inline(always)]
pub(super) fn without(q: usize, axes: u32) -> usize {
    let c = velocity(q);
    let mut d = q as i32;
    unroll!(a in [0, 1, 2] => {
        if axes >> a & 1 != 0 {
            d -= c[a] * stride(a);
        }
    });
    d as usize
}

/// The direction of `c_q` with its components along the axes of bit mask `axes` negated.
#[inline(always)]
pub(super) fn mirror(q: usize, axes: u32) -> usize {
    let c = velocity(q);
    let mut d = q as i32;
    unroll!(a in [0, 1, 2] => {
        if axes >> a & 1 != 0 {
            d -= 2 * c[a] * stride(a);
        }
    });
    d as usize
}
