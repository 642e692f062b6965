//! Embeds the kernels' PTX (`target/ptx/murmur_kernels.ptx`, from `cargo xtask build-ptx`) when it
//! was built from the current kernel sources; otherwise embeds nothing and records why, so the
//! binary can never run stale PTX. Embedded PTX must define every kernel of the one kernel table
//! (`murmur_common::kernel::KERNEL_ENTRIES`), each with a parameter of its argument struct's
//! size: a missing kernel or a size that differs fails the build naming the kernel.

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

/// Fails the build when the PTX lacks a kernel the host launches, or when an entry's parameter
/// is not the size of the argument struct the host passes to it.
fn check_entries(ptx_text: &str, path: &std::path::Path) {
    let entries = ptx_entries(ptx_text);
    let table = murmur_common::kernel::KERNEL_ENTRIES;
    let missing: Vec<&str> = table
        .iter()
        .map(|k| k.name)
        .filter(|k| !entries.iter().any(|(name, _)| name == k))
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
    let wrong: Vec<String> = table
        .iter()
        .filter_map(|k| {
            let (_, bytes) = entries.iter().find(|(name, _)| *name == k.name)?;
            (*bytes != k.arg_bytes).then(|| {
                format!(
                    "kernel {} takes {bytes} bytes of parameters in the PTX, its argument struct \
                     {} is {} bytes",
                    k.name,
                    (k.args)(),
                    k.arg_bytes
                )
            })
        })
        .collect();
    if !wrong.is_empty() {
        eprintln!(
            "error: the PTX at {} does not match the host's kernel table (common/src/kernel.rs): \
             {}; the kernel and the table must take the same struct, then run `cargo xtask build-ptx`",
            path.display(),
            wrong.join("; ")
        );
        std::process::exit(1);
    }
}

/// Every `.entry` of the PTX with the bytes of its parameters: `.param .align 8 .b8
/// NAME_param_0[SIZE]` is `SIZE` bytes, a scalar `.param .u64 NAME_param_0` its width.
fn ptx_entries(ptx_text: &str) -> Vec<(&str, usize)> {
    let mut entries = Vec::new();
    let mut lines = ptx_text.lines();
    while let Some(line) = lines.next() {
        let Some(rest) = line.split(".entry ").nth(1) else {
            continue;
        };
        let (name, tail) = rest.split_once('(').unwrap_or((rest, ""));
        let mut bytes = 0;
        let mut params = |l: &str| {
            bytes += l.split(',').filter_map(param_bytes).sum::<usize>();
        };
        let inline = tail.split_once(')');
        if let Some((list, _)) = inline {
            params(list);
        } else {
            params(tail);
            for l in lines.by_ref() {
                match l.split_once(')') {
                    Some((list, _)) => {
                        params(list);
                        break;
                    }
                    None => params(l),
                }
            }
        }
        entries.push((name.trim(), bytes));
    }
    entries
}

/// Bytes of one PTX parameter declaration (`.param [.align A] .TYPE NAME[[COUNT]]`).
fn param_bytes(decl: &str) -> Option<usize> {
    let mut words = decl.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let mut ty = words.next()?;
    if ty == ".align" {
        words.next()?;
        ty = words.next()?;
    }
    let bits: usize = ty
        .trim_start_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()?;
    let name = words.next()?;
    let count = match name.split_once('[') {
        Some((_, n)) => n.trim_end_matches(']').parse().ok()?,
        None => 1,
    };
    Some(bits / 8 * count)
}
