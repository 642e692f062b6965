//! Reynolds flocking after the CIS 565 reference: parameters, the three rules, integration and
//! the uniform grid used by the `scattered` and `coherent` neighbour searches.
//!
//! Semantics are those of `shared/notes/reference.md` (CIS 565 starter code, 2016): rules read the
//! previous step's positions and velocities, distance tests are strict, self is excluded, the
//! neighbour search is not periodic and positions wrap per axis at `±scale`.

pub mod grid;
pub mod params;
pub mod rules;

pub use grid::{CellOrder, Grid, SearchBox};
pub use params::FlockParams;
pub use rules::{clamp_speed, integrate_position, new_velocity, wrap_axis, RuleSums};
