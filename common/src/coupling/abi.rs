//! Argument structs of the coupled flock's kernels (`kernels-gpu/src/coupling.rs`), one per
//! kernel, in the order a substep launches them.
//!
//! Device layout per boid: position, ground velocity and relative velocity ([`Vec3`], 12 bytes
//! each) and id (`u32`), each twice (the gather permutes into the second copy, the rules write
//! the new relative velocities there); a cell key and a sorted index (`u32` each) and the radix
//! sort's two spare words; two-way, three fixed-point impulse sums (twice, as the position). Per grid cell plus one: `starts`, the first sorted entry of each cell
//! (the last entry is the boid count). The air: two velocity fields in the fluid's `Fields`
//! layout (`[rho; n] ++ [ux; n] ++ [uy; n] ++ [uz; n]`, f32) and a byte per cell (1: fluid).
//! Obstacles: a list of [`Obstacle`]s and the samples of their sampled distances (meshes').

use super::grid::BoxGrid;
use super::sdf::{Avoidance, Obstacle};
use super::substep::SubstepTime;
use super::{BoidBox, Motion};
use crate::flock::params::FlockParams;
use crate::kernel::{DevSlice, DevSliceMut};
use crate::lbm::ib::stencil::Domain;
use crate::Vec3;

/// `coupling_keys`: `keys[i]` = the grid key of boid `i`'s cell, `values[i] = i`, for `i < n`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CouplingKeys {
    pub n: u32,
    pub grid: BoxGrid,
    pub pos: DevSlice<Vec3>,
    pub keys: DevSliceMut<u32>,
    pub values: DevSliceMut<u32>,
}

/// `coupling_starts`: `starts[key]` (`cell_count + 1` entries) = the first of the `n` sorted
/// `keys` (ascending) at or above `key`; `starts[cell_count] = n`. One thread per sorted entry,
/// `n >= 1`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CouplingStarts {
    pub n: u32,
    pub cell_count: u32,
    pub keys: DevSlice<u32>,
    pub starts: DevSliceMut<u32>,
}

/// `coupling_gather`: entry `i` of each output = entry `values[i]` of its input, for `i < n`
/// (the boids permuted into cell order, ids moving with their boid).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CouplingGather {
    pub n: u32,
    pub values: DevSlice<u32>,
    pub pos_in: DevSlice<Vec3>,
    pub vel_in: DevSlice<Vec3>,
    pub rel_in: DevSlice<Vec3>,
    pub id_in: DevSlice<u32>,
    pub pos_out: DevSliceMut<Vec3>,
    pub vel_out: DevSliceMut<Vec3>,
    pub rel_out: DevSliceMut<Vec3>,
    pub id_out: DevSliceMut<u32>,
    /// Two-way: the boids' impulse sums over the fluid step, three per boid (empty one-way).
    pub push_in: DevSlice<u64>,
    pub push_out: DevSliceMut<u64>,
}

/// `coupling_rules`: `rel_out[i]` = the new relative velocity of sorted boid `i < n`
/// ([`super::substep::rules_velocity`]) from the old `pos` and `rel` of its neighbours (cell
/// `key` holds entries `starts[key]..starts[key + 1]`) and the `obstacles` (their grids'
/// samples in `samples`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CouplingRules {
    pub n: u32,
    pub grid: BoxGrid,
    pub params: FlockParams,
    pub avoidance: Avoidance,
    pub starts: DevSlice<u32>,
    pub pos: DevSlice<Vec3>,
    pub rel: DevSlice<Vec3>,
    pub obstacles: DevSlice<Obstacle>,
    pub samples: DevSlice<f32>,
    pub rel_out: DevSliceMut<Vec3>,
}

/// The air of a substep: the fields before and after the fluid step (empty: no air, the boids
/// move with their relative velocity) over `domain`'s cells, `fluid` a byte per cell (nonzero:
/// a fluid node), at substep `time`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DeviceAir {
    pub domain: Domain,
    pub time: SubstepTime,
    pub fluid: DevSlice<u8>,
    pub before: DevSlice<f32>,
    pub after: DevSlice<f32>,
}

/// `coupling_move`: boid `i < n` moved in the air ([`super::substep::move_boid`]), each thread
/// reading and writing its own entry of `pos`, `vel`, `rel` and `push` only. Two-way (`mass >
/// 0`): the move's impulse on the air joins the boid's sum in `push` (three per boid).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CouplingMove {
    pub n: u32,
    /// The boid's mass (lattice units; 0: one-way).
    pub mass: f32,
    pub motion: Motion,
    pub bounds: BoidBox,
    pub avoidance: Avoidance,
    pub air: DeviceAir,
    pub obstacles: DevSlice<Obstacle>,
    pub samples: DevSlice<f32>,
    pub pos: DevSliceMut<Vec3>,
    pub vel: DevSliceMut<Vec3>,
    pub rel: DevSliceMut<Vec3>,
    pub push: DevSliceMut<u64>,
}
