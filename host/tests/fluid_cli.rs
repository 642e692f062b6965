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
        "name = \"u\"\n[flow]\nkind = \"cavity\"\n[physical]\nlength = 1.0\nvelocity = 1.0\n\
         viscosity = 1e-9\n[lattice]\nresolution = 16\n",
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

#[test]
fn a_lattice_larger_than_memory_is_refused_before_allocating() {
    let dir = support::tmp("fluid-mem", "");
    let scene = dir.join("big.toml");
    std::fs::write(
        &scene,
        "name = \"big\"\n[flow]\nkind = \"taylor-green\"\ndepth_cells = 500\n[physical]\n\
         length = 1.0\nvelocity = 1.0\nviscosity = 0.001\n[lattice]\nresolution = 500\n",
    )
    .unwrap();
    let needed = 500u64.pow(3) * 250;
    match murmur::preflight::available_memory() {
        Some(available) if available < needed => {}
        other => {
            support::skip_note(&format!(
                "skipped: {needed} bytes would fit in this machine's memory ({other:?} available)"
            ));
            return;
        }
    }
    let (ok, stdout, err) = murmur(&["fluid", "run", scene.to_str().unwrap(), "--backend", "cpu"]);
    assert!(!ok && stdout.is_empty(), "{stdout}");
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("not enough memory for the CPU lattice of 500 x 500 x 500 cells")
            && err.contains("(31250000000 bytes)")
            && err.contains("bytes) are available"),
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
