//! Rasterising kernels of the viewer: clear the key frame, splat every boid's disc with a 64-bit
//! atomic minimum per pixel (nearest boid wins), resolve keys to RGBA8. Arguments are
//! `murmur_common::render::abi`; the projection, colours and keys are `murmur_common::render`,
//! the same functions the CPU rasteriser calls.

use crate::thread::index_below;
use core::sync::atomic::{AtomicU64, Ordering};
use murmur_common::render::abi::{RenderClear, RenderResolve, RenderSplat};
use murmur_common::render::{resolve, EMPTY_KEY};

/// Stage `render_clear`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_clear(a: RenderClear) {
    let Some(i) = index_below(a.frame.len()) else {
        return;
    };
    a.frame.write(i, EMPTY_KEY);
}

/// Stage `render_splat`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_splat(a: RenderSplat) {
    let Some(i) = index_below(a.n as u64) else {
        return;
    };
    a.view
        .splat(a.body.read(i).pos, a.vel.read(i), |pixel, key| {
            // SAFETY: `pixel < width * height`, the frame's length; the frame is only accessed
            // atomically while this kernel runs.
            let slot = AtomicU64::from_ptr(a.frame.at(pixel as usize));
            slot.fetch_min(key, Ordering::Relaxed);
        });
}

/// Stage `render_resolve`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_resolve(a: RenderResolve) {
    let Some(i) = index_below(a.frame.len()) else {
        return;
    };
    a.rgba.write(i, resolve(a.frame.read(i), a.background));
}
