//! The coupled flock on the GPU (`CudaBoids`) against the CPU reference (`CpuBoids`) from the
//! same boids in the same air: a few thousand boids with the rules on, a moving sphere to
//! avoid, a Taylor-Green vortex with a shear across walls that changes over the fluid step, a
//! periodic axis and a wall axis; after 1 and 10 substeps, within the flock's parity tolerance
//! (`ONE_STEP_TOLERANCE`). Two CUDA runs are bit-identical, and the air copied from a device
//! buffer (a CUDA fluid's `device_fields`) rides as the uploaded one does; a CUDA fluid's fields
//! computed straight into another handle's buffer (`fields_into`, as the ride fills its air) are
//! the bits of its own fields. `#[ignore]`d: they need a CUDA GPU and the kernels' PTX, and run
//! with `cargo xtask gpu-test`.

use murmur::internals::coupling::cuda::{Air, AirFields, BoidArrays, CudaBoids, Level};
use murmur::internals::coupling::CpuBoids;
use murmur::internals::flock::check::ONE_STEP_TOLERANCE;
use murmur::internals::fluid::Fields;
use murmur::internals::gpu::exposed::RawBuffer;
use murmur::internals::gpu::Gpu;
use murmur_common::coupling::sdf::{Avoidance, Obstacle, Sdf, SPHERE};
use murmur_common::coupling::substep::{air_between, SubstepTime};
use murmur_common::coupling::{BoidBox, Rates};
use murmur_common::lbm::ib::solid::SolidState;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::layout::Lattice;
use murmur_common::math::length;
use murmur_common::Vec3;

/// Substeps per fluid step.
const SUBSTEPS: u32 = 10;
const BOIDS: usize = 4000;
/// The lattice: periodic along x and z, solid layers at y = 0 and y = NY - 1.
const NX: u32 = 48;
const NY: u32 = 40;
const NZ: u32 = 32;
/// The sphere's radius and its centre at rest (cells).
const RADIUS: f32 = 5.0;
const CENTER: [f32; 3] = [22.0, 20.0, 16.0];

fn lattice() -> Lattice {
    Lattice::new(NX, NY, NZ)
}

fn domain() -> Domain {
    Domain::new(lattice(), [true, false, true])
}

/// The boids' box: one period along x and z, between the walls' first fluid nodes along y.
fn bounds() -> BoidBox {
    BoidBox {
        lo: [-0.5, 1.0, -0.5],
        hi: [NX as f32 - 0.5, NY as f32 - 2.0, NZ as f32 - 0.5],
        periodic: 0b101,
        through: 0,
    }
}

fn rates() -> Rates {
    Rates {
        rule: [0.02, 0.2, 0.1],
        distance: [5.0, 3.0, 5.0],
        max_speed: 0.05,
    }
}

fn avoidance() -> Avoidance {
    Avoidance {
        reach: 3.0,
        rate: 0.05,
        margin: 0.01,
        h: 1e-3,
    }
}

/// The sphere at the end of substep `k`: moving along x at 0.3 cells per substep.
fn sphere(k: u32) -> Obstacle {
    Obstacle {
        sdf: Sdf {
            kind: SPHERE,
            a: RADIUS,
            ..Sdf::default()
        },
        state: SolidState {
            center: [CENTER[0] + 0.3 * (k + 1) as f32, CENTER[1], CENTER[2]],
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ..SolidState::default()
        },
    }
}

fn coords(cell: usize) -> (f32, f32, f32) {
    let (nx, ny) = (NX as usize, NY as usize);
    (
        (cell % nx) as f32,
        (cell / nx % ny) as f32,
        (cell / (nx * ny)) as f32,
    )
}

/// Fluid nodes: all but the wall layers and the sphere at rest.
fn fluid_mask() -> Vec<bool> {
    (0..lattice().cells())
        .map(|c| {
            let (x, y, z) = coords(c);
            let d = Vec3::new(x, y, z) - Vec3::from_array(CENTER);
            y > 0.0 && y < (NY - 1) as f32 && d.length_squared() > RADIUS * RADIUS
        })
        .collect()
}

/// A Taylor-Green vortex in x-z of amplitude `amp` with a shear along x across y, and a small
/// y component that varies with x (phase `phase`).
fn field(amp: f32, phase: f32) -> Fields {
    let mut f = Fields::rest(lattice());
    let (kx, kz) = (
        std::f32::consts::TAU / NX as f32,
        std::f32::consts::TAU / NZ as f32,
    );
    for c in 0..lattice().cells() {
        let (x, y, z) = coords(c);
        let shear = 0.001 * (y - 20.0);
        let u = [
            amp * (kx * x).sin() * (kz * z).cos() + shear,
            0.1 * amp * (kx * x + phase).sin(),
            -amp * (kx / kz) * (kx * x).cos() * (kz * z).sin(),
        ];
        f.set(c, 1.0, u);
    }
    f
}

/// `n` boids spread over the box outside the sphere, with small relative velocities.
fn start(n: usize) -> (Vec<Vec3>, Vec<Vec3>) {
    let b = bounds();
    let mut state = 0x2545_f491_u32;
    let mut next = move || {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        (state >> 8) as f32 / (1u32 << 24) as f32
    };
    let (mut pos, mut rel) = (Vec::new(), Vec::new());
    while pos.len() < n {
        let p = Vec3::new(
            b.lo[0] + next() * (b.hi[0] - b.lo[0] - 1e-3),
            b.lo[1] + next() * (b.hi[1] - b.lo[1]),
            b.lo[2] + next() * (b.hi[2] - b.lo[2] - 1e-3),
        );
        let w = Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5) * 0.06;
        if length(p - Vec3::from_array(CENTER)) > RADIUS + 0.5 {
            pos.push(p);
            rel.push(w);
        }
    }
    (pos, rel)
}

/// The fields before and after the fluid step.
fn fields() -> [Fields; 2] {
    [field(0.04, 0.0), field(0.036, 0.4)]
}

fn gpu() -> Gpu {
    Gpu::open().expect("a CUDA GPU and the kernels' PTX")
}

/// Largest difference per component between the two flocks, boid by boid (matched by id):
/// positions at the nearest image along the periodic axes, ground and relative velocities.
fn max_difference(cpu: &CpuBoids, gpu: &BoidArrays) -> (f32, f32, f32) {
    let b = bounds();
    let mut at = vec![usize::MAX; cpu.id.len()];
    for (k, &id) in gpu.id.iter().enumerate() {
        at[id as usize] = k;
    }
    let (mut dp, mut dv, mut dw) = (0.0f32, 0.0f32, 0.0f32);
    for (i, &id) in cpu.id.iter().enumerate() {
        let k = at[id as usize];
        assert!(k != usize::MAX, "boid {id} is missing on the GPU");
        let d = (cpu.pos[i] - gpu.pos[k]).to_array();
        for (a, &c) in d.iter().enumerate() {
            let period = b.hi[a] - b.lo[a];
            let c = if b.periodic >> a & 1 != 0 {
                c.abs().min(period - c.abs())
            } else {
                c.abs()
            };
            dp = dp.max(c);
        }
        dv = dv.max((cpu.vel[i] - gpu.vel[k]).abs().max_element());
        dw = dw.max((cpu.rel[i] - gpu.rel[k]).abs().max_element());
    }
    (dp, dv, dw)
}

/// The CUDA flock of the test's boids with relaxation time `tau_p`, its air uploaded.
fn cuda_flock(tau_p: f64) -> (CudaBoids, AirFields) {
    let (pos, rel) = start(BOIDS);
    let dt = 1.0 / SUBSTEPS as f64;
    let boids = CudaBoids::new(gpu(), pos, rel, rates(), dt, tau_p, bounds())
        .unwrap()
        .avoiding(avoidance())
        .unwrap();
    let mut air = AirFields::new(boids.gpu(), domain(), &fluid_mask()).unwrap();
    let [before, after] = fields();
    air.upload(Level::Before, &before).unwrap();
    air.upload(Level::After, &after).unwrap();
    (boids, air)
}

/// Substep `k` of the CUDA flock in `air`.
fn cuda_substep(boids: &mut CudaBoids, air: &AirFields, k: u32) {
    let time = SubstepTime { k, n: SUBSTEPS };
    let air = Air { fields: air, time };
    boids.substep_among(Some(air), &[sphere(k)]).unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn the_gpu_flock_matches_the_cpu_after_1_and_10_substeps() {
    let d = domain();
    let mask = fluid_mask();
    let [before, after] = fields();
    for tau_p in [0.0, 2.0] {
        let (pos, rel) = start(BOIDS);
        let dt = 1.0 / SUBSTEPS as f64;
        let mut cpu = CpuBoids::new(pos.clone(), rel, rates(), dt, tau_p, bounds())
            .unwrap()
            .avoiding(avoidance())
            .unwrap();
        let (mut gpu, air) = cuda_flock(tau_p);
        for k in 0..SUBSTEPS {
            let time = SubstepTime { k, n: SUBSTEPS };
            let cpu_air = |x: Vec3, s: f32| {
                air_between(
                    &d,
                    x,
                    time.at(s),
                    |c| mask[c],
                    |c| before.u(c),
                    |c| after.u(c),
                )
            };
            cpu.substep_among(cpu_air, &[sphere(k)]);
            cuda_substep(&mut gpu, &air, k);
            let got = gpu.download().unwrap();
            if k == 0 {
                // One sort of the same positions: the same order.
                assert_eq!(got.id, cpu.id, "tau_p {tau_p}: the order after one substep");
            }
            if k == 0 || k + 1 == SUBSTEPS {
                let (dp, dv, dw) = max_difference(&cpu, &got);
                assert!(
                    dp <= ONE_STEP_TOLERANCE
                        && dv <= ONE_STEP_TOLERANCE
                        && dw <= ONE_STEP_TOLERANCE,
                    "tau_p {tau_p}, after {} substeps: |dx| {dp:e}, |dv| {dv:e}, |dw| {dw:e}",
                    k + 1
                );
            }
        }
        // The case is not trivial: the boids moved and some came within the sphere's reach.
        let moved = cpu
            .id
            .iter()
            .zip(&cpu.pos)
            .filter(|(&id, p)| length(**p - pos[id as usize]) > 0.005)
            .count();
        assert!(moved > BOIDS / 2, "tau_p {tau_p}: {moved} boids moved");
        let s = sphere(SUBSTEPS - 1);
        let near = cpu
            .pos
            .iter()
            .filter(|p| {
                s.sdf
                    .distance(&s.state, **p, &murmur_common::coupling::sdf::no_samples)
                    < avoidance().reach
            })
            .count();
        assert!(near > 10, "tau_p {tau_p}: {near} boids near the sphere");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn two_gpu_runs_are_bit_identical() {
    let bits = |b: &BoidArrays| {
        let v = |a: &[Vec3]| -> Vec<[u32; 3]> {
            a.iter().map(|p| p.to_array().map(f32::to_bits)).collect()
        };
        (v(&b.pos), v(&b.vel), v(&b.rel), b.id.clone())
    };
    for tau_p in [0.0, 2.0] {
        let runs: Vec<_> = (0..2)
            .map(|_| {
                let (mut boids, air) = cuda_flock(tau_p);
                for k in 0..SUBSTEPS {
                    cuda_substep(&mut boids, &air, k);
                }
                bits(&boids.download().unwrap())
            })
            .collect();
        assert!(runs[0] == runs[1], "tau_p {tau_p}: two runs differ");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn air_copied_from_a_device_buffer_rides_as_the_uploaded_air() {
    let (mut uploaded, air) = cuda_flock(2.0);
    let (mut copied, _) = cuda_flock(2.0);
    // The fields as a fluid's device buffers on another stream (another handle of the GPU).
    let fluid_gpu = gpu();
    let buffers = fields().map(|f| fluid_gpu.upload(&f.data).unwrap());
    let mut from_device = AirFields::new(copied.gpu(), domain(), &fluid_mask()).unwrap();
    assert!(!from_device.is_ready());
    from_device
        .copy_from(
            Level::Before,
            &RawBuffer::of(&buffers[0], &fluid_gpu.stream),
        )
        .unwrap();
    from_device
        .copy_from(Level::After, &RawBuffer::of(&buffers[1], &fluid_gpu.stream))
        .unwrap();
    assert!(from_device.is_ready());
    for k in 0..SUBSTEPS {
        cuda_substep(&mut uploaded, &air, k);
        cuda_substep(&mut copied, &from_device, k);
    }
    assert_eq!(uploaded.download().unwrap(), copied.download().unwrap());
    // The next fluid step starts from these fields' after level: only one level is set then.
    from_device.advance();
    assert!(!from_device.is_ready());
    let time = SubstepTime { k: 0, n: SUBSTEPS };
    let refused = copied.substep(Some(Air {
        fields: &from_device,
        time,
    }));
    assert!(refused.is_err());
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn fields_computed_into_another_buffer_are_the_fluids_own() {
    use murmur::internals::backend::BackendChoice;
    use murmur::internals::fluid::{driver::open_backend, scene};
    use murmur_common::lbm::CollisionModel;
    let setup = scene::taylor_green(24, 24, 0.05, 0.02, CollisionModel::AcmMrt).unwrap();
    let (mut fluid, _) = open_backend(BackendChoice::Cuda, &setup).unwrap();
    for _ in 0..7 {
        fluid.step().unwrap();
    }
    // Another handle of the GPU (as a flock's), its buffer written by the fluid's stream.
    let other = gpu();
    let mut dst = other.zeros::<f32>(4 * setup.lattice().cells()).unwrap();
    assert!(fluid.fields_into(&mut dst).unwrap().is_some());
    other
        .stream
        .join(&fluid.device_fields().unwrap().unwrap().stream)
        .unwrap();
    let into = other.download(&dst).unwrap();
    let own = fluid.fields().unwrap();
    assert_eq!(
        into.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        own.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    let mut wrong = other.zeros::<f32>(5).unwrap();
    assert!(fluid.fields_into(&mut wrong).is_err());
}
