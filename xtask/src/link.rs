//! The bitcode-to-PTX link step: rustc's `llbc` linker flavour for `nvptx64-nvidia-cuda`.
//!
//! rustc calls the linker as
//! `LINKER --export-symbol K1 ... <objects.o (LLVM bitcode)> <rlibs> -L DIR ... --target nvptx64-nvidia-cuda
//! --target-cpu sm_90 -o OUT.ptx -O3 [--debug]`. With `lto = "fat"` and one codegen unit the objects
//! already hold `core`. We `llvm-link` them, internalize everything but the exported kernels,
//! optimize (`opt -passes=default<O3>`), mark the kernels' argument pointers as global memory
//! ([`mark_argument_pointers_global`]) and emit PTX with `llc`. The LLVM tools come from the
//! pinned nightly's `llvm-tools` component; `ptx.rs` passes their folder in `MURMUR_LLVM_BIN`.

use anyhow::{bail, Context, Result};
use std::path::PathBuf;
use std::process::Command;

/// Set by `build-ptx` so that `xtask`, started by rustc as the linker, links instead of parsing a CLI.
pub const AS_LINKER_ENV: &str = "MURMUR_XTASK_AS_LINKER";
/// Folder of `llvm-link`, `opt` and `llc`.
pub const LLVM_BIN_ENV: &str = "MURMUR_LLVM_BIN";
/// PTX ISA version requested from `llc`.
pub const PTX_ISA: &str = "+ptx80";

/// Register caps per kernel (PTX `.maxnreg`, what `__launch_bounds__` or `-maxrregcount` give in
/// CUDA C++): the grid searches run faster with more warps resident (hiding load latency) than
/// with every value in a register. Measured on the H200 with `murmur flock bench`, 1M boids:
/// 0.478 ms/step at 56 registers, 0.464 ms at 32 (`docs/performance.md`). The predicated update
/// for small flocks (up to `SMALL_FLOCK` boids, few warps per SM anyway) runs uncapped, at 61:
/// 0.0312 / 0.0542 / 0.1200 ms/step at 100k / 200k / 400k boids against 0.0317 / 0.0576 /
/// 0.1231 at 48 (same run, no programmatic dependent launch). The onesweep pass parks its keys
/// in shared memory and loads the values late: 24 pairs per thread, no spills at 80 (3 blocks of
/// 256 per SM, which its 57 KiB of shared memory also allow); `flock sort-bench`, 10M / 100M
/// pairs: 0.739 / 5.788 ms, against 0.744 / 6.222 with 16 pairs per thread at 64 registers.
///
/// The slab update of a flock on several ranks (the coherent search plus each boid's fate and
/// sends) runs best at 40 (`murmur flock scale --gpus 1`, the slab path on one H200, 100M boids:
/// 44.84 ms/step at 40, 46.01 at 32, 49.18 at 48, 53.73 uncapped at 64).
///
/// A name ending in `*` caps every kernel that starts with the rest. The boundary kernels
/// (`lbm_boundary_*`: latency-bound, a short list of cells whose loads resident warps hide) run
/// at 128, 4 blocks of 128 threads per SM: uncapped, ptxas gives the in-place ones 163-166
/// registers (3 blocks per SM) and the pull ones 128; at 128 none of the 18 spills (`ptxas -v`,
/// sm_90). The cap is set for occupancy; it is not timed against the uncapped kernels.
pub const REGISTER_CAPS: &[(&str, u32)] = &[
    ("update_boids_coherent", 32),
    ("update_boids_scattered", 32),
    ("update_boids_slab", 40),
    ("radix_onesweep", 80),
    ("lbm_boundary_*", 128),
];

pub fn main(args: Vec<String>) -> Result<()> {
    let mut exports = Vec::new();
    let mut objects = Vec::new();
    let mut out = None;
    let mut cpu = String::from("sm_90");
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--export-symbol" => exports.push(it.next().context("--export-symbol needs a name")?),
            "-o" => out = Some(PathBuf::from(it.next().context("-o needs a path")?)),
            "--target-cpu" => cpu = it.next().context("--target-cpu needs a value")?,
            "--target" | "-L" => {
                it.next();
            }
            s if s.ends_with(".o") => objects.push(PathBuf::from(s)),
            // rlibs (core, compiler_builtins) are already inside the fat-LTO object; flags such as
            // -O3 and --debug are handled by `opt`/`llc` below.
            _ => {}
        }
    }
    let out = out.context("the linker was not given -o")?;
    if objects.is_empty() {
        bail!("no bitcode objects to link (is lto = \"fat\" set in kernels-gpu?)");
    }
    if exports.is_empty() {
        bail!("no kernels exported: mark kernels #[no_mangle] pub extern \"ptx-kernel\"");
    }
    let bin = PathBuf::from(std::env::var_os(LLVM_BIN_ENV).context("MURMUR_LLVM_BIN is not set")?);
    let linked = out.with_extension("linked.bc");
    let optimized = out.with_extension("opt.bc");
    let marked = out.with_extension("marked.ll");

    let mut link = Command::new(bin.join("llvm-link"));
    link.args(&objects).arg("-o").arg(&linked);
    tool(&mut link)?;

    let mut opt = Command::new(bin.join("opt"));
    opt.arg(format!(
        "-internalize-public-api-list={}",
        exports.join(",")
    ))
    .arg("-passes=internalize,globaldce,default<O3>")
    .arg(&linked)
    .arg("-o")
    .arg(&optimized);
    tool(&mut opt)?;

    let text = capture(
        Command::new(bin.join("llvm-dis"))
            .arg(&optimized)
            .arg("-o")
            .arg("-"),
    )?;
    std::fs::write(&marked, mark_argument_pointers_global(&text))
        .with_context(|| format!("writing {}", marked.display()))?;

    let mut llc = Command::new(bin.join("llc"));
    llc.args(["-mtriple=nvptx64-nvidia-cuda", "-O3"])
        .arg(format!("-mcpu={cpu}"))
        .arg(format!("-mattr={PTX_ISA}"))
        .arg(&marked)
        .arg("-o")
        .arg(&out);
    tool(&mut llc)?;
    let ptx =
        std::fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    std::fs::write(&out, cap_registers(&ptx, REGISTER_CAPS)?)
        .with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

/// Adds `.maxnreg N` to each listed kernel, between its parameter list and its body (`name*`:
/// to every kernel whose name starts with `name`, at least one).
pub fn cap_registers(ptx: &str, caps: &[(&str, u32)]) -> Result<String> {
    let mut ptx = ptx.to_string();
    for &(kernel, regs) in caps {
        let (name, prefix) = match kernel.strip_suffix('*') {
            Some(p) => (p, true),
            None => (kernel, false),
        };
        let entry = if prefix {
            format!(".entry {name}")
        } else {
            format!(".entry {name}(")
        };
        let mut from = 0;
        let mut found = 0;
        while let Some(i) = ptx[from..].find(&entry) {
            let at = from + i;
            let body = ptx[at..]
                .find("\n{")
                .with_context(|| format!("no body after .entry {kernel}"))?;
            let cap = format!("\n.maxnreg {regs}");
            ptx.insert_str(at + body, &cap);
            from = at + body + cap.len();
            found += 1;
            if !prefix {
                break;
            }
        }
        if found == 0 {
            bail!("register cap for {kernel}, which the PTX does not have");
        }
    }
    Ok(ptx)
}

/// Every kernel takes one argument struct by value, which rustc passes as an integer array
/// (`[N x i64] %0`), so the device pointers inside it reach LLVM as `inttoptr` of an
/// `extractvalue` of `%0`, of unknown address space: loads and stores through them would be
/// generic ones (`ld`, not `ld.global`), slower in latency-bound kernels. Each such pointer does
/// point to global memory (a device allocation: `murmur_common::kernel::DevSlice`), so this
/// rewrites `%p = inttoptr i64 %x to ptr`, for `%x` extracted from a kernel's argument, into an
/// `inttoptr` to `ptr addrspace(1)` and an `addrspacecast` back to `ptr`: the marking LLVM's own
/// NVPTX argument lowering gives pointer arguments. `llc`'s address-space inference folds the
/// casts into global loads and stores. `llc`'s address-space inference then
/// folds the casts into `ld.global` / `st.global`. Other `inttoptr`s (shared-memory addresses)
/// are left alone.
pub fn mark_argument_pointers_global(ir: &str) -> String {
    let mut out = String::with_capacity(ir.len() + ir.len() / 50);
    let mut in_kernel = false;
    let mut extracted: Vec<String> = Vec::new();
    // The argument `%0` and its `freeze`d copies.
    let mut args: Vec<String> = Vec::new();
    for line in ir.lines() {
        if line.starts_with("define ptx_kernel ") {
            in_kernel = true;
            extracted.clear();
            args = vec!["%0".to_string()];
        } else if line == "}" {
            in_kernel = false;
        }
        if in_kernel {
            let t = line.trim_start();
            if let Some((name, rhs)) = t.split_once(" = ") {
                let of_arg = |prefix: &str| {
                    rhs.strip_prefix(prefix).is_some_and(|r| {
                        r.split_once(" x i64] ")
                            .and_then(|(_, v)| v.split([',', ' ']).next())
                            .is_some_and(|v| args.iter().any(|a| a == v))
                    })
                };
                if of_arg("freeze [") {
                    args.push(name.to_string());
                } else if of_arg("extractvalue [") {
                    extracted.push(name.to_string());
                } else if let Some(src) = rhs
                    .strip_prefix("inttoptr i64 ")
                    .and_then(|r| r.strip_suffix(" to ptr"))
                {
                    if extracted.iter().any(|e| e == src) {
                        // A named value (numbered ones must stay consecutive).
                        let g = format!("%global.{}", &name[1..]);
                        out.push_str(&format!("  {g} = inttoptr i64 {src} to ptr addrspace(1)\n"));
                        out.push_str(&format!(
                            "  {name} = addrspacecast ptr addrspace(1) {g} to ptr\n"
                        ));
                        continue;
                    }
                }
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn capture(cmd: &mut Command) -> Result<String> {
    let output = cmd
        .output()
        .with_context(|| format!("could not start {:?}", cmd.get_program()))?;
    if !output.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn tool(cmd: &mut Command) -> Result<()> {
    capture(cmd).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_pointers_become_global_and_others_stay() {
        let ir =
            "define ptx_kernel void @k([3 x i64] %0) {\n  %2 = extractvalue [3 x i64] %0, 1\n  \
                  %3 = inttoptr i64 %2 to ptr\n  %4 = inttoptr i64 %9 to ptr\n  \
                  %.fr = freeze [3 x i64] %0\n  %5 = extractvalue [3 x i64] %.fr, 2\n  \
                  %6 = inttoptr i64 %5 to ptr\n  ret void\n}\n\
                  define void @f(i64 %0) {\n  %2 = inttoptr i64 %0 to ptr\n}\n";
        let out = mark_argument_pointers_global(ir);
        assert!(out.contains("  %global.3 = inttoptr i64 %2 to ptr addrspace(1)\n"));
        assert!(out.contains("  %3 = addrspacecast ptr addrspace(1) %global.3 to ptr\n"));
        assert!(out.contains("  %4 = inttoptr i64 %9 to ptr\n"));
        assert!(out.contains("  %6 = addrspacecast ptr addrspace(1) %global.6 to ptr\n"));
        assert!(out.contains("  %2 = inttoptr i64 %0 to ptr\n"));
    }

    #[test]
    fn caps_go_between_the_parameters_and_the_body() {
        let ptx =
            ".visible .entry a(\n\t.param .u32 a_0\n)\n{\n\tret;\n}\n.visible .entry b(\n)\n{\n}\n";
        let capped = cap_registers(ptx, &[("b", 32)]).unwrap();
        assert!(capped.contains(".entry b(\n)\n.maxnreg 32\n{"));
        assert!(capped.contains(".entry a(\n\t.param .u32 a_0\n)\n{"));
        assert!(cap_registers(ptx, &[("c", 32)]).is_err());
    }

    #[test]
    fn a_star_caps_every_kernel_of_the_prefix() {
        let ptx = ".entry k_a(\n)\n{\n}\n.entry k_b(\n)\n{\n}\n.entry kk(\n)\n{\n}\n";
        let capped = cap_registers(ptx, &[("k_*", 64)]).unwrap();
        assert!(capped.contains(".entry k_a(\n)\n.maxnreg 64\n{"));
        assert!(capped.contains(".entry k_b(\n)\n.maxnreg 64\n{"));
        assert!(capped.contains(".entry kk(\n)\n{"));
        assert!(cap_registers(ptx, &[("z_*", 32)]).is_err());
    }
}
