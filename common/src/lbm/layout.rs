//! Cell numbering of the lattice.
//!
//! Cells are numbered x fastest: `cell = x + nx (y + ny z)`, so neighbouring GPU threads
//! (neighbouring cells along x) touch consecutive addresses for every population in any layout
//! of [`super::access`] (structure of arrays, or CSoA groups of at least 32 cells): accesses
//! coalesce.
//!
//! All three axes wrap (periodic) in the index math; non-periodic boundaries are layers of
//! non-fluid cells (walls, inlets, outlets) inside the grid.

/// Grid dimensions in cells. `#[repr(C)]`: part of the kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lattice {
    pub nx: u32,
    pub ny: u32,
    pub nz: u32,
}

impl Lattice {
    #[inline(always)]
    pub const fn new(nx: u32, ny: u32, nz: u32) -> Self {
        Lattice { nx, ny, nz }
    }

    /// Number of cells, `nx ny nz`.
    #[inline(always)]
    pub const fn cells(&self) -> usize {
        self.nx as usize * self.ny as usize * self.nz as usize
    }

    /// Cell number of `(x, y, z)` (x fastest).
    #[inline(always)]
    pub const fn index(&self, x: u32, y: u32, z: u32) -> usize {
        x as usize + self.nx as usize * (y as usize + self.ny as usize * z as usize)
    }

    /// `(x, y, z)` of a cell number. 32-bit arithmetic (cheap on GPUs): lattices hold fewer
    /// than `2^32` cells ([`Lattice::MAX_CELLS`]).
    #[inline(always)]
    pub const fn coords(&self, cell: usize) -> (u32, u32, u32) {
        let c = cell as u32;
        let x = c % self.nx;
        let yz = c / self.nx;
        (x, yz % self.ny, yz / self.ny)
    }

    /// Largest supported number of cells (32-bit cell coordinates).
    pub const MAX_CELLS: u64 = u32::MAX as u64;

    /// The cells a population of `cell` is pulled from, per axis: `pull_offsets(..)[axis][c + 1]`
    /// is the coordinate (already multiplied by the axis stride) of `x - c` with periodic wrap;
    /// the source cell of velocity `c` is the sum over the three axes. 32-bit, like `coords`.
    #[inline(always)]
    pub fn pull_offsets(&self, cell: usize) -> [[u32; 3]; 3] {
        let (x, y, z) = self.coords(cell);
        let sx = self.nx;
        let sy = sx * self.ny;
        [
            wrap3(x, self.nx, 1),
            wrap3(y, self.ny, sx),
            wrap3(z, self.nz, sy),
        ]
    }
}

/// `[x + 1, x, x - 1]` with periodic wrap, times `stride`: the source coordinate for c = -1, 0, 1.
#[inline(always)]
fn wrap3(x: u32, n: u32, stride: u32) -> [u32; 3] {
    let plus = if x + 1 == n { 0 } else { x + 1 };
    let minus = if x == 0 { n - 1 } else { x - 1 };
    [plus * stride, x * stride, minus * stride]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_roundtrip_and_wrap() {
        let l = Lattice::new(5, 4, 3);
        for cell in 0..l.cells() {
            let (x, y, z) = l.coords(cell);
            assert_eq!(l.index(x, y, z), cell);
        }
        let o = l.pull_offsets(l.index(0, 3, 1));
        // x - 1 from x = 0 wraps to 4; y + 1 from y = 3 wraps to 0.
        assert_eq!(o[0], [1, 0, 4]);
        assert_eq!(o[1], [0, 15, 10]);
        assert_eq!(o[2], [40, 20, 0]);
    }
}
