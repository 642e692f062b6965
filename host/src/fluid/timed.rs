//! The timed run every fluid bench and the tuner share: warm up, wait for the device, drop the
//! warm-up's force records, reset the timers, time the steps, wait again.

use super::{FluidBackend, FluidError};
use crate::timing::StageTimes;
use murmur_common::lbm::boundary::inlet_scale;
use std::time::Instant;

/// Untimed steps before the timed ones, the one warm-up policy of `fluid bench`, `fluid scale`,
/// `fluid boundary-bench`, `fluid ib-bench` (their `--warmup` default) and `fluid tune`: enough
/// for the first launches (module loading, the first use of each kernel), the caches and the
/// first steps of an inlet ramp, and short beside any timed run (10 steps or more).
pub const WARMUP_STEPS: u64 = 10;

/// How each step of a timed run (warm-up included) is taken.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepOptions {
    /// The inlets ramp as in a run over this many steps (0: the inlet scale is left alone).
    pub ramp: f64,
    /// The solids' force records are read (and dropped) after every step whose count is a
    /// multiple of this (0: never): long runs with solids, whose record ring would fill.
    pub drain_every: u64,
}

impl StepOptions {
    /// Plain steps: no inlet ramp, no reads of the force records.
    pub const PLAIN: StepOptions = StepOptions {
        ramp: 0.0,
        drain_every: 0,
    };

    /// Steps with the inlets ramped over `ramp` steps.
    pub fn ramped(ramp: f64) -> StepOptions {
        StepOptions {
            ramp,
            ..StepOptions::PLAIN
        }
    }

    /// One step of `b`.
    pub fn step(&self, b: &mut dyn FluidBackend) -> Result<(), FluidError> {
        if self.ramp > 0.0 {
            b.set_inlet_scale(inlet_scale(b.step_count() + 1, self.ramp));
        }
        b.step()?;
        if self.drain_every > 0 && b.step_count().is_multiple_of(self.drain_every) {
            b.take_forces()?;
        }
        Ok(())
    }
}

/// The figures of the timed steps.
#[derive(Clone, Debug)]
pub struct Timed {
    /// Timed steps.
    pub steps: u64,
    /// Wall clock from the first timed step to the device's idle after the last, ms per step.
    pub wall_ms: f64,
    /// Mean GPU time per step from CUDA events (None on the CPU).
    pub gpu_ms: Option<f64>,
    /// The stage times of the timed steps.
    pub times: StageTimes,
}

impl Timed {
    /// Milliseconds per step: CUDA events where the backend has them, else the wall clock.
    pub fn ms_per_step(&self) -> f64 {
        self.gpu_ms.unwrap_or(self.wall_ms)
    }
}

/// Runs `warmup` untimed steps of `b`, waits for the device, drops the force records of the
/// warm-up (the records read after the call are the timed steps'), resets the stage times, then
/// times `steps` steps (at least 1) up to the device's idle. Each step as `options` says.
pub fn timed_steps(
    b: &mut dyn FluidBackend,
    warmup: u64,
    steps: u64,
    options: StepOptions,
) -> Result<Timed, FluidError> {
    for _ in 0..warmup {
        options.step(b)?;
    }
    b.synchronize()?;
    b.take_forces()?;
    b.reset_times();
    let t0 = Instant::now();
    for _ in 0..steps {
        options.step(b)?;
    }
    b.synchronize()?;
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let gpu_ms = b.gpu_ms_per_step();
    Ok(Timed {
        steps,
        wall_ms,
        gpu_ms,
        times: b.times()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::scene::taylor_green;
    use murmur_common::lbm::CollisionModel;

    #[test]
    fn the_timed_steps_follow_the_warm_up() {
        let setup = taylor_green(8, 8, 0.05, 0.01, CollisionModel::Bgk).unwrap();
        let mut b = crate::fluid::driver::open_cpu(&setup).unwrap();
        let t = timed_steps(b.as_mut(), 3, 4, StepOptions::PLAIN).unwrap();
        assert_eq!(b.step_count(), 7);
        assert_eq!((t.steps, t.times.steps), (4, 4), "the warm-up is not timed");
        assert!(t.wall_ms > 0.0 && t.wall_ms.is_finite(), "{}", t.wall_ms);
        assert_eq!(t.gpu_ms, None);
        assert_eq!(t.ms_per_step(), t.wall_ms);
        assert!(!t.times.mean_ms().is_empty());
    }

    #[test]
    fn plain_steps_leave_the_inlet_scale_alone() {
        assert_eq!(StepOptions::ramped(50.0).ramp, 50.0);
        assert_eq!(StepOptions::ramped(50.0).drain_every, 0);
        assert_eq!(StepOptions::default(), StepOptions::PLAIN);
    }
}
