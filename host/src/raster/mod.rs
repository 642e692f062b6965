//! Boid rasterisers: the `render_clear`, `render_splat` and `render_resolve` stages on the CPU
//! (this file: all cores, rayon) and as kernels on the flock's own device buffers (`cuda.rs`),
//! calling the same `murmur_common::render` functions, so that the CPU and the CUDA frames of the
//! same flock and camera are the same pixels. The flock backends draw through these; the viewer
//! (`crate::view`) shows what they drew.

pub mod bar;
pub mod cuda;
pub mod fluid;
pub mod fluid_cuda;

use murmur_common::render::{resolve, View, EMPTY_KEY};
use murmur_common::Vec3;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a frame could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum RasterError {
    #[error("frame buffer holds {got} bytes, a {width}x{height} RGBA frame needs {need}")]
    BufferSize {
        width: u32,
        height: u32,
        got: usize,
        need: usize,
    },
    #[error("{pos} positions but {vel} velocities")]
    Lengths { pos: usize, vel: usize },
}

/// Checks that `rgba` is exactly one `RGBA8` frame of the view's size.
pub fn check_frame(view: &View, rgba: &[u8]) -> Result<(), RasterError> {
    let need = view.width as usize * view.height as usize * 4;
    if rgba.len() != need {
        return Err(RasterError::BufferSize {
            width: view.width,
            height: view.height,
            got: rgba.len(),
            need,
        });
    }
    Ok(())
}

/// The per-pixel key frame, kept between frames (resized when the view's size changes).
#[derive(Default)]
pub struct CpuRaster {
    keys: Vec<AtomicU64>,
}

impl CpuRaster {
    /// Draws the boids `pos[i]`, `vel[i]` into `rgba` (`width * height * 4` bytes, row-major,
    /// `y` down), `background` where no boid lands.
    pub fn draw(
        &mut self,
        view: &View,
        pos: &[Vec3],
        vel: &[Vec3],
        background: u32,
        rgba: &mut [u8],
    ) -> Result<(), RasterError> {
        check_frame(view, rgba)?;
        if pos.len() != vel.len() {
            return Err(RasterError::Lengths {
                pos: pos.len(),
                vel: vel.len(),
            });
        }
        let pixels = view.width as usize * view.height as usize;
        if self.keys.len() != pixels {
            self.keys = (0..pixels).map(|_| AtomicU64::new(EMPTY_KEY)).collect();
        }
        let keys = &self.keys;
        // Stage `render_clear`.
        keys.par_iter()
            .for_each(|k| k.store(EMPTY_KEY, Ordering::Relaxed));
        // Stage `render_splat`: the minimum is order-independent, so threads may race freely.
        pos.par_iter().zip(vel.par_iter()).for_each(|(&p, &v)| {
            view.splat(p, v, |pixel, key| {
                keys[pixel as usize].fetch_min(key, Ordering::Relaxed);
            })
        });
        // Stage `render_resolve`.
        rgba.par_chunks_exact_mut(4)
            .zip(keys.par_iter())
            .for_each(|(px, k)| {
                px.copy_from_slice(&resolve(k.load(Ordering::Relaxed), background).to_le_bytes())
            });
        Ok(())
    }
}
