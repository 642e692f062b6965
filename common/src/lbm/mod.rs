//! Kinetic fluid: the D3Q27 lattice Boltzmann method, written once for the CPU reference and the
//! GPU kernels. Stage of one step: the fused pull `stream -> macroscopic -> force -> collide ->
//! store` of [`stream_collide_cell`], reading and writing populations only through
//! [`access::Populations`].
//!
//! Sources: Krüger, Kusumaatmaja, Kuzmin, Shardt, Silva, Viggen, "The Lattice Boltzmann Method:
//! Principles and Practice", Springer 2017 (D3Q27, BGK, Guo forcing, boundaries, units);
//! Geier, Schönherr, Pasquali, Krafczyk, "The cumulant lattice Boltzmann equation in three
//! dimensions", Comput. Math. Appl. 70 (2015) (central moments, chimera transform);
//! Li, Chen, Desbrun, Zheng, Liu, ACM TOG 39(4) 2020 (ACM-MRT). Each file cites its equations.
//!
//! Memory (FP32, see [`layout`]): 216 B of populations, 1 B of cell type and 16 B of optional
//! fields per cell; 217 B moved per cell update.

/// Fully unrolled loop: `$i` is a `const usize` in the body. The hot loops over the 27
/// directions use it so that populations and moments stay in registers on the GPU (an array
/// indexed by a runtime loop counter would live in local memory).
macro_rules! unroll {
    ($i:ident in [$($n:literal),*] => $body:block) => {
        $( { #[allow(non_upper_case_globals)] const $i: usize = $n; $body } )*
    };
}

/// `for q in 0..27`, unrolled.
macro_rules! for_q {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
            21, 22, 23, 24, 25, 26] => $body)
    };
}

/// `for k in 0..9`, unrolled.
macro_rules! for_9 {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7, 8] => $body)
    };
}

pub mod abi;
pub mod access;
pub mod acm_mrt;
pub mod bgk;
pub mod boundary;
pub mod collide;
pub mod d3q27;
pub mod derived;
pub mod equilibrium;
pub mod forcing;
pub mod half;
pub mod halo;
pub mod health;
pub mod ib;
pub mod init;
pub mod layout;
pub mod les;
pub mod links;
pub mod listed;
pub mod moments;
pub mod params;
pub mod rm_mrt;
pub mod statistics;
pub mod stream;
pub mod units;
mod variants;
pub mod wale;

pub use access::{
    Fp16C, Fp16S, Fp32, InPlace, Layout, Populations, Storage, StorageKind, Streaming,
};
pub use boundary::CellKind;
pub(crate) use collide::relax_second_order;
pub use collide::{collide, collide_with, AcmMrt, Bgk, Model, RmMrt};
pub use d3q27::Q;
pub use init::Initial;
pub use layout::Lattice;
pub use params::{Face, LbmParams, Rates};
pub use stream::{
    boundary_fields, cell_fields, init_cell, pull_cell, store_fields, stream_collide_cell,
    stream_collide_interior, stream_collide_interior_band, stream_collide_layer,
    stream_collide_listed, stream_collide_sponge,
};
pub use units::Units;

/// The collision operator, as configured; [`with_model`](crate::with_model) turns it into its
/// [`Model`] type.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CollisionModel {
    /// Single relaxation time (BGK, `bgk.rs`).
    #[default]
    Bgk = 0,
    /// Raw-moment multiple relaxation time (RM-MRT, `rm_mrt.rs`).
    RmMrt = 1,
    /// Adaptive central-moment multiple relaxation time (ACM-MRT, `acm_mrt.rs`).
    AcmMrt = 2,
}

impl CollisionModel {
    pub const ALL: [CollisionModel; 3] = [
        CollisionModel::Bgk,
        CollisionModel::RmMrt,
        CollisionModel::AcmMrt,
    ];

    /// `bgk`, `rm-mrt`, `acm-mrt`.
    pub const fn name(self) -> &'static str {
        match self {
            CollisionModel::Bgk => "bgk",
            CollisionModel::RmMrt => "rm-mrt",
            CollisionModel::AcmMrt => "acm-mrt",
        }
    }
}

/// Initial populations of a cell: the equilibrium of `(rho, u)` (second order). Stored as the
/// post-collision state of step 0.
#[inline(always)]
pub fn initial_populations(rho: f32, u: [f32; 3]) -> [f32; Q] {
    equilibrium::equilibria(rho, u)
}

#[cfg(test)]
mod tests {
    use super::moments::moment_index as mi;
    use super::*;

    fn params(force: [f32; 3]) -> LbmParams {
        let rates = Rates {
            shear: 1.7,
            bulk: 1.2,
            high: 1.1,
            lambda: 1e-2,
        };
        LbmParams {
            force,
            has_force: (force != [0.0; 3]) as u32,
            ..LbmParams::new(Lattice::new(1, 1, 1), rates)
        }
    }

    /// A non-equilibrium state: equilibrium of (rho, u) plus a deterministic perturbation.
    fn perturbed() -> [f32; Q] {
        let mut f = initial_populations(1.02, [0.05, -0.03, 0.02]);
        for (q, v) in f.iter_mut().enumerate() {
            *v *= 1.0 + 0.03 * (((q * 13) % 7) as f32 - 3.0) / 3.0;
        }
        f
    }

    fn conserved(model: CollisionModel, force: [f32; 3]) {
        let p = params(force);
        let mut f = perturbed();
        let (rho0, j0) = moments::density_momentum(&f);
        let (rho, u) = crate::with_model!(model, M => collide::<M>(&mut f, &p));
        let (rho1, j1) = moments::density_momentum(&f);
        assert!(
            (rho1 - rho0).abs() < 2e-6,
            "mass, model {model:?}: {rho0} -> {rho1}"
        );
        assert!((rho - rho0).abs() < 1e-7);
        for a in 0..3 {
            // Momentum changes by exactly the force (Guo): j1 = j0 + F.
            let want = j0[a] + force[a];
            assert!(
                (j1[a] - want).abs() < 2e-6,
                "momentum {a}, model {model:?}: {} vs {want}",
                j1[a]
            );
            assert!((u[a] - (j0[a] + 0.5 * force[a]) / rho0).abs() < 1e-6);
        }
        assert!(f.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn every_collision_conserves_mass_and_momentum() {
        for model in CollisionModel::ALL {
            conserved(model, [0.0; 3]);
            conserved(model, [1e-4, -2e-4, 5e-5]);
        }
    }

    #[test]
    fn equilibrium_moments() {
        let (rho, u) = (1.03f32, [0.06f32, -0.04, 0.025]);
        let f = initial_populations(rho, u);
        let mut m = f;
        moments::to_moments(&mut m, [0.0; 3]);
        assert!((m[mi(0, 0, 0)] - rho).abs() < 1e-6);
        let ja = [mi(1, 0, 0), mi(0, 1, 0), mi(0, 0, 1)];
        for a in 0..3 {
            assert!((m[ja[a]] - rho * u[a]).abs() < 1e-6);
        }
        // Pi_ab = rho (u_a u_b + delta_ab / 3).
        assert!((m[mi(2, 0, 0)] - rho * (u[0] * u[0] + 1.0 / 3.0)).abs() < 1e-6);
        assert!((m[mi(1, 1, 0)] - rho * u[0] * u[1]).abs() < 1e-6);
        assert!((m[mi(0, 1, 1)] - rho * u[1] * u[2]).abs() < 1e-6);
    }

    #[test]
    fn equilibrium_is_a_fixed_point_of_bgk() {
        let p = params([0.0; 3]);
        let f0 = initial_populations(1.0, [0.03, 0.01, -0.02]);
        let mut f = f0;
        collide::<Bgk>(&mut f, &p);
        for q in 0..Q {
            assert!((f[q] - f0[q]).abs() < 1e-7);
        }
    }

    #[test]
    fn mrt_with_equal_rates_is_bgk_with_product_equilibrium() {
        // With every rate omega, RM-MRT and central-moment MRT both relax all moments toward the
        // same product-form equilibrium: they must agree (ACM with a huge lambda = plain CM-MRT
        // with its higher orders at `high`).
        let omega = 1.6;
        let mut p = params([0.0; 3]);
        p.rates = Rates {
            shear: omega,
            bulk: omega,
            high: omega,
            lambda: 1e12,
        };
        let mut a = perturbed();
        let mut b = a;
        collide::<RmMrt>(&mut a, &p);
        collide::<AcmMrt>(&mut b, &p);
        for q in 0..Q {
            assert!((a[q] - b[q]).abs() < 2e-6, "q = {q}: {} vs {}", a[q], b[q]);
        }
    }

    #[test]
    fn acm_rate_adapts_between_its_base_and_one() {
        // 1 - omega_k for a base rate omega_h = 1.8, rho lambda = 1e-2.
        let (omega, rho_lambda) = (1.8f32, 1e-2f32);
        let keep = (1.0 - omega) * rho_lambda;
        let rate = |neq: f32| 1.0 - acm_mrt::kept_fraction(neq, keep, rho_lambda);
        assert!((rate(0.0) - 1.8).abs() < 1e-6, "resolved: the base rate");
        assert!((rate(1e3) - 1.0).abs() < 1e-4, "under-resolved: rate 1");
        assert!(
            (rate(-1e-2) - 1.4).abs() < 1e-6,
            "|neq| = rho lambda: half way"
        );
    }
}
