//! The one launch layer: every kernel is launched here, from its typed argument struct
//! (`murmur_common::kernel`), with a [`Shape`] (grid, block, dynamic shared bytes, and whether it
//! may overlap the previous kernel in the stream: programmatic dependent launch, PDL).
//!
//! ```ignore
//! let mut l = gpu.launch();
//! let args = CountCells { n, grid, body: l.read(&body), counts: l.write(&mut counts) };
//! unsafe { l.run(args, Shape::per_item(n as u64, 256)) }?;
//! ```
//!
//! Buffers become [`DevSlice`] / [`DevSliceMut`] only through [`Launch::read`] and
//! [`Launch::write`], so a written buffer needs `&mut`, and a buffer owned by another stream is
//! joined: the launch stream waits for the owner's queued work (an event recorded on the owner),
//! and after the launch the owner waits for it. PDL uses `cuLaunchKernelEx` with
//! `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`: the kernel's blocks may start while
//! the previous kernel's blocks drain, and the kernel waits in `griddepcontrol.wait`
//! (`thread::wait_for_previous_grid`) before it reads that kernel's results. Graph capture keeps
//! the attribute as a programmatic edge.
//!
//! A [`Side`] stream runs work beside a GPU's own stream: [`Side::fork`] orders it after
//! everything queued on the own stream so far, launches through [`Side::launch`] then run at the
//! same time as what the own stream queues next (its buffers are not joined launch by launch),
//! and [`Side::join`] orders the own stream's later work after them. At the device's highest
//! priority, the side stream's blocks are placed first whenever SM resources free up; at the
//! default priority, kernels of both streams are placed in the order they were launched.

use super::{DriverContext, Gpu, GpuError};
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr};
use murmur_common::kernel::{DevSlice, DevSliceMut, Kernel};
use std::ffi::c_void;
use std::sync::Arc;

/// Dynamic shared memory a kernel gets without opting in (CUDA's 48 KiB default).
const DEFAULT_SHARED_LIMIT: u32 = 48 * 1024;

/// Grid, block and dynamic shared memory of one launch, and whether it may overlap the kernel
/// before it (PDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_bytes: u32,
    pub after_previous: bool,
}

impl Shape {
    /// One thread per element of `n` (at least one block), `block` threads per block.
    pub fn per_item(n: u64, block: u32) -> Shape {
        let blocks = n.div_ceil(block as u64).max(1);
        Shape::blocks(u32::try_from(blocks).unwrap_or(u32::MAX), block)
    }

    /// `blocks` blocks of `block` threads.
    pub fn blocks(blocks: u32, block: u32) -> Shape {
        Shape {
            grid: (blocks.max(1), 1, 1),
            block: (block, 1, 1),
            shared_bytes: 0,
            after_previous: false,
        }
    }

    /// With `bytes` of dynamic shared memory.
    pub fn shared_bytes(mut self, bytes: u32) -> Shape {
        self.shared_bytes = bytes;
        self
    }

    /// With one `T` of dynamic shared memory (a kernel's `#[repr(C)]` shared layout).
    pub fn shared_of<T>(self) -> Shape {
        self.shared_bytes(std::mem::size_of::<T>() as u32)
    }

    /// Lets the kernel start before the previous one in the stream has finished when `allowed`
    /// (it must wait for it on the device before reading its results).
    pub fn after_previous(mut self, allowed: bool) -> Shape {
        self.after_previous = allowed;
        self
    }
}

/// One launch being prepared: the stream it goes to and the other streams whose buffers it
/// uses.
pub struct Launch<'a> {
    gpu: &'a Gpu,
    stream: &'a Arc<CudaStream>,
    /// A stream whose buffers count as joined (the own stream of a [`Side`] launch, which the
    /// fork and the join order instead).
    forked: Option<&'a Arc<CudaStream>>,
    /// Owners of buffers this launch uses that are not its stream (joined before and after).
    foreign: Vec<Arc<CudaStream>>,
    /// The first failure of a join, reported by [`Launch::run`].
    error: Option<GpuError>,
}

impl<'a> Launch<'a> {
    pub(super) fn new(gpu: &'a Gpu, stream: &'a Arc<CudaStream>) -> Launch<'a> {
        Launch {
            gpu,
            stream,
            forked: None,
            foreign: Vec::new(),
            error: None,
        }
    }

    /// A launch on `stream` whose buffers owned by `forked` are not joined (a fork and a join
    /// order the two streams instead).
    pub(super) fn beside(
        gpu: &'a Gpu,
        stream: &'a Arc<CudaStream>,
        forked: &'a Arc<CudaStream>,
    ) -> Launch<'a> {
        let mut l = Launch::new(gpu, stream);
        l.forked = Some(forked);
        l
    }

    /// The stream the launch goes to.
    pub fn stream(&self) -> &Arc<CudaStream> {
        self.stream
    }

    /// Joins the owner of a buffer once when it is not the launch stream.
    fn own(&mut self, owner: &Arc<CudaStream>) {
        if Arc::ptr_eq(owner, self.stream)
            || self.forked.is_some_and(|f| Arc::ptr_eq(f, owner))
            || self.foreign.iter().any(|s| Arc::ptr_eq(s, owner))
        {
            return;
        }
        if let Err(e) = self.stream.join(owner) {
            self.error.get_or_insert(GpuError::Driver {
                context: "joining a buffer's stream".into(),
                source: e,
            });
        }
        self.foreign.push(owner.clone());
    }

    /// A read-only view of `buf` for the kernel.
    pub fn read<T>(&mut self, buf: &CudaSlice<T>) -> DevSlice<T> {
        self.own(buf.stream());
        let (ptr, _record) = buf.device_ptr(self.stream);
        // SAFETY: the allocation holds `len` elements and outlives the launch (freeing it is
        // ordered after the launch on its owning stream).
        unsafe { DevSlice::from_raw(ptr as *const T, buf.len() as u64) }
    }

    /// A writable view of `buf` for the kernel.
    pub fn write<T>(&mut self, buf: &mut CudaSlice<T>) -> DevSliceMut<T> {
        self.own(buf.stream());
        let len = buf.len() as u64;
        let (ptr, _record) = buf.device_ptr_mut(self.stream);
        // SAFETY: as in `read`; `&mut` keeps other host code from handing it out meanwhile.
        unsafe { DevSliceMut::from_raw(ptr as *mut T, len) }
    }

    /// A read-only view of `buf` as elements of another type of the same size and alignment
    /// (e.g. `[f32; 3]` device buffers as glam's `Vec3`, which cudarc's traits cannot name).
    pub fn read_cast<T, U>(&mut self, buf: &CudaSlice<T>) -> DevSlice<U> {
        const { assert!(same_layout::<T, U>()) };
        let s = self.read(buf);
        // SAFETY: the same allocation and element count; `U` has `T`'s size and alignment.
        unsafe { DevSlice::from_raw(s.as_ptr() as *const U, s.len()) }
    }

    /// A writable view of `buf` as elements of another type of the same size and alignment.
    pub fn write_cast<T, U>(&mut self, buf: &mut CudaSlice<T>) -> DevSliceMut<U> {
        const { assert!(same_layout::<T, U>()) };
        let s = self.write(buf);
        // SAFETY: as in `read_cast`.
        unsafe { DevSliceMut::from_raw(s.as_mut_ptr() as *mut U, s.len()) }
    }

    /// A writable view of a byte buffer as `U` elements (e.g. RGBA8 pixels as `u32`): device
    /// allocations are 256-byte aligned.
    pub fn write_as<U>(&mut self, buf: &mut CudaSlice<u8>) -> DevSliceMut<U> {
        let bytes = self.write(buf);
        // SAFETY: the same allocation, its length in whole `U`s; aligned (see above).
        unsafe {
            DevSliceMut::from_raw(
                bytes.as_mut_ptr() as *mut U,
                bytes.len() / std::mem::size_of::<U>() as u64,
            )
        }
    }

    /// Launches kernel `K` with `args` in `shape` on the launch stream.
    ///
    /// # Safety
    /// `args` must meet the contract documented on `K` (which buffers it reads and writes, how
    /// many elements each must hold, what must be zeroed), and `shape` must cover the elements
    /// the kernel expects one thread each for.
    pub unsafe fn run<K: Kernel + DeviceRepr>(
        self,
        mut args: K,
        shape: Shape,
    ) -> Result<(), GpuError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let func = self.gpu.function::<K>();
        if shape.shared_bytes > DEFAULT_SHARED_LIMIT {
            func.set_attribute(
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                shape.shared_bytes as i32,
            )
            .ctx(&format!("allowing {} its shared memory", K::NAME))?;
        }
        self.stream.context().bind_to_thread().ctx(K::NAME)?;
        let mut params = [&mut args as *mut K as *mut c_void];
        // SAFETY: an all-zero attribute is a valid value of this plain C struct.
        let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: shape.grid.0,
            gridDimY: shape.grid.1,
            gridDimZ: shape.grid.2,
            blockDimX: shape.block.0,
            blockDimY: shape.block.1,
            blockDimZ: shape.block.2,
            sharedMemBytes: shape.shared_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: shape.after_previous as u32,
        };
        // SAFETY: the kernel takes exactly one parameter, a `K` (the typed kernel interface);
        // the driver copies it during the call.
        sys::cuLaunchKernelEx(
            &config,
            func.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()
        .ctx(K::NAME)?;
        for owner in &self.foreign {
            owner.join(self.stream).ctx("joining a buffer's stream")?;
        }
        Ok(())
    }
}

/// A second stream of one GPU for work beside the work of the GPU's own stream (see the module
/// docs): the stream and the two events of a fork and a join.
pub struct Side {
    stream: Arc<CudaStream>,
    forked: CudaEvent,
    joined: CudaEvent,
}

impl Side {
    /// A side stream of `gpu`, at the device's highest priority when `high`, else at the
    /// default priority (the own stream's).
    pub fn new(gpu: &Gpu, high: bool) -> Result<Side, GpuError> {
        let stream = if high {
            gpu.ctx.bind_to_thread().ctx("binding the context")?;
            let (_, highest) = cudarc::driver::result::stream::get_priority_range()
                .ctx("reading the stream priorities")?;
            gpu.ctx.new_stream_with_priority(highest)
        } else {
            gpu.ctx.new_stream()
        }
        .ctx("creating a side stream")?;
        let event = || {
            gpu.ctx
                .new_event(Some(sys::CUevent_flags::CU_EVENT_DISABLE_TIMING))
                .ctx("creating a CUDA event")
        };
        Ok(Side {
            stream,
            forked: event()?,
            joined: event()?,
        })
    }

    /// Orders the side stream after everything queued on `gpu`'s own stream so far.
    pub fn fork(&self, gpu: &Gpu) -> Result<(), GpuError> {
        self.forked
            .record(&gpu.stream)
            .ctx("recording a CUDA event")?;
        self.stream
            .wait(&self.forked)
            .ctx("waiting for a CUDA event")
    }

    /// A launch on the side stream: buffers of `gpu`'s own stream are not joined (the fork and
    /// the join order it), those of other streams are.
    ///
    /// # Safety
    /// Between the [`Side::fork`] before it and the [`Side::join`] after it, the work queued on
    /// `gpu`'s own stream writes no buffer this launch reads or writes, and reads none it
    /// writes.
    pub unsafe fn launch<'a>(&'a self, gpu: &'a Gpu) -> Launch<'a> {
        Launch::beside(gpu, &self.stream, &gpu.stream)
    }

    /// Orders `gpu`'s own stream after everything launched on the side stream so far.
    pub fn join(&self, gpu: &Gpu) -> Result<(), GpuError> {
        self.joined
            .record(&self.stream)
            .ctx("recording a CUDA event")?;
        gpu.stream
            .wait(&self.joined)
            .ctx("waiting for a CUDA event")
    }
}

/// True when `T` and `U` have the same size and alignment.
const fn same_layout<T, U>() -> bool {
    std::mem::size_of::<T>() == std::mem::size_of::<U>()
        && std::mem::align_of::<T>() == std::mem::align_of::<U>()
}
