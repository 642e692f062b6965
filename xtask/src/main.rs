//! `cargo xtask`: murmur's build tasks.
//!
//! - `build-ptx`: builds `kernels-gpu` for `nvptx64-nvidia-cuda` with the pinned nightly
//!   (installing it and its components when missing) and links the bitcode to PTX (`link.rs`).
//! - `run`: the PTX when it is missing or stale, then the release host, then `murmur ARGS` (the
//!   README's run command: the GPU on the first try); says at once what it builds.
//! - `test`: what CI runs: the one-build check (`features.rs`), fmt check, the PTX when it is
//!   missing or stale, clippy with warnings denied, all tests (release profile, sharing the
//!   binary's build), then every library example with its CI size (`examples.rs`).
//! - `gpu-bundle`: release binaries + PTX + a check script in `dist/gpu/`, for one run on a GPU machine.
//! - `gpu-test`: the `#[ignore]`d GPU tests as binaries in `dist/gpu/tests/` (with `--run`: run here).

mod examples;
mod features;
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
    /// Build what is missing (the PTX when it is missing, stale or for another architecture,
    /// GPU or not; then the release binary) and run `murmur ARGS`.
    ///
    /// Example: `cargo xtask run -- flock run --n 1000000`.
    Run(RunArgs),
    /// Run everything CI runs: the one-build check, fmt check, build-ptx (when the PTX is
    /// missing or stale), clippy -D warnings (kernels included), all tests (the GPU tests are
    /// ignored: `gpu-test`), the library's examples.
    Test {
        /// Skip the PTX and the kernels' clippy (the GPU tests then report the missing PTX and
        /// skip).
        #[arg(long)]
        no_ptx: bool,
        /// List every kernel when the PTX is built (otherwise: their count and a names hash).
        #[arg(long)]
        verbose: bool,
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

#[derive(clap::Args)]
struct RunArgs {
    /// GPU architecture of the PTX [default: the GPU's, from nvidia-smi, else sm_90].
    #[arg(long, value_name = "sm_XX")]
    arch: Option<String>,
    /// Build the CPU-only binary: skip the kernels' PTX (which is built otherwise, GPU or not,
    /// so the binary uses a GPU wherever it runs).
    #[arg(long)]
    no_ptx: bool,
    /// List every kernel when the PTX is built (otherwise: their count and a names hash).
    #[arg(long)]
    verbose: bool,
    /// Arguments of `murmur`, after `--`.
    #[arg(last = true, value_name = "ARGS")]
    args: Vec<String>,
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

fn test(no_ptx: bool, verbose: bool) -> Result<()> {
    let root = root();
    features::check_one_build()?;
    ptx::ensure_workspace_components()?;
    run(cargo()
        .current_dir(&root)
        .args(["fmt", "--all", "--", "--check"]))?;
    // From the workspace root, so under the workspace's toolchain (its rustfmt), not the nightly.
    run(cargo().current_dir(&root).args([
        "fmt",
        "--manifest-path",
        "kernels-gpu/Cargo.toml",
        "--",
        "--check",
    ]))?;
    if !no_ptx {
        // The architecture of a current PTX (the one `cargo xtask run` built) is kept: another
        // one would change the embedded PTX and relink the binary.
        let arch = ptx::current_arch(&root)?.unwrap_or_else(default_arch);
        ptx::build_ptx(&ptx::BuildPtxArgs {
            arch,
            force: false,
            verbose,
        })?;
        ptx::clippy_kernels()?;
    }
    // The release profile here too: build scripts and proc macros are built once for clippy and
    // the tests.
    run(cargo().current_dir(&root).args([
        "clippy",
        "--release",
        "--workspace",
        "--all-targets",
        "--",
        "-D",
        "warnings",
    ]))?;
    // The release profile, as `cargo xtask run` builds: the tests reuse every dependency the
    // binary was built with (and the binary itself) instead of building them again.
    run(cargo()
        .current_dir(&root)
        .args(["test", "--release", "--workspace"]))?;
    // The examples, built by the tests above, run with their CI sizes.
    examples::run_examples(&root)?;
    Ok(())
}

/// The NVIDIA driver's presence: the kernel module's `/proc` entry, or a device node.
fn nvidia_gpu_present() -> bool {
    Path::new("/proc/driver/nvidia/version").exists() || Path::new("/dev/nvidiactl").exists()
}

/// The first GPU's architecture (`sm_90` for compute capability 9.0), from nvidia-smi.
fn detect_arch() -> Option<String> {
    let out = Command::new("nvidia-smi")
        .args(["--query-gpu=compute_cap", "--format=csv,noheader"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (major, minor) = text.lines().next()?.trim().split_once('.')?;
    let (major, minor): (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    Some(format!("sm_{major}{minor}"))
}

/// The PTX's architecture where `--arch` names none: the GPU's, else sm_90.
fn default_arch() -> String {
    detect_arch().unwrap_or_else(|| "sm_90".into())
}

/// Minutes of the first build on the README's 2-core machine (no GPU), by step.
const FIRST_PTX_MIN: u32 = 2;
const FIRST_BINARY_MIN: u32 = 7;

/// Downloads every crate of the lockfile this machine builds, the tests' too, so that
/// `cargo xtask test` works offline after the first `cargo xtask run`; offline, says so and
/// goes on (the build then fails on the crates it lacks, naming them).
fn fetch_everything(root: &Path) {
    let host = capture_host().unwrap_or_else(|| "x86_64-unknown-linux-gnu".into());
    eprintln!("xtask: downloading the crates of the binary and of its tests (first build only)");
    if let Err(e) = run(cargo().current_dir(root).args(["fetch", "--target", &host])) {
        eprintln!("xtask: {e:#}: building with the crates at hand");
    }
}

/// The machine cargo builds for (`host:` of `cargo -vV`).
fn capture_host() -> Option<String> {
    let out = cargo().arg("-vV").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
}

/// `cargo xtask run`: the PTX (only when needed), the release host, then `murmur ARGS`.
fn run_murmur(a: &RunArgs) -> Result<()> {
    let root = root();
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    let exe = target.join("release/murmur");
    let binary = if exe.exists() {
        "the release binary (what changed)".to_string()
    } else {
        format!("the release binary (first build: ~{FIRST_BINARY_MIN} min on 2 cores)")
    };
    if a.no_ptx {
        eprintln!("xtask: --no-ptx: building {binary}, for the CPU backend only");
    } else {
        let arch = a.arch.clone().unwrap_or_else(default_arch);
        let tc = ptx::pinned_toolchain(&root)?;
        let outdated = ptx::ptx_outdated(&root, &ptx::ptx_out(&root), &arch)?;
        match &outdated {
            None => eprintln!("xtask: the PTX is current ({arch}); building {binary}"),
            Some(why) => {
                let install = if ptx::toolchain_ready(&tc) {
                    String::new()
                } else {
                    format!(
                        "; first build: installs {tc} with {}, ~{FIRST_PTX_MIN} min",
                        ptx::NIGHTLY_COMPONENTS.join(", ")
                    )
                };
                eprintln!(
                    "xtask: building the kernels' PTX for {arch} ({why}{install}), then {binary}"
                );
            }
        }
        if !nvidia_gpu_present() {
            eprintln!(
                "xtask: no NVIDIA GPU on this machine: the PTX is for {arch} anyway, so the \
                 binary uses a GPU wherever it runs (--no-ptx skips it)"
            );
        }
        // Everything `cargo xtask test` needs is installed now, while a build is expected.
        if let Err(e) = ptx::ensure_workspace_components() {
            eprintln!("xtask: {e:#} (`cargo xtask test` needs them)");
        }
        if outdated.is_none() {
            if let Err(e) = ptx::ensure_toolchain(&tc) {
                eprintln!("xtask: {e:#} (`cargo xtask test` needs it)");
            }
        } else if let Err(e) = ptx::build(&ptx::BuildPtxArgs {
            arch,
            force: false,
            verbose: a.verbose,
        }) {
            // Without the kernels the binary still runs (on the CPU, saying why).
            eprintln!(
                "xtask: the PTX could not be built ({e:#}): building murmur for the CPU backend \
                 only"
            );
        }
    }
    if !exe.exists() {
        fetch_everything(&root);
    }
    run(cargo()
        .current_dir(&root)
        .args(["build", "--release", "-p", "murmur"]))?;
    let mut cmd = Command::new(&exe);
    cmd.args(&a.args);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        let e = cmd.exec();
        Err(e).with_context(|| format!("could not start {}", exe.display()))
    }
    #[cfg(not(unix))]
    {
        let status = cmd
            .status()
            .with_context(|| format!("could not start {}", exe.display()))?;
        std::process::exit(status.code().unwrap_or(1));
    }
}

fn main() -> Result<()> {
    // rustc calls us as the nvptx64 linker (see `ptx.rs`): act as the bitcode-to-PTX link step.
    if std::env::var_os(link::AS_LINKER_ENV).is_some() {
        return link::main(std::env::args().skip(1).collect());
    }
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::BuildPtx(args) => ptx::build_ptx(&args).map(|_| ()),
        Cmd::Run(args) => run_murmur(&args),
        Cmd::Test { no_ptx, verbose } => test(no_ptx, verbose),
        Cmd::GpuBundle { arch } => ptx::gpu_bundle(&arch),
        Cmd::GpuTest { run } => gpu_test::gpu_test(run),
    }
}
