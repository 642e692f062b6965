//! Thread indexing, barriers, dynamic shared memory and warp intrinsics: the one place kernels
//! touch PTX specifics (`core::arch::nvptx` plus LLVM's NVVM intrinsics).

use core::arch::nvptx::{
    _block_dim_x, _block_dim_y, _block_dim_z, _block_idx_x, _block_idx_y, _block_idx_z,
    _grid_dim_x, _syncthreads, _thread_idx_x, _thread_idx_y, _thread_idx_z,
};

// One dynamic shared-memory array for the whole module; each launch sizes it (the launch
// shape's `shared_bytes`) and each kernel carves it up.
core::arch::global_asm!(".extern .shared .align 16 .b8 murmur_smem[];");

#[allow(improper_ctypes)]
extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn nvvm_shfl_up(mask: u32, value: u32, delta: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn nvvm_shfl_idx(mask: u32, value: u32, lane: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.add"]
    fn nvvm_redux_add(value: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.redux.sync.umax"]
    fn nvvm_redux_umax(value: u32, mask: u32) -> u32;
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn nvvm_shfl_bfly(mask: u32, value: u32, lane_mask: u32, clamp: u32) -> u32;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn nvvm_ballot(mask: u32, predicate: bool) -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn nvvm_bar_warp_sync(mask: u32);
    #[link_name = "llvm.nvvm.match.any.sync.i64"]
    fn nvvm_match_any_i64(mask: u32, value: u64) -> u32;
}

/// `__syncwarp()`: the full warp meets here, and its shared-memory writes before are visible to
/// its reads after.
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn sync_warp() {
    nvvm_bar_warp_sync(0xffff_ffff)
}

/// Sum of `value` over the full warp (`__reduce_add_sync`, sm_80+).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn warp_sum(value: u32) -> u32 {
    nvvm_redux_add(value, 0xffff_ffff)
}

/// Maximum of `value` over the full warp (`__reduce_max_sync`, sm_80+).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn warp_max(value: u32) -> u32 {
    nvvm_redux_umax(value, 0xffff_ffff)
}

/// Wrapping sum of `value` over the full warp, by butterfly shuffles of its two halves (every
/// lane gets the sum).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn warp_sum_u64(mut value: u64) -> u64 {
    let mut m = 16;
    while m > 0 {
        let lo = nvvm_shfl_bfly(0xffff_ffff, value as u32, m, 0x1f);
        let hi = nvvm_shfl_bfly(0xffff_ffff, (value >> 32) as u32, m, 0x1f);
        value = value.wrapping_add((hi as u64) << 32 | lo as u64);
        m >>= 1;
    }
    value
}

/// Sum of `value` over the full warp, by butterfly shuffles of its two halves (every lane
/// gets the same sum: each step adds the same two numbers on both lanes of a pair).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn warp_sum_f64(mut value: f64) -> f64 {
    let mut m = 16;
    while m > 0 {
        let bits = value.to_bits();
        let lo = nvvm_shfl_bfly(0xffff_ffff, bits as u32, m, 0x1f);
        let hi = nvvm_shfl_bfly(0xffff_ffff, (bits >> 32) as u32, m, 0x1f);
        value += f64::from_bits((hi as u64) << 32 | lo as u64);
        m >>= 1;
    }
    value
}

/// `red.global.add.f64`: adds `value` to the `f64` at `p` atomically, without returning the
/// old value.
///
/// # Safety
/// `p` is an 8-byte aligned `f64` of global memory.
#[inline(always)]
pub unsafe fn red_add_f64(p: *mut f64, value: f64) {
    // The value travels in a `.b64` register; a scoped `.f64` one gives the add its type.
    core::arch::asm!(
        "{{ .reg .f64 t; mov.b64 t, {v}; red.global.add.f64 [{p}], t; }}",
        p = in(reg64) p,
        v = in(reg64) value.to_bits(),
        options(nostack)
    );
}

/// `red.global.add.u64`: adds `value` to the word at `p` atomically (wrapping), without
/// returning the old value. Global, not generic: a generic `red` first asks the address's space
/// (a `QSPC` in the SASS); a generic pointer to global memory is its global address.
///
/// # Safety
/// `p` points to an 8-byte aligned `u64` in global memory; every concurrent access to it is
/// atomic.
#[inline(always)]
pub unsafe fn red_add_u64(p: *mut u64, value: u64) {
    core::arch::asm!("red.global.add.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) value,
        options(nostack));
}

/// Adds `value` to the `u64` at shared-window address `addr` (from [`shared_addr`]) with two
/// 32-bit shared atomics (`ATOMS.ADD`; a 64-bit add on shared memory is a compare-and-swap loop
/// in SASS, which retries under contention): the low word's add returns its old value, and its
/// carry goes with the high word. The sum is exact modulo `2^64`: the low word wraps once for
/// each add that carries.
///
/// # Safety
/// `addr` must lie in the launch's dynamic shared memory, 8-byte aligned; every concurrent
/// access to it is made through this function.
#[inline(always)]
pub unsafe fn shared_add_u64(addr: u32, value: u64) {
    let lo = value as u32;
    let old: u32;
    core::arch::asm!("atom.shared.add.u32 {o}, [{a}], {v};", o = out(reg32) old, a = in(reg32) addr,
        v = in(reg32) lo, options(nostack));
    let carry = u32::from(old.checked_add(lo).is_none());
    let hi = ((value >> 32) as u32).wrapping_add(carry);
    core::arch::asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) addr + 4, v = in(reg32) hi,
        options(nostack));
}

/// The lanes whose `key` equals this lane's, as a mask (`__match_any_sync` over the full warp,
/// sm_70+).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn match_any(key: u64) -> u32 {
    nvvm_match_any_i64(0xffff_ffff, key)
}

/// Lane `src`'s `value`, to every lane (`__shfl_sync` over the full warp).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn shfl_idx(value: u32, src: u32) -> u32 {
    nvvm_shfl_idx(0xffff_ffff, value, src, 0x1f)
}

/// Bit `i` set when lane `i`'s `predicate` holds (`__ballot_sync` over the full warp).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn ballot(predicate: bool) -> u32 {
    nvvm_ballot(0xffff_ffff, predicate)
}

/// Global 1-D thread index: `blockIdx.x * blockDim.x + threadIdx.x`.
#[inline(always)]
pub fn index() -> usize {
    // SAFETY: reading special registers has no side effects.
    unsafe { _block_idx_x() as usize * _block_dim_x() as usize + _thread_idx_x() as usize }
}

/// This thread's cell of a lattice launch over the layers of `launch`: the first cell of its
/// first layer plus the global thread index of a 1D grid, or with `three_d` the cell at
/// `(block index * block size + thread index)` per axis of a 3D grid (the first layer added
/// along z); `None` for threads outside those layers.
#[inline(always)]
pub fn lattice_cell(
    l: &murmur_common::lbm::Lattice,
    launch: &murmur_common::lbm::abi::CellLaunch,
) -> Option<usize> {
    let (z0, z1) = launch.range(l.nz);
    let plane = l.nx as usize * l.ny as usize;
    if launch.three_d == 0 {
        let first = z0 as usize * plane;
        return index_below((z1 as usize * plane - first) as u64).map(|i| first + i);
    }
    // SAFETY: reading special registers has no side effects.
    let (x, y, z) = unsafe {
        (
            _block_idx_x() as u32 * _block_dim_x() as u32 + _thread_idx_x() as u32,
            _block_idx_y() as u32 * _block_dim_y() as u32 + _thread_idx_y() as u32,
            _block_idx_z() as u32 * _block_dim_z() as u32 + _thread_idx_z() as u32,
        )
    };
    let z = z + z0;
    if x < l.nx && y < l.ny && z < z1 {
        Some(l.index(x, y, z))
    } else {
        None
    }
}

/// This thread's element of a one-thread-per-element launch over `n` elements, or `None` for
/// the threads of the last block past the end: the bounds check of every such kernel.
#[inline(always)]
pub fn index_below(n: u64) -> Option<usize> {
    let i = index();
    if (i as u64) < n {
        Some(i)
    } else {
        None
    }
}

/// `threadIdx.x`.
#[inline(always)]
pub fn tid() -> u32 {
    // SAFETY: special register read.
    unsafe { _thread_idx_x() as u32 }
}

/// `blockIdx.x`.
#[inline(always)]
pub fn block() -> u32 {
    // SAFETY: special register read.
    unsafe { _block_idx_x() as u32 }
}

/// `blockDim.x`.
#[inline(always)]
pub fn block_dim() -> u32 {
    // SAFETY: special register read.
    unsafe { _block_dim_x() as u32 }
}

/// `gridDim.x`.
#[inline(always)]
pub fn grid_dim() -> u32 {
    // SAFETY: special register read.
    unsafe { _grid_dim_x() as u32 }
}

/// This thread's items `i < n` in a grid-stride loop: from [`index`] in steps of the grid's
/// thread count, so a grid of any size covers the `n` items (`for i in grid_stride(n)`: the
/// loop body stays in the kernel, where a closure of a large stage would not be inlined).
#[inline(always)]
pub fn grid_stride(n: usize) -> GridStride {
    GridStride {
        next: index(),
        stride: grid_dim() as usize * block_dim() as usize,
        n,
    }
}

/// The iterator of [`grid_stride`].
pub struct GridStride {
    next: usize,
    stride: usize,
    n: usize,
}

impl Iterator for GridStride {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.next >= self.n {
            return None;
        }
        let i = self.next;
        self.next += self.stride;
        Some(i)
    }
}

/// `__syncthreads()`: the block's threads meet here; shared-memory writes before are visible
/// to reads after.
///
/// # Safety
/// Every thread of the block reaches it (never from divergent code).
#[inline(always)]
pub unsafe fn sync() {
    _syncthreads()
}

/// `griddepcontrol.wait`: blocks until the grid this one depends on has finished and its
/// memory is visible. Kernels launched with programmatic dependent launch (PDL: the host's
/// `Launch::after_previous`) start before their predecessor ends and must call this before
/// touching what it writes; without PDL it returns at once.
#[inline(always)]
pub fn wait_for_previous_grid() {
    // SAFETY: a scheduling barrier; a memory clobber for the compiler (no `nomem`), so no load
    // moves above it.
    unsafe { core::arch::asm!("griddepcontrol.wait;", options(nostack)) }
}

/// The launch's dynamic shared memory as a `T` (a kernel's `#[repr(C)]` shared layout from
/// `common`, whose `size_of` the host launches with), as a generic pointer.
#[inline(always)]
pub fn shared<T>() -> *mut T {
    let p: u64;
    // SAFETY: converts the shared-window address of `murmur_smem` to a generic address.
    unsafe {
        core::arch::asm!("cvta.shared.u64 {p}, murmur_smem;", p = out(reg64) p);
    }
    p as *mut T
}

/// `%lanemask_lt`: the bits of the lanes below this one.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    let m: u32;
    // SAFETY: special register read.
    unsafe {
        core::arch::asm!("mov.u32 {m}, %lanemask_lt;", m = out(reg32) m, options(pure, nomem, nostack));
    }
    m
}

/// Address of the dynamic shared memory in the shared window (for [`lds`] and [`sts`]); add
/// `core::mem::offset_of!` of a field of the kernel's shared layout to reach that field.
#[inline(always)]
pub fn shared_addr() -> u32 {
    let a: u32;
    // SAFETY: takes the shared-window address of `murmur_smem`.
    unsafe {
        core::arch::asm!("mov.u32 {a}, murmur_smem;", a = out(reg32) a, options(pure, nomem, nostack));
    }
    a
}

/// `ld.shared.u32` at shared-window address `addr` (from [`shared_addr`]). Unlike a load
/// through [`shared`]'s generic pointer, this is a plain `LDS`.
///
/// # Safety
/// `addr` must lie in the launch's dynamic shared memory, 4-byte aligned.
#[inline(always)]
pub unsafe fn lds(addr: u32) -> u32 {
    let v: u32;
    core::arch::asm!("ld.shared.u32 {v}, [{a}];", v = out(reg32) v, a = in(reg32) addr,
        options(pure, readonly, nostack));
    v
}

/// `st.shared.u32` of `value` at shared-window address `addr`.
///
/// # Safety
/// As [`lds`].
#[inline(always)]
pub unsafe fn sts(addr: u32, value: u32) {
    core::arch::asm!("st.shared.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
        options(nostack));
}

/// `ld.shared.u64` at shared-window address `addr` (a plain `LDS.64`).
///
/// # Safety
/// `addr` must lie in the launch's dynamic shared memory, 8-byte aligned.
#[inline(always)]
pub unsafe fn lds_u64(addr: u32) -> u64 {
    let v: u64;
    core::arch::asm!("ld.shared.u64 {v}, [{a}];", v = out(reg64) v, a = in(reg32) addr,
        options(pure, readonly, nostack));
    v
}

/// `st.shared.u64` of `value` at shared-window address `addr`.
///
/// # Safety
/// As [`lds_u64`].
#[inline(always)]
pub unsafe fn sts_u64(addr: u32, value: u64) {
    core::arch::asm!("st.shared.u64 [{a}], {v};", a = in(reg32) addr, v = in(reg64) value,
        options(nostack));
}

/// `red.shared.add.u32`: adds `value` to the word at shared-window address `addr` atomically
/// (a plain `ATOMS`, not the generic atomic of an `AtomicU32` on a [`shared`] pointer).
///
/// # Safety
/// As [`sts`].
#[inline(always)]
pub unsafe fn red_shared_add(addr: u32, value: u32) {
    core::arch::asm!("red.shared.add.u32 [{a}], {v};", a = in(reg32) addr, v = in(reg32) value,
        options(nostack));
}

/// [`sts`] where `cond` holds, as one predicated instruction (no branch for the compiler to
/// sink the surrounding loads into).
///
/// # Safety
/// As [`sts`] where `cond` holds; `addr` is not accessed otherwise.
#[inline(always)]
pub unsafe fn sts_if(cond: bool, addr: u32, value: u32) {
    core::arch::asm!(
        "{{ .reg .pred q; setp.ne.u32 q, {c}, 0; @q st.shared.u32 [{a}], {v}; }}",
        c = in(reg32) cond as u32, a = in(reg32) addr, v = in(reg32) value, options(nostack));
}

/// `ld.global.nc.u32`: a load through the read-only data path, for data no thread of the
/// launch writes.
///
/// # Safety
/// `p` must point to a readable, 4-byte aligned `u32` in global memory that stays unchanged
/// during the launch.
#[inline(always)]
pub unsafe fn ldg_nc(p: *const u32) -> u32 {
    let v: u32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.nc.u32 {v}, [g]; }}",
        v = out(reg32) v, p = in(reg64) p, options(pure, readonly, nostack));
    v
}

/// `ld.global.u32`: unlike [`ldg_nc`], not moved above a barrier by `ptxas` (which keeps
/// the loaded value out of the registers until then).
///
/// # Safety
/// `p` must point to a readable, 4-byte aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn ldg(p: *const u32) -> u32 {
    let v: u32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.global.u32 {v}, [g]; }}",
        v = out(reg32) v, p = in(reg64) p, options(pure, readonly, nostack));
    v
}

/// `st.global.u32` where `cond` holds, as one predicated instruction (see [`sts_if`]).
///
/// # Safety
/// Where `cond` holds, `p` must point to a writable, 4-byte aligned `u32` in global memory; `p`
/// is not accessed otherwise.
#[inline(always)]
pub unsafe fn stg_if(cond: bool, p: *mut u32, value: u32) {
    core::arch::asm!(
        "{{ .reg .pred q; .reg .u64 g; setp.ne.u32 q, {c}, 0; cvta.to.global.u64 g, {p}; \
         @q st.global.u32 [g], {v}; }}",
        c = in(reg32) cond as u32, p = in(reg64) p, v = in(reg32) value, options(nostack));
}

/// `ld.relaxed.gpu.global.u32`: a load other blocks' stores reach (through L2), never cached
/// in L1 nor merged with another load; for polling.
///
/// # Safety
/// `p` must point to a readable, 4-byte aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn ld_relaxed(p: *const u32) -> u32 {
    let v: u32;
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; ld.relaxed.gpu.global.u32 {v}, [g]; }}",
        v = out(reg32) v, p = in(reg64) p, options(nostack));
    v
}

/// `st.relaxed.gpu.global.u32`: a store that [`ld_relaxed`] in other blocks sees.
///
/// # Safety
/// `p` must point to a writable, 4-byte aligned `u32` in global memory.
#[inline(always)]
pub unsafe fn st_relaxed(p: *mut u32, value: u32) {
    core::arch::asm!(
        "{{ .reg .u64 g; cvta.to.global.u64 g, {p}; st.relaxed.gpu.global.u32 [g], {v}; }}",
        p = in(reg64) p, v = in(reg32) value, options(nostack));
}

/// Inclusive warp prefix sum (`__shfl_up_sync` ladder).
///
/// # Safety
/// All 32 lanes of the warp call it together (full mask).
#[inline(always)]
pub unsafe fn warp_inclusive_sum(mut v: u32) -> u32 {
    let lane = tid() & 31;
    let mut d = 1;
    while d < 32 {
        let o = nvvm_shfl_up(0xffff_ffff, v, d, 0);
        if lane >= d {
            v += o;
        }
        d <<= 1;
    }
    v
}
