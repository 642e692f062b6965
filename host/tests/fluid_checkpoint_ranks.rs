//! Checkpoints of several ranks through `fluid run --ranks N` (CPU ranks): a rank file per rank
//! and a manifest; a checkpoint of N ranks resumes on M (1 to 8) with the bits of the straight
//! run of one lattice, outputs and force CSV included; a stop signal on ranks writes one.

mod support;

use murmur::internals::checkpoint::CheckpointReader;
use murmur::internals::fluid::resume::ranks::sources;
use murmur::internals::fluid::slab::state::copy_box;
use std::path::{Path, PathBuf};

fn ok(args: &[&str]) -> String {
    let (ok, out, err) = support::murmur_text(args);
    assert!(ok, "{args:?}\n{out}\n{err}");
    out
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The whole lattice's populations of a checkpoint (one file, or a manifest's files stitched).
fn populations(path: &Path) -> Vec<u8> {
    let manifest = path.to_string_lossy().ends_with(".manifest.toml");
    let first = match manifest {
        true => sources(path, true, [1, 1, 1]).unwrap()[0].path.clone(),
        false => path.to_path_buf(),
    };
    let h = CheckpointReader::open(&first).unwrap().header().clone();
    let dims: Vec<u32> = h.fields["lattice"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_integer().unwrap() as u32)
        .collect();
    let whole = ([0u32; 3], [dims[0], dims[1], dims[2]]);
    let info = h.array("populations").unwrap();
    let cell = (info.bytes / info.shape[..3].iter().product::<u64>()) as usize;
    let mut out = vec![0u8; dims.iter().map(|&d| d as usize).product::<usize>() * cell];
    for src in sources(path, manifest, whole.1).unwrap() {
        let bytes = CheckpointReader::open(&src.path)
            .unwrap()
            .read_bytes("populations")
            .unwrap();
        copy_box(&bytes, src.cells, &mut out, whole, cell).unwrap();
    }
    out
}

/// The checkpoint at `step` in `dir`: the manifest when there is one, else the file.
fn at(dir: &Path, name: &str, step: u64) -> PathBuf {
    let m = dir.join(format!("{name}-{step:010}.manifest.toml"));
    if m.exists() {
        m
    } else {
        dir.join(format!("{name}-{step:010}.npz"))
    }
}

fn ranks_flag(n: usize) -> Vec<String> {
    match n {
        1 => Vec::new(),
        n => vec!["--ranks".into(), n.to_string()],
    }
}

/// `fluid run` of `scene` on `ranks` ranks to `steps`, its final fields to `out/final.npz`,
/// checkpointing every `every` into `out/ck`, resuming `resume` if given.
fn run(
    scene: &str,
    base: &[&str],
    ranks: usize,
    steps: u64,
    every: u64,
    out: &Path,
    resume: Option<&Path>,
) {
    let mut world = vec!["--backend".to_string(), "cpu".into()];
    world.extend(ranks_flag(ranks));
    run_in(scene, base, &world, steps, every, out, resume)
}

/// [`run`] on the backend and ranks `world` names (`--backend cuda --gpus 1`, say).
fn run_in(
    scene: &str,
    base: &[&str],
    world: &[String],
    steps: u64,
    every: u64,
    out: &Path,
    resume: Option<&Path>,
) {
    let (t, e) = (steps.to_string(), every.to_string());
    let fin = out.join("final.npz");
    let ck = out.join("ck");
    let mut args: Vec<String> = ["fluid", "run", scene, "--quiet"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    args.extend(base.iter().map(|x| x.to_string()));
    args.extend(world.iter().cloned());
    for x in [
        "--steps",
        &t,
        "--checkpoint-every",
        &e,
        "--checkpoint-dir",
        s(&ck),
        "--out",
        s(&fin),
    ] {
        args.push(x.into());
    }
    if let Some(r) = resume {
        args.extend(["--resume".into(), s(r).into()]);
    }
    std::fs::create_dir_all(out).unwrap();
    ok(&args.iter().map(|x| x.as_str()).collect::<Vec<_>>());
}

/// The final fields file and force CSV of `got` are those of `want` (where `want` wrote them).
fn same_outputs(want: &Path, got: &Path, what: &str) {
    for f in ["final.npz", "final_forces.csv"] {
        if want.join(f).exists() {
            assert!(
                std::fs::read(want.join(f)).unwrap() == std::fs::read(got.join(f)).unwrap(),
                "{what}: {f} differs"
            );
        }
    }
}

fn torus_scene(dir: &Path) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join("torus.toml");
    std::fs::copy(root.join("assets/fluid/rotating-torus.toml"), &p).unwrap();
    p
}

/// A scene, its name, a storage and the (N, M) rank pairs to resume.
type Case<'a> = (&'a str, &'a str, &'a str, &'a [(usize, usize)]);

/// The turning torus in a channel (cut along x) and the periodic box (cut along z), FP32 and
/// FP16S: every N -> M among the pairs below gives the one lattice's final populations, fields
/// file and force CSV.
#[test]
fn a_checkpoint_of_n_ranks_resumes_on_m() {
    let dir = support::tmp("ckr", "");
    let torus = torus_scene(&dir);
    let cases: [Case; 3] = [
        (
            s(&torus),
            "rotating-torus",
            "fp32",
            &[(2, 3), (3, 2), (2, 1), (1, 2), (3, 8), (8, 1)],
        ),
        (s(&torus), "rotating-torus", "fp16s", &[(2, 3), (1, 4)]),
        (
            "assets/fluid/taylor-green.toml",
            "taylor-green",
            "fp16s",
            &[(2, 3), (4, 1)],
        ),
    ];
    let (n_at, total) = (7u64, 14u64);
    for (scene, name, storage, pairs) in cases {
        let base = ["--coarsen", "4", "--storage", storage];
        let one = dir.join(format!("{name}-{storage}-one"));
        run(scene, &base, 1, total, total, &one, None);
        let want = populations(&at(&one.join("ck"), name, total));
        let two = dir.join(format!("{name}-{storage}-two"));
        run(scene, &base, 2, total, total, &two, None);
        assert!(at(&two.join("ck"), name, total)
            .to_string_lossy()
            .ends_with(".manifest.toml"));
        assert!(
            want == populations(&at(&two.join("ck"), name, total)),
            "{name} {storage}: 2 ranks straight"
        );
        for &(n, m) in pairs {
            let d = dir.join(format!("{name}-{storage}-{n}-{m}"));
            // The first part runs two steps past its checkpoint.
            run(scene, &base, n, n_at + 2, n_at, &d, None);
            let from = at(&d.join("ck"), name, n_at);
            run(scene, &base, m, total, total, &d, Some(&from));
            let got = populations(&at(&d.join("ck"), name, total));
            assert!(want == got, "{name} {storage}: {n} -> {m} ranks");
            same_outputs(&one, &d, &format!("{name} {storage}: {n} -> {m} ranks"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A rank's slab on the GPU (`--gpus 1`: the slab, its exchange through NCCL and its
/// checkpoint, on one GPU): straight it gives the one CPU lattice's bits; its checkpoint
/// resumes on CPU ranks and a checkpoint of CPU ranks on it, with the same bits, outputs and
/// force CSV included.
#[test]
#[ignore = "needs a CUDA GPU"]
fn a_gpu_ranks_checkpoint_resumes_on_cpu_ranks_and_back() {
    let dir = support::tmp("ckr-gpu", "");
    let torus = torus_scene(&dir);
    let gpu: Vec<String> = ["--backend", "cuda", "--gpus", "1"]
        .iter()
        .map(|x| x.to_string())
        .collect();
    let cpu = |n: usize| {
        let mut w = vec!["--backend".to_string(), "cpu".into()];
        w.extend(ranks_flag(n));
        w
    };
    let (n_at, total) = (7u64, 14u64);
    for (scene, name, storage) in [
        (s(&torus), "rotating-torus", "fp32"),
        ("assets/fluid/taylor-green.toml", "taylor-green", "fp16s"),
    ] {
        let base = ["--coarsen", "4", "--storage", storage];
        let one = dir.join(format!("{name}-{storage}-one"));
        run(scene, &base, 1, total, total, &one, None);
        let want = populations(&at(&one.join("ck"), name, total));
        let straight = dir.join(format!("{name}-{storage}-gpu"));
        run_in(scene, &base, &gpu, total, total, &straight, None);
        let got = populations(&at(&straight.join("ck"), name, total));
        assert!(want == got, "{name} {storage}: --gpus 1 straight");
        for (first, second, label) in [
            (&gpu, &cpu(3), "gpu -> 3 cpu"),
            (&cpu(2), &gpu, "2 cpu -> gpu"),
        ] {
            let d = dir.join(format!("{name}-{storage}-{}", label.replace(' ', "")));
            run_in(scene, &base, first, n_at + 2, n_at, &d, None);
            let from = at(&d.join("ck"), name, n_at);
            run_in(scene, &base, second, total, total, &d, Some(&from));
            let got = populations(&at(&d.join("ck"), name, total));
            assert!(want == got, "{name} {storage}: {label}");
            same_outputs(&one, &d, &format!("{name} {storage}: {label}"));
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A SIGINT during `fluid run --ranks 2`: both ranks stop at the same step (an agreement every 8
/// steps), write their files and rank 0 the manifest; the line names it; exit 75; it resumes.
#[cfg(unix)]
#[test]
fn a_stop_signal_on_ranks_writes_a_manifest() {
    use std::process::{Command, Stdio};
    use std::time::Duration;
    let dir = support::tmp("ckr-signal", "");
    let ck = dir.join("ck");
    let args = [
        "fluid",
        "run",
        "assets/fluid/taylor-green.toml",
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "2",
        "--ranks",
        "2",
        "--steps",
        "1000000",
        "--checkpoint-dir",
        s(&ck),
    ];
    let mut tries = [1_500u64, 3_000, 6_000].into_iter();
    let (code, err) = loop {
        let wait = tries.next().expect("the run loop was never armed");
        let child = Command::new(env!("CARGO_BIN_EXE_murmur"))
            .args(args)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(wait));
        // SAFETY: kill(2) on the pid of a child this test started and has not reaped.
        assert_eq!(
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) },
            0
        );
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        if out.status.code() != Some(128 + libc::SIGINT) {
            break (out.status.code(), err);
        }
    };
    assert_eq!(code, Some(75), "{err}");
    let line = err.trim_end();
    assert_eq!(line.lines().count(), 1, "{err}");
    let rest = line
        .strip_prefix("murmur: stopped by SIGINT after step ")
        .unwrap_or_else(|| panic!("{line}"));
    let (step, tail) = rest.split_once(' ').unwrap();
    let step: u64 = step.parse().unwrap();
    assert_eq!(step % 8, 0, "the ranks agree on multiples of 8: {line}");
    let m = ck.join(format!("taylor-green-{step:010}.manifest.toml"));
    assert_eq!(
        tail,
        format!("of 1000000; wrote checkpoint {}", m.display())
    );
    let to = (step + 3).to_string();
    let out = ok(&[
        "fluid",
        "run",
        "assets/fluid/taylor-green.toml",
        "--backend",
        "cpu",
        "--quiet",
        "--coarsen",
        "2",
        "--steps",
        &to,
        "--resume",
        s(&m),
    ]);
    assert!(
        out.contains(&format!("resumed from step {step} (")),
        "{out}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
