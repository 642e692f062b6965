//! The GPU rasteriser: `render_clear`, `render_splat`, `render_resolve` on a flock's current
//! device buffers, then one copy of the `RGBA8` frame back.

use crate::gpu::{DriverContext, Gpu, GpuError, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::flock::Body;
use murmur_common::render::abi::{RenderClear, RenderResolve, RenderSplat, PIXEL_BLOCK};
use murmur_common::render::View;

/// The frame on the GPU: one `u64` depth+colour key and one `RGBA8` pixel per pixel (12 bytes
/// per pixel: 11 MiB at 1280x720), allocated on the first frame of a size.
struct Frame {
    pixels: u32,
    keys: CudaSlice<u64>,
    rgba: CudaSlice<u8>,
}

/// Draws boids held on the GPU; keeps its frame buffers between frames.
#[derive(Default)]
pub struct CudaRaster {
    frame: Option<Frame>,
}

/// The boids to draw: `n` of them in `body` and `vel` (a flock's current buffers).
pub struct Boids<'a> {
    pub n: u32,
    pub body: &'a CudaSlice<Body>,
    pub vel: &'a CudaSlice<[f32; 3]>,
}

/// Threads per block of `render_splat` (one thread per boid).
const SPLAT_BLOCK: u32 = 256;

impl CudaRaster {
    /// Draws `boids` into `rgba` (`view.width * view.height * 4` bytes, checked by the caller)
    /// and waits for the copy.
    pub fn draw(
        &mut self,
        gpu: &Gpu,
        view: &View,
        background: u32,
        boids: Boids<'_>,
        rgba: &mut [u8],
    ) -> Result<(), GpuError> {
        let Boids { n, body, vel } = boids;
        let pixels = view.width * view.height;
        if self.frame.as_ref().is_none_or(|f| f.pixels != pixels) {
            self.frame = None;
            gpu.check_fits(
                &format!("a {}x{} frame", view.width, view.height),
                pixels as u64 * 12,
            )?;
            self.frame = Some(Frame {
                pixels,
                keys: gpu.zeros(pixels as usize)?,
                rgba: gpu.zeros(pixels as usize * 4)?,
            });
        }
        let Some(f) = self.frame.as_mut() else {
            unreachable!("allocated above");
        };
        let per_pixel = Shape::try_per_item(pixels as u64, PIXEL_BLOCK)?;
        let per_boid = Shape::try_per_item(n as u64, SPLAT_BLOCK)?;
        // SAFETY: one thread per key of the frame.
        unsafe {
            gpu.launch()
                .run(per_pixel, &mut f.keys, |l, keys| RenderClear {
                    frame: l.write(keys),
                })
        }?;
        // SAFETY: body and vel hold n boids in the same order; the kernel writes only pixels
        // inside view.width x view.height, the frame's length.
        unsafe {
            gpu.launch()
                .run(per_boid, &mut f.keys, |l, keys| RenderSplat {
                    n,
                    view: *view,
                    body: l.read(body),
                    vel: l.read_cast(vel),
                    frame: l.write(keys),
                })
        }?;
        // SAFETY: one thread per pixel; rgba holds one u32 per key.
        unsafe {
            gpu.launch()
                .run(per_pixel, &mut f.rgba, |l, rgba| RenderResolve {
                    background,
                    _pad: 0,
                    frame: l.read(&f.keys),
                    rgba: l.write_as::<u32>(rgba),
                })
        }?;
        gpu.stream
            .memcpy_dtoh(&f.rgba, rgba)
            .ctx("copying the frame from the GPU")?;
        Ok(())
    }
}
