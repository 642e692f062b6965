//! The CUDA layer: driver loading (cudarc, dynamic), the embedded PTX and its staleness check,
//! and the typed launch layer (`launch.rs`) every GPU backend goes through.

/// Why the GPU could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no usable CUDA driver or GPU: {0}")]
    NoDevice(String),
    #[error("the GPU kernels are not available: {0}")]
    Ptx(String),
    #[error("CUDA error in {context}: {message}")]
    Driver { context: String, message: String },
    #[error("{what} needs about {need_mib} MiB of GPU memory but only {free_mib} MiB are free")]
    OutOfMemory {
        what: String,
        need_mib: u64,
        free_mib: u64,
    },
}
