//! Device exclusive scan of u32 (`scan_tiles` + `scan_add` in `kernels-gpu/src/sort.rs`),
//! applied level by level over tile sums; scratch allocated once for a capacity.

use super::{grid_1d, DriverContext, Gpu, GpuError};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};
use std::sync::Arc;

const SCAN_BLOCK: u32 = 256;
/// `log2(SCAN_BLOCK * SCAN_ITEMS)`, with `SCAN_ITEMS = 8` in `kernels-gpu/src/sort.rs`.
const SCAN_TILE_SHIFT: u32 = 11;

/// Entry counts of each level: `m`, then tile sums, down to one.
fn levels(m: u32) -> Vec<u32> {
    let mut sizes = vec![m.max(1)];
    loop {
        let next = sizes.last().unwrap().div_ceil(1 << SCAN_TILE_SHIFT);
        sizes.push(next);
        if next == 1 {
            return sizes;
        }
    }
}

/// Exclusive scan of up to `capacity` entries, in place.
pub struct Scan {
    tiles: CudaFunction,
    add: CudaFunction,
    capacity: u32,
    /// `sums[l]`: tile sums of level `l`.
    sums: Vec<CudaSlice<u32>>,
}

impl Scan {
    pub fn bytes_needed(capacity: u32) -> u64 {
        levels(capacity)[1..].iter().map(|&s| s as u64 * 4).sum()
    }

    pub fn new(gpu: &Gpu, capacity: u32) -> Result<Scan, GpuError> {
        Ok(Scan {
            tiles: gpu.kernel("scan_tiles")?,
            add: gpu.kernel("scan_add")?,
            capacity,
            sums: levels(capacity)[1..]
                .iter()
                .map(|&s| gpu.zeros::<u32>(s as usize))
                .collect::<Result<_, _>>()?,
        })
    }

    /// Replaces `data[..m]` by its exclusive prefix sum.
    pub fn run(
        &mut self,
        stream: &CudaStream,
        data: &mut CudaSlice<u32>,
        m: u32,
    ) -> Result<(), GpuError> {
        assert!(m <= self.capacity && m as usize <= data.len());
        let sizes = levels(m);
        let depth = sizes.len() - 1;
        for l in 0..depth {
            let tiles = sizes[l + 1];
            let mut b = stream.launch_builder(&self.tiles);
            let cfg = grid_1d(tiles * SCAN_BLOCK, SCAN_BLOCK, 32 * 4);
            if l == 0 {
                b.arg(&sizes[0]).arg(&mut *data).arg(&mut self.sums[0]);
            } else {
                let (lo, hi) = self.sums.split_at_mut(l);
                b.arg(&sizes[l]).arg(&mut lo[l - 1]).arg(&mut hi[0]);
            }
            // SAFETY: matches scan_tiles(m, data, sums); `tiles` blocks of SCAN_BLOCK threads
            // cover m entries, 8 each, and write `tiles` sums (sums[l] holds that many).
            unsafe { b.launch(cfg) }.ctx("scan_tiles")?;
        }
        for l in (0..depth).rev() {
            if sizes[l + 1] <= 1 {
                continue;
            }
            let mut b = stream.launch_builder(&self.add);
            if l == 0 {
                b.arg(&sizes[0]).arg(&mut *data).arg(&self.sums[0]);
            } else {
                let (lo, hi) = self.sums.split_at_mut(l);
                b.arg(&sizes[l]).arg(&mut lo[l - 1]).arg(&hi[0]);
            }
            b.arg(&SCAN_TILE_SHIFT);
            // SAFETY: matches scan_add(m, data, sums, tile_shift); one thread per entry.
            unsafe { b.launch(grid_1d(sizes[l], SCAN_BLOCK, 0)) }.ctx("scan_add")?;
        }
        Ok(())
    }
}

/// Entries one `scan_cells` block scans: 256 threads x `SCAN_ITEMS` (8).
const CELL_SCAN_TILE: u32 = SCAN_BLOCK * 8;

/// One-pass exclusive scan of cell counts into a table, zeroing the counts as it reads them
/// (`scan_cells`: a chained scan with decoupled look-back, one launch whatever the size).
pub struct CellScan {
    kernel: CudaFunction,
    capacity: u32,
    /// `[ticket, finished, epoch]`, kept consistent by the kernel itself between launches.
    state: CudaSlice<u32>,
    /// One status word per tile.
    status: CudaSlice<u64>,
}

impl CellScan {
    pub fn bytes_needed(capacity: u32) -> u64 {
        12 + capacity.div_ceil(CELL_SCAN_TILE).max(1) as u64 * 8
    }

    pub fn new(gpu: &Gpu, stream: &Arc<CudaStream>, capacity: u32) -> Result<CellScan, GpuError> {
        let mut state = gpu.zeros::<u32>(3)?;
        stream
            .memcpy_htod(&[0u32, 0, 1], &mut state)
            .ctx("initialising the scan state")?;
        Ok(CellScan {
            kernel: gpu.kernel("scan_cells")?,
            capacity,
            state,
            status: gpu.zeros(capacity.div_ceil(CELL_SCAN_TILE).max(1) as usize)?,
        })
    }

    /// `table[..m]` = exclusive prefix sum of `counts[..m]`; `counts[..m]` = 0.
    pub fn run(
        &mut self,
        stream: &CudaStream,
        counts: &mut CudaSlice<u32>,
        table: &mut CudaSlice<u32>,
        m: u32,
    ) -> Result<(), GpuError> {
        assert!(m <= self.capacity && m as usize <= counts.len() && m as usize <= table.len());
        let tiles = m.div_ceil(CELL_SCAN_TILE).max(1);
        let mut b = stream.launch_builder(&self.kernel);
        b.arg(&m)
            .arg(counts)
            .arg(table)
            .arg(&mut self.state)
            .arg(&mut self.status);
        // SAFETY: matches scan_cells(m, counts, table, state, status); `tiles` blocks of
        // SCAN_BLOCK threads cover m entries, 8 each; status holds `tiles` words; 36 words of
        // shared memory.
        unsafe { b.launch(grid_1d(tiles * SCAN_BLOCK, SCAN_BLOCK, 36 * 4)) }.ctx("scan_cells")?;
        Ok(())
    }
}
