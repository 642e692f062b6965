//! The initial state of a lattice, evaluated per cell where the populations live (a kernel on
//! the GPU, the same function on the CPU): no lattice-sized field travels from the host.

use crate::math::sin_cos;

/// Initial density and velocity of the fluid cells (lattice units): a uniform velocity plus an
/// optional Taylor-Green vortex in the x-y plane,
/// `ux += A sin(kx') cos(ky')`, `uy -= A cos(kx') sin(ky')`,
/// `rho = 1 - 3/4 A^2 (cos 2kx' + cos 2ky')` (the exact solution's pressure), with
/// `x' = x - offset_x`, `y' = y - offset_y` in cells, plus an optional start of a turbulent
/// channel ([`ChannelStart`]). Other cells start at rest with density 1.
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
    /// A turbulent channel's start (its `centre` 0: none).
    pub channel: ChannelStart,
}

/// The start of a turbulent channel along x between walls across y, periodic in x and z
/// (lattice units): a plug-like mean profile `U_c (1 - eta^6)` (`eta` the distance from the
/// centre plane over the half height `h`; its bulk velocity is `6/7 U_c`, near the turbulent
/// channel's `U_b / U_c` of 0.86), and on it finite-amplitude near-wall structures after de
/// Villiers (2006): streamwise-velocity streaks `cos(beta z)` meandering with `sin(alpha x)`, a
/// spanwise sloshing `w ~ sin(alpha x)` and wall-normal motion `v ~ sin(beta z) sin(alpha x)`,
/// all under the envelope `s (1 - s)^4 / 0.08192` (1 at `s = d / h = 0.2`, `d` the distance to
/// the nearer wall), and a smooth random field (value noise on nodes about 20 wall units
/// apart, interpolated with smoothstep weights) that breaks every symmetry, zero at the walls.
/// The wavenumbers and the noise's nodes are whole multiples of the box, so the start is
/// periodic. The noise comes from [`crate::rng::uniform`] of the nodes' indices: the same bits
/// on CPU and GPU.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChannelStart {
    /// Centre-plane velocity `U_c` (0: no channel start).
    pub centre: f32,
    /// Half height `h`, cells.
    pub half: f32,
    /// The lower wall's coordinate (the wall lies halfway between a wall cell and a fluid cell).
    pub wall: f32,
    /// The streaks' amplitude, lattice velocity.
    pub streak: f32,
    /// The spanwise and wall-normal motions' amplitude, lattice velocity.
    pub sway: f32,
    /// Spanwise and streamwise wavenumbers of the streaks, radians per cell.
    pub beta: f32,
    pub alpha: f32,
    /// Amplitude of the noise, lattice velocity.
    pub noise: f32,
    /// The noise's node spacing along x, y and z, cells.
    pub spacing: [f32; 3],
    /// The noise's nodes along x and z (one period).
    pub nodes: [u32; 2],
}

/// Smoothstep weight of `t` in `[0, 1]`.
#[inline(always)]
fn smooth(t: f32) -> f32 {
    t * t * (3.0 - 2.0 * t)
}

impl ChannelStart {
    /// No channel start.
    pub const NONE: ChannelStart = ChannelStart {
        centre: 0.0,
        half: 0.0,
        wall: 0.0,
        streak: 0.0,
        sway: 0.0,
        beta: 0.0,
        alpha: 0.0,
        noise: 0.0,
        spacing: [1.0; 3],
        nodes: [1; 2],
    };

    /// The envelope of the structures at `s = d / h`.
    #[inline(always)]
    fn envelope(s: f32) -> f32 {
        let one = 1.0 - s;
        s * (one * one) * (one * one) * (1.0 / 0.08192)
    }

    /// A bound on the speed of the start: the mean, the structures and the noise at their
    /// largest over the half height, sampled every thousandth of it.
    pub fn peak(&self) -> f32 {
        let mut top = 0.0f32;
        let mut i = 0;
        while i <= 1000 {
            let s = i as f32 / 1000.0;
            let eta = 1.0 - s;
            let e2 = eta * eta;
            let env = Self::envelope(s);
            let fade = s * (2.0 - s);
            let u =
                self.centre * (1.0 - e2 * e2 * e2) + 1.5 * self.streak * env + self.noise * fade;
            let v = self.sway * env + self.noise * fade;
            let speed = crate::math::sqrt(u * u + 2.0 * v * v);
            top = if speed > top { speed } else { top };
            i += 1;
        }
        top
    }

    /// The smooth noise's three components at `(x, y, z)` (cells), each in `[-1, 1]`.
    #[inline(always)]
    fn noise_at(&self, x: f32, y: f32, z: f32) -> [f32; 3] {
        let (fx, fy, fz) = (
            x / self.spacing[0],
            y / self.spacing[1],
            z / self.spacing[2],
        );
        let (ix, iy, iz) = (fx as u32, fy as u32, fz as u32);
        let (tx, ty, tz) = (
            smooth(fx - ix as f32),
            smooth(fy - iy as f32),
            smooth(fz - iz as f32),
        );
        let mut out = [0.0f32; 3];
        let mut corner = 0;
        while corner < 8 {
            let (dx, dy, dz) = (corner & 1, (corner >> 1) & 1, (corner >> 2) & 1);
            let nx = (ix + dx) % self.nodes[0];
            let nz = (iz + dz) % self.nodes[1];
            let ny = iy + dy;
            let w = (if dx == 1 { tx } else { 1.0 - tx })
                * (if dy == 1 { ty } else { 1.0 - ty })
                * (if dz == 1 { tz } else { 1.0 - tz });
            let key = ((nz as u64) << 42) ^ ((ny as u64) << 21) ^ nx as u64;
            let mut c = 0;
            while c < 3 {
                let r = crate::rng::uniform(0x6368_616e, 3 * key + c as u64);
                out[c] += w * (2.0 * r - 1.0);
                c += 1;
            }
            corner += 1;
        }
        out
    }

    /// The velocity of the fluid cell at `c`.
    #[inline(always)]
    pub fn at(&self, c: [u32; 3]) -> [f32; 3] {
        let y = c[1] as f32 - self.wall;
        let eta = (y - self.half) / self.half;
        let e2 = eta * eta;
        let mean = self.centre * (1.0 - e2 * e2 * e2);
        // Distance to the nearer wall over h, and the sign of the wall-normal direction.
        let (s, side) = if eta < 0.0 {
            (1.0 + eta, 1.0)
        } else {
            (1.0 - eta, -1.0)
        };
        let s = if s < 0.0 { 0.0 } else { s };
        let env = Self::envelope(s);
        let fade = s * (2.0 - s);
        let (sz, cz) = crate::math::sin_cos(self.beta * c[2] as f32);
        let (sx, _) = crate::math::sin_cos(self.alpha * c[0] as f32);
        let (a, b) = (self.streak * env, self.sway * env);
        let n = self.noise_at(c[0] as f32, y, c[2] as f32);
        let m = self.noise * fade;
        [
            mean + a * cz * (1.0 + 0.5 * sx) + m * n[0],
            side * b * sz * sx + m * n[1],
            b * sx + m * n[2],
        ]
    }
}

impl Initial {
    /// Density 1, velocity 0 everywhere.
    pub const REST: Initial = Initial {
        velocity: [0.0; 3],
        amplitude: 0.0,
        k: 0.0,
        offset: [0.0; 2],
        _pad: 0,
        channel: ChannelStart::NONE,
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
        if self.channel.centre != 0.0 {
            let v = self.channel.at(c);
            u = [u[0] + v[0], u[1] + v[1], u[2] + v[2]];
        }
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
    fn channel_start_is_plug_like_with_streaks() {
        let start = ChannelStart {
            centre: 0.1,
            half: 10.0,
            wall: 0.5,
            streak: 0.01,
            sway: 0.005,
            beta: 2.0 * core::f32::consts::PI / 8.0,
            alpha: 2.0 * core::f32::consts::PI / 16.0,
            noise: 0.0,
            spacing: [4.0; 3],
            nodes: [4, 2],
        };
        // Half a cell from the centre plane: the plug's velocity, the streaks almost gone.
        let near = start.at([0, 10, 0])[0];
        assert!((near - 0.1 * (1.0 - (0.05f32).powi(6))).abs() < 1e-6);
        // Symmetric about the centre plane (y 10.5): cells 1 and 20 lie 0.5 from the walls.
        let (lo, hi) = (start.at([2, 1, 0]), start.at([2, 20, 0]));
        assert!((lo[0] - hi[0]).abs() < 1e-7 && (lo[1] + hi[1]).abs() < 1e-7);
        // The streaks: at z 0 and z 4 (half the spanwise wavelength) opposite signs.
        let (a, b) = (start.at([0, 3, 0])[0], start.at([0, 3, 4])[0]);
        let m = 0.1 * (1.0 - (7.5f32 / 10.0).powi(6));
        assert!(a > m && b < m);
        // The noise: periodic along x (4 nodes 4 cells apart) and z (2 nodes), gone at the
        // walls, bounded by its amplitude.
        let noisy = ChannelStart {
            noise: 0.01,
            streak: 0.0,
            sway: 0.0,
            ..start
        };
        let quiet = ChannelStart {
            noise: 0.0,
            ..noisy
        };
        for c in [[1u32, 5, 3], [6, 12, 1], [3, 17, 7]] {
            let n = noisy.noise_at(c[0] as f32, c[1] as f32, c[2] as f32);
            assert_eq!(
                n,
                noisy.noise_at(c[0] as f32 + 16.0, c[1] as f32, c[2] as f32 + 8.0)
            );
            assert!(n.iter().all(|v| v.abs() <= 1.0) && n.iter().any(|v| *v != 0.0));
            let (u, q) = (noisy.at(c), quiet.at(c));
            assert!((0..3).all(|i| (u[i] - q[i]).abs() <= 0.01));
        }
        let wall = ChannelStart { wall: 1.0, ..noisy };
        assert_eq!(wall.at([5, 1, 5]), [0.0; 3]);
    }

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
