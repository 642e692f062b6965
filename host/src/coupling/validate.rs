//! The coupled flock's validation cases, one-way, on any fluid backend (`fluid validate` runs
//! them after the fluid's own, through the command line's layer, which sees both): an inertial
//! boid released at rest in a uniform flow, tracers in a steady Poiseuille channel and tracers
//! in a decaying Taylor-Green vortex, each against its analytic motion. Sizes and targets:
//! docs/coupling.md.

use super::riding::Riding;
use super::CpuBoids;
use crate::fluid::scene;
use crate::fluid::validate::{CaseResult, Opener};
use crate::fluid::FluidError;
use murmur_common::coupling::{BoidBox, Rates};
use murmur_common::lbm::{CollisionModel, Initial};
use murmur_common::Vec3;
use std::time::Instant;

/// Target of the inertial boid: the largest velocity error over `U`.
pub const TARGET_INERTIAL: f64 = 1e-4;
/// Target of the Poiseuille tracers: the largest displacement error over the distance travelled.
pub const TARGET_POISEUILLE: f64 = 1e-3;
/// Target of the Taylor-Green tracers: the largest change of `psi / A` over its largest
/// magnitude.
pub const TARGET_TAYLOR_GREEN: f64 = 1e-3;
/// Target of the two-way momentum budget: the largest change of the total momentum over its
/// start.
pub const TARGET_MOMENTUM: f64 = 1e-6;

/// No rules: each boid alone (radii small enough for a box of one cell).
fn no_rules() -> Rates {
    Rates {
        rule: [0.0; 3],
        distance: [0.25; 3],
        max_speed: 1.0,
    }
}

fn boids_err(e: super::BoidsError) -> FluidError {
    FluidError::Invalid(e.to_string())
}

/// An inertial boid released at rest at an off-node point of an 8^3 periodic box in a uniform
/// flow `U = 0.05` (BGK), `tau_p = 10` steps, 100 steps with `substeps` substeps per step: the
/// largest `|v - U (1 - exp(-t / tau_p))|` (and `|v_y|`, `|v_z|`) over `U`.
pub fn inertial_case(open: &mut Opener, substeps: u32) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let u = 0.05f32;
    let mut setup = scene::taylor_green(8, 8, 0.0, 0.1, CollisionModel::Bgk)?;
    setup.initial = Initial::uniform([u, 0.0, 0.0]);
    let mut fluid = open(&setup)?;
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [8.0; 3],
        periodic: 0b111,
        through: 0,
    };
    let tau_p = 10.0;
    let start = vec![Vec3::new(3.3, 4.1, 2.7)];
    let dt = 1.0 / substeps as f64;
    let boids =
        CpuBoids::new(start, vec![Vec3::ZERO], no_rules(), dt, tau_p, b).map_err(boids_err)?;
    let mut ride = Riding::new(&setup, fluid.as_mut(), boids, substeps)?;
    let mut worst = 0.0f64;
    let steps = 100u32;
    for t in 1..=steps {
        ride.step(fluid.as_mut(), &[])?;
        let exact = u as f64 * (1.0 - (-(t as f64) / tau_p).exp());
        let v = ride.boids().vel[0];
        worst = worst
            .max((v.x as f64 - exact).abs())
            .max(v.y.abs() as f64)
            .max(v.z.abs() as f64);
    }
    Ok(CaseResult {
        case: format!("inertial boid in a uniform flow, substeps {substeps}"),
        model: setup.model,
        grid: "8x8x8".into(),
        steps: steps as u64,
        metric: "max velocity error / U",
        error: worst / u as f64,
        target: TARGET_INERTIAL,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Tracers in a steady Poiseuille channel of `h` fluid cells (ACM-MRT, `u_max = 0.05`, `nu =
/// 0.1`, settled for 25 viscous times `h^2 / (pi^2 nu)`), on the nodes 1.5 cells and more from
/// the walls, until the centre has travelled `5 h`: the largest displacement error against the
/// parabola over the distance travelled.
pub fn poiseuille_case(open: &mut Opener, h: u32) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let (u_max, nu) = (0.05f32, 0.1f32);
    let setup = scene::poiseuille(h, u_max, nu, CollisionModel::AcmMrt)?;
    let mut fluid = open(&setup)?;
    let settle = (25.0 * (h * h) as f64 / (std::f64::consts::PI.powi(2) * nu as f64)) as u64;
    for _ in 0..settle {
        fluid.step()?;
    }
    // Walls halfway between the wall cells and the first fluid ones: y = 1/2 and h + 1/2 in
    // node coordinates.
    let b = BoidBox {
        lo: [0.0, 0.5, 0.0],
        hi: [1.0, h as f32 + 0.5, 1.0],
        periodic: 0b101,
        through: 0,
    };
    let ys: Vec<f32> = (2..h).map(|j| j as f32).collect();
    let pos: Vec<Vec3> = ys.iter().map(|&y| Vec3::new(0.25, y, 0.5)).collect();
    let n = pos.len();
    let boids = CpuBoids::new(pos.clone(), vec![Vec3::ZERO; n], no_rules(), 1.0, 0.0, b)
        .map_err(boids_err)?;
    let mut ride = Riding::new(&setup, fluid.as_mut(), boids, 1)?;
    // The x displacement unwrapped step by step (a step moves a tracer far less than the
    // channel's one-cell period).
    let steps = (5.0 * h as f32 / u_max).ceil() as u64;
    let mut last: Vec<f32> = pos.iter().map(|p| p.x).collect();
    let mut travelled = vec![0.0f64; n];
    for _ in 0..steps {
        ride.step(fluid.as_mut(), &[])?;
        for (k, &id) in ride.boids().id.iter().enumerate() {
            let (i, x) = (id as usize, ride.boids().pos[k].x);
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
    Ok(CaseResult {
        case: "poiseuille tracers".into(),
        model: setup.model,
        grid: format!("1x{}x1 ({h} fluid)", h + 2),
        steps: settle + steps,
        metric: "max displacement error / distance",
        error: worst,
        target: TARGET_POISEUILLE,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Tracers in a decaying Taylor-Green vortex on `n x n x 1` (ACM-MRT, `u0 = 0.01`, `nu = 0.01`),
/// 64 of them, for `steps` steps: the largest change of `psi / A = sin(kx) sin(ky) / k` along a
/// tracer's path over its largest magnitude `1 / k` (the flow decays in amplitude only, so
/// `psi / A` is constant on a streamline).
pub fn taylor_green_case(open: &mut Opener, n: u32, steps: u64) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let (u0, nu) = (0.01f32, 0.01f32);
    let setup = scene::taylor_green(n, 1, u0, nu, CollisionModel::AcmMrt)?;
    let mut fluid = open(&setup)?;
    let k = 2.0 * std::f64::consts::PI / n as f64;
    let shape = |p: Vec3| (k * p.x as f64).sin() * (k * p.y as f64).sin() / k;
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [n as f32, n as f32, 1.0],
        periodic: 0b111,
        through: 0,
    };
    let spacing = n as f32 / 8.0;
    let pos: Vec<Vec3> = (0..64)
        .map(|i| {
            let (a, c) = ((i % 8) as f32, (i / 8) as f32);
            Vec3::new(spacing * (a + 0.39), spacing * (c + 0.34), 0.5)
        })
        .collect();
    let start: Vec<f64> = pos.iter().map(|&p| shape(p)).collect();
    let boids =
        CpuBoids::new(pos, vec![Vec3::ZERO; 64], no_rules(), 1.0, 0.0, b).map_err(boids_err)?;
    let mut ride = Riding::new(&setup, fluid.as_mut(), boids, 1)?;
    let mut worst = 0.0f64;
    for _ in 0..steps {
        ride.step(fluid.as_mut(), &[])?;
        for (i, &id) in ride.boids().id.iter().enumerate() {
            let drift = shape(ride.boids().pos[i]) - start[id as usize];
            worst = worst.max(drift.abs() * k);
        }
    }
    Ok(CaseResult {
        case: "taylor-green tracers".into(),
        model: setup.model,
        grid: format!("{n}x{n}x1"),
        steps,
        metric: "max change of psi/A, of its largest",
        error: worst,
        target: TARGET_TAYLOR_GREEN,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The rotating torus of `assets/fluid/rotating-torus.toml` turned faster (5 rad/s, ramped over
/// 0.05 s: its rim sweeps through the flock at about `U`) at `1 / coarsen` of its resolution,
/// with `count` boids spawned in a ball about it that avoid it (one-way, 2 substeps), for
/// `steps` steps: the boids inside the torus after any step (its signed distance at the step's
/// end below 0), counted over all steps; a progress bar over the steps when `show`.
pub fn torus_case(
    open: &mut Opener,
    coarsen: u32,
    count: u64,
    steps: u64,
    show: bool,
) -> Result<CaseResult, FluidError> {
    use crate::fluid::riders::Rider;
    use rayon::prelude::*;
    let t0 = Instant::now();
    let text = include_str!("../../../assets/fluid/rotating-torus.toml")
        .replace(
            "motion = { type = \"rotate\", axis = [0, 1, 0], rate = 2.5, ramp = 0.5 }",
            "motion = { type = \"rotate\", axis = [0, 1, 0], rate = 5.0, ramp = 0.05 }",
        )
        .replace(
            "x_min = { type = \"inlet\", ramp = 0.5 }",
            "x_min = { type = \"inlet\" }",
        );
    let flock = format!(
        "\n[[flocks]]\ncount = {count}\nspawn = {{ sphere = {{ center = [0.5, 0.4, 0.4], \
         radius = 0.25 }} }}\nseed = 11\nrates = [2.0, 40.0, 8.0]\nradii = [0.02, 0.01, 0.02]\n\
         max_speed = 0.3\ntau_p = 0.005\navoid = 0.05\navoid_rate = 40.0\nsubsteps = 2\n"
    );
    let mut file =
        scene::SceneFile::parse(&format!("{text}{flock}")).map_err(FluidError::Invalid)?;
    let overrides = scene::overrides::SceneOverrides {
        coarsen: Some(coarsen),
        check_every: None,
    };
    overrides.apply(&mut file)?;
    let built = file.build()?;
    let specs = super::scene::read_flocks(&flock).map_err(FluidError::Invalid)?;
    let mut fluid = open(&built.setup)?;
    let mut flocks = super::scene::SceneFlocks::open(&specs, &built, fluid.as_mut())?;
    let solids: Vec<_> = built.setup.force_solids().cloned().collect();
    let solids = &solids;
    let distances = super::distance::SolidDistances::of(solids, 0.0);
    let mut inside = 0u64;
    let bar = crate::backend::progress_bar(steps, "step", show);
    for step in 1..=steps {
        if built.inlet.varies() {
            fluid.set_inlet_scale(built.inlet.scale(step));
        }
        fluid.step()?;
        flocks.after_step(fluid.as_mut())?;
        let now = distances.obstacles(solids, step as f64);
        let now = distances.list(&now);
        let boids = flocks.state(0)?;
        inside += boids.pos.par_iter().filter(|&&p| now.inside(p)).count() as u64;
        bar.inc(1);
    }
    bar.finish_and_clear();
    let l = built.setup.lattice();
    Ok(CaseResult {
        case: format!("torus avoidance, {count} boids"),
        model: built.setup.model,
        grid: format!("{}x{}x{}", l.nx, l.ny, l.nz),
        steps,
        metric: "boids inside the torus, all steps",
        error: inside as f64,
        target: 0.0,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Two-way coupling in a periodic box of `n^3` cells (BGK, FP32 storage) with a mean flow
/// `U = 0.03` along x: `boids` boids of mass 0.5 (a cell of air weighs 1), `tau_p = 4` steps,
/// rules on, started with random velocities relative to the air (up to the speed limit 0.05),
/// for `steps` steps. The budget: the fluid's momentum `sum f c`, the boids' `sum m v` and the
/// impulses not yet applied, at one time level; the error, its largest change over its start.
///
/// An FP32 lattice in a near-uniform mean flow drifts on its own (the same rounding in every
/// cell, step after step: a perturbation of `1e-6` then 200 free steps moves the momentum by
/// `3e-5` of itself in BGK), so each step is also taken by a twin fluid from the same state
/// without the pushes, and the fluid's part of the budget counts only the difference the
/// pushes made. The raw budget, the lattice's drift included, is given in the case's name.
pub fn momentum_case(
    open: &mut Opener,
    n: u32,
    boids: usize,
    steps: u64,
) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let mut setup = scene::taylor_green(n, n, 0.0, 0.05, CollisionModel::Bgk)?;
    setup.initial = Initial::uniform([0.03, 0.0, 0.0]);
    setup.storage = murmur_common::lbm::StorageKind::Fp32;
    let mut fluid = open(&setup)?;
    let mut twin = open(&setup)?;
    let side = n as f32;
    let b = BoidBox {
        lo: [0.0; 3],
        hi: [side; 3],
        periodic: 0b111,
        through: 0,
    };
    // A fixed generator: the same flock every run.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut pos = Vec::with_capacity(boids);
    let mut rel = Vec::with_capacity(boids);
    for _ in 0..boids {
        pos.push(Vec3::new(next() * side, next() * side, next() * side));
        let r = Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5);
        rel.push(r * 0.08);
    }
    let rates = Rates {
        rule: [0.01, 0.05, 0.05],
        distance: [3.0, 1.0, 2.0],
        max_speed: 0.05,
    };
    let flock = CpuBoids::new(pos, rel, rates, 1.0, 4.0, b)
        .and_then(|f| f.two_way(0.5))
        .map_err(boids_err)?;
    let mut ride = Riding::new(&setup, fluid.as_mut(), flock, 1)?;
    // The same band as the fluid's (its state's shape), never pushed.
    twin.enable_pushes(boids as u32)?;
    let cells = setup.lattice().cells();
    let mut piece = vec![0u8; cells * 27 * setup.storage.bytes()];
    let add = |a: [f64; 3], b: [f64; 3]| [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
    let norm = |a: [f64; 3]| a.iter().map(|v| v * v).sum::<f64>().sqrt();
    let start_fluid = fluid_momentum(fluid.as_mut())?;
    let start = add(start_fluid, ride.momentum());
    // The fluid's momentum as the pushes moved it (the twin's steps taken out), and as it is.
    let mut pushed = start_fluid;
    let (mut worst, mut worst_raw) = (0.0f64, 0.0f64);
    for _ in 0..steps {
        let small = fluid.capture_small_state()?;
        twin.restore_small_state(&small)?;
        fluid.read_state_piece(0..cells, &mut piece)?;
        twin.write_state_piece(0..cells, &piece)?;
        twin.step()?;
        ride.step(fluid.as_mut(), &[])?;
        let (with, without) = (
            fluid_momentum(fluid.as_mut())?,
            fluid_momentum(twin.as_mut())?,
        );
        let before = pushed;
        pushed = [0, 1, 2].map(|c| before[c] + with[c] - without[c]);
        let flock = ride.momentum();
        let d = |p: [f64; 3]| {
            let now = add(p, flock);
            norm([0, 1, 2].map(|c| now[c] - start[c])) / norm(start)
        };
        worst = worst.max(d(pushed));
        worst_raw = worst_raw.max(d(with));
    }
    Ok(CaseResult {
        case: format!(
            "two-way momentum budget, {boids} boids (raw, the FP32 lattice's own drift in: \
             {worst_raw:.1e})"
        ),
        model: setup.model,
        grid: format!("{n}x{n}x{n}"),
        steps,
        metric: "max change of the total momentum, of its start",
        error: worst,
        target: TARGET_MOMENTUM,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// The fluid's momentum `sum_cells sum_q f_q c_q` (lattice units), from its populations.
pub fn fluid_momentum(fluid: &mut dyn crate::fluid::FluidBackend) -> Result<[f64; 3], FluidError> {
    let f = fluid.populations()?;
    let n = fluid.lattice().cells();
    let mut m = [0.0f64; 3];
    for q in 0..murmur_common::lbm::d3q27::Q {
        let c = murmur_common::lbm::d3q27::velocity(q);
        let sum: f64 = f[q * n..(q + 1) * n].iter().map(|&v| v as f64).sum();
        for a in 0..3 {
            m[a] += c[a] as f64 * sum;
        }
    }
    Ok(m)
}

/// Every case (the same sizes quick or not, but the torus's: 10,000 boids for 500 steps at a
/// quarter of its resolution when quick, 100,000 for 2,000 at half), `progress(case)` after
/// each.
pub fn run_all(
    open: &mut Opener,
    quick: bool,
    progress: &mut dyn FnMut(&CaseResult),
) -> Result<Vec<CaseResult>, FluidError> {
    let mut out = Vec::new();
    for case in [
        inertial_case(open, 1)?,
        inertial_case(open, 4)?,
        poiseuille_case(open, 64)?,
        taylor_green_case(open, 64, 4000)?,
        momentum_case(open, 16, 1000, 1000)?,
        match quick {
            true => torus_case(open, 4, 10_000, 500, false)?,
            false => torus_case(open, 2, 100_000, 2_000, false)?,
        },
    ] {
        progress(&case);
        out.push(case);
    }
    Ok(out)
}
