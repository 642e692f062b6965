//! CUDA against the CPU reference after 100 steps, on small scenes with every boundary type and
//! forcing, for every model. `#[ignore]`d: it needs a CUDA GPU and the kernels' PTX, and runs
//! with `cargo xtask gpu-test` on the GPU machine.

use murmur::fluid::cli::{parity_setups, PARITY_TOLERANCE};
use murmur::fluid::cpu::CpuFluid;
use murmur::fluid::cuda::CudaFluid;
use murmur::fluid::FluidBackend;
use murmur_common::lbm::CollisionModel;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_fields_match_the_cpu_after_100_steps() {
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
