//! Guo forcing (Guo, Zheng, Shi, Phys. Rev. E 65, 046308, 2002; Krüger et al. 2017, Sec. 6.3,
//! Eq. 6.14): the source term of a body force density `F`,
//! `S_q = w_q [ 3 (c_q - u) + 9 (c_q . u) c_q ] . F`.
//!
//! Every collision here applies it in the same, model-independent way: half of `S` is added to
//! the populations before the collision and half after. For BGK this is exactly Guo's
//! `f* = f - omega (f - f_eq) + (1 - omega / 2) S`; for the moment-space collisions it is Guo's
//! forcing in moment space, `m* = m - Lambda (m - m_eq) + (I - Lambda / 2) M S` (Krüger et al.
//! 2017, Sec. 10.5.2), because the moment transform is linear.
//!
//! Evaluated as `S_q = 3 w_q [(c_q . F)(1 + 3 c_q . u) - u . F]` (the same polynomial: `3 (c - u)
//! . F + 9 (c . u)(c . F)`), three fused multiply-adds per direction once `c . u`, `c . F`
//! (additions only, shared by opposite directions) and `u . F` are known.

use super::d3q27::{weight, Q, REST};
use super::equilibrium::{c_dot, dot};
use crate::math::fma;

/// `(c_q . F)(1 + 3 c_q . u) - u . F`, given `-u . F`: with `c . u = s x` and `c . F = s y`
/// (`s = +-1`) it is `y (3 x + s) - u . F`.
#[inline(always)]
fn bracket(q: usize, u: [f32; 3], force: [f32; 3], minus_uf: f32) -> f32 {
    if q == REST {
        return minus_uf;
    }
    let (x, sign) = c_dot(q, u);
    let (y, _) = c_dot(q, force);
    fma(y, fma(3.0, x, sign), minus_uf)
}

/// Guo source term of direction `q` for velocity `u` and force density `force` (lattice units).
#[inline(always)]
pub fn guo_source(q: usize, u: [f32; 3], force: [f32; 3]) -> f32 {
    (3.0 * weight(q)) * bracket(q, u, force, -dot(u, force))
}

/// Adds `S / 2` to all 27 populations.
#[inline(always)]
pub fn add_half_source(f: &mut [f32; Q], u: [f32; 3], force: [f32; 3]) {
    let minus_uf = -dot(u, force);
    for_q!(q => {
        f[q] = fma(1.5 * weight(q), bracket(q, u, force, minus_uf), f[q]);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::velocity_f32;

    #[test]
    fn source_matches_guo_form() {
        let u = [0.04f32, -0.02, 0.01];
        let force = [1e-3f32, 2e-3, -5e-4];
        for q in 0..Q {
            let c = velocity_f32(q);
            let cu: f64 = (0..3).map(|a| c[a] as f64 * u[a] as f64).sum();
            let want: f64 = weight(q) as f64
                * (0..3)
                    .map(|a| {
                        (3.0 * (c[a] as f64 - u[a] as f64) + 9.0 * cu * c[a] as f64)
                            * force[a] as f64
                    })
                    .sum::<f64>();
            let got = guo_source(q, u, force) as f64;
            // The terms are about 3 |F| w = 1e-2 w: a few f32 roundings of that.
            assert!(
                (got - want).abs() < 1e-8 * weight(q) as f64,
                "q = {q}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn source_moments() {
        // sum S = 0, sum c S = F, sum c_a c_b S = F_a u_b + u_a F_b.
        let u = [0.04f32, -0.02, 0.01];
        let force = [1e-3f32, 2e-3, -5e-4];
        let mut m0 = 0.0f64;
        let mut m1 = [0.0f64; 3];
        let mut m2 = [[0.0f64; 3]; 3];
        for q in 0..Q {
            let s = guo_source(q, u, force) as f64;
            let c = velocity_f32(q);
            m0 += s;
            for a in 0..3 {
                m1[a] += c[a] as f64 * s;
                for b in 0..3 {
                    m2[a][b] += (c[a] * c[b]) as f64 * s;
                }
            }
        }
        assert!(m0.abs() < 1e-9);
        for a in 0..3 {
            assert!((m1[a] - force[a] as f64).abs() < 1e-9);
            for b in 0..3 {
                let want = (force[a] * u[b] + u[a] * force[b]) as f64;
                assert!((m2[a][b] - want).abs() < 1e-9, "{a}{b}");
            }
        }
    }
}
