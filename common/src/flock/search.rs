//! Neighbour searches, written once for the CPU reference and the kernels.
//!
//! Storage is abstracted by closures so that the host passes slices and the kernels raw device
//! pointers: `boid(k)` returns `(index, position, velocity)` of the `k`-th entry the search walks.
//! Cells are found through `cell_start(key)`: the index of the first sorted boid whose key is
//! `>= key`, defined for every key in `0..=cell_count` (so cell `key` holds entries
//! `cell_start(key)..cell_start(key + 1)`, and with `Linear` keys a run of cells along x is one
//! contiguous range: the search walks 9 x-runs instead of 27 cells). Self is excluded by index;
//! every visited boid goes through [`RuleSums::accumulate`], which ignores boids out of range.

use super::grid::{CellOrder, Grid};
use super::params::FlockParams;
use super::rules::RuleSums;
use crate::math::Vec3;

/// Brute force (`naive`): every boid `0..n` but `me`.
#[inline(always)]
pub fn naive_sums<B>(p: &FlockParams, n: u32, me: u32, pos: Vec3, boid: B) -> RuleSums
where
    B: Fn(u32) -> (Vec3, Vec3),
{
    let mut s = RuleSums::default();
    let mut j = 0;
    while j < n {
        if j != me {
            let (q, v) = boid(j);
            s.accumulate(p, pos, q, v);
        }
        j += 1;
    }
    s
}

/// Calls `visit(start, end)` for each run of sorted entries the grid search must look at, for a
/// boid at `pos`: the cells meeting `[pos - r, pos + r]` (`r` = largest rule distance) minus
/// those that cannot hold a neighbour, z then y then x. `Linear` keys: one run per (y, z) row,
/// from the first to the last kept cell of the row; `Morton`: one run per kept cell.
#[inline(always)]
pub fn for_each_run<S, V>(p: &FlockParams, grid: &Grid, pos: Vec3, cell_start: S, mut visit: V)
where
    S: Fn(u32) -> u32,
    V: FnMut(u32, u32),
{
    let r = p.max_distance();
    let b = grid.search_box(pos, r);
    let linear = grid.order == CellOrder::Linear as u32;
    let mut z = b.lo[2];
    while z <= b.hi[2] {
        let mut y = b.lo[1];
        while y <= b.hi[1] {
            if linear {
                // Culling is convex along a row: trim the row's ends.
                let mut x0 = b.lo[0];
                let mut x1 = b.hi[0];
                while x0 <= x1 && !grid.cell_may_hold_neighbour([x0, y, z], pos, r) {
                    x0 += 1;
                }
                while x1 > x0 && !grid.cell_may_hold_neighbour([x1, y, z], pos, r) {
                    x1 -= 1;
                }
                if x0 <= x1 {
                    let k0 = grid.key_of_cell([x0, y, z]);
                    let k1 = grid.key_of_cell([x1, y, z]);
                    visit(cell_start(k0), cell_start(k1 + 1));
                }
            } else {
                let mut x = b.lo[0];
                while x <= b.hi[0] {
                    if grid.cell_may_hold_neighbour([x, y, z], pos, r) {
                        let k = grid.key_of_cell([x, y, z]);
                        visit(cell_start(k), cell_start(k + 1));
                    }
                    x += 1;
                }
            }
            y += 1;
        }
        z += 1;
    }
}

/// Uniform-grid search (`scattered` and `coherent`): sums over every entry of every run of
/// [`for_each_run`], except `me`. `boid(k)` gives the `k`-th entry's index and position;
/// `velocity(k)` its velocity, read only for alignment neighbours.
#[inline(always)]
pub fn grid_sums<S, B, V>(
    p: &FlockParams,
    grid: &Grid,
    me: u32,
    pos: Vec3,
    cell_start: S,
    boid: B,
    velocity: V,
) -> RuleSums
where
    S: Fn(u32) -> u32,
    B: Fn(u32) -> (u32, Vec3),
    V: Fn(u32) -> Vec3,
{
    let mut s = RuleSums::default();
    for_each_run(p, grid, pos, cell_start, |start, end| {
        let mut k = start;
        while k < end {
            let (j, q) = boid(k);
            if j != me {
                s.accumulate_with(p, pos, q, || velocity(k));
            }
            k += 1;
        }
    });
    s
}

/// Writes, through `set(key, index)`, the entries of the lower-bound table `cell_start` owned by
/// sorted entry `i` of `n` (keys sorted ascending, `key(i)` reads them): keys from the previous
/// entry's key + 1 (or 0) up to `key(i)` start at `i`; the last entry also ends the table with
/// `n` for keys up to `cell_count`. Every key in `0..=cell_count` is written exactly once.
#[inline(always)]
pub fn fill_cell_start<K, S>(i: u32, n: u32, cell_count: u32, key: K, mut set: S)
where
    K: Fn(u32) -> u32,
    S: FnMut(u32, u32),
{
    let k = key(i);
    let mut from = if i == 0 { 0 } else { key(i - 1) + 1 };
    while from <= k {
        set(from, i);
        from += 1;
    }
    if i + 1 == n {
        let mut t = k + 1;
        while t <= cell_count {
            set(t, n);
            t += 1;
        }
    }
}
