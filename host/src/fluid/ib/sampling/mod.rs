//! Poisson-disk sampling of a triangle mesh by dart throwing (Cook, "Stochastic sampling in
//! computer graphics", ACM TOG 5(1), 1986): candidates ("darts") drawn uniformly by area are
//! accepted when no accepted sample lies within the minimum distance `d`, looked up in a uniform
//! background grid of cell `d / sqrt(3)` (Bridson, "Fast Poisson disk sampling in arbitrary
//! dimensions", SIGGRAPH 2007 sketches), so a grid cell holds at most one sample and a
//! candidate's conflicts lie within two cells along each axis.
//!
//! Stopping: a fixed budget of [`CANDIDATES_PER_D2`] candidates per `d^2` of surface area. An
//! unhit gap of area `a` survives the budget with probability `exp(-budget a / A)`, so the set is
//! maximal up to gaps a few hundredths of `d^2` wide; dart throwing converges to the random
//! sequential adsorption jamming limit, a disk coverage of 0.547 (Hinrichsen, Feder, Jossang,
//! J. Stat. Phys. 44, 1986), i.e. `0.547 / (pi d^2 / 4) = 0.697` samples per `d^2`, approached
//! as `t^(-1/2)` in the number of darts `t` (Feder 1980). A fixed budget (rather than a count of
//! consecutive rejections) makes the work proportional to the area and independent of luck.
//!
//! Tiles (locality, parallelism, determinism): one stream of darts over the whole surface
//! misses the cache twice per dart (the triangle it lands on, the grid cells around it), about
//! 1 us a dart once the mesh and grid outgrow the cache. Instead the grid is cut into tiles of
//! [`TILE`]^3 cells and every triangle is clipped into per-tile pieces (Sutherland-Hodgman); a
//! tile's darts are drawn on its own pieces, from a random stream of its own. The tiles are
//! coloured by the parities of their coordinates (8 colours, the phase groups of Wei, "Parallel
//! Poisson disk sampling", ACM TOG 27(3), 2008): two tiles of one colour are a whole tile (at
//! least `d`) apart, so their darts cannot conflict, and the tiles of a colour run in parallel
//! against the samples of the colours before, each job owning its tile's samples: the samples
//! depend on the seed only, not on the threads. Every tile's darts are spread over [`PASSES`]
//! passes through the colours, so that no region jams long before its neighbours (Wei throws
//! one dart per cell per pass for the same reason); each point of the surface still receives
//! darts at the same rate, `CANDIDATES_PER_D2 / d^2` per unit area, in an order random up to
//! the colouring, and the densities match the single stream's (0.654 and 0.653 per `d^2` on a
//! sphere of radius 12 at `d` = 0.1; one pass would give 0.666, four 0.660: tiles jammed before
//! their neighbours pack the seams tighter).
//!
//! A job works in a few kilobytes: its tile's pieces and alias table copied in one sequential
//! read, and a grid over the tile and two cells around it filled with the samples there. Each
//! sample records which faces of its tile it lies within two cells of, so a neighbour lends
//! only those samples without their positions being read.
//!
//! Timings (one core, the CPU time of `sampling_timings` in `ib::tests`; the single-stream
//! sampler before it): a sphere of radius 12 at `d` = 0.5, 0.25, 0.1: 0.06, 0.25, 1.7 s (was
//! 0.09, 1.0, 11.0 s); a torus of radii 30 and 8 at 0.1: 8.6 s (was 72.6 s). The pieces cost
//! about 80 bytes per mesh triangle (cut triangles count two or three times).
//!
//! Periodic axes use the minimum image for distances and hold the sample positions in
//! `[0, L)`.

use super::shapes::{cross, norm, sub, ShapeError, TriangleMesh};
use murmur_common::rng::mix64;
use rayon::prelude::*;
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

/// Edge of a tile, in grid cells (`8 d / sqrt(3)` = 4.6 `d`): large enough that not too many
/// triangles are cut, small enough that a job's pieces and grid stay in the cache and that
/// there are many tiles to share among threads (16 measured no faster).
pub const TILE: usize = 8;

/// Passes over the tiles; each throws `1 / PASSES` of every tile's darts. At 16, a pass is 4
/// darts per `d^2` (about 3 per exclusion disk), and the density matches the single stream's
/// (module docs).
pub const PASSES: u64 = 16;

/// Largest dense tile index (16 MiB) before the occupied tiles are found through a hash map.
const DENSE_TILE_INDEX: u64 = 1 << 22;

/// Most grid cells along an axis: three such indices fit one 64-bit key.
const MAX_AXIS_CELLS: usize = 1 << 21;

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
    /// A samples-per-area density or packing density is not positive and finite.
    #[error("sample density must be positive and finite, got {0}")]
    BadDensity(f64),
    /// The mesh spans too many grid cells along an axis for the background grid.
    #[error(
        "the surface spans {extent:.1} cells along axis {axis}: too wide for a grid of spacing \
         {spacing} (at most 2^21 grid cells per axis)"
    )]
    TooWide {
        axis: usize,
        extent: f64,
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

    /// Samples per cell^2 of surface ("samples per boundary cell").
    pub fn samples_per_cell(&self) -> f64 {
        self.len() as f64 / self.total_area
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

/// Uniform background grid over the samples: at most one sample per cell. Its geometry is
/// the tiling's; its table, filled once sampling is done, serves the nearest-neighbour
/// statistics (the darts use each job's local grid).
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

/// `x.floor()` without the libm call that `f64::floor` compiles to on baseline x86-64 (no
/// `roundsd`), for the per-dart paths; exact for `|x| < 2^63`, NaN gives 0.
#[inline(always)]
fn floor(x: f64) -> f64 {
    let t = x as i64 as f64;
    if t > x {
        t - 1.0
    } else {
        t
    }
}

/// Squared Euclidean distance (no wrap).
#[inline(always)]
fn dist2_plain(p: [f64; 3], q: [f64; 3]) -> f64 {
    let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

fn dist2(p: [f64; 3], q: [f64; 3], period: [f64; 3]) -> f64 {
    let d = delta(p, q, period);
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// Uniform points on a mesh: a triangle picked with probability proportional to its area by
/// Walker's alias method (Vose's construction: O(1) per draw, one random table access instead of
/// a binary search through the cumulative areas), then a uniform point in it. The sampler draws
/// per tile instead (module docs); this whole-surface draw serves coverage probes.
pub struct SurfaceDraw {
    /// Per triangle: the chance of keeping it when its column is drawn, and the alias taken
    /// otherwise.
    alias: Vec<(f32, u32)>,
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
        let mut alias = vec![(1.0, 0); n];
        alias_table(&areas, &mut alias);
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
        let t = if x - (column as f64) < keep as f64 {
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

/// Walker's alias table of `weights` (Vose's construction, "A linear algorithm for generating
/// random numbers with a given distribution", IEEE TSE 17(9), 1991) into `out`: per column, the
/// chance of keeping it and the column taken otherwise.
fn alias_table(weights: &[f64], out: &mut [(f32, u32)]) {
    let n = weights.len();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
    for (t, slot) in out.iter_mut().enumerate() {
        *slot = (1.0, t as u32);
    }
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&t| scaled[t] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        out[s] = (scaled[s] as f32, l as u32);
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Leftovers are 1 up to rounding: always kept.
}

/// The most samples at spacing `d` on `area`: a hexagonal packing, `2 / sqrt(3)` per `d^2`.
pub fn max_count(area: f64, d: f64) -> u64 {
    (area * 2.0 / (3f64.sqrt() * d * d)).ceil() as u64
}

/// Samples per `d^2` that [`poisson_disk`] reaches on smooth surfaces ([`Samples::density`],
/// means over seeds 1 to 8: 0.651 to 0.655 on spheres of radius 3 and 12 and a torus at `d`
/// = 0.25 and 0.5, each seed within 0.005 of the mean; 0.654 at `d` = 0.1), 94 % of the
/// jamming limit 0.697 that the fixed budget of [`CANDIDATES_PER_D2`] approaches (module
/// docs). Sharp edges lower it (0.646 on a box): a sample's ball reaches both faces.
pub const PACKING_DENSITY: f64 = 0.653;

/// The spacing `d` (cells) that gives `samples_per_cell` samples per cell^2 of surface (the
/// "samples per boundary cell" of immersed-boundary papers, typically 1 to 100) at the packing
/// `density` in samples per `d^2` (normally [`PACKING_DENSITY`]; a sample set's own
/// [`Samples::density`] to correct a second pass): `n = density / d^2`, so
/// `d = sqrt(density / n)`. 10 samples per cell at the default density is `d = 0.256`.
pub fn spacing_for_samples_per_cell(
    samples_per_cell: f64,
    density: f64,
) -> Result<f64, SamplingError> {
    for value in [samples_per_cell, density] {
        if !(value > 0.0 && value.is_finite()) {
            return Err(SamplingError::BadDensity(value));
        }
    }
    Ok((density / samples_per_cell).sqrt())
}

/// Poisson-disk samples of `mesh` at least `min_distance` cells apart, by tiled dart throwing
/// (module docs) from deterministic streams of `seed`: the same samples for the same input on
/// any number of threads. `periodic` gives the domain length per axis (cells, 0 = not
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

/// A convex polygon of at most [`Poly::CAP`] corners: a triangle clipped by up to six planes.
#[derive(Clone, Copy)]
struct Poly {
    v: [[f64; 3]; Poly::CAP],
    n: usize,
}

impl Poly {
    /// A triangle gains at most one corner per clipping plane: 3 + 6.
    const CAP: usize = 9;

    fn triangle(t: [[f64; 3]; 3]) -> Poly {
        let mut v = [[0.0; 3]; Poly::CAP];
        v[..3].copy_from_slice(&t);
        Poly { v, n: 3 }
    }

    /// The part with `x_k >= bound` (`upper`) or `x_k < bound` (Sutherland and Hodgman,
    /// "Reentrant polygon clipping", CACM 17(1), 1974). Half-open, so a face lying in a tile
    /// boundary belongs to exactly one of the two tiles; points made on the plane get
    /// `x_k = bound` exactly.
    fn clip(&self, k: usize, bound: f64, upper: bool) -> Poly {
        let inside = |p: &[f64; 3]| if upper { p[k] >= bound } else { p[k] < bound };
        let mut out = Poly {
            v: [[0.0; 3]; Poly::CAP],
            n: 0,
        };
        for i in 0..self.n {
            let (a, b) = (self.v[i], self.v[(i + 1) % self.n]);
            let (ia, ib) = (inside(&a), inside(&b));
            if ia {
                out.push(a);
            }
            if ia != ib {
                let t = (bound - a[k]) / (b[k] - a[k]);
                let mut p = [0, 1, 2].map(|m| a[m] + t * (b[m] - a[m]));
                p[k] = bound;
                out.push(p);
            }
        }
        out
    }

    fn push(&mut self, p: [f64; 3]) {
        // Convexity bounds the count; the guard only keeps a rounding surprise from indexing out.
        if self.n < Poly::CAP {
            self.v[self.n] = p;
            self.n += 1;
        }
    }

    /// The part within `[lo, hi)` along axis `k` (infinite bounds clip nothing).
    fn slab(&self, k: usize, lo: f64, hi: f64) -> Poly {
        let mut p = *self;
        if lo > f64::NEG_INFINITY {
            p = p.clip(k, lo, true);
        }
        if hi < f64::INFINITY && p.n >= 3 {
            p = p.clip(k, hi, false);
        }
        p
    }
}

/// One axis of the tiling: runs of grid cells, [`TILE`] wide, that partition the axis.
struct Axis {
    /// First cell of each tile, then the cell count.
    starts: Vec<usize>,
    /// The tile of each cell.
    tile_of: Vec<u32>,
    origin: f64,
    cell: f64,
    /// Period along which the grid wraps (0 = none).
    wrap: f64,
}

impl Axis {
    /// Tiles over `n` cells of width `cell` from `origin`. A wrapping axis gets an even number
    /// of tiles, so that the parity colouring alternates around the ring, or when it is too short
    /// for two tiles of [`TILE`] cells, two shorter ones (a period of at least `2 d` is at least
    /// 4 cells), or one.
    fn new(n: usize, origin: f64, cell: f64, wrap: f64) -> Axis {
        let tiles = if wrap > 0.0 {
            match 2 * (n / (2 * TILE)) {
                0 if n >= 2 => 2,
                0 => 1,
                t => t,
            }
        } else {
            n.div_ceil(TILE)
        };
        let starts: Vec<usize> = (0..=tiles).map(|i| i * n / tiles).collect();
        let mut tile_of = vec![0u32; n];
        for t in 0..tiles {
            tile_of[starts[t]..starts[t + 1]].fill(t as u32);
        }
        Axis {
            starts,
            tile_of,
            origin,
            cell,
            wrap,
        }
    }

    fn tiles(&self) -> usize {
        self.starts.len() - 1
    }

    /// The virtual tile holding coordinate `x`: along a wrapping axis, tile `t` of the periodic
    /// copy `q` is `q * tiles + t`.
    fn tile_at(&self, x: f64) -> i64 {
        let (q, r) = if self.wrap > 0.0 {
            let q = floor(x / self.wrap);
            (q, x - q * self.wrap)
        } else {
            (0.0, x - self.origin)
        };
        let c = (floor(r / self.cell).max(0.0) as usize).min(self.tile_of.len() - 1);
        q as i64 * self.tiles() as i64 + self.tile_of[c] as i64
    }

    /// Virtual tile `j`: the tile, its bounds `[lo, hi)` and the shift that brings it into the
    /// grid. The outer ends of a non-wrapping axis are open, so no rounding loses surface.
    fn virtual_tile(&self, j: i64) -> (usize, f64, f64, f64) {
        let tiles = self.tiles() as i64;
        let (q, t) = (j.div_euclid(tiles), j.rem_euclid(tiles) as usize);
        let edge = |i: usize| self.starts[i] as f64 * self.cell;
        if self.wrap > 0.0 {
            let shift = q as f64 * self.wrap;
            (t, shift + edge(t), shift + edge(t + 1), shift)
        } else {
            let lo = if t == 0 {
                f64::NEG_INFINITY
            } else {
                self.origin + edge(t)
            };
            let hi = if t + 1 == self.tiles() {
                f64::INFINITY
            } else {
                self.origin + edge(t + 1)
            };
            (t, lo, hi, 0.0)
        }
    }
}

/// Tile number per occupied tile key.
enum TileIndex {
    Dense(Vec<u32>),
    Sparse(HashMap<u64, u32, BuildHasherDefault<MixHasher>>),
}

impl TileIndex {
    const EMPTY: u32 = u32::MAX;

    fn new(keys: u64) -> TileIndex {
        if keys <= DENSE_TILE_INDEX {
            TileIndex::Dense(vec![Self::EMPTY; keys as usize])
        } else {
            TileIndex::Sparse(HashMap::default())
        }
    }

    fn get(&self, key: u64) -> Option<u32> {
        match self {
            TileIndex::Dense(v) => Some(v[key as usize]).filter(|&t| t != Self::EMPTY),
            TileIndex::Sparse(m) => m.get(&key).copied(),
        }
    }

    fn set(&mut self, key: u64, tile: u32) {
        match self {
            TileIndex::Dense(v) => v[key as usize] = tile,
            TileIndex::Sparse(m) => {
                m.insert(key, tile);
            }
        }
    }
}

/// The surface cut into tiles: per occupied tile (in key order) its pieces (triangles, as a
/// corner and the two edges from it) and an alias table over them by area.
struct Tiles {
    axes: [Axis; 3],
    /// Per occupied tile: the occupied tiles around it, `(dz + 1) * 9 + (dy + 1) * 3 + dx + 1`
    /// for the neighbour at offset `(dx, dy, dz)` (across a wrap: the periodic copy's tile),
    /// [`NO_TILE`] where there is none.
    neighbours: Vec<[u32; 27]>,
    /// Per occupied tile: its coordinates in the tiling.
    coords: Vec<[usize; 3]>,
    /// Per occupied tile, its first piece; then the piece count.
    offsets: Vec<usize>,
    pieces: Vec<[[f64; 3]; 3]>,
    /// Per piece: Walker's alias table within its tile (the chance of keeping the piece when its
    /// column is drawn, the tile-local alias taken otherwise). `f32` chances bias a piece's
    /// share by at most 2^-24 of it.
    alias: Vec<(f32, u32)>,
    /// Per occupied tile: its surface area (cells^2).
    area: Vec<f64>,
}

impl Tiles {
    /// Clips every triangle into the tiles over `grid`. Two passes over the triangles (count,
    /// then place) keep the memory at one copy of the pieces.
    fn new(mesh: &TriangleMesh, grid: &Grid) -> Tiles {
        let axes =
            [0, 1, 2].map(|k| Axis::new(grid.n[k], grid.origin[k], grid.cell[k], grid.wrap[k]));
        let n = axes.each_ref().map(|a| a.tiles() as u64);
        let key = |t: [usize; 3]| (t[2] as u64 * n[1] + t[1] as u64) * n[0] + t[0] as u64;
        let mut index = TileIndex::new(n[0] * n[1] * n[2]);

        // Pass 1: the occupied tiles (numbered as first met) and their piece counts.
        let mut counts: Vec<usize> = Vec::new();
        let mut coords: Vec<[usize; 3]> = Vec::new();
        for t in 0..mesh.triangles.len() {
            for_each_piece(&axes, mesh.corners(t), |tile, _| {
                let k = key(tile);
                let id = match index.get(k) {
                    Some(id) => id as usize,
                    None => {
                        index.set(k, counts.len() as u32);
                        counts.push(0);
                        coords.push(tile);
                        counts.len() - 1
                    }
                };
                counts[id] += 1;
            });
        }
        // Renumber in key order, so that the output does not depend on the triangle order's
        // first meetings and the tiles of a colour come in a fixed order.
        let mut order: Vec<usize> = (0..counts.len()).collect();
        order.sort_unstable_by_key(|&id| key(coords[id]));
        let mut offsets = Vec::with_capacity(order.len() + 1);
        let mut total = 0;
        for (rank, &id) in order.iter().enumerate() {
            index.set(key(coords[id]), rank as u32);
            offsets.push(total);
            total += counts[id];
        }
        offsets.push(total);
        let coords: Vec<[usize; 3]> = order.iter().map(|&id| coords[id]).collect();

        // Pass 2: the same pieces, each into its tile's run.
        let mut fill = offsets.clone();
        let mut pieces = vec![[[0.0; 3]; 3]; total];
        for t in 0..mesh.triangles.len() {
            for_each_piece(&axes, mesh.corners(t), |tile, [a, b, c]| {
                // Every key was numbered in pass 1, which met the same pieces.
                if let Some(rank) = index.get(key(tile)) {
                    let slot = &mut fill[rank as usize];
                    pieces[*slot] = [a, sub(b, a), sub(c, a)];
                    *slot += 1;
                }
            });
        }
        let mut alias = vec![(1.0f32, 0u32); total];
        let mut area = Vec::with_capacity(offsets.len() - 1);
        for w in offsets.windows(2) {
            let areas: Vec<f64> = pieces[w[0]..w[1]]
                .iter()
                .map(|[_, e1, e2]| 0.5 * norm(cross(*e1, *e2)))
                .collect();
            area.push(areas.iter().sum());
            alias_table(&areas, &mut alias[w[0]..w[1]]);
        }
        // Every tile's neighbours, looked up once rather than in each of the passes.
        let neighbours = coords
            .iter()
            .map(|&c| {
                let mut around = [NO_TILE; 27];
                for (slot, entry) in around.iter_mut().enumerate() {
                    let offset = [slot % 3, slot / 3 % 3, slot / 9].map(|o| o as i64 - 1);
                    let mut at = [0usize; 3];
                    let mut inside = true;
                    for k in 0..3 {
                        let (tiles, j) = (axes[k].tiles() as i64, c[k] as i64 + offset[k]);
                        if axes[k].wrap > 0.0 {
                            at[k] = j.rem_euclid(tiles) as usize;
                        } else if (0..tiles).contains(&j) {
                            at[k] = j as usize;
                        } else {
                            inside = false;
                        }
                    }
                    if inside {
                        *entry = index.get(key(at)).unwrap_or(NO_TILE);
                    }
                }
                around
            })
            .collect();
        Tiles {
            axes,
            neighbours,
            coords,
            offsets,
            pieces,
            alias,
            area,
        }
    }

    fn len(&self) -> usize {
        self.coords.len()
    }

    /// Throws `count` darts on tile `tile`, appending the accepted ones to `own` (the tile's
    /// samples); `lists` holds every other tile's samples, of which only tiles of other
    /// colours are read. The conflicts are looked up in a grid local to the job: the tile's
    /// cells and two more on every side, filled with the samples there (neighbours' moved by
    /// the period across a wrap), so every lookup stays in a few kilobytes.
    #[allow(clippy::too_many_arguments)]
    fn throw(
        &self,
        tile: usize,
        count: u64,
        rng: &mut SplitMix64,
        own: &mut Vec<Kept>,
        lists: &[Vec<Kept>],
        d2: f64,
        local: &mut LocalGrid,
    ) {
        let c = self.coords[tile];
        let width = [0, 1, 2].map(|k| {
            let a = &self.axes[k];
            a.starts[c[k] + 1] - a.starts[c[k]]
        });
        let base = [0, 1, 2].map(|k| {
            let a = &self.axes[k];
            a.origin + (a.starts[c[k]] as f64 - HALO as f64) * a.cell
        });
        let cell = self.axes.each_ref().map(|a| a.cell);
        local.reset(width.map(|w| w + 2 * HALO), base, cell);

        // The samples of the 27 tiles around (wrapping axes: through the period), moved into
        // this tile's periodic copy; of a neighbour, only those its mask puts within the halo
        // of the shared faces (most of its samples are further: an integer test skips them).
        for (slot, &other) in self.neighbours[tile].iter().enumerate() {
            if other == NO_TILE {
                continue;
            }
            let offset = [slot % 3, slot / 3 % 3, slot / 9].map(|o| o as i64 - 1);
            let mut shift = [0.0; 3];
            let mut need = 0u8;
            for k in 0..3 {
                let a = &self.axes[k];
                if a.wrap > 0.0 {
                    let j = c[k] as i64 + offset[k];
                    shift[k] = j.div_euclid(a.tiles() as i64) as f64 * a.wrap;
                }
                // A neighbour below along k lends its samples near its upper face, and so on.
                need |= match offset[k] {
                    -1 => 2 << (2 * k),
                    1 => 1 << (2 * k),
                    _ => 0,
                };
            }
            let list = if other as usize == tile {
                &own[..]
            } else {
                &lists[other as usize][..]
            };
            for &(p, near) in list {
                if near & need == need {
                    local.insert_if_inside([0, 1, 2].map(|k| p[k] + shift[k]));
                }
            }
        }

        // The tile's pieces and alias table, copied in one sequential read: a pass throws about
        // as many darts on a tile as a fine mesh gives it pieces, so drawing from the shared
        // arrays would miss the cache once a dart.
        let range = self.offsets[tile]..self.offsets[tile + 1];
        local.pieces.clear();
        local.pieces.extend_from_slice(&self.pieces[range.clone()]);
        local.alias.clear();
        local.alias.extend_from_slice(&self.alias[range]);
        let offsets = local.conflict_offsets();
        for _ in 0..count {
            let p = dart(&local.pieces, &local.alias, rng);
            let cell = local.inner_cell(p);
            let at = local.slot(cell);
            let conflict = offsets.iter().any(|&o| {
                let s = local.slots[(at as isize + o) as usize];
                s != 0 && dist2_plain(p, local.points[s as usize - 1]) < d2
            });
            if !conflict {
                local.put(at, p);
                // Which faces of its tile the sample lies within the halo of (bits 2k and
                // 2k + 1: the lower and upper face across axis k).
                let mut near = 0u8;
                for k in 0..3 {
                    let inner = cell[k] - HALO;
                    near |= u8::from(inner < HALO) << (2 * k);
                    near |= u8::from(inner + HALO >= width[k]) << (2 * k + 1);
                }
                own.push((p, near));
            }
        }
        local.clear();
    }

    /// The tile's colour: the parities of its coordinates. Tiles of one colour are at least a
    /// whole tile (`TILE` cells, at least `d`) apart along some axis, or (a wrapping axis of
    /// one or two tiles) the same tile.
    fn colour(&self, tile: usize) -> usize {
        let c = self.coords[tile];
        (c[0] & 1) | (c[1] & 1) << 1 | (c[2] & 1) << 2
    }

    /// A stream per tile and pass, `u64::MAX` for the tile's dart count.
    fn stream(&self, seed: u64, tile: usize, pass: u64) -> SplitMix64 {
        let [x, y, z] = self.coords[tile].map(|c| c as u64);
        SplitMix64::new(seed ^ mix64(x ^ mix64(y ^ mix64(z ^ mix64(pass)))))
    }

    /// Surface area of the tile (cells^2).
    fn area(&self, tile: usize) -> f64 {
        self.area[tile]
    }
}

/// A uniform point on `pieces` (corner and edges), picked by their alias table.
#[inline(always)]
fn dart(pieces: &[[[f64; 3]; 3]], alias: &[(f32, u32)], rng: &mut SplitMix64) -> [f64; 3] {
    let x = rng.next_f64() * pieces.len() as f64;
    let column = (x as usize).min(pieces.len() - 1);
    let (keep, other) = alias[column];
    let i = if x - (column as f64) < keep as f64 {
        column
    } else {
        other as usize
    };
    let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
    if u + v > 1.0 {
        (u, v) = (1.0 - u, 1.0 - v);
    }
    let [a, e1, e2] = pieces[i];
    [0, 1, 2].map(|k| a[k] + u * e1[k] + v * e2[k])
}

/// Grid cells around a tile searched for conflicts: at most 2 cells away (module docs).
const HALO: usize = 2;

/// No occupied tile there.
const NO_TILE: u32 = u32::MAX;

/// A sample and the faces of its tile it lies within [`HALO`] cells of (bit `2k`: the lower
/// face across axis `k`, bit `2k + 1`: the upper one).
type Kept = ([f64; 3], u8);

/// A job's grid over its tile and [`HALO`] cells around: the sample (plus one; 0 = none) of
/// each cell, indexing the job's own list of points. Reused between jobs, emptied after each.
#[derive(Default)]
struct LocalGrid {
    dims: [usize; 3],
    base: [f64; 3],
    /// Reciprocal cell widths: cells are found by a product (the same one for samples and
    /// darts; a point on a cell face may go either way, which the search does not mind).
    scale: [f64; 3],
    slots: Vec<u32>,
    points: Vec<[f64; 3]>,
    /// The slots set, to empty them afterwards without clearing the whole grid.
    used: Vec<usize>,
    /// The job's tile's pieces and alias table (copies, see [`Tiles::throw`]).
    pieces: Vec<[[f64; 3]; 3]>,
    alias: Vec<(f32, u32)>,
}

impl LocalGrid {
    fn reset(&mut self, dims: [usize; 3], base: [f64; 3], cell: [f64; 3]) {
        let len = dims[0] * dims[1] * dims[2];
        if self.slots.len() < len {
            self.slots.resize(len, 0);
        }
        (self.dims, self.base, self.scale) = (dims, base, cell.map(|c| 1.0 / c));
    }

    fn slot(&self, c: [usize; 3]) -> usize {
        (c[2] * self.dims[1] + c[1]) * self.dims[0] + c[0]
    }

    /// Adds a sample if it lies in the grid.
    fn insert_if_inside(&mut self, p: [f64; 3]) {
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
    fn inner_cell(&self, p: [f64; 3]) -> [usize; 3] {
        [0, 1, 2].map(|k| {
            // Truncation is the floor here: negatives are clamped first.
            let x = ((p[k] - self.base[k]) * self.scale[k]).max(HALO as f64);
            (x as usize).min(self.dims[k] - 1 - HALO)
        })
    }

    fn put(&mut self, at: usize, p: [f64; 3]) {
        self.points.push(p);
        self.slots[at] = self.points.len() as u32;
        self.used.push(at);
    }

    /// [`CONFLICT_OFFSETS`] as slot offsets in this grid.
    fn conflict_offsets(&self) -> [isize; 117] {
        let (nx, ny) = (self.dims[0] as isize, self.dims[1] as isize);
        CONFLICT_OFFSETS.map(|o| (o[2] as isize * ny + o[1] as isize) * nx + o[0] as isize)
    }

    fn clear(&mut self) {
        for &at in &self.used {
            self.slots[at] = 0;
        }
        self.used.clear();
        self.points.clear();
    }
}

/// Calls `f(tile, piece)` for the parts of triangle `t` in each tile: the triangle itself when
/// its bounding box lies in one tile, else its clip to each tile of the box (slab by slab, so
/// the work follows the pieces), fanned into triangles and moved into the grid's periodic copy.
/// Zero-area pieces are dropped.
fn for_each_piece(
    axes: &[Axis; 3],
    t: [[f64; 3]; 3],
    mut f: impl FnMut([usize; 3], [[f64; 3]; 3]),
) {
    let range = [0, 1, 2].map(|k| {
        let lo = t[0][k].min(t[1][k]).min(t[2][k]);
        let hi = t[0][k].max(t[1][k]).max(t[2][k]);
        (axes[k].tile_at(lo), axes[k].tile_at(hi))
    });
    let mut emit = |tile: [usize; 3], shift: [f64; 3], p: [[f64; 3]; 3]| {
        let p = p.map(|v| [0, 1, 2].map(|k| v[k] - shift[k]));
        if norm(cross(sub(p[1], p[0]), sub(p[2], p[0]))) > 0.0 {
            f(tile, p);
        }
    };
    if range.iter().all(|(lo, hi)| lo == hi) {
        let v = [0, 1, 2].map(|k| axes[k].virtual_tile(range[k].0));
        emit([v[0].0, v[1].0, v[2].0], [v[0].3, v[1].3, v[2].3], t);
        return;
    }
    let whole = Poly::triangle(t);
    for jx in range[0].0..=range[0].1 {
        let (tx, lo, hi, sx) = axes[0].virtual_tile(jx);
        let px = whole.slab(0, lo, hi);
        if px.n < 3 {
            continue;
        }
        for jy in range[1].0..=range[1].1 {
            let (ty, lo, hi, sy) = axes[1].virtual_tile(jy);
            let py = px.slab(1, lo, hi);
            if py.n < 3 {
                continue;
            }
            for jz in range[2].0..=range[2].1 {
                let (tz, lo, hi, sz) = axes[2].virtual_tile(jz);
                let pz = py.slab(2, lo, hi);
                for i in 1..pz.n.saturating_sub(1) {
                    emit([tx, ty, tz], [sx, sy, sz], [pz.v[0], pz.v[i], pz.v[i + 1]]);
                }
            }
        }
    }
}

/// [`poisson_disk`] with the dense grid limited to `dense_limit` cells (blocks or a hash map
/// beyond).
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

    let total = mesh.area();
    let needed = max_count(total, d);
    if needed > max_samples as u64 {
        return Err(SamplingError::TooMany {
            needed,
            area: total,
            spacing: d,
            limit: max_samples,
        });
    }

    let (lo, hi) = mesh.bounds();
    let wrap = wrapping_axes(lo, hi, period, d);
    // Grid keys must fit 64 bits: at most 2^21 cells along an axis.
    for k in 0..3 {
        let extent = if wrap[k] > 0.0 {
            wrap[k]
        } else {
            hi[k] - lo[k]
        };
        if extent / (d / 3f64.sqrt()) >= MAX_AXIS_CELLS as f64 {
            return Err(SamplingError::TooWide {
                axis: k,
                extent,
                spacing: d,
            });
        }
    }
    let mut grid = Grid::new(lo, hi, wrap, d, dense_limit);
    let tiles = Tiles::new(mesh, &grid);

    // Each tile's darts: the budget on its area, rounded up or down at random so the expected
    // count is exact (a sliver of a tile still gets its chance).
    let darts: Vec<u64> = (0..tiles.len())
        .map(|t| {
            let x = CANDIDATES_PER_D2 * tiles.area(t) / (d * d);
            let mut rng = tiles.stream(seed, t, u64::MAX);
            x.floor() as u64 + u64::from(rng.next_f64() < x.fract())
        })
        .collect();
    let mut colours: [Vec<usize>; 8] = Default::default();
    for t in 0..tiles.len() {
        colours[tiles.colour(t)].push(t);
    }

    let d2 = d * d;
    let mut lists: Vec<Vec<Kept>> = vec![Vec::new(); tiles.len()];
    for pass in 0..PASSES {
        for colour in &colours {
            // The tiles of a colour cannot conflict with each other: each job owns its tile's
            // samples and reads the other colours' (the samples depend on the seed only).
            let mut jobs: Vec<(usize, Vec<Kept>)> = colour
                .iter()
                .map(|&t| (t, std::mem::take(&mut lists[t])))
                .collect();
            jobs.par_iter_mut()
                .for_each_init(LocalGrid::default, |local, (t, own)| {
                    let count = darts[*t] * (pass + 1) / PASSES - darts[*t] * pass / PASSES;
                    let mut rng = tiles.stream(seed, *t, pass);
                    tiles.throw(*t, count, &mut rng, own, &lists, d2, local);
                });
            for (t, own) in jobs {
                lists[t] = own;
            }
        }
    }
    let points: Vec<[f64; 3]> = lists.into_iter().flatten().map(|(p, _)| p).collect();
    for (i, &p) in points.iter().enumerate() {
        grid.insert(grid.cell_of(p), i);
    }
    let candidates = darts.iter().sum();

    // Nearest neighbours: a sample within `r` cells along every axis is searched exactly for
    // distances below `r` cells; 2 cells first, then 4, then all samples.
    let min_cell = grid.cell.iter().fold(f64::INFINITY, |m, &c| m.min(c));
    let nearest: Vec<f64> = (0..points.len())
        .into_par_iter()
        .map(|i| {
            let cell = grid.cell_of(points[i]);
            for r in [2, 4] {
                let mut best = f64::INFINITY;
                grid.any_near(cell, r, |s| {
                    if s != i {
                        best = best.min(dist2(points[i], points[s], wrap));
                    }
                    false
                });
                if best.sqrt() < r as f64 * min_cell {
                    return best.sqrt();
                }
            }
            let mut best = f64::INFINITY;
            for (s, &q) in points.iter().enumerate() {
                if s != i {
                    best = best.min(dist2(points[i], q, wrap));
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
        positions: points
            .into_iter()
            .map(|p| [0, 1, 2].map(|k| wrap_coordinate(p[k], period[k])))
            .collect(),
        area: vec![total / count.max(1) as f64; count],
        min_distance: d,
        total_area: total,
        min_spacing,
        mean_nearest,
        max_nearest,
        candidates,
    })
}

/// The periods the grid wraps along: only the periodic axes that the mesh's bounds `lo..hi`
/// span to within `d` of the period; along the others no two surface points are within `d`
/// through the wrap.
fn wrapping_axes(lo: [f64; 3], hi: [f64; 3], period: [f64; 3], d: f64) -> [f64; 3] {
    [0, 1, 2].map(|k| {
        if period[k] > 0.0 && hi[k] - lo[k] + d >= period[k] {
            period[k]
        } else {
            0.0
        }
    })
}

/// `x` wrapped into `[0, period)` (unchanged for a period of 0). `rem_euclid` can round a tiny
/// negative `x` up to `period` itself, which is folded to 0.
fn wrap_coordinate(x: f64, period: f64) -> f64 {
    if period > 0.0 {
        let r = x.rem_euclid(period);
        if r >= period {
            0.0
        } else {
            r
        }
    } else {
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::ib::shapes::{cuboid, cylinder, sphere, torus};
    use proptest::prelude::*;

    /// A soup of `n` triangles with corners in `[-s, s]^3` from `seed` (big ones cross many
    /// tiles and, with a short period, several periodic copies).
    fn soup(n: usize, s: f64, seed: u64) -> TriangleMesh {
        let mut rng = SplitMix64::new(seed);
        let mut mesh = TriangleMesh::default();
        for t in 0..n as u32 {
            for _ in 0..3 {
                let v = [0; 3].map(|_| (2.0 * rng.next_f64() - 1.0) * s);
                mesh.vertices.push(v);
            }
            mesh.triangles.push([3 * t, 3 * t + 1, 3 * t + 2]);
        }
        mesh
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Clipping into tiles keeps every bit of area, in the right tile.
        #[test]
        fn tiles_partition_the_surface(
            n in 1usize..12,
            size in 0.2f64..6.0,
            seed in any::<u64>(),
            d in 0.15f64..1.0,
            periods in proptest::array::uniform3(prop_oneof![Just(0.0), 2.0f64..9.0]),
        ) {
            let mesh = soup(n, size, seed);
            prop_assume!(mesh.validate().is_ok());
            let period = periods.map(|p| if p > 0.0 { p.max(2.0 * d) } else { 0.0 });
            let (lo, hi) = mesh.bounds();
            let wrap = wrapping_axes(lo, hi, period, d);
            let grid = Grid::new(lo, hi, wrap, d, usize::MAX);
            let tiles = Tiles::new(&mesh, &grid);
            let sum: f64 = (0..tiles.len()).map(|t| tiles.area(t)).sum();
            prop_assert!((sum - mesh.area()).abs() <= 1e-9 * mesh.area(), "{sum} vs {}", mesh.area());
            for t in 0..tiles.len() {
                let c = tiles.coords[t];
                for [a, e1, e2] in &tiles.pieces[tiles.offsets[t]..tiles.offsets[t + 1]] {
                    for corner in [*a, add(*a, *e1), add(*a, *e2)] {
                        for k in 0..3 {
                            let axis = &tiles.axes[k];
                            let (mut from, mut to) = (
                                axis.origin + axis.starts[c[k]] as f64 * axis.cell,
                                axis.origin + axis.starts[c[k] + 1] as f64 * axis.cell,
                            );
                            if axis.wrap == 0.0 && c[k] == 0 {
                                from = lo[k];
                            }
                            if axis.wrap == 0.0 && c[k] + 1 == axis.tiles() {
                                to = hi[k];
                            }
                            let eps = 1e-9 * (1.0 + size);
                            prop_assert!(
                                (from - eps..=to + eps).contains(&corner[k]),
                                "axis {k}: {} outside {from}..{to}", corner[k]
                            );
                        }
                    }
                }
            }
        }

        /// Random soups, periodic or not: the spacing holds across every wrap and the samples
        /// stay in the domain.
        #[test]
        fn random_surfaces_keep_the_spacing(
            n in 1usize..8,
            size in 0.5f64..3.0,
            seed in any::<u64>(),
            d in 0.2f64..0.6,
            periods in proptest::array::uniform3(prop_oneof![Just(0.0), 1.2f64..5.0]),
        ) {
            let mesh = soup(n, size, seed);
            prop_assume!(mesh.validate().is_ok());
            let period = periods.map(|p| if p > 0.0 { p.max(2.0 * d) } else { 0.0 });
            let s = poisson_disk(&mesh, d, seed, Some(period), 1 << 20).unwrap();
            let mut nearest = f64::INFINITY;
            for i in 0..s.len() {
                for j in 0..i {
                    nearest = nearest.min(dist2(s.positions[i], s.positions[j], period).sqrt());
                }
                for (&x, &p) in s.positions[i].iter().zip(&period) {
                    prop_assert!(p == 0.0 || (0.0..p).contains(&x));
                }
            }
            prop_assert!(nearest >= d, "{nearest} < {d}");
            if s.len() >= 2 {
                // The same pairs, through the wrap of the positions rather than the grid's.
                prop_assert!((nearest - s.min_spacing).abs() <= 1e-12 * (1.0 + nearest));
            }
        }
    }

    fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
    }

    #[test]
    fn samples_do_not_depend_on_the_thread_count() {
        let mesh = torus(6.0, 2.0, 0.3).unwrap();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| poisson_disk(&mesh, 0.3, 17, Some([0.0, 0.0, 5.0]), 1 << 20).unwrap())
        };
        let one = on(1);
        assert!(one.len() > 1000);
        assert_eq!(one, on(3));
    }

    #[test]
    fn spacing_for_a_sample_density() {
        // 10 samples per cell^2 at the default packing: d = sqrt(0.653 / 10).
        let d = spacing_for_samples_per_cell(10.0, PACKING_DENSITY).unwrap();
        assert!((d - 0.2555).abs() < 1e-4, "{d}");
        // The sampler lands within a few per cent of the asked density on a box.
        let mesh = cuboid([6.0, 5.0, 4.0]).unwrap();
        let s = poisson_disk(&mesh, d, 3, None, 1 << 22).unwrap();
        let got = s.samples_per_cell();
        assert!((got - 10.0).abs() < 0.3, "{got} per cell^2");
        // Feeding the measured density back reproduces the spacing.
        let again = spacing_for_samples_per_cell(s.samples_per_cell(), s.density()).unwrap();
        assert!((again - d).abs() < 1e-12);
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                spacing_for_samples_per_cell(bad, PACKING_DENSITY),
                Err(SamplingError::BadDensity(_))
            ));
        }
        assert!(spacing_for_samples_per_cell(1.0, 0.0).is_err());
    }

    #[test]
    fn a_surface_too_wide_for_the_grid_is_refused() {
        let long = cuboid([1e6, 0.5, 0.5]).unwrap();
        let err = poisson_disk(&long, 0.5, 1, None, usize::MAX).unwrap_err();
        assert!(
            matches!(err, SamplingError::TooWide { axis: 0, .. }),
            "{err}"
        );
        assert!(!err.to_string().contains('\n'));
    }

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
