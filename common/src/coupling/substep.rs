//! One boid's substep as the stages both backends run, so the CPU reference
//! (`host/src/coupling/mod.rs`, `CpuBoids`) and the kernels (`kernels-gpu/src/coupling.rs`) make
//! the same operations in the same order: the air at a time inside the fluid step
//! ([`air_between`], [`SubstepTime`]), the new relative velocity from the neighbours and the
//! obstacles ([`rules_velocity`]), the move in the air with the box and the projection
//! ([`move_boid`]).

use super::grid::{box_grid_sums, BoxGrid};
use super::sdf::{keep_out, steer, Avoidance, Obstacles};
use super::{BoidBox, Impulse, Motion};
use crate::flock::params::FlockParams;
use crate::flock::rules::{clamp_speed, new_velocity};
use crate::lbm::ib::forcing::interpolate;
use crate::lbm::ib::stencil::{Domain, Stencil};
use crate::math::Vec3;

/// Substep `k` of the `n` a flock takes per fluid step. `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubstepTime {
    pub k: u32,
    pub n: u32,
}

impl SubstepTime {
    /// The fraction of the fluid step at a fraction `s` (0 or 1/2) into the substep:
    /// `(k + s) / n`.
    #[inline(always)]
    pub fn at(&self, s: f32) -> f32 {
        (self.k as f32 + s) / self.n as f32
    }
}

/// The air velocity at `x` a fraction `t` of the way from the fields before the fluid step
/// (`before(cell)`) to those after it (`after(cell)`): each interpolated with the immersed
/// boundary's hat kernel renormalised over the fluid nodes (`fluid(cell)`,
/// [`super::air_velocity`]'s stencil, formed once for both), then `before (1 - t) + after t`.
/// `None` when no fluid node carries weight.
#[inline(always)]
pub fn air_between(
    domain: &Domain,
    x: Vec3,
    t: f32,
    fluid: impl Fn(usize) -> bool,
    before: impl Fn(usize) -> [f32; 3],
    after: impl Fn(usize) -> [f32; 3],
) -> Option<Vec3> {
    let mut stencil = Stencil::new(domain, x.to_array());
    stencil.renormalise(fluid)?;
    let u0 = Vec3::from_array(interpolate(&stencil, before));
    let u1 = Vec3::from_array(interpolate(&stencil, after));
    Some(u0 * (1.0 - t) + u1 * t)
}

/// The new velocity relative to the air of the boid at `pos` with relative velocity `rel`: the
/// rules over its neighbours in the grid ([`box_grid_sums`]; `cell_start` and `boid` read the
/// boids sorted by cell), then, when there are `obstacles`, the avoidance rule added and the
/// speed limit applied again.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn rules_velocity(
    p: &FlockParams,
    grid: &BoxGrid,
    a: &Avoidance,
    obstacles: &impl Obstacles,
    pos: Vec3,
    rel: Vec3,
    cell_start: impl Fn(u32) -> u32,
    boid: impl Fn(u32) -> (Vec3, Vec3),
) -> Vec3 {
    let sums = box_grid_sums(p, grid, pos, rel, cell_start, boid);
    let w = new_velocity(p, rel, &sums);
    if obstacles.count() > 0 {
        clamp_speed(w + steer(obstacles, pos, a, p.dt), p.max_speed)
    } else {
        w
    }
}

/// The move of a boid at `x` with ground velocity `v` and relative velocity `w` (after the
/// rules) in the air `air(x, s)` ([`Motion::advance`]); with a `mass > 0` (two-way coupling) the
/// change of its ground velocity becomes the impulse on the air, quantised, and the boid keeps
/// the quantised change ([`Impulse`]); then it is brought back into the box (a wall reflects the
/// position and both velocities' components, [`BoidBox::confine`]) and, when there are
/// obstacles, put outside each it ends in ([`keep_out`]): the new `(x, v, w)` and the impulse on
/// the air (zero one-way).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub fn move_boid(
    motion: &Motion,
    bounds: &BoidBox,
    a: &Avoidance,
    obstacles: &impl Obstacles,
    mass: f32,
    x: Vec3,
    v: Vec3,
    w: Vec3,
    air: impl Fn(Vec3, f32) -> Option<Vec3>,
) -> (Vec3, Vec3, Vec3, [u64; 3]) {
    let (moved, mut ground) = motion.advance(x, v, w, air);
    let mut push = [0u64; 3];
    if mass > 0.0 {
        let imp = Impulse::of(mass, ground - v);
        ground = v + imp.realised(mass);
        push = imp.total;
    }
    let (mut x, v) = bounds.confine(moved, ground);
    let w = bounds.confine(moved, w).1;
    if obstacles.count() > 0 {
        x = keep_out(obstacles, x, a);
    }
    (x, v, w, push)
}

/// `acc + push`, per component, wrapping (the fixed-point sums of a boid's impulses over a
/// fluid step).
#[inline(always)]
pub fn add_push(acc: [u64; 3], push: [u64; 3]) -> [u64; 3] {
    [
        acc[0].wrapping_add(push[0]),
        acc[1].wrapping_add(push[1]),
        acc[2].wrapping_add(push[2]),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coupling::air_velocity;
    use crate::coupling::sdf::{Obstacle, ObstacleList};
    use crate::lbm::layout::Lattice;

    #[test]
    fn substep_times_split_the_fluid_step() {
        let t = SubstepTime { k: 3, n: 4 };
        assert_eq!((t.at(0.0), t.at(0.5)), (0.75, 0.875));
        assert_eq!(SubstepTime { k: 0, n: 1 }.at(0.5), 0.5);
    }

    #[test]
    fn the_air_between_two_fields_is_each_interpolated_then_blended() {
        let l = Lattice::new(8, 6, 5);
        let d = Domain::new(l, [true, false, true]);
        let field = |scale: f32| {
            move |c: usize| {
                let (x, y, z) = ((c % 8) as f32, (c / 8 % 6) as f32, (c / 48) as f32);
                [
                    scale * (0.01 * x + 0.002 * y),
                    -0.003 * z,
                    scale * 0.004 * y,
                ]
            }
        };
        let fluid = |c: usize| !(c / 8).is_multiple_of(6);
        for x in [[2.25f32, 3.5, 1.75], [7.6, 0.8, 4.9], [0.1, 2.0, 0.0]] {
            let t = 0.375;
            let got = air_between(&d, Vec3::from_array(x), t, fluid, field(1.0), field(2.0));
            let a = air_velocity(&d, x, fluid, field(1.0)).map(Vec3::from_array);
            let b = air_velocity(&d, x, fluid, field(2.0)).map(Vec3::from_array);
            assert_eq!(got, Some(a.unwrap() * (1.0 - t) + b.unwrap() * t), "{x:?}");
        }
        let solid = air_between(
            &d,
            Vec3::new(2.0, 0.0, 2.0),
            0.5,
            fluid,
            field(1.0),
            field(2.0),
        );
        assert_eq!(
            solid, None,
            "a node of the solid layer alone carries no air"
        );
    }

    #[test]
    fn a_two_way_boid_keeps_the_change_its_impulse_carries() {
        let m = Motion::new(0.5, 3.0);
        let b = BoidBox {
            lo: [0.0; 3],
            hi: [16.0; 3],
            periodic: 0b111,
            through: 0,
        };
        let air = |_: Vec3, _: f32| Some(Vec3::new(0.04, -0.01, 0.02));
        let none = &ObstacleList::default();
        let (x0, v0, w0) = (
            Vec3::new(3.2, 4.7, 8.1),
            Vec3::new(0.01, 0.0, 0.0),
            Vec3::new(0.0, 0.02, 0.0),
        );
        let mass = 0.37f32;
        let a = Avoidance::default();
        let (x1, v1, _, push) = move_boid(&m, &b, &a, none, mass, x0, v0, w0, air);
        let (x2, v2, _, none_pushed) = move_boid(&m, &b, &a, none, 0.0, x0, v0, w0, air);
        assert_eq!(none_pushed, [0; 3], "one-way pushes nothing");
        assert_eq!(x1, x2, "pushing back leaves the position's update alone");
        // The boid's change is the quantised impulse's, within rounding of the one-way move.
        let dv = v1 - v0;
        for (c, &pushed) in push.iter().enumerate() {
            let air_gets = crate::lbm::ib::band::from_fixed(pushed);
            let boid = mass * dv.to_array()[c];
            assert!((air_gets + boid).abs() < 1e-9, "{c}: {air_gets} {boid}");
            assert!((v1.to_array()[c] - v2.to_array()[c]).abs() < 1e-7);
        }
        assert_ne!(push, [0; 3], "the drag changed the boid's velocity");
        assert_eq!(add_push(push, push.map(|p| p.wrapping_neg())), [0; 3]);
    }

    #[test]
    fn a_boid_moved_into_a_wall_and_an_obstacle_comes_back() {
        let m = Motion::new(1.0, 0.0);
        let b = BoidBox {
            lo: [0.0; 3],
            hi: [20.0; 3],
            periodic: 0b110,
            through: 0,
        };
        let a = Avoidance {
            reach: 2.0,
            rate: 0.1,
            margin: 0.01,
            h: 1e-3,
        };
        // Into the wall at x = 0: reflected, both velocities' x reversed.
        let air = |_: Vec3, _: f32| Some(Vec3::new(-0.3, 0.0, 0.0));
        let none = &ObstacleList::default();
        let (x, v, w, push) = move_boid(
            &m,
            &b,
            &a,
            none,
            0.0,
            Vec3::new(0.1, 5.0, 5.0),
            Vec3::ZERO,
            Vec3::new(-0.1, 0.0, 0.0),
            air,
        );
        assert!((x.x - 0.3).abs() < 1e-6, "{x:?}");
        assert!((v.x - 0.4).abs() < 1e-6 && w.x == 0.1, "{v:?} {w:?}");
        assert_eq!(push, [0; 3], "one-way pushes nothing");
        // Into a sphere: put outside it.
        let sphere = Obstacle {
            sdf: crate::coupling::sdf::Sdf {
                kind: crate::coupling::sdf::SPHERE,
                a: 3.0,
                ..Default::default()
            },
            state: crate::lbm::ib::solid::SolidState {
                center: [10.0, 10.0, 10.0],
                rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
                ..Default::default()
            },
        };
        let still = |_: Vec3, _: f32| Some(Vec3::ZERO);
        let one = [sphere];
        let list = ObstacleList {
            list: &one,
            samples: &[],
        };
        let (x, _, _, _) = move_boid(
            &m,
            &b,
            &a,
            &list,
            0.0,
            Vec3::new(12.0, 10.0, 10.0),
            Vec3::ZERO,
            Vec3::new(0.5, 0.0, 0.0),
            still,
        );
        let d = list.distance(&sphere, x);
        assert!((d - 0.01).abs() < 1e-3, "{x:?} {d}");
    }
}
