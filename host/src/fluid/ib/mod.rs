//! Immersed-boundary solids, stage one: the surface samples (Lagrangian markers) of each solid.
//!
//! A solid is a primitive tessellated in its own frame ([`shapes`]) placed by a [`Pose`], or a
//! triangle mesh read from an OBJ or STL file ([`load_mesh`]); a closed mesh also gives the
//! solid's volume, centroid and inertia ([`TriangleMesh::mass_properties`]). [`poisson_disk`]
//! covers the surface with samples at least a given distance apart (lattice cells; 0.5 for
//! validation scenes; 0.26 to 0.08 for 10 to 100 samples per boundary cell:
//! [`spacing_for_samples_per_cell`]), each carrying an equal share of the area.
//!
//! Sources: dart throwing (Cook, "Stochastic sampling in computer graphics", ACM TOG 5(1), 1986)
//! with the uniform background grid of Bridson ("Fast Poisson disk sampling in arbitrary
//! dimensions", SIGGRAPH 2007 sketches), in tiles processed by colour (Wei, "Parallel Poisson
//! disk sampling", ACM TOG 27(3), 2008); mass properties by signed tetrahedra (Tonon, J. Math.
//! Stat. 1(1), 2005).

pub mod bench;
pub mod mesh;
pub mod plan;
pub mod sampling;
pub mod shapes;
pub mod solid;
pub mod validate;

pub use mesh::{load_mesh, MeshProblem};
pub use sampling::{
    poisson_disk, spacing_for_samples_per_cell, Samples, SamplingError, PACKING_DENSITY,
};
pub use shapes::{Pose, Primitive, ShapeError, TriangleMesh};
pub use solid::{MassProperties, Motion, Solid};

/// The immersed boundary of a setup: its solids and the coupling's fixed choices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Immersed {
    /// The solids (none: no immersed-boundary stages run).
    pub solids: Vec<Solid>,
    /// Axes that wrap for the stencils: the scene's periodic faces.
    pub periodic: [bool; 3],
    /// Multi-direct-forcing passes per step; 0: the fixed default
    /// ([`plan::PASSES`]). Only the study that chose the default sets it.
    pub passes: u32,
    /// How the samples' forces reach the band.
    pub spread: plan::IbSpread,
    /// On one rank of several: the lattice is a slab `(axis, origin, extent)` of the whole
    /// ([`murmur_common::lbm::ib::stencil::Domain::slab`]); set by the slab plan.
    pub slab: Option<(u32, i32, u32)>,
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
    use proptest::prelude::*;
    use std::f64::consts::PI;
    use std::path::{Path, PathBuf};

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

    // ---- Mesh files and mass properties ----

    /// A scratch folder for this test process.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("murmur-mesh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn obj_text(mesh: &TriangleMesh) -> String {
        let mut out = String::from("# written by the murmur tests\n");
        for v in &mesh.vertices {
            out += &format!("v {:e} {:e} {:e}\n", v[0], v[1], v[2]);
        }
        for t in &mesh.triangles {
            out += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
        }
        out
    }

    fn ascii_stl(mesh: &TriangleMesh, first_line: &str) -> String {
        let mut out = format!("{first_line}\n");
        for t in 0..mesh.triangles.len() {
            out += "  facet normal 0 0 0\n    outer loop\n";
            for v in mesh.corners(t) {
                out += &format!("      vertex {:e} {:e} {:e}\n", v[0], v[1], v[2]);
            }
            out += "    endloop\n  endfacet\n";
        }
        out + "endsolid test\n"
    }

    fn binary_stl(mesh: &TriangleMesh, header: &[u8]) -> Vec<u8> {
        let mut out = vec![b' '; 80];
        out[..header.len()].copy_from_slice(header);
        out.extend((mesh.triangles.len() as u32).to_le_bytes());
        for t in 0..mesh.triangles.len() {
            out.extend([0u8; 12]);
            for v in mesh.corners(t) {
                for x in v {
                    out.extend((x as f32).to_le_bytes());
                }
            }
            out.extend([0u8; 2]);
        }
        out
    }

    /// The rotation matrix of a pose (columns: the turned axes).
    fn matrix(pose: &Pose) -> [[f64; 3]; 3] {
        let cols = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]].map(|e| pose.rotate(e));
        [0, 1, 2].map(|i| [0, 1, 2].map(|j| cols[j][i]))
    }

    fn close(a: f64, b: f64, rel: f64, scale: f64) -> bool {
        (a - b).abs() <= rel * scale
    }

    #[test]
    fn box_mass_properties_are_exact() {
        let [a, b, c] = [1.5, 0.5, 2.0];
        let mesh = cuboid([a, b, c]).unwrap();
        assert!(mesh.is_closed());
        let (centre, mass) = mesh.mass_properties().unwrap();
        let m = 8.0 * a * b * c;
        assert!(close(mass.volume, m, 1e-12, m));
        assert!(centre.iter().all(|x| x.abs() < 1e-12), "{centre:?}");
        let expected = [b * b + c * c, a * a + c * c, a * a + b * b].map(|s| m * s / 3.0);
        for (i, &diagonal) in expected.iter().enumerate() {
            for j in 0..3 {
                let e = if i == j { diagonal } else { 0.0 };
                assert!(
                    close(mass.inertia[i][j], e, 1e-12, m * 4.0),
                    "{:?}",
                    mass.inertia
                );
            }
        }
    }

    #[test]
    fn round_solids_match_analytic_volume_and_inertia() {
        // (mesh, volume, [Ixx, Izz] per unit mass) of the smooth solids.
        let (r, l, big) = (3.0, 8.0, 6.0);
        let cases = [
            (
                sphere(r, 0.05).unwrap(),
                4.0 / 3.0 * PI * r.powi(3),
                [0.4 * r * r; 2],
            ),
            (
                cylinder(r, l, true, 0.05).unwrap(),
                PI * r * r * l,
                [(3.0 * r * r + l * l) / 12.0, r * r / 2.0],
            ),
            (
                torus(big, r, 0.05).unwrap(),
                2.0 * PI * PI * big * r * r,
                [
                    big * big / 2.0 + 5.0 / 8.0 * r * r,
                    big * big + 3.0 / 4.0 * r * r,
                ],
            ),
        ];
        for (mesh, volume, [ixx, izz]) in cases {
            assert!(mesh.is_closed());
            let (centre, mass) = mesh.mass_properties().unwrap();
            // Inscribed facets lose a little volume (well under 0.1 % at these resolutions).
            assert!(
                close(mass.volume, volume, 1e-3, volume),
                "{} vs {volume}",
                mass.volume
            );
            assert!(centre.iter().all(|x| x.abs() < 1e-9), "{centre:?}");
            let m = mass.volume;
            for (got, want) in [
                (mass.inertia[0][0], ixx),
                (mass.inertia[1][1], ixx),
                (mass.inertia[2][2], izz),
            ] {
                assert!(
                    close(got, m * want, 2e-3, m * want),
                    "{got} vs {}",
                    m * want
                );
            }
            for (i, j) in [(0, 1), (0, 2), (1, 2)] {
                assert!(mass.inertia[i][j].abs() < 1e-9 * m * izz);
            }
        }
        // The sphere's 2/5 m r^2, with its own mesh's mass.
        let (_, mass) = sphere(12.0, 0.1).unwrap().mass_properties().unwrap();
        let want = 0.4 * mass.volume * 144.0;
        assert!(close(mass.inertia[2][2], want, 1e-3, want));
    }

    #[test]
    fn open_and_broken_meshes_are_not_closed() {
        let tube = cylinder(1.0, 3.0, false, 0.5).unwrap();
        assert!(!tube.is_closed());
        assert_eq!(tube.mass_properties(), None);

        let cube = cuboid([1.0; 3]).unwrap();
        let mut holed = cube.clone();
        holed.triangles.pop();
        let mut flipped_one = cube.clone();
        flipped_one.triangles[0].swap(1, 2);
        let mut doubled = cube.clone();
        doubled.triangles.push(cube.triangles[0]);
        let mut repeated = cube.clone();
        repeated.triangles[0] = [0, 0, 1];
        let mut past = cube.clone();
        past.triangles[0][2] = 99;
        for broken in [
            holed,
            flipped_one,
            doubled,
            repeated,
            past,
            TriangleMesh::default(),
        ] {
            assert!(!broken.is_closed());
            assert_eq!(broken.mass_properties(), None);
        }

        // Two tetrahedra sharing one vertex only: closed (every edge twice, opposite ways).
        let mut pair = TriangleMesh {
            vertices: vec![[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            triangles: vec![[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]],
        };
        let n = pair.vertices.len() as u32;
        pair.vertices
            .extend([[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]);
        pair.triangles.extend([
            [0, n, n + 1],
            [0, n + 2, n],
            [0, n + 1, n + 2],
            [n, n + 2, n + 1],
        ]);
        assert!(pair.is_closed());
        let (_, mass) = pair.mass_properties().unwrap();
        assert!(close(mass.volume, 2.0 / 6.0, 1e-12, 1.0));

        // A closed surface enclosing nothing: two triangles back to back.
        let flat = TriangleMesh {
            vertices: vec![[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
            triangles: vec![[0, 1, 2], [0, 2, 1]],
        };
        assert!(flat.is_closed());
        assert_eq!(flat.mass_properties(), None);
    }

    #[test]
    fn an_inward_facing_mesh_is_the_same_solid() {
        let mesh = capsule(1.0, 2.0, 0.2).unwrap();
        let mut inward = mesh.clone();
        for t in &mut inward.triangles {
            t.swap(1, 2);
        }
        assert!(mesh.signed_volume() > 0.0 && inward.signed_volume() < 0.0);
        assert!(close(
            inward.signed_volume(),
            -mesh.signed_volume(),
            1e-12,
            10.0
        ));
        let (c, a) = mesh.mass_properties().unwrap();
        let (d, b) = inward.mass_properties().unwrap();
        assert!(close(a.volume, b.volume, 1e-12, a.volume));
        for k in 0..3 {
            assert!(close(c[k], d[k], 1e-12, 1.0));
            for j in 0..3 {
                assert!(close(
                    a.inertia[k][j],
                    b.inertia[k][j],
                    1e-12,
                    a.inertia[0][0]
                ));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Moved, turned and scaled: the centroid follows the pose, the volume scales by s^3
        /// and the inertia about the centroid turns as `R I R^T` and scales by s^5; the mesh's
        /// distance from the origin does not matter.
        #[test]
        fn inertia_follows_the_pose(
            position in proptest::array::uniform3(-1e4f64..1e4),
            axis in proptest::array::uniform3(-1.0f64..1.0),
            angle in -3.0f64..3.0,
            scale in 0.2f64..5.0,
            half in proptest::array::uniform3(0.3f64..3.0),
        ) {
            prop_assume!(axis.iter().map(|x| x * x).sum::<f64>() > 1e-3);
            // A box with a capsule stuck out of one face: no symmetry to hide errors behind.
            let mut body = cuboid(half).unwrap();
            let stick = capsule(0.3, 1.0, 0.2).unwrap().transformed(
                &Pose::new([half[0] + 0.5, 0.1, 0.2], [1.0, 0.0, 1.0, 0.0], 1.0).unwrap(),
            );
            let n = body.vertices.len() as u32;
            body.vertices.extend(&stick.vertices);
            body.triangles.extend(stick.triangles.iter().map(|t| t.map(|i| i + n)));
            // Two closed pieces make one closed mesh (they overlap: the moments add up).
            prop_assert!(body.is_closed());
            let (c0, m0) = body.mass_properties().unwrap();
            let pose = Pose::from_axis_angle(position, axis, angle, scale).unwrap();
            let (c1, m1) = body.transformed(&pose).mass_properties().unwrap();
            let want = pose.apply(c0);
            for k in 0..3 {
                prop_assert!(close(c1[k], want[k], 1e-9, 1.0 + position[k].abs()), "{c1:?} vs {want:?}");
            }
            prop_assert!(close(m1.volume, m0.volume * scale.powi(3), 1e-9, m1.volume));
            let r = matrix(&pose);
            let s5 = scale.powi(5);
            let size = m1.inertia[0][0] + m1.inertia[1][1] + m1.inertia[2][2];
            for i in 0..3 {
                for j in 0..3 {
                    let mut rot = 0.0;
                    for a in 0..3 {
                        for b in 0..3 {
                            rot += r[i][a] * m0.inertia[a][b] * r[j][b];
                        }
                    }
                    prop_assert!(close(m1.inertia[i][j], s5 * rot, 1e-8, size), "{i}{j}");
                }
            }
        }

        /// Whatever bytes a mesh file holds, loading answers with a mesh or a one-line error.
        #[test]
        fn loading_garbage_never_panics(
            bytes in proptest::collection::vec(any::<u8>(), 0..400),
            tokens in proptest::collection::vec(
                prop_oneof![
                    Just("v"), Just("f"), Just("vt"), Just("vn"), Just("o"), Just("g"),
                    Just("1"), Just("-1"), Just("0"), Just("2.5"), Just("nan"), Just("1/2/3"),
                    Just("-2//1"), Just("9999999999999999999"), Just("\n"), Just("solid"),
                    Just("facet"), Just("normal"), Just("outer"), Just("loop"), Just("vertex"),
                    Just("endloop"), Just("endfacet"), Just("endsolid"), Just("mtllib"),
                    Just("1/-9223372036854775808/1"), Just("-9223372036854775808"),
                ],
                0..120,
            ),
        ) {
            let text = tokens.join(" ");
            for (name, content) in [
                ("garbage.obj", bytes.clone()),
                ("garbage.stl", bytes.clone()),
                ("tokens.obj", text.clone().into_bytes()),
                ("tokens.stl", text.into_bytes()),
            ] {
                let path = scratch(name);
                std::fs::write(&path, content).unwrap();
                if let Err(e) = load_mesh(&path) {
                    prop_assert!(!e.to_string().contains('\n'), "{e}");
                }
            }
        }
    }

    #[test]
    fn meshes_survive_obj_and_stl_files() {
        let shapes = [
            torus(3.0, 1.0, 0.5).unwrap(),
            capsule(1.0, 2.0, 0.3).unwrap(),
            cuboid([1.0, 2.0, 3.0]).unwrap().transformed(
                &Pose::from_axis_angle([5.0, -3.0, 1.0], [1.0, 2.0, 3.0], 0.4, 1.0).unwrap(),
            ),
        ];
        for mesh in shapes {
            let v = mesh.signed_volume();
            let files: [(&str, Vec<u8>); 5] = [
                ("m.obj", obj_text(&mesh).into_bytes()),
                ("m.STL", ascii_stl(&mesh, "solid torus").into_bytes()),
                ("bare.stl", ascii_stl(&mesh, "solid").into_bytes()),
                ("b.stl", binary_stl(&mesh, b"exported by something")),
                // Binary, yet its header starts with "solid" as some exporters write.
                (
                    "solid.stl",
                    binary_stl(&mesh, b"solid part exported as binary"),
                ),
            ];
            for (name, bytes) in files {
                let path = scratch(name);
                std::fs::write(&path, bytes).unwrap();
                let loaded = load_mesh(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(loaded.is_closed(), "{name}");
                assert_eq!(loaded.vertices.len(), mesh.vertices.len(), "{name}: welded");
                assert_eq!(loaded.triangles.len(), mesh.triangles.len(), "{name}");
                // STL stores f32.
                assert!(close(loaded.signed_volume(), v, 1e-5, v), "{name}");
            }
        }
    }

    #[test]
    fn obj_polygons_groups_and_relative_indices_load() {
        // A unit cube as six quads in two groups, the second with negative (relative) indices,
        // normals and texture coordinates, and a material library that is not there.
        let text = "mtllib missing.mtl\n# cube\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n\
                    v 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\nvn 0 0 1\nvt 0 0\n\
                    o bottom_and_sides\nf 1 4 3 2\nf 1/1/1 2/1/1 6/1/1 5/1/1\nf 2 3 7 6\n\
                    g rest\nusemtl nothing\nf -5 -1 -2 -6\nf -8 -4 -1 -5\nf -4 -3 -2 -1\nl 1 2\n";
        let path = scratch("cube.obj");
        std::fs::write(&path, text).unwrap();
        let cube = load_mesh(&path).unwrap();
        assert_eq!((cube.vertices.len(), cube.triangles.len()), (8, 12));
        assert!(cube.is_closed());
        let (centre, mass) = cube.mass_properties().unwrap();
        assert!(close(mass.volume, 1.0, 1e-12, 1.0));
        assert!(centre.iter().all(|x| (x - 0.5).abs() < 1e-12));
        // A pentagon is fanned into three triangles, orientation kept.
        let path = scratch("pentagon.obj");
        std::fs::write(
            &path,
            "v 0 0 0\nv 2 0 0\nv 3 1 0\nv 1 2 0\nv -1 1 0\nf 1 2 3 4 5\n",
        )
        .unwrap();
        let pentagon = load_mesh(&path).unwrap();
        assert_eq!(pentagon.triangles.len(), 3);
        assert!(!pentagon.is_closed());
        assert!(
            close(pentagon.area(), 5.0, 1e-12, 5.0),
            "{}",
            pentagon.area()
        );
    }

    #[test]
    fn every_solid_of_an_ascii_stl_loads() {
        // Two bodies, one "solid ... endsolid" block each, as multi-body exporters write them.
        let a = cuboid([1.0; 3]).unwrap();
        let b = a.transformed(&Pose::new([5.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], 0.5).unwrap());
        let text = ascii_stl(&a, "solid first") + &ascii_stl(&b, "  solid");
        let path = scratch("two.stl");
        std::fs::write(&path, text).unwrap();
        let both = load_mesh(&path).unwrap();
        assert_eq!((both.vertices.len(), both.triangles.len()), (16, 24));
        assert!(both.is_closed());
        assert!(close(both.signed_volume(), 8.0 + 1.0, 1e-6, 9.0));
    }

    #[test]
    fn bad_mesh_files_get_one_line_errors() {
        let check = |name: &str, content: Option<&[u8]>, want: &dyn Fn(&MeshProblem) -> bool| {
            let path = scratch(name);
            match content {
                Some(bytes) => std::fs::write(&path, bytes).unwrap(),
                None => {
                    let _ = std::fs::remove_file(&path);
                }
            }
            let err = load_mesh(&path).unwrap_err();
            let message = err.to_string();
            assert!(!message.contains('\n'), "{message}");
            assert!(message.contains(name), "{message}");
            match &err {
                ShapeError::MeshFile { problem, .. } => assert!(want(problem), "{name}: {message}"),
                other => panic!("{name}: {other}"),
            }
            message
        };
        let message = check("absent.obj", None, &|p| matches!(p, MeshProblem::Read(_)));
        assert!(message.contains("No such file"), "{message}");
        check(
            "solid.ply",
            Some(b"ply\n"),
            &|p| matches!(p, MeshProblem::Extension(e) if e == "ply"),
        );
        check(
            "noext",
            Some(b"v 0 0 0\n"),
            &|p| matches!(p, MeshProblem::Extension(e) if e.is_empty()),
        );
        check(
            "past.obj",
            Some(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n"),
            &|p| *p == MeshProblem::IndexOutOfRange(3),
        );
        check(
            "zero.obj",
            Some(b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n"),
            &|p| matches!(p, MeshProblem::IndexOutOfRange(_)),
        );
        check("short.obj", Some(b"v 0 0\n"), &|p| {
            matches!(p, MeshProblem::Parse { format: "OBJ", .. })
        });
        check(
            "latin1.obj",
            Some(b"# caf\xe9\nv 0 0 0\n"),
            &|p| matches!(p, MeshProblem::Parse { reason, .. } if reason.contains("UTF-8")),
        );
        check("nofaces.obj", Some(b"v 0 0 0\nv 1 0 0\n"), &|p| {
            *p == MeshProblem::NoTriangles
        });
        check(
            "nan.obj",
            Some(b"v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"),
            &|p| matches!(p, MeshProblem::NonFinite(_)),
        );
        check(
            "sliver.obj",
            Some(b"v 0 0 0\nv 1 0 0\nv 0 0 0\nf 1 2 3\n"),
            &|p| *p == MeshProblem::NoTriangles,
        );
        check("empty.stl", Some(b""), &|p| {
            matches!(
                p,
                MeshProblem::Parse {
                    format: "binary STL",
                    ..
                }
            )
        });
        let cube = binary_stl(&cuboid([1.0; 3]).unwrap(), b"cube");
        check(
            "cut.stl",
            Some(&cube[..cube.len() - 7]),
            &|p| matches!(p, MeshProblem::Parse { reason, .. } if reason.contains("promises 12")),
        );
        let mut inf = cube.clone();
        inf[84 + 12..84 + 16].copy_from_slice(&f32::INFINITY.to_le_bytes());
        check("inf.stl", Some(&inf), &|p| {
            matches!(p, MeshProblem::NonFinite(_))
        });
        check(
            "ascii.stl",
            Some(b"solid x\nfacet normal 0 0 1\nouter loop\nvertex 1 2\n"),
            &|p| {
                matches!(
                    p,
                    MeshProblem::Parse {
                        format: "ASCII STL",
                        ..
                    }
                )
            },
        );
        check("nothing.stl", Some(b"solid x\nendsolid x\n"), &|p| {
            *p == MeshProblem::NoTriangles
        });
        // A folder is not a file.
        let dir = scratch("folder.stl");
        let _ = std::fs::remove_file(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let err = load_mesh(&dir).unwrap_err().to_string();
        assert!(err.contains("cannot read") && !err.contains('\n'), "{err}");
    }

    /// The showcase mesh in the repository (`scripts/make-mesh.py`) is a closed solid of the
    /// volume its header records for the smooth tube, less the faceting (inscribed 24-gons
    /// keep `24 sin(2 pi / 24) / (2 pi)` = 98.9 % of a circle's area).
    #[test]
    fn the_showcase_mesh_is_closed() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid/meshes/trefoil.obj");
        let mesh = load_mesh(&path).unwrap();
        assert_eq!((mesh.vertices.len(), mesh.triangles.len()), (4608, 9216));
        assert!(mesh.is_closed());
        let (centre, mass) = mesh.mass_properties().unwrap();
        assert!(mesh.signed_volume() > 0.0);
        let text = std::fs::read_to_string(&path).unwrap();
        let smooth: f64 = text
            .lines()
            .find_map(|l| l.strip_prefix("# smooth tube volume "))
            .and_then(|rest| rest.split(',').next())
            .unwrap()
            .parse()
            .unwrap();
        let ratio = mass.volume / smooth;
        assert!(
            (0.975..1.0).contains(&ratio),
            "volume {} vs smooth {smooth}",
            mass.volume
        );
        // The knot's three-fold symmetry about z puts the centroid on the axis.
        assert!(
            centre[0].abs() < 1e-3 && centre[1].abs() < 1e-3,
            "{centre:?}"
        );
        assert!((mass.inertia[0][0] - mass.inertia[1][1]).abs() < 1e-3 * mass.inertia[0][0]);
        let s = poisson_disk(&mesh, 0.1, 1, None, 1 << 22).unwrap();
        assert!(s.min_spacing >= 0.1 && s.len() > 4000, "{}", s.summary());
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
