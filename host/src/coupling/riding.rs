//! Coupled flocks riding a fluid run: after each fluid step each flock takes its
//! substeps in the air of that step, the fluid's velocity interpolated in space by the
//! immersed boundary's 2 x 2 x 2 hat kernel over the fluid nodes
//! ([`murmur_common::coupling::air_velocity`]) and linearly in time between the fields before
//! and after the step, among the obstacles as they stand at the end of each substep. Any fluid
//! backend: the fields come to the host once per fluid step (the CPU reference of the
//! coupling, not its fast path). Two-way flocks then hand their impulses on the air to the
//! fluid for its next step ([`Riding::push`]).

use super::ranks::SlabRide;
use super::CpuBoids;
use crate::fluid::{Fields, FluidBackend, FluidError, Setup};
use murmur_common::coupling::air_velocity;
use murmur_common::coupling::sdf::Obstacle;
use murmur_common::lbm::boundary::CellKind;
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::Vec3;

/// One flock of a ride and its substeps per fluid step.
pub struct RidingFlock {
    pub boids: CpuBoids,
    pub substeps: u32,
}

/// Flocks riding a fluid (module docs).
pub struct Riding {
    pub flocks: Vec<RidingFlock>,
    domain: Domain,
    /// Per cell, whether it is fluid (the air is interpolated over fluid nodes only).
    fluid: Vec<bool>,
    /// The fields at the start of the next fluid step (on one rank of several: around its
    /// slab, [`Riding::domain`] mapping positions onto them).
    before: Fields,
    /// On one rank of several: its part in the cut ([`super::ranks`]).
    slab: Option<SlabRide>,
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
        Riding::of(setup, fluid, vec![RidingFlock { boids, substeps }])
    }

    /// Several flocks riding the fluid of `setup` (as [`Riding::new`]).
    pub fn of(
        setup: &Setup,
        fluid: &mut dyn FluidBackend,
        flocks: Vec<RidingFlock>,
    ) -> Result<Riding, FluidError> {
        if flocks.iter().any(|f| f.substeps == 0) {
            return Err(FluidError::Invalid(
                "a flock takes at least one substep per fluid step".into(),
            ));
        }
        // Every rank may come to hold every boid: room for all of them on each.
        let pushes: usize = flocks
            .iter()
            .filter(|f| f.boids.mass() > 0.0)
            .map(|f| f.boids.pos.len())
            .sum();
        if pushes > 0 {
            let most = u32::try_from(pushes).map_err(|_| {
                FluidError::Invalid(format!("{pushes} two-way boids: at most {} push", u32::MAX))
            })?;
            fluid.enable_pushes(most)?;
        }
        let is_fluid = |b: u8| CellKind::from_u8(b) == CellKind::Fluid;
        let Some(slab) = SlabRide::of(fluid) else {
            return Ok(Riding {
                flocks,
                domain: Domain::new(setup.lattice(), setup.immersed.periodic),
                fluid: setup.flags.iter().map(|&b| is_fluid(b)).collect(),
                before: fluid.fields()?,
                slab: None,
            });
        };
        let mut flocks = flocks;
        for f in &mut flocks {
            slab.keep_own(&mut f.boids);
        }
        let around = slab.air(fluid)?;
        let cells = around.fields.lattice.cells();
        Ok(Riding {
            flocks,
            domain: around.domain,
            fluid: (0..cells)
                .map(|c| is_fluid(setup.flags[around.global_cell(c)]))
                .collect(),
            before: around.fields,
            slab: Some(slab),
        })
    }

    /// Sets every boid's ground velocity to the air's where it is (at rest relative to it;
    /// zero where no fluid is near).
    pub fn start_with_the_air(&mut self) {
        let (domain, fluid, fields) = (&self.domain, &self.fluid, &self.before);
        for f in &mut self.flocks {
            let b = &mut f.boids;
            for (x, v) in b.pos.iter().zip(b.vel.iter_mut()) {
                *v = air_velocity(domain, x.to_array(), |c| fluid[c], |c| fields.u(c))
                    .map_or(Vec3::ZERO, Vec3::from_array);
            }
        }
    }

    /// On one rank of several: drops the boids of other ranks' slabs (after a restore of
    /// every rank's boids).
    pub fn keep_own(&mut self) {
        if let Some(s) = &self.slab {
            for f in &mut self.flocks {
                s.keep_own(&mut f.boids);
            }
        }
    }

    /// On one rank of several: its part in the cut.
    pub fn slab(&self) -> Option<&SlabRide> {
        self.slab.as_ref()
    }

    /// The fields the flocks ride after a fluid step (around this rank's slab on one rank of
    /// several).
    fn air(&self, fluid: &mut dyn FluidBackend) -> Result<Fields, FluidError> {
        match &self.slab {
            None => fluid.fields(),
            Some(s) => Ok(s.air(fluid)?.fields),
        }
    }

    /// The fields at the start of the next fluid step (the air the next ride starts from).
    pub fn before(&self) -> &Fields {
        &self.before
    }

    /// The flocks' substeps in the air held at `fields` (before and after alike): the flock's
    /// step alone, for the coupling bench.
    pub fn substeps_in(
        &mut self,
        fields: &Fields,
        obstacles: &dyn Fn(f64) -> Vec<Obstacle>,
    ) -> Result<(), FluidError> {
        let (domain, mask) = (&self.domain, &self.fluid);
        let air = Air {
            domain,
            fluid: mask,
            before: fields,
            after: fields,
        };
        substeps(&mut self.flocks, &air, obstacles, self.slab.as_ref())
    }

    /// The first flock (a ride of one).
    pub fn boids(&self) -> &CpuBoids {
        &self.flocks[0].boids
    }

    /// One fluid step of `fluid`, then the flocks' substeps among `obstacles` (fixed).
    pub fn step(
        &mut self,
        fluid: &mut dyn FluidBackend,
        obstacles: &[Obstacle],
    ) -> Result<(), FluidError> {
        fluid.step()?;
        self.ride(fluid, &|_| obstacles.to_vec())
    }

    /// The flocks' substeps over the fluid step `fluid` has just taken; `obstacles(s)` gives
    /// the obstacles a fraction `s` (in `(0, 1]`) into that step.
    pub fn ride(
        &mut self,
        fluid: &mut dyn FluidBackend,
        obstacles: &dyn Fn(f64) -> Vec<Obstacle>,
    ) -> Result<(), FluidError> {
        let after = self.air(fluid)?;
        let before = std::mem::replace(&mut self.before, after);
        // The step just taken applied the pending pushes.
        for f in &mut self.flocks {
            f.boids.clear_pushes();
        }
        let air = Air {
            domain: &self.domain,
            fluid: &self.fluid,
            before: &before,
            after: &self.before,
        };
        substeps(&mut self.flocks, &air, obstacles, self.slab.as_ref())?;
        self.push(fluid)
    }

    /// Hands the two-way flocks' pending impulses to `fluid` for its next step (after a ride,
    /// or after a restore).
    pub fn push(&self, fluid: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let (mut pos, mut total) = (Vec::new(), Vec::new());
        for f in self.flocks.iter().filter(|f| f.boids.mass() > 0.0) {
            let (p, t) = f.boids.pushes();
            pos.extend(p);
            total.extend(t);
        }
        // On several ranks every rank takes part, with or without pushes of its own.
        let two_way = self.flocks.iter().any(|f| f.boids.mass() > 0.0);
        if !two_way || (pos.is_empty() && self.slab.is_none()) {
            return Ok(());
        }
        fluid.push(&pos, &total)
    }

    /// The flocks' momentum at the present time level: `sum m v` of the two-way boids plus
    /// the impulses the fluid has not applied yet (lattice units).
    pub fn momentum(&self) -> [f64; 3] {
        let mut m = [0.0f64; 3];
        for f in &self.flocks {
            let (b, p) = (f.boids.momentum(), f.boids.pending_push());
            for c in 0..3 {
                m[c] += b[c] + p[c];
            }
        }
        m
    }
}

/// The air of one fluid step: the fields `before` and `after` it over the nodes `fluid` marks
/// on `domain`.
struct Air<'a> {
    domain: &'a Domain,
    fluid: &'a [bool],
    before: &'a Fields,
    after: &'a Fields,
}

/// The substeps of `flocks` over one fluid step in `air`, among `obstacles(s)` a fraction `s`
/// into the step; on one rank of several (`slab`) beside the other ranks' boids near its
/// slab, handing on those that leave it after each substep.
fn substeps(
    flocks: &mut [RidingFlock],
    air: &Air,
    obstacles: &dyn Fn(f64) -> Vec<Obstacle>,
    slab: Option<&SlabRide>,
) -> Result<(), FluidError> {
    let (domain, fluid) = (air.domain, air.fluid);
    for flock in flocks {
        let n = flock.substeps;
        for k in 0..n {
            let ride = |x: Vec3, s: f32| {
                let t = (k as f32 + s) / n as f32;
                let at = |f: &Fields| {
                    air_velocity(domain, x.to_array(), |c| fluid[c], |c| f.u(c))
                        .map(Vec3::from_array)
                };
                Some(at(air.before)? * (1.0 - t) + at(air.after)? * t)
            };
            let solids = obstacles((k + 1) as f64 / n as f64);
            match slab {
                None => flock.boids.substep_among(ride, &solids),
                Some(s) => {
                    let guests = s.guests(&flock.boids)?;
                    flock.boids.substep_beside(ride, &solids, &guests);
                    s.migrate(&mut flock.boids)?;
                }
            }
        }
    }
    Ok(())
}
