//! `gpu-test`: the `#[ignore]`d GPU tests (they need a CUDA GPU), built with the PTX embedded and
//! gathered into `dist/gpu/tests/` with a script that runs them, for the GPU machine (which has
//! no Rust); run in place with `--run` where this machine has a GPU.

use crate::{cargo, ptx, root, run};
use anyhow::{bail, Context, Result};
use std::process::Command;

/// The test targets holding GPU tests.
const GPU_TESTS: &[&str] = &[
    "gpu_parity",
    "fluid_gpu_parity",
    "fluid_health",
    "fluid_ib_spread",
    "gpu_half",
    "view_render",
    "fluid_view",
    "api",
    "flock_resume",
    "flock_checkpoint",
    "fluid_state",
    "fluid_checkpoint",
    "fluid_checkpoint_ranks",
    "fluid_graph",
    "coupling_gpu",
];

pub fn gpu_test(run_here: bool) -> Result<()> {
    let root = root();
    ptx::build_ptx(&ptx::BuildPtxArgs::default())?;
    let out = cargo()
        .current_dir(&root)
        .args([
            "test",
            "--release",
            "-p",
            "murmur",
            "--no-run",
            "--message-format=json",
        ])
        .args(GPU_TESTS.iter().flat_map(|t| ["--test", t]))
        .output()
        .context("building the GPU tests")?;
    if !out.status.success() {
        bail!(
            "building the GPU tests failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let dir = root.join("dist/gpu/tests");
    std::fs::create_dir_all(&dir)?;
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = GPU_TESTS
            .iter()
            .find(|t| line.contains(&format!("\"name\":\"{t}\"")))
        else {
            continue;
        };
        let Some(exe) = json_string(line, "executable") else {
            continue;
        };
        std::fs::copy(&exe, dir.join(name)).with_context(|| format!("copying {exe}"))?;
        found.push(*name);
    }
    if found.len() != GPU_TESTS.len() {
        bail!("found test binaries {found:?}, expected {GPU_TESTS:?}");
    }
    let script = dir.join("run.sh");
    std::fs::write(
        &script,
        format!(
            "#!/usr/bin/env bash\n# The GPU tests: every #[ignore]d test of {}; fails on any failure.\n\
             set -euo pipefail\ncd \"$(dirname \"$0\")\"\nfor t in {}; do\n  \
             echo \"== $t\"\n  ./$t --ignored --test-threads=1\ndone\n",
            GPU_TESTS.join(", "),
            GPU_TESTS.join(" ")
        ),
    )?;
    eprintln!(
        "GPU tests in {}: run `bash {}` on the GPU machine",
        dir.display(),
        script.display()
    );
    if run_here {
        run(Command::new("bash").arg(&script))?;
    }
    Ok(())
}

/// The value of `"key":"..."` in one line of cargo's JSON messages (paths without quotes).
fn json_string(line: &str, key: &str) -> Option<String> {
    let start = line.find(&format!("\"{key}\":\""))? + key.len() + 4;
    let end = start + line[start..].find('"')?;
    Some(line[start..end].replace("\\\\", "\\"))
}
