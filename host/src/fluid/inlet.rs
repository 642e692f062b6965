//! The inlets' schedule: the factor on every inlet's velocity before each step, the smooth ramp
//! up ([`murmur_common::lbm::boundary::inlet_scale`]) times a gust. A gust is a seeded random
//! process of a given intensity and time scale: independent standard normal values at knots one
//! time scale apart, joined by smoothstep (value noise), so the inflow speed varies smoothly
//! with an RMS of `intensity` at the knots. It is a pure function of the seed and the time:
//! runs, resumed runs and every backend see the same inflow.

use murmur_common::lbm::boundary::inlet_scale;
use murmur_common::rng::mix64;

/// A gust on the inlets (lattice time).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gust {
    /// RMS of the relative speed change at the knots.
    pub intensity: f64,
    /// Time between independent values, steps.
    pub time_scale: f64,
    pub seed: u64,
}

impl Gust {
    /// The standard normal value at knot `k` (Box-Muller on two counter-based uniforms).
    fn knot(&self, k: i64) -> f64 {
        let u = |i: u64| {
            let h = mix64(mix64(self.seed ^ 0x6a09_e667_f3bc_c909).wrapping_add(i));
            // In (0, 1]: 53 random bits, never 0 (the logarithm below).
            ((h >> 11) + 1) as f64 / (1u64 << 53) as f64
        };
        let i = 2 * k as u64;
        let (a, b) = (u(i), u(i.wrapping_add(1)));
        (-2.0 * a.ln()).sqrt() * (std::f64::consts::TAU * b).cos()
    }

    /// The process at time `t` (steps): the knots around `t` joined by smoothstep.
    pub fn value(&self, t: f64) -> f64 {
        let x = t / self.time_scale;
        let k = x.floor();
        let s = x - k;
        let w = s * s * (3.0 - 2.0 * s);
        let k = k as i64;
        self.knot(k) * (1.0 - w) + self.knot(k + 1) * w
    }

    /// The factor on the inlet velocity at time `t`: `1 + intensity x value(t)`, never below 0.
    pub fn factor(&self, t: f64) -> f64 {
        (1.0 + self.intensity * self.value(t)).max(0.0)
    }
}

/// What the inlets do over time: a ramp over `ramp_steps` (0: none) and an optional gust.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct InletSchedule {
    pub ramp_steps: f64,
    pub gust: Option<Gust>,
}

impl InletSchedule {
    /// A ramp alone.
    pub fn ramp(ramp_steps: f64) -> InletSchedule {
        InletSchedule {
            ramp_steps,
            gust: None,
        }
    }

    /// Whether the factor changes from step to step (the driver then sets it before each).
    pub fn varies(&self) -> bool {
        self.ramp_steps > 0.0 || self.gust.is_some()
    }

    /// The factor on every inlet's velocity during step `step` (1-based: step 1 starts at time
    /// 0, as the ramp counts).
    pub fn scale(&self, step: u64) -> f32 {
        let ramp = inlet_scale(step, self.ramp_steps);
        match &self.gust {
            None => ramp,
            Some(g) => (ramp as f64 * g.factor(step.saturating_sub(1) as f64)) as f32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gust() -> Gust {
        Gust {
            intensity: 0.2,
            time_scale: 50.0,
            seed: 3,
        }
    }

    #[test]
    fn a_gust_has_unit_variance_at_its_knots_and_is_smooth_between() {
        let g = gust();
        let n = 20_000;
        let (mut sum, mut sq) = (0.0, 0.0);
        for k in 0..n {
            let v = g.value(k as f64 * g.time_scale);
            sum += v;
            sq += v * v;
        }
        let mean = sum / n as f64;
        let var = sq / n as f64 - mean * mean;
        assert!(mean.abs() < 0.03, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "variance {var}");
        // Continuous and slowly varying: one step changes it by far less than one knot's spread.
        let worst = (0..2_000)
            .map(|t| (g.value(t as f64 + 1.0) - g.value(t as f64)).abs())
            .fold(0.0, f64::max);
        assert!(worst < 0.2, "largest change per step {worst}");
    }

    #[test]
    fn the_schedule_is_the_ramp_times_the_gust_and_repeats_with_its_seed() {
        let ramp = InletSchedule::ramp(100.0);
        assert!(ramp.varies() && !InletSchedule::ramp(0.0).varies());
        assert_eq!(ramp.scale(50), inlet_scale(50, 100.0));
        let gusty = InletSchedule {
            ramp_steps: 0.0,
            gust: Some(gust()),
        };
        assert!(gusty.varies());
        let a: Vec<f32> = (1..500).map(|s| gusty.scale(s)).collect();
        let b: Vec<f32> = (1..500).map(|s| gusty.scale(s)).collect();
        assert_eq!(a, b);
        assert!(a.iter().any(|&s| s > 1.05) && a.iter().any(|&s| s < 0.95));
        let other = InletSchedule {
            gust: Some(Gust { seed: 4, ..gust() }),
            ..gusty
        };
        assert_ne!(a, (1..500).map(|s| other.scale(s)).collect::<Vec<_>>());
    }
}
