//! The fluid's pushes (impulses from a layer above it, `murmur_common::lbm::ib::push`): mark
//! their stencils' bricks and spread their totals into the band's sums with atomic fixed-point
//! adds (the stream-collide step reads the sums as part of the band's force).

use crate::thread::{index_below, red_add_u64};
use murmur_common::lbm::ib::push::{self, PushPoints, PushSpread};

/// Stage `push_mark`: one thread per push claims the bricks of its fluid stencil nodes.
#[no_mangle]
pub unsafe extern "ptx-kernel" fn push_mark(a: PushPoints) {
    let Some(i) = index_below(a.pushes.pos.len()) else {
        return;
    };
    push::mark(&a, i);
}

/// Stage `push_spread`: one thread per push adds its terms into the band's `pass` sums (atomic
/// fixed-point adds: the same sums in any order).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn push_spread(a: PushSpread) {
    let a = &a.points;
    let Some(i) = index_below(a.pushes.pos.len()) else {
        return;
    };
    let pass = a.band.pass;
    push::spread(a, i, |k, t| red_add_u64(pass.at(k), t));
}
