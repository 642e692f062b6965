//! The run's health check: a reduction over the fields of the fluid cells giving the lowest and
//! highest density, the highest local Mach number and the first cell (lowest number) out of
//! bounds. Four `u32` words, each reduced by maximum (so a zeroed buffer is the identity and the
//! GPU combines with `atomicMax`): floats as order-preserving keys ([`key`]), the minimum as the
//! maximum of the complemented key, the first bad cell as the maximum of `!cell`.
//!
//! A cell is bad when `|rho - 1| > max_density_deviation`, when `Ma = |u| / c_s =
//! sqrt(3) |u| > max_mach`, or when a value is not finite (every comparison with NaN fails).

use super::access::Storage;
use super::boundary::{FLUID, GHOST, KIND_MASK};
use super::stream::cell_fields;
use crate::math::sqrt;

/// Bounds of a healthy flow, lattice units. `#[repr(C)]`: part of the kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Largest `|rho - 1|`.
    pub max_density_deviation: f32,
    /// Largest local Mach number `sqrt(3) |u|`.
    pub max_mach: f32,
}

impl Bounds {
    /// `|rho - 1| <= 0.1`, `Ma <= 0.5`.
    pub const DEFAULT: Bounds = Bounds {
        max_density_deviation: 0.1,
        max_mach: 0.5,
    };
}

/// Word indices of the reduction.
pub mod word {
    /// `!key(rho)`: the complement of the lowest density's key.
    pub const MIN_RHO: usize = 0;
    /// `key(rho)` of the highest density.
    pub const MAX_RHO: usize = 1;
    /// `key(Ma)` of the highest Mach number.
    pub const MAX_MACH: usize = 2;
    /// `!cell` of the lowest bad cell; 0: none.
    pub const FIRST_BAD: usize = 3;
    /// Words.
    pub const WORDS: usize = 4;
}

/// An order-preserving `u32` key of a float: `a < b` iff `key(a) < key(b)` for non-NaN values.
#[inline(always)]
pub const fn key(v: f32) -> u32 {
    let b = v.to_bits();
    if b & 0x8000_0000 != 0 {
        !b
    } else {
        b | 0x8000_0000
    }
}

/// The float of a [`key`].
#[inline(always)]
pub const fn from_key(k: u32) -> f32 {
    f32::from_bits(if k & 0x8000_0000 != 0 {
        k & 0x7fff_ffff
    } else {
        !k
    })
}

/// The local Mach number of velocity `u`.
#[inline(always)]
pub fn mach(u: [f32; 3]) -> f32 {
    sqrt(3.0 * (u[0] * u[0] + u[1] * u[1] + u[2] * u[2]))
}

/// Whether `(rho, u)` lies within `b` (false for non-finite values).
#[inline(always)]
pub fn healthy(b: &Bounds, rho: f32, u: [f32; 3]) -> bool {
    let d = rho - 1.0;
    let ma = mach(u);
    (d <= b.max_density_deviation && -d <= b.max_density_deviation) && ma <= b.max_mach
}

/// The four words of one cell (all 0 for a non-fluid or ghost cell: the identity of the
/// reduction).
///
/// # Safety
/// The buffers as documented on [`super::abi::Health`], `cell < cells`.
#[inline(always)]
pub unsafe fn cell_words<S: Storage>(a: &super::abi::Health<S>, cell: usize) -> [u32; word::WORDS] {
    let byte = a.flags.read(cell);
    if byte & KIND_MASK != FLUID || byte == GHOST {
        return [0; word::WORDS];
    }
    let (rho, u) = cell_fields(&a.p, &a.pops, a.flags, a.f, &a.band, cell);
    let bad = !healthy(&a.bounds, rho, u);
    [
        !key(rho),
        key(rho),
        key(mach(u)),
        if bad { !(cell as u32) } else { 0 },
    ]
}

/// What the reduction found, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    pub min_rho: f32,
    pub max_rho: f32,
    pub max_mach: f32,
    /// The lowest-numbered fluid cell out of bounds.
    pub first_bad: Option<u32>,
}

impl Report {
    /// Decodes the reduced words (`None` when no fluid cell contributed).
    pub fn decode(w: [u32; word::WORDS]) -> Option<Report> {
        if w[word::MAX_RHO] == 0 {
            return None;
        }
        Some(Report {
            min_rho: from_key(!w[word::MIN_RHO]),
            max_rho: from_key(w[word::MAX_RHO]),
            max_mach: from_key(w[word::MAX_MACH]),
            first_bad: if w[word::FIRST_BAD] == 0 {
                None
            } else {
                Some(!w[word::FIRST_BAD])
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_preserve_order() {
        let v = [-3.5f32, -1e-30, -0.0, 0.0, 1e-30, 0.9, 1.0, 1.1, 1e30];
        for w in v.windows(2) {
            assert!(key(w[0]) <= key(w[1]), "{} {}", w[0], w[1]);
        }
        for x in v {
            assert_eq!(from_key(key(x)).to_bits(), x.to_bits());
        }
    }

    #[test]
    fn health_bounds_and_nan() {
        let b = Bounds::DEFAULT;
        assert!(healthy(&b, 1.05, [0.1, 0.0, 0.0]));
        assert!(!healthy(&b, 1.2, [0.0; 3]));
        assert!(!healthy(&b, 0.85, [0.0; 3]));
        assert!(!healthy(&b, 1.0, [0.3, 0.0, 0.0]));
        assert!(!healthy(&b, f32::NAN, [0.0; 3]));
        assert!(!healthy(&b, 1.0, [f32::NAN, 0.0, 0.0]));
    }
}
