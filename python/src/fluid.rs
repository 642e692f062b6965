//! `murmur.Fluid`: `murmur::Fluid` opened from a scene file or a dict (turned into the scene's
//! TOML text and parsed by murmur, so its errors name the key path), its fields as NumPy arrays,
//! its forces as a dict of arrays and its GPU fields as `murmur.DeviceArray`s.

use crate::device::{self, Owner};
use crate::{rgb, step_interruptibly, OrPy};
use murmur::look::{Quantity, ViewKind};
use ndarray::{s, Array1, Array2, Array4, Axis};
use numpy::{IntoPyArray, PyArray3};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use std::path::PathBuf;

/// A lattice Boltzmann fluid (D3Q27) on the CPU or a CUDA GPU: ``murmur::Fluid``.
///
/// ``Fluid(path, backend="auto")`` opens a scene file (``assets/fluid/*.toml``; the format is
/// ``docs/fluid/scenes.md``); ``Fluid.from_dict(scene)`` takes the same scene as a dict.
/// ``backend`` is ``auto`` (CUDA when usable, else the CPU), ``cpu``, ``cuda`` or ``cuda:N``.
/// Host arrays are in SI units (m/s, kg/m^3, 1/s) with shape ``(nz, ny, nx, ...)``, x
/// fastest; device arrays are in lattice units.
#[pyclass(module = "murmur", unsendable)]
pub struct Fluid {
    pub(crate) inner: murmur::Fluid,
}

/// `v` (a value of the scene dict at key path `at`) as a TOML value; `None` for Python's None
/// (the key is left out).
fn to_toml(v: &Bound<'_, PyAny>, at: &str) -> PyResult<Option<toml::Value>> {
    use toml::Value;
    let bad = |what: String| PyValueError::new_err(format!("scene key {at}: {what}"));
    if v.is_none() {
        return Ok(None);
    }
    if v.is_instance_of::<PyBool>() {
        return Ok(Some(Value::Boolean(v.extract()?)));
    }
    if v.is_instance_of::<PyInt>() {
        let i: i64 = v
            .extract()
            .map_err(|_| bad(format!("{v} does not fit a 64-bit integer")))?;
        return Ok(Some(Value::Integer(i)));
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(Some(Value::Float(v.extract()?)));
    }
    if v.is_instance_of::<PyString>() {
        return Ok(Some(Value::String(v.extract()?)));
    }
    if let Ok(d) = v.cast::<PyDict>() {
        return Ok(Some(Value::Table(to_table(d, Some(at))?)));
    }
    if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for (i, item) in v.try_iter()?.enumerate() {
            if let Some(t) = to_toml(&item?, &format!("{at}[{i}]"))? {
                items.push(t);
            }
        }
        return Ok(Some(Value::Array(items)));
    }
    // NumPy scalars and other numbers: integers through __index__, the rest through __float__.
    if let Ok(i) = v.extract::<i64>() {
        return Ok(Some(Value::Integer(i)));
    }
    if let Ok(f) = v.extract::<f64>() {
        return Ok(Some(Value::Float(f)));
    }
    Err(bad(format!(
        "a {} cannot be a scene value (use a number, a string, a bool, a list or a dict)",
        v.get_type().name()?
    )))
}

/// A dict (at key path `at`, `None` at the top) as a TOML table; keys must be strings.
fn to_table(d: &Bound<'_, PyDict>, at: Option<&str>) -> PyResult<toml::Table> {
    let mut t = toml::Table::new();
    for (k, v) in d.iter() {
        let Ok(key) = k.extract::<String>() else {
            return Err(PyValueError::new_err(format!(
                "scene key {}{k:?}: keys must be strings",
                at.map_or(String::new(), |a| format!("{a}."))
            )));
        };
        let path = at.map_or_else(|| key.clone(), |a| format!("{a}.{key}"));
        if let Some(value) = to_toml(&v, &path)? {
            t.insert(key, value);
        }
    }
    Ok(t)
}

/// murmur's scene error without its ` (line N)`: the TOML text was written from the dict, so
/// only the key path (`lattice.velocty`) means something to the caller.
fn without_line(e: &str) -> &str {
    match e.rsplit_once(" (line ") {
        Some((head, n))
            if n.strip_suffix(')')
                .is_some_and(|n| n.parse::<u32>().is_ok()) =>
        {
            head
        }
        _ => e,
    }
}

/// A quantity's name (`speed`, ...) as murmur's `Quantity`.
fn quantity(name: &str) -> PyResult<Quantity> {
    Quantity::ALL
        .into_iter()
        .find(|q| q.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = Quantity::ALL.iter().map(|q| q.name()).collect();
            PyValueError::new_err(format!(
                "unknown quantity {name:?}: use {}",
                names.join(", ")
            ))
        })
}

/// Per-solid force rows as NumPy arrays.
fn forces_dict<'py>(py: Python<'py>, f: &murmur::SolidForces) -> PyResult<Bound<'py, PyDict>> {
    let rows = |v: &[[f64; 3]]| {
        Array2::from_shape_vec((v.len(), 3), v.to_vec().into_flattened()).expect("rows of 3")
    };
    let d = PyDict::new(py);
    d.set_item("step", Array1::from(f.step.clone()).into_pyarray(py))?;
    d.set_item("time", Array1::from(f.time_s.clone()).into_pyarray(py))?;
    d.set_item("force", rows(&f.force_n).into_pyarray(py))?;
    d.set_item("torque", rows(&f.torque_nm).into_pyarray(py))?;
    d.set_item("cd", Array1::from(f.cd.clone()).into_pyarray(py))?;
    d.set_item("cl", Array1::from(f.cl.clone()).into_pyarray(py))?;
    Ok(d)
}

impl Fluid {
    /// Whether `arr` (made by this fluid) is current.
    pub(crate) fn is_current(&self, arr: &murmur::DeviceArray) -> bool {
        self.inner.is_current(arr)
    }

    /// The fields in lattice units, as (4, nz, ny, nx): density, then ux, uy, uz.
    fn lattice_fields(&mut self) -> PyResult<Array4<f32>> {
        let f = self.inner.fields().or_py()?;
        let [nx, ny, nz] = self.inner.shape();
        Array4::from_shape_vec((4, nz, ny, nx), f.data)
            .map_err(|e| PyRuntimeError::new_err(format!("the fields' size: {e}")))
    }
}

/// `device=True` with `lattice=False` asks for what no device array is.
fn lattice_only(device: bool, lattice: Option<bool>) -> PyResult<()> {
    if device && lattice == Some(false) {
        return Err(PyValueError::new_err(
            "device arrays are in lattice units: pass lattice=True or leave lattice out",
        ));
    }
    Ok(())
}

#[pymethods]
impl Fluid {
    #[new]
    #[pyo3(signature = (path, backend="auto"))]
    fn new(path: PathBuf, backend: &str) -> PyResult<Fluid> {
        let b = crate::backend(backend)?;
        Ok(Fluid {
            inner: murmur::Fluid::from_file(path, b).or_py()?,
        })
    }

    /// ``Fluid.from_dict(scene, backend="auto", dir=None)``: the scene as a dict, the tables of
    /// a scene file as nested dicts and lists (``{"name": ..., "lattice": {...}, "solids":
    /// [{...}]}``; None values are left out). A bad key or value raises ``ValueError`` naming
    /// its key path. Mesh paths are relative to ``dir`` (default: the working directory).
    #[staticmethod]
    #[pyo3(signature = (scene, backend="auto", dir=None))]
    fn from_dict(
        scene: &Bound<'_, PyDict>,
        backend: &str,
        dir: Option<PathBuf>,
    ) -> PyResult<Fluid> {
        let b = crate::backend(backend)?;
        let table = to_table(scene, None)?;
        let text = toml::to_string(&table)
            .map_err(|e| PyValueError::new_err(format!("scene: cannot write it as TOML: {e}")))?;
        let mut file = murmur::scene::SceneFile::parse(&text)
            .map_err(|e| PyValueError::new_err(format!("scene: {}", without_line(&e))))?;
        file.dir = match dir {
            Some(d) => d,
            None => std::env::current_dir()?,
        };
        Ok(Fluid {
            inner: murmur::Fluid::from_scene(file, b).or_py()?,
        })
    }

    /// Advances ``k`` steps with the GIL released: the scene's inlet ramp, its health checks
    /// (``murmur.UnhealthyError``) and its forces recorded. Ctrl-C stops it between steps (the
    /// steps taken stay taken; health and forces are checked where it stopped) and raises
    /// ``KeyboardInterrupt``. Returns the steps taken.
    #[pyo3(signature = (k=1))]
    fn step(&mut self, py: Python<'_>, k: u64) -> PyResult<u64> {
        let fluid = &mut self.inner;
        step_interruptibly(py, move |go_on| fluid.step_while(k, go_on))
    }

    /// Velocity: float32 (nz, ny, nx, 3), m/s (``lattice=True``: cells per step); zero inside
    /// walls and solids. With ``device=True`` (CUDA only), a ``DeviceArray`` of the same shape
    /// in lattice units, strides (4 nx ny, 4 nx, 4, 4 n) bytes (n = nx ny nz: each component a
    /// plane), valid until the next step.
    #[pyo3(signature = (device=false, lattice=None))]
    fn velocity(slf: &Bound<'_, Self>, device: bool, lattice: Option<bool>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        lattice_only(device, lattice)?;
        if device {
            let arr = slf.borrow_mut().inner.device_velocity().or_py()?;
            return device::wrap(py, Owner::Fluid(slf.clone().unbind()), arr, "velocity");
        }
        let mut this = slf.borrow_mut();
        let a = if lattice == Some(true) {
            let f = this.lattice_fields()?;
            f.slice(s![1..4, .., .., ..])
                .permuted_axes([1, 2, 3, 0])
                .as_standard_layout()
                .into_owned()
        } else {
            this.inner.velocity().or_py()?
        };
        Ok(a.into_pyarray(py).into_any().unbind())
    }

    /// Density: float32 (nz, ny, nx), kg/m^3 (``lattice=True``: 1 at rest). With
    /// ``device=True`` (CUDA only), a contiguous ``DeviceArray`` in lattice units, valid until
    /// the next step.
    #[pyo3(signature = (device=false, lattice=None))]
    fn density(slf: &Bound<'_, Self>, device: bool, lattice: Option<bool>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        lattice_only(device, lattice)?;
        if device {
            let arr = slf.borrow_mut().inner.device_density().or_py()?;
            return device::wrap(py, Owner::Fluid(slf.clone().unbind()), arr, "density");
        }
        let mut this = slf.borrow_mut();
        let a = if lattice == Some(true) {
            this.lattice_fields()?.index_axis_move(Axis(0), 0)
        } else {
            this.inner.density().or_py()?
        };
        Ok(a.into_pyarray(py).into_any().unbind())
    }

    /// Vorticity ``curl u``: float32 (nz, ny, nx, 3), 1/s (central differences inside the
    /// fluid, one-sided next to walls, zero in non-fluid cells), as ``murmur fluid run --out``
    /// writes it.
    fn vorticity(&mut self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let a = self.inner.vorticity().or_py()?;
        Ok(a.into_pyarray(py).into_any().unbind())
    }

    /// The forces on each immersed solid since the start, ``{name: {"step", "time", "force",
    /// "torque", "cd", "cl"}}``: one row per step murmur recorded (``murmur::SolidForces``);
    /// ``step`` the step, ``time`` s, ``force`` (rows, 3) N, ``torque`` (rows, 3) N m, ``cd``
    /// and ``cl`` the drag and lift coefficients. Empty without solids.
    fn forces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for f in self.inner.forces() {
            d.set_item(&f.name, forces_dict(py, f)?)?;
        }
        Ok(d)
    }

    /// Draws a frame into an (H, W, 3) uint8 image (on the GPU with the CUDA backend). Unset
    /// arguments come from the scene's ``[view]`` table, else a speed slice through the middle
    /// of z: ``view`` ``slice`` or ``volume``; ``quantity`` ``speed``, ``ux``, ``uy``, ``uz``,
    /// ``vorticity``, ``q``, ``pressure``; ``axis`` ``x``, ``y`` or ``z``; ``at`` the slice's
    /// cell index along it; ``range`` ``(lo, hi)`` the colour range in lattice units.
    #[pyo3(signature = (width=640, height=480, quantity=None, axis=None, at=None, range=None, view=None))]
    #[allow(clippy::too_many_arguments)]
    fn render<'py>(
        &mut self,
        py: Python<'py>,
        width: u32,
        height: u32,
        quantity: Option<&str>,
        axis: Option<&str>,
        at: Option<u32>,
        range: Option<(f32, f32)>,
        view: Option<&str>,
    ) -> PyResult<Bound<'py, PyArray3<u8>>> {
        let mut look = self.inner.look().or_py()?;
        if let Some(v) = view {
            look.kind = match v {
                "slice" => ViewKind::Slice,
                "volume" => ViewKind::Volume,
                "smoke" => ViewKind::Smoke,
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "unknown view {v:?}: use slice or volume"
                    )))
                }
            };
            if look.kind == ViewKind::Volume
                && quantity.is_none()
                && self.inner.scene().view.quantity.is_none()
            {
                look.quantity = Quantity::Q;
            }
        }
        if let Some(q) = quantity {
            look.quantity = self::quantity(q)?;
        }
        if let Some(a) = axis {
            let a = match a {
                "x" => 0,
                "y" => 1,
                "z" => 2,
                _ => return Err(PyValueError::new_err(format!("axis {a:?}: use x, y or z"))),
            };
            if a != look.axis {
                look.at = None;
            }
            look.axis = a;
        }
        if let Some(c) = at {
            let n = self.inner.shape()[look.axis];
            if c as usize >= n {
                return Err(PyValueError::new_err(format!(
                    "at={c} is outside the lattice: it has cells 0..{} along {}",
                    n - 1,
                    ["x", "y", "z"][look.axis]
                )));
            }
            look.at = Some(c);
        }
        if let Some((lo, hi)) = range {
            if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                return Err(PyValueError::new_err(format!(
                    "range=({lo}, {hi}): expected two finite numbers, lo < hi"
                )));
            }
            look.range = Some((lo, hi));
        }
        let img = self.inner.render(&look, width, height).or_py()?;
        Ok(rgb(py, img.width(), img.height(), img.into_raw()))
    }

    /// Scales every inlet's velocity by ``scale`` (0..4; 1: the scene's) from the next step on,
    /// replacing the scene's ramp.
    fn set_inlet_scale(&mut self, scale: f32) -> PyResult<()> {
        self.inner.set_inlet_scale(scale).or_py()
    }

    /// The lattice's shape as ``(nz, ny, nx)``: the shape of ``density()`` (``velocity()`` adds
    /// a last axis of 3).
    #[getter]
    fn shape(&self) -> (usize, usize, usize) {
        let [nx, ny, nz] = self.inner.shape();
        (nz, ny, nx)
    }

    /// The lattice's units: ``{"dx": cell size m, "dt": time step s, "rho0": reference density
    /// kg/m^3}``.
    #[getter]
    fn units<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let u = self.inner.units();
        let d = PyDict::new(py);
        d.set_item("dx", u.dx)?;
        d.set_item("dt", u.dt)?;
        d.set_item("rho0", u.rho0)?;
        Ok(d)
    }

    /// Simulated time since the start, s.
    #[getter]
    fn time(&self) -> f64 {
        self.inner.time()
    }

    /// Steps taken since the start.
    #[getter]
    fn step_count(&self) -> u64 {
        self.inner.step_count()
    }

    /// The scene's name.
    #[getter]
    fn name(&self) -> String {
        self.inner.scene().name.clone()
    }

    /// Warnings the scene raised when it was built (marginal stability, ...).
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.inner.warnings().to_vec()
    }

    /// The backend, e.g. ``"cpu (rayon, 8 threads)"`` or ``"cuda (NVIDIA H200)"``.
    #[getter]
    fn backend(&self) -> String {
        self.inner.describe()
    }

    /// With ``backend="auto"`` where CUDA was not usable: why (it runs on the CPU); else None.
    #[getter]
    fn fallback(&self) -> Option<String> {
        self.inner.fallback().map(str::to_string)
    }

    /// Where the kernel knobs came from, as ``murmur fluid run`` prints it.
    #[getter]
    fn tuning(&self) -> String {
        self.inner.tuning().to_string()
    }

    fn __repr__(&self) -> String {
        let [nx, ny, nz] = self.inner.shape();
        format!(
            "murmur.Fluid({:?}, {nx} x {ny} x {nz} cells, step {}, backend={:?})",
            self.inner.scene().name,
            self.inner.step_count(),
            self.inner.describe()
        )
    }
}
