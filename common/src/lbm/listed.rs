//! The cells of the boundary list: fluid cells next to walls, inlets, outlets or free-slip
//! cells, pulled with their boundary conditions applied ([`super::boundary`]).
//!
//! Two forms of the same update, with the same bits:
//! - [`stream_collide_listed`], any listed cell: its 27 neighbours' bytes choose each
//!   direction's condition (the boundary kernel);
//! - [`stream_collide_face`], a cell of a face run ([`FaceRuns`]): a cell whose only non-fluid
//!   neighbours are the nine cells of one domain face beside it, all of that face's kind. Which
//!   directions reach the face follows from the face alone, so the thread loads no neighbour
//!   byte and every branch is the same for the warp (the face kernel).

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
use super::stream::finish;
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
    let u = finish::<M, S, true>(a, cell, &mut f, &rates);
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

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours are pulled,
/// boundary neighbours apply their condition with their face's data
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
    // Bit q: the neighbour x - c_q is fluid / a free-slip cell.
    let mut fluid = 0u32;
    let mut slip = 0u32;
    for_q!(q => {
        bytes[q] = flags.read(neighbour(&o, q));
        let kind = bytes[q] & KIND_MASK;
        mask |= 1 << kind;
        fluid |= ((kind == FLUID) as u32) << q;
        slip |= ((kind == CellKind::FreeSlip as u8) as u32) << q;
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
        let i = if fluid >> q & 1 != 0 {
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
            CellKind::Fluid | CellKind::Wall | CellKind::FreeSlip => {}
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

/// The face runs of a boundary list: its first entries, grouped by domain face, are cells whose
/// only non-fluid neighbours are the nine cells of that face beside them (a plane of the face's
/// kind; edges, corners and cells beside voxel walls are not in a run). Entry `i` of a launch
/// belongs to face `f`, the first with `i < ends[f]`; entries from `ends[5]` on to no run.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaceRuns {
    /// One past each face's last entry (non-decreasing).
    pub ends: [u32; FACES],
    /// Each face's [`CellKind`] (as `u32`; unused for faces of no entries).
    pub kinds: [u32; FACES],
}

impl FaceRuns {
    /// Entries in runs.
    pub const fn len(&self) -> u32 {
        self.ends[FACES - 1]
    }

    /// Whether no entry is in a run.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The face and kind of entry `i` (`i < len()`), chosen without indexing the arrays by a
    /// runtime value (a kernel parameter indexed so would be copied to local memory).
    #[inline(always)]
    pub fn face_of_entry(&self, i: u32) -> (u8, u8) {
        let mut face = FACES as u8 - 1;
        let mut kind = self.kinds[FACES - 1];
        unroll!(f in [4, 3, 2, 1, 0] => {
            if i < self.ends[f] {
                face = f as u8;
                kind = self.kinds[f];
            }
        });
        (face, kind as u8)
    }

    /// The runs of entries `start .. start + len` of the list, as a launch over them sees
    /// them (entry 0 of the launch is entry `start`).
    pub fn window(&self, start: u32, len: u32) -> FaceRuns {
        let mut w = *self;
        for e in &mut w.ends {
            *e = e.saturating_sub(start).min(len);
        }
        w
    }
}

/// Whether a fluid cell of face `face`'s run pulls `f_q` from the face (the neighbour
/// `x - c_q` is one of the face's cells): `c_q` points away from the face along its axis.
#[inline(always)]
pub const fn toward_face(q: usize, face: u8) -> bool {
    let v = velocity(q);
    // A choice, not an index: `velocity(q)` indexed by a runtime axis would live in local
    // memory on the GPU.
    let c = match face_axis(face) {
        0 => v[0],
        1 => v[1],
        _ => v[2],
    };
    // Face 2a lies at coordinate 0 of axis a, face 2a + 1 at its last coordinate.
    if face & 1 == 0 {
        c == 1
    } else {
        c == -1
    }
}

/// The face of a face run that fluid cell `bytes[REST]` with neighbour bytes `bytes` (bit `q`
/// the byte of `x - c_q`) belongs to, if it belongs to one: every direction toward one domain
/// face reaches a cell of that face (the same kind and face bits), every other direction a
/// fluid cell. The host sorts the boundary list with it; [`stream_collide_face`] relies on it.
pub fn face_run(bytes: &[u8; Q]) -> Option<u8> {
    let byte = (0..Q).map(|q| bytes[q]).find(|b| b & KIND_MASK != FLUID)?;
    let face = face_of(byte);
    if face as usize >= FACES {
        return None;
    }
    let mark = byte & (KIND_MASK | super::boundary::FACE_MASK);
    (0..Q)
        .all(|q| {
            if toward_face(q, face) {
                bytes[q] & (KIND_MASK | super::boundary::FACE_MASK) == mark
            } else {
                bytes[q] & KIND_MASK == FLUID
            }
        })
        .then_some(face)
}

/// [`stream_collide_listed`] for a cell of face `face`'s run, the face being of kind `kind`
/// ([`face_run`] holds for the cell): the same values, without the neighbours' bytes. The
/// directions toward the face take the reflected population (wall, moving wall, inlet, outlet)
/// or the mirrored one (free slip: the cell beside `x` in the face's plane is fluid), the others
/// the arriving one; then the face's formula, as in [`pull_with_boundaries`].
///
/// # Safety
/// As [`super::stream_collide_cell`], with [`face_run`] true of `cell` for `face`, and
/// `a.outlet_u` holding `3 (side + 1)` floats at an outlet.
#[inline(always)]
pub unsafe fn stream_collide_face<M: Model, S: Storage>(
    a: &StreamCollide<M, S>,
    cell: usize,
    side: usize,
    face: u8,
    kind: u8,
) {
    let p = &a.p;
    let pops = &a.pops;
    let src = a.f.as_const();
    let flag = a.flags.read(cell);
    let o = p.lattice.pull_offsets(cell);
    let slip = kind == CellKind::FreeSlip as u8;
    let axes = 1u32 << face_axis(face);
    let mut f = [0.0f32; Q];
    for_q!(q => {
        let i = if !toward_face(q, face) {
            pops.arriving_index(&o, q, cell)
        } else if slip {
            pops.mirrored_index(&o, q, axes, mirror(q, axes))
        } else {
            pops.reflected_index(&o, q, cell)
        };
        f[q] = pops.load_index(src, q, i);
    });
    let data = p.face(face);
    if kind == OUTLET {
        let u_own = read_u(a.outlet_u, side);
        for_q!(q => {
            if toward_face(q, face) {
                f[q] = anti_bounce_back(q, f[q], data.density, u_own);
            }
        });
    } else if kind == INLET {
        let (cx, cy, cz) = p.lattice.coords(cell);
        let x = [cx as f32, cy as f32, cz as f32];
        for_q!(q => {
            if toward_face(q, face) {
                let c = velocity_f32(q);
                let at = [x[0] - 0.5 * c[0], x[1] - 0.5 * c[1], x[2] - 0.5 * c[2]];
                f[q] = moving_bounce_back(q, f[q], inlet_velocity(p, &data, at));
            }
        });
    } else if kind == CellKind::MovingWall as u8 {
        for_q!(q => {
            if toward_face(q, face) {
                f[q] = moving_bounce_back(q, f[q], data.velocity);
            }
        });
    }
    let mask = if kind == OUTLET { 1 << OUTLET } else { 0 };
    collide_listed(a, cell, side, flag, f, mask);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::access::neighbour;
    use crate::lbm::boundary::{cell_byte, mark_near_boundary};
    use crate::lbm::{
        stream_collide_cell, stream_collide_interior, stream_collide_sponge, Bgk, Fp16S, Fp32,
        InPlace, Lattice, Layout, Rates,
    };
    use crate::rng::uniform;
    use std::vec::Vec;

    /// A box whose six faces have the kinds `kinds` (face `f`'s cells at coordinate 0 or the
    /// last of axis `f / 2`; an edge or corner cell takes its first face), every face with data
    /// (moving, parabolic inlets, outlet densities), a third of the fluid cells in the outlet
    /// layer.
    fn box_case(seed: u64, kinds: [CellKind; 6]) -> (LbmParams, Vec<u8>) {
        let lattice = Lattice::new(9, 7, 6);
        let mut p = LbmParams::new(lattice, Rates::from_viscosity(0.05));
        p.inlet_scale = 0.75;
        for (k, face) in p.faces.iter_mut().enumerate() {
            let r = |i: u64| uniform(seed ^ 0xface, 100 * k as u64 + i);
            face.velocity = [0.1 * r(0) - 0.05, 0.1 * r(1) - 0.05, 0.1 * r(2) - 0.05];
            face.density = 0.98 + 0.04 * r(3);
            face.parabolic = (seed + k as u64) as u32 % 8;
            face.center = [4.0 * r(4), 3.5 * r(5), 3.0 * r(6)];
            face.inv_half_width = [0.2 + r(7), 0.3 + r(8), 0.4 + r(9)];
        }
        let n = [lattice.nx, lattice.ny, lattice.nz];
        let mut flags: Vec<u8> = (0..lattice.cells())
            .map(|c| {
                let (x, y, z) = lattice.coords(c);
                let at = [x, y, z];
                for a in 0..3 {
                    if at[a] == 0 {
                        return cell_byte(kinds[2 * a], 2 * a as u8);
                    }
                    if at[a] == n[a] - 1 {
                        return cell_byte(kinds[2 * a + 1], 2 * a as u8 + 1);
                    }
                }
                if uniform(seed, c as u64) < 0.33 {
                    FLUID | SPONGE
                } else {
                    FLUID
                }
            })
            .collect();
        mark_near_boundary(&lattice, &mut flags);
        p.sponge_axis = (seed % 3) as u32;
        p.sponge_start = 1.0;
        p.sponge_inv = 0.25;
        (p, flags)
    }

    /// One step of every cell of `case`: with `faces`, face-run cells through
    /// [`stream_collide_face`], the other listed cells through [`stream_collide_listed`] and the
    /// rest through the interior and outlet-layer forms, as the GPU splits them; else every cell
    /// through [`stream_collide_cell`]. The populations and outlet velocities after it, and the
    /// number of face-run cells.
    fn step_of<S: Storage>(
        case: &(LbmParams, Vec<u8>),
        layout: Layout,
        step: u64,
        store: &impl Fn(usize, f32) -> S::Elem,
        faces: bool,
    ) -> (Vec<S::Elem>, Vec<f32>, usize) {
        let (p, flags) = (case.0, &case.1);
        let n = p.lattice.cells();
        let pops = Populations::<S>::new(p.lattice, layout, step);
        let mut f: Vec<S::Elem> = (0..pops.len())
            .map(|i| store(i % Q, 0.02 + 0.05 * uniform(91, i as u64)))
            .collect();
        let mut g = f.clone();
        let mut u: Vec<f32> = (0..3 * n).map(|i| 0.02 * uniform(5, i as u64)).collect();
        let mut runs = 0;
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
                let listed = byte & KIND_MASK == FLUID && byte & !SPONGE != FLUID && byte != GHOST;
                if !faces {
                    stream_collide_cell(&a, cell, cell);
                    continue;
                }
                if !listed {
                    if byte == FLUID | SPONGE {
                        stream_collide_sponge(&a, cell);
                    } else {
                        stream_collide_interior(&a, cell);
                    }
                    continue;
                }
                let o = p.lattice.pull_offsets(cell);
                let bytes: [u8; Q] = core::array::from_fn(|q| flags[neighbour(&o, q)]);
                match face_run(&bytes) {
                    Some(face) => {
                        runs += 1;
                        let kind = bytes[(0..Q).find(|&q| toward_face(q, face)).unwrap()];
                        stream_collide_face(&a, cell, cell, face, kind & KIND_MASK);
                    }
                    None => stream_collide_listed(&a, cell, cell),
                }
            }
        }
        (if S::IN_PLACE { f } else { g }, u, runs)
    }

    fn faces_agree<S: Storage>(store: impl Fn(usize, f32) -> S::Elem) {
        use CellKind::*;
        let cases = [
            [Inlet, Outlet, FreeSlip, FreeSlip, Wall, MovingWall],
            [Outlet, Inlet, Wall, MovingWall, FreeSlip, FreeSlip],
            [MovingWall, Wall, Inlet, Outlet, FreeSlip, Inlet],
            [FreeSlip, FreeSlip, Outlet, Inlet, MovingWall, Wall],
        ];
        for (seed, kinds) in cases.into_iter().enumerate() {
            let case = box_case(seed as u64, kinds);
            for layout in [Layout::SOA, Layout { alpha: 4 }] {
                for step in [1u64, 2] {
                    let a = step_of::<S>(&case, layout, step, &store, true);
                    let b = step_of::<S>(&case, layout, step, &store, false);
                    // Every face's plane of the 7 x 5 x 4 fluid cells minus its rim.
                    assert_eq!(
                        a.2,
                        2 * (3 * 2 + 5 * 2 + 5 * 3),
                        "case {seed}: face-run cells"
                    );
                    assert!(
                        a.0 == b.0,
                        "case {seed} {layout:?} step {step}: populations"
                    );
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&a.1), bits(&b.1), "case {seed}: outlet velocities");
                }
            }
        }
    }

    /// The face kernel's form of a face-run cell's update stores what the CPU reference's does,
    /// bit for bit: every kind on every face, pull and in place, FP32 and FP16S.
    #[test]
    fn face_update_equals_the_cell_update() {
        faces_agree::<Fp32>(|_, v| v);
        faces_agree::<InPlace<Fp32>>(|_, v| v);
        faces_agree::<Fp16S>(Fp16S::encode);
        faces_agree::<InPlace<Fp16S>>(Fp16S::encode);
    }

    #[test]
    fn runs_find_their_faces() {
        let runs = FaceRuns {
            ends: [2, 2, 5, 9, 9, 10],
            kinds: [1, 2, 3, 4, 5, 6],
        };
        let got: Vec<(u8, u8)> = (0..10).map(|i| runs.face_of_entry(i)).collect();
        assert_eq!(
            got,
            [
                (0, 1),
                (0, 1),
                (2, 3),
                (2, 3),
                (2, 3),
                (3, 4),
                (3, 4),
                (3, 4),
                (3, 4),
                (5, 6)
            ]
        );
        let w = runs.window(3, 4);
        assert_eq!(w.ends, [0, 0, 2, 4, 4, 4]);
        assert_eq!(w.face_of_entry(1), (2, 3));
        assert_eq!(w.face_of_entry(2), (3, 4));
        assert_eq!(runs.len(), 10);
    }
}
