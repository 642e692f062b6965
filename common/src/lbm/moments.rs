//! Moments: macroscopic density and velocity, and the transform between populations and raw or
//! central moments of D3Q27.
//!
//! The transform is the "chimera" transform of Geier et al., "The cumulant lattice Boltzmann
//! equation in three dimensions: theory and validation", Comput. Math. Appl. 70 (2015), App. J:
//! three one-dimensional passes, one per axis, each turning the triplet of populations with
//! velocity component -1, 0, +1 into the zeroth, first and second moment about `u` along that
//! axis. With `u = 0` it gives raw moments ([`to_raw_moments`], which drops the terms that vanish
//! there). Moment `(a, b, c)` (orders along x, y, z) lands at index
//! [`moment_index`]`(a, b, c) = 9 c + 3 b + a`, the same slot as population
//! `(cx, cy, cz) = (a - 1, b - 1, c - 1)`. A multiplication that feeds an addition is one
//! [`fma`] (rounded once, the same on CPU and GPU).

use super::d3q27::{Q, REST};
use crate::math::fma;

/// Slot of the moment with orders `a` (x), `b` (y), `c` (z), each 0, 1 or 2.
#[inline(always)]
pub const fn moment_index(a: usize, b: usize, c: usize) -> usize {
    9 * c + 3 * b + a
}

/// Order `a + b + c` of the moment in slot `k`.
#[inline(always)]
pub const fn order(k: usize) -> usize {
    k % 3 + (k / 3) % 3 + k / 9
}

/// The sum of row `r` (`= 3 (cz + 1) + (cy + 1)`) along x, `[f-, f0, f+]` the populations
/// `(-1, 0, +1)` of one `(cy, cz)`, as `(f- + f0) + f+`; the middle row (`cy = cz = 0`) without
/// the rest population `f0`.
#[inline(always)]
pub(crate) fn row_sum(r: usize, row: [f32; 3]) -> f32 {
    if 3 * r + 1 == REST {
        row[0] + row[2]
    } else {
        (row[0] + row[1]) + row[2]
    }
}

/// The running sum of the moving populations after row `r` ([`row_sum`]) joins it (`sum` is
/// ignored for the first row): the order [`sum_moving`] and [`density_momentum`] add them in.
#[inline(always)]
pub(crate) fn add_row(sum: f32, r: usize, row: [f32; 3]) -> f32 {
    if r == 0 {
        row_sum(r, row)
    } else {
        sum + row_sum(r, row)
    }
}

/// The sum of the 26 populations other than the rest one, in the order [`density_momentum`] adds
/// them before adding the rest population last. So a set whose rest population is `rho` minus
/// this sum ([`super::equilibrium::equilibria`]) has density exactly `rho`: the sum is within a
/// factor 2 of `rho` (about `19/27 rho`), so `rho - sum` is exact (Sterbenz) and so is adding it
/// back.
#[inline(always)]
pub fn sum_moving(f: &[f32; Q]) -> f32 {
    let mut sum = 0.0f32;
    for_9!(r => {
        sum = add_row(sum, r, [f[3 * r], f[3 * r + 1], f[3 * r + 2]]);
    });
    sum
}

/// Density `rho = sum f` and momentum `j = sum c f` of 27 populations.
///
/// From the rows along x ([`row_sum`]): `rho` is the sum of the rows (the rest population last,
/// as in [`sum_moving`]); `jy` (`jz`) sums the differences of the rows at `cy = +1` and `-1`
/// (`cz = +1` and `-1`) of equal `cz` (`cy`); `jx` is minus the sum of the rows' `f- - f+`. 53
/// additions and no multiplications (population by population, `c f` took 108 additions and the
/// products by 0). Each component is a sum of differences of mirror-image terms, so a state
/// symmetric under a mirror has exactly zero momentum across it (summed one by one, its
/// rounding would leave a residue, a spurious normal velocity that walls then amplify).
///
/// A row is summed as `(f- + f0) + f+` and differenced as `f- - f+`, not in the forms of the
/// moment transforms' first pass (`f+ + f-`, `f+ - f-`): LLVM would share those and compute that
/// pass before the forcing branch, where it stays live beside the populations (measured on the
/// kernels: ACM-MRT 79 to 88 registers instead of 72, RM-MRT 63 to 72 instead of 56).
#[inline(always)]
pub fn density_momentum(f: &[f32; Q]) -> (f32, [f32; 3]) {
    // Row sums, [cz + 1][cy + 1].
    let mut s = [[0.0f32; 3]; 3];
    let mut rho = 0.0f32;
    let mut minus_jx = 0.0f32;
    for_9!(r => {
        let row = [f[3 * r], f[3 * r + 1], f[3 * r + 2]];
        s[r / 3][r % 3] = row_sum(r, row);
        rho = add_row(rho, r, row);
        let d = row[0] - row[2];
        minus_jx = if r == 0 { d } else { minus_jx + d };
    });
    let jy = ((s[0][2] - s[0][0]) + (s[1][2] - s[1][0])) + (s[2][2] - s[2][0]);
    let jz = ((s[2][0] - s[0][0]) + (s[2][1] - s[0][1])) + (s[2][2] - s[0][2]);
    (rho + f[REST], [-minus_jx, jy, jz])
}

/// Fluid velocity with the half-force correction (Guo et al. 2002; Krüger et al. 2017, Eq. 6.9):
/// `u = (j + F / 2) / rho`, `F` the body force density in lattice units: one division (`1 / rho`)
/// and three multiplications by it (`j + F / 2` is one `fma`, as exact as the addition since
/// `F / 2` is).
#[inline(always)]
pub fn velocity(rho: f32, j: [f32; 3], force: [f32; 3]) -> [f32; 3] {
    let inv = 1.0 / rho;
    [
        fma(0.5, force[0], j[0]) * inv,
        fma(0.5, force[1], j[1]) * inv,
        fma(0.5, force[2], j[2]) * inv,
    ]
}

/// One forward triplet: populations at `i, i + s, i + 2s` (velocity -1, 0, +1) become the
/// moments of order 0, 1, 2 about `u`: `k0 = f- + f0 + f+`, `k1 = (f+ - f-) - u k0`,
/// `k2 = (f+ + f-) - 2 u (f+ - f-) + u^2 k0`. `a` holds the axis' `[-u, -2u, u^2]`.
#[inline(always)]
fn forward(m: &mut [f32; Q], i: usize, s: usize, a: [f32; 3]) {
    let (fm, f0, fp) = (m[i], m[i + s], m[i + 2 * s]);
    let sum = fp + fm;
    let d = fp - fm;
    let k0 = sum + f0;
    m[i] = k0;
    m[i + s] = fma(a[0], k0, d);
    m[i + 2 * s] = fma(a[2], k0, fma(a[1], d, sum));
}

/// [`forward`] about `u = 0` (raw moments): `k0 = f- + f0 + f+`, `k1 = f+ - f-`, `k2 = f+ + f-`.
#[inline(always)]
fn forward_raw(m: &mut [f32; Q], i: usize, s: usize) {
    let (fm, f0, fp) = (m[i], m[i + s], m[i + 2 * s]);
    let sum = fp + fm;
    m[i] = sum + f0;
    m[i + s] = fp - fm;
    m[i + 2 * s] = sum;
}

/// The inverse of [`forward`]: `f- = ((u^2 - u) k0 + (2u - 1) k1 + k2) / 2`,
/// `f+ = ((u^2 + u) k0 + (2u + 1) k1 + k2) / 2` and `f0 = k0 - f- - f+` (which is
/// `(1 - u^2) k0 - 2u k1 - k2`, and keeps the triplet's sum `k0` up to one rounding). `b` holds
/// the axis' `[(u^2 - u) / 2, u - 1/2, (u^2 + u) / 2, u + 1/2]`.
#[inline(always)]
fn backward(m: &mut [f32; Q], i: usize, s: usize, b: [f32; 4]) {
    let (k0, k1, k2) = (m[i], m[i + s], m[i + 2 * s]);
    let h2 = 0.5 * k2;
    let fm = fma(b[0], k0, fma(b[1], k1, h2));
    let fp = fma(b[2], k0, fma(b[3], k1, h2));
    m[i] = fm;
    m[i + s] = k0 - (fm + fp);
    m[i + 2 * s] = fp;
}

/// The inverse of [`forward_raw`]: `f- = (k2 - k1) / 2`, `f+ = (k2 + k1) / 2`, `f0 = k0 - k2`.
#[inline(always)]
fn backward_raw(m: &mut [f32; Q], i: usize, s: usize) {
    let (k0, k1, k2) = (m[i], m[i + s], m[i + 2 * s]);
    let h2 = 0.5 * k2;
    m[i] = fma(-0.5, k1, h2);
    m[i + s] = k0 - k2;
    m[i + 2 * s] = fma(0.5, k1, h2);
}

/// The per-axis factors of [`forward`].
#[inline(always)]
fn forward_factors(u: f32) -> [f32; 3] {
    [-u, -2.0 * u, u * u]
}

/// The per-axis factors of [`backward`] (`0.5 x` and `u -+ 0.5` are exact, so these are the
/// halved factors rounded once each).
#[inline(always)]
fn backward_factors(u: f32) -> [f32; 4] {
    let uu = u * u;
    [0.5 * (uu - u), u - 0.5, 0.5 * (uu + u), u + 0.5]
}

/// Populations to central moments about `u`, in place.
#[inline(always)]
pub fn to_moments(m: &mut [f32; Q], u: [f32; 3]) {
    let (ax, ay, az) = (
        forward_factors(u[0]),
        forward_factors(u[1]),
        forward_factors(u[2]),
    );
    for_9!(k => {
        forward(m, 3 * k, 1, ax); // x: triplets (iy, iz) at 9 iz + 3 iy
    });
    for_9!(k => {
        forward(m, 9 * (k / 3) + k % 3, 3, ay); // y: triplets (ix, iz)
    });
    for_9!(k => {
        forward(m, k, 9, az); // z: triplets (ix, iy)
    });
}

/// Central moments about `u` back to populations, in place: the inverse of [`to_moments`].
#[inline(always)]
pub fn from_moments(m: &mut [f32; Q], u: [f32; 3]) {
    let (bx, by, bz) = (
        backward_factors(u[0]),
        backward_factors(u[1]),
        backward_factors(u[2]),
    );
    for_9!(k => {
        backward(m, k, 9, bz);
    });
    for_9!(k => {
        backward(m, 9 * (k / 3) + k % 3, 3, by);
    });
    for_9!(k => {
        backward(m, 3 * k, 1, bx);
    });
}

/// Populations to raw moments (about `u = 0`), in place: [`to_moments`] without the terms
/// that vanish at `u = 0`.
#[inline(always)]
pub fn to_raw_moments(m: &mut [f32; Q]) {
    for_9!(k => {
        forward_raw(m, 3 * k, 1);
    });
    for_9!(k => {
        forward_raw(m, 9 * (k / 3) + k % 3, 3);
    });
    for_9!(k => {
        forward_raw(m, k, 9);
    });
}

/// Raw moments back to populations, in place: the inverse of [`to_raw_moments`].
#[inline(always)]
pub fn from_raw_moments(m: &mut [f32; Q]) {
    for_9!(k => {
        backward_raw(m, k, 9);
    });
    for_9!(k => {
        backward_raw(m, 9 * (k / 3) + k % 3, 3);
    });
    for_9!(k => {
        backward_raw(m, 3 * k, 1);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::velocity as cvel;

    fn sample() -> [f32; Q] {
        let mut f = [0.0f32; Q];
        for (q, v) in f.iter_mut().enumerate() {
            *v = crate::lbm::d3q27::weight(q) * (1.0 + 0.05 * ((q * 7 % 11) as f32 - 5.0) / 5.0);
        }
        f
    }

    #[test]
    fn moments_match_direct_sums() {
        let f = sample();
        let u = [0.05f32, -0.03, 0.02];
        let mut m = f;
        to_moments(&mut m, u);
        for a in 0..3 {
            for b in 0..3 {
                for c in 0..3 {
                    let direct: f64 = (0..Q)
                        .map(|q| {
                            let v = cvel(q);
                            let p =
                                |x: i32, ux: f32, n: usize| (x as f64 - ux as f64).powi(n as i32);
                            f[q] as f64 * p(v[0], u[0], a) * p(v[1], u[1], b) * p(v[2], u[2], c)
                        })
                        .sum();
                    let got = m[moment_index(a, b, c)] as f64;
                    assert!(
                        (got - direct).abs() < 1e-6,
                        "({a}{b}{c}): {got} vs {direct}"
                    );
                }
            }
        }
        from_moments(&mut m, u);
        for q in 0..Q {
            assert!((m[q] - f[q]).abs() < 1e-6, "roundtrip q = {q}");
        }
    }
}
