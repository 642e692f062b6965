//! `cargo xtask`: murmur's build tasks.
//!
//! - `build-ptx`: builds `kernels-gpu` for `nvptx64-nvidia-cuda` with the pinned nightly
//!   (installing it and its components when missing) and links the bitcode to PTX (`link.rs`).
//! - `test`: what CI runs: fmt check, clippy with warnings denied, build-ptx, all tests.
//! - `gpu-bundle`: release binaries + PTX + a check script in `dist/gpu/`, for one run on a GPU machine.
//! - `gpu-test`: the `#[ignore]`d GPU tests as binaries in `dist/gpu/tests/` (with `--run`: run here).

mod gpu_test;
mod link;
mod ptx;
include!("source_hash.rs");

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
#[command(name = "cargo xtask", about = "murmur build tasks")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build the Rust kernels to PTX (installs the pinned nightly and its components if missing).
    BuildPtx(ptx::BuildPtxArgs),
    /// Run everything CI runs: fmt check, build-ptx, clippy -D warnings (kernels included), all
    /// tests (the GPU tests are ignored: `gpu-test`).
    Test {
        /// Skip `build-ptx` (the GPU tests then report the missing PTX and skip).
        #[arg(long)]
        no_ptx: bool,
    },
    /// Build the GPU tests (ignored on CI) into `dist/gpu/tests/` with a script that runs them.
    GpuTest {
        /// Also run them here (this machine must have a CUDA GPU).
        #[arg(long)]
        run: bool,
    },
    /// Build release binaries + PTX + check scripts into `dist/gpu/` for a GPU machine.
    GpuBundle {
        /// GPU architecture of the PTX.
        #[arg(long, default_value = "sm_90")]
        arch: String,
    },
}

/// The workspace root (the parent of `xtask/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Runs a command, echoing it, and fails with its name when it exits non-zero.
pub fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("could not start {:?}", cmd.get_program()))?;
    if !status.success() {
        bail!("{:?} failed with {status}", cmd.get_program());
    }
    Ok(())
}

pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn test(no_ptx: bool) -> Result<()> {
    let root = root();
    run(cargo()
        .current_dir(&root)
        .args(["fmt", "--all", "--", "--check"]))?;
    run(cargo().current_dir(&root).args([
        "fmt",
        "--manifest-path",
        "kernels-gpu/Cargo.toml",
        "--",
        "--check",
    ]))?;
    if !no_ptx {
        ptx::build_ptx(&ptx::BuildPtxArgs::default())?;
        ptx::clippy_kernels()?;
    }
    run(cargo().current_dir(&root).args([
        "clippy",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    run(cargo().current_dir(&root).args(["test", "--workspace"]))?;
    Ok(())
}

fn main() -> Result<()> {
    // rustc calls us as the nvptx64 linker (see `ptx.rs`): act as the bitcode-to-PTX link step.
    if std::env::var_os(link::AS_LINKER_ENV).is_some() {
        return link::main(std::env::args().skip(1).collect());
    }
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::BuildPtx(args) => ptx::build_ptx(&args).map(|_| ()),
        Cmd::Test { no_ptx } => test(no_ptx),
        Cmd::GpuBundle { arch } => ptx::gpu_bundle(&arch),
        Cmd::GpuTest { run } => gpu_test::gpu_test(run),
    }
}
