//! Equilibria: the second-order polynomial equilibrium of BGK (Krüger et al. 2017, Eq. 3.54) and
//! the product-form moment equilibria of the moment-space collisions (Geier et al., "The cumulant
//! lattice Boltzmann equation in three dimensions", J. Comput. Phys. 348, 2017 / Comput. Math.
//! Appl. 70, 2015: the D3Q27 equilibrium whose central moments are those of a Maxwellian).

use super::d3q27::{opposite, velocity, weight, Q, REST};
use super::moments::sum_moving;
use crate::math::fma;

/// `c_q . v` for a direction `q >= REST`, by additions only (the components of `c_q` are -1, 0,
/// 1). The `x, y` part is formed in the orientation with `cy = 1` (or `cy = 0, cx = 1`) and then
/// added to or taken from `vz`, so the 13 directions share their partial sums (`vx + vy`,
/// `vy - vx`).
#[inline(always)]
fn upper_dot(q: usize, v: [f32; 3]) -> f32 {
    let c = velocity(q);
    let flip = c[1] < 0 || (c[1] == 0 && c[0] < 0);
    let (cx, cy) = if flip { (-c[0], -c[1]) } else { (c[0], c[1]) };
    let xy = match (cx, cy) {
        (1, 0) => v[0],
        (0, 1) => v[1],
        (1, 1) => v[0] + v[1],
        (-1, 1) => v[1] - v[0],
        _ => 0.0,
    };
    if c[2] == 0 {
        xy
    } else if cx == 0 && cy == 0 {
        v[2]
    } else if flip {
        v[2] - xy
    } else {
        v[2] + xy
    }
}

/// `(x, sign)` with `c_q . v = sign x`: `x` is `c . v` of whichever of `q` and its opposite lies
/// past the rest direction, so opposite directions share one `x` (and get exactly opposite
/// values of `c . v`). The rest direction gives `(0, 1)`.
#[inline(always)]
pub fn c_dot(q: usize, v: [f32; 3]) -> (f32, f32) {
    if q < REST {
        (upper_dot(opposite(q), v), -1.0)
    } else {
        (upper_dot(q, v), 1.0)
    }
}

/// `a . b`, fused.
#[inline(always)]
pub fn dot(a: [f32; 3], b: [f32; 3]) -> f32 {
    fma(a[2], b[2], fma(a[1], b[1], a[0] * b[0]))
}

/// Second-order equilibrium population `q`:
/// `w_q rho (1 + 3 c.u + 9/2 (c.u)^2 - 3/2 u.u)` (lattice units, `c_s^2 = 1/3`), evaluated as
/// `w_q rho (b + c.u (3 + 9/2 c.u))` with `b = 1 - 3/2 u.u` (two fma per direction; with
/// `c.u = -x` the bracket is `b + x (9/2 x - 3)`, so opposite directions share `x`).
#[inline(always)]
pub fn equilibrium(q: usize, rho: f32, u: [f32; 3]) -> f32 {
    let b = fma(-1.5, dot(u, u), 1.0);
    let wr = weight(q) * rho;
    if q == REST {
        return wr * b;
    }
    let (x, sign) = c_dot(q, u);
    wr * fma(x, fma(4.5, x, 3.0 * sign), b)
}

/// All 27 equilibrium populations. The rest population is `rho` minus the other 26
/// ([`sum_moving`]), so the set has density exactly `rho` ([`super::moments::density_momentum`]
/// adds them in the same order): with FP32 weights (which do not sum to exactly 1) the plain
/// formula would create or destroy mass systematically, every step.
#[inline(always)]
pub fn equilibria(rho: f32, u: [f32; 3]) -> [f32; Q] {
    let mut feq = [0.0f32; Q];
    for_q!(q => {
        if q != REST {
            feq[q] = equilibrium(q, rho, u);
        }
    });
    feq[REST] = rho - sum_moving(&feq);
    feq
}

/// Equilibrium central moment factor per axis and order: `1, 0, c_s^2`. The equilibrium central
/// moment `kappa_abc^eq = rho K[a] K[b] K[c]` (product form).
pub const CENTRAL_EQ: [f32; 3] = [1.0, 0.0, 1.0 / 3.0];

/// `K[a] K[b] K[c]` of moment slot `k = 9 c + 3 b + a` (a constant: 0 unless every order is
/// even), so `kappa_k^eq = rho central_eq_factor(k)` is one multiplication, or none.
#[inline(always)]
pub const fn central_eq_factor(k: usize) -> f32 {
    CENTRAL_EQ[k % 3] * CENTRAL_EQ[(k / 3) % 3] * CENTRAL_EQ[k / 9]
}

/// Equilibrium raw moment factor of one axis: `1, u, u^2 + c_s^2` for orders 0, 1, 2. The
/// equilibrium raw moment `m_abc^eq = rho M[a](ux) M[b](uy) M[c](uz)` (product form).
#[inline(always)]
pub fn raw_eq_factors(u: f32) -> [f32; 3] {
    [1.0, u, fma(u, u, 1.0 / 3.0)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::velocity_f32;

    #[test]
    fn c_dot_matches_the_direct_product() {
        let v = [0.031f32, -0.017, 0.0023];
        for q in 0..Q {
            let c = velocity_f32(q);
            let direct =
                c[0] as f64 * v[0] as f64 + c[1] as f64 * v[1] as f64 + c[2] as f64 * v[2] as f64;
            let (x, sign) = c_dot(q, v);
            assert!(((sign * x) as f64 - direct).abs() < 1e-8, "q = {q}");
            let (xo, so) = c_dot(opposite(q), v);
            assert_eq!(sign * x, -(so * xo), "q = {q} and its opposite");
        }
    }

    #[test]
    fn equilibria_have_density_rho_exactly() {
        for (rho, u) in [
            (1.0f32, [0.05f32, -0.03, 0.02]),
            (1.03, [0.05, -0.03, 0.02]),
            (0.97, [-0.07, 0.011, 0.04]),
            (1.0, [0.0; 3]),
            (0.8, [0.2, 0.1, -0.15]),
        ] {
            let (got, _) = crate::lbm::moments::density_momentum(&equilibria(rho, u));
            assert_eq!(got, rho, "rho {rho}, u {u:?}");
        }
    }

    #[test]
    fn equilibrium_matches_the_plain_polynomial() {
        let (rho, u) = (1.02f32, [0.05f32, -0.03, 0.02]);
        let u64 = u.map(|x| x as f64);
        let uu: f64 = u64.iter().map(|x| x * x).sum();
        for q in 0..Q {
            let c = velocity_f32(q);
            let cu: f64 = (0..3).map(|a| c[a] as f64 * u64[a]).sum();
            let want = weight(q) as f64 * rho as f64 * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * uu);
            let got = equilibrium(q, rho, u) as f64;
            assert!((got - want).abs() < 3e-7 * want, "q = {q}: {got} vs {want}");
        }
    }
}
