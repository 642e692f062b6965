//! A coupled flock riding a fluid run, one-way: each fluid step the fluid steps, then the
//! flock takes its substeps in the air of that step, the fluid's velocity interpolated in space
//! by the immersed boundary's 2 x 2 x 2 hat kernel over the fluid nodes
//! ([`murmur_common::coupling::air_velocity`]) and linearly in time between the fields before
//! and after the step. Any fluid backend: the fields come to the host once per fluid step (the
//! CPU reference of the coupling, not its fast path).

use super::CpuBoids;
use crate::fluid::{Fields, FluidBackend, FluidError, Setup};
use murmur_common::coupling::air_velocity;
use murmur_common::coupling::sdf::Obstacle;
use murmur_common::lbm::boundary::CellKind;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::Vec3;

/// A flock riding a fluid (module docs).
pub struct Riding {
    pub boids: CpuBoids,
    substeps: u32,
    domain: Domain,
    /// Per cell, whether it is fluid (the air is interpolated over fluid nodes only).
    fluid: Vec<bool>,
    /// The fields at the start of the next fluid step.
    before: Fields,
}

impl Riding {
    /// `boids`, built with a substep of `1 / substeps` fluid steps, riding the fluid of `setup`
    /// whose backend `fluid` holds the fields the ride starts from.
    pub fn new(
        setup: &Setup,
        fluid: &mut dyn FluidBackend,
        boids: CpuBoids,
        substeps: u32,
    ) -> Result<Riding, FluidError> {
        if substeps == 0 {
            return Err(FluidError::Invalid(
                "a flock takes at least one substep per fluid step".into(),
            ));
        }
        Ok(Riding {
            boids,
            substeps,
            domain: Domain::new(setup.lattice(), setup.immersed.periodic),
            fluid: setup
                .flags
                .iter()
                .map(|&b| CellKind::from_u8(b) == CellKind::Fluid)
                .collect(),
            before: fluid.fields()?,
        })
    }

    /// One fluid step of `fluid`, then the flock's substeps among `obstacles`.
    pub fn step(
        &mut self,
        fluid: &mut dyn FluidBackend,
        obstacles: &[Obstacle],
    ) -> Result<(), FluidError> {
        fluid.step()?;
        let after = fluid.fields()?;
        let n = self.substeps;
        for k in 0..n {
            let (before, after, domain, flags) = (&self.before, &after, &self.domain, &self.fluid);
            let air = |x: Vec3, s: f32| {
                let t = (k as f32 + s) / n as f32;
                let at = |f: &Fields| {
                    air_velocity(domain, x.to_array(), |c| flags[c], |c| f.u(c))
                        .map(Vec3::from_array)
                };
                Some(at(before)? * (1.0 - t) + at(after)? * t)
            };
            self.boids.substep_among(air, obstacles);
        }
        self.before = after;
        Ok(())
    }
}
