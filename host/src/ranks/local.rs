//! N ranks in one process: each rank a thread holding a [`LocalComm`]; messages are memory
//! copies through channels, one per ordered pair of ranks, so what a rank receives from a peer
//! arrives in the order it was sent, whatever the threads' timing. The decomposition code runs
//! unchanged over it, so CI tests the slab exchange of N ranks without a GPU.

use super::{Comm, CommError};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Mutex;

/// One rank of an in-process world.
pub struct LocalComm {
    rank: usize,
    size: usize,
    /// `to[p]`: the channel into rank `p`'s mailbox from this rank.
    to: Vec<Sender<Vec<u8>>>,
    /// `from[p]`: messages from rank `p` (a mutex only to make the comm `Sync`; one thread uses
    /// it).
    from: Vec<Mutex<Receiver<Vec<u8>>>>,
}

impl LocalComm {
    /// The `size` ranks of a new world, in rank order: give one to each thread.
    pub fn world(size: usize) -> Vec<LocalComm> {
        // chans[a][b]: from rank a to rank b.
        let mut senders: Vec<Vec<Option<Sender<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        let mut receivers: Vec<Vec<Option<Receiver<Vec<u8>>>>> = (0..size)
            .map(|_| (0..size).map(|_| None).collect())
            .collect();
        for a in 0..size {
            for b in 0..size {
                let (tx, rx) = channel();
                senders[a][b] = Some(tx);
                receivers[b][a] = Some(rx);
            }
        }
        senders
            .into_iter()
            .zip(receivers)
            .enumerate()
            .map(|(rank, (to, from))| LocalComm {
                rank,
                size,
                to: to.into_iter().map(Option::unwrap).collect(),
                from: from.into_iter().map(|r| Mutex::new(r.unwrap())).collect(),
            })
            .collect()
    }

    fn send(&self, peer: usize, data: &[u8]) -> Result<(), CommError> {
        self.to[peer]
            .send(data.to_vec())
            .map_err(|_| CommError::PeerGone { rank: peer })
    }

    fn recv(&self, peer: usize) -> Result<Vec<u8>, CommError> {
        let rx = self.from[peer]
            .lock()
            .map_err(|_| CommError::PeerGone { rank: peer })?;
        rx.recv().map_err(|_| CommError::PeerGone { rank: peer })
    }
}

impl Comm for LocalComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        for p in 0..self.size {
            self.send(p, mine)?;
        }
        (0..self.size).map(|p| self.recv(p)).collect()
    }

    fn send_recv(
        &self,
        sends: &[(usize, &[u8])],
        from: &[usize],
    ) -> Result<Vec<Vec<u8>>, CommError> {
        // Sends never block (unbounded channels), so any pairing of sends and receives works.
        for &(p, data) in sends {
            self.send(p, data)?;
        }
        from.iter().map(|&p| self.recv(p)).collect()
    }
}

/// Runs `body` on each of `size` ranks, one thread per rank, and returns their results in rank
/// order. A rank that fails drops its channels, so peers waiting for it fail too (with
/// [`CommError::PeerGone`]) instead of hanging; the first error in rank order is returned,
/// preferring errors other than a peer's disappearance (the cause over its echoes).
pub fn run_ranks<T, E, F>(size: usize, body: F) -> Result<Vec<T>, E>
where
    T: Send,
    E: Send + From<CommError>,
    F: Fn(LocalComm) -> Result<T, E> + Sync,
    E: std::fmt::Display,
{
    let comms = LocalComm::world(size);
    let results: Vec<Result<T, E>> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|c| {
                let body = &body;
                s.spawn(move || body(c))
            })
            .collect();
        handles
            .into_iter()
            .enumerate()
            .map(|(r, h)| {
                h.join().unwrap_or_else(|_| {
                    Err(E::from(CommError::Setup(format!("rank {r} panicked"))))
                })
            })
            .collect()
    });
    let mut first_echo = None;
    let mut out = Vec::with_capacity(size);
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(e) => {
                if e.to_string().contains("stopped (its messages ended)") {
                    first_echo.get_or_insert(e);
                } else {
                    return Err(e);
                }
            }
        }
    }
    match first_echo {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_gather_is_in_rank_order() {
        let got = run_ranks(4, |c: LocalComm| -> Result<_, CommError> {
            let mine = vec![c.rank() as u8; c.rank() + 1];
            c.all_gather(&mine)
        })
        .unwrap();
        for g in got {
            assert_eq!(
                g,
                vec![vec![0], vec![1, 1], vec![2, 2, 2], vec![3, 3, 3, 3]]
            );
        }
    }

    #[test]
    fn ring_exchange_pairs_up() {
        let got = run_ranks(3, |c: LocalComm| -> Result<_, CommError> {
            let (prev, next) = super::super::ring(c.rank(), c.size());
            let up = [c.rank() as u8, 1];
            let down = [c.rank() as u8, 2];
            c.send_recv(&[(next, &up), (prev, &down)], &[prev, next])
        })
        .unwrap();
        assert_eq!(got[0], vec![vec![2, 1], vec![1, 2]]);
        assert_eq!(got[1], vec![vec![0, 1], vec![2, 2]]);
    }

    #[test]
    fn a_failing_rank_stops_the_others() {
        let r = run_ranks(3, |c: LocalComm| -> Result<u8, CommError> {
            if c.rank() == 1 {
                return Err(CommError::Setup("rank 1 could not start".into()));
            }
            // Waits for rank 1, which is gone: must fail, not hang.
            Ok(c.all_gather(&[1])?.len() as u8)
        });
        let e = r.unwrap_err().to_string();
        assert!(e.contains("rank 1 could not start"), "{e}");
    }

    #[test]
    fn collective_flags_and_sums() {
        let got = run_ranks(4, |c: LocalComm| -> Result<_, CommError> {
            Ok((c.any(c.rank() == 2)?, c.sum_u64(c.rank() as u64 * 10)?))
        })
        .unwrap();
        assert!(got.iter().all(|&(a, s)| a && s == 60));
    }
}
