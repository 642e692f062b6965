//! Hydrodynamic force and torque on each immersed solid over time: conversion to SI and to the
//! force coefficients, a CSV time series that survives a crash ([`csv`]), and the end-of-run
//! summary ([`summary`]: mean and extreme coefficients, lift amplitude, and the Strouhal number
//! from the lift's frequency, [`spectrum`]).
//!
//! # Conventions
//!
//! The immersed-boundary coupling computes at each sample the force density `F_s` the **solid
//! exerts on the fluid** (`murmur_common::lbm::ib`). The force on the solid is its reaction,
//! `-sum_s F_s dV_s`, plus, for an accelerating closed solid, the rate of change of the momentum
//! of the fluid it encloses, `rho V dU/dt` (and `rho I dOmega/dt` for the torque), which the
//! coupling cannot see ([`ForceSample::from_coupling`], `Solid::inner_inertia`). Torques are
//! about the solid's centre. Lattice units in, SI out: `F = F_lb rho_0 dx^4 / dt^2` newtons,
//! `T = T_lb rho_0 dx^5 / dt^2` newton metres (`Units::force_to_si`, `Units::torque_to_si`).
//!
//! Coefficients: `C_D = 2 F . e_D / (rho U^2 A)`, `C_L = 2 F . e_L / (rho U^2 A)` with the
//! scene's reference velocity `U`, density `rho` and drag and lift directions `e_D`, `e_L`, and
//! the solid's reference area `A` ([`ForceConfig`]).

pub mod csv;
pub mod spectrum;
pub mod state;
pub mod summary;

use super::FluidError;
use csv::{csv_row, CsvLog};
use murmur_common::lbm::Units;
use std::path::Path;
use summary::{ForceSummary, History, DEFAULT_WINDOW_FRACTION};

/// One solid's reference quantities.
#[derive(Clone, Debug, PartialEq)]
pub struct SolidInfo {
    /// Name in the CSV file and the summary.
    pub name: String,
    /// Reference area `A` of the coefficients, m^2 (e.g. the frontal area).
    pub reference_area_m2: f64,
    /// Reference length `D` of the Strouhal number, m (e.g. the diameter).
    pub reference_length_m: f64,
}

impl SolidInfo {
    /// From lattice quantities: area in cells^2 (e.g. `Solid::reference_area`), length in cells.
    pub fn from_lattice(
        name: impl Into<String>,
        reference_area_cells2: f64,
        reference_length_cells: f64,
        units: &Units,
    ) -> SolidInfo {
        SolidInfo {
            name: name.into(),
            reference_area_m2: units.area_to_si(reference_area_cells2),
            reference_length_m: units.length_to_si(reference_length_cells),
        }
    }
}

/// The scene-level references of the force coefficients and the summary.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceConfig {
    pub units: Units,
    /// One entry per solid, in the order of the solids' indices.
    pub solids: Vec<SolidInfo>,
    /// `U`, m/s.
    pub reference_velocity: f64,
    /// `rho`, kg/m^3 ([`ForceConfig::new`]: `units.rho0`).
    pub reference_density: f64,
    /// Direction of the drag (the free stream's), any length (normalised).
    pub drag_axis: [f64; 3],
    /// Direction of the lift, any length (normalised); not parallel to the drag.
    pub lift_axis: [f64; 3],
    /// The summary covers the last `window_fraction` of the recorded steps, `0 < f <= 1`.
    pub window_fraction: f64,
}

impl ForceConfig {
    /// Drag along +x, lift along +y, density `units.rho0`, the last half of the run.
    pub fn new(units: Units, solids: Vec<SolidInfo>, reference_velocity: f64) -> ForceConfig {
        ForceConfig {
            units,
            solids,
            reference_velocity,
            reference_density: units.rho0,
            drag_axis: [1.0, 0.0, 0.0],
            lift_axis: [0.0, 1.0, 0.0],
            window_fraction: DEFAULT_WINDOW_FRACTION,
        }
    }

    /// Checks every value (positive, finite, axes not parallel) and returns the configuration
    /// with unit axes.
    pub fn validated(mut self) -> Result<ForceConfig, FluidError> {
        let bad = |what: String| Err(FluidError::Invalid(format!("forces: {what}")));
        let positive = |x: f64| x.is_finite() && x > 0.0;
        let u = &self.units;
        if !(positive(u.dx) && positive(u.dt) && positive(u.rho0)) {
            return bad(format!(
                "units need positive dx, dt, rho0 (got {}, {}, {})",
                u.dx, u.dt, u.rho0
            ));
        }
        if !positive(self.reference_velocity) {
            return bad(format!(
                "the reference velocity must be positive, got {} m/s",
                self.reference_velocity
            ));
        }
        if !positive(self.reference_density) {
            return bad(format!(
                "the reference density must be positive, got {} kg/m^3",
                self.reference_density
            ));
        }
        if !(self.window_fraction > 0.0 && self.window_fraction <= 1.0) {
            return bad(format!(
                "the summary window must be a fraction in (0, 1], got {}",
                self.window_fraction
            ));
        }
        for s in &self.solids {
            if !positive(s.reference_area_m2) || !positive(s.reference_length_m) {
                return bad(format!(
                    "solid {:?} needs a positive reference area and length (got {} m^2, {} m)",
                    s.name, s.reference_area_m2, s.reference_length_m
                ));
            }
        }
        for (what, axis) in [("drag", &mut self.drag_axis), ("lift", &mut self.lift_axis)] {
            let norm = dot(*axis, *axis).sqrt();
            if !positive(norm) {
                return bad(format!("the {what} axis {axis:?} has no direction"));
            }
            *axis = axis.map(|a| a / norm);
        }
        if dot(self.drag_axis, self.lift_axis).abs() > 1.0 - 1e-9 {
            return bad("the drag and lift axes are parallel".into());
        }
        Ok(self)
    }

    /// `(C_D, C_L)` of a force in newtons on solid `solid` (`< solids.len()`).
    pub fn coefficients(&self, solid: usize, force_n: [f64; 3]) -> (f64, f64) {
        let u = self.reference_velocity;
        let q = 0.5 * self.reference_density * u * u * self.solids[solid].reference_area_m2;
        (
            dot(force_n, self.drag_axis) / q,
            dot(force_n, self.lift_axis) / q,
        )
    }
}

/// An axis written `x`, `+y`, `-z` (case-insensitive) as a unit vector.
pub fn parse_axis(s: &str) -> Result<[f64; 3], FluidError> {
    let t = s.trim().to_ascii_lowercase();
    let (sign, name) = match t.strip_prefix('-') {
        Some(rest) => (-1.0, rest),
        None => (1.0, t.strip_prefix('+').unwrap_or(&t)),
    };
    let mut v = [0.0; 3];
    match name {
        "x" => v[0] = sign,
        "y" => v[1] = sign,
        "z" => v[2] = sign,
        _ => {
            return Err(FluidError::Invalid(format!(
                "axis {s:?}: use x, y or z with an optional sign (+x, -y)"
            )))
        }
    }
    Ok(v)
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// The force and torque on one solid at one step, lattice units (as the coupling produces them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceSample {
    pub step: u64,
    /// Index of the solid in [`ForceConfig::solids`].
    pub solid: usize,
    /// Force on the solid, `rho dx^4 / dt^2`.
    pub force: [f64; 3],
    /// Torque on the solid about its centre, `rho dx^5 / dt^2`.
    pub torque: [f64; 3],
}

impl ForceSample {
    /// The load on a solid from the coupling's sums over its samples: `on_fluid` =
    /// `sum_s F_s dV_s` and `on_fluid_torque` = `sum_s r_s x F_s dV_s` (what the solid does to
    /// the fluid, over all direct-forcing passes), and the inner fluid's inertia
    /// `(rho V dU/dt, rho I dOmega/dt)` (`Solid::inner_inertia`; zero for fixed or open solids).
    /// The solid feels the reaction plus that inertia.
    pub fn from_coupling(
        step: u64,
        solid: usize,
        on_fluid: [f64; 3],
        on_fluid_torque: [f64; 3],
        inner_inertia: ([f64; 3], [f64; 3]),
    ) -> ForceSample {
        let (fi, ti) = inner_inertia;
        ForceSample {
            step,
            solid,
            force: [0, 1, 2].map(|a| -on_fluid[a] + fi[a]),
            torque: [0, 1, 2].map(|a| -on_fluid_torque[a] + ti[a]),
        }
    }
}

/// One row of the series in SI units.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceRow {
    pub step: u64,
    pub time_s: f64,
    pub solid: usize,
    /// N.
    pub force: [f64; 3],
    /// N m.
    pub torque: [f64; 3],
    pub cd: f64,
    pub cl: f64,
}

/// The force time series of a run: converts each batch, appends it to the CSV file and keeps
/// what the summary needs.
pub struct ForceSeries {
    config: ForceConfig,
    csv: Option<CsvLog>,
    history: Vec<History>,
    /// First and last recorded step (all solids).
    span: Option<(u64, u64)>,
}

impl ForceSeries {
    /// A series for `config`'s solids, writing the CSV file `csv` (created now, header only)
    /// when given.
    pub fn new(config: ForceConfig, csv: Option<&Path>) -> Result<ForceSeries, FluidError> {
        let config = config.validated()?;
        let csv = csv.map(CsvLog::create).transpose()?;
        Ok(ForceSeries {
            history: vec![History::default(); config.solids.len()],
            config,
            csv,
            span: None,
        })
    }

    /// The validated configuration (unit axes).
    pub fn config(&self) -> &ForceConfig {
        &self.config
    }

    /// Where the CSV file is (`None` without one).
    pub fn csv_path(&self) -> Option<&Path> {
        self.csv.as_ref().map(|c| c.path.as_path())
    }

    /// A sample in SI units with its coefficients.
    pub fn row(&self, s: &ForceSample) -> Result<ForceRow, FluidError> {
        if s.solid >= self.config.solids.len() {
            return Err(FluidError::Invalid(format!(
                "forces: solid index {} at step {}, but there are {} solids",
                s.solid,
                s.step,
                self.config.solids.len()
            )));
        }
        let u = &self.config.units;
        let force = s.force.map(|f| u.force_to_si(f));
        let (cd, cl) = self.config.coefficients(s.solid, force);
        Ok(ForceRow {
            step: s.step,
            time_s: u.time_to_si(s.step as f64),
            solid: s.solid,
            force,
            torque: s.torque.map(|t| u.torque_to_si(t)),
            cd,
            cl,
        })
    }

    /// Records one batch: rows in any order within the batch, but every solid's steps later
    /// than those of the batches before. The whole batch is checked before anything is written.
    pub fn record(&mut self, batch: &[ForceSample]) -> Result<(), FluidError> {
        if batch.is_empty() {
            return Ok(());
        }
        let mut rows = batch
            .iter()
            .map(|s| self.row(s))
            .collect::<Result<Vec<_>, _>>()?;
        rows.sort_by_key(|r| (r.step, r.solid));
        // Each solid's steps must increase: within the batch and after the last batch.
        let mut last: Vec<Option<u64>> = self.history.iter().map(|h| h.last_step).collect();
        for r in &rows {
            if last[r.solid].is_some_and(|l| r.step <= l) {
                return Err(FluidError::Invalid(format!(
                    "forces: solid {:?} got step {} after step {} (rows must come in step order, \
                     one per solid and step)",
                    self.config.solids[r.solid].name,
                    r.step,
                    last[r.solid].unwrap_or(0)
                )));
            }
            last[r.solid] = Some(r.step);
        }
        if let Some(csv) = &mut self.csv {
            let mut text = String::with_capacity(rows.len() * 160);
            for r in &rows {
                csv_row(&mut text, r, &self.config.solids[r.solid].name);
            }
            csv.append(text.as_bytes())?;
        }
        let (first, last) = (rows[0].step, rows[rows.len() - 1].step);
        let span = match self.span {
            Some((a, b)) => (a.min(first), b.max(last)),
            None => (first, last),
        };
        self.span = Some(span);
        let start = self.window_start(span);
        for r in &rows {
            self.history[r.solid].push(r.step, r.cd, r.cl);
        }
        for h in &mut self.history {
            h.drop_before(start);
        }
        Ok(())
    }

    /// Syncs the CSV file and returns the summary.
    pub fn finish(self) -> Result<Vec<ForceSummary>, FluidError> {
        if let Some(csv) = &self.csv {
            csv.sync()?;
        }
        Ok(self.summary())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn units() -> Units {
        // One lattice force unit is 1000 * 0.01^4 / 0.001^2 = 10 N; torque unit 0.1 N m.
        Units {
            dx: 0.01,
            dt: 0.001,
            rho0: 1000.0,
        }
    }

    pub(super) fn config(solids: usize) -> ForceConfig {
        let u = units();
        let infos = (0..solids)
            .map(|i| SolidInfo {
                name: format!("body{i}"),
                reference_area_m2: 0.02,
                reference_length_m: 0.1,
            })
            .collect();
        ForceConfig::new(u, infos, 2.0)
    }

    pub(super) fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("murmur-forces-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A sample whose SI force gives the coefficients `(cd, cl)` in `config(_)`:
    /// `q A = 0.5 * 1000 * 4 * 0.02 = 40 N`, lattice force unit 10 N.
    pub(super) fn sample(step: u64, solid: usize, cd: f64, cl: f64) -> ForceSample {
        ForceSample {
            step,
            solid,
            force: [cd * 4.0, cl * 4.0, 0.0],
            torque: [0.0, 0.0, 1.0],
        }
    }

    #[test]
    fn conversion_and_coefficients_by_hand() {
        let series = ForceSeries::new(config(1), None).unwrap();
        // F_lb = (0.3, -0.1, 0.2): 3 N, -1 N, 2 N. C_D = 2 * 3 / (1000 * 4 * 0.02) = 0.075.
        let s = ForceSample {
            step: 250,
            solid: 0,
            force: [0.3, -0.1, 0.2],
            torque: [1.0, 0.0, -2.0],
        };
        let r = series.row(&s).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        assert!(close(r.time_s, 0.25));
        assert!(close(r.force[0], 3.0) && close(r.force[1], -1.0) && close(r.force[2], 2.0));
        assert!(close(r.torque[0], 0.1) && close(r.torque[2], -0.2));
        assert!(close(r.cd, 0.075) && close(r.cl, -0.025));
        // Drag along -z, lift along +x, another density.
        let mut c = config(1);
        c.drag_axis = parse_axis("-z").unwrap();
        c.lift_axis = [2.0, 0.0, 0.0]; // normalised by validation
        c.reference_density = 500.0;
        let r = ForceSeries::new(c, None).unwrap().row(&s).unwrap();
        assert!(close(r.cd, -2.0 * 2.0 / 40.0) && close(r.cl, 2.0 * 3.0 / 40.0));
        // From the coupling's sums: the reaction plus the inner fluid's inertia.
        let f = ForceSample::from_coupling(
            7,
            0,
            [0.5, 0.0, -1.0],
            [0.0, 0.25, 0.0],
            ([0.1, 0.0, 0.0], [0.0, 0.0, 0.3]),
        );
        assert_eq!(f.force, [-0.4, 0.0, 1.0]);
        assert_eq!(f.torque, [0.0, -0.25, 0.3]);
        // SolidInfo from lattice values: 400 cells^2 = 0.04 m^2, 20 cells = 0.2 m.
        let i = SolidInfo::from_lattice("s", 400.0, 20.0, &units());
        assert!(close(i.reference_area_m2, 0.04) && close(i.reference_length_m, 0.2));
    }

    #[test]
    fn bad_configurations_are_refused_with_one_line() {
        let cases: [fn(&mut ForceConfig); 9] = [
            |c| c.reference_velocity = 0.0,
            |c| c.reference_density = f64::NAN,
            |c| c.solids[0].reference_area_m2 = -1.0,
            |c| c.solids[0].reference_length_m = 0.0,
            |c| c.drag_axis = [0.0; 3],
            |c| c.lift_axis = [-3.0, 0.0, 0.0],
            |c| c.window_fraction = 0.0,
            |c| c.window_fraction = 1.5,
            |c| c.units.dt = 0.0,
        ];
        for change in cases {
            let mut c = config(1);
            change(&mut c);
            let e = ForceSeries::new(c, None)
                .err()
                .expect("refused")
                .to_string();
            assert!(e.starts_with("forces: ") && !e.contains('\n'), "{e}");
        }
        assert!(parse_axis("w").is_err());
        assert_eq!(parse_axis(" +Y ").unwrap(), [0.0, 1.0, 0.0]);
        assert_eq!(parse_axis("x").unwrap(), [1.0, 0.0, 0.0]);
    }
}
