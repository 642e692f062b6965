//! Streaming with boundaries, fused with collision: the update of one cell, pull scheme
//! (Krüger et al. 2017, Sec. 13.3.2), in place (esoteric pull, [`super::access`]). Populations
//! are read and written only through [`Populations`].

use super::abi::{Init, StreamCollide};
use super::access::{Populations, Storage};
use super::boundary::{
    face_of, inlet_velocity, sponge_rates, FLUID, GHOST, KIND_MASK, NEAR_BOUNDARY, SPONGE,
};
use super::collide::{collide_with, Model};
use super::ib::band::BandRef;
pub use super::listed::stream_collide_listed;
use super::listed::{collide_listed, pull_with_boundaries, read_u};
use super::params::LbmParams;
use super::{moments, CellKind, Rates, Q};
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
    let (f, mask) = if flag & NEAR_BOUNDARY == 0 {
        (a.pops.pull(src, cell), 0)
    } else {
        let (f, mask, _) = pull_with_boundaries::<S, false>(p, &a.pops, cell, a.flags, src, || {
            read_u(a.outlet_u, side)
        });
        (f, mask)
    };
    collide_listed(a, cell, side, flag, f, mask);
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
        pull_with_boundaries::<S, true>(p, pops, cell, flags, f, own_u).0
    }
}

/// [`stream_collide_cell`] for interior fluid cells only (byte exactly [`CellKind::Fluid`]);
/// returns at once for every other cell, which [`stream_collide_sponge`] (the outlet layer's
/// interior cells) and [`stream_collide_cell`] (from a list) handle.
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
    let rates = own_rates(a, cell, &a.p.rates);
    let mut f = a.pops.pull(a.f.as_const(), cell);
    finish::<M, S, BAND>(a, cell, &mut f, &rates);
}

/// [`stream_collide_cell`] for the outlet layer's interior cells only (byte exactly
/// `FLUID | SPONGE`: fluid neighbours only), with their rates ([`sponge_rates`]) and the band's
/// immersed-boundary force; returns at once for every other cell. A kernel of its own, so that
/// the interior kernel keeps its registers.
///
/// # Safety
/// As [`stream_collide_cell`], with `a.band` valid when active.
#[inline(always)]
pub unsafe fn stream_collide_sponge<M: Model, S: Storage>(a: &StreamCollide<M, S>, cell: usize) {
    if a.flags.read(cell) != FLUID | SPONGE {
        return;
    }
    let (x, y, z) = a.p.lattice.coords(cell);
    let rates = own_rates(a, cell, &sponge_rates(&a.p, [x, y, z]));
    let mut f = a.pops.pull(a.f.as_const(), cell);
    finish::<M, S, true>(a, cell, &mut f, &rates);
}

/// [`stream_collide_interior_band`] and [`stream_collide_sponge`] in one: interior cells and
/// the outlet layer's interior cells (byte exactly `FLUID` or `FLUID | SPONGE`), each with its
/// rates; the layer's cells of a row run beside the others in the same warps, where a kernel of
/// their own would launch over a narrow box. Returns at once for every other cell.
///
/// # Safety
/// As [`stream_collide_cell`], with `a.band` valid when active.
#[inline(always)]
pub unsafe fn stream_collide_layer<M: Model, S: Storage>(a: &StreamCollide<M, S>, cell: usize) {
    let flag = a.flags.read(cell);
    if flag & !SPONGE != FLUID {
        return;
    }
    let rates = if flag & SPONGE != 0 {
        let (x, y, z) = a.p.lattice.coords(cell);
        sponge_rates(&a.p, [x, y, z])
    } else {
        a.p.rates
    };
    let rates = own_rates(a, cell, &rates);
    let mut f = a.pops.pull(a.f.as_const(), cell);
    finish::<M, S, true>(a, cell, &mut f, &rates);
}

/// Collide the gathered populations with `rates` (the cell's own: [`own_rates`]) and store
/// them; returns the velocity of the collision, which WALE's field keeps. With `BAND`, a band
/// cell's immersed-boundary force joins the body force.
#[inline(always)]
pub(super) unsafe fn finish<M: Model, S: Storage, const BAND: bool>(
    a: &StreamCollide<M, S>,
    cell: usize,
    f: &mut [f32; Q],
    rates: &Rates,
) -> [f32; 3] {
    let (force, has_force) = total_force::<BAND>(&a.p, &a.band, cell);
    let (_rho, u) = collide_with::<M>(f, rates, force, has_force, a.p.smagorinsky);
    a.pops.store(a.dst, cell, f);
    if a.p.wale > 0.0 {
        super::wale::keep(a.velocity_out, a.p.lattice.cells(), cell, u);
    }
    u
}

/// The rates of fluid cell `cell` from its base `rates`: with WALE its own shear rate, from
/// the velocity field of the step before (`a.velocity`; [`super::wale`]), else `rates`. The
/// interior kernels call it before they pull, so that the gradient's values are gone before
/// the 27 populations arrive.
///
/// # Safety
/// As [`super::wale::gradient`], for `a`'s buffers.
#[inline(always)]
pub(super) unsafe fn own_rates<M, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
    rates: &Rates,
) -> Rates {
    if a.p.wale <= 0.0 {
        return *rates;
    }
    let p = &a.p;
    let near = a.flags.read(cell) & NEAR_BOUNDARY != 0;
    let boundary = |byte: u8, c: usize| boundary_fields(p, byte, c).1;
    let g = super::wale::gradient(p, a.flags, a.velocity, cell, near, boundary);
    super::wale::with_eddy_viscosity(rates, super::wale::eddy_viscosity(&g, p.wale))
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
        CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip | CellKind::CutSolid => {
            (1.0, [0.0; 3])
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::access::{neighbour, neighbour_without};
    use crate::lbm::boundary::{anti_bounce_back, face_axis, moving_bounce_back, INLET, OUTLET};
    use crate::lbm::boundary::{cell_byte, mark_near_boundary, mirrored, NO_FACE};
    use crate::lbm::d3q27::{velocity, velocity_f32};
    use crate::lbm::listed::{along, mirror, without};
    use crate::lbm::params::FACES;
    use crate::lbm::{Bgk, Fp16S, Fp32, InPlace, Lattice, Layout, Rates};
    use crate::rng::{mix64, uniform};
    use std::vec::Vec;

    /// The pull with boundaries in its direct form (one branch per direction, loads inside the
    /// branches, the free-slip cells' bytes read again): the reference the two-pass form must
    /// equal bit for bit.
    #[inline(always)]
    unsafe fn reference_pull<S: Storage>(
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
            f[q] = if kind == FLUID || kind == CellKind::CutSolid as u8 {
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
                    CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip | CellKind::CutSolid => {
                        f_out
                    }
                }
            };
        });
        (f, mask)
    }

    /// A lattice of random cell kinds (walls, moving walls, inlets, outlets, free-slip cells
    /// of every face and of none, cut solid nodes) and faces with every kind of data.
    fn random_case(seed: u64) -> (LbmParams, Vec<u8>) {
        let lattice = Lattice::new(6, 5, 4);
        let mut p = LbmParams::new(lattice, Rates::from_viscosity(0.05));
        p.inlet_scale = 0.75;
        for (k, face) in p.faces.iter_mut().enumerate() {
            let r = |i: u64| uniform(seed ^ 0x5eed, 100 * k as u64 + i);
            face.velocity = [0.1 * r(0) - 0.05, 0.1 * r(1) - 0.05, 0.1 * r(2) - 0.05];
            face.density = 0.98 + 0.04 * r(3);
            face.parabolic = (mix64(seed + k as u64) % 8) as u32;
            face.center = [3.0 * r(4), 2.5 * r(5), 2.0 * r(6)];
            face.inv_half_width = [0.3 + r(7), 0.4 + r(8), 0.5 + r(9)];
        }
        let kinds = [
            CellKind::Wall,
            CellKind::MovingWall,
            CellKind::Inlet,
            CellKind::Outlet,
            CellKind::FreeSlip,
            CellKind::FreeSlip,
            CellKind::CutSolid,
        ];
        let mut flags: Vec<u8> = (0..lattice.cells())
            .map(|c| {
                let h = mix64(seed.wrapping_mul(1_000_003) + c as u64);
                match h % 100 {
                    0..50 => return FLUID,
                    50..53 => return FLUID | SPONGE,
                    53..55 => return GHOST,
                    _ => {}
                }
                let kind = kinds[(h >> 8) as usize % kinds.len()];
                let face = match (h >> 16) % 7 {
                    6 => NO_FACE,
                    f => f as u8,
                };
                cell_byte(kind, face)
            })
            .collect();
        mark_near_boundary(&lattice, &mut flags);
        p.sponge_axis = (seed % 4) as u32;
        p.sponge_start = 1.0;
        p.sponge_inv = 0.25;
        (p, flags)
    }

    /// One step of every cell of a random case, the listed cells (fluid, not interior, not
    /// ghosts) through `listed` and the rest through [`stream_collide_interior`] and
    /// [`stream_collide_sponge`] as the GPU splits them (`split`), or through
    /// [`stream_collide_cell`]; the populations and outlet velocities after it.
    #[allow(clippy::type_complexity)]
    fn step_with<S: Storage>(
        case: &(LbmParams, Vec<u8>),
        seed: u64,
        layout: Layout,
        step: u64,
        store: &impl Fn(usize, f32) -> S::Elem,
        listed: unsafe fn(&StreamCollide<Bgk, S>, usize, usize),
        split: bool,
    ) -> (Vec<S::Elem>, Vec<f32>) {
        let (p, flags) = (case.0, &case.1);
        let n = p.lattice.cells();
        let pops = Populations::<S>::new(p.lattice, layout, step);
        let mut f: Vec<S::Elem> = (0..pops.len())
            .map(|i| store(i % Q, 0.02 + 0.05 * uniform(seed + 77, i as u64)))
            .collect();
        let mut g = f.clone();
        let mut u: Vec<f32> = (0..3 * n)
            .map(|i| 0.02 * uniform(seed + 5, i as u64))
            .collect();
        // The boundary list's cells (`Setup::boundary_list`): outlet-layer cells with only fluid
        // neighbours are interior cells.
        let list: Vec<usize> = (0..n)
            .filter(|&c| {
                let b = flags[c];
                b & KIND_MASK == FLUID && b & !SPONGE != FLUID && b != GHOST
            })
            .collect();
        // SAFETY: the views cover the vectors, which outlive them; one cell at a time.
        unsafe {
            let fv = DevSliceMut::from_raw(f.as_mut_ptr(), f.len() as u64);
            let dst = if S::IN_PLACE {
                fv
            } else {
                DevSliceMut::from_raw(g.as_mut_ptr(), g.len() as u64)
            };
            let a = StreamCollide::<Bgk, S>::new(
                p,
                pops,
                DevSlice::from_raw(flags.as_ptr(), n as u64),
                fv,
            )
            .with_dst(dst)
            .with_outlet_u(DevSliceMut::from_raw(u.as_mut_ptr(), u.len() as u64));
            for (cell, &byte) in flags.iter().enumerate() {
                match list.iter().position(|&c| c == cell) {
                    Some(side) => listed(&a, cell, side),
                    None if split && byte == FLUID | SPONGE => stream_collide_sponge(&a, cell),
                    None if split => stream_collide_interior(&a, cell),
                    None => stream_collide_cell(&a, cell, n - 1),
                }
            }
        }
        (if S::IN_PLACE { f } else { g }, u)
    }

    /// A random case's lattice of fluid cells only (periodic), the outlet layer's bit on a
    /// third of them: outlet-layer cells with only fluid neighbours.
    fn open_case(seed: u64) -> (LbmParams, Vec<u8>) {
        let (p, flags) = random_case(seed);
        let flags = (0..flags.len() as u64)
            .map(|c| match mix64(seed ^ c) % 3 {
                0 => FLUID | SPONGE,
                _ => FLUID,
            })
            .collect();
        (p, flags)
    }

    fn listed_agrees<S: Storage>(store: impl Fn(usize, f32) -> S::Elem) {
        for seed in 0..16u64 {
            let case = if seed < 8 {
                random_case(seed)
            } else {
                open_case(seed)
            };
            for layout in [Layout::SOA, Layout { alpha: 4 }] {
                for step in [1u64, 2] {
                    let (listed, cell) = (stream_collide_listed, stream_collide_cell);
                    let a = step_with::<S>(&case, seed, layout, step, &store, listed, true);
                    let b = step_with::<S>(&case, seed, layout, step, &store, cell, false);
                    assert!(
                        a.0 == b.0,
                        "seed {seed} {layout:?} step {step}: populations"
                    );
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a.1), bits(&b.1), "seed {seed}: outlet velocities");
                }
            }
        }
    }

    /// The GPU's split of a step (the boundary kernel's form of a listed cell's update, the
    /// interior kernel's of the other cells, outlet-layer cells among them) stores what the CPU
    /// reference's does, bit for bit (outlet layer, ghosts, every boundary kind; pull and in
    /// place).
    #[test]
    fn listed_update_equals_the_cell_update() {
        listed_agrees::<Fp32>(|_, v| v);
        listed_agrees::<InPlace<Fp32>>(|_, v| v);
        listed_agrees::<Fp16S>(Fp16S::encode);
        listed_agrees::<InPlace<Fp16S>>(Fp16S::encode);
    }

    fn pulls_agree<S: Storage>(store: impl Fn(usize, f32) -> S::Elem) {
        for seed in 0..12u64 {
            let (p, flags) = random_case(seed);
            for layout in [Layout::SOA, Layout { alpha: 4 }] {
                for step in [1u64, 2] {
                    let pops = Populations::<S>::new(p.lattice, layout, step);
                    let values: Vec<S::Elem> = (0..pops.len())
                        .map(|i| store(i % Q, 0.02 + 0.05 * uniform(seed + 77, i as u64)))
                        .collect();
                    // SAFETY: the views cover the vectors, which outlive them.
                    let (f, fl) = unsafe {
                        (
                            DevSlice::from_raw(values.as_ptr(), values.len() as u64),
                            DevSlice::from_raw(flags.as_ptr(), flags.len() as u64),
                        )
                    };
                    let u = || [0.01f32, -0.02, 0.03];
                    let mut cells = 0;
                    for (cell, &byte) in flags.iter().enumerate() {
                        if byte & KIND_MASK != FLUID || byte & NEAR_BOUNDARY == 0 {
                            continue;
                        }
                        cells += 1;
                        // SAFETY: `cell` is a fluid cell of the lattice the buffers hold.
                        let (a, ma, _) =
                            unsafe { pull_with_boundaries::<S, false>(&p, &pops, cell, fl, f, u) };
                        let (c, mc, _) =
                            unsafe { pull_with_boundaries::<S, true>(&p, &pops, cell, fl, f, u) };
                        assert_eq!(ma, mc);
                        for q in 0..Q {
                            assert_eq!(a[q].to_bits(), c[q].to_bits());
                        }
                        let (b, mb) = unsafe { reference_pull(&p, &pops, cell, fl, f, u) };
                        assert_eq!(ma, mb, "seed {seed} cell {cell}: kinds");
                        for q in 0..Q {
                            assert_eq!(
                                a[q].to_bits(),
                                b[q].to_bits(),
                                "seed {seed} {layout:?} step {step} cell {cell} q {q}: {} vs {}",
                                a[q],
                                b[q]
                            );
                        }
                    }
                    assert!(cells > 20, "seed {seed}: only {cells} boundary cells");
                }
            }
        }
    }

    /// The two-pass pull reads the same slots and applies the same formulas as the reference:
    /// equal bits for every direction of every listed cell, pull and in place, FP32 and FP16S.
    #[test]
    fn two_pass_pull_equals_the_reference() {
        pulls_agree::<Fp32>(|_, v| v);
        pulls_agree::<InPlace<Fp32>>(|_, v| v);
        pulls_agree::<Fp16S>(Fp16S::encode);
        pulls_agree::<InPlace<Fp16S>>(Fp16S::encode);
    }

    /// Decoding depends on a direction only through its weight, equal for a direction, its
    /// opposite and its mirror images: the one-`q` decoding of the two-pass pull relies on it.
    #[test]
    fn weights_of_opposites_and_mirrors_are_equal() {
        use crate::lbm::d3q27::{opposite, weight};
        for q in 0..Q {
            assert_eq!(weight(q).to_bits(), weight(opposite(q)).to_bits());
            for axes in 0..8u32 {
                let m = mirror(q, axes);
                assert_eq!(
                    weight(q).to_bits(),
                    weight(m).to_bits(),
                    "q {q} axes {axes}"
                );
                let mut want = q;
                for a in 0..3 {
                    if axes >> a & 1 != 0 {
                        want = mirrored(want, a);
                    }
                }
                assert_eq!(m, want, "q {q} axes {axes}");
            }
        }
    }

    /// `along` and `without` name the neighbours `neighbour_without` finds.
    #[test]
    fn direction_helpers_match_the_offsets() {
        let l = Lattice::new(5, 4, 3);
        let cell = l.index(2, 1, 1);
        let o = l.pull_offsets(cell);
        for q in 0..Q {
            for a in 0..3 {
                assert_eq!(
                    neighbour(&o, along(q, a)),
                    neighbour_without(&o, q, 7 & !(1 << a))
                );
            }
            for axes in 0..8u32 {
                assert_eq!(
                    neighbour(&o, without(q, axes)),
                    neighbour_without(&o, q, axes)
                );
            }
        }
    }
}
