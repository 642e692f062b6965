//! The fluid on several ranks: the lattice cut into slabs along its longest axis, each rank
//! owning a slab with one ghost layer on either side, the populations that cross a slab face
//! exchanged after every step ([`murmur_common::lbm::halo`]).
//!
//! - [`SlabPlan`]: the cut (equal work per slab: its fluid cells, and [`SAMPLE_WEIGHT`] cells'
//!   worth per immersed-boundary sample starting in it; every slab at least one layer) and each rank's own [`Setup`]: its lattice with the ghost layers, the scene's cell
//!   bytes of those layers (ghost fluid cells as [`GHOST`], the owned face layers pinned to the
//!   boundary path with [`SLAB_FACE`]), the parameters with every coordinate shifted to the
//!   slab's origin. A rank's cells then update exactly as in the whole lattice: the same
//!   neighbours, the same bytes, the same positions, bit for bit.
//! - [`CpuHalo`] and [`CudaHalo`]: the exchange, on the CPU through any [`Comm`] (the N ranks
//!   of one process in CI), on the GPU through NCCL: the face layers update first, their
//!   crossing populations travel on their own stream while the interior updates.
//! - [`SlabFluid`]: a rank's backend seen as the whole lattice: the health check is collective
//!   (every rank stops at the same step), fields and populations are gathered in the global
//!   cell order.

mod adapter;
mod cpu;
mod cuda;
mod riders;
pub mod state;

pub use adapter::{open_cpu_rank, run_cpu_ranks, RanksResult, SlabFluid};
pub use cpu::{CpuHalo, Packed};
pub use cuda::CudaHalo;
pub use riders::AroundSlab;

use super::{FluidError, Setup};
use crate::ranks::Comm;
use murmur_common::lbm::boundary::{FLUID, GHOST, KIND_MASK, SLAB_FACE};
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::Lattice;
use murmur_common::lbm::Streaming;
use std::ops::Range;

/// Axis names for messages.
const AXES: [&str; 3] = ["x", "y", "z"];

/// What one immersed-boundary sample's work per step weighs in the cut, in fluid cells'
/// updates: on one H200 the rotating torus with the flow along z (`fluid scale --scene
/// assets/fluid/rotating-torus-z.toml`, ACM-MRT FP32) spent 0.54 ms per step in the
/// immersed-boundary stages for 79,332 samples and 2.76 ms in stream-collide and boundary for
/// 34.2M cells: a sample costs about 85 cells.
pub const SAMPLE_WEIGHT: u64 = 85;

/// How the lattice is cut among the ranks.
#[derive(Clone, Debug, PartialEq)]
pub struct SlabPlan {
    /// The axis the slabs are stacked along.
    pub axis: usize,
    /// The whole lattice.
    pub global: Lattice,
    /// Owned layers of each rank along `axis`.
    pub ranges: Vec<Range<u32>>,
    /// The immersed boundary's periodic axes (for [`SlabPlan::ib_domain`]).
    pub ib_periodic: [bool; 3],
}

fn extent(l: &Lattice, axis: usize) -> u32 {
    [l.nx, l.ny, l.nz][axis]
}

impl SlabPlan {
    /// The cut of `setup` into `ranks` slabs along its longest axis (of equal lengths, the
    /// last: its layers are contiguous in memory), with equal work: fluid cells, and
    /// [`SAMPLE_WEIGHT`] per immersed-boundary sample at the start.
    pub fn new(setup: &Setup, ranks: usize) -> Result<SlabPlan, FluidError> {
        let global = setup.lattice();
        let dims = [global.nx, global.ny, global.nz];
        let longest = *dims.iter().max().unwrap_or(&0);
        let axis = (0..3).rev().find(|&a| dims[a] == longest).unwrap_or(2);
        if !setup.walls.is_empty() {
            return Err(FluidError::Invalid(
                "solids with boundary = \"interpolated-bounce-back\" run on one lattice; on \
                 several ranks use boundary = \"immersed\""
                    .into(),
            ));
        }
        if setup.params.wale > 0.0 {
            return Err(FluidError::Invalid(
                "les = \"wale\" runs on one lattice (its velocity gradient reads across slab \
                 faces): leave out --ranks and --gpus, or use les = \"smagorinsky\""
                    .into(),
            ));
        }
        if !setup.immersed.is_empty()
            && setup.immersed.spread != super::ib::spread::IbSpread::Scatter
        {
            return Err(FluidError::Invalid(format!(
                "on several ranks the immersed boundary spreads by scatter: set spread = \
                 \"scatter\" in the scene's [immersed] table (it has \"{}\")",
                setup.immersed.spread.name()
            )));
        }
        if setup.streaming == Some(Streaming::InPlace) {
            return Err(FluidError::Invalid(
                "several ranks stream with pull (two copies per rank): leave out --streaming \
                 in-place"
                    .into(),
            ));
        }
        let mut weights = vec![0u64; longest as usize];
        for (cell, &b) in setup.flags.iter().enumerate() {
            if b & KIND_MASK == FLUID {
                let (x, y, z) = global.coords(cell);
                weights[[x, y, z][axis] as usize] += 1;
            }
        }
        // The immersed boundary's work lands on the slabs its samples start in.
        if let Some(ib) = super::ib::plan::IbPlan::new(global, &setup.immersed) {
            for p in ib.positions(1) {
                let k = (p[axis].floor() as i64).rem_euclid(longest as i64) as usize;
                weights[k] += SAMPLE_WEIGHT;
            }
        }
        let ranges = crate::ranks::balanced_ranges(&weights, ranks).ok_or_else(|| {
            FluidError::Invalid(format!(
                "{ranks} ranks need at least {ranks} layers along {} (the longest axis), the \
                 lattice has {longest}",
                AXES[axis]
            ))
        })?;
        Ok(SlabPlan {
            axis,
            global,
            ib_periodic: setup.immersed.periodic,
            ranges: ranges
                .into_iter()
                .map(|r| r.start as u32..r.end as u32)
                .collect(),
        })
    }

    /// Ranks.
    pub fn size(&self) -> usize {
        self.ranges.len()
    }

    /// Owned layers of `rank`.
    pub fn owned(&self, rank: usize) -> u32 {
        self.ranges[rank].len() as u32
    }

    /// `rank`'s lattice: its owned layers and a ghost layer on each side.
    pub fn local_lattice(&self, rank: usize) -> Lattice {
        let mut d = [self.global.nx, self.global.ny, self.global.nz];
        d[self.axis] = self.owned(rank) + 2;
        Lattice::new(d[0], d[1], d[2])
    }

    /// The global layer of `rank`'s local layer `k` (0 and `owned + 1` are the ghosts; the
    /// axis wraps).
    pub fn global_layer(&self, rank: usize, k: u32) -> u32 {
        let n = extent(&self.global, self.axis) as i64;
        (self.ranges[rank].start as i64 - 1 + k as i64).rem_euclid(n) as u32
    }

    /// The global cell of `rank`'s local cell.
    pub fn global_cell(&self, rank: usize, local: usize) -> usize {
        let l = self.local_lattice(rank);
        let (x, y, z) = l.coords(local);
        let mut c = [x, y, z];
        c[self.axis] = self.global_layer(rank, c[self.axis]);
        self.global.index(c[0], c[1], c[2])
    }

    /// The immersed boundary's domain on `rank`'s slab.
    pub fn ib_domain(&self, rank: usize) -> Domain {
        Domain::new(self.local_lattice(rank), self.ib_periodic).slab(
            self.axis as u32,
            self.ranges[rank].start as i32 - 1,
            extent(&self.global, self.axis),
        )
    }

    /// Whether the face layers' fluid cells are pinned to the boundary list (slabs along x or
    /// y); slabs along z update their face layers as contiguous layer ranges instead.
    pub fn pins_faces(&self) -> bool {
        self.axis != 2
    }

    /// `rank`'s setup: its lattice, the cell bytes of its layers (ghost fluid cells
    /// [`GHOST`], owned face-layer fluid cells pinned with [`SLAB_FACE`] unless the slabs lie
    /// along z, [`SlabPlan::pins_faces`]), the parameters and
    /// the initial fields shifted so that every local position means the global one.
    pub fn local_setup(&self, setup: &Setup, rank: usize) -> Setup {
        let local = self.local_lattice(rank);
        let owned = self.owned(rank);
        let a = self.axis;
        let mut flags = vec![0u8; local.cells()];
        for (cell, b) in flags.iter_mut().enumerate() {
            let (x, y, z) = local.coords(cell);
            let k = [x, y, z][a];
            let byte = setup.flags[self.global_cell(rank, cell)];
            let fluid = byte & KIND_MASK == FLUID;
            *b = if !fluid {
                byte
            } else if k == 0 || k == owned + 1 {
                GHOST
            } else if (k == 1 || k == owned) && self.pins_faces() {
                byte | SLAB_FACE
            } else {
                byte
            };
        }
        // Local coordinate k along the axis is global k + shift.
        let shift = self.ranges[rank].start as f32 - 1.0;
        let mut params = setup.params;
        params.lattice = local;
        if params.sponge_axis as usize == a {
            params.sponge_start -= shift;
        }
        for face in params.faces.iter_mut() {
            face.center[a] -= shift;
        }
        let mut initial = setup.initial;
        if a < 2 {
            initial.offset[a] -= shift;
        }
        let mut immersed = setup.immersed.clone();
        let d = self.ib_domain(rank);
        immersed.slab = Some((d.slab_axis, d.slab_origin, d.slab_extent));
        Setup {
            params,
            flags,
            initial,
            immersed,
            streaming: Some(Streaming::Pull),
            ..setup.clone()
        }
    }
}

/// Views a slice of plain values as bytes (population values: `f32` or `u16`).
fn as_bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: plain-data elements without padding; the byte view covers the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// The values of a byte message (the inverse of [`as_bytes`]); `None` when the length is off.
fn from_bytes<T: Copy + Default>(b: &[u8], n: usize) -> Option<Vec<T>> {
    if b.len() != n * std::mem::size_of::<T>() {
        return None;
    }
    let mut v = vec![T::default(); n];
    // SAFETY: `v` holds exactly `b.len()` bytes of plain data.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr(), v.as_mut_ptr() as *mut u8, b.len());
    }
    Some(v)
}

/// Adds every rank's fixed-point force records into `records` (the same slots on every rank;
/// collective). Integer sums: the totals equal one rank's over the whole lattice, whatever the
/// order. Each sample's reaction is counted by one rank only ([`murmur_common::lbm::ib::stencil::Domain::owns`]).
pub fn sum_records(comm: &dyn Comm, records: &mut [u64]) -> Result<(), FluidError> {
    let all = comm
        .all_gather(as_bytes(records))
        .map_err(FluidError::from)?;
    let mut total = vec![0u64; records.len()];
    for m in &all {
        let v: Vec<u64> = from_bytes(m, records.len()).ok_or_else(|| FluidError::WrongSize {
            what: "a rank's force records".into(),
        })?;
        for (t, x) in total.iter_mut().zip(v) {
            *t = t.wrapping_add(x);
        }
    }
    records.copy_from_slice(&total);
    Ok(())
}

/// The layers along the slab axis of a rank's output piece ([`super::pieces`]): the fields of
/// its owned layers with up to two layers of each neighbouring slab around them (for the
/// velocity gradients), of which the owned layers and, except on the last rank, the next
/// slab's first layer are written (point-data pieces meet on a shared layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    /// Global layer of the piece's first layer (below 0 or past the end: wrapped).
    pub first: i64,
    /// Layers of the previous slab before the owned ones.
    pub below: u32,
    pub owned: u32,
    /// Layers of the next slab after the owned ones.
    pub above: u32,
    /// Layers written, from layer `below`.
    pub written: u32,
}

impl Piece {
    /// `rank`'s piece; `periodic`: whether the slab axis wraps (then the first and last ranks
    /// also take their wrapped neighbours' layers, as the single-rank gradients do).
    pub fn of(plan: &SlabPlan, rank: usize, periodic: bool) -> Piece {
        let n = plan.size();
        let owned = plan.owned(rank);
        let prev = plan.owned((rank + n - 1) % n);
        let next = plan.owned((rank + 1) % n);
        let below = if rank > 0 || periodic { prev.min(2) } else { 0 };
        let above = if rank + 1 < n || periodic {
            next.min(2)
        } else {
            0
        };
        Piece {
            first: plan.ranges[rank].start as i64 - below as i64,
            below,
            owned,
            above,
            written: owned + (rank + 1 < n) as u32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::lbm::CollisionModel;

    /// A periodic box of 16 x 16 x 12 cells cut for `ranks`.
    fn plan(ranks: usize) -> SlabPlan {
        let setup =
            crate::fluid::scene::taylor_green(16, 12, 0.05, 0.01, CollisionModel::Bgk).unwrap();
        SlabPlan::new(&setup, ranks).unwrap()
    }

    #[test]
    fn the_cut_covers_the_longest_axis_once_and_evenly() {
        let p = plan(3);
        // The longest axis; of equal lengths, the last.
        assert_eq!(p.axis, 1);
        assert_eq!(p.size(), 3);
        let mut next = 0;
        for r in &p.ranges {
            assert_eq!(r.start, next);
            next = r.end;
        }
        assert_eq!(next, 16);
        let owned: Vec<u32> = (0..3).map(|r| p.owned(r)).collect();
        assert!(
            owned.iter().max().unwrap() - owned.iter().min().unwrap() <= 1,
            "{owned:?}"
        );
    }

    #[test]
    fn a_rank_sees_its_layers_with_one_ghost_layer_each_side_wrapping() {
        let p = plan(4);
        let l = p.local_lattice(0);
        assert_eq!((l.nx, l.ny, l.nz), (16, p.owned(0) + 2, 12));
        // Rank 0's lower ghost layer is the last global layer (the axis wraps); its upper one
        // is rank 1's first.
        assert_eq!(p.global_layer(0, 0), 15);
        assert_eq!(p.global_layer(0, 1), 0);
        assert_eq!(p.global_layer(0, p.owned(0) + 1), p.ranges[1].start);
        // Every owned cell of every rank is one global cell, each exactly once.
        let mut seen = vec![0u8; p.global.cells()];
        for r in 0..p.size() {
            let l = p.local_lattice(r);
            for c in 0..l.cells() {
                let (_, y, _) = l.coords(c);
                if (1..=p.owned(r)).contains(&y) {
                    seen[p.global_cell(r, c)] += 1;
                }
            }
        }
        assert!(seen.iter().all(|&n| n == 1));
    }

    #[test]
    fn more_ranks_than_layers_are_refused() {
        let setup =
            crate::fluid::scene::taylor_green(16, 12, 0.05, 0.01, CollisionModel::Bgk).unwrap();
        assert!(SlabPlan::new(&setup, 17).is_err());
    }
}
