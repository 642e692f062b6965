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
//! [`TILE`]^3 cells and every triangle is clipped into per-tile pieces (`clip.rs`); a
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
//! Timings (one core, the CPU time of `sampling_timings` in this module's tests): a sphere of
//! radius 12 at `d` = 0.5, 0.25, 0.1: 0.06, 0.25, 1.7 s; a torus of radii 30 and 8 at 0.1:
//! 8.6 s. The pieces cost about 80 bytes per mesh triangle (cut triangles count two or three
//! times).
//!
//! Periodic axes use the minimum image for distances and hold the sample positions in
//! `[0, L)`.

mod clip;
pub mod draw;
mod grid;
mod tiles;

use super::shapes::{ShapeError, TriangleMesh};
use grid::Grid;
use rayon::prelude::*;
use tiles::{Kept, Tiles};

/// Candidates thrown per `d^2` of surface area (`d` the minimum distance): 64 is about 50 darts
/// per exclusion disk of diameter `d`, which brings the count within a few per cent of the
/// jamming limit (see the module docs).
pub const CANDIDATES_PER_D2: f64 = 64.0;

/// Largest dense background grid, in cells (16 MiB), before the sampler stores only the
/// occupied blocks of [`BLOCK`]^3 cells: a surface fills a thin shell of its bounding box.
const DENSE_GRID_CELLS: usize = 1 << 22;

/// Edge of a tile, in grid cells (`8 d / sqrt(3)` = 4.6 `d`): large enough that not too many
/// triangles are cut, small enough that a job's pieces and grid stay in the cache and that
/// there are many tiles to share among threads (16 measured no faster).
pub const TILE: usize = 8;

/// Passes over the tiles; each throws `1 / PASSES` of every tile's darts. At 16, a pass is 4
/// darts per `d^2` (about 3 per exclusion disk), and the density matches the single stream's
/// (module docs).
pub const PASSES: u64 = 16;

/// Most grid cells along an axis: three such indices fit one 64-bit key.
const MAX_AXIS_CELLS: usize = 1 << 21;

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
                .for_each_init(grid::LocalGrid::default, |local, (t, own)| {
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

#[cfg(test)]
mod tests;
