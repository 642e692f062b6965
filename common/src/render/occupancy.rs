//! Empty-space skipping for the ray marches of the volume and the smoke views: the lattice in
//! bricks of [`BRICK`]^3 cells, one byte per brick saying whether any cell that the brick's
//! samples interpolate holds something the march draws (`fluid_occupancy`, per frame or when
//! what it reads changed); the march leaps over the samples of empty bricks (`fluid::shade`).
//!
//! A sample's eight corners run from its lower corner to one cell beyond, so a brick's cells
//! are its own and the first layer of the next brick on each axis ([`Bricks::span`]). A cell
//! is drawn ([`drawn`]) when the march's own test would pass on it: smoke not `<= 0`, a
//! volume's value above the bottom of the colour range. Trilinear weights are non-negative
//! and sum to one, so a value interpolated from corners that are all `<= 0` is `<= 0` in
//! `f32` too (each `a + (b - a) t` stays between its ends' signs): every sample in an empty
//! brick is one the march would have passed over, and the frame is the same bytes with or
//! without the skipping. (With a range whose bottom is not zero the same holds to the last
//! bit of the value, where the opacity is below any 8-bit colour.) Each brick is an OR over
//! its cells, in any order: the CPU and the GPU give the same bytes.

use super::fluid::{FluidFrame, Quantity, ViewKind, Volumes};
use crate::lbm::Lattice;
use crate::Vec3;

/// Cells per side of a brick: at 256^3, 32^3 bricks (32 KiB of occupancy); a ray that crosses
/// an empty brick skips up to 8-14 samples at a step of one cell.
pub const BRICK: u32 = 8;

/// Cells one brick's samples read: `(BRICK + 1)^3` at most.
pub const SPAN_CELLS: u32 = (BRICK + 1) * (BRICK + 1) * (BRICK + 1);

/// The bricks of a lattice: `ceil(n / BRICK)` per axis, x fastest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bricks {
    pub dims: [u32; 3],
}

impl Bricks {
    #[inline(always)]
    pub fn of(l: &Lattice) -> Bricks {
        Bricks {
            dims: [
                l.nx.div_ceil(BRICK),
                l.ny.div_ceil(BRICK),
                l.nz.div_ceil(BRICK),
            ],
        }
    }

    /// Number of bricks.
    #[inline(always)]
    pub fn count(&self) -> usize {
        self.dims[0] as usize * self.dims[1] as usize * self.dims[2] as usize
    }

    /// Brick number of brick coordinates `b`.
    #[inline(always)]
    pub fn index(&self, b: [u32; 3]) -> usize {
        b[0] as usize
            + self.dims[0] as usize * (b[1] as usize + self.dims[1] as usize * b[2] as usize)
    }

    /// Brick coordinates of brick number `i`.
    #[inline(always)]
    pub fn coords(&self, i: usize) -> [u32; 3] {
        let i = i as u32;
        let yz = i / self.dims[0];
        [i % self.dims[0], yz % self.dims[1], yz / self.dims[1]]
    }

    /// The brick of the sample whose lower corner is cell `lo`.
    #[inline(always)]
    pub fn of_corner(lo: [u32; 3]) -> [u32; 3] {
        [lo[0] / BRICK, lo[1] / BRICK, lo[2] / BRICK]
    }

    /// The cells brick `b`'s samples read: from `b BRICK` up to and including `b BRICK +
    /// BRICK` per axis (the next brick's first layer), within the lattice. `(first, extent)`.
    #[inline(always)]
    pub fn span(l: &Lattice, b: [u32; 3]) -> ([u32; 3], [u32; 3]) {
        let dims = [l.nx, l.ny, l.nz];
        let mut first = [0u32; 3];
        let mut extent = [0u32; 3];
        let mut a = 0;
        while a < 3 {
            first[a] = b[a] * BRICK;
            let end = first[a] + BRICK + 1;
            extent[a] = if end < dims[a] { end } else { dims[a] } - first[a];
            a += 1;
        }
        (first, extent)
    }

    /// The depth at which the ray `o + t d` leaves the samples of brick `b`: the samples
    /// whose lower corner lies in it, points whose coordinate (clamped to the outer cell
    /// centres, as `Corners` does) is in `[b BRICK, (b + 1) BRICK)` per axis; the first and
    /// last bricks of an axis reach out to infinity there. `f32::MAX` if the ray never leaves.
    #[inline(always)]
    pub fn exit(&self, b: [u32; 3], o: Vec3, d: Vec3) -> f32 {
        let mut t = f32::MAX;
        let mut leave = |b: u32, dims: u32, o: f32, d: f32| {
            let plane = if d > 0.0 && b + 1 < dims {
                (b + 1) * BRICK
            } else if d < 0.0 && b > 0 {
                b * BRICK
            } else {
                return;
            };
            let at = (plane as f32 - o) / d;
            if at < t {
                t = at;
            }
        };
        leave(b[0], self.dims[0], o.x, d.x);
        leave(b[1], self.dims[1], o.y, d.y);
        leave(b[2], self.dims[2], o.z, d.z);
        t
    }
}

/// Whether cell `cell` holds something the march of `f` draws: smoke not `<= 0` (the smoke
/// view), a value whose place in the colour range is above zero (a volume).
///
/// # Safety
/// `cell < n` and the views of `vol` that the frame's kind and quantity read hold the lattice.
#[inline(always)]
pub unsafe fn drawn(f: &FluidFrame, vol: &Volumes, cell: usize) -> bool {
    if f.kind == ViewKind::Smoke as u32 {
        // The march's own test, `density <= 0` skips: NaN is drawn.
        let s = vol.smoke.read(cell);
        return s > 0.0 || s.is_nan();
    }
    let q = Quantity::from_u32(f.quantity);
    super::fluid::normalise(f, vol.value(q, f.lattice.cells(), cell)) > 0.0
}

/// The cell of brick `b`'s span at `k` (x fastest, `k < extent` product).
#[inline(always)]
pub fn span_cell(l: &Lattice, first: [u32; 3], extent: [u32; 3], k: u32) -> usize {
    let yz = k / extent[0];
    l.index(
        first[0] + k % extent[0],
        first[1] + yz % extent[1],
        first[2] + yz / extent[1],
    )
}

/// Whether brick `b` holds a cell the march of `f` draws (the CPU's form: a loop over the
/// span; the kernel shares the cells among a warp's lanes).
///
/// # Safety
/// As for [`drawn`].
#[inline(always)]
pub unsafe fn brick_occupied(f: &FluidFrame, vol: &Volumes, b: [u32; 3]) -> bool {
    let l = f.lattice;
    let (first, extent) = Bricks::span(&l, b);
    let cells = extent[0] * extent[1] * extent[2];
    let mut k = 0;
    while k < cells {
        if drawn(f, vol, span_cell(&l, first, extent, k)) {
            return true;
        }
        k += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_reach_one_layer_into_the_next_brick() {
        let l = Lattice::new(20, 8, 9);
        let b = Bricks::of(&l);
        assert_eq!(b.dims, [3, 1, 2]);
        assert_eq!(Bricks::span(&l, [0, 0, 0]), ([0, 0, 0], [9, 8, 9]));
        assert_eq!(Bricks::span(&l, [2, 0, 1]), ([16, 0, 8], [4, 8, 1]));
        for i in 0..b.count() {
            assert_eq!(b.index(b.coords(i)), i);
        }
        let (first, extent) = Bricks::span(&l, [1, 0, 1]);
        let count = extent[0] * extent[1] * extent[2];
        assert_eq!(count, 9 * 8);
        assert_eq!(span_cell(&l, first, extent, 0), l.index(8, 0, 8));
        assert_eq!(span_cell(&l, first, extent, count - 1), l.index(16, 7, 8));
    }

    #[test]
    fn a_ray_leaves_a_brick_at_its_far_plane() {
        let b = Bricks { dims: [4, 4, 4] };
        let o = Vec3::new(1.0, 2.0, 3.0);
        // Along +x from x = 1: brick 0 ends at x = 8, 7 units on.
        assert_eq!(b.exit([0, 0, 0], o, Vec3::new(1.0, 0.0, 0.0)), 7.0);
        // Along -x the first brick reaches out to infinity (clamped samples stay in it).
        assert_eq!(b.exit([0, 0, 0], o, Vec3::new(-1.0, 0.0, 0.0)), f32::MAX);
        // Along -z from brick 2 (z = 16..24), starting at z = 20: leaves at z = 16.
        let o = Vec3::new(1.0, 2.0, 20.0);
        assert_eq!(b.exit([0, 0, 2], o, Vec3::new(0.0, 0.0, -2.0)), 2.0);
        // The last brick of an axis reaches out too.
        assert_eq!(b.exit([0, 0, 3], o, Vec3::new(0.0, 0.0, 1.0)), f32::MAX);
    }
}
