//! Interpolated bounce-back on the cut links of fixed solids (Bouzidi, Firdaouss & Lallemand
//! 2001, the linear scheme), and the force on each solid by momentum exchange.
//!
//! A fixed solid with `boundary = "interpolated-bounce-back"` is voxelised: every node inside
//! (or on) its surface is a [`CellKind::CutSolid`](super::CellKind::CutSolid) node. A link from
//! a fluid node `x_f` to a solid node `x_s = x_f - c_q` is *cut*: the surface crosses it at the
//! fraction `q` of its length from `x_f` (`0 < q <= 1`, from the exact surface). Before each
//! step the wall-links stage writes, into the slot the fluid node pulls `f_q` from, the
//! population the wall sends back, interpolated from the post-collision populations `f*` of the
//! previous step (`q̄` the opposite of `q`, `x_f + c_q` the next node away from the wall):
//!
//! - `q < 1/2`: `f_q(x_f) = 2q f*_q̄(x_f) + (1 - 2q) f*_q̄(x_f + c_q)`;
//! - `q >= 1/2`: `f_q(x_f) = [f*_q̄(x_f) + (2q - 1) f*_q(x_f)] / (2q)`;
//!
//! and where `q < 1/2` but `x_f + c_q` is not fluid (a gap under two cells), plain bounce-back
//! `f_q(x_f) = f*_q̄(x_f)`. At `q = 1/2` both branches are halfway bounce-back, bit for bit.
//! The stream-collide step then pulls the solid node's slot as it pulls a fluid neighbour's,
//! so the boundary needs no branch in the step itself.
//!
//! The force on the solid is the momentum the cut links exchange (Ladd 1994): each link gives
//! the solid `c_q̄ [f*_q̄(x_f) + f_q(x_f)]`, the population that left toward the wall and the one
//! that came back; the torque is the wall point's arm about the solid's centre crossed with it.
//! Both are summed per solid in the immersed boundary's fixed point
//! ([`super::ib::stages::record_fixed`]), so the totals do not depend on the order of the sum.
//!
//! Which slots: with pull streaming the stage writes slot `q` of the solid node `x_f - c_q`
//! (which no other cell reads) and reads slots of fluid nodes only; in place (esoteric pull)
//! it writes the slot `x_f` pulls `f_q` from, which belongs to no fluid node's populations
//! this step. Either way the stage's writes and reads never meet, so its threads need no order.

use super::abi::FORCE_RECORD;
use super::access::{neighbour, Populations, Storage};
use super::d3q27::{opposite, velocity_f32};
use super::ib::stages::{record_fixed, record_index};
use crate::kernel::{DevSlice, DevSliceMut};
use crate::math::fma;

/// Bits of [`CutLink::code`] that hold the direction `q`.
pub const DIR_MASK: u32 = 0x1f;
/// Bit of [`CutLink::code`] set when the node `x_f + c_q` is fluid (the linear scheme's second
/// node for `q < 1/2`).
pub const SECOND_FLUID: u32 = 1 << 5;
/// First bit of the solid's index in [`CutLink::code`].
pub const SOLID_SHIFT: u32 = 8;

/// One cut link: the fluid node, the direction its population arrives along from the solid,
/// where the surface crosses it, and the wall point's arm about the solid's centre.
/// `#[repr(C)]`: the kernels read them from a buffer.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CutLink {
    /// The fluid node `x_f`.
    pub cell: u32,
    /// The direction `q` (`c_q` points from the solid node into `x_f`), [`SECOND_FLUID`], and
    /// the solid's index from [`SOLID_SHIFT`].
    pub code: u32,
    /// The wall's distance from `x_f` along `-c_q`, a fraction of the link: `0 < q <= 1`.
    pub q: f32,
    /// The wall point `x_f - q c_q` minus the solid's centre (cells): the torque's arm.
    pub arm: [f32; 3],
}

impl CutLink {
    /// A link of fluid node `cell` in direction `dir`, cut at `q`, of solid `solid`.
    pub const fn new(
        cell: u32,
        dir: usize,
        q: f32,
        second: bool,
        solid: u32,
        arm: [f32; 3],
    ) -> Self {
        CutLink {
            cell,
            code: dir as u32 | if second { SECOND_FLUID } else { 0 } | solid << SOLID_SHIFT,
            q,
            arm,
        }
    }

    /// The direction `q` the population arrives along.
    #[inline(always)]
    pub const fn dir(&self) -> usize {
        (self.code & DIR_MASK) as usize
    }

    /// Whether the node `x_f + c_q` is fluid.
    #[inline(always)]
    pub const fn second_fluid(&self) -> bool {
        self.code & SECOND_FLUID != 0
    }

    /// The solid's index.
    #[inline(always)]
    pub const fn solid(&self) -> u32 {
        self.code >> SOLID_SHIFT
    }
}

/// The population a cut link sends back into its fluid node (the linear scheme above): `q` the
/// wall fraction, `out = f*_q̄(x_f)`, `second = f*_q̄(x_f + c_q)` (read only when `q < 1/2` and
/// that node is fluid, `has_second`), `back = f*_q(x_f)`.
#[inline(always)]
pub fn bouzidi(q: f32, out: f32, second: impl FnOnce() -> f32, back: f32, has_second: bool) -> f32 {
    let two_q = 2.0 * q;
    if q < 0.5 {
        if has_second {
            fma(two_q, out, (1.0 - two_q) * second())
        } else {
            out
        }
    } else {
        fma(two_q - 1.0, back, out) / two_q
    }
}

/// `lbm_wall_links_*`: one thread per cut link writes the population its solid node sends back
/// ([`fill_link`]) and adds the link's force and torque on the solid into `record`
/// ([`FORCE_RECORD`] fixed-point words per solid, the step's slot of the force ring, zeroed
/// before the step). `f` is the copy the step reads (pull), or the one copy (in place).
#[repr(C)]
pub struct WallLinks<S: Storage> {
    /// The populations during the step the links are filled for.
    pub pops: Populations<S>,
    pub links: DevSlice<CutLink>,
    pub f: DevSliceMut<S::Elem>,
    pub record: DevSliceMut<u64>,
    /// Solids the links belong to (indices below it).
    pub solids: u32,
    pub _pad: u32,
}

super::abi::lattice_args! {
    WallLinks [S: Storage] [S];
}

/// Fills link `i` ([`WallLinks`]) and returns its force and torque on the solid (lattice
/// units: force x, y, z, then torque x, y, z).
///
/// # Safety
/// `a.f` holds [`Populations::len`] values, `i` is below the links' count, every link's cell
/// is a fluid node of the lattice; calls for different links may run concurrently (their
/// writes and reads never meet, see the module's docs).
#[inline(always)]
pub unsafe fn fill_link<S: Storage>(a: &WallLinks<S>, i: usize) -> [f32; FORCE_RECORD] {
    let link = a.links.read(i);
    let cell = link.cell as usize;
    let q = link.dir();
    let r = opposite(q);
    let pops = &a.pops;
    let src = a.f.as_const();
    let o = pops.lattice.pull_offsets(cell);
    let out = pops.load_index(src, r, pops.reflected_index(&o, q, cell));
    let back = pops.load_index(src, q, pops.own_index(q, cell));
    // `x_f + c_q` is `x_f - c_q̄`.
    let second = || pops.own(src, r, neighbour(&o, r));
    let v = bouzidi(link.q, out, second, back, link.second_fluid());
    a.f.write(pops.arriving_index(&o, q, cell), S::encode(q, v));
    // The momentum the solid takes: `c_q̄ (out + v) = -c_q (out + v)`.
    let c = velocity_f32(q);
    let m = out + v;
    let force = [-c[0] * m, -c[1] * m, -c[2] * m];
    let arm = link.arm;
    [
        force[0],
        force[1],
        force[2],
        arm[1] * force[2] - arm[2] * force[1],
        arm[2] * force[0] - arm[0] * force[2],
        arm[0] * force[1] - arm[1] * force[0],
    ]
}

/// The fixed-point words link `i`'s force adds to its solid's record: `(index, value)` pairs
/// for the [`FORCE_RECORD`] values.
#[inline(always)]
pub fn record_terms(solid: u32, values: &[f32; FORCE_RECORD]) -> [(usize, u64); FORCE_RECORD] {
    let mut out = [(0usize, 0u64); FORCE_RECORD];
    let mut c = 0;
    while c < FORCE_RECORD {
        out[c] = (record_index(solid, c), record_fixed(values[c]));
        c += 1;
    }
    out
}

/// The CPU's form of the stage: every link in order, the record summed as the kernel's atomics
/// sum it (wrapping, so in any order the same).
///
/// # Safety
/// As [`fill_link`], for every link of `a.links`; `a.record` holds [`FORCE_RECORD`] words per
/// solid.
pub unsafe fn fill_links<S: Storage>(a: &WallLinks<S>) {
    let n = a.links.len() as usize;
    let mut i = 0;
    while i < n {
        let values = fill_link(a, i);
        let solid = a.links.read(i).solid();
        for (k, v) in record_terms(solid, &values) {
            a.record.write(k, a.record.read(k).wrapping_add(v));
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_way_is_plain_bounce_back_bit_for_bit() {
        for out in [0.013f32, 0.3, 1.0 / 3.0, 7.7e-3] {
            let v = bouzidi(0.5, out, || 0.25, 0.125, true);
            assert_eq!(v.to_bits(), out.to_bits());
        }
    }

    #[test]
    fn both_branches_meet_and_fall_back() {
        // Continuous at q = 1/2 from below.
        let (out, second, back) = (0.21f32, 0.19, 0.23);
        let below = bouzidi(0.5 - 1e-6, out, || second, back, true);
        assert!((below - out).abs() < 1e-6);
        // Without a second fluid node, q < 1/2 bounces back.
        assert_eq!(bouzidi(0.2, out, || f32::NAN, back, false), out);
        // At q = 1 the wall is on the solid node: half of each.
        let v = bouzidi(1.0, out, || second, back, true);
        assert!((v - 0.5 * (out + back)).abs() < 1e-7);
        // At q -> 0 the wall is on the fluid node: the second node's population returns.
        let v = bouzidi(1e-7, out, || second, back, true);
        assert!((v - second).abs() < 1e-6);
    }

    #[test]
    fn links_pack_their_code() {
        let l = CutLink::new(123, 17, 0.3, true, 5, [1.0, 2.0, 3.0]);
        assert_eq!((l.dir(), l.second_fluid(), l.solid()), (17, true, 5));
        let l = CutLink::new(7, 26, 1.0, false, 0, [0.0; 3]);
        assert_eq!((l.dir(), l.second_fluid(), l.solid()), (26, false, 0));
    }
}
