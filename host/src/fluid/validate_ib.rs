//! Validation of the immersed boundary: cylindrical Couette flow (the independent case the
//! coupling's fixed choices were made on) and, in `validate`, the DFG cylinder benchmarks.

use super::ib::{Immersed, Motion, Primitive, Solid};
use super::{scene, FluidBackend, FluidError, Setup};
use murmur_common::lbm::CollisionModel;

/// Cylindrical Couette flow between an inner cylinder of radius `r1` turning at `omega` and a
/// fixed outer cylinder of radius `r2` (cells), both immersed solids spanning a periodic
/// `n x n x 1` box: the steady azimuthal velocity is `u(r) = A r + B / r`,
/// `A = -omega r1^2 / (r2^2 - r1^2)`, `B = omega r1^2 r2^2 / (r2^2 - r1^2)`.
#[derive(Clone, Copy, Debug)]
pub struct Couette {
    pub r1: f64,
    pub r2: f64,
    /// Surface speed of the inner cylinder, lattice units.
    pub speed: f64,
    pub nu: f64,
    pub steps: u64,
    pub passes: u32,
    /// Samples placed this far (cells) inside each solid: at `r1 - retraction` and
    /// `r2 + retraction`.
    pub retraction: f64,
}

impl Couette {
    /// The study's case: radii 8 and 20 cells, surface speed 0.02, `nu = 1/6`.
    pub const STUDY: Couette = Couette {
        r1: 8.0,
        r2: 20.0,
        speed: 0.02,
        nu: 1.0 / 6.0,
        steps: 6000,
        passes: 0,
        retraction: super::immersed::RETRACTION,
    };

    fn n(&self) -> u32 {
        (2.0 * self.r2).ceil() as u32 + 8
    }

    fn center(&self) -> f64 {
        0.5 * (self.n() as f64 - 1.0)
    }

    /// The setup: a periodic box at rest with the two cylinders.
    pub fn setup(&self, model: CollisionModel) -> Result<Setup, FluidError> {
        let n = self.n();
        let mut setup = scene::taylor_green(n, 1, 0.0, self.nu as f32, model)?;
        let c = self.center();
        // `retraction` along the tube's outward normal: the inner cylinder's solid lies inside
        // it (positive), the outer one's outside (negative).
        let cylinder =
            |r: f64, motion: Motion, name: &str, retraction: f64| -> Result<Solid, FluidError> {
                let mesh = Primitive::Cylinder {
                    radius: r,
                    length: 1.0,
                    caps: false,
                }
                .mesh(0.25)
                .map_err(|e| FluidError::Invalid(e.to_string()))?;
                let (s, _) = Solid::sampled(
                    name,
                    &mesh,
                    [c, c, 0.0],
                    [1.0, 0.0, 0.0, 0.0],
                    motion,
                    0.5,
                    3,
                    [n as f64, n as f64, 1.0],
                    1 << 22,
                    retraction,
                )
                .map_err(|e| FluidError::Invalid(e.to_string()))?;
                Ok(s)
            };
        let inner = cylinder(
            self.r1,
            Motion::Rotate {
                axis: [0.0, 0.0, 1.0],
                rate: self.speed / self.r1,
                ramp: 0.0,
            },
            "inner",
            self.retraction,
        )?;
        let outer = cylinder(self.r2, Motion::Fixed, "outer", -self.retraction)?;
        setup.immersed = Immersed {
            solids: vec![inner, outer],
            periodic: [true; 3],
            passes: self.passes,
        };
        Ok(setup)
    }

    /// The analytic azimuthal velocity at radius `r`.
    pub fn exact(&self, r: f64) -> f64 {
        let omega = self.speed / self.r1;
        let (a2, b2) = (self.r1 * self.r1, self.r2 * self.r2);
        let a = -omega * a2 / (b2 - a2);
        let b = omega * a2 * b2 / (b2 - a2);
        a * r + b / r
    }

    /// Runs the case and returns the relative L2 error of the azimuthal velocity over the cells
    /// at least one cell inside the gap, and the largest radial velocity relative to the inner
    /// surface speed.
    pub fn run(&self, backend: &mut dyn FluidBackend) -> Result<(f64, f64), FluidError> {
        for s in 1..=self.steps {
            backend.step(s == self.steps)?;
        }
        let f = backend.fields()?;
        let c = self.center();
        let (mut num, mut den, mut radial) = (0.0, 0.0, 0.0f64);
        for cell in 0..f.n() {
            let (x, y, _) = f.lattice.coords(cell);
            let (dx, dy) = (x as f64 - c, y as f64 - c);
            let r = (dx * dx + dy * dy).sqrt();
            if r < self.r1 + 1.0 || r > self.r2 - 1.0 {
                continue;
            }
            let u = f.u(cell);
            let ut = (-dy * u[0] as f64 + dx * u[1] as f64) / r;
            let ur = (dx * u[0] as f64 + dy * u[1] as f64) / r;
            let e = self.exact(r);
            num += (ut - e).powi(2);
            den += e * e;
            radial = radial.max(ur.abs() / self.speed);
        }
        Ok(((num / den).sqrt(), radial))
    }
}
