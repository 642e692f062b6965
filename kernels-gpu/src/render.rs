//! Rasterising kernels of the viewer: clear the key frame, splat every boid's disc with a 64-bit
//! atomic minimum per pixel (nearest boid wins), resolve keys to RGBA8. The projection, colours
//! and keys are `murmur_common::render`, the same functions the CPU rasteriser calls.

use crate::thread;
use core::sync::atomic::{AtomicU64, Ordering};
use murmur_common::flock::Body;
use murmur_common::render::{resolve, View, EMPTY_KEY};
use murmur_common::Vec3;

/// Stage `render_clear`: every key of the `pixels`-long frame becomes [`EMPTY_KEY`].
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_clear(pixels: u32, frame: *mut u64) {
    let i = thread::index();
    if i >= pixels as usize {
        return;
    }
    *frame.add(i) = EMPTY_KEY;
}

/// Stage `render_splat`: one thread per boid (position from `body`, velocity from `vel`, the
/// flock's current buffers); each pixel of its disc keeps the smaller key.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_splat(
    n: u32,
    view: View,
    body: *const Body,
    vel: *const Vec3,
    frame: *mut u64,
) {
    let i = thread::index();
    if i >= n as usize {
        return;
    }
    view.splat((*body.add(i)).pos, *vel.add(i), |pixel, key| {
        // SAFETY: `pixel < width * height`, the frame's length; the frame is only accessed
        // atomically while this kernel runs.
        let slot = AtomicU64::from_ptr(frame.add(pixel as usize));
        slot.fetch_min(key, Ordering::Relaxed);
    });
}

/// Stage `render_resolve`: `rgba[i]` = colour of key `i`, `background` where no boid landed.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn render_resolve(
    pixels: u32,
    background: u32,
    frame: *const u64,
    rgba: *mut u32,
) {
    let i = thread::index();
    if i >= pixels as usize {
        return;
    }
    *rgba.add(i) = resolve(*frame.add(i), background);
}
