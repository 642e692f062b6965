//! The CUDA layer: driver loading (cudarc, dynamic, so machines without CUDA still run the CPU
//! paths), the embedded PTX and its staleness check, kernel lookup, launch sizes, the
//! memory-fit check, and CUDA-event stage timers. Every GPU backend goes through it.

mod launch;
pub mod scan;
pub mod sort;

pub use launch::Launch;

use crate::timing::StageTimes;
use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr,
    DriverError, LaunchConfig, ValidAsZeroBits,
};
use std::sync::Arc;
use std::time::Duration;

/// Why the GPU could not be used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    #[error("no usable CUDA driver or GPU: {0}")]
    NoDevice(String),
    #[error("the GPU kernels are not available: {0}")]
    Ptx(String),
    /// A request the GPU path cannot take (not a missing GPU: no fallback to the CPU).
    #[error("{0}")]
    Unsupported(String),
    #[error("CUDA error in {context}: {source}")]
    Driver {
        context: String,
        source: DriverError,
    },
    #[error("{what} needs about {need_mib} MiB of GPU memory but only {free_mib} MiB are free (of {total_mib} MiB)")]
    OutOfMemory {
        what: String,
        need_mib: u64,
        free_mib: u64,
        total_mib: u64,
    },
}

/// Adds a context to driver errors: `gpu.ctx("upload")?`.
pub trait DriverContext<T> {
    fn ctx(self, context: &str) -> Result<T, GpuError>;
}

impl<T> DriverContext<T> for Result<T, DriverError> {
    fn ctx(self, context: &str) -> Result<T, GpuError> {
        self.map_err(|source| GpuError::Driver {
            context: context.to_string(),
            source,
        })
    }
}

/// The PTX compiled into this binary, when it matched the kernel sources at build time.
#[cfg(murmur_ptx)]
const EMBEDDED_PTX: Option<&str> = Some(include_str!(env!("MURMUR_PTX_PATH")));
#[cfg(not(murmur_ptx))]
const EMBEDDED_PTX: Option<&str> = None;

/// The kernel source hash this binary was built against.
pub const KERNEL_SOURCE_HASH: &str = env!("MURMUR_KERNEL_SOURCE_HASH");

/// The PTX to load: `MURMUR_PTX=FILE` at run time (checked against this binary's kernel
/// source hash), else the embedded one.
pub fn ptx_source() -> Result<String, GpuError> {
    if let Some(path) = std::env::var_os("MURMUR_PTX") {
        let text = std::fs::read_to_string(&path).map_err(|e| {
            GpuError::Ptx(format!(
                "cannot read MURMUR_PTX={}: {e}",
                path.to_string_lossy()
            ))
        })?;
        let hash = text
            .lines()
            .next()
            .and_then(|l| l.split("source-hash=").nth(1))
            .and_then(|s| s.split_whitespace().next())
            .unwrap_or("");
        if hash != KERNEL_SOURCE_HASH {
            return Err(GpuError::Ptx(format!(
                "{} is stale (kernel sources {hash:?}, this binary expects {KERNEL_SOURCE_HASH}): \
                 run `cargo xtask build-ptx`",
                path.to_string_lossy()
            )));
        }
        return Ok(text);
    }
    EMBEDDED_PTX
        .map(str::to_string)
        .ok_or_else(|| GpuError::Ptx(env!("MURMUR_PTX_STATUS").to_string()))
}

/// PTX architecture from the header line (`arch=sm_90`), as a compute capability `(9, 0)`.
fn ptx_arch(ptx: &str) -> Option<(i32, i32)> {
    let arch = ptx.lines().next()?.split("arch=sm_").nth(1)?;
    let v: i32 = arch.split_whitespace().next()?.parse().ok()?;
    Some((v / 10, v % 10))
}

/// One GPU: context, the stream everything runs on, the kernels module.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    /// Device name, e.g. "NVIDIA H200".
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
}

impl Gpu {
    /// Opens GPU 0 and loads the kernels. Fails cleanly without a driver, a GPU or valid PTX.
    pub fn open() -> Result<Gpu, GpuError> {
        // SAFETY: only probes whether libcuda can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDevice(
                "libcuda was not found (no NVIDIA driver)".into(),
            ));
        }
        let ptx = ptx_source()?;
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::NoDevice(format!("the CUDA driver failed to start: {e}")))?;
        if count < 1 {
            return Err(GpuError::NoDevice("the driver sees no GPU".into()));
        }
        let ctx = CudaContext::new(0).ctx("opening GPU 0")?;
        let cc = ctx
            .compute_capability()
            .ctx("reading the compute capability")?;
        if let Some(arch) = ptx_arch(&ptx) {
            if cc < arch {
                return Err(GpuError::Ptx(format!(
                    "the PTX targets sm_{}{}, this GPU is sm_{}{}: run `cargo xtask build-ptx --arch sm_{}{}`",
                    arch.0, arch.1, cc.0, cc.1, cc.0, cc.1
                )));
            }
        }
        // One stream, in order: cudarc's per-buffer event tracking is for several streams.
        // SAFETY: every buffer of this context is used on `stream` only.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .ctx("loading the kernels' PTX")?;
        let name = ctx.name().ctx("reading the GPU name")?;
        let sm_count = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .ctx("reading the SM count")? as u32;
        Ok(Gpu {
            ctx,
            stream,
            module,
            name,
            sm_count,
        })
    }

    /// A kernel by name (the `#[no_mangle]` name in `kernels-gpu`).
    pub fn kernel(&self, name: &str) -> Result<CudaFunction, GpuError> {
        self.module
            .load_function(name)
            .ctx(&format!("looking up kernel {name}"))
    }

    /// `(free, total)` bytes of GPU memory.
    pub fn memory(&self) -> Result<(u64, u64), GpuError> {
        let (free, total) = self.ctx.mem_get_info().ctx("reading free memory")?;
        Ok((free as u64, total as u64))
    }

    /// Fails with both figures when `bytes` (plus a 5% + 256 MiB margin) exceed free memory.
    pub fn check_fits(&self, what: &str, bytes: u64) -> Result<(), GpuError> {
        let (free, total) = self.memory()?;
        let need = bytes + bytes / 20 + (256 << 20);
        if need > free {
            return Err(GpuError::OutOfMemory {
                what: what.to_string(),
                need_mib: need >> 20,
                free_mib: free >> 20,
                total_mib: total >> 20,
            });
        }
        Ok(())
    }

    /// A zeroed buffer of `n` elements.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream.alloc_zeros(n.max(1)).ctx(&format!(
            "allocating {} bytes",
            n * std::mem::size_of::<T>()
        ))
    }

    /// Copies host data into a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.stream.clone_htod(data).ctx("copying to the GPU")
    }

    /// Copies a device buffer back (synchronises the stream).
    pub fn download<T: DeviceRepr + Clone + Default>(
        &self,
        buf: &CudaSlice<T>,
    ) -> Result<Vec<T>, GpuError> {
        self.stream.clone_dtoh(buf).ctx("copying from the GPU")
    }

    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().ctx("waiting for the GPU")
    }
}

/// One thread per element, `block` threads per block, plus dynamic shared memory.
pub fn grid_1d(n: u32, block: u32, shared_bytes: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (n.div_ceil(block).max(1), 1, 1),
        block_dim: (block, 1, 1),
        shared_mem_bytes: shared_bytes,
    }
}

/// Per-stage GPU times from CUDA events, read back lazily (a ring of recent steps) so timing
/// never stalls the pipeline.
///
/// Two ways to time a step: [`StageClock::begin`], [`StageClock::mark`] after each stage and
/// [`StageClock::end`] (an event before the step and one after every stage), or
/// [`StageClock::chain_begin`] and [`StageClock::chain_end`] around a step issued as one unit
/// (a CUDA graph): one event per step, the step timed from the previous step's event to its own, so nothing but the steps
/// themselves sits in the stream and the gaps between steps count in their times.
pub struct StageClock {
    ctx: Arc<CudaContext>,
    slots: Vec<ClockSlot>,
    next: usize,
    chain: Chain,
    times: StageTimes,
    /// Sum of whole-step GPU times (first to last event of each step).
    step_total: Duration,
    /// Each harvested step's GPU time (first to last event), milliseconds, in step order.
    step_ms: Vec<f64>,
}

/// The events of [`StageClock::chain_end`].
#[derive(Default)]
struct Chain {
    /// `ring[i % RING]`: the event after chained step `i` (counted from the last reset).
    ring: Vec<CudaEvent>,
    recorded: usize,
    harvested: usize,
    /// Recorded before the first chained step after a reset: that step's start.
    origin: Option<CudaEvent>,
    name: &'static str,
}

#[derive(Default)]
struct ClockSlot {
    events: Vec<(&'static str, CudaEvent)>,
    used: usize,
    pending: bool,
}

impl StageClock {
    const RING: usize = 64;

    pub fn new(ctx: &Arc<CudaContext>) -> StageClock {
        StageClock {
            ctx: ctx.clone(),
            slots: (0..Self::RING).map(|_| ClockSlot::default()).collect(),
            next: 0,
            chain: Chain::default(),
            times: StageTimes::default(),
            step_total: Duration::ZERO,
            step_ms: Vec::new(),
        }
    }

    fn harvest(&mut self, slot: usize) -> Result<(), GpuError> {
        let s = &mut self.slots[slot];
        if !s.pending {
            return Ok(());
        }
        s.pending = false;
        if s.used > 0 {
            s.events[s.used - 1]
                .1
                .synchronize()
                .ctx("waiting for a CUDA event")?;
        }
        for k in 1..s.used {
            let ms = s.events[k - 1]
                .1
                .elapsed_ms(&s.events[k].1)
                .ctx("reading a CUDA event")?;
            self.times
                .add(s.events[k].0, Duration::from_secs_f64(ms as f64 / 1e3));
        }
        if s.used > 1 {
            let ms = s.events[0]
                .1
                .elapsed_ms(&s.events[s.used - 1].1)
                .ctx("reading a CUDA event")?;
            self.step_total += Duration::from_secs_f64(ms as f64 / 1e3);
            self.step_ms.push(ms as f64);
        }
        self.times.steps += 1;
        Ok(())
    }

    /// Reads back the oldest chained step not read yet.
    fn harvest_chained(&mut self) -> Result<(), GpuError> {
        let c = &mut self.chain;
        let i = c.harvested;
        let end = &c.ring[i % Self::RING];
        end.synchronize().ctx("waiting for a CUDA event")?;
        let start = if i == 0 {
            c.origin
                .as_ref()
                .expect("recorded with the first chained step")
        } else {
            &c.ring[(i - 1) % Self::RING]
        };
        let ms = start.elapsed_ms(end).ctx("reading a CUDA event")? as f64;
        c.harvested += 1;
        let d = Duration::from_secs_f64(ms / 1e3);
        self.times.add(c.name, d);
        self.step_total += d;
        self.step_ms.push(ms);
        self.times.steps += 1;
        Ok(())
    }

    /// Before a step issued as one unit (a CUDA graph): records the first chained step's start
    /// after a reset, nothing otherwise.
    pub fn chain_begin(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        if self.chain.origin.is_none() {
            let e = self.new_event()?;
            e.record(stream).ctx("recording a CUDA event")?;
            self.chain.origin = Some(e);
        }
        Ok(())
    }

    /// After a step issued as one unit, named `name` in the stage times: records one event; the
    /// step's time runs from the previous chained step's event (or [`StageClock::chain_begin`]'s,
    /// for the first after a reset) to this one.
    pub fn chain_end(&mut self, stream: &CudaStream, name: &'static str) -> Result<(), GpuError> {
        // The event to record into is the start of the oldest step not read yet once that step
        // is two behind: read it first.
        while self.chain.recorded - self.chain.harvested > Self::RING - 2 {
            self.harvest_chained()?;
        }
        if self.chain.ring.len() < Self::RING {
            let e = self.new_event()?;
            self.chain.ring.push(e);
        }
        let c = &mut self.chain;
        c.name = name;
        c.ring[c.recorded % Self::RING]
            .record(stream)
            .ctx("recording a CUDA event")?;
        c.recorded += 1;
        Ok(())
    }

    /// Work other than chained steps is about to go into the stream: the steps recorded so far
    /// are read back, and the next chained step starts from an event of its own.
    pub fn chain_break(&mut self) -> Result<(), GpuError> {
        while self.chain.harvested < self.chain.recorded {
            self.harvest_chained()?;
        }
        self.chain.origin = None;
        self.chain.recorded = 0;
        self.chain.harvested = 0;
        Ok(())
    }

    fn new_event(&self) -> Result<CudaEvent, GpuError> {
        self.ctx
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .ctx("creating a CUDA event")
    }

    /// Starts a step (records its first event).
    pub fn begin(&mut self, stream: &CudaStream) -> Result<(), GpuError> {
        let slot = self.next;
        self.harvest(slot)?;
        self.slots[slot].used = 0;
        self.mark(stream, "begin")
    }

    /// Ends the stage `name` (records an event after it).
    pub fn mark(&mut self, stream: &CudaStream, name: &'static str) -> Result<(), GpuError> {
        let s = &mut self.slots[self.next];
        if s.used == s.events.len() {
            let e = self.new_event()?;
            self.slots[self.next].events.push((name, e));
        }
        let s = &mut self.slots[self.next];
        s.events[s.used].0 = name;
        s.events[s.used]
            .1
            .record(stream)
            .ctx("recording a CUDA event")?;
        s.used += 1;
        Ok(())
    }

    /// Ends the step.
    pub fn end(&mut self) {
        self.slots[self.next].pending = true;
        self.next = (self.next + 1) % Self::RING;
    }

    /// All stage times so far (waits for the recorded steps to finish).
    pub fn times(&mut self) -> Result<StageTimes, GpuError> {
        for k in 0..Self::RING {
            let slot = (self.next + k) % Self::RING;
            self.harvest(slot)?;
        }
        while self.chain.harvested < self.chain.recorded {
            self.harvest_chained()?;
        }
        Ok(self.times.clone())
    }

    /// Mean GPU time per step (first to last event), milliseconds.
    pub fn mean_step_ms(&mut self) -> Result<Option<f64>, GpuError> {
        self.times()?;
        Ok((self.times.steps > 0)
            .then(|| self.step_total.as_secs_f64() * 1e3 / self.times.steps as f64))
    }

    pub fn reset(&mut self) -> Result<(), GpuError> {
        self.times()?;
        self.chain_break()?;
        self.times.reset();
        self.step_total = Duration::ZERO;
        self.step_ms.clear();
        Ok(())
    }

    /// Per-step GPU times (ms) since the last reset.
    pub fn step_ms(&mut self) -> Result<Vec<f64>, GpuError> {
        self.times()?;
        Ok(self.step_ms.clone())
    }
}
