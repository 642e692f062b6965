//! The CUDA flock's binning: which buffers each method and sort needs beyond the cell counts and
//! table every flock keeps, and the flock's device memory.

use super::super::{FlockSettings, Method, SortArg};
use crate::gpu::scan::CellScan;
use crate::gpu::sort::RadixSort;
use crate::gpu::{Gpu, GpuError};
use cudarc::driver::CudaSlice;

/// How a step bins the boids into cells, with the buffers that binning needs beyond the cell
/// counts and table every flock keeps.
// One per flock, moved only when the settings change: the radix variant's size costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Binning {
    /// `naive`: no binning.
    None,
    /// The counting sort for `coherent` and `coherent-shared`: the state scattered into cell
    /// order, no buffer of its own.
    Counting,
    /// The counting sort for `scattered`: the sorted index array.
    CountingIndex { values: CudaSlice<u32> },
    /// The radix sort: each boid's cell key, the sorted index array, the sort's scratch.
    Radix {
        keys: CudaSlice<u32>,
        values: CudaSlice<u32>,
        sort: RadixSort,
    },
}

/// Which [`Binning`] a flock with these settings needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum BinningKind {
    None,
    Counting,
    CountingIndex,
    Radix,
}

impl BinningKind {
    pub(super) fn of(settings: &FlockSettings) -> BinningKind {
        match (settings.method, settings.sort) {
            (Method::Naive, _) => BinningKind::None,
            (_, SortArg::Radix) => BinningKind::Radix,
            (Method::Scattered, SortArg::Counting) => BinningKind::CountingIndex,
            (Method::Coherent | Method::CoherentShared, SortArg::Counting) => BinningKind::Counting,
        }
    }

    /// Device bytes of its buffers for `n` boids.
    fn bytes(self, n: u32) -> u64 {
        let n64 = n as u64;
        match self {
            BinningKind::None | BinningKind::Counting => 0,
            BinningKind::CountingIndex => n64 * 4,
            BinningKind::Radix => 2 * n64 * 4 + RadixSort::bytes_needed(n),
        }
    }
}

impl Binning {
    /// The buffers of `kind` for `n` boids (zeroed).
    pub(super) fn new(gpu: &Gpu, kind: BinningKind, n: u32) -> Result<Binning, GpuError> {
        let z = n as usize;
        Ok(match kind {
            BinningKind::None => Binning::None,
            BinningKind::Counting => Binning::Counting,
            BinningKind::CountingIndex => Binning::CountingIndex {
                values: gpu.zeros(z)?,
            },
            BinningKind::Radix => Binning::Radix {
                values: gpu.zeros(z)?,
                keys: gpu.zeros(z)?,
                sort: RadixSort::new(gpu, n)?,
            },
        })
    }

    pub(super) fn kind(&self) -> BinningKind {
        match self {
            Binning::None => BinningKind::None,
            Binning::Counting => BinningKind::Counting,
            Binning::CountingIndex { .. } => BinningKind::CountingIndex,
            Binning::Radix { .. } => BinningKind::Radix,
        }
    }

    /// The sorted index array, where the binning makes one.
    pub(super) fn values(&self) -> Option<&CudaSlice<u32>> {
        match self {
            Binning::CountingIndex { values } | Binning::Radix { values, .. } => Some(values),
            Binning::None | Binning::Counting => None,
        }
    }
}

/// Device memory of a flock, in bytes, for `n` boids and `cells` grid cells: what
/// `CudaFlock::new` allocates (checked against free memory first).
pub fn device_bytes(settings: &FlockSettings, n: u32, cells: u64) -> u64 {
    let n64 = n as u64;
    // Two bodies (16 B) and two velocities (12 B); per cell a count and the cell table.
    n64 * (2 * 16 + 2 * 12)
        + cells * 8
        + CellScan::bytes_needed(cells as u32)
        + BinningKind::of(settings).bytes(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flock::config::FlockConfig;

    #[test]
    fn each_binning_holds_the_buffers_of_its_method_and_sort() {
        use BinningKind as B;
        let mut s = FlockConfig::default().settings().unwrap();
        let n = 1000;
        let table = |s: &FlockSettings| device_bytes(s, n, 64) - n as u64 * 56 - 64 * 8;
        let scan = CellScan::bytes_needed(64);
        for (method, sort, kind, extra) in [
            (Method::Naive, SortArg::Counting, B::None, 0),
            (Method::Naive, SortArg::Radix, B::None, 0),
            (
                Method::Scattered,
                SortArg::Counting,
                B::CountingIndex,
                4 * n as u64,
            ),
            (Method::Coherent, SortArg::Counting, B::Counting, 0),
            (Method::CoherentShared, SortArg::Counting, B::Counting, 0),
            (
                Method::Scattered,
                SortArg::Radix,
                B::Radix,
                8 * n as u64 + RadixSort::bytes_needed(n),
            ),
            (
                Method::Coherent,
                SortArg::Radix,
                B::Radix,
                8 * n as u64 + RadixSort::bytes_needed(n),
            ),
        ] {
            s.method = method;
            s.sort = sort;
            assert_eq!(BinningKind::of(&s), kind, "{method:?} {sort:?}");
            assert_eq!(table(&s), scan + extra, "{method:?} {sort:?}");
        }
    }
}
