//! The uniform grid of the `scattered` and `coherent` searches (CIS 565 part 2).
//!
//! The cube `[-scale, scale]^3` is cut into `dims^3` cells of width `cell_width`
//! (`cell_width = factor * max rule distance`; factor 2 searches 8 cells, factor 1 searches 27).
//! A boid's cell is `floor((x + scale) / cell_width)` per axis, clamped into the grid so that
//! boids sitting exactly on `+scale` land in the last cell. The search visits the cells that meet
//! the box `[pos - r, pos + r]`, minus those whose nearest point is at least `r` away (the culling
//! of seed 000). Cells are numbered x-fastest (`Linear`) or along a Z curve (`Morton`).

use crate::math::{ceil_nonneg, Vec3};

/// How cell coordinates become a cell key (the sort key).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
    /// Cells per axis.
    pub dims: u32,
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
    /// A grid over `[-scale, scale]^3` with cells of width `cell_width` (both finite, > 0).
    pub fn new(scale: f32, cell_width: f32, order: CellOrder) -> Grid {
        let dims = ceil_nonneg(2.0 * scale / cell_width);
        let dims = if dims < 1.0 { 1 } else { dims as u32 };
        Grid {
            min: -scale,
            cell_width,
            inv_cell_width: 1.0 / cell_width,
            dims,
            order: order as u32,
        }
    }

    /// Number of keys: `dims^3` for `Linear`, `(next power of two of dims)^3` for `Morton`.
    #[inline(always)]
    pub fn cell_count(&self) -> u32 {
        if self.order == CellOrder::Morton as u32 {
            let p = self.dims.next_power_of_two();
            p * p * p
        } else {
            self.dims * self.dims * self.dims
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

    /// Cell coordinate of `x` along one axis, clamped into `0..dims`.
    #[inline(always)]
    pub fn coord(&self, x: f32) -> u32 {
        // Clamped as a float first, then truncated: the same cell as truncating and clamping the
        // integer (NaN goes to 0 both ways: `max` returns its other operand), but the conversion
        // needs none of the saturation checks of `as` (on the GPU: 3 instructions instead of 11).
        let t = ((x - self.min) * self.inv_cell_width)
            .max(0.0)
            .min((self.dims - 1) as f32);
        // SAFETY: `t` is finite and in `0..=dims - 1`, which fits a u32.
        unsafe { t.to_int_unchecked::<u32>() }
    }

    /// Cell coordinates of a position.
    #[inline(always)]
    pub fn cell_of(&self, p: Vec3) -> [u32; 3] {
        [self.coord(p.x), self.coord(p.y), self.coord(p.z)]
    }

    /// Key of a cell (see [`CellOrder`]).
    #[inline(always)]
    pub fn key_of_cell(&self, c: [u32; 3]) -> u32 {
        if self.order == CellOrder::Morton as u32 {
            morton_spread(c[0]) | (morton_spread(c[1]) << 1) | (morton_spread(c[2]) << 2)
        } else {
            c[0] + self.dims * (c[1] + self.dims * c[2])
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
                self.coord(p.x - r),
                self.coord(p.y - r),
                self.coord(p.z - r),
            ],
            hi: [
                self.coord(p.x + r),
                self.coord(p.y + r),
                self.coord(p.z + r),
            ],
        }
    }

    /// Lower corner of cell coordinate `c` along one axis.
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

    /// Distance along one axis from `x` to cell coordinate `c`'s slab widened by
    /// [`Grid::margin`]: zero inside it.
    #[inline(always)]
    pub fn axis_gap(&self, c: u32, x: f32) -> f32 {
        let m = self.margin();
        let lo = self.cell_lo(c) - m;
        let hi = self.cell_lo(c) + self.cell_width + m;
        if x < lo {
            lo - x
        } else if x > hi {
            x - hi
        } else {
            0.0
        }
    }

    /// False when no point of cell `c` is closer than `r` to `p` (the cell can be skipped).
    /// Conservative: cells are widened by [`Grid::margin`].
    #[inline(always)]
    pub fn cell_may_hold_neighbour(&self, c: [u32; 3], p: Vec3, r: f32) -> bool {
        let (dx, dy, dz) = (
            self.axis_gap(c[0], p.x),
            self.axis_gap(c[1], p.y),
            self.axis_gap(c[2], p.z),
        );
        dx * dx + dy * dy + dz * dz < r * r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_counts_follow_the_width_factor() {
        // Factor 2 at radius 5: 10-wide cells, 20 per axis; a box of width 10 meets 2 per axis.
        let g = Grid::new(100.0, 10.0, CellOrder::Linear);
        assert_eq!(g.dims, 20);
        let b = g.search_box(Vec3::new(3.0, 3.0, 3.0), 5.0);
        for a in 0..3 {
            assert_eq!(b.hi[a] - b.lo[a] + 1, 2);
        }
        // Factor 1: 5-wide cells, the box meets 3 per axis.
        let g = Grid::new(100.0, 5.0, CellOrder::Linear);
        assert_eq!(g.dims, 40);
        let b = g.search_box(Vec3::new(3.0, 3.0, 3.0), 5.0);
        for a in 0..3 {
            assert_eq!(b.hi[a] - b.lo[a] + 1, 3);
        }
    }

    #[test]
    fn borders_clamp_into_the_grid() {
        let g = Grid::new(100.0, 5.0, CellOrder::Linear);
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
        let g = Grid::new(100.0, 2.5, CellOrder::Linear);
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
        let g = Grid::new(100.0, 5.0, CellOrder::Morton);
        assert_eq!(g.cell_count(), 64 * 64 * 64);
        assert_eq!(g.key_of_cell([1, 0, 0]), 1);
        assert_eq!(g.key_of_cell([0, 1, 0]), 2);
        assert_eq!(g.key_of_cell([0, 0, 1]), 4);
        assert_eq!(g.key_of_cell([3, 3, 3]), 63);
        assert_eq!(g.key_bits(), 18);
        assert_eq!(Grid::new(100.0, 5.0, CellOrder::Linear).key_bits(), 16);
    }

    #[test]
    fn culling_skips_only_far_cells() {
        let g = Grid::new(100.0, 5.0, CellOrder::Linear);
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
