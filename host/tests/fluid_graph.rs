//! With `--graph`, every CUDA step of one lattice is one CUDA graph launch and stores the bits of
//! the same step launched stage by stage.
//!
//! - Every small scene of the parity table (walls, a lid, a force, inlets, outlets, outlet
//!   layers, a sphere moving and spinning through a periodic box), FP32 and FP16S, pull and in
//!   place, the boundary kernel after the interior kernel or on a second stream, an inlet scale
//!   that changes for a few steps (new keys: graphs updated in place) and then holds (kept
//!   graphs replayed): the populations and the solids' force records.
//! - Solids that translate, rotate and oscillate (one of them in a duct with a ramping inlet),
//!   every spreading method of the immersed boundary: the populations, the force records and
//!   the samples' forces; a run past the force ring's length (drained between steps); a fixed
//!   sphere whose force records are read every step (its steps' keys repeat: kept graphs).
//!
//! `#[ignore]`d: they need a CUDA GPU (`cargo xtask gpu-test`).

use murmur::internals::fluid::commands::parity::parity_setups;
use murmur::internals::fluid::forces::ForceSample;
use murmur::internals::fluid::ib::plan::RING_STEPS;
use murmur::internals::fluid::ib::spread::IbSpread;
use murmur::internals::fluid::ib::Motion;
use murmur::internals::fluid::{BoundaryLaunch, Setup};
use murmur_common::lbm::{CollisionModel, StorageKind, Streaming};

mod support;
use support::ib_scenes::{duct, periodic_box};

/// The stage of a step launched as one graph in the stage times.
const GRAPH_STAGE: &str = "step (CUDA graph)";

/// What a run leaves, as bits.
#[derive(PartialEq, Debug)]
struct Outcome {
    populations: Vec<u32>,
    /// `(step, solid, force and torque)` of every force record.
    forces: Vec<(u64, usize, [u64; 6])>,
    sample_force: Vec<[u32; 3]>,
}

fn force_bits(rows: &[ForceSample]) -> Vec<(u64, usize, [u64; 6])> {
    rows.iter()
        .map(|r| {
            let mut bits = [0; 6];
            for (b, x) in bits.iter_mut().zip(r.force.iter().chain(&r.torque)) {
                *b = x.to_bits();
            }
            (r.step, r.solid, bits)
        })
        .collect()
}

/// Opens `setup` on the GPU (`graph` as given) and runs `steps` steps, the inlet scale of
/// step `k` (from 0) being `scale(k)`, the force records read after every step when
/// `read_forces`; the outcome and the stage times' names and step count.
fn run(
    setup: &Setup,
    graph: bool,
    steps: u32,
    scale: impl Fn(u32) -> Option<f32>,
    read_forces: bool,
) -> (Outcome, Vec<&'static str>, u64) {
    let mut setup = setup.clone();
    setup.graph = graph;
    let mut b = murmur::internals::fluid::cuda::open(&setup).unwrap();
    let mut forces = Vec::new();
    for k in 0..steps {
        if let Some(s) = scale(k) {
            b.set_inlet_scale(s);
        }
        b.step().unwrap();
        if read_forces {
            forces.extend(b.take_forces().unwrap());
        }
    }
    let times = b.times().unwrap();
    let names = times.mean_ms().iter().map(|(n, _)| *n).collect();
    let sample_force = match b.samples().unwrap() {
        Some(s) => s.force.iter().map(|f| f.map(f32::to_bits)).collect(),
        None => Vec::new(),
    };
    forces.extend(b.take_forces().unwrap());
    let populations = b.populations().unwrap();
    let outcome = Outcome {
        populations: populations.iter().map(|x| x.to_bits()).collect(),
        forces: force_bits(&forces),
        sample_force,
    };
    (outcome, names, times.steps)
}

/// Asserts that `graphed` and `plain` agree bit for bit and that every step of the graphed run
/// was one graph launch (its stage times hold that stage alone, over the plain run's steps).
fn check(what: &str, plain: &(Outcome, Vec<&str>, u64), graphed: &(Outcome, Vec<&str>, u64)) {
    let (p, g) = (&plain.0, &graphed.0);
    let differ = p
        .populations
        .iter()
        .zip(&g.populations)
        .filter(|(x, y)| x != y)
        .count();
    assert_eq!(differ, 0, "{what}: populations differ in bits");
    assert_eq!(p.populations.len(), g.populations.len(), "{what}");
    assert!(p.forces == g.forces, "{what}: force records differ in bits");
    assert!(
        p.sample_force == g.sample_force,
        "{what}: the samples' forces differ in bits"
    );
    assert!(!plain.1.contains(&GRAPH_STAGE), "{what}: {:?}", plain.1);
    assert_eq!(
        graphed.1,
        [GRAPH_STAGE],
        "{what}: not every step was a graph"
    );
    assert_eq!(graphed.2, plain.2, "{what}: steps timed");
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn every_step_launched_as_a_graph_stores_the_bits_of_one_launched_stage_by_stage() {
    let (mut scenes, mut with_solids) = (0, 0);
    for storage in [StorageKind::Fp32, StorageKind::Fp16s] {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for launch in [BoundaryLaunch::Serial, BoundaryLaunch::Tail] {
                for model in [CollisionModel::Bgk, CollisionModel::AcmMrt] {
                    for (name, mut setup) in parity_setups(model).unwrap() {
                        setup.storage = storage;
                        setup.streaming = Some(streaming);
                        setup.boundary_launch = launch;
                        let what = format!("{name} {model:?} {storage:?} {streaming:?} {launch:?}");
                        // A ramp over the first four steps, then a steady scale.
                        let ramp = |k: u32| Some(0.6 + 0.1 * k.min(4) as f32);
                        let plain = run(&setup, false, 14, ramp, false);
                        let graphed = run(&setup, true, 14, ramp, false);
                        check(&what, &plain, &graphed);
                        assert_eq!(graphed.2, 14, "{what}");
                        let solids = setup.force_solids().next().is_some();
                        assert_eq!(!graphed.0.forces.is_empty(), solids, "{what}");
                        scenes += 1;
                        with_solids += usize::from(solids);
                    }
                }
            }
        }
    }
    assert!(scenes >= 48 && with_solids >= 16, "{scenes} {with_solids}");
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn moving_solids_launched_as_graphs_store_the_bits_of_their_steps_stage_by_stage() {
    let methods = [
        IbSpread::Scatter,
        IbSpread::Binned,
        IbSpread::Gather,
        IbSpread::Blocks { l: 4 },
    ];
    // Translating and spinning spheres across periodic seams; an oscillating sphere beside a
    // wall of a duct whose inlet ramps up over the first steps.
    for (name, setup) in [("periodic box", periodic_box()), ("duct", duct())] {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for spread in methods {
                let mut setup = setup.clone();
                setup.immersed.spread = spread;
                setup.streaming = Some(streaming);
                let what = format!("{name} {spread:?} {streaming:?}");
                let ramp = |k: u32| (k < 6).then_some(0.5 + 0.1 * k as f32);
                let plain = run(&setup, false, 12, ramp, false);
                let graphed = run(&setup, true, 12, ramp, false);
                check(&what, &plain, &graphed);
                assert_eq!(plain.0.forces.len(), 12 * setup.immersed.solids.len());
            }
        }
    }
    // Past the ring's length: a step that finds the ring full drains it before its capture.
    let steps = RING_STEPS as u32 + 4;
    let plain = run(&periodic_box(), false, steps, |_| None, false);
    let graphed = run(&periodic_box(), true, steps, |_| None, false);
    check("periodic box past the force ring", &plain, &graphed);
    assert_eq!(plain.0.forces.len(), 2 * steps as usize);
    // A fixed sphere whose records are read after every step: each step records into the
    // ring's first slot, so its keys repeat and the kept graphs are launched again.
    let mut fixed = duct();
    fixed.immersed.solids[0].motion = Motion::Fixed;
    let plain = run(&fixed, false, 12, |_| None, true);
    let graphed = run(&fixed, true, 12, |_| None, true);
    check("fixed sphere, records read every step", &plain, &graphed);
    assert_eq!(plain.0.forces.len(), 12);
}
