//! Scenes with immersed solids shared by the immersed-boundary tests.

use murmur::internals::fluid::ib::plan::RETRACTION;
use murmur::internals::fluid::ib::{Immersed, Motion, Primitive, Solid};
use murmur::internals::fluid::scene;
use murmur::internals::fluid::Setup;
use murmur_common::lbm::{CollisionModel, Rates};

pub fn sphere(radius: f64, center: [f64; 3], motion: Motion, box_: [f64; 3], seed: u64) -> Solid {
    let mesh = Primitive::Sphere { radius }.mesh(0.25).unwrap();
    let (mut solid, _) = Solid::sampled(
        "sphere",
        &mesh,
        center,
        [1.0, 0.0, 0.0, 0.0],
        motion,
        0.5,
        seed,
        box_,
        1 << 20,
        RETRACTION,
    )
    .unwrap();
    solid.reference_area = std::f64::consts::PI * radius * radius;
    solid
}

/// Two spheres in a periodic 24^3 box: one crossing the periodic seams along a diagonal, one
/// spinning.
pub fn periodic_box() -> Setup {
    let n = 24;
    let mut setup = scene::taylor_green(n, n, 0.02, 0.02, CollisionModel::Bgk).unwrap();
    let b = [n as f64; 3];
    let moving = sphere(
        4.0,
        [21.5, 12.3, 2.7],
        Motion::Translate {
            velocity: [0.05, 0.03, -0.02],
            ramp: 0.0,
        },
        b,
        1,
    );
    let spinning = Solid {
        motion: Motion::Rotate {
            axis: [0.3, 0.0, 1.0],
            rate: 0.01,
            ramp: 0.0,
        },
        center: [8.0, 15.0, 14.0],
        ..moving.clone()
    };
    setup.immersed = Immersed {
        solids: vec![moving, spinning],
        periodic: [true; 3],
        ..Immersed::default()
    };
    setup
}

/// A duct with an inlet, an outlet, free-slip and no-slip walls, a sphere oscillating next to
/// the low wall (its stencils lose wall nodes and reach past the domain's first cells).
pub fn duct() -> Setup {
    let mut setup = scene::Geometry::duct([30, 14, 14], 0)
        .setup(Rates::from_viscosity(0.02), CollisionModel::AcmMrt)
        .unwrap();
    let s = sphere(
        3.5,
        [12.0, 7.5, 4.2],
        Motion::Oscillate {
            amplitude: [0.0, 0.0, 0.8],
            frequency: 0.05,
            ramp: 0.0,
        },
        [32.0, 16.0, 16.0],
        3,
    );
    setup.immersed = Immersed {
        solids: vec![s],
        periodic: [false; 3],
        ..Immersed::default()
    };
    setup
}
