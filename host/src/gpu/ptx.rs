//! The kernels' PTX: embedded at build time when it matched the kernel sources (`host/build.rs`
//! also checked that it defines every kernel of `murmur_common::kernel::KERNELS`), or read at
//! run time from `MURMUR_PTX=FILE` after the same source-hash check.

use super::GpuError;

/// The PTX compiled into this binary, when it matched the kernel sources at build time.
#[cfg(murmur_ptx)]
const EMBEDDED_PTX: Option<&str> = Some(include_str!(env!("MURMUR_PTX_PATH")));
#[cfg(not(murmur_ptx))]
const EMBEDDED_PTX: Option<&str> = None;

/// The kernel source hash this binary was built against.
pub const KERNEL_SOURCE_HASH: &str = env!("MURMUR_KERNEL_SOURCE_HASH");

/// The PTX to load: `MURMUR_PTX=FILE` at run time (checked against this binary's kernel
/// source hash), else the embedded one.
pub fn ptx_source() -> Result<String, GpuError> {
    if let Some(path) = std::env::var_os("MURMUR_PTX") {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            GpuError::Ptx(format!(
                "cannot read MURMUR_PTX={}: {e}",
                path.to_string_lossy()
            ))
        })?;
        let hash = text
            .lines()
            .next()
            .and_then(|l| l.split("source-hash=").nth(1))
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or("");
        if hash != KERNEL_SOURCE_HASH {
            return Err(GpuError::Ptx(format!(
                "{} is stale (kernel sources {hash:?}, this binary expects {KERNEL_SOURCE_HASH}): \
                 run `cargo xtask build-ptx`",
                path.to_string_lossy()
            )));
        }
        return Ok(text);
    }
    EMBEDDED_PTX
        .map(str::to_string)
        .ok_or_else(|| GpuError::Ptx(env!("MURMUR_PTX_STATUS").to_string()))
}

/// PTX architecture from the header line (`arch=sm_90`), as a compute capability `(9, 0)`.
pub(super) fn ptx_arch(ptx: &str) -> Option<(i32, i32)> {
    let arch = ptx.lines().next()?.split("arch=sm_").nth(1)?;
    let v: i32 = arch.split_whitespace().next()?.parse().ok()?;
    Some((v / 10, v % 10))
}
