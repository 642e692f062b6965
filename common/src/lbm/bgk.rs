//! BGK (single relaxation time) collision, Krüger et al. 2017, Eq. 3.9 and 4.43:
//! `f* = f - omega (f - f_eq(rho, u))`, with the second-order equilibrium and
//! `nu = c_s^2 (1 / omega - 1 / 2)`. Forcing is applied by the caller (see `forcing`).

use super::d3q27::Q;
use super::equilibrium::equilibria;
use super::Rates;

/// Relaxes all 27 populations toward the equilibrium of `(rho, u)` with `rates.shear`.
#[inline(always)]
pub fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
    let omega = rates.shear;
    let feq = equilibria(rho, u);
    for_q!(q => {
        f[q] += omega * (feq[q] - f[q]);
    });
}
