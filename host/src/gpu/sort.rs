//! Host side of the device radix sort (`kernels-gpu/src/sort.rs`): scratch buffers allocated
//! once, one histogram / scan / scatter round per 8-bit digit.

use super::scan::Scan;
use super::{grid_1d, DriverContext, Gpu, GpuError};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, PushKernelArg};

/// Threads per block of the sort kernels.
pub const SORT_BLOCK: u32 = 256;
/// Elements per block (tile) of `radix_histogram` / `radix_scatter`.
pub const SORT_TILE: u32 = SORT_BLOCK * 16;
const RADIX: u32 = 256;

/// LSD radix sort of `(u32, u32)` pairs, stable, for up to `capacity` pairs.
pub struct RadixSort {
    histogram: CudaFunction,
    scatter: CudaFunction,
    capacity: u32,
    keys_alt: CudaSlice<u32>,
    values_alt: CudaSlice<u32>,
    /// Digit histograms, `RADIX * tiles`, scanned in place into scatter offsets.
    hist: CudaSlice<u32>,
    scan: Scan,
}

fn hist_len(capacity: u32) -> u32 {
    RADIX * capacity.div_ceil(SORT_TILE).max(1)
}

impl RadixSort {
    /// Device bytes the sort needs for `capacity` pairs (besides the caller's keys and values).
    pub fn bytes_needed(capacity: u32) -> u64 {
        capacity as u64 * 8 + hist_len(capacity) as u64 * 4 + Scan::bytes_needed(hist_len(capacity))
    }

    pub fn new(gpu: &Gpu, capacity: u32) -> Result<RadixSort, GpuError> {
        Ok(RadixSort {
            histogram: gpu.kernel("radix_histogram")?,
            scatter: gpu.kernel("radix_scatter")?,
            capacity,
            keys_alt: gpu.zeros(capacity as usize)?,
            values_alt: gpu.zeros(capacity as usize)?,
            hist: gpu.zeros(hist_len(capacity) as usize)?,
            scan: Scan::new(gpu, hist_len(capacity))?,
        })
    }

    /// Pairs this sorter can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Sorts the first `n` pairs by the low `bits` bits of the keys. The sorted pairs end up in
    /// `keys`/`values` (which may be swapped with the sorter's own buffers).
    pub fn sort(
        &mut self,
        stream: &CudaStream,
        n: u32,
        bits: u32,
        keys: &mut CudaSlice<u32>,
        values: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        assert!(
            n <= self.capacity,
            "sort of {n} pairs on a sorter for {}",
            self.capacity
        );
        assert!(keys.len() == self.keys_alt.len() && values.len() == self.values_alt.len());
        if n <= 1 {
            return Ok(());
        }
        let tiles = n.div_ceil(SORT_TILE);
        let cfg = grid_1d(tiles * SORT_BLOCK, SORT_BLOCK, RADIX * 4);
        let warps = SORT_BLOCK / 32;
        let scatter_cfg = grid_1d(tiles * SORT_BLOCK, SORT_BLOCK, (RADIX + warps * RADIX) * 4);
        let mut shift = 0;
        while shift < bits.clamp(1, 32) {
            let mut b = stream.launch_builder(&self.histogram);
            b.arg(&n)
                .arg(&*keys)
                .arg(&shift)
                .arg(&SORT_TILE)
                .arg(&mut self.hist);
            // SAFETY: matches radix_histogram(n, keys, shift, tile, hist); `tiles` blocks read
            // keys[..n] and write RADIX * tiles histogram entries (hist holds that many).
            unsafe { b.launch(cfg) }.ctx("radix_histogram")?;
            self.scan.run(stream, &mut self.hist, RADIX * tiles)?;
            let mut b = stream.launch_builder(&self.scatter);
            b.arg(&n)
                .arg(&*keys)
                .arg(&*values)
                .arg(&mut self.keys_alt)
                .arg(&mut self.values_alt)
                .arg(&shift)
                .arg(&SORT_TILE)
                .arg(&self.hist);
            // SAFETY: matches radix_scatter(n, keys_in, values_in, keys_out, values_out, shift,
            // tile, offsets); every output index is < n by construction of the scanned offsets.
            unsafe { b.launch(scatter_cfg) }.ctx("radix_scatter")?;
            std::mem::swap(keys, &mut self.keys_alt);
            std::mem::swap(values, &mut self.values_alt);
            shift += 8;
        }
        Ok(())
    }
}

/// One row of the sort check: the device sort against a CPU stable sort on the same pairs.
#[derive(Clone, Debug)]
pub struct SortCheck {
    pub n: u32,
    pub bits: u32,
    pub pass: bool,
    /// GPU time of the sort (CUDA events), milliseconds.
    pub ms: f64,
}

/// Sorts `n` random keys of `bits` bits (with duplicates) paired with their index on the GPU and
/// compares keys and values with a CPU stable sort.
pub fn check_sort(
    gpu: &Gpu,
    sorter: &mut RadixSort,
    n: u32,
    bits: u32,
    seed: u64,
) -> Result<SortCheck, GpuError> {
    use murmur_common::rng::mix64;
    use rayon::prelude::*;
    let mask = if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    };
    let keys: Vec<u32> = (0..n as u64)
        .into_par_iter()
        .map(|i| {
            // Every 4th key repeats its neighbour's, so duplicates occur at every width.
            let j = if i % 4 == 3 { i - 1 } else { i };
            (mix64(seed ^ j.wrapping_mul(0x9e37_79b9)) as u32) & mask
        })
        .collect();
    let values: Vec<u32> = (0..n).collect();
    let cap = sorter.capacity as usize;
    let mut k = gpu.zeros::<u32>(cap)?;
    let mut v = gpu.zeros::<u32>(cap)?;
    let s = &gpu.stream;
    s.memcpy_htod(&keys, &mut k.slice_mut(..n as usize))
        .ctx("uploading keys")?;
    s.memcpy_htod(&values, &mut v.slice_mut(..n as usize))
        .ctx("uploading values")?;
    let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
    let e0 = gpu.ctx.new_event(flags).ctx("event")?;
    let e1 = gpu.ctx.new_event(flags).ctx("event")?;
    e0.record(s).ctx("event")?;
    sorter.sort(s, n, bits, &mut k, &mut v)?;
    e1.record(s).ctx("event")?;
    let gk = gpu.download(&k)?;
    let gv = gpu.download(&v)?;
    let ms = e0.elapsed_ms(&e1).ctx("event")? as f64;
    let mut pairs: Vec<(u32, u32)> = keys.into_iter().zip(values).collect();
    pairs.par_sort_by_key(|p| p.0); // stable: equal keys keep index order
    let pass = pairs
        .par_iter()
        .enumerate()
        .all(|(i, &(key, val))| gk[i] == key && gv[i] == val);
    Ok(SortCheck { n, bits, pass, ms })
}
