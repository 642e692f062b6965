//! The sampler's uniform background grid (cells of `d / sqrt(3)`, at most one sample each, held
//! dense, in blocks or hashed) and the small grid over one tile that a job searches for
//! conflicts.

use super::floor;
use murmur_common::rng::mix64;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Edge of a grid block, in cells, in the blocked table.
const BLOCK: usize = 8;

/// Largest block index (64 MiB) before the blocks are found through a hash map.
const BLOCK_INDEX: usize = 1 << 24;

/// Hashes a grid key (already a cell index) with one `mix64`.
#[derive(Default)]
pub(super) struct MixHasher(u64);

impl Hasher for MixHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(self.0 ^ x);
    }
}

/// The sample index (plus one; 0 = empty) in each occupied grid cell.
enum Table {
    /// One slot per cell.
    Dense(Vec<u32>),
    /// A dense index of blocks (0 = empty, else the block's place in the pool plus one) and
    /// the pool of occupied blocks.
    Blocks {
        n: [usize; 3],
        index: Vec<u32>,
        pool: Vec<[u32; BLOCK * BLOCK * BLOCK]>,
    },
    /// One entry per occupied cell.
    Sparse(HashMap<u64, u32, BuildHasherDefault<MixHasher>>),
}

/// Uniform background grid over the samples: at most one sample per cell. Its geometry is
/// the tiling's; its table, filled once sampling is done, serves the nearest-neighbour
/// statistics (the darts use each job's local grid).
pub(super) struct Grid {
    pub(super) origin: [f64; 3],
    pub(super) cell: [f64; 3],
    pub(super) n: [usize; 3],
    /// Periodic length per axis along which the grid wraps (0 = not).
    pub(super) wrap: [f64; 3],
    table: Table,
}

impl Grid {
    /// A grid over the box `lo..hi` with cells no wider than `d / sqrt(3)`; axes with a
    /// non-zero `wrap` span `[0, wrap)` instead.
    pub(super) fn new(
        lo: [f64; 3],
        hi: [f64; 3],
        wrap: [f64; 3],
        d: f64,
        dense_limit: usize,
    ) -> Grid {
        let target = d / 3f64.sqrt();
        let mut origin = [0.0; 3];
        let mut cell = [target; 3];
        let mut n = [1usize; 3];
        for k in 0..3 {
            if wrap[k] > 0.0 {
                n[k] = ((wrap[k] / target).ceil() as usize).max(1);
                cell[k] = wrap[k] / n[k] as f64;
            } else {
                origin[k] = lo[k];
                n[k] = ((hi[k] - lo[k]) / target).floor() as usize + 1;
            }
        }
        let cells = n[0].saturating_mul(n[1]).saturating_mul(n[2]);
        let blocks = n.map(|n| n.div_ceil(BLOCK));
        let block_count = blocks[0]
            .saturating_mul(blocks[1])
            .saturating_mul(blocks[2]);
        let table = if cells <= dense_limit {
            Table::Dense(vec![0; cells])
        } else if block_count <= BLOCK_INDEX {
            Table::Blocks {
                n: blocks,
                index: vec![0; block_count],
                pool: Vec::new(),
            }
        } else {
            Table::Sparse(HashMap::default())
        };
        Grid {
            origin,
            cell,
            n,
            wrap,
            table,
        }
    }

    pub(super) fn cell_of(&self, p: [f64; 3]) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            let c = floor((p[k] - self.origin[k]) / self.cell[k]);
            (c.max(0.0) as usize).min(self.n[k] - 1)
        })
    }

    fn key(&self, c: [usize; 3]) -> usize {
        (c[2] * self.n[1] + c[1]) * self.n[0] + c[0]
    }

    /// The block of cell `c` and the cell's place in it.
    fn block_of(n: [usize; 3], c: [usize; 3]) -> (usize, usize) {
        let b = c.map(|c| c / BLOCK);
        let l = c.map(|c| c % BLOCK);
        (
            (b[2] * n[1] + b[1]) * n[0] + b[0],
            (l[2] * BLOCK + l[1]) * BLOCK + l[0],
        )
    }

    fn get(&self, c: [usize; 3]) -> Option<usize> {
        let slot = match &self.table {
            Table::Dense(v) => v[self.key(c)],
            Table::Blocks { n, index, pool } => {
                let (block, local) = Self::block_of(*n, c);
                match index[block] {
                    0 => 0,
                    b => pool[b as usize - 1][local],
                }
            }
            Table::Sparse(m) => m.get(&(self.key(c) as u64)).copied().unwrap_or(0),
        };
        (slot > 0).then(|| slot as usize - 1)
    }

    pub(super) fn insert(&mut self, c: [usize; 3], sample: usize) {
        let key = self.key(c);
        let slot = sample as u32 + 1;
        match &mut self.table {
            Table::Dense(v) => v[key] = slot,
            Table::Blocks { n, index, pool } => {
                let (block, local) = Self::block_of(*n, c);
                if index[block] == 0 {
                    pool.push([0; BLOCK * BLOCK * BLOCK]);
                    index[block] = pool.len() as u32;
                }
                pool[index[block] as usize - 1][local] = slot;
            }
            Table::Sparse(m) => {
                m.insert(key as u64, slot);
            }
        }
    }

    /// The cell indices within `r` cells of `c` along axis `k` (wrapped or clipped, no repeats).
    fn axis_range(&self, k: usize, c: usize, r: usize) -> impl Iterator<Item = usize> {
        let n = self.n[k];
        let (wrap, all) = (self.wrap[k] > 0.0, 2 * r + 1 >= n);
        let (start, end) = if wrap && all {
            (0, n as isize)
        } else if wrap {
            (c as isize - r as isize, (c + r + 1) as isize)
        } else {
            (
                (c as isize - r as isize).max(0),
                ((c + r + 1) as isize).min(n as isize),
            )
        };
        (start..end).map(move |i| i.rem_euclid(n as isize) as usize)
    }

    /// Calls `f` on every sample within `r` cells of cell `c` along each axis, until it
    /// returns `true`; returns whether it did.
    pub(super) fn any_near(
        &self,
        c: [usize; 3],
        r: usize,
        mut f: impl FnMut(usize) -> bool,
    ) -> bool {
        for z in self.axis_range(2, c[2], r) {
            for y in self.axis_range(1, c[1], r) {
                for x in self.axis_range(0, c[0], r) {
                    if let Some(s) = self.get([x, y, z]) {
                        if f(s) {
                            return true;
                        }
                    }
                }
            }
        }
        false
    }
}

/// Cell offsets that can hold a sample closer than `d = sqrt(3)` cells to a point of the centre
/// cell, ordered by their smallest possible distance: the 5^3 block less its 8 corners, whose
/// nearest point is exactly `sqrt(3)` cells away.
const CONFLICT_OFFSETS: [[i8; 3]; 117] = conflict_offsets();

const fn conflict_offsets() -> [[i8; 3]; 117] {
    let mut out = [[0i8; 3]; 117];
    let mut len = 0;
    // The gap to an offset of o cells along an axis is max(|o| - 1, 0) cells, so the squared
    // gap is the number of components of size 2 (the corners, 3, are left out); within a gap,
    // fewer components of size 1 first (the centre cell, then faces, edges, corners).
    let mut key = 0;
    while key < 12 {
        let mut i = 0;
        while i < 125 {
            let o = [(i % 5) as i8 - 2, (i / 5 % 5) as i8 - 2, (i / 25) as i8 - 2];
            let (mut twos, mut ones, mut k) = (0, 0, 0);
            while k < 3 {
                match o[k] {
                    2 | -2 => twos += 1,
                    1 | -1 => ones += 1,
                    _ => {}
                }
                k += 1;
            }
            if twos < 3 && 4 * twos + ones == key {
                out[len] = o;
                len += 1;
            }
            i += 1;
        }
        key += 1;
    }
    assert!(len == 117);
    out
}

/// Grid cells around a tile searched for conflicts: at most 2 cells away (module docs).
pub(super) const HALO: usize = 2;

/// A job's grid over its tile and [`HALO`] cells around: the sample (plus one; 0 = none) of
/// each cell, indexing the job's own list of points. Reused between jobs, emptied after each.
#[derive(Default)]
pub(super) struct LocalGrid {
    dims: [usize; 3],
    base: [f64; 3],
    /// Reciprocal cell widths: cells are found by a product (the same one for samples and
    /// darts; a point on a cell face may go either way, which the search does not mind).
    scale: [f64; 3],
    pub(super) slots: Vec<u32>,
    pub(super) points: Vec<[f64; 3]>,
    /// The slots set, to empty them afterwards without clearing the whole grid.
    used: Vec<usize>,
    /// The job's tile's pieces and alias table (copies, see [`Tiles::throw`](super::tiles::Tiles::throw)).
    pub(super) pieces: Vec<[[f64; 3]; 3]>,
    pub(super) alias: Vec<(f32, u32)>,
}

impl LocalGrid {
    pub(super) fn reset(&mut self, dims: [usize; 3], base: [f64; 3], cell: [f64; 3]) {
        let len = dims[0] * dims[1] * dims[2];
        if self.slots.len() < len {
            self.slots.resize(len, 0);
        }
        (self.dims, self.base, self.scale) = (dims, base, cell.map(|c| 1.0 / c));
    }

    pub(super) fn slot(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// Adds a sample if it lies in the grid.
    pub(super) fn insert_if_inside(&mut self, p: [f64; 3]) {
        let mut c = [0usize; 3];
        for k in 0..3 {
            let x = floor((p[k] - self.base[k]) * self.scale[k]);
            if !(x >= 0.0 && x < self.dims[k] as f64) {
                return;
            }
            c[k] = x as usize;
        }
        let at = self.slot(c);
        self.put(at, p);
    }

    /// The cell of a point of the tile, clamped to the tile's cells (a point on a tile face
    /// may round to just outside), so every conflict offset stays in the grid.
    pub(super) fn inner_cell(&self, p: [f64; 3]) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            // Truncation is the floor here: negatives are clamped first.
            let x = ((p[k] - self.base[k]) * self.scale[k]).max(HALO as f64);
            (x as usize).min(self.dims[k] - 1 - HALO)
        })
    }

    pub(super) fn put(&mut self, at: usize, p: [f64; 3]) {
        self.points.push(p);
        self.slots[at] = self.points.len() as u32;
        self.used.push(at);
    }

    /// [`CONFLICT_OFFSETS`] as slot offsets in this grid.
    pub(super) fn conflict_offsets(&self) -> [isize; 117] {
        let (nx, ny) = (self.dims[0] as isize, self.dims[1] as isize);
        CONFLICT_OFFSETS.map(|o| (o[2] as isize * ny + o[1] as isize) * nx + o[0] as isize)
    }

    pub(super) fn clear(&mut self) {
        for &at in &self.used {
            self.slots[at] = 0;
        }
        self.used.clear();
        self.points.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_offsets_are_the_cells_within_reach_nearest_first() {
        let order = |o: &[i8; 3]| {
            let count = |m: i8| o.iter().filter(|x| x.abs() == m).count();
            (count(2), count(1))
        };
        assert_eq!(CONFLICT_OFFSETS[0], [0, 0, 0]);
        assert!(CONFLICT_OFFSETS
            .windows(2)
            .all(|w| order(&w[0]) <= order(&w[1])));
        assert!(CONFLICT_OFFSETS.iter().all(|o| order(o).0 < 3));
        let mut sorted = CONFLICT_OFFSETS.to_vec();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 117);
    }
}
