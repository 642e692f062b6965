//! Raw-moment MRT (RM-MRT) collision on D3Q27: the 27 raw moments `m_abc = sum cx^a cy^b cz^c f`
//! relax toward the product-form equilibrium moments `rho M_a(ux) M_b(uy) M_c(uz)` (`M = 1, u,
//! u^2 + 1/3`), with separate rates for shear, bulk and the higher orders (d'Humières et al.,
//! "Multiple-relaxation-time lattice Boltzmann models in three dimensions", Phil. Trans. R. Soc.
//! A 360, 2002, in the D3Q27 raw-moment basis of Geier et al. 2015; Krüger et al. 2017, Ch. 10).
//!
//! - order 0 and 1: conserved (`rho`, `rho u`);
//! - order 2: off-diagonal `m_110, m_101, m_011` and the deviatoric differences
//!   `m_200 - m_020`, `m_200 - m_002` relax with `rates.shear` (`nu = (1/omega - 1/2) / 3`), the
//!   trace `m_200 + m_020 + m_002` with `rates.bulk` (bulk viscosity `2/3 (1/omega_b - 1/2)`);
//! - orders 3 to 6: all relax with `rates.high`.
//!
//! With every rate equal to `omega` it is BGK with the product-form equilibrium.

use super::d3q27::Q;
use super::equilibrium::raw_eq_factors;
use super::moments::{from_raw_moments, moment_index as mi, order, to_raw_moments};
use super::Rates;
use crate::math::fma;

/// Raw-moment MRT collision of 27 populations with density `rho` and velocity `u`.
#[inline(always)]
pub fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
    let ex = raw_eq_factors(u[0]);
    let ey = raw_eq_factors(u[1]);
    let ez = raw_eq_factors(u[2]);
    let mut m = *f;
    to_raw_moments(&mut m);
    // Equilibrium raw moments, in the same slots.
    let mut eq = [0.0f32; Q];
    for_q!(k => {
        eq[k] = rho * ex[k % 3] * ey[(k / 3) % 3] * ez[k / 9];
    });
    super::relax_second_order(&mut m, &eq, rates.shear, rates.bulk);
    for_q!(k => {
        if order(k) >= 3 {
            m[k] = fma(rates.high, eq[k] - m[k], m[k]);
        }
    });
    // Conserved moments exactly (rho u includes the half force).
    m[mi(0, 0, 0)] = rho;
    m[mi(1, 0, 0)] = rho * u[0];
    m[mi(0, 1, 0)] = rho * u[1];
    m[mi(0, 0, 1)] = rho * u[2];
    from_raw_moments(&mut m);
    *f = m;
}
