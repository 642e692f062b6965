//! Collision: the model-independent frame around each collision operator (moments, Guo forcing)
//! and the operators as types ([`Model`]), so dispatch over models is a `match` on
//! [`CollisionModel`] that the compiler checks for exhaustiveness ([`crate::with_model`]).

use super::moments::moment_index as mi;
use super::params::{LbmParams, Rates};
use super::{acm_mrt, bgk, forcing, les, moments, rm_mrt, CollisionModel, Q};
use crate::math::fma;

/// A collision operator: relaxes 27 populations of density `rho` and velocity `u` in place.
pub trait Model: Copy + 'static {
    /// The operator's id in configuration and CLI.
    const ID: CollisionModel;
    fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates);
}

/// Single relaxation time ([`bgk`]).
#[derive(Clone, Copy, Debug)]
pub struct Bgk;
/// Raw-moment multiple relaxation time ([`rm_mrt`]).
#[derive(Clone, Copy, Debug)]
pub struct RmMrt;
/// Adaptive central-moment multiple relaxation time ([`acm_mrt`]).
#[derive(Clone, Copy, Debug)]
pub struct AcmMrt;

impl Model for Bgk {
    const ID: CollisionModel = CollisionModel::Bgk;
    #[inline(always)]
    fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
        bgk::collide(f, rho, u, rates)
    }
}

impl Model for RmMrt {
    const ID: CollisionModel = CollisionModel::RmMrt;
    #[inline(always)]
    fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
        rm_mrt::collide(f, rho, u, rates)
    }
}

impl Model for AcmMrt {
    const ID: CollisionModel = CollisionModel::AcmMrt;
    #[inline(always)]
    fn collide(f: &mut [f32; Q], rho: f32, u: [f32; 3], rates: &Rates) {
        acm_mrt::collide(f, rho, u, rates)
    }
}

/// Runs `$body` with the type `$m` bound to the [`Model`] of the [`CollisionModel`] value
/// `$model`: one arm per model, no fallback, so a new model is a compile error until handled.
#[macro_export]
macro_rules! with_model {
    ($model:expr, $m:ident => $body:expr) => {
        match $model {
            $crate::lbm::CollisionModel::Bgk => {
                type $m = $crate::lbm::Bgk;
                $body
            }
            $crate::lbm::CollisionModel::RmMrt => {
                type $m = $crate::lbm::RmMrt;
                $body
            }
            $crate::lbm::CollisionModel::AcmMrt => {
                type $m = $crate::lbm::AcmMrt;
                $body
            }
        }
    };
}

/// Relaxes the second-order moments `m` toward `eq`: the shear moments (off-diagonal, and the
/// differences of the diagonal) with `shear`, the trace with `bulk`. Each relaxation is
/// `x + rate (x_eq - x)`, one [`fma`]. The other orders are left to the caller.
#[inline(always)]
pub(crate) fn relax_second_order(m: &mut [f32; Q], eq: &[f32; Q], shear: f32, bulk: f32) {
    unroll!(i in [0, 1, 2] => {
        let k = [mi(1, 1, 0), mi(1, 0, 1), mi(0, 1, 1)][i];
        m[k] = fma(shear, eq[k] - m[k], m[k]);
    });
    let (xx, yy, zz) = (m[mi(2, 0, 0)], m[mi(0, 2, 0)], m[mi(0, 0, 2)]);
    let (exx, eyy, ezz) = (eq[mi(2, 0, 0)], eq[mi(0, 2, 0)], eq[mi(0, 0, 2)]);
    let (d1, e1) = (xx - yy, exx - eyy);
    let (d2, e2) = (xx - zz, exx - ezz);
    let (t, et) = (xx + yy + zz, exx + eyy + ezz);
    let d1 = fma(shear, e1 - d1, d1);
    let d2 = fma(shear, e2 - d2, d2);
    let t = fma(bulk, et - t, t);
    let xx = (d1 + d2 + t) * (1.0 / 3.0);
    m[mi(2, 0, 0)] = xx;
    m[mi(0, 2, 0)] = xx - d1;
    m[mi(0, 0, 2)] = xx - d2;
}

/// Collides 27 populations with the collision model `M` and Guo forcing:
/// `f + S/2 -> collide -> + S/2`. Returns `(rho, u)`.
#[inline(always)]
pub fn collide<M: Model>(f: &mut [f32; Q], p: &LbmParams) -> (f32, [f32; 3]) {
    collide_with::<M>(f, &p.rates, p.force, p.has_force != 0, p.smagorinsky)
}

/// The collision with rates `rates` and body force density `force`, its source term applied
/// when `has_force`; with `smagorinsky > 0` ([`LbmParams::smagorinsky`]) the shear rate is the
/// cell's own, the subgrid model's ([`les::smagorinsky_rates`]): a branch the whole launch
/// takes alike.
#[inline(always)]
pub fn collide_with<M: Model>(
    f: &mut [f32; Q],
    rates: &Rates,
    force: [f32; 3],
    has_force: bool,
    smagorinsky: f32,
) -> (f32, [f32; 3]) {
    let (rho, j) = moments::density_momentum(f);
    let u = moments::velocity(rho, j, force);
    let mut rates = *rates;
    if smagorinsky > 0.0 {
        rates = les::smagorinsky_rates(f, rho, u, force, &rates, smagorinsky);
    }
    if has_force {
        forcing::add_half_source(f, u, force);
    }
    M::collide(f, rho, u, &rates);
    if has_force {
        forcing::add_half_source(f, u, force);
    }
    (rho, u)
}
