//! Moments: macroscopic density and velocity, and the transform between populations and raw or
//! central moments of D3Q27.
//!
//! The transform is the "chimera" transform of Geier et al., "The cumulant lattice Boltzmann
//! equation in three dimensions: theory and validation", Comput. Math. Appl. 70 (2015), App. J:
//! three one-dimensional passes, one per axis, each turning the triplet of populations with
//! velocity component -1, 0, +1 into the zeroth, first and second moment about `u` along that
//! axis. With `u = 0` it gives raw moments. Moment `(a, b, c)` (orders along x, y, z) lands at
//! index [`moment_index`]`(a, b, c) = 9 c + 3 b + a`, the same slot as population
//! `(cx, cy, cz) = (a - 1, b - 1, c - 1)`.

use super::d3q27::{velocity_f32, Q};

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

/// Density `rho = sum f` and momentum `j = sum c f` of 27 populations.
#[inline(always)]
pub fn density_momentum(f: &[f32; Q]) -> (f32, [f32; 3]) {
    let mut rho = 0.0f32;
    let mut j = [0.0f32; 3];
    for_q!(q => {
        let c = velocity_f32(q);
        rho += f[q];
        j[0] += c[0] * f[q];
        j[1] += c[1] * f[q];
        j[2] += c[2] * f[q];
    });
    (rho, j)
}

/// Fluid velocity with the half-force correction (Guo et al. 2002; Krüger et al. 2017, Eq. 6.9):
/// `u = (j + F / 2) / rho`, `F` the body force density in lattice units.
#[inline(always)]
pub fn velocity(rho: f32, j: [f32; 3], force: [f32; 3]) -> [f32; 3] {
    let inv = 1.0 / rho;
    [
        (j[0] + 0.5 * force[0]) * inv,
        (j[1] + 0.5 * force[1]) * inv,
        (j[2] + 0.5 * force[2]) * inv,
    ]
}

/// One forward triplet: populations at `i, i + s, i + 2s` (velocity -1, 0, +1) become the
/// moments of order 0, 1, 2 about `u`.
#[inline(always)]
fn forward(m: &mut [f32; Q], i: usize, s: usize, u: f32) {
    let (fm, f0, fp) = (m[i], m[i + s], m[i + 2 * s]);
    let k0 = fm + f0 + fp;
    let d = fp - fm;
    let k1 = d - u * k0;
    let k2 = (fp + fm) - 2.0 * u * d + u * u * k0;
    m[i] = k0;
    m[i + s] = k1;
    m[i + 2 * s] = k2;
}

/// The inverse of [`forward`].
#[inline(always)]
fn backward(m: &mut [f32; Q], i: usize, s: usize, u: f32) {
    let (k0, k1, k2) = (m[i], m[i + s], m[i + 2 * s]);
    let uu = u * u;
    m[i] = 0.5 * ((uu - u) * k0 + (2.0 * u - 1.0) * k1 + k2);
    m[i + s] = k0 * (1.0 - uu) - 2.0 * u * k1 - k2;
    m[i + 2 * s] = 0.5 * ((uu + u) * k0 + (2.0 * u + 1.0) * k1 + k2);
}

/// Populations to moments about `u`, in place (`u = [0; 3]`: raw moments; the fluid velocity:
/// central moments).
#[inline(always)]
pub fn to_moments(m: &mut [f32; Q], u: [f32; 3]) {
    for_9!(k => {
        forward(m, 3 * k, 1, u[0]); // x: triplets (iy, iz) at 9 iz + 3 iy
    });
    for_9!(k => {
        forward(m, 9 * (k / 3) + k % 3, 3, u[1]); // y: triplets (ix, iz)
    });
    for_9!(k => {
        forward(m, k, 9, u[2]); // z: triplets (ix, iy)
    });
}

/// Moments about `u` back to populations, in place: the inverse of [`to_moments`].
#[inline(always)]
pub fn from_moments(m: &mut [f32; Q], u: [f32; 3]) {
    for_9!(k => {
        backward(m, k, 9, u[2]);
    });
    for_9!(k => {
        backward(m, 9 * (k / 3) + k % 3, 3, u[1]);
    });
    for_9!(k => {
        backward(m, 3 * k, 1, u[0]);
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
