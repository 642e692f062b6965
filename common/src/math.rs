//! Small vector math: `Vec3` (glam's) and the scalar helpers that must round the same on CPU and GPU.
//!
//! `sqrt` is IEEE correctly rounded on both sides (`sqrtf32` becomes `sqrt.rn.f32` in PTX, the
//! host uses the SSE/NEON square root), and so is `fma` (`fma.rn.f32` in PTX, `f32::mul_add` on the
//! host), so CPU and GPU results differ only by summation order.

pub use glam::Vec3;

// The device layouts (`flock::Body`, the kernels' buffers) rely on glam's `Vec3` being three
// consecutive floats (not `Vec3A`, 16 bytes).
const _: () = assert!(core::mem::size_of::<Vec3>() == 12 && core::mem::align_of::<Vec3>() == 4);

/// Length of `v` with the correctly rounded square root (`sqrt.rn.f32` on the GPU). Use it,
/// not glam's `length()` / `normalize()`: those take the root through libm (software on the GPU).
#[inline(always)]
pub fn length(v: Vec3) -> f32 {
    sqrt(v.length_squared())
}

/// IEEE correctly rounded square root, identical on host and device.
#[inline(always)]
pub fn sqrt(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        #[allow(unused_unsafe)]
        // SAFETY: sqrtf32 is defined for every f32 input (NaN for negatives).
        unsafe {
            core::intrinsics::sqrtf32(x)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::primitive::f32::sqrt(x)
    }
}

/// `a * b + c` rounded once (IEEE fused multiply-add), identical on host and device: the
/// hardware `fma.rn.f32` on the GPU, `f32::mul_add` on the host. The compilers never fuse a
/// multiply and an add by themselves (Rust forbids contraction, and the NVPTX backend emits
/// `mul.rn` / `add.rn`, which ptxas may not contract), so this is the only way to get an `fma`.
///
/// On x86-64 `f32::mul_add` is one `vfmadd` instruction only where the code is compiled with
/// the `fma` target feature (the CPU fluid backend compiles its cell loop that way when the CPU
/// has it); elsewhere it calls the C library's `fmaf`, correctly rounded too but slower.
#[inline(always)]
pub fn fma(a: f32, b: f32, c: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        #[allow(unused_unsafe)]
        // SAFETY: fmaf32 is defined for every f32 input.
        unsafe {
            core::intrinsics::fmaf32(a, b, c)
        }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::primitive::f32::mul_add(a, b, c)
    }
}

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
extern "C" {
    #[link_name = "llvm.nvvm.sqrt.approx.f"]
    fn nvvm_sqrt_approx(x: f32) -> f32;
}

/// A square root that may be off by a few units in the last place (the GPU's one-instruction
/// `sqrt.approx`; the exact one on the host): for bounds that get a margin anyway.
#[inline(always)]
pub fn sqrt_approx(x: f32) -> f32 {
    #[cfg(target_arch = "nvptx64")]
    {
        // SAFETY: sqrt.approx.f32 is defined for every f32 input.
        unsafe { nvvm_sqrt_approx(x) }
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        std::primitive::f32::sqrt(x)
    }
}

/// `ceil` for non-negative finite inputs below 2^31, without libm (works in `no_std` kernels).
#[inline(always)]
pub fn ceil_nonneg(x: f32) -> f32 {
    let t = x as i32 as f32;
    if t < x {
        t + 1.0
    } else {
        t
    }
}

/// `floor` as `i32` without libm (works in `no_std` kernels; saturating outside the `i32` range,
/// like `as`; NaN gives 0).
#[inline(always)]
pub fn floor_i32(x: f32) -> i32 {
    let t = x as i32;
    if (t as f32) > x {
        t - 1
    } else {
        t
    }
}

/// `(sin x, cos x)` from basic arithmetic only, so the CPU and the GPU give the same bits
/// (no libm on either side): reduction by `pi / 2` in three parts (Cody-Waite), then Taylor
/// polynomials on `[-pi/4, pi/4]`. Accurate to a few units in the last place for `|x|` up to
/// about `1e4`; for initial conditions, not hot loops.
pub fn sin_cos(x: f32) -> (f32, f32) {
    const P1: f32 = 1.570_312_5;
    const P2: f32 = 4.837_513e-4;
    const P3: f32 = 7.549_79e-8;
    let t = x * core::f32::consts::FRAC_2_PI;
    let j = if t >= 0.0 {
        (t + 0.5) as i32
    } else {
        (t - 0.5) as i32
    };
    let jf = j as f32;
    let r = ((x - jf * P1) - jf * P2) - jf * P3;
    let r2 = r * r;
    let s = r + r
        * r2
        * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362_880.0))));
    let c = 1.0
        + r2 * (-0.5
            + r2 * (1.0 / 24.0
                + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40_320.0 + r2 * (-1.0 / 3_628_800.0)))));
    match j & 3 {
        0 => (s, c),
        1 => (c, -s),
        2 => (-s, -c),
        _ => (-c, s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_ops() {
        let a = Vec3::new(1.0, 2.0, 3.0);
        let b = Vec3::new(-1.0, 0.5, 2.0);
        assert_eq!(a + b, Vec3::new(0.0, 2.5, 5.0));
        assert_eq!(a - b, Vec3::new(2.0, 1.5, 1.0));
        assert_eq!(a * 2.0, Vec3::new(2.0, 4.0, 6.0));
        assert_eq!(a.dot(b), -1.0 + 1.0 + 6.0);
        assert_eq!(length(Vec3::new(3.0, 4.0, 0.0)), 5.0);
        assert_eq!(-a, Vec3::new(-1.0, -2.0, -3.0));
    }

    #[test]
    fn fma_rounds_once() {
        // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24: the product alone rounds the 2^-24 away (a tie to
        // even), the fused form keeps it against -1.
        let a = 1.0 + f32::EPSILON * 2048.0;
        assert_eq!(a * a - 1.0, 2.0f32.powi(-11));
        assert_eq!(fma(a, a, -1.0), 2.0f32.powi(-11) + 2.0f32.powi(-24));
        // Exact cases and the special values.
        assert_eq!(fma(3.0, 0.5, 0.25), 1.75);
        assert_eq!(fma(-2.0, 4.0, 8.0), 0.0);
        assert!(fma(f32::INFINITY, 0.0, 1.0).is_nan());
        assert_eq!(fma(f32::MAX, 2.0, -f32::MAX), f32::MAX);
        // Against the exact result rounded once: the f64 product of two f32 is exact, and for
        // these magnitudes the f64 sum is exact too.
        for &(a, b, c) in &[
            (0.1f32, 0.3f32, -0.03f32),
            (1.7, -0.02, 0.034),
            (1e-3, 3e3, -3.0),
        ] {
            let exact = a as f64 * b as f64 + c as f64;
            assert_eq!(fma(a, b, c), exact as f32, "fma({a}, {b}, {c})");
        }
    }

    #[test]
    fn ceil_matches_std() {
        for &x in &[0.0f32, 0.25, 1.0, 1.5, 40.0, 40.000004, 399.99] {
            assert_eq!(ceil_nonneg(x), x.ceil(), "ceil({x})");
        }
    }

    #[test]
    fn sin_cos_is_close_to_std() {
        let mut worst = 0f64;
        let mut x = -200.0f32;
        while x < 200.0 {
            let (s, c) = sin_cos(x);
            let (es, ec) = ((x as f64).sin(), (x as f64).cos());
            worst = worst.max((s as f64 - es).abs()).max((c as f64 - ec).abs());
            x += 0.0137;
        }
        assert!(worst < 4e-7, "worst error {worst}");
    }
}
