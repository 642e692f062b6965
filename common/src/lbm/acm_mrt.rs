//! Adaptive central-moment MRT (ACM-MRT) collision on D3Q27, after Li, Chen, Desbrun, Zheng,
//! Liu, "Fast and Scalable Turbulent Flow Simulation with Two-Way Coupling", ACM TOG 39(4), 2020,
//! whose central idea is that the relaxation of the *higher-order* moments controls the
//! dissipation and dispersion of the scheme.
//!
//! What is implemented, exactly:
//! 1. Central moments `kappa_abc = sum (cx - ux)^a (cy - uy)^b (cz - uz)^c f` by the chimera
//!    transform (Geier et al., Comput. Math. Appl. 70, 2015), equilibrium
//!    `kappa_abc^eq = rho K_a K_b K_c`, `K = (1, 0, 1/3)` (the Maxwellian's central moments).
//! 2. Order 2 as in RM-MRT: shear moments with `rates.shear`, the trace with `rates.bulk`.
//! 3. Orders 3 to 6: each moment relaxes with its own *adaptive* rate
//!    `omega_k = omega_s + (1 - omega_s) |kappa_k - kappa_k^eq| / (rho lambda + |kappa_k - kappa_k^eq|)`,
//!    the limiter form of Geier, Pasquali, Schönherr, "Parametrization of the cumulant lattice
//!    Boltzmann method for fourth order accurate diffusion, Part I", J. Comput. Phys. 348 (2017),
//!    Eq. 57, with base rate `omega_s` (the shear rate) and `lambda = rates.lambda`. Where the
//!    flow is resolved (small non-equilibrium of a higher moment) it relaxes like the shear
//!    moments, with low numerical dissipation; where it is under-resolved (large non-equilibrium)
//!    the rate moves to 1, i.e. the moment is set to its equilibrium, which damps the parasitic
//!    high-order modes that make BGK unstable at high Reynolds numbers. Evaluated as
//!    `kappa_k^eq + (1 - omega_k) (kappa_k - kappa_k^eq)` with
//!    `1 - omega_k = (1 - omega_s) rho lambda / (rho lambda + |kappa_k - kappa_k^eq|)`
//!    ([`kept_fraction`]): one division and one fma per moment.
//!
//! Reductions: `lambda -> infinity` gives the regular central-moment MRT with every higher-order
//! rate `omega_s` (with `bulk = shear` that is BGK with the product-form equilibrium);
//! `lambda -> 0` gives the central-moment MRT with every higher-order rate 1 (Geier's "cascaded"
//! choice). Note: Li et al. derive their higher-order rates from a dispersion analysis that could
//! not be consulted while writing this; the adaptive rule above is Geier's limiter, applied per
//! moment. `docs/fluid.md` says the same.

use super::d3q27::Q;
use super::equilibrium::central_eq_factor;
use super::moments::{from_moments, moment_index as mi, order, to_moments};
use super::Rates;
use crate::math::fma;

/// `|x|` without libm.
#[inline(always)]
fn abs(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & 0x7fff_ffff)
}

/// `1 - omega_k`: the fraction of its non-equilibrium part `neq` that a higher-order moment keeps
/// when it relaxes with its adaptive rate
/// `omega_k = omega + (1 - omega) |neq| / (rho lambda + |neq|)`, that is
/// `(1 - omega) rho lambda / (rho lambda + |neq|)`, with `keep = (1 - omega) rho lambda`.
///
/// The division stays: each moment has its own denominator, and only the correctly rounded
/// division (`div.rn.f32`) gives the CPU's result on the GPU.
#[inline(always)]
pub fn kept_fraction(neq: f32, keep: f32, rho_lambda: f32) -> f32 {
    keep / (rho_lambda + abs(neq))
}

/// ACM-MRT collision of 27 populations with density `rho` and velocity `u`.
#[inline(always)]
pub fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
    let mut m = *f;
    to_moments(&mut m, u);
    // Equilibrium central moments; those whose factor is 0 stay the constant 0.
    let mut eq = [0.0f32; Q];
    for_q!(k => {
        if central_eq_factor(k) != 0.0 {
            eq[k] = rho * central_eq_factor(k);
        }
    });
    super::relax_second_order(&mut m, &eq, rates.shear, rates.bulk);
    // Orders 3 to 6: `kappa + omega_k (eq - kappa) = eq + (1 - omega_k) (kappa - eq)`.
    let rho_lambda = rho * rates.lambda;
    let keep = (1.0 - rates.shear) * rho_lambda;
    for_q!(k => {
        if order(k) >= 3 {
            m[k] = if central_eq_factor(k) == 0.0 {
                kept_fraction(m[k], keep, rho_lambda) * m[k]
            } else {
                let neq = m[k] - eq[k];
                fma(kept_fraction(neq, keep, rho_lambda), neq, eq[k])
            };
        }
    });
    m[mi(0, 0, 0)] = rho;
    m[mi(1, 0, 0)] = 0.0;
    m[mi(0, 1, 0)] = 0.0;
    m[mi(0, 0, 1)] = 0.0;
    from_moments(&mut m, u);
    *f = m;
}
