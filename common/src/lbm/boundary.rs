//! Boundary conditions as cell types, applied while pulling (Krüger et al. 2017, Ch. 5):
//!
//! - [`CellKind::Wall`]: halfway bounce-back, `f_q(x) = f*_opp(q)(x)` (Eq. 5.26), the wall halfway
//!   between the fluid cell and the wall cell;
//! - [`CellKind::MovingWall`] and [`CellKind::Inlet`]: bounce-back with the wall-velocity term
//!   `f_q(x) = f*_opp(q)(x) + 2 w_q rho_w (c_q . u_w) / c_s^2` (Eq. 5.27, `rho_w = 1`): a lid, or
//!   a velocity inlet imposing `u_w` halfway (Sec. 5.3.3);
//! - [`CellKind::Outlet`]: anti-bounce-back pressure boundary (Eq. 5.53),
//!   `f_q(x) = -f*_opp(q)(x) + 2 w_q rho_w [1 + (c_q . u)^2 / (2 c_s^4) - u^2 / (2 c_s^2)]`, with
//!   `rho_w` the outlet density and `u` the fluid cell's own velocity (zeroth-order extrapolation);
//! - periodic: every axis wraps in the index math, so any axis without boundary cells is periodic.
//!
//! `f*` are post-collision populations of the previous step, which the pull scheme reads from the
//! source buffer at the fluid cell itself.

use super::d3q27::{velocity_f32, weight};

/// What a cell is. Stored as one byte per cell (`u8`), the same on CPU and GPU.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CellKind {
    /// Fluid: streams and collides.
    #[default]
    Fluid = 0,
    /// Resting solid wall (bounce-back).
    Wall = 1,
    /// Wall moving tangentially with `LbmParams::wall_velocity` (e.g. a cavity lid).
    MovingWall = 2,
    /// Velocity inlet at `LbmParams::inlet_velocity`.
    Inlet = 3,
    /// Pressure outlet at density `LbmParams::outlet_density`.
    Outlet = 4,
}

impl CellKind {
    /// The kind of a stored byte (its low bits; unknown values read as walls).
    #[inline(always)]
    pub const fn from_u8(b: u8) -> CellKind {
        match b & KIND_MASK {
            0 => CellKind::Fluid,
            2 => CellKind::MovingWall,
            3 => CellKind::Inlet,
            4 => CellKind::Outlet,
            _ => CellKind::Wall,
        }
    }
}

/// Bits of a cell byte that hold its [`CellKind`].
pub const KIND_MASK: u8 = 0x07;
/// Bit set (by [`mark_near_boundary`]) on fluid cells with at least one non-fluid neighbour:
/// only those take the boundary path of the stream-collide step.
pub const NEAR_BOUNDARY: u8 = 0x80;

/// Byte of a fluid cell.
pub const FLUID: u8 = CellKind::Fluid as u8;
/// Byte of an outlet cell.
pub const OUTLET: u8 = CellKind::Outlet as u8;

/// Bounce-back with a wall velocity: the population entering the fluid along `c_q` from a wall
/// moving at `uw`, given the post-collision population `f_out` that left along `-c_q`.
#[inline(always)]
pub fn moving_bounce_back(q: usize, f_out: f32, uw: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    f_out + 6.0 * weight(q) * (c[0] * uw[0] + c[1] * uw[1] + c[2] * uw[2])
}

/// Anti-bounce-back at a pressure boundary of density `rho_w`, fluid velocity `u`.
#[inline(always)]
pub fn anti_bounce_back(q: usize, f_out: f32, rho_w: f32, u: [f32; 3]) -> f32 {
    let c = velocity_f32(q);
    let cu = c[0] * u[0] + c[1] * u[1] + c[2] * u[2];
    let uu = u[0] * u[0] + u[1] * u[1] + u[2] * u[2];
    -f_out + 2.0 * weight(q) * rho_w * (1.0 + 4.5 * cu * cu - 1.5 * uu)
}

/// Sets [`NEAR_BOUNDARY`] on every fluid cell of `flags` that has a non-fluid cell among its 26
/// neighbours (periodic wrap), and clears it elsewhere. Backends call it once on upload.
pub fn mark_near_boundary(lattice: &super::Lattice, flags: &mut [u8]) {
    let n = lattice.cells();
    let mut cell = 0;
    while cell < n {
        if flags[cell] & KIND_MASK == FLUID {
            let o = lattice.pull_offsets(cell);
            let mut near = false;
            let mut q = 0;
            while q < super::Q {
                near |= flags[super::access::neighbour(&o, q)] & KIND_MASK != FLUID;
                q += 1;
            }
            flags[cell] = if near { FLUID | NEAR_BOUNDARY } else { FLUID };
        }
        cell += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::d3q27::{opposite, velocity, Q};
    use crate::lbm::equilibrium::equilibrium;
    use crate::lbm::Lattice;

    #[test]
    fn resting_wall_bounces_back_unchanged() {
        for q in 0..Q {
            assert_eq!(moving_bounce_back(q, 0.037, [0.0; 3]), 0.037);
        }
    }

    #[test]
    fn moving_wall_adds_six_w_c_dot_u() {
        // q with c = (1, 0, 0): a face direction, weight 2/27 in D3Q27.
        let q = (0..Q).find(|&q| velocity(q) == [1, 0, 0]).unwrap();
        assert!((weight(q) - 2.0 / 27.0).abs() < 1e-7);
        let got = moving_bounce_back(q, 0.05, [0.1, 0.3, -0.2]);
        assert!(
            (got - (0.05 + 6.0 * 2.0 / 27.0 * 0.1)).abs() < 1e-7,
            "{got}"
        );
    }

    #[test]
    fn bounce_backs_return_the_equilibrium_of_the_boundary_state() {
        // For populations at equilibrium with the wall's state, the condition gives back the
        // equilibrium: f_q = f_eq,q from f_eq,opp(q) (the second-order equilibrium's odd part is
        // 6 w rho (c.u), its even part 2 w rho (1 + 4.5 (c.u)^2 - 1.5 u^2)).
        let uw = [0.04f32, -0.02, 0.03];
        let feq: [f32; Q] = core::array::from_fn(|q| equilibrium(q, 1.0, uw));
        let (rho_out, u_out) = (1.02f32, [0.05f32, 0.01, -0.02]);
        let feq_out: [f32; Q] = core::array::from_fn(|q| equilibrium(q, rho_out, u_out));
        for q in 0..Q {
            let moving = moving_bounce_back(q, feq[opposite(q)], uw);
            assert!((moving - feq[q]).abs() < 2e-7, "moving wall, q = {q}");
            let anti = anti_bounce_back(q, feq_out[opposite(q)], rho_out, u_out);
            assert!((anti - feq_out[q]).abs() < 2e-7, "outlet, q = {q}");
        }
    }

    #[test]
    fn near_boundary_marks_exactly_the_wall_neighbours() {
        // 6 x 5 x 1, wall column at x = 0: fluid cells at x = 1 and (periodic) x = 5 are near.
        let l = Lattice::new(6, 5, 1);
        let mut flags = [FLUID; 30];
        for y in 0..5 {
            flags[l.index(0, y, 0)] = CellKind::Wall as u8;
        }
        mark_near_boundary(&l, &mut flags);
        for (cell, &flag) in flags.iter().enumerate() {
            let (x, _, _) = l.coords(cell);
            let want = match x {
                0 => CellKind::Wall as u8,
                1 | 5 => FLUID | NEAR_BOUNDARY,
                _ => FLUID,
            };
            assert_eq!(flag, want, "x = {x}");
            assert_eq!(CellKind::from_u8(flag) as u8, want & KIND_MASK);
        }
    }
}
