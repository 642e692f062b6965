//! GPU against the CPU reference: every flock method and update kernel, both key orders, both
//! binnings (counting and radix sort), x-splits and cell widths; and the device radix sort
//! against a CPU sort. `#[ignore]`d: they need a CUDA GPU and the kernels' PTX, and run with
//! `cargo xtask gpu-test` on the GPU machine (where a missing GPU is a failure, not a skip).

use murmur::internals::flock::check::{parity, ONE_STEP_TOLERANCE};
use murmur::internals::flock::config::FlockConfig;
use murmur::internals::flock::cuda::UpdateForm;
use murmur::internals::flock::{CellOrder, FlockSettings, FlockState, Method, SortArg};
use murmur::internals::gpu::sort::{check_sort, RadixSort};
use murmur::internals::gpu::Gpu;

fn check(s: &FlockSettings, form: UpdateForm, start: &FlockState) {
    let r = parity(s, form, start, 3).unwrap();
    assert!(
        r.one.0 <= ONE_STEP_TOLERANCE && r.one.1 <= ONE_STEP_TOLERANCE,
        "{:?} {:?} {:?} x-split {} width {} {}: {:?}",
        s.method,
        s.sort,
        s.cell_order,
        s.x_split,
        s.cell_width_factor,
        r.kernel,
        r.one
    );
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn every_gpu_method_matches_the_cpu_after_one_step() {
    let base = FlockConfig::default().settings().unwrap();
    let start = FlockState::random(5000, base.params.scale, 4);
    for m in Method::ALL {
        for order in [CellOrder::Linear, CellOrder::Morton] {
            for sort in [SortArg::Counting, SortArg::Radix] {
                for form in [UpdateForm::Branched, UpdateForm::Predicated] {
                    let mut s = base.clone();
                    s.method = m;
                    s.cell_order = order;
                    s.sort = sort;
                    check(&s, form, &start);
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn grid_shapes_match_the_cpu_after_one_step() {
    let base = FlockConfig::default().settings().unwrap();
    let start = FlockState::random(20_000, base.params.scale, 9);
    for x_split in [1, 4, 8] {
        for factor in [0.5, 1.0, 2.0] {
            for m in [Method::Scattered, Method::Coherent, Method::CoherentShared] {
                let mut s = base.clone();
                s.method = m;
                s.x_split = x_split;
                s.cell_width_factor = factor;
                check(&s, UpdateForm::Auto, &start);
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn device_radix_sort_matches_a_stable_cpu_sort() {
    let gpu = Gpu::open().unwrap();
    let mut sorter = RadixSort::new(&gpu, 3_000_000).unwrap();
    for (n, bits) in [(1, 32), (1000, 8), (70_001, 17), (3_000_000, 32)] {
        let r = check_sort(&gpu, &mut sorter, n, bits, 7).unwrap();
        assert!(r.pass, "{n} pairs, {bits} bits");
    }
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn a_launch_on_another_stream_is_ordered_with_the_buffers_owner() {
    use murmur::internals::gpu::Shape;
    use murmur_common::flock::abi::InitFlock;
    use murmur_common::flock::Body;
    let gpu = Gpu::open().unwrap();
    let other = gpu.ctx.new_stream().unwrap();
    let n = 1 << 22;
    let seed = 11;
    // Owned by the GPU's own stream; written by a launch on `other`; read back on the owner's
    // stream right after: only the launch layer's joins order the two.
    let mut body = gpu.zeros::<Body>(n).unwrap();
    let mut vel = gpu.zeros::<[f32; 3]>(n).unwrap();
    let shape = Shape::try_per_item(n as u64, 256).unwrap();
    // SAFETY: both buffers hold n elements; one thread per boid.
    unsafe {
        gpu.launch_on(&other)
            .run(shape, (&mut body, &mut vel), |l, (body, vel)| InitFlock {
                n: n as u32,
                scale: 100.0,
                seed,
                body: l.write(body),
                vel: l.write_cast(vel),
            })
    }
    .unwrap();
    let got = gpu.download(&body).unwrap();
    let want = FlockState::random(n, 100.0, seed);
    for i in (0..n).step_by(997).chain([n - 1]) {
        assert_eq!(got[i].pos, want.pos[i], "boid {i}");
        assert_eq!(got[i].id, i as u32);
    }
}
