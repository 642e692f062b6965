//! Embeds the kernels' PTX (`target/ptx/murmur_kernels.ptx`, from `cargo xtask build-ptx`) when it
//! was built from the current kernel sources; otherwise embeds nothing and records why, so the
//! binary can never run stale PTX. Embedded PTX must define every kernel of the one kernel table
//! (`murmur_common::kernel::KERNELS`): a missing one fails the build with its name.

include!("../xtask/src/source_hash.rs");

fn main() {
    let manifest = std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let root = manifest.parent().unwrap().to_path_buf();
    let ptx = std::env::var("MURMUR_PTX")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| root.join("target/ptx/murmur_kernels.ptx"));
    println!("cargo::rerun-if-env-changed=MURMUR_PTX");
    println!("cargo::rerun-if-changed={}", ptx.display());
    for dir in [
        "common/src",
        "kernels-gpu/src",
        "common/Cargo.toml",
        "kernels-gpu/Cargo.toml",
    ] {
        println!("cargo::rerun-if-changed={}", root.join(dir).display());
    }
    println!("cargo::rustc-check-cfg=cfg(murmur_ptx)");
    let hash = kernel_source_hash(&root).expect("hashing kernel sources");
    println!("cargo::rustc-env=MURMUR_KERNEL_SOURCE_HASH={hash}");
    let status = match std::fs::read_to_string(&ptx) {
        Err(_) => format!(
            "no PTX was found at {} when this binary was built: `cargo xtask run -- ARGS` builds it and the binary",
            ptx.display()
        ),
        Ok(text) => match parse_ptx_header(&text) {
            Some((h, _)) if h == hash => {
                check_entries(&text, &ptx);
                println!("cargo::rustc-cfg=murmur_ptx");
                println!("cargo::rustc-env=MURMUR_PTX_PATH={}", ptx.display());
                "embedded".to_string()
            }
            Some((h, _)) => format!(
                "the PTX at {} is stale (built from kernel sources {h}, these are {hash}): \
                 `cargo xtask run -- ARGS` rebuilds it and the binary",
                ptx.display()
            ),
            None => format!("{} has no murmur header: rebuild it with `cargo xtask build-ptx`", ptx.display()),
        },
    };
    println!("cargo::rustc-env=MURMUR_PTX_STATUS={status}");
}

/// Fails the build when the PTX lacks a kernel the host launches.
fn check_entries(ptx_text: &str, path: &std::path::Path) {
    let entries: Vec<&str> = ptx_text
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|s| s.trim_end_matches('(').trim())
        .collect();
    let missing: Vec<&str> = murmur_common::kernel::KERNELS
        .iter()
        .copied()
        .filter(|k| !entries.contains(k))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "error: the PTX at {} has no kernel {} (the host's kernel table, \
             common/src/kernel.rs, names it): rename the kernel or the table entry, then run \
             `cargo xtask build-ptx`",
            path.display(),
            missing.join(", ")
        );
        std::process::exit(1);
    }
}
