//! The `murmur` binary on bad input: a clear one-line error and a non-zero exit, never a panic,
//! and a failed run never overwrites an existing output file.

mod support;
use support::{assert_clean_failure, murmur, murmur_ok};

use murmur::internals::flock::snapshot;
use murmur::internals::preflight::AVAILABLE_MEMORY_ENV;
use std::path::{Path, PathBuf};

#[test]
fn bad_numbers_and_names() {
    let zero = murmur(&["flock", "run", "--backend", "cpu", "--n", "0"]);
    assert!(!zero.status.success());
    assert!(String::from_utf8_lossy(&zero.stderr).contains("at least one boid"));
    let base = [
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "50",
        "--steps",
        "1",
    ];
    let with = |extra: &[&'static str]| {
        let mut v: Vec<&str> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    assert_clean_failure(&["flock", "run", "--steps", "-3"], "steps");
    assert_clean_failure(&["flock", "run", "--steps", "ten"], "steps");
    assert_clean_failure(&with(&["--set", "rule1_distance=NaN"]), "finite");
    assert_clean_failure(&with(&["--set", "rule2_distance=inf"]), "finite");
    assert_clean_failure(&with(&["--set", "rule3_distance=-1"]), "negative");
    assert_clean_failure(&with(&["--scale", "-5"]), "negative");
    assert_clean_failure(&with(&["--set", "rule4_scale=1"]), "unknown parameter");
    assert_clean_failure(&with(&["--set", "dt=fast"]), "must be a number");
    assert_clean_failure(&with(&["--cell-width-factor", "0"]), "cell-width-factor");
    assert_clean_failure(&with(&["--cell-width-factor", "-1"]), "cell-width-factor");
    assert_clean_failure(&with(&["--block-size", "100"]), "block-size");
    assert_clean_failure(
        &with(&["--config", "/nonexistent/x.toml"]),
        "cannot read config",
    );
}

#[test]
fn bad_snapshots_and_output_safety() {
    let missing = support::tmp("cli", "missing.npz");
    let corrupt = support::tmp("cli", "corrupt.npz");
    std::fs::write(&corrupt, b"PK\x03\x04 definitely not a zip").unwrap();
    let out = support::tmp("cli", "keep.npz");
    std::fs::write(&out, b"precious").unwrap();
    let (m, c, o) = (
        missing.to_str().unwrap(),
        corrupt.to_str().unwrap(),
        out.to_str().unwrap(),
    );
    assert_clean_failure(
        &["flock", "run", "--backend", "cpu", "--init", m],
        "cannot open snapshot",
    );
    assert_clean_failure(
        &["flock", "run", "--backend", "cpu", "--init", c, "--save", o],
        "not a readable .npz",
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        b"precious",
        "a failed run kept the old output"
    );
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--n",
            "10",
            "--save",
            "/nonexistent-dir/x.npz",
        ],
        "does not exist",
    );
}

#[test]
fn save_init_round_trip_is_reproducible() {
    let a = support::tmp("cli", "a.npz");
    let b = support::tmp("cli", "b.npz");
    let c = support::tmp("cli", "c.npz");
    let args = |out: &PathBuf| {
        murmur(&[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--n",
            "3000",
            "--scale",
            "40",
            "--steps",
            "5",
            "--seed",
            "11",
            "--save",
            out.to_str().unwrap(),
        ])
    };
    assert!(args(&a).status.success());
    assert!(args(&b).status.success());
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "same seed, same bytes"
    );
    // Continuing from a snapshot: 5 + 5 steps from the file equals the state after 10 steps.
    let out = murmur_ok(&[
        "flock",
        "run",
        "--backend",
        "cpu",
        "--scale",
        "40",
        "--steps",
        "5",
        "--init",
        a.to_str().unwrap(),
        "--save",
        c.to_str().unwrap(),
    ]);
    let ten = support::tmp("cli", "ten.npz");
    assert!(murmur(&[
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "3000",
        "--scale",
        "40",
        "--steps",
        "10",
        "--seed",
        "11",
        "--save",
        ten.to_str().unwrap(),
    ])
    .status
    .success());
    // Not bit-equal: `coherent` keeps boids in cell order between steps, and a restart from the
    // id-ordered snapshot changes the order of equal-cell boids, hence the summation order.
    let (c, ten) = (snapshot::load(&c).unwrap(), snapshot::load(&ten).unwrap());
    let (dp, dv) = c.max_difference(&ten);
    assert!(dp < 1e-4 && dv < 1e-5, "restart drift: pos {dp}, vel {dv}");
    let summary = String::from_utf8_lossy(&out.stdout);
    assert!(summary.contains("5 steps of 3000 boids"), "{summary}");
    assert!(summary.contains("boid-steps/s"), "{summary}");
    // A snapshot outside the domain is refused with a hint.
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--scale",
            "10",
            "--init",
            a.to_str().unwrap(),
        ],
        "outside",
    );
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--n",
            "7",
            "--scale",
            "40",
            "--init",
            a.to_str().unwrap(),
        ],
        "disagrees",
    );
}

#[test]
fn no_gpu_falls_back_to_cpu_and_says_so() {
    let out = murmur(&["flock", "run", "--n", "200", "--steps", "2"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stdout.contains("cuda (") {
        eprintln!("a GPU is present: the auto backend picked CUDA");
    } else {
        assert!(stderr.contains("running on the CPU backend"), "{stderr}");
    }
}

#[test]
fn bench_replot_redraws_from_steps_csv_and_rejects_other_files() {
    let csv = support::tmp("cli", "steps.csv");
    let mut text = String::from("n,scale,method,cell_width_factor,block_size,step,ms\n");
    for (n, ms) in [(100_000, 0.05), (1_000_000, 0.5)] {
        for b in [128, 256] {
            for step in 200..210 {
                text += &format!(
                    "{n},100,coherent,0.5,{b},{step},{}\n",
                    ms * (1.0 + step as f64 * 1e-3)
                );
            }
        }
    }
    std::fs::write(&csv, text).unwrap();
    let out_dir = support::tmp("cli", "replot");
    murmur_ok(&[
        "flock",
        "bench",
        "--replot",
        csv.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    for png in ["ms_per_step.png", "block_size.png"] {
        let bytes = std::fs::read(out_dir.join(png)).unwrap();
        assert_eq!(&bytes[1..4], b"PNG", "{png} is a PNG");
    }
    let bad = support::tmp("cli", "bad.csv");
    std::fs::write(
        &bad,
        "n,scale,method,cell_width_factor,block_size,step,ms\n1,100,nope,1,128,0,1\n",
    )
    .unwrap();
    assert_clean_failure(
        &[
            "flock",
            "bench",
            "--replot",
            bad.to_str().unwrap(),
            "--out",
            out_dir.to_str().unwrap(),
        ],
        "unknown method",
    );
    assert_clean_failure(
        &["flock", "bench", "--replot", "/nonexistent/steps.csv"],
        "cannot read",
    );
}

#[test]
fn bench_sweeps_scales_and_records_gpu_and_wall_time_per_step() {
    let out_dir = support::tmp("cli", "bench-scales");
    let out = murmur_ok(&[
        "flock",
        "bench",
        "--backend",
        "cpu",
        "--sizes",
        "300,600",
        "--scales",
        "10,20",
        "--factors",
        "1",
        "--x-splits",
        "1,4",
        "--warmup",
        "1",
        "--steps",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(out_dir.join("steps.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("n,scale,method,cell_width_factor,x_split,block_size,step,ms,wall_ms")
    );
    let rows: Vec<Vec<f64>> = lines
        .map(|l| {
            l.split(',')
                .enumerate()
                .filter(|(i, _)| *i != 2)
                .map(|(_, v)| v.parse().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        rows.len(),
        2 * 2 * 2 * 3,
        "2 sizes x 2 scales x 2 x-splits x 3 steps"
    );
    for (n, scale) in [(300.0, 10.0), (300.0, 20.0), (600.0, 10.0), (600.0, 20.0)] {
        for x_split in [1.0, 4.0] {
            let steps: Vec<_> = rows
                .iter()
                .filter(|r| r[0] == n && r[1] == scale && r[3] == x_split)
                .collect();
            assert_eq!(steps.len(), 3, "N={n} scale={scale} x-split {x_split}");
            assert_eq!(
                steps.iter().map(|r| r[5]).collect::<Vec<_>>(),
                [1.0, 2.0, 3.0]
            );
            assert!(steps.iter().all(|r| r[6] > 0.0 && r[7] > 0.0));
        }
    }
    let summary = String::from_utf8_lossy(&out.stdout);
    assert_eq!(summary.matches("| coherent |").count(), 8, "{summary}");
    assert!(
        summary.contains("wall time of the step (CPU backend)") && !summary.contains("CUDA"),
        "the CPU header describes the CPU's timing: {summary}"
    );
    // The file replots: the current header reads back.
    let replot_dir = support::tmp("cli", "bench-scales-replot");
    murmur_ok(&[
        "flock",
        "bench",
        "--replot",
        out_dir.join("steps.csv").to_str().unwrap(),
        "--out",
        replot_dir.to_str().unwrap(),
    ]);
    assert!(replot_dir.join("ms_per_step.png").is_file());
    assert_clean_failure(
        &[
            "flock",
            "bench",
            "--backend",
            "cpu",
            "--sizes",
            "300",
            "--scales=-1",
            "--out",
            out_dir.to_str().unwrap(),
        ],
        "scale must not be negative",
    );
}

#[test]
fn runout_the_gpu_timer_reports_wall_time_only() {
    let out = murmur_ok(&[
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "300",
        "--steps",
        "2",
        "--no-gpu-timer",
        "--quiet",
    ]);
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(
        s.contains("2 steps of 300 boids") && s.contains("ms/step wall"),
        "{s}"
    );
    assert!(!s.contains("CUDA events"), "{s}");
}

/// The available memory is set ([`AVAILABLE_MEMORY_ENV`]), so the refusal and the acceptance
/// hold whatever the machine has.
#[test]
fn a_flock_larger_than_memory_is_refused_before_allocating() {
    let n: u64 = 2_000_000_000;
    let available = murmur::internals::flock::cpu_host_bytes(n, 0) - 1;
    let run =
        |args: &[&str], bytes: &str| support::murmur_env(args, &[(AVAILABLE_MEMORY_ENV, bytes)]);
    let (ok, stdout, err) = run(
        &["flock", "run", "--backend", "cpu", "--n", "2000000000"],
        &available.to_string(),
    );
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("not enough memory for the CPU flock of 2000000000 boids")
            && err.contains("bytes), ")
            && err.contains(&format!("({available} bytes) are available")),
        "{err}"
    );

    // A small flock fits a small budget, and not one of a kilobyte.
    let small = [
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "300",
        "--steps",
        "2",
        "--quiet",
    ];
    let (ok, stdout, err) = run(&small, "100000000");
    assert!(
        ok && stdout.contains("2 steps of 300 boids"),
        "{stdout}\n{err}"
    );
    let (ok, _, err) = run(&small, "1000");
    assert!(!ok, "{err}");
    assert!(
        err.contains("not enough memory for the CPU flock of 300 boids")
            && err.contains("(1000 bytes) are available"),
        "{err}"
    );
    let (ok, _, err) = run(&small, "lots");
    assert!(!ok, "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{AVAILABLE_MEMORY_ENV} must be a number of bytes, got `lots`"
        )),
        "{err}"
    );
}

/// Every writing command refuses an unwritable path before it runs a step: nothing on stdout
/// (the summaries come after the steps), one line on stderr.
#[test]
fn output_paths_are_checked_before_any_step() {
    let dir = support::tmp("cli", "outputs");
    std::fs::create_dir_all(&dir).unwrap();
    let file = support::tmp("cli", "outputs/plain-file");
    std::fs::write(&file, b"x").unwrap();
    let (d, f) = (dir.to_str().unwrap(), file.to_str().unwrap());
    // A folder with a snapshot's name: --save takes only names ending in .npz.
    let npz_dir = support::tmp("cli", "outputs/folder.npz");
    std::fs::create_dir_all(&npz_dir).unwrap();
    let nd = npz_dir.to_str().unwrap();
    let missing = support::tmp("cli", "no-such-folder/x.npz");
    let missing = missing.to_str().unwrap();
    let run = [
        "flock",
        "run",
        "--backend",
        "cpu",
        "--n",
        "1000",
        "--steps",
        "100000",
    ];
    let render = [
        "flock",
        "render",
        "--backend",
        "cpu",
        "--n",
        "1000",
        "--frames",
        "100",
    ];
    let bench = [
        "flock",
        "bench",
        "--backend",
        "cpu",
        "--sizes",
        "1000",
        "--steps",
        "100000",
    ];
    let cases: [(Vec<&str>, &str); 6] = [
        (
            [&run[..], &["--save", nd]].concat(),
            "is a folder, not a file",
        ),
        ([&run[..], &["--save", missing]].concat(), "does not exist"),
        (
            [&render[..], &["--out", f]].concat(),
            "is a file, not a folder",
        ),
        (
            [&render[..], &["--out", d, "--gif", d]].concat(),
            "is a folder, not a file",
        ),
        (
            [&bench[..], &["--out", f]].concat(),
            "is a file, not a folder",
        ),
        (
            vec!["flock", "bench", "--replot", "/nonexistent.csv", "--out", f],
            "cannot read",
        ),
    ];
    for (v, expect) in cases {
        let out = murmur(&v);
        assert!(out.stdout.is_empty(), "{v:?} ran: {:?}", out.stdout);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{v:?} succeeded");
        assert!(
            err.contains(expect),
            "{v:?}: expected {expect:?} in {err:?}"
        );
        assert_eq!(err.trim_end().lines().count(), 1, "{v:?}: {err}");
    }
}

/// What NumPy users write: `np.savez_compressed`, float64 positions and velocities, int64 ids.
#[test]
fn snapshots_from_numpy_compressed_float64_int64() {
    use ndarray::{Array1, Array2};
    use ndarray_npy::WriteNpyExt;
    use std::io::Write;
    let n = 500usize;
    let pos = Array2::from_shape_fn((n, 3), |(i, a)| ((i * 7 + a * 13) % 50) as f64 - 25.0);
    let vel = Array2::from_shape_fn((n, 3), |(i, a)| ((i + a) % 5) as f64 * 0.1);
    let id = Array1::from_shape_fn(n, |i| ((i * 7) % n) as i64);
    let npy = |write: &dyn Fn(&mut Vec<u8>)| {
        let mut v = Vec::new();
        write(&mut v);
        v
    };
    let files = [
        ("pos.npy", npy(&|v| pos.write_npy(v).unwrap())),
        ("vel.npy", npy(&|v| vel.write_npy(v).unwrap())),
        ("id.npy", npy(&|v| id.write_npy(v).unwrap())),
    ];
    let path = support::tmp("cli", "numpy-compressed.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in &files {
        zip.start_file(*name, deflated).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
    let saved = support::tmp("cli", "numpy-compressed-out.npz");
    let out = murmur_ok(&[
        "flock",
        "run",
        "--backend",
        "cpu",
        "--scale",
        "30",
        "--steps",
        "0",
        "--init",
        path.to_str().unwrap(),
        "--save",
        saved.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("pos is float64: converted to float32"),
        "{err}"
    );
    assert!(
        err.contains("vel is float64: converted to float32"),
        "{err}"
    );
    let back = snapshot::load(&saved).unwrap();
    assert_eq!(back.len(), n);
    // Saved by id: boid id[k] is row k of the input.
    for k in [0, 1, 123, n - 1] {
        let i = id[k] as usize;
        assert_eq!(
            back.pos[i].to_array(),
            [0, 1, 2].map(|a| pos[(k, a)] as f32)
        );
    }
    // A dtype that is not a number of either width gets one line naming it.
    let bad = support::tmp("cli", "bool-pos.npz");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&bad).unwrap());
    let flags = Array2::from_elem((n, 3), true);
    for (name, bytes) in [
        ("pos.npy", npy(&|v| flags.write_npy(v).unwrap())),
        ("vel.npy", files[1].1.clone()),
        ("id.npy", files[2].1.clone()),
    ] {
        zip.start_file(name, deflated).unwrap();
        zip.write_all(&bytes).unwrap();
    }
    zip.finish().unwrap();
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--init",
            bad.to_str().unwrap(),
        ],
        "pos must be float32 (got",
    );
}

#[test]
fn messages_name_the_real_cause() {
    // A scale far too large for any grid: the fix is named, numbers stay short.
    let out = murmur(&["flock", "run", "--backend", "cpu", "--scale", "1e30"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("the grid at scale 1.00e30"), "{err}");
    assert!(err.contains("--scale 3225 or less"), "{err}");
    assert!(
        !err.contains("smaller --x-split"),
        "x-split 1 would not fit either: {err}"
    );
    assert!(!err.contains("0000000000"), "a long number: {err}");
    // Where the x-split is the cause, it is named.
    assert_clean_failure(
        &[
            "flock",
            "run",
            "--backend",
            "cpu",
            "--scale",
            "2500",
            "--x-split",
            "4",
        ],
        "use a smaller --x-split",
    );
    // `flock check` without a GPU: the reason, not a table header.
    let out = murmur(&["flock", "check", "--sizes", "1000", "--sort-max", "1000"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        support::skip_note("a GPU is present: flock check ran");
    } else {
        assert!(stdout.is_empty(), "{stdout}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("needs a CUDA GPU"), "{err}");
    }
    // The flock help lists every flock command.
    let help = murmur_ok(&["flock", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for cmd in ["run", "view", "render", "bench", "check", "sort-bench"] {
        assert!(
            help.lines().any(|l| l.trim_start().starts_with(cmd)),
            "{cmd} missing from {help}"
        );
    }
}

#[test]
fn a_cpu_bench_past_an_hour_asks_for_yes() {
    let out = murmur(&[
        "flock",
        "bench",
        "--backend",
        "cpu",
        "--sizes",
        "1000000,5000000",
        "--steps",
        "3000",
        "--out",
        support::tmp("cli", "bench-long").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && out.stdout.is_empty(), "{err}");
    assert!(err.contains("pass --yes to run it"), "{err}");
    assert!(err.contains(" h on "), "the estimate in hours: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
}

#[test]
fn render_writes_frames_and_the_gif_only_when_asked() {
    let dir = support::tmp("cli", "render-quiet");
    let gif = support::tmp("cli", "render-quiet.gif");
    let args = |extra: &[&str]| {
        let mut v = vec![
            "flock",
            "render",
            "--backend",
            "cpu",
            "--n",
            "500",
            "--frames",
            "2",
            "--width",
            "64",
            "--height",
            "48",
            "--quiet",
            "--out",
            dir.to_str().unwrap(),
        ];
        v.extend_from_slice(extra);
        murmur_ok(&v)
    };
    let out = args(&[]);
    assert!(dir.join("frame_00001.png").is_file());
    assert!(!String::from_utf8_lossy(&out.stdout).contains(".gif"));
    let out = args(&["--gif", gif.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("wrote {}", gif.display())),
        "{stdout}"
    );
    assert_eq!(&std::fs::read(&gif).unwrap()[..3], b"GIF");
}

#[test]
fn the_grid_follows_the_density_unless_given() {
    let run = |extra: &[&str]| {
        let mut v = vec![
            "flock",
            "run",
            "--backend",
            "cpu",
            "--steps",
            "1",
            "--quiet",
        ];
        v.extend_from_slice(extra);
        String::from_utf8_lossy(&murmur_ok(&v).stdout).into_owned()
    };
    // 1000 boids in [-10, 10]^3: the density of 1M boids at scale 100.
    let s = run(&["--n", "1000", "--scale", "10"]);
    assert!(
        s.contains("cell width factor 1, x-split 8, picked for the density"),
        "{s}"
    );
    // The density of 5M boids at scale 100.
    let s = run(&["--n", "5000", "--scale", "10"]);
    assert!(
        s.contains("cell width factor 0.5, x-split 8, picked"),
        "{s}"
    );
    // Sparse: the default grid.
    let s = run(&["--n", "1000", "--scale", "100"]);
    assert!(s.contains("cell width factor 1, x-split 4, picked"), "{s}");
    // Given by a flag or by a config file that sets it: kept, and no note.
    let s = run(&["--n", "1000", "--scale", "10", "--x-split", "2"]);
    assert!(s.contains("x-split 2") && !s.contains("picked"), "{s}");
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/flock/default.toml");
    let s = run(&[
        "--n",
        "1000",
        "--scale",
        "10",
        "--config",
        config.to_str().unwrap(),
    ]);
    assert!(s.contains("x-split 4") && !s.contains("picked"), "{s}");
}
