//! Equilibria: the second-order polynomial equilibrium of BGK (Krüger et al. 2017, Eq. 3.54) and
//! the product-form moment equilibria of the moment-space collisions (Geier et al., "The cumulant
//! lattice Boltzmann equation in three dimensions", J. Comput. Phys. 348, 2017 / Comput. Math.
//! Appl. 70, 2015: the D3Q27 equilibrium whose central moments are those of a Maxwellian).

use super::d3q27::{velocity_f32, weight, Q, REST};

/// Second-order equilibrium population `q`:
/// `w_q rho (1 + 3 c.u + 9/2 (c.u)^2 - 3/2 u.u)` (lattice units, `c_s^2 = 1/3`).
#[inline(always)]
pub fn equilibrium(q: usize, rho: f32, u: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    let cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
    let uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    weight(q) * rho * (1.0 + 3.0 * cu + 4.5 * cu * cu - 1.5 * uu)
}

/// All 27 equilibrium populations. The rest population is `rho` minus the other 26, so the set
/// sums to `rho` up to rounding: with FP32 weights (which do not sum to exactly 1) the plain
/// formula would create or destroy mass systematically, every step.
#[inline(always)]
pub fn equilibria(rho: f32, u: [f32; 3]) -> [f32; Q] {
    let mut feq = [0.0f32; Q];
    let mut others = 0.0f32;
    for_q!(q => {
        if q != REST {
            feq[q] = equilibrium(q, rho, u);
            others += feq[q];
        }
    });
    feq[REST] = rho - others;
    feq
}

/// Equilibrium central moment factor per axis and order: `1, 0, c_s^2`. The equilibrium central
/// moment `kappa_abc^eq = rho K[a] K[b] K[c]` (product form).
pub const CENTRAL_EQ: [f32; 3] = [1.0, 0.0, 1.0 / 3.0];

/// Equilibrium raw moment factor of one axis: `1, u, u^2 + c_s^2` for orders 0, 1, 2. The
/// equilibrium raw moment `m_abc^eq = rho M[a](ux) M[b](uy) M[c](uz)` (product form).
#[inline(always)]
pub fn raw_eq_factors(u: f32) -> [f32; 3] {
    [1.0, u, u * u + 1.0 / 3.0]
}
