//! The population layout changes only where values are stored, never a bit of the results: on
//! the CPU reference, SoA, CSoA-32 and CSoA-128 give the same populations, fields and forces
//! after 20 steps of every small scene (walls, a moving lid, inlets and outlets, free slip,
//! body force, a moving immersed solid), every model, both streaming schemes. The GPU twin is
//! `cuda_layouts_store_the_same_bits` in `fluid_gpu_parity.rs`.

use murmur::internals::fluid::commands::parity::parity_setups;
use murmur::internals::fluid::FluidBackend;
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming};

/// Everything a run hands on, as bits: decoded populations, density and velocity, forces.
fn bits(b: &mut dyn FluidBackend) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
    let pops = b
        .populations()
        .unwrap()
        .iter()
        .map(|x| x.to_bits())
        .collect();
    let fields = b
        .fields()
        .unwrap()
        .data
        .iter()
        .map(|x| x.to_bits())
        .collect();
    let forces = b
        .take_forces()
        .unwrap()
        .iter()
        .flat_map(|f| f.force.into_iter().chain(f.torque).map(f64::to_bits))
        .collect();
    (pops, fields, forces)
}

#[test]
fn soa_and_csoa_store_the_same_bits_on_the_cpu() {
    let layouts = [
        Layout::SOA,
        Layout::csoa(32).unwrap(),
        Layout::csoa(128).unwrap(),
    ];
    let (mut compared, mut with_forces) = (0, 0);
    for model in CollisionModel::ALL {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            // The 16-bit storage once: its decoding also goes through the layout.
            let storages: &[StorageKind] = if model == CollisionModel::AcmMrt {
                &[StorageKind::Fp32, StorageKind::Fp16s]
            } else {
                &[StorageKind::Fp32]
            };
            for &storage in storages {
                for (name, mut setup) in parity_setups(model).unwrap() {
                    setup.storage = storage;
                    setup.streaming = Some(streaming);
                    let mut results = Vec::new();
                    for layout in layouts {
                        setup.layout = layout;
                        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
                        assert_eq!(b.layout(), layout);
                        for _ in 0..20 {
                            b.step().unwrap();
                        }
                        results.push(bits(b.as_mut()));
                    }
                    let what = format!("{name}, {model:?} {storage:?} {streaming:?}");
                    assert!(results[0].0.iter().any(|&x| x != results[0].0[0]), "{what}");
                    for (layout, r) in layouts.iter().zip(&results).skip(1) {
                        let l = layout.describe();
                        assert!(
                            r.0 == results[0].0,
                            "{what}: {l} populations differ from soa"
                        );
                        assert!(r.1 == results[0].1, "{what}: {l} fields differ from soa");
                        assert!(r.2 == results[0].2, "{what}: {l} forces differ from soa");
                    }
                    compared += 1;
                    with_forces += usize::from(!results[0].2.is_empty());
                }
            }
        }
    }
    // 3 models x 2 streaming schemes, one of them also FP16S, x every scene.
    assert_eq!(
        compared,
        8 * parity_setups(CollisionModel::Bgk).unwrap().len()
    );
    // The immersed sphere's and the cut solids' forces, in every model, storage and streaming
    // scheme.
    assert_eq!(with_forces, 2 * 8);
}
