//! Hydrodynamic force and torque on each immersed solid over time: conversion to SI and to the
//! force coefficients, a CSV time series that survives a crash, and the end-of-run summary
//! (mean and extreme coefficients, lift amplitude, Strouhal number).
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
//!
//! # The CSV file
//!
//! Columns `step,time_s,solid,fx_N,fy_N,fz_N,tx_Nm,ty_Nm,tz_Nm,cd,cl`: the step, its time
//! `step dt` (s), the solid's name, the force on it (N), the torque on it about its centre (N m),
//! its drag and lift coefficients. One row per solid and recorded step. Numbers are written in
//! Rust's shortest round-trip exponent form (`1.25e-3`), which every CSV reader parses.
//!
//! Rows arrive in batches ([`ForceSeries::record`]; the GPU keeps them in a ring buffer and
//! hands them over every few steps). Nothing is kept in memory between batches: each batch is
//! appended to the one open file. The file is named `NAME.csv` whenever no batch is being
//! appended: it is renamed `NAME.csv.partial` for the append and back afterwards (renames keep
//! the open file), so an existing `NAME.csv` always holds complete rows, every batch handed
//! over so far, whatever stops the run (an error, a panic, a kill between two batches). A kill
//! *during* an append leaves `NAME.csv.partial`, whose rows are all complete except perhaps the
//! last one. A failed append (disk full) is truncated back to the last complete row before the
//! error is returned. The file is synced to disk at most once a second and at the end (a power
//! loss loses at most that second), and is created, with its header, when the series is.
//!
//! # The summary
//!
//! Over the last `window_fraction` (default one half) of the recorded steps, per solid: mean,
//! maximum of `C_D` and `C_L`, lift amplitude `(max C_L - min C_L) / 2`, and the Strouhal
//! number `St = f D / U` of the lift's frequency `f` ([`lift_frequency`]): from the mean period
//! between upward zero crossings of the mean-removed lift when there are at least
//! [`MIN_CROSSING_PERIODS`] regular periods, else from the peak of its spectrum (Hann window, DFT,
//! peak refined by a parabola through the log magnitudes) when the window holds at least
//! [`MIN_SPECTRAL_PERIODS`] periods of it; else none, with the reason.
//!
//! For the summary the series keeps, per solid, `(step, C_D, C_L)` of the rows that can still
//! fall into the window (older ones are dropped as the run goes on), at most
//! [`MAX_WINDOW_ROWS`]: beyond that it keeps every second row (then every fourth...), evenly.

use super::FluidError;
use murmur_common::lbm::Units;
use std::collections::VecDeque;
use std::f64::consts::PI;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The CSV header (see the module docs for the columns).
pub const CSV_HEADER: &str = "step,time_s,solid,fx_N,fy_N,fz_N,tx_Nm,ty_Nm,tz_Nm,cd,cl";
/// Fewest regular lift periods between zero crossings for a zero-crossing Strouhal number.
pub const MIN_CROSSING_PERIODS: usize = 10;
/// Fewest periods of the spectral peak in the window for a spectral Strouhal number.
pub const MIN_SPECTRAL_PERIODS: f64 = 30.0;
/// Largest spread (standard deviation over mean) of the zero-crossing periods that still counts
/// as regular; beyond it the spectral peak is used.
pub const MAX_PERIOD_SPREAD: f64 = 0.1;
/// Most rows per solid kept for the summary (then evenly thinned).
pub const MAX_WINDOW_ROWS: usize = 1 << 19;
/// Default fraction of the run (at its end) that the summary covers.
pub const DEFAULT_WINDOW_FRACTION: f64 = 0.5;
/// Longest time between two syncs of the CSV file to disk.
const SYNC_EVERY: Duration = Duration::from_secs(1);

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

    /// First step of the summary window: the last `window_fraction` of the recorded span.
    /// It only moves forward as the run goes on, so rows before it are never needed again.
    fn window_start(&self, (first, last): (u64, u64)) -> u64 {
        let len = (last - first) as f64 * self.config.window_fraction;
        last - (len.floor() as u64).min(last - first)
    }

    /// Sets the summary window to the last `fraction` of the recorded steps (kept within
    /// `(0, 1]`).
    pub fn set_window_fraction(&mut self, fraction: f64) {
        if fraction > 0.0 && fraction <= 1.0 {
            self.config.window_fraction = fraction;
        }
    }

    /// The summary of every solid over the window so far.
    pub fn summary(&self) -> Vec<ForceSummary> {
        let window = self.span.map(|s| (self.window_start(s), s.1));
        (0..self.config.solids.len())
            .map(|i| self.summarise(i, window))
            .collect()
    }

    fn summarise(&self, solid: usize, window: Option<(u64, u64)>) -> ForceSummary {
        let info = &self.config.solids[solid];
        let rows: Vec<&Kept> = match window {
            Some((a, _)) => self.history[solid]
                .rows
                .iter()
                .filter(|r| r.step >= a)
                .collect(),
            None => Vec::new(),
        };
        let mut s = ForceSummary {
            solid: info.name.clone(),
            window: window.unwrap_or((0, 0)),
            samples: rows.len(),
            mean_cd: f64::NAN,
            mean_cl: f64::NAN,
            max_cd: f64::NAN,
            max_cl: f64::NAN,
            lift_amplitude: f64::NAN,
            strouhal: Err("no force rows recorded".into()),
        };
        if rows.is_empty() {
            return s;
        }
        // Means about the first value: a constant coefficient averages to itself exactly.
        let n = rows.len() as f64;
        let (cd0, cl0) = (rows[0].cd, rows[0].cl);
        s.mean_cd = cd0 + rows.iter().map(|r| r.cd - cd0).sum::<f64>() / n;
        s.mean_cl = cl0 + rows.iter().map(|r| r.cl - cl0).sum::<f64>() / n;
        s.max_cd = rows.iter().map(|r| r.cd).fold(f64::NEG_INFINITY, f64::max);
        s.max_cl = rows.iter().map(|r| r.cl).fold(f64::NEG_INFINITY, f64::max);
        let min_cl = rows.iter().map(|r| r.cl).fold(f64::INFINITY, f64::min);
        s.lift_amplitude = 0.5 * (s.max_cl - min_cl);
        let units = &self.config.units;
        let times: Vec<f64> = rows
            .iter()
            .map(|r| units.time_to_si(r.step as f64))
            .collect();
        let lift: Vec<f64> = rows.iter().map(|r| r.cl).collect();
        s.strouhal = lift_frequency(&times, &lift).map(|f| Strouhal {
            value: f.frequency_hz * info.reference_length_m / self.config.reference_velocity,
            frequency_hz: f.frequency_hz,
            periods: f.periods,
            method: f.method,
        });
        s
    }

    /// Syncs the CSV file and returns the summary.
    pub fn finish(self) -> Result<Vec<ForceSummary>, FluidError> {
        if let Some(csv) = &self.csv {
            csv.sync()?;
        }
        Ok(self.summary())
    }
}

/// Appends one CSV line for `r`.
fn csv_row(out: &mut String, r: &ForceRow, name: &str) {
    use std::fmt::Write as _;
    let [fx, fy, fz] = r.force;
    let [tx, ty, tz] = r.torque;
    // Writing into a String cannot fail.
    let _ = writeln!(
        out,
        "{},{:e},{},{fx:e},{fy:e},{fz:e},{tx:e},{ty:e},{tz:e},{:e},{:e}",
        r.step,
        r.time_s,
        csv_field(name),
        r.cd,
        r.cl
    );
}

/// A text field quoted as RFC 4180 asks when it holds a comma, quote or line break.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A row kept for the summary.
#[derive(Clone, Copy, Debug)]
struct Kept {
    /// Position in the solid's sequence of rows (for even thinning).
    seq: u64,
    step: u64,
    cd: f64,
    cl: f64,
}

/// One solid's rows that may still fall into the summary window.
#[derive(Clone, Debug)]
struct History {
    rows: VecDeque<Kept>,
    /// Keep one row in `stride` (a power of two).
    stride: u64,
    /// Rows received so far.
    seen: u64,
    last_step: Option<u64>,
}

impl Default for History {
    fn default() -> Self {
        History {
            rows: VecDeque::new(),
            stride: 1,
            seen: 0,
            last_step: None,
        }
    }
}

impl History {
    fn push(&mut self, step: u64, cd: f64, cl: f64) {
        let seq = self.seen;
        self.seen += 1;
        self.last_step = Some(step);
        if !seq.is_multiple_of(self.stride) {
            return;
        }
        self.rows.push_back(Kept { seq, step, cd, cl });
        if self.rows.len() > MAX_WINDOW_ROWS {
            // Thin evenly: keep the rows whose sequence number is a multiple of twice the stride.
            self.stride *= 2;
            let stride = self.stride;
            self.rows.retain(|r| r.seq.is_multiple_of(stride));
        }
    }

    fn drop_before(&mut self, step: u64) {
        while self.rows.front().is_some_and(|r| r.step < step) {
            self.rows.pop_front();
        }
    }
}

/// The CSV file: appended batch by batch, named `path` between batches (see the module docs).
struct CsvLog {
    path: PathBuf,
    partial: PathBuf,
    file: File,
    /// Bytes of complete rows (the header included).
    committed: u64,
    last_sync: Instant,
}

impl CsvLog {
    fn create(path: &Path) -> Result<CsvLog, FluidError> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".partial");
        let partial = path.with_file_name(name);
        let err = |e: std::io::Error| {
            FluidError::Invalid(format!("cannot create {}: {e}", path.display()))
        };
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&partial)
            .map_err(err)?;
        let header = format!("{CSV_HEADER}\n");
        let made = file
            .write_all(header.as_bytes())
            .and_then(|()| file.sync_data())
            .and_then(|()| std::fs::rename(&partial, path));
        if let Err(e) = made {
            let _ = std::fs::remove_file(&partial);
            return Err(err(e));
        }
        Ok(CsvLog {
            path: path.to_path_buf(),
            partial,
            file,
            committed: header.len() as u64,
            last_sync: Instant::now(),
        })
    }

    /// Appends complete rows: renamed to `.partial` while writing, truncated back to the last
    /// complete row if the write fails, renamed back either way.
    fn append(&mut self, text: &[u8]) -> Result<(), FluidError> {
        let err = |e: std::io::Error| {
            FluidError::Invalid(format!("cannot append to {}: {e}", self.path.display()))
        };
        std::fs::rename(&self.path, &self.partial).map_err(err)?;
        let mut written = self.file.write_all(text);
        if written.is_ok() && self.last_sync.elapsed() >= SYNC_EVERY {
            written = self.file.sync_data();
            self.last_sync = Instant::now();
        }
        if written.is_ok() {
            self.committed += text.len() as u64;
        } else {
            // Drop the incomplete rows so the file still ends with a complete one.
            let _ = self.file.set_len(self.committed);
            let _ = self.file.seek(SeekFrom::Start(self.committed));
        }
        let renamed = std::fs::rename(&self.partial, &self.path);
        written.map_err(err)?;
        renamed.map_err(err)
    }

    fn sync(&self) -> Result<(), FluidError> {
        self.file
            .sync_all()
            .map_err(|e| FluidError::Invalid(format!("cannot write {}: {e}", self.path.display())))
    }
}

/// How a lift frequency was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrequencyMethod {
    /// Mean period between upward zero crossings of the mean-removed lift.
    ZeroCrossings,
    /// Peak of the lift's spectrum (Hann window, DFT, parabolic refinement).
    Spectrum,
}

impl fmt::Display for FrequencyMethod {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            FrequencyMethod::ZeroCrossings => "zero crossings",
            FrequencyMethod::Spectrum => "spectral peak",
        })
    }
}

/// A measured frequency of a signal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frequency {
    /// Hz (1/time unit of the sample times).
    pub frequency_hz: f64,
    /// Periods measured: between the first and last zero crossing, or in the whole window.
    pub periods: f64,
    pub method: FrequencyMethod,
}

/// A Strouhal number and how it was measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Strouhal {
    /// `St = f D / U`.
    pub value: f64,
    pub frequency_hz: f64,
    pub periods: f64,
    pub method: FrequencyMethod,
}

/// The end-of-run figures of one solid.
#[derive(Clone, Debug, PartialEq)]
pub struct ForceSummary {
    pub solid: String,
    /// First and last step of the window.
    pub window: (u64, u64),
    /// Rows in the window (after thinning, see the module docs); 0 leaves the figures NaN.
    pub samples: usize,
    pub mean_cd: f64,
    pub mean_cl: f64,
    pub max_cd: f64,
    pub max_cl: f64,
    /// `(max C_L - min C_L) / 2`.
    pub lift_amplitude: f64,
    /// The Strouhal number, or why there is none.
    pub strouhal: Result<Strouhal, String>,
}

impl ForceSummary {
    /// The Strouhal number, if measured.
    pub fn st(&self) -> Option<f64> {
        self.strouhal.as_ref().ok().map(|s| s.value)
    }
}

impl fmt::Display for ForceSummary {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        if self.samples == 0 {
            return write!(f, "{}: no force rows recorded", self.solid);
        }
        writeln!(
            f,
            "{}: C_D {:.4} (max {:.4}), C_L {:.4} +- {:.4} (max {:.4}), steps {}..{} ({} rows)",
            self.solid,
            self.mean_cd,
            self.max_cd,
            self.mean_cl,
            self.lift_amplitude,
            self.max_cl,
            self.window.0,
            self.window.1,
            self.samples
        )?;
        match &self.strouhal {
            Ok(s) => write!(
                f,
                "  St {:.4} (lift at {:.5e} Hz, {} over {:.1} periods)",
                s.value, s.frequency_hz, s.method, s.periods
            ),
            Err(reason) => write!(f, "  St not measured: {reason}"),
        }
    }
}

/// The dominant frequency of `signal` sampled at increasing `times` (see the module docs):
/// zero crossings of the mean-removed signal when they give at least [`MIN_CROSSING_PERIODS`]
/// regular periods, else the spectral peak when the window holds at least
/// [`MIN_SPECTRAL_PERIODS`] of its periods; else the reason there is none.
pub fn lift_frequency(times: &[f64], signal: &[f64]) -> Result<Frequency, String> {
    let n = times.len().min(signal.len());
    if n < 4 {
        return Err(format!("only {n} lift values in the window"));
    }
    let (times, signal) = (&times[..n], &signal[..n]);
    if signal.iter().chain(times).any(|v| !v.is_finite()) {
        return Err("the lift or its times are not finite".into());
    }
    if times.windows(2).any(|w| w[1] <= w[0]) {
        return Err("the sample times do not increase".into());
    }
    let mean = signal.iter().sum::<f64>() / n as f64;
    let x: Vec<f64> = signal.iter().map(|s| s - mean).collect();
    let rms = (x.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
    if rms <= 1e-12 * mean.abs().max(f64::MIN_POSITIVE) {
        return Err("the lift does not oscillate".into());
    }
    let crossings = upward_crossings(times, &x, 0.25 * rms);
    let crossing_periods = crossings.len().saturating_sub(1);
    let mut irregular = None;
    if crossing_periods >= MIN_CROSSING_PERIODS {
        let periods: Vec<f64> = crossings.windows(2).map(|w| w[1] - w[0]).collect();
        let m = periods.len() as f64;
        let mean_period = (crossings[crossings.len() - 1] - crossings[0]) / m;
        let var = periods
            .iter()
            .map(|p| (p - mean_period).powi(2))
            .sum::<f64>()
            / m;
        let spread = var.sqrt() / mean_period;
        if spread <= MAX_PERIOD_SPREAD {
            return Ok(Frequency {
                frequency_hz: 1.0 / mean_period,
                periods: m,
                method: FrequencyMethod::ZeroCrossings,
            });
        }
        irregular = Some(spread);
    }
    let duration = times[n - 1] - times[0];
    let spectral = spectral_peak(times, &x);
    match spectral {
        Some(f) if f * duration >= MIN_SPECTRAL_PERIODS => Ok(Frequency {
            frequency_hz: f,
            periods: f * duration,
            method: FrequencyMethod::Spectrum,
        }),
        _ => {
            let crossing_part = match irregular {
                Some(spread) => format!(
                    "the {crossing_periods} zero-crossing periods vary by {:.0} %",
                    100.0 * spread
                ),
                None => format!(
                    "{crossing_periods} lift periods between zero crossings ({MIN_CROSSING_PERIODS} \
                     needed)"
                ),
            };
            let spectral_part = match spectral {
                Some(f) => format!(
                    "{:.1} periods of the spectral peak ({MIN_SPECTRAL_PERIODS} needed)",
                    f * duration
                ),
                None => "no spectral peak".into(),
            };
            Err(format!("{crossing_part} and {spectral_part}; run longer"))
        }
    }
}

/// Times of the upward zero crossings of `x` (linear interpolation), each counted only after
/// `x` fell below `-hysteresis` since the previous one, so that noise around zero does not add
/// crossings.
fn upward_crossings(t: &[f64], x: &[f64], hysteresis: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut armed = false;
    for i in 0..x.len() - 1 {
        if x[i] < -hysteresis {
            armed = true;
        }
        if armed && x[i] < 0.0 && x[i + 1] >= 0.0 {
            let frac = -x[i] / (x[i + 1] - x[i]);
            out.push(t[i] + frac * (t[i + 1] - t[i]));
            armed = false;
        }
    }
    out
}

/// The frequency of the largest spectral peak of `x` (mean removed) at `times`: resampled
/// evenly (linear interpolation, as many points), Hann window, zero-padded to four times the
/// length (a power of two) and transformed; the largest bin above two periods per window is
/// refined by a parabola through the log magnitudes of it and its neighbours.
fn spectral_peak(times: &[f64], x: &[f64]) -> Option<f64> {
    let n = x.len();
    let (t0, duration) = (times[0], times[n - 1] - times[0]);
    let h = duration / (n - 1) as f64;
    let mut even = Vec::with_capacity(n);
    let mut j = 0;
    for k in 0..n {
        let t = t0 + k as f64 * h;
        while j + 2 < n && times[j + 1] < t {
            j += 1;
        }
        let frac = ((t - times[j]) / (times[j + 1] - times[j])).clamp(0.0, 1.0);
        even.push(x[j] + frac * (x[j + 1] - x[j]));
    }
    let mean = even.iter().sum::<f64>() / n as f64;
    let m = (4 * n).next_power_of_two();
    let mut re = vec![0.0; m];
    let mut im = vec![0.0; m];
    for (k, v) in even.iter().enumerate() {
        let w = 0.5 * (1.0 - (2.0 * PI * k as f64 / (n - 1) as f64).cos());
        re[k] = (v - mean) * w;
    }
    fft(&mut re, &mut im);
    let mag = |k: usize| (re[k] * re[k] + im[k] * im[k]).sqrt();
    // Bin k is k / (m h) Hz; skip the window's own low-frequency lobe (below 2 periods).
    let lowest = ((2.0 * m as f64 / (n - 1) as f64).ceil() as usize).max(1);
    let peak = (lowest..m / 2).max_by(|&a, &b| mag(a).total_cmp(&mag(b)))?;
    if mag(peak) <= 0.0 {
        return None;
    }
    let (a, b, c) = (mag(peak - 1), mag(peak), mag(peak + 1));
    let shift = if a > 0.0 && c > 0.0 {
        let (la, lb, lc) = (a.ln(), b.ln(), c.ln());
        let den = la - 2.0 * lb + lc;
        if den < 0.0 {
            (0.5 * (la - lc) / den).clamp(-0.5, 0.5)
        } else {
            0.0
        }
    } else {
        0.0
    };
    Some((peak as f64 + shift) / (m as f64 * h))
}

/// In-place radix-2 FFT (`X_k = sum_j x_j e^{-2 pi i j k / m}`), `re.len()` a power of two:
/// bit-reversal permutation, then butterflies with twiddles from one table of `e^{-2 pi i k/m}`.
fn fft(re: &mut [f64], im: &mut [f64]) {
    let m = re.len();
    if m < 2 {
        return;
    }
    let mut j = 0;
    for i in 1..m {
        let mut bit = m >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let twiddle: Vec<(f64, f64)> = (0..m / 2)
        .map(|k| {
            let (s, c) = (-2.0 * PI * k as f64 / m as f64).sin_cos();
            (c, s)
        })
        .collect();
    let mut len = 2;
    while len <= m {
        let half = len / 2;
        let stride = m / len;
        for start in (0..m).step_by(len) {
            for k in 0..half {
                let (wr, wi) = twiddle[k * stride];
                let (a, b) = (start + k, start + k + half);
                let tr = re[b] * wr - im[b] * wi;
                let ti = re[b] * wi + im[b] * wr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        len *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units() -> Units {
        // One lattice force unit is 1000 * 0.01^4 / 0.001^2 = 10 N; torque unit 0.1 N m.
        Units {
            dx: 0.01,
            dt: 0.001,
            rho0: 1000.0,
        }
    }

    fn config(solids: usize) -> ForceConfig {
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

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("murmur-forces-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A sample whose SI force gives the coefficients `(cd, cl)` in `config(_)`:
    /// `q A = 0.5 * 1000 * 4 * 0.02 = 40 N`, lattice force unit 10 N.
    fn sample(step: u64, solid: usize, cd: f64, cl: f64) -> ForceSample {
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

    #[test]
    fn sine_lift_gives_the_strouhal_number_within_half_a_percent() {
        // Lift at f = 1 / 123.4 steps = 8.1037 Hz (dt = 1 ms), recorded every step for 8000
        // steps; the window (last half) holds 32 periods. St = f D / U = f * 0.1 / 2.
        let mut series = ForceSeries::new(config(1), None).unwrap();
        let period = 123.4;
        for chunk in (1..=8000u64).collect::<Vec<_>>().chunks(100) {
            let batch: Vec<ForceSample> = chunk
                .iter()
                .map(|&s| {
                    let cl = 0.3 * (2.0 * PI * s as f64 / period + 0.7).sin() + 0.02;
                    sample(s, 0, 1.3, cl)
                })
                .collect();
            series.record(&batch).unwrap();
        }
        let s = &series.finish().unwrap()[0];
        let f = 1.0 / (period * 0.001);
        let st = s.strouhal.as_ref().unwrap();
        assert_eq!(st.method, FrequencyMethod::ZeroCrossings);
        assert!((st.value - f * 0.05).abs() / (f * 0.05) < 5e-3, "{s}");
        assert!(
            (st.frequency_hz - f).abs() / f < 1e-4,
            "{}",
            st.frequency_hz
        );
        assert!(st.periods >= 30.0);
        assert_eq!(s.window, (4001, 8000));
        assert_eq!(s.samples, 4000);
        // The constant drag averages exactly; the lift's amplitude and mean are those of the sine.
        assert!((s.mean_cd - 1.3).abs() < 1e-12 && (s.max_cd - 1.3).abs() < 1e-12);
        assert!(
            (s.lift_amplitude - 0.3).abs() < 1e-3,
            "{}",
            s.lift_amplitude
        );
        assert!((s.max_cl - 0.32).abs() < 1e-3);
        // 32.4 periods: the unfinished one shifts the mean by up to 0.3 / (pi 32.4) = 0.003.
        assert!((s.mean_cl - 0.02).abs() < 4e-3, "{}", s.mean_cl);
        let text = s.to_string();
        assert!(text.starts_with("body0: C_D 1.3000") && text.contains("zero crossings"));
        assert!(text.lines().count() == 2, "{text}");
    }

    #[test]
    fn constant_drag_gives_the_exact_mean_and_no_strouhal_number() {
        let mut series = ForceSeries::new(config(2), None).unwrap();
        for step in 1..=300 {
            series
                .record(&[sample(step, 1, 0.75, 0.0), sample(step, 0, 2.5, 0.1)])
                .unwrap();
        }
        let s = series.summary();
        // Exactly the rows' own coefficient (the SI conversion rounds it once, in the row).
        let row = |solid, cd| series.row(&sample(1, solid, cd, 0.0)).unwrap().cd;
        assert_eq!(s[0].mean_cd, row(0, 2.5));
        assert_eq!(s[1].mean_cd, row(1, 0.75));
        assert!((s[0].mean_cd - 2.5).abs() < 1e-14);
        assert_eq!(s[0].lift_amplitude, 0.0);
        let reason = s[1].strouhal.as_ref().unwrap_err();
        assert!(reason.contains("does not oscillate"), "{reason}");
        assert_eq!(s[1].st(), None);
        assert!(s[1].to_string().contains("St not measured"));
    }

    #[test]
    fn too_short_a_signal_gives_no_strouhal_number_and_says_why() {
        // 6 periods in the window: neither 10 crossing periods nor 30 spectral ones.
        let period = 100.0;
        let t: Vec<f64> = (0..600).map(|i| i as f64).collect();
        let x: Vec<f64> = t.iter().map(|t| (2.0 * PI * t / period).sin()).collect();
        let e = lift_frequency(&t, &x).unwrap_err();
        assert!(e.contains("lift periods") && e.contains("spectral"), "{e}");
        assert!(!e.contains('\n'));
        assert!(lift_frequency(&t[..3], &x[..3]).is_err());
        // Non-increasing times are refused, not divided by.
        let mut bad = t.clone();
        bad[10] = bad[9];
        assert!(lift_frequency(&bad, &x).unwrap_err().contains("increase"));
        // Nothing recorded at all.
        let s = ForceSeries::new(config(1), None).unwrap().summary();
        assert_eq!(s[0].samples, 0);
        assert!(s[0].to_string().contains("no force rows"));
    }

    /// A reproducible pseudo-random sequence in [-1, 1) (SplitMix64).
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    #[test]
    fn irregular_lift_falls_back_to_the_spectral_peak() {
        // A strong second tone at 2.37 f makes the zero-crossing periods irregular; the
        // spectrum still peaks at f. Irregular sampling too (every 1 or 2 units of time).
        let f = 1.0 / 57.3;
        let mut t = Vec::new();
        let mut time = 0.0;
        for (i, r) in noise(4000, 3).iter().enumerate() {
            t.push(time);
            time += if i % 3 == 0 { 2.0 } else { 1.0 } + 0.1 * r;
        }
        let wobble = noise(t.len(), 9);
        let x: Vec<f64> = t
            .iter()
            .zip(&wobble)
            .map(|(&t, w)| {
                (2.0 * PI * f * t).sin() + 0.8 * (2.0 * PI * 2.37 * f * t + 0.3).sin() + 0.2 * w
            })
            .collect();
        let got = lift_frequency(&t, &x).unwrap();
        assert_eq!(got.method, FrequencyMethod::Spectrum);
        assert!((got.frequency_hz - f).abs() / f < 5e-3, "{got:?} vs {f}");
        assert!(got.periods > 30.0);
        // Noise alone on a clean sine does not fool the zero crossings (hysteresis).
        let t: Vec<f64> = (0..3000).map(|i| i as f64).collect();
        let n = noise(t.len(), 5);
        let x: Vec<f64> = t
            .iter()
            .zip(&n)
            .map(|(&t, w)| (2.0 * PI * f * t).sin() + 0.05 * w)
            .collect();
        let got = lift_frequency(&t, &x).unwrap();
        assert_eq!(got.method, FrequencyMethod::ZeroCrossings);
        assert!((got.frequency_hz - f).abs() / f < 5e-3, "{got:?}");
    }

    #[test]
    fn fft_matches_the_direct_sum() {
        let x = noise(64, 1);
        let (mut re, mut im) = (x.clone(), vec![0.0; 64]);
        fft(&mut re, &mut im);
        for k in [0usize, 1, 5, 31, 32, 63] {
            let (mut sr, mut si) = (0.0, 0.0);
            for (j, v) in x.iter().enumerate() {
                let a = -2.0 * PI * (j * k) as f64 / 64.0;
                sr += v * a.cos();
                si += v * a.sin();
            }
            assert!(
                (re[k] - sr).abs() < 1e-9 && (im[k] - si).abs() < 1e-9,
                "bin {k}"
            );
        }
    }

    #[test]
    fn csv_is_complete_after_every_batch_and_keeps_its_name() {
        let dir = scratch("csv");
        let path = dir.join("run_forces.csv");
        std::fs::write(&path, "an older run\n").unwrap();
        let mut c = config(2);
        c.solids[1].name = "fin, \"left\"".into();
        let mut series = ForceSeries::new(c, Some(&path)).unwrap();
        assert_eq!(series.csv_path(), Some(path.as_path()));
        // The old file is replaced by the header at once.
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            format!("{CSV_HEADER}\n")
        );
        for batch in 0..3u64 {
            let rows: Vec<ForceSample> = (1..=4)
                .flat_map(|k| {
                    let step = batch * 4 + k;
                    [sample(step, 1, 1.0, 0.5), sample(step, 0, 2.0, -0.25)]
                })
                .collect();
            series.record(&rows).unwrap();
            // After each batch: every row so far, complete, under the final name only.
            let text = std::fs::read_to_string(&path).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 1 + 8 * (batch as usize + 1));
            assert!(text.ends_with('\n'));
            assert!(!dir.join("run_forces.csv.partial").exists());
        }
        // A batch with an unknown solid or an old step is refused whole, nothing written.
        let before = std::fs::read_to_string(&path).unwrap();
        assert!(series
            .record(&[sample(13, 0, 1.0, 0.0), sample(13, 2, 1.0, 0.0)])
            .is_err());
        let e = series.record(&[sample(12, 0, 1.0, 0.0)]).unwrap_err();
        assert!(e.to_string().contains("step order"), "{e}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
        let summary = series.finish().unwrap();
        assert_eq!(summary.len(), 2);

        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], CSV_HEADER);
        // Rows sorted by step, then solid; SI values (force 2 * 4 = 8 lattice units = 80 N).
        let first: Vec<&str> = lines[1].split(',').collect();
        assert_eq!(first[..3], ["1", "1e-3", "body0"]);
        let want = [80.0, -10.0, 0.0, 0.0, 0.0, 0.1, 2.0, -0.25];
        for (got, want) in first[3..].iter().zip(want) {
            let got: f64 = got.parse().unwrap();
            assert!((got - want).abs() < 1e-12, "{} vs {want}", lines[1]);
        }
        assert!(
            lines[2].starts_with("1,1e-3,\"fin, \"\"left\"\"\",4"),
            "{}",
            lines[2]
        );
        assert!(lines[24].starts_with("12,1.2e-2,\"fin"));
        // Every field parses back as a number (the quoted name aside).
        for l in &lines[1..] {
            let fields: Vec<&str> = l.split(',').collect();
            let nums: Vec<f64> = [&fields[..2], &fields[fields.len() - 8..]]
                .concat()
                .iter()
                .map(|f| f.parse::<f64>().unwrap())
                .collect();
            assert_eq!(nums.len(), 10);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn csv_errors_are_one_line() {
        let dir = scratch("csv-missing");
        let path = dir.join("no/such/dir/forces.csv");
        let e = ForceSeries::new(config(1), Some(&path)).err().unwrap();
        let e = e.to_string();
        assert!(e.starts_with("cannot create ") && !e.contains('\n'), "{e}");
        // The file vanishing mid-run is reported, not a panic.
        let path = dir.join("forces.csv");
        let mut series = ForceSeries::new(config(1), Some(&path)).unwrap();
        std::fs::remove_file(&path).unwrap();
        let e = series.record(&[sample(1, 0, 1.0, 0.0)]).unwrap_err();
        assert!(e.to_string().starts_with("cannot append to "), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn history_stays_bounded_and_follows_the_window() {
        // Window = last quarter; older rows are dropped as the run goes on.
        let mut c = config(1);
        c.window_fraction = 0.25;
        let mut series = ForceSeries::new(c, None).unwrap();
        for step in 0..4000u64 {
            series.record(&[sample(step, 0, step as f64, 0.0)]).unwrap();
        }
        assert_eq!(series.history[0].rows.len(), 1000);
        let s = &series.summary()[0];
        assert_eq!(s.window, (3000, 3999));
        assert_eq!(s.mean_cd, 3499.5);
        // Thinning keeps every second row, evenly, beyond the cap.
        let mut h = History::default();
        for i in 0..(MAX_WINDOW_ROWS as u64 + 10) {
            h.push(i, 0.0, 0.0);
        }
        assert!(h.rows.len() <= MAX_WINDOW_ROWS / 2 + 10);
        assert_eq!(h.stride, 2);
        assert!(h.rows.iter().all(|r| r.seq % 2 == 0));
        assert!(h
            .rows
            .iter()
            .zip(h.rows.iter().skip(1))
            .all(|(a, b)| b.step - a.step == 2));
    }
}
