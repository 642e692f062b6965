//! [`Fluid`]: a scene (a file or a [`SceneFile`] built in code) opened on a backend, stepped
//! with its health checks, inlet ramp and force history, its fields read back as arrays, drawn
//! into an image, or left on the GPU as [`DeviceArray`]s.

use super::device::{self, DType, DeviceArray};
use super::error::{Error, ErrorKind, Result};
use super::Backend;
use crate::fluid::derived::{Derived, LATTICE_PERIODIC};
use crate::fluid::driver::check_health;
use crate::fluid::forces::{ForceRow, ForceSeries};
use crate::fluid::scene::{self, Scene, SceneFile};
use crate::fluid::{Fields, FluidBackend};
use crate::view::fluid::Look;
use murmur_common::lbm::health::Bounds;
use murmur_common::lbm::Units;
use ndarray::{Array3, Array4};
use std::path::Path;

/// The forces on one immersed solid, one row per step since the start (the backend computes
/// them every step; they are taken from it every `forces.every` steps of the scene and at the
/// end of each [`Fluid::step`]), SI units.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolidForces {
    /// The solid's name in the scene (`solid0`, ... when unnamed).
    pub name: String,
    /// Step of each row.
    pub step: Vec<u64>,
    /// Simulated time of each row, s.
    pub time_s: Vec<f64>,
    /// Force of the fluid on the solid, N.
    pub force_n: Vec<[f64; 3]>,
    /// Torque about the solid's centre, N m.
    pub torque_nm: Vec<[f64; 3]>,
    /// Drag coefficient `2 F.drag_axis / (rho U^2 A)`.
    pub cd: Vec<f64>,
    /// Lift coefficient `2 F.lift_axis / (rho U^2 A)`.
    pub cl: Vec<f64>,
}

/// A fluid simulation: a D3Q27 lattice Boltzmann solver on a scene's lattice, with its walls,
/// inlets, outlets and immersed solids. The CPU backend and the CUDA backend store the same
/// bits after every step.
pub struct Fluid {
    backend: Box<dyn FluidBackend>,
    scene: Scene,
    bounds: Bounds,
    forces: Option<ForceSeries>,
    history: Vec<SolidForces>,
    /// Inlet scale set by the caller (replaces the scene's ramp).
    inlet: Option<f32>,
    fallback: Option<String>,
    tuning: String,
    /// CUDA device ordinal (0 on the CPU).
    device: usize,
    owner: u64,
    generation: u64,
}

impl Fluid {
    /// Opens the scene file `path` (`assets/fluid/*.toml`) on `backend`, with the knobs a
    /// `murmur fluid run` without knob flags takes (the tuning cache's entry, else the device
    /// defaults).
    pub fn from_file(path: impl AsRef<Path>, backend: Backend) -> Result<Fluid> {
        let path = path.as_ref();
        if let Err(e) = std::fs::metadata(path) {
            return Err(Error::new(
                ErrorKind::Io,
                format!("cannot read scene {}: {e}", path.display()),
            ));
        }
        let file = SceneFile::load(path)?;
        Fluid::open(file, Some(path), backend)
    }

    /// Opens a scene built in code (or parsed with [`SceneFile::parse`]) on `backend`, with the
    /// device defaults' knobs. Mesh paths are relative to `scene.dir`.
    pub fn from_scene(scene: SceneFile, backend: Backend) -> Result<Fluid> {
        Fluid::open(scene, None, backend)
    }

    fn open(file: SceneFile, path: Option<&Path>, backend: Backend) -> Result<Fluid> {
        let (choice, device) = backend.choice();
        let name = path.map_or_else(|| file.name.clone(), |p| p.display().to_string());
        let in_scene = scene::in_scene(Path::new(&name));
        if choice == super::BackendChoice::Cpu {
            scene::check_cpu_memory(&file, Path::new(&name), 4)?;
        }
        let mut built = file.build().map_err(in_scene)?;
        let (backend, fallback, tuning) =
            crate::fluid::run::open::open_picked_on(choice, device, &mut built, path)?;
        let forces = crate::fluid::sink::force_series(&built, None)?;
        let mut fluid = Fluid::assemble(built, backend, fallback, tuning, forces);
        fluid.device = device;
        Ok(fluid)
    }

    fn assemble(
        built: Scene,
        backend: Box<dyn FluidBackend>,
        fallback: Option<String>,
        tuning: String,
        forces: Option<ForceSeries>,
    ) -> Fluid {
        let history = built
            .setup
            .force_solids()
            .map(|s| SolidForces {
                name: s.name.clone(),
                ..SolidForces::default()
            })
            .collect();
        Fluid {
            backend,
            bounds: built.bounds(),
            scene: built,
            forces,
            history,
            inlet: None,
            fallback,
            tuning,
            device: 0,
            owner: device::new_owner(),
            generation: 0,
        }
    }

    /// A built scene (its knobs set on its setup) opened as `choice` says on GPU `device`:
    /// `murmur fluid run`'s single-device path, which steps it through
    /// [`Fluid::backend_mut`] with its own sink. It records no forces of its own (the run's
    /// sink does) and its tuning line is empty until [`Fluid::reopened`].
    #[doc(hidden)]
    pub fn from_built(
        built: Scene,
        choice: super::BackendChoice,
        device: usize,
    ) -> std::result::Result<Fluid, crate::fluid::FluidError> {
        let (backend, fallback) =
            crate::fluid::driver::open_backend_on(choice, device, &built.setup)?;
        let mut fluid = Fluid::assemble(built, backend, fallback, String::new(), None);
        fluid.device = device;
        Ok(fluid)
    }

    /// The same fluid with `knobs` set on its setup (the backend opened again when they
    /// differ from its own), `tuning` the line saying where they came from.
    #[doc(hidden)]
    pub fn reopened(
        mut self,
        knobs: crate::fluid::tuning::Knobs,
        tuning: String,
    ) -> std::result::Result<Fluid, crate::fluid::FluidError> {
        self.backend = crate::fluid::run::open::reopen_on(
            self.backend,
            self.device,
            &mut self.scene.setup,
            knobs,
        )?;
        self.tuning = tuning;
        self.generation += 1;
        Ok(self)
    }

    /// The built scene it runs (lattice units, setup, warnings).
    #[doc(hidden)]
    pub fn built(&self) -> &Scene {
        &self.scene
    }

    /// The backend (`fluid run` prints its description and storage).
    #[doc(hidden)]
    pub fn backend(&self) -> &dyn FluidBackend {
        self.backend.as_ref()
    }

    /// The backend stepping it (`fluid run`'s driver takes it); device arrays made before are
    /// stale after.
    #[doc(hidden)]
    pub fn backend_mut(&mut self) -> &mut dyn FluidBackend {
        self.generation += 1;
        self.backend.as_mut()
    }

    /// The backend, e.g. `"cpu (rayon, 8 threads)"` or `"cuda (NVIDIA H200)"`.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }

    /// With `Backend::Auto` where CUDA was not usable: why, and that it runs on the CPU.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Where the knobs (layout, block, spreading) came from, as `murmur fluid run` prints it.
    pub fn tuning(&self) -> &str {
        &self.tuning
    }

    /// Warnings the scene raised when it was built (marginal stability, ...).
    pub fn warnings(&self) -> &[String] {
        &self.scene.warnings
    }

    /// The scene it runs.
    pub fn scene(&self) -> &SceneFile {
        &self.scene.file
    }

    /// Cells along x, y, z.
    pub fn shape(&self) -> [usize; 3] {
        let l = self.backend.lattice();
        [l.nx as usize, l.ny as usize, l.nz as usize]
    }

    /// The lattice's units: cell size `dx` (m), time step `dt` (s), reference density `rho0`
    /// (kg/m^3).
    pub fn units(&self) -> Units {
        self.scene.units
    }

    /// Steps taken since the start.
    pub fn step_count(&self) -> u64 {
        self.backend.step_count()
    }

    /// Simulated time since the start, s.
    pub fn time(&self) -> f64 {
        self.step_count() as f64 * self.scene.units.dt
    }

    /// Advances `k` steps: the scene's inlet ramp, its health check every `run.check_every`
    /// steps and after the last, its forces recorded every `forces.every` steps and after the
    /// last. A flow that leaves its bounds stops with [`ErrorKind::Unhealthy`].
    pub fn step(&mut self, k: u64) -> Result<()> {
        self.step_while(k, |_| true).map(drop)
    }

    /// [`Fluid::step`] that asks `go_on(done)` before each step after the first and stops when
    /// it says false (health and forces are checked and recorded where it stops). Returns the
    /// steps taken.
    pub fn step_while(&mut self, k: u64, mut go_on: impl FnMut(u64) -> bool) -> Result<u64> {
        self.generation += 1;
        let every = self.scene.file.run.check_every;
        let forces_every = self.scene.forces.every;
        let mut done = 0;
        while done < k {
            if done > 0 && !go_on(done) {
                break;
            }
            let step = self.backend.step_count() + 1;
            let scale = match self.inlet {
                Some(s) => Some(s),
                None if self.scene.inlet.varies() => Some(self.scene.inlet.scale(step)),
                None => None,
            };
            if let Some(s) = scale {
                self.backend.set_inlet_scale(s);
            }
            self.backend.step()?;
            done += 1;
            if every > 0 && step.is_multiple_of(every) && done < k {
                check_health(self.backend.as_mut(), &self.bounds, every, None)?;
            }
            if forces_every > 0 && step.is_multiple_of(forces_every) {
                self.record_forces()?;
            }
        }
        if done > 0 {
            check_health(self.backend.as_mut(), &self.bounds, every, None)?;
            self.record_forces()?;
        }
        Ok(done)
    }

    fn record_forces(&mut self) -> Result<()> {
        let rows = self.backend.take_forces()?;
        let Some(series) = self.forces.as_mut() else {
            return Ok(());
        };
        if rows.is_empty() {
            return Ok(());
        }
        series.record(&rows)?;
        for s in &rows {
            let r: ForceRow = series.row(s)?;
            let h = &mut self.history[r.solid];
            h.step.push(r.step);
            h.time_s.push(r.time_s);
            h.force_n.push(r.force);
            h.torque_nm.push(r.torque);
            h.cd.push(r.cd);
            h.cl.push(r.cl);
        }
        Ok(())
    }

    /// Scales every inlet's velocity of the scene by `scale` from the next step on (1: the
    /// scene's inlet velocity), replacing the scene's ramp.
    pub fn set_inlet_scale(&mut self, scale: f32) -> Result<()> {
        if !(scale.is_finite() && (0.0..=4.0).contains(&scale)) {
            return Err(Error::invalid(format!(
                "inlet scale {scale} is outside 0..4 (1: the scene's inlet velocity)"
            )));
        }
        self.inlet = Some(scale);
        Ok(())
    }

    /// The fields in lattice units: density (1 at rest) and velocity (cells per step), as the
    /// backend computes them.
    pub fn fields(&mut self) -> Result<Fields> {
        Ok(self.backend.fields()?)
    }

    /// Velocity, m/s: shape (nz, ny, nx, 3), x fastest; zero inside walls and solids' cells.
    pub fn velocity(&mut self) -> Result<Array4<f32>> {
        let f = self.fields()?;
        let per = self.scene.units.velocity_to_si(1.0) as f32;
        let [nx, ny, nz] = self.shape();
        let n = f.n();
        Ok(Array4::from_shape_fn((nz, ny, nx, 3), |(z, y, x, a)| {
            f.data[(a + 1) * n + x + nx * (y + ny * z)] * per
        }))
    }

    /// Density, kg/m^3: shape (nz, ny, nx).
    pub fn density(&mut self) -> Result<Array3<f32>> {
        let f = self.fields()?;
        let u = self.scene.units;
        let [nx, ny, nz] = self.shape();
        Ok(Array3::from_shape_fn((nz, ny, nx), |(z, y, x)| {
            u.density_to_si(f.data[x + nx * (y + ny * z)] as f64) as f32
        }))
    }

    /// Vorticity `curl u`, 1/s: shape (nz, ny, nx, 3), from the velocity by finite differences
    /// (central inside the fluid, one-sided next to walls; zero in non-fluid cells), as `murmur
    /// fluid run --out` writes it.
    pub fn vorticity(&mut self) -> Result<Array4<f32>> {
        let f = self.fields()?;
        let d = Derived::compute(
            &f,
            &self.scene.setup.flags,
            LATTICE_PERIODIC,
            &self.scene.units,
        )?;
        let [nx, ny, nz] = self.shape();
        Array4::from_shape_vec((nz, ny, nx, 3), d.vorticity)
            .map_err(|e| Error::invalid(e.to_string()))
    }

    /// The forces on each immersed solid since the start (empty without solids).
    pub fn forces(&self) -> &[SolidForces] {
        &self.history
    }

    /// The look `murmur fluid render` starts from: the scene's `[view]` table over the
    /// default (a speed slice through the middle of z).
    pub fn look(&self) -> Result<Look> {
        Ok(Look::default().with_scene(&self.scene)?)
    }

    /// Draws `look` (a slice or a volume; smoke needs `murmur fluid render`) at `width` x
    /// `height` pixels, the colours over the look's range (by default from the scene's velocity
    /// and length): on the GPU by the CUDA backend, one copy back.
    pub fn render(&mut self, look: &Look, width: u32, height: u32) -> Result<image::RgbaImage> {
        use murmur_common::render::fluid::ViewKind;
        if look.kind == ViewKind::Smoke {
            return Err(Error::invalid(
                "smoke frames advect the smoke as they go: use `murmur fluid render`",
            ));
        }
        if width == 0 || height == 0 || width > 8192 || height > 8192 {
            return Err(Error::invalid(format!(
                "a frame of {width} x {height} pixels: each side must be 1..8192"
            )));
        }
        let l = self.backend.lattice();
        let camera = look.camera(l, width, height);
        let frame = look.frame(
            &camera,
            l,
            look.range_for(&self.scene),
            murmur_common::render::BACKGROUND,
        );
        let mut rgba = vec![0u8; width as usize * height as usize * 4];
        let hooks = self
            .backend
            .view_hooks()
            .ok_or_else(|| Error::new(ErrorKind::Device, "this backend does not draw frames"))?;
        hooks.render_into(
            &frame,
            crate::view::fluid::SOLID_RADIUS,
            crate::fluid::Points::NONE,
            &mut rgba,
        )?;
        image::RgbaImage::from_raw(width, height, rgba)
            .ok_or_else(|| Error::invalid("the frame's size does not match its pixels"))
    }

    /// Whether `array` (from this fluid) still shows its current state.
    pub fn is_current(&self, array: &DeviceArray) -> bool {
        array.current(self.owner, self.generation)
    }

    /// The velocity where the CUDA backend computed it (None on the CPU), lattice units (cells
    /// per step; times `dx / dt` for m/s): shape (nz, ny, nx, 3) f32, strides (4 nx ny, 4 nx,
    /// 4, 4 n) bytes (the components are planes of `n` cells). Valid until the next step.
    pub fn device_velocity(&mut self) -> Result<Option<DeviceArray>> {
        let [nx, ny, nz] = self.shape();
        let n = nx * ny * nz;
        self.device_field(
            4 * n,
            vec![nz, ny, nx, 3],
            vec![4 * nx * ny, 4 * nx, 4, 4 * n],
        )
    }

    /// The density where the CUDA backend computed it (None on the CPU), lattice units (1 at
    /// rest; times `rho0` for kg/m^3): shape (nz, ny, nx) f32, contiguous.
    pub fn device_density(&mut self) -> Result<Option<DeviceArray>> {
        let [nx, ny, nz] = self.shape();
        self.device_field(0, vec![nz, ny, nx], vec![4 * nx * ny, 4 * nx, 4])
    }

    fn device_field(
        &mut self,
        offset: usize,
        shape: Vec<usize>,
        strides: Vec<usize>,
    ) -> Result<Option<DeviceArray>> {
        let Some(buffer) = self.backend.device_fields()? else {
            return Ok(None);
        };
        Ok(Some(DeviceArray::new(
            buffer,
            offset,
            shape,
            strides,
            DType::F32,
            (self.owner, self.generation),
        )))
    }
}
