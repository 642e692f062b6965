//! A run's checkpoints as `fluid run` writes them: every `--checkpoint-every` steps and at a
//! stop, to `--checkpoint-dir` (or `checkpoints` beside the outputs), `--keep` newest kept.
//!
//! Where the backend can copy its populations ([`FluidBackend::snapshot`]: on the GPU, or in
//! the host's memory for the CPU reference), the file is written from the copy on a thread of
//! its own while the run goes on: the run pauses only for the copy and the small state. One
//! checkpoint is in flight at a time; the next one, the run's end and a stop wait for it
//! ([`Checkpoints::settle`]), and `--keep` applies once it is complete.

use super::{capture, write_body, Identity, RunExtra, SaveContext};
use crate::checkpoint::{file_sink, Schedule, SinkFactory, Written};
use crate::fluid::forces::state::SeriesState;
use crate::fluid::state::snapshot::{Live, Snapshot};
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::lbm::Units;
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A checkpoint being written from a snapshot on its own thread.
struct InFlight {
    started: Instant,
    thread: JoinHandle<Result<Written, FluidError>>,
}

/// The checkpoints of one run (one lattice).
pub struct Checkpoints {
    /// When and where.
    pub schedule: Schedule,
    /// The scene's identity.
    pub identity: Identity,
    /// The scene's units.
    pub units: Units,
    /// Where the bytes go (files; a failing sink in tests).
    pub factory: Arc<SinkFactory>,
    /// Whether to write from a snapshot beside the run where the backend takes one (`false`:
    /// always between two steps, the run waiting).
    pub beside: bool,
    /// Checkpoints written by this run, with their sizes, oldest first.
    pub written: Vec<(PathBuf, u64)>,
    /// Time the run spent on them (the whole write, or the snapshot and the small state, and
    /// any wait for the one in flight).
    pub time: Duration,
    /// Of those, the ones written beside the run, and their writers' time.
    pub beside_count: usize,
    pub beside_time: Duration,
    in_flight: Option<InFlight>,
}

impl Checkpoints {
    /// The checkpoints of `schedule` for a scene of `identity` and `units`, written to files.
    pub fn new(schedule: Schedule, identity: Identity, units: Units) -> Checkpoints {
        Checkpoints {
            schedule,
            identity,
            units,
            factory: Arc::new(file_sink),
            beside: true,
            written: Vec::new(),
            time: Duration::ZERO,
            beside_count: 0,
            beside_time: Duration::ZERO,
            in_flight: None,
        }
    }

    /// Writes the checkpoint of `backend` at its step (waiting first for the one in flight):
    /// from a snapshot on another thread where the backend takes one, else now; `--keep`
    /// applies once the file is complete.
    pub fn write(
        &mut self,
        backend: &mut dyn FluidBackend,
        flags: &Arc<[u8]>,
        series: Option<SeriesState>,
        last_output: Option<u64>,
        arrays: Vec<super::NamedArray>,
    ) -> Result<(), FluidError> {
        self.settle()?;
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
            arrays,
        };
        let cx = SaveContext {
            identity: &self.identity,
            units: self.units,
            flags,
            extra: &extra,
            factory: &*self.factory,
        };
        let l = backend.lattice();
        let cells = ([0; 3], [l.nx, l.ny, l.nz]);
        let (small, header) = capture(backend, &cx, None)?;
        let copy: Option<Snapshot> = match self.beside {
            true => backend.snapshot()?,
            false => None,
        };
        let Some(mut copy) = copy else {
            let w = write_body(&path, header, &small, &mut Live(backend), &cx, cells)?;
            self.time += t0.elapsed();
            return self.done(w);
        };
        let (identity, units, flags) = (self.identity.clone(), self.units, flags.clone());
        let factory = self.factory.clone();
        let started = Instant::now();
        let thread = std::thread::Builder::new()
            .name("checkpoint".into())
            .spawn(move || {
                let cx = SaveContext {
                    identity: &identity,
                    units,
                    flags: &flags,
                    extra: &extra,
                    factory: &*factory,
                };
                write_body(&path, header, &small, &mut *copy, &cx, cells)
            })
            .map_err(|e| {
                FluidError::Invalid(format!("cannot start the checkpoint's writer: {e}"))
            })?;
        self.in_flight = Some(InFlight { started, thread });
        self.time += t0.elapsed();
        Ok(())
    }

    /// Waits for the checkpoint in flight, if any, then applies `--keep`: its error, if its
    /// write failed (the previous checkpoint is then the newest).
    pub fn settle(&mut self) -> Result<(), FluidError> {
        let Some(f) = self.in_flight.take() else {
            return Ok(());
        };
        // The run waits here: that counts in what the checkpoints cost it.
        let t0 = Instant::now();
        let joined = f.thread.join();
        self.time += t0.elapsed();
        let w = joined.unwrap_or_else(|_| {
            Err(FluidError::Invalid(
                "the checkpoint's writer panicked".into(),
            ))
        })?;
        self.beside_count += 1;
        self.beside_time += f.started.elapsed();
        self.done(w)
    }

    /// Whether a checkpoint is being written beside the run and has not finished yet.
    pub fn busy(&self) -> bool {
        self.in_flight
            .as_ref()
            .is_some_and(|f| !f.thread.is_finished())
    }

    fn done(&mut self, w: Written) -> Result<(), FluidError> {
        self.schedule.rotate(&w.path)?;
        self.written.push((w.path, w.bytes));
        Ok(())
    }

    /// The last checkpoint written.
    pub fn last(&self) -> Option<&std::path::Path> {
        self.written.last().map(|(p, _)| p.as_path())
    }

    /// The summary line: how many, where, how big and what they cost the run (`None` if none
    /// was written).
    pub fn summary(&self) -> Option<String> {
        let (last, bytes) = self.written.last()?;
        let n = self.written.len();
        let mib = *bytes as f64 / (1u64 << 20) as f64;
        let secs = self.time.as_secs_f64() / n as f64;
        let how = match self.beside_count {
            0 => format!("{secs:.3} s each, {:.0} MiB/s", mib / secs.max(1e-9)),
            k => {
                let w = self.beside_time.as_secs_f64() / k as f64;
                format!(
                    "the run paused {secs:.3} s for each (waits for the last one's file \
                     included); {k} written beside the run in {w:.3} s each, {:.0} MiB/s",
                    mib / w.max(1e-9)
                )
            }
        };
        Some(format!(
            "checkpoints: {n} written ({mib:.1} MiB, {how}), the last {}",
            last.display()
        ))
    }
}
