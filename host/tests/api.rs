//! The library API (`murmur::Flock`, `murmur::Fluid`, `murmur::Backend`) on the CPU backend,
//! and its CUDA twin (`#[ignore]`d: `cargo xtask gpu-test`) that reads the device arrays back
//! with cudarc and compares them with the host copies.

mod support;

use murmur::look::Look;
use murmur::scene::{
    CollisionModel, DomainConfig, FaceConfig, Faces, LatticeConfig, Physical, SceneFile,
    ShapeConfig, SolidConfig,
};
use murmur::{Backend, ColourMode, DeviceArray, ErrorKind, Flock, FlockSettings, Fluid, Rules};

fn flock(n: usize, backend: Backend) -> Flock {
    Flock::new(FlockSettings {
        n,
        seed: 7,
        backend,
        ..FlockSettings::default()
    })
    .unwrap()
}

/// A 2D channel at Re 50: 64 x 32 cells one deep, an open tube of 8 cells across at x = 16
/// cells, started at the inflow's velocity, forces every 10 steps.
fn channel() -> SceneFile {
    let mut scene = SceneFile::new(
        "api-channel",
        Physical::new(1.0, 1.0, 0.02),
        LatticeConfig::new(8).with_velocity(0.05),
        DomainConfig::cells([64, 32, 1]),
    )
    .with_collision(CollisionModel::AcmMrt)
    .with_faces(Faces::channel_x(
        FaceConfig::FreeSlip {},
        FaceConfig::Periodic {},
    ))
    .with_solid(
        SolidConfig::new(ShapeConfig::tube(0.5, 0.125), [2.0, 2.05, 0.0625]).named("cylinder"),
    );
    // Started at the inflow's velocity: an inlet pushing into fluid at rest sends a density
    // wave through this short channel that leaves the health bounds.
    scene.initial.velocity = [1.0, 0.0, 0.0];
    scene.forces.every = 10;
    scene
}

fn cavity() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/fluid/cavity-re100.toml"
    )
    .to_string()
}

#[test]
fn flock_steps_reads_by_id_and_round_trips_a_snapshot() {
    let mut f = flock(3_000, Backend::Cpu);
    assert_eq!(f.len(), 3_000);
    assert!(f.describe().starts_with("cpu"), "{}", f.describe());
    let start = f.positions().unwrap();
    f.step(5).unwrap();
    let state = f.state().unwrap();
    assert_eq!(state.id, (0..3_000).collect::<Vec<u32>>(), "ordered by id");
    let pos = f.positions().unwrap();
    let vel = f.velocities().unwrap();
    assert_eq!(pos.len(), 3_000);
    assert_ne!(pos, start, "the boids moved");
    assert!(vel.iter().flatten().any(|v| *v != 0.0));
    let scale = f.rules().scale;
    assert!(pos.iter().flatten().all(|c| c.abs() <= scale));
    // No device arrays on the CPU.
    assert!(f.device_positions().unwrap().is_none());

    let path = support::tmp("api", "flock.npz");
    f.save(&path).unwrap();
    let mut back = Flock::load(
        &path,
        FlockSettings {
            backend: Backend::Cpu,
            ..FlockSettings::default()
        },
    )
    .unwrap();
    assert_eq!(back.len(), 3_000);
    assert_eq!(back.positions().unwrap(), pos);
    assert_eq!(back.velocities().unwrap(), vel);
    // The same positions after the next step from the snapshot as from the flock it was saved
    // from (velocities agree to rounding: the neighbour sums follow the order in memory).
    f.step(1).unwrap();
    back.step(1).unwrap();
    assert_eq!(back.positions().unwrap(), f.positions().unwrap());
}

#[test]
fn set_rules_checks_them_first() {
    let mut f = flock(500, Backend::Cpu);
    let bad = Rules {
        rule1_distance: -1.0,
        ..Rules::CIS565
    };
    let e = f.set_rules(bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("rule1_distance"), "{e}");
    assert!(!e.message().contains('\n'));
    assert_eq!(f.rules(), Rules::CIS565, "unchanged after the error");
    let good = Rules {
        rule1_scale: 0.05,
        ..Rules::CIS565
    };
    f.set_rules(good).unwrap();
    assert_eq!(f.rules(), good);
    f.step(2).unwrap();
}

#[test]
fn a_missing_scene_file_is_an_io_error() {
    let e = Fluid::from_file("assets/fluid/no-such-scene.toml", Backend::Cpu)
        .err()
        .expect("no such file");
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.message().contains("no-such-scene.toml"), "{e}");
}

#[test]
fn a_bad_scene_in_code_is_invalid() {
    let mut scene = channel();
    scene.lattice.resolution = 2;
    let e = Fluid::from_scene(scene, Backend::Cpu)
        .err()
        .expect("too coarse");
    assert_eq!(e.kind(), ErrorKind::Invalid);
    assert!(e.message().contains("resolution"), "{e}");
}

#[test]
fn a_scene_in_code_records_the_drag_on_its_solid() {
    let mut fluid = Fluid::from_scene(channel(), Backend::Cpu).unwrap();
    assert_eq!(fluid.shape()[2], 1);
    assert_eq!(fluid.forces().len(), 1);
    assert_eq!(fluid.forces()[0].name, "cylinder");
    fluid.step(20).unwrap();
    let rows = fluid.forces()[0].step.len();
    assert!(rows >= 2, "{rows} rows after 20 steps");
    fluid.step(100).unwrap();
    let f = &fluid.forces()[0];
    assert!(
        f.step.len() > rows,
        "rows grow: {} -> {}",
        rows,
        f.step.len()
    );
    assert_eq!(*f.step.last().unwrap(), 120);
    assert_eq!(fluid.step_count(), 120);
    assert!(f.cd.iter().all(|c| c.is_finite()), "{:?}", f.cd);
    assert!(
        f.cd.last().unwrap().abs() > 0.0,
        "the flow pushes the cylinder"
    );
    assert_eq!(f.time_s.len(), f.step.len());
    let [nx, ny, nz] = fluid.shape();
    let u = fluid.velocity().unwrap();
    assert_eq!(u.shape(), &[nz, ny, nx, 3]);
    assert!(u.iter().all(|v| v.is_finite()));
    let rho = fluid.density().unwrap();
    assert_eq!(rho.shape(), &[nz, ny, nx]);
    assert!(
        fluid.device_velocity().unwrap().is_none(),
        "none on the CPU"
    );
}

#[test]
fn step_while_stops_when_asked() {
    let mut f = flock(200, Backend::Cpu);
    assert_eq!(f.step_while(10, |done| done < 3).unwrap(), 3);
    let mut fluid = Fluid::from_file(cavity(), Backend::Cpu).unwrap();
    assert_eq!(fluid.step_while(10, |done| done < 4).unwrap(), 4);
    assert_eq!(fluid.step_count(), 4);
}

#[test]
fn frames_have_the_asked_size() {
    let mut f = flock(1_000, Backend::Cpu);
    let camera = f.camera(64, 48);
    let img = f.render(&camera, ColourMode::Speed).unwrap();
    assert_eq!(img.dimensions(), (64, 48));
    assert!(
        img.pixels().any(|p| p.0 != img.get_pixel(0, 0).0),
        "something drawn"
    );

    let mut fluid = Fluid::from_scene(channel(), Backend::Cpu).unwrap();
    fluid.step(5).unwrap();
    let look = fluid.look().unwrap();
    let img = fluid.render(&look, 80, 40).unwrap();
    assert_eq!(img.dimensions(), (80, 40));
    let e = fluid.render(&look, 0, 40).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
    let e = fluid.render(&Look::default(), 9000, 40).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Invalid);
}

#[test]
fn backends_parse() {
    assert_eq!("auto".parse::<Backend>().unwrap(), Backend::Auto);
    assert_eq!("cpu".parse::<Backend>().unwrap(), Backend::Cpu);
    assert_eq!(
        "cuda".parse::<Backend>().unwrap(),
        Backend::Cuda { device: 0 }
    );
    assert_eq!(
        "cuda:3".parse::<Backend>().unwrap(),
        Backend::Cuda { device: 3 }
    );
    for bad in ["gpu", "cuda:", "cuda:x", ""] {
        let e = bad.parse::<Backend>().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Invalid, "{bad:?}");
        assert!(e.message().contains("cuda:N"), "{e}");
    }
}

/// The bytes `a` spans on its device, read with cudarc after its writes, as `u32` words
/// (every murmur device array has 4-byte elements), and the word index of each element in
/// row-major order of its shape.
fn read_back(a: &DeviceArray) -> (Vec<u32>, Vec<usize>) {
    use cudarc::driver::{result, CudaContext};
    assert_eq!(a.dtype().size(), 4);
    let ctx = CudaContext::new(a.device()).unwrap();
    ctx.bind_to_thread().unwrap();
    // The legacy default stream (1) waits for the array's writes; the copy below runs on it.
    a.order_before(1).unwrap();
    ctx.synchronize().unwrap();
    let span: usize = a
        .shape()
        .iter()
        .zip(a.strides())
        .map(|(n, s)| (n - 1) * s)
        .sum::<usize>()
        + 4;
    let mut words = vec![0u32; span / 4];
    unsafe { result::memcpy_dtoh_sync(&mut words, a.ptr()).unwrap() };
    let mut index = vec![0usize];
    for (n, s) in a.shape().iter().zip(a.strides()) {
        assert_eq!(s % 4, 0);
        index = index
            .iter()
            .flat_map(|base| (0..*n).map(move |i| base + i * s / 4))
            .collect();
    }
    (words, index)
}

fn floats(a: &DeviceArray) -> Vec<f32> {
    let (words, index) = read_back(a);
    index.iter().map(|&i| f32::from_bits(words[i])).collect()
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn device_arrays_match_the_host_copies() {
    let gpu = Backend::Cuda { device: 0 };
    let mut f = flock(20_000, gpu);
    f.step(5).unwrap();
    let pos = f.device_positions().unwrap().expect("a CUDA flock");
    let ids = f.device_ids().unwrap().unwrap();
    let vel = f.device_velocities().unwrap().unwrap();
    assert_eq!(pos.shape(), &[20_000, 3]);
    assert_eq!(pos.strides(), &[16, 4]);
    let (id_words, id_index) = read_back(&ids);
    let id: Vec<u32> = id_index.iter().map(|&i| id_words[i]).collect();
    let (p, v) = (floats(&pos), floats(&vel));
    assert!(f.is_current(&pos));
    let by_id = f.state().unwrap();
    let mut seen = vec![false; 20_000];
    for (k, &i) in id.iter().enumerate() {
        let i = i as usize;
        assert!(!seen[i], "id {i} twice");
        seen[i] = true;
        assert_eq!(&p[3 * k..3 * k + 3], &by_id.pos[i].to_array(), "pos of {i}");
        assert_eq!(&v[3 * k..3 * k + 3], &by_id.vel[i].to_array(), "vel of {i}");
    }
    f.step(1).unwrap();
    assert!(!f.is_current(&pos));
    assert_eq!(
        pos.check(f.is_current(&pos)).unwrap_err().kind(),
        ErrorKind::Stale
    );

    let mut fluid = Fluid::from_file(cavity(), gpu).unwrap();
    fluid.step(10).unwrap();
    let [nx, ny, nz] = fluid.shape();
    let n = nx * ny * nz;
    let u = fluid.device_velocity().unwrap().expect("a CUDA fluid");
    let rho = fluid.device_density().unwrap().unwrap();
    assert_eq!(u.shape(), &[nz, ny, nx, 3]);
    let (du, drho) = (floats(&u), floats(&rho));
    let host = fluid.fields().unwrap();
    assert_eq!(drho, host.data[..n].to_vec(), "density");
    for c in 0..n {
        for a in 0..3 {
            assert_eq!(du[3 * c + a], host.data[(a + 1) * n + c], "u[{c}][{a}]");
        }
    }
    assert!(fluid.is_current(&u));
    fluid.step(1).unwrap();
    assert!(!fluid.is_current(&u));
}
