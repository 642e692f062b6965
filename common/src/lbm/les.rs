//! The Smagorinsky subgrid model (Smagorinsky 1963; in the lattice Boltzmann method Hou,
//! Sterling, Chen & Doolen 1996): an eddy viscosity `nu_t = (C_s Delta)^2 |S|` (`Delta` one
//! cell) added to each cell's own, through its shear relaxation time.
//!
//! The strain rate comes from the cell's non-equilibrium second moments, so no neighbour is
//! read: `Pi_ab = sum_q c_qa c_qb f_q - rho (c_s^2 delta_ab + u_a u_b) + (F_a u_b + F_b u_a) / 2`,
//! the last term Guo's forcing correction (Krüger et al. 2017, Sec. 6.6), gives
//! `S = -Pi / (2 rho c_s^2 tau)`. With `tau = tau_0 + 3 nu_t` and `Q = sqrt(Pi : Pi)` the
//! effective relaxation time solves `tau^2 - tau_0 tau - (9 / sqrt 2) C_s^2 Q / rho = 0`:
//!
//! `tau = [tau_0 + sqrt(tau_0^2 + 18 sqrt(2) C_s^2 Q / rho)] / 2`,
//!
//! the shear rate `1 / tau` for BGK's single rate and for the MRT models' shear moments (the
//! bulk and higher-order rates stay). [`super::LbmParams::smagorinsky`] holds
//! `18 sqrt(2) C_s^2`.

use super::d3q27::{velocity_f32, Q};
use super::Rates;
use crate::math::sqrt;

/// `18 sqrt(2) C_s^2`, the factor [`smagorinsky_rates`] takes, of the Smagorinsky constant `cs`.
pub fn factor(cs: f32) -> f32 {
    18.0 * core::f32::consts::SQRT_2 * cs * cs
}

/// The non-equilibrium second moments of `f` at density `rho` and velocity `u` (Guo's
/// velocity), corrected for the force density `force`: `xx, yy, zz, xy, xz, yz`.
#[inline(always)]
pub fn non_equilibrium_stress(f: &[f32; Q], rho: f32, u: [f32; 3], force: [f32; 3]) -> [f32; 6] {
    let mut m = [0.0f32; 6];
    for_q!(q => {
        let c = velocity_f32(q);
        let v = f[q];
        m[0] += c[0] * c[0] * v;
        m[1] += c[1] * c[1] * v;
        m[2] += c[2] * c[2] * v;
        m[3] += c[0] * c[1] * v;
        m[4] += c[0] * c[2] * v;
        m[5] += c[1] * c[2] * v;
    });
    let third = rho * (1.0 / 3.0);
    [
        m[0] - third - rho * u[0] * u[0] + force[0] * u[0],
        m[1] - third - rho * u[1] * u[1] + force[1] * u[1],
        m[2] - third - rho * u[2] * u[2] + force[2] * u[2],
        m[3] - rho * u[0] * u[1] + 0.5 * (force[0] * u[1] + force[1] * u[0]),
        m[4] - rho * u[0] * u[2] + 0.5 * (force[0] * u[2] + force[2] * u[0]),
        m[5] - rho * u[1] * u[2] + 0.5 * (force[1] * u[2] + force[2] * u[1]),
    ]
}

/// The relaxation time of a cell of molecular relaxation time `tau0`, density `rho` and
/// non-equilibrium stress `pi` under the model of factor `factor` (`18 sqrt(2) C_s^2`).
#[inline(always)]
pub fn effective_tau(tau0: f32, rho: f32, pi: &[f32; 6], factor: f32) -> f32 {
    let diag = pi[0] * pi[0] + pi[1] * pi[1] + pi[2] * pi[2];
    let off = pi[3] * pi[3] + pi[4] * pi[4] + pi[5] * pi[5];
    let q = sqrt(diag + 2.0 * off);
    0.5 * (tau0 + sqrt(tau0 * tau0 + factor * q / rho))
}

/// `rates` with the shear rate of the cell whose pre-collision populations are `f`.
#[inline(always)]
pub fn smagorinsky_rates(
    f: &[f32; Q],
    rho: f32,
    u: [f32; 3],
    force: [f32; 3],
    rates: &Rates,
    factor: f32,
) -> Rates {
    let pi = non_equilibrium_stress(f, rho, u, force);
    let tau = effective_tau(1.0 / rates.shear, rho, &pi, factor);
    Rates {
        shear: 1.0 / tau,
        ..*rates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::equilibrium::equilibrium;

    #[test]
    fn an_equilibrium_has_no_eddy_viscosity() {
        let (rho, u) = (1.02f32, [0.03f32, -0.01, 0.02]);
        let f: [f32; Q] = core::array::from_fn(|q| equilibrium(q, rho, u));
        let pi = non_equilibrium_stress(&f, rho, u, [0.0; 3]);
        assert!(pi.iter().all(|v| v.abs() < 1e-6), "{pi:?}");
        let tau = effective_tau(0.6, rho, &pi, factor(0.1));
        assert!((tau - 0.6).abs() < 2e-4, "{tau}");
    }

    #[test]
    fn the_effective_tau_solves_the_model() {
        // A shear stress Pi_xy = -0.002: tau must satisfy nu_t = C^2 |S| with
        // |S| = sqrt(2) Q / (2 rho c_s^2 tau).
        let (tau0, rho, cs) = (0.52f32, 1.0f32, 0.16f32);
        let pi = [0.0, 0.0, 0.0, -0.002, 0.0, 0.0];
        let tau = effective_tau(tau0, rho, &pi, factor(cs)) as f64;
        let q = (2.0f64 * 0.002 * 0.002).sqrt();
        let s = 2f64.sqrt() * q / (2.0 * rho as f64 / 3.0 * tau);
        let nu_t = (cs as f64).powi(2) * s;
        assert!(
            ((tau - tau0 as f64) / 3.0 - nu_t).abs() < 1e-7,
            "{tau} {nu_t}"
        );
        assert!(tau > tau0 as f64);
    }

    #[test]
    fn guo_correction_cancels_the_forced_stress_of_a_uniform_flow() {
        // A uniform flow under a force: the populations an equilibrium at the pre-force
        // velocity, so Pi (uncorrected) holds the force's term, which the correction removes to
        // first order in the force.
        let (rho, force) = (1.0f32, [1e-4f32, 0.0, 0.0]);
        let u_pre = [0.04f32, 0.0, 0.0];
        let f: [f32; Q] = core::array::from_fn(|q| equilibrium(q, rho, u_pre));
        let u = [u_pre[0] + 0.5 * force[0] / rho, 0.0, 0.0];
        let corrected = non_equilibrium_stress(&f, rho, u, force);
        let plain = non_equilibrium_stress(&f, rho, u, [0.0; 3]);
        assert!(corrected[0].abs() < 5e-7, "{corrected:?}");
        assert!(plain[0].abs() > 3e-6, "{plain:?}");
    }
}
