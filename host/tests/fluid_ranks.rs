//! The fluid on several ranks (slabs, ghost layers, the exchange of crossing populations) against
//! the whole lattice, on the CPU: N ranks in one process, memory copies for NCCL. A cell's update
//! does not depend on the decomposition, so the populations agree bit for bit.

use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::scene;
use murmur::internals::fluid::slab::{run_cpu_ranks, SlabPlan};
use murmur::internals::fluid::{FluidBackend, Setup};
use murmur_common::lbm::{CollisionModel, Fp16S, Fp32, Storage, StorageKind};

fn whole<S: Storage>(setup: &Setup, steps: u64) -> Vec<f32> {
    let mut b = CpuFluid::<S>::new(setup).unwrap();
    for _ in 0..steps {
        b.step().unwrap();
    }
    b.populations().unwrap()
}

/// Counts values that differ in their bits.
fn differing(a: &[f32], b: &[f32]) -> usize {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
}

fn check(name: &str, setup: &Setup, ranks: &[usize], steps: u64) {
    let reference = match setup.storage {
        StorageKind::Fp32 => whole::<Fp32>(setup, steps),
        StorageKind::Fp16s => whole::<Fp16S>(setup, steps),
        StorageKind::Fp16c => unreachable!(),
    };
    assert!(
        reference.iter().all(|v| v.is_finite()),
        "{name}: reference not finite"
    );
    for &n in ranks {
        let r = run_cpu_ranks(setup, n, steps).unwrap();
        let d = differing(&r.populations, &reference);
        assert_eq!(
            d, 0,
            "{name} on {n} ranks (slabs along {}, {:?}): {d} population values differ",
            r.plan.axis, r.plan.ranges
        );
    }
}

#[test]
fn periodic_box_agrees_bit_for_bit_on_2_3_4_and_8_ranks() {
    // Taylor-Green, 16 x 16 x 24: slabs along z (the longest axis); every model.
    for model in CollisionModel::ALL {
        let setup = scene::taylor_green(16, 24, 0.05, 0.02, model).unwrap();
        check(
            &format!("taylor-green {model:?}"),
            &setup,
            &[2, 3, 4, 8],
            12,
        );
    }
}

#[test]
fn channel_with_inlet_outlet_and_obstacle_agrees_on_slabs_along_x() {
    // Inlet at x = 0, outlet at x = nx - 1, walls around, a voxel sphere across a slab face:
    // slabs along x, cut through the boundary layers and the obstacle.
    let setup = scene::obstacle(
        [40, 12, 12],
        [20.0, 6.0, 6.0],
        3.0,
        0.05,
        0.02,
        CollisionModel::AcmMrt,
    )
    .unwrap();
    check("obstacle", &setup, &[2, 3, 4, 8], 15);
}

#[test]
fn cavity_and_half_precision_agree() {
    // Lid-driven cavity (walls, a moving lid): the longest axis is x or y (equal: y is
    // taken), cut across the lid's face.
    let setup = scene::cavity(14, 4, 0.1, 0.02, CollisionModel::RmMrt).unwrap();
    check("cavity", &setup, &[2, 4], 15);
    let mut half = scene::taylor_green(16, 20, 0.05, 0.02, CollisionModel::Bgk).unwrap();
    half.storage = StorageKind::Fp16s;
    check("taylor-green fp16s", &half, &[2, 4], 10);
}

#[test]
fn slabs_hold_equal_fluid_cells_and_cover_the_lattice() {
    let setup = scene::obstacle(
        [64, 10, 10],
        [16.0, 5.0, 5.0],
        4.0,
        0.05,
        0.02,
        CollisionModel::Bgk,
    )
    .unwrap();
    let plan = SlabPlan::new(&setup, 4).unwrap();
    assert_eq!(plan.axis, 0);
    assert_eq!(plan.ranges.first().unwrap().start, 0);
    assert_eq!(plan.ranges.last().unwrap().end, 64);
    assert!(plan.ranges.windows(2).all(|w| w[0].end == w[1].start));
    // Fluid cells per slab within one layer's worth of each other.
    let l = setup.lattice();
    let per_layer = (l.ny * l.nz) as i64;
    let counts: Vec<i64> = plan
        .ranges
        .iter()
        .map(|r| {
            (0..l.cells())
                .filter(|&c| {
                    let x = l.coords(c).0;
                    r.contains(&x) && setup.flags[c] == 0
                })
                .count() as i64
        })
        .collect();
    let (lo, hi) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
    assert!(hi - lo <= per_layer, "fluid cells per slab {counts:?}");
}

/// Immersed solids on several ranks: every rank runs every sample; the band values of the
/// face layers are exchanged before each pass, each rank spreads into its own cells and counts
/// the reactions of the samples it owns, so populations, solid forces and sample forces agree
/// with the whole lattice bit for bit.
#[test]
fn moving_immersed_solids_agree_bit_for_bit() {
    use murmur::internals::fluid::forces::ForceSample;
    let cases = [
        // Two spheres in a periodic box, one crossing the periodic seams, one spinning: slabs
        // along z, cut through both.
        (
            "periodic box",
            support::ib_scenes::periodic_box(),
            vec![2, 3, 4],
            12,
        ),
        // An oscillating sphere next to a wall in a duct with inlet and outlet: slabs along
        // x, through the sphere.
        ("duct", support::ib_scenes::duct(), vec![2, 4], 12),
    ];
    for (name, setup, ranks, steps) in cases {
        let mut b = CpuFluid::<Fp32>::new(&setup).unwrap();
        for _ in 0..steps {
            b.step().unwrap();
        }
        let reference = b.populations().unwrap();
        let forces = b.take_forces().unwrap();
        let samples = b.samples().unwrap().unwrap();
        assert!(
            forces
                .iter()
                .any(|f| f.force.iter().any(|&v| v.abs() > 1e-6)),
            "{name}: the solids feel no force"
        );
        let bits = |rows: &[ForceSample]| -> Vec<u64> {
            rows.iter()
                .flat_map(|r| r.force.iter().chain(&r.torque).map(|v| v.to_bits()))
                .collect()
        };
        for n in ranks {
            let r = run_cpu_ranks(&setup, n, steps).unwrap();
            let d = differing(&r.populations, &reference);
            assert_eq!(
                d, 0,
                "{name} on {n} ranks {:?}: {d} population values differ",
                r.plan.ranges
            );
            assert_eq!(
                r.forces.len(),
                forces.len(),
                "{name} on {n} ranks: force rows"
            );
            assert_eq!(
                bits(&r.forces),
                bits(&forces),
                "{name} on {n} ranks: solid forces differ"
            );
            let s = r.samples.expect("samples");
            assert_eq!(
                s.positions, samples.positions,
                "{name} on {n} ranks: sample positions"
            );
            let f = |v: &[[f32; 3]]| v.iter().flatten().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(
                f(&s.force),
                f(&samples.force),
                "{name} on {n} ranks: sample forces differ"
            );
        }
    }
}

#[test]
fn bad_decompositions_are_one_line_errors() {
    let setup = scene::taylor_green(8, 8, 0.05, 0.02, CollisionModel::Bgk).unwrap();
    let e = SlabPlan::new(&setup, 9).unwrap_err().to_string();
    assert!(e.contains("9 ranks need at least 9 layers"), "{e}");
    let mut in_place = setup.clone();
    in_place.streaming = Some(murmur_common::lbm::Streaming::InPlace);
    let e = SlabPlan::new(&in_place, 2).unwrap_err().to_string();
    assert!(e.contains("pull"), "{e}");
    let mut gather = support::ib_scenes::periodic_box();
    gather.immersed.spread = murmur::internals::fluid::ib::spread::IbSpread::Gather;
    let e = SlabPlan::new(&gather, 2).unwrap_err().to_string();
    assert!(e.contains("spreads by scatter") && !e.contains('\n'), "{e}");
}

#[test]
fn an_unhealthy_cell_stops_every_rank_at_the_same_step() {
    // A lid far too fast for the viscosity: the flow blows up. Every rank gets the same
    // (collective) report, naming the same global cell, so all stop together.
    let setup = scene::cavity(12, 4, 0.45, 0.0005, CollisionModel::Bgk).unwrap();
    let plan = SlabPlan::new(&setup, 3).unwrap();
    let reports = murmur::internals::ranks::local::run_ranks(3, |comm| {
        let comm: std::sync::Arc<dyn murmur::internals::ranks::Comm> = std::sync::Arc::new(comm);
        let mut b = murmur::internals::fluid::slab::open_cpu_rank(&setup, &plan, comm)?;
        let bounds = murmur_common::lbm::health::Bounds::DEFAULT;
        for step in 1..=400u64 {
            b.step()?;
            if let Some(bad) = b.health(&bounds)?.and_then(|r| r.first_bad) {
                return Ok::<_, murmur::internals::fluid::FluidError>(Some((step, bad)));
            }
        }
        Ok(None)
    })
    .unwrap();
    assert!(reports[0].is_some(), "the flow never became unhealthy");
    assert!(reports.iter().all(|r| *r == reports[0]), "{reports:?}");
}

/// Each rank's output piece (its layers and the next slab's first, with vorticity and Q from
/// the neighbours' exchanged layers) holds exactly the values of the whole lattice's output.
#[test]
fn output_pieces_equal_the_whole_lattice_output() {
    use murmur::internals::fluid::derived::Derived;
    use murmur::internals::fluid::pieces::PieceSink;
    use murmur::internals::fluid::slab::open_cpu_rank;
    use murmur::internals::ranks::Comm;
    use std::sync::Arc;
    let units = murmur_common::lbm::Units::from_scales(1.0, 16.0, 1.0, 0.05, 1000.0);
    let cases = [
        (
            "taylor-green (periodic along z)",
            scene::taylor_green(16, 24, 0.05, 0.02, CollisionModel::Bgk).unwrap(),
        ),
        (
            "cavity (walls along y)",
            scene::cavity(14, 6, 0.1, 0.02, CollisionModel::AcmMrt).unwrap(),
        ),
    ];
    let steps = 8;
    for (name, setup) in cases {
        let periodic = setup.immersed.periodic;
        let mut whole = CpuFluid::<Fp32>::new(&setup).unwrap();
        for _ in 0..steps {
            whole.step().unwrap();
        }
        let f = whole.fields().unwrap();
        let d = Derived::compute(&f, &setup.flags, periodic, &units).unwrap();
        let g = setup.lattice();
        let plan = SlabPlan::new(&setup, 3).unwrap();
        let pieces = murmur::internals::ranks::local::run_ranks(3, |comm| {
            let comm: Arc<dyn Comm> = Arc::new(comm);
            let mut b = open_cpu_rank(&setup, &plan, comm.clone())?;
            b.write_pieces(periodic[plan.axis]);
            for _ in 0..steps {
                b.step()?;
            }
            let piece = b.fields()?;
            let sink = PieceSink {
                name: "t".into(),
                dir: std::env::temp_dir(),
                units,
                flags: setup.flags.clone(),
                periodic,
                comm,
                plan: plan.clone(),
                written: Vec::new(),
            };
            sink.piece_data(steps, &piece)
        })
        .unwrap();
        let mut covered = vec![0u32; g.cells()];
        for (r, p) in pieces.iter().enumerate() {
            let l = p.fields.lattice;
            let n = l.cells();
            for c in 0..n {
                let (x, y, z) = l.coords(c);
                let gc = g.index(x + p.origin[0], y + p.origin[1], z + p.origin[2]);
                covered[gc] += 1;
                for k in 0..4 {
                    assert_eq!(
                        p.fields.data[k * n + c].to_bits(),
                        f.data[k * g.cells() + gc].to_bits(),
                        "{name}: rank {r} field {k} at ({x}, {y}, {z}) of its piece"
                    );
                }
                assert_eq!(p.flags[c], setup.flags[gc]);
                assert_eq!(
                    p.derived.q_criterion[c].to_bits(),
                    d.q_criterion[gc].to_bits(),
                    "{name}: rank {r} Q at ({x}, {y}, {z}) of its piece"
                );
                for k in 0..3 {
                    assert_eq!(
                        p.derived.vorticity[3 * c + k].to_bits(),
                        d.vorticity[3 * gc + k].to_bits(),
                        "{name}: rank {r} vorticity at ({x}, {y}, {z}) of its piece"
                    );
                }
            }
        }
        // Every cell is written, the layers where two pieces meet twice.
        assert!(
            covered.iter().all(|&c| c >= 1),
            "{name}: a cell is in no piece"
        );
        let twice = covered.iter().filter(|&&c| c == 2).count();
        let face = g.cells() / [g.nx, g.ny, g.nz][plan.axis] as usize;
        assert_eq!(twice, 2 * face, "{name}: shared layers");
    }
}

mod support;

/// `fluid ranks-check --ranks N` from the outside: a scene cut along x on CPU ranks, bit for bit,
/// and the decomposition's bad inputs as one-line errors.
#[test]
fn ranks_check_command_and_its_errors() {
    use support::murmur_text as murmur;
    let (ok, out, err) = murmur(&[
        "fluid",
        "ranks-check",
        "--ranks",
        "3",
        "--size",
        "24",
        "--steps",
        "10",
    ]);
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("0 of 373248 population values differ"),
        "{out}"
    );
    assert!(out.contains("pass: identical"), "{out}");
    // The obstacle scene, coarse, spreading by gather: refused on several ranks.
    let scene = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid/obstacle.toml"),
    )
    .unwrap()
    .replace("resolution = 24", "resolution = 6")
        + "\n[immersed]\nspread = \"gather\"\n";
    let path =
        std::env::temp_dir().join(format!("murmur-ranks-gather-{}.toml", std::process::id()));
    std::fs::write(&path, scene).unwrap();
    let gather_scene = path.to_str().unwrap();
    for (args, what) in [
        (
            &["fluid", "ranks-check", "--ranks", "30", "--size", "24"][..],
            "30 ranks need at least 30 layers",
        ),
        (&["fluid", "ranks-check", "--ranks", "1"][..], "at least 2"),
        (
            &["fluid", "ranks-check", "--ranks", "2", "--gpus", "2"][..],
            "exclude each other",
        ),
        (
            &["fluid", "ranks-check", "--ranks", "2", "--steps", "0"][..],
            "--steps must be at least 1",
        ),
        (
            &["fluid", "ranks-check", gather_scene, "--ranks", "2"][..],
            "spreads by scatter",
        ),
        (
            &[
                "fluid",
                "run",
                "assets/fluid/taylor-green.toml",
                "--gpus",
                "2",
                "--backend",
                "cpu",
            ][..],
            "several ranks run on GPUs",
        ),
    ] {
        let (ok, _, err) = murmur(args);
        assert!(!ok, "{args:?} should fail");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(what), "{args:?}: {err}");
        assert!(err.starts_with("murmur: error:"), "{args:?}: {err}");
    }
    let _ = std::fs::remove_file(&path);
}
