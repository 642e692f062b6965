use super::*;
use murmur_common::coupling::sdf::{Obstacle, Sdf, SPHERE};
use murmur_common::lbm::ib::solid::SolidState;

/// 1 cm cells, 1 ms steps, air.
fn units() -> Units {
    Units {
        dx: 0.01,
        dt: 0.001,
        rho0: 1.2,
    }
}

const TABLE: &str = r##"
count = 1000
spawn = { box = { lo = [0.1, 0.1, 0.1], hi = [0.3, 0.2, 0.2] } }
seed = 7
rates = [1.0, 10.0, 5.0]
radii = [0.05, 0.03, 0.05]
max_speed = 2.0
tau_p = 0.05
mass = 1e-6
avoid = 0.04
avoid_rate = 20.0
coupling = "two-way"
colour = "#ffaa00"
substeps = 4
"##;

fn spec() -> FlockSpec {
    toml::from_str(TABLE).unwrap()
}

const EXTENT: [f64; 3] = [0.64, 0.32, 0.32];

fn frame() -> Frame {
    Frame {
        units: units(),
        extent: EXTENT,
        origin: [0.0; 3],
    }
}

#[test]
fn a_flock_table_reads_and_converts_to_lattice_units() {
    let s = spec();
    let f = s
        .lattice(0, &frame(), &ObstacleList::default(), 1024)
        .unwrap();
    // Rates per step: 1/s x 1 ms; radii in cells; the speed limit in cells per step.
    assert_eq!(f.rates.rule, [0.001, 0.01, 0.005]);
    assert_eq!(f.rates.distance, [5.0, 3.0, 5.0]);
    assert!((f.rates.max_speed - 0.2).abs() < 1e-6);
    assert!((f.tau_p - 50.0).abs() < 1e-9);
    // 1e-6 kg against 1.2 kg/m^3 x 1e-6 m^3 of air per cell.
    assert!((f.mass - 1.0 / 1.2).abs() < 1e-9);
    assert!((f.avoidance.reach - 4.0).abs() < 1e-6 && (f.avoidance.rate - 0.02).abs() < 1e-7);
    assert_eq!(f.way, Way::TwoWay);
    let p = s.positions(&frame());
    assert_eq!(p.len(), 1000);
    assert!(p
        .iter()
        .all(|q| (10.0..=30.0).contains(&q.x) && (10.0..=20.0).contains(&q.y)));
    assert_eq!(p, s.positions(&frame()), "the same seed, the same boids");
    let other = FlockSpec {
        seed: 8,
        ..s.clone()
    };
    assert_ne!(p, other.positions(&frame()));
    let ball = FlockSpec {
        spawn: Spawn::Sphere {
            center: [0.3, 0.16, 0.16],
            radius: 0.05,
        },
        ..s
    };
    let centre = Vec3::new(30.0, 16.0, 16.0);
    assert!(ball
        .positions(&frame())
        .iter()
        .all(|q| murmur_common::math::length(*q - centre) <= 5.0 + 1e-4));
}

#[test]
fn unknown_keys_and_bad_flocks_are_refused_in_one_line() {
    let e = toml::from_str::<FlockSpec>(&format!("{TABLE}\nspeed = 3\n")).unwrap_err();
    assert!(e.to_string().contains("unknown field `speed`"), "{e}");
    let check = |s: FlockSpec, obstacles: &[Obstacle], want: &str| {
        let list = ObstacleList {
            list: obstacles,
            samples: &[],
        };
        let e = s.lattice(2, &frame(), &list, 1024).unwrap_err();
        let line = e.to_string();
        assert!(
            line.starts_with("flock 2: ") && line.contains(want),
            "{line}"
        );
        assert!(!line.contains('\n'), "{line}");
    };
    check(
        FlockSpec {
            tau_p: -1.0,
            ..spec()
        },
        &[],
        "tau_p must be",
    );
    check(
        FlockSpec {
            mass: f64::NAN,
            ..spec()
        },
        &[],
        "mass must be",
    );
    check(
        FlockSpec {
            tau_p: 0.0,
            ..spec()
        },
        &[],
        "needs tau_p > 0",
    );
    check(
        FlockSpec {
            mass: 0.0,
            ..spec()
        },
        &[],
        "needs a mass",
    );
    // tau_p of 0.5 steps and 83 cells of air's mass: a substep of 1/4 step is above
    // 2 tau_p / (1 + m / (rho V)) = 1 / 84.3.
    check(
        FlockSpec {
            tau_p: 0.0005,
            mass: 1e-4,
            ..spec()
        },
        &[],
        "unstable",
    );
    check(
        FlockSpec {
            avoid: 0.5,
            ..spec()
        },
        &[],
        "avoidance distance",
    );
    let outside = Spawn::Box {
        lo: [0.5, 0.1, 0.1],
        hi: [0.7, 0.2, 0.2],
    };
    check(
        FlockSpec {
            spawn: outside,
            ..spec()
        },
        &[],
        "outside the domain",
    );
    check(FlockSpec { count: 0, ..spec() }, &[], "at least 1");
    let red = Some("red".to_string());
    check(
        FlockSpec {
            colour: red,
            ..spec()
        },
        &[],
        "#rrggbb",
    );
    let e = spec()
        .lattice(2, &frame(), &ObstacleList::default(), 0)
        .unwrap_err();
    assert!(e.to_string().contains("MiB"), "{e}");
    // A solid holding the whole spawn box.
    let big = Obstacle {
        sdf: Sdf {
            kind: SPHERE,
            a: 30.0,
            ..Default::default()
        },
        state: SolidState {
            center: [20.0, 15.0, 15.0],
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ..Default::default()
        },
    };
    check(spec(), &[big], "inside a solid");
    // A one-way flock of tracers needs neither tau_p nor mass.
    let tracers = FlockSpec {
        tau_p: 0.0,
        mass: 0.0,
        coupling: Way::OneWay,
        ..spec()
    };
    assert!(tracers
        .lattice(0, &frame(), &ObstacleList::default(), 1024)
        .is_ok());
}
