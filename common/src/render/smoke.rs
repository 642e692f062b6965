//! Smoke: a passive scalar carried by the lattice velocity, injected by the scene's sources,
//! advected by BFECC (back and forth error compensation and correction: Kim, Liu, Llamas,
//! Rossignac, "FlowFixer: using BFECC for fluid simulation", Eurographics Workshop on Natural
//! Phenomena 2005) on a semi-Lagrangian step, `SL(q)(x) = q(x - u(x) dt)` (trilinear):
//!
//! 1. `smoke_forward`:  `s^ = SL(s)`;
//! 2. `smoke_backward`: `e = s + (s - SL^-1(s^)) / 2`, `SL^-1` tracing along `+u dt`: half the
//!    round trip's error taken out in advance;
//! 3. `smoke_correct`:  `s' = SL(e)`, clamped to the range of the eight cells of `s` that the
//!    semi-Lagrangian step interpolates (Selle, Fedkiw, Kim, Liu, Osher, J. Sci. Comput. 35,
//!    2008): no new extrema, so the scheme never oscillates and never goes negative; then decay
//!    and the sources (`max` with each).
//!
//! Second order where the flow is smooth: in a uniform flow a Gaussian blob keeps its width to
//! a fraction of a cell over a thousand steps (`host/tests/fluid_view.rs`), where the plain
//! semi-Lagrangian step would spread it by several cells. (MacCormack's scheme, the same idea in
//! two passes, flattened the blob's peak under the same limiter: its reverts to the
//! semi-Lagrangian value there spread it by 0.7 cells and held it back by half a cell.)
//!
//! Velocities are the fields' (`FluidBackend::fields`, lattice units, cells per step); the
//! smoke advects every `SmokeParams::dt` steps with that time step (semi-Lagrangian steps are
//! stable for any Courant number). Non-fluid cells hold no smoke. Plain `f32` operations in a
//! fixed order: the CPU twin and the kernels give the same bits.

// Index loops over the three axes read like the formulas.
#![allow(clippy::needless_range_loop)]

use super::fluid::Corners;
use crate::kernel::DevSlice;
use crate::lbm::boundary::KIND_MASK;
use crate::lbm::Lattice;

/// A source's shape.
pub const SOURCE_POINT: u32 = 0;
pub const SOURCE_DISC: u32 = 1;
pub const SOURCE_INLET: u32 = 2;

/// Most sources a scene may name.
pub const MAX_SOURCES: usize = 16;

/// Where smoke is injected, lattice units. Each advection sets every cell inside to at least
/// `amount`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SmokeSource {
    /// [`SOURCE_POINT`] (a ball of `radius` around `centre`), [`SOURCE_DISC`] (a disc of
    /// `radius` around `centre`, across `normal`, one cell thick) or [`SOURCE_INLET`] (the first
    /// fluid layer `centre[axis]` along `axis`; `spacing > 0`: only dots of `radius` on a grid
    /// of that pitch, which draw streaklines).
    pub kind: u32,
    pub axis: u32,
    pub centre: [f32; 3],
    pub normal: [f32; 3],
    pub radius: f32,
    pub spacing: f32,
    pub amount: f32,
    pub _pad: u32,
}

impl SmokeSource {
    /// What the source puts into the cell at `(x, y, z)` (0 outside it).
    #[inline(always)]
    pub fn at(&self, x: u32, y: u32, z: u32) -> f32 {
        let p = [x as f32, y as f32, z as f32];
        let d = [
            p[0] - self.centre[0],
            p[1] - self.centre[1],
            p[2] - self.centre[2],
        ];
        let r2 = self.radius * self.radius;
        let inside = match self.kind {
            SOURCE_POINT => d[0] * d[0] + d[1] * d[1] + d[2] * d[2] <= r2,
            SOURCE_DISC => {
                let along = d[0] * self.normal[0] + d[1] * self.normal[1] + d[2] * self.normal[2];
                let across = d[0] * d[0] + d[1] * d[1] + d[2] * d[2] - along * along;
                (-0.5..=0.5).contains(&along) && across <= r2
            }
            _ => {
                let a = self.axis as usize;
                if p[a] != self.centre[a] {
                    false
                } else if self.spacing <= 0.0 {
                    true
                } else {
                    // Distance to the nearest dot of the grid along the two other axes.
                    let mut dist2 = 0.0f32;
                    for b in 0..3 {
                        if b == a {
                            continue;
                        }
                        let rel = d[b] / self.spacing;
                        let k = crate::math::floor_i32(rel + 0.5) as f32;
                        let off = (rel - k) * self.spacing;
                        dist2 += off * off;
                    }
                    dist2 <= r2
                }
            }
        };
        if inside {
            self.amount
        } else {
            0.0
        }
    }
}

/// What an advection needs besides its buffers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SmokeParams {
    pub lattice: Lattice,
    /// Bit `a`: axis `a` wraps (the scene's periodic faces); other axes clamp.
    pub periodic: u32,
    /// Time step of one advection, lattice steps (the steps between two advections).
    pub dt: f32,
    /// Fraction of the smoke kept per advection (1: none fades).
    pub keep: f32,
    /// Number of sources in the sources' buffer.
    pub sources: u32,
}

/// The velocity of `cell` from the fields (`[rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]`).
///
/// # Safety
/// `fields` holds `4 n` values, `cell < n`.
#[inline(always)]
unsafe fn velocity(fields: &DevSlice<f32>, n: usize, cell: usize) -> [f32; 3] {
    [
        fields.read(n + cell),
        fields.read(2 * n + cell),
        fields.read(3 * n + cell),
    ]
}

/// The corners `cell`'s value comes from when it is traced along `sign * u dt` (`-1`: where it
/// comes from, `+1`: where it goes).
///
/// # Safety
/// As [`velocity`].
#[inline(always)]
unsafe fn traced(p: &SmokeParams, fields: &DevSlice<f32>, cell: usize, sign: f32) -> Corners {
    let l = p.lattice;
    let n = l.cells();
    let (x, y, z) = l.coords(cell);
    let u = velocity(fields, n, cell);
    let s = sign * p.dt;
    let at = [
        x as f32 + s * u[0],
        y as f32 + s * u[1],
        z as f32 + s * u[2],
    ];
    Corners::new(&l, at, p.periodic)
}

/// Stage `smoke_forward` for one cell: the semi-Lagrangian value `s^` (0 in non-fluid cells).
///
/// # Safety
/// `fields` holds `4 n` values, `flags` and `s` `n`; `cell < n`.
#[inline(always)]
pub unsafe fn forward(
    p: &SmokeParams,
    fields: &DevSlice<f32>,
    flags: &DevSlice<u8>,
    s: &DevSlice<f32>,
    cell: usize,
) -> f32 {
    if flags.read(cell) & KIND_MASK != 0 {
        return 0.0;
    }
    let c = traced(p, fields, cell, -1.0);
    c.interpolate(&p.lattice, |k| s.read(k))
}

/// Stage `smoke_backward` for one cell: `e = s + (s - SL^-1(s^)) / 2` (0 in non-fluid cells).
///
/// # Safety
/// `fields` holds `4 n` values, `flags`, `s` and `s_hat` `n`; `cell < n`.
#[inline(always)]
pub unsafe fn backward(
    p: &SmokeParams,
    fields: &DevSlice<f32>,
    flags: &DevSlice<u8>,
    s: &DevSlice<f32>,
    s_hat: &DevSlice<f32>,
    cell: usize,
) -> f32 {
    if flags.read(cell) & KIND_MASK != 0 {
        return 0.0;
    }
    let back = traced(p, fields, cell, 1.0).interpolate(&p.lattice, |k| s_hat.read(k));
    let v = s.read(cell);
    v + 0.5 * (v - back)
}

/// Stage `smoke_correct` for one cell: the semi-Lagrangian step of `e`, clamped to the range of
/// the cells of `s` it comes from, then decay and the sources.
///
/// # Safety
/// `fields` holds `4 n` values, `flags`, `s` and `e` `n`, `sources` at least `p.sources`;
/// `cell < n`.
#[inline(always)]
pub unsafe fn correct(
    p: &SmokeParams,
    fields: &DevSlice<f32>,
    flags: &DevSlice<u8>,
    sources: &DevSlice<SmokeSource>,
    s: &DevSlice<f32>,
    e: &DevSlice<f32>,
    cell: usize,
) -> f32 {
    if flags.read(cell) & KIND_MASK != 0 {
        return 0.0;
    }
    let l = p.lattice;
    let from = traced(p, fields, cell, -1.0);
    let mut v = from.interpolate(&l, |k| e.read(k));
    // The limiter: the range of the cells of `s` the step interpolates.
    let (mut lo, mut hi) = (f32::MAX, -f32::MAX);
    let mut k = 0;
    while k < 8 {
        let c = s.read(from.cell(&l, k));
        if c < lo {
            lo = c;
        }
        if c > hi {
            hi = c;
        }
        k += 1;
    }
    if v < lo {
        v = lo;
    }
    if v > hi {
        v = hi;
    }
    v *= p.keep;
    let (x, y, z) = l.coords(cell);
    let mut i = 0;
    while i < p.sources as usize {
        let add = sources.read(i).at(x, y, z);
        if add > v {
            v = add;
        }
        i += 1;
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_cover_their_shapes() {
        let point = SmokeSource {
            kind: SOURCE_POINT,
            centre: [5.0, 5.0, 5.0],
            radius: 1.5,
            amount: 1.0,
            ..Default::default()
        };
        assert_eq!(point.at(5, 6, 6), 1.0);
        assert_eq!(point.at(5, 7, 5), 0.0);
        let disc = SmokeSource {
            kind: SOURCE_DISC,
            centre: [5.0, 5.0, 5.0],
            normal: [1.0, 0.0, 0.0],
            radius: 3.0,
            amount: 0.5,
            ..Default::default()
        };
        assert_eq!(disc.at(5, 8, 5), 0.5);
        assert_eq!(disc.at(6, 5, 5), 0.0);
        let inlet = SmokeSource {
            kind: SOURCE_INLET,
            axis: 0,
            centre: [1.0, 0.0, 0.0],
            radius: 0.5,
            spacing: 4.0,
            amount: 1.0,
            ..Default::default()
        };
        assert_eq!(inlet.at(1, 8, 4), 1.0);
        assert_eq!(inlet.at(1, 2, 4), 0.0);
        assert_eq!(inlet.at(2, 8, 4), 0.0);
    }
}
