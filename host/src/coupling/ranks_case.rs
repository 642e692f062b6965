//! The coupled flocks on several CPU ranks against one lattice (`fluid flock-case ranks`): a
//! scene with flocks run on one CPU lattice and on N CPU ranks in this process (the slabs,
//! exchanges and boid migrations of a run over GPUs), its boids compared by id and its fluid
//! cell by cell.

use super::cuda::BoidArrays;
use super::scene::{read_flocks, SceneFlocks};
use crate::fluid::riders::Rider;
use crate::fluid::scene::{self, Scene};
use crate::fluid::slab::{open_cpu_rank, SlabPlan};
use crate::fluid::validate::CaseResult;
use crate::fluid::{Fields, FluidBackend, FluidError};
use crate::ranks::Comm;
use murmur_common::lbm::Streaming;
use std::sync::Arc;
use std::time::Instant;

/// The showcase scene.
const TOWER: &str = include_str!("../../../assets/fluid/flock-tower.toml");

/// The case's default scene: the showcase with its flock spread through the whole channel
/// (boids in every slab, across every slab face, leaving through the outlet) and the inflow
/// ramped in 0.02 s; `periodic`: the channel periodic along x instead of inlet and outlet,
/// the air starting at 1 m/s along it (boids wrap across the first and last slabs).
pub fn tower(periodic: bool) -> String {
    let text = TOWER
        .replace(
            "spawn = { box = { lo = [0.05, 0.18, 0.12], hi = [0.2, 0.38, 0.36] } }",
            "spawn = { box = { lo = [0.02, 0.04, 0.04], hi = [1.58, 0.56, 0.56] } }",
        )
        .replace(
            "type = \"inlet\", ramp = 1.0,",
            "type = \"inlet\", ramp = 0.02,",
        );
    if !periodic {
        return text;
    }
    text.replace(
        "x_min = { type = \"inlet\", ramp = 0.02, gust = { intensity = 0.15, time_scale = 0.2, \
         seed = 3 } }",
        "x_min = { type = \"periodic\" }",
    )
    .replace(
        "x_max = { type = \"outlet\", sponge = 0.15 }",
        "x_max = { type = \"periodic\" }",
    )
    .replace(
        "[[solids]]",
        "[initial]\nvelocity = [1.0, 0.0, 0.0]\n\n[[solids]]",
    )
}

/// The largest difference that passes, in lattice units (cells, cells per step): the flock's
/// rank tolerance (`flock check-ranks`). The ranks' rules add a boid's neighbours in another
/// order, and two-way flocks hand those last bits on to the air.
pub const TOLERANCE: f64 = 1e-4;

/// What one run gives back: each flock's boids in id order, and the fluid's fields.
type Outcome = (Vec<BoidArrays>, Fields);

/// Steps `fluid` and the flocks riding it `steps` times (the inlet's gusts as a run takes
/// them), then gathers the boids and the fields (collective on ranks).
fn ride(
    built: &Scene,
    fluid: &mut dyn FluidBackend,
    flocks: &mut SceneFlocks,
    count: usize,
    steps: u64,
) -> Result<Outcome, FluidError> {
    for step in 1..=steps {
        if built.inlet.varies() {
            fluid.set_inlet_scale(built.inlet.scale(step));
        }
        fluid.step()?;
        flocks.after_step(fluid)?;
    }
    let mut boids = Vec::with_capacity(count);
    for k in 0..count {
        let mut b = flocks.state(k)?;
        sort_by_id(&mut b);
        boids.push(b);
    }
    Ok((boids, fluid.fields()?))
}

/// `b` in id order.
fn sort_by_id(b: &mut BoidArrays) {
    let mut order: Vec<usize> = (0..b.id.len()).collect();
    order.sort_by_key(|&i| b.id[i]);
    let pick = |v: &[murmur_common::Vec3]| order.iter().map(|&i| v[i]).collect::<Vec<_>>();
    b.pos = pick(&b.pos);
    b.vel = pick(&b.vel);
    b.rel = pick(&b.rel);
    b.id = order.iter().map(|&i| b.id[i]).collect();
}

/// The scene of `text` with `boids` boids per flock (None: the scene's) at `1 / coarsen` of
/// its resolution, and its flocks.
fn open_scene(
    text: &str,
    coarsen: u32,
    boids: Option<u64>,
) -> Result<(Scene, Vec<super::spec::FlockSpec>), FluidError> {
    let mut file = scene::SceneFile::parse(text).map_err(FluidError::Invalid)?;
    scene::overrides::SceneOverrides {
        coarsen: Some(coarsen),
        check_every: None,
    }
    .apply(&mut file)?;
    let mut built = file.build()?;
    // Ranks stream with pull; the lattice they are checked against does too.
    built.setup.streaming = Some(Streaming::Pull);
    let mut specs = read_flocks(text).map_err(FluidError::Invalid)?;
    if specs.is_empty() {
        return Err(FluidError::Invalid(
            "the scene has no [[flocks]] to check".into(),
        ));
    }
    if let Some(n) = boids {
        for s in &mut specs {
            s.count = n;
        }
    }
    Ok((built, specs))
}

/// The largest differences of `a` against `b`: positions (the shorter way round the periodic
/// axes of extent `period`) and ground velocities, by id; boids missing on either side
/// count as infinite.
fn boid_difference(a: &BoidArrays, b: &BoidArrays, period: [Option<f32>; 3]) -> (f64, f64) {
    if a.id != b.id {
        return (f64::INFINITY, f64::INFINITY);
    }
    let (mut dp, mut dv) = (0.0f64, 0.0f64);
    for i in 0..a.id.len() {
        let (p, q) = (a.pos[i].to_array(), b.pos[i].to_array());
        let (v, w) = (a.vel[i].to_array(), b.vel[i].to_array());
        for c in 0..3 {
            let mut d = (p[c] - q[c]).abs();
            if let Some(n) = period[c] {
                d = d.min(n - d);
            }
            dp = dp.max(d as f64);
            dv = dv.max((v[c] - w[c]).abs() as f64);
        }
    }
    (dp, dv)
}

/// The scene `text` (with flocks) for `steps` steps on one CPU lattice and on `ranks` CPU
/// ranks: the largest difference of the boids' positions and velocities and of the fluid's
/// velocity, against [`TOLERANCE`].
pub fn ranks_case(
    text: &str,
    ranks: usize,
    coarsen: u32,
    boids: Option<u64>,
    steps: u64,
) -> Result<CaseResult, FluidError> {
    if ranks < 2 {
        return Err(FluidError::Invalid(
            "the ranks case needs at least 2 ranks".into(),
        ));
    }
    let t0 = Instant::now();
    let (built, specs) = open_scene(text, coarsen, boids)?;
    let setup = &built.setup;
    let plan = SlabPlan::new(setup, ranks)?;
    let count = specs.len();
    // One lattice.
    let mut whole = crate::fluid::cpu::open(setup)?;
    let mut flocks = SceneFlocks::open(&specs, &built, whole.as_mut())?;
    let mut start = Vec::with_capacity(count);
    for k in 0..count {
        let mut b = flocks.state(k)?;
        sort_by_id(&mut b);
        start.push(b);
    }
    let (one, one_fields) = ride(&built, whole.as_mut(), &mut flocks, count, steps)?;
    drop((whole, flocks));
    // N ranks; rank 0's gathered view.
    let mut all = crate::ranks::local::run_ranks(ranks, |comm| -> Result<_, FluidError> {
        let comm: Arc<dyn Comm> = Arc::new(comm);
        let mut fluid = open_cpu_rank(setup, &plan, comm)?;
        let mut flocks = SceneFlocks::open(&specs, &built, &mut fluid)?;
        ride(&built, &mut fluid, &mut flocks, count, steps)
    })?;
    let (split, split_fields) = all.swap_remove(0);
    let l = setup.lattice();
    let period = [l.nx, l.ny, l.nz].map(|n| n as f32);
    let period = [0, 1, 2].map(|a| setup.immersed.periodic[a].then_some(period[a]));
    let (mut dp, mut dv) = (0.0f64, 0.0f64);
    for (a, b) in split.iter().zip(&one) {
        let (p, v) = boid_difference(a, b, period);
        (dp, dv) = (dp.max(p), dv.max(v));
    }
    let cells = l.cells();
    let du = (0..cells)
        .map(|c| {
            let (u, w) = (split_fields.u(c), one_fields.u(c));
            (0..3).map(|k| (u[k] - w[k]).abs()).fold(0.0f32, f32::max) as f64
        })
        .fold(0.0f64, f64::max);
    let n: u64 = one.iter().map(|b| b.id.len() as u64).sum();
    // How much of the exchange the run took: boids whose slab changed (by id).
    let moved: usize = start
        .iter()
        .zip(&one)
        .map(|(a, b)| {
            a.pos
                .iter()
                .zip(&b.pos)
                .filter(|(p, q)| plan.owner_of(p.to_array()) != plan.owner_of(q.to_array()))
                .count()
        })
        .sum();
    Ok(CaseResult {
        case: format!(
            "{n} boids on {ranks} CPU ranks against 1 (slabs along {}, {moved} changed slab): \
             positions {dp:.1e} cells, velocities {dv:.1e}, the air {du:.1e}",
            ["x", "y", "z"][plan.axis]
        ),
        model: setup.model,
        grid: format!("{}x{}x{}", l.nx, l.ny, l.nz),
        steps,
        metric: "largest difference, lattice units",
        error: dp.max(dv).max(du),
        target: TOLERANCE,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The spread tower on `ranks` CPU ranks against one lattice.
    fn check(periodic: bool, ranks: usize) {
        let r = ranks_case(&tower(periodic), ranks, 5, Some(6000), 24).unwrap();
        assert!(r.passed(), "{}: {}", r.case, r.error);
        // Boids crossed slab faces (the row says how many).
        assert!(!r.case.contains(" 0 changed slab"), "{}", r.case);
    }

    #[test]
    fn a_two_way_flock_on_three_ranks_rides_as_on_one_lattice() {
        check(false, 3);
    }

    #[test]
    fn a_flock_wrapping_across_two_periodic_ranks_rides_as_on_one_lattice() {
        check(true, 2);
    }

    #[test]
    fn the_default_scene_spreads_the_flock_and_the_periodic_one_wraps() {
        let t = tower(false);
        assert!(t.contains("lo = [0.02, 0.04, 0.04]") && t.contains("ramp = 0.02"));
        let p = tower(true);
        assert!(p.contains("x_min = { type = \"periodic\" }"));
        assert!(p.contains("x_max = { type = \"periodic\" }"));
        assert!(!p.contains("type = \"inlet\"") && !p.contains("type = \"outlet\""));
    }
}
