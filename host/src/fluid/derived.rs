//! Fields derived from the velocity for output: the vorticity `omega = curl u` and the
//! Q-criterion `Q = (|Omega|^2 - |S|^2) / 2` (Hunt, Wray, Moin, "Eddies, streams, and
//! convergence zones in turbulent flows", CTR report CTR-S88, 1988), with `S` and `Omega` the
//! symmetric and antisymmetric parts of the velocity gradient `G_ij = du_i / dx_j` and `|.|` the
//! Frobenius norm. `Q > 0` where rotation dominates strain: vortex cores.
//!
//! The gradient is taken from the lattice-unit [`Fields`] by finite differences, cell by cell
//! (rayon), once per output ([`Derived::compute`]), by `murmur_common::lbm::derived` (the same
//! per-cell `f32` math the viewer's `fluid_derived` kernel runs):
//!
//! - central, `(u[i+1] - u[i-1]) / 2`, where both neighbours along the axis are fluid;
//! - one-sided where one of them is missing (outside a non-periodic domain face) or not fluid
//!   (a cell byte with kind bits `flags & 0x07 != 0`: walls, inlets, outlets...): second order,
//!   `(-3 u[i] + 4 u[i+1] - u[i+2]) / 2`, when the next cell beyond is fluid too, first order
//!   `u[i+1] - u[i]` otherwise. The velocities stored in non-fluid cells (a wall's prescribed
//!   velocity, sitting half a cell beyond the halfway bounce-back wall) are never used;
//! - zero where neither neighbour is fluid (e.g. along an axis one cell thick and not periodic).
//!
//! Periodic axes wrap. The lattice's own index math wraps every axis and places non-periodic
//! boundaries as layers of non-fluid cells inside the grid, so [`LATTICE_PERIODIC`] (all axes
//! wrap) differentiates exactly what the solver computes; `false` on an axis stops the
//! differences at its faces instead. Non-fluid cells get zero vorticity and Q.
//!
//! Units: lattice velocity gradients are in `1/step`; they become `1/s` by dividing by `dt`
//! (`dx` cancels), Q becomes `1/s^2` by dividing by `dt^2` ([`Units::rate_to_si`]).

use super::{Fields, FluidError};
pub use murmur_common::lbm::derived::LATTICE_PERIODIC;
use murmur_common::lbm::derived::{curl, q_criterion, velocity_gradient};
use murmur_common::lbm::{Lattice, Units};
use rayon::prelude::*;

/// Vorticity and Q-criterion of one state, SI units (or lattice units with
/// [`Units::LATTICE`]), x fastest like [`Fields`].
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    pub lattice: Lattice,
    /// `curl u` in 1/s, three components per cell: `[wx, wy, wz]` of cell `c` at `3 c..3 c + 3`
    /// (the layout of a VTK 3-component array).
    pub vorticity: Vec<f32>,
    /// `Q = (|Omega|^2 - |S|^2) / 2` in 1/s^2, one value per cell.
    pub q_criterion: Vec<f32>,
}

impl Derived {
    /// Vorticity and Q of `fields` (lattice units) in the units of `units` (1/s, 1/s^2).
    /// `flags` holds one cell byte per cell (only its kind bits `& 0x07` are read); `periodic`
    /// says which axes wrap ([`LATTICE_PERIODIC`] for what the solver does).
    pub fn compute(
        fields: &Fields,
        flags: &[u8],
        periodic: [bool; 3],
        units: &Units,
    ) -> Result<Derived, FluidError> {
        check_sizes(fields, flags)?;
        let n = fields.n();
        let l = fields.lattice;
        let (rate, rate2) = (units.rate_to_si(1.0), units.rate_squared_to_si(1.0));
        let mut vorticity = vec![0f32; 3 * n];
        let mut q_values = vec![0f32; n];
        vorticity
            .par_chunks_mut(3)
            .zip(q_values.par_iter_mut())
            .enumerate()
            .for_each(|(cell, (w, q))| {
                // Non-fluid cells keep zero: no velocity gradient is defined inside a wall.
                let g = velocity_gradient(&l, periodic, cell, |c| flags[c], |c| fields.u(c));
                if let Some(g) = g {
                    let curl = curl(&g);
                    for a in 0..3 {
                        w[a] = (curl[a] as f64 * rate) as f32;
                    }
                    *q = (q_criterion(&g) as f64 * rate2) as f32;
                }
            });
        Ok(Derived {
            lattice: fields.lattice,
            vorticity,
            q_criterion: q_values,
        })
    }

    /// The vorticity of `cell`.
    pub fn vorticity(&self, cell: usize) -> [f32; 3] {
        [
            self.vorticity[3 * cell],
            self.vorticity[3 * cell + 1],
            self.vorticity[3 * cell + 2],
        ]
    }

    /// The Q-criterion of `cell`.
    pub fn q(&self, cell: usize) -> f32 {
        self.q_criterion[cell]
    }
}

/// Refuses fields and flags that do not describe the same lattice (instead of panicking later).
pub(crate) fn check_sizes(fields: &Fields, flags: &[u8]) -> Result<(), FluidError> {
    let n = fields.n();
    if fields.data.len() != 4 * n || flags.len() != n {
        return Err(FluidError::Invalid(format!(
            "fields of a {} x {} x {} lattice need {} values and {n} cell bytes, got {} and {}",
            fields.lattice.nx,
            fields.lattice.ny,
            fields.lattice.nz,
            4 * n,
            fields.data.len(),
            flags.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields with velocity `u(x, y, z)` (cell coordinates) and density 1.
    fn fields_of(l: Lattice, u: impl Fn(f64, f64, f64) -> [f64; 3]) -> Fields {
        let mut f = Fields::rest(l);
        for c in 0..l.cells() {
            let (x, y, z) = l.coords(c);
            let v = u(x as f64, y as f64, z as f64);
            f.set(c, 1.0, v.map(|a| a as f32));
        }
        f
    }

    fn close(a: f32, b: f64, tol: f64) -> bool {
        (a as f64 - b).abs() <= tol
    }

    #[test]
    fn solid_body_rotation_has_vorticity_two_omega_and_q_omega_squared() {
        // u = omega x (r - c), omega along z: ux = -w (y - cy), uy = w (x - cx). G = [[0, -w],
        // [w, 0]]: curl_z = 2 w, S = 0, |Omega|^2 = 2 w^2, Q = w^2. Linear, so every difference
        // (central, one-sided at the non-periodic faces) is exact.
        let l = Lattice::new(9, 8, 3);
        let w = 0.01;
        let f = fields_of(l, |x, y, _| [-w * (y - 3.5), w * (x - 4.0), 0.0]);
        let flags = vec![0u8; l.cells()];
        let d = Derived::compute(&f, &flags, [false; 3], &Units::LATTICE).unwrap();
        for c in 0..l.cells() {
            let v = d.vorticity(c);
            assert!(
                close(v[0], 0.0, 1e-7) && close(v[1], 0.0, 1e-7),
                "{c}: {v:?}"
            );
            assert!(close(v[2], 2.0 * w, 1e-7), "{c}: {v:?}");
            assert!(close(d.q(c), w * w, 1e-9), "{c}: {}", d.q(c));
        }
        // SI: dt = 0.5 s doubles the rates, quadruples Q; dx does not enter.
        let units = Units {
            dx: 0.1,
            dt: 0.5,
            rho0: 1000.0,
        };
        let d = Derived::compute(&f, &flags, [false; 3], &units).unwrap();
        assert!(close(d.vorticity(40)[2], 4.0 * w, 1e-7));
        assert!(close(d.q(40), 4.0 * w * w, 1e-9));
    }

    #[test]
    fn pure_shear_has_q_zero_and_pure_strain_negative_q() {
        // ux = g y: curl_z = duy/dx - dux/dy = -g; |S|^2 = |Omega|^2 = g^2 / 2, Q = 0.
        let l = Lattice::new(5, 7, 4);
        let g = 0.003;
        let flags = vec![0u8; l.cells()];
        let f = fields_of(l, |_, y, _| [g * y, 0.0, 0.0]);
        let d = Derived::compute(&f, &flags, [true, false, true], &Units::LATTICE).unwrap();
        for c in 0..l.cells() {
            assert!(close(d.vorticity(c)[2], -g, 1e-8), "{:?}", d.vorticity(c));
            assert!(close(d.q(c), 0.0, 1e-12), "{}", d.q(c));
        }
        // ux = a x, uy = -a y (plane strain): no vorticity, |S|^2 = 2 a^2, Q = -a^2.
        let a = 0.002;
        let f = fields_of(l, |x, y, _| [a * x, -a * y, 0.0]);
        let d = Derived::compute(&f, &flags, [false, false, true], &Units::LATTICE).unwrap();
        for c in 0..l.cells() {
            assert!(d.vorticity(c).iter().all(|v| v.abs() < 1e-8));
            assert!(close(d.q(c), -a * a, 1e-10), "{}", d.q(c));
        }
        // The x axis of u along z: curl_y = dux/dz.
        let f = fields_of(l, |_, _, z| [g * z, 0.0, 0.0]);
        let d = Derived::compute(&f, &flags, [false; 3], &Units::LATTICE).unwrap();
        assert!(close(d.vorticity(30)[1], g, 1e-8));
    }

    #[test]
    fn periodic_axes_wrap() {
        // ux = A sin(k y) on a periodic y axis: the central difference is exactly
        // A cos(k y) sin(k), also in the first and last rows (which need the wrap).
        let l = Lattice::new(3, 16, 1);
        let (amp, k) = (0.05, 2.0 * std::f64::consts::PI / 16.0);
        let f = fields_of(l, |_, y, _| [amp * (k * y).sin(), 0.0, 0.0]);
        let flags = vec![0u8; l.cells()];
        let d = Derived::compute(&f, &flags, LATTICE_PERIODIC, &Units::LATTICE).unwrap();
        for y in 0..16 {
            let c = l.index(1, y, 0);
            let want = -amp * (k * y as f64).cos() * k.sin();
            assert!(close(d.vorticity(c)[2], want, 1e-7), "y {y}");
        }
        // Without the wrap the edge rows are one-sided and differ.
        let d = Derived::compute(&f, &flags, [true, false, true], &Units::LATTICE).unwrap();
        let want = -amp * k.sin();
        assert!(!close(d.vorticity(l.index(1, 0, 0))[2], want, 1e-5));
    }

    #[test]
    fn differences_never_cross_non_fluid_cells() {
        // A linear field with garbage in a wall column at x = 4 and an inlet at x = 6: fluid
        // cells beside them differentiate one-sided, exactly; the wall cells get zero.
        let l = Lattice::new(10, 4, 1);
        let s = 0.004;
        let mut f = fields_of(l, |x, _, _| [0.0, s * x, 0.0]);
        let mut flags = vec![0u8; l.cells()];
        for y in 0..4 {
            for (x, kind) in [(4, 1u8), (6, 3)] {
                let c = l.index(x, y, 0);
                flags[c] = kind;
                f.set(c, 1.0, [9.0, -7.0, 5.0]);
            }
            // High bits (near-boundary, face index) do not make a cell non-fluid.
            flags[l.index(3, y, 0)] = 0x80 | 0x28;
        }
        let d = Derived::compute(&f, &flags, LATTICE_PERIODIC, &Units::LATTICE).unwrap();
        for c in 0..l.cells() {
            let (x, _, _) = l.coords(c);
            if x == 4 || x == 6 {
                assert_eq!(d.vorticity(c), [0.0; 3]);
                assert_eq!(d.q(c), 0.0);
            } else if x == 5 {
                // Between two non-fluid cells along x: no difference along x at all.
                assert_eq!(d.vorticity(c)[2], 0.0);
            } else if x == 0 || x == 9 {
                // The wrap joins x = 9 and x = 0: a jump of 9 s, central there.
                continue;
            } else {
                assert!(
                    close(d.vorticity(c)[2], s, 1e-8),
                    "x {x}: {:?}",
                    d.vorticity(c)
                );
            }
        }
    }

    #[test]
    fn mismatched_sizes_are_an_error() {
        let l = Lattice::new(4, 4, 1);
        let f = Fields::rest(l);
        let e = Derived::compute(&f, &[0u8; 3], LATTICE_PERIODIC, &Units::LATTICE).unwrap_err();
        assert!(e.to_string().contains("16 cell bytes"), "{e}");
    }
}
