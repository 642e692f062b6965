//! The WALE subgrid model on the CPU reference: a decaying 2D Taylor-Green vortex loses its
//! energy faster by the eddy viscosity the model predicts, for every collision model; pure
//! shear gets none; a run with the model resumes from a checkpoint bit for bit; bad constants
//! and ranks are refused in one line. The CUDA twin is in `parity_setups`
//! (`fluid_gpu_parity.rs`, `murmur fluid parity`).

mod support;

use murmur::internals::checkpoint::newest_valid;
use murmur::internals::fluid::scene::{poiseuille, taylor_green};
use murmur_common::lbm::wale::factor;
use murmur_common::lbm::CollisionModel;
use std::path::Path;

const FIRST: u32 = 100;
const LAST: u32 = 300;
const N: u32 = 32;

/// The energy's decay rate between steps `FIRST` and `LAST` of an `N^2` vortex of amplitude
/// `u0` at viscosity `nu`, with WALE constant `cw` (0: no model).
fn decay_rate(model: CollisionModel, u0: f32, nu: f32, cw: f32) -> f64 {
    let mut setup = taylor_green(N, 1, u0, nu, model).unwrap();
    if cw > 0.0 {
        setup.params.wale = factor(cw);
    }
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    for _ in 0..FIRST {
        b.step().unwrap();
    }
    let e0 = support::energy(b.as_mut());
    for _ in FIRST..LAST {
        b.step().unwrap();
    }
    (e0 / support::energy(b.as_mut())).ln() / (LAST - FIRST) as f64
}

/// The ratio of the vortex's decay rates with and without the model, from the formula in f64:
/// `<(nu + nu_t) S:S> / <nu S:S>` over the period. For `u = u0 (sin kx cos ky, -cos kx sin ky)`,
/// with `a = du/dx` and `b = du/dy = -dv/dx`: `S:S = 2 a^2`, `g^2 = (a^2 - b^2) diag(1, 1, 0)`,
/// so `Sd:Sd = 2 (a^2 - b^2)^2 / 3`. The gradient the model sees is the central difference's:
/// `k` times `sin k / k`.
fn expected_ratio(u0: f64, nu: f64, cw: f64) -> f64 {
    let k = 2.0 * std::f64::consts::PI / N as f64;
    let g = u0 * k.sin();
    let m = 512;
    let (mut plain, mut model) = (0.0, 0.0);
    for i in 0..m {
        for j in 0..m {
            let (x, y) = (
                2.0 * std::f64::consts::PI * (i as f64 + 0.5) / m as f64,
                2.0 * std::f64::consts::PI * (j as f64 + 0.5) / m as f64,
            );
            let a = g * x.cos() * y.cos();
            let b = -g * x.sin() * y.sin();
            let ss = 2.0 * a * a;
            let dd = 2.0 * (a * a - b * b).powi(2) / 3.0;
            let den = ss.powf(2.5) + dd.powf(1.25);
            let nu_t = if den > 0.0 {
                cw * cw * dd.powf(1.5) / den
            } else {
                0.0
            };
            // S:S of the true flow (the decay), nu_t of the differenced gradient.
            let true_ss = ss * (k / k.sin()).powi(2);
            plain += nu * true_ss;
            model += (nu + nu_t) * true_ss;
        }
    }
    model / plain
}

#[test]
fn a_vortex_decays_faster_by_the_models_eddy_viscosity() {
    // C_w = 1 (the formula's factor C_w^2 scales nu_t alone) for an effect of a quarter of the
    // molecular dissipation.
    let (u0, nu, cw) = (0.1f32, 0.005f32, 1.0f32);
    let expected = expected_ratio(u0 as f64, nu as f64, cw as f64);
    assert!(expected > 1.2, "{expected}");
    let k = 2.0 * std::f64::consts::PI / N as f64;
    for model in CollisionModel::ALL {
        let plain = decay_rate(model, u0, nu, 0.0);
        let wale = decay_rate(model, u0, nu, cw);
        let ratio = wale / plain;
        // Measured (32^2, lattice Mach 0.17): the MRT models 1.5 % under the prediction; BGK
        // 4.7 % over it, its plain decay 13 % slower than the molecular rate 4 nu k^2 (the MRT
        // models' 3 %), which inflates its ratio.
        let tolerance = if model == CollisionModel::Bgk {
            0.06
        } else {
            0.025
        };
        assert!(
            (ratio / expected - 1.0).abs() < tolerance,
            "{model:?}: ratio {ratio:.4}, expected {expected:.4} (rates {plain:.3e}, {wale:.3e})"
        );
        let molecular = 4.0 * nu as f64 * k * k;
        assert!(
            (plain / molecular - 1.0).abs() < 0.15,
            "{model:?}: {plain:.4e} vs {molecular:.4e}"
        );
    }
}

#[test]
fn pure_shear_gets_no_eddy_viscosity() {
    // A body-force channel is pure shear (u along x varies across y alone): WALE's eddy
    // viscosity vanishes, so the profile is the plain one's.
    let profile = |cw: f32| {
        let mut setup = poiseuille(24, 0.05, 0.1, CollisionModel::AcmMrt).unwrap();
        setup.params.wale = if cw > 0.0 { factor(cw) } else { 0.0 };
        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
        for _ in 0..400 {
            b.step().unwrap();
        }
        let f = b.fields().unwrap();
        (0..f.n()).map(|c| f.u(c)[0] as f64).collect::<Vec<_>>()
    };
    let (plain, wale) = (profile(0.0), profile(0.5));
    let peak = plain.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(peak > 0.01, "{peak}");
    let worst = plain
        .iter()
        .zip(&wale)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    assert!(worst < 1e-6 * peak, "{worst} of {peak}");
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The newest checkpoint in `dir`, which must be of step `step`.
fn checkpoint(dir: &Path, step: u64) -> std::path::PathBuf {
    let f = newest_valid(dir).unwrap();
    assert_eq!(f.step, step);
    f.path
}

#[test]
fn a_run_with_the_model_resumes_bit_for_bit() {
    // The obstacle scene: an inlet, an outlet and an immersed sphere, so the gradient reads
    // boundary velocities; in place and pull.
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/fluid/obstacle.toml"
    ))
    .unwrap();
    let text = text.replace("[lattice]", "[lattice]\nles = \"wale\"");
    for streaming in ["pull", "in-place"] {
        let dir = support::tmp("wale-resume", streaming);
        std::fs::create_dir_all(&dir).unwrap();
        let scene = dir.join("obstacle-wale.toml");
        std::fs::write(&scene, &text).unwrap();
        let base = [
            "fluid",
            "run",
            s(&scene),
            "--backend",
            "cpu",
            "--quiet",
            "--coarsen",
            "4",
            "--streaming",
            streaming,
        ];
        let (a, b) = (dir.join("a"), dir.join("b"));
        let straight = [&base[..], &["--out", s(&a), "--steps", "20"]].concat();
        let straight = [&straight[..], &["--checkpoint-every", "20"]].concat();
        let out = support::murmur_ok(&straight);
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("(acm-mrt + wale C_w 0.5, fp32"), "{stdout}");
        let first = [&base[..], &["--out", s(&b), "--steps", "9"]].concat();
        support::murmur_ok(&[&first[..], &["--checkpoint-every", "9"]].concat());
        let ck = b.join("checkpoints");
        let second = [
            &base[..],
            &["--out", s(&b), "--steps", "20", "--resume", s(&ck)],
        ]
        .concat();
        support::murmur_ok(&[&second[..], &["--checkpoint-every", "20"]].concat());
        let (ca, cb) = (checkpoint(&a.join("checkpoints"), 20), checkpoint(&ck, 20));
        for array in ["populations", "wale_velocity"] {
            assert_eq!(
                support::array_sha(&ca, array),
                support::array_sha(&cb, array),
                "{array}"
            );
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn bad_constants_and_ranks_are_refused_in_one_line() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/fluid/taylor-green.toml"
    ))
    .unwrap();
    for (cw, args, expect) in [
        ("1.5", &[][..], "lattice.wale must be a number in (0, 1]"),
        ("0", &[][..], "lattice.wale must be a number in (0, 1]"),
        (
            "0.5",
            &["--ranks", "2"][..],
            "les = \"wale\" runs on one lattice",
        ),
    ] {
        let scene = text.replace(
            "[lattice]",
            &format!("[lattice]\nles = \"wale\"\nwale = {cw}"),
        );
        let path = support::tmp("wale", &format!("cw-{cw}.toml"));
        std::fs::write(&path, scene).unwrap();
        let run = [&["fluid", "run", s(&path), "--steps", "1"][..], args].concat();
        support::assert_one_line_failure(&run, expect);
    }
}
