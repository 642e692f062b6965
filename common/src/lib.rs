//! murmur-common: the math written once, shared by the CPU reference (`host`) and the GPU
//! kernels (`kernels-gpu`, built for `nvptx64-nvidia-cuda`).
//!
//! Everything here is `no_std`, allocation-free and works on `#[repr(C)]` data so that the same
//! function runs in a rayon loop on the host and in a PTX kernel on the device. Host-only extras
//! (serde derives) sit behind the `serde` feature, which the kernels never enable.
#![no_std]
#![cfg_attr(
    target_arch = "nvptx64",
    feature(core_intrinsics, link_llvm_intrinsics, asm_experimental_arch)
)]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod flock;
pub mod kernel;
// `unroll!` for the modules after it.
#[macro_use]
pub mod lbm;
pub mod coupling;
pub mod math;
pub mod render;
pub mod rng;
pub mod sort;

pub use kernel::{DevSlice, DevSliceMut, Kernel};
pub use math::Vec3;

/// The `#[repr(C)]` types kernels take by value or in buffers (host side, `cuda` feature).
#[cfg(all(feature = "cuda", not(target_arch = "nvptx64")))]
mod device_repr {
    use crate::flock::{Body, FlockParams, Grid};
    use crate::render::View;
    use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
    // glam's `Vec3` cannot take these (orphan rule: cudarc's traits, glam's type); host buffers
    // of velocities are `[f32; 3]`, seen as `Vec3` by the kernels (same 12-byte layout).
    // SAFETY: plain #[repr(C)] structs of f32/u32 fields, no padding, no pointers; all-zero bits
    // are valid values.
    unsafe impl DeviceRepr for FlockParams {}
    unsafe impl DeviceRepr for Grid {}
    unsafe impl DeviceRepr for View {}
    unsafe impl DeviceRepr for Body {}
    unsafe impl ValidAsZeroBits for Body {}
    unsafe impl DeviceRepr for crate::render::smoke::SmokeSource {}
    unsafe impl ValidAsZeroBits for crate::render::smoke::SmokeSource {}
    unsafe impl DeviceRepr for crate::lbm::links::CutLink {}
    unsafe impl ValidAsZeroBits for crate::lbm::links::CutLink {}
    unsafe impl DeviceRepr for crate::coupling::sdf::Obstacle {}
    unsafe impl ValidAsZeroBits for crate::coupling::sdf::Obstacle {}
}
