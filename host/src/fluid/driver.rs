//! The run driver: picks a backend, steps it with a progress bar, checks for NaN, hands fields
//! to the output and reports figures.

use super::{cpu::CpuFluid, Fields, FluidBackend, FluidError, Setup};
use murmur_common::lbm::boundary::inlet_scale;
use murmur_common::lbm::layout::BYTES_PER_CELL_STORED;
use std::time::{Duration, Instant};

pub use crate::backend::BackendChoice;

/// Opens a backend. With `Auto`, a CUDA failure falls back to the CPU and the reason is returned.
pub fn open_backend(
    choice: BackendChoice,
    setup: &Setup,
) -> Result<(Box<dyn FluidBackend>, Option<String>), FluidError> {
    choice.open(
        || -> Result<Box<dyn FluidBackend>, FluidError> { Ok(Box::new(open_cpu(setup)?)) },
        || super::cuda::open(setup),
    )
}

/// The CPU backend, after checking that its populations fit the host's available memory.
pub fn open_cpu(setup: &Setup) -> Result<CpuFluid, FluidError> {
    let l = setup.lattice();
    crate::preflight::check_host_memory(
        &format!("the CPU lattice of {} x {} x {} cells", l.nx, l.ny, l.nz),
        l.cells() as u64 * BYTES_PER_CELL_STORED,
    )?;
    CpuFluid::new(setup)
}

/// The last state whose fields were checked finite.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    pub step: u64,
    pub fields: Fields,
}

/// How to run.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub steps: u64,
    /// NaN check every this many steps (0: never).
    pub check_every: u64,
    /// Call the output every this many steps (0: only after the last step).
    pub output_every: u64,
    /// Steps over which the inlets ramp up (0: none): before step `k` the inlet scale is set to
    /// `murmur_common::lbm::boundary::inlet_scale(k, inlet_ramp)`.
    pub inlet_ramp: f64,
    pub progress: bool,
}

/// Figures of one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub steps: u64,
    pub cells: usize,
    pub wall: Duration,
    pub gpu_ms_per_step: Option<f64>,
    pub stages: String,
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

/// Runs `opts.steps` steps. Fields are stored and checked every `check_every` steps; a finite
/// check updates `last_good`, a failed one stops the run with [`FluidError::NonFinite`] naming
/// the step (the caller saves `last_good`). `output(step, fields)` gets the fields every
/// `output_every` steps and after the last step (with 0 steps: the initial fields).
pub fn run(
    backend: &mut dyn FluidBackend,
    flags: &[u8],
    opts: RunOptions,
    last_good: &mut Option<Checkpoint>,
    mut output: impl FnMut(u64, &Fields) -> Result<(), FluidError>,
) -> Result<RunReport, FluidError> {
    let bar = crate::backend::step_bar(opts.steps, opts.progress);
    if last_good.is_none() {
        *last_good = Some(Checkpoint {
            step: 0,
            fields: backend.fields()?,
        });
    }
    if opts.steps == 0 {
        if let Some(c) = last_good.as_ref() {
            output(c.step, &c.fields)?;
        }
    }
    let lattice = backend.lattice();
    backend.reset_times();
    let t0 = Instant::now();
    for step in 1..=opts.steps {
        let check = opts.check_every > 0 && step % opts.check_every == 0;
        let out = step == opts.steps || (opts.output_every > 0 && step % opts.output_every == 0);
        if opts.inlet_ramp > 0.0 {
            backend.set_inlet_scale(inlet_scale(step, opts.inlet_ramp));
        }
        backend.step(check || out)?;
        if check || out {
            let fields = backend.fields()?;
            if let Some(cell) = fields.first_non_finite(flags) {
                bar.finish_and_clear();
                let (x, y, z) = lattice.coords(cell);
                return Err(FluidError::NonFinite {
                    step,
                    last_good: last_good.as_ref().map_or(0, |c| c.step),
                    every: opts.check_every,
                    x,
                    y,
                    z,
                });
            }
            if out {
                output(step, &fields)?;
            }
            *last_good = Some(Checkpoint { step, fields });
        }
        bar.inc(1);
    }
    backend.synchronize()?;
    let gpu = backend.gpu_ms_per_step();
    let wall = t0.elapsed();
    bar.finish_and_clear();
    Ok(RunReport {
        steps: opts.steps,
        cells: lattice.cells(),
        wall,
        gpu_ms_per_step: gpu,
        stages: backend.times()?.summary(),
    })
}
