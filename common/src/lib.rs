//! murmur-common: the math written once, shared by the CPU reference (`host`) and the GPU
//! kernels (`kernels-gpu`, built for `nvptx64-nvidia-cuda`).
//!
//! Everything here is `no_std`, allocation-free and works on `#[repr(C)]` data so that the same
//! function runs in a rayon loop on the host and in a PTX kernel on the device. Host-only extras
//! (serde derives) sit behind the `serde` feature, which the kernels never enable.
#![no_std]
#![cfg_attr(target_arch = "nvptx64", feature(core_intrinsics))]
#![cfg_attr(target_arch = "nvptx64", allow(internal_features))]

#[cfg(not(target_arch = "nvptx64"))]
extern crate std;

pub mod flock;
pub mod lbm;
pub mod math;
pub mod rng;

pub use math::Vec3;
