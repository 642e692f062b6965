//! Guo forcing (Guo, Zheng, Shi, Phys. Rev. E 65, 046308, 2002; Krüger et al. 2017, Sec. 6.3,
//! Eq. 6.14): the source term of a body force density `F`,
//! `S_q = w_q [ 3 (c_q - u) + 9 (c_q . u) c_q ] . F`.
//!
//! Every collision here applies it in the same, model-independent way: half of `S` is added to
//! the populations before the collision and half after. For BGK this is exactly Guo's
//! `f* = f - omega (f - f_eq) + (1 - omega / 2) S`; for the moment-space collisions it is Guo's
//! forcing in moment space, `m* = m - Lambda (m - m_eq) + (I - Lambda / 2) M S` (Krüger et al.
//! 2017, Sec. 10.5.2), because the moment transform is linear.

use super::d3q27::{velocity_f32, weight, Q};

/// Guo source term of direction `q` for velocity `u` and force density `force` (lattice units).
#[inline(always)]
pub fn guo_source(q: usize, u: [f32; 3], force: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    let cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
    let sx = (3.0 * (c[0] - u[0]) + 9.0 * cu * c[0]) * force[0];
    let sy = (3.0 * (c[1] - u[1]) + 9.0 * cu * c[1]) * force[1];
    let sz = (3.0 * (c[2] - u[2]) + 9.0 * cu * c[2]) * force[2];
    weight(q) * (sx + sy + sz)
}

/// Adds `S / 2` to all 27 populations.
#[inline(always)]
pub fn add_half_source(f: &mut [f32; Q], u: [f32; 3], force: [f32; 3]) {
    for_q!(q => {
        f[q] += 0.5 * guo_source(q, u, force);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::velocity_f32;

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
