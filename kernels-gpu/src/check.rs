//! Checks of the device's arithmetic against `common`'s references: `check_half` compares the
//! 16-bit population formats' conversions (hardware binary16 against the integer forms, FP16C
//! against its integer form and its round trip), one thread per `f32` bit pattern.

use crate::thread::index_below;
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
use murmur_common::lbm::half::{check_input, CheckHalf};

/// Stage `check_half`: input `start + i` through [`check_input`]; each failed test's count
/// incremented and its smallest failing input lowered ([`CheckHalf`]'s words).
#[no_mangle]
pub unsafe extern "ptx-kernel" fn check_half(a: CheckHalf) {
    let Some(i) = index_below(a.count) else {
        return;
    };
    let input = (a.start + i as u64) as u32;
    let fail = check_input(input);
    let mut t = 0;
    while t < CheckHalf::TESTS.len() {
        if fail & (1 << t) != 0 {
            a.out.fetch_add(2 * t, 1);
            AtomicU32::from_ptr(a.out.at(2 * t + 1)).fetch_min(input, Relaxed);
        }
        t += 1;
    }
}
