//! The tiling of the background grid: tiles of [`TILE`]^3 cells coloured by the parities of
//! their coordinates, each holding the surface's pieces inside it with an alias table by area,
//! and one job's dart throwing on its tile against the samples around it.

use super::clip::Poly;
use super::draw::{alias_table, dart, SplitMix64};
use super::grid::{Grid, LocalGrid, MixHasher, HALO};
use super::{dist2_plain, floor, TILE};
use crate::fluid::ib::shapes::{cross, norm, sub, TriangleMesh};
use murmur_common::rng::mix64;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Largest dense tile index (16 MiB) before the occupied tiles are found through a hash map.
const DENSE_TILE_INDEX: u64 = 1 << 22;

/// One axis of the tiling: runs of grid cells, [`TILE`] wide, that partition the axis.
pub(super) struct Axis {
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
    pub(super) fn tile_at(&self, x: f64) -> i64 {
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
    pub(super) fn virtual_tile(&self, j: i64) -> (usize, f64, f64, f64) {
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
pub(super) struct Tiles {
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
    pub(super) fn new(mesh: &TriangleMesh, grid: &Grid) -> Tiles {
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

    pub(super) fn len(&self) -> usize {
        self.coords.len()
    }

    /// Throws `count` darts on tile `tile`, appending the accepted ones to `own` (the tile's
    /// samples); `lists` holds every other tile's samples, of which only tiles of other
    /// colours are read. The conflicts are looked up in a grid local to the job: the tile's
    /// cells and two more on every side, filled with the samples there (neighbours' moved by
    /// the period across a wrap), so every lookup stays in a few kilobytes.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn throw(
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
    pub(super) fn colour(&self, tile: usize) -> usize {
        let c = self.coords[tile];
        (c[0] & 1) | (c[1] & 1) << 1 | (c[2] & 1) << 2
    }

    /// A stream per tile and pass, `u64::MAX` for the tile's dart count.
    pub(super) fn stream(&self, seed: u64, tile: usize, pass: u64) -> SplitMix64 {
        let [x, y, z] = self.coords[tile].map(|c| c as u64);
        SplitMix64::new(seed ^ mix64(x ^ mix64(y ^ mix64(z ^ mix64(pass)))))
    }

    /// Surface area of the tile (cells^2).
    pub(super) fn area(&self, tile: usize) -> f64 {
        self.area[tile]
    }
}

/// No occupied tile there.
const NO_TILE: u32 = u32::MAX;

/// A sample and the faces of its tile it lies within [`HALO`] cells of (bit `2k`: the lower
/// face across axis `k`, bit `2k + 1`: the upper one).
pub(super) type Kept = ([f64; 3], u8);

/// Calls `f(tile, piece)` for the parts of triangle `t` in each tile: the triangle itself when
/// its bounding box lies in one tile, else its clip to each tile of the box (slab by slab, so
/// the work follows the pieces), fanned into triangles and moved into the grid's periodic copy.
/// Zero-area pieces are dropped.
pub(super) fn for_each_piece(
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

#[cfg(test)]
mod tests {
    use super::super::tests::soup;
    use super::super::wrapping_axes;
    use super::*;
    use proptest::prelude::*;

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
    }

    fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
        [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
    }
}
