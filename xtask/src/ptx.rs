//! `build-ptx`: the pinned nightly, `-Zbuild-std=core`, our own link step, a stamped PTX file.

use crate::{link, root, run};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";

#[derive(clap::Args, Clone)]
pub struct BuildPtxArgs {
    /// GPU architecture (sm_90 for the H100/H200; sm_80 for A100, sm_89 for Ada...).
    #[arg(long, default_value = "sm_90")]
    pub arch: String,
}

impl Default for BuildPtxArgs {
    fn default() -> Self {
        BuildPtxArgs {
            arch: "sm_90".into(),
        }
    }
}

/// The channel named in `kernels-gpu/rust-toolchain.toml`.
fn pinned_toolchain(root: &Path) -> Result<String> {
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

/// Installs the pinned nightly with `rust-src` and `llvm-tools` unless they are there already.
/// Returns the folder holding `llvm-link`, `opt` and `llc`.
fn ensure_toolchain(tc: &str) -> Result<PathBuf> {
    let sysroot = capture(rustup_run(tc).args(["rustc", "--print", "sysroot"])).ok();
    let host = "x86_64-unknown-linux-gnu";
    let ready = |s: &str| {
        let s = Path::new(s);
        s.join("lib/rustlib/src/rust/library/core").is_dir()
            && s.join(format!("lib/rustlib/{host}/bin/llc")).is_file()
    };
    let sysroot = match sysroot {
        Some(s) if ready(&s) => s,
        _ => {
            eprintln!("installing toolchain {tc} with rust-src and llvm-tools (first build only)");
            run(Command::new("rustup").args([
                "toolchain",
                "install",
                tc,
                "--profile",
                "minimal",
                "--component",
                "rust-src,llvm-tools",
            ]))?;
            let s = capture(rustup_run(tc).args(["rustc", "--print", "sysroot"]))?;
            if !ready(&s) {
                bail!("{tc} still lacks rust-src or llvm-tools after installing them");
            }
            s
        }
    };
    let host = capture(rustup_run(tc).args(["rustc", "--print", "host-tuple"]))
        .unwrap_or_else(|_| host.to_string());
    Ok(Path::new(&sysroot).join(format!("lib/rustlib/{host}/bin")))
}

/// Where the stamped PTX goes (the host's build script embeds it from there).
pub fn ptx_out(root: &Path) -> PathBuf {
    root.join("target/ptx/murmur_kernels.ptx")
}

/// Builds the kernels to PTX and writes `target/ptx/murmur_kernels.ptx` with a source-hash header.
pub fn build_ptx(args: &BuildPtxArgs) -> Result<PathBuf> {
    let root = root();
    let arch = &args.arch;
    if !arch.starts_with("sm_") || arch[3..].parse::<u32>().is_err() {
        bail!("--arch must look like sm_90, got {arch:?}");
    }
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
    let out = ptx_out(&root);
    std::fs::create_dir_all(out.parent().unwrap())?;
    let tmp = out.with_extension("ptx.tmp");
    std::fs::write(&tmp, format!("{}\n{ptx}", crate::ptx_header(&hash, arch)))?;
    std::fs::rename(&tmp, &out)?;
    let kernels: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|s| s.trim_end_matches('(').trim())
        .collect();
    eprintln!(
        "wrote {} ({arch}, {} bytes, source hash {hash}): {} kernels: {}",
        out.display(),
        ptx.len(),
        kernels.len(),
        kernels.join(" ")
    );
    Ok(out)
}

/// Clippy on the kernels (for `nvptx64-nvidia-cuda`, with the pinned nightly and its clippy
/// component), warnings denied.
pub fn clippy_kernels() -> Result<()> {
    let root = root();
    let tc = pinned_toolchain(&root)?;
    ensure_toolchain(&tc)?;
    run(Command::new("rustup").args(["component", "add", "clippy", "--toolchain", &tc]))?;
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
