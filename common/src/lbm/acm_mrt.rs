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
//!    `omega_k = omega_h + (1 - omega_h) |kappa_k - kappa_k^eq| / (rho lambda + |kappa_k - kappa_k^eq|)`,
//!    the limiter form of Geier, Pasquali, Schönherr, "Parametrization of the cumulant lattice
//!    Boltzmann method for fourth order accurate diffusion, Part I", J. Comput. Phys. 348 (2017),
//!    Eq. 57, with base rate `omega_h = rates.high` and `lambda = rates.lambda`: a moment whose
//!    non-equilibrium is small against `rho lambda` relaxes with `omega_h`, one whose
//!    non-equilibrium is large moves to rate 1 (set to its equilibrium). Evaluated as
//!    `kappa_k^eq + (1 - omega_k) (kappa_k - kappa_k^eq)` with
//!    `1 - omega_k = (1 - omega_h) rho lambda / (rho lambda + |kappa_k - kappa_k^eq|)`
//!    ([`kept_fraction`]): one division and one fma per moment.
//!
//! **The base rate is `rates.high` (default 1), not the shear rate.** With the shear rate as
//! base, the scheme is linearly unstable as `tau -> 1/2`: the
//! product moment basis is not orthogonal (a higher-order moment such as `kappa_220` holds
//! second-order parts), so relaxing the higher orders at `omega_s ~ 2` while the trace relaxes
//! at `rates.bulk = 1` is no contraction. At `tau = 0.50036` (the Re 10,000 sphere) a
//! grid-scale mode (`k = (0, pi, pi)`) grows by a factor 1.414 per step at rest and in a
//! uniform flow (test below; 1.33 at the obstacle scene's `tau = 0.518`), until the limiter
//! stops it at
//! `|kappa - kappa^eq| ~ rho lambda`: the bounded but noisy state `docs/fluid/validation.md` describes
//! (section Grid-scale noise). At rate 1 no mode grows faster than 1.0004 per step there. With
//! the default the limiter is idle (every higher moment is set to its equilibrium, the choice
//! of Geier's cascaded and cumulant schemes); it acts when a scene sets `lattice.high_rate`.
//!
//! Reductions: `lambda -> infinity` gives the regular central-moment MRT with every higher-order
//! rate `omega_h` (with `shear = bulk = high` that is BGK with the product-form equilibrium);
//! `lambda -> 0` gives the central-moment MRT with every higher-order rate 1. Li et al. derive
//! their higher-order rates from a dispersion analysis; the adaptive rule above is Geier's
//! limiter, applied per moment (`docs/fluid/model.md`).

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
/// `omega_k = omega_h + (1 - omega_h) |neq| / (rho lambda + |neq|)`, that is
/// `(1 - omega_h) rho lambda / (rho lambda + |neq|)`, with `keep = (1 - omega_h) rho lambda`.
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
    relax(&mut m, rho, rates);
    from_moments(&mut m, u);
    *f = m;
}

/// The relaxation of the central moments `m` of a cell of density `rho`: the part of
/// [`collide`] between the two transforms.
#[inline(always)]
pub fn relax(m: &mut [f32; Q], rho: f32, rates: &Rates) {
    // Equilibrium central moments; those whose factor is 0 stay the constant 0.
    let mut eq = [0.0f32; Q];
    for_q!(k => {
        if central_eq_factor(k) != 0.0 {
            eq[k] = rho * central_eq_factor(k);
        }
    });
    super::relax_second_order(m, &eq, rates.shear, rates.bulk);
    // Orders 3 to 6: `kappa + omega_k (eq - kappa) = eq + (1 - omega_k) (kappa - eq)`, the
    // adaptive rate starting from `rates.high` (not the shear rate: see the module's notes).
    if rates.high == 1.0 {
        // Base rate 1 (the default): every higher moment is set to its equilibrium, whatever
        // its non-equilibrium (the kept fraction is 0). Not computed as `0 / x`: on the GPU a
        // zero quotient sends `div.rn.f32` down its slow path, 17 times per cell (ACM-MRT FP32
        // at 256^3 on the H200: 13,700 MLUPs/s that way).
        for_q!(k => {
            if order(k) >= 3 {
                m[k] = eq[k];
            }
        });
    } else {
        let rho_lambda = rho * rates.lambda;
        let keep = (1.0 - rates.high) * rho_lambda;
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
    }
    m[mi(0, 0, 0)] = rho;
    m[mi(1, 0, 0)] = 0.0;
    m[mi(0, 1, 0)] = 0.0;
    m[mi(0, 0, 1)] = 0.0;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::velocity_f32;
    use crate::lbm::equilibrium::equilibria;
    use std::vec::Vec;

    /// The largest amplification per step of a small perturbation of the state `(1, u)` in a
    /// periodic lattice, over the wavenumbers `k` with components in `{0, pi/2, pi, 3 pi/2}`:
    /// the spectral radius of `diag(exp(-i k . c_q)) J`, `J` the collision's Jacobian (central
    /// differences of [`collide`] itself, with the limiter off: a perturbation that small
    /// relaxes with the base rates), found by power iteration.
    fn amplification(rates: Rates, u: [f32; 3]) -> (f64, [f64; 3]) {
        let rates = Rates {
            lambda: 1e12,
            ..rates
        };
        let f0 = equilibria(1.0, u);
        let post = |f: &[f32; Q]| {
            let mut g = *f;
            let (rho, j) = crate::lbm::moments::density_momentum(&g);
            let v = crate::lbm::moments::velocity(rho, j, [0.0; 3]);
            collide(&mut g, rho, v, &rates);
            g
        };
        let eps = 1e-3f32;
        let mut jac = [[0.0f64; Q]; Q];
        for (q, col) in jac.iter_mut().enumerate() {
            let (mut up, mut down) = (f0, f0);
            up[q] += eps;
            down[q] -= eps;
            let (a, b) = (post(&up), post(&down));
            for r in 0..Q {
                col[r] = (a[r] as f64 - b[r] as f64) / (2.0 * eps as f64);
            }
        }
        let quarter = core::f64::consts::FRAC_PI_2;
        let mut worst = (0.0f64, [0.0; 3]);
        for n in 0..64 {
            let k = [n % 4, (n / 4) % 4, n / 16].map(|i| i as f64 * quarter);
            // Streaming of the pull scheme: f_q(x) <- f*_q(x - c_q), a factor exp(-i k . c_q).
            let shift: Vec<(f64, f64)> = (0..Q)
                .map(|q| {
                    let c = velocity_f32(q);
                    let phase = -(k[0] * c[0] as f64 + k[1] * c[1] as f64 + k[2] * c[2] as f64);
                    (phase.cos(), phase.sin())
                })
                .collect();
            let mut x: Vec<(f64, f64)> = (0..Q)
                .map(|q| (1.0 + 0.1 * q as f64, 0.3 - 0.02 * q as f64))
                .collect();
            let (steps, measured) = (1500, 1000);
            let mut log_growth = 0.0;
            for step in 0..steps {
                let mut y = [(0.0f64, 0.0f64); Q];
                for (r, yr) in y.iter_mut().enumerate() {
                    let (mut re, mut im) = (0.0, 0.0);
                    for (c, xc) in x.iter().enumerate() {
                        re += jac[c][r] * xc.0;
                        im += jac[c][r] * xc.1;
                    }
                    let (s, t) = shift[r];
                    *yr = (s * re - t * im, s * im + t * re);
                }
                let norm = y.iter().map(|v| v.0 * v.0 + v.1 * v.1).sum::<f64>().sqrt();
                if step >= steps - measured {
                    log_growth += norm.ln();
                }
                x = y.iter().map(|v| (v.0 / norm, v.1 / norm)).collect();
            }
            let g = (log_growth / measured as f64).exp();
            if g > worst.0 {
                worst = (g, k.map(|v| v / core::f64::consts::PI));
            }
        }
        worst
    }

    #[test]
    fn higher_orders_at_the_shear_rate_are_unstable_near_tau_one_half() {
        // tau = 0.50036: the sphere at Re 10,000 (24 cells per diameter, u = 0.05); 0.518: the
        // obstacle scene. With the higher orders at the shear rate (the model's first form) a
        // grid-scale mode grows by 40 % per step at rest as in a flow; at the default rate 1
        // nothing grows faster than e every 1000 steps. Rate 1.7 is past the edge already.
        for tau in [0.50036f32, 0.518] {
            let shear = 1.0 / tau;
            let rates = |high: f32| Rates {
                shear,
                bulk: Rates::DEFAULT_BULK,
                high,
                lambda: Rates::DEFAULT_LAMBDA,
            };
            for u in [[0.0f32; 3], [0.05, 0.0, 0.0], [0.03, 0.03, 0.02]] {
                let (old, k_old) = amplification(rates(shear), u);
                let (new, k_new) = amplification(rates(Rates::DEFAULT_HIGH), u);
                let (h17, k17) = amplification(rates(1.7), u);
                std::eprintln!(
                    "tau {tau}, u {u:?}: high = shear {old:.4} at k/pi {k_old:?}, high 1 \
                     {new:.6} at {k_new:?}, high 1.7 {h17:.4} at {k17:?}"
                );
                assert!(old > 1.2, "{old}");
                assert!(h17 > 1.03, "{h17}");
                assert!(new < 1.001, "{new}");
            }
        }
    }
}
