//! The CUDA layer: one device handle per GPU ([`Gpu`]: context, the stream that owns its
//! buffers, the kernels of the embedded PTX by name), the one launch layer ([`launch`]), the
//! memory-fit check and CUDA-event stage timers ([`clock`]). Every GPU backend goes through it.
//!
//! Streams: the legacy default stream is never used. A [`Gpu`] creates its own stream, and every
//! buffer it allocates is owned by that stream; work on another stream reaches a buffer only
//! through the launch layer, which makes that stream wait for the owner's work before the launch
//! and the owner wait for the launch after it (CUDA events). cudarc's own per-buffer event
//! tracking is off: it would record events on every use, also inside graph capture.

pub mod clock;
pub mod exposed;
pub mod launch;
mod ptx;
pub mod scan;
pub mod sort;

pub use clock::StageClock;
pub use launch::{Launch, Shape, Side, Views};
pub use ptx::{ptx_source, KERNEL_SOURCE_HASH};

use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, PinnedHostSlice,
    ValidAsZeroBits,
};
use murmur_common::kernel::{Kernel, KERNELS};
use std::collections::HashMap;
use std::sync::Arc;

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
    /// A launch whose grid is larger than CUDA takes ([`launch::MAX_GRID`]).
    #[error("{what}: a grid of {blocks} blocks along {axis}, more than CUDA launches ({max})")]
    GridTooLarge {
        /// The kernel, or the items a grid was sized for.
        what: String,
        axis: char,
        blocks: u64,
        max: u32,
    },
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

/// One GPU: its context, the stream that owns every buffer allocated here, and the kernels.
pub struct Gpu {
    pub ctx: Arc<CudaContext>,
    /// The stream this handle's buffers belong to and its work runs on (never the legacy one).
    pub stream: Arc<CudaStream>,
    /// Every kernel of [`KERNELS`], looked up once.
    kernels: HashMap<&'static str, CudaFunction>,
    /// Device name, e.g. "NVIDIA H200".
    pub name: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
}

/// GPUs the driver sees (a clear error without a driver).
pub fn device_count() -> Result<usize, GpuError> {
    // SAFETY: only probes whether libcuda can be loaded.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Err(GpuError::NoDevice(
            "libcuda was not found (no NVIDIA driver)".into(),
        ));
    }
    CudaContext::device_count()
        .map(|c| c.max(0) as usize)
        .map_err(|e| GpuError::NoDevice(format!("the CUDA driver failed to start: {e}")))
}

/// The compute capability `(major, minor)` of GPU `ordinal`, read from the driver without
/// creating a context (a clear error without a driver or that GPU).
pub fn compute_capability(ordinal: usize) -> Result<(u32, u32), GpuError> {
    use cudarc::driver::result::{self, device};
    use cudarc::driver::sys::CUdevice_attribute as A;
    if device_count()? <= ordinal {
        return Err(GpuError::NoDevice(format!(
            "the driver sees no GPU {ordinal}"
        )));
    }
    result::init().ctx("starting the CUDA driver")?;
    let dev = device::get(ordinal as i32).ctx(&format!("opening GPU {ordinal}"))?;
    let read = |a| {
        // SAFETY: `dev` was returned by `device::get`.
        unsafe { device::get_attribute(dev, a) }.ctx("reading the compute capability")
    };
    let major = read(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = read(A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    Ok((major.max(0) as u32, minor.max(0) as u32))
}

impl Gpu {
    /// Opens GPU 0 and loads the kernels. Fails cleanly without a driver, a GPU or valid PTX.
    pub fn open() -> Result<Gpu, GpuError> {
        Gpu::open_device(0)
    }

    /// Opens GPU `ordinal` and loads the kernels.
    pub fn open_device(ordinal: usize) -> Result<Gpu, GpuError> {
        // SAFETY: only probes whether libcuda can be loaded.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err(GpuError::NoDevice(
                "libcuda was not found (no NVIDIA driver)".into(),
            ));
        }
        let ptx = ptx_source()?;
        let count = CudaContext::device_count()
            .map_err(|e| GpuError::NoDevice(format!("the CUDA driver failed to start: {e}")))?;
        if count <= ordinal as i32 {
            return Err(GpuError::NoDevice(format!(
                "the driver sees {count} GPU(s), not GPU {ordinal}"
            )));
        }
        let ctx = CudaContext::new(ordinal).ctx(&format!("opening GPU {ordinal}"))?;
        let cc = ctx
            .compute_capability()
            .ctx("reading the compute capability")?;
        if let Some(arch) = ptx::ptx_arch(&ptx) {
            if cc < arch {
                return Err(GpuError::Ptx(format!(
                    "the PTX targets sm_{}{}, this GPU is sm_{}{}: run `cargo xtask build-ptx --arch sm_{}{}`",
                    arch.0, arch.1, cc.0, cc.1, cc.0, cc.1
                )));
            }
        }
        // SAFETY: every `Gpu` of this process turns tracking off before allocating, and the
        // launch layer orders work across streams itself (module docs).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream().ctx("creating a stream")?;
        let module = ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx))
            .ctx("loading the kernels' PTX")?;
        let mut kernels = HashMap::new();
        for &name in KERNELS {
            let f = module.load_function(name).map_err(|e| {
                GpuError::Ptx(format!(
                    "the PTX has no kernel {name} ({e}): run `cargo xtask build-ptx`"
                ))
            })?;
            kernels.insert(name, f);
        }
        let name = ctx.name().ctx("reading the GPU name")?;
        let sm_count = ctx
            .attribute(
                cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            )
            .ctx("reading the SM count")? as u32;
        Ok(Gpu {
            ctx,
            stream,
            kernels,
            name,
            sm_count,
        })
    }

    /// The loaded function of kernel `K`.
    pub(crate) fn function<K: Kernel>(&self) -> &CudaFunction {
        self.kernels
            .get(K::NAME)
            .expect("every kernel of KERNELS is loaded by Gpu::open")
    }

    /// A launch of a kernel on this GPU's own stream.
    pub fn launch(&self) -> Launch<'_> {
        Launch::new(self, &self.stream)
    }

    /// A launch on `stream` (another stream of this context): buffers owned by other streams are
    /// joined through events.
    pub fn launch_on<'a>(&'a self, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch::new(self, stream)
    }

    /// A launch on `stream` beside this GPU's own stream, as [`Side::launch`]: buffers of the
    /// own stream are not joined, those of other streams are.
    ///
    /// # Safety
    /// `stream` was ordered after the own stream's work this launch depends on (a fork:
    /// `stream.join(&gpu.stream)`), the own stream's later work that depends on it will be
    /// ordered after `stream` (a join), and between the two the own stream's work writes no
    /// buffer this launch reads or writes, and reads none it writes.
    pub unsafe fn launch_beside<'a>(&'a self, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch::beside(self, stream, &self.stream)
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

    /// A zeroed buffer of `n` elements (at least one), owned by this GPU's stream.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        self.stream.alloc_zeros(n.max(1)).ctx(&format!(
            "allocating {} bytes",
            n * std::mem::size_of::<T>()
        ))
    }

    /// Page-locked host memory for `n` elements (at least one), for copies to and from the
    /// device at the link's full speed without the driver's staging through a bounce buffer.
    /// Cached (not write-combined): the host reads it back. Its contents are undefined until
    /// a copy fills it; with cudarc's event tracking off, the caller synchronises the stream
    /// after a copy into it before reading it.
    pub fn pinned<T: DeviceRepr>(&self, n: usize) -> Result<PinnedHostSlice<T>, GpuError> {
        // SAFETY: the allocation is only read after a copy has filled it (see above).
        unsafe { self.ctx.alloc_pinned_with_flags(n.max(1), 0) }.ctx(&format!(
            "allocating {} bytes of page-locked host memory",
            n * std::mem::size_of::<T>()
        ))
    }

    /// Copies host data into a new device buffer owned by this GPU's stream.
    pub fn upload<T: DeviceRepr>(&self, data: &[T]) -> Result<CudaSlice<T>, GpuError> {
        self.stream.clone_htod(data).ctx("copying to the GPU")
    }

    /// Copies a device buffer back (waits for the stream's work before it).
    pub fn download<T: DeviceRepr + Clone + Default>(
        &self,
        buf: &CudaSlice<T>,
    ) -> Result<Vec<T>, GpuError> {
        self.stream.clone_dtoh(buf).ctx("copying from the GPU")
    }

    /// Waits until every piece of work queued on this GPU's stream has finished.
    pub fn synchronize(&self) -> Result<(), GpuError> {
        self.stream.synchronize().ctx("waiting for the GPU")
    }

    /// A timing event recorded on this GPU's stream now.
    pub fn record_timing_event(&self) -> Result<cudarc::driver::CudaEvent, GpuError> {
        self.stream
            .record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .ctx("recording a CUDA event")
    }
}
