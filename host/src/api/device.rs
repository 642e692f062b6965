//! [`DeviceArray`]: a field of a CUDA simulation left where it lives, described for other GPU
//! code (`__cuda_array_interface__`, DLPack, a kernel of your own) without a copy.

use super::error::{Error, ErrorKind, Result};
use crate::gpu::exposed::RawBuffer;
use std::sync::atomic::{AtomicU64, Ordering};

/// Element type of a [`DeviceArray`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 32-bit unsigned integer.
    U32,
}

impl DType {
    /// Bytes per element (4).
    pub fn size(self) -> usize {
        4
    }

    /// The NumPy type string (`"<f4"`, `"<u4"`).
    pub fn typestr(self) -> &'static str {
        match self {
            DType::F32 => "<f4",
            DType::U32 => "<u4",
        }
    }
}

/// A strided array in GPU memory owned by a [`Flock`](crate::Flock) or a
/// [`Fluid`](crate::Fluid): its device address, shape, strides (bytes), element type and the
/// stream its writes are queued on.
///
/// It stays valid while its owner lives and until the owner's next `step` (or state change);
/// [`Flock::is_current`](crate::Flock::is_current) and
/// [`Fluid::is_current`](crate::Fluid::is_current) tell, and [`DeviceArray::check`] turns a
/// stale one into [`ErrorKind::Stale`]. Reading it from another stream takes
/// [`DeviceArray::order_before`] first (or a wait on [`DeviceArray::stream`]).
#[derive(Clone, Debug)]
pub struct DeviceArray {
    buffer: RawBuffer,
    offset: usize,
    shape: Vec<usize>,
    strides: Vec<usize>,
    dtype: DType,
    owner: u64,
    generation: u64,
}

/// Owners' identities, so an array is current only for the owner that made it.
static OWNERS: AtomicU64 = AtomicU64::new(1);

/// A new owner identity for [`DeviceArray::current`].
pub(crate) fn new_owner() -> u64 {
    OWNERS.fetch_add(1, Ordering::Relaxed)
}

impl DeviceArray {
    /// `buffer` seen from byte `offset` as `shape` with byte `strides`, made by `owner` at its
    /// `generation`.
    pub(crate) fn new(
        buffer: RawBuffer,
        offset: usize,
        shape: Vec<usize>,
        strides: Vec<usize>,
        dtype: DType,
        (owner, generation): (u64, u64),
    ) -> DeviceArray {
        debug_assert_eq!(shape.len(), strides.len());
        DeviceArray {
            buffer,
            offset,
            shape,
            strides,
            dtype,
            owner,
            generation,
        }
    }

    /// Device address of element `[0, 0, ...]`.
    pub fn ptr(&self) -> u64 {
        self.buffer.ptr + self.offset as u64
    }

    /// Elements along each axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// Bytes between neighbours along each axis.
    pub fn strides(&self) -> &[usize] {
        &self.strides
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the array has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The CUDA device ordinal.
    pub fn device(&self) -> usize {
        self.buffer.device()
    }

    /// The `CUstream` handle the array's writes are queued on (never 0, the legacy stream).
    pub fn stream(&self) -> u64 {
        self.buffer.stream_handle()
    }

    /// Makes work queued later on the `CUstream` `consumer` (1: the legacy default stream, 2:
    /// the per-thread one) wait for the writes of this array; the host does not wait.
    pub fn order_before(&self, consumer: u64) -> Result<()> {
        Ok(self.buffer.order_before(consumer)?)
    }

    /// Whether `owner` at `generation` made this array.
    pub(crate) fn current(&self, owner: u64, generation: u64) -> bool {
        self.owner == owner && self.generation == generation
    }

    /// `Err(Stale)` unless `current` (the owner's answer to `is_current`).
    pub fn check(&self, current: bool) -> Result<&DeviceArray> {
        if current {
            Ok(self)
        } else {
            Err(Error::new(
                ErrorKind::Stale,
                "this device array is stale: its owner stepped (or changed state) since it was \
                 made; ask for it again",
            ))
        }
    }
}
