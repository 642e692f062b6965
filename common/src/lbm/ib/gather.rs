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
//! (thread `t` takes sample `list[t]` when the samples run in block order), and [`gather`]
//! (per band cell) sums them and updates the cell as `ib_update` does.
//!
//! Every term a cell sums is `to_fixed(K_i scale_s (F_s dA_s))`, the very value the scatter
//! adds for that node and sample, and the sums are fixed-point: the band force equals the
//! scatter's bit for bit, whatever the order in which bins and samples are visited.

use super::band::slot;
use super::band::{to_fixed, BandMut, BRICK_CELLS};
use super::stages::{apply_pass, place as place_sample};
use super::stencil::{below, bin_node, node_weights, Domain};
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

/// Stage `ib_gather`, element `i` of `capacity x 64` (slot `i / 64`, cell `i % 64`): the
/// pass's force of the band cell, summed in fixed point over the samples of the bins its
/// support reaches (with [`BIN_CELL`] the bins of the 2 x 2 x 2 cells at and below it; with
/// [`BIN_BLOCK`] its own block, and the block below along an axis where the cell lies on the
/// block's lower face), then applied as `ib_update` does. Cells that are not fluid or lie
/// outside the lattice (`rho = 0`) take no force.
///
/// # Safety
/// The buffers as documented on [`IbGather`], written by this step's `ib_bin`, scan,
/// `ib_place` and this pass's `ib_force`; each `i` is handled once.
#[inline(always)]
pub unsafe fn gather(a: &IbGather, i: usize) {
    let band = &a.band;
    let s = (i / BRICK_CELLS) as u32;
    if s >= band.used() {
        return;
    }
    let local = i % BRICK_CELLS;
    let rho = band.get(s, slot::RHO, local);
    if rho <= 0.0 {
        return;
    }
    let brick = band.brick_of.read(s as usize) as usize;
    let Some(cell) = band.bricks.cell(brick, local) else {
        return;
    };
    let (x, y, z) = a.domain.lattice.coords(cell);
    let node = [x, y, z];
    // Per axis the coordinate of the bin below (or none): the cell below the node, or with
    // blocks the cell below the block's lower face when the node lies on it and that cell is
    // in another block.
    let mut low = [u32::MAX; 3];
    for (ax, lo) in low.iter_mut().enumerate() {
        if let Some(c) = below(&a.domain, ax, node[ax]) {
            let other = a.bins.kind != BIN_BLOCK || c / a.bins.side != node[ax] / a.bins.side;
            if other {
                *lo = c;
            }
        }
    }
    let mut sums = [0u64; 3];
    unroll!(o in [0, 1, 2, 3, 4, 5, 6, 7] => {
        let pick = [o & 1, o >> 1 & 1, o >> 2];
        let mut at = node;
        let mut ok = true;
        for ax in 0..3 {
            if pick[ax] == 1 {
                ok &= low[ax] != u32::MAX;
                at[ax] = low[ax];
            }
        }
        if ok {
            let b = if a.bins.kind == BIN_BLOCK {
                a.bins.block(at)
            } else {
                bin_of(&a.bins, &a.domain, band, at)
            };
            if b < a.bins.count {
                add_bin(a, b as usize, node, &mut sums);
            }
        }
    });
    apply_pass(band, s, local, rho, sums);
}

/// Adds the terms of bin `b`'s samples that reach `node`.
///
/// # Safety
/// As [`gather`].
#[inline(always)]
unsafe fn add_bin(a: &IbGather, b: usize, node: [u32; 3], sums: &mut [u64; 3]) {
    let (start, end) = (a.starts.read(b) as usize, a.starts.read(b + 1) as usize);
    for k in start..end {
        let p = if a.list.is_empty() {
            k
        } else {
            a.list.read(k) as usize
        };
        let at = a.at.read(p);
        let scale = at[3];
        if scale == 0.0 {
            continue;
        }
        let g = a.force.read(p);
        node_weights(&a.domain, node, [at[0], at[1], at[2]], |w| {
            let w = w * scale;
            sums[0] = sums[0].wrapping_add(to_fixed(w * g[0]));
            sums[1] = sums[1].wrapping_add(to_fixed(w * g[1]));
            sums[2] = sums[2].wrapping_add(to_fixed(w * g[2]));
        });
    }
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
