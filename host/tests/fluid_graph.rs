//! A CUDA step replayed as one CUDA graph stores the bits of the same step launched stage by
//! stage: every small scene of the parity table (walls, a lid, a force, inlets, outlets, outlet
//! layers), FP32 and FP16S, pull and in place, the boundary kernel after the interior kernel or
//! on a second stream, an inlet scale that changes for a few steps (new keys, no capture) and
//! then holds (captured, replayed). `#[ignore]`d: it needs a CUDA GPU (`cargo xtask gpu-test`).

use murmur::internals::fluid::commands::parity::parity_setups;
use murmur::internals::fluid::BoundaryLaunch;
use murmur_common::lbm::{CollisionModel, StorageKind, Streaming};

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn a_step_replayed_as_a_graph_stores_the_bits_of_one_launched_stage_by_stage() {
    let mut graphed_scenes = 0;
    for storage in [StorageKind::Fp32, StorageKind::Fp16s] {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for launch in [BoundaryLaunch::Serial, BoundaryLaunch::Tail] {
                for model in [CollisionModel::Bgk, CollisionModel::AcmMrt] {
                    for (name, mut setup) in parity_setups(model).unwrap() {
                        setup.storage = storage;
                        setup.streaming = Some(streaming);
                        setup.boundary_launch = launch;
                        let what = format!("{name} {model:?} {storage:?} {streaming:?} {launch:?}");
                        let mut run = |graph: bool| {
                            setup.graph = graph;
                            let mut b = murmur::internals::fluid::cuda::open(&setup).unwrap();
                            for k in 0..14u32 {
                                // A ramp over the first four steps, then a steady scale.
                                b.set_inlet_scale(0.6 + 0.1 * k.min(4) as f32);
                                b.step().unwrap();
                            }
                            let summary = b.times().unwrap().summary();
                            (b.populations().unwrap(), summary)
                        };
                        let (plain, plain_times) = run(false);
                        let (graphed, graph_times) = run(true);
                        let differ = plain
                            .iter()
                            .zip(&graphed)
                            .filter(|(x, y)| x.to_bits() != y.to_bits())
                            .count();
                        assert_eq!(differ, 0, "{what}: populations differ in bits");
                        assert!(!plain_times.contains("CUDA graph"), "{what}: {plain_times}");
                        let solids = !setup.immersed.solids.is_empty();
                        // With solids every step goes stage by stage; otherwise the steady
                        // steps are replayed.
                        assert_eq!(
                            graph_times.contains("CUDA graph"),
                            !solids,
                            "{what}: {graph_times}"
                        );
                        graphed_scenes += usize::from(!solids);
                    }
                }
            }
        }
    }
    assert!(graphed_scenes >= 40, "{graphed_scenes}");
}
