//! The one-pass scan of the cell table (`scan_cells` in `kernels-gpu/src/sort.rs`; policy and
//! shared layout in `murmur_common::sort`).

use super::{DriverContext, Gpu, GpuError, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::sort::abi::ScanCells;
use murmur_common::sort::{scan_tiles, ScanShared, SCAN_BLOCK};

/// One-pass exclusive scan of cell counts into a table, zeroing the counts as it reads them
/// (`scan_cells`: a chained scan with decoupled look-back, one launch whatever the size).
pub struct CellScan {
    capacity: u32,
    /// `epoch << 32 | arrivals`, kept consistent by the kernel itself between launches.
    state: CudaSlice<u64>,
    /// One status word per tile.
    status: CudaSlice<u64>,
}

impl CellScan {
    pub fn bytes_needed(capacity: u32) -> u64 {
        8 + scan_tiles(capacity) as u64 * 8
    }

    pub fn new(gpu: &Gpu, capacity: u32) -> Result<CellScan, GpuError> {
        let mut state = gpu.zeros::<u64>(1)?;
        gpu.stream
            .memcpy_htod(&[1u64 << 32], &mut state)
            .ctx("initialising the scan state")?;
        Ok(CellScan {
            capacity,
            state,
            status: gpu.zeros(scan_tiles(capacity) as usize)?,
        })
    }

    /// `table[..m]` = exclusive prefix sum of `counts[..m]`; `counts[..m]` = 0. With
    /// `after_previous`, the launch may start while the previous kernel drains (PDL; the kernel
    /// waits for it before reading `counts`).
    pub fn run(
        &mut self,
        gpu: &Gpu,
        counts: &mut CudaSlice<u32>,
        table: &mut CudaSlice<u32>,
        m: u32,
        after_previous: bool,
    ) -> Result<(), GpuError> {
        assert!(m <= self.capacity && m as usize <= counts.len() && m as usize <= table.len());
        let shape = Shape::blocks(scan_tiles(m), SCAN_BLOCK)
            .shared_of::<ScanShared>()
            .after_previous(after_previous);
        let buffers = (counts, table, &mut self.state, &mut self.status);
        // SAFETY: `scan_tiles(m)` blocks cover m entries; status holds a word per tile, state
        // was initialised in `new` and is kept by the kernel.
        unsafe {
            gpu.launch()
                .run(shape, buffers, |l, (counts, table, state, status)| {
                    ScanCells {
                        m,
                        _pad: 0,
                        counts: l.write(counts),
                        table: l.write(table),
                        state: l.write(state),
                        status: l.write(status),
                    }
                })
        }
    }
}
