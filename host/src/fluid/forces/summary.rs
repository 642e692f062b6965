//! The end-of-run summary of the forces, per solid: mean and extreme coefficients, lift
//! amplitude and Strouhal number over the last part of the run.
//!
//! Over the last `window_fraction` (default one half) of the recorded steps, per solid: mean,
//! maximum of `C_D` and `C_L`, lift amplitude `(max C_L - min C_L) / 2`, and the Strouhal
//! number `St = f D / U` of the lift's frequency `f` ([`lift_frequency`]): from the mean period
//! between upward zero crossings of the mean-removed lift when there are at least
//! [`MIN_CROSSING_PERIODS`](super::spectrum::MIN_CROSSING_PERIODS) regular periods, else from the peak of its spectrum (Hann window, DFT,
//! peak refined by a parabola through the log magnitudes) when the window holds at least
//! [`MIN_SPECTRAL_PERIODS`](super::spectrum::MIN_SPECTRAL_PERIODS) periods of it; else none, with the reason.
//!
//! For the summary the series keeps, per solid, `(step, C_D, C_L)` of the rows that can still
//! fall into the window (older ones are dropped as the run goes on), at most
//! [`MAX_WINDOW_ROWS`]: beyond that it keeps every second row (then every fourth...), evenly.

use super::spectrum::{lift_frequency, FrequencyMethod};
use super::ForceSeries;
use std::collections::VecDeque;
use std::fmt;

/// Most rows per solid kept for the summary (then evenly thinned).
pub const MAX_WINDOW_ROWS: usize = 1 << 19;

/// Default fraction of the run (at its end) that the summary covers.
pub const DEFAULT_WINDOW_FRACTION: f64 = 0.5;

/// A row kept for the summary.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kept {
    /// Position in the solid's sequence of rows (for even thinning).
    pub(super) seq: u64,
    pub(super) step: u64,
    pub(super) cd: f64,
    pub(super) cl: f64,
}

/// One solid's rows that may still fall into the summary window.
#[derive(Clone, Debug)]
pub(super) struct History {
    pub(super) rows: VecDeque<Kept>,
    /// Keep one row in `stride` (a power of two).
    pub(super) stride: u64,
    /// Rows received so far.
    pub(super) seen: u64,
    pub(super) last_step: Option<u64>,
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
    pub(super) fn push(&mut self, step: u64, cd: f64, cl: f64) {
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

    pub(super) fn drop_before(&mut self, step: u64) {
        while self.rows.front().is_some_and(|r| r.step < step) {
            self.rows.pop_front();
        }
    }
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

impl ForceSeries {
    /// First step of the summary window: the last `window_fraction` of the recorded span.
    /// It only moves forward as the run goes on, so rows before it are never needed again.
    pub(super) fn window_start(&self, (first, last): (u64, u64)) -> u64 {
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
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config, sample};
    use super::super::ForceSample;
    use super::*;
    use std::f64::consts::PI;

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
