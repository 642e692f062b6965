//! `fluid run --resume` and the checkpoint flags: which checkpoint, checked against the run,
//! restored into its backend (one lattice or a rank's slab) before any step; and the sink of a
//! run of several ranks that writes their checkpoints.

use super::super::cli::RunArgs;
use super::super::driver::Sink;
use super::super::forces::ForceSample;
use super::super::ib::plan::SampleSnapshot;
use super::super::resume::ranks::{restore_boxes, save_ranks, sources};
use super::super::resume::{Expected, FluidCheckpoint, Identity, RunExtra, SaveContext};
use super::super::sink::Out;
use super::super::slab::state::CellBox;
use super::super::{Fields, FluidBackend, FluidError};
use crate::checkpoint::{file_sink, read_manifest, resolve, CheckpointReader, Schedule};
use crate::ranks::Comm;
use anyhow::{bail, Result};
use murmur_common::lbm::Units;
use std::path::PathBuf;
use std::sync::Arc;

/// A checkpoint restored into the run's backend.
pub struct Resumed {
    /// Its path.
    pub path: PathBuf,
    /// The file holding the run's own arrays (a rider's): the checkpoint, or rank 0's piece
    /// of a manifest.
    pub arrays: PathBuf,
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

/// The checkpoint `--resume` names: a file or a manifest, and its step.
pub struct ToResume {
    pub path: PathBuf,
    pub manifest: bool,
    pub step: u64,
}

/// The checkpoint `--resume` names (a folder: its newest valid one, with a note per newer one
/// skipped on the `lead` rank), its header or manifest read.
pub fn open_resume(a: &RunArgs, lead: bool) -> Result<Option<ToResume>> {
    let Some(p) = &a.checkpoint.resume else {
        return Ok(None);
    };
    let from = resolve(p)?;
    if lead {
        for n in &from.notes {
            eprintln!("murmur: note: {n}");
        }
    }
    let step = match from.manifest {
        true => read_manifest(&from.path)?.step,
        false => CheckpointReader::open(&from.path)?.header().step,
    };
    Ok(Some(ToResume {
        path: from.path,
        manifest: from.manifest,
        step,
    }))
}

/// Refuses a checkpoint at or past the run's end.
pub fn check_steps(c: &ToResume, steps: u64) -> Result<()> {
    if c.step >= steps {
        bail!(
            "checkpoint {} is at step {}, at or past this run's end at step {steps}: give --steps \
             beyond it",
            c.path.display(),
            c.step
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

/// Checks the checkpoint against the opened backend and the scene, then restores it: one file
/// into one lattice streamed piece by piece; otherwise (a manifest, or a rank's slab: `cells`
/// its own box) the files that overlap the backend's cells. On several ranks (`comm`) every
/// rank restores or none goes on.
pub fn restore(
    c: &ToResume,
    identity: &Identity,
    backend: &mut dyn FluidBackend,
    flags: &[u8],
    rank: Option<(&dyn Comm, CellBox)>,
) -> Result<Resumed> {
    let want = Expected {
        identity,
        model: backend.model(),
        storage: backend.storage(),
        streaming: backend.streaming(),
        lattice: backend.lattice(),
    };
    let l = want.lattice;
    let done = match (c.manifest, rank) {
        (false, None) => (|| {
            let mut ck = FluidCheckpoint::open(&c.path)?;
            ck.check(&want)?;
            ck.restore(backend, flags)
        })(),
        (manifest, rank) => sources(&c.path, manifest, [l.nx, l.ny, l.nz]).and_then(|s| {
            let cells = rank.map_or(([0; 3], [l.nx, l.ny, l.nz]), |r| r.1);
            restore_boxes(&s, cells, backend, flags, &want).map(|(_, extra)| extra)
        }),
    };
    if let Some((comm, _)) = rank {
        let failed = comm.any(done.is_err())?;
        if failed && done.is_ok() {
            bail!(
                "another rank could not restore the checkpoint {}",
                c.path.display()
            );
        }
    }
    let extra = done?;
    let arrays = match c.manifest {
        false => c.path.clone(),
        true => sources(&c.path, true, [l.nx, l.ny, l.nz])?
            .into_iter()
            .next()
            .map(|s| s.path)
            .ok_or_else(|| anyhow::anyhow!("checkpoint {} has no pieces", c.path.display()))?,
    };
    Ok(Resumed {
        path: c.path.clone(),
        arrays,
        step: c.step,
        extra,
    })
}

/// The checkpoints of a run of several ranks: a sink that hands everything to the rank's own
/// sink and writes a checkpoint of the rank's box (with rank 0's manifest) when due and at a
/// stop.
pub struct RankCheckpoints<'a> {
    pub inner: &'a mut dyn Sink,
    pub schedule: Schedule,
    pub identity: Identity,
    pub units: Units,
    /// The whole lattice's flags.
    pub flags: Vec<u8>,
    /// This rank's own box.
    pub cells: CellBox,
    pub comm: Arc<dyn Comm>,
    /// The manifests written, oldest first.
    pub written: Vec<PathBuf>,
}

impl Sink for RankCheckpoints<'_> {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.inner.after_step(backend)
    }

    fn fields(
        &mut self,
        step: u64,
        fields: &Fields,
        samples: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError> {
        self.inner.fields(step, fields, samples)
    }

    fn wants_fields(&self) -> bool {
        self.inner.wants_fields()
    }

    fn forces(&mut self, rows: &[ForceSample]) -> Result<(), FluidError> {
        self.inner.forces(rows)
    }

    fn force_state(&self) -> Option<super::super::forces::state::SeriesState> {
        self.inner.force_state()
    }

    fn checkpoint_due(&self, step: u64) -> bool {
        self.schedule.due(step)
    }

    fn checkpoint(
        &mut self,
        backend: &mut dyn FluidBackend,
        last_output: Option<u64>,
        arrays: Vec<super::super::resume::NamedArray>,
    ) -> Result<(), FluidError> {
        if self.written.is_empty() {
            self.schedule.prepare()?;
        }
        // A rider's arrays (every rank's, gathered) go into rank 0's piece.
        let extra = RunExtra {
            series: self.inner.force_state(),
            last_output,
            arrays: if self.comm.rank() == 0 {
                arrays
            } else {
                Vec::new()
            },
        };
        let cx = SaveContext {
            identity: &self.identity,
            units: self.units,
            flags: &self.flags,
            extra: &extra,
            factory: &file_sink,
        };
        let m = save_ranks(&self.schedule, backend, &cx, self.cells, &*self.comm)?;
        self.written.push(m);
        Ok(())
    }
}
