//! BGK (single relaxation time) collision, Krüger et al. 2017, Eq. 3.9 and 4.43:
//! `f* = f - omega (f - f_eq(rho, u))`, with the second-order equilibrium and
//! `nu = c_s^2 (1 / omega - 1 / 2)`. Forcing is applied by the caller (see `forcing`).

use super::d3q27::{Q, REST};
use super::equilibrium::equilibrium;
use super::moments::add_row;
use super::Rates;
use crate::math::fma;

/// Relaxes all 27 populations toward the equilibrium of `(rho, u)` with `rates.shear`:
/// `f + omega (f_eq - f)`, one fma per population. The equilibria are those of
/// [`equilibria`](super::equilibrium::equilibria) (the rest population is `rho` minus the other
/// 26, summed in the same order, so the equilibrium has exactly the density `rho`), computed row
/// by row along x and each relaxed at once: holding all 26 until the rest population is known
/// took 80 registers on the GPU instead of 63.
#[inline(always)]
pub fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
    let omega = rates.shear;
    let mut others = 0.0f32;
    for_9!(r => {
        let mut row = [0.0f32; 3];
        unroll!(i in [0, 1, 2] => {
            let q = 3 * r + i;
            if q != REST {
                row[i] = equilibrium(q, rho, u);
                f[q] = fma(omega, row[i] - f[q], f[q]);
            }
        });
        others = add_row(others, r, row);
    });
    f[REST] = fma(omega, (rho - others) - f[REST], f[REST]);
}
