//! Neighbour searches, written once for the CPU reference and the kernels.
//!
//! Storage is abstracted by closures so that the host passes slices and the kernels raw device
//! pointers: `boid(k)` returns `(index, position, velocity)` of the `k`-th entry the search walks,
//! `cell_range(key)` the half-open range `[start, end)` of entries in a cell (empty: `start == end`).
//! Self is excluded by index; every visited boid goes through [`RuleSums::accumulate`].

use super::grid::Grid;
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

/// Uniform-grid search (`scattered` and `coherent`): the cells meeting `[pos - r, pos + r]` with
/// `r = max rule distance`, skipping cells that cannot hold a neighbour, z then y then x.
#[inline(always)]
pub fn grid_sums<R, B>(
    p: &FlockParams,
    grid: &Grid,
    me: u32,
    pos: Vec3,
    cell_range: R,
    boid: B,
) -> RuleSums
where
    R: Fn(u32) -> (u32, u32),
    B: Fn(u32) -> (u32, Vec3, Vec3),
{
    let r = p.max_distance();
    let b = grid.search_box(pos, r);
    let mut s = RuleSums::default();
    let mut z = b.lo[2];
    while z <= b.hi[2] {
        let mut y = b.lo[1];
        while y <= b.hi[1] {
            let mut x = b.lo[0];
            while x <= b.hi[0] {
                let c = [x, y, z];
                if grid.cell_may_hold_neighbour(c, pos, r) {
                    let (start, end) = cell_range(grid.key_of_cell(c));
                    let mut k = start;
                    while k < end {
                        let (j, q, v) = boid(k);
                        if j != me {
                            s.accumulate(p, pos, q, v);
                        }
                        k += 1;
                    }
                }
                x += 1;
            }
            y += 1;
        }
        z += 1;
    }
    s
}
