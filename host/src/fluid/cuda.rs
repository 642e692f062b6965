//! The CUDA fluid backend (Rust kernels from `kernels-gpu/src/lbm.rs`, launched through
//! `crate::gpu`).

use super::{FluidBackend, FluidError, Setup};
use crate::gpu::GpuError;

/// Opens the CUDA backend for `setup`.
pub fn open(_setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    Err(
        GpuError::NoDevice("the CUDA fluid backend needs the GPU layer (host/src/gpu)".into())
            .into(),
    )
}
