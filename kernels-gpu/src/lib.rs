//! murmur-kernels: the GPU kernels, in Rust, for `nvptx64-nvidia-cuda`.
//!
//! Every kernel is thin: one index helper, loads, a call into `murmur-common`, stores. Kernels are
//! named after their stage; the host's launch layer (`host/src/gpu/`) owns argument order and sizes.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics)]
#![allow(internal_features, clippy::missing_safety_doc)]

pub mod flock;
pub mod lbm;
pub mod render;
pub mod sort;
pub mod thread;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: trap aborts the kernel; nothing after it runs.
    unsafe { core::arch::nvptx::trap() }
}
