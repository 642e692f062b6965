//! Host side of the device radix sort (`kernels-gpu/src/sort.rs`): scratch buffers allocated
//! once; `radix_counts` once per sort, then one `radix_onesweep` per 8-bit digit.

use super::{DriverContext, Gpu, GpuError, Shape};
use cudarc::driver::CudaSlice;
use murmur_common::sort::abi::{RadixCounts, RadixOnesweep};
use murmur_common::sort::{
    onesweep_tiles, status_words, DigitCounts, OnesweepShared, COUNT_BLOCK, COUNT_BLOCKS_PER_SM,
    MAX_PASSES, ONESWEEP_BLOCK, RADIX, RADIX_BITS,
};

pub use murmur_common::sort::MAX_SORT_PAIRS;

/// LSD radix sort of `(u32, u32)` pairs, stable, for up to `capacity` pairs.
pub struct RadixSort {
    capacity: u32,
    keys_alt: CudaSlice<u32>,
    values_alt: CudaSlice<u32>,
    /// Digit counts of every pass, `MAX_PASSES * RADIX`.
    counts: CudaSlice<u32>,
    /// Look-back status, `RADIX` words per tile, then the tile ticket.
    status: CudaSlice<u32>,
}

impl RadixSort {
    /// Device bytes the sort needs for `capacity` pairs (besides the caller's keys and values).
    pub fn bytes_needed(capacity: u32) -> u64 {
        capacity as u64 * 8 + (MAX_PASSES * RADIX) as u64 * 4 + status_words(capacity) as u64 * 4
    }

    pub fn new(gpu: &Gpu, capacity: u32) -> Result<RadixSort, GpuError> {
        if capacity > MAX_SORT_PAIRS {
            return Err(GpuError::Unsupported(format!(
                "the device radix sort takes at most {MAX_SORT_PAIRS} pairs, not {capacity}"
            )));
        }
        Ok(RadixSort {
            capacity,
            keys_alt: gpu.zeros(capacity as usize)?,
            values_alt: gpu.zeros(capacity as usize)?,
            counts: gpu.zeros((MAX_PASSES * RADIX) as usize)?,
            status: gpu.zeros(status_words(capacity) as usize)?,
        })
    }

    /// Pairs this sorter can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Passes (8-bit digits) a sort by the low `bits` bits of the keys takes.
    pub fn passes(bits: u32) -> u32 {
        bits.clamp(1, 32).div_ceil(RADIX_BITS)
    }

    /// Sorts the first `n` pairs by the low `bits` bits of the keys: [`RadixSort::count`], then
    /// [`RadixSort::pass`] for every digit. The sorted pairs end up in `keys`/`values` (which may
    /// be swapped with the sorter's own buffers).
    pub fn sort(
        &mut self,
        gpu: &Gpu,
        n: u32,
        bits: u32,
        keys: &mut CudaSlice<u32>,
        values: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        self.count(gpu, n, bits, keys)?;
        for pass in 0..Self::passes(bits) {
            self.pass(gpu, n, pass, keys, values)?;
        }
        Ok(())
    }

    /// Stage `radix_counts`: every pass's digit counts of the first `n` keys, at once.
    pub fn count(
        &mut self,
        gpu: &Gpu,
        n: u32,
        bits: u32,
        keys: &CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        self.check(n, keys);
        if n <= 1 {
            return Ok(());
        }
        gpu.stream
            .memset_zeros(&mut self.counts)
            .ctx("clearing digit counts")?;
        let passes = Self::passes(bits);
        let blocks = n
            .div_ceil(COUNT_BLOCK)
            .min(COUNT_BLOCKS_PER_SM * gpu.sm_count);
        let shape = Shape::blocks(blocks, COUNT_BLOCK)
            .shared_bytes(passes * std::mem::size_of::<DigitCounts>() as u32);
        // SAFETY: counts holds MAX_PASSES * RADIX zeroed words; keys start an allocation.
        unsafe {
            gpu.launch()
                .run(shape, &mut self.counts, |l, counts| RadixCounts {
                    n,
                    passes,
                    keys: l.read(keys),
                    counts: l.write(counts),
                })
        }
    }

    /// Stage `radix_onesweep`, pass `pass` (digit `pass` of the keys), after
    /// [`RadixSort::count`]: the pairs sorted by that digit, stably, end up in `keys`/`values`.
    pub fn pass(
        &mut self,
        gpu: &Gpu,
        n: u32,
        pass: u32,
        keys: &mut CudaSlice<u32>,
        values: &mut CudaSlice<u32>,
    ) -> Result<(), GpuError> {
        self.check(n, keys);
        assert!(values.len() == self.values_alt.len() && pass < MAX_PASSES);
        if n <= 1 {
            return Ok(());
        }
        let tiles = onesweep_tiles(n);
        let used = (RADIX * tiles + 1) as usize;
        gpu.stream
            .memset_zeros(&mut self.status.slice_mut(..used))
            .ctx("clearing the look-back status")?;
        let shape = Shape::blocks(tiles, ONESWEEP_BLOCK).shared_of::<OnesweepShared>();
        let (counts, keys_in, values_in) = (&self.counts, &*keys, &*values);
        let buffers = (&mut self.keys_alt, &mut self.values_alt, &mut self.status);
        // SAFETY: `tiles` blocks cover n pairs; status holds RADIX * tiles + 1 zeroed words;
        // every output index is < n by construction of the digit offsets.
        unsafe {
            gpu.launch()
                .run(shape, buffers, |l, (keys_out, values_out, status)| {
                    RadixOnesweep {
                        n,
                        shift: pass * RADIX_BITS,
                        tiles,
                        _pad: 0,
                        keys_in: l.read(keys_in),
                        values_in: l.read(values_in),
                        keys_out: l.write(keys_out),
                        values_out: l.write(values_out),
                        // SAFETY: `pass < MAX_PASSES`: the pass's counts lie inside the buffer.
                        counts: l.read(counts).offset((pass * RADIX) as u64),
                        status: l.write(status),
                    }
                })
        }?;
        std::mem::swap(keys, &mut self.keys_alt);
        std::mem::swap(values, &mut self.values_alt);
        Ok(())
    }

    /// The sorter's contract: at most `capacity` pairs, in buffers of its own buffers' length.
    fn check(&self, n: u32, keys: &CudaSlice<u32>) {
        assert!(
            n <= self.capacity,
            "sort of {n} pairs on a sorter for {}",
            self.capacity
        );
        assert!(keys.len() == self.keys_alt.len());
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
    sorter.sort(gpu, n, bits, &mut k, &mut v)?;
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
