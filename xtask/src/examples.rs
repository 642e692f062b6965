//! The library's examples (`host/examples/`), run by `cargo xtask test` after the tests with
//! their CI sizes on the CPU backend: each must exit 0. About 5 s in all on 2 cores.

use crate::{cargo, run};
use anyhow::Result;
use std::path::Path;

/// Each example and its arguments (the defaults are the CI sizes; outputs go under
/// `target/examples-out/`).
const EXAMPLES: &[(&str, &[&str])] = &[
    ("flock_save", &["--out", "target/examples-out/flock.npz"]),
    ("fluid_in_code", &[]),
    ("rule_sweep", &[]),
    (
        "render_frames",
        &["--out", "target/examples-out/flock-frames"],
    ),
    (
        "render_frames",
        &["--fluid", "--out", "target/examples-out/fluid-frames"],
    ),
];

/// Runs every example in release from the workspace `root`; fails on the first non-zero exit.
pub fn run_examples(root: &Path) -> Result<()> {
    for (name, args) in EXAMPLES {
        run(cargo()
            .current_dir(root)
            .args(["run", "--release", "-p", "murmur", "--example", name, "--"])
            .args(["--backend", "cpu"])
            .args(*args))?;
    }
    Ok(())
}
