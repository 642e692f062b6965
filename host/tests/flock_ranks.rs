//! The flock split across ranks (slabs along x), on CPU ranks in one process: the same flock as
//! the single-rank CPU reference after 10 steps (by id, within 1e-4; bit for bit with each cell
//! in id order), every boid kept exactly once, migration across the periodic wrap both ways,
//! the run protocol's option combinations, and the bad inputs.

mod support;
use support::{assert_clean_failure, murmur_ok};

use murmur::internals::flock::cli::pick_grid;
use murmur::internals::flock::config::FlockConfig;
use murmur::internals::flock::cpu::CpuFlock;
use murmur::internals::flock::slab::{run_cpu_ranks, run_cpu_ranks_as, CpuRanksRun};
use murmur::internals::flock::{FlockBackend, FlockSettings, FlockState, WithinCell};
use murmur_common::Vec3;

/// Settings of `n` boids at `scale`, the grid picked by density as `flock run` does.
fn settings(n: u64, scale: f32) -> FlockSettings {
    let mut c = FlockConfig::default();
    c.sim.n = n;
    c.params.scale = scale;
    pick_grid(&mut c);
    c.settings().unwrap()
}

fn reference(s: &FlockSettings, start: &FlockState, steps: u64) -> FlockState {
    reference_as(s, start, steps, WithinCell::Binned)
}

fn reference_as(
    s: &FlockSettings,
    start: &FlockState,
    steps: u64,
    within: WithinCell,
) -> FlockState {
    let mut f = CpuFlock::new(s, start);
    f.set_within_cell(within);
    for _ in 0..steps {
        f.step().unwrap();
    }
    f.state().unwrap()
}

/// Runs `ranks` ranks and checks them against the reference: same boids, differences within
/// 1e-4, shares that add up.
fn check_parity(s: &FlockSettings, start: &FlockState, ranks: usize, steps: u64) -> CpuRanksRun {
    let want = reference(s, start, steps);
    let got = run_cpu_ranks(s, start, ranks, steps).unwrap();
    assert_eq!(got.state.len(), start.len());
    assert_eq!(got.state.id, (0..start.len() as u32).collect::<Vec<_>>());
    assert_eq!(got.own.iter().sum::<u64>(), start.len() as u64);
    assert!(got.held.iter().zip(&got.own).all(|(h, o)| h >= o));
    let (dp, dv) = got.state.max_difference(&want);
    assert!(
        dp <= 1e-4 && dv <= 1e-4,
        "{ranks} ranks: position difference {dp:e}, velocity {dv:e}"
    );
    got
}

#[test]
fn two_four_and_eight_ranks_match_one() {
    // A dense flock (about 30 neighbours within the largest radius), so that the halos matter.
    let s = settings(40_000, 50.0);
    let start = FlockState::random(40_000, 50.0, 3);
    for ranks in [2, 4, 8] {
        let run = check_parity(&s, &start, ranks, 10);
        // Every rank holds its share and a halo from each shared face.
        assert!(run.own.iter().all(|&o| o > 0), "{:?}", run.own);
        let halo: u64 = run.held.iter().sum::<u64>() - 40_000;
        assert!(halo > 0, "no halo boids on {ranks} ranks");
    }
}

#[test]
fn boids_migrate_across_the_periodic_wrap() {
    // Everyone flies along +x at full speed: boids leave the last slab at +scale and reappear
    // in the first at -scale, and cross every face between slabs.
    let (n, scale) = (6_000, 30.0);
    let s = settings(n as u64, scale);
    let mut start = FlockState::random(n, scale, 5);
    for v in &mut start.vel {
        *v = Vec3::new(s.params.max_speed, 0.0, 0.0);
    }
    let steps = 10;
    let run = check_parity(&s, &start, 3, steps);
    let wrapped = (0..n)
        .filter(|&i| start.pos[i].x > scale - 1.0 && run.state.pos[i].x < -scale + 2.5)
        .count();
    assert!(wrapped > 0, "no boid crossed the wrap");
}

/// The CPU ranks order each cell by id: against the reference in the same order the flock is
/// the same, bit for bit, and no boid is lost or doubled.
fn assert_same_bits(s: &FlockSettings, start: &FlockState, ranks: usize, steps: u64) {
    let want = reference_as(s, start, steps, WithinCell::ById);
    let got = run_cpu_ranks(s, start, ranks, steps).unwrap();
    assert_eq!(got.state.id, (0..start.len() as u32).collect::<Vec<_>>());
    let d = got.state.difference(&want, s.params.scale, 0.0);
    assert_eq!(
        (d.differ, d.beyond),
        (0, 0),
        "{ranks} ranks: position difference {:e}, velocity {:e}",
        d.pos,
        d.vel
    );
    assert_eq!(got.state, want);
}

#[test]
fn ranks_match_one_bit_for_bit_with_cells_in_id_order() {
    let s = settings(40_000, 50.0);
    let start = FlockState::random(40_000, 50.0, 3);
    for ranks in [2, 3, 4] {
        assert_same_bits(&s, &start, ranks, 10);
    }
}

#[test]
fn the_wrap_keeps_every_boid_once_both_ways() {
    // Half the flock flies along +x, half along -x, at full speed, most from within a few steps
    // of the wrap; a few sit exactly at -scale and +scale (the same point of the periodic domain,
    // owned by the first and the last rank). Boids cross the wrap both ways on every step.
    let (n, scale) = (6_000, 30.0);
    let s = settings(n as u64, scale);
    let mut start = FlockState::random(n, scale, 11);
    let v = s.params.max_speed;
    for (i, (p, vel)) in start.pos.iter_mut().zip(&mut start.vel).enumerate() {
        let up = i % 2 == 0;
        *vel = Vec3::new(if up { v } else { -v }, 0.0, 0.0);
        let edge = (i % 97) as f32 * 0.01;
        if i % 10 != 9 {
            // (Every tenth keeps its place: the middle slab of three is not empty.)
            p.x = if up { scale - edge } else { -scale + edge };
        }
    }
    start.pos[0].x = scale;
    start.pos[1].x = -scale;
    start.pos[2].x = -scale;
    start.pos[3].x = scale;
    for ranks in [2, 3] {
        // (Against the reference as its sort leaves the cells, this crowded start already
        // differs by 2.5e-4 after 12 steps: the order of the sums alone, amplified.)
        assert_same_bits(&s, &start, ranks, 12);
        let run = run_cpu_ranks(&s, &start, ranks, 12).unwrap();
        let crossed = |from: f32| {
            (0..n)
                .filter(|&i| start.pos[i].x * from > 0.0 && run.state.pos[i].x * from < 0.0)
                .count()
        };
        let (up, down) = (crossed(1.0), crossed(-1.0));
        assert!(
            up > n / 10 && down > n / 10,
            "{up} crossed +scale, {down} crossed -scale"
        );
    }
}

#[test]
fn the_comparison_is_periodic() {
    let scale = 100.0;
    let a = FlockState {
        pos: vec![Vec3::new(-100.0, 0.0, 0.0), Vec3::new(99.99, 0.0, -100.0)],
        vel: vec![Vec3::ZERO; 2],
        id: vec![0, 1],
    };
    let mut b = a.clone();
    b.pos[0].x = 100.0;
    b.pos[1].z = 99.995;
    let d = a.difference(&b, scale, 1e-4);
    assert!(d.pos < 1e-2 && d.vel == 0.0, "{d:?}");
    assert_eq!((d.differ, d.beyond), (2, 1));
    assert_eq!(a.max_difference(&b).0, 200.0);
}

#[test]
fn bad_inputs_are_one_line_errors() {
    let s = settings(1000, 100.0);
    let start = FlockState::random(1000, 100.0, 1);
    let err = |ranks: usize, st: &FlockState| run_cpu_ranks(&s, st, ranks, 1).err().unwrap();
    // Slabs thinner than the halo plus a step's travel.
    let e = err(40, &start).to_string();
    assert!(e.contains("use at most 38 ranks"), "{e}");
    // One rank is no split; fewer boids than ranks.
    assert!(err(1, &start).to_string().contains("at least 2 ranks"));
    let few = FlockState::random(3, 100.0, 1);
    assert!(err(4, &few).to_string().contains("fewer boids than ranks"));
    // A rank with no boid at all.
    let mut left = start.clone();
    for p in &mut left.pos {
        p.x = -p.x.abs();
    }
    let e = err(2, &left).to_string();
    assert!(e.contains("rank 1") && e.contains("holds none"), "{e}");
}

#[test]
fn the_commands_split_the_flock_on_the_cpu() {
    let out = murmur_ok(&[
        "flock",
        "check-ranks",
        "--ranks",
        "3",
        "--n",
        "5000",
        "--scale",
        "40",
        "--steps",
        "10",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("control: 1 CPU rank")
            && text.contains("on 3 CPU ranks against 1")
            && text.contains("pass (bit for bit)"),
        "{text}"
    );
    let save = support::tmp("ranks", "split.npz");
    let save_s = save.to_str().unwrap();
    let out = murmur_ok(&[
        "flock",
        "run",
        "--backend",
        "cpu",
        "--ranks",
        "2",
        "--n",
        "3000",
        "--steps",
        "3",
        "--save",
        save_s,
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("2 CPU ranks") && text.contains("own boids per rank"),
        "{text}"
    );
    let saved = murmur::internals::flock::snapshot::load(&save).unwrap();
    assert_eq!(saved.id, (0..3000).collect::<Vec<u32>>());
}

#[test]
fn the_run_protocol_is_the_same_with_every_option() {
    // `flock run` on ranks: the same collective calls on every rank, gathered or not (the GPU
    // ranks run this protocol too). A call one rank skipped would hang these runs.
    let s = settings(3000, 100.0);
    let start = FlockState::random(3000, 100.0, 2);
    let plain = run_cpu_ranks_as(&s, &start, 3, 4, false).unwrap();
    assert!(plain.state.is_none() && plain.own.is_none());
    assert_eq!(plain.held.len(), 3);
    let saved = run_cpu_ranks_as(&s, &start, 3, 4, true).unwrap();
    assert_eq!(saved.held, plain.held);
    assert_eq!(saved.own.unwrap().iter().sum::<u64>(), 3000);
    assert_eq!(saved.state.unwrap().len(), 3000);
    let base = [
        "flock",
        "run",
        "--backend",
        "cpu",
        "--ranks",
        "2",
        "--n",
        "3000",
        "--steps",
        "3",
    ];
    let save = support::tmp("ranks", "quiet.npz");
    let save_s = save.to_str().unwrap();
    for extra in [
        &["--quiet"][..],
        &["--quiet", "--save", save_s][..],
        &[][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let out = murmur_ok(&args);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("2 CPU ranks") && text.contains("held (own + halo)"),
            "{extra:?}: {text}"
        );
        assert_eq!(
            text.contains("saved 3000 boids"),
            extra.len() == 3,
            "{text}"
        );
    }
    assert_eq!(
        murmur::internals::flock::snapshot::load(&save).unwrap().id,
        (0..3000).collect::<Vec<u32>>()
    );
}

#[test]
fn the_commands_reject_bad_splits() {
    let run = [
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "1000",
        "--steps",
        "1",
    ];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = run.to_vec();
        v.extend_from_slice(extra);
        v
    };
    assert_clean_failure(&with(&["--ranks", "50"]), "use at most");
    assert_clean_failure(&with(&["--ranks", "0"]), "at least 1");
    assert_clean_failure(&with(&["--ranks", "2", "--method", "naive"]), "coherent");
    assert_clean_failure(&with(&["--ranks", "2", "--gpus", "2"]), "cannot be used");
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cuda",
            "--ranks",
            "2",
            "--n",
            "100",
        ],
        "--gpus",
    );
    assert_clean_failure(&["flock", "check-ranks", "--n", "100"], "--ranks N");
    assert_clean_failure(&["flock", "scale", "--sizes", "1000"], "--gpus");
    // Ranks named by a launcher without a rendezvous: one line, before any GPU is touched.
    let (ok, _, err) = support::murmur_env(
        &["flock", "run", "--n", "1000", "--steps", "1"],
        &[("RANK", "0"), ("WORLD_SIZE", "2")],
    );
    assert!(!ok && err.contains("need a rendezvous"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn the_split_is_deterministic_in_its_boid_count_per_rank() {
    // Equal-width slabs: the shares follow the uniform start.
    let s = settings(8_000, 40.0);
    let start = FlockState::random(8_000, 40.0, 9);
    let run = run_cpu_ranks(&s, &start, 4, 0).unwrap();
    assert_eq!(run.state, start.sorted_by_id());
    for &o in &run.own {
        assert!((1_700..2_300).contains(&o), "{:?}", run.own);
    }
}
