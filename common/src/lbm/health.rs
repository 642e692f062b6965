//! The run's health check: a reduction over the fields of the fluid cells giving the lowest and
//! highest density, the highest local Mach number, the first cell (lowest number) out of bounds,
//! the sum of `rho - 1` and the number of fluid cells (their mean density).
//!
//! [`word::WORDS`] `u32` words. The first [`word::MAX_WORDS`] are reduced by maximum (so a zeroed
//! buffer is the identity and the GPU combines with `atomicMax`): floats as order-preserving keys
//! ([`key`]), the minimum as the maximum of the complemented key, the first bad cell as the
//! maximum of `!cell`. The last four are two `u64` sums, reduced by wrapping addition: `rho - 1`
//! in fixed point ([`EXCESS_SCALE`]; integers, so the sum is the same in any order, CPU and GPU
//! alike) and the count of fluid cells.
//!
//! A cell is bad when `Ma = |u| / c_s = sqrt(3) |u| > max_mach`, when a value is not finite
//! (every comparison with NaN fails), or when `|rho - 1| > max_density_deviation` outside the
//! [`Bounds::exempt`] boxes. The boxes hold the cells beside an edge where a velocity boundary
//! (a moving wall, an inlet) meets a no-slip wall: the pressure of such a corner is singular
//! (a Stokes corner; its lattice density excursion grows with the resolution), so only its
//! density is left out there; the Mach number and finiteness hold everywhere, and the mean
//! density of all fluid cells stays within `max_density_deviation` of 1 ([`Report::mean_rho`],
//! judged by [`Bounds::mean_healthy`]).

use super::access::Storage;
use super::boundary::{FLUID, GHOST, KIND_MASK};
use super::stream::cell_fields;
use crate::math::sqrt;

/// Most exempt boxes a [`Bounds`] holds: the twelve edges of a box domain.
pub const MAX_EXEMPT: usize = 12;

/// A box of cells `lo <= (x, y, z) < hi` (lattice coordinates). `#[repr(C)]`, 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CellBox {
    pub lo: [u32; 3],
    pub hi: [u32; 3],
}

impl CellBox {
    /// Whether `pos` lies inside.
    #[inline(always)]
    pub fn contains(&self, pos: [u32; 3]) -> bool {
        let mut i = 0;
        while i < 3 {
            if pos[i] < self.lo[i] || pos[i] >= self.hi[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// Bounds of a healthy flow, lattice units. `#[repr(C)]`: part of the kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bounds {
    /// Largest `|rho - 1|` of a cell outside the exempt boxes, and of the mean density.
    pub max_density_deviation: f32,
    /// Largest local Mach number `sqrt(3) |u|`.
    pub max_mach: f32,
    /// How many of `exempt` are in use.
    pub exempt_count: u32,
    pub _pad: u32,
    /// Boxes whose cells the density test leaves out (the Mach and finiteness tests hold).
    pub exempt: [CellBox; MAX_EXEMPT],
}

const _: () = assert!(core::mem::size_of::<Bounds>() == 16 + 24 * MAX_EXEMPT);

impl Bounds {
    /// `|rho - 1| <= 0.1`, `Ma <= 0.5`, no exempt box.
    pub const DEFAULT: Bounds = Bounds::new(0.1, 0.5);

    /// `|rho - 1| <= max_density_deviation`, `Ma <= max_mach`, no exempt box.
    pub const fn new(max_density_deviation: f32, max_mach: f32) -> Bounds {
        Bounds {
            max_density_deviation,
            max_mach,
            exempt_count: 0,
            _pad: 0,
            exempt: [CellBox {
                lo: [0; 3],
                hi: [0; 3],
            }; MAX_EXEMPT],
        }
    }

    /// The exempt boxes in use.
    pub fn exempt_boxes(&self) -> &[CellBox] {
        &self.exempt[..(self.exempt_count as usize).min(MAX_EXEMPT)]
    }

    /// Adds an exempt box; false (and nothing added) when all [`MAX_EXEMPT`] are taken.
    pub fn add_exempt(&mut self, b: CellBox) -> bool {
        let n = self.exempt_count as usize;
        if n >= MAX_EXEMPT {
            return false;
        }
        self.exempt[n] = b;
        self.exempt_count += 1;
        true
    }

    /// Whether the density test leaves the cell at `pos` out.
    #[inline(always)]
    pub fn exempts(&self, pos: [u32; 3]) -> bool {
        let n = if (self.exempt_count as usize) < MAX_EXEMPT {
            self.exempt_count as usize
        } else {
            MAX_EXEMPT
        };
        let mut i = 0;
        while i < n {
            if self.exempt[i].contains(pos) {
                return true;
            }
            i += 1;
        }
        false
    }

    /// These bounds on a slab of a lattice: its local layer 0 along `axis` is the whole
    /// lattice's layer `first`, and it has `layers` layers. Each exempt box is moved and cut to
    /// the slab (a box it misses becomes empty).
    pub fn on_slab(&self, axis: usize, first: i64, layers: u32) -> Bounds {
        let mut b = *self;
        for e in b.exempt.iter_mut() {
            let cut = |v: u32| (v as i64 - first).clamp(0, layers as i64) as u32;
            e.lo[axis] = cut(e.lo[axis]);
            e.hi[axis] = cut(e.hi[axis]);
        }
        b
    }

    /// Whether a mean density lies within the density bound (false for NaN).
    #[inline(always)]
    pub fn mean_healthy(&self, mean_rho: f64) -> bool {
        let d = mean_rho - 1.0;
        d <= self.max_density_deviation as f64 && -d <= self.max_density_deviation as f64
    }
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
    /// Words reduced by maximum (the ones above).
    pub const MAX_WORDS: usize = 4;
    /// Words 4 and 5: the `u64` sum (wrapping; two's complement) of `rho - 1` in fixed point,
    /// low word first.
    pub const EXCESS: usize = 4;
    /// Words 6 and 7: the `u64` count of fluid cells, low word first.
    pub const FLUID: usize = 6;
    /// Words.
    pub const WORDS: usize = 8;
}

/// `rho - 1` is summed as an integer, `round_toward_zero((rho - 1) 2^EXCESS_SCALE)`: exact for
/// densities in `[0.5, 2)`, whose FP32 values are multiples of `2^-24` there.
pub const EXCESS_SCALE: i32 = 24;
/// A cell's `|rho - 1|` counts at most this much into the sum (`2^30` fixed-point units: the
/// sum of `2^32` cells stays within an `i64`).
pub const EXCESS_CLAMP: f32 = 64.0;

/// The fixed-point `rho - 1` of one cell (0 for NaN).
#[inline(always)]
pub fn excess(rho: f32) -> i64 {
    let d = (rho - 1.0).clamp(-EXCESS_CLAMP, EXCESS_CLAMP);
    // `as` saturates and maps NaN to 0, on the CPU and in PTX's `cvt.rzi` alike.
    (d * (1u32 << EXCESS_SCALE) as f32) as i64
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

/// Whether `(rho, u)` of the cell at `pos` lies within `b` (false for non-finite values; the
/// density bound left out inside an exempt box).
#[inline(always)]
pub fn healthy(b: &Bounds, rho: f32, u: [f32; 3], pos: [u32; 3]) -> bool {
    let d = rho - 1.0;
    let density = d <= b.max_density_deviation && -d <= b.max_density_deviation;
    mach(u) <= b.max_mach && (density || (rho.is_finite() && b.exempts(pos)))
}

/// The words of one cell (all 0 for a non-fluid or ghost cell: the identity of the reduction).
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
    let (x, y, z) = a.p.lattice.coords(cell);
    let bad = !healthy(&a.bounds, rho, u, [x, y, z]);
    let e = excess(rho) as u64;
    [
        !key(rho),
        key(rho),
        key(mach(u)),
        if bad { !(cell as u32) } else { 0 },
        e as u32,
        (e >> 32) as u32,
        1,
        0,
    ]
}

/// The `u64` at word `i` (low word first).
#[inline(always)]
pub const fn wide(w: &[u32; word::WORDS], i: usize) -> u64 {
    w[i] as u64 | (w[i + 1] as u64) << 32
}

/// Two partial reductions combined: maximum of the first [`word::MAX_WORDS`], wrapping sums of
/// the two `u64`s.
#[inline(always)]
pub fn combine(a: [u32; word::WORDS], b: [u32; word::WORDS]) -> [u32; word::WORDS] {
    let mut o = [0u32; word::WORDS];
    let mut i = 0;
    while i < word::MAX_WORDS {
        o[i] = if a[i] > b[i] { a[i] } else { b[i] };
        i += 1;
    }
    for i in [word::EXCESS, word::FLUID] {
        let s = wide(&a, i).wrapping_add(wide(&b, i));
        o[i] = s as u32;
        o[i + 1] = (s >> 32) as u32;
    }
    o
}

/// What the reduction found, decoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Report {
    pub min_rho: f32,
    pub max_rho: f32,
    pub max_mach: f32,
    /// The lowest-numbered fluid cell out of bounds.
    pub first_bad: Option<u32>,
    /// The sum of `rho - 1` over the fluid cells, fixed point ([`excess`]).
    pub excess: i64,
    /// Fluid cells counted.
    pub fluid: u64,
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
            excess: wide(&w, word::EXCESS) as i64,
            fluid: wide(&w, word::FLUID),
        })
    }

    /// The mean density of the fluid cells (NaN when a density was NaN: then the minimum or
    /// maximum is NaN too).
    pub fn mean_rho(&self) -> f64 {
        if self.min_rho.is_nan() || self.max_rho.is_nan() {
            return f64::NAN;
        }
        let scale = (1u64 << EXCESS_SCALE) as f64;
        1.0 + self.excess as f64 / scale / self.fluid.max(1) as f64
    }

    /// Whether this report passes `b`: no cell out of bounds and the mean density within it.
    pub fn passes(&self, b: &Bounds) -> bool {
        self.first_bad.is_none() && b.mean_healthy(self.mean_rho())
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
        let at = [5, 5, 0];
        assert!(healthy(&b, 1.05, [0.1, 0.0, 0.0], at));
        assert!(!healthy(&b, 1.2, [0.0; 3], at));
        assert!(!healthy(&b, 0.85, [0.0; 3], at));
        assert!(!healthy(&b, 1.0, [0.3, 0.0, 0.0], at));
        assert!(!healthy(&b, f32::NAN, [0.0; 3], at));
        assert!(!healthy(&b, 1.0, [f32::NAN, 0.0, 0.0], at));
    }

    #[test]
    fn an_exempt_box_leaves_out_the_density_alone() {
        let mut b = Bounds::DEFAULT;
        assert!(b.add_exempt(CellBox {
            lo: [4, 4, 0],
            hi: [6, 6, 1],
        }));
        let (inside, outside) = ([5, 4, 0], [6, 4, 0]);
        assert!(healthy(&b, 1.3, [0.0; 3], inside));
        assert!(healthy(&b, 0.7, [0.0; 3], inside));
        assert!(!healthy(&b, 1.3, [0.0; 3], outside));
        // Mach and finiteness hold inside.
        assert!(!healthy(&b, 1.3, [0.3, 0.0, 0.0], inside));
        assert!(!healthy(&b, f32::NAN, [0.0; 3], inside));
        assert!(!healthy(&b, f32::INFINITY, [0.0; 3], inside));
        assert!(!healthy(&b, 1.0, [0.0, f32::NAN, 0.0], inside));
        for _ in 1..MAX_EXEMPT {
            assert!(b.add_exempt(CellBox::default()));
        }
        assert!(!b.add_exempt(CellBox::default()));
        assert_eq!(b.exempt_boxes().len(), MAX_EXEMPT);
    }

    #[test]
    fn a_slab_sees_its_part_of_each_box() {
        let mut b = Bounds::DEFAULT;
        b.add_exempt(CellBox {
            lo: [0, 5, 0],
            hi: [3, 8, 1],
        });
        b.add_exempt(CellBox {
            lo: [10, 0, 0],
            hi: [13, 3, 1],
        });
        // Local layer 0 is global x = 1 (a ghost layer), 8 layers: global x 1..9.
        let s = b.on_slab(0, 1, 8);
        assert_eq!(
            s.exempt[0],
            CellBox {
                lo: [0, 5, 0],
                hi: [2, 8, 1]
            }
        );
        assert!(s.exempts([1, 6, 0]) && !s.exempts([2, 6, 0]));
        assert_eq!(s.exempt[1].lo[0], s.exempt[1].hi[0]);
        assert!(!s.exempts([7, 1, 0]));
        assert_eq!(s.on_slab(1, 0, 13).exempt[1], s.exempt[1]);
    }

    #[test]
    fn the_mean_density_is_an_exact_sum() {
        let cell = |rho: f32| {
            let e = excess(rho) as u64;
            let mut w = [0u32; word::WORDS];
            w[word::MIN_RHO] = !key(rho);
            w[word::MAX_RHO] = key(rho);
            w[word::EXCESS] = e as u32;
            w[word::EXCESS + 1] = (e >> 32) as u32;
            w[word::FLUID] = 1;
            w
        };
        let rhos = [1.0f32, 0.75, 1.25, 1.0 + 3.0 * f32::EPSILON, 0.5];
        let fwd = rhos
            .iter()
            .map(|&r| cell(r))
            .fold([0; word::WORDS], combine);
        let rev = rhos
            .iter()
            .rev()
            .map(|&r| cell(r))
            .fold([0; word::WORDS], combine);
        assert_eq!(fwd, rev);
        let r = Report::decode(fwd).unwrap();
        assert_eq!(r.fluid, 5);
        assert_eq!((r.min_rho, r.max_rho), (0.5, 1.25));
        let want = rhos.iter().map(|&r| r as f64 - 1.0).sum::<f64>() / 5.0 + 1.0;
        assert_eq!(r.mean_rho(), want);
        let b = Bounds::DEFAULT;
        assert!(r.passes(&b));
        let low = Report::decode(cell(0.8)).unwrap();
        assert!((low.mean_rho() - 0.8).abs() < 1e-7 && !low.passes(&b));
        assert!(Report::decode(cell(f32::NAN)).unwrap().mean_rho().is_nan());
        assert_eq!(excess(f32::NAN), 0);
        assert_eq!(excess(1e30), (EXCESS_CLAMP as i64) << EXCESS_SCALE);
    }
}
