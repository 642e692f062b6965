//! Reynolds flocking after the CIS 565 reference: parameters, the three rules, integration and
//! the uniform grid used by the `scattered` and `coherent` neighbour searches.
//!
//! Semantics are those of the CIS 565 starter code (2016), stated in the README: rules read the
//! previous step's positions and velocities, distance tests are strict, self is excluded, the
//! neighbour search is not periodic and positions wrap per axis at `±scale`.

pub mod abi;
pub mod grid;
pub mod params;
pub mod rules;
pub mod search;
pub mod slab;

pub use grid::{CellOrder, Grid, SearchBox};
pub use params::{FlockParams, InvalidParam, ParamSpec, PARAMS};
pub use rules::{clamp_speed, integrate_position, new_velocity, wrap_axis, RuleSums};
pub use search::{
    fill_cell_start, for_each_box_run, for_each_run, grid_sums, grid_sums_as, naive_sums,
    order_cell_by_id,
};

use crate::math::Vec3;

/// A boid's position and id in one 16-byte aligned record: the GPU's layout of positions, so a
/// neighbour test is one 16-byte load and ids travel with positions through every reordering.
#[repr(C, align(16))]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Body {
    pub pos: Vec3,
    pub id: u32,
}

/// Initial position of boid `i`: uniform in `[-scale, scale]^3` (CIS 565 start; velocity zero).
#[inline(always)]
pub fn initial_position(seed: u64, i: u64, scale: f32) -> Vec3 {
    let u = |axis: u64| (crate::rng::uniform(seed, 3 * i + axis) * 2.0 - 1.0) * scale;
    Vec3::new(u(0), u(1), u(2))
}
