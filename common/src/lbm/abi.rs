//! Argument structs of the lattice kernels (`kernels-gpu/src/lbm.rs`). The CPU reference builds
//! the same structs over its own buffers and calls the same cell functions ([`super::stream`]).

use super::collide::Model;
use super::params::LbmParams;
use crate::kernel::{DevSlice, DevSliceMut, Variant};

/// `lbm_init`: the populations of every cell = the equilibrium of its `rho, ux, uy, uz`
/// (`fields`: four arrays of `cells` floats), as the post-collision state of step 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Init {
    pub lattice: super::Lattice,
    pub _pad: u32,
    pub fields: DevSlice<f32>,
    pub f: DevSliceMut<f32>,
}

/// One stream-collide step of model `M`: pull from `src` (the previous step's populations),
/// collide, write `dst` (a different buffer), and the fields `rho, ux, uy, uz` when
/// `p.store_fields != 0`. `flags` holds one cell byte per cell, with the near-boundary bits.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StreamCollide<M> {
    pub p: LbmParams,
    pub flags: DevSlice<u8>,
    pub src: DevSlice<f32>,
    pub dst: DevSliceMut<f32>,
    pub fields: DevSliceMut<f32>,
    pub model: Variant<M>,
}

/// The same step over the listed cells `cells` (non-fluid cells and the fluid cells next to
/// them), boundary conditions applied while pulling.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Boundary<M> {
    pub step: StreamCollide<M>,
    pub cells: DevSlice<u32>,
}

impl<M: Model> StreamCollide<M> {
    /// The step's buffers and parameters, for model `M`.
    pub fn new(
        p: LbmParams,
        flags: DevSlice<u8>,
        src: DevSlice<f32>,
        dst: DevSliceMut<f32>,
        fields: DevSliceMut<f32>,
    ) -> Self {
        StreamCollide {
            p,
            flags,
            src,
            dst,
            fields,
            model: Variant::NEW,
        }
    }
}
