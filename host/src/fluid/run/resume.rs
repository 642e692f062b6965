//! `fluid run --resume` and the checkpoint flags: which checkpoint, checked against the run,
//! restored into its backend before any step.

use super::super::cli::RunArgs;
use super::super::resume::{Expected, FluidCheckpoint, Identity, RunExtra};
use super::super::sink::Out;
use super::super::FluidBackend;
use crate::checkpoint::{resolve, Schedule};
use anyhow::{bail, Result};
use std::path::PathBuf;

/// A checkpoint restored into the run's backend.
pub struct Resumed {
    /// Its path.
    pub path: PathBuf,
    /// Its step (the backend's step count now).
    pub step: u64,
    /// The run's state beside the backend.
    pub extra: RunExtra,
}

impl Resumed {
    /// The line a resumed run prints after its header.
    pub fn line(&self, steps: u64) -> String {
        format!(
            "resumed from step {} ({}): {} steps to step {steps}",
            self.step,
            self.path.display(),
            steps - self.step
        )
    }
}

/// The checkpoint `--resume` names (a folder: its newest valid one, with a note per newer one
/// skipped), opened and its header read.
pub fn open_resume(a: &RunArgs) -> Result<Option<(FluidCheckpoint, PathBuf)>> {
    let Some(p) = &a.checkpoint.resume else {
        return Ok(None);
    };
    let from = resolve(p)?;
    for n in &from.notes {
        eprintln!("murmur: note: {n}");
    }
    if from.manifest {
        bail!(
            "{} is a checkpoint of several ranks: fluid run reads those on several ranks only",
            from.path.display()
        );
    }
    Ok(Some((FluidCheckpoint::open(&from.path)?, from.path)))
}

/// Refuses a checkpoint at or past the run's end.
pub fn check_steps(c: &(FluidCheckpoint, PathBuf), steps: u64) -> Result<()> {
    let s = c.0.step();
    if s >= steps {
        bail!(
            "checkpoint {} is at step {s}, at or past this run's end at step {steps}: give --steps \
             beyond it",
            c.1.display()
        );
    }
    Ok(())
}

/// The run's checkpoint schedule: `--checkpoint-dir`, else `checkpoints` beside the outputs.
pub fn schedule(a: &RunArgs, name: &str, out: &Out) -> Schedule {
    let (path, is_dir) = match out {
        Out::None => (None, false),
        Out::File(p) => (Some(p.as_path()), false),
        Out::Dir(d) => (Some(d.as_path()), true),
    };
    Schedule::new(&a.checkpoint, name, path, is_dir)
}

/// Checks the checkpoint against the opened backend and the scene, then restores it.
pub fn restore(
    c: &mut (FluidCheckpoint, PathBuf),
    identity: &Identity,
    backend: &mut dyn FluidBackend,
    flags: &[u8],
) -> Result<Resumed> {
    let want = Expected {
        identity,
        model: backend.model(),
        storage: backend.storage(),
        streaming: backend.streaming(),
        lattice: backend.lattice(),
    };
    c.0.check(&want)?;
    let extra = c.0.restore(backend, flags)?;
    Ok(Resumed {
        path: c.1.clone(),
        step: c.0.step(),
        extra,
    })
}
