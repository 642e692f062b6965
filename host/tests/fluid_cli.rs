//! `murmur fluid` from the outside: a scene run writing a file, bad input as one-line errors.

use std::path::Path;
use std::process::Command;

fn murmur(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_murmur"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn run_writes_a_vti_and_reports() {
    let dir = std::env::temp_dir().join(format!("murmur-fluid-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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

    let dir = std::env::temp_dir().join(format!("murmur-fluid-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
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
