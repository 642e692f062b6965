//! Launch policy and shared-memory layouts of the device radix sort and the one-pass cell scan
//! (`kernels-gpu/src/sort.rs`), read by the kernels and by the host that sizes their launches.
//!
//! LSD radix sort of `(u32 key, u32 value)` pairs, 8-bit digits: one `radix_counts` over the
//! keys counts every pass's digits at once, then one `radix_onesweep` launch per digit (each
//! block ranks a tile of [`ONESWEEP_TILE`] pairs, learns its digits' output bases through a
//! decoupled look-back and writes the tile in digit runs). `scan_cells` is a chained scan with
//! decoupled look-back of [`SCAN_TILE`] entries per block.

pub mod abi;

/// Digit width of one pass.
pub const RADIX_BITS: u32 = 8;
/// Buckets per pass.
pub const RADIX: u32 = 1 << RADIX_BITS;
/// Passes a sort of 32-bit keys takes at most.
pub const MAX_PASSES: u32 = 32 / RADIX_BITS;

/// Threads per block of `radix_counts`.
pub const COUNT_BLOCK: u32 = 256;
/// Blocks of `radix_counts` per streaming multiprocessor (grid-stride over the keys).
pub const COUNT_BLOCKS_PER_SM: u32 = 2;

/// Threads per block of `radix_onesweep` (thread `t` owns digit `t`).
pub const ONESWEEP_BLOCK: u32 = RADIX;
/// Pairs each `radix_onesweep` thread holds (even, at most 32): 24 is the fastest of the
/// ballot-ranked variants on the H200 (`docs/performance.md`).
pub const ONESWEEP_ITEMS: u32 = 24;
/// Pairs per `radix_onesweep` tile.
pub const ONESWEEP_TILE: u32 = ONESWEEP_BLOCK * ONESWEEP_ITEMS;
/// Warps per `radix_onesweep` block.
pub const ONESWEEP_WARPS: u32 = ONESWEEP_BLOCK / 32;
/// Predecessor tiles a `radix_onesweep` thread reads at once in the look-back.
pub const LOOKBACK: u32 = 8;
/// Pairs one sort can take: look-back counts have 30 bits.
pub const MAX_SORT_PAIRS: u32 = (1 << 30) - 1;

/// Shared memory of one `radix_onesweep` block (the launch's dynamic shared memory is
/// `size_of::<OnesweepShared>()`).
#[repr(C)]
pub struct OnesweepShared {
    /// Per warp and digit: counters while ranking, then the warp's place in the tile.
    pub warp_digits: [[u32; RADIX as usize]; ONESWEEP_WARPS as usize],
    /// Per digit: its output index minus its staged index.
    pub base: [u32; RADIX as usize],
    /// Block-scan scratch.
    pub scratch: [u32; 16],
    /// The tile's ticket (one word used; padded to keep the staging 16-byte aligned).
    pub ticket: [u32; 16],
    /// The tile's keys in digit order.
    pub keys: [u32; ONESWEEP_TILE as usize],
    /// The tile's values in digit order (first: the keys parked in input order).
    pub values: [u32; ONESWEEP_TILE as usize],
}

/// Shared memory of `radix_counts`: one digit histogram per pass (the launch sizes it for the
/// passes it sorts: `passes * size_of::<DigitCounts>()`).
pub type DigitCounts = [u32; RADIX as usize];

/// Threads per block of `scan_cells`.
pub const SCAN_BLOCK: u32 = 256;
/// Entries each `scan_cells` thread scans (a multiple of 4: they move as 16-byte vectors).
pub const SCAN_ITEMS: u32 = 8;
/// Entries one `scan_cells` block scans: 2048, so the 256k cells of 100k boids at scale 100
/// (cell width 1, x-split 4) take 125 blocks, about one per SM of an H200.
pub const SCAN_TILE: u32 = SCAN_BLOCK * SCAN_ITEMS;
const _: () = assert!(
    SCAN_ITEMS.is_multiple_of(4),
    "scan_cells moves its entries as 16-byte vectors"
);

/// Shared memory of one `scan_cells` block.
#[repr(C)]
pub struct ScanShared {
    /// Per warp: its total, then the exclusive sum of the warps before it (one spare slot).
    pub warp_totals: [u32; 33],
    /// The launch's epoch, as thread 0 read it.
    pub epoch: u32,
    /// The sum of every tile before this one.
    pub prefix: u32,
    pub _pad: u32,
}

/// Tiles of `scan_cells` for `m` entries (at least one): its grid and its status words.
pub const fn scan_tiles(m: u32) -> u32 {
    let t = m.div_ceil(SCAN_TILE);
    if t == 0 {
        1
    } else {
        t
    }
}

/// Tiles of `radix_onesweep` for `n` pairs (at least one).
pub const fn onesweep_tiles(n: u32) -> u32 {
    let t = n.div_ceil(ONESWEEP_TILE);
    if t == 0 {
        1
    } else {
        t
    }
}

/// Look-back status words of a sort of up to `capacity` pairs: [`RADIX`] per tile, then the
/// tile ticket.
pub const fn status_words(capacity: u32) -> u32 {
    RADIX * onesweep_tiles(capacity) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_layouts_have_the_sizes_the_kernels_carve() {
        assert_eq!(
            core::mem::size_of::<OnesweepShared>() as u32,
            4 * (ONESWEEP_WARPS * RADIX + RADIX + 32 + 2 * ONESWEEP_TILE)
        );
        assert_eq!(core::mem::size_of::<ScanShared>(), 36 * 4);
        assert_eq!(core::mem::offset_of!(OnesweepShared, keys) % 16, 0);
        assert_eq!(scan_tiles(0), 1);
        assert_eq!(scan_tiles(SCAN_TILE + 1), 2);
    }
}
