//! Device radix sort of `(u32 key, u32 value)` pairs and the exclusive scan it uses.
//!
//! LSD, 8-bit digits, one pass per digit the keys need. A pass is three stages:
//! `radix_histogram` (per-tile digit counts, digit-major so one scan yields global offsets),
//! the scan (`scan_tiles` + `scan_add`, applied recursively by the host), and `radix_scatter`
//! (stable: each round ranks a block's elements with `match.any.sync` per warp, then by warp).
//! Tiles are `tile` consecutive elements per block (a multiple of the block size).

use crate::thread::{self, block, block_dim, grid_dim, match_any, shared, sync, tid};
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Digit width of one pass.
pub const RADIX_BITS: u32 = 8;
/// Buckets per pass.
pub const RADIX: u32 = 1 << RADIX_BITS;
/// Elements each thread scans in `scan_tiles`.
pub const SCAN_ITEMS: u32 = 8;

#[inline(always)]
unsafe fn smem_add(p: *mut u32, v: u32) {
    AtomicU32::from_ptr(p).fetch_add(v, Ordering::Relaxed);
}

/// Stage `radix_histogram`: `hist[digit * blocks + block]` = occurrences of `digit` in the tile.
/// Shared memory: `RADIX * 4` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn radix_histogram(
    n: u32,
    keys: *const u32,
    shift: u32,
    tile: u32,
    hist: *mut u32,
) {
    let counts = shared::<u32>();
    let (t, bd, b) = (tid(), block_dim(), block());
    let mut d = t;
    while d < RADIX {
        *counts.add(d as usize) = 0;
        d += bd;
    }
    sync();
    let start = b * tile;
    let end = if start + tile < n { start + tile } else { n };
    let lane = t & 31;
    let mut i = start + t;
    // Whole warps iterate together (match.any needs all 32 lanes).
    while i - t + (t & !31) < end {
        let valid = i < end;
        let digit = if valid {
            (*keys.add(i as usize) >> shift) & (RADIX - 1)
        } else {
            RADIX
        };
        let peers = match_any(digit);
        if valid && peers.trailing_zeros() == lane {
            smem_add(counts.add(digit as usize), peers.count_ones());
        }
        i += bd;
    }
    sync();
    let blocks = grid_dim();
    let mut d = t;
    while d < RADIX {
        *hist.add((d * blocks + b) as usize) = *counts.add(d as usize);
        d += bd;
    }
}

/// Stage `radix_scatter`: stable scatter of the tile's pairs to their digit's next free slots.
/// `offsets` is the exclusive scan of `radix_histogram`'s output. Shared memory:
/// `(RADIX + warps * RADIX) * 4` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn radix_scatter(
    n: u32,
    keys_in: *const u32,
    values_in: *const u32,
    keys_out: *mut u32,
    values_out: *mut u32,
    shift: u32,
    tile: u32,
    offsets: *const u32,
) {
    let base = shared::<u32>();
    let (t, bd, b) = (tid(), block_dim(), block());
    let warps = bd / 32;
    let (warp, lane) = (t / 32, t & 31);
    let wcount = base.add(RADIX as usize);
    let blocks = grid_dim();
    let mut d = t;
    while d < RADIX {
        *base.add(d as usize) = *offsets.add((d * blocks + b) as usize);
        d += bd;
    }
    let mut e = t;
    while e < warps * RADIX {
        *wcount.add(e as usize) = 0;
        e += bd;
    }
    sync();
    let start = b * tile;
    let end = if start + tile < n { start + tile } else { n };
    let mut round = start;
    while round < end {
        let i = round + t;
        let valid = i < end;
        let (key, value) = if valid {
            (*keys_in.add(i as usize), *values_in.add(i as usize))
        } else {
            (0, 0)
        };
        let digit = if valid {
            (key >> shift) & (RADIX - 1)
        } else {
            RADIX
        };
        let peers = match_any(digit);
        let rank = (peers & ((1u32 << lane) - 1)).count_ones();
        if valid && peers.trailing_zeros() == lane {
            *wcount.add((warp * RADIX + digit) as usize) = peers.count_ones();
        }
        sync();
        if valid {
            let mut off = *base.add(digit as usize) + rank;
            let mut w = 0;
            while w < warp {
                off += *wcount.add((w * RADIX + digit) as usize);
                w += 1;
            }
            *keys_out.add(off as usize) = key;
            *values_out.add(off as usize) = value;
        }
        sync();
        let mut d = t;
        while d < RADIX {
            let mut total = 0;
            let mut w = 0;
            while w < warps {
                let c = wcount.add((w * RADIX + d) as usize);
                total += *c;
                *c = 0;
                w += 1;
            }
            *base.add(d as usize) += total;
            d += bd;
        }
        sync();
        round += bd;
    }
}

/// Stage `scan_tiles`: exclusive scan, in place, of each tile of `block_dim * SCAN_ITEMS`
/// entries of `data[..m]`; the tile's total goes to `sums[block]`. Shared memory: 32 * 4 bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_tiles(m: u32, data: *mut u32, sums: *mut u32) {
    let warp_totals = shared::<u32>();
    let (t, bd, b) = (tid(), block_dim(), block());
    let (warp, lane) = (t / 32, t & 31);
    let first = (b * bd + t) * SCAN_ITEMS;
    let mut v = [0u32; SCAN_ITEMS as usize];
    let mut total = 0u32;
    for (j, x) in v.iter_mut().enumerate() {
        let i = first + j as u32;
        if i < m {
            *x = *data.add(i as usize);
        }
        total += *x;
    }
    let inclusive = thread::warp_inclusive_sum(total);
    if lane == 31 {
        *warp_totals.add(warp as usize) = inclusive;
    }
    sync();
    if warp == 0 {
        let wt = if lane < bd / 32 {
            *warp_totals.add(lane as usize)
        } else {
            0
        };
        let wi = thread::warp_inclusive_sum(wt);
        if lane < bd / 32 {
            *warp_totals.add(lane as usize) = wi - wt;
        }
    }
    sync();
    let mut prefix = *warp_totals.add(warp as usize) + inclusive - total;
    if t == bd - 1 {
        *sums.add(b as usize) = prefix + total;
    }
    for (j, x) in v.iter().enumerate() {
        let i = first + j as u32;
        if i < m {
            *data.add(i as usize) = prefix;
        }
        prefix += *x;
    }
}

/// Stage `scan_add`: adds the scanned tile totals `sums[tile]` to every entry of each tile of
/// `1 << tile_shift` entries.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_add(
    m: u32,
    data: *mut u32,
    sums: *const u32,
    tile_shift: u32,
) {
    let i = thread::index() as u32;
    if i < m {
        *data.add(i as usize) += *sums.add((i >> tile_shift) as usize);
    }
}

/// Tile status of [`scan_cells`]: nothing published yet for this launch.
const SCAN_PENDING: u64 = 0;
/// Tile status: the tile's own total is published.
const SCAN_AGGREGATE: u64 = 1;
/// Tile status: the sum of every entry up to the tile's end is published.
const SCAN_INCLUSIVE: u64 = 2;

/// Stage `scan_cells`: `table[..m]` = exclusive prefix sum of `counts[..m]`, and `counts`
/// zeroed, in one pass (a chained scan with decoupled look-back: each tile publishes its total,
/// then its running total once the tiles before it have, so no second pass is needed).
///
/// Tiles are `block_dim * SCAN_ITEMS` entries, taken in launch order from a ticket so a tile
/// only ever waits on tiles already running. `state` is `[ticket, finished, epoch]`; `status`
/// has one word per tile, `epoch << 34 | flag << 32 | value`. The last block to finish resets
/// the ticket and the finished count and moves to the next epoch, so statuses of the previous
/// launch never match and nothing needs clearing between launches (the host zeroes `status`
/// and sets `epoch = 1` once). Shared memory: `(32 + 4) * 4` bytes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_cells(
    m: u32,
    counts: *mut u32,
    table: *mut u32,
    state: *mut u32,
    status: *mut u64,
) {
    let warp_totals = shared::<u32>();
    let shared_tile = warp_totals.add(32);
    let shared_epoch = warp_totals.add(33);
    let shared_prefix = warp_totals.add(34);
    let (t, bd) = (tid(), block_dim());
    let (warp, lane) = (t / 32, t & 31);
    if t == 0 {
        *shared_tile = AtomicU32::from_ptr(state).fetch_add(1, Ordering::Relaxed);
        *shared_epoch = AtomicU32::from_ptr(state.add(2)).load(Ordering::Relaxed);
    }
    sync();
    let tile = *shared_tile;
    let epoch = *shared_epoch as u64;
    let first = (tile * bd + t) * SCAN_ITEMS;
    let mut v = [0u32; SCAN_ITEMS as usize];
    let mut total = 0u32;
    for (j, x) in v.iter_mut().enumerate() {
        let i = first + j as u32;
        if i < m {
            *x = *counts.add(i as usize);
            *counts.add(i as usize) = 0;
        }
        total += *x;
    }
    let inclusive = thread::warp_inclusive_sum(total);
    if lane == 31 {
        *warp_totals.add(warp as usize) = inclusive;
    }
    sync();
    if warp == 0 {
        let wt = if lane < bd / 32 {
            *warp_totals.add(lane as usize)
        } else {
            0
        };
        let wi = thread::warp_inclusive_sum(wt);
        if lane < bd / 32 {
            *warp_totals.add(lane as usize) = wi - wt;
        }
        // Lane 31's `wi` is the tile's total; the whole warp looks back, 32 tiles at a time.
        let aggregate = thread::shfl_idx(wi, 31);
        let publish = |flag: u64, value: u32| {
            AtomicU64::from_ptr(status.add(tile as usize))
                .store(epoch << 34 | flag << 32 | value as u64, Ordering::Relaxed);
        };
        let mut prefix = 0u32;
        if tile == 0 {
            if lane == 0 {
                publish(SCAN_INCLUSIVE, aggregate);
            }
        } else {
            if lane == 0 {
                publish(SCAN_AGGREGATE, aggregate);
            }
            // Lane l reads tile `end - l`; tiles before 0 count as an inclusive zero.
            let mut end = tile as i64 - 1;
            loop {
                let j = end - lane as i64;
                let (flag, value) = if j < 0 {
                    (SCAN_INCLUSIVE, 0)
                } else {
                    let s = AtomicU64::from_ptr(status.add(j as usize)).load(Ordering::Relaxed);
                    if s >> 34 == epoch {
                        ((s >> 32) & 3, s as u32)
                    } else {
                        (SCAN_PENDING, 0)
                    }
                };
                if thread::ballot(flag == SCAN_PENDING) != 0 {
                    continue;
                }
                let inclusive = thread::ballot(flag == SCAN_INCLUSIVE);
                if inclusive != 0 {
                    // Sum down to the nearest tile whose running total is known.
                    let nearest = inclusive.trailing_zeros();
                    prefix += thread::warp_sum(if lane <= nearest { value } else { 0 });
                    break;
                }
                prefix += thread::warp_sum(value);
                end -= 32;
            }
            if lane == 0 {
                publish(SCAN_INCLUSIVE, prefix + aggregate);
            }
        }
        if lane == 0 {
            *shared_prefix = prefix;
        }
    }
    sync();
    let mut prefix = *shared_prefix + *warp_totals.add(warp as usize) + inclusive - total;
    for (j, x) in v.iter().enumerate() {
        let i = first + j as u32;
        if i < m {
            *table.add(i as usize) = prefix;
        }
        prefix += *x;
    }
    if t == 0 {
        // Every block got its ticket and read the epoch before counting itself finished.
        let finished = AtomicU32::from_ptr(state.add(1)).fetch_add(1, Ordering::AcqRel);
        if finished + 1 == grid_dim() {
            *state = 0;
            *state.add(1) = 0;
            let next = (epoch as u32 + 1) & 0x3fff_ffff;
            *state.add(2) = if next == 0 { 1 } else { next };
        }
    }
}
