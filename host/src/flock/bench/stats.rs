//! Statistics of one configuration's measured steps, computed once when its row is made (by the
//! runner, or from a `steps.csv` for `--replot`) and read by the markdown table, `summary.csv`
//! and the plots.

/// Mean, median, 5th and 95th percentiles of the per-step times (ms), and the host's mean wall
/// time per step (ms; NaN where unknown).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepStats {
    pub mean_ms: f64,
    pub median_ms: f64,
    pub p5_ms: f64,
    pub p95_ms: f64,
    pub wall_ms: f64,
}

impl StepStats {
    /// The statistics of the per-step times `ms`, with `wall_ms` as the mean wall time.
    pub fn of(ms: &[f64], wall_ms: f64) -> StepStats {
        let mut sorted = ms.to_vec();
        sorted.sort_by(f64::total_cmp);
        StepStats {
            mean_ms: sorted.iter().sum::<f64>() / sorted.len().max(1) as f64,
            median_ms: percentile(&sorted, 0.5),
            p5_ms: percentile(&sorted, 0.05),
            p95_ms: percentile(&sorted, 0.95),
            wall_ms,
        }
    }

    /// True when the mean is a positive, finite time (what log-scale plots need).
    pub fn plottable(&self) -> bool {
        self.mean_ms.is_finite() && self.mean_ms > 0.0
    }
}

/// The nearest-rank `q` quantile of sorted values (NaN for none).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_known_sample() {
        let ms: Vec<f64> = (1..=101).rev().map(f64::from).collect();
        let s = StepStats::of(&ms, 2.0);
        assert_eq!(
            (s.mean_ms, s.median_ms, s.p5_ms, s.p95_ms),
            (51.0, 51.0, 6.0, 96.0)
        );
        assert!(s.plottable());
        assert!(!StepStats::of(&[], 1.0).plottable());
    }
}
