//! Pushes: impulses a layer above the fluid hands it (the two-way coupled flock's boids), each a
//! point in the lattice and a momentum in the band's fixed point, spread with the immersed
//! boundary's kernel into the band's force of the next step, where the stream-collide step adds
//! it as Guo forcing. The fluid does not know what pushes.
//!
//! Two stages, per push, in the immersed boundary's step:
//!
//! 1. [`mark`] (after the samples' `ib_mark`): the bricks of the push's fluid stencil nodes join
//!    the band (without marking the nodes reached: they pull no populations);
//! 2. [`spread`] (after the samples' last pass): the push's total, spread over its stencil
//!    renormalised over the fluid nodes, into the band's `pass` sums so that the nodes' terms
//!    add up to the total exactly ([`spread_exact`]).
//!
//! The stream-collide step reads the sums as part of the band's force
//! ([`super::band::BandRef::force`]: the samples' force plus the sums); `ib_clear` zeroes them
//! at the start of the next step.
//!
//! Integer sums: the band cells' forces, and so the fluid's momentum, do not depend on the
//! order pushes add in; the momentum the fluid gains in the step is the pushes' totals exactly
//! (up to the float rounding of the force and of the collision). A push with no fluid node in
//! its stencil adds nothing.

use super::band::{claim_brick_at, from_fixed, pass_index, to_fixed, BandMut};
use super::stencil::{Domain, Stencil};
use crate::kernel::DevSlice;
use crate::lbm::boundary::{FLUID, KIND_MASK};
use crate::math::Vec3;

/// The pushes of a step: per push a position (lattice coordinates) and three fixed-point
/// totals (`total[3 i + c]`, [`super::band::to_fixed`] of the momentum in lattice units,
/// wrapping `i64`). `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Pushes {
    pub pos: DevSlice<Vec3>,
    pub total: DevSlice<u64>,
}

impl Pushes {
    /// No pushes.
    pub const NONE: Pushes = Pushes {
        pos: DevSlice::empty(),
        total: DevSlice::empty(),
    };

    /// Pushes in the step.
    #[inline(always)]
    pub const fn count(&self) -> usize {
        self.pos.len() as usize
    }
}

/// `push_mark`: one thread per push.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PushPoints {
    pub domain: Domain,
    pub flags: DevSlice<u8>,
    pub pushes: Pushes,
    pub band: BandMut,
}

/// `push_spread`: one thread per push, the same views as [`PushPoints`].
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PushSpread {
    pub points: PushPoints,
}

/// The stencil of push `i`, renormalised over the fluid nodes (`None`: no fluid node near).
///
/// # Safety
/// `i < pushes.count()`; `flags` holds one byte per cell of the domain's lattice.
#[inline(always)]
unsafe fn stencil_of(a: &PushPoints, i: usize) -> Option<Stencil> {
    let mut stencil = Stencil::new(&a.domain, a.pushes.pos.read(i).to_array());
    let flags = a.flags;
    stencil.renormalise(|c| flags.read(c) & KIND_MASK == FLUID)?;
    Some(stencil)
}

/// Stage `push_mark`, push `i`: the bricks of its fluid stencil nodes join the band.
///
/// # Safety
/// As [`stencil_of`]; the band's table and counter as for [`claim_brick_at`].
#[inline(always)]
pub unsafe fn mark(a: &PushPoints, i: usize) {
    let Some(stencil) = stencil_of(a, i) else {
        return;
    };
    unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] => {
        if stencil.is_present(k) {
            claim_brick_at(&a.band, stencil.node(k));
        }
    });
}

/// Stage `push_spread`, push `i`: `add(index, term)` for each of its nodes' three fixed-point
/// terms into the band's `pass` sums (the caller adds: plainly in order on the CPU, with
/// atomics on the GPU). Nodes whose brick the pool could not hold are skipped (the step then
/// fails on the band's overflow flag).
///
/// # Safety
/// As [`mark`], after it in the same step.
#[inline(always)]
pub unsafe fn spread(a: &PushPoints, i: usize, mut add: impl FnMut(usize, u64)) {
    let Some(stencil) = stencil_of(a, i) else {
        return;
    };
    let total = [
        a.pushes.total.read(3 * i),
        a.pushes.total.read(3 * i + 1),
        a.pushes.total.read(3 * i + 2),
    ];
    let band = &a.band;
    spread_exact(&stencil, total, |k, terms| {
        if let Some((s, local)) = band.slot_at(stencil.node(k)) {
            for (c, &t) in terms.iter().enumerate() {
                add(pass_index(s, c, local), t);
            }
        }
    });
}

/// Spreads a fixed-point `total` over `stencil` (its weights summing to 1): `add(k, terms)` for
/// each present node `k`, the terms `to_fixed(w_k J)` for every node but the last present one,
/// which takes what is left, so that the terms sum to `total` exactly (wrapping). An empty
/// stencil adds nothing.
#[inline(always)]
// The unrolled loop's last copy updates `left` after its last use.
#[allow(unused_assignments)]
pub fn spread_exact(stencil: &Stencil, total: [u64; 3], mut add: impl FnMut(usize, [u64; 3])) {
    let j = total.map(from_fixed);
    let mut left = total;
    // Node by node (unrolled: the stencil stays in registers on the GPU); the last present
    // node is the one with no present node above it.
    unroll!(k in [0, 1, 2, 3, 4, 5, 6, 7] => {
        if stencil.is_present(k) {
            if stencil.present_mask() >> k >> 1 == 0 {
                add(k, left);
            } else {
                let w = stencil.weight(k);
                let t = [to_fixed(w * j[0]), to_fixed(w * j[1]), to_fixed(w * j[2])];
                left = [
                    left[0].wrapping_sub(t[0]),
                    left[1].wrapping_sub(t[1]),
                    left[2].wrapping_sub(t[2]),
                ];
                add(k, t);
            }
        }
    });
}
