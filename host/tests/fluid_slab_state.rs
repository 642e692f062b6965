//! A fluid state captured on N CPU ranks is the whole lattice's, bit for bit, and restored on M
//! ranks (or on one lattice) gives after more steps the populations, sample forces and solid
//! forces of a single lattice run straight: a periodic box (slabs along y, boxes not contiguous
//! in the global order) and a duct with an inlet, an outlet and an oscillating immersed sphere
//! (slabs along x, through the sphere), FP32 and FP16S.

mod support;

use murmur::internals::fluid::forces::ForceSample;
use murmur::internals::fluid::slab::state::{box_len, copy_box, merge_small, split_small, CellBox};
use murmur::internals::fluid::slab::{open_cpu_rank, SlabPlan};
use murmur::internals::fluid::state::{self, cell_bytes, FluidState, SmallState};
use murmur::internals::fluid::{scene, FluidBackend, Setup};
use murmur::internals::ranks::{local::run_ranks, Comm};
use murmur_common::lbm::{CollisionModel, StorageKind, Streaming};
use std::sync::Arc;

/// Cells per state piece: not a divisor of any box, so pieces end mid-row.
const PIECE: usize = 97;

/// `steps` steps, taking the forces every third step as a run's output cadence does.
fn run(b: &mut dyn FluidBackend, steps: u64, forces: &mut Vec<ForceSample>) {
    for _ in 0..steps {
        b.step().unwrap();
        if b.step_count().is_multiple_of(3) {
            forces.extend(b.take_forces().unwrap());
        }
    }
}

/// What a run ends with: the populations' bits, the samples' forces' bits, the force rows.
#[derive(Debug, PartialEq)]
struct Outcome {
    populations: Vec<u32>,
    samples: Option<Vec<[u32; 3]>>,
    forces: Vec<ForceSample>,
}

fn outcome(b: &mut dyn FluidBackend, mut forces: Vec<ForceSample>) -> Outcome {
    forces.extend(b.take_forces().unwrap());
    Outcome {
        populations: b
            .populations()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        samples: b
            .samples()
            .unwrap()
            .map(|s| s.force.iter().map(|f| f.map(f32::to_bits)).collect()),
        forces,
    }
}

/// What one rank captured: its box, its pieces' bytes, its small state, the forces it took.
struct RankCapture {
    own: CellBox,
    bytes: Vec<u8>,
    small: SmallState,
    forces: Vec<ForceSample>,
}

/// Runs `setup` on `n` ranks for `steps` steps and captures every rank.
fn capture_on_ranks(setup: &Setup, n: usize, steps: u64) -> Vec<RankCapture> {
    let plan = SlabPlan::new(setup, n).unwrap();
    let cb = cell_bytes(setup.storage);
    run_ranks(
        n,
        |comm| -> Result<_, murmur::internals::fluid::FluidError> {
            let comm: Arc<dyn Comm> = Arc::new(comm);
            let rank = comm.rank();
            let mut b = open_cpu_rank(setup, &plan, comm)?;
            let mut forces = Vec::new();
            run(&mut b, steps, &mut forces);
            let small = b.capture_small_state()?;
            let own = b.own_box();
            assert_eq!(own, plan.own_box(rank));
            let cells = box_len(own.1);
            let mut bytes = vec![0u8; cells * cb];
            let mut start = 0;
            while start < cells {
                let end = (start + PIECE).min(cells);
                b.read_state_piece(start..end, &mut bytes[start * cb..end * cb])?;
                start = end;
            }
            // A piece past the box is refused.
            let err = b
                .read_state_piece(cells..cells + 1, &mut vec![0u8; cb])
                .unwrap_err();
            assert!(err.to_string().contains("outside the lattice"), "{err}");
            Ok(RankCapture {
                own,
                bytes,
                small,
                forces,
            })
        },
    )
    .unwrap()
}

/// Restores `whole` on `m` ranks (each its split and its box's cells), runs `steps` steps;
/// rank 0's outcome with `forces` (the rows taken before the capture) first.
fn resume_on_ranks(
    setup: &Setup,
    whole: &FluidState,
    m: usize,
    steps: u64,
    forces: &[ForceSample],
) -> Outcome {
    let plan = SlabPlan::new(setup, m).unwrap();
    let g = plan.global;
    let all: CellBox = ([0; 3], [g.nx, g.ny, g.nz]);
    let cb = cell_bytes(setup.storage);
    let mut out = run_ranks(
        m,
        |comm| -> Result<_, murmur::internals::fluid::FluidError> {
            let comm: Arc<dyn Comm> = Arc::new(comm);
            let rank = comm.rank();
            let mut b = open_cpu_rank(setup, &plan, comm)?;
            b.restore_small_state(&split_small(&whole.small, &plan, rank))?;
            let own = b.own_box();
            let mut mine = vec![0u8; box_len(own.1) * cb];
            copy_box(&whole.populations, all, &mut mine, own, cb)?;
            let cells = box_len(own.1);
            let mut start = 0;
            while start < cells {
                let end = (start + PIECE + 13).min(cells);
                b.write_state_piece(start..end, &mine[start * cb..end * cb])?;
                start = end;
            }
            assert_eq!(b.step_count(), whole.small.step);
            let mut forces = forces.to_vec();
            run(&mut b, steps, &mut forces);
            Ok(outcome(&mut b, forces))
        },
    )
    .unwrap();
    out.swap_remove(0)
}

/// N ranks' captures after `s1` steps equal one lattice's; restored on every M of `ms` they
/// give the single lattice's `s1 + s2` steps straight (`pairs` sorted by N).
fn resumes_across_rank_counts(
    name: &str,
    setup: &Setup,
    pairs: &[(usize, usize)],
    s1: u64,
    s2: u64,
) {
    let open = |s: &Setup| murmur::internals::fluid::cpu::open(s).unwrap();
    let mut straight = open(setup);
    let mut forces = Vec::new();
    run(straight.as_mut(), s1 + s2, &mut forces);
    let want = outcome(straight.as_mut(), forces);
    assert!(
        want.populations
            .iter()
            .all(|&v| f32::from_bits(v).is_finite()),
        "{name}: the reference is not finite"
    );
    assert!(
        setup.immersed.is_empty()
            || want
                .forces
                .iter()
                .any(|f| f.force.iter().any(|&v| v.abs() > 1e-6)),
        "{name}: the solid feels no force"
    );

    let mut single = open(setup);
    let mut single_forces = Vec::new();
    run(single.as_mut(), s1, &mut single_forces);
    let reference = state::capture(single.as_mut(), 1000).unwrap();

    let g = setup.lattice();
    let all: CellBox = ([0; 3], [g.nx, g.ny, g.nz]);
    let cb = cell_bytes(setup.storage);
    let mut last_n = 0;
    let mut whole = None;
    for &(n, m) in pairs {
        if n != last_n {
            let parts = capture_on_ranks(setup, n, s1);
            let mut populations = vec![0u8; g.cells() * cb];
            let mut covered = 0;
            for p in &parts {
                covered += copy_box(&p.bytes, p.own, &mut populations, all, cb).unwrap();
            }
            assert_eq!(
                covered,
                g.cells(),
                "{name}: {n} ranks' boxes cover the lattice"
            );
            let small =
                merge_small(&parts.iter().map(|p| p.small.clone()).collect::<Vec<_>>()).unwrap();
            let got = FluidState { small, populations };
            assert!(
                got.populations == reference.populations,
                "{name}: {n} ranks' populations differ from one lattice's"
            );
            // Ranks keep no band across a checkpoint (one lattice keeps its last force for the
            // fields until the next step): the rest of the small state is one lattice's.
            let no_band = |s: &SmallState| SmallState {
                band: Vec::new(),
                ..s.clone()
            };
            assert_eq!(
                no_band(&got.small),
                no_band(&reference.small),
                "{name}: {n} ranks' small state"
            );
            // Every rank took the same force rows, one lattice's.
            for p in &parts {
                assert_eq!(p.forces, single_forces, "{name}: forces taken on {n} ranks");
            }
            whole = Some(got);
            last_n = n;
        }
        let whole = whole.as_ref().unwrap();
        // Split for M ranks and merged again: the whole state.
        let plan = SlabPlan::new(setup, m).unwrap();
        let splits: Vec<SmallState> = (0..m)
            .map(|r| split_small(&whole.small, &plan, r))
            .collect();
        assert_eq!(merge_small(&splits).unwrap(), whole.small);
        let got = resume_on_ranks(setup, whole, m, s2, &single_forces);
        assert!(
            got.populations == want.populations,
            "{name}: {n} -> {m} ranks: populations differ"
        );
        assert_eq!(
            got.samples, want.samples,
            "{name}: {n} -> {m} ranks: samples"
        );
        assert_eq!(got.forces, want.forces, "{name}: {n} -> {m} ranks: forces");
    }
    // The merged state resumes on one lattice too.
    let whole = whole.unwrap();
    let mut one = open(setup);
    state::restore(one.as_mut(), &whole, 777).unwrap();
    let got = outcome_after(one.as_mut(), s2, &single_forces);
    assert!(got == want, "{name}: {last_n} ranks -> one lattice");
}

fn outcome_after(b: &mut dyn FluidBackend, steps: u64, forces: &[ForceSample]) -> Outcome {
    let mut forces = forces.to_vec();
    run(b, steps, &mut forces);
    outcome(b, forces)
}

/// `s` in `storage`, pull (what several ranks stream with).
fn with_storage(mut s: Setup, storage: StorageKind) -> Setup {
    s.storage = storage;
    s.streaming = Some(Streaming::Pull);
    s
}

const ALL_PAIRS: [(usize, usize); 9] = [
    (1, 1),
    (1, 2),
    (1, 3),
    (2, 1),
    (2, 2),
    (2, 3),
    (3, 1),
    (3, 2),
    (3, 3),
];

#[test]
fn a_periodic_box_resumes_on_another_number_of_ranks() {
    // 16 x 16 x 12: slabs along y.
    let b = scene::taylor_green(16, 12, 0.05, 0.02, CollisionModel::Bgk).unwrap();
    assert_eq!(SlabPlan::new(&b, 2).unwrap().axis, 1);
    for storage in [StorageKind::Fp32, StorageKind::Fp16s] {
        let setup = with_storage(b.clone(), storage);
        resumes_across_rank_counts(&format!("box {storage:?}"), &setup, &ALL_PAIRS, 7, 5);
    }
}

#[test]
fn a_duct_with_a_moving_solid_resumes_on_another_number_of_ranks() {
    let d = support::ib_scenes::duct();
    assert_eq!(SlabPlan::new(&d, 2).unwrap().axis, 0);
    // FP16S: before step 12, where the sphere next to the wall leaves its range.
    for (storage, s1, s2) in [(StorageKind::Fp32, 8, 6), (StorageKind::Fp16s, 6, 5)] {
        let setup = with_storage(d.clone(), storage);
        resumes_across_rank_counts(&format!("duct {storage:?}"), &setup, &ALL_PAIRS, s1, s2);
    }
}

/// A rank refuses a state of another lattice, and a piece of the wrong size, in one line.
#[test]
fn a_rank_refuses_a_state_of_another_lattice() {
    let b = scene::taylor_green(16, 12, 0.05, 0.02, CollisionModel::Bgk).unwrap();
    let other = scene::taylor_green(16, 8, 0.05, 0.02, CollisionModel::Bgk).unwrap();
    let mut single = murmur::internals::fluid::cpu::open(&other).unwrap();
    single.step().unwrap();
    let foreign = single.capture_small_state().unwrap();
    let plan = SlabPlan::new(&b, 2).unwrap();
    let errs = run_ranks(
        2,
        |comm| -> Result<_, murmur::internals::fluid::FluidError> {
            let comm: Arc<dyn Comm> = Arc::new(comm);
            let mut r = open_cpu_rank(&b, &plan, comm)?;
            let e1 = r.restore_small_state(&foreign).unwrap_err().to_string();
            let e2 = r
                .write_state_piece(0..10, &[0u8; 100])
                .unwrap_err()
                .to_string();
            Ok((e1, e2))
        },
    )
    .unwrap();
    for (e1, e2) in errs {
        assert!(e1.contains("lattice size") && !e1.contains('\n'), "{e1}");
        assert!(e2.contains("wrong size") && !e2.contains('\n'), "{e2}");
    }
}
