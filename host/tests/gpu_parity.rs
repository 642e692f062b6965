//! GPU against the CPU reference. Runs only where a CUDA GPU and the kernels' PTX are present;
//! elsewhere each test prints why it skipped (CI has no GPU; the H200 run is `murmur flock check`).

mod support;
use support::skip_note;

use murmur::flock::check::{parity, ONE_STEP_TOLERANCE};
use murmur::flock::config::FlockConfig;
use murmur::flock::cuda::UpdateForm;
use murmur::flock::{CellOrderArg, FlockState, Method};
use murmur::gpu::Gpu;

fn gpu_or_skip(test: &str) -> bool {
    match Gpu::open() {
        Ok(_) => true,
        Err(e) => {
            skip_note(&format!("skipping {test}: {e}"));
            false
        }
    }
}

#[test]
fn every_gpu_method_matches_the_cpu_after_one_step() {
    if !gpu_or_skip("every_gpu_method_matches_the_cpu_after_one_step") {
        return;
    }
    let base = FlockConfig::default().settings().unwrap();
    let start = FlockState::random(5000, base.params.scale, 4);
    for m in Method::ALL {
        for order in [CellOrderArg::Linear, CellOrderArg::Morton] {
            for form in [UpdateForm::Branched, UpdateForm::Predicated] {
                let mut s = base.clone();
                s.method = m;
                s.cell_order = order;
                let r = parity(&s, form, &start, 3).unwrap();
                assert!(
                    r.one.0 <= ONE_STEP_TOLERANCE && r.one.1 <= ONE_STEP_TOLERANCE,
                    "{m:?} {order:?} {}: {:?}",
                    r.kernel,
                    r.one
                );
            }
        }
    }
}
