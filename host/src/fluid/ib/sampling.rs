//! Poisson-disk sampling of a triangle mesh by dart throwing (Cook 1986): candidates drawn
//! uniformly by area are accepted when no accepted sample lies within the minimum distance,
//! looked up in a uniform background grid of cell `d / sqrt(3)` (Bridson 2007), so a grid cell
//! holds at most one sample and a candidate's conflicts lie within two cells along each axis.
//!
//! Stopping: a fixed budget of [`CANDIDATES_PER_D2`] candidates per `d^2` of surface area. An
//! unhit gap of area `a` survives the budget with probability `exp(-budget a / A)`, so the set is
//! maximal up to gaps a few hundredths of `d^2` wide; dart throwing converges to the random
//! sequential adsorption jamming limit, a disk coverage of 0.547 (Hinrichsen, Feder, Jossang,
//! J. Stat. Phys. 44, 1986), i.e. `0.547 / (pi d^2 / 4) = 0.697` samples per `d^2`, approached
//! as `t^(-1/2)` in the number of darts `t` (Feder 1980). A fixed budget (rather than a count of
//! consecutive rejections) makes the work proportional to the area and independent of luck.
//!
//! Periodic axes use the minimum image for distances and hold the sample positions in
//! `[0, L)`.

use super::shapes::{sub, ShapeError, TriangleMesh};
use murmur_common::rng::mix64;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Candidates thrown per `d^2` of surface area (`d` the minimum distance): 64 is about 50 darts
/// per exclusion disk of diameter `d`, which brings the count within a few per cent of the
/// jamming limit (see the module docs).
pub const CANDIDATES_PER_D2: f64 = 64.0;

/// Largest dense background grid, in cells (16 MiB), before the sampler stores only the
/// occupied blocks of [`BLOCK`]^3 cells: a surface fills a thin shell of its bounding box.
const DENSE_GRID_CELLS: usize = 1 << 22;

/// Edge of a grid block, in cells, in the blocked table.
const BLOCK: usize = 8;

/// Largest block index (64 MiB) before the blocks are found through a hash map.
const BLOCK_INDEX: usize = 1 << 24;

/// Bad sampling input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SamplingError {
    /// The minimum distance is not a positive finite length.
    #[error("sampling spacing must be positive and finite, got {0}")]
    BadSpacing(f64),
    /// A periodic length is negative, non-finite, or too short for the minimum image.
    #[error(
        "periodic length {length} along axis {axis} must be 0 (not periodic) or at least twice \
         the sampling spacing {spacing}"
    )]
    BadPeriod {
        axis: usize,
        length: f64,
        spacing: f64,
    },
    /// The surface would need more samples than allowed.
    #[error(
        "sampling would need up to {needed} samples (area {area:.1} cells^2 at spacing {spacing} \
         cells), over the limit of {limit}"
    )]
    TooMany {
        needed: u64,
        area: f64,
        spacing: f64,
        limit: usize,
    },
    /// The mesh cannot be sampled.
    #[error(transparent)]
    Shape(#[from] ShapeError),
}

/// Poisson-disk samples of a surface, in lattice units (cells).
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    /// Sample positions on the surface (cells); wrapped into `[0, L)` along periodic axes.
    pub positions: Vec<[f64; 3]>,
    /// Surface area each sample stands for (cells^2): the total area over the count.
    pub area: Vec<f64>,
    /// The minimum distance that was asked for (cells).
    pub min_distance: f64,
    /// Total surface area (cells^2).
    pub total_area: f64,
    /// Smallest nearest-neighbour distance (cells); infinite with fewer than two samples.
    pub min_spacing: f64,
    /// Mean nearest-neighbour distance (cells); infinite with fewer than two samples.
    pub mean_nearest: f64,
    /// Largest nearest-neighbour distance (cells); infinite with fewer than two samples.
    pub max_nearest: f64,
    /// Candidates thrown.
    pub candidates: u64,
}

impl Samples {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Samples per `d^2` of area (`d` the minimum distance): 0.697 at the jamming limit of
    /// dart throwing, 1.155 for a hexagonal packing.
    pub fn density(&self) -> f64 {
        self.len() as f64 * self.min_distance * self.min_distance / self.total_area
    }

    /// One line: count, area, spacing statistics in lattice cells.
    pub fn summary(&self) -> String {
        format!(
            "{} surface samples over {:.2} cells^2 ({:.4} cells^2 each, {:.3} per d^2) at \
             d = {} cells: nearest neighbour min {:.4} mean {:.4} max {:.4} cells",
            self.len(),
            self.total_area,
            self.total_area / self.len().max(1) as f64,
            self.density(),
            self.min_distance,
            self.min_spacing,
            self.mean_nearest,
            self.max_nearest,
        )
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014): a sequential stream over murmur's `mix64`.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream for `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(mix64(seed ^ 0x6a09_e667_f3bc_c909))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// A uniform `f64` in `[0, 1)` (53 random bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Hashes a grid key (already a cell index) with one `mix64`.
#[derive(Default)]
struct MixHasher(u64);

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

/// Uniform background grid over the samples: at most one sample per cell.
struct Grid {
    origin: [f64; 3],
    cell: [f64; 3],
    n: [usize; 3],
    /// Periodic length per axis along which the grid wraps (0 = not).
    wrap: [f64; 3],
    table: Table,
}

impl Grid {
    /// A grid over the box `lo..hi` with cells no wider than `d / sqrt(3)`; axes with a
    /// non-zero `wrap` span `[0, wrap)` instead.
    fn new(lo: [f64; 3], hi: [f64; 3], wrap: [f64; 3], d: f64, dense_limit: usize) -> Grid {
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

    fn cell_of(&self, p: [f64; 3]) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            let c = ((p[k] - self.origin[k]) / self.cell[k]).floor();
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

    fn insert(&mut self, c: [usize; 3], sample: usize) {
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

    /// Whether a sample lies within `d` of `p` (in cell `c`): the cells of the 5^3 block
    /// around `c` that can hold such a sample, nearest first, so most rejections end early.
    fn conflicts(&self, c: [usize; 3], p: [f64; 3], points: &[[f64; 3]], d2: f64) -> bool {
        CONFLICT_OFFSETS.iter().any(|o| {
            let mut q = [0usize; 3];
            for k in 0..3 {
                let i = c[k] as isize + o[k] as isize;
                let n = self.n[k] as isize;
                q[k] = if self.wrap[k] > 0.0 {
                    i.rem_euclid(n) as usize
                } else if (0..n).contains(&i) {
                    i as usize
                } else {
                    return false;
                };
            }
            self.get(q)
                .is_some_and(|s| dist2(p, points[s], self.wrap) < d2)
        })
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
    fn any_near(&self, c: [usize; 3], r: usize, mut f: impl FnMut(usize) -> bool) -> bool {
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

/// `p - q` (cells) with the minimum image along axes of non-zero `period`.
pub fn delta(p: [f64; 3], q: [f64; 3], period: [f64; 3]) -> [f64; 3] {
    [0, 1, 2].map(|k| {
        let d = p[k] - q[k];
        if period[k] > 0.0 {
            d - period[k] * (d / period[k]).round()
        } else {
            d
        }
    })
}

fn dist2(p: [f64; 3], q: [f64; 3], period: [f64; 3]) -> f64 {
    let d = delta(p, q, period);
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// Uniform points on a mesh: a triangle picked with probability proportional to its area by
/// Walker's alias method (Vose's construction: O(1) per draw, one random table access instead of
/// a binary search through the cumulative areas), then a uniform point in it.
pub struct SurfaceDraw {
    /// Per triangle: the chance of keeping it when its column is drawn, and the alias taken
    /// otherwise.
    alias: Vec<(f64, u32)>,
    /// Per triangle: its first corner and the two edges from it (cells).
    corners: Vec<[[f64; 3]; 3]>,
    area: f64,
}

impl SurfaceDraw {
    /// The sampler of a validated mesh.
    pub fn new(mesh: &TriangleMesh) -> Self {
        let n = mesh.triangles.len();
        let areas: Vec<f64> = (0..n).map(|t| mesh.triangle_area(t)).collect();
        let area: f64 = areas.iter().sum();
        let mut scaled: Vec<f64> = areas.iter().map(|a| a * n as f64 / area).collect();
        let mut alias: Vec<(f64, u32)> = (0..n).map(|t| (1.0, t as u32)).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) =
            (0..n).partition(|&t| scaled[t] < 1.0);
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            alias[s] = (scaled[s], l as u32);
            scaled[l] -= 1.0 - scaled[s];
            if scaled[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Leftovers are 1 up to rounding: always kept.
        let corners = (0..n)
            .map(|t| {
                let [a, b, c] = mesh.corners(t);
                [a, sub(b, a), sub(c, a)]
            })
            .collect();
        SurfaceDraw {
            alias,
            corners,
            area,
        }
    }

    /// Total area (cells^2).
    pub fn area(&self) -> f64 {
        self.area
    }

    /// One uniform point of the surface (cells).
    pub fn draw(&self, rng: &mut SplitMix64) -> [f64; 3] {
        let x = rng.next_f64() * self.alias.len() as f64;
        let column = (x as usize).min(self.alias.len() - 1);
        let (keep, other) = self.alias[column];
        let t = if x - (column as f64) < keep {
            column
        } else {
            other as usize
        };
        let [a, e1, e2] = self.corners[t];
        let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
        if u + v > 1.0 {
            (u, v) = (1.0 - u, 1.0 - v);
        }
        [0, 1, 2].map(|k| a[k] + u * e1[k] + v * e2[k])
    }
}

/// The most samples at spacing `d` on `area`: a hexagonal packing, `2 / sqrt(3)` per `d^2`.
pub fn max_count(area: f64, d: f64) -> u64 {
    (area * 2.0 / (3f64.sqrt() * d * d)).ceil() as u64
}

/// Poisson-disk samples of `mesh` at least `min_distance` cells apart, by dart throwing from a
/// deterministic stream of `seed`. `periodic` gives the domain length per axis (cells, 0 = not
/// periodic) for minimum-image distances; positions are wrapped into `[0, L)` along those axes.
/// Fails before sampling when a hexagonal packing of the area ([`max_count`]) would exceed
/// `max_samples`.
pub fn poisson_disk(
    mesh: &TriangleMesh,
    min_distance: f64,
    seed: u64,
    periodic: Option<[f64; 3]>,
    max_samples: usize,
) -> Result<Samples, SamplingError> {
    sample(
        mesh,
        min_distance,
        seed,
        periodic,
        max_samples,
        DENSE_GRID_CELLS,
    )
}

/// [`poisson_disk`] with the dense grid limited to `dense_limit` cells (a hash map beyond).
fn sample(
    mesh: &TriangleMesh,
    min_distance: f64,
    seed: u64,
    periodic: Option<[f64; 3]>,
    max_samples: usize,
    dense_limit: usize,
) -> Result<Samples, SamplingError> {
    let d = min_distance;
    if !(d > 0.0 && d.is_finite()) {
        return Err(SamplingError::BadSpacing(d));
    }
    let period = periodic.unwrap_or([0.0; 3]);
    for (axis, &length) in period.iter().enumerate() {
        if !(length == 0.0 || (length.is_finite() && length >= 2.0 * d)) {
            return Err(SamplingError::BadPeriod {
                axis,
                length,
                spacing: d,
            });
        }
    }
    mesh.validate()?;

    let surface = SurfaceDraw::new(mesh);
    let total = surface.area();
    let needed = max_count(total, d);
    if needed > max_samples as u64 {
        return Err(SamplingError::TooMany {
            needed,
            area: total,
            spacing: d,
            limit: max_samples,
        });
    }

    // The grid wraps only along periodic axes the mesh spans to within `d` of the period:
    // along the others no two surface points are within `d` through the wrap.
    let (lo, hi) = mesh.bounds();
    let wrap = [0, 1, 2].map(|k| {
        if period[k] > 0.0 && hi[k] - lo[k] + d >= period[k] {
            period[k]
        } else {
            0.0
        }
    });
    let wrap_point = |mut p: [f64; 3]| {
        for k in 0..3 {
            if period[k] > 0.0 {
                p[k] = p[k].rem_euclid(period[k]);
            }
        }
        p
    };
    // Grid coordinates: wrapped along wrapping axes, as on the mesh along the others.
    let grid_point = |mut p: [f64; 3]| {
        for k in 0..3 {
            if wrap[k] > 0.0 {
                p[k] = p[k].rem_euclid(wrap[k]);
            }
        }
        p
    };
    let mut grid = Grid::new(lo, hi, wrap, d, dense_limit);

    let candidates = (CANDIDATES_PER_D2 * total / (d * d)).ceil().max(1.0) as u64;
    let mut rng = SplitMix64::new(seed);
    let d2 = d * d;
    let mut points: Vec<[f64; 3]> = Vec::new();
    for _ in 0..candidates {
        let p = grid_point(surface.draw(&mut rng));
        let cell = grid.cell_of(p);
        if grid.conflicts(cell, p, &points, d2) {
            continue;
        }
        grid.insert(cell, points.len());
        points.push(p);
    }

    // Nearest neighbours: exact within 4 cells (at least 4 d / sqrt(3) away), else brute force.
    let reach = 4.0 * grid.cell.iter().fold(f64::INFINITY, |m, &c| m.min(c));
    let nearest: Vec<f64> = (0..points.len())
        .map(|i| {
            let mut best = f64::INFINITY;
            grid.any_near(grid.cell_of(points[i]), 4, |s| {
                if s != i {
                    best = best.min(dist2(points[i], points[s], wrap));
                }
                false
            });
            if best.sqrt() > reach {
                for (s, &q) in points.iter().enumerate() {
                    if s != i {
                        best = best.min(dist2(points[i], q, wrap));
                    }
                }
            }
            best.sqrt()
        })
        .collect();
    let count = points.len();
    let (min_spacing, mean_nearest, max_nearest) = if count < 2 {
        (f64::INFINITY, f64::INFINITY, f64::INFINITY)
    } else {
        (
            nearest.iter().fold(f64::INFINITY, |m, &x| m.min(x)),
            nearest.iter().sum::<f64>() / count as f64,
            nearest.iter().fold(0.0, |m: f64, &x| m.max(x)),
        )
    };
    Ok(Samples {
        positions: points.into_iter().map(wrap_point).collect(),
        area: vec![total / count as f64; count],
        min_distance: d,
        total_area: total,
        min_spacing,
        mean_nearest,
        max_nearest,
        candidates,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::ib::shapes::{cylinder, sphere};

    #[test]
    fn dense_and_blocked_grids_give_the_same_samples() {
        let mesh = sphere(2.0, 0.3).unwrap();
        let tube = cylinder(1.0, 3.0, false, 0.3).unwrap();
        for (mesh, period) in [(&mesh, None), (&tube, Some([0.0, 0.0, 3.0]))] {
            let dense = sample(mesh, 0.3, 5, period, 1 << 20, usize::MAX).unwrap();
            let blocked = sample(mesh, 0.3, 5, period, 1 << 20, 0).unwrap();
            assert!(dense.len() > 100);
            assert_eq!(dense, blocked);
        }
    }

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

    #[test]
    fn triangles_are_drawn_in_proportion_to_their_area() {
        // Two triangles of areas 1 and 3: a quarter of the draws land on the first (x < 1).
        let mesh = TriangleMesh {
            vertices: vec![
                [0.0; 3],
                [1.0, 0.0, 0.0],
                [0.0, 2.0, 0.0],
                [1.0, 2.0, 0.0],
                [4.0, 0.0, 0.0],
            ],
            triangles: vec![[0, 1, 2], [1, 4, 3]],
        };
        let draw = SurfaceDraw::new(&mesh);
        assert!((draw.area() - 4.0).abs() < 1e-12);
        let mut rng = SplitMix64::new(1);
        let n = 100_000;
        let first = (0..n)
            .filter(|_| draw.draw(&mut rng)[0] < 1.0 - 1e-12)
            .count();
        let expected = n as f64 / 4.0;
        assert!(
            (first as f64 - expected).abs() < 4.0 * (expected * 3.0 / 4.0).sqrt(),
            "{first}"
        );
    }

    #[test]
    fn splitmix_is_uniform_enough() {
        let mut rng = SplitMix64::new(3);
        let n = 100_000;
        let mean = (0..n).map(|_| rng.next_f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
    }
}
