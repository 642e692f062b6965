//! Immersed-boundary solids, stage one: the surface samples (Lagrangian markers) of each solid.
//!
//! A solid is a primitive tessellated in its own frame ([`shapes`]) placed by a [`Pose`], or a
//! triangle mesh; [`poisson_disk`] covers its surface with samples at least a given distance
//! apart (lattice cells; 0.5 for validation scenes), each carrying an equal share of the area.
//!
//! Sources: dart throwing (Cook, "Stochastic sampling in computer graphics", ACM TOG 5(1), 1986)
//! with the uniform background grid of Bridson ("Fast Poisson disk sampling in arbitrary
//! dimensions", SIGGRAPH 2007 sketches).

pub mod mesh;
pub mod sampling;
pub mod shapes;
pub mod solid;

pub use sampling::{poisson_disk, Samples, SamplingError};
pub use shapes::{Pose, Primitive, ShapeError, TriangleMesh};
pub use solid::{MassProperties, Motion, Solid};

/// The immersed boundary of a setup: its solids and the coupling's fixed choices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Immersed {
    /// The solids (none: no immersed-boundary stages run).
    pub solids: Vec<Solid>,
    /// Axes that wrap for the stencils: the scene's periodic faces.
    pub periodic: [bool; 3],
}

impl Immersed {
    /// Whether there is anything to couple.
    pub fn is_empty(&self) -> bool {
        self.solids.iter().all(|s| s.is_empty())
    }

    /// Total samples over all solids.
    pub fn samples(&self) -> usize {
        self.solids.iter().map(|s| s.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::sampling::{delta, max_count, SplitMix64, SurfaceDraw};
    use super::shapes::{capsule, cuboid, cylinder, sphere, torus};
    use super::*;
    use std::f64::consts::PI;

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

    /// Signed volume by the divergence theorem: positive for outward-facing triangles.
    fn volume(mesh: &TriangleMesh) -> f64 {
        (0..mesh.triangles.len())
            .map(|t| {
                let [a, b, c] = mesh.corners(t);
                let bc = shapes_cross(b, c);
                (a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2]) / 6.0
            })
            .sum()
    }

    fn shapes_cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    }

    #[test]
    fn primitive_mesh_areas_match_analytic_within_half_a_percent() {
        let shapes = [
            Primitive::Sphere { radius: 12.0 },
            Primitive::Sphere { radius: 1.0 },
            Primitive::Cylinder {
                radius: 5.0,
                length: 20.0,
                caps: true,
            },
            Primitive::Cylinder {
                radius: 0.8,
                length: 3.0,
                caps: false,
            },
            Primitive::Box {
                half: [3.0, 1.0, 0.5],
            },
            Primitive::Torus {
                major: 10.0,
                minor: 3.0,
            },
            Primitive::Torus {
                major: 2.0,
                minor: 1.5,
            },
            Primitive::Capsule {
                radius: 4.0,
                length: 10.0,
            },
        ];
        for shape in shapes {
            for spacing in [0.5, 1.0, 0.1] {
                let mesh = shape.mesh(spacing).unwrap();
                mesh.validate().unwrap();
                let (mesh_area, exact) = (mesh.area(), shape.analytic_area());
                let err = (mesh_area - exact).abs() / exact;
                assert!(err < 5e-3, "{shape:?} at {spacing}: {mesh_area} vs {exact}");
                // Inscribed meshes lose area, never gain it.
                assert!(mesh_area <= exact * (1.0 + 1e-12), "{shape:?}");
            }
        }
    }

    #[test]
    fn closed_meshes_face_outward() {
        let cases = [
            (sphere(3.0, 0.5).unwrap(), 4.0 / 3.0 * PI * 27.0),
            (cylinder(2.0, 5.0, true, 0.5).unwrap(), PI * 4.0 * 5.0),
            (cuboid([1.0, 2.0, 3.0]).unwrap(), 48.0),
            (torus(4.0, 1.0, 0.5).unwrap(), 2.0 * PI * PI * 4.0),
            (capsule(1.0, 2.0, 0.5).unwrap(), PI * 2.0 + 4.0 / 3.0 * PI),
        ];
        for (mesh, exact) in cases {
            let v = volume(&mesh);
            assert!((v - exact).abs() / exact < 1e-2, "volume {v} vs {exact}");
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(matches!(
            sphere(0.0, 0.5),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(matches!(
            cylinder(1.0, -1.0, true, 0.5),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(matches!(
            torus(1.0, 1.0, 0.5),
            Err(ShapeError::SpindleTorus { .. })
        ));
        assert!(matches!(
            cuboid([1.0, f64::NAN, 1.0]),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(Pose::new([0.0; 3], [0.0; 4], 1.0).is_err());
        assert!(Pose::new([0.0; 3], [1.0, 0.0, 0.0, 0.0], 0.0).is_err());
        let flat = TriangleMesh {
            vertices: vec![[0.0; 3], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]],
            triangles: vec![[0, 1, 2]],
        };
        assert!(matches!(
            poisson_disk(&flat, 0.5, 1, None, 1000),
            Err(SamplingError::Shape(ShapeError::BadMesh(_)))
        ));
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
        assert!(
            (mesh.area() - 1.5 * 1.5 * cylinder(1.0, 4.0, true, d).unwrap().area()).abs() < 1e-9
        );
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
}
