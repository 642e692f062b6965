//! A fluid run's checkpoint file (one lattice): what [`save`] writes from a backend and the run
//! beside it, and what [`FluidCheckpoint`] checks and restores. The container is
//! [`crate::checkpoint`] (`.npz` with `header.toml`); `docs/checkpoints.md` lists every field
//! and array.
//!
//! - **The state** ([`crate::fluid::state`]): the populations in their storage encoding in the
//!   canonical order (cells x fastest, then the 27 directions, the in-place parity resolved),
//!   streamed piece by piece; the small state (step, inlet scale, rates, outlet velocities,
//!   the immersed boundary's solids, sample forces and pending force records).
//! - **For readers**: density and velocity (SI, FP32) computed from the same pieces, and the
//!   cell flags.
//! - **The run beside the backend**: the force series' summary state (the CSV continues from the
//!   file itself), the last output step (the health check's messages name it).
//! - **Identity**: the scene's canonical text and a SHA-256 of its physics and geometry only
//!   ([`Identity`]: the scene without `[run]`, `[health]`, `[smoke]` and `[view]`), so a run
//!   may resume with more steps or another output cadence, and nothing else.

mod arrays;
mod identity;
pub mod ranks;
pub mod run;

pub use identity::Identity;
pub use run::Checkpoints;

use super::forces::state::SeriesState;
use super::slab::state::{box_len, copy_box, CellBox};
use super::state::snapshot::{Live, PieceSource};
use super::state::{cell_bytes, SmallState};
use super::{FluidBackend, FluidError};
use crate::checkpoint::{
    CheckpointError, CheckpointReader, CheckpointWriter, DType, Header, Kind, Piece, SinkFactory,
    Written,
};
use murmur_common::lbm::{CollisionModel, Lattice, StorageKind, Streaming, Units};
use std::path::Path;

/// Cells per piece when the populations stream to or from a file: 27 MiB of FP16 populations,
/// 54 MiB of FP32 (the resident memory a checkpoint adds, whatever the lattice's size).
pub const PIECE_CELLS: usize = 1 << 19;

impl From<CheckpointError> for FluidError {
    fn from(e: CheckpointError) -> FluidError {
        FluidError::Invalid(e.to_string())
    }
}

/// What a run keeps beside the backend, saved with it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunExtra {
    /// The force series' summary state (`None` without solids).
    pub series: Option<SeriesState>,
    /// The last output step written (the health check's messages name it).
    pub last_output: Option<u64>,
    /// Arrays of a layer above the fluid that rides the run (the coupled flocks' boids),
    /// written as members of their own; that layer reads them back
    /// ([`super::riders::Rider::restore`]).
    pub arrays: Vec<NamedArray>,
}

/// A named array a rider keeps in the run's checkpoints: its member name, shape and values.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedArray {
    pub name: String,
    pub shape: Vec<u64>,
    pub values: ArrayValues,
}

/// The values of a [`NamedArray`].
#[derive(Clone, Debug, PartialEq)]
pub enum ArrayValues {
    F32(Vec<f32>),
    U32(Vec<u32>),
    U64(Vec<u64>),
}

/// What [`save`] needs besides the backend.
pub struct SaveContext<'a> {
    /// The scene's identity.
    pub identity: &'a Identity,
    /// The scene's units (the readers' fields are in SI).
    pub units: Units,
    /// The scene's cell flags (x fastest).
    pub flags: &'a [u8],
    /// The run's state beside the backend.
    pub extra: &'a RunExtra,
    /// Where the bytes go ([`crate::checkpoint::file_sink`], or a failing one in tests).
    pub factory: &'a SinkFactory,
}

/// The dtype of the populations in `storage`: FP32 as `float32`, FP16 as its stored bits.
pub fn population_dtype(storage: StorageKind) -> DType {
    match storage {
        StorageKind::Fp32 => DType::F32,
        StorageKind::Fp16s | StorageKind::Fp16c => DType::U16,
    }
}

/// The lattice's shape as NumPy indexes it, `[nz, ny, nx]`.
pub fn zyx(l: Lattice) -> [u64; 3] {
    [l.nz as u64, l.ny as u64, l.nx as u64]
}

/// Writes `backend`'s checkpoint to `path`: the small state, the populations piece by piece,
/// the readers' density and velocity from the same pieces, the flags, the run's extra state;
/// the file appears complete (header last, fsync, rename) or not at all.
pub fn save(
    path: &Path,
    backend: &mut dyn FluidBackend,
    cx: &SaveContext,
) -> Result<Written, FluidError> {
    let l = backend.lattice();
    save_box(path, backend, cx, ([0; 3], [l.nx, l.ny, l.nz]), None)
}

/// [`save`] of the cells of `cells` (a rank's own box; its state pieces number them x fastest)
/// with the header's `piece` (several ranks). The small state's capture is collective on a
/// rank's slab.
pub fn save_box(
    path: &Path,
    backend: &mut dyn FluidBackend,
    cx: &SaveContext,
    cells: CellBox,
    piece: Option<Piece>,
) -> Result<Written, FluidError> {
    let (small, header) = capture(backend, cx, piece)?;
    write_body(path, header, &small, &mut Live(backend), cx, cells)
}

/// The small state of `backend` and the checkpoint's header (with `piece` on several ranks):
/// what a checkpoint takes from the backend besides its populations' pieces.
pub fn capture(
    backend: &mut dyn FluidBackend,
    cx: &SaveContext,
    piece: Option<Piece>,
) -> Result<(SmallState, Header), FluidError> {
    let small = backend.capture_small_state()?;
    let mut header = arrays::header(
        &small,
        cx,
        &backend.describe(),
        &backend.layout().describe().to_string(),
    );
    if let Some(p) = piece {
        header = header.with_piece(p);
    }
    Ok((small, header))
}

/// Writes a checkpoint of `small` (under `header`) with the populations' pieces of `cells`
/// from `source` (the backend between two steps, or a copy of it on another thread): the
/// populations piece by piece, the readers' density and velocity from the same pieces, the
/// flags, the small state and the run's extra state; the file appears complete (header last,
/// fsync, rename) or not at all.
pub fn write_body(
    path: &Path,
    header: Header,
    small: &SmallState,
    source: &mut dyn PieceSource,
    cx: &SaveContext,
    cells: CellBox,
) -> Result<Written, FluidError> {
    let lattice = small.lattice;
    if cx.flags.len() != lattice.cells() {
        return Err(FluidError::WrongSize {
            what: format!(
                "the scene's flags ({} cells, the lattice {})",
                cx.flags.len(),
                lattice.cells()
            ),
        });
    }
    let mut w = CheckpointWriter::create_with(path, header, cx.factory)?;
    let [sx, sy, sz] = cells.1.map(u64::from);
    let n = box_len(cells.1);
    let storage = small.storage;
    w.begin_array("populations", population_dtype(storage), &[sz, sy, sx, 27])?;
    stream_pieces(source, storage, n, &mut w, |bytes| bytes.to_vec())?;
    w.end_array()?;
    w.begin_array("density", DType::F32, &[sz, sy, sx])?;
    stream_pieces(source, storage, n, &mut w, |bytes| {
        arrays::densities(storage, bytes, &cx.units)
    })?;
    w.end_array()?;
    w.begin_array("velocity", DType::F32, &[sz, sy, sx, 3])?;
    stream_pieces(source, storage, n, &mut w, |bytes| {
        arrays::velocities(storage, bytes, &cx.units)
    })?;
    w.end_array()?;
    let whole = ([0; 3], [lattice.nx, lattice.ny, lattice.nz]);
    let mut flags = vec![0u8; n];
    copy_box(cx.flags, whole, &mut flags, cells, 1)?;
    w.write_slice("flags", &[sz, sy, sx], &flags)?;
    arrays::write_small(&mut w, small)?;
    if let Some(s) = &cx.extra.series {
        arrays::write_series(&mut w, s)?;
    }
    for a in &cx.extra.arrays {
        match &a.values {
            ArrayValues::F32(v) => w.write_slice(&a.name, &a.shape, v)?,
            ArrayValues::U32(v) => w.write_slice(&a.name, &a.shape, v)?,
            ArrayValues::U64(v) => w.write_slice(&a.name, &a.shape, v)?,
        }
    }
    Ok(w.finish()?)
}

/// Streams the first `n` cells of `source`'s pieces (of `storage`), each turned into bytes by
/// `convert`, into `w`'s open array: the pieces are read and converted on this thread while
/// another writes the previous ones (at most one piece waits between them), so the disk and
/// the conversion overlap.
fn stream_pieces(
    source: &mut dyn PieceSource,
    storage: murmur_common::lbm::StorageKind,
    n: usize,
    w: &mut CheckpointWriter,
    convert: impl Fn(&[u8]) -> Vec<u8>,
) -> Result<(), FluidError> {
    let b = cell_bytes(storage);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(1);
    std::thread::scope(|s| {
        let writer = s.spawn(move || -> Result<(), FluidError> {
            for buf in rx {
                w.write_chunk(&buf)?;
            }
            Ok(())
        });
        let produced = (|| -> Result<(), FluidError> {
            let mut buf = vec![0u8; PIECE_CELLS.min(n.max(1)) * b];
            let mut start = 0;
            while start < n {
                let end = (start + PIECE_CELLS).min(n);
                let out = &mut buf[..(end - start) * b];
                source.read_piece(start..end, out)?;
                if tx.send(convert(out)).is_err() {
                    // The writer failed: its error is the one to report.
                    break;
                }
                start = end;
            }
            Ok(())
        })();
        drop(tx);
        let written = writer.join().unwrap_or_else(|_| {
            Err(FluidError::Invalid(
                "the checkpoint's writer panicked".into(),
            ))
        });
        written.and(produced)
    })
}

/// What a run checks before it restores a checkpoint.
#[derive(Clone, Copy, Debug)]
pub struct Expected<'a> {
    /// The scene's identity.
    pub identity: &'a Identity,
    /// The run's model, storage, streaming and lattice.
    pub model: CollisionModel,
    pub storage: StorageKind,
    pub streaming: Streaming,
    pub lattice: Lattice,
}

/// A fluid checkpoint opened for a resume: its header read and checked as a fluid checkpoint of
/// this format version.
pub struct FluidCheckpoint {
    reader: CheckpointReader,
}

impl FluidCheckpoint {
    /// Opens `path` (a one-lattice `.npz`).
    pub fn open(path: &Path) -> Result<FluidCheckpoint, FluidError> {
        let reader = CheckpointReader::open(path)?;
        reader.expect_kind(Kind::Fluid)?;
        Ok(FluidCheckpoint { reader })
    }

    /// Its header.
    pub fn header(&self) -> &Header {
        self.reader.header()
    }

    /// Its step.
    pub fn step(&self) -> u64 {
        self.reader.header().step
    }

    /// Checks that this checkpoint is of the run `want` describes: the scene (its physics and
    /// geometry: the first key that differs is named), model, storage, streaming and lattice
    /// size, in that order; one line naming the field that differs.
    pub fn check(&self, want: &Expected) -> Result<(), FluidError> {
        identity::check(&self.reader, want.identity)?;
        check_fields(&self.reader, want)
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        self.reader.path()
    }

    /// Restores the checkpoint into `backend` (opened from the same scene, in any layout, on
    /// any backend) and returns the run's extra state. The flags are compared with the scene's
    /// first; every array's checksum is checked as it is read. Call [`check`](Self::check)
    /// first.
    pub fn restore(
        &mut self,
        backend: &mut dyn FluidBackend,
        flags: &[u8],
    ) -> Result<RunExtra, FluidError> {
        let stored = self.reader.read_bytes("flags")?;
        if stored != flags {
            let first = stored.iter().zip(flags).position(|(a, b)| a != b);
            return Err(FluidError::Invalid(format!(
                "checkpoint {} has other cell flags than this scene{}",
                self.reader.path().display(),
                match first {
                    Some(c) => format!(" (first at cell {c})"),
                    None => format!(" ({} cells, the scene {})", stored.len(), flags.len()),
                }
            )));
        }
        let small: SmallState = arrays::read_small(&mut self.reader)?;
        backend.restore_small_state(&small)?;
        let b = cell_bytes(small.storage);
        let mut pending: Vec<u8> = Vec::with_capacity(PIECE_CELLS * b);
        let mut next = 0usize;
        self.reader
            .read_chunks("populations", PIECE_CELLS * b, |chunk: &[u8]| {
                pending.extend_from_slice(chunk);
                let whole = pending.len() / b;
                if whole > 0 {
                    backend.write_state_piece(next..next + whole, &pending[..whole * b])?;
                    next += whole;
                    pending.drain(..whole * b);
                }
                Ok::<(), FluidError>(())
            })?;
        if next != backend.lattice().cells() || !pending.is_empty() {
            return Err(FluidError::Invalid(format!(
                "checkpoint {} holds the populations of {next} cells, the lattice {}",
                self.reader.path().display(),
                backend.lattice().cells()
            )));
        }
        let series = arrays::read_series(&mut self.reader)?;
        let last_output = self
            .reader
            .header()
            .fields
            .get("last_output")
            .and_then(|v| v.as_integer())
            .map(|v| v as u64);
        Ok(RunExtra {
            series,
            last_output,
            arrays: Vec::new(),
        })
    }
}

/// Refuses `r` unless its model, storage, streaming and lattice size are `want`'s (in that
/// order; one line naming the field that differs).
pub(super) fn check_fields(r: &CheckpointReader, want: &Expected) -> Result<(), FluidError> {
    r.expect("model", want.model.name())?;
    r.expect("storage", want.storage.name())?;
    r.expect("streaming", want.streaming.name())?;
    let l = want.lattice;
    r.expect(
        "lattice",
        toml::Value::Array(vec![
            i64::from(l.nx).into(),
            i64::from(l.ny).into(),
            i64::from(l.nz).into(),
        ]),
    )?;
    Ok(())
}
