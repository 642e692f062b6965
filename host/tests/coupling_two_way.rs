//! Two-way coupling on the CPU fluid: the fluid's pushes add exactly the momentum they carry,
//! and a flock pushing back on the air keeps the total momentum of boids and air (the
//! `fluid validate` row, at its size).

use murmur::internals::coupling::validate::{fluid_momentum, momentum_case};
use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::scene;
use murmur::internals::fluid::validate::Opener;
use murmur::internals::fluid::{FluidBackend, FluidError, Setup};
use murmur_common::lbm::ib::band::{from_fixed, to_fixed};
use murmur_common::lbm::{CollisionModel, Fp32, Initial};

fn cpu(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    Ok(Box::new(CpuFluid::<Fp32>::new(setup)?))
}

#[test]
fn a_step_adds_the_momentum_its_pushes_carry() {
    for model in [CollisionModel::Bgk, CollisionModel::AcmMrt] {
        let mut setup = scene::taylor_green(12, 12, 0.02, 0.05, model).unwrap();
        setup.initial = Initial::uniform([0.02, -0.01, 0.0]);
        let mut fluid = cpu(&setup).unwrap();
        fluid.enable_pushes(3).unwrap();
        fluid.step().unwrap();
        // The same state stepped without the pushes: an FP32 lattice in a uniform flow moves
        // its momentum by rounding on its own (the same in every cell).
        let mut twin = cpu(&setup).unwrap();
        twin.step().unwrap();
        twin.step().unwrap();
        let pos = [[1.3, 2.7, 11.6], [5.0, 5.0, 5.0], [11.9, 0.2, 7.45]];
        let j = [
            [1e-3, -2e-3, 5e-4],
            [-4e-4, 0.0, 3e-3],
            [2.5e-3, 1e-3, -1e-3],
        ];
        let total: Vec<u64> = j.iter().flatten().map(|&v| to_fixed(v)).collect();
        fluid.push(&pos, &total).unwrap();
        fluid.step().unwrap();
        let (with, without) = (
            fluid_momentum(fluid.as_mut()).unwrap(),
            fluid_momentum(twin.as_mut()).unwrap(),
        );
        for c in 0..3 {
            let want: f64 = (0..3).map(|k| from_fixed(total[3 * k + c]) as f64).sum();
            let got = with[c] - without[c];
            assert!(
                (got - want).abs() < 1e-6,
                "{model:?} component {c}: the step added {got:e}, the pushes carried {want:e}"
            );
        }
        // The pushes are spent: a step after takes none.
        fluid.step().unwrap();
        twin.push(&[], &[]).unwrap_err();
    }
}

#[test]
fn pushes_beyond_the_room_made_are_refused() {
    let setup = scene::taylor_green(8, 8, 0.0, 0.05, CollisionModel::Bgk).unwrap();
    let mut fluid = cpu(&setup).unwrap();
    assert!(fluid.push(&[[1.0; 3]], &[0; 3]).is_err(), "no room made");
    fluid.enable_pushes(1).unwrap();
    fluid.push(&[[1.0; 3]], &[0; 3]).unwrap();
    let e = fluid.push(&[[1.0; 3]; 2], &[0; 6]).unwrap_err().to_string();
    assert!(e.contains("room of 1"), "{e}");
}

#[test]
fn a_flock_pushing_back_keeps_the_total_momentum() {
    let mut open = cpu;
    let r = momentum_case(&mut open as &mut Opener, 16, 1000, 1000).unwrap();
    eprintln!("{}: {} {:.3e}", r.case, r.metric, r.error);
    assert!(
        r.passed(),
        "{}: {} {:.3e} above its target {}",
        r.case,
        r.metric,
        r.error,
        r.target
    );
}
