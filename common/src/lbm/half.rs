//! 16-bit storage of populations, arithmetic in FP32: the conversions between `f32` and the two
//! 16-bit formats (after FluidX3D's FP16S and FP16C), bit for bit the same on the CPU and the GPU.
//! The storage layer stores the deviation from the lattice weight, `f_q - w_q`, in them; these
//! functions convert plain numbers and know nothing of the weights.
//!
//! # FP16S: IEEE 754 binary16
//!
//! ```text
//! bit  15   14..10   9..0
//!      s    e (5)    m (10)
//! e = 0        : (-1)^s 2^-14 (m / 1024)          zero (m = 0) and subnormals
//! e = 1..=30   : (-1)^s 2^(e-15) (1 + m / 1024)   normals, largest 65504
//! e = 31, m = 0: (-1)^s inf
//! e = 31, m > 0: NaN
//! ```
//!
//! The storage layer stores `(f - w_q) * FP16S_SCALE` and multiplies by [`FP16S_INV_SCALE`] after
//! loading: deviations `|f - w_q| < 2 - 2^-11` (65520 scaled) stay finite, the largest stored
//! being `2 - 2^-10` (65504); larger ones become `±inf`. [`f32_to_f16`] and [`f16_to_f32`] are
//! the plain binary16 conversions: on the GPU the hardware's `cvt.rn.f16.f32` and `cvt.f32.f16`,
//! elsewhere [`f32_to_f16_soft`] and [`f16_to_f32_soft`] (integer operations only, also built for
//! the GPU so a kernel can compare them with the hardware), which give the same bits for every
//! input, NaNs included:
//!
//! - `f32 -> f16`: round to nearest, ties to even; subnormal results rounded the same way; `|x| >=
//!   65520` gives `±inf`; every NaN gives `0x7FFF` (sign and payload dropped).
//! - `f16 -> f32`: exact; every NaN code gives `0x7FFF_FFFF` (sign and payload dropped).
//!
//! The NaN rules are the device's canonical NaNs: the PTX ISA's `cvt` says NaN results (of
//! `.relu`) "are converted to canonical NaN", and CUDA's `cuda_fp16.hpp`, whose host emulations of
//! `__float2half_rn` and `__half2float` stand in for exactly `cvt.rn.f16.f32` and `cvt.f32.f16`,
//! returns `0x7FFF` for every NaN `f32` and `0x7FFF_FFFF` for every NaN `f16`. The `check_half`
//! kernel (`host/tests/gpu_half.rs`) compares the hardware with the soft forms over all `2^32`
//! inputs.
//!
//! # FP16C: 1 sign, 4 exponent, 11 mantissa bits
//!
//! ```text
//! bit  15   14..11   10..0
//!      s    e (4)    m (11)
//! e = 0      : (-1)^s 2^-14 (m / 2048)          zero (m = 0) and subnormals, step 2^-25
//! e = 1..=15 : (-1)^s 2^(e-15) (1 + m / 2048)   normals, largest 2 - 2^-11 (0x7FFF)
//! ```
//!
//! No infinity or NaN codes: every one of the 65536 codes is a number (`0x8000` is `-0`, kept as
//! such, so every code survives `f16c_to_f32` then `f32_to_f16c`). The storage layer stores
//! `f - w_q` unscaled. [`f32_to_f16c`] rounds to nearest, ties to even; a value whose rounded
//! magnitude exceeds `2 - 2^-11` (infinity included) saturates to `±(2 - 2^-11)` (`0x7FFF` /
//! `0xFFFF`); NaN encodes as `+(2 - 2^-11)` (`0x7FFF`), so each NaN population of a blown-up cell
//! reads back as `w_q + 2 - 2^-11` and lifts the cell's density by about 2, far outside the
//! health check's density bounds ([`super::health`]), which stops the run (an FP16S NaN stays a
//! NaN, which the check catches as not finite). [`f16c_to_f32`] is exact.
//!
//! FP16C has no hardware form; one code runs on both sides, written with selects rather than
//! branches (it runs 54 times per cell update). Besides integer operations it uses one `f32`
//! addition in the encoder (rounds the subnormal range, to nearest even) and one exact
//! multiplication in the decoder (scales an `f32` subnormal); IEEE 754 defines both bit for bit,
//! and neither the host nor the kernels flush subnormals (`add.rn.f32` / `mul.rn.f32`, no `.ftz`).
//! [`f32_to_f16c_int`] and [`f16c_to_f32_int`] are integer-only forms of the same functions, the
//! reference the tests and `check_half` compare against.
//!
//! PTX cost (sm_90, LLVM 22, read off a kernel converting one loaded value): [`f32_to_f16c`] is 16
//! instructions from the `f32` register to the 16-bit code (`abs`, `add.rn.f32` and an integer
//! subtraction for the subnormal range; `bfe`, two adds and a shift for the normal range; a
//! select between them, `min` to saturate, three for the sign, a select for NaN, the narrowing
//! `cvt`), no branch; [`f16c_to_f32`] is 4 (`shl`, `shr.s32`, `and`, `mul.rn.f32`). The integer
//! encoder takes about 27 and a branch. FP16S is one `cvt` each way.

use crate::kernel::DevSliceMut;

/// FP16S stores `(f - w_q) * FP16S_SCALE`.
pub const FP16S_SCALE: f32 = 32768.0;
/// `1 / FP16S_SCALE`: loaded FP16S values are multiplied by it.
pub const FP16S_INV_SCALE: f32 = 1.0 / 32768.0;

/// The binary16 NaN that every NaN `f32` converts to.
pub const F16_NAN: u16 = 0x7FFF;
/// The bits of the `f32` NaN that every binary16 NaN converts to.
pub const F32_NAN_OF_F16: u32 = 0x7FFF_FFFF;
/// The largest FP16C code, `2 - 2^-11`: where large values saturate and NaN lands.
pub const F16C_MAX: u16 = 0x7FFF;

/// `2^112`: moves an exponent biased by 15 to one biased by 127.
const TWO_POW_112: f32 = f32::from_bits((127 + 112) << 23);
/// `f32` bits of the smallest normal binary16 and FP16C magnitude, `2^-14`.
const MIN_NORMAL_BITS: u32 = 113 << 23;
/// The difference of the exponent biases, 127 - 15, in place in `f32` bits.
const REBIAS: u32 = 112 << 23;

/// `v >> s`, rounded to nearest, ties to even (`1 <= s <= 31`, `v < 2^31`).
#[inline(always)]
const fn shr_rne(v: u32, s: u32) -> u32 {
    (v + (1 << (s - 1)) - 1 + ((v >> s) & 1)) >> s
}

/// `f32 -> binary16` (FP16S): round to nearest, ties to even; overflow to `±inf`, NaN to
/// [`F16_NAN`]. `cvt.rn.f16.f32` on the GPU, [`f32_to_f16_soft`] elsewhere (the same bits).
#[inline(always)]
pub fn f32_to_f16(x: f32) -> u16 {
    #[cfg(target_arch = "nvptx64")]
    {
        let h: u16;
        // SAFETY: a register conversion, defined for every input.
        unsafe {
            core::arch::asm!("cvt.rn.f16.f32 {h}, {x};", h = out(reg16) h, x = in(reg32) x,
                options(pure, nomem, nostack));
        }
        h
    }
    #[cfg(not(target_arch = "nvptx64"))]
    f32_to_f16_soft(x)
}

/// `binary16 -> f32` (FP16S), exact; NaN codes to [`F32_NAN_OF_F16`]. `cvt.f32.f16` on the GPU,
/// [`f16_to_f32_soft`] elsewhere (the same bits).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let x: f32;
        // SAFETY: a register conversion, defined for every input.
        unsafe {
            core::arch::asm!("cvt.f32.f16 {x}, {h};", x = out(reg32) x, h = in(reg16) h,
                options(pure, nomem, nostack));
        }
        x
    }
    #[cfg(not(target_arch = "nvptx64"))]
    f16_to_f32_soft(h)
}

/// [`f32_to_f16`] in integer operations (every target): the bits of `cvt.rn.f16.f32`.
#[inline(always)]
pub const fn f32_to_f16_soft(x: f32) -> u16 {
    let b = x.to_bits();
    let sign = (b >> 16) & 0x8000;
    let a = b & 0x7FFF_FFFF;
    // |x| >= 2^-14: rebias the exponent and round the 23-bit mantissa to 10 bits; a carry steps
    // the exponent, up to 0x7C00 (inf) from 65520 on. Rounding before rebiasing keeps the sum
    // below 2^32; below 2^-14 the difference wraps and is not used.
    let normal = (a + 0xFFF + ((a >> 13) & 1)).wrapping_sub(REBIAS) >> 13;
    // |x| < 2^-14: the code is |x| / 2^-24 = mantissa * 2^(e - 126), rounded. Shifts past 25
    // give 0 like 25 does (the mantissa is below 2^24), and f32 subnormals (e = 0, wrong
    // implicit bit) land there too.
    let e = a >> 23;
    let shift = clamp(126u32.wrapping_sub(e), 14, 25);
    let subnormal = shr_rne((a & 0x7F_FFFF) | 0x80_0000, shift);
    let m = if a < MIN_NORMAL_BITS {
        subnormal
    } else {
        normal
    };
    let m = if m > 0x7C00 { 0x7C00 } else { m };
    if a > 0x7F80_0000 {
        F16_NAN
    } else {
        (sign | m) as u16
    }
}

/// [`f16_to_f32`] in integer operations (every target): the bits of `cvt.f32.f16`.
#[inline(always)]
pub const fn f16_to_f32_soft(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let a = h & 0x7FFF;
    let normal = (a << 13) + REBIAS;
    // Subnormal a * 2^-24 with its leading one at bit p = 31 - lz: exponent p - 24 + 127 =
    // 134 - lz, less the one that the leading one adds once shifted to bit 23.
    let lz = a.leading_zeros();
    let subnormal = if a == 0 {
        0
    } else {
        (a << (lz - 8)) + ((133 - lz) << 23)
    };
    let bits = if a >= 0x7C01 {
        F32_NAN_OF_F16
    } else if a == 0x7C00 {
        sign | 0x7F80_0000
    } else if a < 0x400 {
        sign | subnormal
    } else {
        sign | normal
    };
    f32::from_bits(bits)
}

/// `f32 -> FP16C`: round to nearest, ties to even; saturating at `±(2 - 2^-11)`; NaN to
/// [`F16C_MAX`]. The same bits on every target (see the module doc for the one `f32` addition).
#[inline(always)]
pub fn f32_to_f16c(x: f32) -> u16 {
    let b = x.to_bits();
    // On the GPU this mask becomes `abs.f32`, whose NaN result PTX leaves unspecified: the bits of
    // any NaN still exceed 0x7F80_0000 as an unsigned number, which is all that reads them.
    let a = b & 0x7FFF_FFFF;
    // |x| >= 2^-14: rebias and round the mantissa to 11 bits (as in `f32_to_f16_soft`).
    let normal = (a + 0x7FF + ((a >> 12) & 1)).wrapping_sub(REBIAS) >> 12;
    // |x| < 2^-14: |x| + 0.25 rounds |x| to a multiple of 2^-25, the ulp of 0.25 and the subnormal
    // step, ties to even; the sum's bits above 0.25's are the code (2^-14 gives 0x800, the
    // smallest normal). Not used (and wrapping) above 2^-14.
    let subnormal = (f32::from_bits(a) + 0.25)
        .to_bits()
        .wrapping_sub(0.25f32.to_bits());
    let m = if a < MIN_NORMAL_BITS {
        subnormal
    } else {
        normal
    };
    // Infinity and NaN come out of `normal` far above the largest code.
    let m = if m > F16C_MAX as u32 {
        F16C_MAX as u32
    } else {
        m
    };
    if a > 0x7F80_0000 {
        F16C_MAX
    } else {
        (((b >> 16) & 0x8000) | m) as u16
    }
}

/// `FP16C -> f32`, exact. The same bits on every target (one exact `f32` multiplication).
#[inline(always)]
pub fn f16c_to_f32(h: u16) -> f32 {
    // Sign to bit 31, exponent and mantissa to bits 26..12: an f32 whose exponent is biased by
    // 15 instead of 127 (an f32 subnormal for e = 0, which the same scaling makes exact).
    let bits = ((((h as u32) << 16) as i32) >> 4) as u32 & 0x87FF_F000;
    f32::from_bits(bits) * TWO_POW_112
}

/// [`f32_to_f16c`] in integer operations only (the reference of the tests and of `check_half`).
#[inline(always)]
pub const fn f32_to_f16c_int(x: f32) -> u16 {
    let b = x.to_bits();
    let a = b & 0x7FFF_FFFF;
    let normal = (a + 0x7FF + ((a >> 12) & 1)).wrapping_sub(REBIAS) >> 12;
    // |x| / 2^-25 = mantissa * 2^(e - 125), rounded (as in `f32_to_f16_soft`).
    let e = a >> 23;
    let shift = clamp(125u32.wrapping_sub(e), 13, 25);
    let subnormal = shr_rne((a & 0x7F_FFFF) | 0x80_0000, shift);
    let m = if a < MIN_NORMAL_BITS {
        subnormal
    } else {
        normal
    };
    let m = if m > F16C_MAX as u32 {
        F16C_MAX as u32
    } else {
        m
    };
    if a > 0x7F80_0000 {
        F16C_MAX
    } else {
        (((b >> 16) & 0x8000) | m) as u16
    }
}

/// [`f16c_to_f32`] in integer operations only (the reference of the tests and of `check_half`).
#[inline(always)]
pub const fn f16c_to_f32_int(h: u16) -> f32 {
    let h = h as u32;
    let sign = (h & 0x8000) << 16;
    let a = h & 0x7FFF;
    let normal = (a << 12) + REBIAS;
    // Subnormal a * 2^-25, leading one at bit p = 31 - lz: exponent p - 25 + 127 = 133 - lz, less
    // the leading one's carry (as in `f16_to_f32_soft`).
    let lz = a.leading_zeros();
    let subnormal = if a == 0 {
        0
    } else {
        (a << (lz - 8)) + ((132 - lz) << 23)
    };
    f32::from_bits(sign | if a < 0x800 { subnormal } else { normal })
}

/// `v` limited to `lo..=hi` (`Ord::clamp` is not `const`).
#[inline(always)]
const fn clamp(v: u32, lo: u32, hi: u32) -> u32 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// `check_half`: one thread per `f32` bit pattern `start + i` (`i < count`), comparing the
/// conversions with their references ([`check_input`]). `out` holds [`CheckHalf::OUT_WORDS`]
/// words, two per test of [`CheckHalf::TESTS`]: at `2 t` the number of failures of test `t`
/// (atomic add), at `2 t + 1` the smallest failing input (atomic min). The host initialises it
/// with [`CheckHalf::OUT_INIT`] and launches `count` threads; `start + count <= 2^32`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct CheckHalf {
    /// First input bit pattern.
    pub start: u64,
    /// Inputs, one thread each.
    pub count: u64,
    pub out: DevSliceMut<u32>,
}

impl CheckHalf {
    /// What each bit of [`check_input`]'s result tests. Tests on a 16-bit code run for the
    /// inputs below `2^16` only, whose value is the code (one run per code).
    pub const TESTS: [&'static str; 5] = [
        "f32 -> f16: cvt.rn.f16.f32 vs f32_to_f16_soft",
        "f16 -> f32: cvt.f32.f16 vs f16_to_f32_soft",
        "f32 -> FP16C: f32_to_f16c vs f32_to_f16c_int",
        "FP16C -> f32: f16c_to_f32 vs f16c_to_f32_int",
        "FP16C round trip: f32_to_f16c(f16c_to_f32(h)) == h",
    ];
    /// Words of `out`.
    pub const OUT_WORDS: usize = 2 * Self::TESTS.len();
    /// `out` before the first launch: no failures, smallest failing input `u32::MAX`.
    pub const OUT_INIT: [u32; Self::OUT_WORDS] = {
        let mut w = [0; Self::OUT_WORDS];
        let mut t = 0;
        while t < Self::TESTS.len() {
            w[2 * t + 1] = u32::MAX;
            t += 1;
        }
        w
    };
}

/// The tests of [`CheckHalf::TESTS`] that input bit pattern `i` fails: bit `t` for test `t`.
/// On the host the hardware forms are the soft ones, so only the FP16C tests can fail there.
#[inline(always)]
pub fn check_input(i: u32) -> u32 {
    let x = f32::from_bits(i);
    let mut fail = 0;
    if f32_to_f16(x) != f32_to_f16_soft(x) {
        fail |= 1 << 0;
    }
    if f32_to_f16c(x) != f32_to_f16c_int(x) {
        fail |= 1 << 2;
    }
    if i < 0x1_0000 {
        let h = i as u16;
        if f16_to_f32(h).to_bits() != f16_to_f32_soft(h).to_bits() {
            fail |= 1 << 1;
        }
        let y = f16c_to_f32(h);
        if y.to_bits() != f16c_to_f32_int(h).to_bits() {
            fail |= 1 << 3;
        }
        if f32_to_f16c(y) != h {
            fail |= 1 << 4;
        }
    }
    fail
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// Calls `ok` on every `u32` (two threads): the number of failures and the smallest failing
    /// input.
    fn every_u32(ok: impl Fn(u32) -> bool + Sync) -> (u64, Option<u32>) {
        const THREADS: u64 = 2;
        let per = (1u64 << 32) / THREADS;
        std::thread::scope(|s| {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let ok = &ok;
                    s.spawn(move || {
                        let (mut n, mut first) = (0u64, None);
                        for i in t * per..(t + 1) * per {
                            if !ok(i as u32) {
                                n += 1;
                                first.get_or_insert(i as u32);
                            }
                        }
                        (n, first)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().expect("worker thread"))
                .fold((0, None), |(n, f), (m, g)| (n + m, f.or(g)))
        })
    }

    fn assert_none_fail(what: &str, (n, first): (u64, Option<u32>)) {
        assert_eq!(n, 0, "{what}: {n} failures, first input {first:#010x?}");
    }

    /// The next f32 above `x > 0` (`f32::next_up` is newer than the MSRV).
    fn next_up(x: f32) -> f32 {
        f32::from_bits(x.to_bits() + 1)
    }

    /// The next f32 below `x > 0`.
    fn next_down(x: f32) -> f32 {
        f32::from_bits(x.to_bits() - 1)
    }

    fn pow2(e: i32) -> f64 {
        f64::from_bits(((1023 + e) as u64) << 52)
    }

    /// FP16C of `x` computed in f64: the magnitude divided by its binade's step, rounded to
    /// nearest even, then saturated.
    fn f16c_reference(x: f32) -> u16 {
        if x.is_nan() {
            return 0x7FFF;
        }
        let sign = if x.is_sign_negative() { 0x8000 } else { 0 };
        let a = (x as f64).abs();
        let code = if a.is_infinite() {
            u32::MAX
        } else if a < pow2(-14) {
            (a / pow2(-25)).round_ties_even() as u32
        } else {
            let e = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023;
            let steps = (a / pow2(e - 11)).round_ties_even() as u32;
            (((e + 15) as u32) << 11) + steps - 2048
        };
        (sign | code.min(0x7FFF)) as u16
    }

    /// The value of an FP16C code, from the format's definition.
    fn f16c_value(h: u16) -> f64 {
        let s = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
        let e = ((h >> 11) & 0xF) as i32;
        let m = (h & 0x7FF) as f64 / 2048.0;
        s * if e == 0 {
            pow2(-14) * m
        } else {
            pow2(e - 15) * (1.0 + m)
        }
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "2^32 inputs: run with --release")]
    fn f32_to_f16_matches_the_half_crate_for_every_f32() {
        assert_none_fail(
            "f32_to_f16",
            every_u32(|i| {
                let x = f32::from_bits(i);
                let want = if x.is_nan() {
                    F16_NAN
                } else {
                    ::half::f16::from_f32(x).to_bits()
                };
                f32_to_f16(x) == want
            }),
        );
    }

    #[test]
    #[cfg_attr(debug_assertions, ignore = "2^32 inputs: run with --release")]
    fn f32_to_f16c_matches_the_f64_reference_for_every_f32() {
        assert_none_fail(
            "f32_to_f16c",
            every_u32(|i| {
                let x = f32::from_bits(i);
                let want = f16c_reference(x);
                f32_to_f16c(x) == want && f32_to_f16c_int(x) == want
            }),
        );
    }

    #[test]
    fn every_f16_code_converts_exactly() {
        for h in 0..=u16::MAX {
            let got = f16_to_f32(h).to_bits();
            let r = ::half::f16::from_bits(h);
            if r.is_nan() {
                assert_eq!(got, F32_NAN_OF_F16, "{h:#06x}");
            } else {
                assert_eq!(got, r.to_f32().to_bits(), "{h:#06x}");
                assert_eq!(f32_to_f16(f32::from_bits(got)), h, "{h:#06x} round trip");
            }
        }
    }

    #[test]
    fn f16_rounding_overflow_and_nan() {
        let sub = pow2(-24) as f32;
        assert_eq!(f32_to_f16(65504.0), 0x7BFF);
        assert_eq!(f32_to_f16(65519.996), 0x7BFF);
        assert_eq!(f32_to_f16(65520.0), 0x7C00);
        assert_eq!(f32_to_f16(-1e30), 0xFC00);
        assert_eq!(f32_to_f16(f32::NEG_INFINITY), 0xFC00);
        assert_eq!(f32_to_f16(sub * 0.5), 0x0000, "tie to even: 0");
        assert_eq!(f32_to_f16(next_up(sub * 0.5)), 0x0001);
        assert_eq!(f32_to_f16(sub * 1.5), 0x0002, "tie to even: 2");
        assert_eq!(f32_to_f16(-sub * 2.5), 0x8002, "tie to even: 2");
        assert_eq!(f32_to_f16(f32::from_bits(1)), 0x0000);
        assert_eq!(f32_to_f16(-f32::from_bits(1)), 0x8000);
        assert_eq!(f32_to_f16(1.0 + pow2(-11) as f32), 0x3C00, "tie to even: 1");
        assert_eq!(f32_to_f16(1.0 + 3.0 * pow2(-11) as f32), 0x3C02);
        for nan in [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::from_bits(0xFFBF_FFFF),
        ] {
            assert_eq!(f32_to_f16(nan), F16_NAN, "{:#010x}", nan.to_bits());
        }
        assert_eq!(f16_to_f32(0xFE01).to_bits(), F32_NAN_OF_F16);
        assert_eq!(FP16S_SCALE * FP16S_INV_SCALE, 1.0);
        // Scaled deviations stay finite below 65520 / 32768 = 2 - 2^-11 (the largest, 65504,
        // is 2 - 2^-10 unscaled).
        assert_eq!(
            f32_to_f16(next_down(2.0 - pow2(-11) as f32) * FP16S_SCALE),
            0x7BFF
        );
        assert_eq!(f32_to_f16((2.0 - pow2(-11) as f32) * FP16S_SCALE), 0x7C00);
    }

    #[test]
    fn every_f16c_code_decodes_to_its_value_and_round_trips() {
        for h in 0..=u16::MAX {
            let x = f16c_to_f32(h);
            assert_eq!(x as f64, f16c_value(h), "{h:#06x}");
            assert_eq!(x.is_sign_negative(), h & 0x8000 != 0, "{h:#06x} sign");
            assert_eq!(
                x.to_bits(),
                f16c_to_f32_int(h).to_bits(),
                "{h:#06x} integer form"
            );
            assert_eq!(f32_to_f16c(x), h, "{h:#06x} round trip");
            assert_eq!(check_input(h as u32), 0, "{h:#06x} check_input");
        }
        assert_eq!(f16c_to_f32(F16C_MAX) as f64, 2.0 - pow2(-11));
        assert_eq!(f16c_to_f32(0x0001) as f64, pow2(-25));
        assert_eq!(f16c_to_f32(0x0800) as f64, pow2(-14));
    }

    #[test]
    fn f16c_decoding_is_strictly_monotonic_and_symmetric() {
        for h in 0..0x7FFF_u16 {
            assert!(f16c_to_f32(h) < f16c_to_f32(h + 1), "{h:#06x}");
            assert_eq!(f16c_to_f32(h | 0x8000), -f16c_to_f32(h), "{h:#06x}");
        }
    }

    #[test]
    fn f16c_encoding_is_monotonic() {
        // Every f32 from +0 to 4 in increasing order (bit order is value order there).
        let mut last = 0;
        for b in 0..=4.0f32.to_bits() {
            let h = f32_to_f16c(f32::from_bits(b));
            assert!(h >= last, "{b:#010x}: {h:#06x} after {last:#06x}");
            last = h;
        }
        assert_eq!(last, F16C_MAX);
    }

    #[test]
    fn f16c_midpoints_round_to_even() {
        for k in 0..0x7FFF_u16 {
            let (lo, hi) = (f16c_value(k), f16c_value(k + 1));
            // 13 significant bits at most: exact in f32.
            let mid = ((lo + hi) / 2.0) as f32;
            assert_eq!(mid as f64, (lo + hi) / 2.0, "{k:#06x}");
            let even = if k % 2 == 0 { k } else { k + 1 };
            assert_eq!(f32_to_f16c(mid), even, "{k:#06x} tie");
            assert_eq!(f32_to_f16c(-mid), even | 0x8000, "{k:#06x} negative tie");
            assert_eq!(f32_to_f16c(next_down(mid)), k, "{k:#06x} below");
            assert_eq!(f32_to_f16c(next_up(mid)), k + 1, "{k:#06x} above");
        }
    }

    #[test]
    fn f16c_saturates_and_encodes_nan_as_max() {
        let max = f16c_to_f32(F16C_MAX);
        // Halfway to 2 would round to 2 (even), beyond the largest code.
        let mid = (2.0 - pow2(-12)) as f32;
        for (x, want) in [
            (max, 0x7FFF),
            (next_up(max), 0x7FFF),
            (mid, 0x7FFF),
            (2.0, 0x7FFF),
            (1e30, 0x7FFF),
            (f32::INFINITY, 0x7FFF),
            (-mid, 0xFFFF),
            (f32::MIN, 0xFFFF),
            (f32::NEG_INFINITY, 0xFFFF),
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (pow2(-26) as f32, 0x0000),
            (next_up(pow2(-26) as f32), 0x0001),
            (f32::from_bits(1), 0x0000),
        ] {
            assert_eq!(f32_to_f16c(x), want, "{x:e}");
        }
        for nan in [
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001),
            f32::from_bits(0xFF80_0001),
            f32::from_bits(0xFFFF_FFFF),
        ] {
            assert_eq!(f32_to_f16c(nan), F16C_MAX, "{:#010x}", nan.to_bits());
            assert_eq!(f32_to_f16c_int(nan), F16C_MAX, "{:#010x}", nan.to_bits());
        }
    }

    #[test]
    fn check_half_layout() {
        assert_eq!(core::mem::size_of::<CheckHalf>(), 32);
        assert_eq!(CheckHalf::OUT_INIT[0], 0);
        assert_eq!(CheckHalf::OUT_INIT[CheckHalf::OUT_WORDS - 1], u32::MAX);
    }
}
