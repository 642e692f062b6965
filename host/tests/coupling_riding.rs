//! A flock riding the CPU fluid (one-way), against analytic motions: an inertial boid released
//! at rest in a uniform flow relaxes as `U (1 - exp(-t / tau_p))` (an 8^3 periodic box, BGK,
//! `U = 0.05`, `tau_p = 10` steps, 100 steps, 1 and 4 substeps per step: within 1e-4 U), and
//! tracers in a steady Poiseuille channel travel at the parabola's `u(y)` (64 fluid cells
//! between walls, ACM-MRT, `u_max = 0.05`, `nu = 0.1`, tracers on the nodes 1.5 cells and more
//! from the walls, until the centre has travelled 5 h: displacement within 1e-3 of the
//! distance travelled), and tracers in a decaying Taylor-Green vortex keep `psi / A` (64 x 64,
//! ACM-MRT, `u0 = 0.01`, 4,000 steps: within 1e-3 of its largest magnitude).

use murmur::internals::coupling::riding::Riding;
use murmur::internals::coupling::CpuBoids;
use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::scene;
use murmur::internals::fluid::FluidBackend;
use murmur_common::coupling::{BoidBox, Rates};
use murmur_common::lbm::{CollisionModel, Fp32, Initial};
use murmur_common::Vec3;

/// No rules: each boid alone (radii small enough for any box).
fn no_rules() -> Rates {
    Rates {
        rule: [0.0; 3],
        distance: [0.25; 3],
        max_speed: 1.0,
    }
}

#[test]
fn an_inertial_boid_released_at_rest_relaxes_to_a_uniform_flow() {
    let u = 0.05f32;
    let mut setup = scene::taylor_green(8, 8, 0.0, 0.1, CollisionModel::Bgk).unwrap();
    setup.initial = Initial::uniform([u, 0.0, 0.0]);
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [8.0; 3],
        periodic: 0b111,
    };
    let tau_p = 10.0;
    for substeps in [1u32, 4] {
        let mut fluid = CpuFluid::<Fp32>::new(&setup).unwrap();
        let dt = 1.0 / substeps as f64;
        let boids = CpuBoids::new(
            vec![Vec3::new(3.3, 4.1, 2.7)],
            vec![Vec3::ZERO],
            no_rules(),
            dt,
            tau_p,
            b,
        )
        .unwrap();
        let mut ride = Riding::new(&setup, &mut fluid, boids, substeps).unwrap();
        let mut worst = 0.0f64;
        for t in 1..=100u32 {
            ride.step(&mut fluid, &[]).unwrap();
            let exact = u as f64 * (1.0 - (-(t as f64) / tau_p).exp());
            let v = ride.boids.vel[0];
            worst = worst
                .max((v.x as f64 - exact).abs())
                .max(v.y.abs() as f64)
                .max(v.z.abs() as f64);
        }
        assert!(
            worst <= 1e-4 * u as f64,
            "{substeps} substeps: worst {worst:.3e} against 1e-4 U = {:.1e}",
            1e-4 * u
        );
    }
}

#[test]
fn tracers_in_a_steady_poiseuille_channel_travel_at_the_parabola() {
    let (h, u_max, nu) = (64u32, 0.05f32, 0.1f32);
    let setup = scene::poiseuille(h, u_max, nu, CollisionModel::AcmMrt).unwrap();
    let mut fluid = CpuFluid::<Fp32>::new(&setup).unwrap();
    // Steady first: 25 viscous times h^2 / (pi^2 nu).
    let settle = (25.0 * (h * h) as f64 / (std::f64::consts::PI.powi(2) * nu as f64)) as u32;
    for _ in 0..settle {
        fluid.step().unwrap();
    }
    // Walls halfway between the wall cells and the first fluid ones: y = 1/2 and h + 1/2 in
    // node coordinates. Tracers on nodes at least 1.5 cells from either wall.
    let b = BoidBox {
        lo: [0.0, 0.5, 0.0],
        hi: [1.0, h as f32 + 0.5, 1.0],
        periodic: 0b101,
    };
    let ys: Vec<f32> = (2..h).map(|j| j as f32).collect();
    let pos: Vec<Vec3> = ys.iter().map(|&y| Vec3::new(0.25, y, 0.5)).collect();
    let boids = CpuBoids::new(
        pos.clone(),
        vec![Vec3::ZERO; pos.len()],
        no_rules(),
        1.0,
        0.0,
        b,
    )
    .unwrap();
    let mut ride = Riding::new(&setup, &mut fluid, boids, 1).unwrap();
    // Until the centre has travelled 5 h: the x displacement unwrapped step by step (a step
    // moves a tracer far less than the 1-cell period).
    let steps = (5.0 * h as f32 / u_max).ceil() as u32;
    let mut last: Vec<f32> = pos.iter().map(|p| p.x).collect();
    let mut travelled = vec![0.0f64; pos.len()];
    for _ in 0..steps {
        ride.step(&mut fluid, &[]).unwrap();
        for (k, &id) in ride.boids.id.iter().enumerate() {
            let (i, x) = (id as usize, ride.boids.pos[k].x);
            let d = x - last[i];
            travelled[i] += (d - d.round()) as f64;
            last[i] = x;
        }
    }
    let mut worst = 0.0f64;
    for (i, &y) in ys.iter().enumerate() {
        let y = y as f64 - 0.5;
        let exact = 4.0 * u_max as f64 * y * (h as f64 - y) / (h as f64).powi(2) * steps as f64;
        worst = worst.max((travelled[i] - exact).abs() / exact);
    }
    assert!(
        worst <= 1e-3,
        "worst displacement error {worst:.3e} of the distance travelled"
    );
    // What is left is the lattice's own profile (its walls' slip), not the ride: against the
    // fluid's velocity at each tracer's node the displacements agree to the rounding of f32
    // positions in a one-cell period, stepped 6,400 times.
    let f = fluid.fields().unwrap();
    let l = setup.lattice();
    let mut ride_worst = 0.0f64;
    for (i, &y) in ys.iter().enumerate() {
        let node = f.u(l.index(0, y as u32, 0))[0] as f64 * steps as f64;
        ride_worst = ride_worst.max((travelled[i] - node).abs() / node);
    }
    assert!(
        ride_worst <= 1e-4,
        "against the lattice's own velocities: {ride_worst:.3e}"
    );
}

#[test]
fn tracers_in_a_decaying_taylor_green_vortex_stay_on_their_streamlines() {
    // 64 x 64 (one cell deep), ACM-MRT, u0 = 0.01 (at 0.05 the lattice's compressibility, Ma^2,
    // bends its streamlines by some 3e-3), nu = 0.01 (decay time 1 / (2 nu k^2) = 5,200
    // steps); 4,000 steps, 64 tracers.
    let (n, u0, nu) = (64u32, 0.01f32, 0.01f32);
    let setup = scene::taylor_green(n, 1, u0, nu, CollisionModel::AcmMrt).unwrap();
    let mut fluid = CpuFluid::<Fp32>::new(&setup).unwrap();
    let k = 2.0 * std::f64::consts::PI / n as f64;
    // The stream function over the amplitude, psi / A (u = dpsi/dy, v = -dpsi/dx): the flow
    // decays in amplitude only, so psi / A is the same along a streamline at every time. Its
    // largest magnitude is 1 / k.
    let shape = |p: Vec3| (k * p.x as f64).sin() * (k * p.y as f64).sin() / k;
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [n as f32, n as f32, 1.0],
        periodic: 0b111,
    };
    let pos: Vec<Vec3> = (0..64)
        .map(|i| Vec3::new(3.1 + 8.0 * (i % 8) as f32, 2.7 + 8.0 * (i / 8) as f32, 0.5))
        .collect();
    let start: Vec<f64> = pos.iter().map(|&p| shape(p)).collect();
    let boids = CpuBoids::new(pos, vec![Vec3::ZERO; 64], no_rules(), 1.0, 0.0, b).unwrap();
    let mut ride = Riding::new(&setup, &mut fluid, boids, 1).unwrap();
    let mut worst = 0.0f64;
    for _ in 0..4000 {
        ride.step(&mut fluid, &[]).unwrap();
        for (kk, &id) in ride.boids.id.iter().enumerate() {
            let drift = shape(ride.boids.pos[kk]) - start[id as usize];
            worst = worst.max(drift.abs() * k);
        }
    }
    assert!(
        worst <= 1e-3,
        "worst drift across streamlines {worst:.3e} of max |psi / A|"
    );
}
