//! Kernel launches that may overlap the previous kernel's tail: programmatic dependent launch
//! (PDL, sm_90+). cudarc's launch builder has no launch attributes, so the stages a step chains
//! (scan, scatter, update) go through this one: `cuLaunchKernelEx` with
//! `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`. Such a kernel's blocks may start
//! while the previous kernel in the stream still runs (once all of its blocks have called
//! `griddepcontrol.launch_dependents`); the kernel itself waits with `griddepcontrol.wait`
//! (`thread::wait_for_previous_grid`) before it reads what that kernel writes. CUDA graph
//! capture keeps the attribute as a programmatic edge.

use cudarc::driver::LaunchConfig;
use cudarc::driver::{
    sys, CudaFunction, CudaSlice, CudaStream, DevicePtr, DeviceRepr, DriverError,
};
use std::ffi::c_void;

/// One launch: the kernel, copies of its arguments, and whether it may overlap its predecessor.
pub struct Launch<'a> {
    stream: &'a CudaStream,
    func: &'a CudaFunction,
    /// Each argument's bytes, 8-byte aligned; the driver reads them during the launch call.
    args: Vec<Box<[u64]>>,
    overlap: bool,
}

impl<'a> Launch<'a> {
    pub fn new(stream: &'a CudaStream, func: &'a CudaFunction) -> Launch<'a> {
        Launch {
            stream,
            func,
            args: Vec::new(),
            overlap: false,
        }
    }

    /// A by-value argument (a scalar or a `#[repr(C)]` struct the kernel takes by value).
    pub fn arg<T: DeviceRepr>(&mut self, value: &T) -> &mut Self {
        let size = std::mem::size_of::<T>();
        let mut words = vec![0u64; size.div_ceil(8).max(1)].into_boxed_slice();
        // SAFETY: copies the `size` bytes of a plain-data value into a buffer at least as large.
        unsafe {
            std::ptr::copy_nonoverlapping(
                value as *const T as *const u8,
                words.as_mut_ptr() as *mut u8,
                size,
            )
        };
        self.args.push(words);
        self
    }

    /// A device buffer, passed as its device pointer.
    pub fn buf<T>(&mut self, slice: &CudaSlice<T>) -> &mut Self {
        // Event tracking is off (one stream, `Gpu::open`): the guard records nothing.
        let (ptr, _guard) = slice.device_ptr(self.stream);
        self.arg(&ptr)
    }

    /// Lets this kernel start before the previous one in the stream has finished (PDL) when
    /// `allowed`; it must then wait for it on the device before reading its results.
    pub fn after_previous(&mut self, allowed: bool) -> &mut Self {
        self.overlap = allowed;
        self
    }

    /// # Safety
    /// The arguments must match the kernel's parameters in number, order and type, and every
    /// buffer must be large enough for what the kernel does with it.
    pub unsafe fn launch(&mut self, cfg: LaunchConfig) -> Result<(), DriverError> {
        self.stream.context().bind_to_thread()?;
        let mut params: Vec<*mut c_void> = self
            .args
            .iter_mut()
            .map(|a| a.as_mut_ptr() as *mut c_void)
            .collect();
        // SAFETY: an all-zero attribute is a valid value of this plain C struct.
        let mut attr: sys::CUlaunchAttribute = std::mem::zeroed();
        attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        let config = sys::CUlaunchConfig {
            gridDimX: cfg.grid_dim.0,
            gridDimY: cfg.grid_dim.1,
            gridDimZ: cfg.grid_dim.2,
            blockDimX: cfg.block_dim.0,
            blockDimY: cfg.block_dim.1,
            blockDimZ: cfg.block_dim.2,
            sharedMemBytes: cfg.shared_mem_bytes,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: self.overlap as u32,
        };
        sys::cuLaunchKernelEx(
            &config,
            self.func.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
        .result()
    }
}
