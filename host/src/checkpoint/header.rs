//! The checkpoint header (`header.toml`) and the manifest of several ranks: what they hold, their
//! TOML form, and the checks a reader makes before it trusts them.

use super::{one_line, CheckpointError, Result};
use serde::{Deserialize, Serialize};

/// The `format` field of every checkpoint header.
pub const FORMAT: &str = "murmur-checkpoint";
/// The `format` field of a manifest (the checkpoint of several ranks).
pub const MANIFEST_FORMAT: &str = "murmur-checkpoint-manifest";
/// The format version this murmur writes and reads. A change to the layout of the header or of
/// the arrays' order on disk makes a new version; readers refuse any other.
pub const FORMAT_VERSION: u32 = 1;

/// An array's element type, as NumPy's little-endian `descr` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum DType {
    /// `|u1`: flags, bytes.
    U8,
    /// `<u2`: FP16 populations as their stored bits.
    U16,
    /// `<u4`.
    U32,
    /// `<u8`.
    U64,
    /// `<i4`.
    I32,
    /// `<i8`.
    I64,
    /// `<f4`.
    F32,
    /// `<f8`.
    F64,
}

impl DType {
    /// Every dtype, in the order above.
    pub const ALL: [DType; 8] = [
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::I32,
        DType::I64,
        DType::F32,
        DType::F64,
    ];

    /// NumPy's `descr` string (`<f4`).
    pub fn descr(self) -> &'static str {
        match self {
            DType::U8 => "|u1",
            DType::U16 => "<u2",
            DType::U32 => "<u4",
            DType::U64 => "<u8",
            DType::I32 => "<i4",
            DType::I64 => "<i8",
            DType::F32 => "<f4",
            DType::F64 => "<f8",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> u64 {
        match self {
            DType::U8 => 1,
            DType::U16 => 2,
            DType::U32 | DType::I32 | DType::F32 => 4,
            DType::U64 | DType::I64 | DType::F64 => 8,
        }
    }

    /// NumPy's name (`float32`), for messages.
    pub fn name(self) -> &'static str {
        match self {
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F32 => "float32",
            DType::F64 => "float64",
        }
    }

    /// The dtype of a `descr` string; `<u1` and `|i1`-style spellings of one-byte types, and
    /// `=` for native little-endian, are accepted too.
    pub fn from_descr(descr: &str) -> Option<DType> {
        let d = descr.replace('=', "<");
        DType::ALL
            .into_iter()
            .find(|t| t.descr() == d || (t.size() == 1 && d == "<u1"))
    }

    /// The bytes of `shape` elements of this type, or `None` past `u64`.
    pub fn bytes_of(self, shape: &[u64]) -> Option<u64> {
        shape
            .iter()
            .try_fold(self.size(), |acc, &n| acc.checked_mul(n))
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<String> for DType {
    type Error = String;
    fn try_from(s: String) -> std::result::Result<DType, String> {
        DType::from_descr(&s).ok_or_else(|| format!("unknown dtype {s:?}"))
    }
}

impl From<DType> for String {
    fn from(d: DType) -> String {
        d.descr().to_string()
    }
}

/// A Rust number type stored as a checkpoint array, little-endian.
pub trait Element: Copy + Default + Send + Sync + 'static {
    /// Its dtype.
    const DTYPE: DType;
    /// Appends its little-endian bytes to `out`.
    fn put(self, out: &mut Vec<u8>);
    /// Reads it from exactly `DTYPE.size()` little-endian bytes.
    fn get(bytes: &[u8]) -> Self;
}

macro_rules! element {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn put(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn get(bytes: &[u8]) -> Self {
                let mut b = [0u8; std::mem::size_of::<$t>()];
                b.copy_from_slice(bytes);
                <$t>::from_le_bytes(b)
            }
        }
    };
}
element!(u8, U8);
element!(u16, U16);
element!(u32, U32);
element!(u64, U64);
element!(i32, I32);
element!(i64, I64);
element!(f32, F32);
element!(f64, F64);

/// What a checkpoint is of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A lattice Boltzmann fluid.
    Fluid,
    /// A flock of boids.
    Flock,
}

impl std::fmt::Display for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Kind::Fluid => "fluid",
            Kind::Flock => "flock",
        })
    }
}

/// One array of a checkpoint, as the header lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArrayInfo {
    /// The array's name; its zip member is `NAME.npy`.
    pub name: String,
    /// Its element type.
    pub dtype: DType,
    /// Its shape, C order (the last index fastest), as NumPy reports it.
    pub shape: Vec<u64>,
    /// Its data bytes (the product of the shape times the element size), without the `.npy`
    /// header.
    pub bytes: u64,
    /// SHA-256 of those bytes (little-endian), 64 lowercase hex digits.
    pub sha256: String,
}

/// Where one rank's piece sits in the whole, for a checkpoint of several ranks. Offsets and
/// shapes are in the index space the caller defines (the fluid: cells, `[x, y, z]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Piece {
    /// This file's rank, `0..ranks`.
    pub rank: u32,
    /// How many ranks wrote the checkpoint.
    pub ranks: u32,
    /// The whole domain's extent.
    pub global_shape: Vec<u64>,
    /// The piece's first index in the whole.
    pub offset: Vec<u64>,
    /// The piece's extent.
    pub shape: Vec<u64>,
}

/// A checkpoint's header: `header.toml`, the archive's last member.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`] when written by this murmur.
    pub format_version: u32,
    /// The murmur that wrote it (`CARGO_PKG_VERSION`).
    pub murmur_version: String,
    /// Fluid or flock.
    pub kind: Kind,
    /// Steps taken when the state was saved.
    pub step: u64,
    /// Simulated time at that step, in the simulation's time unit (seconds for the fluid).
    pub time: f64,
    /// This file's piece of a checkpoint of several ranks; absent for one rank.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub piece: Option<Piece>,
    /// The caller's fields (model, storage, lattice size, scene hash, ...), any TOML values.
    #[serde(default)]
    pub fields: toml::Table,
    /// The arrays, in the order they were written.
    #[serde(default)]
    pub arrays: Vec<ArrayInfo>,
}

impl Header {
    /// A header for `kind` at `step` and `time`, with no fields and no arrays yet.
    pub fn new(kind: Kind, step: u64, time: f64) -> Header {
        Header {
            format: FORMAT.into(),
            format_version: FORMAT_VERSION,
            murmur_version: env!("CARGO_PKG_VERSION").into(),
            kind,
            step,
            time,
            piece: None,
            fields: toml::Table::new(),
            arrays: Vec::new(),
        }
    }

    /// This header with the field `key` set to `value`.
    pub fn with_field(mut self, key: &str, value: impl Into<toml::Value>) -> Header {
        self.fields.insert(key.into(), value.into());
        self
    }

    /// This header with its piece of a checkpoint of several ranks.
    pub fn with_piece(mut self, piece: Piece) -> Header {
        self.piece = Some(piece);
        self
    }

    /// The array called `name`.
    pub fn array(&self, name: &str) -> Option<&ArrayInfo> {
        self.arrays.iter().find(|a| a.name == name)
    }

    /// The header as TOML text.
    pub fn to_toml(&self) -> std::result::Result<String, String> {
        toml::to_string(self).map_err(one_line)
    }

    /// Parses and checks `text` (the `header.toml` of `path`): format, version, then the fields
    /// and each array's entry.
    pub fn parse(text: &str, path: &str) -> Result<Header> {
        let table = versioned(text, path, FORMAT)?;
        let not = |message: String| CheckpointError::NotCheckpoint {
            path: path.into(),
            message,
        };
        let header: Header = toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| not(format!("header.toml: {}", one_line(e.message()))))?;
        let corrupt = |message: String| CheckpointError::Corrupt {
            path: path.into(),
            message,
        };
        for (i, a) in header.arrays.iter().enumerate() {
            if !valid_name(&a.name) {
                return Err(corrupt(format!(
                    "header.toml lists an array named {:?}",
                    a.name
                )));
            }
            if header.arrays[..i].iter().any(|b| b.name == a.name) {
                return Err(corrupt(format!("header.toml lists array {} twice", a.name)));
            }
            let holds = a.dtype.bytes_of(&a.shape);
            if holds != Some(a.bytes) {
                return Err(corrupt(format!(
                    "array {}: {} bytes listed, its shape {:?} of {} holds {}",
                    a.name,
                    a.bytes,
                    a.shape,
                    a.dtype,
                    holds.map_or("more than 2^64".into(), |b| b.to_string())
                )));
            }
            if a.sha256.len() != 64 || !a.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(corrupt(format!(
                    "array {}: sha256 is not 64 hex digits",
                    a.name
                )));
            }
        }
        Ok(header)
    }
}

/// The checkpoint of several ranks: one file per rank, listed here; written after all of them,
/// so a manifest names only complete files.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// [`FORMAT_VERSION`].
    pub format_version: u32,
    /// The murmur that wrote it.
    pub murmur_version: String,
    /// Fluid or flock.
    pub kind: Kind,
    /// The step every rank saved.
    pub step: u64,
    /// The simulated time at that step.
    pub time: f64,
    /// The whole domain's extent (as in [`Piece::global_shape`]).
    pub global_shape: Vec<u64>,
    /// The caller's fields, as in [`Header::fields`].
    #[serde(default)]
    pub fields: toml::Table,
    /// One entry per rank, in rank order.
    pub pieces: Vec<ManifestPiece>,
}

/// One rank's file in a [`Manifest`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestPiece {
    /// The file's name, in the manifest's folder.
    pub file: String,
    /// Its rank.
    pub rank: u32,
    /// Its piece's first index in the whole.
    pub offset: Vec<u64>,
    /// Its piece's extent.
    pub shape: Vec<u64>,
    /// SHA-256 of the file's `header.toml` text, which holds its arrays' checksums: a file of
    /// another checkpoint under the same name is refused.
    pub header_sha256: String,
}

impl Manifest {
    /// A manifest for `kind` at `step` and `time` over `global_shape`, with no fields and no
    /// pieces yet.
    pub fn new(kind: Kind, step: u64, time: f64, global_shape: Vec<u64>) -> Manifest {
        Manifest {
            format: MANIFEST_FORMAT.into(),
            format_version: FORMAT_VERSION,
            murmur_version: env!("CARGO_PKG_VERSION").into(),
            kind,
            step,
            time,
            global_shape,
            fields: toml::Table::new(),
            pieces: Vec::new(),
        }
    }

    /// Parses and checks a manifest's text (format and version).
    pub fn parse(text: &str, path: &str) -> Result<Manifest> {
        let table = versioned(text, path, MANIFEST_FORMAT)?;
        toml::Value::Table(table)
            .try_into()
            .map_err(|e: toml::de::Error| CheckpointError::NotCheckpoint {
                path: path.into(),
                message: format!("manifest: {}", one_line(e.message())),
            })
    }

    /// The manifest as TOML text.
    pub fn to_toml(&self) -> std::result::Result<String, String> {
        toml::to_string(self).map_err(one_line)
    }
}

/// Parses `text` as a TOML table and checks its `format` and `format_version` before anything
/// else, so that another version is refused as such rather than for a field it lacks.
fn versioned(text: &str, path: &str, format: &str) -> Result<toml::Table> {
    let not = |message: String| CheckpointError::NotCheckpoint {
        path: path.into(),
        message,
    };
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| not(format!("TOML: {}", one_line(e.message()))))?;
    match table.get("format") {
        Some(toml::Value::String(s)) if s == format => {}
        Some(v) => return Err(not(format!("format is {}, not {format}", show(v)))),
        None => return Err(not(format!("no format field (expected {format})"))),
    }
    match table.get("format_version") {
        Some(toml::Value::Integer(v)) if *v == i64::from(FORMAT_VERSION) => Ok(table),
        Some(v) => Err(CheckpointError::Version {
            path: path.into(),
            found: show(v),
        }),
        None => Err(not("no format_version field".into())),
    }
}

/// Whether `name` may name an array: 1 to 100 ASCII letters, digits, `_` or `-`, not `header`.
pub(crate) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 100
        && name != "header"
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A TOML value for a message: strings bare, the rest as TOML writes them.
pub(crate) fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
