//! Flock checkpoints (`flock run --checkpoint-every K`, `--resume PATH`): a [`FlockCapture`] in
//! the checkpoint container ([`crate::checkpoint`]), and the checks a resumed run makes before
//! its first step. The fields and arrays are listed in `docs/checkpoints.md` ("Flock").
//!
//! - Arrays: `pos` and `vel` (`n x 3` float32, scene units) and `id` (`n` uint32), in the
//!   backend's internal order (not by id), so the next step adds the neighbour sums in the order
//!   the straight run adds them.
//! - Fields: `n`, `method`, `backend` (the one that wrote it), the rules (`rule1_distance` ...
//!   `dt`), the grid (`cell_width_factor`, `x_split`, `cell_order`), the GPU's `sort` and
//!   `block_size`, `within` (the order inside cells) and `buffer` (the double-buffer index).

use super::capture::{settings_differ, FlockCapture};
use super::{CellOrder, FlockSettings, FlockState, Method, SortArg, WithinCell};
use crate::checkpoint::{
    resolve, CheckpointError, CheckpointReader, CheckpointWriter, Header, Kind, Result, Written,
};
use clap::ValueEnum;
use murmur_common::flock::FlockParams;
use murmur_common::Vec3;
use std::path::{Path, PathBuf};

/// The name a flag gives a value (`coherent-shared`, `morton`, `radix`).
fn flag_name<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value()
        .map(|p| p.get_name().to_string())
        .unwrap_or_default()
}

fn within_name(w: WithinCell) -> &'static str {
    match w {
        WithinCell::Binned => "binned",
        WithinCell::ById => "by-id",
    }
}

/// The rule parameters as header fields, in [`FlockParams`]' order.
fn rules(p: &FlockParams) -> [(&'static str, f32); 9] {
    [
        ("rule1_distance", p.rule1_distance),
        ("rule2_distance", p.rule2_distance),
        ("rule3_distance", p.rule3_distance),
        ("rule1_scale", p.rule1_scale),
        ("rule2_scale", p.rule2_scale),
        ("rule3_scale", p.rule3_scale),
        ("max_speed", p.max_speed),
        ("scale", p.scale),
        ("dt", p.dt),
    ]
}

/// Writes `capture`, taken after `step` steps of the flock (counted from its start) by the
/// backend `backend` (`cpu`, `cuda`), to `path` (atomically: a temporary name, then a rename).
pub fn save(path: &Path, step: u64, capture: &FlockCapture, backend: &str) -> Result<Written> {
    let s = &capture.settings;
    let n = capture.state.len() as u64;
    let time = step as f64 * s.params.dt as f64;
    let mut header = Header::new(Kind::Flock, step, time)
        .with_field("n", n as i64)
        .with_field("method", s.method.name())
        .with_field("backend", backend);
    for (name, x) in rules(&s.params) {
        header = header.with_field(name, x as f64);
    }
    header = header
        .with_field("cell_width_factor", s.cell_width_factor as f64)
        .with_field("x_split", s.x_split as i64)
        .with_field("cell_order", flag_name(&s.cell_order))
        .with_field("sort", flag_name(&s.sort))
        .with_field("block_size", s.block_size as i64)
        .with_field("within", within_name(capture.within))
        .with_field("buffer", capture.buffer as i64);
    let flat = |v: &[Vec3]| -> Vec<f32> { v.iter().flat_map(|p| p.to_array()).collect() };
    let mut w = CheckpointWriter::create(path, header)?;
    w.write_slice("pos", &[n, 3], &flat(&capture.state.pos))?;
    w.write_slice("vel", &[n, 3], &flat(&capture.state.vel))?;
    w.write_slice("id", &[n], &capture.state.id)?;
    w.finish()
}

/// A header field, or the one-line refusal naming it.
fn field<'a>(r: &'a CheckpointReader, name: &str) -> Result<&'a toml::Value> {
    r.header()
        .fields
        .get(name)
        .ok_or_else(|| CheckpointError::Corrupt {
            path: r.path().display().to_string(),
            message: format!("the flock's header has no field {name}"),
        })
}

fn bad(r: &CheckpointReader, name: &str, v: &toml::Value) -> CheckpointError {
    CheckpointError::Corrupt {
        path: r.path().display().to_string(),
        message: format!("the flock's field {name} has the unusable value {v}"),
    }
}

fn float(r: &CheckpointReader, name: &str) -> Result<f32> {
    let v = field(r, name)?;
    v.as_float()
        .map(|x| x as f32)
        .ok_or_else(|| bad(r, name, v))
}

fn int(r: &CheckpointReader, name: &str, max: u64) -> Result<u64> {
    let v = field(r, name)?;
    v.as_integer()
        .and_then(|x| u64::try_from(x).ok())
        .filter(|&x| x <= max)
        .ok_or_else(|| bad(r, name, v))
}

fn choice<T: ValueEnum>(r: &CheckpointReader, name: &str) -> Result<T> {
    let v = field(r, name)?;
    v.as_str()
        .and_then(|s| T::from_str(s, false).ok())
        .ok_or_else(|| bad(r, name, v))
}

/// The settings a checkpoint records. The GPU's step form (CUDA graph, PDL, timer) is not part
/// of a flock's state: it takes the values of a plain `flock run`.
fn settings(r: &CheckpointReader) -> Result<FlockSettings> {
    let params = FlockParams {
        rule1_distance: float(r, "rule1_distance")?,
        rule2_distance: float(r, "rule2_distance")?,
        rule3_distance: float(r, "rule3_distance")?,
        rule1_scale: float(r, "rule1_scale")?,
        rule2_scale: float(r, "rule2_scale")?,
        rule3_scale: float(r, "rule3_scale")?,
        max_speed: float(r, "max_speed")?,
        scale: float(r, "scale")?,
        dt: float(r, "dt")?,
    };
    Ok(FlockSettings {
        params,
        method: choice::<Method>(r, "method")?,
        cell_width_factor: float(r, "cell_width_factor")?,
        x_split: int(r, "x_split", u32::MAX as u64)? as u32,
        block_size: int(r, "block_size", u32::MAX as u64)? as u32,
        cell_order: choice::<CellOrder>(r, "cell_order")?,
        sort: choice::<SortArg>(r, "sort")?,
        cuda_graph: true,
        pdl: false,
        gpu_timer: true,
    })
}

/// Reads the flock checkpoint `path`: its header and the capture it holds, every array checked
/// against its checksum and shape.
pub fn load(path: &Path) -> Result<(Header, FlockCapture)> {
    let mut r = CheckpointReader::open(path)?;
    r.expect_kind(Kind::Flock)?;
    let p = path.display().to_string();
    let n = int(&r, "n", u32::MAX as u64)?;
    for (name, shape) in [("pos", vec![n, 3]), ("vel", vec![n, 3]), ("id", vec![n])] {
        let found = r.header().array(name).map(|a| a.shape.clone());
        if found.as_ref() != Some(&shape) {
            return Err(CheckpointError::Corrupt {
                path: p,
                message: match found {
                    None => format!("the flock has no array {name}"),
                    Some(s) => {
                        format!("array {name} has shape {s:?}, the flock's n {n} needs {shape:?}")
                    }
                },
            });
        }
    }
    let within = match field(&r, "within")?.as_str() {
        Some("binned") => WithinCell::Binned,
        Some("by-id") => WithinCell::ById,
        _ => return Err(bad(&r, "within", field(&r, "within")?)),
    };
    let buffer = int(&r, "buffer", 1)? as u8;
    let settings = settings(&r)?;
    let vec3 = |v: Vec<f32>| -> Vec<Vec3> {
        v.chunks_exact(3)
            .map(|c| Vec3::new(c[0], c[1], c[2]))
            .collect()
    };
    let pos = vec3(r.read_vec::<f32>("pos")?);
    let vel = vec3(r.read_vec::<f32>("vel")?);
    let id = r.read_vec::<u32>("id")?;
    let header = r.header().clone();
    let capture = FlockCapture {
        state: FlockState { pos, vel, id },
        buffer,
        within,
        settings,
    };
    capture
        .check(&capture.settings)
        .map_err(|e| CheckpointError::Corrupt {
            path: p,
            message: e.to_string(),
        })?;
    Ok((header, capture))
}

/// A checkpoint a run resumes from.
pub struct Resume {
    /// The file read (a folder's newest valid checkpoint).
    pub path: PathBuf,
    /// Its header.
    pub header: Header,
    /// The flock it holds.
    pub capture: FlockCapture,
}

impl Resume {
    /// The step the checkpoint was written at (steps from the flock's start).
    pub fn step(&self) -> u64 {
        self.header.step
    }

    /// Refuses, naming the first field that differs, a checkpoint stepped with other rules, another
    /// method or another grid than `settings` (the resumed run's).
    pub fn check(&self, settings: &FlockSettings) -> Result<()> {
        match settings_differ(&self.capture.settings, settings) {
            None => Ok(()),
            Some((field, found, expected)) => Err(CheckpointError::Mismatch {
                path: self.path.display().to_string(),
                field: field.into(),
                found,
                expected,
            }),
        }
    }
}

/// `--resume PATH` of a run to `steps` steps: the checkpoint (a file, or a folder's newest valid
/// one; a note for each newer one skipped, on stderr), refused when it was written by several
/// ranks or at or past `steps`.
pub fn open(path: &Path, steps: u64) -> anyhow::Result<Resume> {
    let from = resolve(path)?;
    for note in &from.notes {
        eprintln!("murmur: note: {note}");
    }
    if from.manifest {
        anyhow::bail!(
            "checkpoint {} was written by several ranks: flock run resumes one-rank checkpoints \
             only",
            from.path.display()
        );
    }
    let (header, capture) = load(&from.path)?;
    if header.step >= steps {
        anyhow::bail!(
            "checkpoint {} is at step {}, at or past --steps {steps}: pass a larger --steps",
            from.path.display(),
            header.step
        );
    }
    Ok(Resume {
        path: from.path,
        header,
        capture,
    })
}

/// The short name of a backend from its description (`cpu (rayon, 8 threads)` -> `cpu`).
pub fn backend_name(describe: &str) -> &str {
    describe.split_whitespace().next().unwrap_or("unknown")
}
