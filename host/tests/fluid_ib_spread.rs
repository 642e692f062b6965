//! The immersed boundary's spreading methods (scatter, binned scatter, plain gather, block
//! gather) give the same band force, fields and solid forces bit for bit on the CPU reference;
//! the GPU test
//! (`#[ignore]`d, `cargo xtask gpu-test`) compares CUDA with the CPU for each method.

use murmur::internals::fluid::commands::parity::{
    force_difference, FORCE_PARITY_TOLERANCE, PARITY_TOLERANCE,
};
use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::cuda::CudaFluid;
use murmur::internals::fluid::ib::spread::IbSpread;
use murmur::internals::fluid::{FluidBackend, Setup};

mod support;
use support::ib_scenes::{duct, periodic_box};

const METHODS: [IbSpread; 8] = [
    IbSpread::Scatter,
    IbSpread::Binned,
    IbSpread::Gather,
    IbSpread::Blocks { l: 1 },
    IbSpread::Blocks { l: 2 },
    IbSpread::Blocks { l: 3 },
    IbSpread::Blocks { l: 4 },
    IbSpread::Blocks { l: 8 },
];

/// Everything a method produces after `steps` steps on the CPU.
#[derive(PartialEq, Debug)]
struct Outcome {
    band: Vec<[f32; 3]>,
    fields: Vec<f32>,
    forces: Vec<murmur::internals::fluid::forces::ForceSample>,
    sample_force: Vec<[f32; 3]>,
}

fn run_cpu(setup: &Setup, spread: IbSpread, steps: u64) -> Outcome {
    let mut setup = setup.clone();
    setup.immersed.spread = spread;
    let mut b = CpuFluid::<murmur_common::lbm::Fp32>::new(&setup).unwrap();
    for _ in 0..steps {
        b.step().unwrap();
    }
    Outcome {
        band: b.band_forces().unwrap(),
        fields: b.fields().unwrap().data,
        forces: b.take_forces().unwrap(),
        sample_force: b.samples().unwrap().unwrap().force,
    }
}

#[test]
fn every_method_agrees_bit_for_bit_on_the_cpu() {
    for (name, setup) in [("periodic box", periodic_box()), ("duct", duct())] {
        let want = run_cpu(&setup, IbSpread::Scatter, 6);
        assert!(
            want.band.iter().any(|f| f.iter().any(|&c| c != 0.0)),
            "{name}: no band force at all"
        );
        assert!(want.forces.iter().any(|r| r.force[0] != 0.0), "{name}");
        for spread in &METHODS[1..] {
            let got = run_cpu(&setup, *spread, 6);
            assert!(
                got.band == want.band,
                "{name} {spread:?}: band force differs"
            );
            assert!(
                got.forces == want.forces,
                "{name} {spread:?}: solid forces differ"
            );
            assert!(
                got.sample_force == want.sample_force,
                "{name} {spread:?}: sample forces differ"
            );
            assert!(
                got.fields == want.fields,
                "{name} {spread:?}: fields differ"
            );
        }
    }
}

#[test]
fn a_rerun_repeats_every_bit() {
    let setup = periodic_box();
    for spread in [
        IbSpread::Binned,
        IbSpread::Gather,
        IbSpread::Blocks { l: 4 },
    ] {
        assert_eq!(run_cpu(&setup, spread, 3), run_cpu(&setup, spread, 3));
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_matches_the_cpu_for_every_method() {
    for (name, setup) in [("periodic box", periodic_box()), ("duct", duct())] {
        for spread in METHODS {
            let mut setup = setup.clone();
            setup.immersed.spread = spread;
            let mut cpu = CpuFluid::<murmur_common::lbm::Fp32>::new(&setup).unwrap();
            let mut gpu = CudaFluid::<murmur_common::lbm::Fp32>::new(
                murmur::internals::gpu::Gpu::open().unwrap(),
                &setup,
            )
            .unwrap();
            let steps = 20;
            for _ in 0..steps {
                cpu.step().unwrap();
                gpu.step().unwrap();
            }
            // The same tolerances as `murmur fluid parity` (floating-point contraction may
            // differ between the backends, so the fields, and the forces through them, are
            // not bitwise equal).
            let (fc, fg) = (cpu.take_forces().unwrap(), gpu.take_forces().unwrap());
            let df = force_difference(&fg, &fc).unwrap();
            assert!(
                df <= FORCE_PARITY_TOLERANCE,
                "{name} {spread:?}: forces {df:e}"
            );
            let (drho, du) = gpu
                .fields()
                .unwrap()
                .max_relative_difference(&cpu.fields().unwrap());
            assert!(
                drho <= PARITY_TOLERANCE && du <= PARITY_TOLERANCE,
                "{name} {spread:?}: rho {drho:e}, u {du:e}"
            );
        }
    }
}
