//! The coupled flock's neighbour search: a uniform grid over the boids' box ([`BoidBox`]) with
//! cells at least the largest rule distance wide, so a boid's neighbours lie in the 3 x 3 x 3
//! cells around its own. Across a periodic axis the search wraps and moves the far side's
//! positions by the period (each neighbour at its nearest image); along a wall axis it stops at
//! the box's faces. Keys are x fastest, as the flock's `Linear` keys, so a counting sort's
//! `cell_start` table serves it: cell `key` holds sorted entries
//! `cell_start(key)..cell_start(key + 1)`.
//!
//! Each neighbour is seen at most once in range when every periodic extent is at least twice
//! the reach ([`BoxGrid::periodic_fits`]): two images of a boid are a period apart, so only one
//! can lie closer than the reach. The standalone flock keeps its own cube grid
//! ([`crate::flock::grid`]), its snap-to-face wrap and its non-periodic search.

use super::BoidBox;
use crate::flock::params::FlockParams;
use crate::flock::rules::RuleSums;
use crate::math::Vec3;

/// A uniform grid over a [`BoidBox`] (lattice units). `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoxGrid {
    /// The box's lower corner.
    pub lo: [f32; 3],
    /// The box's extent per axis (the period of a periodic axis).
    pub extent: [f32; 3],
    /// Cells per unit length per axis.
    pub inv_width: [f32; 3],
    /// Cells per axis (at least 1).
    pub dims: [u32; 3],
    /// Bit `a`: axis `a` is periodic.
    pub periodic: u32,
}

impl BoxGrid {
    /// The grid of `b` with cells at least `reach` wide: `floor(extent / reach)` cells per axis
    /// (at least 1), spanning the box exactly.
    pub fn new(b: &BoidBox, reach: f32) -> BoxGrid {
        let mut g = BoxGrid {
            lo: b.lo,
            periodic: b.periodic,
            ..BoxGrid::default()
        };
        for a in 0..3 {
            let extent = b.hi[a] - b.lo[a];
            let n = if reach > 0.0 {
                (extent / reach) as u32
            } else {
                1
            };
            g.extent[a] = extent;
            g.dims[a] = n.max(1);
            g.inv_width[a] = g.dims[a] as f32 / extent;
        }
        g
    }

    /// The first periodic axis shorter than twice `reach` (where a neighbour could be in range
    /// at two images), or `None` when every periodic axis is long enough.
    pub fn periodic_fits(b: &BoidBox, reach: f32) -> Option<usize> {
        (0..3).find(|&a| b.periodic >> a & 1 != 0 && b.hi[a] - b.lo[a] < 2.0 * reach)
    }

    /// Cells of the grid.
    pub fn cell_count(&self) -> u32 {
        self.dims[0] * self.dims[1] * self.dims[2]
    }

    /// The cell holding `p` (clamped into the grid: a boid on a wall face, or a hair outside it
    /// through rounding, belongs to the face's cell).
    #[inline(always)]
    pub fn cell_of(&self, p: Vec3) -> [u32; 3] {
        let p = p.to_array();
        let mut c = [0u32; 3];
        unroll!(a in [0, 1, 2] => {
            let x = (p[a] - self.lo[a]) * self.inv_width[a];
            c[a] = if x > 0.0 { (x as u32).min(self.dims[a] - 1) } else { 0 };
        });
        c
    }

    /// The key of cell `c`, x fastest.
    #[inline(always)]
    pub fn key(&self, c: [u32; 3]) -> u32 {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    /// Calls `visit(key, shift)` for each cell of the 3 x 3 x 3 block around `p`'s cell, z then
    /// y then x, with `shift` the move that brings that cell's positions next to `p` (a period
    /// across a periodic face, else zero). Cells beyond a wall face are not visited; along a
    /// periodic axis of fewer than 3 cells one cell is visited under several shifts.
    #[inline(always)]
    pub fn for_each_neighbour_cell(&self, p: Vec3, mut visit: impl FnMut(u32, Vec3)) {
        let own = self.cell_of(p);
        // Per axis, the three neighbouring coordinates and their shifts (`u32::MAX`: none).
        let mut coord = [[u32::MAX; 3]; 3];
        let mut shift = [[0.0f32; 3]; 3];
        unroll!(a in [0, 1, 2] => {
            let n = self.dims[a];
            let periodic = self.periodic >> a & 1 != 0;
            for (k, o) in [-1i64, 0, 1].into_iter().enumerate() {
                let c = own[a] as i64 + o;
                if c < 0 {
                    if periodic {
                        coord[a][k] = (c + n as i64) as u32;
                        shift[a][k] = -self.extent[a];
                    }
                } else if c >= n as i64 {
                    if periodic {
                        coord[a][k] = (c - n as i64) as u32;
                        shift[a][k] = self.extent[a];
                    }
                } else {
                    coord[a][k] = c as u32;
                }
            }
        });
        for kz in 0..3 {
            if coord[2][kz] == u32::MAX {
                continue;
            }
            for ky in 0..3 {
                if coord[1][ky] == u32::MAX {
                    continue;
                }
                for kx in 0..3 {
                    if coord[0][kx] == u32::MAX {
                        continue;
                    }
                    let key = self.key([coord[0][kx], coord[1][ky], coord[2][kz]]);
                    visit(key, Vec3::new(shift[0][kx], shift[1][ky], shift[2][kz]));
                }
            }
        }
    }
}

/// The rule sums of the boid at `pos` (velocity `own_vel`) over the grid's 3 x 3 x 3 cells
/// around it, each candidate at its image next to `pos`: the boid itself is visited too and
/// taken back out ([`RuleSums::remove_self`]). `boid(k)` is sorted entry `k`'s position and
/// velocity, `cell_start` as in the module's header.
#[inline(always)]
pub fn box_grid_sums<S, B>(
    p: &FlockParams,
    grid: &BoxGrid,
    pos: Vec3,
    own_vel: Vec3,
    cell_start: S,
    boid: B,
) -> RuleSums
where
    S: Fn(u32) -> u32,
    B: Fn(u32) -> (Vec3, Vec3),
{
    let mut s = RuleSums::default();
    grid.for_each_neighbour_cell(pos, |key, shift| {
        let (start, end) = (cell_start(key), cell_start(key + 1));
        for k in start..end {
            let (q, v) = boid(k);
            s.accumulate(p, pos, q + shift, v);
        }
    });
    s.remove_self(p, own_vel);
    s
}

/// Brute force: every boid `0..n` but `me`, each at its image nearest to `pos` (along a
/// periodic axis the position moved by minus one, zero or one period, whichever lands nearest;
/// the same sums as [`box_grid_sums`] for every boid in range, in another order).
pub fn box_naive_sums<B>(
    p: &FlockParams,
    b: &BoidBox,
    n: u32,
    me: u32,
    pos: Vec3,
    boid: B,
) -> RuleSums
where
    B: Fn(u32) -> (Vec3, Vec3),
{
    let mut s = RuleSums::default();
    for j in 0..n {
        if j == me {
            continue;
        }
        let (q, v) = boid(j);
        s.accumulate(p, pos, nearest_image(b, pos, q), v);
    }
    s
}

/// `q` moved by whole periods along the periodic axes of `b` to lie nearest to `pos`.
pub fn nearest_image(b: &BoidBox, pos: Vec3, q: Vec3) -> Vec3 {
    let (p, mut q) = (pos.to_array(), q.to_array());
    for a in 0..3 {
        if b.periodic >> a & 1 == 0 {
            continue;
        }
        let l = b.hi[a] - b.lo[a];
        let mut best = q[a];
        for shift in [-l, l] {
            if ((q[a] + shift) - p[a]).abs() < (best - p[a]).abs() {
                best = q[a] + shift;
            }
        }
        q[a] = best;
    }
    Vec3::from_array(q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::length;
    use std::vec::Vec;

    /// Boids sorted by cell (a counting sort), with their cell starts.
    fn sorted(g: &BoxGrid, boids: &[(Vec3, Vec3)]) -> (Vec<(Vec3, Vec3)>, Vec<u32>) {
        let n = g.cell_count() as usize;
        let mut count = std::vec![0u32; n + 1];
        for (q, _) in boids {
            count[g.key(g.cell_of(*q)) as usize + 1] += 1;
        }
        for k in 0..n {
            count[k + 1] += count[k];
        }
        let mut fill = count.clone();
        let mut out = std::vec![(Vec3::ZERO, Vec3::ZERO); boids.len()];
        for b in boids {
            let k = g.key(g.cell_of(b.0)) as usize;
            out[fill[k] as usize] = *b;
            fill[k] += 1;
        }
        (out, count)
    }

    #[test]
    fn the_grid_finds_what_brute_force_finds_at_the_nearest_images() {
        let mut state = 0x1234_5677_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        };
        let p = FlockParams {
            rule1_distance: 5.0,
            rule2_distance: 3.0,
            rule3_distance: 5.0,
            ..FlockParams::default()
        };
        // Extents from twice the reach (two cells, a cell seen under two shifts) up.
        for (periodic, hi) in [
            (0b000, [40.0, 23.0, 31.0]),
            (0b101, [40.0, 23.0, 31.0]),
            (0b111, [10.0, 12.5, 31.0]),
            (0b010, [17.0, 12.0, 60.0]),
        ] {
            let b = BoidBox {
                lo: [-2.0, 1.0, 0.5],
                hi,
                periodic,
                through: 0,
            };
            assert_eq!(BoxGrid::periodic_fits(&b, 5.0), None);
            let g = BoxGrid::new(&b, 5.0);
            let boids: Vec<(Vec3, Vec3)> = (0..600)
                .map(|_| {
                    let q = Vec3::new(
                        b.lo[0] + next() * (hi[0] - b.lo[0]),
                        b.lo[1] + next() * (hi[1] - b.lo[1]),
                        b.lo[2] + next() * (hi[2] - b.lo[2]),
                    );
                    (q, Vec3::new(next() - 0.5, next() - 0.5, next() - 0.5))
                })
                .collect();
            let (list, starts) = sorted(&g, &boids);
            let mut seen = 0;
            for (me, (pos, vel)) in list.iter().enumerate() {
                let got = box_grid_sums(
                    &p,
                    &g,
                    *pos,
                    *vel,
                    |k| starts[k as usize],
                    |k| list[k as usize],
                );
                let want = box_naive_sums(&p, &b, list.len() as u32, me as u32, *pos, |k| {
                    list[k as usize]
                });
                assert_eq!(got.n_cohesion, want.n_cohesion, "{periodic:03b} {me}");
                assert_eq!(got.n_alignment, want.n_alignment, "{periodic:03b} {me}");
                for (x, y) in [
                    (got.center, want.center),
                    (got.separation, want.separation),
                    (got.velocity, want.velocity),
                ] {
                    assert!(length(x - y) <= 1e-4 * (1.0 + length(y)), "{x} {y}");
                }
                seen += got.n_cohesion;
            }
            assert!(seen > 1000, "too few neighbours to test: {seen}");
        }
    }

    #[test]
    fn short_periodic_axes_are_found() {
        let b = BoidBox {
            lo: [0.0; 3],
            hi: [30.0, 9.0, 30.0],
            periodic: 0b011,
            through: 0,
        };
        assert_eq!(BoxGrid::periodic_fits(&b, 4.5), None);
        assert_eq!(BoxGrid::periodic_fits(&b, 5.0), Some(1));
        let g = BoxGrid::new(&b, 5.0);
        assert_eq!(g.dims, [6, 1, 6]);
        assert_eq!(g.cell_of(Vec3::new(29.99, 8.9, 30.0)), [5, 0, 5]);
        assert_eq!(g.cell_of(Vec3::new(-0.01, 0.0, 0.0)), [0, 0, 0]);
    }
}
