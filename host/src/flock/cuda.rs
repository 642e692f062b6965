//! The CUDA flock backend (Rust kernels from `kernels-gpu`, launched through `crate::gpu`).

use super::{FlockBackend, FlockSettings, FlockState};
use crate::gpu::GpuError;

/// Placeholder until the GPU backend lands: always reports that CUDA is not available.
pub fn open(
    _settings: &FlockSettings,
    _state: &FlockState,
) -> Result<Box<dyn FlockBackend>, GpuError> {
    Err(GpuError::NoDevice(
        "the CUDA flock backend is not built yet".into(),
    ))
}
