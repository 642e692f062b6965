//! A rigid solid's state at one step ([`SolidState`]): the one description of solid kinematics
//! the CPU reference and the kernels share, and the rigid-body velocity `v + omega x r` at a
//! sample.

/// Velocity of a rigid body at a point: `v + omega x r`, `r` from the centre of mass to the
/// point (lattice units: `v` in `dx/dt`, `omega` in `1/dt`, `r` in `dx`).
#[inline(always)]
pub fn solid_velocity(v: [f32; 3], omega: [f32; 3], r: [f32; 3]) -> [f32; 3] {
    [
        v[0] + (omega[1] * r[2] - omega[2] * r[1]),
        v[1] + (omega[2] * r[0] - omega[0] * r[2]),
        v[2] + (omega[0] * r[1] - omega[1] * r[0]),
    ]
}

/// Most solids one scene may hold: their states travel by value inside the kernel arguments.
pub const MAX_SOLIDS: usize = 8;

/// A rigid solid's state at one step, lattice units: the one description of solid kinematics
/// both backends use. The host computes it once per step from the scene's motion (`f64`, then
/// rounded to `f32` once), so the CPU reference and the kernels see the same values.
///
/// A sample's world position is `center + R body` ([`SolidState::position`]) and its velocity
/// `v + omega x (X - center)` ([`SolidState::velocity_at`]); positions may lie outside
/// `[0, n)` along periodic axes ([`Stencil::new`](super::stencil::Stencil::new) wraps them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolidState {
    /// Centre (the body frame's origin; the centre of mass for closed solids), cells.
    pub center: [f32; 3],
    pub _pad0: u32,
    /// Rotation body -> world, row-major: `world = R body`.
    pub rotation: [[f32; 3]; 3],
    /// Velocity of the centre, `dx/dt`.
    pub velocity: [f32; 3],
    pub _pad1: u32,
    /// Angular velocity, `1/dt`.
    pub omega: [f32; 3],
    pub _pad2: u32,
}

impl SolidState {
    /// World position of a sample at `body` (cells, body frame).
    #[inline(always)]
    pub fn position(&self, body: [f32; 3]) -> [f32; 3] {
        let r = &self.rotation;
        [
            self.center[0] + (r[0][0] * body[0] + r[0][1] * body[1] + r[0][2] * body[2]),
            self.center[1] + (r[1][0] * body[0] + r[1][1] * body[1] + r[1][2] * body[2]),
            self.center[2] + (r[2][0] * body[0] + r[2][1] * body[1] + r[2][2] * body[2]),
        ]
    }

    /// Offset `R body` of a sample from the centre (the lever arm `r` of torques and of
    /// `omega x r`).
    #[inline(always)]
    pub fn arm(&self, body: [f32; 3]) -> [f32; 3] {
        let r = &self.rotation;
        [
            r[0][0] * body[0] + r[0][1] * body[1] + r[0][2] * body[2],
            r[1][0] * body[0] + r[1][1] * body[1] + r[1][2] * body[2],
            r[2][0] * body[0] + r[2][1] * body[1] + r[2][2] * body[2],
        ]
    }

    /// The solid's velocity `u_b = v + omega x r` at a sample of lever arm `arm`.
    #[inline(always)]
    pub fn velocity_at(&self, arm: [f32; 3]) -> [f32; 3] {
        solid_velocity(self.velocity, self.omega, arm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solid_velocity_is_v_plus_omega_cross_r() {
        let u = solid_velocity([0.01, 0.0, -0.02], [0.0, 0.0, 0.1], [2.0, 1.0, 5.0]);
        // omega x r = (0, 0, 0.1) x (2, 1, 5) = (-0.1, 0.2, 0).
        assert_eq!(u, [0.01 - 0.1, 0.2, -0.02]);
        let u = solid_velocity([0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        assert_eq!(u, [0.0, 0.0, 1.0]);
    }
}
