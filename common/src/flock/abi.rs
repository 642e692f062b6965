//! Argument structs of the flock kernels (`kernels-gpu/src/flock.rs`), one per kernel.
//!
//! Device layout per boid: [`Body`] (position + id, 16 bytes) and velocity ([`Vec3`], 12
//! bytes), both double-buffered; `values` (sorted index array) and `keys` (radix sort only).
//! Per grid cell: `counts` (the next step's cell populations) and `cell_end`: the exclusive scan
//! of the counts, which the scatter advances cell by cell, so that afterwards `cell_end[k]` is
//! the end of cell `k`'s entries and the start of cell `k + 1`'s.

use super::{Body, FlockParams, Grid};
use crate::kernel::{DevSlice, DevSliceMut, Variant};
use crate::Vec3;

/// `init_flock`: the CIS 565 start of boids `0..n` (uniform positions in `[-scale, scale]^3`,
/// zero velocities, ids `0..n`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct InitFlock {
    pub n: u32,
    pub scale: f32,
    pub seed: u64,
    pub body: DevSliceMut<Body>,
    pub vel: DevSliceMut<Vec3>,
}

/// `count_cells`: `counts[key(body[i].pos)] += 1` for `i < n` (counts zeroed before).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CountCells {
    pub n: u32,
    pub grid: Grid,
    pub body: DevSlice<Body>,
    pub counts: DevSliceMut<u32>,
}

/// `scatter_cells` (`coherent`, counting sort): each boid claims the next entry of its cell in
/// `cell_end` (cell starts before, cell ends after) and moves its state there.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ScatterCells {
    pub n: u32,
    pub grid: Grid,
    pub body_in: DevSlice<Body>,
    pub vel_in: DevSlice<Vec3>,
    pub cell_end: DevSliceMut<u32>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
}

/// `scatter_index` (`scattered`, counting sort): the sorted index array, claimed the same way.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ScatterIndex {
    pub n: u32,
    pub grid: Grid,
    pub body: DevSlice<Body>,
    pub cell_end: DevSliceMut<u32>,
    pub values: DevSliceMut<u32>,
}

/// `compute_keys` (radix path): `keys[i]` = cell key of boid `i`, `values[i] = i`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ComputeKeys {
    pub n: u32,
    pub grid: Grid,
    pub body: DevSlice<Body>,
    pub keys: DevSliceMut<u32>,
    pub values: DevSliceMut<u32>,
}

/// `cell_bounds` (radix path): `cell_end` (`cell_count` entries) from the sorted `keys[..n]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CellBounds {
    pub n: u32,
    pub cell_count: u32,
    pub keys: DevSlice<u32>,
    pub cell_end: DevSliceMut<u32>,
}

/// `order_cells_by_id` (`WithinCell::ById`, after binning into cell order): each of the
/// `cell_count` cells' entries (`cell_end` holds their ends) sorted by id in place, bodies and
/// velocities together ([`crate::flock::order_cell_by_id`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct OrderCells {
    pub cell_count: u32,
    pub cell_end: DevSlice<u32>,
    pub body: DevSliceMut<Body>,
    pub vel: DevSliceMut<Vec3>,
}

/// `gather` (radix path, `coherent`): `out[i] = in[values[i]]` for bodies and velocities.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Gather {
    pub n: u32,
    pub values: DevSlice<u32>,
    pub body_in: DevSlice<Body>,
    pub vel_in: DevSlice<Vec3>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
}

/// `update_boids_*`: boid `i` reads the previous state (`body`, `vel`), writes its new velocity
/// and position to index `i` of `body_out`, `vel_out`, and counts itself into its new cell in
/// `counts` unless that is empty. `cell_end` is the cell table (unused by `naive`), `values`
/// the sorted index array (`scattered` only). `S` picks the search, and so the kernel.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UpdateBoids<S> {
    pub n: u32,
    /// Right after `n`: rustc passes the struct as 64-bit words, and the grid's last field
    /// (`order`, tested in the search loop) then lands in a word's low half, a 32-bit register.
    pub grid: Grid,
    pub params: FlockParams,
    pub cell_end: DevSlice<u32>,
    pub values: DevSlice<u32>,
    pub body: DevSlice<Body>,
    pub vel: DevSlice<Vec3>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
    pub counts: DevSliceMut<u32>,
    pub search: Variant<S>,
}

impl<S> UpdateBoids<S> {
    /// The same arguments for the update kernel of search `T`.
    pub fn to<T>(self) -> UpdateBoids<T> {
        UpdateBoids {
            n: self.n,
            params: self.params,
            grid: self.grid,
            cell_end: self.cell_end,
            values: self.values,
            body: self.body,
            vel: self.vel,
            body_out: self.body_out,
            vel_out: self.vel_out,
            counts: self.counts,
            search: Variant::NEW,
        }
    }
}

/// Searches of [`UpdateBoids`]: every other boid.
#[derive(Clone, Copy, Debug)]
pub struct Naive;
/// Grid search through the sorted index array.
#[derive(Clone, Copy, Debug)]
pub struct Scattered;
/// Grid search over the state in cell order, a branch around each candidate's sums.
#[derive(Clone, Copy, Debug)]
pub struct Coherent;
/// [`Coherent`] with predicated sums (both of a candidate's loads in flight: small flocks).
#[derive(Clone, Copy, Debug)]
pub struct CoherentPredicated;
/// [`Coherent`] staging the block's candidates in shared memory ([`coherent_shared_bytes`]).
#[derive(Clone, Copy, Debug)]
pub struct CoherentShared;

pub type UpdateNaive = UpdateBoids<Naive>;
pub type UpdateScattered = UpdateBoids<Scattered>;
pub type UpdateCoherent = UpdateBoids<Coherent>;
pub type UpdateCoherentPredicated = UpdateBoids<CoherentPredicated>;
pub type UpdateCoherentShared = UpdateBoids<CoherentShared>;

/// Shared memory of `update_boids_coherent_shared` ahead of its staged candidates: the union
/// of the block's search boxes.
#[repr(C)]
pub struct SharedBox {
    pub lo: [u32; 3],
    pub hi: [u32; 3],
    pub _pad: [u32; 2],
}

/// One staged candidate's slots in `update_boids_coherent_shared` (bodies first, then
/// velocities, `block` of each).
pub const SHARED_CANDIDATE_BYTES: u32 =
    (core::mem::size_of::<Body>() + core::mem::size_of::<Vec3>()) as u32;

/// Dynamic shared memory of `update_boids_coherent_shared` with blocks of `block` threads.
pub const fn coherent_shared_bytes(block: u32) -> u32 {
    core::mem::size_of::<SharedBox>() as u32 + block * SHARED_CANDIDATE_BYTES
}
