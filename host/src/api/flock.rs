//! [`Flock`]: a Reynolds flock stepped on the CPU or a GPU, its state read back by id, saved as
//! a snapshot, drawn into an image, or left on the GPU as [`DeviceArray`]s.

use super::device::{self, DType, DeviceArray};
use super::error::{Error, Result};
use super::Backend;
use crate::flock::config::{FlockConfig, SimConfig};
use crate::flock::driver::{self, Start};
use crate::flock::{snapshot, FlockBackend, FlockState};
use murmur_common::render::{Camera, ColourMode, BACKGROUND};
use std::path::Path;

pub use crate::flock::Method;
/// The flocking rules' parameters (radii and `scale` in scene units, weights per step, `dt` in
/// time units per step); [`Rules::CIS565`] is the default.
pub use murmur_common::flock::FlockParams as Rules;

/// What a [`Flock`] is made of: its size, start, rules, method and backend. `Default` is the
/// CLI's default flock (100,000 boids, seed 1, the CIS 565 rules, `coherent`, `Backend::Auto`).
#[derive(Clone, Debug, PartialEq)]
pub struct FlockSettings {
    /// Number of boids (>= 1).
    pub n: usize,
    /// Seed of the random start: positions uniform in `[-scale, scale]^3`, velocities zero.
    pub seed: u64,
    /// The rules.
    pub rules: Rules,
    /// The neighbour search (all give the same flock up to float rounding; see `murmur flock
    /// run --help`).
    pub method: Method,
    /// Grid cell width as a multiple of the largest rule distance; `None`: picked from the
    /// density, as `murmur flock run` does.
    pub cell_width_factor: Option<f32>,
    /// Cells along x this many times narrower than along y and z; `None`: picked with the
    /// cell width.
    pub x_split: Option<u32>,
    /// Where it runs.
    pub backend: Backend,
}

impl Default for FlockSettings {
    fn default() -> FlockSettings {
        let sim = SimConfig::default();
        FlockSettings {
            n: sim.n as usize,
            seed: sim.seed,
            rules: Rules::CIS565,
            method: sim.method,
            cell_width_factor: None,
            x_split: None,
            backend: Backend::Auto,
        }
    }
}

impl FlockSettings {
    /// The settings of a flock configuration file (`assets/flock/*.toml`: `[params]` and
    /// `[sim]`), on `Backend::Auto`.
    pub fn from_file(path: impl AsRef<Path>) -> Result<FlockSettings> {
        let path = path.as_ref();
        let c = FlockConfig::load(path)?;
        let grid = FlockConfig::sets_grid(path)?;
        Ok(FlockSettings {
            n: c.sim.n as usize,
            seed: c.sim.seed,
            rules: c.params,
            method: c.sim.method,
            cell_width_factor: grid.then_some(c.sim.cell_width_factor),
            x_split: grid.then_some(c.sim.x_split),
            backend: Backend::Auto,
        })
    }

    /// The configuration the CLI would run: the defaults of `[sim]` with these values, the
    /// grid picked from the density unless given.
    fn config(&self, n: usize) -> FlockConfig {
        let mut c = FlockConfig {
            params: self.rules,
            sim: SimConfig {
                n: n as u64,
                seed: self.seed,
                method: self.method,
                ..SimConfig::default()
            },
        };
        match (self.cell_width_factor, self.x_split) {
            (None, None) => crate::flock::cli::pick_grid(&mut c),
            (w, x) => {
                c.sim.cell_width_factor = w.unwrap_or(c.sim.cell_width_factor);
                c.sim.x_split = x.unwrap_or(c.sim.x_split);
            }
        }
        c
    }
}

/// A flock: `N` boids in the cube `[-scale, scale]^3` (wrapping at its faces), stepped by the
/// rules of [`Rules`]. Every backend and method computes the same rule math
/// (`murmur_common::flock`); the CPU backend is the reference.
pub struct Flock {
    backend: Box<dyn FlockBackend>,
    settings: crate::flock::FlockSettings,
    fallback: Option<String>,
    owner: u64,
    generation: u64,
}

impl Flock {
    /// A random flock of `settings.n` boids (generated on the GPU by the CUDA backend).
    pub fn new(settings: FlockSettings) -> Result<Flock> {
        let start = Start::Random {
            n: settings.n,
            seed: settings.seed,
        };
        Flock::open(&settings, start)
    }

    /// A flock from a snapshot (`.npz` with `pos`, `vel`, `id`, as [`Flock::save`] and `murmur
    /// flock run --save` write), stepped with `settings` (its `n` and `seed` are not used).
    pub fn load(path: impl AsRef<Path>, settings: FlockSettings) -> Result<Flock> {
        let state = snapshot::load(path.as_ref())?;
        let scale = settings.rules.scale;
        if let Some(p) = state.pos.iter().find(|p| p.abs().max_element() > scale) {
            return Err(Error::invalid(format!(
                "{} holds a boid at {:?}, outside [-{scale}, {scale}]^3: set rules.scale",
                path.as_ref().display(),
                p.to_array()
            )));
        }
        Flock::open(&settings, Start::State(state))
    }

    fn open(settings: &FlockSettings, start: Start) -> Result<Flock> {
        let internal = settings.config(start.len()).settings()?;
        let (choice, device) = settings.backend.choice();
        Flock::from_parts(internal, start, choice, device)
    }

    /// A flock of checked internal settings, opened as `choice` says (the CLI's `flock run`).
    #[doc(hidden)]
    pub fn from_parts(
        settings: crate::flock::FlockSettings,
        start: Start,
        choice: super::BackendChoice,
        device: usize,
    ) -> Result<Flock> {
        let (backend, fallback) = driver::open_backend_on(choice, device, &settings, &start)?;
        Ok(Flock {
            backend,
            settings,
            fallback,
            owner: device::new_owner(),
            generation: 0,
        })
    }

    /// The backend stepping it (`flock run`'s driver takes it); device arrays made before are
    /// stale after.
    #[doc(hidden)]
    pub fn backend_mut(&mut self) -> &mut dyn FlockBackend {
        self.generation += 1;
        self.backend.as_mut()
    }

    /// The internal settings it runs with.
    #[doc(hidden)]
    pub fn internal_settings(&self) -> &crate::flock::FlockSettings {
        &self.settings
    }

    /// Number of boids.
    pub fn len(&self) -> usize {
        self.backend.len()
    }

    /// Always false: a flock has at least one boid.
    pub fn is_empty(&self) -> bool {
        self.backend.is_empty()
    }

    /// The backend, e.g. `"cpu (rayon, 8 threads)"` or `"cuda (NVIDIA H200)"`.
    pub fn describe(&self) -> String {
        self.backend.describe()
    }

    /// With `Backend::Auto` on a machine where CUDA was not usable: why, and that it runs on
    /// the CPU.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// Advances `k` steps (on the GPU they are queued; reading the state waits for them).
    pub fn step(&mut self, k: u64) -> Result<()> {
        self.step_while(k, |_| true).map(drop)
    }

    /// Advances up to `k` steps, asking `go_on(done)` before each step after the first: stops
    /// early when it says false. Returns the steps taken. (The Python package stops here on
    /// Ctrl-C.)
    pub fn step_while(&mut self, k: u64, mut go_on: impl FnMut(u64) -> bool) -> Result<u64> {
        self.generation += 1;
        for done in 0..k {
            if done > 0 && !go_on(done) {
                return Ok(done);
            }
            self.backend.step()?;
        }
        Ok(k)
    }

    /// Waits until every queued step has finished.
    pub fn synchronize(&mut self) -> Result<()> {
        Ok(self.backend.synchronize()?)
    }

    /// The state, ordered by id: positions (scene units), velocities (scene units per time
    /// unit) and ids (`0..n`).
    pub fn state(&mut self) -> Result<FlockState> {
        Ok(self.backend.state()?)
    }

    /// Positions ordered by id, scene units.
    pub fn positions(&mut self) -> Result<Vec<[f32; 3]>> {
        Ok(self.state()?.pos.iter().map(|p| p.to_array()).collect())
    }

    /// Velocities ordered by id, scene units per time unit.
    pub fn velocities(&mut self) -> Result<Vec<[f32; 3]>> {
        Ok(self.state()?.vel.iter().map(|v| v.to_array()).collect())
    }

    /// Replaces the state (any order of ids `0..n`; `n` may change).
    pub fn set_state(&mut self, state: &FlockState) -> Result<()> {
        self.generation += 1;
        Ok(self.backend.set_state(state)?)
    }

    /// The rules it runs with.
    pub fn rules(&self) -> Rules {
        self.settings.params
    }

    /// Changes the rules between steps (checked first; no restart). A new `scale` or larger
    /// radii regrid the flock.
    pub fn set_rules(&mut self, rules: Rules) -> Result<()> {
        crate::flock::config::validate_params(&rules)?;
        let mut s = self.settings.clone();
        s.params = rules;
        self.backend.set_settings(&s)?;
        self.settings = s;
        self.generation += 1;
        Ok(())
    }

    /// The neighbour search method.
    pub fn method(&self) -> Method {
        self.settings.method
    }

    /// Writes the state, ordered by id, to the `.npz` snapshot `path` (arrays `pos` (N, 3) f32,
    /// `vel` (N, 3) f32, `id` (N,) u32); written whole or not at all.
    pub fn save(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let state = self.state()?;
        Ok(snapshot::save(path.as_ref(), &state)?)
    }

    /// The camera `murmur flock render` starts from: the whole cube in view, `width` x
    /// `height` pixels.
    pub fn camera(&self, width: u32, height: u32) -> Camera {
        Camera::framing(self.settings.params.scale, width, height)
    }

    /// Draws the flock as `camera` sees it, coloured by `colour` (on the GPU by the CUDA
    /// backend, one copy back): an RGBA image of the camera's size.
    pub fn render(&mut self, camera: &Camera, colour: ColourMode) -> Result<image::RgbaImage> {
        if camera.width == 0 || camera.height == 0 {
            return Err(Error::invalid("the camera's frame has no pixels"));
        }
        let style = crate::view::default_style(&self.settings.params, colour);
        let mut rgba = vec![0u8; camera.width as usize * camera.height as usize * 4];
        self.backend
            .render_into(&camera.view(&style), BACKGROUND, &mut rgba)?;
        image::RgbaImage::from_raw(camera.width, camera.height, rgba)
            .ok_or_else(|| Error::invalid("the frame's size does not match its pixels"))
    }

    /// Whether `array` (from this flock) still shows its current state.
    pub fn is_current(&self, array: &DeviceArray) -> bool {
        array.current(self.owner, self.generation)
    }

    /// The positions where the CUDA backend keeps them (None on the CPU): an (N, 3) f32 array
    /// with strides (16, 4) bytes, interleaved with the ids, in the backend's internal order
    /// (cell order after a grid step), not by id. Valid until the next step.
    pub fn device_positions(&mut self) -> Result<Option<DeviceArray>> {
        self.device_view(|s, n| (s.bodies.clone(), 0, vec![n, 3], vec![16, 4], DType::F32))
    }

    /// The ids beside [`Flock::device_positions`] (None on the CPU): an (N,) u32 array with
    /// stride 16 bytes, in the same order.
    pub fn device_ids(&mut self) -> Result<Option<DeviceArray>> {
        self.device_view(|s, n| (s.bodies.clone(), 12, vec![n], vec![16], DType::U32))
    }

    /// The velocities (None on the CPU): an (N, 3) f32 array with strides (12, 4) bytes, in
    /// the order of [`Flock::device_positions`].
    pub fn device_velocities(&mut self) -> Result<Option<DeviceArray>> {
        self.device_view(|s, n| (s.velocities.clone(), 0, vec![n, 3], vec![12, 4], DType::F32))
    }

    #[allow(clippy::type_complexity)]
    fn device_view(
        &mut self,
        part: impl FnOnce(
            &crate::flock::DeviceState,
            usize,
        ) -> (
            crate::gpu::exposed::RawBuffer,
            usize,
            Vec<usize>,
            Vec<usize>,
            DType,
        ),
    ) -> Result<Option<DeviceArray>> {
        let n = self.len();
        let Some(state) = self.backend.device_state()? else {
            return Ok(None);
        };
        let (buffer, offset, shape, strides, dtype) = part(&state, n);
        Ok(Some(DeviceArray::new(
            buffer,
            offset,
            shape,
            strides,
            dtype,
            (self.owner, self.generation),
        )))
    }
}
