//! Small vector math: `Vec3` and the scalar helpers that must round the same on CPU and GPU.
//!
//! `sqrt` is IEEE correctly rounded on both sides (`sqrtf32` becomes `sqrt.rn.f32` in PTX, the
//! host uses the SSE/NEON square root), so CPU and GPU results differ only by summation order.

use core::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

/// A 3-vector of `f32`, laid out as three consecutive floats (12 bytes, no padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Vec3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

impl Vec3 {
    pub const ZERO: Vec3 = Vec3 {
        x: 0.0,
        y: 0.0,
        z: 0.0,
    };

    #[inline(always)]
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Vec3 { x, y, z }
    }

    #[inline(always)]
    pub const fn splat(v: f32) -> Self {
        Vec3 { x: v, y: v, z: v }
    }

    #[inline(always)]
    pub fn dot(self, o: Vec3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    #[inline(always)]
    pub fn length_squared(self) -> f32 {
        self.dot(self)
    }

    #[inline(always)]
    pub fn length(self) -> f32 {
        sqrt(self.length_squared())
    }

    /// Component `i` (0 = x, 1 = y, 2 = z); any other index reads z.
    #[inline(always)]
    pub fn axis(self, i: usize) -> f32 {
        match i {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }

    #[inline(always)]
    pub fn to_array(self) -> [f32; 3] {
        [self.x, self.y, self.z]
    }

    #[inline(always)]
    pub fn from_array(a: [f32; 3]) -> Self {
        Vec3::new(a[0], a[1], a[2])
    }

    /// True when every component is finite (not NaN, not infinite).
    #[inline(always)]
    pub fn is_finite(self) -> bool {
        self.x.is_finite() && self.y.is_finite() && self.z.is_finite()
    }
}

impl Add for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn add(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}

impl Sub for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn sub(self, o: Vec3) -> Vec3 {
        Vec3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}

impl Mul<f32> for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn mul(self, s: f32) -> Vec3 {
        Vec3::new(self.x * s, self.y * s, self.z * s)
    }
}

impl Div<f32> for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn div(self, s: f32) -> Vec3 {
        Vec3::new(self.x / s, self.y / s, self.z / s)
    }
}

impl Neg for Vec3 {
    type Output = Vec3;
    #[inline(always)]
    fn neg(self) -> Vec3 {
        Vec3::new(-self.x, -self.y, -self.z)
    }
}

impl AddAssign for Vec3 {
    #[inline(always)]
    fn add_assign(&mut self, o: Vec3) {
        *self = *self + o;
    }
}

impl SubAssign for Vec3 {
    #[inline(always)]
    fn sub_assign(&mut self, o: Vec3) {
        *self = *self - o;
    }
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
        assert_eq!(Vec3::new(3.0, 4.0, 0.0).length(), 5.0);
        assert_eq!(-a, Vec3::new(-1.0, -2.0, -3.0));
    }

    #[test]
    fn ceil_matches_std() {
        for &x in &[0.0f32, 0.25, 1.0, 1.5, 40.0, 40.000004, 399.99] {
            assert_eq!(ceil_nonneg(x), x.ceil(), "ceil({x})");
        }
    }
}
