//! `murmur.DeviceArray`: a `murmur::DeviceArray` (a field of a CUDA simulation left on the GPU)
//! for other Python GPU code, without a copy: `__cuda_array_interface__` (version 3, with its
//! stream) and DLPack (`__dlpack__`, `__dlpack_device__`; the legacy `dltensor` capsule).
//!
//! It holds a reference to the `Flock` or `Fluid` that made it, so the GPU buffer lives at
//! least as long, and asks that owner on every use whether it is still current: after the
//! owner's next step it raises `murmur.StaleArrayError`. (A consumer's tensor made from it
//! earlier is not checked: it sees whatever the buffer holds, the next step's values included.)

use crate::fluid::Fluid;
use crate::{flock::Flock, OrPy};
use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::ffi::{c_void, CStr};

/// The simulation a [`DeviceArray`] views.
pub(crate) enum Owner {
    /// A `murmur.Flock`.
    Flock(Py<Flock>),
    /// A `murmur.Fluid`.
    Fluid(Py<Fluid>),
}

impl Owner {
    /// Whether `arr` still shows the owner's current state (false while the owner is busy, for
    /// example stepping).
    fn is_current(&self, py: Python<'_>, arr: &murmur::DeviceArray) -> bool {
        match self {
            Owner::Flock(f) => f.bind(py).try_borrow().is_ok_and(|f| f.is_current(arr)),
            Owner::Fluid(f) => f.bind(py).try_borrow().is_ok_and(|f| f.is_current(arr)),
        }
    }

    /// `flock` or `fluid`, and its backend's description.
    fn describe(&self, py: Python<'_>) -> (&'static str, String) {
        let busy = || "(busy)".to_string();
        match self {
            Owner::Flock(f) => (
                "flock",
                f.bind(py)
                    .try_borrow()
                    .map_or_else(|_| busy(), |f| f.inner.describe()),
            ),
            Owner::Fluid(f) => (
                "fluid",
                f.bind(py)
                    .try_borrow()
                    .map_or_else(|_| busy(), |f| f.inner.describe()),
            ),
        }
    }
}

/// `arr` (the owner's answer to a `device_*` call: `None` on the CPU backend) as a
/// `murmur.DeviceArray` of `owner`; on the CPU backend a `ValueError`.
pub(crate) fn wrap(
    py: Python<'_>,
    owner: Owner,
    arr: Option<murmur::DeviceArray>,
    what: &'static str,
) -> PyResult<Py<PyAny>> {
    let Some(arr) = arr else {
        let (kind, backend) = owner.describe(py);
        return Err(PyValueError::new_err(format!(
            "device arrays need the CUDA backend: this {kind} runs on {backend} (open it with \
             backend=\"cuda\", or leave out device=True for a NumPy copy)"
        )));
    };
    Ok(Py::new(py, DeviceArray { owner, arr, what })?.into_any())
}

/// A strided array in GPU memory, owned by a ``Flock`` or a ``Fluid`` (``device=True`` of
/// ``pos``, ``vel``, ``id``, ``velocity``, ``density``): read it without a copy with
/// ``torch.from_dlpack(a)``, ``cupy.asarray(a)`` (``__cuda_array_interface__`` v3) or
/// ``cupy.from_dlpack(a)``. Fluid fields are in lattice units.
///
/// It keeps its owner alive, and is valid until the owner's next ``step`` (or state change):
/// after that every use of its data (``ptr``, ``stream``, the interfaces) raises
/// ``murmur.StaleArrayError``; ask for it again. Tensors made from it earlier are not checked
/// and see the buffer as later steps rewrite it. Consumers' streams wait for murmur's writes
/// (an event wait on murmur's stream; the host does not wait).
#[pyclass(module = "murmur", unsendable)]
pub struct DeviceArray {
    owner: Owner,
    arr: murmur::DeviceArray,
    what: &'static str,
}

impl DeviceArray {
    /// The array, or `StaleArrayError` when its owner stepped since it was made.
    fn checked(&self, py: Python<'_>) -> PyResult<&murmur::DeviceArray> {
        self.arr.check(self.owner.is_current(py, &self.arr)).or_py()
    }
}

/// DLPack's `kDLCUDA` device type.
const KDL_CUDA: i32 = 2;
/// DLPack's type codes.
const KDL_UINT: u8 = 1;
const KDL_FLOAT: u8 = 2;
/// The legacy DLPack capsule's name; a consumer renames it `used_dltensor` when it takes it.
const DLTENSOR: &CStr = c"dltensor";

/// DLPack's `DLDevice`.
#[repr(C)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

/// DLPack's `DLDataType`.
#[repr(C)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

/// DLPack's `DLTensor` (shape and strides in elements).
#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

/// DLPack's `DLManagedTensor` (the legacy, unversioned one).
#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// What a `DlManagedTensor` owns: the shape and strides it points into, and the `DeviceArray`
/// (and through it the owner and its GPU buffer) it keeps alive.
struct Exported {
    shape: Vec<i64>,
    strides: Vec<i64>,
    _keep: Py<DeviceArray>,
}

/// The `DlManagedTensor`'s deleter: frees it and its [`Exported`], dropping the reference to
/// the `DeviceArray` with the thread attached to Python (consumers call it from any thread, with
/// or without the GIL).
///
/// # Safety
/// `m` is null or a pointer [`export`] made, not yet deleted.
unsafe extern "C" fn delete_managed(m: *mut DlManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `export` made `m` and its `manager_ctx` with `Box::into_raw`; each is freed once,
    // here.
    let (managed, exported) = unsafe {
        let managed = Box::from_raw(m);
        let exported = Box::from_raw(managed.manager_ctx.cast::<Exported>());
        (managed, exported)
    };
    drop(managed);
    // While the interpreter shuts down `try_attach` runs nothing: the reference is then dropped
    // unattached, which PyO3 defers to its reference pool.
    Python::try_attach(move |_py| drop(exported));
}

/// The capsule's destructor: deletes the tensor unless a consumer took it (renamed the capsule
/// `used_dltensor`, and calls the deleter itself when done).
///
/// # Safety
/// Python calls it with the GIL held, on a capsule [`export`] made.
unsafe extern "C" fn destroy_capsule(capsule: *mut ffi::PyObject) {
    // SAFETY: `capsule` is a live capsule; when it still has its first name, its pointer is the
    // `DlManagedTensor` that `export` made and no consumer took.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, DLTENSOR.as_ptr()).cast::<DlManagedTensor>();
            delete_managed(m);
        }
    }
}

/// `arr` as a DLPack `dltensor` capsule that keeps `keep` alive.
fn export<'py>(
    py: Python<'py>,
    arr: &murmur::DeviceArray,
    keep: Py<DeviceArray>,
) -> PyResult<Bound<'py, PyAny>> {
    let size = arr.dtype().size();
    let mut exported = Box::new(Exported {
        shape: arr.shape().iter().map(|&n| n as i64).collect(),
        // murmur's strides are bytes, DLPack's elements (murmur's are whole elements).
        strides: arr.strides().iter().map(|&s| (s / size) as i64).collect(),
        _keep: keep,
    });
    let code = match arr.dtype() {
        murmur::DType::F32 => KDL_FLOAT,
        murmur::DType::U32 => KDL_UINT,
    };
    let managed = Box::new(DlManagedTensor {
        dl_tensor: DlTensor {
            data: arr.ptr() as *mut c_void,
            device: DlDevice {
                device_type: KDL_CUDA,
                device_id: arr.device() as i32,
            },
            ndim: exported.shape.len() as i32,
            dtype: DlDataType {
                code,
                bits: 8 * size as u8,
                lanes: 1,
            },
            // The vectors' heap buffers stay put when the box moves into `manager_ctx`.
            shape: exported.shape.as_mut_ptr(),
            strides: exported.strides.as_mut_ptr(),
            byte_offset: 0,
        },
        manager_ctx: std::ptr::null_mut(),
        deleter: Some(delete_managed),
    });
    let m = Box::into_raw(managed);
    // SAFETY: `m` was just made by `Box::into_raw`; `exported` moves into it, freed by
    // `delete_managed`. `PyCapsule_New` is called attached (`py`); on failure it returns null
    // with an exception set, and the tensor is deleted here (no consumer saw it).
    unsafe {
        (*m).manager_ctx = Box::into_raw(exported).cast::<c_void>();
        let capsule =
            ffi::PyCapsule_New(m.cast::<c_void>(), DLTENSOR.as_ptr(), Some(destroy_capsule));
        if capsule.is_null() {
            delete_managed(m);
        }
        Bound::from_owned_ptr_or_err(py, capsule)
    }
}

/// The consumer's `stream=` of `__dlpack__` as the `CUstream` to order after murmur's writes:
/// `None` for -1 (no synchronisation), the legacy default stream (1) for `None` and 0.
fn consumer_stream(stream: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    let Some(s) = stream.filter(|s| !s.is_none()) else {
        return Ok(Some(1));
    };
    if let Ok(v) = s.extract::<i64>() {
        return match v {
            -1 => Ok(None),
            0 => Ok(Some(1)),
            v if v > 0 => Ok(Some(v as u64)),
            v => Err(PyValueError::new_err(format!(
                "stream={v}: use -1 (no synchronisation), None, 1, 2 or a CUstream handle"
            ))),
        };
    }
    s.extract::<u64>().map(Some).map_err(|_| {
        PyValueError::new_err(format!(
            "stream={s}: expected an integer (a CUstream handle, 1, 2 or -1) or None"
        ))
    })
}

#[pymethods]
impl DeviceArray {
    /// Elements along each axis.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.arr.shape())
    }

    /// Bytes between neighbours along each axis (NumPy's convention).
    #[getter]
    fn strides<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.arr.strides())
    }

    /// The element type's NumPy name: ``float32`` or ``uint32``.
    #[getter]
    fn dtype(&self) -> &'static str {
        match self.arr.dtype() {
            murmur::DType::F32 => "float32",
            murmur::DType::U32 => "uint32",
        }
    }

    /// The element type as a NumPy type string (``<f4``, ``<u4``).
    #[getter]
    fn typestr(&self) -> &'static str {
        self.arr.dtype().typestr()
    }

    /// The CUDA device ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.arr.device()
    }

    /// Device address of element ``[0, ...]`` (``StaleArrayError`` once stale).
    #[getter]
    fn ptr(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.checked(py)?.ptr())
    }

    /// The ``CUstream`` handle murmur queues the array's writes on (``StaleArrayError`` once
    /// stale).
    #[getter]
    fn stream(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.checked(py)?.stream())
    }

    /// Whether it still shows its owner's state (false after the owner's next step).
    #[getter]
    fn is_current(&self, py: Python<'_>) -> bool {
        self.owner.is_current(py, &self.arr)
    }

    /// The CUDA Array Interface, version 3: ``shape``, ``typestr``, ``data`` (pointer, not
    /// read-only), ``strides`` (bytes), ``version`` and ``stream`` (murmur's; consumers order
    /// their reads after it). ``StaleArrayError`` once stale.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let arr = self.checked(py)?;
        let d = PyDict::new(py);
        d.set_item("shape", PyTuple::new(py, arr.shape())?)?;
        d.set_item("typestr", arr.dtype().typestr())?;
        d.set_item("data", (arr.ptr(), false))?;
        d.set_item("strides", PyTuple::new(py, arr.strides())?)?;
        d.set_item("version", 3)?;
        d.set_item("stream", arr.stream())?;
        Ok(d)
    }

    /// A DLPack capsule (``dltensor``) of the array, without a copy: strides in elements, the
    /// capsule keeps this array (and its owner) alive. ``stream`` is the consumer's stream:
    /// its later work waits for murmur's writes (an event wait; ``-1``: no wait; ``None`` or
    /// ``0``: the legacy default stream). ``copy=True`` and another ``dl_device`` raise
    /// ``BufferError``; ``max_version`` is accepted (the capsule is the unversioned kind).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        slf: &Bound<'py, Self>,
        stream: Option<&Bound<'py, PyAny>>,
        max_version: Option<&Bound<'py, PyAny>>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = slf.py();
        let _ = max_version;
        let this = slf.borrow();
        let arr = this.checked(py)?;
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "murmur exports its device arrays without a copy: copy=True is not supported",
            ));
        }
        let here = (KDL_CUDA, arr.device() as i32);
        if let Some(d) = dl_device.filter(|&d| d != here) {
            return Err(PyBufferError::new_err(format!(
                "dl_device={d:?}: this array is on {here:?} (CUDA device {})",
                arr.device()
            )));
        }
        if let Some(consumer) = consumer_stream(stream)? {
            arr.order_before(consumer).or_py()?;
        }
        export(py, arr, slf.clone().unbind())
    }

    /// ``(2, device)``: DLPack's ``kDLCUDA`` and the CUDA device ordinal.
    fn __dlpack_device__(&self, py: Python<'_>) -> PyResult<(i32, i32)> {
        let arr = self.checked(py)?;
        Ok((KDL_CUDA, arr.device() as i32))
    }

    /// Elements along the first axis.
    fn __len__(&self) -> usize {
        self.arr.shape().first().copied().unwrap_or(0)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let state = if self.is_current(py) { "" } else { ", stale" };
        format!(
            "murmur.DeviceArray({}, shape={:?}, strides={:?}, dtype={}, cuda:{}{state})",
            self.what,
            self.arr.shape(),
            self.arr.strides(),
            self.dtype(),
            self.arr.device()
        )
    }
}
