//! The run driver: picks a backend, steps it with a progress bar, reports figures.

use super::{cpu::CpuFlock, FlockBackend, FlockSettings, FlockState, SimError};
use crate::stop::{Never, StopProbe, Stopped};
use std::time::{Duration, Instant};

pub use crate::backend::BackendChoice;

/// Where a flock starts.
#[derive(Clone, Debug)]
pub enum Start {
    /// The CIS 565 random start (generated on the device by the CUDA backend: no host copy).
    Random { n: usize, seed: u64 },
    /// A given state (e.g. a snapshot).
    State(FlockState),
}

impl Start {
    pub fn len(&self) -> usize {
        match self {
            Start::Random { n, .. } => *n,
            Start::State(s) => s.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The state on the host.
    pub fn to_state(&self, scale: f32) -> FlockState {
        match self {
            Start::Random { n, seed } => FlockState::random(*n, scale, *seed),
            Start::State(s) => s.clone(),
        }
    }
}

fn open_cuda(
    settings: &FlockSettings,
    start: &Start,
    device: usize,
) -> Result<Box<dyn FlockBackend>, SimError> {
    Ok(match start {
        Start::Random { n, seed } => super::cuda::open_random(settings, *n as u32, *seed, device)?,
        Start::State(s) => super::cuda::open(settings, s, device)?,
    })
}

/// Opens a backend (CUDA on GPU 0). With `Auto`, a CUDA failure falls back to the CPU and the
/// reason is returned.
pub fn open_backend(
    choice: BackendChoice,
    settings: &FlockSettings,
    start: &Start,
) -> Result<(Box<dyn FlockBackend>, Option<String>), SimError> {
    open_backend_on(choice, 0, settings, start)
}

/// [`open_backend`] with CUDA on GPU `device`.
pub fn open_backend_on(
    choice: BackendChoice,
    device: usize,
    settings: &FlockSettings,
    start: &Start,
) -> Result<(Box<dyn FlockBackend>, Option<String>), SimError> {
    choice.open(
        || -> Result<Box<dyn FlockBackend>, SimError> {
            let n = start.len() as u64;
            let cells = if settings.method.uses_grid() {
                settings.grid().cell_count() as u64
            } else {
                0
            };
            crate::preflight::check_host_memory(
                &format!("the CPU flock of {n} boids"),
                super::cpu_host_bytes(n, cells),
            )?;
            Ok(Box::new(CpuFlock::new(
                settings,
                &start.to_state(settings.params.scale),
            )))
        },
        || open_cuda(settings, start, device),
    )
}

/// Figures of one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub steps: u64,
    pub n: usize,
    pub wall: Duration,
    pub gpu_ms_per_step: Option<f64>,
    pub stages: String,
    /// Set when the stop probe ended the run early (`steps` is then the steps done).
    pub stopped: Option<Stopped>,
}

impl RunReport {
    /// Boid updates per second of wall time.
    pub fn boids_per_second(&self) -> f64 {
        self.steps as f64 * self.n as f64 / self.wall.as_secs_f64().max(1e-12)
    }

    /// The one-line summary.
    pub fn summary(&self, what: &str) -> String {
        let ms = self.wall.as_secs_f64() * 1e3 / self.steps.max(1) as f64;
        let mut s = format!(
            "{} steps of {} boids ({what}) in {:.3} s: {:.3} ms/step wall, {} boid-steps/s",
            self.steps,
            self.n,
            self.wall.as_secs_f64(),
            ms,
            si(self.boids_per_second())
        );
        if let Some(g) = self.gpu_ms_per_step {
            s += &format!(", {g:.4} ms/step GPU (CUDA events)");
        }
        s
    }
}

/// `x` as a value and an SI prefix: `(1.23, "M")` for 1.23e6.
pub fn si_parts(x: f64) -> (f64, &'static str) {
    if x >= 1e9 {
        (x / 1e9, "G")
    } else if x >= 1e6 {
        (x / 1e6, "M")
    } else if x >= 1e3 {
        (x / 1e3, "k")
    } else {
        (x, "")
    }
}

/// `1.23M` style numbers.
pub fn si(x: f64) -> String {
    let (v, u) = si_parts(x);
    format!("{v:.2}{u}")
}

/// Runs `steps` steps, with a progress bar on a terminal.
pub fn run(
    backend: &mut dyn FlockBackend,
    steps: u64,
    progress: bool,
) -> Result<RunReport, SimError> {
    run_until(backend, steps, progress, &mut Never)
}

/// [`run`], asking `stop` after every step but the last whether to end there: then the report's `stopped`
/// names the last step done (steps into this run) and `steps` counts the steps done.
pub fn run_until(
    backend: &mut dyn FlockBackend,
    steps: u64,
    progress: bool,
    stop: &mut dyn StopProbe,
) -> Result<RunReport, SimError> {
    run_with(backend, steps, progress, stop, &mut |_, _| Ok(()))
}

/// What [`run_with`] calls after each step, `done` steps into the run (1, 2, ..., the last
/// included), before it asks the stop probe: a checkpoint, for `flock run`.
pub type AfterStep<'a> = dyn FnMut(&mut dyn FlockBackend, u64) -> Result<(), SimError> + 'a;

/// [`run_until`], calling `after` after every step (its time is in the wall time).
pub fn run_with(
    backend: &mut dyn FlockBackend,
    steps: u64,
    progress: bool,
    stop: &mut dyn StopProbe,
    after: &mut AfterStep<'_>,
) -> Result<RunReport, SimError> {
    let bar = crate::backend::step_bar(steps, progress);
    backend.reset_times();
    let t0 = Instant::now();
    let mut done = 0;
    let mut stopped = None;
    while done < steps {
        backend.step()?;
        done += 1;
        bar.inc(1);
        after(backend, done)?;
        if done < steps && stop.stop_after(done)? {
            stopped = Some(Stopped { step: done });
            break;
        }
    }
    // Every queued step has finished before the clock stops.
    backend.synchronize()?;
    let wall = t0.elapsed();
    let gpu = backend.gpu_ms_per_step();
    bar.finish_and_clear();
    let times = backend.times()?;
    Ok(RunReport {
        steps: done,
        n: backend.len(),
        wall,
        gpu_ms_per_step: gpu,
        stages: times.summary(),
        stopped,
    })
}
