//! Velocity gradient, vorticity and Q-criterion of one cell, from the lattice-unit velocities of
//! its neighbours: the per-cell math of the `.vti` output's derived arrays
//! (`host/src/fluid/derived.rs`), of the viewer's CPU rasteriser (`host/src/raster/fluid.rs`)
//! and of its `fluid_derived` kernel, written once.
//!
//! `Q = (|Omega|^2 - |S|^2) / 2` (Hunt, Wray, Moin, CTR-S88, 1988) with `S` and `Omega` the
//! symmetric and antisymmetric parts of `G_ij = du_i / dx_j`. The differences:
//!
//! - central, `(u[i+1] - u[i-1]) / 2`, where both neighbours along the axis are fluid;
//! - one-sided where one of them is missing (past a non-periodic face) or not fluid: second
//!   order `(-3 u[i] + 4 u[i+1] - u[i+2]) / 2` when the next cell beyond is fluid too, first order
//!   `u[i+1] - u[i]` otherwise (the velocities stored in wall cells are never used);
//! - zero where neither neighbour is fluid.
//!
//! Units are the lattice's: gradients in 1/step, Q in 1/step^2. Plain `f32` arithmetic, no
//! fused operations: the CPU and the GPU give the same bits.

// Index loops over the three axes read like the formulas (g[i][j], axis by axis).
#![allow(clippy::needless_range_loop)]

use super::boundary::KIND_MASK;
use super::Lattice;

/// Every axis wraps, as the lattice's index math does: non-periodic boundaries are layers of
/// non-fluid cells inside the grid, so differences with these axes are what the solver computes.
pub const LATTICE_PERIODIC: [bool; 3] = [true; 3];

/// A velocity gradient `g[i][j] = du_i / dx_j`, lattice units.
pub type Gradient = [[f32; 3]; 3];

/// Whether a cell byte is fluid (its kind bits are zero: flags above them do not count).
#[inline(always)]
pub fn is_fluid_byte(b: u8) -> bool {
    b & KIND_MASK == 0
}

/// The gradient of fluid cell `cell` (`None` for a non-fluid one). `periodic[a]` says whether
/// axis `a` wraps; `flag(c)` is cell `c`'s byte, `u(c)` its velocity.
///
/// Each axis is its own call of [`axis_derivative`] with the cell's coordinate and the axis'
/// stride in cell numbers, so the kernels keep everything in registers (no arrays indexed by a
/// loop's axis, which would live in local memory).
#[inline(always)]
pub fn velocity_gradient(
    l: &Lattice,
    periodic: [bool; 3],
    cell: usize,
    flag: impl Fn(usize) -> u8,
    u: impl Fn(usize) -> [f32; 3],
) -> Option<Gradient> {
    if !is_fluid_byte(flag(cell)) {
        return None;
    }
    let (x, y, z) = l.coords(cell);
    let uc = u(cell);
    let plane = l.nx as usize * l.ny as usize;
    let dx = axis_derivative(l.nx, x, 1, periodic[0], cell, uc, &flag, &u);
    let dy = axis_derivative(l.ny, y, l.nx as usize, periodic[1], cell, uc, &flag, &u);
    let dz = axis_derivative(l.nz, z, plane, periodic[2], cell, uc, &flag, &u);
    Some([
        [dx[0], dy[0], dz[0]],
        [dx[1], dy[1], dz[1]],
        [dx[2], dy[2], dz[2]],
    ])
}

/// `du / dx_a` at `cell`, whose coordinate along axis `a` is `i` (of `n`), cells `stride`
/// apart along it: central, one-sided or zero as the module says.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn axis_derivative(
    n: u32,
    i: u32,
    stride: usize,
    periodic: bool,
    cell: usize,
    uc: [f32; 3],
    flag: &impl Fn(usize) -> u8,
    u: &impl Fn(usize) -> [f32; 3],
) -> [f32; 3] {
    // The fluid cell `k` steps along the axis (|k| <= 2), if it exists (wrapping when periodic).
    let at = |k: i32| -> Option<usize> {
        let mut j = i as i32 + k;
        if j < 0 || j >= n as i32 {
            if !periodic {
                return None;
            }
            j = j.rem_euclid(n as i32);
        }
        let idx = cell - i as usize * stride + j as usize * stride;
        if is_fluid_byte(flag(idx)) {
            Some(idx)
        } else {
            None
        }
    };
    match (at(1), at(-1)) {
        (Some(p), Some(m)) => {
            let (up, um) = (u(p), u(m));
            [
                0.5 * (up[0] - um[0]),
                0.5 * (up[1] - um[1]),
                0.5 * (up[2] - um[2]),
            ]
        }
        (Some(p), None) => one_sided(uc, u(p), at(2).map(u), 1.0),
        (None, Some(m)) => one_sided(uc, u(m), at(-2).map(u), -1.0),
        (None, None) => [0.0; 3],
    }
}

/// One-sided derivative towards `sign` (+1 or -1) from `u0`, its neighbour `u1` and, when fluid,
/// the next one `u2`: second order with `u2`, first order without.
#[inline(always)]
fn one_sided(u0: [f32; 3], u1: [f32; 3], u2: Option<[f32; 3]>, sign: f32) -> [f32; 3] {
    let mut d = [0.0f32; 3];
    for i in 0..3 {
        d[i] = match u2 {
            Some(u2) => sign * (0.5 * ((-3.0 * u0[i] + 4.0 * u1[i]) - u2[i])),
            None => sign * (u1[i] - u0[i]),
        };
    }
    d
}

/// `curl u` of a gradient.
#[inline(always)]
pub fn curl(g: &Gradient) -> [f32; 3] {
    [g[2][1] - g[1][2], g[0][2] - g[2][0], g[1][0] - g[0][1]]
}

/// `Q = (|Omega|^2 - |S|^2) / 2`, `S = (G + G^T) / 2`, `Omega = (G - G^T) / 2`.
#[inline(always)]
pub fn q_criterion(g: &Gradient) -> f32 {
    let (mut rot, mut strain) = (0.0f32, 0.0f32);
    for i in 0..3 {
        for j in 0..3 {
            let (s, o) = (0.5 * (g[i][j] + g[j][i]), 0.5 * (g[i][j] - g[j][i]));
            strain += s * s;
            rot += o * o;
        }
    }
    0.5 * (rot - strain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solid_body_rotation() {
        // u = w x r about z: curl_z = 2 w, Q = w^2; exact for a linear field, also one-sided.
        let l = Lattice::new(6, 5, 3);
        let w = 0.01f32;
        let u = |c: usize| {
            let (x, y, _) = l.coords(c);
            [-w * (y as f32 - 2.0), w * (x as f32 - 3.0), 0.0]
        };
        for c in 0..l.cells() {
            let g = velocity_gradient(&l, [false; 3], c, |_| 0, u).unwrap();
            assert!((curl(&g)[2] - 2.0 * w).abs() < 1e-7);
            assert!((q_criterion(&g) - w * w).abs() < 1e-9);
        }
        assert!(velocity_gradient(&l, [false; 3], 0, |_| 1, u).is_none());
    }

    /// The gradient as first written (coordinates in an array indexed by the axis), kept as the
    /// reference the register-friendly form must match bit for bit.
    fn reference(
        l: &Lattice,
        periodic: [bool; 3],
        cell: usize,
        flag: impl Fn(usize) -> u8,
        u: impl Fn(usize) -> [f32; 3],
    ) -> Option<Gradient> {
        if !is_fluid_byte(flag(cell)) {
            return None;
        }
        let (x, y, z) = l.coords(cell);
        let coord = [x as i64, y as i64, z as i64];
        let dims = [l.nx as i64, l.ny as i64, l.nz as i64];
        let at = |axis: usize, k: i64| -> Option<usize> {
            let mut c = coord;
            c[axis] += k;
            if c[axis] < 0 || c[axis] >= dims[axis] {
                if !periodic[axis] {
                    return None;
                }
                c[axis] = c[axis].rem_euclid(dims[axis]);
            }
            let idx = l.index(c[0] as u32, c[1] as u32, c[2] as u32);
            is_fluid_byte(flag(idx)).then_some(idx)
        };
        let uc = u(cell);
        let mut g = [[0.0f32; 3]; 3];
        for axis in 0..3 {
            let d: [f32; 3] = match (at(axis, 1), at(axis, -1)) {
                (Some(p), Some(m)) => {
                    let (up, um) = (u(p), u(m));
                    [
                        0.5 * (up[0] - um[0]),
                        0.5 * (up[1] - um[1]),
                        0.5 * (up[2] - um[2]),
                    ]
                }
                (Some(p), None) => one_sided(uc, u(p), at(axis, 2).map(&u), 1.0),
                (None, Some(m)) => one_sided(uc, u(m), at(axis, -2).map(&u), -1.0),
                (None, None) => [0.0; 3],
            };
            for i in 0..3 {
                g[i][axis] = d[i];
            }
        }
        Some(g)
    }

    #[test]
    fn the_same_bits_as_the_reference() {
        // Pseudo-random velocities and walls on lattices down to one cell thick, every
        // combination of periodic axes.
        for (nx, ny, nz) in [(7, 5, 4), (3, 1, 6), (1, 2, 2), (5, 4, 3)] {
            let l = Lattice::new(nx, ny, nz);
            let hash = |c: usize, k: u32| {
                let h = (c as u32 ^ k.wrapping_mul(0x9e37_79b9)).wrapping_mul(0x85eb_ca6b);
                (h ^ (h >> 13)).wrapping_mul(0xc2b2_ae35) ^ (h >> 16)
            };
            let u = |c: usize| [1, 2, 3].map(|k| (hash(c, k) % 2001) as f32 * 1e-4 - 0.1);
            let flag = |c: usize| if hash(c, 7) % 5 == 0 { 1 } else { 0 };
            for bits in 0..8u32 {
                let periodic = [bits & 1 != 0, bits & 2 != 0, bits & 4 != 0];
                for c in 0..l.cells() {
                    let want = reference(&l, periodic, c, flag, u);
                    let got = velocity_gradient(&l, periodic, c, flag, u);
                    let bits_of = |g: Option<Gradient>| g.map(|g| g.map(|r| r.map(f32::to_bits)));
                    assert_eq!(
                        bits_of(got),
                        bits_of(want),
                        "cell {c} periodic {periodic:?}"
                    );
                }
            }
        }
    }
}
