//! Checkpoint files: a NumPy `.npz` (a zip of `.npy` arrays, stored uncompressed) with the
//! header as a TOML member, `header.toml`, written last. Arrays stream in and out piece by
//! piece, each with a SHA-256 of its raw little-endian bytes; files appear by an atomic rename;
//! several ranks write one file each plus a manifest. The format, field by field, is in
//! `docs/checkpoints.md`.
//!
//! - [`CheckpointWriter`]: `begin_array` / `write_chunk` / `end_array`, then `finish` (header,
//!   fsync, rename, fsync of the folder). Dropped unfinished, it removes its temporary file.
//! - [`CheckpointReader`]: the header, [`expect`](CheckpointReader::expect)ed fields, each
//!   array read in chunks and checked against its checksum.
//! - [`newest_valid`], [`rotate`], [`remove_stale_temps`]: a folder of checkpoints.
//! - [`write_manifest`], [`verify_manifest`]: the checkpoint of several ranks.
//! - [`bench`]: write and read throughput of the container, fsync included.
//! - [`CheckpointArgs`], [`Schedule`], [`resolve`]: the run commands' checkpoint flags.

mod bench;
mod dir;
mod header;
mod npy;
mod reader;
mod schedule;
mod sink;
mod writer;

pub use bench::{bench, drop_cache, BenchFigures};
pub use dir::{
    checkpoint_name, list, manifest_name, newest_valid, rank_name, remove_stale_temps, rotate,
    Entry, EntryKind, Found,
};
pub use header::{
    ArrayInfo, DType, Element, Header, Kind, Manifest, ManifestPiece, Piece, FORMAT,
    FORMAT_VERSION, MANIFEST_FORMAT,
};
pub use npy::{npy_header, parse_npy_header, NpyHeader};
pub use reader::{read_manifest, verify_manifest, CheckpointReader};
pub use schedule::{default_dir, resolve, CheckpointArgs, ResumeFrom, Schedule};
pub use sink::{file_sink, temp_path, FailMode, FailingSink, Sink, SinkFactory};
pub use writer::{write_manifest, write_manifest_with, CheckpointWriter, Written};

/// The zip member that holds the header.
pub const HEADER_MEMBER: &str = "header.toml";

/// A checkpoint that could not be written, read or used; each message is one line.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// The file could not be written: a full disk, a failed fsync or rename, a missing folder.
    #[error("cannot write checkpoint {path}: {message}")]
    Write { path: String, message: String },
    /// The file could not be opened or read (it does not exist, no permission).
    #[error("cannot read checkpoint {path}: {message}")]
    Read { path: String, message: String },
    /// No zip central directory, no `header.toml`, or a header that is not a checkpoint's.
    #[error("checkpoint {path} is truncated or not a murmur checkpoint: {message}")]
    NotCheckpoint { path: String, message: String },
    /// An array's bytes differ from the checksum the header (SHA-256) or the zip (CRC-32)
    /// recorded.
    #[error("checkpoint {path} is corrupt: array {array} does not match its {check} checksum")]
    Checksum {
        path: String,
        array: String,
        check: &'static str,
    },
    /// Something else in the file differs from its header (an array missing, a `.npy` header
    /// with another dtype or shape, too few bytes).
    #[error("checkpoint {path} is corrupt: {message}")]
    Corrupt { path: String, message: String },
    /// Another format version than this murmur reads.
    #[error(
        "checkpoint {path} has format version {found}; murmur {} reads version {}",
        env!("CARGO_PKG_VERSION"),
        FORMAT_VERSION
    )]
    Version { path: String, found: String },
    /// A header field differs from what the run expects (model, storage, lattice size, ...).
    #[error("checkpoint {path} was written for {field} {found}, this run uses {field} {expected}")]
    Mismatch {
        path: String,
        field: String,
        found: String,
        expected: String,
    },
    /// A header field the run expects is not in the file.
    #[error("checkpoint {path} has no field {field} (this run uses {field} {expected})")]
    MissingField {
        path: String,
        field: String,
        expected: String,
    },
    /// A caller's mistake: an array name, a shape, a byte count, a call out of order.
    #[error("checkpoint {path}: {message}")]
    Usage { path: String, message: String },
    /// A folder holds no checkpoint that passes its checks.
    #[error("no valid checkpoint in {dir}{notes}")]
    NoValid { dir: String, notes: String },
}

/// `Result` with [`CheckpointError`].
pub type Result<T> = std::result::Result<T, CheckpointError>;

/// One line from any displayable error (zip and TOML messages may span lines).
pub(crate) fn one_line(e: impl std::fmt::Display) -> String {
    e.to_string()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
