//! Boids steer by a mesh solid's sampled signed distance: the trefoil knot of
//! `assets/fluid/trefoil.toml` (its OBJ mesh), turned about the flow axis, at a quarter of the
//! scene's resolution on the CPU, with a flock spawned around it. After every tenth step no boid
//! lies inside the knot, checked against the mesh itself (the parity of a ray's crossings of
//! its triangles, not the sampled grid the flock steers by), and boids did come within the
//! avoidance distance (the rule acted).

use murmur::internals::coupling::distance::SolidDistances;
use murmur::internals::coupling::scene::{read_flocks, SceneFlocks};
use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::ib::shapes::TriangleMesh;
use murmur::internals::fluid::riders::Rider;
use murmur::internals::fluid::scene::{overrides::SceneOverrides, SceneFile};
use murmur::internals::fluid::FluidBackend;
use murmur_common::coupling::sdf::Obstacles;
use murmur_common::lbm::Fp32;
use murmur_common::Vec3;
use std::path::Path;

/// Whether body-frame point `p` lies inside the closed `mesh`: a ray from `p` along a fixed
/// generic direction crosses its triangles an odd number of times (Moller-Trumbore).
fn inside_mesh(mesh: &TriangleMesh, p: [f64; 3]) -> bool {
    let d = [0.8017, 0.4631, 0.3780];
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let mut hits = 0;
    for t in 0..mesh.triangles.len() {
        let [a, b, c] = mesh.corners(t);
        let (e1, e2) = (sub(b, a), sub(c, a));
        let q = cross(d, e2);
        let det = dot(e1, q);
        if det.abs() < 1e-12 {
            continue;
        }
        let s = sub(p, a);
        let u = dot(s, q) / det;
        let r = cross(s, e1);
        let v = dot(d, r) / det;
        let t = dot(e2, r) / det;
        if u >= 0.0 && v >= 0.0 && u + v <= 1.0 && t > 0.0 {
            hits += 1;
        }
    }
    hits % 2 == 1
}

/// The scene `text` with the flock table `flock` at a quarter of its resolution (its meshes
/// read from `dir`), its flocks opened on a CPU fluid.
fn open_quarter(
    text: &str,
    flock: &str,
    dir: &Path,
) -> (
    murmur::internals::fluid::scene::Scene,
    Box<dyn FluidBackend>,
    Result<SceneFlocks, murmur::internals::fluid::FluidError>,
) {
    let mut file = SceneFile::parse(&format!("{text}{flock}")).unwrap();
    file.dir = dir.to_path_buf();
    SceneOverrides {
        coarsen: Some(4),
        check_every: None,
    }
    .apply(&mut file)
    .unwrap();
    let built = file.build().unwrap();
    let specs = read_flocks(flock).unwrap();
    let mut fluid: Box<dyn FluidBackend> = Box::new(CpuFluid::<Fp32>::new(&built.setup).unwrap());
    let flocks = SceneFlocks::open(&specs, &built, fluid.as_mut());
    (built, fluid, flocks)
}

#[test]
fn no_boid_ends_a_step_inside_a_turning_mesh_solid() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid");
    let text = std::fs::read_to_string(root.join("trefoil.toml"))
        .unwrap()
        .replace(
            "reference_area = 0.07   # m^2: about the knot's frontal disc",
            "reference_area = 0.07\nmotion = { type = \"rotate\", axis = [1, 0, 0], rate = 3.0 }",
        );
    assert!(text.contains("rate = 3.0"), "the knot's table changed");
    let flock = "\n[[flocks]]\ncount = 4000\nspawn = { box = { lo = [0.2, 0.05, 0.05], hi = \
                 [0.5, 0.45, 0.45] } }\nseed = 3\nrates = [2.0, 40.0, 8.0]\nradii = [0.02, \
                 0.01, 0.02]\nmax_speed = 0.3\ntau_p = 0.005\navoid = 0.05\navoid_rate = \
                 40.0\nsubsteps = 2\n";
    let (built, mut fluid, flocks) = open_quarter(&text, flock, &root);
    let mut flocks = flocks.unwrap();
    let knot = &built.setup.immersed.solids[0];
    let mesh = knot.surface.as_ref().expect("the knot is a mesh solid");
    let distances = SolidDistances::of(std::slice::from_ref(knot), 0.0);
    let reach = built.units.length_to_lattice(0.05) as f32;
    let (mut inside, mut near, mut checked) = (0, 0, 0);
    for step in 1..=120u64 {
        fluid.step().unwrap();
        flocks.after_step(fluid.as_mut()).unwrap();
        if step % 10 != 0 {
            continue;
        }
        let state = knot.state(step);
        let now = distances.obstacles(std::slice::from_ref(knot), step as f64);
        let list = distances.list(&now);
        for x in flocks.state(0).unwrap().pos {
            // Into the knot's frame: R^T (x - centre).
            let d = [0, 1, 2].map(|a| x.to_array()[a] as f64 - state.center[a] as f64);
            let r = state.rotation.map(|row| row.map(|v| v as f64));
            let body = [0, 1, 2].map(|j| r[0][j] * d[0] + r[1][j] * d[1] + r[2][j] * d[2]);
            if knot.radius >= (body[0].powi(2) + body[1].powi(2) + body[2].powi(2)).sqrt()
                && inside_mesh(mesh, body)
            {
                inside += 1;
            }
            if list.distance(&now[0], Vec3::from_array(x.to_array())) < reach {
                near += 1;
            }
            checked += 1;
        }
    }
    assert_eq!(inside, 0, "boids inside the knot (of {checked} checked)");
    assert!(
        near > 100,
        "only {near} boids came within the avoidance distance"
    );
}

/// A cube of side 2 about the origin as an OBJ file (counter-clockwise seen from outside).
fn cube_obj() -> String {
    let mut s = String::new();
    for v in 0..8 {
        let c = |bit: u32| if v >> bit & 1 == 1 { 1.0 } else { -1.0 };
        s += &format!("v {} {} {}\n", c(0), c(1), c(2));
    }
    // Faces as quads of 1-based vertex numbers, each split into two triangles.
    for [a, b, c, d] in [
        [1, 3, 4, 2],
        [5, 6, 8, 7],
        [1, 2, 6, 5],
        [3, 7, 8, 4],
        [1, 5, 7, 3],
        [2, 4, 8, 6],
    ] {
        s += &format!("f {a} {b} {c}\nf {a} {c} {d}\n");
    }
    s
}

#[test]
fn a_flock_spawned_inside_a_mesh_solid_is_refused_in_one_line() {
    let dir = std::env::temp_dir().join(format!("murmur-mesh-spawn-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("cube.obj"), cube_obj()).unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid");
    let text = std::fs::read_to_string(root.join("trefoil.toml"))
        .unwrap()
        .replace("meshes/trefoil.obj", "cube.obj");
    assert!(text.contains("\"cube.obj\""), "the knot's table changed");
    // The cube, 0.1 m wide about [0.35, 0.25, 0.25]; a spawn box inside it, then about it.
    let open = |lo: f64, hi: f64| {
        let flock = format!(
            "\n[[flocks]]\ncount = 100\nspawn = {{ box = {{ lo = [{lo}, {lo2}, {lo2}], hi = \
             [{hi}, {hi2}, {hi2}] }} }}\nseed = 3\nrates = [2.0, 40.0, 8.0]\nradii = [0.02, \
             0.01, 0.02]\nmax_speed = 0.3\ntau_p = 0.005\navoid = 0.02\navoid_rate = 40.0\n",
            lo2 = lo - 0.1,
            hi2 = hi - 0.1
        );
        open_quarter(&text, &flock, &dir).2.map(|_| ())
    };
    let e = open(0.33, 0.37).unwrap_err().to_string();
    assert!(e.contains("inside a solid") && !e.contains('\n'), "{e}");
    assert!(open(0.25, 0.45).is_ok());
    std::fs::remove_dir_all(&dir).ok();
}
