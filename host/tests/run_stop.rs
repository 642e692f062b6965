//! The run drivers' stop probe: asked after every step but the last, it ends the run there, and
//! the report says how far it got; one that never fires leaves the run as before.

use murmur::internals::flock::cpu::CpuFlock;
use murmur::internals::flock::driver as flock_driver;
use murmur::internals::flock::{FlockBackend, FlockSettings, FlockState};
use murmur::internals::fluid::driver::{self, LastOutput, RunOptions};
use murmur::internals::fluid::scene;
use murmur::internals::stop::{Local, Never, Stopped};
use murmur_common::lbm::health::Bounds;
use murmur_common::lbm::CollisionModel;

#[test]
fn the_flock_driver_stops_where_the_probe_says() {
    let s = FlockSettings {
        params: murmur_common::flock::FlockParams {
            scale: 20.0,
            ..murmur_common::flock::FlockParams::CIS565
        },
        ..murmur::internals::flock::config::FlockConfig::default()
            .settings()
            .unwrap()
    };
    let mut f = CpuFlock::new(&s, &FlockState::random(500, 20.0, 1));
    let mut asked = Vec::new();
    let r = flock_driver::run_until(
        &mut f,
        10,
        false,
        &mut Local(|| {
            asked.push(());
            asked.len() == 4
        }),
    )
    .unwrap();
    assert_eq!((r.steps, r.stopped), (4, Some(Stopped { step: 4 })));
    assert_eq!(f.times().unwrap().steps, 4);
    // Never asked after the last step: a probe that fires there ends a finished run.
    let mut asked = 0;
    let r = flock_driver::run_until(
        &mut f,
        3,
        false,
        &mut Local(|| {
            asked += 1;
            asked == 3
        }),
    )
    .unwrap();
    assert_eq!((r.steps, r.stopped, asked), (3, None, 2));
    let r = flock_driver::run_until(&mut f, 5, false, &mut Never).unwrap();
    assert_eq!((r.steps, r.stopped), (5, None));
}

#[test]
fn the_fluid_driver_stops_where_the_probe_says() {
    let setup = scene::taylor_green(8, 1, 0.05, 0.05, CollisionModel::Bgk).unwrap();
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    let opts = RunOptions {
        steps: 20,
        check_every: 0,
        output_every: 5,
        forces_every: 0,
        health: Bounds::DEFAULT,
        progress: false,
        inlet: Default::default(),
    };
    let mut last: Option<LastOutput> = None;
    let mut k = 0;
    let mut probe = Local(|| {
        k += 1;
        k == 7
    });
    let r = driver::run_until(
        b.as_mut(),
        opts,
        &mut last,
        &mut driver::Discard,
        &mut probe,
    )
    .unwrap();
    // Stopped after step 7: the outputs of steps 5 went out, not 10.
    assert_eq!((r.steps, r.stopped), (7, Some(Stopped { step: 7 })));
    assert_eq!(b.step_count(), 7);
    assert_eq!(last.map(|c| c.step), Some(5));
    // Resumed with the plain driver: the lattice's step count goes on from 7.
    let mut last: Option<LastOutput> = None;
    let r = driver::run(b.as_mut(), opts, &mut last, &mut driver::Discard).unwrap();
    assert_eq!((r.steps, r.stopped, b.step_count()), (20, None, 27));
    assert_eq!(last.map(|c| c.step), Some(27));
}
