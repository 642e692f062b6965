//! Where a scene run's results go: fields (`.vti` and `.npz`, with vorticity and Q computed once
//! per output), the solids' samples (`.vtp`) and the forces (CSV time series and summary).

use super::driver::Sink;
use super::forces::state::SeriesState;
use super::forces::summary::ForceSummary;
use super::forces::{ForceSample, ForceSeries};
use super::ib::plan::SampleSnapshot;
use super::output::{write_vtp, SampleSlices, Snapshot};
use super::FluidBackend;
use super::{Fields, FluidError};
use murmur_common::lbm::Units;
use std::path::{Path, PathBuf};

/// Where fields go.
#[derive(Clone, Debug)]
pub enum Out {
    /// Nowhere (figures only).
    None,
    /// The final fields to one `.vti` or `.npz` file.
    File(PathBuf),
    /// `NAME_STEP.vti`, `.npz`, `_slice.png` (the speed in the middle z plane, `super::slice_png`) and (with
    /// solids) `.vtp` every output step, and `NAME_forces.csv`.
    Dir(PathBuf),
}

impl Out {
    /// The file `NAME_suffix` of a run named `name` beside its fields: `STEM_suffix` beside an
    /// output file, `name_suffix` in the output folder, or none.
    pub fn beside(&self, name: &str, suffix: &str) -> Option<PathBuf> {
        match self {
            Out::None => None,
            Out::File(p) => {
                let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or(name);
                Some(p.with_file_name(format!("{stem}_{suffix}")))
            }
            Out::Dir(d) => Some(d.join(format!("{name}_{suffix}"))),
        }
    }

    /// The forces CSV of a run named `name`: beside the output file, in the output folder, or
    /// none.
    pub fn forces_csv(&self, name: &str) -> Option<PathBuf> {
        self.beside(name, "forces.csv")
    }
}

/// Writes a scene run's outputs.
pub struct RunSink {
    pub name: String,
    pub flags: std::sync::Arc<[u8]>,
    pub units: Units,
    /// Axes that wrap, for the velocity gradients.
    pub periodic: [bool; 3],
    pub out: Out,
    /// Files written, in order.
    pub written: Vec<PathBuf>,
    /// The forces' time series (None without solids).
    pub forces: Option<ForceSeries>,
    /// The run's checkpoints (None: the run writes none).
    pub checkpoints: Option<super::resume::Checkpoints>,
}

/// The force series of a scene's solids (None without solids): coefficients on the scene's
/// reference velocity, each solid's reference area, and the scene's characteristic length as
/// the Strouhal number's length; the CSV at `csv`.
pub fn force_series(
    scene: &super::scene::Scene,
    csv: Option<&Path>,
) -> Result<Option<ForceSeries>, FluidError> {
    match force_config(scene) {
        Some(config) => Ok(Some(ForceSeries::new(config.validated()?, csv)?)),
        None => Ok(None),
    }
}

/// [`force_series`] going on from a checkpoint's `state` at `step` (the CSV continued there).
pub fn resumed_force_series(
    scene: &super::scene::Scene,
    state: Option<&SeriesState>,
    step: u64,
    csv: Option<&Path>,
) -> Result<Option<ForceSeries>, FluidError> {
    match (force_config(scene), state) {
        (Some(config), Some(state)) => Ok(Some(ForceSeries::resumed(config, state, step, csv)?)),
        (None, None) => Ok(None),
        (Some(_), None) => Err(FluidError::Invalid(
            "the checkpoint holds no force series, the scene has solids".into(),
        )),
        (None, Some(_)) => Err(FluidError::Invalid(
            "the checkpoint holds a force series, the scene has no solids".into(),
        )),
    }
}

/// The force series' configuration of a scene with solids.
fn force_config(scene: &super::scene::Scene) -> Option<super::forces::ForceConfig> {
    scene.setup.force_solids().next()?;
    let units = scene.units;
    let length = scene.file.physical.length;
    let infos = scene
        .setup
        .force_solids()
        .map(|s| super::forces::SolidInfo {
            name: s.name.clone(),
            reference_area_m2: units.area_to_si(s.reference_area),
            reference_length_m: length,
        })
        .collect();
    let f = &scene.forces;
    let mut config =
        super::forces::ForceConfig::new(units, infos, units.velocity_to_si(f.reference_velocity));
    config.drag_axis = f.drag_axis;
    config.lift_axis = f.lift_axis;
    Some(config)
}

impl RunSink {
    /// Closes the force series (the CSV holds every row) and returns the summaries.
    pub fn finish(&mut self) -> Result<Vec<ForceSummary>, FluidError> {
        match self.forces.take() {
            Some(series) => {
                if let Some(p) = series.csv_path() {
                    self.written.push(p.to_path_buf());
                }
                series.finish()
            }
            None => Ok(Vec::new()),
        }
    }

    /// The outputs of one step into folder `d`.
    fn dir_outputs(
        &mut self,
        d: &Path,
        step: u64,
        f: &Fields,
        flags: &[u8],
        samples: Option<&SampleSnapshot>,
        t: f64,
    ) -> Result<(), FluidError> {
        let snapshot = Snapshot::new(f, flags, &self.units, t, self.periodic)?;
        for ext in ["vti", "npz"] {
            let p = d.join(format!("{}_{step:07}.{ext}", self.name));
            snapshot.write(&p)?;
            self.written.push(p);
        }
        if let Some(s) = samples {
            let p = d.join(format!("{}_{step:07}.vtp", self.name));
            self.samples(&p, s, t)?;
        }
        let p = d.join(format!("{}_{step:07}_slice.png", self.name));
        let positions = samples.map_or(&[][..], |s| &s.positions[..]);
        super::slice_png::write_slice_png(&p, f, flags, f.lattice.nz / 2, positions)?;
        self.written.push(p);
        Ok(())
    }

    fn samples(&mut self, path: &Path, s: &SampleSnapshot, time_s: f64) -> Result<(), FluidError> {
        // The writer takes the force density the solid exerts on the fluid, `F_s`; the
        // snapshot holds the reaction `-F_s dA_s`.
        let density: Vec<[f32; 3]> = s
            .force
            .iter()
            .zip(&s.area)
            .map(|(f, &a)| f.map(|c| if a > 0.0 { -c / a } else { 0.0 }))
            .collect();
        let slices = SampleSlices {
            position: &s.positions,
            velocity: &s.velocity,
            force_density: &density,
            area: &s.area,
            solid: &s.solid,
        };
        write_vtp(path, &slices, &self.units, time_s)?;
        self.written.push(path.to_path_buf());
        Ok(())
    }
}

impl Sink for RunSink {
    fn wants_fields(&self) -> bool {
        !matches!(self.out, Out::None)
    }

    fn fields(
        &mut self,
        step: u64,
        f: &Fields,
        samples: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError> {
        let t = step as f64 * self.units.dt;
        match self.out.clone() {
            Out::None => {}
            Out::File(p) => {
                Snapshot::new(f, &self.flags, &self.units, t, self.periodic)?.write(&p)?;
                self.written.push(p);
            }
            Out::Dir(d) => {
                let flags = self.flags.clone();
                self.dir_outputs(&d, step, f, &flags, samples, t)?;
            }
        }
        Ok(())
    }

    fn forces(&mut self, rows: &[ForceSample]) -> Result<(), FluidError> {
        if let Some(series) = self.forces.as_mut() {
            series.record(rows)?;
        }
        Ok(())
    }

    fn force_state(&self) -> Option<SeriesState> {
        self.forces.as_ref().map(|f| f.state())
    }

    fn checkpoint_due(&self, step: u64) -> bool {
        self.checkpoints
            .as_ref()
            .is_some_and(|c| c.schedule.due(step))
    }

    fn checkpoint(
        &mut self,
        backend: &mut dyn FluidBackend,
        last_output: Option<u64>,
        arrays: Vec<super::resume::NamedArray>,
    ) -> Result<(), FluidError> {
        let series = self.force_state();
        match self.checkpoints.as_mut() {
            Some(c) => c.write(backend, &self.flags, series, last_output, arrays),
            None => Ok(()),
        }
    }
}
