//! Host side of the device radix sort (`kernels-gpu/src/sort.rs`): scratch buffers allocated
//! once; `radix_counts` once per sort, then one `radix_onesweep` per 8-bit digit.

use super::{grid_1d, DriverContext, Gpu, GpuError};
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::sync::Arc;

/// Threads per block of `radix_onesweep` (`ONESWEEP_BLOCK` in the kernels).
const ONESWEEP_BLOCK: u32 = 256;
/// Pairs per `radix_onesweep` tile (`ONESWEEP_TILE`: 24 per thread).
pub const SORT_TILE: u32 = ONESWEEP_BLOCK * 24;
/// Shared memory of `radix_onesweep` in words (`ONESWEEP_SMEM_WORDS`).
const ONESWEEP_SMEM_WORDS: u32 = 8 * RADIX + RADIX + 32 + 2 * SORT_TILE;
const RADIX: u32 = 256;
/// Threads per block and blocks of `radix_counts`.
const COUNT_BLOCK: u32 = 256;
const COUNT_BLOCKS: u32 = 264;
/// Pairs one sort can take: look-back counts have 30 bits.
pub const MAX_SORT_PAIRS: u32 = (1 << 30) - 1;

/// LSD radix sort of `(u32, u32)` pairs, stable, for up to `capacity` pairs.
pub struct RadixSort {
    counts_kernel: CudaFunction,
    onesweep: CudaFunction,
    capacity: u32,
    keys_alt: CudaSlice<u32>,
    values_alt: CudaSlice<u32>,
    /// Digit counts of every pass, `4 * RADIX`.
    counts: CudaSlice<u32>,
    /// Look-back status, `RADIX` words per tile, then the tile ticket.
    status: CudaSlice<u32>,
}

fn status_len(capacity: u32) -> u32 {
    RADIX * capacity.div_ceil(SORT_TILE).max(1) + 1
}

impl RadixSort {
    /// Device bytes the sort needs for `capacity` pairs (besides the caller's keys and values).
    pub fn bytes_needed(capacity: u32) -> u64 {
        capacity as u64 * 8 + 4 * RADIX as u64 * 4 + status_len(capacity) as u64 * 4
    }

    pub fn new(gpu: &Gpu, capacity: u32) -> Result<RadixSort, GpuError> {
        if capacity > MAX_SORT_PAIRS {
            return Err(GpuError::Unsupported(format!(
                "the device radix sort takes at most {MAX_SORT_PAIRS} pairs, not {capacity}"
            )));
        }
        let f = gpu.kernel("radix_onesweep")?;
        f.set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            (ONESWEEP_SMEM_WORDS * 4) as i32,
        )
        .ctx("allowing the onesweep kernel its shared memory")?;
        Ok(RadixSort {
            counts_kernel: gpu.kernel("radix_counts")?,
            onesweep: f,
            capacity,
            keys_alt: gpu.zeros(capacity as usize)?,
            values_alt: gpu.zeros(capacity as usize)?,
            counts: gpu.zeros(4 * RADIX as usize)?,
            status: gpu.zeros(status_len(capacity) as usize)?,
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
        stream: &Arc<CudaStream>,
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
        let passes = bits.clamp(1, 32).div_ceil(8);
        let tiles = n.div_ceil(SORT_TILE);
        stream
            .memset_zeros(&mut self.counts)
            .ctx("clearing digit counts")?;
        let mut b = stream.launch_builder(&self.counts_kernel);
        b.arg(&n).arg(&*keys).arg(&passes).arg(&mut self.counts);
        let blocks = n.div_ceil(COUNT_BLOCK).min(COUNT_BLOCKS);
        // SAFETY: matches radix_counts(n, keys, passes, counts); counts holds 4 * RADIX words;
        // passes * RADIX words of shared memory.
        unsafe {
            b.launch(grid_1d(
                blocks * COUNT_BLOCK,
                COUNT_BLOCK,
                passes * RADIX * 4,
            ))
        }
        .ctx("radix_counts")?;
        let cfg = LaunchConfig {
            grid_dim: (tiles, 1, 1),
            block_dim: (ONESWEEP_BLOCK, 1, 1),
            shared_mem_bytes: ONESWEEP_SMEM_WORDS * 4,
        };
        for pass in 0..passes {
            let used = (RADIX * tiles + 1) as usize;
            stream
                .memset_zeros(&mut self.status.slice_mut(..used))
                .ctx("clearing the look-back status")?;
            let shift = pass * 8;
            let counts = self.counts.slice((pass * RADIX) as usize..);
            let mut b = stream.launch_builder(&self.onesweep);
            b.arg(&n)
                .arg(&*keys)
                .arg(&*values)
                .arg(&mut self.keys_alt)
                .arg(&mut self.values_alt)
                .arg(&shift)
                .arg(&counts)
                .arg(&mut self.status)
                .arg(&tiles);
            // SAFETY: matches radix_onesweep(n, keys_in, values_in, keys_out, values_out, shift,
            // counts, status, tiles); `tiles` blocks cover n pairs; status holds RADIX * tiles + 1
            // zeroed words; every output index is < n by construction of the digit offsets.
            unsafe { b.launch(cfg) }.ctx("radix_onesweep")?;
            std::mem::swap(keys, &mut self.keys_alt);
            std::mem::swap(values, &mut self.values_alt);
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
