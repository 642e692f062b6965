//! Several ranks: one process per GPU, or N ranks as threads of one process (the CPU backend's
//! decomposition tests). The slab code of the fluid and of the flock talks to the other ranks
//! only through [`Comm`]; the CUDA backends also move device buffers through
//! [`nccl::NcclComm`], GPU to GPU, never through the host.
//!
//! - [`local`]: N ranks in one process, messages as memory copies (channels).
//! - [`nccl`]: one rank per process and GPU, NCCL communicators, a watchdog that aborts the
//!   communicator when the run stops making progress (a dead or hung peer).
//! - [`env`]: who this process is: `murmur ... --gpus N` (the processes it starts itself), or
//!   the variables of `mpirun` (Open MPI), Slurm's `srun`, or `RANK` / `WORLD_SIZE` /
//!   `LOCAL_RANK`.
//! - [`rendezvous`]: how the ranks agree on the NCCL unique id: a file every rank can read, or
//!   a TCP address of rank 0.
//! - [`spawn`]: `--gpus N` on one machine: starts N copies of the command, one per GPU, and
//!   stops them all when one fails, naming it.

pub mod env;
pub mod local;
pub mod nccl;
pub mod rendezvous;
pub mod spawn;

pub use env::{RankEnv, Ranks};
pub use local::LocalComm;

/// Why talking to the other ranks failed.
#[derive(Debug, thiserror::Error)]
pub enum CommError {
    #[error("rank {rank} stopped (its messages ended)")]
    PeerGone { rank: usize },
    #[error("{0}")]
    Setup(String),
    /// Every rank stopped cleanly on a signal passed on by the launcher (each rank printed its
    /// own line; the launcher exits with [`crate::stop::EXIT_STOPPED`]).
    #[error("the ranks stopped on a signal, each at a step boundary")]
    Stopped,
    #[error("NCCL: {0}")]
    Nccl(String),
    #[error(transparent)]
    Gpu(#[from] crate::gpu::GpuError),
}

/// What a rank needs from the others: small host messages in a fixed order. Every method is
/// collective in the sense that the peers named must make the matching call; the order of
/// received messages never depends on timing, so results are deterministic.
pub trait Comm: Send + Sync {
    /// This rank, `0..size`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;
    /// Every rank's `mine`, in rank order (every rank calls it).
    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError>;
    /// Sends each `(peer, bytes)` of `sends` and returns one message from each rank of `from`,
    /// in that order. Each message sent to a peer must be matched by that peer naming this
    /// rank in its `from`.
    fn send_recv(
        &self,
        sends: &[(usize, &[u8])],
        from: &[usize],
    ) -> Result<Vec<Vec<u8>>, CommError>;
    /// Raises every rank's flag if any rank's is raised (a collective "stop now": every rank
    /// stops at the same step).
    fn any(&self, flag: bool) -> Result<bool, CommError> {
        Ok(self
            .all_gather(&[flag as u8])?
            .iter()
            .any(|m| m.first() == Some(&1)))
    }
    /// Marks the start (`true`) and end of a wait on the other ranks: a communicator with a
    /// watchdog aborts when one lasts longer than its timeout.
    fn set_busy(&self, busy: bool) {
        let _ = busy;
    }
    /// A checked sum of `u64`s over the ranks, added in rank order.
    fn sum_u64(&self, v: u64) -> Result<u64, CommError> {
        let all = self.all_gather(&v.to_le_bytes())?;
        Ok(all.iter().map(|m| decode_u64(m)).sum())
    }
}

/// A little-endian `u64` of a message (0 when it is shorter).
pub fn decode_u64(m: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = m.len().min(8);
    b[..n].copy_from_slice(&m[..n]);
    u64::from_le_bytes(b)
}

/// The ranks' neighbours on a ring: `(previous, next)` of `rank` among `size`.
pub fn ring(rank: usize, size: usize) -> (usize, usize) {
    ((rank + size - 1) % size, (rank + 1) % size)
}

/// Splits `weights` (one per layer along an axis) into `parts` contiguous ranges with sums as
/// equal as the layers allow: range `k` ends at the first layer where the prefix sum reaches
/// `(k + 1) / parts` of the total. Every range holds at least one layer; `None` when there
/// are fewer layers than parts.
pub fn balanced_ranges(weights: &[u64], parts: usize) -> Option<Vec<std::ops::Range<usize>>> {
    let n = weights.len();
    if parts == 0 || n < parts {
        return None;
    }
    let total: u128 = weights.iter().map(|&w| w as u128).sum();
    let mut ranges = Vec::with_capacity(parts);
    let mut start = 0usize;
    let mut prefix: u128 = 0;
    let mut layer = 0usize;
    for k in 0..parts {
        if k + 1 == parts {
            ranges.push(start..n);
            break;
        }
        // Prefix sums scaled by `parts` against the exact target `total (k + 1) / parts`: a
        // layer joins this range when that brings the sum closer to the target.
        let target = total * (k as u128 + 1);
        let scaled = |p: u128| p * parts as u128;
        // Leave at least one layer for each remaining part, take at least one for this one.
        let last_allowed = n - (parts - k - 1);
        let mut end = start + 1;
        prefix += weights[layer] as u128;
        layer += 1;
        while end < last_allowed && {
            let next = scaled(prefix + weights[layer] as u128);
            next <= target || next.abs_diff(target) < scaled(prefix).abs_diff(target)
        } {
            prefix += weights[layer] as u128;
            layer += 1;
            end += 1;
        }
        ranges.push(start..end);
        start = end;
    }
    Some(ranges)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balanced_ranges_cover_every_layer_once() {
        let w = vec![1u64; 10];
        let r = balanced_ranges(&w, 3).unwrap();
        assert_eq!(r, vec![0..3, 3..7, 7..10]);
        let r = balanced_ranges(&w, 2).unwrap();
        assert_eq!(r, vec![0..5, 5..10]);
        assert!(balanced_ranges(&w, 11).is_none());
        assert_eq!(balanced_ranges(&w, 10).unwrap().len(), 10);
    }

    #[test]
    fn balanced_ranges_follow_the_weights() {
        // Half the weight in the first two layers.
        let w = [5u64, 5, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1];
        let r = balanced_ranges(&w, 2).unwrap();
        assert_eq!(r, vec![0..2, 2..12]);
        // Zero-weight layers (solid) still end up somewhere, no range is empty.
        let w = [0u64, 0, 0, 4, 4, 0, 0];
        let r = balanced_ranges(&w, 2).unwrap();
        assert!(r.iter().all(|r| !r.is_empty()));
        assert_eq!(r[0].start, 0);
        assert_eq!(r[1].end, 7);
        let sums: Vec<u64> = r.iter().map(|r| w[r.clone()].iter().sum()).collect();
        assert_eq!(sums, vec![4, 4]);
    }

    #[test]
    fn ring_neighbours_wrap() {
        assert_eq!(ring(0, 4), (3, 1));
        assert_eq!(ring(3, 4), (2, 0));
        assert_eq!(ring(0, 1), (0, 0));
    }
}
