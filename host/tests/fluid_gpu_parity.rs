//! CUDA against the CPU reference after 100 steps, on small scenes with every boundary type and
//! forcing, for every model, storage and streaming scheme. `#[ignore]`d: it needs a CUDA GPU and the kernels'
//! PTX, and runs with `cargo xtask gpu-test` on the GPU machine.

use murmur::internals::fluid::commands::parity::{parity_setups, PARITY_TOLERANCE};
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_fields_match_the_cpu_after_100_steps() {
    for storage in StorageKind::ALL {
        for (layout, streaming) in [
            (Layout::SOA, Streaming::Pull),
            (Layout::SOA, Streaming::InPlace),
            (Layout { alpha: 32 }, Streaming::InPlace),
        ] {
            for model in CollisionModel::ALL {
                for (name, mut setup) in parity_setups(model).unwrap() {
                    setup.storage = storage;
                    setup.layout = layout;
                    setup.streaming = Some(streaming);
                    let mut cpu = murmur::internals::fluid::cpu::open(&setup).unwrap();
                    let mut gpu = murmur::internals::fluid::cuda::open(&setup).unwrap();
                    for _ in 0..100 {
                        cpu.step().unwrap();
                        gpu.step().unwrap();
                    }
                    let (drho, du) = gpu
                        .fields()
                        .unwrap()
                        .max_relative_difference(&cpu.fields().unwrap());
                    let what = format!("{name} {model:?} {storage:?} {layout:?} {streaming:?}");
                    assert!(
                        drho <= PARITY_TOLERANCE && du <= PARITY_TOLERANCE,
                        "{what}: rho {drho:e}, u {du:e}"
                    );
                    let (a, b) = (gpu.populations().unwrap(), cpu.populations().unwrap());
                    let differ = a.iter().zip(&b).filter(|(x, y)| x.to_bits() != y.to_bits());
                    assert_eq!(differ.count(), 0, "{what}: populations differ in bits");
                }
            }
        }
    }
}

/// The boundary kernel on a second stream (filling the interior kernel's tail, or beside it in
/// launches of one block per SM over parts of its list) and after it store the same bits: the
/// two kernels write disjoint cells in both streaming schemes.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn overlapped_and_serial_boundary_launches_agree_in_bits() {
    use murmur::internals::fluid::BoundaryLaunch;
    for storage in [StorageKind::Fp32, StorageKind::Fp16s] {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for model in CollisionModel::ALL {
                for (name, mut setup) in parity_setups(model).unwrap() {
                    setup.storage = storage;
                    setup.streaming = Some(streaming);
                    let mut run = |launch, layer_kernel| {
                        setup.boundary_launch = launch;
                        setup.layer_kernel = layer_kernel;
                        let mut gpu = murmur::internals::fluid::cuda::open(&setup).unwrap();
                        for _ in 0..100 {
                            gpu.step().unwrap();
                        }
                        gpu.populations().unwrap()
                    };
                    let serial = run(BoundaryLaunch::Serial, false);
                    // The outlet layer in its own kernel, and in the interior kernel's.
                    for (launch, own) in [
                        (BoundaryLaunch::Tail, false),
                        (BoundaryLaunch::Beside { blocks_per_sm: 1 }, false),
                        (BoundaryLaunch::Serial, true),
                    ] {
                        let other = run(launch, own);
                        let differ = other
                            .iter()
                            .zip(&serial)
                            .filter(|(x, y)| x.to_bits() != y.to_bits());
                        assert_eq!(
                            differ.count(),
                            0,
                            "{name} {model:?} {storage:?} {streaming:?} {launch} (outlet layer's \
                             own kernel: {own}): populations differ in bits from the serial launch"
                        );
                    }
                }
            }
        }
    }
}

/// `beside` launches the list in parts of one block per SM: a duct whose list holds several
/// parts (75,368 cells next to its faces: five parts on an H200) stores the serial launch's
/// bits, outlet velocities included.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn beside_launches_in_parts_agree_with_serial() {
    use murmur::internals::fluid::scene::Geometry;
    use murmur::internals::fluid::BoundaryLaunch;
    use murmur_common::lbm::Rates;
    let mut setup = Geometry::duct([200, 80, 80], 0b110)
        .setup(Rates::from_viscosity(0.02), CollisionModel::AcmMrt)
        .unwrap();
    let listed = setup.boundary_list(&setup.prepared_flags()).len();
    assert!(listed > 3 * 132 * 128, "{listed} listed cells");
    for streaming in [Streaming::Pull, Streaming::InPlace] {
        setup.streaming = Some(streaming);
        let mut run = |launch| {
            setup.boundary_launch = launch;
            let mut gpu = murmur::internals::fluid::cuda::open(&setup).unwrap();
            for _ in 0..30 {
                gpu.step().unwrap();
            }
            gpu.populations().unwrap()
        };
        let serial = run(BoundaryLaunch::Serial);
        let beside = run(BoundaryLaunch::Beside { blocks_per_sm: 1 });
        let differ = beside
            .iter()
            .zip(&serial)
            .filter(|(x, y)| x.to_bits() != y.to_bits());
        assert_eq!(
            differ.count(),
            0,
            "{streaming:?}: populations differ in bits"
        );
    }
}

/// SoA, CSoA-32 and CSoA-128 store the same bits on the GPU too (the CPU's check is
/// `host/tests/fluid_layouts.rs`): populations and fields after 100 steps of every small scene,
/// every model, storage and streaming scheme.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_layouts_store_the_same_bits() {
    let layouts = [
        Layout::SOA,
        Layout::csoa(32).unwrap(),
        Layout::csoa(128).unwrap(),
    ];
    for storage in StorageKind::ALL {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for model in CollisionModel::ALL {
                for (name, mut setup) in parity_setups(model).unwrap() {
                    setup.storage = storage;
                    setup.streaming = Some(streaming);
                    let what = format!("{name} {model:?} {storage:?} {streaming:?}");
                    let mut results = Vec::new();
                    for layout in layouts {
                        setup.layout = layout;
                        let mut gpu = murmur::internals::fluid::cuda::open(&setup).unwrap();
                        for _ in 0..100 {
                            gpu.step().unwrap();
                        }
                        let pops: Vec<u32> = gpu
                            .populations()
                            .unwrap()
                            .iter()
                            .map(|x| x.to_bits())
                            .collect();
                        let fields: Vec<u32> = gpu
                            .fields()
                            .unwrap()
                            .data
                            .iter()
                            .map(|x| x.to_bits())
                            .collect();
                        results.push((pops, fields));
                    }
                    for (layout, r) in layouts.iter().zip(&results).skip(1) {
                        assert!(
                            r == &results[0],
                            "{what}: {} differs from soa in bits",
                            layout.describe()
                        );
                    }
                }
            }
        }
    }
}
