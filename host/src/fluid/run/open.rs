//! Opening a backend with the knobs a run without knob flags takes (`fluid view`, `fluid
//! render`, the library's `Fluid`), and opening it again when the knobs change.

use super::settings::{CacheUse, Partial, Settings};
use crate::fluid::defaults::DeviceClass;
use crate::fluid::driver::{self, BackendChoice};
use crate::fluid::scene::Scene;
use crate::fluid::tuning::Knobs;
use crate::fluid::{FluidBackend, FluidError, Setup};
use std::path::Path;

/// What [`open_picked`] opened: the backend, the note of an `auto` that fell back to the CPU,
/// and the tuning line.
pub type Picked = (Box<dyn FluidBackend>, Option<String>, String);

/// Opens a backend of `choice` on `scene` (built from the file at `scene_path`) with the knobs a
/// run without knob flags takes: the tuning cache's entry for the opened device, else its
/// device defaults (`fluid view`, `fluid render`). The scene's setup gets the knobs; returns the
/// backend, the note of an `auto` that fell back to the CPU, and the tuning line.
pub fn open_picked(
    choice: BackendChoice,
    scene: &mut Scene,
    scene_path: &Path,
) -> Result<Picked, FluidError> {
    open_picked_on(choice, 0, scene, Some(scene_path))
}

/// [`open_picked`] with CUDA on GPU `device`; a scene without a file (`None`, built in code)
/// takes the device defaults (the tuning cache is keyed by the file's bytes).
pub fn open_picked_on(
    choice: BackendChoice,
    device: usize,
    scene: &mut Scene,
    scene_path: Option<&Path>,
) -> Result<Picked, FluidError> {
    let solids = !scene.setup.immersed.is_empty();
    let none = Partial::default();
    let class = DeviceClass::expected(choice);
    let path = scene_path.unwrap_or(Path::new(""));
    let (before, _) = Settings::picked(scene, path, class, CacheUse::Off(""), &none);
    before.knobs(solids).apply(&mut scene.setup);
    let (backend, note) = driver::open_backend_on(choice, device, &scene.setup)?;
    let describe = backend.describe();
    let class = DeviceClass::of(&describe);
    let cache = match scene_path {
        Some(_) => CacheUse::Device(&describe),
        None => CacheUse::Off("the tuning cache is for scene files"),
    };
    let (after, line) = Settings::picked(scene, path, class, cache, &none);
    let backend = reopen_on(backend, device, &mut scene.setup, after.knobs(solids))?;
    Ok((backend, note, line))
}

/// `backend` (opened on `setup`) with `knobs` set on `setup`: the same backend when they are
/// its knobs already, else that kind of backend opened again with them (the old one's memory
/// given back first).
pub fn reopen_with(
    backend: Box<dyn FluidBackend>,
    setup: &mut Setup,
    knobs: Knobs,
) -> Result<Box<dyn FluidBackend>, FluidError> {
    reopen_on(backend, 0, setup, knobs)
}

/// [`reopen_with`] for a backend on GPU `device`.
pub fn reopen_on(
    backend: Box<dyn FluidBackend>,
    device: usize,
    setup: &mut Setup,
    knobs: Knobs,
) -> Result<Box<dyn FluidBackend>, FluidError> {
    let before = Knobs::of(setup);
    knobs.apply(setup);
    if Knobs::of(setup) == before {
        return Ok(backend);
    }
    let choice = if backend.describe().starts_with("cuda") {
        BackendChoice::Cuda
    } else {
        BackendChoice::Cpu
    };
    drop(backend);
    Ok(driver::open_backend_on(choice, device, setup)?.0)
}
