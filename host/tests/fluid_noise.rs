//! Grid-scale noise near `tau = 1/2` (`docs/fluid/validation.md`, Grid-scale noise): ACM-MRT with its
//! higher orders at the shear rate grew a checkerboard from rounding, with or without
//! boundaries, until its limiter held it; at their own rate (`Rates::high`, default 1) the same
//! flows stay smooth. Each case runs both, so the old scheme is shown to be the cause.

use murmur::internals::fluid::noise::{grid_noise, GridNoise};
use murmur::internals::fluid::scene::{self, Boundary, Geometry};
use murmur::internals::fluid::Setup;
use murmur_common::lbm::boundary::inlet_scale;
use murmur_common::lbm::{CollisionModel, Rates};

/// `tau = 0.50036`: the sphere at Re 10,000 (24 cells per diameter, lattice velocity 0.05).
const NU: f32 = (0.50036 - 0.5) / 3.0;
const U: f32 = 0.05;
const U64: f64 = U as f64;

/// Runs `setup` for `steps` steps (inlets ramped over `ramp` steps) with ACM-MRT's higher
/// orders at the shear rate (`old`) or at the default rate, and measures x in `xs`: the noise
/// at the end, and the mean x velocity over the last `window` steps (every 10th).
fn run(
    mut setup: Setup,
    old: bool,
    (steps, ramp, window): (u64, f64, u64),
    xs: std::ops::Range<u32>,
) -> (GridNoise, f64) {
    if old {
        setup.params.rates.high = setup.params.rates.shear;
    }
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    let (mut sum, mut samples) = (0.0, 0);
    for step in 1..=steps {
        b.set_inlet_scale(inlet_scale(step, ramp));
        b.step().unwrap();
        if step > steps - window && step % 10 == 0 {
            sum += grid_noise(&b.fields().unwrap(), &setup.flags, xs.clone()).mean_velocity[0];
            samples += 1;
        }
    }
    let noise = grid_noise(&b.fields().unwrap(), &setup.flags, xs);
    (noise, sum / samples.max(1) as f64)
}

#[test]
fn a_periodic_box_grows_no_checkerboard() {
    // No boundary at all: a periodic box at rest and in a uniform oblique flow, seeded by a
    // Taylor-Green vortex of amplitude 1e-5 (and rounding). At rest the checkerboard is in the
    // density alone; 1e-7 is the rounding of a density near 1 in FP32.
    for flow in [[0.0f32; 3], [0.03, 0.03, 0.02]] {
        let mut setup = scene::taylor_green(16, 8, 1e-5, NU, CollisionModel::AcmMrt).unwrap();
        setup.initial.velocity = flow;
        let (new, _) = run(setup.clone(), false, (300, 0.0, 0), 0..16);
        let (old, _) = run(setup, true, (300, 0.0, 0), 0..16);
        eprintln!("flow {flow:?}: default {new:?}\n  high = shear {old:?}");
        assert!(
            new.density < 1e-6 && new.velocity < 1e-4 * U64,
            "flow {flow:?}: {new:?}"
        );
        assert!(old.density > 1e-3, "flow {flow:?}: {old:?}");
    }
}

#[test]
fn a_ramped_inlet_channel_stays_smooth_and_delivers_its_velocity() {
    // The reported symptom, without the sphere: a velocity inlet ramped up over 300 steps, a
    // pressure outlet, free-slip sides, the upstream half measured.
    let setup = Geometry {
        fluid: [48, 12, 12],
        faces: [
            Boundary::Inlet {
                velocity: [U, 0.0, 0.0],
                parabolic: 0,
            },
            Boundary::Outlet(1.0),
            Boundary::FreeSlip,
            Boundary::FreeSlip,
            Boundary::FreeSlip,
            Boundary::FreeSlip,
        ],
    }
    .setup(Rates::from_viscosity(NU), CollisionModel::AcmMrt)
    .unwrap();
    // The ramp sets off the channel's quarter-wave acoustic mode (period 4 L / c_s, 333 steps
    // here), which bulk viscosity damps slowly: the mean inflow is taken over one period.
    let (new, inflow) = run(setup.clone(), false, (1200, 600.0, 340), 2..25);
    let (old, _) = run(setup, true, (1200, 600.0, 0), 2..25);
    eprintln!("default {new:?}, mean inflow {inflow}\nhigh = shear {old:?}");
    assert!(new.cells > 2000, "{new:?}");
    assert!(new.velocity < 1e-4 * U64, "{new:?}");
    assert!(old.velocity > 1e-3 * U64, "{old:?}");
    assert!(
        (inflow / U64 - 1.0).abs() < 0.01,
        "mean inflow {} U",
        inflow / U64
    );
}
