//! CUDA against the CPU reference after 100 steps, on small scenes with every boundary type and
//! forcing, for every model. Runs only where a CUDA GPU and the kernels' PTX are present;
//! elsewhere it prints why it skipped (the H200 round is `scripts/gpu-fluid.sh`).

mod support;
use support::skip_note;

use murmur::fluid::cli::{parity_setups, PARITY_TOLERANCE};
use murmur::fluid::cpu::CpuFluid;
use murmur::fluid::cuda::CudaFluid;
use murmur::fluid::FluidBackend;
use murmur::gpu::Gpu;
use murmur_common::lbm::CollisionModel;

#[test]
fn cuda_fields_match_the_cpu_after_100_steps() {
    if let Err(e) = Gpu::open() {
        skip_note(&format!(
            "skipping cuda_fields_match_the_cpu_after_100_steps: {e}"
        ));
        return;
    }
    for model in CollisionModel::ALL {
        for (name, setup) in parity_setups(model).unwrap() {
            let mut cpu = CpuFluid::new(&setup).unwrap();
            let mut gpu = CudaFluid::new(&setup).unwrap();
            for s in 1..=100 {
                cpu.step(s == 100).unwrap();
                gpu.step(s == 100).unwrap();
            }
            let (drho, du) = gpu
                .fields()
                .unwrap()
                .max_relative_difference(&cpu.fields().unwrap());
            assert!(
                drho <= PARITY_TOLERANCE && du <= PARITY_TOLERANCE,
                "{name} {model:?}: rho {drho:e}, u {du:e}"
            );
        }
    }
}
