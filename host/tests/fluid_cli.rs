//! `murmur fluid` from the outside: a scene run writing a file, bad input as one-line errors.

mod support;

use std::path::Path;

use support::murmur_text as murmur;

#[test]
fn run_writes_a_vti_and_reports() {
    let dir = support::tmp("fluid-cli", "");
    let out = dir.join("p.vti");
    let (ok, stdout, stderr) = murmur(&[
        "fluid",
        "run",
        "assets/fluid/poiseuille.toml",
        "--backend",
        "cpu",
        "--steps",
        "200",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.contains("scene poiseuille"), "{stdout}");
    assert!(stdout.contains("MLUPs/s"), "{stdout}");
    assert!(std::fs::metadata(&out).unwrap().len() > 100);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_input_gives_one_line_errors() {
    let (ok, _, err) = murmur(&["fluid", "run", "no/such/scene.toml"]);
    assert!(!ok);
    assert!(err.starts_with("murmur: error: cannot read scene"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let dir = support::tmp("fluid-bad", "");
    let scene = dir.join("unstable.toml");
    std::fs::write(
        &scene,
        "name = \"u\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 1e-9\n\
         [lattice]\nresolution = 16\n[domain]\ncells = [16, 16, 1]\n",
    )
    .unwrap();
    let (ok, _, err) = murmur(&["fluid", "run", scene.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!ok);
    assert!(err.contains("tau") && err.contains("<= 0.5"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    let (ok, _, err) = murmur(&[
        "fluid",
        "run",
        "assets/fluid/poiseuille.toml",
        "--out",
        "x.txt",
    ]);
    assert!(!ok);
    assert!(err.contains(".vti or .npz"), "{err}");

    std::fs::remove_dir_all(&dir).unwrap();
}

/// A periodic cube of `n^3` cells.
fn cube_scene(n: u32) -> String {
    format!(
        "name = \"cube\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.001\n\
         [lattice]\nresolution = {n}\n[domain]\ncells = [{n}, {n}, {n}]\n[faces]\n\
         x_min = {{ type = \"periodic\" }}\nx_max = {{ type = \"periodic\" }}\n\
         y_min = {{ type = \"periodic\" }}\ny_max = {{ type = \"periodic\" }}\n\
         z_min = {{ type = \"periodic\" }}\nz_max = {{ type = \"periodic\" }}\n"
    )
}

/// The available memory is set (`MURMUR_AVAILABLE_MEMORY`), so the refusal and the acceptance
/// hold whatever the machine has: a lattice fits exactly the bytes it needs, not one less.
#[test]
fn a_lattice_larger_than_memory_is_refused_before_allocating() {
    let dir = support::tmp("fluid-mem", "");
    // One copy of the populations (in-place streaming), the cell byte, an outlet velocity per
    // cell and the setup's 2 bytes: 123 bytes per cell in FP32.
    let needed = |n: u64| n.pow(3) * (27 * 4 + 1 + 12 + 2);
    let env = murmur::internals::preflight::AVAILABLE_MEMORY_ENV;
    let run = |n: u32, available: u64, extra: &[&str]| {
        let scene = dir.join(format!("cube{n}.toml"));
        std::fs::write(&scene, cube_scene(n)).unwrap();
        let mut args = vec!["fluid", "run", scene.to_str().unwrap(), "--backend", "cpu"];
        args.extend_from_slice(extra);
        support::murmur_env(&args, &[(env, &available.to_string())])
    };
    let (ok, stdout, err) = run(1000, needed(1000) - 1, &[]);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("not enough memory for the CPU lattice of 1000 x 1000 x 1000 cells")
            && err.contains(&format!("({} bytes)", needed(1000)))
            && err.contains(&format!("({} bytes) are available", needed(1000) - 1)),
        "{err}"
    );

    // The run itself: two copies of the populations (pull streaming), the cell byte and an
    // outlet velocity per cell, 229 bytes per cell.
    let run_needs = 16u64.pow(3) * (2 * 27 * 4 + 1 + 12);
    let (ok, stdout, err) = run(16, run_needs, &["--steps", "1", "--quiet"]);
    assert!(ok && stdout.contains("scene cube"), "{stdout}\n{err}");
    let (ok, stdout, err) = run(16, run_needs - 1, &["--steps", "1", "--quiet"]);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(
        err.contains("not enough memory for the CPU lattice of 16 x 16 x 16 cells")
            && err.contains(&format!("({run_needs} bytes)")),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn zero_steps_write_the_initial_state_and_output_every_zero_is_refused() {
    let dir = support::tmp("fluid-zero", "");
    let out = dir.join("start.vti");
    let (ok, stdout, err) = murmur(&[
        "fluid",
        "run",
        "assets/fluid/poiseuille.toml",
        "--backend",
        "cpu",
        "--steps",
        "0",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains(&format!("wrote {}", out.display())),
        "{stdout}"
    );
    assert!(std::fs::metadata(&out).unwrap().len() > 100);

    let scene = dir.join("every0.toml");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid/poiseuille.toml"),
    )
    .unwrap();
    std::fs::write(&scene, text.replace("[run]", "[run]\noutput_every = 0")).unwrap();
    let (ok, _, err) = murmur(&["fluid", "run", scene.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!ok);
    assert!(err.contains("run.output_every must be at least 1"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn output_paths_are_checked_before_any_step() {
    let dir = support::tmp("fluid-out", "");
    let file = dir.join("plain");
    std::fs::write(&file, b"x").unwrap();
    let missing = dir.join("no-such-folder/p.vti");
    for (out, expect) in [
        (missing.to_str().unwrap(), "does not exist"),
        (file.to_str().unwrap(), "is a file, not a folder"),
    ] {
        let (ok, stdout, err) = murmur(&[
            "fluid",
            "run",
            "assets/fluid/poiseuille.toml",
            "--backend",
            "cpu",
            "--steps",
            "100000000",
            "--out",
            out,
        ]);
        assert!(!ok && stdout.is_empty(), "{out}: {stdout}");
        assert!(err.contains(expect), "{out}: expected {expect:?} in {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A small valid scene: a 2 x 1 x 1 m channel (32 x 16 x 16 cells) with an inlet at -x and an
/// outlet at +x, plus `extra` (faces and solids).
fn channel_scene(dir: &Path, file: &str, faces: &str, extra: &str) -> String {
    let path = dir.join(file);
    std::fs::write(
        &path,
        format!(
            "name = \"t\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.05\n\
             [lattice]\nresolution = 16\n[domain]\nsize = [2.0, 1.0, 1.0]\n[faces]\n\
             x_min = {{ type = \"inlet\" }}\nx_max = {{ type = \"outlet\" }}\n{faces}\n{extra}"
        ),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

fn sphere(position: &str, more: &str) -> String {
    format!(
        "[[solids]]\nshape = {{ type = \"sphere\", radius = 0.2 }}\nposition = {position}\n{more}\n"
    )
}

#[test]
fn a_scene_with_an_immersed_solid_runs_and_reports_its_samples() {
    let dir = support::tmp("fluid-solid", "");
    let scene = channel_scene(
        &dir,
        "ok.toml",
        "y_min = { type = \"free-slip\" }\ny_max = { type = \"free-slip\" }",
        &sphere("[0.6, 0.5, 0.5]", "spacing = 0.7"),
    );
    // The inlet ramps up: an impulsive start would trip the health check at the inlet corner.
    let text = std::fs::read_to_string(&scene).unwrap();
    let ramped = "x_min = { type = \"inlet\", ramp = 0.5 }";
    std::fs::write(&scene, text.replace("x_min = { type = \"inlet\" }", ramped)).unwrap();
    let (ok, stdout, err) = murmur(&[
        "fluid",
        "run",
        &scene,
        "--backend",
        "cpu",
        "--steps",
        "5",
        "--quiet",
    ]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains("solid sphere: ") && stdout.contains("surface samples"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scene_errors_are_one_line_and_come_before_any_step() {
    let dir = support::tmp("fluid-scene-bad", "");
    let cases: Vec<(&str, String, String, &str)> = vec![
        (
            "typo.toml",
            String::new(),
            "[[solids]]\nshape = { type = \"sphere\", raduis = 0.2 }\nposition = [1, 0.5, 0.5]"
                .into(),
            "unknown field `raduis`",
        ),
        (
            "typo-top.toml",
            String::new(),
            "[run]\nstesp = 3".into(),
            "at run.stesp",
        ),
        (
            "one-periodic.toml",
            "y_min = { type = \"periodic\" }".into(),
            String::new(),
            "faces.y_min is periodic but faces.y_max is not",
        ),
        (
            "outside.toml",
            String::new(),
            sphere("[5.0, 0.5, 0.5]", ""),
            "outside the domain",
        ),
        (
            "inlet.toml",
            String::new(),
            sphere("[0.1, 0.5, 0.5]", ""),
            "reaches into an inlet at faces.x_min",
        ),
        (
            "outlet.toml",
            String::new(),
            sphere(
                "[1.7, 0.5, 0.5]",
                "motion = { type = \"oscillate\", amplitude = [0.2, 0, 0], frequency = 0.1 }",
            ),
            "reaches into an outlet at faces.x_max",
        ),
        (
            "samples.toml",
            String::new(),
            sphere("[1.0, 0.5, 0.5]", "spacing = 0.001"),
            "over the limit of 4194304 samples per scene",
        ),
        (
            "fast.toml",
            String::new(),
            sphere(
                "[1.0, 0.5, 0.5]",
                "motion = { type = \"rotate\", axis = [0, 0, 1], rate = 100.0 }",
            ),
            "lattice Mach",
        ),
        (
            "nine.toml",
            String::new(),
            (0..9)
                .map(|i| sphere(&format!("[{}, 0.5, 0.5]", 0.5 + 0.1 * i as f64), ""))
                .collect(),
            "9 solids, at most 8",
        ),
        (
            "missing-mesh.toml",
            String::new(),
            "[[solids]]\nshape = { type = \"mesh\", file = \"no-such-mesh.obj\" }\n\
             position = [1, 0.5, 0.5]\nreference_area = 0.1"
                .into(),
            "no-such-mesh.obj",
        ),
        (
            "empty-mesh.toml",
            String::new(),
            "[[solids]]\nshape = { type = \"mesh\", file = \"empty.stl\" }\n\
             position = [1, 0.5, 0.5]\nreference_area = 0.1"
                .into(),
            "empty.stl",
        ),
        (
            "open.toml",
            String::new(),
            "[[solids]]\nshape = { type = \"cylinder\", radius = 0.2, length = 0.5, caps = false }\n\
             position = [1, 0.5, 0.5]\n\
             motion = { type = \"oscillate\", amplitude = [0, 0.1, 0], frequency = 0.05 }"
                .into(),
            "not closed",
        ),
        (
            "profile.toml",
            "x_min = { type = \"inlet\", profile = \"dfg-3d\" }\nz_min = { type = \"periodic\" }\n\
             z_max = { type = \"periodic\" }"
                .into(),
            String::new(),
            "dfg-3d profile needs walls on both axes",
        ),
        (
            "backwards.toml",
            "x_max = { type = \"inlet\", velocity = [1.0, 0, 0] }".into(),
            String::new(),
            "must point into the domain (-x here)",
        ),
    ];
    std::fs::write(dir.join("empty.stl"), b"").unwrap();
    for (file, faces, extra, expect) in cases {
        // A face given twice is a TOML error, so replace the base's x faces when a case sets one.
        let path = if faces.contains("x_min") || faces.contains("x_max") {
            let path = dir.join(file);
            let base = channel_scene(&dir, file, "", &extra);
            let text = std::fs::read_to_string(&base).unwrap();
            let mut text = text.replace(
                if faces.contains("x_min") {
                    "x_min = { type = \"inlet\" }\n"
                } else {
                    "x_max = { type = \"outlet\" }\n"
                },
                "",
            );
            text = text.replace("[faces]\n", &format!("[faces]\n{faces}\n"));
            std::fs::write(&path, text).unwrap();
            path.to_str().unwrap().to_string()
        } else {
            channel_scene(&dir, file, &faces, &extra)
        };
        support::assert_one_line_failure(
            &[
                "fluid",
                "run",
                &path,
                "--backend",
                "cpu",
                "--steps",
                "100000000",
            ],
            expect,
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn ib_bench_times_every_method_on_the_cpu() {
    let dir = support::tmp("fluid-ib-bench", "");
    let scene = dir.join("small.toml");
    std::fs::write(
        &scene,
        r#"
name = "small-ib"
collision = "bgk"
[physical]
length = 0.1
velocity = 1.0
viscosity = 5e-3
[lattice]
resolution = 8
[domain]
cells = [24, 16, 16]
[faces]
x_min = { type = "inlet", ramp = 0.01 }
x_max = { type = "outlet" }
[[solids]]
shape = { type = "sphere", radius = 0.03 }
position = [0.1, 0.1, 0.1]
motion = { type = "rotate", axis = [0, 0, 1], rate = 1.0 }
[immersed]
spread = "gather"
"#,
    )
    .unwrap();
    let (ok, stdout, stderr) = murmur(&[
        "fluid",
        "ib-bench",
        scene.to_str().unwrap(),
        "--backend",
        "cpu",
        "--steps",
        "3",
        "--warmup",
        "1",
        "--block",
        "2",
        "4",
    ]);
    assert!(ok, "{stdout}\n{stderr}");
    for row in [
        "| scatter |",
        "| binned |",
        "| gather |",
        "| blocks | 2 |",
        "| blocks | 4 |",
        "| no solids |",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    assert!(stdout.contains("ib_gather"), "{stdout}");
    assert!(
        !stdout.contains("| NO |"),
        "forces differ between methods: {stdout}"
    );
    // The band's fill: `scatter, last step: band: U of C slots (P %): N cells in claimed
    // bricks, R reached by a stencil (Q %)`, the reached cells within the claimed bricks' cells.
    let band = stdout
        .lines()
        .find_map(|l| l.strip_prefix("scatter, last step: band: "))
        .unwrap_or_else(|| panic!("no band line: {stdout}"));
    let words: Vec<&str> = band.split_whitespace().collect();
    let (used, capacity) = (
        words[0].parse::<u64>().unwrap(),
        words[2].parse::<u64>().unwrap(),
    );
    let cells: u64 = words[6].parse().unwrap();
    let reached: u64 = words[11].parse().unwrap();
    assert!(0 < used && used <= capacity, "{band}");
    assert_eq!(cells, 64 * used, "{band}");
    assert!(0 < reached && reached < cells, "{band}");

    // Bad spreading choices are one-line errors.
    let text = std::fs::read_to_string(&scene).unwrap();
    for (bad, msg) in [
        ("spread = \"gather\"", "unknown variant `sideways`"),
        (
            "spread = \"gather\"\nblock = 0",
            "block side must be within",
        ),
        (
            "spread = \"gather\"\nblock = 4",
            "only used with spread = \"blocks\"",
        ),
        ("spread = \"gather\"\nsize = 4", "unknown field `size`"),
    ] {
        let replaced = if msg.starts_with("unknown variant") {
            text.replace("spread = \"gather\"", "spread = \"sideways\"")
        } else {
            text.replace("spread = \"gather\"", bad)
        };
        std::fs::write(&scene, replaced).unwrap();
        let (ok, _, err) = murmur(&[
            "fluid",
            "ib-bench",
            scene.to_str().unwrap(),
            "--backend",
            "cpu",
        ]);
        assert!(!ok);
        assert!(err.contains(msg), "{bad}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn boundary_bench_compares_a_scene_with_its_periodic_box() {
    let dir = support::tmp("fluid-boundary-bench", "");
    let scene = channel_scene(
        &dir,
        "walls.toml",
        "y_min = { type = \"free-slip\" }\ny_max = { type = \"wall\" }",
        &sphere("[0.5, 0.5, 0.5]", ""),
    );
    let args = [
        "fluid",
        "boundary-bench",
        &scene,
        "--backend",
        "cpu",
        "--steps",
        "2",
        "--warmup",
        "1",
        "--storage",
        "fp32,fp16s",
    ];
    let (ok, stdout, stderr) = murmur(&args);
    assert!(ok, "{stdout}\n{stderr}");
    for row in [
        "| fp32 | pull | periodic box |",
        "| fp32 | pull | scene, tail |",
        "| fp16s | pull | periodic box |",
        "| fp16s | pull | scene, tail |",
        "its 1 solid(s) left out",
        "% of the periodic box",
        "stream_collide",
    ] {
        assert!(stdout.contains(row), "{row}: {stdout}");
    }
    // One scene row per storage on the CPU, which has no boundary kernel to place.
    assert!(!stdout.contains("beside"), "{stdout}");

    // A scene without boundaries has nothing to compare.
    let periodic = dir.join("periodic.toml");
    std::fs::write(
        &periodic,
        "name = \"p\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.05\n\
         [lattice]\nresolution = 8\n[domain]\nsize = [1.0, 1.0, 1.0]\n[faces]\n\
         x_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }\n\
         y_min = { type = \"periodic\" }\ny_max = { type = \"periodic\" }\n\
         z_min = { type = \"periodic\" }\nz_max = { type = \"periodic\" }\n",
    )
    .unwrap();
    let (ok, _, err) = murmur(&[
        "fluid",
        "boundary-bench",
        periodic.to_str().unwrap(),
        "--backend",
        "cpu",
    ]);
    assert!(!ok);
    assert!(err.contains("no walls, inlets or outlets"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    let (ok, _, err) = murmur(&[
        "fluid",
        "boundary-bench",
        &scene,
        "--backend",
        "cpu",
        "--launches",
        "beside-0",
    ]);
    assert!(!ok);
    assert!(err.contains("expected serial, tail, beside"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A tiny channel with a fixed sphere: the tuner's smallest useful scene.
const TUNE_SCENE: &str = r#"
name = "tune-tiny"
collision = "bgk"
[physical]
length = 0.1
velocity = 0.2
viscosity = 5e-3
[lattice]
resolution = 8
[domain]
cells = [24, 16, 16]
[faces]
x_min = { type = "inlet", ramp = 0.05 }
x_max = { type = "outlet" }
[[solids]]
shape = { type = "sphere", radius = 0.03 }
position = [0.1, 0.1, 0.1]
"#;

#[test]
fn tune_writes_the_cache_and_run_uses_it() {
    let dir = support::tmp("fluid-tune", "");
    let scene = dir.join("tiny.toml");
    std::fs::write(&scene, TUNE_SCENE).unwrap();
    let scene = scene.to_str().unwrap();
    let cache = dir.join("cache").join("tuning.toml");
    let env = [("MURMUR_TUNING_CACHE", cache.to_str().unwrap())];
    let run = |extra: &[&str]| {
        let mut args = vec!["fluid", "run", scene, "--backend", "cpu", "--steps", "3"];
        args.extend_from_slice(extra);
        support::murmur_env(&args, &env)
    };

    // No cache yet: the device defaults, and a hint.
    let (ok, stdout, err) = run(&["--quiet"]);
    assert!(ok, "{err}");
    assert!(
        stdout.contains("tuning: device defaults for cpu (")
            && stdout.contains("; run murmur fluid tune "),
        "{stdout}"
    );

    let (ok, stdout, err) = support::murmur_env(
        &[
            "fluid",
            "tune",
            scene,
            "--backend",
            "cpu",
            "--time-cap",
            "5",
            "--quiet",
        ],
        &env,
    );
    assert!(ok, "{err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        stdout.contains("| group | layout | block | spread | ms/step | MLUPs/s | vs best |"),
        "{stdout}"
    );
    assert!(stdout.contains("1.00 (best)"), "{stdout}");
    assert!(
        stdout.contains("pruned: the CPU has no thread blocks"),
        "{stdout}"
    );
    assert!(stdout.contains("| spread | "), "{stdout}");
    assert!(
        stdout.contains("x the defaults") && stdout.contains("search "),
        "{stdout}"
    );
    let text = std::fs::read_to_string(&cache).unwrap();
    assert!(
        text.contains("device = \"cpu (rayon") && text.contains("spread = "),
        "{text}"
    );

    // The cache is used, and announced.
    let (ok, stdout, err) = run(&["--quiet"]);
    assert!(ok, "{err}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("tuning: "))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(
        line.starts_with("tuning: layout ") && line.contains("(from the cache, tuned 20"),
        "{line}"
    );
    // An explicit knob or --no-tuning leaves the cache alone, and says so.
    for (extra, says) in [
        (
            &["--layout", "soa"][..],
            "tuning: layout soa (--layout), block flat (device defaults for cpu)",
        ),
        (&["--no-tuning"][..], "the tuning cache is off: --no-tuning"),
    ] {
        let (ok, stdout, err) = run(extra);
        assert!(ok, "{err}");
        assert!(stdout.contains(says), "{extra:?}: {stdout}");
        assert!(!stdout.contains("from the cache"), "{extra:?}: {stdout}");
    }
    // Another model is another key.
    let (ok, stdout, err) = run(&["--model", "rm-mrt"]);
    assert!(ok, "{err}");
    assert!(stdout.contains("tuning: device defaults"), "{stdout}");

    // A corrupt cache: one warning line, the defaults, and tune replaces it.
    std::fs::write(&cache, "[[entry]\ndevice = ").unwrap();
    let (ok, stdout, err) = run(&["--quiet"]);
    assert!(ok, "{err}");
    assert!(stdout.contains("tuning: device defaults"), "{stdout}");
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("tuning cache")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].starts_with("murmur: warning: ignoring the tuning cache"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    let (ok, _, err) = support::murmur_env(
        &[
            "fluid",
            "tune",
            scene,
            "--backend",
            "cpu",
            "--time-cap",
            "1",
            "--steps",
            "2",
            "--quiet",
        ],
        &env,
    );
    assert!(ok, "{err}");
    let (ok, stdout, err) = run(&["--quiet"]);
    assert!(ok && stdout.contains("(from the cache"), "{stdout}\n{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn tune_refuses_bad_options_in_one_line() {
    support::assert_one_line_failure(
        &[
            "fluid",
            "tune",
            "assets/fluid/poiseuille.toml",
            "--time-cap",
            "0",
        ],
        "--time-cap must be a positive number",
    );
    support::assert_one_line_failure(
        &["fluid", "tune", "no/such/scene.toml", "--backend", "cpu"],
        "cannot read scene",
    );
}

/// `fluid convergence`: a ladder of one short rung prints its table row and says an order
/// needs two rungs; bad input is refused in one line.
#[test]
fn fluid_convergence_prints_a_rung_and_refuses_bad_input() {
    let (ok, stdout, stderr) = support::murmur_text(&[
        "fluid",
        "convergence",
        "dfg-2d-1",
        "--cells-per-d",
        "10",
        "--offsets",
        "1",
        "--seconds",
        "0.2",
        "--backend",
        "cpu",
    ]);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("reference C_D 5.57954"), "{stdout}");
    assert!(stdout.contains("| 10 | 0.05000 |"), "{stdout}");
    assert!(
        stdout.contains("observed order: needs two or more rungs"),
        "{stdout}"
    );
    for (args, what) in [
        (&["--cells-per-d", "2"][..], "--cells-per-d"),
        (&["--u-lb", "0.5"][..], "--u-lb"),
        (&["--seconds", "0"][..], "--seconds"),
    ] {
        let (ok, stdout, stderr) =
            support::murmur_text(&[&["fluid", "convergence", "dfg-2d-1"][..], args].concat());
        assert!(!ok, "{args:?}: {stdout}");
        assert!(
            stderr.contains(what) && stderr.trim().lines().count() == 1,
            "{stderr}"
        );
    }
}
