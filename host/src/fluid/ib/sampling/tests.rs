use super::draw::{SplitMix64, SurfaceDraw};
use super::*;
use crate::fluid::ib::shapes::{capsule, cuboid, cylinder, sphere, torus, Pose, Primitive};
use proptest::prelude::*;
use std::f64::consts::PI;

/// A soup of `n` triangles with corners in `[-s, s]^3` from `seed` (big ones cross many
/// tiles and, with a short period, several periodic copies).
pub(super) fn soup(n: usize, s: f64, seed: u64) -> TriangleMesh {
    let mut rng = SplitMix64::new(seed);
    let mut mesh = TriangleMesh::default();
    for t in 0..n as u32 {
        for _ in 0..3 {
            let v = [0; 3].map(|_| (2.0 * rng.next_f64() - 1.0) * s);
            mesh.vertices.push(v);
        }
        mesh.triangles.push([3 * t, 3 * t + 1, 3 * t + 2]);
    }
    mesh
}

/// Smallest pairwise distance, minimum image along axes of non-zero `period`.
fn brute_min_distance(points: &[[f64; 3]], period: [f64; 3]) -> f64 {
    let mut best = f64::INFINITY;
    for i in 0..points.len() {
        for j in 0..i {
            let d = delta(points[i], points[j], period);
            best = best.min((d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt());
        }
    }
    best
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Random soups, periodic or not: the spacing holds across every wrap and the samples
    /// stay in the domain.
    #[test]
    fn random_surfaces_keep_the_spacing(
        n in 1usize..8,
        size in 0.5f64..3.0,
        seed in any::<u64>(),
        d in 0.2f64..0.6,
        periods in proptest::array::uniform3(prop_oneof![Just(0.0), 1.2f64..5.0]),
    ) {
        let mesh = soup(n, size, seed);
        prop_assume!(mesh.validate().is_ok());
        let period = periods.map(|p| if p > 0.0 { p.max(2.0 * d) } else { 0.0 });
        let s = poisson_disk(&mesh, d, seed, Some(period), 1 << 20).unwrap();
        let mut nearest = f64::INFINITY;
        for i in 0..s.len() {
            for j in 0..i {
                nearest = nearest.min(dist2(s.positions[i], s.positions[j], period).sqrt());
            }
            for (&x, &p) in s.positions[i].iter().zip(&period) {
                prop_assert!(p == 0.0 || (0.0..p).contains(&x));
            }
        }
        prop_assert!(nearest >= d, "{nearest} < {d}");
        if s.len() >= 2 {
            // The same pairs, through the wrap of the positions rather than the grid's.
            prop_assert!((nearest - s.min_spacing).abs() <= 1e-12 * (1.0 + nearest));
        }
    }
}

#[test]
fn samples_do_not_depend_on_the_thread_count() {
    let mesh = torus(6.0, 2.0, 0.3).unwrap();
    let on = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| poisson_disk(&mesh, 0.3, 17, Some([0.0, 0.0, 5.0]), 1 << 20).unwrap())
    };
    let one = on(1);
    assert!(one.len() > 1000);
    assert_eq!(one, on(3));
}

#[test]
fn spacing_for_a_sample_density() {
    // 10 samples per cell^2 at the default packing: d = sqrt(0.653 / 10).
    let d = spacing_for_samples_per_cell(10.0, PACKING_DENSITY).unwrap();
    assert!((d - 0.2555).abs() < 1e-4, "{d}");
    // The sampler lands within a few per cent of the asked density on a box.
    let mesh = cuboid([6.0, 5.0, 4.0]).unwrap();
    let s = poisson_disk(&mesh, d, 3, None, 1 << 22).unwrap();
    let got = s.samples_per_cell();
    assert!((got - 10.0).abs() < 0.3, "{got} per cell^2");
    // Feeding the measured density back reproduces the spacing.
    let again = spacing_for_samples_per_cell(s.samples_per_cell(), s.density()).unwrap();
    assert!((again - d).abs() < 1e-12);
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            spacing_for_samples_per_cell(bad, PACKING_DENSITY),
            Err(SamplingError::BadDensity(_))
        ));
    }
    assert!(spacing_for_samples_per_cell(1.0, 0.0).is_err());
}

#[test]
fn a_surface_too_wide_for_the_grid_is_refused() {
    let long = cuboid([1e6, 0.5, 0.5]).unwrap();
    let err = poisson_disk(&long, 0.5, 1, None, usize::MAX).unwrap_err();
    assert!(
        matches!(err, SamplingError::TooWide { axis: 0, .. }),
        "{err}"
    );
    assert!(!err.to_string().contains('\n'));
}

#[test]
fn dense_and_blocked_grids_give_the_same_samples() {
    let mesh = sphere(2.0, 0.3).unwrap();
    let tube = cylinder(1.0, 3.0, false, 0.3).unwrap();
    for (mesh, period) in [(&mesh, None), (&tube, Some([0.0, 0.0, 3.0]))] {
        let dense = sample(mesh, 0.3, 5, period, 1 << 20, usize::MAX).unwrap();
        let blocked = sample(mesh, 0.3, 5, period, 1 << 20, 0).unwrap();
        assert!(dense.len() > 100);
        assert_eq!(dense, blocked);
    }
}

#[test]
fn bad_sampling_input_is_refused() {
    let mesh = sphere(3.0, 0.5).unwrap();
    for d in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            poisson_disk(&mesh, d, 1, None, 1 << 20),
            Err(SamplingError::BadSpacing(_))
        ));
    }
    assert!(matches!(
        poisson_disk(&mesh, 0.5, 1, Some([0.0, 0.7, 0.0]), 1 << 20),
        Err(SamplingError::BadPeriod { axis: 1, .. })
    ));
    let err = poisson_disk(&mesh, 0.5, 1, None, 100).unwrap_err();
    let needed = max_count(mesh.area(), 0.5);
    assert_eq!(
        err,
        SamplingError::TooMany {
            needed,
            area: mesh.area(),
            spacing: 0.5,
            limit: 100
        }
    );
    let message = err.to_string();
    assert!(message.contains(&needed.to_string()) && !message.contains('\n'));
}

#[test]
fn samples_respect_the_minimum_distance() {
    for (mesh, d) in [
        (sphere(3.0, 0.5).unwrap(), 0.5),
        (torus(3.0, 1.0, 0.4).unwrap(), 0.4),
        (cuboid([2.0, 1.0, 1.5]).unwrap(), 0.5),
    ] {
        let s = poisson_disk(&mesh, d, 7, None, 1 << 20).unwrap();
        assert!(s.len() > 100);
        let brute = brute_min_distance(&s.positions, [0.0; 3]);
        assert!(brute >= d, "brute-force minimum {brute} < {d}");
        assert_eq!(brute, s.min_spacing);
        assert!(s.max_nearest < 2.0 * d, "gap: nearest {}", s.max_nearest);
    }
}

#[test]
fn periodic_samples_respect_the_minimum_distance_across_the_wrap() {
    // An open tube through the periodic z faces, and a box wider than a periodic x domain.
    let d = 0.5;
    let tube = cylinder(2.0, 6.0, false, d).unwrap();
    let period = [0.0, 0.0, 6.0];
    let s = poisson_disk(&tube, d, 3, Some(period), 1 << 20).unwrap();
    assert!(brute_min_distance(&s.positions, period) >= d);
    assert!(s.positions.iter().all(|p| (0.0..6.0).contains(&p[2])));
    // Without the wrap, samples near z = -3 and z = +3 do come closer than d through it.
    let open = poisson_disk(&tube, d, 3, None, 1 << 20).unwrap();
    assert!(brute_min_distance(&open.positions, period) < d);

    // A period of 1.2 is only 5 grid cells: the neighbour search covers the whole axis.
    let short = cylinder(1.0, 1.2, false, d).unwrap();
    let period = [0.0, 0.0, 1.2];
    let s = poisson_disk(&short, d, 8, Some(period), 1 << 20).unwrap();
    assert!(brute_min_distance(&s.positions, period) >= d);

    // A sphere crossing the periodic x faces without reaching around: positions wrap.
    let ball = sphere(2.0, d)
        .unwrap()
        .transformed(&Pose::new([0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], 1.0).unwrap());
    let period = [6.0, 0.0, 0.0];
    let s = poisson_disk(&ball, d, 9, Some(period), 1 << 20).unwrap();
    assert!(brute_min_distance(&s.positions, period) >= d);
    assert!(s.positions.iter().all(|p| (0.0..6.0).contains(&p[0])));
    assert!(s.positions.iter().any(|p| p[0] > 4.0));

    let slab = cuboid([2.5, 2.0, 0.5]).unwrap();
    let period = [4.0, 0.0, 0.0];
    let s = poisson_disk(&slab, d, 5, Some(period), 1 << 20).unwrap();
    assert!(brute_min_distance(&s.positions, period) >= d);
    assert_eq!(s.min_spacing, brute_min_distance(&s.positions, period));
}

#[test]
fn sampling_is_deterministic_per_seed() {
    let mesh = capsule(1.5, 3.0, 0.5).unwrap();
    let a = poisson_disk(&mesh, 0.5, 11, None, 1 << 20).unwrap();
    let b = poisson_disk(&mesh, 0.5, 11, None, 1 << 20).unwrap();
    let c = poisson_disk(&mesh, 0.5, 12, None, 1 << 20).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.positions, c.positions);
}

#[test]
fn per_sample_areas_sum_to_the_mesh_area() {
    let mesh = torus(4.0, 1.5, 0.5).unwrap();
    let s = poisson_disk(&mesh, 0.5, 1, None, 1 << 20).unwrap();
    let sum: f64 = s.area.iter().sum();
    assert_eq!(s.area.len(), s.len());
    assert!((sum - mesh.area()).abs() < 1e-9 * mesh.area());
}

/// Counts on a sphere of radius 12 (the numbers in the report; `--nocapture` prints them).
///
/// Bounds, as samples per `d^2` of area (`A / d^2` scaled; chord distances on a sphere of
/// radius `R >> d`, so the planar results hold up to `O(d / R)`):
/// - at most `2 / sqrt(3)` = 1.155: no packing of points `d` apart beats the hexagonal one;
/// - at least `1 / pi` = 0.318 for a maximal set: caps of chord radius `d` (area `pi d^2`
///   exactly, Archimedes) around the samples cover the sphere;
/// - dart throwing itself converges to the random sequential adsorption jamming coverage
///   0.547 of disks of diameter `d`, i.e. `0.547 * 4 / pi` = 0.697, from below, the deficit
///   falling as `t^(-1/2)` in the darts per disk `t`. The test asks for 0.60..0.70: at most
///   the limit (plus 0.5 % for faceting and curvature), at least 86 % of it, which a budget
///   of 50 darts per disk reaches. This is 0.52..0.61 of the hexagonal density: dart
///   throwing cannot reach the 0.6..0.75 of hexagonal sometimes quoted for elimination or
///   relaxation methods.
#[test]
fn sphere_counts_match_dart_throwing_theory() {
    let r = 12.0;
    for d in [1.0, 0.5] {
        let mesh = sphere(r, d).unwrap();
        let s = poisson_disk(&mesh, d, 2024, None, 1 << 20).unwrap();
        println!("sphere R = {r}: {}", s.summary());
        let density = s.density();
        assert!(
            (1.0 / PI..2.0 / 3f64.sqrt()).contains(&density),
            "{density}"
        );
        assert!((0.60..0.70).contains(&density), "density {density} per d^2");
        assert!(s.min_spacing >= d && s.max_nearest < 2.0 * d);

        // Near-maximality: the fraction of surface points with no sample within d.
        let (surface, mut rng, probes) = (SurfaceDraw::new(&mesh), SplitMix64::new(99), 4000);
        let uncovered = (0..probes)
            .filter(|_| {
                let p = surface.draw(&mut rng);
                s.positions
                    .iter()
                    .all(|q| delta(p, *q, [0.0; 3]).iter().map(|x| x * x).sum::<f64>() >= d * d)
            })
            .count() as f64
            / probes as f64;
        println!("  surface points farther than d from every sample: {uncovered:.5}");
        assert!(uncovered < 1e-2);
    }
}

#[test]
fn a_pose_moves_scales_and_turns_the_samples() {
    let centre = [10.0, -20.0, 30.0];
    let pose = Pose::from_axis_angle(centre, [1.0, 1.0, 0.0], 0.7, 2.0).unwrap();
    let d = 0.5;
    let mesh = sphere(3.0, d / 2.0).unwrap().transformed(&pose);
    let s = poisson_disk(&mesh, d, 4, None, 1 << 20).unwrap();
    let n = s.len() as f64;
    let mean = [0, 1, 2].map(|k| s.positions.iter().map(|p| p[k]).sum::<f64>() / n);
    for k in 0..3 {
        assert!((mean[k] - centre[k]).abs() < 0.1, "mean {mean:?}");
    }
    for p in &s.positions {
        let r = delta(*p, centre, [0.0; 3])
            .iter()
            .map(|x| x * x)
            .sum::<f64>()
            .sqrt();
        assert!((5.97..=6.0 + 1e-9).contains(&r), "radius {r}");
    }

    // A capped cylinder turned from z onto x: samples within the turned, scaled body.
    let pose = Pose::from_axis_angle([1.0, 2.0, 3.0], [0.0, 1.0, 0.0], PI / 2.0, 1.5).unwrap();
    let mesh = cylinder(1.0, 4.0, true, d).unwrap().transformed(&pose);
    assert!((mesh.area() - 1.5 * 1.5 * cylinder(1.0, 4.0, true, d).unwrap().area()).abs() < 1e-9);
    let s = poisson_disk(&mesh, d, 4, None, 1 << 20).unwrap();
    for p in &s.positions {
        let radial = ((p[1] - 2.0).powi(2) + (p[2] - 3.0).powi(2)).sqrt();
        assert!(
            radial <= 1.5 + 1e-9 && (p[0] - 1.0).abs() <= 3.0 + 1e-9,
            "{p:?}"
        );
    }
    // Both ends are sampled: the axis now runs along x.
    assert!(s.positions.iter().any(|p| p[0] - 1.0 > 2.9));
    assert!(s.positions.iter().any(|p| p[0] - 1.0 < -2.9));
}

/// User plus system CPU time of the process so far (s): steadier than wall time on a
/// shared machine.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage writes the struct it is given.
    let usage = unsafe {
        let mut usage = std::mem::zeroed::<libc::rusage>();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// Sampling timings (release: `cargo test --release -p murmur sampling_timings -- --ignored
/// --nocapture`): the mesh build and the sampling, apart.
#[test]
#[ignore]
fn sampling_timings() {
    let cases = [
        ("sphere r = 12", Primitive::Sphere { radius: 12.0 }, 0.5),
        ("sphere r = 12", Primitive::Sphere { radius: 12.0 }, 0.25),
        ("sphere r = 12", Primitive::Sphere { radius: 12.0 }, 0.1),
        (
            "torus R = 30 r = 8",
            Primitive::Torus {
                major: 30.0,
                minor: 8.0,
            },
            0.1,
        ),
    ];
    for (name, shape, d) in cases {
        let start = std::time::Instant::now();
        let mesh = shape.mesh(d).unwrap();
        let meshed = start.elapsed();
        let (start, cpu) = (std::time::Instant::now(), cpu_seconds());
        let s = poisson_disk(&mesh, d, 1, None, 1 << 26).unwrap();
        let (sampled, cpu) = (start.elapsed(), cpu_seconds() - cpu);
        println!(
            "{name} d = {d}: mesh {} triangles in {meshed:.2?}, {} samples in {sampled:.2?} \
             (CPU {cpu:.2} s; {:.3} per d^2, nearest min {:.4} max {:.4})",
            mesh.triangles.len(),
            s.len(),
            s.density(),
            s.min_spacing,
            s.max_nearest,
        );
    }
}
