//! The uniform grid of the `scattered` and `coherent` searches (CIS 565 part 2).
//!
//! The cube `[-scale, scale]^3` is cut into `dims` cells of width `cell_width` along y and z
//! (`cell_width = factor * max rule distance`; factor 2 searches 8 cells, factor 1 searches 27)
//! and `dims_x = x_split * dims` cells of width `cell_width / x_split` along x. A boid's cell is
//! `floor((x + scale) / width)` per axis, clamped into the grid so that boids sitting exactly on
//! `+scale` land in the last cell. Narrower cells along x cost nothing in the search's loop
//! structure (with `Linear` keys a row of cells along x is one run) and trim each run closer to
//! the search sphere. The search visits the cells that meet
//! the box `[pos - r, pos + r]`, minus those whose nearest point is at least `r` away (the culling
//! of the CIS 565 Project 1 flocking write-ups). Cells are numbered x-fastest (`Linear`) or along a Z curve (`Morton`).

use crate::math::{ceil_nonneg, Vec3};

/// How cell coordinates become a cell key (the sort key).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CellOrder {
    /// `x + dims * (y + dims * z)`: x-neighbours are consecutive keys.
    Linear = 0,
    /// Z-order: bits of x, y, z interleaved (10 bits per axis, `dims <= 1024`).
    Morton = 1,
}

/// Largest `dims` per axis a Morton key can hold (10 bits per axis, 30-bit keys).
pub const MORTON_MAX_DIMS: u32 = 1 << 10;

/// Cell coordinates of a box of cells, inclusive bounds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SearchBox {
    pub lo: [u32; 3],
    pub hi: [u32; 3],
}

/// Uniform grid over `[-scale, scale]^3`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Grid {
    /// Lower corner on every axis (`-scale`).
    pub min: f32,
    /// Cell edge length (scene units).
    pub cell_width: f32,
    /// `1 / cell_width`, so every caller rounds the same way.
    pub inv_cell_width: f32,
    /// Cells along y and z.
    pub dims: u32,
    /// Cells along x: `x_split * dims`.
    pub dims_x: u32,
    /// Width of a cell along x: `cell_width / x_split`.
    pub cell_width_x: f32,
    /// `1 / cell_width_x`.
    pub inv_cell_width_x: f32,
    /// Cell numbering, a [`CellOrder`] as `u32`.
    pub order: u32,
}

/// Spreads the low 10 bits of `v` to every third bit (Morton encoding helper).
#[inline(always)]
pub fn morton_spread(v: u32) -> u32 {
    let mut x = v & 0x3ff;
    x = (x | (x << 16)) & 0x0300_00ff;
    x = (x | (x << 8)) & 0x0300_f00f;
    x = (x | (x << 4)) & 0x030c_30c3;
    x = (x | (x << 2)) & 0x0924_9249;
    x
}

impl Grid {
    /// A grid over `[-scale, scale]^3` with cells of width `cell_width` (both finite, > 0) along
    /// y and z, split `x_split` times (>= 1) along x.
    pub fn new(scale: f32, cell_width: f32, x_split: u32, order: CellOrder) -> Grid {
        let dims = ceil_nonneg(2.0 * scale / cell_width);
        let dims = if dims < 1.0 { 1 } else { dims as u32 };
        let cell_width_x = cell_width / x_split as f32;
        Grid {
            min: -scale,
            cell_width,
            inv_cell_width: 1.0 / cell_width,
            dims,
            dims_x: dims * x_split,
            cell_width_x,
            inv_cell_width_x: 1.0 / cell_width_x,
            order: order as u32,
        }
    }

    /// Number of keys: `dims_x * dims^2` for `Linear`, `p^3` for `Morton` (`p`: the next power
    /// of two of the larger of `dims_x` and `dims`).
    #[inline(always)]
    pub fn cell_count(&self) -> u32 {
        if self.order == CellOrder::Morton as u32 {
            let d = if self.dims_x > self.dims {
                self.dims_x
            } else {
                self.dims
            };
            let p = d.next_power_of_two();
            p * p * p
        } else {
            self.dims_x * self.dims * self.dims
        }
    }

    /// Number of significant bits in a cell key (what a radix sort needs to look at).
    #[inline(always)]
    pub fn key_bits(&self) -> u32 {
        let n = self.cell_count();
        if n <= 1 {
            1
        } else {
            32 - (n - 1).leading_zeros()
        }
    }

    /// Cell coordinate of `y` or `z` coordinate `x`, clamped into `0..dims`.
    #[inline(always)]
    pub fn coord(&self, x: f32) -> u32 {
        clamped_cell((x - self.min) * self.inv_cell_width, self.dims)
    }

    /// Cell coordinate of `x` along x, clamped into `0..dims_x`.
    #[inline(always)]
    pub fn coord_x(&self, x: f32) -> u32 {
        clamped_cell((x - self.min) * self.inv_cell_width_x, self.dims_x)
    }

    /// Cell coordinates of a position.
    #[inline(always)]
    pub fn cell_of(&self, p: Vec3) -> [u32; 3] {
        [self.coord_x(p.x), self.coord(p.y), self.coord(p.z)]
    }

    /// Key of a cell (see [`CellOrder`]).
    #[inline(always)]
    pub fn key_of_cell(&self, c: [u32; 3]) -> u32 {
        if self.order == CellOrder::Morton as u32 {
            morton_spread(c[0]) | (morton_spread(c[1]) << 1) | (morton_spread(c[2]) << 2)
        } else {
            c[0] + self.dims_x * (c[1] + self.dims * c[2])
        }
    }

    /// Key of the cell holding `p` (the sort key of a boid).
    #[inline(always)]
    pub fn key(&self, p: Vec3) -> u32 {
        self.key_of_cell(self.cell_of(p))
    }

    /// The cells that meet the box `[p - r, p + r]`.
    #[inline(always)]
    pub fn search_box(&self, p: Vec3, r: f32) -> SearchBox {
        SearchBox {
            lo: [
                self.coord_x(p.x - r),
                self.coord(p.y - r),
                self.coord(p.z - r),
            ],
            hi: [
                self.coord_x(p.x + r),
                self.coord(p.y + r),
                self.coord(p.z + r),
            ],
        }
    }

    /// Lower corner of cell coordinate `c` along y or z.
    #[inline(always)]
    fn cell_lo(&self, c: u32) -> f32 {
        self.min + c as f32 * self.cell_width
    }

    /// How far every cell is widened on each side for culling: float rounding in
    /// [`Grid::coord`] can then never make a search drop a true neighbour (visiting extra cells
    /// costs only time).
    #[inline(always)]
    pub fn margin(&self) -> f32 {
        (-self.min + self.cell_width) * 1.0e-5
    }

    /// Distance along y or z from `x` to cell coordinate `c`'s slab widened by
    /// [`Grid::margin`]: zero inside it.
    #[inline(always)]
    pub fn axis_gap(&self, c: u32, x: f32) -> f32 {
        slab_gap(self.cell_lo(c), self.cell_width, self.margin(), x)
    }

    /// [`Grid::axis_gap`] along x.
    #[inline(always)]
    pub fn axis_gap_x(&self, c: u32, x: f32) -> f32 {
        let lo = self.min + c as f32 * self.cell_width_x;
        slab_gap(lo, self.cell_width_x, self.margin(), x)
    }

    /// False when no point of cell `c` is closer than `r` to `p` (the cell can be skipped).
    /// Conservative: cells are widened by [`Grid::margin`].
    #[inline(always)]
    pub fn cell_may_hold_neighbour(&self, c: [u32; 3], p: Vec3, r: f32) -> bool {
        let (dx, dy, dz) = (
            self.axis_gap_x(c[0], p.x),
            self.axis_gap(c[1], p.y),
            self.axis_gap(c[2], p.z),
        );
        dx * dx + dy * dy + dz * dz < r * r
    }
}

/// `t` (a cell coordinate in cell widths) truncated to its cell in `0..dims`. Clamped as a float
/// first, then truncated: the same cell as truncating and clamping the integer (NaN goes to 0
/// both ways: `max` returns its other operand), but the conversion needs none of the saturation
/// checks of `as` (on the GPU: 3 instructions instead of 11).
#[inline(always)]
fn clamped_cell(t: f32, dims: u32) -> u32 {
    let t = t.max(0.0).min((dims - 1) as f32);
    // SAFETY: `t` is finite and in `0..=dims - 1`, which fits a u32.
    unsafe { t.to_int_unchecked::<u32>() }
}

/// Distance from `x` to the slab `[lo, lo + width]` widened by `margin` on both sides.
#[inline(always)]
fn slab_gap(lo: f32, width: f32, margin: f32, x: f32) -> f32 {
    let (lo, hi) = (lo - margin, lo + width + margin);
    if x < lo {
        lo - x
    } else if x > hi {
        x - hi
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_counts_follow_the_width_factor() {
        // Factor 2 at radius 5: 10-wide cells, 20 per axis; a box of width 10 meets 2 per axis.
        let g = Grid::new(100.0, 10.0, 1, CellOrder::Linear);
        assert_eq!(g.dims, 20);
        let b = g.search_box(Vec3::new(3.0, 3.0, 3.0), 5.0);
        for a in 0..3 {
            assert_eq!(b.hi[a] - b.lo[a] + 1, 2);
        }
        // Factor 1: 5-wide cells, the box meets 3 per axis.
        let g = Grid::new(100.0, 5.0, 1, CellOrder::Linear);
        assert_eq!(g.dims, 40);
        let b = g.search_box(Vec3::new(3.0, 3.0, 3.0), 5.0);
        for a in 0..3 {
            assert_eq!(b.hi[a] - b.lo[a] + 1, 3);
        }
    }

    #[test]
    fn x_split_narrows_cells_along_x_only() {
        let g = Grid::new(100.0, 5.0, 4, CellOrder::Linear);
        assert_eq!((g.dims, g.dims_x), (40, 160));
        assert_eq!(g.cell_count(), 160 * 40 * 40);
        assert_eq!(g.cell_width_x, 1.25);
        // x in 1.25-wide cells, y and z in 5-wide ones.
        assert_eq!(g.cell_of(Vec3::new(-98.0, -98.0, 99.9)), [1, 0, 39]);
        assert_eq!(g.key(Vec3::splat(100.0)), g.cell_count() - 1);
        // The search box covers +-5 along every axis: 9 x-cells (8 wide + the partial one), 3 in y, z.
        let b = g.search_box(Vec3::new(0.1, 0.1, 0.1), 5.0);
        assert_eq!(b.hi[0] - b.lo[0] + 1, 9);
        assert_eq!(b.hi[1] - b.lo[1] + 1, 3);
        // Cell 81 along x starts at 1.25 (less the margin), 1.15 from x = 0.1.
        assert!((g.axis_gap_x(81, 0.1) - (1.25 - g.margin() - 0.1)).abs() < 1e-5);
        assert_eq!(g.axis_gap_x(80, 0.1), 0.0);
        // Split 1 is the cubic grid, bit for bit.
        let (a, c) = (
            Grid::new(100.0, 2.5, 1, CellOrder::Linear),
            Vec3::new(3.3, -7.1, 0.2),
        );
        assert_eq!((a.dims_x, a.inv_cell_width_x), (a.dims, a.inv_cell_width));
        assert_eq!(a.cell_of(c), [a.coord(c.x), a.coord(c.y), a.coord(c.z)]);
    }

    #[test]
    fn borders_clamp_into_the_grid() {
        let g = Grid::new(100.0, 5.0, 1, CellOrder::Linear);
        assert_eq!(g.coord(100.0), 39, "+scale lands in the last cell");
        assert_eq!(g.coord(-100.0), 0);
        assert_eq!(g.coord(-1000.0), 0);
        assert_eq!(g.coord(-95.0), 1, "a cell border belongs to the upper cell");
        assert_eq!(g.key(Vec3::new(100.0, 100.0, 100.0)), g.cell_count() - 1);
    }

    #[test]
    fn coord_equals_truncating_then_clamping() {
        // The integer formula `coord` replaced, on values around every cell border, far outside
        // the grid, and not finite.
        let g = Grid::new(100.0, 2.5, 1, CellOrder::Linear);
        let reference = |x: f32| {
            let t = ((x - g.min) * g.inv_cell_width) as i32;
            t.clamp(0, g.dims as i32 - 1) as u32
        };
        let mut xs = std::vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1e30,
            -1e30
        ];
        for c in 0..=g.dims + 2 {
            let border = g.min + c as f32 * g.cell_width;
            for d in [-1e-3f32, -1e-6, 0.0, 1e-6, 1e-3, 0.5] {
                xs.push(border + d);
                xs.push(f32::from_bits(border.to_bits() + 1));
                xs.push(f32::from_bits(border.to_bits().wrapping_sub(1)));
            }
        }
        for x in xs {
            assert_eq!(g.coord(x), reference(x), "x = {x:e}");
        }
    }

    #[test]
    fn morton_keys_interleave() {
        let g = Grid::new(100.0, 5.0, 1, CellOrder::Morton);
        assert_eq!(g.cell_count(), 64 * 64 * 64);
        assert_eq!(g.key_of_cell([1, 0, 0]), 1);
        assert_eq!(g.key_of_cell([0, 1, 0]), 2);
        assert_eq!(g.key_of_cell([0, 0, 1]), 4);
        assert_eq!(g.key_of_cell([3, 3, 3]), 63);
        assert_eq!(g.key_bits(), 18);
        assert_eq!(Grid::new(100.0, 5.0, 1, CellOrder::Linear).key_bits(), 16);
    }

    #[test]
    fn culling_skips_only_far_cells() {
        let g = Grid::new(100.0, 5.0, 1, CellOrder::Linear);
        // A boid at the centre of cell (20,20,20): corner cells of the 27 are sqrt(3)*2.5 away,
        // closer than 5, so all 27 stay. Move it to a corner region: diagonal far cells go.
        let p = Vec3::new(2.5, 2.5, 2.5);
        let c = g.cell_of(p);
        assert!(g.cell_may_hold_neighbour([c[0] + 1, c[1] + 1, c[2] + 1], p, 5.0));
        let q = Vec3::new(0.5, 0.5, 0.5); // near the low corner of cell 20
        let c = g.cell_of(q);
        assert!(!g.cell_may_hold_neighbour([c[0] + 1, c[1] + 1, c[2] + 1], q, 4.0));
        assert!(g.cell_may_hold_neighbour([c[0] - 1, c[1] - 1, c[2] - 1], q, 4.0));
    }
}
