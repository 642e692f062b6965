//! `fluid run --checkpoint-every / --resume` from the outside (CPU backend): a run of N + M
//! steps and a run of N, checkpointed and resumed for M, write byte-identical outputs, force
//! CSV and final populations; refusals name what differs; `--keep`; a full disk keeps the
//! previous checkpoint; a SIGINT writes a checkpoint that resumes; a SIGKILL during the writes
//! leaves a valid one.

mod support;

use murmur::internals::checkpoint::{newest_valid, CheckpointReader, FailMode, FailingSink};
use std::path::{Path, PathBuf};

fn run(args: &[&str]) -> (bool, String, String) {
    support::murmur_text(args)
}

fn ok(args: &[&str]) -> String {
    let (ok, out, err) = run(args);
    assert!(ok, "{args:?}\n{out}\n{err}");
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file of `want` (not its folders) is in `got` with the same bytes; returns how many.
fn same_files(want: &Path, got: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(want).unwrap().flatten() {
        if e.file_type().unwrap().is_file() {
            let name = e.file_name();
            let a = std::fs::read(e.path()).unwrap();
            let b = std::fs::read(got.join(&name))
                .unwrap_or_else(|_| panic!("{name:?} missing from {}", got.display()));
            assert!(
                a == b,
                "{name:?} differs between {} and {}",
                want.display(),
                got.display()
            );
            n += 1;
        }
    }
    n
}

const TG: &str = "assets/fluid/taylor-green.toml";

/// The shipped rotating torus (inlet ramp, outlet, a turning solid, smoke for the viewer) with
/// an output every 4 steps, written into `dir`.
fn torus_scene(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("assets/fluid/rotating-torus.toml")).unwrap();
    assert!(text.contains("[smoke]"));
    let text = text.replace("output_every = 4000", "output_every = 4");
    let p = dir.join("torus.toml");
    std::fs::write(&p, text).unwrap();
    p
}

/// Straight `n + m` steps against `n`, checkpoint, resume for `m` (with `resume_extra` flags
/// on the resumed run): the same output files, the same final populations.
fn straight_and_split(
    dir: &Path,
    scene: &str,
    base: &[&str],
    n: u64,
    total: u64,
    resume_extra: &[&str],
) {
    let a = dir.join("a");
    let b = dir.join("b");
    let t = total.to_string();
    let mut args: Vec<&str> = vec!["fluid", "run", scene, "--backend", "cpu", "--quiet"];
    args.extend(base);
    let mut straight = args.clone();
    straight.extend(["--steps", &t, "--out", s(&a), "--checkpoint-every", &t]);
    ok(&straight);
    // The first part runs past its checkpoint at n to n + 2: the resumed run drops those rows
    // of the force CSV and writes their outputs again.
    let n_s = n.to_string();
    let past = (n + 2).to_string();
    let mut first = args.clone();
    first.extend(["--steps", &past, "--out", s(&b), "--checkpoint-every", &n_s]);
    ok(&first);
    let ck = b.join("checkpoints");
    let mut second = args.clone();
    second.extend([
        "--steps",
        &t,
        "--out",
        s(&b),
        "--resume",
        s(&ck),
        "--checkpoint-every",
        &t,
    ]);
    second.extend(resume_extra);
    let out = ok(&second);
    assert!(out.contains(&format!("resumed from step {n} (")), "{out}");
    assert!(same_files(&a, &b) >= 3);
    let name = |d: &Path| {
        let f = newest_valid(&d.join("checkpoints")).unwrap();
        assert_eq!(f.step, total);
        f.path
    };
    for array in ["populations", "density", "velocity"] {
        assert_eq!(
            support::array_sha(&name(&a), array),
            support::array_sha(&name(&b), array),
            "{array}"
        );
    }
}

#[test]
fn a_periodic_box_resumes_bit_for_bit() {
    for (storage, streaming, n) in [
        ("fp32", "pull", 13),
        ("fp16s", "in-place", 13),
        ("fp16s", "pull", 12),
    ] {
        let dir = support::tmp("ck-box", &format!("{storage}-{streaming}-{n}"));
        let base = [
            "--coarsen",
            "4",
            "--storage",
            storage,
            "--streaming",
            streaming,
        ];
        // Resumed in another layout: the checkpoint's order does not depend on it.
        straight_and_split(&dir, TG, &base, n, 30, &["--layout", "soa"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn a_turning_solid_with_smoke_resumes_bit_for_bit() {
    for (storage, streaming) in [("fp16s", "pull"), ("fp32", "in-place")] {
        let dir = support::tmp("ck-torus", &format!("{storage}-{streaming}"));
        std::fs::create_dir_all(&dir).unwrap();
        let scene = torus_scene(&dir);
        let base = [
            "--coarsen",
            "4",
            "--storage",
            storage,
            "--streaming",
            streaming,
        ];
        straight_and_split(&dir, s(&scene), &base, 7, 14, &[]);
        // Outputs at 4, 8, 12 and 14 and the force CSV.
        let csv = std::fs::read_to_string(dir.join("b/rotating-torus_forces.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 14, "{csv}");
        assert!(dir.join("b/rotating-torus_0000008.vtp").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// One line on stderr, a failure, and `needle` in it.
fn refused(args: &[&str], needle: &str) {
    let (ok, out, err) = run(args);
    assert!(!ok, "{args:?} ran:\n{out}");
    assert!(
        err.contains(needle),
        "{args:?}: expected {needle:?} in {err:?}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn checkpoints_of_another_run_or_damaged_ones_are_refused() {
    let dir = support::tmp("ck-refuse", "");
    let ck = dir.join("ck");
    ok(&[
        "fluid",
        "run",
        TG,
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "4",
        "--steps",
        "6",
        "--checkpoint-every",
        "3",
        "--checkpoint-dir",
        s(&ck),
    ]);
    let file = ck.join("taylor-green-0000000006.npz");
    let fresh = dir.join("never");
    let resume = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            "fluid",
            "run",
            TG,
            "--backend",
            "cpu",
            "--quiet",
            "--coarsen",
            "4",
            "--steps",
            "10",
        ]
        .iter()
        .map(|x| x.to_string())
        .collect();
        v.extend(["--out".into(), s(&fresh).into()]);
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let go = |extra: &[&str], needle: &str| {
        let v = resume(extra);
        let args: Vec<&str> = v.iter().map(|x| x.as_str()).collect();
        refused(&args, needle);
        assert!(!fresh.exists(), "a refused resume made its output folder");
    };
    let f = s(&file);
    go(
        &["--resume", f, "--model", "bgk"],
        "was written for model rm-mrt, this run uses model bgk",
    );
    go(
        &["--resume", f, "--storage", "fp16s"],
        "was written for storage fp32, this run uses storage fp16s",
    );
    go(
        &["--resume", f, "--streaming", "in-place"],
        "was written for streaming pull, this run uses streaming in-place",
    );
    let (good, _, err) = run(&[
        "fluid",
        "run",
        TG,
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "4",
        "--steps",
        "6",
        "--resume",
        f,
    ]);
    assert!(
        !good && err.contains("is at step 6, at or past this run's end at step 6"),
        "{err}"
    );
    // Another lattice (the scene's resolution): named as the scene's key.
    let (good, _, err) = run(&[
        "fluid",
        "run",
        TG,
        "--backend",
        "cpu",
        "--quiet",
        "--steps",
        "10",
        "--resume",
        f,
    ]);
    assert!(
        !good && err.contains("lattice.resolution is 16 there, 64 here"),
        "{err}"
    );
    // Another scene: its viscosity changed.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join(TG)).unwrap();
    let other = dir.join("other.toml");
    std::fs::write(
        &other,
        text.replace("viscosity = 0.001", "viscosity = 0.002"),
    )
    .unwrap();
    let (good, _, err) = run(&[
        "fluid",
        "run",
        s(&other),
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "4",
        "--steps",
        "10",
        "--resume",
        f,
    ]);
    assert!(
        !good
            && err.contains(
                "was written for another scene: physical.viscosity is 0.004 there, 0.008 here"
            ),
        "{err}"
    );
    // Truncated, and one byte of the populations flipped.
    let bytes = std::fs::read(&file).unwrap();
    let cut = dir.join("cut-0000000006.npz");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    go(
        &["--resume", s(&cut)],
        "is truncated or not a murmur checkpoint",
    );
    let mut flipped = bytes.clone();
    let mid = flipped.len() / 3;
    flipped[mid] ^= 0x40;
    let bad = dir.join("bad-0000000006.npz");
    std::fs::write(&bad, &flipped).unwrap();
    go(&["--resume", s(&bad)], "is corrupt");
    // A folder skips the damaged newer ones with a note and resumes from the newest valid one.
    let mixed = dir.join("mixed");
    std::fs::create_dir(&mixed).unwrap();
    std::fs::copy(
        ck.join("taylor-green-0000000003.npz"),
        mixed.join("taylor-green-0000000003.npz"),
    )
    .unwrap();
    std::fs::write(mixed.join("taylor-green-0000000006.npz"), &flipped).unwrap();
    let (good, out, err) = run(&[
        "fluid",
        "run",
        TG,
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "4",
        "--steps",
        "8",
        "--resume",
        s(&mixed),
    ]);
    assert!(good, "{err}");
    assert!(
        err.contains("murmur: note: skipped: checkpoint") && err.contains("is corrupt"),
        "{err}"
    );
    assert!(out.contains("resumed from step 3 ("), "{out}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn keep_leaves_the_newest() {
    let dir = support::tmp("ck-keep", "");
    ok(&[
        "fluid",
        "run",
        TG,
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "4",
        "--steps",
        "40",
        "--checkpoint-every",
        "10",
        "--keep",
        "2",
        "--checkpoint-dir",
        s(&dir),
    ]);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["taylor-green-0000000030.npz", "taylor-green-0000000040.npz"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The injectable writer: a full disk during the second checkpoint is one line, and the first
/// checkpoint stays valid, with no temporary file left; written between two steps or beside
/// the run from a copy of the populations (then the error comes when the run waits for it).
#[test]
fn a_full_disk_keeps_the_previous_checkpoint() {
    use murmur::internals::checkpoint::{CheckpointArgs, Schedule};
    use murmur::internals::fluid::resume::{Checkpoints, Identity};
    use murmur::internals::fluid::{cpu, scene};
    use murmur_common::lbm::{CollisionModel, Units};
    for beside in [false, true] {
        let dir = support::tmp("ck-full", &beside.to_string());
        let setup = scene::taylor_green(16, 8, 0.05, 0.02, CollisionModel::Bgk).unwrap();
        let flags: std::sync::Arc<[u8]> = setup.flags.clone().into();
        let mut b = cpu::open(&setup).unwrap();
        let args = CheckpointArgs {
            checkpoint_every: 2,
            checkpoint_dir: Some(dir.clone()),
            ..Default::default()
        };
        let identity = Identity::of_text("tg", "name = \"tg\"\n").unwrap();
        let units = Units {
            dx: 1.0,
            dt: 1.0,
            rho0: 1.0,
        };
        let mut c = Checkpoints::new(Schedule::new(&args, "tg", None, false), identity, units);
        c.beside = beside;
        c.schedule.prepare().unwrap();
        b.step().unwrap();
        b.step().unwrap();
        c.write(b.as_mut(), &flags, None, None, Vec::new()).unwrap();
        c.settle().unwrap();
        assert_eq!(c.beside_count, usize::from(beside));
        let first = c.last().unwrap().to_path_buf();
        for mode in [FailMode::Full, FailMode::Abort, FailMode::Sync] {
            c.factory = FailingSink::factory(20_000, mode).into();
            b.step().unwrap();
            b.step().unwrap();
            let e = c
                .write(b.as_mut(), &flags, None, None, Vec::new())
                .and_then(|_| c.settle())
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("cannot write checkpoint"), "{e}");
            assert_eq!(e.lines().count(), 1, "{e}");
            let f = newest_valid(&dir).unwrap();
            assert_eq!(f.path, first);
            let names: Vec<String> = std::fs::read_dir(&dir)
                .unwrap()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            assert_eq!(names, ["tg-0000000002.npz"], "{mode:?}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A checkpoint written beside the run from a copy of the populations holds the bytes of one
/// written between two steps, though the run goes on meanwhile: every array, FP32 pull and
/// FP16S in place.
#[test]
fn a_checkpoint_beside_the_run_holds_the_bytes_of_one_between_steps() {
    use murmur::internals::checkpoint::{CheckpointArgs, Schedule};
    use murmur::internals::fluid::resume::{Checkpoints, Identity};
    use murmur::internals::fluid::{cpu, scene};
    use murmur_common::lbm::{CollisionModel, StorageKind, Streaming, Units};
    for (storage, streaming) in [
        (StorageKind::Fp32, Streaming::Pull),
        (StorageKind::Fp16s, Streaming::InPlace),
    ] {
        let dir = support::tmp("ck-beside", storage.name());
        let mut setup = scene::taylor_green(24, 16, 0.05, 0.02, CollisionModel::Bgk).unwrap();
        setup.storage = storage;
        setup.streaming = Some(streaming);
        let flags: std::sync::Arc<[u8]> = setup.flags.clone().into();
        let identity = Identity::of_text("tg", "name = \"tg\"\n").unwrap();
        let units = Units {
            dx: 1e-3,
            dt: 1e-4,
            rho0: 1.0,
        };
        let mut files = Vec::new();
        for beside in [false, true] {
            let mut b = cpu::open(&setup).unwrap();
            let args = CheckpointArgs {
                checkpoint_every: 3,
                checkpoint_dir: Some(dir.join(beside.to_string())),
                ..Default::default()
            };
            let schedule = Schedule::new(&args, "tg", None, false);
            let mut c = Checkpoints::new(schedule, identity.clone(), units);
            c.beside = beside;
            for _ in 0..3 {
                b.step().unwrap();
            }
            c.write(b.as_mut(), &flags, None, Some(3), Vec::new())
                .unwrap();
            // The run goes on while the copy is written.
            for _ in 0..4 {
                b.step().unwrap();
            }
            c.settle().unwrap();
            assert_eq!(c.beside_count, usize::from(beside), "{storage:?}");
            let line = c.summary().unwrap();
            assert_eq!(line.contains("beside the run"), beside, "{line}");
            files.push(c.last().unwrap().to_path_buf());
        }
        let (a, b) = (
            CheckpointReader::open(&files[0]).unwrap(),
            CheckpointReader::open(&files[1]).unwrap(),
        );
        assert_eq!(a.header().arrays, b.header().arrays, "{storage:?}");
        assert_eq!(a.header().step, 3);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[cfg(unix)]
mod signals {
    use super::*;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    fn start(args: &[&str]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_murmur"))
            .args(args)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn kill(child: &std::process::Child, sig: libc::c_int) {
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
    }

    /// Waits until `dir` holds at least `n` checkpoints (or panics after a minute).
    fn wait_for(dir: &Path, n: usize) {
        let t0 = Instant::now();
        while murmur::internals::checkpoint::list(dir).map_or(0, |l| l.len()) < n {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "no checkpoints in {}",
                dir.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGINT (and SIGTERM) during `fluid run`: the step finishes, a checkpoint is written, one
    /// line names it, exit 75; resuming it reproduces the straight run.
    #[test]
    fn a_stop_signal_writes_a_checkpoint_that_resumes() {
        for (sig, name) in [(libc::SIGINT, "SIGINT"), (libc::SIGTERM, "SIGTERM")] {
            let dir = support::tmp("ck-signal", name);
            let ck = dir.join("ck");
            let base = [
                "fluid",
                "run",
                TG,
                "--backend",
                "cpu",
                "--quiet",
                "--coarsen",
                "2",
            ];
            let mut args = base.to_vec();
            args.extend(["--steps", "1000000", "--checkpoint-dir", s(&ck)]);
            // A signal before the run loop is armed (a loaded machine starts the child slowly)
            // ends the process at once with 128 + the signal: such a try is repeated, waiting
            // longer.
            let mut tries = [1_500u64, 3_000, 6_000].into_iter();
            let (out, err) = loop {
                let wait = tries.next().expect("the run loop was never armed");
                let child = start(&args);
                std::thread::sleep(Duration::from_millis(wait));
                kill(&child, sig);
                let out = child.wait_with_output().unwrap();
                let err = String::from_utf8_lossy(&out.stderr).into_owned();
                if out.status.code() != Some(128 + sig) {
                    break (out, err);
                }
            };
            assert_eq!(out.status.code(), Some(75), "{err}");
            let line = err.trim_end();
            assert_eq!(line.lines().count(), 1, "{err}");
            let rest = line
                .strip_prefix(&format!("murmur: stopped by {name} after step "))
                .unwrap_or_else(|| panic!("{line}"));
            let (step, tail) = rest.split_once(' ').unwrap();
            let step: u64 = step.parse().unwrap();
            let path = ck.join(format!("taylor-green-{step:010}.npz"));
            assert_eq!(
                tail,
                format!("of 1000000; wrote checkpoint {}", path.display())
            );
            let total = (step + 3).to_string();
            let a = dir.join("a");
            let mut straight = base.to_vec();
            straight.extend([
                "--steps",
                &total,
                "--checkpoint-dir",
                s(&a),
                "--checkpoint-every",
                &total,
            ]);
            ok(&straight);
            let b = dir.join("b");
            let mut resumed = base.to_vec();
            resumed.extend([
                "--steps",
                &total,
                "--resume",
                s(&path),
                "--checkpoint-dir",
                s(&b),
                "--checkpoint-every",
                &total,
            ]);
            ok(&resumed);
            let file = format!("taylor-green-{total:0>10}.npz");
            assert_eq!(
                support::array_sha(&a.join(&file), "populations"),
                support::array_sha(&b.join(&file), "populations")
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    /// A SIGKILL while checkpoints are being written leaves the newest complete one valid (the
    /// file being written is a temporary name); the resumed run removes the stale temporary file.
    #[test]
    fn a_kill_during_the_writes_leaves_a_valid_checkpoint() {
        let dir = support::tmp("ck-kill", "");
        let ck = dir.join("ck");
        let child = start(&[
            "fluid",
            "run",
            TG,
            "--backend",
            "cpu",
            "--quiet",
            "--steps",
            "1000000",
            "--checkpoint-every",
            "1",
            "--keep",
            "3",
            "--checkpoint-dir",
            s(&ck),
        ]);
        wait_for(&ck, 2);
        std::thread::sleep(Duration::from_millis(137));
        kill(&child, libc::SIGKILL);
        let _ = child.wait_with_output().unwrap();
        let found = newest_valid(&ck).unwrap();
        assert!(found.notes.is_empty(), "{:?}", found.notes);
        let to = (found.step + 1).to_string();
        ok(&[
            "fluid",
            "run",
            TG,
            "--backend",
            "cpu",
            "--quiet",
            "--steps",
            &to,
            "--resume",
            s(&ck),
            "--checkpoint-dir",
            s(&ck),
        ]);
        let temps = std::fs::read_dir(&ck)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .count();
        assert_eq!(temps, 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// `fluid run` on `backend` in `out` for `steps` steps (`more` flags), checkpointing at the end.
fn run_on(backend: &str, scene: &str, base: &[&str], out: &Path, steps: u64, more: &[&str]) {
    let t = steps.to_string();
    let mut args: Vec<&str> = vec!["fluid", "run", scene, "--backend", backend, "--quiet"];
    args.extend(base);
    args.extend(["--steps", &t, "--out", s(out), "--checkpoint-every", &t]);
    args.extend(more);
    ok(&args);
}

/// CUDA and the CPU: the same bits straight, and a checkpoint of either resumes on the other
/// with the bits of the straight runs (outputs and force CSV included).
#[test]
#[ignore = "needs a CUDA GPU"]
fn cuda_and_cpu_checkpoints_resume_on_each_other() {
    for (storage, streaming, torus) in [("fp16s", "pull", true), ("fp32", "in-place", false)] {
        let dir = support::tmp("ck-cuda", &format!("{storage}-{streaming}"));
        std::fs::create_dir_all(&dir).unwrap();
        let scene = if torus {
            torus_scene(&dir)
        } else {
            PathBuf::from(TG)
        };
        let scene = s(&scene).to_string();
        let base = [
            "--coarsen",
            "4",
            "--storage",
            storage,
            "--streaming",
            streaming,
        ];
        let (n, total) = (7, 14);
        let final_of = |d: &Path| {
            d.join("checkpoints").join(format!(
                "{}-{total:010}.npz",
                if torus {
                    "rotating-torus"
                } else {
                    "taylor-green"
                }
            ))
        };
        let mut want = None;
        for straight in ["cpu", "cuda"] {
            let d = dir.join(format!("straight-{straight}"));
            run_on(straight, &scene, &base, &d, total, &[]);
            let sha = support::array_sha(&final_of(&d), "populations");
            assert_eq!(want.get_or_insert(sha.clone()), &sha, "{straight} straight");
        }
        assert!(same_files(&dir.join("straight-cpu"), &dir.join("straight-cuda")) >= 3);
        for (first, second) in [("cuda", "cpu"), ("cpu", "cuda")] {
            let d = dir.join(format!("{first}-then-{second}"));
            run_on(first, &scene, &base, &d, n, &[]);
            let ck = d.join("checkpoints");
            run_on(second, &scene, &base, &d, total, &["--resume", s(&ck)]);
            let sha = support::array_sha(&final_of(&d), "populations");
            assert_eq!(want.as_ref(), Some(&sha), "{first} then {second}");
            assert!(same_files(&dir.join("straight-cpu"), &d) >= 3);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
