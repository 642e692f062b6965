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
