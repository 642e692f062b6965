//! The gather form of the immersed-boundary spreading, per thread, for the CPU reference and
//! the kernels alike: instead of each sample adding its force into the band's cells (the
//! scatter of [`super::stages::sample_force`], atomics), each band cell sums the forces of the
//! samples that reach it. Per step, after `ib_mark`:
//!
//! 1. [`bin`] (per sample): the sample's bin ([`Bins`]) from its bin node
//!    ([`super::stencil::bin_node`]), its rank among the bin's samples from an atomic count;
//! 2. an exclusive scan of the counts into the bins' starts (the host's scan);
//! 3. [`place`] (per sample): the counting sort's scatter, `list[start + rank] = sample`;
//!
//! then per pass `ib_force` stores each sample's position, renormalisation factor and force
//! (thread `t` takes sample `list[t]` when the samples run in block order), and `ib_gather`
//! takes the band brick by brick ([`BrickBins`]): the samples of every bin a cell of the brick
//! can be reached from are read once, those that reach the brick give their terms per cell,
//! and [`brick_apply`] updates each cell as `ib_update` does.
//!
//! Every term a cell sums is `to_fixed(K_i scale_s (F_s dA_s))`, the very value the scatter
//! adds for that node and sample, and the sums are fixed-point: the band force equals the
//! scatter's bit for bit, whatever the order in which bins and samples are visited.

use super::band::slot;
use super::band::{to_fixed, BandMut, BRICK, BRICK_CELLS};
use super::stages::{apply_pass, place as place_sample};
use super::stencil::{below, bin_node, each_node, reaches_box, Domain};
use crate::lbm::abi::{Bins, IbBin, IbGather, IbPlace, BIN_BLOCK, BIN_CELL};

impl Bins {
    /// One bin per band cell of a band of `capacity` slots.
    pub const fn cells(capacity: u32) -> Bins {
        Bins {
            kind: BIN_CELL,
            side: 1,
            dims: [0; 3],
            count: capacity * BRICK_CELLS as u32,
        }
    }

    /// Blocks of `side^3` cells over `lattice`.
    pub const fn blocks(lattice: crate::lbm::Lattice, side: u32) -> Bins {
        let dims = [
            lattice.nx.div_ceil(side),
            lattice.ny.div_ceil(side),
            lattice.nz.div_ceil(side),
        ];
        Bins {
            kind: BIN_BLOCK,
            side,
            dims,
            count: dims[0] * dims[1] * dims[2],
        }
    }

    /// Entries of the counts and of the starts: the bins, the bin of samples that reach no
    /// node, and the total.
    pub const fn entries(&self) -> usize {
        self.count as usize + 2
    }

    /// The block holding the cell at `c`.
    #[inline(always)]
    const fn block(&self, c: [u32; 3]) -> u32 {
        let b = [c[0] / self.side, c[1] / self.side, c[2] / self.side];
        b[0] + self.dims[0] * (b[1] + self.dims[1] * b[2])
    }
}

/// The bin of the samples whose bin node is `node`: its band cell or its block (`count` if the
/// band cell is not in the band, which `ib_mark`'s claim of the node's brick rules out).
///
/// # Safety
/// `band` as in [`BandMut::slot_of`]; `node` inside the lattice.
#[inline(always)]
unsafe fn bin_of(bins: &Bins, domain: &Domain, band: &BandMut, node: [u32; 3]) -> u32 {
    if bins.kind == BIN_BLOCK {
        return bins.block(node);
    }
    match band.slot_of(domain.lattice.index(node[0], node[1], node[2])) {
        Some((s, local)) => s * BRICK_CELLS as u32 + local as u32,
        None => bins.count,
    }
}

/// Stage `ib_bin`, sample `s`.
///
/// # Safety
/// The buffers as documented on [`IbBin`]; the band table complete (after `ib_mark`); the
/// counts zero before the launch; `s < samples`.
#[inline(always)]
pub unsafe fn bin(a: &IbBin, s: usize) {
    let (pos, _, _, _) = place_sample(&a.samples, &a.solids, s);
    let key = match bin_node(&a.domain, pos) {
        Some(node) => bin_of(&a.bins, &a.domain, &a.band, node),
        None => a.bins.count,
    };
    let rank = a.counts.fetch_add(key as usize, 1);
    a.key.write(s, key);
    a.rank.write(s, rank);
}

/// Stage `ib_place`, sample `s`.
///
/// # Safety
/// The buffers as documented on [`IbPlace`]; `starts` the exclusive scan of the counts that
/// `ib_bin` made with these keys and ranks; `s < samples`.
#[inline(always)]
pub unsafe fn place(a: &IbPlace, s: usize) {
    let key = a.key.read(s) as usize;
    let at = a.starts.read(key) + a.rank.read(s);
    a.list.write(at as usize, s as u32);
}

/// Distinct bins along one axis: at most the 5 bin-node coordinates a brick's cells can find
/// their samples at (the cell below the brick and its 4 cells); with [`BIN_CELL`]'s side 1,
/// those coordinates themselves.
#[derive(Clone, Copy)]
struct AxisBins {
    coord: [u32; 5],
    len: usize,
}

impl AxisBins {
    /// The blocks (of side `side`) along axis `ax` holding the bin nodes of the samples that
    /// reach the cells `c0..c0 + BRICK` (those inside the lattice's `n` cells): the blocks of
    /// the cell below `c0` (wrapped on a periodic axis) and of those cells, each once.
    #[inline(always)]
    fn new(domain: &Domain, ax: usize, c0: u32, n: u32, side: u32) -> AxisBins {
        let mut out = AxisBins {
            coord: [0; 5],
            len: 0,
        };
        let mut push = |c: u32| {
            let b = c / side;
            let mut seen = false;
            for k in 0..out.len {
                seen |= out.coord[k] == b;
            }
            if !seen {
                out.coord[out.len] = b;
                out.len += 1;
            }
        };
        if let Some(c) = below(domain, ax, c0) {
            push(c);
        }
        for c in c0..(c0 + BRICK).min(n) {
            push(c);
        }
        out
    }
}

/// Stage `ib_gather`'s bins of band slot `s`. A node finds the samples that reach it in the
/// bins of itself and of the node one cell below along each axis, so the bins of a brick's
/// cells are those of the cells `c0 - 1 .. c0 + 3` per axis: their blocks ([`BIN_BLOCK`]: 2
/// per axis at `l = 4`, 3 at `l = 2`) or their band cells ([`BIN_CELL`]: 5 per axis), each
/// once. For every sample `k` of those bins that [`reaches`] the brick, [`brick_sample`] gives
/// the fixed-point terms of its nodes inside the brick, the very values the scatter adds;
/// summed per cell (in any order: fixed point) they are the scatter's sums, and
/// [`brick_apply`] applies them.
#[derive(Clone, Copy)]
pub struct BrickBins {
    /// The brick's first cell.
    pub origin: [u32; 3],
    axes: [AxisBins; 3],
}

impl BrickBins {
    /// The bins of slot `s`'s brick.
    ///
    /// # Safety
    /// The buffers as documented on [`IbGather`]; `s < band.used()`.
    #[inline(always)]
    pub unsafe fn new(a: &IbGather, s: u32) -> BrickBins {
        let brick = a.band.brick_of.read(s as usize);
        let dims = a.band.bricks.dims;
        let (bx, byz) = (brick % dims[0], brick / dims[0]);
        let origin = [bx * BRICK, (byz % dims[1]) * BRICK, (byz / dims[1]) * BRICK];
        let lat = a.domain.lattice;
        let side = a.bins.side;
        BrickBins {
            origin,
            axes: [
                AxisBins::new(&a.domain, 0, origin[0], lat.nx, side),
                AxisBins::new(&a.domain, 1, origin[1], lat.ny, side),
                AxisBins::new(&a.domain, 2, origin[2], lat.nz, side),
            ],
        }
    }

    /// How many bins [`BrickBins::entries`] takes.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        self.axes[0].len * self.axes[1].len * self.axes[2].len
    }

    /// Whether there are no bins.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The entries `start..end` of bin `j < len()` (empty where that cell is not in the band).
    ///
    /// # Safety
    /// As [`BrickBins::new`], the starts scanned this step.
    #[inline(always)]
    pub unsafe fn entries(&self, a: &IbGather, j: usize) -> (usize, usize) {
        let ix = j % self.axes[0].len;
        let iy = j / self.axes[0].len % self.axes[1].len;
        let iz = j / (self.axes[0].len * self.axes[1].len);
        let (x, y, z) = (
            self.axes[0].coord[ix],
            self.axes[1].coord[iy],
            self.axes[2].coord[iz],
        );
        let b = if a.bins.kind == BIN_BLOCK {
            x + a.bins.dims[0] * (y + a.bins.dims[1] * z)
        } else {
            bin_of(&a.bins, &a.domain, &a.band, [x, y, z])
        };
        if b >= a.bins.count {
            return (0, 0);
        }
        (
            a.starts.read(b as usize) as usize,
            a.starts.read(b as usize + 1) as usize,
        )
    }
}

/// The stored sample of entry `k`.
#[inline(always)]
unsafe fn stored(a: &IbGather, k: usize) -> usize {
    if a.list.is_empty() {
        k
    } else {
        a.list.read(k) as usize
    }
}

/// Whether the stored sample of entry `k` spreads a force (a factor that is not 0) and has a
/// stencil node inside the brick at `origin` (the cheap test before [`brick_sample`]).
///
/// # Safety
/// As [`BrickBins::entries`], `k` one of its entries.
#[inline(always)]
pub unsafe fn reaches(a: &IbGather, k: usize, origin: [u32; 3]) -> bool {
    let at = a.at.read(stored(a, k));
    at[3] != 0.0 && reaches_box(&a.domain, [at[0], at[1], at[2]], origin, BRICK)
}

/// Stage `ib_gather` for band slot `s` on one thread (the CPU reference): every entry of the
/// brick's bins, `add(local, terms)` for each node inside the brick.
///
/// # Safety
/// As [`BrickBins::new`], the samples stored by this pass's `ib_force`.
#[inline(always)]
pub unsafe fn brick_terms(a: &IbGather, s: u32, mut add: impl FnMut(usize, [u64; 3])) {
    let bins = BrickBins::new(a, s);
    for j in 0..bins.len() {
        let (start, end) = bins.entries(a, j);
        for k in start..end {
            if reaches(a, k, bins.origin) {
                brick_sample(a, k, bins.origin, &mut add);
            }
        }
    }
}

/// The terms of the stored sample of entry `k` for the nodes of its stencil inside the brick
/// at `origin`: `add(local, terms)` per node.
///
/// # Safety
/// As [`reaches`].
#[inline(always)]
pub unsafe fn brick_sample(
    a: &IbGather,
    k: usize,
    origin: [u32; 3],
    add: &mut impl FnMut(usize, [u64; 3]),
) {
    let p = stored(a, k);
    let at = a.at.read(p);
    let scale = at[3];
    if scale == 0.0 {
        return;
    }
    let g = a.force.read(p);
    each_node(&a.domain, [at[0], at[1], at[2]], |node, w| {
        let d = [
            node[0].wrapping_sub(origin[0]),
            node[1].wrapping_sub(origin[1]),
            node[2].wrapping_sub(origin[2]),
        ];
        if d[0] < BRICK && d[1] < BRICK && d[2] < BRICK {
            let w = w * scale;
            let local = (d[0] + BRICK * (d[1] + BRICK * d[2])) as usize;
            add(
                local,
                [to_fixed(w * g[0]), to_fixed(w * g[1]), to_fixed(w * g[2])],
            );
        }
    });
}

/// Cell `local` of band slot `s` takes its summed terms `sums` ([`BrickBins`]) as
/// `ib_update` applies a pass: cells that are not fluid (`rho = 0`) or lie outside the lattice
/// take none.
///
/// # Safety
/// As [`BrickBins::new`]; each cell applied once per pass.
#[inline(always)]
pub unsafe fn brick_apply(a: &IbGather, s: u32, local: usize, sums: [u64; 3]) {
    let band = &a.band;
    let rho = band.get(s, slot::RHO, local);
    if rho <= 0.0 {
        return;
    }
    let brick = band.brick_of.read(s as usize) as usize;
    if band.bricks.cell(brick, local).is_none() {
        return;
    }
    apply_pass(band, s, local, rho, sums);
}

/// Exclusive scan of `counts` into `starts` (same length), the counts zeroed: what the host's
/// device scan does, for the CPU reference.
pub fn scan(counts: &mut [u32], starts: &mut [u32]) {
    let mut total = 0u32;
    for (c, s) in counts.iter_mut().zip(starts.iter_mut()) {
        *s = total;
        total = total.wrapping_add(*c);
        *c = 0;
    }
}
