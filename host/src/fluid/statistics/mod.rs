//! Turbulence statistics of a scene run (`[statistics]` in the scene): from a start step, every
//! K steps, each fluid cell's density, velocity and velocity products are added into FP64 sums
//! on the backend ([`murmur_common::lbm::statistics`]), whole fields or profiles along the
//! scene's periodic axes. They ride the run as a [`Rider`]: sampled after the steps that are
//! due, written with the outputs ([`output`]: a CSV of profiles, or `.npz` / `.vti` fields),
//! kept in the checkpoints, and timed.

pub mod output;

use super::resume::{ArrayValues, NamedArray};
use super::riders::{Drawn, Rider};
use super::scene::Scene;
use super::sink::Out;
use super::{FluidBackend, FluidError};
use murmur_common::lbm::statistics::{Reduce, VALUES};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What a backend does for the statistics: keeps the sums and adds samples into them.
pub trait Accumulate {
    /// Starts the sums of `reduce`'s keys: zeros, or `from` (restored sums, `VALUES x keys`).
    fn begin(&mut self, reduce: Reduce, from: Option<&[f64]>) -> Result<(), FluidError>;
    /// Adds one sample of the current step into the sums.
    fn sample(&mut self) -> Result<(), FluidError>;
    /// The sums, `VALUES x keys`, value-major.
    fn sums(&mut self) -> Result<Vec<f64>, FluidError>;
}

/// The scene's `[statistics]` table.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// The step of the first sample (the steps before it are the transient left out).
    pub start: u64,
    /// Steps between two samples (K).
    #[serde(default = "default_every")]
    pub every: u64,
    /// Axes summed over into profiles (`"x"`, `"y"`, `"z"`; periodic ones only); empty: whole
    /// fields.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub average: Vec<String>,
}

fn default_every() -> u64 {
    10
}

impl Table {
    /// The axes summed over, checked against the scene's periodic axes (one line on error).
    pub fn summed(&self, periodic: [bool; 3]) -> Result<[bool; 3], String> {
        let mut summed = [false; 3];
        for a in &self.average {
            let i = match a.as_str() {
                "x" => 0,
                "y" => 1,
                "z" => 2,
                other => {
                    return Err(format!(
                        "statistics.average: {other:?} is not an axis: use \"x\", \"y\" or \"z\""
                    ))
                }
            };
            if summed[i] {
                return Err(format!("statistics.average names {a:?} twice"));
            }
            if !periodic[i] {
                return Err(format!(
                    "statistics.average: the {a} faces are not periodic: profiles average over \
                     periodic axes only"
                ));
            }
            summed[i] = true;
        }
        Ok(summed)
    }

    /// Checks the cadence against a run of `steps` steps (one line on error).
    pub fn check(&self, steps: u64) -> Result<(), String> {
        if self.every == 0 {
            return Err("statistics.every must be at least 1".into());
        }
        if self.start > steps {
            return Err(format!(
                "statistics.start {} is beyond the run's last step {steps}: no sample would be \
                 taken (raise run.steps or lower the start)",
                self.start
            ));
        }
        Ok(())
    }

    /// Whether the step just taken is sampled.
    pub fn due(&self, step: u64) -> bool {
        step >= self.start && (step - self.start).is_multiple_of(self.every)
    }
}

/// The checkpoint members of the statistics.
const SUMS: &str = "statistics_sums";
const SAMPLES: &str = "statistics_samples";

/// The statistics riding a run.
pub struct Statistics {
    table: Table,
    reduce: Reduce,
    units: murmur_common::lbm::Units,
    /// Samples taken (of this run and the runs it resumes).
    samples: u64,
    /// Time spent sampling in this process, and the samples it took.
    busy: Duration,
    taken: u64,
    /// The step this run started from.
    origin_step: u64,
    /// Where profiles go (also at every checkpoint, so a run stopped by a signal leaves its
    /// profiles so far beside its checkpoint); `None` for fields or without outputs.
    profile_csv: Option<PathBuf>,
}

impl Statistics {
    /// Opens the statistics of `scene` on `backend` for a run to step `steps` (`None`: the
    /// scene has no `[statistics]`), writing beside the fields `out` sends. Refusals are one
    /// line, before any step: a start beyond both `steps` and the scene's `run.steps`.
    pub fn open(
        scene: &Scene,
        backend: &mut dyn FluidBackend,
        steps: u64,
        out: &Out,
    ) -> Result<Option<Statistics>, FluidError> {
        let Some(table) = scene.file.statistics.clone() else {
            return Ok(None);
        };
        // A part of a chained run may end before the start; the whole run may not.
        table
            .check(steps.max(scene.file.run.steps))
            .map_err(FluidError::Invalid)?;
        let summed = table
            .summed(scene.setup.immersed.periodic)
            .map_err(FluidError::Invalid)?;
        let lattice = scene.setup.lattice();
        let reduce = if summed.iter().any(|&s| s) {
            Reduce::profile(lattice, summed)
        } else {
            Reduce::fields(lattice)
        };
        let Some(acc) = backend.statistics() else {
            return Err(FluidError::Invalid(
                "statistics run on one lattice: leave out --gpus and --ranks".into(),
            ));
        };
        acc.begin(reduce, None)?;
        let profile_csv = match reduce.is_fields() {
            true => None,
            false => out.beside(&scene.file.name, "statistics.csv"),
        };
        Ok(Some(Statistics {
            profile_csv,
            table,
            reduce,
            units: scene.units,
            samples: 0,
            busy: Duration::ZERO,
            taken: 0,
            origin_step: backend.step_count(),
        }))
    }

    /// The averages so far (`None` before the first sample).
    pub fn averages(
        &self,
        backend: &mut dyn FluidBackend,
    ) -> Result<Option<output::Averages>, FluidError> {
        if self.samples == 0 {
            return Ok(None);
        }
        let sums = accumulate(backend)?.sums()?;
        Ok(Some(output::Averages::of(&sums, self.reduce, self.units)))
    }
}

fn accumulate(backend: &mut dyn FluidBackend) -> Result<&mut dyn Accumulate, FluidError> {
    backend
        .statistics()
        .ok_or_else(|| FluidError::Invalid("this backend keeps no statistics".into()))
}

impl Rider for Statistics {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        if !self.table.due(backend.step_count()) {
            return Ok(());
        }
        // Timed alone: the steps queued before it finish first.
        backend.synchronize()?;
        let t0 = Instant::now();
        accumulate(backend)?.sample()?;
        backend.synchronize()?;
        self.busy += t0.elapsed();
        self.taken += 1;
        self.samples += 1;
        Ok(())
    }

    fn write(
        &mut self,
        out: &Out,
        name: &str,
        step: u64,
        backend: &mut dyn FluidBackend,
    ) -> Result<Vec<PathBuf>, FluidError> {
        if matches!(out, Out::None) {
            return Ok(Vec::new());
        }
        let Some(avg) = self.averages(backend)? else {
            return Ok(Vec::new());
        };
        let time = self.units.time_to_si(step as f64);
        let mut files = Vec::new();
        let beside = |ext: &str| out.beside(name, &format!("statistics.{ext}"));
        if self.reduce.is_fields() {
            if let Some(npz) = beside("npz") {
                avg.write_npz(&npz, self.samples, time)?;
                files.push(npz);
            }
            if let (Out::Dir(_), Some(vti)) = (out, beside("vti")) {
                avg.write_vti(&vti, time)?;
                files.push(vti);
            }
        } else if let Some(csv) = beside("csv") {
            avg.write_csv(&csv, self.samples, step)?;
            files.push(csv);
        }
        Ok(files)
    }

    fn header(&self) -> Vec<String> {
        let what = if self.reduce.is_fields() {
            "whole fields".to_string()
        } else {
            format!(
                "profiles averaged over {}",
                self.table.average.join(" and ")
            )
        };
        vec![format!(
            "statistics: {what}, a sample every {} steps from step {}{}",
            self.table.every,
            self.table.start,
            if self.origin_step > self.table.start {
                format!(" (resumed at step {})", self.origin_step)
            } else {
                String::new()
            }
        )]
    }

    fn summary(&self) -> Vec<String> {
        if self.taken == 0 {
            return vec![format!(
                "statistics: {} samples in all, none taken by this run",
                self.samples
            )];
        }
        let ms = self.busy.as_secs_f64() * 1e3 / self.taken as f64;
        vec![format!(
            "statistics: {} samples in all ({} by this run), {ms:.3} ms per sample, {:.4} ms per \
             step at one sample every {} steps",
            self.samples,
            self.taken,
            ms / self.table.every as f64,
            self.table.every
        )]
    }

    fn drawn(&self) -> Result<Drawn, FluidError> {
        Ok(Drawn::default())
    }

    fn arrays(&mut self, backend: &mut dyn FluidBackend) -> Result<Vec<NamedArray>, FluidError> {
        let sums = accumulate(backend)?.sums()?;
        if let (Some(csv), true) = (&self.profile_csv, self.samples > 0) {
            let avg = output::Averages::of(&sums, self.reduce, self.units);
            avg.write_csv(csv, self.samples, backend.step_count())?;
        }
        let keys = self.reduce.keys() as u64;
        Ok(vec![
            NamedArray {
                name: SUMS.into(),
                shape: vec![VALUES as u64, keys],
                // FP64 bits, exact.
                values: ArrayValues::U64(sums.iter().map(|v| v.to_bits()).collect()),
            },
            NamedArray {
                name: SAMPLES.into(),
                shape: vec![1],
                values: ArrayValues::U64(vec![self.samples]),
            },
        ])
    }

    fn restore(&mut self, path: &Path, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        let mut r = crate::checkpoint::CheckpointReader::open(path)?;
        let missing = |e: &dyn std::fmt::Display| {
            FluidError::Invalid(format!(
                "the checkpoint {} holds no statistics ({e}): it was written before the scene \
                 had [statistics]",
                path.display()
            ))
        };
        let bits = r.read_vec::<u64>(SUMS).map_err(|e| missing(&e))?;
        let samples = r.read_vec::<u64>(SAMPLES).map_err(|e| missing(&e))?;
        if bits.len() != VALUES * self.reduce.keys() || samples.len() != 1 {
            return Err(FluidError::Invalid(format!(
                "the checkpoint {} holds statistics of {} keys, the scene's [statistics] {}: \
                 its averaged axes changed",
                path.display(),
                bits.len() / VALUES,
                self.reduce.keys()
            )));
        }
        let sums: Vec<f64> = bits.into_iter().map(f64::from_bits).collect();
        accumulate(backend)?.begin(self.reduce, Some(&sums))?;
        self.samples = samples[0];
        self.origin_step = backend.step_count();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(start: u64, every: u64, average: &[&str]) -> Table {
        Table {
            start,
            every,
            average: average.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn samples_fall_every_k_steps_from_the_start() {
        let t = table(100, 20, &[]);
        let due: Vec<u64> = (0..=180).filter(|&s| t.due(s)).collect();
        assert_eq!(due, [100, 120, 140, 160, 180]);
        assert!(t.check(100).is_ok());
        assert!(t
            .check(99)
            .unwrap_err()
            .contains("beyond the run's last step 99"));
        assert!(table(0, 0, &[])
            .check(10)
            .unwrap_err()
            .contains("at least 1"));
    }

    #[test]
    fn only_periodic_axes_are_summed() {
        let periodic = [true, false, true];
        assert_eq!(
            table(0, 1, &["x", "z"]).summed(periodic),
            Ok([true, false, true])
        );
        assert_eq!(table(0, 1, &[]).summed(periodic), Ok([false; 3]));
        assert!(table(0, 1, &["y"])
            .summed(periodic)
            .unwrap_err()
            .contains("not periodic"));
        assert!(table(0, 1, &["x", "x"])
            .summed(periodic)
            .unwrap_err()
            .contains("twice"));
        assert!(table(0, 1, &["u"])
            .summed(periodic)
            .unwrap_err()
            .contains("not an axis"));
    }
}
