use super::*;
use crate::fluid::ib::sampling::poisson_disk;
use crate::fluid::ib::shapes::{capsule, cuboid, cylinder, sphere, torus, Pose};
use proptest::prelude::*;
use std::f64::consts::PI;
use std::path::PathBuf;

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
