//! The three Reynolds rules, the speed limit and the position update (CIS 565 semantics).
//!
//! A velocity update is: start from `RuleSums::default()`, call [`RuleSums::accumulate`] for every
//! *other* boid the search visits, then [`new_velocity`]. Boids the search visits that are out of
//! every radius are ignored by `accumulate`, so any search that visits a superset of the true
//! neighbours gives the same sums up to summation order. A search may also visit the boid itself
//! and take it back out afterwards with [`RuleSums::remove_self`] (the grid searches do: their
//! inner loop then needs no test of the index).
//!
//! Cohesion sums offsets `other - self`, not positions: the CIS 565 rule
//! `(sum(other) / n - self) * rule1_scale` equals `sum(other - self) / n * rule1_scale`, the
//! offsets are small (at most the radius) so the sum loses less to rounding, and the boid itself
//! adds an exact zero.

use super::params::FlockParams;
use crate::math::Vec3;

/// Running neighbour sums for the three rules of one boid.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RuleSums {
    /// Sum of offsets `other - self` of boids closer than `rule1_distance` (cohesion).
    pub center: Vec3,
    /// Sum of `-(other - self)` over boids closer than `rule2_distance` (separation).
    pub separation: Vec3,
    /// Sum of velocities of boids closer than `rule3_distance` (alignment).
    pub velocity: Vec3,
    /// Number of cohesion neighbours.
    pub n_cohesion: u32,
    /// Number of alignment neighbours.
    pub n_alignment: u32,
}

impl RuleSums {
    /// Adds one other boid. Distances are compared squared and strictly: `|d|^2 < r^2`.
    #[inline(always)]
    pub fn accumulate(&mut self, p: &FlockParams, pos: Vec3, other_pos: Vec3, other_vel: Vec3) {
        self.accumulate_with(p, pos, other_pos, || other_vel);
    }

    /// [`RuleSums::accumulate`], reading the other boid's velocity only when alignment needs it
    /// (most candidates of a grid search are out of range: their velocity is never loaded).
    #[inline(always)]
    pub fn accumulate_with<V: FnOnce() -> Vec3>(
        &mut self,
        p: &FlockParams,
        pos: Vec3,
        other_pos: Vec3,
        other_vel: V,
    ) {
        let d = other_pos - pos;
        let d2 = d.length_squared();
        if d2 < p.rule1_distance * p.rule1_distance {
            self.center += d;
            self.n_cohesion += 1;
        }
        if d2 < p.rule2_distance * p.rule2_distance {
            self.separation -= d;
        }
        if d2 < p.rule3_distance * p.rule3_distance {
            self.velocity += other_vel();
            self.n_alignment += 1;
        }
    }

    /// [`RuleSums::accumulate`] for nested radii ([`FlockParams::radii_nested`]: cohesion and
    /// alignment share their radius, separation's is no larger): one test gates all three rules
    /// and `n_alignment` is left to the caller (it equals `n_cohesion`). Same sums, in the same
    /// order, as `accumulate`.
    #[inline(always)]
    pub fn accumulate_nested(
        &mut self,
        p: &FlockParams,
        pos: Vec3,
        other_pos: Vec3,
        other_vel: Vec3,
    ) {
        let d = other_pos - pos;
        let d2 = d.length_squared();
        if d2 < p.rule1_distance * p.rule1_distance {
            self.center += d;
            self.velocity += other_vel;
            self.n_cohesion += 1;
            if d2 < p.rule2_distance * p.rule2_distance {
                self.separation -= d;
            }
        }
    }

    /// [`RuleSums::accumulate_nested`] without a branch on the device (predicated PTX: the same
    /// IEEE additions and subtractions in the same order, so the same sums; on the host it is
    /// `accumulate_nested`). A branch lets ptxas load the velocity only after the distance test,
    /// which costs a second memory round trip per candidate but fewer registers and issue slots:
    /// predication wins when the GPU is not full (small flocks, latency-bound), the branch when
    /// it is.
    #[inline(always)]
    pub fn accumulate_nested_predicated(
        &mut self,
        p: &FlockParams,
        pos: Vec3,
        other_pos: Vec3,
        other_vel: Vec3,
    ) {
        #[cfg(target_arch = "nvptx64")]
        {
            let d = other_pos - pos;
            let (r1, r2) = (
                p.rule1_distance * p.rule1_distance,
                p.rule2_distance * p.rule2_distance,
            );
            // SAFETY: register arithmetic only.
            unsafe { self.add_nested_predicated(d, d.length_squared(), r1, r2, other_vel) };
        }
        #[cfg(not(target_arch = "nvptx64"))]
        self.accumulate_nested(p, pos, other_pos, other_vel);
    }

    /// The body of [`RuleSums::accumulate_nested_predicated`] on the device: `near` gates what
    /// `d2 < r1` gates in `accumulate_nested`, `close` what `d2 < r2` does (`close` implies `near`
    /// for nested radii, so the nesting needs no branch).
    #[cfg(target_arch = "nvptx64")]
    #[inline(always)]
    unsafe fn add_nested_predicated(&mut self, d: Vec3, d2: f32, r1: f32, r2: f32, v: Vec3) {
        core::arch::asm!(
            "{{",
            ".reg .pred near, close;",
            "setp.lt.f32 near, {d2}, {r1};",
            "setp.lt.f32 close, {d2}, {r2};",
            "@near add.rn.f32 {cx}, {cx}, {dx};",
            "@near add.rn.f32 {cy}, {cy}, {dy};",
            "@near add.rn.f32 {cz}, {cz}, {dz};",
            "@near add.rn.f32 {vx}, {vx}, {ux};",
            "@near add.rn.f32 {vy}, {vy}, {uy};",
            "@near add.rn.f32 {vz}, {vz}, {uz};",
            "@near add.s32 {n}, {n}, 1;",
            "@close sub.rn.f32 {sx}, {sx}, {dx};",
            "@close sub.rn.f32 {sy}, {sy}, {dy};",
            "@close sub.rn.f32 {sz}, {sz}, {dz};",
            "}}",
            d2 = in(reg32) d2,
            r1 = in(reg32) r1,
            r2 = in(reg32) r2,
            dx = in(reg32) d.x,
            dy = in(reg32) d.y,
            dz = in(reg32) d.z,
            ux = in(reg32) v.x,
            uy = in(reg32) v.y,
            uz = in(reg32) v.z,
            cx = inout(reg32) self.center.x,
            cy = inout(reg32) self.center.y,
            cz = inout(reg32) self.center.z,
            vx = inout(reg32) self.velocity.x,
            vy = inout(reg32) self.velocity.y,
            vz = inout(reg32) self.velocity.z,
            sx = inout(reg32) self.separation.x,
            sy = inout(reg32) self.separation.y,
            sz = inout(reg32) self.separation.z,
            n = inout(reg32) self.n_cohesion,
            options(pure, nomem, nostack),
        );
    }

    /// Takes back what [`RuleSums::accumulate`] added for the boid itself (offset zero, velocity
    /// `own_vel`), for searches that visit it. Exact for the counts, cohesion and separation (the
    /// boid added zeros there); the alignment sum gets `own_vel` subtracted.
    #[inline(always)]
    pub fn remove_self(&mut self, p: &FlockParams, own_vel: Vec3) {
        if 0.0 < p.rule1_distance * p.rule1_distance {
            self.n_cohesion -= 1;
        }
        if 0.0 < p.rule3_distance * p.rule3_distance {
            self.velocity -= own_vel;
            self.n_alignment -= 1;
        }
    }

    /// Folds another partial sum into this one (for split or tiled searches).
    #[inline(always)]
    pub fn merge(&mut self, o: &RuleSums) {
        self.center += o.center;
        self.separation += o.separation;
        self.velocity += o.velocity;
        self.n_cohesion += o.n_cohesion;
        self.n_alignment += o.n_alignment;
    }

    /// `rule1 + rule2 + rule3`.
    ///
    /// - rule 1: `(mean neighbour position - pos) * rule1_scale` (the mean offset), zero without
    ///   neighbours;
    /// - rule 2: `separation * rule2_scale` (not averaged);
    /// - rule 3: `mean neighbour velocity * rule3_scale`, own velocity not subtracted.
    #[inline(always)]
    pub fn velocity_change(&self, p: &FlockParams) -> Vec3 {
        let mut dv = self.separation * p.rule2_scale;
        if self.n_cohesion > 0 {
            dv += self.center / self.n_cohesion as f32 * p.rule1_scale;
        }
        if self.n_alignment > 0 {
            dv += self.velocity / self.n_alignment as f32 * p.rule3_scale;
        }
        dv
    }
}

/// Rescales `v` to length `max_speed` when it is longer; otherwise returns it unchanged.
#[inline(always)]
pub fn clamp_speed(v: Vec3, max_speed: f32) -> Vec3 {
    let len2 = v.length_squared();
    if len2 > max_speed * max_speed {
        v * (max_speed / crate::math::sqrt(len2))
    } else {
        v
    }
}

/// The new velocity of a boid: old velocity plus the three rules, then the speed limit.
#[inline(always)]
pub fn new_velocity(p: &FlockParams, vel: Vec3, sums: &RuleSums) -> Vec3 {
    clamp_speed(vel + sums.velocity_change(p), p.max_speed)
}

/// Wraps one coordinate: below `-scale` becomes exactly `+scale`, above `+scale` exactly `-scale`.
#[inline(always)]
pub fn wrap_axis(x: f32, scale: f32) -> f32 {
    if x < -scale {
        scale
    } else if x > scale {
        -scale
    } else {
        x
    }
}

/// The new position: `pos + vel * dt`, wrapped per axis.
#[inline(always)]
pub fn integrate_position(p: &FlockParams, pos: Vec3, vel: Vec3) -> Vec3 {
    let q = pos + vel * p.dt;
    Vec3::new(
        wrap_axis(q.x, p.scale),
        wrap_axis(q.y, p.scale),
        wrap_axis(q.z, p.scale),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> FlockParams {
        FlockParams::CIS565
    }

    fn sums_of(pos: Vec3, others: &[(Vec3, Vec3)]) -> RuleSums {
        let mut s = RuleSums::default();
        for &(q, v) in others {
            s.accumulate(&p(), pos, q, v);
        }
        s
    }

    #[test]
    fn no_neighbours_keeps_velocity() {
        let v = Vec3::new(0.1, -0.2, 0.3);
        let s = sums_of(Vec3::ZERO, &[(Vec3::new(50.0, 0.0, 0.0), Vec3::splat(1.0))]);
        assert_eq!(s, RuleSums::default());
        assert_eq!(new_velocity(&p(), v, &s), v);
    }

    #[test]
    fn cohesion_just_inside_and_at_radius() {
        // At exactly 5.0 (25 == 25): strictly not closer, no rule applies.
        let s = sums_of(Vec3::ZERO, &[(Vec3::new(5.0, 0.0, 0.0), Vec3::ZERO)]);
        assert_eq!(s.n_cohesion, 0);
        assert_eq!(s.n_alignment, 0);
        // Just inside: cohesion and alignment count it, separation (radius 3) does not.
        let q = Vec3::new(4.99, 0.0, 0.0);
        let s = sums_of(Vec3::ZERO, &[(q, Vec3::new(0.0, 1.0, 0.0))]);
        assert_eq!(s.n_cohesion, 1);
        assert_eq!(s.n_alignment, 1);
        assert_eq!(s.separation, Vec3::ZERO);
        // rule1 = (4.99 - 0) * 0.01; rule3 = (0,1,0) * 0.1.
        let dv = s.velocity_change(&p());
        assert_eq!(dv, Vec3::new(4.99 * 0.01, 0.1, 0.0));
    }

    #[test]
    fn separation_just_inside_and_outside() {
        let s = sums_of(Vec3::ZERO, &[(Vec3::new(0.0, 3.0, 0.0), Vec3::ZERO)]);
        assert_eq!(
            s.separation,
            Vec3::ZERO,
            "distance 3.0 is not closer than 3.0"
        );
        assert_eq!(s.n_cohesion, 1);
        let s = sums_of(Vec3::ZERO, &[(Vec3::new(0.0, 2.99, 0.0), Vec3::ZERO)]);
        assert_eq!(s.separation, Vec3::new(0.0, -2.99, 0.0));
        // Two separated neighbours are summed, not averaged: -(1,0,0) - (0,2,0), times 0.1.
        let s = sums_of(
            Vec3::ZERO,
            &[
                (Vec3::new(1.0, 0.0, 0.0), Vec3::ZERO),
                (Vec3::new(0.0, 2.0, 0.0), Vec3::ZERO),
            ],
        );
        let dv = s.velocity_change(&p());
        // rule1: mean (0.5, 1, 0) * 0.01; rule2: (-1, -2, 0) * 0.1; rule3: mean vel 0.
        let expect = Vec3::new(-1.0, -2.0, 0.0) * 0.1 + Vec3::new(0.5, 1.0, 0.0) * 0.01;
        assert_eq!(dv, expect);
    }

    #[test]
    fn alignment_does_not_subtract_own_velocity() {
        let own = Vec3::new(0.5, 0.0, 0.0);
        let s = sums_of(
            Vec3::ZERO,
            &[
                (Vec3::new(4.0, 0.0, 0.0), Vec3::new(0.0, 0.2, 0.0)),
                (Vec3::new(-4.0, 0.0, 0.0), Vec3::new(0.0, 0.4, 0.0)),
            ],
        );
        let v = new_velocity(&p(), own, &s);
        // rule1: mean position 0 -> 0; rule3: mean (0, 0.3, 0) * 0.1 = (0, 0.03, 0).
        assert_eq!(v, Vec3::new(0.5, 0.3 * 0.1, 0.0));
    }

    #[test]
    fn nested_radii_fast_path_gives_the_same_sums() {
        let p = p();
        assert!(p.radii_nested());
        let pos = Vec3::new(1.0, -2.0, 0.5);
        let (mut a, mut b) = (RuleSums::default(), RuleSums::default());
        for i in 0..2000u64 {
            let q = crate::flock::initial_position(3, i, 7.0) + pos;
            let v = crate::flock::initial_position(4, i, 1.0);
            a.accumulate(&p, pos, q, v);
            b.accumulate_nested(&p, pos, q, v);
        }
        b.n_alignment = b.n_cohesion;
        assert!(a.n_cohesion > 10 && a.separation != Vec3::ZERO, "{a:?}");
        assert_eq!(a, b);
    }

    #[test]
    fn removing_self_undoes_visiting_self() {
        let p = p();
        let (pos, own) = (Vec3::new(3.0, 4.0, 5.0), Vec3::new(0.25, -0.5, 0.125));
        let other = (Vec3::new(4.0, 4.0, 5.0), Vec3::new(0.5, 0.5, 0.5));
        let mut with_self = RuleSums::default();
        with_self.accumulate(&p, pos, pos, own);
        with_self.accumulate(&p, pos, other.0, other.1);
        with_self.remove_self(&p, own);
        let mut without = RuleSums::default();
        without.accumulate(&p, pos, other.0, other.1);
        assert_eq!(with_self, without);
    }

    #[test]
    fn speed_clamp() {
        let v = clamp_speed(Vec3::new(3.0, 4.0, 0.0), 1.0);
        assert!((crate::math::length(v) - 1.0).abs() < 1e-6);
        assert!((v.x - 0.6).abs() < 1e-6 && (v.y - 0.8).abs() < 1e-6);
        // Exactly at the limit and below: unchanged.
        assert_eq!(
            clamp_speed(Vec3::new(1.0, 0.0, 0.0), 1.0),
            Vec3::new(1.0, 0.0, 0.0)
        );
        assert_eq!(
            clamp_speed(Vec3::new(0.3, 0.0, 0.0), 1.0),
            Vec3::new(0.3, 0.0, 0.0)
        );
    }

    #[test]
    fn wrap_at_scale() {
        assert_eq!(wrap_axis(100.0, 100.0), 100.0, "exactly +scale stays");
        assert_eq!(wrap_axis(-100.0, 100.0), -100.0, "exactly -scale stays");
        assert_eq!(wrap_axis(100.01, 100.0), -100.0);
        assert_eq!(wrap_axis(-100.01, 100.0), 100.0);
        let q = integrate_position(&p(), Vec3::new(99.9, 0.0, -99.9), Vec3::new(1.0, 0.5, -1.0));
        // 99.9 + 0.2 > 100 -> -100; -99.9 - 0.2 < -100 -> +100.
        assert_eq!(q, Vec3::new(-100.0, 0.1, 100.0));
    }
}
