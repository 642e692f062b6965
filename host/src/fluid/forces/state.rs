//! The force series' state for a checkpoint: what the summary has kept (every solid's rows in
//! the window, its thinning stride, rows seen, last step) and the recorded span, so that a
//! resumed run prints the summary the uninterrupted run prints; and the CSV file continued at
//! the checkpoint's step (rows past it dropped, later rows appended).

use super::csv::{CsvLog, CSV_HEADER};
use super::summary::{History, Kept};
use super::{ForceConfig, ForceSeries};
use crate::fluid::FluidError;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// A [`ForceSeries`]' summary state, by value.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesState {
    /// First and last recorded step (all solids).
    pub span: Option<(u64, u64)>,
    /// One per solid.
    pub solids: Vec<SolidRows>,
}

/// One solid's kept rows and counters.
#[derive(Clone, Debug, PartialEq)]
pub struct SolidRows {
    /// `(sequence number, step, cd, cl)` of every row kept, oldest first.
    pub rows: Vec<(u64, u64, f64, f64)>,
    /// Keep one row in `stride`.
    pub stride: u64,
    /// Rows received so far.
    pub seen: u64,
    /// The last step recorded.
    pub last_step: Option<u64>,
}

impl ForceSeries {
    /// The summary state (the CSV is the file's business: see [`ForceSeries::resumed`]).
    pub fn state(&self) -> SeriesState {
        SeriesState {
            span: self.span,
            solids: self
                .history
                .iter()
                .map(|h| SolidRows {
                    rows: h.rows.iter().map(|k| (k.seq, k.step, k.cd, k.cl)).collect(),
                    stride: h.stride,
                    seen: h.seen,
                    last_step: h.last_step,
                })
                .collect(),
        }
    }

    /// A series for `config` that goes on from `state` (a checkpoint's, at step `step`) and
    /// continues the CSV file `csv`: its rows past `step` are dropped and later rows appended.
    /// A `csv` that does not exist is created with its header (the rows before `step` are then
    /// in the folder of the run that wrote the checkpoint).
    pub fn resumed(
        config: ForceConfig,
        state: &SeriesState,
        step: u64,
        csv: Option<&Path>,
    ) -> Result<ForceSeries, FluidError> {
        let config = config.validated()?;
        if state.solids.len() != config.solids.len() {
            return Err(FluidError::Invalid(format!(
                "the checkpoint's force series has {} solids, the scene {}",
                state.solids.len(),
                config.solids.len()
            )));
        }
        let history = state
            .solids
            .iter()
            .map(|s| History {
                rows: s
                    .rows
                    .iter()
                    .map(|&(seq, step, cd, cl)| Kept { seq, step, cd, cl })
                    .collect(),
                stride: s.stride.max(1),
                seen: s.seen,
                last_step: s.last_step,
            })
            .collect();
        let csv = match csv {
            Some(p) if p.exists() => Some(CsvLog::continue_at(p, step)?),
            Some(p) => Some(CsvLog::create(p)?),
            None => None,
        };
        Ok(ForceSeries {
            config,
            csv,
            history,
            span: state.span,
        })
    }
}

impl CsvLog {
    /// Opens the CSV file `path` to append after its last row of a step at most `step`: the
    /// rows after it are cut off (the run that wrote them went on past its checkpoint). A file
    /// whose first line is not the header is refused.
    pub(super) fn continue_at(path: &Path, step: u64) -> Result<CsvLog, FluidError> {
        let err =
            |e: String| FluidError::Invalid(format!("cannot continue {}: {e}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| err(e.to_string()))?;
        let mut reader = BufReader::new(file);
        let mut line = String::new();
        let mut keep = 0u64;
        let mut first = true;
        loop {
            line.clear();
            let n = reader
                .read_line(&mut line)
                .map_err(|e| err(e.to_string()))?;
            if n == 0 || !line.ends_with('\n') {
                break;
            }
            if first {
                if line.trim_end() != CSV_HEADER {
                    return Err(err(format!(
                        "its first line is not the force CSV's header ({CSV_HEADER})"
                    )));
                }
                first = false;
                keep += n as u64;
                continue;
            }
            let row_step = line
                .split(',')
                .next()
                .and_then(|s| s.parse::<u64>().ok())
                .ok_or_else(|| err(format!("a row without a step: {:?}", line.trim_end())))?;
            if row_step > step {
                break;
            }
            keep += n as u64;
        }
        if first {
            return Err(err("it has no header line".into()));
        }
        CsvLog::append_to(path, keep)
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config, sample, scratch};
    use super::*;

    #[test]
    fn a_resumed_series_writes_the_csv_and_summary_of_the_straight_one() {
        let dir = scratch("resume");
        let rows = |a: u64, b: u64| -> Vec<super::super::ForceSample> {
            (a..=b)
                .flat_map(|s| {
                    let x = s as f64;
                    [sample(s, 0, 2.0 + (x * 0.3).sin(), (x * 0.2).cos())]
                })
                .collect()
        };
        let straight = dir.join("straight.csv");
        let mut s = ForceSeries::new(config(1), Some(&straight)).unwrap();
        s.record(&rows(1, 40)).unwrap();
        s.record(&rows(41, 100)).unwrap();
        let want = s.finish().unwrap();

        let resumed = dir.join("resumed.csv");
        let mut a = ForceSeries::new(config(1), Some(&resumed)).unwrap();
        a.record(&rows(1, 30)).unwrap();
        let state = a.state();
        // The first run went on past its checkpoint before it stopped.
        a.record(&rows(31, 37)).unwrap();
        drop(a.finish().unwrap());
        let mut b = ForceSeries::resumed(config(1), &state, 30, Some(&resumed)).unwrap();
        b.record(&rows(31, 100)).unwrap();
        let got = b.finish().unwrap();
        assert_eq!(
            std::fs::read(&straight).unwrap(),
            std::fs::read(&resumed).unwrap()
        );
        assert_eq!(format!("{:?}", got), format!("{:?}", want));
        assert!(ForceSeries::resumed(config(2), &state, 30, None).is_err());
    }
}
