//! Neighbour searches, written once for the CPU reference and the kernels.
//!
//! Storage is abstracted by closures so that the host passes slices and the kernels raw device
//! pointers: `boid(k)` returns the position and velocity of the `k`-th entry the search walks.
//! Cells are found through `cell_start(key)`: the index of the first sorted boid whose key is
//! `>= key`, defined for every key in `0..=cell_count` (so cell `key` holds entries
//! `cell_start(key)..cell_start(key + 1)`, and with `Linear` keys a run of cells along x is one
//! contiguous range: the search walks one run per row of its box, not one per cell).
//!
//! The grid search visits the boid itself too and takes it back out at the end
//! ([`RuleSums::remove_self`]), so its inner loop has no index test; every visited boid goes
//! through [`RuleSums::accumulate`], which ignores boids out of range.
use super::grid::{CellOrder, Grid};
use super::params::FlockParams;
use super::rules::RuleSums;
use crate::math::{sqrt_approx, Vec3};

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

/// Calls `visit(key_lo, key_end)` for each run of cells the grid search must look at, for a boid
/// at `pos`: the run's entries are `cell_start(key_lo)..cell_start(key_end)`. The cells are those
/// meeting `[pos - r, pos + r]` (`r` = largest rule distance) that can hold a neighbour
/// ([`Grid::cell_may_hold_neighbour`]), z then y then x. `Linear` keys: one run per (y, z) row
/// whose cells can hold one, trimmed to the x-range `pos.x ± sqrt(r^2 - dy^2 - dz^2)` (`dy`, `dz`:
/// the row's distance to `pos`); `Morton`: one run per cell.
#[inline(always)]
pub fn for_each_run_keys<V>(p: &FlockParams, grid: &Grid, pos: Vec3, mut visit: V)
where
    V: FnMut(u32, u32),
{
    let r = p.max_distance();
    let r2 = r * r;
    let b = grid.search_box(pos, r);
    let linear = grid.order == CellOrder::Linear as u32;
    let m = grid.margin();
    let mut z = b.lo[2];
    while z <= b.hi[2] {
        let dz = grid.axis_gap(z, pos.z);
        let mut y = b.lo[1];
        while y <= b.hi[1] {
            let dy = grid.axis_gap(y, pos.y);
            let rest = r2 - dy * dy - dz * dz;
            if rest > 0.0 {
                if linear {
                    // Cells of the row closer than r: |x gap| < sqrt(rest), widened by the margin
                    // (and by 1e-4 relative for the approximate root: any superset of the
                    // neighbours' cells gives the same sums in the same order).
                    let h = sqrt_approx(rest) * 1.0001 + m;
                    let x0 = max_u32(grid.coord_x(pos.x - h), b.lo[0]);
                    let x1 = min_u32(grid.coord_x(pos.x + h), b.hi[0]);
                    visit(
                        grid.key_of_cell([x0, y, z]),
                        grid.key_of_cell([x1, y, z]) + 1,
                    );
                } else {
                    let mut x = b.lo[0];
                    while x <= b.hi[0] {
                        if grid.cell_may_hold_neighbour([x, y, z], pos, r) {
                            let k = grid.key_of_cell([x, y, z]);
                            visit(k, k + 1);
                        }
                        x += 1;
                    }
                }
            }
            y += 1;
        }
        z += 1;
    }
}

/// [`for_each_run_keys`] with the runs as entry ranges: `visit(start, end)`, in the same order.
/// Each run's bounds are read before the previous run is visited, so on a GPU the table loads
/// of the next row are in flight while the current one is walked.
#[inline(always)]
pub fn for_each_run<S, V>(p: &FlockParams, grid: &Grid, pos: Vec3, cell_start: S, mut visit: V)
where
    S: Fn(u32) -> u32,
    V: FnMut(u32, u32),
{
    let mut pending: Option<(u32, u32)> = None;
    for_each_run_keys(p, grid, pos, |k0, k1| {
        let next = (cell_start(k0), cell_start(k1));
        if let Some((start, end)) = pending {
            visit(start, end);
        }
        pending = Some(next);
    });
    if let Some((start, end)) = pending {
        visit(start, end);
    }
}

/// Calls `visit(start, end)` for each run of entries of the cell box `lo..=hi` (cell
/// coordinates): one run per (y, z) row with `Linear` keys (a row is contiguous), one per cell
/// otherwise; z then y then x. For a group of boids consecutive in cell order (a block) that
/// walks the union of their search boxes together.
#[inline(always)]
pub fn for_each_box_run<S, V>(grid: &Grid, lo: [u32; 3], hi: [u32; 3], cell_start: S, mut visit: V)
where
    S: Fn(u32) -> u32,
    V: FnMut(u32, u32),
{
    let linear = grid.order == CellOrder::Linear as u32;
    let mut z = lo[2];
    while z <= hi[2] {
        let mut y = lo[1];
        while y <= hi[1] {
            let mut x = lo[0];
            while x <= hi[0] {
                let last = if linear { hi[0] } else { x };
                visit(
                    cell_start(grid.key_of_cell([x, y, z])),
                    cell_start(grid.key_of_cell([last, y, z]) + 1),
                );
                x = last + 1;
            }
            y += 1;
        }
        z += 1;
    }
}

#[inline(always)]
fn min_u32(a: u32, b: u32) -> u32 {
    if a < b {
        a
    } else {
        b
    }
}

#[inline(always)]
fn max_u32(a: u32, b: u32) -> u32 {
    if a > b {
        a
    } else {
        b
    }
}

/// Uniform-grid search (`scattered` and `coherent`) for the boid at `pos` with velocity `vel`:
/// the rule sums over every entry of every run of [`for_each_run_keys`], run by run, the boid
/// itself taken back out. `boid(k)` gives the `k`-th entry's position and velocity (the
/// velocity is used only for alignment neighbours, so a caller reading it through a pointer
/// loads it only for them).
///
/// With nested radii ([`FlockParams::radii_nested`], the CIS 565 defaults) each candidate goes
/// through [`RuleSums::accumulate_nested`]: one distance test instead of three. Same sums.
#[inline(always)]
pub fn grid_sums<S, B>(
    p: &FlockParams,
    grid: &Grid,
    pos: Vec3,
    vel: Vec3,
    cell_start: S,
    boid: B,
) -> RuleSums
where
    S: Fn(u32) -> u32,
    B: Fn(u32) -> (Vec3, Vec3),
{
    grid_sums_as::<false, S, B>(p, grid, pos, vel, cell_start, boid)
}

/// [`grid_sums`], through [`RuleSums::accumulate_nested_predicated`] when `PREDICATED` and the
/// radii nest: the same sums, without a branch per candidate on the device (for flocks too small
/// to fill the GPU; see that function).
#[inline(always)]
pub fn grid_sums_as<const PREDICATED: bool, S, B>(
    p: &FlockParams,
    grid: &Grid,
    pos: Vec3,
    vel: Vec3,
    cell_start: S,
    boid: B,
) -> RuleSums
where
    S: Fn(u32) -> u32,
    B: Fn(u32) -> (Vec3, Vec3),
{
    let mut s = RuleSums::default();
    if p.radii_nested() {
        for_each_run(p, grid, pos, cell_start, |start, end| {
            let mut k = start;
            while k < end {
                let (q, v) = boid(k);
                if PREDICATED {
                    s.accumulate_nested_predicated(p, pos, q, v);
                } else {
                    s.accumulate_nested(p, pos, q, v);
                }
                k += 1;
            }
        });
        s.n_alignment = s.n_cohesion;
    } else {
        for_each_run(p, grid, pos, cell_start, |start, end| {
            let mut k = start;
            while k < end {
                let (q, v) = boid(k);
                s.accumulate(p, pos, q, v);
                k += 1;
            }
        });
    }
    s.remove_self(p, vel);
    s
}

/// Sorts the entries `start..end` (one cell) by id in place: insertion sort through
/// `id(k)` (entry `k`'s id), `take(k)` (its record) and `put(k, record)`. Ids are unique, so
/// the order is the same whatever order binning left. A cell holds a few dozen boids, so the
/// quadratic sort is one thread's short loop.
#[inline(always)]
pub fn order_cell_by_id<T, I, G, P>(start: u32, end: u32, id: I, take: G, put: P)
where
    I: Fn(&T) -> u32,
    G: Fn(u32) -> T,
    P: Fn(u32, T),
{
    let mut i = start + 1;
    while i < end {
        let cur = take(i);
        let key = id(&cur);
        let mut j = i;
        while j > start {
            let prev = take(j - 1);
            if id(&prev) <= key {
                break;
            }
            put(j, prev);
            j -= 1;
        }
        if j != i {
            put(j, cur);
        }
        i += 1;
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::RefCell;

    #[test]
    fn a_cell_is_ordered_by_id_whatever_its_order() {
        // (id, payload) records; cells [0, 1), [1, 6), [6, 9) as two tables would bin them.
        let v = RefCell::new([
            (7u32, 0.7f32),
            (9, 0.9),
            (3, 0.3),
            (5, 0.5),
            (4, 0.4),
            (1, 0.1),
            (8, 0.8),
            (2, 0.2),
            (6, 0.6),
        ]);
        for (s, e) in [(0u32, 1u32), (1, 6), (6, 9)] {
            order_cell_by_id(
                s,
                e,
                |r: &(u32, f32)| r.0,
                |k| v.borrow()[k as usize],
                |k, r| v.borrow_mut()[k as usize] = r,
            );
        }
        let ids: [u32; 9] = core::array::from_fn(|k| v.borrow()[k].0);
        assert_eq!(ids, [7, 1, 3, 4, 5, 9, 2, 6, 8]);
        assert!(v
            .borrow()
            .iter()
            .all(|r| (r.1 * 10.0).round() as u32 == r.0));
    }
}
