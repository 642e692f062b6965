//! Per-stage timers: a step is a flat list of named stages, each timed on its own.

use std::time::Duration;

/// Accumulated time per named stage over a number of steps.
#[derive(Clone, Debug, Default)]
pub struct StageTimes {
    stages: Vec<(&'static str, Duration)>,
    /// Steps accumulated.
    pub steps: u64,
}

impl StageTimes {
    /// Adds `d` to stage `name` (stages keep the order of their first appearance).
    pub fn add(&mut self, name: &'static str, d: Duration) {
        match self.stages.iter_mut().find(|(n, _)| *n == name) {
            Some((_, t)) => *t += d,
            None => self.stages.push((name, d)),
        }
    }

    /// `(stage, mean milliseconds per step)`.
    pub fn mean_ms(&self) -> Vec<(&'static str, f64)> {
        let steps = self.steps.max(1) as f64;
        self.stages
            .iter()
            .map(|(n, d)| (*n, d.as_secs_f64() * 1e3 / steps))
            .collect()
    }

    /// Sum of all stages, mean milliseconds per step.
    pub fn total_mean_ms(&self) -> f64 {
        self.mean_ms().iter().map(|(_, ms)| ms).sum()
    }

    /// One line: `name 0.123 ms, name 0.456 ms`.
    pub fn summary(&self) -> String {
        self.mean_ms()
            .iter()
            .map(|(n, ms)| format!("{n} {ms:.3} ms"))
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn reset(&mut self) {
        self.stages.clear();
        self.steps = 0;
    }
}

/// Runs `f` as stage `name` of `times` (CPU wall time).
#[inline]
pub fn stage<T>(times: &mut StageTimes, name: &'static str, f: impl FnOnce() -> T) -> T {
    let t0 = std::time::Instant::now();
    let r = f();
    times.add(name, t0.elapsed());
    r
}
