//! The 16-bit population formats on the GPU, over all `2^32` `f32` bit patterns: the hardware
//! binary16 conversions (`cvt.rn.f16.f32`, `cvt.f32.f16`) against the integer forms the CPU uses,
//! FP16C against its integer form, and the FP16C round trip of every code
//! (`murmur_common::lbm::half`, kernel `check_half`). `#[ignore]`d: it needs a CUDA GPU and the
//! kernels' PTX, and runs with `cargo xtask gpu-test` on the GPU machine.

use murmur::internals::gpu::{Gpu, Shape};
use murmur_common::lbm::half::CheckHalf;

/// Inputs per launch.
const CHUNK: u64 = 1 << 30;

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn half_conversions_match_their_references_for_every_f32() {
    let gpu = Gpu::open().unwrap();
    let mut out = gpu.upload(&CheckHalf::OUT_INIT).unwrap();
    for chunk in 0..(1u64 << 32) / CHUNK {
        let shape = Shape::try_per_item(CHUNK, 256).unwrap();
        // SAFETY: `out` holds `OUT_WORDS` words initialised with `OUT_INIT`; one thread per
        // input, and the inputs end at 2^32.
        unsafe {
            gpu.launch().run(shape, &mut out, |l, out| CheckHalf {
                start: chunk * CHUNK,
                count: CHUNK,
                out: l.write(out),
            })
        }
        .unwrap();
    }
    let words = gpu.download(&out).unwrap();
    let mut failed = false;
    for (t, name) in CheckHalf::TESTS.iter().enumerate() {
        let (n, first) = (words[2 * t], words[2 * t + 1]);
        println!("{name}: {n} failures, first input {first:#010x}");
        failed |= n != 0;
    }
    assert!(!failed, "conversions differ on the GPU (counts above)");
}
