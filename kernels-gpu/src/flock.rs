//! Flocking kernels: cell keys and the position update (stages of one flock step).

use crate::thread;
use murmur_common::flock::{integrate_position, FlockParams, Grid};
use murmur_common::Vec3;

/// Stage `compute_keys`: `keys[i]` = cell key of boid `i`, `values[i] = i`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn compute_keys(
    n: u32,
    grid: Grid,
    pos: *const Vec3,
    keys: *mut u32,
    values: *mut u32,
) {
    let i = thread::index();
    if i >= n as usize {
        return;
    }
    *keys.add(i) = grid.key(*pos.add(i));
    *values.add(i) = i as u32;
}

/// Stage `update_position`: `pos[i] += vel[i] * dt`, wrapped at `±scale`.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn update_position(
    n: u32,
    params: FlockParams,
    pos: *mut Vec3,
    vel: *const Vec3,
) {
    let i = thread::index();
    if i >= n as usize {
        return;
    }
    *pos.add(i) = integrate_position(&params, *pos.add(i), *vel.add(i));
}
