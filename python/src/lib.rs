//! `murmur._murmur`: the Python bindings of the `murmur` library (the `murmur` package's native
//! module). A thin layer: every simulation, conversion of units and check is murmur's own API
//! (`murmur::{Flock, Fluid, ...}`); this crate turns Python arguments into its settings, its
//! results into NumPy arrays and its errors into Python exceptions.
//!
//! - `murmur.Flock` is in [`flock`],
//! - `murmur.Fluid` (a scene file or a dict) in [`fluid`],
//! - `murmur.DeviceArray` (`__cuda_array_interface__`, DLPack) in [`device`].
//!
//! Stepping releases the GIL and stops between steps on Ctrl-C ([`step_interruptibly`]).

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::time::{Duration, Instant};

mod device;
mod flock;
mod fluid;

pyo3::create_exception!(
    murmur,
    UnhealthyError,
    PyRuntimeError,
    "A fluid left its health bounds (NaN, density or Mach number); the message names the step \
     and the cell."
);
pyo3::create_exception!(
    murmur,
    StaleArrayError,
    PyRuntimeError,
    "A DeviceArray was used after its owner stepped (or changed state): ask for it again."
);

/// murmur's error as the Python exception of its kind, with murmur's one-line message.
pub(crate) fn to_py(e: murmur::Error) -> PyErr {
    use murmur::ErrorKind;
    let message = e.message().to_string();
    match e.kind() {
        ErrorKind::Invalid => PyValueError::new_err(message),
        ErrorKind::Device => PyRuntimeError::new_err(message),
        ErrorKind::Io => PyOSError::new_err(message),
        ErrorKind::Unhealthy => UnhealthyError::new_err(message),
        ErrorKind::Stale => StaleArrayError::new_err(message),
    }
}

/// `Result<T, murmur::Error>` to `PyResult<T>`.
pub(crate) trait OrPy<T> {
    /// The error as a Python exception ([`to_py`]).
    fn or_py(self) -> PyResult<T>;
}

impl<T> OrPy<T> for murmur::Result<T> {
    fn or_py(self) -> PyResult<T> {
        self.map_err(to_py)
    }
}

/// An RGBA frame (`width` x `height`, 4 bytes a pixel, row-major) as an `(H, W, 3)` uint8
/// array, alpha dropped.
pub(crate) fn rgb(
    py: Python<'_>,
    width: u32,
    height: u32,
    rgba: Vec<u8>,
) -> Bound<'_, numpy::PyArray3<u8>> {
    use numpy::IntoPyArray;
    let a = ndarray::Array3::from_shape_vec((height as usize, width as usize, 4), rgba)
        .expect("4 bytes a pixel");
    a.slice(ndarray::s![.., .., ..3])
        .as_standard_layout()
        .into_owned()
        .into_pyarray(py)
}

/// A backend string (`auto`, `cpu`, `cuda`, `cuda:N`) as murmur parses it.
pub(crate) fn backend(s: &str) -> PyResult<murmur::Backend> {
    s.parse().or_py()
}

/// Moves a value that is not `Send` into [`Python::detach`]'s closure.
///
/// SAFETY (of the `Send` impl, and the one rule for using it): `detach` runs its closure on the
/// calling thread, synchronously, and returns only when it has finished; its `Send` bound is
/// there to keep GIL-bound values (`Bound`, `Python`) out of the closure, not because the
/// closure moves to another thread. The values wrapped here are `&mut` borrows of an
/// `unsendable` pyclass's Rust value (a `Flock`, a `Fluid`), taken through a `PyRefMut` that the
/// calling frame holds until `detach` returns: no other Python thread can borrow the object
/// meanwhile (`unsendable` classes refuse other threads, and the `PyRefMut` refuses a second
/// borrow), so the closure has the only access, on the thread that owns the value. A signal
/// handler that the closure runs (it re-attaches on this thread) and that touches the same
/// object gets PyO3's "already borrowed" error, not a second `&mut`. Never wrap a `Bound` or a
/// `Python` in it, and never hand it to another thread.
struct OnThisThread<T>(T);

// SAFETY: see the type's documentation: the value never leaves the calling thread.
unsafe impl<T> Send for OnThisThread<T> {}

impl<T> OnThisThread<T> {
    /// The value (a method, so a closure captures the whole wrapper, not its field).
    fn into_inner(self) -> T {
        self.0
    }
}

/// How often a long `step(k)` looks for a pending signal (Ctrl-C), wall time.
const SIGNAL_EVERY: Duration = Duration::from_millis(50);

/// Runs `step_while(go_on)` (a `Flock` or `Fluid`'s `step_while`) with the GIL released. Between
/// steps, at most every [`SIGNAL_EVERY`], `go_on` re-attaches to Python and runs its pending
/// signal handlers: an exception from one (`KeyboardInterrupt` on Ctrl-C) stops the run after
/// the step in flight and is raised here. Returns the steps taken.
pub(crate) fn step_interruptibly<F>(py: Python<'_>, step_while: F) -> PyResult<u64>
where
    F: FnOnce(&mut dyn FnMut(u64) -> bool) -> murmur::Result<u64>,
{
    let job = OnThisThread(step_while);
    let (taken, raised) = py.detach(move || {
        let step_while = job.into_inner();
        let mut raised: Option<PyErr> = None;
        let mut last = Instant::now();
        let mut go_on = |_done: u64| {
            if last.elapsed() < SIGNAL_EVERY {
                return true;
            }
            last = Instant::now();
            match Python::attach(|py| py.check_signals()) {
                Ok(()) => true,
                Err(e) => {
                    raised = Some(e);
                    false
                }
            }
        };
        (step_while(&mut go_on), raised)
    });
    let taken = taken.or_py()?;
    match raised {
        Some(e) => Err(e),
        None => Ok(taken),
    }
}

/// Whether this build of murmur carries its GPU kernels: `None`, or why not (then only the CPU
/// backend runs, and `import murmur` warns "murmur: CPU only: ...").
#[pyfunction]
fn kernels_missing() -> Option<String> {
    murmur::kernels().err()
}

/// Whether a CUDA GPU is usable now (a driver, a GPU, and this build's kernels).
#[pyfunction]
fn gpu_usable() -> bool {
    murmur::gpu_usable().is_ok()
}

/// Why no CUDA GPU is usable (`None` when one is).
#[pyfunction]
fn gpu_status() -> Option<String> {
    murmur::gpu_usable().err()
}

/// The native module `murmur._murmur` (the package `murmur` re-exports it).
#[pymodule]
fn _murmur(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<flock::Flock>()?;
    m.add_class::<fluid::Fluid>()?;
    m.add_class::<device::DeviceArray>()?;
    m.add("UnhealthyError", py.get_type::<UnhealthyError>())?;
    m.add("StaleArrayError", py.get_type::<StaleArrayError>())?;
    m.add_function(wrap_pyfunction!(kernels_missing, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_usable, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_status, m)?)?;
    m.add("RULE_NAMES", murmur::Rules::NAMES.to_vec())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
