//! `murmur flock view`: the flock in a window (winit + pixels), one frame per redraw: poll the
//! config file, step, rasterise into pixels' buffer (`FlockBackend::render_into`, the one copy of
//! the frame), draw the egui HUD and panel over it, present, apply what the panel changed.
//!
//! Controls: drag to orbit, wheel to zoom, space pause, `.` single step, `r` reset, `c` colour
//! mode, Esc quit.

use super::gfx::{steps_this_frame, tick_fps, Gfx};
use super::panel::{Actions, Hud, Panel};
use super::shell::{self, Control, FileWatch, Viewer};
use super::{default_style, frames, ViewError};
use crate::flock::config::FlockConfig;
use crate::flock::{FlockBackend, FlockState};
use murmur_common::render::{Camera, ColourMode, BACKGROUND};
use std::path::PathBuf;
use std::time::Instant;

/// Re-reads the configuration (the file, then the command line's overrides) as one-line errors.
pub type Reload = Box<dyn FnMut() -> Result<FlockConfig, String>>;

/// A configuration file watched for saves.
pub struct ConfigWatch {
    pub path: PathBuf,
    pub reload: Reload,
}

/// How the window starts.
pub struct WindowOptions {
    /// Inner size in physical pixels (the frame follows the window when it is resized).
    pub width: u32,
    pub height: u32,
    pub colour: ColourMode,
    pub watch: Option<ConfigWatch>,
    /// Close after this many frames (scripted runs and screenshots); `None`: when closed.
    pub quit_after: Option<u64>,
}

/// Opens the window and runs until it is closed. `config` is what `backend` was opened with.
pub fn run(
    backend: Box<dyn FlockBackend>,
    config: FlockConfig,
    opts: WindowOptions,
) -> Result<(), ViewError> {
    frames::check_size(opts.width, opts.height)?;
    check_display()?;
    let quit_after = opts.quit_after;
    shell::run(ViewError::NoDisplay, quit_after, || {
        Ok(App::new(backend, config, opts))
    })
}

/// Fails early, with the headless alternative in the message, when there is no X11 display.
pub fn check_display() -> Result<(), ViewError> {
    shell::check_display(ViewError::NoDisplay)
}

struct Watch {
    file: FileWatch,
    reload: Reload,
}

struct App {
    backend: Box<dyn FlockBackend>,
    config: FlockConfig,
    panel: Panel,
    camera: Camera,
    hud: Hud,
    watch: Option<Watch>,
    /// An error of a reload between steps, returned when the window closes.
    error: Option<ViewError>,
    size: (u32, u32),
    pending: Actions,
    last_frame: Instant,
}

impl App {
    fn new(backend: Box<dyn FlockBackend>, config: FlockConfig, opts: WindowOptions) -> App {
        let mut panel = Panel::new(&config);
        panel.colour = opts.colour;
        let watch = opts.watch.map(|w| Watch {
            file: FileWatch::new(w.path),
            reload: w.reload,
        });
        App {
            hud: Hud {
                n: backend.len(),
                method: config.sim.method.name(),
                backend: backend.describe(),
                ..Hud::default()
            },
            camera: Camera::framing(config.params.scale, opts.width, opts.height),
            backend,
            config,
            panel,
            watch,
            error: None,
            size: (opts.width, opts.height),
            pending: Actions::default(),
            last_frame: Instant::now(),
        }
    }

    /// One frame: config poll, steps, rasterise, HUD and panel, present, apply the panel.
    fn draw(&mut self, gfx: &mut Gfx) -> Result<(), ViewError> {
        tick_fps(&mut self.hud.fps, &mut self.last_frame, Instant::now());
        self.poll_config();

        let steps = steps_this_frame(
            self.panel.paused,
            &mut self.pending.step,
            self.panel.steps_per_frame,
        );
        let t0 = Instant::now();
        self.backend.reset_times();
        for _ in 0..steps {
            self.backend.step()?;
        }
        if steps > 0 {
            // Reading the CUDA event timers also waits for the steps (CPU: None, already done).
            self.hud.gpu_ms_per_step = self.backend.gpu_ms_per_step();
            self.hud.sim_ms = t0.elapsed().as_secs_f64() * 1e3;
        }
        self.hud.step += u64::from(steps);
        self.hud.paused = self.panel.paused;

        let style = default_style(&self.config.params, self.panel.colour);
        let t1 = Instant::now();
        self.backend.render_into(
            &self.camera.view(&style),
            BACKGROUND,
            gfx.pixels.frame_mut(),
        )?;
        self.hud.render_ms = t1.elapsed().as_secs_f64() * 1e3;

        let (panel, config, hud) = (&mut self.panel, &mut self.config, &self.hud);
        let mut actions = Actions::default();
        self.hud.present_ms = gfx.present(|ctx| actions = panel.ui(ctx, config, hud))?;

        self.pending.settings |= actions.settings;
        self.pending.reset |= actions.reset;
        self.pending.step |= actions.step;
        self.apply()
    }

    /// Applies the panel's (or the config file's) changes between steps, without a restart.
    fn apply(&mut self) -> Result<(), ViewError> {
        // A pending single step stays pending until the next frame takes it.
        let act = self.pending;
        self.pending = Actions {
            step: act.step,
            ..Actions::default()
        };
        if !(act.settings || act.reset) {
            return Ok(());
        }
        let settings = match self.config.settings() {
            Ok(s) => s,
            Err(e) => {
                self.hud.message = Some(format!("not applied: {e}"));
                return Ok(());
            }
        };
        self.backend.set_settings(&settings)?;
        if act.reset {
            let c = &self.config;
            let state = FlockState::random(c.sim.n as usize, c.params.scale, c.sim.seed);
            self.backend.set_state(&state)?;
            self.hud.step = 0;
            let (w, h) = self.size;
            self.camera = Camera {
                width: w,
                height: h,
                ..Camera::framing(c.params.scale, w, h)
            };
        }
        self.hud.n = self.backend.len();
        self.hud.method = settings.method.name();
        self.hud.message = None;
        Ok(())
    }

    /// Reloads the watched config when its modification time changes.
    fn poll_config(&mut self) {
        let Some(w) = self.watch.as_mut() else {
            return;
        };
        if !w.file.changed() {
            return;
        }
        match (w.reload)() {
            Ok(new) => {
                let old = &self.config;
                let reset = new.sim.n != old.sim.n
                    || new.sim.seed != old.sim.seed
                    || new.params.scale != old.params.scale;
                self.pending.reset |= reset;
                self.pending.settings = true;
                self.config = new;
                self.panel.sync(&self.config);
                let note = format!("reloaded {}", w.file.path.display());
                if let Err(e) = self.apply() {
                    self.error.get_or_insert(e);
                }
                if self.hud.message.is_none() {
                    self.hud.message = Some(note);
                }
            }
            Err(e) => self.hud.message = Some(e),
        }
    }
}

impl Viewer for App {
    const TITLE: &'static str = "murmur flock";

    fn size_mut(&mut self) -> &mut (u32, u32) {
        &mut self.size
    }

    fn created(&mut self, gfx: &Gfx) {
        self.hud.display = gfx.adapter.clone();
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
            Control::Char("c" | "C") => {
                self.panel.colour = match self.panel.colour {
                    ColourMode::Heading => ColourMode::Speed,
                    ColourMode::Speed => ColourMode::Heading,
                }
            }
            Control::Char(_) => {}
        }
    }

    fn deferred_error(&mut self) -> Option<ViewError> {
        self.error.take()
    }
}
