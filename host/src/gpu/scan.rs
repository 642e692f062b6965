//! The one-pass scan of the cell table (`scan_cells` in `kernels-gpu/src/sort.rs`).

use super::{grid_1d, DriverContext, Gpu, GpuError, Launch};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream};
use std::sync::Arc;

const SCAN_BLOCK: u32 = 256;

/// Entries one `scan_cells` block scans: 256 threads x `SCAN_ITEMS` (8): 2048, so the 256k cells
/// of 100k boids at scale 100 (1x cells, x-split 4) take 125 blocks, about one per SM, each with little
/// to load (0.0296 against 0.0299 ms/step with 4096-entry tiles on the H200).
const CELL_SCAN_TILE: u32 = SCAN_BLOCK * 8;

/// One-pass exclusive scan of cell counts into a table, zeroing the counts as it reads them
/// (`scan_cells`: a chained scan with decoupled look-back, one launch whatever the size).
pub struct CellScan {
    kernel: CudaFunction,
    capacity: u32,
    /// `epoch << 32 | arrivals`, kept consistent by the kernel itself between launches.
    state: CudaSlice<u64>,
    /// One status word per tile.
    status: CudaSlice<u64>,
}

impl CellScan {
    pub fn bytes_needed(capacity: u32) -> u64 {
        8 + capacity.div_ceil(CELL_SCAN_TILE).max(1) as u64 * 8
    }

    pub fn new(gpu: &Gpu, stream: &Arc<CudaStream>, capacity: u32) -> Result<CellScan, GpuError> {
        let mut state = gpu.zeros::<u64>(1)?;
        stream
            .memcpy_htod(&[1u64 << 32], &mut state)
            .ctx("initialising the scan state")?;
        Ok(CellScan {
            kernel: gpu.kernel("scan_cells")?,
            capacity,
            state,
            status: gpu.zeros(capacity.div_ceil(CELL_SCAN_TILE).max(1) as usize)?,
        })
    }

    /// `table[..m]` = exclusive prefix sum of `counts[..m]`; `counts[..m]` = 0. With
    /// `after_previous`, the launch may start while the previous kernel drains (PDL; the kernel
    /// waits for it before reading `counts`).
    pub fn run(
        &mut self,
        stream: &CudaStream,
        counts: &mut CudaSlice<u32>,
        table: &mut CudaSlice<u32>,
        m: u32,
        after_previous: bool,
    ) -> Result<(), GpuError> {
        assert!(m <= self.capacity && m as usize <= counts.len() && m as usize <= table.len());
        let tiles = m.div_ceil(CELL_SCAN_TILE).max(1);
        let mut b = Launch::new(stream, &self.kernel);
        b.arg(&m)
            .buf(counts)
            .buf(table)
            .buf(&self.state)
            .buf(&self.status)
            .after_previous(after_previous);
        // SAFETY: matches scan_cells(m, counts, table, state, status); `tiles` blocks of
        // SCAN_BLOCK threads cover m entries, 8 each; status holds `tiles` words; 36 words of
        // shared memory.
        unsafe { b.launch(grid_1d(tiles * SCAN_BLOCK, SCAN_BLOCK, 36 * 4)) }.ctx("scan_cells")?;
        Ok(())
    }
}
