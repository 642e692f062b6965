use super::*;
use murmur_common::coupling::grid::box_naive_sums;
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
