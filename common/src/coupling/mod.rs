//! The flock in the fluid: the motion of boids that ride the air, relax toward it with inertia
//! and push back on it. The math of one boid, written once for the CPU reference and the kernels;
//! it sits above [`crate::flock`] and [`crate::lbm`] (neither imports it).
//!
//! Units: lattice units throughout (lengths in cells, times in fluid steps, the fluid's density
//! scale). A scene's SI values (m, m/s, 1/s, kg) are converted once at load; positions are
//! lattice coordinates as the immersed boundary's stencils take them (cell centres at integer
//! coordinates).
//!
//! The model, per boid (position `x`, ground velocity `v`, velocity relative to the air `w`, on
//! a flock substep of `dt` fluid steps):
//!
//! - **Air**: `u(x)`, the fluid velocity interpolated with the immersed boundary's 2 x 2 x 2
//!   hat kernel ([`air_velocity`]), renormalised over the fluid nodes.
//! - **Rules**: `w` obeys the three Reynolds rules and the speed limit of [`crate::flock::rules`]
//!   on the relative velocities of the neighbours, with the rule scales `rate x dt`
//!   ([`Rates::scales`]), so that behaviour does not depend on the substep.
//! - **Riding the flow** (a tracer, `tau_p = 0`): `v = u(x) + w`, positions by the midpoint rule
//!   (RK2) in space and time: `x' = x + dt (u(x + dt/2 (u(x, t) + w), t + dt/2) + w)`
//!   ([`Motion::advance`]), the air interpolated in time between the fluid's time levels.
//! - **Inertia** (`tau_p > 0`): Stokes drag toward `v* = u(x_m, t + dt/2) + w`,
//!   `x_m = x + dt/2 v`, integrated exactly with `v*` held over the substep:
//!   `v' = v* + (v - v*) e`, `x' = x + v* dt + (v - v*) tau_p (1 - e)`, `e = exp(-dt / tau_p)`
//!   (computed once by the host, [`Motion::new`]).
//! - **Pushing back** (two-way): the realised change of a boid's momentum `m (v' - v)` is matched
//!   by the opposite impulse on the air at its position, quantised once in the band's fixed
//!   point ([`to_fixed`]) and spread over its stencil so that the nodes' terms sum to the
//!   quantised total exactly ([`push_back`]); the boid keeps the quantised change too
//!   ([`Impulse::realised`]), so the two sides move by the same amount. A substep with
//!   `dt > 2 tau_p / (1 + m / (rho V))` (V the kernel's volume, one cell) is unstable and is
//!   refused at load ([`two_way_stable`]).
//! - **Domain**: a box with per-axis bounds ([`BoidBox`]); a periodic axis wraps keeping the
//!   overshoot, a wall reflects the position and the velocity's component.
//! - **Neighbours**: a uniform grid over the box ([`grid::BoxGrid`]) whose search wraps across
//!   periodic axes, each neighbour at its nearest image.
//! - **Solids**: a fourth rule steers a boid away from a solid within a reach, from its signed
//!   distance and normal ([`sdf`]), and a boid a moving solid swept over is projected back
//!   outside along the normal.

pub mod abi;
pub mod grid;
pub mod sdf;
pub mod substep;

use crate::flock::params::FlockParams;
use crate::lbm::ib::band::{from_fixed, to_fixed};
use crate::lbm::ib::forcing::interpolate;
use crate::lbm::ib::push::spread_exact;
use crate::lbm::ib::stencil::{Domain, Stencil};
use crate::math::{floor_i32, Vec3};

/// The rule rates of a coupled flock (per fluid step, lattice units): the CIS 565 scales are
/// per flock step, so a substep of `dt` uses `rate x dt`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rates {
    /// Cohesion, separation and alignment rates.
    pub rule: [f32; 3],
    /// Cohesion, separation and alignment radii (cells).
    pub distance: [f32; 3],
    /// Speed limit on the velocity relative to the air (cells per step).
    pub max_speed: f32,
}

impl Rates {
    /// The flock rules' parameters for a substep of `dt` fluid steps: rule scales `rate x dt`,
    /// the radii and the speed limit as given. `scale` (the standalone flock's cube) is unused
    /// here ([`BoidBox`] bounds a coupled flock) and set to 0.
    pub fn scales(&self, dt: f32) -> FlockParams {
        FlockParams {
            rule1_distance: self.distance[0],
            rule2_distance: self.distance[1],
            rule3_distance: self.distance[2],
            rule1_scale: self.rule[0] * dt,
            rule2_scale: self.rule[1] * dt,
            rule3_scale: self.rule[2] * dt,
            max_speed: self.max_speed,
            scale: 0.0,
            dt,
        }
    }
}

/// The air velocity at `pos` (cells): the fluid velocities `u(cell)` of the fluid nodes
/// (`fluid(cell)`) of the 2 x 2 x 2 stencil, weighted by the hat kernel renormalised over them;
/// `None` when no fluid node carries weight (inside a solid or outside the lattice).
#[inline(always)]
pub fn air_velocity(
    domain: &Domain,
    pos: [f32; 3],
    fluid: impl Fn(usize) -> bool,
    u: impl Fn(usize) -> [f32; 3],
) -> Option<[f32; 3]> {
    let mut stencil = Stencil::new(domain, pos);
    stencil.renormalise(fluid)?;
    Some(interpolate(&stencil, u))
}

/// The per-flock constants of a boid's substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Motion {
    /// The substep (fluid steps).
    pub dt: f32,
    /// `exp(-dt / tau_p)`; 0 for tracers.
    pub decay: f32,
    /// `tau_p (1 - exp(-dt / tau_p))`, the drag's share of the position update; 0 for tracers.
    pub lag: f32,
    /// 1 for inertial boids (`tau_p > 0`), 0 for tracers.
    pub inertial: u32,
}

impl Motion {
    /// The constants for a substep `dt` and a response time `tau_p` (both in fluid steps, `dt >
    /// 0`, `tau_p >= 0`), the exponential taken once in `f64` so both backends use the same
    /// bits (host only: the kernels take the result).
    #[cfg(not(target_arch = "nvptx64"))]
    pub fn new(dt: f64, tau_p: f64) -> Motion {
        if tau_p > 0.0 {
            let e = (-dt / tau_p).exp();
            Motion {
                dt: dt as f32,
                decay: e as f32,
                lag: (tau_p * (1.0 - e)) as f32,
                inertial: 1,
            }
        } else {
            Motion {
                dt: dt as f32,
                ..Motion::default()
            }
        }
    }

    /// One substep of a boid at `pos` with ground velocity `vel` and relative velocity `w`
    /// (after the rules), `air(x, s)` the air velocity at `x` a fraction `s` (0 or 1/2) into
    /// the substep (the caller interpolates in time between the fluid's time levels): the new
    /// position and ground velocity (see the module docs). Where `air` has no value (no fluid
    /// node near), the boid moves with `w` alone.
    #[inline(always)]
    pub fn advance(
        &self,
        pos: Vec3,
        vel: Vec3,
        w: Vec3,
        air: impl Fn(Vec3, f32) -> Option<Vec3>,
    ) -> (Vec3, Vec3) {
        let half = 0.5 * self.dt;
        let at = |x: Vec3, s: f32| air(x, s).unwrap_or(Vec3::ZERO);
        if self.inertial == 0 {
            let v0 = at(pos, 0.0) + w;
            let v = at(pos + v0 * half, 0.5) + w;
            return (pos + v * self.dt, v);
        }
        let target = at(pos + vel * half, 0.5) + w;
        let gap = vel - target;
        (
            pos + target * self.dt + gap * self.lag,
            target + gap * self.decay,
        )
    }
}

/// Whether two-way coupling is stable for a substep `dt`, response time `tau_p`, boid mass
/// `mass`, fluid density `rho` and kernel volume `volume` (lattice units): the boid and the air
/// it drags relax toward each other at the rate `(1 + m / (rho V)) / tau_p`, and the explicit
/// exchange of their momenta is stable for `dt <= 2 tau_p / (1 + m / (rho V))`.
pub fn two_way_stable(dt: f64, tau_p: f64, mass: f64, rho: f64, volume: f64) -> bool {
    tau_p > 0.0 && dt <= 2.0 * tau_p / (1.0 + mass / (rho * volume))
}

/// A boid's momentum change as both sides see it: `total`, the impulse on the air in the band's
/// fixed point (per component, wrapping `i64`), and the boid's velocity change that matches it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impulse {
    pub total: [u64; 3],
}

impl Impulse {
    /// The impulse on the air of a boid of `mass` whose ground velocity changes by `dv`:
    /// `-mass dv`, quantised once.
    #[inline(always)]
    pub fn of(mass: f32, dv: Vec3) -> Impulse {
        Impulse {
            total: [
                to_fixed(-mass * dv.x),
                to_fixed(-mass * dv.y),
                to_fixed(-mass * dv.z),
            ],
        }
    }

    /// The boid's velocity change matching the quantised impulse: `-total / mass`.
    #[inline(always)]
    pub fn realised(&self, mass: f32) -> Vec3 {
        let inv = -1.0 / mass;
        Vec3::new(
            from_fixed(self.total[0]) * inv,
            from_fixed(self.total[1]) * inv,
            from_fixed(self.total[2]) * inv,
        )
    }
}

/// Spreads `impulse` over `stencil` (renormalised: its weights sum to 1) as the fluid's pushes
/// do ([`spread_exact`]): `add(cell, terms)` for each present node, the terms summing to
/// `impulse.total` exactly (wrapping). An empty stencil adds nothing and returns false.
#[inline(always)]
pub fn push_back(
    stencil: &Stencil,
    impulse: &Impulse,
    mut add: impl FnMut(usize, [u64; 3]),
) -> bool {
    if stencil.count() == 0 {
        return false;
    }
    spread_exact(stencil, impulse.total, |k, t| add(stencil.cell(k), t));
    true
}

/// The box a coupled flock lives in (cells): `lo[a] <= x_a < hi[a]` on a periodic axis (bit `a`
/// of `periodic`) and on a flow-through axis (bit `a` of `through`: an inlet and an outlet,
/// where a boid leaving through one face re-enters at the other, at the same place across),
/// `lo[a] <= x_a <= hi[a]` between walls. Only periodic axes wrap the neighbour search.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BoidBox {
    pub lo: [f32; 3],
    pub hi: [f32; 3],
    pub periodic: u32,
    pub through: u32,
}

impl BoidBox {
    /// `pos` and `vel` brought back into the box: a periodic or flow-through axis wraps by
    /// whole periods, so the overshoot is kept; a wall reflects the position about it and reverses the
    /// velocity's component (once: a boid crosses at most a fraction of the box per substep).
    #[inline(always)]
    pub fn confine(&self, pos: Vec3, vel: Vec3) -> (Vec3, Vec3) {
        let mut p = pos.to_array();
        let mut v = vel.to_array();
        // Unrolled: the arrays stay in registers on the GPU.
        unroll!(a in [0, 1, 2] => {
            let (lo, hi) = (self.lo[a], self.hi[a]);
            if (self.periodic | self.through) >> a & 1 != 0 {
                let l = hi - lo;
                if p[a] < lo || p[a] >= hi {
                    let k = floor_i32((p[a] - lo) / l) as f32;
                    p[a] -= k * l;
                    // Rounding may leave the coordinate a hair outside.
                    if p[a] >= hi {
                        p[a] -= l;
                    } else if p[a] < lo {
                        p[a] += l;
                    }
                }
            } else if p[a] < lo {
                p[a] = lo + (lo - p[a]);
                v[a] = -v[a];
            } else if p[a] > hi {
                p[a] = hi - (p[a] - hi);
                v[a] = -v[a];
            }
        });
        (Vec3::from_array(p), Vec3::from_array(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::layout::Lattice;
    use crate::math::length;

    #[test]
    fn rates_become_scales_per_substep() {
        let r = Rates {
            rule: [0.5, 2.0, 1.0],
            distance: [5.0, 3.0, 5.0],
            max_speed: 0.05,
        };
        let p = r.scales(0.25);
        assert_eq!(
            (p.rule1_scale, p.rule2_scale, p.rule3_scale),
            (0.125, 0.5, 0.25)
        );
        assert_eq!(
            (p.rule1_distance, p.rule2_distance, p.max_speed, p.dt),
            (5.0, 3.0, 0.05, 0.25)
        );
    }

    #[test]
    fn air_velocity_is_exact_for_linear_fields_and_absent_in_solids() {
        let l = Lattice::new(8, 8, 8);
        let d = Domain::periodic(l);
        let u = |c: usize| {
            let (x, y, z) = ((c % 8) as f32, (c / 8 % 8) as f32, (c / 64) as f32);
            [0.01 * x, 0.02 * y - 0.01 * z, 0.005]
        };
        let v = air_velocity(&d, [2.25, 3.5, 4.75], |_| true, u).unwrap();
        let want = [0.0225, 0.02 * 3.5 - 0.01 * 4.75, 0.005];
        for c in 0..3 {
            assert!((v[c] - want[c]).abs() < 1e-6, "{v:?} {want:?}");
        }
        assert_eq!(air_velocity(&d, [2.25, 3.5, 4.75], |_| false, u), None);
    }

    #[test]
    fn tracers_ride_uniform_and_sheared_air() {
        let m = Motion::new(0.5, 0.0);
        let air = |_: Vec3, _: f32| Some(Vec3::new(0.1, 0.0, 0.0));
        let (x, v) = m.advance(Vec3::ZERO, Vec3::ZERO, Vec3::new(0.0, 0.02, 0.0), air);
        assert_eq!(v, Vec3::new(0.1, 0.02, 0.0));
        assert!(length(x - Vec3::new(0.05, 0.01, 0.0)) < 1e-7);
        // Rigid rotation u = omega x (x, y): the midpoint rule keeps the radius to O(dt^3) a step.
        let omega = 0.01;
        let rot = |p: Vec3, _: f32| Some(Vec3::new(-omega * p.y, omega * p.x, 0.0));
        let m = Motion::new(1.0, 0.0);
        let mut p = Vec3::new(10.0, 0.0, 0.0);
        for _ in 0..628 {
            p = m.advance(p, Vec3::ZERO, Vec3::ZERO, rot).0;
        }
        // A quarter turn is 157 steps; 628 steps are one turn.
        assert!((length(p) - 10.0).abs() < 1e-3, "{p:?}");
        assert!(length(p - Vec3::new(10.0, 0.0, 0.0)) < 0.05, "{p:?}");
    }

    #[test]
    fn inertial_boids_relax_to_a_uniform_flow_exactly() {
        let (dt, tau) = (0.5f64, 20.0f64);
        let m = Motion::new(dt, tau);
        let big_u = Vec3::new(0.05, 0.0, 0.0);
        let (mut x, mut v) = (Vec3::ZERO, Vec3::ZERO);
        for n in 1..=400 {
            (x, v) = m.advance(x, v, Vec3::ZERO, |_, _| Some(big_u));
            let t = n as f64 * dt;
            let want_v = 0.05 * (1.0 - (-t / tau).exp());
            let want_x = 0.05 * (t - tau * (1.0 - (-t / tau).exp()));
            assert!(
                (v.x as f64 - want_v).abs() < 1e-4 * 0.05,
                "step {n}: {} {want_v}",
                v.x
            );
            assert!(
                (x.x as f64 - want_x).abs() < 1e-4 * want_x.max(1e-3),
                "step {n}: {} {want_x}",
                x.x
            );
        }
    }

    #[test]
    fn stability_bound_of_two_way_coupling() {
        assert!(two_way_stable(1.0, 1.0, 1.0, 1.0, 1.0));
        assert!(!two_way_stable(1.01, 1.0, 1.0, 1.0, 1.0));
        assert!(!two_way_stable(0.1, 0.0, 1.0, 1.0, 1.0));
        assert!(two_way_stable(1.9, 1.0, 0.01, 1.0, 1.0));
    }

    #[test]
    fn pushed_back_terms_sum_to_the_quantised_impulse_and_the_boid_keeps_it() {
        let l = Lattice::new(6, 5, 4);
        for (k, pos) in [
            [1.3f32, 2.7, 0.4],
            [5.6, 0.2, 3.9],
            [2.0, 2.0, 2.0],
            [0.01, 4.99, 1.5],
        ]
        .into_iter()
        .enumerate()
        {
            let periodic = [k % 2 == 0, true, k < 2];
            let mut s = Stencil::new(&Domain::new(l, periodic), pos);
            if s.renormalise(|cell| cell % 3 != 0).is_none() {
                continue;
            }
            let (mass, dv) = (0.37f32, Vec3::new(0.013, -0.0021, 7.5e-5));
            let imp = Impulse::of(mass, dv);
            let mut sum = [0u64; 3];
            let mut nodes = 0;
            assert!(push_back(&s, &imp, |cell, t| {
                assert!(cell < l.cells() && cell % 3 != 0);
                nodes += 1;
                for c in 0..3 {
                    sum[c] = sum[c].wrapping_add(t[c]);
                }
            }));
            assert_eq!(nodes, s.count());
            assert_eq!(
                sum, imp.total,
                "the air receives exactly the quantised impulse"
            );
            let back = imp.realised(mass);
            assert!(length(back - dv) < 1e-9, "{back:?} {dv:?}");
            // Momentum: the boid's change and the air's are opposite to rounding.
            for c in 0..3 {
                let air = from_fixed(imp.total[c]);
                assert!((mass * back.to_array()[c] + air).abs() < 1e-9);
            }
        }
        let empty = Stencil::new(&Domain::new(l, [false; 3]), [-3.0, 1.0, 1.0]);
        assert!(!push_back(
            &empty,
            &Impulse::of(1.0, Vec3::ONE),
            |_, _| panic!("no node")
        ));
    }

    #[test]
    fn the_box_wraps_keeping_the_overshoot_and_walls_reflect() {
        let b = BoidBox {
            lo: [-0.5, 0.0, 0.0],
            hi: [15.5, 8.0, 4.0],
            periodic: 0b001,
            through: 0,
        };
        let (p, v) = b.confine(Vec3::new(15.75, -0.25, 4.5), Vec3::new(0.3, -0.1, 0.2));
        assert_eq!(p, Vec3::new(-0.25, 0.25, 3.5));
        assert_eq!(v, Vec3::new(0.3, 0.1, -0.2));
        let (p, _) = b.confine(Vec3::new(-0.75, 4.0, 2.0), Vec3::ZERO);
        assert_eq!(p.x, 15.25);
        let (p, v) = b.confine(Vec3::new(3.0, 4.0, 2.0), Vec3::ONE);
        assert_eq!((p, v), (Vec3::new(3.0, 4.0, 2.0), Vec3::ONE));
    }
}
