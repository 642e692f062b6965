//! `murmur fluid view`: the fluid in a window (the flock viewer's stack, `crate::view::gfx`), one
//! frame per redraw: poll the scene file, step (inlet ramp, smoke advection), check the flow's
//! health, draw the frame where the lattice lives (`FluidBackend::render_into`, on the CPU at a
//! reduced resolution for large lattices), add the colour bar, draw the HUD and the panel over
//! it, present, apply what the panel changed.
//!
//! Controls: drag to orbit, wheel to zoom, space pause, `.` single step, `r` reset, `v` next
//! view, Esc quit.

use super::headless::Stepping;
use super::panel::{Actions, Hud, Panel};
use super::{colour_bar, cpu_downsample, scaled, upscale, Look, SOLID_RADIUS};
use crate::backend::BackendChoice;
use crate::fluid::riders::{OpenRider, Rider};
use crate::fluid::scene::Scene;
use crate::fluid::FluidBackend;
use crate::view::gfx::{one_line, steps_this_frame, tick_fps, Gfx};
use crate::view::shell::{self, Control, FileWatch, Viewer};
use crate::view::ViewError;
use murmur_common::lbm::Rates;
use murmur_common::render::fluid::ViewKind;
use murmur_common::render::{Camera, BACKGROUND};
use std::path::PathBuf;
use std::time::Instant;

/// Reads the scene file again (with the command line's flags on top), as a one-line error.
pub type Reload = Box<dyn FnMut() -> Result<(Scene, Look), String>>;

/// How the window starts.
pub struct FluidWindowOptions {
    pub width: u32,
    pub height: u32,
    /// The backend choice, for reopening after a scene edit.
    pub backend: BackendChoice,
    pub scene_path: PathBuf,
    pub reload: Reload,
    pub quit_after: Option<u64>,
    /// Opens what rides the scene's flow (its flocks), at the start and at each reopen.
    pub open_rider: OpenRider,
}

/// Fails early, with the headless alternative in the message, when there is no X11 display.
pub fn check_display() -> Result<(), ViewError> {
    shell::check_display(ViewError::NoFluidDisplay)
}

/// Opens the window and runs until it is closed. `scene` is what `backend` was opened with.
pub fn run(
    backend: Box<dyn FluidBackend>,
    scene: Scene,
    look: Look,
    opts: FluidWindowOptions,
) -> Result<(), ViewError> {
    let quit_after = opts.quit_after;
    shell::run(ViewError::NoFluidDisplay, quit_after, || {
        App::new(backend, scene, look, opts)
    })
}

struct App {
    backend: Box<dyn FluidBackend>,
    rider: Option<Box<dyn Rider>>,
    scene: Scene,
    stepping: Stepping,
    panel: Panel,
    camera: Camera,
    hud: Hud,
    opts: FluidWindowOptions,
    watch: FileWatch,
    size: (u32, u32),
    pending: Actions,
    last_frame: Instant,
    /// The downsampled frame before it is scaled into the window's buffer.
    small: Vec<u8>,
}

/// The scene's Reynolds number `U L / nu`.
fn reynolds(scene: &Scene) -> f64 {
    let p = &scene.file.physical;
    p.velocity * p.length / p.viscosity
}

impl App {
    fn new(
        mut backend: Box<dyn FluidBackend>,
        scene: Scene,
        look: Look,
        opts: FluidWindowOptions,
    ) -> Result<App, ViewError> {
        let rider = (opts.open_rider)(&opts.scene_path, &scene, backend.as_mut())?;
        let l = scene.setup.lattice();
        let re = reynolds(&scene);
        let panel = Panel {
            paused: false,
            steps_per_frame: 1,
            model: scene.setup.model,
            inlet_factor: 1.0,
            reynolds: re,
            scene_reynolds: re,
            range: look.range_for(&scene),
            look,
        };
        Ok(App {
            hud: Hud {
                scene: scene.file.name.clone(),
                lattice: [l.nx, l.ny, l.nz],
                backend: backend.describe(),
                ..Hud::default()
            },
            camera: look.camera(l, opts.width, opts.height),
            stepping: Stepping::of(&scene)?,
            watch: FileWatch::new(opts.scene_path.clone()),
            backend,
            rider,
            scene,
            panel,
            size: (opts.width, opts.height),
            opts,
            pending: Actions::default(),
            last_frame: Instant::now(),
            small: Vec::new(),
        })
    }

    /// The CPU's downsampling factor for the current window (1 on the GPU).
    fn downsample(&self) -> u32 {
        if self.backend.describe().starts_with("cpu") {
            cpu_downsample(self.scene.setup.lattice(), self.size.0, self.size.1)
        } else {
            1
        }
    }

    fn draw(&mut self, gfx: &mut Gfx) -> Result<(), ViewError> {
        tick_fps(&mut self.hud.fps, &mut self.last_frame, Instant::now());
        self.poll_scene();

        let steps = steps_this_frame(
            self.panel.paused,
            &mut self.pending.step,
            self.panel.steps_per_frame,
        );
        if steps > 0 {
            self.stepping.inlet_factor = self.panel.inlet_factor;
            let t0 = Instant::now();
            self.backend.reset_times();
            let stepped = self.stepping.advance_checked(
                self.backend.as_mut(),
                self.rider.as_deref_mut(),
                steps as u64,
                None,
            );
            match stepped {
                Ok(smoke) => {
                    self.hud.gpu_ms_per_step = self.backend.gpu_ms_per_step();
                    self.hud.sim_ms = (t0.elapsed() - smoke).as_secs_f64() * 1e3;
                    self.hud.smoke_ms = smoke.as_secs_f64() * 1e3;
                }
                // The run's health check, in its words; the window stays open.
                Err(e) => match e.breach() {
                    Some(breach) => {
                        self.panel.paused = true;
                        self.hud.message = Some(format!(
                            "{}: {breach}; paused (r: reset)",
                            self.panel.model.name()
                        ));
                    }
                    None => return Err(e.into()),
                },
            }
        }
        self.hud.step = self.backend.step_count();
        self.hud.paused = self.panel.paused;

        let (w, h) = self.size;
        let k = self.downsample();
        self.hud.downsample = Some(k);
        let (sw, sh) = scaled(w, h, k);
        let l = self.scene.setup.lattice();
        let range = self.panel.look.range_for(&self.scene);
        self.panel.range = range;
        let cam = Camera {
            width: sw,
            height: sh,
            ..self.camera
        };
        let frame = self.panel.look.frame(&cam, l, range, BACKGROUND);
        let t1 = Instant::now();
        let buffer = gfx.pixels.frame_mut();
        let drawn = match self.rider.as_ref() {
            Some(r) => r.drawn()?,
            None => Default::default(),
        };
        if k == 1 && buffer.len() == (w * h * 4) as usize {
            self.backend
                .view()?
                .render_into(&frame, SOLID_RADIUS, drawn.points(), buffer)?;
        } else {
            self.small.resize((sw * sh * 4) as usize, 0);
            self.backend.view()?.render_into(
                &frame,
                SOLID_RADIUS,
                drawn.points(),
                &mut self.small,
            )?;
            upscale(&self.small, sw, k, buffer, w, h);
        }
        if self.panel.look.kind != ViewKind::Smoke {
            let q = self.panel.look.quantity.name();
            colour_bar(buffer, w, h, self.panel.look.map(), range.0, range.1, q);
        }
        self.hud.render_ms = t1.elapsed().as_secs_f64() * 1e3;
        self.hud.display = gfx.adapter.clone();

        let dims = [l.nx, l.ny, l.nz];
        let (panel, hud) = (&mut self.panel, &self.hud);
        let mut actions = Actions::default();
        let present = gfx.present(|ctx| actions = panel.ui(ctx, hud, dims))?;
        self.hud.present_ms = present;
        self.pending.reset |= actions.reset;
        self.pending.step |= actions.step;
        self.apply(actions)
    }

    /// Applies the panel's changes between steps.
    fn apply(&mut self, act: Actions) -> Result<(), ViewError> {
        if act.model {
            self.backend.view()?.set_model(self.panel.model);
        }
        if act.reynolds {
            // nu = U L / Re in lattice units, U the scaled inlet velocity.
            let file = &self.scene.file;
            let u = file.lattice.velocity * self.panel.inlet_factor as f64;
            let nu = u * file.lattice.resolution as f64 / self.panel.reynolds.max(1e-9);
            let old = self.backend.view()?.rates();
            let rates = Rates {
                bulk: old.bulk,
                high: old.high,
                lambda: old.lambda,
                ..Rates::from_viscosity(nu as f32)
            };
            self.backend.view()?.set_rates(rates);
            self.hud.message = Some(format!(
                "Re {:.0}: tau {:.5}",
                self.panel.reynolds,
                0.5 + 3.0 * nu
            ));
        }
        if act.reframe {
            let (w, h) = self.size;
            self.camera = self.panel.look.camera(self.scene.setup.lattice(), w, h);
        }
        if std::mem::take(&mut self.pending.reset) {
            self.reopen(None)?;
        }
        Ok(())
    }

    /// Opens the scene (or a new one) again from its initial state.
    fn reopen(&mut self, new: Option<(Scene, Look)>) -> Result<(), ViewError> {
        let (mut scene, look) = match new {
            Some(s) => s,
            None => (self.scene.clone(), self.panel.look),
        };
        scene.setup.model = self.panel.model;
        let (mut backend, _) = super::open(self.opts.backend, &mut scene, &self.opts.scene_path)?;
        let stepping = Stepping::of(&scene)?;
        self.rider = (self.opts.open_rider)(&self.opts.scene_path, &scene, backend.as_mut())?;
        let l = scene.setup.lattice();
        let reframe = l != self.scene.setup.lattice() || look.kind != self.panel.look.kind;
        self.backend = backend;
        self.stepping = stepping;
        self.panel.look = look;
        let re = reynolds(&scene);
        self.panel.scene_reynolds = re;
        self.panel.reynolds = re * self.panel.inlet_factor as f64;
        self.hud.lattice = [l.nx, l.ny, l.nz];
        self.hud.scene = scene.file.name.clone();
        self.scene = scene;
        if reframe {
            let (w, h) = self.size;
            self.camera = look.camera(l, w, h);
        }
        Ok(())
    }

    /// Reloads the scene when its file changes: a good edit restarts it, a bad one shows its
    /// one-line error and the last good scene keeps running.
    fn poll_scene(&mut self) {
        if !self.watch.changed() {
            return;
        }
        match (self.opts.reload)() {
            Ok(new) => {
                self.panel.model = new.0.setup.model;
                match self.reopen(Some(new)) {
                    Ok(()) => {
                        self.hud.message =
                            Some(format!("reloaded {}", self.opts.scene_path.display()))
                    }
                    Err(e) => self.hud.message = Some(one_line(&e)),
                }
            }
            Err(e) => self.hud.message = Some(e),
        }
    }
}

impl Viewer for App {
    const TITLE: &'static str = "murmur fluid";

    fn size_mut(&mut self) -> &mut (u32, u32) {
        &mut self.size
    }

    fn camera(&mut self) -> &mut Camera {
        &mut self.camera
    }

    fn frame(&mut self, gfx: &mut Gfx) -> Result<(), ViewError> {
        self.draw(gfx)
    }

    fn control(&mut self, control: Control) {
        match control {
            Control::Pause => self.panel.paused = !self.panel.paused,
            Control::Step => self.pending.step = true,
            Control::Reset => self.pending.reset = true,
            Control::Char("v" | "V") => {
                self.panel.look.kind = match self.panel.look.kind {
                    ViewKind::Slice => ViewKind::Volume,
                    ViewKind::Volume => ViewKind::Smoke,
                    ViewKind::Smoke => ViewKind::Slice,
                };
                if self.panel.look.kind == ViewKind::Volume && !self.panel.look.quantity.derived() {
                    self.panel.look.quantity = murmur_common::render::fluid::Quantity::Q;
                    self.panel.look.range = None;
                }
                let (w, h) = self.size;
                self.camera = self.panel.look.camera(self.scene.setup.lattice(), w, h);
            }
            Control::Char(_) => {}
        }
    }
}
