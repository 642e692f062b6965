//! Fixed solids with interpolated bounce-back on the CPU reference: links cut at the exact
//! surface (a sphere's, a mesh box's against the same box as a primitive), halfway links equal
//! to plain bounce-back bit for bit, both streaming schemes storing the same results, a resumed
//! run going on bit for bit, and the scene's refusals. The CUDA twins are in `fluid_gpu_parity.rs` (the setup is one of
//! `parity_setups`).

mod support;

use murmur::internals::fluid::commands::parity::cut_solids;
use murmur::internals::fluid::ib::shapes::cuboid;
use murmur::internals::fluid::ib::solid::quat_from_axis_angle;
use murmur::internals::fluid::ib::{Motion, Primitive, Solid};
use murmur::internals::fluid::walls::Walls;
use murmur::internals::fluid::{FluidBackend, Setup};
use murmur_common::lbm::boundary::{cell_byte, CellKind, CUT_SOLID, KIND_MASK, NO_FACE};
use murmur_common::lbm::d3q27::{velocity, REST};
use murmur_common::lbm::{CollisionModel, StorageKind, Streaming, Q};

fn run(setup: &Setup, steps: usize) -> Box<dyn FluidBackend> {
    let mut b = murmur::internals::fluid::cpu::open(setup).unwrap();
    for _ in 0..steps {
        b.step().unwrap();
    }
    b
}

fn field_bits(b: &mut dyn FluidBackend) -> Vec<u32> {
    b.fields()
        .unwrap()
        .data
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

#[test]
fn every_link_to_a_cut_node_is_listed_once_and_cut_on_the_sphere() {
    let setup = cut_solids(CollisionModel::Bgk).unwrap();
    let l = setup.lattice();
    let walls = &setup.walls;
    let mut expected = 0;
    for cell in 0..l.cells() {
        if setup.flags[cell] & KIND_MASK != 0 {
            continue;
        }
        let o = l.pull_offsets(cell);
        for q in (0..Q).filter(|&q| q != REST) {
            if setup.flags[murmur_common::lbm::access::neighbour(&o, q)] == CUT_SOLID {
                expected += 1;
            }
        }
    }
    assert!(expected > 500, "{expected} cut links");
    assert_eq!(walls.links.len(), expected);
    let mut seen = std::collections::HashSet::new();
    let center = walls.solids[0].center;
    for link in &walls.links {
        assert!(seen.insert((link.cell, link.dir())), "a link listed twice");
        assert!(link.q > 0.0 && link.q <= 1.0, "q {}", link.q);
        if link.solid() == 0 {
            // The wall point x_f - q c_q lies on the sphere of radius 3.3.
            let (x, y, z) = l.coords(link.cell as usize);
            let c = velocity(link.dir());
            let p = [x, y, z].map(|v| v as f64);
            let w = [0, 1, 2].map(|a| p[a] - link.q as f64 * c[a] as f64 - center[a]);
            let r = (w[0] * w[0] + w[1] * w[1] + w[2] * w[2]).sqrt();
            assert!((r - 3.3).abs() < 1e-5, "wall point at radius {r}");
            // The arm is the wall point about the centre.
            assert!((0..3).all(|a| (link.arm[a] as f64 - w[a]).abs() < 1e-5));
        }
    }
    // Both solids have links; the box reaches into the gaps by the walls.
    assert!(walls.links.iter().any(|l| l.solid() == 1));
    assert!(walls.bounced > 0, "no link lacks its second node");
}

#[test]
fn a_mesh_box_cuts_the_links_a_primitive_box_cuts() {
    let half = [2.6, 1.7, 3.9];
    let center = [19.4, 9.1, 8.6];
    let turn = quat_from_axis_angle([0.3, 0.2, 1.0], 0.4);
    let solid = |mesh: bool| {
        let m = cuboid(half).unwrap();
        let (mut s, _) = Solid::sampled(
            "box",
            &m,
            center,
            turn,
            Motion::Fixed,
            0.5,
            1,
            [0.0; 3],
            1 << 20,
            0.0,
        )
        .unwrap();
        if mesh {
            s.surface = Some(std::sync::Arc::new(m));
        } else {
            s.shape = Some(Primitive::Box { half });
        }
        s
    };
    let base = cut_solids(CollisionModel::Bgk).unwrap();
    let build = |mesh: bool| {
        let mut setup = base.clone();
        setup.walls = Walls::default();
        setup.flags = base
            .flags
            .iter()
            .map(|&b| if b == CUT_SOLID { 0 } else { b })
            .collect();
        let l = setup.lattice();
        let walls = Walls::build(vec![solid(mesh)], l, [false; 3], &mut setup.flags).unwrap();
        (setup.flags, walls)
    };
    let (flags_p, prim) = build(false);
    let (flags_m, mesh) = build(true);
    assert_eq!(
        flags_p, flags_m,
        "the mesh and the primitive hold other nodes"
    );
    assert_eq!(prim.links.len(), mesh.links.len());
    assert!(prim.links.len() > 300);
    for (a, b) in prim.links.iter().zip(&mesh.links) {
        assert_eq!((a.cell, a.code), (b.cell, b.code));
        assert!((a.q - b.q).abs() < 1e-6, "q {} vs {}", a.q, b.q);
    }
    assert_eq!(mesh.missed, 0);
}

/// With every link cut halfway, interpolated bounce-back is plain bounce-back: the same fields
/// as the solid nodes made walls, bit for bit, in both streaming schemes and in FP16.
#[test]
fn halfway_links_are_plain_bounce_back_bit_for_bit() {
    for model in CollisionModel::ALL {
        for (storage, streaming) in [
            (StorageKind::Fp32, Streaming::Pull),
            (StorageKind::Fp32, Streaming::InPlace),
            (StorageKind::Fp16s, Streaming::Pull),
        ] {
            let mut cut = cut_solids(model).unwrap();
            cut.storage = storage;
            cut.streaming = Some(streaming);
            for link in cut.walls.links.iter_mut() {
                link.q = 0.5;
            }
            let mut walled = cut.clone();
            walled.walls = Walls::default();
            for b in walled.flags.iter_mut() {
                if *b == CUT_SOLID {
                    *b = cell_byte(CellKind::Wall, NO_FACE);
                }
            }
            let (mut a, mut b) = (run(&cut, 30), run(&walled, 30));
            let what = format!("{model:?} {storage:?} {streaming:?}");
            assert!(
                field_bits(a.as_mut()) == field_bits(b.as_mut()),
                "{what}: halfway links differ from bounce-back"
            );
            // The force rows come from the links alone.
            let rows = a.take_forces().unwrap();
            assert_eq!(rows.len(), 2 * 30, "{what}");
            assert!(b.take_forces().unwrap().is_empty());
        }
    }
}

#[test]
fn pull_and_in_place_streaming_store_the_same_results() {
    for model in CollisionModel::ALL {
        let mut setup = cut_solids(model).unwrap();
        let mut results = Vec::new();
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            setup.streaming = Some(streaming);
            let mut b = run(&setup, 40);
            let rows = b.take_forces().unwrap();
            results.push((field_bits(b.as_mut()), rows));
        }
        let bits = |rows: &[murmur::internals::fluid::forces::ForceSample]| -> Vec<u64> {
            rows.iter()
                .flat_map(|r| r.force.into_iter().chain(r.torque).map(f64::to_bits))
                .collect()
        };
        assert!(
            results[0].0 == results[1].0,
            "{model:?}: the schemes' fields differ"
        );
        assert_eq!(
            bits(&results[0].1),
            bits(&results[1].1),
            "{model:?}: the schemes' forces differ"
        );
        // The flow pushes both solids downstream.
        let last: Vec<_> = results[1].1.iter().filter(|r| r.step == 40).collect();
        assert_eq!(last.len(), 2);
        assert!(last.iter().all(|r| r.force[0] > 0.0), "{model:?}: {last:?}");
    }
}

fn scene_with(solid_extra: &str, extra: &str) -> std::path::PathBuf {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/fluid/obstacle.toml"
    ))
    .unwrap()
    .replace(
        "position = [0.2, 0.15, 0.155]",
        &format!("position = [0.2, 0.15, 0.155]\n{solid_extra}"),
    );
    let path = support::tmp("walls", "scene.toml");
    std::fs::write(&path, format!("{text}\n{extra}")).unwrap();
    path
}

#[test]
fn scenes_refuse_what_cut_links_cannot_do_in_one_line() {
    let moving = scene_with(
        "boundary = \"interpolated-bounce-back\"\nmotion = { type = \"rotate\", axis = [0, 0, 1], rate = 1.0 }",
        "",
    );
    support::assert_one_line_failure(
        &["fluid", "run", moving.to_str().unwrap(), "--steps", "1"],
        "is for fixed solids; a moving solid takes boundary = \"immersed\"",
    );
    let ibb = scene_with("boundary = \"interpolated-bounce-back\"", "");
    support::assert_one_line_failure(
        &[
            "fluid",
            "run",
            ibb.to_str().unwrap(),
            "--steps",
            "1",
            "--ranks",
            "2",
        ],
        "run on one lattice",
    );
    let bad = scene_with("boundary = \"bounce\"", "");
    support::assert_one_line_failure(
        &["fluid", "run", bad.to_str().unwrap(), "--steps", "1"],
        "boundary",
    );
}

/// A run with cut links captured after its forces are taken (as the run commands take them
/// before a checkpoint) and restored into a new backend goes on bit for bit: the stage rewrites
/// the solid nodes' slots before every step.
#[test]
fn a_run_with_cut_links_resumes_bit_for_bit() {
    use murmur::internals::fluid::state;
    let force_bits = |rows: &[murmur::internals::fluid::forces::ForceSample]| -> Vec<u64> {
        rows.iter()
            .flat_map(|r| r.force.into_iter().chain(r.torque).map(f64::to_bits))
            .collect()
    };
    for streaming in [Streaming::Pull, Streaming::InPlace] {
        let mut setup = cut_solids(CollisionModel::AcmMrt).unwrap();
        setup.streaming = Some(streaming);
        let mut straight = run(&setup, 17);
        let want = force_bits(&straight.take_forces().unwrap());
        let mut first = run(&setup, 9);
        let mut rows = first.take_forces().unwrap();
        let captured = state::capture(first.as_mut(), 4096).unwrap();
        drop(first);
        let mut second = murmur::internals::fluid::cpu::open(&setup).unwrap();
        state::restore(second.as_mut(), &captured, 4096).unwrap();
        for _ in 0..8 {
            second.step().unwrap();
        }
        rows.extend(second.take_forces().unwrap());
        assert_eq!(force_bits(&rows), want, "{streaming:?}: forces differ");
        assert!(
            field_bits(second.as_mut()) == field_bits(straight.as_mut()),
            "{streaming:?}: fields differ"
        );
        let bits = |b: &mut Box<dyn FluidBackend>| -> Vec<u32> {
            b.populations()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect()
        };
        assert!(
            bits(&mut second) == bits(&mut straight),
            "{streaming:?}: populations differ"
        );
    }
}

#[test]
fn an_open_mesh_is_refused_in_one_line() {
    // A box without its top: no inside, so no link has a defined crossing.
    let dir = support::tmp("walls", "open-mesh");
    std::fs::create_dir_all(&dir).unwrap();
    let obj = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n\
               f 1 3 2\nf 1 4 3\nf 1 2 6\nf 1 6 5\nf 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\n\
               f 4 1 5\nf 4 5 8\n";
    std::fs::write(dir.join("open.obj"), obj).unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../assets/fluid/obstacle.toml"
    ))
    .unwrap()
    .replace(
        "shape = { type = \"sphere\", radius = 0.05 }",
        "shape = { type = \"mesh\", file = \"open.obj\" }\nscale = 0.05\nreference_area = 0.0025\n\
         boundary = \"interpolated-bounce-back\"",
    );
    let path = dir.join("scene.toml");
    std::fs::write(&path, text).unwrap();
    support::assert_one_line_failure(
        &["fluid", "run", path.to_str().unwrap(), "--steps", "1"],
        "needs a closed surface",
    );
}
