//! The container's throughput: a checkpoint of `bytes` written in chunks (hashed, fsynced,
//! renamed) and read back in chunks (checked), each timed.

use super::{CheckpointReader, CheckpointWriter, DType, Header, Kind, Result};
use std::path::Path;
use std::time::Instant;

/// What [`bench`] measured.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BenchFigures {
    /// Array bytes written and read.
    pub bytes: u64,
    /// Seconds from creating the writer to the folder's fsync after the rename.
    pub write_s: f64,
    /// Seconds to open the file and read every array back, checksums checked.
    pub read_s: f64,
    /// `bytes / write_s`, in GB/s (10^9 bytes per second).
    pub write_gbps: f64,
    /// `bytes / read_s`, in GB/s.
    pub read_gbps: f64,
    /// Whether the file's pages were dropped from the page cache before the read
    /// (`posix_fadvise(DONTNEED)` after the fsync; Unix only). If not, the read measures the
    /// page cache.
    pub read_cold: bool,
}

/// Writes a checkpoint of `bytes` array bytes into `dir` (a `uint16` array, as FP16
/// populations are stored, in chunks of `chunk_bytes`), reads it back, deletes it, and returns
/// the timings. Memory use is one chunk.
pub fn bench(dir: &Path, bytes: u64, chunk_bytes: usize) -> Result<BenchFigures> {
    let path = dir.join(format!("bench-{}.npz", std::process::id()));
    let chunk_bytes = (chunk_bytes.max(2) / 2) * 2;
    let elements = bytes / 2;
    let bytes = elements * 2;
    let mut chunk = vec![0u8; chunk_bytes];
    for (i, b) in chunk.iter_mut().enumerate() {
        *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    let t = Instant::now();
    let mut w = CheckpointWriter::create(&path, Header::new(Kind::Fluid, 0, 0.0))?;
    w.begin_array("populations", DType::U16, &[elements])?;
    let mut left = bytes;
    while left > 0 {
        let n = usize::try_from(left).map_or(chunk_bytes, |l| chunk_bytes.min(l));
        w.write_chunk(&chunk[..n])?;
        left -= n as u64;
    }
    w.end_array()?;
    w.finish()?;
    let write_s = t.elapsed().as_secs_f64();
    let read_cold = drop_cache(&path);
    let t = Instant::now();
    let mut r = CheckpointReader::open(&path)?;
    let mut seen = 0u64;
    r.read_chunks("populations", chunk_bytes, |b: &[u8]| -> Result<()> {
        seen += b.len() as u64;
        Ok(())
    })?;
    let read_s = t.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    debug_assert_eq!(seen, bytes);
    let gbps = |s: f64| bytes as f64 / 1e9 / s.max(1e-9);
    Ok(BenchFigures {
        bytes,
        write_s,
        read_s,
        write_gbps: gbps(write_s),
        read_gbps: gbps(read_s),
        read_cold,
    })
}

/// Asks the kernel to drop `path`'s (clean, fsynced) pages from the page cache; whether it
/// could.
pub fn drop_cache(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::fd::AsRawFd;
        let Ok(f) = std::fs::File::open(path) else {
            return false;
        };
        // SAFETY: an advisory call on a descriptor this function owns for its duration.
        unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bench_writes_reads_and_cleans_up() {
        let dir = std::env::temp_dir().join(format!("murmur-ckbench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = bench(&dir, 3 << 20, 1 << 20).unwrap();
        assert_eq!(f.bytes, 3 << 20);
        assert!(f.write_gbps > 0.0 && f.read_gbps > 0.0, "{f:?}");
        assert!(f.write_s > 0.0 && f.read_s > 0.0);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0, "no file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
