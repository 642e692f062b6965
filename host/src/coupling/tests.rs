use super::*;
use murmur_common::coupling::grid::box_naive_sums;
use murmur_common::coupling::sdf::no_samples;
use murmur_common::flock::rules::new_velocity;
use murmur_common::math::length;

fn rates() -> Rates {
    Rates {
        rule: [0.01, 0.1, 0.1],
        distance: [5.0, 3.0, 5.0],
        max_speed: 0.5,
    }
}

/// `n` boids spread over `b` with small relative velocities (a fixed seed).
fn start(b: &BoidBox, n: usize) -> (Vec<Vec3>, Vec<Vec3>) {
    let mut state = 0x9e37_79b9_u32;
    let mut next = move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    (0..n)
        .map(|_| {
            let p = Vec3::new(
                b.lo[0] + next() * (b.hi[0] - b.lo[0]),
                b.lo[1] + next() * (b.hi[1] - b.lo[1]),
                b.lo[2] + next() * (b.hi[2] - b.lo[2]),
            );
            (p, Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5) * 0.2)
        })
        .unzip()
}

/// A shear flow along x growing with y.
fn shear(x: Vec3, _: f32) -> Option<Vec3> {
    Some(Vec3::new(0.02 * x.y, 0.0, 0.0))
}

#[test]
fn the_cpu_flock_follows_a_brute_force_reference_in_a_shear_flow() {
    // Periodic along x and z, walls along y.
    let b = BoidBox {
        lo: [0.0, 0.0, 0.0],
        hi: [40.0, 30.0, 24.0],
        periodic: 0b101,
        through: 0,
    };
    let (pos, rel) = start(&b, 500);
    for tau_p in [0.0, 2.0] {
        let mut boids = CpuBoids::new(pos.clone(), rel.clone(), rates(), 1.0, tau_p, b).unwrap();
        // The reference: id order, every other boid at its nearest image, the same rules,
        // motion and box.
        let p = rates().scales(1.0);
        let motion = Motion::new(1.0, tau_p);
        let (mut x, mut v, mut w) = (pos.clone(), rel.clone(), rel.clone());
        for _ in 0..10 {
            boids.substep(shear);
            let n = x.len();
            let w_new: Vec<Vec3> = (0..n)
                .map(|i| {
                    let s = box_naive_sums(&p, &b, n as u32, i as u32, x[i], |j| {
                        (x[j as usize], w[j as usize])
                    });
                    new_velocity(&p, w[i], &s)
                })
                .collect();
            for i in 0..n {
                let (xi, vi) = motion.advance(x[i], v[i], w_new[i], shear);
                (x[i], v[i]) = b.confine(xi, vi);
                w[i] = b.confine(xi, w_new[i]).1;
            }
        }
        let mut worst = 0.0f32;
        for (k, &id) in boids.id.iter().enumerate() {
            let i = id as usize;
            // Positions compared at the nearest image (a periodic wrap may differ by a period).
            let d = murmur_common::coupling::grid::nearest_image(&b, x[i], boids.pos[k]) - x[i];
            worst = worst
                .max(length(d))
                .max(length(boids.rel[k] - w[i]))
                .max(length(boids.vel[k] - v[i]));
        }
        // The sums differ only in their order of addition.
        assert!(worst < 1e-4, "tau_p {tau_p}: worst difference {worst}");
        // Every boid is still in its box, each id once.
        let mut ids = boids.id.clone();
        ids.sort_unstable();
        assert_eq!(ids, (0..500).collect::<Vec<u32>>());
        for q in &boids.pos {
            let q = q.to_array();
            assert!((0..3).all(|a| q[a] >= b.lo[a] && q[a] <= b.hi[a]), "{q:?}");
        }
        // The rules acted: the relative velocities changed.
        assert!(boids
            .id
            .iter()
            .zip(&boids.rel)
            .any(|(&id, r)| length(*r - rel[id as usize]) > 1e-3));
    }
}

#[test]
fn bad_flocks_are_refused_in_one_line() {
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [40.0, 8.0, 24.0],
        periodic: 0b011,
        through: 0,
    };
    let (pos, rel) = start(&b, 10);
    let e = CpuBoids::new(pos.clone(), rel.clone(), rates(), 1.0, 0.0, b)
        .err()
        .unwrap();
    assert_eq!(
        e,
        BoidsError::ShortPeriod {
            axis: 'y',
            extent: 8.0,
            reach: 5.0
        }
    );
    let ok = BoidBox {
        periodic: 0b001,
        through: 0,
        ..b
    };
    let mut outside = pos.clone();
    outside[3].z = 25.0;
    assert!(matches!(
        CpuBoids::new(outside, rel.clone(), rates(), 1.0, 0.0, ok),
        Err(BoidsError::Outside { index: 3, .. })
    ));
    assert!(matches!(
        CpuBoids::new(pos.clone(), rel.clone(), rates(), 1.0, -1.0, ok),
        Err(BoidsError::Times { .. })
    ));
    assert!(matches!(
        CpuBoids::new(pos, rel[..5].to_vec(), rates(), 1.0, 0.0, ok),
        Err(BoidsError::Lengths(10, 5))
    ));
    // One line each, the long ones too.
    let short = BoidsError::ShortPeriod {
        axis: 'y',
        extent: 8.0,
        reach: 5.0,
    };
    let times = BoidsError::Times {
        dt: 0.0,
        tau_p: -1.0,
    };
    for e in [short, times] {
        assert!(!e.to_string().contains('\n'), "{e}");
    }
}

/// A sphere of radius 5 moving along x through a periodic box, and the boids it meets.
fn sphere_at(x: f32) -> Obstacle {
    Obstacle {
        sdf: murmur_common::coupling::sdf::Sdf {
            kind: murmur_common::coupling::sdf::SPHERE,
            a: 5.0,
            ..Default::default()
        },
        state: murmur_common::lbm::ib::solid::SolidState {
            center: [x, 16.0, 16.0],
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ..Default::default()
        },
    }
}

/// Boids outside the sphere at `x`, the worst signed distance.
fn deepest(boids: &CpuBoids, o: &Obstacle) -> f32 {
    boids
        .pos
        .iter()
        .map(|&p| o.sdf.distance(&o.state, p, &no_samples))
        .fold(f32::INFINITY, f32::min)
}

#[test]
fn no_boid_ends_a_substep_inside_a_sphere_that_sweeps_through_the_flock() {
    let b = BoidBox {
        lo: [0.0, 0.0, 0.0],
        hi: [48.0, 32.0, 32.0],
        periodic: 0b111,
        through: 0,
    };
    let (pos, rel) = start(&b, 800);
    let keep = |p: &Vec3| {
        sphere_at(8.0)
            .sdf
            .distance(&sphere_at(8.0).state, *p, &no_samples)
            > 0.5
    };
    let (pos, rel): (Vec<Vec3>, Vec<Vec3>) =
        pos.into_iter().zip(rel).filter(|(p, _)| keep(p)).unzip();
    let avoid = Avoidance {
        reach: 3.0,
        rate: 0.05,
        margin: 0.05,
        h: 1e-2,
    };
    // Still air; the sphere moves 0.3 cells per substep, faster than the boids' speed limit
    // of 0.5 allows them to flee for long: the projection has work to do.
    let still = |_: Vec3, _: f32| Some(Vec3::ZERO);
    let mut boids = CpuBoids::new(pos.clone(), rel.clone(), rates(), 1.0, 0.0, b)
        .unwrap()
        .avoiding(avoid)
        .unwrap();
    let mut plain = CpuBoids::new(pos, rel, rates(), 1.0, 0.0, b).unwrap();
    let (mut worst, mut swept) = (f32::INFINITY, 0usize);
    for k in 1..=100 {
        let o = sphere_at(8.0 + 0.3 * k as f32);
        boids.substep_among(still, &[o]);
        plain.substep(still);
        worst = worst.min(deepest(&boids, &o));
        swept += plain
            .pos
            .iter()
            .filter(|&&p| o.sdf.distance(&o.state, p, &no_samples) < 0.0)
            .count();
    }
    assert!(
        worst >= 0.0,
        "a boid ended a substep {} cells inside",
        -worst
    );
    assert!(
        swept > 100,
        "the sphere met too few boids to test anything: {swept}"
    );
}

#[test]
fn avoidance_settings_out_of_range_are_refused() {
    let b = BoidBox {
        lo: [0.0, 0.0, 0.0],
        hi: [48.0, 32.0, 24.0],
        periodic: 0b111,
        through: 0,
    };
    let (pos, rel) = start(&b, 10);
    let new = || CpuBoids::new(pos.clone(), rel.clone(), rates(), 1.0, 0.0, b).unwrap();
    let a = Avoidance {
        reach: 3.0,
        rate: 0.05,
        margin: 0.05,
        h: 1e-2,
    };
    assert!(new().avoiding(a).is_ok());
    for bad in [
        Avoidance { reach: 30.0, ..a },
        Avoidance { reach: -1.0, ..a },
        Avoidance {
            rate: f32::NAN,
            ..a
        },
        Avoidance { h: 0.0, ..a },
    ] {
        let e = new().avoiding(bad).err().expect("refused");
        assert!(e.to_string().contains("avoidance distance"), "{e}");
    }
}

#[test]
fn boids_are_saved_as_a_flock_snapshot_in_si_units() {
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [40.0, 30.0, 24.0],
        periodic: 0b111,
        through: 0,
    };
    let (pos, rel) = start(&b, 50);
    let mut boids = CpuBoids::new(pos, rel, rates(), 1.0, 0.0, b).unwrap();
    boids.substep(shear);
    let units = murmur_common::lbm::Units {
        dx: 0.01,
        dt: 0.001,
        rho0: 1.2,
    };
    let dir = std::env::temp_dir().join(format!("murmur-boids-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene_000010_boids.npz");
    boids.save(&path, &units).unwrap();
    let back = crate::flock::snapshot::load(&path).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(back.id, (0..50).collect::<Vec<u32>>(), "ordered by id");
    for (k, &id) in boids.id.iter().enumerate() {
        let i = id as usize;
        // 1 cm cells, 1 ms steps: cells x 0.01 m, cells per step x 10 m/s.
        assert!(length(back.pos[i] - boids.pos[k] * 0.01) < 1e-6);
        assert!(length(back.vel[i] - boids.vel[k] * 10.0) < 1e-5);
    }
}
