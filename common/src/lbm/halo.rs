//! The slab exchange of several ranks: what crosses a slab face each step.
//!
//! A rank owns a slab of layers along one axis and keeps one ghost layer on each side (the
//! neighbours' face layers, [`super::boundary::GHOST`] bytes). With pull streaming a cell reads
//! population `q` from `x - c_q`, so an owned cell next to a ghost layer reads from it exactly
//! the 9 populations whose velocity points into the slab (`c_q . e_axis = +1` from the lower
//! ghost, `-1` from the upper). After a step each rank packs those 9 populations of its two face
//! layers, sends them to the neighbours, and unpacks what it receives into its ghost layers:
//! the stored values, bit for bit, through [`Populations`] (any storage and layout), so a cell's
//! update does not depend on the decomposition.
//!
//! Buffers hold `9 * face_cells` values, population-major: entry `k * face_cells + i` is the
//! `k`-th crossing population of the face's `i`-th cell ([`face_cell`]).
//!
//! With immersed solids every rank runs every sample, and a sample whose stencil reaches across
//! a slab face needs the band values (`rho, u*`) of the neighbour's face layer: before each
//! multi-direct-forcing pass those are exchanged into the ghost layers' band cells
//! ([`band_pack`], [`band_unpack`]). Each band cell's values are computed by the slab that owns
//! it, from the same populations and the same fixed-point force sums as on one rank, so every
//! sample interpolates the same numbers, bit for bit; each slab spreads into its own cells and
//! counts the reactions of the samples it owns ([`super::ib::stencil::Domain::owns`]).

use super::abi::{BandHalo, Halo};
use super::access::Storage;
use super::d3q27::velocity;
use super::ib::band::slot;
use super::{Lattice, Q};

/// Populations crossing a face per cell.
pub const CROSSING: usize = 9;

/// The 9 velocities with `c . e_axis == sign` (`sign` +1 or -1), in increasing `q`.
#[inline(always)]
pub const fn crossing(axis: usize, sign: i32) -> [usize; CROSSING] {
    let mut out = [0usize; CROSSING];
    let mut k = 0;
    let mut q = 0;
    while q < Q {
        if velocity(q)[axis] == sign {
            out[k] = q;
            k += 1;
        }
        q += 1;
    }
    out
}

/// Cells of one layer across `axis`.
#[inline(always)]
pub const fn face_cells(l: &Lattice, axis: u32) -> usize {
    match axis {
        0 => l.ny as usize * l.nz as usize,
        1 => l.nx as usize * l.nz as usize,
        _ => l.nx as usize * l.ny as usize,
    }
}

/// Cell number of the `i`-th cell of layer `layer` across `axis` (the other two axes in their
/// order, the lower one fastest).
#[inline(always)]
pub const fn face_cell(l: &Lattice, axis: u32, layer: u32, i: usize) -> usize {
    let i = i as u32;
    match axis {
        0 => l.index(layer, i % l.ny, i / l.ny),
        1 => l.index(i % l.nx, layer, i / l.nx),
        _ => l.index(i % l.nx, i / l.nx, layer),
    }
}

/// Packs face cell `i` of `a.layer`: its populations with `c . e_axis == a.sign` into
/// `a.buf`.
///
/// # Safety
/// `a.f` holds the lattice's populations, `a.buf` `9 * face_cells` values, `i < face_cells`.
#[inline(always)]
pub unsafe fn pack<S: Storage>(a: &Halo<S>, i: usize) {
    let l = a.pops.lattice;
    let n = face_cells(&l, a.axis);
    let cell = face_cell(&l, a.axis, a.layer, i);
    let qs = crossing(a.axis as usize, a.sign);
    let mut k = 0;
    while k < CROSSING {
        let v = a.f.read(a.pops.index(qs[k], cell));
        a.buf.write(k * n + i, v);
        k += 1;
    }
}

/// Unpacks face cell `i` of `a.layer` (a ghost layer) from `a.buf`: the inverse of [`pack`].
///
/// # Safety
/// As [`pack`].
#[inline(always)]
pub unsafe fn unpack<S: Storage>(a: &Halo<S>, i: usize) {
    let l = a.pops.lattice;
    let n = face_cells(&l, a.axis);
    let cell = face_cell(&l, a.axis, a.layer, i);
    let qs = crossing(a.axis as usize, a.sign);
    let mut k = 0;
    while k < CROSSING {
        let v = a.buf.read(k * n + i);
        a.f.write(a.pops.index(qs[k], cell), v);
        k += 1;
    }
}

/// Band values per face cell in a [`BandHalo`] buffer: `rho` and the three components of `u*`.
pub const BAND_VALUES: usize = 4;

/// Packs face cell `i` of `a.layer`: its band values `rho, u*` into `a.buf`, or zeros when the
/// cell is not in the band (an absent node to the receiver, as a non-fluid one).
///
/// # Safety
/// `a.band` as documented on [`BandMut`](super::ib::band::BandMut), `a.buf` holds
/// `4 * face_cells` values, `i < face_cells`.
#[inline(always)]
pub unsafe fn band_pack(a: &BandHalo, i: usize) {
    let l = a.band.bricks.lattice;
    let n = face_cells(&l, a.axis);
    let cell = face_cell(&l, a.axis, a.layer, i);
    let mut v = [0.0f32; BAND_VALUES];
    if let Some((s, local)) = a.band.slot_of(cell) {
        v[0] = a.band.get(s, slot::RHO, local);
        v[1] = a.band.get(s, slot::U, local);
        v[2] = a.band.get(s, slot::U + 1, local);
        v[3] = a.band.get(s, slot::U + 2, local);
    }
    let mut k = 0;
    while k < BAND_VALUES {
        a.buf.write(k * n + i, v[k]);
        k += 1;
    }
}

/// Unpacks face cell `i` of `a.layer` (a ghost layer) from `a.buf` into its band values, when
/// the cell is in this slab's band (else no stencil here reaches it).
///
/// # Safety
/// As [`band_pack`].
#[inline(always)]
pub unsafe fn band_unpack(a: &BandHalo, i: usize) {
    let l = a.band.bricks.lattice;
    let n = face_cells(&l, a.axis);
    let cell = face_cell(&l, a.axis, a.layer, i);
    if let Some((s, local)) = a.band.slot_of(cell) {
        a.band.set(s, slot::RHO, local, a.buf.read(i));
        a.band.set(s, slot::U, local, a.buf.read(n + i));
        a.band.set(s, slot::U + 1, local, a.buf.read(2 * n + i));
        a.band.set(s, slot::U + 2, local, a.buf.read(3 * n + i));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nine_populations_cross_each_face() {
        for axis in 0..3 {
            for sign in [-1, 1] {
                let qs = crossing(axis, sign);
                assert!(qs.iter().all(|&q| velocity(q)[axis] == sign));
                assert!(qs.windows(2).all(|w| w[0] < w[1]));
            }
        }
    }

    #[test]
    fn face_cells_cover_the_layer_once() {
        let l = Lattice::new(3, 4, 5);
        for axis in 0..3u32 {
            let n = face_cells(&l, axis);
            let extent = [l.nx, l.ny, l.nz][axis as usize];
            for layer in [0, extent - 1] {
                let mut seen: std::vec::Vec<usize> =
                    (0..n).map(|i| face_cell(&l, axis, layer, i)).collect();
                for &c in &seen {
                    let (x, y, z) = l.coords(c);
                    assert_eq!([x, y, z][axis as usize], layer);
                }
                seen.sort();
                seen.dedup();
                assert_eq!(seen.len(), n);
            }
        }
    }
}
