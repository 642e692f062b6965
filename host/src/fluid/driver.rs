//! The run driver: picks a backend, steps it with a progress bar, checks for NaN, hands fields
//! to the output and reports figures.

use super::forces::ForceSample;
use super::ib::plan::SampleSnapshot;
use super::{Fields, FluidBackend, FluidError, Setup};
use crate::stop::{Never, StopProbe, Stopped};
use murmur_common::lbm::health::{self, Bounds, Report};
use std::time::{Duration, Instant};

pub use crate::backend::BackendChoice;

/// Opens a backend (CUDA on GPU 0). With `Auto`, a CUDA failure falls back to the CPU and the
/// reason is returned.
pub fn open_backend(
    choice: BackendChoice,
    setup: &Setup,
) -> Result<(Box<dyn FluidBackend>, Option<String>), FluidError> {
    open_backend_on(choice, 0, setup)
}

/// [`open_backend`] with CUDA on GPU `device`.
pub fn open_backend_on(
    choice: BackendChoice,
    device: usize,
    setup: &Setup,
) -> Result<(Box<dyn FluidBackend>, Option<String>), FluidError> {
    choice.open(
        || open_cpu(setup),
        || super::cuda::open_on(crate::gpu::Gpu::open_device(device)?, setup),
    )
}

/// The CPU backend, after checking that its populations (and one cell's outlet velocity per
/// cell, the CPU's simple indexing) fit the host's available memory.
pub fn open_cpu(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    let l = setup.lattice();
    crate::preflight::check_host_memory(
        &format!("the CPU lattice of {} x {} x {} cells", l.nx, l.ny, l.nz),
        setup.lattice_bytes(setup.streaming.unwrap_or_default(), 0) + 12 * l.cells() as u64,
    )?;
    super::cpu::open(setup)
}

/// The last output that passed the health check (its step; the health check's messages name
/// it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LastOutput {
    pub step: u64,
}

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub steps: u64,
    /// Health check every this many steps (0: only on output steps).
    pub check_every: u64,
    /// Hand the fields to the output every this many steps (0: only after the last step).
    pub output_every: u64,
    /// Hand the solids' forces to the output every this many steps (0: only after the last
    /// step); the backends keep them meanwhile.
    pub forces_every: u64,
    /// Bounds of the health check.
    pub health: Bounds,
    /// What the inlets do over time: before step `k` the inlet scale is set to
    /// `inlet.scale(k)` when it varies (a ramp, a gust).
    pub inlet: super::inlet::InletSchedule,
    pub progress: bool,
}

/// Where a run's results go.
pub trait Sink {
    /// After every step, before its health check and outputs (a rider from a layer above the
    /// fluid steps here: [`super::riders::RidingSink`]).
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let _ = backend;
        Ok(())
    }
    /// The fields of an output step (they passed the health check), with the solids' samples.
    fn fields(
        &mut self,
        step: u64,
        fields: &Fields,
        samples: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError>;
    /// After [`Sink::fields`] of output step `step`: what else the step writes from `backend`
    /// (a rider's files: [`super::riders::RidingSink`]).
    fn outputs(&mut self, step: u64, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let _ = (step, backend);
        Ok(())
    }
    /// Whether output steps should compute the fields for [`Sink::fields`] (false: a run that
    /// writes no fields never allocates them).
    fn wants_fields(&self) -> bool {
        true
    }
    /// Forces on the solids, oldest first (lattice units).
    fn forces(&mut self, rows: &[ForceSample]) -> Result<(), FluidError> {
        let _ = rows;
        Ok(())
    }
    /// The force series' summary state a checkpoint keeps (`None`: no series here).
    fn force_state(&self) -> Option<super::forces::state::SeriesState> {
        None
    }
    /// Whether the run writes a checkpoint after the step count `step` (the driver hands the
    /// forces over first, so that the checkpoint holds no pending record).
    fn checkpoint_due(&self, step: u64) -> bool {
        let _ = step;
        false
    }
    /// Writes a checkpoint of `backend` (after the step `backend.step_count()`); `last_output`
    /// the last output written. Called when [`Sink::checkpoint_due`] says so, and when the stop
    /// probe ends the run (a sink without checkpoints does nothing). `arrays`: what a rider
    /// keeps beside the backend ([`super::riders::RidingSink`] adds them; the driver passes
    /// none).
    fn checkpoint(
        &mut self,
        backend: &mut dyn FluidBackend,
        last_output: Option<u64>,
        arrays: Vec<super::resume::NamedArray>,
    ) -> Result<(), FluidError> {
        let _ = (backend, last_output, arrays);
        Ok(())
    }
}

/// A sink that keeps nothing.
pub struct Discard;

impl Sink for Discard {
    fn fields(&mut self, _: u64, _: &Fields, _: Option<&SampleSnapshot>) -> Result<(), FluidError> {
        Ok(())
    }
}

/// The sink of a rank other than rank 0 in a run of several: it takes the same collective
/// steps as rank 0's sink (the fields are gathered on every rank) and keeps nothing.
pub struct Follower {
    /// Whether rank 0's sink wants fields (then this rank must join their gathering).
    pub fields: bool,
}

impl Sink for Follower {
    fn fields(&mut self, _: u64, _: &Fields, _: Option<&SampleSnapshot>) -> Result<(), FluidError> {
        Ok(())
    }

    fn wants_fields(&self) -> bool {
        self.fields
    }
}

/// Figures of one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub steps: u64,
    pub cells: usize,
    pub wall: Duration,
    pub gpu_ms_per_step: Option<f64>,
    pub stages: String,
    /// What the last health check found.
    pub health: Option<Report>,
    /// Set when the stop probe ended the run early (`steps` is then the steps done).
    pub stopped: Option<Stopped>,
}

impl RunReport {
    /// Million lattice-cell updates per second of wall time (all cells, fluid or not).
    pub fn mlups(&self) -> f64 {
        self.steps as f64 * self.cells as f64 / self.wall.as_secs_f64().max(1e-12) / 1e6
    }

    pub fn summary(&self, what: &str) -> String {
        let mut s = format!(
            "{} steps of {} cells ({what}) in {:.3} s: {:.1} MLUPs/s wall",
            self.steps,
            self.cells,
            self.wall.as_secs_f64(),
            self.mlups()
        );
        if let Some(g) = self.gpu_ms_per_step {
            s += &format!(
                ", {g:.4} ms/step GPU ({:.0} MLUPs/s, CUDA events)",
                self.cells as f64 / g / 1e3
            );
        }
        s
    }
}

/// Describes why the cell at `pos` failed the health check.
fn describe(bounds: &Bounds, rho: f32, u: [f32; 3], pos: [u32; 3]) -> String {
    let ma = health::mach(u);
    if !(rho.is_finite() && u.iter().all(|v| v.is_finite())) {
        format!("non-finite value (density {rho}, velocity {u:?})")
    } else if (rho - 1.0).abs() > bounds.max_density_deviation && !bounds.exempts(pos) {
        format!(
            "density {rho:.4} (bound |rho - 1| <= {})",
            bounds.max_density_deviation
        )
    } else {
        format!("local Mach number {ma:.3} (bound {})", bounds.max_mach)
    }
}

/// The health check of every command (`fluid run`, `render`, `view`, `validate`): the backend
/// reduces its fields against `bounds` (on the GPU: a few words come back). A cell out of
/// bounds, or a mean density beyond them, is [`FluidError::Unhealthy`] naming the step, the
/// cell (none for the mean) and the quantity; `every` (the check's interval) and `last_output`
/// (the last output written) complete its message.
pub fn check_health(
    backend: &mut dyn FluidBackend,
    bounds: &Bounds,
    every: u64,
    last_output: Option<u64>,
) -> Result<Option<Report>, FluidError> {
    let report = backend.health(bounds)?;
    let Some(r) = report else {
        return Ok(None);
    };
    let step = backend.step_count();
    let unhealthy = |cell, what| FluidError::Unhealthy {
        step,
        every,
        cell,
        what,
        last_output,
    };
    if let Some(cell) = r.first_bad {
        let c = cell as usize;
        let (x, y, z) = backend.lattice().coords(c);
        let (rho, u) = backend.cell_state(c)?;
        return Err(unhealthy(
            Some([x, y, z]),
            describe(bounds, rho, u, [x, y, z]),
        ));
    }
    let mean = r.mean_rho();
    if !bounds.mean_healthy(mean) {
        return Err(unhealthy(
            None,
            format!(
                "mean density {mean:.4} of {} fluid cells (bound |mean - 1| <= {})",
                r.fluid, bounds.max_density_deviation
            ),
        ));
    }
    Ok(report)
}

/// Runs `opts.steps` steps. Every `check_every` steps and on output steps the backend reduces
/// the fields' health (on the GPU: a few words come back); a cell out of bounds stops the run
/// with [`FluidError::Unhealthy`] naming the step, the cell and the quantity, before that
/// step's output is written, so every output written passed. `last_good` holds the last output
/// handed to the sink. Forces go to the sink every `forces_every` steps and at the end.
/// Health checks, outputs, force hand-overs and checkpoints fall on multiples of their
/// intervals in the lattice's step count (not the steps of this call), so a resumed run keeps
/// the cadence of the run it continues.
pub fn run(
    backend: &mut dyn FluidBackend,
    opts: RunOptions,
    last_good: &mut Option<LastOutput>,
    sink: &mut dyn Sink,
) -> Result<RunReport, FluidError> {
    run_until(backend, opts, last_good, sink, &mut Never)
}

/// [`run`], asking `stop` after every step but the last whether to end there. A stopped run
/// hands the forces kept so far to the sink (no fields: the step is no output step) and its
/// report's `stopped` names the lattice's step count; `steps` counts the steps done.
pub fn run_until(
    backend: &mut dyn FluidBackend,
    opts: RunOptions,
    last_good: &mut Option<LastOutput>,
    sink: &mut dyn Sink,
    stop: &mut dyn StopProbe,
) -> Result<RunReport, FluidError> {
    let bar = crate::backend::step_bar(opts.steps, opts.progress);
    if opts.steps == 0 && sink.wants_fields() {
        let fields = backend.fields()?;
        let samples = backend.samples()?;
        sink.fields(backend.step_count(), &fields, samples.as_ref())?;
        sink.outputs(backend.step_count(), backend)?;
        *last_good = Some(LastOutput {
            step: backend.step_count(),
        });
    }
    let lattice = backend.lattice();
    backend.reset_times();
    let first = backend.step_count();
    let mut report = None;
    let mut stopped = None;
    let mut done = 0;
    let t0 = Instant::now();
    for i in 1..=opts.steps {
        let step = first + i;
        let check = opts.check_every > 0 && step.is_multiple_of(opts.check_every);
        let out =
            i == opts.steps || (opts.output_every > 0 && step.is_multiple_of(opts.output_every));
        if opts.inlet.varies() {
            backend.set_inlet_scale(opts.inlet.scale(step));
        }
        backend.step()?;
        sink.after_step(backend)?;
        if check || out {
            let last = last_good.as_ref().map(|c| c.step);
            report = check_health(backend, &opts.health, opts.check_every, last)
                .inspect_err(|_| bar.finish_and_clear())?;
            if out && sink.wants_fields() {
                let fields = backend.fields()?;
                let samples = backend.samples()?;
                sink.fields(step, &fields, samples.as_ref())?;
                sink.outputs(step, backend)?;
                *last_good = Some(LastOutput { step });
            }
        }
        done = i;
        let stop_here = i < opts.steps && stop.stop_after(i)?;
        if stop_here {
            stopped = Some(Stopped { step });
        }
        let save = stop_here || sink.checkpoint_due(step);
        if i == opts.steps
            || save
            || (opts.forces_every > 0 && step.is_multiple_of(opts.forces_every))
        {
            let rows = backend.take_forces()?;
            if !rows.is_empty() {
                sink.forces(&rows)?;
            }
        }
        if save {
            let last = last_good.as_ref().map(|c| c.step);
            sink.checkpoint(backend, last, Vec::new())
                .inspect_err(|_| bar.finish_and_clear())?;
        }
        bar.inc(1);
        if stop_here {
            break;
        }
    }
    backend.synchronize()?;
    let gpu = backend.gpu_ms_per_step();
    let wall = t0.elapsed();
    bar.finish_and_clear();
    Ok(RunReport {
        steps: done,
        cells: lattice.cells(),
        wall,
        gpu_ms_per_step: gpu,
        stages: backend.times()?.summary(),
        health: report,
        stopped,
    })
}
