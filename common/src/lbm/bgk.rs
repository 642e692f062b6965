//! BGK (single relaxation time) collision, Krüger et al. 2017, Eq. 3.9 and 4.43:
//! `f* = f - omega (f - f_eq(rho, u))`, with the second-order equilibrium and
//! `nu = c_s^2 (1 / omega - 1 / 2)`. Forcing is applied by the caller (see `forcing`).

use super::d3q27::Q;
use super::d3q27::REST;
use super::equilibrium::equilibrium;
use super::Rates;

/// Relaxes all 27 populations toward the equilibrium of `(rho, u)` with `rates.shear`.
#[inline(always)]
pub fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
    // Same arithmetic as `equilibria` (rest = rho - the other 26, so mass stays exact), fused
    // with the relaxation so no array of equilibria is held in registers.
    let omega = rates.shear;
    let mut others = 0.0f32;
    for_q!(q => {
        if q != REST {
            let feq = equilibrium(q, rho, u);
            others += feq;
            f[q] += omega * (feq - f[q]);
        }
    });
    f[REST] += omega * ((rho - others) - f[REST]);
}
