//! Conservation over many steps on the CPU reference, the stability checks, the NaN stop and the
//! field writers.

use murmur::internals::fluid::driver::{self, LastOutput, RunOptions};
use murmur::internals::fluid::scene::{self, SceneFile};
use murmur::internals::fluid::{output, FluidBackend, FluidError};
use murmur_common::lbm::health::Bounds;
use murmur_common::lbm::{CollisionModel, Units};
use std::path::Path;

fn totals(b: &mut dyn FluidBackend, flags: &[u8]) -> (f64, [f64; 3]) {
    let f = b.populations().unwrap();
    let n = b.lattice().cells();
    let mut mass = 0.0;
    let mut mom = [0.0; 3];
    for q in 0..27 {
        let c = murmur_common::lbm::d3q27::velocity(q);
        for cell in (0..n).filter(|&c| flags[c] == 0) {
            let v = f[q * n + cell] as f64;
            mass += v;
            for a in 0..3 {
                mom[a] += c[a] as f64 * v;
            }
        }
    }
    (mass, mom)
}

#[test]
fn periodic_box_conserves_mass_and_momentum_and_force_adds_momentum() {
    for model in CollisionModel::ALL {
        let mut setup = scene::taylor_green(16, 4, 0.05, 0.02, model).unwrap();
        let n = setup.lattice().cells() as f64;
        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
        let (m0, p0) = totals(b.as_mut(), &setup.flags);
        for _ in 0..50 {
            b.step().unwrap();
        }
        let (m1, p1) = totals(b.as_mut(), &setup.flags);
        assert!((m1 - m0).abs() / m0 < 1e-6, "{model:?} mass {m0} -> {m1}");
        for a in 0..3 {
            assert!(
                (p1[a] - p0[a]).abs() < 1e-4,
                "{model:?} momentum {a}: {p0:?} -> {p1:?}"
            );
        }
        // A uniform force F adds F per cell and step (Guo forcing).
        setup.params.force = [1e-5, 0.0, -2e-5];
        setup.params.has_force = 1;
        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
        for _ in 0..50 {
            b.step().unwrap();
        }
        let (_, p2) = totals(b.as_mut(), &setup.flags);
        for a in 0..3 {
            let want = p0[a] + 50.0 * n * setup.params.force[a] as f64;
            assert!(
                (p2[a] - want).abs() < 1e-3,
                "{model:?} forced momentum {a}: {} vs {want}",
                p2[a]
            );
        }
    }
}

#[test]
fn closed_box_with_resting_walls_conserves_mass() {
    for model in CollisionModel::ALL {
        // A cavity with a resting lid is a closed box: bounce-back conserves mass exactly.
        let mut setup = scene::cavity(12, 3, 0.0, 0.05, model).unwrap();
        setup.initial = murmur_common::lbm::Initial::taylor_green(0.02, 0.5);
        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
        let (m0, _) = totals(b.as_mut(), &setup.flags);
        for _ in 0..100 {
            b.step().unwrap();
        }
        let (m1, _) = totals(b.as_mut(), &setup.flags);
        assert!((m1 - m0).abs() / m0 < 1e-6, "{model:?} mass {m0} -> {m1}");
    }
}

#[test]
fn unstable_setups_are_refused_with_a_clear_message() {
    let e = scene::check_stability(0.0, 0.1, CollisionModel::Bgk).unwrap_err();
    assert!(e.to_string().contains("tau"), "{e}");
    let e = scene::check_stability(-0.01, 0.1, CollisionModel::Bgk).unwrap_err();
    assert!(e.to_string().contains("<= 0.5"), "{e}");
    let e = scene::check_stability(0.1, 0.2, CollisionModel::Bgk).unwrap_err();
    assert!(e.to_string().contains("Mach"), "{e}");
    let w = scene::check_stability(0.002, 0.1, CollisionModel::Bgk).unwrap();
    assert!(w.iter().any(|w| w.contains("close to 0.5")), "{w:?}");
    assert!(scene::check_stability(0.05, 0.05, CollisionModel::Bgk)
        .unwrap()
        .is_empty());

    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid/cavity-re100.toml");
    let mut f = SceneFile::load(&path).unwrap();
    f.physical.viscosity = 1e-9; // tau -> 1/2
    assert!(f.build().unwrap_err().to_string().contains("tau"));
    let mut f = SceneFile::load(&path).unwrap();
    f.lattice.velocity = 0.25; // Mach 0.43
    assert!(f.build().unwrap_err().to_string().contains("Mach"));
}

#[test]
fn every_shipped_scene_parses_and_builds() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid");
    let mut count = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let s = SceneFile::load(&p).unwrap().build().unwrap();
            assert!(s.setup.fluid_cells() > 0, "{}", p.display());
            count += 1;
        }
    }
    assert!(count >= 5, "expected the five scenes, found {count}");
    // Unknown keys are errors.
    let bad = "name = \"x\"\nphysical = { length = 1.0, velocity = 1.0, viscosity = 0.01 }\nlattice = { resolution = 8, typo = 1 }\ndomain = { cells = [8, 8, 8] }\n";
    assert!(toml::from_str::<SceneFile>(bad).is_err());
}

#[test]
fn a_nan_stops_the_run_naming_the_step_cell_and_quantity() {
    let mut setup = scene::taylor_green(16, 2, 0.05, 0.05, CollisionModel::Bgk).unwrap();
    // A poisoned start: the initial velocity is NaN.
    setup.initial.velocity[0] = f32::NAN;
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    let mut last: Option<LastOutput> = None;
    let opts = RunOptions {
        steps: 100,
        check_every: 10,
        output_every: 5,
        forces_every: 0,
        health: Bounds::DEFAULT,
        progress: false,
        inlet: Default::default(),
    };
    let err = driver::run(b.as_mut(), opts, &mut last, &mut driver::Discard).unwrap_err();
    let text = err.to_string();
    match err {
        FluidError::Unhealthy {
            step,
            last_output,
            what,
            ..
        } => {
            // The state is NaN from step 1; the first check is the first output step, 5.
            assert_eq!(step, 5);
            assert_eq!(last_output, None);
            assert!(what.contains("non-finite"), "{what}");
        }
        e => panic!("expected Unhealthy, got {e}"),
    }
    assert!(
        text.contains("step 5") && text.contains("no output"),
        "{text}"
    );
    assert!(last.is_none());
}

#[test]
fn a_density_excursion_stops_the_run_after_keeping_the_outputs_that_passed() {
    // A Taylor-Green vortex whose pressure field stays within |rho - 1| <= 0.1 passes; with a
    // bound tighter than its initial density variation the first check fails.
    let setup = scene::taylor_green(16, 1, 0.05, 0.05, CollisionModel::Bgk).unwrap();
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    let mut last: Option<LastOutput> = None;
    let mut opts = RunOptions {
        steps: 20,
        check_every: 10,
        output_every: 10,
        forces_every: 0,
        health: Bounds::DEFAULT,
        progress: false,
        inlet: Default::default(),
    };
    let r = driver::run(b.as_mut(), opts, &mut last, &mut driver::Discard).unwrap();
    let h = r.health.unwrap();
    assert!(h.min_rho < 1.0 && h.max_rho > 1.0 && h.first_bad.is_none());
    assert!(h.max_mach > 0.05 && h.max_mach < 0.1, "{h:?}");
    assert_eq!(last.as_ref().map(|c| c.step), Some(20));
    opts.health.max_density_deviation = 1e-4;
    let err = driver::run(b.as_mut(), opts, &mut last, &mut driver::Discard).unwrap_err();
    match err {
        FluidError::Unhealthy {
            step,
            last_output,
            what,
            ..
        } => {
            assert_eq!(step, 30);
            assert_eq!(last_output, Some(20));
            assert!(what.starts_with("density"), "{what}");
        }
        e => panic!("expected Unhealthy, got {e}"),
    }
}

#[test]
fn vti_and_npz_are_written_and_readable() {
    let setup = scene::cavity(6, 2, 0.1, 0.05, CollisionModel::AcmMrt).unwrap();
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    for _ in 0..5 {
        b.step().unwrap();
    }
    let f = b.fields().unwrap();
    let dir = std::env::temp_dir().join(format!("murmur-fluid-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let units = Units::from_scales(1.0, 6.0, 1.0, 0.1, 1000.0);
    let vti = dir.join("a.vti");
    output::write(&vti, &f, &setup.flags, &units, 0.5).unwrap();
    let bytes = std::fs::read(&vti).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("<?xml"));
    assert!(text.contains("WholeExtent=\"0 7 0 7 0 1\""));
    assert!(text.contains("Name=\"velocity\" NumberOfComponents=\"3\""));
    assert!(text.trim_end().ends_with("</VTKFile>"));
    // Appended block sizes: 4 arrays, each a u64 length + data.
    let n = 8 * 8 * 2;
    let raw = text.find("encoding=\"raw\">").unwrap();
    let start = raw + bytes[raw..].iter().position(|&b| b == b'_').unwrap() + 1;
    let first = u64::from_le_bytes(bytes[start..start + 8].try_into().unwrap());
    assert_eq!(first, 4 * n as u64);

    let npz = dir.join("a.npz");
    output::write(&npz, &f, &setup.flags, &units, 0.5).unwrap();
    let mut r = ndarray_npy::NpzReader::new(std::fs::File::open(&npz).unwrap()).unwrap();
    let v: ndarray::Array4<f32> = r.by_name("velocity").unwrap();
    assert_eq!(v.shape(), &[2, 8, 8, 3]);
    // The lid row moves at 1 m/s in SI units.
    assert!((v[[0, 7, 3, 0]] - 1.0).abs() < 1e-5);
    let d: ndarray::Array3<f32> = r.by_name("density").unwrap();
    let (lo, hi) = d
        .iter()
        .fold((f32::MAX, f32::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert!(lo > 900.0 && hi < 1100.0, "density {lo}..{hi}");
    assert!(output::write(&dir.join("a.txt"), &f, &setup.flags, &units, 0.0).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}
