//! Argument structs of the sort and scan kernels.

use crate::kernel::{DevSlice, DevSliceMut};

/// `radix_counts`: `counts[pass * RADIX + digit]` += occurrences of `digit` in byte `pass` of
/// `keys[..n]`, for `passes` bytes (`counts` zeroed before; `passes * RADIX` entries).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RadixCounts {
    pub n: u32,
    pub passes: u32,
    /// Starts a device allocation (read four keys per 16-byte load).
    pub keys: DevSlice<u32>,
    pub counts: DevSliceMut<u32>,
}

/// `radix_onesweep`: one stable LSD pass over byte `shift / 8` of `n` pairs, `tiles` blocks.
/// `counts` holds this pass's [`super::RADIX`] digit counts; `status` holds
/// [`super::status_words`] zeroed words.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RadixOnesweep {
    pub n: u32,
    pub shift: u32,
    pub tiles: u32,
    pub _pad: u32,
    pub keys_in: DevSlice<u32>,
    pub values_in: DevSlice<u32>,
    pub keys_out: DevSliceMut<u32>,
    pub values_out: DevSliceMut<u32>,
    pub counts: DevSlice<u32>,
    pub status: DevSliceMut<u32>,
}

/// `scan_cells`: `table[..m]` = exclusive prefix sum of `counts[..m]`, `counts[..m]` zeroed.
/// `state` is one word (`epoch << 32 | arrivals`, epoch 1 and no arrivals before the first
/// launch); `status` one word per tile ([`super::scan_tiles`]), zeroed once.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ScanCells {
    pub m: u32,
    pub _pad: u32,
    pub counts: DevSliceMut<u32>,
    pub table: DevSliceMut<u32>,
    pub state: DevSliceMut<u64>,
    pub status: DevSliceMut<u64>,
}
