//! A run's checkpoints as `fluid run` writes them: every `--checkpoint-every` steps and at a
//! stop, to `--checkpoint-dir` (or `checkpoints` beside the outputs), `--keep` newest kept.

use super::{save, Identity, RunExtra, SaveContext};
use crate::checkpoint::{file_sink, Schedule, SinkFactory};
use crate::fluid::forces::state::SeriesState;
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::lbm::Units;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The checkpoints of one run (one lattice).
pub struct Checkpoints {
    /// When and where.
    pub schedule: Schedule,
    /// The scene's identity.
    pub identity: Identity,
    /// The scene's units.
    pub units: Units,
    /// Where the bytes go (files; a failing sink in tests).
    pub factory: Box<SinkFactory>,
    /// Checkpoints written by this run, with their sizes, oldest first.
    pub written: Vec<(PathBuf, u64)>,
    /// Time spent writing them.
    pub time: Duration,
}

impl Checkpoints {
    /// The checkpoints of `schedule` for a scene of `identity` and `units`, written to files.
    pub fn new(schedule: Schedule, identity: Identity, units: Units) -> Checkpoints {
        Checkpoints {
            schedule,
            identity,
            units,
            factory: Box::new(file_sink),
            written: Vec::new(),
            time: Duration::ZERO,
        }
    }

    /// Writes the checkpoint of `backend` at its step, then applies `--keep`.
    pub fn write(
        &mut self,
        backend: &mut dyn FluidBackend,
        flags: &[u8],
        series: Option<SeriesState>,
        last_output: Option<u64>,
    ) -> Result<(), FluidError> {
        let t0 = Instant::now();
        if self.written.is_empty() {
            // The folder at the first write (a run without checkpoint flags writes one only at
            // a stop).
            self.schedule.prepare()?;
        }
        let path = self.schedule.path(backend.step_count());
        let extra = RunExtra {
            series,
            last_output,
        };
        let cx = SaveContext {
            identity: &self.identity,
            units: self.units,
            flags,
            extra: &extra,
            factory: &*self.factory,
        };
        let w = save(&path, backend, &cx)?;
        self.schedule.rotate(&w.path)?;
        self.time += t0.elapsed();
        self.written.push((w.path, w.bytes));
        Ok(())
    }

    /// The last checkpoint written.
    pub fn last(&self) -> Option<&std::path::Path> {
        self.written.last().map(|(p, _)| p.as_path())
    }

    /// The summary line: how many, where, how big and how long (`None` if none was written).
    pub fn summary(&self) -> Option<String> {
        let (last, bytes) = self.written.last()?;
        let n = self.written.len();
        let mib = *bytes as f64 / (1u64 << 20) as f64;
        let secs = self.time.as_secs_f64() / n as f64;
        Some(format!(
            "checkpoints: {n} written ({mib:.1} MiB, {secs:.3} s each, {:.0} MiB/s), the last {}",
            mib / secs.max(1e-9),
            last.display()
        ))
    }
}
