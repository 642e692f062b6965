//! GPU memory handed out of murmur without a copy: a buffer's device address, its size, the
//! device and the stream its writes are queued on, for `__cuda_array_interface__` and DLPack
//! (the Python package) and for Rust callers with their own kernels.

use super::{DriverContext, GpuError};
use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DeviceRepr};
use std::sync::Arc;

/// A buffer on the GPU, borrowed: valid while its owner lives and until the owner's next step
/// writes it.
#[derive(Clone, Debug)]
pub struct RawBuffer {
    /// Device address of the first byte.
    pub ptr: u64,
    /// Size in bytes.
    pub bytes: usize,
    /// The stream the buffer's writes are queued on: a reader orders its work after them
    /// ([`RawBuffer::order_before`]).
    pub stream: Arc<CudaStream>,
}

impl RawBuffer {
    /// `slice`'s address and size, its writes queued on `stream`.
    pub fn of<T: DeviceRepr>(slice: &CudaSlice<T>, stream: &Arc<CudaStream>) -> RawBuffer {
        let (ptr, _sync) = slice.device_ptr(stream);
        RawBuffer {
            ptr,
            bytes: slice.len() * std::mem::size_of::<T>(),
            stream: stream.clone(),
        }
    }

    /// The CUDA device ordinal.
    pub fn device(&self) -> usize {
        self.stream.context().ordinal()
    }

    /// The producer's stream as the integer `__cuda_array_interface__` carries (`CUstream`).
    pub fn stream_handle(&self) -> u64 {
        self.stream.cu_stream() as u64
    }

    /// Makes the work later queued on the consumer's stream `consumer` (a `CUstream` handle;
    /// 1 is the legacy default stream, 2 the per-thread one) wait for every write queued so far
    /// on this buffer's stream: an event recorded here, waited on there. The host never waits.
    pub fn order_before(&self, consumer: u64) -> Result<(), GpuError> {
        self.stream
            .context()
            .bind_to_thread()
            .ctx("binding murmur's context")?;
        let event = self
            .stream
            .record_event(None)
            .ctx("recording murmur's event")?;
        // SAFETY: `consumer` is a stream handle of this context given by the consumer (or one
        // of CUDA's special handles 1 and 2); the event lives until after the call, and
        // destroying it while the wait is pending is allowed (CUDA frees it once waited).
        unsafe {
            cudarc::driver::result::stream::wait_event(
                consumer as cudarc::driver::sys::CUstream,
                event.cu_event(),
                cudarc::driver::sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT,
            )
        }
        .ctx("ordering the consumer's stream after murmur's")
    }
}
