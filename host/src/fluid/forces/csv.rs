//! The forces' CSV file: one row per solid and recorded step, appended batch by batch so that a
//! file named `NAME.csv` always holds complete rows, whatever stops the run.
//!
//! Columns `step,time_s,solid,fx_N,fy_N,fz_N,tx_Nm,ty_Nm,tz_Nm,cd,cl`: the step, its time
//! `step dt` (s), the solid's name, the force on it (N), the torque on it about its centre (N m),
//! its drag and lift coefficients. One row per solid and recorded step. Numbers are written in
//! Rust's shortest round-trip exponent form (`1.25e-3`), which every CSV reader parses.
//!
//! Rows arrive in batches ([`ForceSeries::record`](super::ForceSeries::record); the GPU keeps them in a ring buffer and
//! hands them over every few steps). Nothing is kept in memory between batches: each batch is
//! appended to the one open file. The file is named `NAME.csv` whenever no batch is being
//! appended: it is renamed `NAME.csv.partial` for the append and back afterwards (renames keep
//! the open file), so an existing `NAME.csv` always holds complete rows, every batch handed
//! over so far, whatever stops the run (an error, a panic, a kill between two batches). A kill
//! *during* an append leaves `NAME.csv.partial`, whose rows are all complete except perhaps the
//! last one. A failed append (disk full) is truncated back to the last complete row before the
//! error is returned. The file is synced to disk at most once a second and at the end (a power
//! loss loses at most that second), and is created, with its header, when the series is.

use super::ForceRow;
use crate::fluid::FluidError;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The CSV header (see the module docs for the columns).
pub const CSV_HEADER: &str = "step,time_s,solid,fx_N,fy_N,fz_N,tx_Nm,ty_Nm,tz_Nm,cd,cl";

/// Longest time between two syncs of the CSV file to disk.
const SYNC_EVERY: Duration = Duration::from_secs(1);

/// Appends one CSV line for `r`.
pub(super) fn csv_row(out: &mut String, r: &ForceRow, name: &str) {
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

/// The CSV file: appended batch by batch, named `path` between batches (see the module docs).
pub(super) struct CsvLog {
    pub(super) path: PathBuf,
    partial: PathBuf,
    file: File,
    /// Bytes of complete rows (the header included).
    committed: u64,
    last_sync: Instant,
}

impl CsvLog {
    pub(super) fn create(path: &Path) -> Result<CsvLog, FluidError> {
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

    /// Opens the existing CSV file `path` to append after its first `keep` bytes (complete
    /// rows, the header included), cutting off the rest.
    pub(super) fn append_to(path: &Path, keep: u64) -> Result<CsvLog, FluidError> {
        let mut name = path.file_name().unwrap_or_default().to_os_string();
        name.push(".partial");
        let partial = path.with_file_name(name);
        let err = |e: std::io::Error| {
            FluidError::Invalid(format!("cannot continue {}: {e}", path.display()))
        };
        let mut file = OpenOptions::new().write(true).open(path).map_err(err)?;
        file.set_len(keep)
            .and_then(|()| file.seek(SeekFrom::Start(keep)).map(drop))
            .and_then(|()| file.sync_data())
            .map_err(err)?;
        Ok(CsvLog {
            path: path.to_path_buf(),
            partial,
            file,
            committed: keep,
            last_sync: Instant::now(),
        })
    }

    /// Appends complete rows: renamed to `.partial` while writing, truncated back to the last
    /// complete row if the write fails, renamed back either way.
    pub(super) fn append(&mut self, text: &[u8]) -> Result<(), FluidError> {
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

    pub(super) fn sync(&self) -> Result<(), FluidError> {
        self.file
            .sync_all()
            .map_err(|e| FluidError::Invalid(format!("cannot write {}: {e}", self.path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{config, sample, scratch};
    use super::super::{ForceSample, ForceSeries};
    use super::*;

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
}
