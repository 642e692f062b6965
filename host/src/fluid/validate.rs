//! Validation cases with known answers, each run on any backend and scored against a target:
//!
//! - Taylor-Green vortex: kinetic energy decays as `exp(-4 nu k^2 t)` (exact solution of the
//!   incompressible Navier-Stokes equations, Taylor & Green 1937); error of the fitted rate.
//! - Poiseuille flow: parabolic profile between plates (Krüger et al. 2017, Sec. 5.3.4 for
//!   halfway bounce-back walls at `y = 1/2` and `h + 1/2`); relative L2 error.
//! - Lid-driven cavity at Re 100 and 1000: centreline velocities against Ghia, Ghia & Shin,
//!   "High-Re solutions for incompressible flow using the Navier-Stokes equations and a
//!   multigrid method", J. Comput. Phys. 48 (1982) 387-411, Tables I and II; RMS error in
//!   lid-velocity units over the 15 interior points of each table (30 values).
//!
//! Every case runs the health check of `fluid run` (`driver::check_health`, the lid corners
//! exempt from its density bound) every [`CHECK_EVERY`] steps and at its end.

use super::driver::check_health;
use super::scene::health;
use super::scene::Health;
use super::scene::{cavity, poiseuille, taylor_green};
use super::{Fields, FluidBackend, FluidError, Setup};
use murmur_common::lbm::health::Bounds;
use murmur_common::lbm::CollisionModel;
use std::time::Instant;

/// Something that builds a backend for a setup (CPU or CUDA).
pub type Opener<'a> = dyn FnMut(&Setup) -> Result<Box<dyn FluidBackend>, FluidError> + 'a;

/// Ghia et al. (1982) Table I: y positions of the vertical centreline (x = 0.5).
pub const GHIA_Y: [f64; 17] = [
    1.0000, 0.9766, 0.9688, 0.9609, 0.9531, 0.8516, 0.7344, 0.6172, 0.5000, 0.4531, 0.2813, 0.1719,
    0.1016, 0.0703, 0.0625, 0.0547, 0.0000,
];
/// Ghia et al. (1982) Table I: `u / U` along the vertical centreline, Re 100.
pub const GHIA_U_RE100: [f64; 17] = [
    1.00000, 0.84123, 0.78871, 0.73722, 0.68717, 0.23151, 0.00332, -0.13641, -0.20581, -0.21090,
    -0.15662, -0.10150, -0.06434, -0.04775, -0.04192, -0.03717, 0.00000,
];
/// Ghia et al. (1982) Table I: `u / U` along the vertical centreline, Re 1000.
pub const GHIA_U_RE1000: [f64; 17] = [
    1.00000, 0.65928, 0.57492, 0.51117, 0.46604, 0.33304, 0.18719, 0.05702, -0.06080, -0.10648,
    -0.27805, -0.38289, -0.29730, -0.22220, -0.20196, -0.18109, 0.00000,
];
/// Ghia et al. (1982) Table II: x positions of the horizontal centreline (y = 0.5).
pub const GHIA_X: [f64; 17] = [
    1.0000, 0.9688, 0.9609, 0.9531, 0.9453, 0.9063, 0.8594, 0.8047, 0.5000, 0.2344, 0.2266, 0.1563,
    0.0938, 0.0781, 0.0703, 0.0625, 0.0000,
];
/// Ghia et al. (1982) Table II: `v / U` along the horizontal centreline, Re 100.
pub const GHIA_V_RE100: [f64; 17] = [
    0.00000, -0.05906, -0.07391, -0.08864, -0.10313, -0.16914, -0.22445, -0.24533, 0.05454,
    0.17527, 0.17507, 0.16077, 0.12317, 0.10890, 0.10091, 0.09233, 0.00000,
];
/// Ghia et al. (1982) Table II: `v / U` along the horizontal centreline, Re 1000.
pub const GHIA_V_RE1000: [f64; 17] = [
    0.00000, -0.21388, -0.27669, -0.33714, -0.39188, -0.51550, -0.42665, -0.31966, 0.02526,
    0.32235, 0.33075, 0.37095, 0.32627, 0.30353, 0.29012, 0.27485, 0.00000,
];

/// Targets: the largest relative L2 error each case accepts.
pub const TARGET_TGV: f64 = 0.01;
pub const TARGET_POISEUILLE: f64 = 0.01;
pub const TARGET_CAVITY_RE100: f64 = 0.01;
/// The target for Re 1000: twice the Re 100 one (its thinner layers need more cells).
pub const TARGET_CAVITY_RE1000: f64 = 0.02;

/// One scored case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    pub case: String,
    pub model: CollisionModel,
    pub grid: String,
    pub steps: u64,
    /// What `error` measures.
    pub metric: &'static str,
    pub error: f64,
    pub target: f64,
    pub seconds: f64,
}

impl CaseResult {
    pub fn passed(&self) -> bool {
        self.error.is_finite() && self.error <= self.target
    }
}

/// Grid sizes of one validation run.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    pub tgv: u32,
    pub tgv_depth: u32,
    pub poiseuille: u32,
    pub cavity_re100: u32,
    /// 0: skip the Re 1000 cavity.
    pub cavity_re1000: u32,
}

impl Sizes {
    /// The full sizes (TGV 64^3); meant for the GPU.
    pub const FULL: Sizes = Sizes {
        tgv: 64,
        tgv_depth: 64,
        poiseuille: 64,
        cavity_re100: 128,
        cavity_re1000: 256,
    };
    /// Small grids for the CPU (`fluid validate --quick`; its times: docs/fluid/validation.md).
    pub const QUICK: Sizes = Sizes {
        tgv: 32,
        tgv_depth: 4,
        poiseuille: 32,
        cavity_re100: 64,
        cavity_re1000: 0,
    };
}

/// The health check of a case (`driver::check_health`, the run's): the default limits and the
/// setup's corner boxes.
fn bounds(setup: &Setup) -> Bounds {
    health::bounds(setup, Health::DEFAULT)
}

/// Runs `steps` steps, the health check every [`CHECK_EVERY`] steps and after the last one;
/// returns the fields of the last.
fn run_to(
    backend: &mut dyn FluidBackend,
    bounds: &Bounds,
    steps: u64,
) -> Result<Fields, FluidError> {
    for s in 1..=steps {
        backend.step()?;
        if s.is_multiple_of(CHECK_EVERY) || s == steps {
            check_health(backend, bounds, CHECK_EVERY, None)?;
        }
    }
    backend.fields()
}

/// Steps between two health checks of a validation case.
pub const CHECK_EVERY: u64 = 1000;

/// Taylor-Green vortex on `n x n x depth`, `u0 = 0.03`, `tau = 0.6`, run for one e-folding time
/// of the energy; the decay rate is a least-squares fit of `ln E(t)` over the last 90 %.
pub fn taylor_green_case(
    open: &mut Opener,
    model: CollisionModel,
    n: u32,
    depth: u32,
) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let nu = 0.1f32 / 3.0;
    let setup = taylor_green(n, depth, 0.03, nu, model)?;
    let mut b = open(&setup)?;
    let k = 2.0 * std::f64::consts::PI / n as f64;
    let gamma = 4.0 * nu as f64 * k * k;
    let steps = (1.0 / gamma).round() as u64;
    let every = (steps / 20).max(1);
    let bounds = bounds(&setup);
    let mut samples = Vec::new();
    for s in 1..=steps {
        let store = s % every == 0;
        b.step()?;
        if store || s == steps {
            check_health(b.as_mut(), &bounds, every, None)?;
        }
        if store && s >= steps / 10 {
            let f = b.fields()?;
            let e: f64 = (0..f.n())
                .map(|c| f.u(c).iter().map(|&v| (v as f64).powi(2)).sum::<f64>())
                .sum::<f64>()
                * 0.5;
            samples.push((s as f64, e.ln()));
        }
    }
    let m = samples.len() as f64;
    let (st, sl) = samples
        .iter()
        .fold((0.0, 0.0), |(a, b), (t, l)| (a + t, b + l));
    let (mt, ml) = (st / m, sl / m);
    let (num, den) = samples.iter().fold((0.0, 0.0), |(a, b), (t, l)| {
        (a + (t - mt) * (l - ml), b + (t - mt) * (t - mt))
    });
    let measured = -num / den;
    Ok(CaseResult {
        case: "taylor-green decay".into(),
        model,
        grid: format!("{n}x{n}x{depth}"),
        steps,
        metric: "rel. error of energy decay rate",
        error: (measured - gamma).abs() / gamma,
        target: TARGET_TGV,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Poiseuille flow of `h` cells, `u_max = 0.05`, `tau = 0.8`, run for 15 viscous times
/// `h^2 / (pi^2 nu)` from rest; relative L2 error of `ux` against the parabola.
pub fn poiseuille_case(
    open: &mut Opener,
    model: CollisionModel,
    h: u32,
) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let (nu, u_max) = (0.1f32, 0.05f32);
    let setup = poiseuille(h, u_max, nu, model)?;
    let steps = (15.0 * (h as f64).powi(2) / (std::f64::consts::PI.powi(2) * nu as f64)) as u64;
    let mut b = open(&setup)?;
    let f = run_to(b.as_mut(), &bounds(&setup), steps)?;
    let l = setup.lattice();
    let (mut err, mut norm) = (0.0f64, 0.0f64);
    for j in 1..=h {
        let y = j as f64 - 0.5;
        let exact = 4.0 * u_max as f64 * y * (h as f64 - y) / (h as f64).powi(2);
        let got = f.u(l.index(0, j, 0))[0] as f64;
        err += (got - exact).powi(2);
        norm += exact * exact;
    }
    Ok(CaseResult {
        case: "poiseuille profile".into(),
        model,
        grid: format!("1x{}x1 ({h} fluid)", h + 2),
        steps,
        metric: "rel. L2 error of u(y)",
        error: (err / norm).sqrt(),
        target: TARGET_POISEUILLE,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Piecewise-linear interpolation of `(pos, val)` (positions ascending) at `x`.
fn interpolate(pos: &[f64], val: &[f64], x: f64) -> f64 {
    let i = pos.partition_point(|&p| p < x).clamp(1, pos.len() - 1);
    let t = (x - pos[i - 1]) / (pos[i] - pos[i - 1]);
    val[i - 1] + t * (val[i] - val[i - 1])
}

/// Centreline profiles of a cavity of `n` fluid cells (lid velocity `u_lid`), normalised:
/// `(u/U at GHIA_Y along x = 1/2, v/U at GHIA_X along y = 1/2)`.
pub fn cavity_centrelines(f: &Fields, n: u32, u_lid: f32) -> (Vec<f64>, Vec<f64>) {
    let l = f.lattice;
    let nf = n as f64;
    // Positions of cell centres (i - 1/2)/n for i = 1..n, plus the walls at 0 and 1.
    let mut pos = vec![0.0];
    pos.extend((1..=n).map(|i| (i as f64 - 0.5) / nf));
    pos.push(1.0);
    // Value of component `a` on the line through the centre: interpolate across the two middle
    // columns (rows) with the same linear rule.
    let line = |a: usize, vertical: bool, lo_wall: f64, hi_wall: f64| -> Vec<f64> {
        let mut v = vec![lo_wall];
        for i in 1..=n {
            let sample = |j: u32| {
                let cell = if vertical {
                    l.index(j, i, 0)
                } else {
                    l.index(i, j, 0)
                };
                f.u(cell)[a] as f64 / u_lid as f64
            };
            let p = 0.5 * nf + 0.5; // index-space position of the centre
            let j0 = p.floor() as u32;
            let t = p - j0 as f64;
            v.push((1.0 - t) * sample(j0) + t * sample((j0 + 1).min(n)));
        }
        v.push(hi_wall);
        v
    };
    let u_line = line(0, true, 0.0, 1.0);
    let v_line = line(1, false, 0.0, 0.0);
    let u = GHIA_Y
        .iter()
        .map(|&y| interpolate(&pos, &u_line, y))
        .collect();
    let v = GHIA_X
        .iter()
        .map(|&x| interpolate(&pos, &v_line, x))
        .collect();
    (u, v)
}

/// RMS difference to Ghia's tables over the interior points (walls excluded).
pub fn ghia_rms(u: &[f64], v: &[f64], re: u32) -> f64 {
    let (gu, gv) = if re == 100 {
        (&GHIA_U_RE100, &GHIA_V_RE100)
    } else {
        (&GHIA_U_RE1000, &GHIA_V_RE1000)
    };
    let mut s = 0.0;
    let mut k = 0;
    for i in 1..16 {
        s += (u[i] - gu[i]).powi(2) + (v[i] - gv[i]).powi(2);
        k += 2;
    }
    (s / k as f64).sqrt()
}

/// Steady-state test of the cavity: largest velocity change over 1000 steps, in lid units. (In
/// FP32 the change levels off near 5e-6 U.)
pub const CAVITY_STEADY: f32 = 1e-5;

/// Lid-driven cavity of `n` cells at `re` (100 or 1000), lid velocity 0.1, run until the velocity
/// changes by less than [`CAVITY_STEADY`] `U` (max norm) over 1000 steps, at most `200 n / U`
/// steps.
pub fn cavity_case(
    open: &mut Opener,
    model: CollisionModel,
    n: u32,
    re: u32,
) -> Result<CaseResult, FluidError> {
    let t0 = Instant::now();
    let u_lid = 0.1f32;
    let nu = u_lid * n as f32 / re as f32;
    let setup = cavity(n, 1, u_lid, nu, model)?;
    let mut b = open(&setup)?;
    let chunk = 1000u64;
    let max_steps = (200.0 * n as f64 / u_lid as f64) as u64;
    let bounds = bounds(&setup);
    let mut prev = b.fields()?;
    let mut steps = 0;
    let f = loop {
        let f = run_to(b.as_mut(), &bounds, chunk)?;
        steps += chunk;
        let n_cells = f.n();
        let change = (n_cells..4 * n_cells)
            .map(|i| (f.data[i] - prev.data[i]).abs())
            .fold(0.0f32, f32::max);
        if change < CAVITY_STEADY * u_lid || steps >= max_steps {
            break f;
        }
        prev = f;
    };
    let (u, v) = cavity_centrelines(&f, n, u_lid);
    let target = if re == 100 {
        TARGET_CAVITY_RE100
    } else {
        TARGET_CAVITY_RE1000
    };
    Ok(CaseResult {
        case: format!("cavity Re {re}"),
        model,
        grid: format!("{n}x{n}x1"),
        steps,
        metric: "RMS error vs Ghia (lid units)",
        error: ghia_rms(&u, &v, re),
        target,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Every case for every model in `models`, at `sizes`; `progress(line)` after each case.
pub fn run_all(
    open: &mut Opener,
    models: &[CollisionModel],
    sizes: Sizes,
    mut progress: impl FnMut(&CaseResult),
) -> Result<Vec<CaseResult>, FluidError> {
    let mut out = Vec::new();
    for &model in models {
        let mut cases = vec![
            taylor_green_case(open, model, sizes.tgv, sizes.tgv_depth)?,
            poiseuille_case(open, model, sizes.poiseuille)?,
            cavity_case(open, model, sizes.cavity_re100, 100)?,
        ];
        if sizes.cavity_re1000 > 0 {
            cases.push(cavity_case(open, model, sizes.cavity_re1000, 1000)?);
        }
        for c in cases {
            progress(&c);
            out.push(c);
        }
    }
    Ok(out)
}

/// An error as the tables print it: five decimals, or three significant digits below 1e-3.
pub fn shown(error: f64) -> String {
    if error != 0.0 && error.abs() < 1e-3 {
        format!("{error:.2e}")
    } else {
        format!("{error:.5}")
    }
}

/// The results as a Markdown table.
pub fn table(results: &[CaseResult]) -> String {
    let mut s = String::from(
        "| case | model | grid | steps | metric | error | target | pass | time |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        s += &format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {:.1} s |\n",
            r.case,
            r.model.name(),
            r.grid,
            r.steps,
            r.metric,
            shown(r.error),
            r.target,
            if r.passed() { "yes" } else { "NO" },
            r.seconds
        );
    }
    s
}
