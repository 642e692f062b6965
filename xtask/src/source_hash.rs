// The content hash of everything the PTX is built from. Shared verbatim by `xtask` (which writes
// it into the PTX header) and `host/build.rs` (which refuses to embed PTX with another hash),
// through `include!`, so the two can never disagree on what "stale" means.

/// Files (relative to the workspace root) whose contents determine the PTX.
pub fn kernel_source_files(root: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            if path.is_dir() {
                walk(&path, out)?;
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
        Ok(())
    }
    let mut files = Vec::new();
    walk(&root.join("common/src"), &mut files)?;
    walk(&root.join("kernels-gpu/src"), &mut files)?;
    for f in [
        // The link step: optimisation passes and per-kernel register caps.
        "xtask/src/link.rs",
        "common/Cargo.toml",
        "kernels-gpu/Cargo.toml",
        "kernels-gpu/rust-toolchain.toml",
    ] {
        files.push(root.join(f));
    }
    let mut rel: Vec<std::path::PathBuf> = files
        .into_iter()
        .map(|p| p.strip_prefix(root).map(|r| r.to_path_buf()).unwrap_or(p))
        .collect();
    rel.sort();
    Ok(rel)
}

/// SHA-256 (hex, first 16 bytes) over the relative path and contents of every kernel source file.
pub fn kernel_source_hash(root: &std::path::Path) -> std::io::Result<String> {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for rel in kernel_source_files(root)? {
        let bytes = std::fs::read(root.join(&rel))?;
        h.update(rel.to_string_lossy().replace('\\', "/").as_bytes());
        h.update([0u8]);
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(&bytes);
    }
    Ok(h.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect())
}

/// The first line of every PTX file `build-ptx` writes.
pub fn ptx_header(hash: &str, arch: &str) -> String {
    format!("// murmur-kernels source-hash={hash} arch={arch}")
}

/// Parses `ptx_header`'s line back into `(hash, arch)`.
pub fn parse_ptx_header(ptx: &str) -> Option<(String, String)> {
    let line = ptx.lines().next()?.strip_prefix("// murmur-kernels ")?;
    let mut hash = None;
    let mut arch = None;
    for kv in line.split_whitespace() {
        if let Some(v) = kv.strip_prefix("source-hash=") {
            hash = Some(v.to_string());
        } else if let Some(v) = kv.strip_prefix("arch=") {
            arch = Some(v.to_string());
        }
    }
    Some((hash?, arch?))
}
