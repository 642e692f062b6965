//! `build-ptx`: the pinned nightly, `-Zbuild-std=core`, our own link step, a stamped PTX file.

use crate::{link, root, run};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";
/// The machine the nightly's LLVM tools run on.
const HOST: &str = "x86_64-unknown-linux-gnu";

#[derive(clap::Args, Clone)]
pub struct BuildPtxArgs {
    /// GPU architecture (sm_90 for the H100/H200; sm_80 for A100, sm_89 for Ada...).
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
    /// Build even when the PTX is current (built from these kernel sources for this arch).
    #[arg(long)]
    pub force: bool,
    /// List every kernel of the PTX (otherwise: their count and a hash of their names).
    #[arg(long)]
    pub verbose: bool,
}

impl Default for BuildPtxArgs {
    fn default() -> Self {
        BuildPtxArgs {
            arch: "sm_90".into(),
            force: false,
            verbose: false,
        }
    }
}

/// The components of the pinned nightly: the kernels' build (`rust-src` for `-Zbuild-std=core`,
/// `llvm-tools` for the link step) and `cargo xtask test` (clippy on the kernels). rustfmt is
/// not among them: `cargo fmt --manifest-path kernels-gpu/Cargo.toml` runs from the workspace
/// root, under its toolchain.
pub const NIGHTLY_COMPONENTS: &[&str] = &["rust-src", "llvm-tools", "clippy"];
/// The components `cargo xtask test` needs of the workspace's own toolchain.
pub const WORKSPACE_COMPONENTS: &[&str] = &["rustfmt", "clippy"];

/// The channel named in `kernels-gpu/rust-toolchain.toml`.
pub fn pinned_toolchain(root: &Path) -> Result<String> {
    let text = std::fs::read_to_string(root.join("kernels-gpu/rust-toolchain.toml"))
        .context("reading kernels-gpu/rust-toolchain.toml")?;
    text.lines()
        .find_map(|l| {
            let l = l.trim();
            let v = l.strip_prefix("channel")?.trim().strip_prefix('=')?.trim();
            Some(v.trim_matches('"').to_string())
        })
        .context("kernels-gpu/rust-toolchain.toml names no channel")
}

fn capture(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("could not start {:?}", cmd.get_program()))?;
    if !out.status.success() {
        bail!("{:?}: {}", cmd, String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn rustup_run(tc: &str) -> Command {
    let mut c = Command::new("rustup");
    c.args(["run", tc]);
    // Whatever toolchain or flags the outer `cargo xtask` ran with must not leak into the build.
    for v in [
        "RUSTUP_TOOLCHAIN",
        "RUSTC",
        "RUSTC_WRAPPER",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "CARGO",
    ] {
        c.env_remove(v);
    }
    c
}

/// The sysroot of `tc` when it is installed with every one of [`NIGHTLY_COMPONENTS`].
fn ready_sysroot(tc: &str) -> Option<String> {
    let sysroot = capture(rustup_run(tc).args(["rustc", "--print", "sysroot"])).ok()?;
    let s = Path::new(&sysroot);
    let ready = s.join("lib/rustlib/src/rust/library/core").is_dir()
        && s.join(format!("lib/rustlib/{HOST}/bin/llc")).is_file()
        && s.join("bin/cargo-clippy").is_file();
    ready.then_some(sysroot)
}

/// Whether `tc` is installed with every one of [`NIGHTLY_COMPONENTS`].
pub fn toolchain_ready(tc: &str) -> bool {
    ready_sysroot(tc).is_some()
}

/// Installs the pinned nightly with [`NIGHTLY_COMPONENTS`] unless they are there already, in
/// one printed rustup call. Returns the folder holding `llvm-link`, `opt` and `llc`.
pub fn ensure_toolchain(tc: &str) -> Result<PathBuf> {
    let sysroot = match ready_sysroot(tc) {
        Some(s) => s,
        None => {
            let components = NIGHTLY_COMPONENTS.join(",");
            eprintln!(
                "xtask: installing the kernels' toolchain {tc} with {} (first build only: \
                 the kernels' build and `cargo xtask test` need them)",
                NIGHTLY_COMPONENTS.join(", ")
            );
            run(Command::new("rustup").args([
                "toolchain",
                "install",
                tc,
                "--profile",
                "minimal",
                "--component",
                &components,
            ]))?;
            ready_sysroot(tc).with_context(|| {
                format!("{tc} still lacks one of {components} after installing them")
            })?
        }
    };
    let host = capture(rustup_run(tc).args(["rustc", "--print", "host-tuple"]))
        .unwrap_or_else(|_| HOST.to_string());
    Ok(Path::new(&sysroot).join(format!("lib/rustlib/{host}/bin")))
}

/// Adds [`WORKSPACE_COMPONENTS`] to the toolchain running this `cargo xtask` (rustup's
/// `RUSTUP_TOOLCHAIN`) where its `cargo` lacks them, in one printed rustup call; does nothing
/// under a cargo that rustup does not manage.
pub fn ensure_workspace_components() -> Result<()> {
    let (Some(tc), Some(cargo)) = (
        std::env::var_os("RUSTUP_TOOLCHAIN"),
        std::env::var_os("CARGO"),
    ) else {
        return Ok(());
    };
    let bin = Path::new(&cargo).parent().unwrap_or(Path::new("."));
    let missing: Vec<&str> = WORKSPACE_COMPONENTS
        .iter()
        .copied()
        .filter(|c| {
            let tool = if *c == "rustfmt" {
                "cargo-fmt"
            } else {
                "cargo-clippy"
            };
            !bin.join(tool).is_file()
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let tc = tc.to_string_lossy();
    eprintln!(
        "xtask: adding {} to {tc} (`cargo xtask test` runs them)",
        missing.join(" and ")
    );
    run(Command::new("rustup")
        .args(["component", "add", "--toolchain", &tc])
        .args(&missing))
}

/// Why the PTX at `ptx` cannot be embedded for `arch`, or `None` when it is current.
pub fn ptx_outdated(root: &Path, ptx: &Path, arch: &str) -> Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(ptx) else {
        return Ok(Some("no PTX yet".into()));
    };
    let hash = crate::kernel_source_hash(root).context("hashing the kernel sources")?;
    Ok(match crate::parse_ptx_header(&text) {
        Some((h, a)) if h == hash && a == arch => None,
        Some((h, _)) if h != hash => Some("the kernel sources changed".into()),
        Some((_, a)) => Some(format!("the PTX is for {a}")),
        None => Some("the PTX has no murmur header".into()),
    })
}

/// The architecture of the PTX file when it is current (built from these kernel sources).
pub fn current_arch(root: &Path) -> Result<Option<String>> {
    let Ok(text) = std::fs::read_to_string(ptx_out(root)) else {
        return Ok(None);
    };
    let hash = crate::kernel_source_hash(root).context("hashing the kernel sources")?;
    Ok(crate::parse_ptx_header(&text).and_then(|(h, a)| (h == hash).then_some(a)))
}

/// Where the stamped PTX goes (the host's build script embeds it from there).
pub fn ptx_out(root: &Path) -> PathBuf {
    root.join("target/ptx/murmur_kernels.ptx")
}

/// Builds the kernels to PTX and writes `target/ptx/murmur_kernels.ptx` with a source-hash header,
/// unless that file is current (built from these kernel sources for `arch`) and `force` is off.
pub fn build_ptx(args: &BuildPtxArgs) -> Result<PathBuf> {
    let root = root();
    let arch = &args.arch;
    if !arch.starts_with("sm_") || arch[3..].parse::<u32>().is_err() {
        bail!("--arch must look like sm_90, got {arch:?}");
    }
    let out = ptx_out(&root);
    let why = match ptx_outdated(&root, &out, arch)? {
        _ if args.force => "--force".to_string(),
        Some(why) => why,
        None => {
            eprintln!(
                "xtask: the PTX is current (built from these kernel sources){} (--force \
                 rebuilds it)",
                summary(&std::fs::read_to_string(&out)?, &out, &root, args.verbose)
            );
            return Ok(out);
        }
    };
    eprintln!("xtask: building the kernels' PTX for {arch} ({why})");
    build(args)
}

/// Builds the kernels to PTX (whether or not the file is current) and writes it, stamped, unless
/// the same PTX is there already.
pub fn build(args: &BuildPtxArgs) -> Result<PathBuf> {
    let root = root();
    let arch = &args.arch;
    let out = ptx_out(&root);
    let tc = pinned_toolchain(&root)?;
    let llvm_bin = ensure_toolchain(&tc)?;
    let target_dir = root.join("target/kernels");
    let me = std::env::current_exe().context("locating the xtask binary (our PTX linker)")?;
    let flags = [
        format!("-Clinker={}", me.display()),
        format!("-Ctarget-cpu={arch}"),
    ]
    .join("\x1f");
    let hash = crate::kernel_source_hash(&root).context("hashing the kernel sources")?;
    // The link step (this binary) is not part of cargo's fingerprint of the kernels: remove the
    // linked output so that cargo always relinks (recompiling only `kernels-gpu`, not `core`).
    let release = target_dir.join(TARGET).join("release");
    for stale in [
        release.join("murmur_kernels.ptx"),
        release.join("deps/murmur_kernels.ptx"),
    ] {
        match std::fs::remove_file(&stale) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", stale.display()));
            }
            _ => {}
        }
    }
    let mut cargo = rustup_run(&tc);
    cargo
        .current_dir(root.join("kernels-gpu"))
        .args(["cargo", "build", "--release", "--target", TARGET])
        .args(["-Zbuild-std=core", "--target-dir"])
        .arg(&target_dir)
        .env("CARGO_ENCODED_RUSTFLAGS", flags)
        .env(link::AS_LINKER_ENV, "1")
        .env(link::LLVM_BIN_ENV, &llvm_bin);
    run(&mut cargo)?;
    let built = target_dir.join(TARGET).join("release/murmur_kernels.ptx");
    let ptx = std::fs::read_to_string(&built)
        .with_context(|| format!("reading the linked PTX {}", built.display()))?;
    check_ptx(&ptx)?;
    let stamped = format!("{}\n{ptx}", crate::ptx_header(&hash, arch));
    // The same PTX again (`--force`) leaves the file and its time alone: the host's build script
    // watches it, and would rebuild and relink the binary for nothing.
    if std::fs::read_to_string(&out).ok().as_deref() == Some(stamped.as_str()) {
        eprintln!(
            "xtask: the PTX is unchanged{}",
            summary(&stamped, &out, &root, args.verbose)
        );
        return Ok(out);
    }
    std::fs::create_dir_all(out.parent().unwrap())?;
    let tmp = out.with_extension("ptx.tmp");
    std::fs::write(&tmp, &stamped)?;
    std::fs::rename(&tmp, &out)?;
    eprintln!(
        "xtask: wrote the PTX{}",
        summary(&stamped, &out, &root, args.verbose)
    );
    Ok(out)
}

/// The end of a line on a stamped PTX file: `: 150 kernels (names hash 1a2b3c4d), 11.7 MB, sm_90,
/// source hash ... -> target/ptx/murmur_kernels.ptx` (the hash of the sorted names tells two
/// kernel lists apart); with `verbose`, every kernel's name after.
fn summary(stamped: &str, path: &Path, root: &Path, verbose: bool) -> String {
    use sha2::{Digest, Sha256};
    let kernels = kernel_names(stamped);
    let names_hash: String = Sha256::digest(kernels.join("\n").as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let (hash, arch) = crate::parse_ptx_header(stamped).unwrap_or_default();
    let shown = path.strip_prefix(root).unwrap_or(path);
    let mut line = format!(
        ": {} kernels (names hash {names_hash}), {:.1} MB, {arch}, source hash {hash} -> {}",
        kernels.len(),
        stamped.len() as f64 / 1e6,
        shown.display()
    );
    if verbose {
        line.push_str(&format!("; kernels: {}", kernels.join(" ")));
    }
    line
}

/// The `.entry` names of a PTX file, sorted.
fn kernel_names(ptx: &str) -> Vec<&str> {
    let mut names: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|s| s.trim_end_matches('(').trim())
        .collect();
    names.sort_unstable();
    names
}

/// Clippy on the kernels (for `nvptx64-nvidia-cuda`, with the pinned nightly and its clippy
/// component), warnings denied.
pub fn clippy_kernels() -> Result<()> {
    let root = root();
    let tc = pinned_toolchain(&root)?;
    ensure_toolchain(&tc)?;
    run(rustup_run(&tc)
        .current_dir(root.join("kernels-gpu"))
        .args(["cargo", "clippy", "--release", "--target", TARGET])
        .args(["-Zbuild-std=core", "--target-dir"])
        .arg(root.join("target/kernels-clippy"))
        .args(["--", "-D", "warnings"]))
}

/// Refuses PTX that calls into functions it does not define (e.g. software math from libdevice).
fn check_ptx(ptx: &str) -> Result<()> {
    if !ptx.contains(".entry") {
        bail!("the PTX holds no kernel entry points");
    }
    let externs: Vec<&str> = ptx
        .lines()
        .filter(|l| l.trim_start().starts_with(".extern .func"))
        .collect();
    if !externs.is_empty() {
        bail!("the PTX calls undefined functions: {externs:?}");
    }
    Ok(())
}

/// `gpu-bundle`: release host binary, PTX and the check script in `dist/gpu/` (carry it).
pub fn gpu_bundle(arch: &str) -> Result<()> {
    let root = root();
    build_ptx(&BuildPtxArgs {
        arch: arch.to_string(),
        ..BuildPtxArgs::default()
    })?;
    run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&root)
            .args(["build", "--release", "-p", "murmur"]),
    )?;
    let dist = root.join("dist/gpu");
    std::fs::create_dir_all(&dist)?;
    std::fs::copy(root.join("target/release/murmur"), dist.join("murmur"))?;
    std::fs::copy(ptx_out(&root), dist.join("murmur_kernels.ptx"))?;
    std::fs::copy(root.join("scripts/gpu-check.sh"), dist.join("gpu-check.sh"))?;
    eprintln!(
        "bundle ready in {}: run `bash dist/gpu/gpu-check.sh` on the GPU machine",
        dist.display()
    );
    Ok(())
}
