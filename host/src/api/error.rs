//! The library's one error type: a kind (what the caller can do about it) and murmur's one-line
//! message (what the CLI prints after `murmur: error:`).

use crate::flock::config::ConfigError;
use crate::flock::snapshot::SnapshotError;
use crate::flock::SimError;
use crate::fluid::FluidError;
use crate::gpu::GpuError;
use crate::preflight::PreflightError;
use crate::raster::RasterError;
use crate::view::ViewError;

/// What went wrong, as a caller acts on it (the Python package raises `ValueError`,
/// `RuntimeError` and `OSError` for the first three).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// Bad input: a setting, a scene, a shape or a value murmur cannot run.
    Invalid,
    /// The GPU, its driver or the kernels failed, or no GPU is usable for `Backend::Cuda`.
    Device,
    /// A file could not be read or written.
    Io,
    /// The flow left its health bounds (NaN, density or Mach number): the step and cell are in
    /// the message.
    Unhealthy,
    /// A device array was used after the step that invalidated it.
    Stale,
}

/// A murmur error: its [`ErrorKind`] and one line that says what happened and, where murmur
/// knows, what to do.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct Error {
    kind: ErrorKind,
    message: String,
}

/// `Result` with murmur's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// An error of `kind` with `message` (one line).
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into().replace('\n', " "),
        }
    }

    /// Bad input.
    pub fn invalid(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Invalid, message)
    }

    /// What kind of failure this is.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The one-line message (the same as `to_string()`).
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// `e` and its sources on one line, each said once.
pub(crate) fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next = Some(e);
    while let Some(c) = next {
        let s = c.to_string();
        if !parts.iter().any(|p| p.contains(&s)) {
            parts.push(s);
        }
        next = c.source();
    }
    parts.join(": ").replace('\n', " ")
}

fn of(kind: ErrorKind, e: &(dyn std::error::Error + 'static)) -> Error {
    Error::new(kind, one_line(e))
}

impl From<GpuError> for Error {
    fn from(e: GpuError) -> Error {
        let kind = match e {
            GpuError::Unsupported(_) | GpuError::GridTooLarge { .. } => ErrorKind::Invalid,
            _ => ErrorKind::Device,
        };
        of(kind, &e)
    }
}

impl From<PreflightError> for Error {
    fn from(e: PreflightError) -> Error {
        let kind = match e {
            PreflightError::Memory { .. } | PreflightError::MemoryFigure { .. } => {
                ErrorKind::Invalid
            }
            _ => ErrorKind::Io,
        };
        of(kind, &e)
    }
}

impl From<FluidError> for Error {
    fn from(e: FluidError) -> Error {
        match e {
            FluidError::Gpu(g) => g.into(),
            FluidError::Preflight(p) => p.into(),
            FluidError::Invalid(_) => of(ErrorKind::Invalid, &e),
            FluidError::Unhealthy { .. } => of(ErrorKind::Unhealthy, &e),
            _ => of(ErrorKind::Device, &e),
        }
    }
}

impl From<SimError> for Error {
    fn from(e: SimError) -> Error {
        match e {
            SimError::Gpu(g) => g.into(),
            SimError::Preflight(p) => p.into(),
            SimError::Render(_) | SimError::Invalid(_) => of(ErrorKind::Invalid, &e),
            SimError::Comm(_) => of(ErrorKind::Device, &e),
            SimError::Checkpoint(_) => of(ErrorKind::Io, &e),
        }
    }
}

impl From<RasterError> for Error {
    fn from(e: RasterError) -> Error {
        of(ErrorKind::Invalid, &e)
    }
}

impl From<ConfigError> for Error {
    fn from(e: ConfigError) -> Error {
        let kind = match e {
            ConfigError::Read { .. } => ErrorKind::Io,
            _ => ErrorKind::Invalid,
        };
        of(kind, &e)
    }
}

impl From<SnapshotError> for Error {
    fn from(e: SnapshotError) -> Error {
        let kind = match e {
            SnapshotError::Open { .. } | SnapshotError::Write { .. } => ErrorKind::Io,
            _ => ErrorKind::Invalid,
        };
        of(kind, &e)
    }
}

impl From<ViewError> for Error {
    fn from(e: ViewError) -> Error {
        let kind = match e {
            ViewError::Sim(s) => return s.into(),
            ViewError::Fluid(f) => return f.into(),
            ViewError::Options(_) => ErrorKind::Invalid,
            ViewError::OutDir { .. } | ViewError::Write { .. } => ErrorKind::Io,
            _ => ErrorKind::Device,
        };
        of(kind, &e)
    }
}
