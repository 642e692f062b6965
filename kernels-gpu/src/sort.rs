//! Device radix sort of `(u32 key, u32 value)` pairs and the one-pass scan of the cell table.
//!
//! Launch policy and shared layouts: `murmur_common::sort`. LSD, 8-bit digits, one pass per
//! digit the keys need, after one `radix_counts` over the keys that counts every pass's digits
//! at once. A pass is one `radix_onesweep` launch (the
//! "onesweep" scheme): each block takes the next tile of `ONESWEEP_TILE` pairs, ranks them by digit
//! (stable: per-bit ballots per warp round, per-warp counters), publishes its digit counts at
//! once, learns where its digits go from the tiles before it through a decoupled look-back on
//! per-tile, per-digit status words (`LOOKBACK` tiles read at a time), stages the tile in shared
//! memory in digit order and writes it out in digit runs.

use crate::thread::{
    self, ballot, block, block_dim, grid_dim, lanemask_lt, ld_relaxed, ldg, ldg_nc, lds,
    red_shared_add, shared, shared_addr, shfl_idx, st_relaxed, stg_if, sts, sts_if, sync,
    sync_warp, tid, wait_for_previous_grid,
};
use core::mem::offset_of;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use murmur_common::sort::abi::{RadixCounts, RadixOnesweep, ScanCells};
use murmur_common::sort::{
    OnesweepShared, ScanShared, LOOKBACK, ONESWEEP_BLOCK, ONESWEEP_ITEMS, ONESWEEP_WARPS, RADIX,
    RADIX_BITS, SCAN_ITEMS,
};

/// Look-back status word of a (tile, digit): the flag in the top two bits, a count below.
const STATUS_AGGREGATE: u32 = 1 << 30;
const STATUS_INCLUSIVE: u32 = 2 << 30;
const STATUS_COUNT: u32 = (1 << 30) - 1;

/// Runs `$body` for `$r` = 0, 1, ..., `$n` - 1 as constants (`$n` a constant of at most 32).
macro_rules! for_items {
    ($n:expr, $r:ident, $body:block) => {
        for_items!(@ $n, $r, $body, 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
                                    16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31)
    };
    (@ $n:expr, $r:ident, $body:block, $($i:literal)*) => {
        $(if $i < $n {
            let $r: usize = $i;
            $body
        })*
    };
}

/// Stage `radix_counts`. Grid-stride over the keys; shared memory: one `DigitCounts` per pass.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn radix_counts(a: RadixCounts) {
    let (n, passes) = (a.n, a.passes);
    let keys = a.keys.as_ptr();
    let hist = shared_addr();
    let (t, bd) = (tid(), block_dim());
    let mut d = t;
    while d < passes * RADIX {
        sts(hist + 4 * d, 0);
        d += bd;
    }
    sync();
    // Four keys per 16-byte load (`keys` is the start of a device allocation), grid-stride.
    let count = |key: u32| {
        let mut p = 0;
        while p < passes {
            let digit = (key >> (p * RADIX_BITS)) & (RADIX - 1);
            red_shared_add(hist + 4 * (p * RADIX + digit), 1);
            p += 1;
        }
    };
    let (quads, me) = (n / 4, thread::block() * bd + t);
    let mut q = me;
    while q < quads {
        let k = *(keys as *const U32x4).add(q as usize);
        count(k.0[0]);
        count(k.0[1]);
        count(k.0[2]);
        count(k.0[3]);
        q += bd * thread::grid_dim();
    }
    if me < n % 4 {
        count(*keys.add((quads * 4 + me) as usize));
    }
    sync();
    let mut d = t;
    while d < passes * RADIX {
        let c = lds(hist + 4 * d);
        if c != 0 {
            a.counts.fetch_add(d as usize, c);
        }
        d += bd;
    }
}

/// Exclusive sums of `a` and of `b` over the block's `ONESWEEP_BLOCK` threads (scratch: 16 words
/// at shared-window address `scratch`). One barrier; the scratch is not reused afterwards.
#[inline(always)]
unsafe fn block_exclusive_sum2(a: u32, b: u32, scratch: u32) -> (u32, u32) {
    let (warp, lane) = (tid() / 32, tid() & 31);
    let (ia, ib) = (thread::warp_inclusive_sum(a), thread::warp_inclusive_sum(b));
    if lane == 31 {
        sts(scratch + 4 * warp, ia);
        sts(scratch + 4 * (ONESWEEP_WARPS + warp), ib);
    }
    sync();
    let (mut before_a, mut before_b) = (0, 0);
    let mut w = 0;
    while w < ONESWEEP_WARPS {
        if w < warp {
            before_a += lds(scratch + 4 * w);
            before_b += lds(scratch + 4 * (ONESWEEP_WARPS + w));
        }
        w += 1;
    }
    (before_a + ia - a, before_b + ib - b)
}

/// Stage `radix_onesweep`: one LSD pass over byte `shift / 8`, stable. `counts` holds this
/// pass's 256 digit counts over all keys (from `radix_counts`); `status` has `RADIX` words per
/// tile and then the tile ticket, all zeroed before the launch. Block: `ONESWEEP_BLOCK` threads;
/// shared memory: an `OnesweepShared`.
///
/// With `ITEMS` = `ONESWEEP_ITEMS` pairs per thread:
///
/// 1. Thread 0 takes the tile's ticket; each warp loads its `32 * ITEMS` keys (warp-striped:
///    round `r` holds pairs `r * 32 + lane` of the warp's contiguous run) and parks a copy in
///    the values' staging area, so that no key stays in a register across the barriers below.
/// 2. Ranking, round by round: the lanes with this lane's digit come from 8 ballots (one per
///    digit bit, no `match.any`); the highest of them adds their number to the warp's counter
///    of that digit, and each gets the counter before plus the peers below it. Equal digits thus
///    keep input order (stable). Ranks are kept as 16-bit halves, two per register.
/// 3. Thread `t` owns digit `t`: it sums the digit over the warps, publishes the tile's count of
///    it for the look-back at once (inclusive for tile 0), and a block scan gives the digit's
///    start in the tile and, from `counts`, its start in the output.
/// 4. Each key (read back from where it was parked) goes to its place in the tile, staged in
///    shared memory in digit order; the values are loaded only now, so that keys and values are
///    never all held at once, and their latency hides behind the look-back.
/// 5. Look-back: thread `t` reads the status of digit `t` in the `LOOKBACK` tiles before, all at
///    once, and adds counts down to the nearest tile whose running total is published (waiting
///    where a tile has published nothing yet), then publishes its own running total.
/// 6. Once every parked key is read back (a barrier), the values are staged too, and the tile is
///    written out in digit runs: staged slot `i` (digit `d`) goes to output base of `d` + `i` -
///    start of `d` in the tile.
///
/// Shared loads are batched ahead of the (predicated) stores that follow them, so that their
/// latencies overlap; `ptxas` cannot move a load above a shared store it might alias.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn radix_onesweep(a: RadixOnesweep) {
    onesweep::<{ ONESWEEP_ITEMS as usize }>(&a);
}

/// The onesweep pass with `ITEMS` pairs per thread (even, at most 32).
#[inline(always)]
unsafe fn onesweep<const ITEMS: usize>(a: &RadixOnesweep) {
    let (n, shift, tiles) = (a.n, a.shift, a.tiles);
    let (keys_in, values_in) = (a.keys_in.as_ptr(), a.values_in.as_ptr());
    let (keys_out, values_out) = (a.keys_out.as_mut_ptr(), a.values_out.as_mut_ptr());
    let (counts, status) = (a.counts.as_ptr(), a.status.as_mut_ptr());
    let items = ITEMS as u32;
    let tile_len = ONESWEEP_BLOCK * items;
    // Shared-window byte addresses of the `OnesweepShared` fields.
    let at = |offset: usize| thread::shared_addr() + offset as u32;
    let whist = at(offset_of!(OnesweepShared, warp_digits)); // counters, then the warps' places
    let base = at(offset_of!(OnesweepShared, base)); // output index - staged index
    let misc = at(offset_of!(OnesweepShared, scratch));
    let ticket = at(offset_of!(OnesweepShared, ticket));
    let keys_s = at(offset_of!(OnesweepShared, keys));
    let values_s = at(offset_of!(OnesweepShared, values));
    let (t, warp, lane) = (tid(), tid() / 32, tid() & 31);
    let digit_of = |key: u32| (key >> shift) & (RADIX - 1);
    let count = ldg_nc(counts.add(t as usize));
    if t == 0 {
        let tile = AtomicU32::from_ptr(status.add((tiles * RADIX) as usize))
            .fetch_add(1, Ordering::Relaxed);
        sts(ticket, tile);
    }
    let mut w = 0;
    while w < ONESWEEP_WARPS {
        sts(whist + 4 * (w * RADIX + t), 0);
        w += 1;
    }
    sync();
    let tile = lds(ticket);
    let seg = tile * tile_len + warp * 32 * items;
    let valid = |r: usize| seg + r as u32 * 32 + lane < n;
    // Until the values come, their staging area holds the keys in input order (each thread
    // reads back only its own), so that no key is held in a register across the barriers.
    let parked = |r: usize| values_s + 4 * (warp * 32 * items + r as u32 * 32 + lane);
    let mut keys = [0u32; ITEMS];
    for_items!(ITEMS, r, {
        if valid(r) {
            keys[r] = ldg_nc(keys_in.add((seg + r as u32 * 32 + lane) as usize));
        }
    });
    for_items!(ITEMS, r, {
        sts(parked(r), keys[r]);
    });
    let mine = whist + 4 * warp * RADIX;
    let below = lanemask_lt();
    // Two 16-bit ranks per word: item r in bits 16 * (r % 2) of word r / 2.
    let mut ranks = [0u32; ITEMS];
    for_items!(ITEMS, r, {
        let d = digit_of(keys[r]);
        let mut peers = ballot(valid(r));
        let mut b = 0;
        while b < RADIX_BITS {
            let set = (d >> b) & 1 != 0;
            let m = ballot(set);
            peers &= if set { m } else { !m };
            b += 1;
        }
        // A valid lane is among its peers; an invalid one never leads (its peers are valid
        // lanes or none, and then `leader` is out of range).
        let leader = 31u32.wrapping_sub(peers.leading_zeros());
        let mut before = 0;
        if lane == leader {
            let c = mine + 4 * d;
            before = lds(c);
            sts(c, before + peers.count_ones());
        }
        let rank = shfl_idx(before, leader) + (peers & below).count_ones();
        ranks[r / 2] |= rank << (16 * (r % 2));
        sync_warp();
    });
    sync();
    // Thread `t` owns digit `t`.
    let d = t;
    let mut col = [0u32; ONESWEEP_WARPS as usize];
    let mut total = 0;
    for (w, c) in col.iter_mut().enumerate() {
        *c = total;
        total += lds(whist + 4 * (w as u32 * RADIX + d));
    }
    let word = status.add((tile * RADIX + d) as usize);
    let flag = if tile == 0 {
        STATUS_INCLUSIVE
    } else {
        STATUS_AGGREGATE
    };
    st_relaxed(word, flag | total);
    let (tile_start, global) = block_exclusive_sum2(total, count, misc);
    for (w, c) in col.iter().enumerate() {
        sts(whist + 4 * (w as u32 * RADIX + d), tile_start + c);
    }
    sync();
    // Stage the keys: place = the warp's place for the digit + rank; keep the places (in the
    // rank halves: both are below 2^16). 8 items at a time, all loads first, then the
    // (predicated) stores, so that the loads overlap and not too many registers are live.
    let mut at = [0u32; ITEMS];
    let mut stage_keys = |group: usize| {
        for_items!(ITEMS, r, {
            if r / 8 == group {
                keys[r] = lds(parked(r));
            }
        });
        for_items!(ITEMS, r, {
            if r / 8 == group {
                at[r] = lds(mine + 4 * digit_of(keys[r]));
            }
        });
        for_items!(ITEMS, r, {
            if r / 8 == group {
                let ok = valid(r);
                ranks[r / 2] += if ok { at[r] } else { 0 } << (16 * (r % 2));
                let place = (ranks[r / 2] >> (16 * (r % 2))) & 0xffff;
                sts_if(ok, keys_s + 4 * place, keys[r]);
            }
        });
    };
    let mut group = 0;
    while group * 8 < ITEMS {
        stage_keys(group);
        group += 1;
    }
    let mut values = [0u32; ITEMS];
    for_items!(ITEMS, r, {
        if valid(r) {
            values[r] = ldg(values_in.add((seg + r as u32 * 32 + lane) as usize));
        }
    });
    // Look back over the tiles before this one for the digit's keys they hold.
    let mut prefix = 0u32;
    if tile != 0 {
        // Tiles j.. tile - 1 are summed into `prefix`.
        let mut j = tile;
        'walk: loop {
            let mut s = [STATUS_INCLUSIVE; LOOKBACK as usize];
            for (k, v) in s.iter_mut().enumerate() {
                let k = k as u32;
                if j > k {
                    *v = ld_relaxed(status.add(((j - 1 - k) * RADIX + d) as usize));
                }
            }
            for (k, &v) in s.iter().enumerate() {
                if v & !STATUS_COUNT == 0 {
                    // Tile j - 1 - k has published nothing yet: poll again from there.
                    j -= k as u32;
                    continue 'walk;
                }
                prefix += v & STATUS_COUNT;
                if v & STATUS_INCLUSIVE != 0 {
                    break 'walk;
                }
            }
            j -= LOOKBACK;
        }
        st_relaxed(word, STATUS_INCLUSIVE | (prefix + total));
    }
    sts(base + 4 * d, (global + prefix).wrapping_sub(tile_start));
    // Every parked key is read back: the values may take their place.
    sync();
    for_items!(ITEMS, r, {
        if valid(r) {
            let place = (ranks[r / 2] >> (16 * (r % 2))) & 0xffff;
            sts(values_s + 4 * place, values[r]);
        }
    });
    sync();
    let len = (n - tile * tile_len).min(tile_len);
    // Slots from `len` on hold leftovers (read, never written out); only the stores are
    // conditional, so that the items' shared loads overlap.
    for_items!(ITEMS, r, {
        let i = r as u32 * ONESWEEP_BLOCK + t;
        let key = lds(keys_s + 4 * i);
        let value = lds(values_s + 4 * i);
        let dest = lds(base + 4 * digit_of(key)).wrapping_add(i) as usize;
        stg_if(i < len, keys_out.wrapping_add(dest), key);
        stg_if(i < len, values_out.wrapping_add(dest), value);
    });
}

/// Four entries of a u32 table, for 16-byte loads and stores.
#[repr(C, align(16))]
#[derive(Clone, Copy)]
struct U32x4([u32; 4]);

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
/// Block `b` scans tile `b` (`block_dim * SCAN_ITEMS` entries) and waits only on lower tiles:
/// blocks start in index order, so those are already running (the order CUB's single-pass
/// scan relies on too). `status` has one word per tile, `epoch << 34 | flag << 32 | value`.
/// `state` is one word, `epoch << 32 | arrivals`: each block takes the launch's epoch and counts
/// itself in with one atomic as it starts, and the last to arrive moves `state` to the next
/// epoch with no arrivals (every block has its copy by then), so statuses of the previous launch
/// never match and nothing needs clearing between launches (the host zeroes `status` and sets
/// the epoch to 1 once). Launched with programmatic dependent launch, it waits for the previous
/// grid before reading `counts` (the atomic goes first: only this kernel touches `state`).
/// Shared memory: a `ScanShared`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn scan_cells(a: ScanCells) {
    let (m, counts, table) = (a.m, a.counts.as_mut_ptr(), a.table.as_mut_ptr());
    let (state, status) = (a.state.as_mut_ptr(), a.status.as_mut_ptr());
    let smem = shared::<ScanShared>();
    let warp_totals = (*smem).warp_totals.as_mut_ptr();
    let shared_epoch: *mut u32 = &mut (*smem).epoch;
    let shared_prefix: *mut u32 = &mut (*smem).prefix;
    let (t, bd) = (tid(), block_dim());
    let (warp, lane) = (t / 32, t & 31);
    let tile = block();
    let arrival = if t == 0 {
        AtomicU64::from_ptr(state).fetch_add(1, Ordering::Relaxed)
    } else {
        0
    };
    wait_for_previous_grid();
    let first = (tile * bd + t) * SCAN_ITEMS;
    // A whole run of SCAN_ITEMS entries moves as 16-byte vectors (`first` is a multiple of 8,
    // the buffers 256-byte aligned); the tile's tail entry by entry.
    let whole = first + SCAN_ITEMS <= m;
    let mut v = [0u32; SCAN_ITEMS as usize];
    if whole {
        let src = counts.add(first as usize) as *mut U32x4;
        for q in 0..SCAN_ITEMS as usize / 4 {
            let x = *src.add(q);
            v[4 * q..4 * q + 4].copy_from_slice(&x.0);
        }
        for q in 0..SCAN_ITEMS as usize / 4 {
            *src.add(q) = U32x4([0; 4]);
        }
    } else {
        for (j, x) in v.iter_mut().enumerate() {
            let i = first + j as u32;
            if i < m {
                *x = *counts.add(i as usize);
                *counts.add(i as usize) = 0;
            }
        }
    }
    let mut total = 0u32;
    for x in v {
        total += x;
    }
    let inclusive = thread::warp_inclusive_sum(total);
    if lane == 31 {
        *warp_totals.add(warp as usize) = inclusive;
    }
    if t == 0 {
        let epoch = (arrival >> 32) as u32;
        *shared_epoch = epoch;
        if arrival as u32 + 1 == grid_dim() {
            let next = (epoch + 1) & 0x3fff_ffff;
            *state = (if next == 0 { 1 } else { next } as u64) << 32;
        }
    }
    sync();
    let epoch = *shared_epoch as u64;
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
    let mut out = [0u32; SCAN_ITEMS as usize];
    for j in 0..SCAN_ITEMS as usize {
        out[j] = prefix;
        prefix += v[j];
    }
    if whole {
        let dst = table.add(first as usize) as *mut U32x4;
        for q in 0..SCAN_ITEMS as usize / 4 {
            *dst.add(q) = U32x4([out[4 * q], out[4 * q + 1], out[4 * q + 2], out[4 * q + 3]]);
        }
    } else {
        for (j, o) in out.iter().enumerate() {
            let i = first + j as u32;
            if i < m {
                *table.add(i as usize) = *o;
            }
        }
    }
}
