//! Helpers shared by the integration tests that run the `murmur` binary. Each test crate uses a
//! subset of them.
#![allow(dead_code)]

pub mod ib_scenes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the binary from the repository root (scene paths like `assets/fluid/...` resolve), with
/// no display (the viewer's tests expect none).
pub fn murmur(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_murmur"))
        .args(args)
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env_remove("DISPLAY")
        .output()
        .expect("the murmur binary runs")
}

/// [`murmur_text`] with extra environment variables.
pub fn murmur_env(args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_murmur"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join(".."))
        .env_remove("DISPLAY")
        .output()
        .expect("the murmur binary runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs the binary and asserts that it succeeded (its stderr as the message otherwise).
pub fn murmur_ok(args: &[&str]) -> Output {
    let out = murmur(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Whether it succeeded, its stdout and its stderr.
pub fn murmur_text(args: &[&str]) -> (bool, String, String) {
    let out = murmur(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A path `name` in this test process's own scratch folder `murmur-<tag>-<pid>` (created).
pub fn tmp(tag: &str, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("murmur-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Fails the test unless the command failed with a short message (at most `max_lines` lines)
/// containing `expect` (case-insensitive), and no panic.
pub fn assert_failure_lines(args: &[&str], expect: &str, max_lines: usize) {
    let out = murmur(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?} succeeded");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    assert!(
        err.to_lowercase().contains(&expect.to_lowercase()),
        "{args:?}: expected {expect:?} in {err:?}"
    );
    let lines = err.lines().filter(|l| !l.trim().is_empty()).count();
    assert!(
        lines <= max_lines,
        "{args:?}: {lines} lines of error: {err}"
    );
}

/// [`assert_failure_lines`] with at most 4 lines (clap's usage hint included).
pub fn assert_clean_failure(args: &[&str], expect: &str) {
    assert_failure_lines(args, expect, 4);
}

/// [`assert_failure_lines`] with exactly one line.
pub fn assert_one_line_failure(args: &[&str], expect: &str) {
    assert_failure_lines(args, expect, 1);
}

/// Prints a note past the test harness's output capture (which takes only the `print!`
/// macros), so CI logs show why part of a test did not apply.
pub fn skip_note(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The SHA-256 that checkpoint `ckpt`'s header lists for its array `name`.
pub fn array_sha(ckpt: &Path, name: &str) -> String {
    let r = murmur::internals::checkpoint::CheckpointReader::open(ckpt).unwrap();
    r.header().array(name).unwrap().sha256.clone()
}

/// Kinetic energy of a fluid (lattice units, per cell summed).
pub fn energy(b: &mut dyn murmur::internals::fluid::FluidBackend) -> f64 {
    let f = b.fields().unwrap();
    (0..f.n())
        .map(|c| {
            let u = f.u(c);
            0.5 * f.rho(c) as f64 * u.iter().map(|&v| (v as f64).powi(2)).sum::<f64>()
        })
        .sum()
}
