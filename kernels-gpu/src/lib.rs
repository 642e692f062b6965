//! murmur-kernels: the GPU kernels, in Rust, for `nvptx64-nvidia-cuda`.
//!
//! Every kernel is thin: one bounds helper (`thread::index_below`), loads, a call into
//! `murmur-common`, stores. Kernels are named after their stage and take one argument struct
//! from `murmur_common` by value (the typed kernel interface, `murmur_common::kernel`), whose
//! name table the host checks against this PTX when it is built.
#![no_std]
#![feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, link_llvm_intrinsics)]
#![allow(internal_features, clippy::missing_safety_doc)]

pub mod check;
pub mod coupling;
pub mod flock;
pub mod fluid_render;
pub mod lbm;
pub mod push;
pub mod render;
pub mod sort;
pub mod thread;

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: trap aborts the kernel; nothing after it runs.
    unsafe { core::arch::nvptx::trap() }
}

// The device views are a pointer and a 64-bit length here too (`murmur_common::kernel`'s unit
// test checks the host): the argument structs the host builds have the layout kernels read.
const _: () = {
    use core::mem::{align_of, size_of};
    use murmur_common::{DevSlice, DevSliceMut};
    assert!(size_of::<DevSlice<f32>>() == 16 && align_of::<DevSlice<f32>>() == 8);
    assert!(size_of::<DevSlice<u8>>() == 16 && align_of::<DevSlice<u8>>() == 8);
    assert!(size_of::<DevSliceMut<f32>>() == 16 && align_of::<DevSliceMut<f32>>() == 8);
    assert!(size_of::<DevSliceMut<u64>>() == 16 && align_of::<DevSliceMut<u64>>() == 8);
};
