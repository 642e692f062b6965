//! The initial state of a lattice, evaluated per cell where the populations live (a kernel on
//! the GPU, the same function on the CPU): no lattice-sized field travels from the host.

use crate::math::sin_cos;

/// Initial density and velocity of the fluid cells (lattice units): a uniform velocity plus an
/// optional Taylor-Green vortex in the x-y plane,
/// `ux += A sin(kx') cos(ky')`, `uy -= A cos(kx') sin(ky')`,
/// `rho = 1 - 3/4 A^2 (cos 2kx' + cos 2ky')` (the exact solution's pressure), with
/// `x' = x - offset_x`, `y' = y - offset_y` in cells. Other cells start at rest with density 1.
/// `#[repr(C)]`: part of the kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Initial {
    pub velocity: [f32; 3],
    /// Vortex amplitude `A` (0: no vortex).
    pub amplitude: f32,
    /// Wavenumber `k` (radians per cell).
    pub k: f32,
    /// Phase origin of the vortex along x and y (cells).
    pub offset: [f32; 2],
    pub _pad: u32,
}

impl Initial {
    /// Density 1, velocity 0 everywhere.
    pub const REST: Initial = Initial {
        velocity: [0.0; 3],
        amplitude: 0.0,
        k: 0.0,
        offset: [0.0; 2],
        _pad: 0,
    };

    /// A uniform velocity.
    pub const fn uniform(velocity: [f32; 3]) -> Initial {
        Initial {
            velocity,
            ..Initial::REST
        }
    }

    /// A Taylor-Green vortex of amplitude `amplitude` and wavenumber `k` (radians per cell),
    /// phase origin at cell 0.
    pub const fn taylor_green(amplitude: f32, k: f32) -> Initial {
        Initial {
            amplitude,
            k,
            ..Initial::REST
        }
    }

    /// Density and velocity of the cell at `c` (`fluid`: whether it is a fluid cell).
    #[inline(always)]
    pub fn at(&self, c: [u32; 3], fluid: bool) -> (f32, [f32; 3]) {
        if !fluid {
            return (1.0, [0.0; 3]);
        }
        let mut u = self.velocity;
        let mut rho = 1.0f32;
        if self.amplitude != 0.0 {
            let a = self.amplitude;
            let (sx, cx) = sin_cos(self.k * (c[0] as f32 - self.offset[0]));
            let (sy, cy) = sin_cos(self.k * (c[1] as f32 - self.offset[1]));
            u[0] += a * sx * cy;
            u[1] -= a * cx * sy;
            // cos 2t = cos^2 t - sin^2 t.
            let c2 = (cx * cx - sx * sx) + (cy * cy - sy * sy);
            rho -= 0.75 * a * a * c2;
        }
        (rho, u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taylor_green_matches_the_formula() {
        let n = 64u32;
        let k = 2.0 * core::f32::consts::PI / n as f32;
        let init = Initial::taylor_green(0.05, k);
        for (x, y) in [(0u32, 0u32), (5, 17), (63, 31), (40, 2)] {
            let (rho, u) = init.at([x, y, 3], true);
            let (kx, ky) = (k as f64 * x as f64, k as f64 * y as f64);
            let a = 0.05f64;
            assert!((u[0] as f64 - a * kx.sin() * ky.cos()).abs() < 1e-7);
            assert!((u[1] as f64 + a * kx.cos() * ky.sin()).abs() < 1e-7);
            let r = 1.0 - 0.75 * a * a * ((2.0 * kx).cos() + (2.0 * ky).cos());
            assert!((rho as f64 - r).abs() < 1e-7);
        }
        assert_eq!(init.at([1, 2, 3], false), (1.0, [0.0; 3]));
        assert_eq!(
            Initial::uniform([0.1, 0.0, 0.0]).at([7, 7, 7], true),
            (1.0, [0.1, 0.0, 0.0])
        );
    }
}
