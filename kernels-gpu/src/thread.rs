//! Thread indexing helpers: the one place kernels learn who they are.

use core::arch::nvptx::{_block_dim_x, _block_idx_x, _thread_idx_x};

/// Global 1-D thread index: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index() -> usize {
    // SAFETY: reading special registers has no side effects.
    unsafe { _block_idx_x() as usize * _block_dim_x() as usize + _thread_idx_x() as usize }
}
