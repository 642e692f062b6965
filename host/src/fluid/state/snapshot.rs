//! A copy of a backend's populations taken between two steps, read piece by piece by a
//! checkpoint's writer on a thread of its own while the run goes on ([`PieceSource`]).
//!
//! The copy lives where the populations do: on the GPU for the CUDA backend (a device-to-device
//! copy of the buffer, milliseconds; its pieces go to the host on a stream of their own), in
//! the host's memory for the CPU reference. A backend takes one only where it has the room
//! ([`fits_host`], `Gpu::memory`), otherwise [`super::super::FluidBackend::snapshot`] gives
//! `None` and the writer reads the backend itself, between two steps. The pieces are the
//! backend's own ([`super::gather`] through the same layout and step parity), so a file
//! written from a copy holds the same bytes as one written from the backend.

use super::super::{FluidBackend, FluidError};
use std::ops::Range;

/// Where a checkpoint's writer reads the populations' pieces from: a backend between two steps,
/// or a copy of its populations ([`Snapshot`]).
pub trait PieceSource {
    /// Every cell of `cells`' 27 stored populations in the canonical order of
    /// [`super`] into `out` (`cells.len() * 27 * storage.bytes()` bytes).
    fn read_piece(&mut self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError>;
}

/// A copy of the populations that another thread reads.
pub type Snapshot = Box<dyn PieceSource + Send>;

/// A backend between two steps, read where it is.
pub struct Live<'a>(pub &'a mut dyn FluidBackend);

impl PieceSource for Live<'_> {
    fn read_piece(&mut self, cells: Range<usize>, out: &mut [u8]) -> Result<(), FluidError> {
        self.0.read_state_piece(cells, out)
    }
}

/// Whether a host copy of `bytes` leaves half of the memory the kernel says is available
/// (`MemAvailable`; `false` where it cannot be read).
pub fn fits_host(bytes: u64) -> bool {
    let Ok(s) = std::fs::read_to_string("/proc/meminfo") else {
        return false;
    };
    let available = s
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok());
    available.is_some_and(|kb| bytes <= kb * 1024 / 2)
}
