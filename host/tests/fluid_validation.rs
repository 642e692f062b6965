//! The quick validation cases on the CPU reference: every model must meet the targets
//! on small grids (TGV decay rate, Poiseuille profile, cavity Re 100 against Ghia et al.).

use murmur::internals::fluid::validate::{self, Opener, Sizes};
use murmur::internals::fluid::{FluidBackend, FluidError, Setup};
use murmur_common::lbm::CollisionModel;

fn cpu() -> impl FnMut(&Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    |s: &Setup| murmur::internals::fluid::cpu::open(s)
}

#[test]
fn taylor_green_and_poiseuille_meet_their_targets_for_every_model() {
    let mut open = cpu();
    for m in CollisionModel::ALL {
        let q = Sizes::QUICK;
        let tgv =
            validate::taylor_green_case(&mut open as &mut Opener, m, q.tgv, q.tgv_depth).unwrap();
        assert!(tgv.passed(), "{tgv:?}");
        let p = validate::poiseuille_case(&mut open as &mut Opener, m, q.poiseuille).unwrap();
        assert!(p.passed(), "{p:?}");
    }
}

#[test]
fn cavity_re100_matches_ghia_for_every_model() {
    let mut open = cpu();
    for m in CollisionModel::ALL {
        let r = validate::cavity_case(&mut open as &mut Opener, m, Sizes::QUICK.cavity_re100, 100)
            .unwrap();
        assert!(r.passed(), "{r:?}");
    }
}

#[test]
fn ghia_scoring_is_zero_on_ghia_and_grows_with_a_perturbation() {
    let rms = validate::ghia_rms(&validate::GHIA_U_RE100, &validate::GHIA_V_RE100, 100);
    assert_eq!(rms, 0.0);
    let u: Vec<f64> = validate::GHIA_U_RE100.iter().map(|v| v + 0.01).collect();
    let rms = validate::ghia_rms(&u, &validate::GHIA_V_RE100, 100);
    assert!((rms - 0.01 / 2f64.sqrt()).abs() < 1e-12, "{rms}");
}

#[test]
fn immersed_boundary_quick_rows_meet_their_targets() {
    // `murmur fluid validate --quick`'s immersed-boundary rows: Couette flow, DFG 2D-1 at 20
    // cells per diameter (the immersed cylinder, then the cylinder of cut links with
    // interpolated bounce-back), the Galilean check at 8 (a few minutes on 2 cores).
    let mut open = cpu();
    let rows =
        murmur::internals::fluid::ib::validate::run_all(&mut open as &mut Opener, true, |_| {})
            .unwrap();
    assert_eq!(rows.len(), 5);
    for r in &rows {
        assert!(r.passed(), "{r:?}");
    }
}
