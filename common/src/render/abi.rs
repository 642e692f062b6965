//! Argument structs of the viewer's rasterising kernels (`kernels-gpu/src/render.rs`).

use super::View;
use crate::flock::Body;
use crate::kernel::{DevSlice, DevSliceMut};
use crate::Vec3;

/// `render_clear`: every key of the frame (`frame.len()` pixels) becomes the empty key.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RenderClear {
    pub frame: DevSliceMut<u64>,
}

/// `render_splat`: one thread per boid of `body`/`vel` (the flock's current buffers, `n`
/// boids); each pixel of its disc keeps the smaller depth+colour key, atomically.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RenderSplat {
    pub n: u32,
    pub view: View,
    pub body: DevSlice<Body>,
    pub vel: DevSlice<Vec3>,
    pub frame: DevSliceMut<u64>,
}

/// `render_resolve`: `rgba[i]` = colour of `frame[i]`, `background` where no boid landed.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RenderResolve {
    pub background: u32,
    pub _pad: u32,
    pub frame: DevSlice<u64>,
    pub rgba: DevSliceMut<u32>,
}

/// Threads per block of the per-pixel render kernels.
pub const PIXEL_BLOCK: u32 = 256;

use super::fluid::{FluidFrame, Planes, Volumes};
use super::smoke::{SmokeParams, SmokeSource};
use crate::lbm::abi::FieldsArgs;
use crate::lbm::{Lattice, Storage};

/// `fluid_derived`: one thread per cell of `planes` (`planes.cells` threads); `derived = [|curl
/// u|; n] ++ [Q; n]` (lattice units) at those cells, the others untouched, from `fields` (`4 n`
/// values, current wherever the gradients reach: `FluidFrame::field_planes`) by
/// `murmur_common::lbm::derived`, the `.vti` output's math. `periodic` bit `a`: axis `a` wraps.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FluidDerived {
    pub lattice: Lattice,
    pub periodic: u32,
    pub planes: Planes,
    pub fields: DevSlice<f32>,
    pub flags: DevSlice<u8>,
    pub derived: DevSliceMut<f32>,
}

/// `fluid_plane_fields_*` (one per storage): `rho, u` of the cells of `planes` only (a slice
/// frame's, `FluidFrame::field_planes`) into `fields.fields` (`4 n` floats, the other cells
/// untouched), one thread per cell of the planes, by the cell function of `lbm_fields_*`
/// (`murmur_common::lbm::cell_fields`); `fields` as for that kernel.
#[repr(C)]
pub struct PlaneFields<S: Storage> {
    pub fields: FieldsArgs<S>,
    pub planes: Planes,
}

// Copyable whatever the storage (derive would require `S: Copy`).
impl<S: Storage> Clone for PlaneFields<S> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<S: Storage> Copy for PlaneFields<S> {}
impl<S: Storage> core::fmt::Debug for PlaneFields<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PlaneFields")
    }
}

/// `smoke_forward`: one thread per cell, `s_hat[c]` = the semi-Lagrangian step of `s`
/// (`murmur_common::render::smoke::forward`). `fields` `4 n`, the others `n` values.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SmokeForward {
    pub p: SmokeParams,
    pub fields: DevSlice<f32>,
    pub flags: DevSlice<u8>,
    pub s: DevSlice<f32>,
    pub s_hat: DevSliceMut<f32>,
}

/// `smoke_backward`: one thread per cell, `e[c] = s + (s - SL^-1(s^)) / 2` (`smoke::backward`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SmokeBackward {
    pub p: SmokeParams,
    pub fields: DevSlice<f32>,
    pub flags: DevSlice<u8>,
    pub s: DevSlice<f32>,
    pub s_hat: DevSlice<f32>,
    pub e: DevSliceMut<f32>,
}

/// `smoke_correct`: one thread per cell, `s_new[c]` = the clamped semi-Lagrangian step of `e`
/// with decay and the sources (`smoke::correct`); `sources` holds `p.sources` entries.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SmokeCorrect {
    pub p: SmokeParams,
    pub fields: DevSlice<f32>,
    pub flags: DevSlice<u8>,
    pub sources: DevSlice<SmokeSource>,
    pub s: DevSlice<f32>,
    pub e: DevSlice<f32>,
    pub s_new: DevSliceMut<f32>,
}

/// `smoke_light`: one thread per `(x, z)` column (`nx nz` threads), the light transmittance of
/// every cell of the column from above (`fluid::light_column`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SmokeLight {
    pub lattice: Lattice,
    pub sigma: f32,
    pub smoke: DevSlice<f32>,
    pub light: DevSliceMut<f32>,
}

/// `fluid_splat`: one thread per point of `pos` (`n` of them, lattice coordinates): a solid's
/// sample (`colours` empty: `fluid::splat_solid`) or a coloured point (a boid: `colours[i]`,
/// `fluid::splat_point`); each pixel of its disc keeps the smaller depth+colour key,
/// atomically.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FluidSplat {
    pub n: u32,
    /// Sample radius, cells.
    pub radius: f32,
    pub view: View,
    pub pos: DevSlice<Vec3>,
    /// Packed colours per point, or empty (the solids' colour).
    pub colours: DevSlice<u32>,
    pub frame: DevSliceMut<u64>,
}

/// `fluid_occupancy`: one warp per brick of `frame.lattice` (`occupancy::Bricks::count` warps,
/// whole warps: a block size that is a multiple of 32); `occupancy[b]` = 1 where brick `b`
/// holds a cell the march of `frame` draws (`occupancy::drawn`), 0 elsewhere. `volumes` as
/// `fluid_shade` reads them for the frame (their `occupancy` unused).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FluidOccupancy {
    pub frame: FluidFrame,
    pub volumes: Volumes,
    pub occupancy: DevSliceMut<u8>,
}

/// `fluid_shade`: one thread per pixel, `rgba[i]` = `fluid::shade` of the pixel over the solid
/// keys `keys[i]` (from `render_clear` and `fluid_splat`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct FluidShade {
    pub frame: FluidFrame,
    pub volumes: Volumes,
    pub keys: DevSlice<u64>,
    pub rgba: DevSliceMut<u32>,
}
