//! `murmur.Flock`: `murmur::Flock` with its settings as keyword arguments, its state as NumPy
//! arrays ordered by id, and its GPU buffers as `murmur.DeviceArray`s.

use crate::device::{self, Owner};
use crate::{backend, rgb, step_interruptibly, OrPy};
use ndarray::{Array1, Array2};
use numpy::{IntoPyArray, PyArray1, PyArray2, PyArray3};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;

/// The keyword arguments other than rule parameters.
const KEYWORDS: &str = "n, seed, method, backend, cell_width_factor, x_split";

/// A flock of boids (Reynolds' rules) on the CPU or a CUDA GPU: ``murmur::Flock``.
///
/// ``Flock(n=100_000, seed=1, method="coherent", backend="auto", cell_width_factor=None,
/// x_split=None, **rules)``: ``n`` boids uniform in the cube ``[-scale, scale]^3`` (seeded by
/// ``seed``), velocities zero. ``method`` is the neighbour search (``naive``, ``scattered``,
/// ``coherent``, ``coherent-shared``); ``backend`` is ``auto`` (CUDA when usable, else the CPU),
/// ``cpu``, ``cuda`` or ``cuda:N``. The rule parameters (``murmur.RULE_NAMES``: radii and
/// ``scale`` in scene units, weights per step, ``dt`` in time units per step) default to the CIS
/// 565 values; an unknown name raises ``ValueError``. ``cell_width_factor`` and ``x_split`` set
/// the grid (default: picked from the density, as ``murmur flock run`` does).
#[pyclass(module = "murmur", unsendable)]
pub struct Flock {
    pub(crate) inner: murmur::Flock,
}

/// The rules `base` with the keyword arguments `kw` set (each a rule name).
fn rules_with(mut base: murmur::Rules, kw: Option<&Bound<'_, PyDict>>) -> PyResult<murmur::Rules> {
    for (k, v) in kw.into_iter().flatten() {
        let name: String = k.extract()?;
        let value: f32 = v.extract().map_err(|_| {
            PyValueError::new_err(format!("rule parameter {name}: expected a number, got {v}"))
        })?;
        let Some(field) = base.field_mut(&name) else {
            return Err(PyValueError::new_err(format!(
                "unknown rule parameter {name:?}: the rules are {} (the other keywords: {KEYWORDS})",
                murmur::Rules::NAMES.join(", ")
            )));
        };
        *field = value;
    }
    Ok(base)
}

/// A method name (`coherent`, ...) as murmur's `Method`.
fn method(name: &str) -> PyResult<murmur::Method> {
    murmur::Method::ALL
        .into_iter()
        .find(|m| m.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = murmur::Method::ALL.iter().map(|m| m.name()).collect();
            PyValueError::new_err(format!("unknown method {name:?}: use {}", names.join(", ")))
        })
}

/// The settings of the keyword arguments, over murmur's defaults.
fn settings(
    n: Option<usize>,
    seed: Option<u64>,
    method_name: Option<&str>,
    backend_name: &str,
    cell_width_factor: Option<f32>,
    x_split: Option<u32>,
    rules: Option<&Bound<'_, PyDict>>,
) -> PyResult<murmur::FlockSettings> {
    let d = murmur::FlockSettings::default();
    Ok(murmur::FlockSettings {
        n: n.unwrap_or(d.n),
        seed: seed.unwrap_or(d.seed),
        rules: rules_with(d.rules, rules)?,
        method: method_name.map(method).transpose()?.unwrap_or(d.method),
        cell_width_factor,
        x_split,
        backend: backend(backend_name)?,
    })
}

/// `(N, 3)` rows as a NumPy array.
fn rows(py: Python<'_>, v: Vec<[f32; 3]>) -> Bound<'_, PyArray2<f32>> {
    let n = v.len();
    Array2::from_shape_vec((n, 3), v.into_flattened())
        .expect("n rows of 3")
        .into_pyarray(py)
}

#[pymethods]
impl Flock {
    #[new]
    #[pyo3(signature = (n=None, seed=None, method=None, backend="auto", cell_width_factor=None, x_split=None, **rules))]
    fn new(
        n: Option<usize>,
        seed: Option<u64>,
        method: Option<&str>,
        backend: &str,
        cell_width_factor: Option<f32>,
        x_split: Option<u32>,
        rules: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Flock> {
        let s = settings(n, seed, method, backend, cell_width_factor, x_split, rules)?;
        Ok(Flock {
            inner: murmur::Flock::new(s).or_py()?,
        })
    }

    /// ``Flock.load(path, method="coherent", backend="auto", cell_width_factor=None,
    /// x_split=None, **rules)``: a flock from the ``.npz`` snapshot ``path`` (``pos``, ``vel``,
    /// ``id``, as ``save`` and ``murmur flock run --save`` write), stepped with these settings.
    /// The snapshot sets ``n``; a boid outside ``[-scale, scale]^3`` raises ``ValueError``, a
    /// missing file ``OSError``.
    #[staticmethod]
    #[pyo3(signature = (path, method=None, backend="auto", cell_width_factor=None, x_split=None, **rules))]
    fn load(
        path: PathBuf,
        method: Option<&str>,
        backend: &str,
        cell_width_factor: Option<f32>,
        x_split: Option<u32>,
        rules: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Flock> {
        for key in ["n", "seed"] {
            if rules.is_some_and(|r| r.contains(key).unwrap_or(false)) {
                return Err(PyValueError::new_err(format!(
                    "Flock.load takes no {key}: the snapshot sets the flock's boids"
                )));
            }
        }
        let s = settings(
            None,
            None,
            method,
            backend,
            cell_width_factor,
            x_split,
            rules,
        )?;
        Ok(Flock {
            inner: murmur::Flock::load(path, s).or_py()?,
        })
    }

    /// Advances ``k`` steps with the GIL released. Ctrl-C stops it between steps (the steps
    /// taken stay taken) and raises ``KeyboardInterrupt``. Returns the steps taken.
    #[pyo3(signature = (k=1))]
    fn step(&mut self, py: Python<'_>, k: u64) -> PyResult<u64> {
        let flock = &mut self.inner;
        step_interruptibly(py, move |go_on| flock.step_while(k, go_on))
    }

    /// Positions, scene units: a float32 array of shape (N, 3), row ``i`` the boid of id ``i``.
    /// With ``device=True`` (CUDA backend only), a ``DeviceArray`` (N, 3) float32 view of the
    /// GPU buffer instead, strides (16, 4) bytes, in the backend's internal (cell) order with
    /// ``id(device=True)`` beside it; valid until the next step.
    #[pyo3(signature = (device=false))]
    fn pos(slf: &Bound<'_, Self>, device: bool) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if device {
            let arr = slf.borrow_mut().inner.device_positions().or_py()?;
            return device::wrap(py, Owner::from(slf), arr, "positions");
        }
        let v = slf.borrow_mut().inner.positions().or_py()?;
        Ok(rows(py, v).into_any().unbind())
    }

    /// Velocities, scene units per time unit: float32 (N, 3), ordered by id. With
    /// ``device=True`` (CUDA only), a ``DeviceArray`` (N, 3) float32, strides (12, 4) bytes, in
    /// the order of ``pos(device=True)``; valid until the next step.
    #[pyo3(signature = (device=false))]
    fn vel(slf: &Bound<'_, Self>, device: bool) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if device {
            let arr = slf.borrow_mut().inner.device_velocities().or_py()?;
            return device::wrap(py, Owner::from(slf), arr, "velocities");
        }
        let v = slf.borrow_mut().inner.velocities().or_py()?;
        Ok(rows(py, v).into_any().unbind())
    }

    /// Ids: uint32 (N,). On the host, ordered by id (so ``0..N``). With ``device=True`` (CUDA
    /// only), a ``DeviceArray`` (N,) uint32, stride 16 bytes: the id of each row of
    /// ``pos(device=True)``, in the same internal order; valid until the next step.
    #[pyo3(signature = (device=false))]
    fn id(slf: &Bound<'_, Self>, device: bool) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if device {
            let arr = slf.borrow_mut().inner.device_ids().or_py()?;
            return device::wrap(py, Owner::from(slf), arr, "ids");
        }
        let state = slf.borrow_mut().inner.state().or_py()?;
        let ids: Bound<'_, PyArray1<u32>> = Array1::from(state.id).into_pyarray(py);
        Ok(ids.into_any().unbind())
    }

    /// Writes the state, ordered by id, to the ``.npz`` snapshot ``path`` (``pos`` (N, 3) f32,
    /// ``vel`` (N, 3) f32, ``id`` (N,) u32), whole or not at all (``OSError`` when it cannot).
    fn save(&mut self, path: PathBuf) -> PyResult<()> {
        self.inner.save(path).or_py()
    }

    /// The rule parameters, ``{name: value}`` in ``murmur.RULE_NAMES`` order (each value the
    /// shortest decimal that is the float32 murmur holds, so ``0.01`` reads ``0.01``).
    #[getter]
    fn rules<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let mut r = self.inner.rules();
        let d = PyDict::new(py);
        for name in murmur::Rules::NAMES {
            let v = *r.field_mut(name).expect("a rule name");
            d.set_item(name, v.to_string().parse::<f64>().unwrap_or(v as f64))?;
        }
        Ok(d)
    }

    /// Changes rule parameters between steps (``set_rules(rule1_scale=0.02, ...)``): checked
    /// first (``ValueError``, nothing changed); a new ``scale`` or larger radii regrid the
    /// flock.
    #[pyo3(signature = (**rules))]
    fn set_rules(&mut self, rules: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let r = rules_with(self.inner.rules(), rules)?;
        self.inner.set_rules(r).or_py()
    }

    /// Draws the flock into an (H, W, 3) uint8 image (on the GPU with the CUDA backend), seen by
    /// the camera ``murmur flock render`` starts from (the whole cube in view), turned by
    /// ``yaw`` and raised by ``pitch`` (radians) and ``distance`` away (scene units) where
    /// given. ``colour``: ``heading`` (hue from the direction of flight) or ``speed``.
    #[pyo3(signature = (width=640, height=480, colour="heading", yaw=None, pitch=None, distance=None))]
    #[allow(clippy::too_many_arguments)]
    fn render<'py>(
        &mut self,
        py: Python<'py>,
        width: u32,
        height: u32,
        colour: &str,
        yaw: Option<f32>,
        pitch: Option<f32>,
        distance: Option<f32>,
    ) -> PyResult<Bound<'py, PyArray3<u8>>> {
        let colour = match colour {
            "heading" => murmur::ColourMode::Heading,
            "speed" => murmur::ColourMode::Speed,
            _ => {
                return Err(PyValueError::new_err(format!(
                    "unknown colour {colour:?}: use heading or speed"
                )))
            }
        };
        let mut camera = self.inner.camera(width, height);
        camera.yaw = yaw.unwrap_or(camera.yaw);
        camera.pitch = pitch.unwrap_or(camera.pitch);
        camera.distance = distance.unwrap_or(camera.distance);
        let img = self.inner.render(&camera, colour).or_py()?;
        Ok(rgb(py, img.width(), img.height(), img.into_raw()))
    }

    /// Waits until every queued step has finished (the CUDA backend queues them).
    fn synchronize(&mut self) -> PyResult<()> {
        self.inner.synchronize().or_py()
    }

    /// The backend stepping it, e.g. ``"cpu (rayon, 8 threads)"`` or ``"cuda (NVIDIA H200)"``.
    #[getter]
    fn backend(&self) -> String {
        self.inner.describe()
    }

    /// With ``backend="auto"`` where CUDA was not usable: why (it runs on the CPU); else None.
    #[getter]
    fn fallback(&self) -> Option<String> {
        self.inner.fallback().map(str::to_string)
    }

    /// The neighbour search method's name.
    #[getter]
    fn method(&self) -> &'static str {
        self.inner.method().name()
    }

    /// Number of boids.
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "murmur.Flock(n={}, method={:?}, backend={:?})",
            self.inner.len(),
            self.inner.method().name(),
            self.inner.describe()
        )
    }
}

impl Flock {
    /// Whether `arr` (made by this flock) is current.
    pub(crate) fn is_current(&self, arr: &murmur::DeviceArray) -> bool {
        self.inner.is_current(arr)
    }
}

impl From<&Bound<'_, Flock>> for Owner {
    fn from(f: &Bound<'_, Flock>) -> Owner {
        Owner::Flock(f.clone().unbind())
    }
}
