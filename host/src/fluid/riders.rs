//! What rides a scene run from a layer above the fluid (the coupled flocks): the fluid defines
//! this hook and never knows what fills it. A rider is opened from the built scene and the
//! opened backend, steps after every fluid step (before the step's health check and outputs),
//! writes its own files beside the fields on output steps, and reports lines for the run's
//! header and summary.

use super::driver::Sink;
use super::forces::state::SeriesState;
use super::forces::ForceSample;
use super::ib::plan::SampleSnapshot;
use super::resume::NamedArray;
use super::scene::Scene;
use super::sink::Out;
use super::{Fields, FluidBackend, FluidError};
use std::path::{Path, PathBuf};

/// Something that rides a scene run (module docs).
pub trait Rider {
    /// After each fluid step of `backend` (its step count is the step just taken).
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError>;
    /// Writes the rider's state at output step `step` of `backend` where `out` sends the
    /// fields of the scene `name`; returns the files written.
    fn write(
        &mut self,
        out: &Out,
        name: &str,
        step: u64,
        backend: &mut dyn FluidBackend,
    ) -> Result<Vec<PathBuf>, FluidError>;
    /// Lines for the run's header.
    fn header(&self) -> Vec<String>;
    /// Lines for the run's summary (its figures after the run).
    fn summary(&self) -> Vec<String>;
    /// What the views draw of the rider over the fluid.
    fn drawn(&self) -> Result<Drawn, FluidError>;
    /// What the run's checkpoints keep of the rider (member names of its own).
    fn arrays(&mut self, backend: &mut dyn FluidBackend) -> Result<Vec<NamedArray>, FluidError>;
    /// Restores the rider from the checkpoint at `path` (after the backend: the fluid is at
    /// the checkpoint's step), handing `backend` what its next step takes from the rider.
    fn restore(&mut self, path: &Path, backend: &mut dyn FluidBackend) -> Result<(), FluidError>;
}

/// Coloured points a rider shows in the views (owned; [`Drawn::points`] lends them to a frame).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drawn {
    /// Lattice coordinates.
    pub pos: Vec<[f32; 3]>,
    /// Packed colours (`0xAABBGGRR`).
    pub colour: Vec<u32>,
    /// Disc radius, cells.
    pub radius: f32,
}

impl Drawn {
    /// The points for one frame.
    pub fn points(&self) -> super::Points<'_> {
        super::Points {
            pos: &self.pos,
            colour: &self.colour,
            radius: self.radius,
        }
    }
}

/// Opens what rides the run of `scene`, read from the scene file at `path` (`None`: nothing
/// rides). Every refusal comes before any step.
pub type OpenRider = fn(
    path: &Path,
    scene: &Scene,
    backend: &mut dyn FluidBackend,
) -> Result<Option<Box<dyn Rider>>, FluidError>;

/// Several riders, stepped, written and kept in order.
pub struct Riders(pub Vec<Box<dyn Rider>>);

impl Riders {
    /// `first` and `second` as one rider (`None` when neither rides).
    pub fn join(
        first: Option<Box<dyn Rider>>,
        second: Option<Box<dyn Rider>>,
    ) -> Option<Box<dyn Rider>> {
        match (first, second) {
            (Some(a), Some(b)) => Some(Box::new(Riders(vec![a, b]))),
            (a, b) => a.or(b),
        }
    }
}

impl Rider for Riders {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.0.iter_mut().try_for_each(|r| r.after_step(backend))
    }

    fn write(
        &mut self,
        out: &Out,
        name: &str,
        step: u64,
        backend: &mut dyn FluidBackend,
    ) -> Result<Vec<PathBuf>, FluidError> {
        let mut files = Vec::new();
        for r in &mut self.0 {
            files.extend(r.write(out, name, step, backend)?);
        }
        Ok(files)
    }

    fn header(&self) -> Vec<String> {
        self.0.iter().flat_map(|r| r.header()).collect()
    }

    fn summary(&self) -> Vec<String> {
        self.0.iter().flat_map(|r| r.summary()).collect()
    }

    fn drawn(&self) -> Result<Drawn, FluidError> {
        let mut d = Drawn::default();
        for r in &self.0 {
            let one = r.drawn()?;
            if !one.pos.is_empty() {
                d.radius = one.radius;
            }
            d.pos.extend(one.pos);
            d.colour.extend(one.colour);
        }
        Ok(d)
    }

    fn arrays(&mut self, backend: &mut dyn FluidBackend) -> Result<Vec<NamedArray>, FluidError> {
        let mut all = Vec::new();
        for r in &mut self.0 {
            all.extend(r.arrays(backend)?);
        }
        Ok(all)
    }

    fn restore(&mut self, path: &Path, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.0.iter_mut().try_for_each(|r| r.restore(path, backend))
    }
}

/// Opens nothing: a run without a layer above the fluid.
pub fn none(
    _: &Path,
    _: &Scene,
    _: &mut dyn FluidBackend,
) -> Result<Option<Box<dyn Rider>>, FluidError> {
    Ok(None)
}

/// A sink that steps a rider after every fluid step and writes its files on output steps,
/// around the run's own sink.
pub struct RidingSink<'a> {
    pub inner: &'a mut dyn Sink,
    pub rider: &'a mut dyn Rider,
    pub out: Out,
    pub name: String,
    /// The rider's files, in order.
    pub written: Vec<PathBuf>,
}

impl Sink for RidingSink<'_> {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.inner.after_step(backend)?;
        self.rider.after_step(backend)
    }

    fn fields(
        &mut self,
        step: u64,
        fields: &Fields,
        samples: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError> {
        self.inner.fields(step, fields, samples)
    }

    fn outputs(&mut self, step: u64, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.inner.outputs(step, backend)?;
        let files = self.rider.write(&self.out, &self.name, step, backend)?;
        self.written.extend(files);
        Ok(())
    }

    fn wants_fields(&self) -> bool {
        self.inner.wants_fields()
    }

    fn forces(&mut self, rows: &[ForceSample]) -> Result<(), FluidError> {
        self.inner.forces(rows)
    }

    fn force_state(&self) -> Option<SeriesState> {
        self.inner.force_state()
    }

    fn checkpoint_due(&self, step: u64) -> bool {
        self.inner.checkpoint_due(step)
    }

    fn checkpoint(
        &mut self,
        backend: &mut dyn FluidBackend,
        last_output: Option<u64>,
        mut arrays: Vec<NamedArray>,
    ) -> Result<(), FluidError> {
        arrays.extend(self.rider.arrays(backend)?);
        self.inner.checkpoint(backend, last_output, arrays)
    }
}
