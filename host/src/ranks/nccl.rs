//! One rank per process and GPU, joined by an NCCL communicator: device buffers go GPU to GPU
//! (NVLink or PCIe peer copies, or the network between machines), never through the host.
//!
//! [`NcclComm`] owns the raw communicator so that its watchdog can abort it from another thread
//! (`ncclCommAbort`): when a step makes no progress for the rank timeout, or a liveness link of
//! the TCP rendezvous closes (a peer process died), the watchdog prints one line naming what
//! it waited for, aborts the communicator (NCCL kernels waiting for the dead peer return) and
//! ends the process. Outputs are written atomically, so nothing half-written stays behind.
//!
//! NVLink multicast (NVLS) stays off: on shared GPU hosts it can put the GPUs out of service.
//! The process sets `NCCL_NVLS_ENABLE=0` before NCCL starts unless the variable is already set.

use super::rendezvous::{Links, Rendezvous, ID_BYTES};
use super::{Comm, CommError, RankEnv};
use crate::gpu::{DriverContext, Gpu};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};
use cudarc::nccl::{result, sys};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The raw communicator, shared with the watchdog thread.
struct Raw(sys::ncclComm_t);
// SAFETY: NCCL communicators may be used from any thread; murmur issues operations from one
// thread and only `ncclCommAbort` (documented as callable concurrently) from the watchdog.
unsafe impl Send for Raw {}
unsafe impl Sync for Raw {}

/// What the watchdog watches.
struct Watch {
    raw: Raw,
    rank: usize,
    /// Milliseconds since `start` at the last [`NcclComm::beat`].
    last: AtomicU64,
    start: Instant,
    /// Set while the rank waits on the others (a step, a collective).
    busy: AtomicBool,
    /// Set once the run has ended (no more aborts).
    done: AtomicBool,
    aborted: AtomicBool,
    timeout: Duration,
}

impl Watch {
    /// Prints why, aborts the communicator, ends the process (a rank blocked in a CUDA wait
    /// cannot be unwound; the outputs are atomic).
    fn abort(&self, why: &str) {
        if self.done.load(Ordering::SeqCst) || self.aborted.swap(true, Ordering::SeqCst) {
            return;
        }
        eprintln!(
            "murmur: error: rank {}: {why}; aborting the communicator",
            self.rank
        );
        // SAFETY: the communicator is live (it is destroyed only after `done` is set).
        unsafe {
            let _ = result::comm_abort(self.raw.0);
        }
        // SAFETY: _exit ends the process at once, without running handlers that could wait on
        // the GPU.
        unsafe { libc::_exit(3) };
    }
}

/// A rank's NCCL communicator on its GPU, with the stream its transfers run on.
pub struct NcclComm {
    watch: Arc<Watch>,
    size: usize,
    /// The stream NCCL operations run on (separate from the GPU's compute stream, so that
    /// exchanges overlap computation).
    pub stream: Arc<CudaStream>,
    /// Staging for host messages (grown as needed).
    staging: Mutex<Option<(CudaSlice<u8>, CudaSlice<u8>)>>,
    links: Option<Links>,
    rendezvous: Rendezvous,
}

/// Whether cudarc can load the NCCL library; otherwise a message saying what to install.
pub fn check_library() -> Result<(), CommError> {
    // SAFETY: only tries to open the library.
    if unsafe { sys::is_culib_present() } {
        return Ok(());
    }
    Err(CommError::Setup(
        "the NCCL library was not found: put a folder with libnccl.so (a link to libnccl.so.2 \
         will do) on LD_LIBRARY_PATH"
            .into(),
    ))
}

fn nccl_err(what: &str, e: result::NcclError) -> CommError {
    CommError::Nccl(format!("{what}: {e:?}"))
}

impl NcclComm {
    /// Joins the other ranks of `env` on `gpu`: rank 0 makes the unique id, the rendezvous
    /// hands it over, every rank initialises its communicator; the watchdog starts.
    pub fn connect(env: &RankEnv, gpu: &Gpu) -> Result<NcclComm, CommError> {
        if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
            // SAFETY: set before NCCL reads it and before any other thread of this process
            // reads the environment.
            unsafe { std::env::set_var("NCCL_NVLS_ENABLE", "0") };
        }
        check_library()?;
        let rendezvous = env
            .rendezvous
            .clone()
            .ok_or_else(|| CommError::Setup("no rendezvous".into()))?;
        let own_id = if env.rank == 0 {
            let id = result::get_uniqueid().map_err(|e| nccl_err("unique id", e))?;
            let mut b = [0u8; ID_BYTES];
            for (d, s) in b.iter_mut().zip(id.internal.iter()) {
                *d = *s as u8;
            }
            Some(b)
        } else {
            None
        };
        let (id, links) = rendezvous.meet(env.rank, env.size, own_id, env.timeout)?;
        let mut internal = [0 as std::ffi::c_char; ID_BYTES];
        for (d, s) in internal.iter_mut().zip(id.iter()) {
            *d = *s as std::ffi::c_char;
        }
        // NCCL finds its GPU as the current device of the calling thread.
        gpu.ctx
            .bind_to_thread()
            .ctx("binding the GPU to the thread")?;
        let stream = gpu
            .ctx
            .new_stream_with_priority(-5)
            .or_else(|_| gpu.ctx.new_stream())
            .ctx("creating the exchange stream")?;
        // Initialisation waits for every rank: watched like a step.
        let start = Instant::now();
        let init_done = Arc::new(AtomicBool::new(false));
        {
            let (done, t, rank) = (init_done.clone(), env.timeout, env.rank);
            std::thread::spawn(move || {
                let t0 = Instant::now();
                while !done.load(Ordering::SeqCst) {
                    if t0.elapsed() > t {
                        eprintln!(
                            "murmur: error: rank {rank}: the other ranks did not join the \
                             communicator within {:.0} s",
                            t.as_secs_f64()
                        );
                        // SAFETY: as in Watch::abort.
                        unsafe { libc::_exit(3) };
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
        }
        let mut comm = std::mem::MaybeUninit::uninit();
        // SAFETY: `comm` receives the new communicator; id, size and rank are valid.
        let raw = unsafe {
            result::comm_init_rank(
                comm.as_mut_ptr(),
                env.size as i32,
                sys::ncclUniqueId { internal },
                env.rank as i32,
            )
            .map_err(|e| nccl_err("initialising the communicator", e))?;
            comm.assume_init()
        };
        init_done.store(true, Ordering::SeqCst);
        let watch = Arc::new(Watch {
            raw: Raw(raw),
            rank: env.rank,
            last: AtomicU64::new(0),
            start,
            busy: AtomicBool::new(false),
            done: AtomicBool::new(false),
            aborted: AtomicBool::new(false),
            timeout: env.timeout,
        });
        {
            let w = Arc::downgrade(&watch);
            std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_millis(200));
                let Some(w) = w.upgrade() else { return };
                if w.done.load(Ordering::SeqCst) {
                    return;
                }
                let since = w.start.elapsed().as_millis() as u64 - w.last.load(Ordering::SeqCst);
                if w.busy.load(Ordering::SeqCst) && since > w.timeout.as_millis() as u64 {
                    w.abort(&format!(
                        "no progress for {:.0} s while waiting for the other ranks (one stopped \
                         or hangs)",
                        w.timeout.as_secs_f64()
                    ));
                }
            });
        }
        if let Some(links) = &links {
            let w = watch.clone();
            links.watch(Arc::new(move |r| {
                w.abort(&format!("rank {r} stopped (its process ended)"));
            }));
        }
        Ok(NcclComm {
            watch,
            size: env.size,
            stream,
            staging: Mutex::new(None),
            links,
            rendezvous,
        })
    }

    /// Marks progress (call once per step): the watchdog measures its timeout from here.
    pub fn beat(&self) {
        let ms = self.watch.start.elapsed().as_millis() as u64;
        self.watch.last.store(ms, Ordering::SeqCst);
    }

    /// Runs `f` as a wait on the other ranks, under the watchdog.
    pub fn watched<T>(&self, f: impl FnOnce() -> T) -> T {
        self.beat();
        self.watch.busy.store(true, Ordering::SeqCst);
        let r = f();
        self.watch.busy.store(false, Ordering::SeqCst);
        self.beat();
        r
    }

    /// Sends and receives device buffers in one NCCL group on [`NcclComm::stream`]: the first
    /// `count` values of each `(peer, buffer, count)` of `sends` go to `peer`, each of `recvs`
    /// is filled from its peer (messages between a pair match in the order they are listed). Enqueued only: the caller orders the stream with its own work through events.
    pub fn exchange_device<T: cudarc::driver::DeviceRepr>(
        &self,
        sends: &[(usize, &CudaSlice<T>, usize)],
        recvs: &mut [(usize, &mut CudaSlice<T>, usize)],
    ) -> Result<(), CommError> {
        let bytes = std::mem::size_of::<T>();
        let s = self.stream.cu_stream() as sys::cudaStream_t;
        result::group_start().map_err(|e| nccl_err("group", e))?;
        for (peer, buf, n) in sends {
            let (ptr, _sync) = buf.device_ptr(&self.stream);
            // SAFETY: `buf` holds at least `n` bytes and outlives the group (the caller keeps
            // it until the stream has passed this point).
            unsafe {
                result::send(
                    ptr as *const _,
                    *n * bytes,
                    sys::ncclDataType_t::ncclUint8,
                    *peer as i32,
                    self.watch.raw.0,
                    s,
                )
            }
            .map_err(|e| nccl_err("send", e))?;
        }
        for (peer, buf, n) in recvs.iter_mut() {
            let (ptr, _sync) = buf.device_ptr_mut(&self.stream);
            // SAFETY: as above, `n` bytes writable.
            unsafe {
                result::recv(
                    ptr as *mut _,
                    *n * bytes,
                    sys::ncclDataType_t::ncclUint8,
                    *peer as i32,
                    self.watch.raw.0,
                    s,
                )
            }
            .map_err(|e| nccl_err("recv", e))?;
        }
        result::group_end().map_err(|e| nccl_err("group", e))?;
        Ok(())
    }

    /// Seconds per exchange of `bytes` with each ring neighbour (a message to the next rank and
    /// one to the previous, as a slab exchange sends), the mean of `reps` after a warm-up,
    /// timed on the exchange stream.
    pub fn time_exchange(&self, bytes: usize, reps: u32) -> Result<f64, CommError> {
        let alloc = || {
            self.stream
                .alloc_zeros::<u8>(bytes.max(1))
                .ctx("exchange test buffers")
        };
        let (up, down, mut lo, mut hi) = (alloc()?, alloc()?, alloc()?, alloc()?);
        let (prev, next) = super::ring(self.rank(), self.size);
        let mut once = || {
            self.exchange_device(
                &[(next, &up, bytes), (prev, &down, bytes)],
                &mut [(prev, &mut lo, bytes), (next, &mut hi, bytes)],
            )
        };
        for _ in 0..3 {
            once()?;
        }
        self.watched(|| self.stream.synchronize())
            .ctx("exchange warm-up")?;
        let t0 = Instant::now();
        for _ in 0..reps.max(1) {
            once()?;
        }
        self.watched(|| self.stream.synchronize())
            .ctx("exchange timing")?;
        Ok(t0.elapsed().as_secs_f64() / reps.max(1) as f64)
    }

    /// Device staging buffers of at least `n` bytes each (send, receive).
    fn staging(&self, n: usize) -> Result<(CudaSlice<u8>, CudaSlice<u8>), CommError> {
        let mut st = self.staging.lock().expect("staging lock");
        if let Some((a, b)) = st.take() {
            if a.len() >= n {
                return Ok((a, b));
            }
        }
        let a = self.stream.alloc_zeros::<u8>(n.max(64)).ctx("staging")?;
        let b = self.stream.alloc_zeros::<u8>(n.max(64)).ctx("staging")?;
        Ok((a, b))
    }

    fn put_staging(&self, bufs: (CudaSlice<u8>, CudaSlice<u8>)) {
        *self.staging.lock().expect("staging lock") = Some(bufs);
    }

    /// An orderly end: no more aborts, liveness links closed with their closing byte, the
    /// rendezvous file removed.
    pub fn finish(&self) {
        self.watch.done.store(true, Ordering::SeqCst);
        if let Some(l) = &self.links {
            l.bye();
        }
        self.rendezvous.finish(self.watch.rank);
    }
}

impl Drop for NcclComm {
    fn drop(&mut self) {
        // An aborted communicator is gone (the watchdog ends the process): leave it alone.
        if self.watch.aborted.swap(true, Ordering::SeqCst) {
            return;
        }
        self.watch.done.store(true, Ordering::SeqCst);
        // SAFETY: the communicator is live and no operation is pending after the stream sync.
        unsafe {
            let _ = self.stream.synchronize();
            let _ = result::comm_destroy(self.watch.raw.0);
        }
    }
}

impl Comm for NcclComm {
    fn rank(&self) -> usize {
        self.watch.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn set_busy(&self, busy: bool) {
        self.beat();
        self.watch.busy.store(busy, Ordering::SeqCst);
    }

    fn all_gather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>, CommError> {
        // Lengths first (8 bytes each), then the messages padded to the longest.
        let lens: Vec<u64> = self
            .gather_fixed(&(mine.len() as u64).to_le_bytes())?
            .chunks(8)
            .map(super::decode_u64)
            .collect();
        let max = *lens.iter().max().unwrap_or(&0) as usize;
        let mut padded = mine.to_vec();
        padded.resize(max.max(1), 0);
        let all = self.gather_fixed(&padded)?;
        Ok(lens
            .iter()
            .enumerate()
            .map(|(r, &n)| all[r * max.max(1)..r * max.max(1) + n as usize].to_vec())
            .collect())
    }

    fn send_recv(
        &self,
        sends: &[(usize, &[u8])],
        from: &[usize],
    ) -> Result<Vec<Vec<u8>>, CommError> {
        // Lengths, then payloads, each as one group through the staging buffers.
        let len_msgs: Vec<[u8; 8]> = sends
            .iter()
            .map(|(_, d)| (d.len() as u64).to_le_bytes())
            .collect();
        let lens = self.host_group(
            &sends
                .iter()
                .zip(&len_msgs)
                .map(|((p, _), l)| (*p, &l[..]))
                .collect::<Vec<_>>(),
            &from.iter().map(|&p| (p, 8)).collect::<Vec<_>>(),
        )?;
        let sizes: Vec<usize> = lens.iter().map(|m| super::decode_u64(m) as usize).collect();
        self.host_group(sends, &from.iter().copied().zip(sizes).collect::<Vec<_>>())
    }
}

impl NcclComm {
    /// All-gather of equal-length host messages: every rank's bytes, concatenated in rank
    /// order.
    fn gather_fixed(&self, mine: &[u8]) -> Result<Vec<u8>, CommError> {
        let n = mine.len();
        let total = n * self.size;
        let (mut send, mut recv) = self.staging(total)?;
        self.stream
            .memcpy_htod(mine, &mut send.slice_mut(..n))
            .ctx("staging a message")?;
        {
            let (sp, _a) = send.device_ptr(&self.stream);
            let (rp, _b) = recv.device_ptr_mut(&self.stream);
            // SAFETY: send holds n bytes, recv n * size.
            unsafe {
                result::all_gather(
                    sp as *const _,
                    rp as *mut _,
                    n,
                    sys::ncclDataType_t::ncclUint8,
                    self.watch.raw.0,
                    self.stream.cu_stream() as _,
                )
            }
            .map_err(|e| nccl_err("all-gather", e))?;
        }
        let mut out = vec![0u8; total];
        self.watched(|| {
            self.stream
                .memcpy_dtoh(&recv.slice(..total), &mut out)
                .and_then(|_| self.stream.synchronize())
        })
        .ctx("gathering messages")?;
        self.put_staging((send, recv));
        Ok(out)
    }

    /// One group of host messages with known receive sizes, through the reused staging
    /// buffers (sends packed into one, receives into the other): one copy each way and one
    /// wait, no allocation once the buffers are large enough.
    fn host_group(
        &self,
        sends: &[(usize, &[u8])],
        recvs: &[(usize, usize)],
    ) -> Result<Vec<Vec<u8>>, CommError> {
        let send_total: usize = sends.iter().map(|(_, d)| d.len()).sum();
        let recv_total: usize = recvs.iter().map(|&(_, n)| n).sum();
        let (mut send, mut recv) = self.staging(send_total.max(recv_total))?;
        if send_total > 0 {
            let packed: Vec<u8> = sends.iter().flat_map(|(_, d)| d.iter().copied()).collect();
            self.stream
                .memcpy_htod(&packed, &mut send.slice_mut(..send_total))
                .ctx("staging messages")?;
        }
        {
            let s = self.stream.cu_stream() as sys::cudaStream_t;
            let (sp, _a) = send.device_ptr(&self.stream);
            let (rp, _b) = recv.device_ptr_mut(&self.stream);
            result::group_start().map_err(|e| nccl_err("group", e))?;
            let mut at = 0u64;
            for (peer, d) in sends {
                // SAFETY: the staging buffer holds the packed sends: `d.len()` bytes at `at`.
                unsafe {
                    result::send(
                        (sp + at) as *const _,
                        d.len(),
                        sys::ncclDataType_t::ncclUint8,
                        *peer as i32,
                        self.watch.raw.0,
                        s,
                    )
                }
                .map_err(|e| nccl_err("send", e))?;
                at += d.len() as u64;
            }
            let mut at = 0u64;
            for &(peer, n) in recvs {
                // SAFETY: the staging buffer holds `recv_total` bytes: `n` at `at`.
                unsafe {
                    result::recv(
                        (rp + at) as *mut _,
                        n,
                        sys::ncclDataType_t::ncclUint8,
                        peer as i32,
                        self.watch.raw.0,
                        s,
                    )
                }
                .map_err(|e| nccl_err("recv", e))?;
                at += n as u64;
            }
            result::group_end().map_err(|e| nccl_err("group", e))?;
        }
        let mut all = vec![0u8; recv_total];
        self.watched(|| {
            if recv_total > 0 {
                self.stream
                    .memcpy_dtoh(&recv.slice(..recv_total), &mut all)?;
            }
            self.stream.synchronize()
        })
        .ctx("receiving messages")?;
        self.put_staging((send, recv));
        let mut out = Vec::with_capacity(recvs.len());
        let mut at = 0;
        for &(_, n) in recvs {
            out.push(all[at..at + n].to_vec());
            at += n;
        }
        Ok(out)
    }
}
