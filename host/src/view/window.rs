//! `murmur flock view`: the flock in a window (winit + pixels), one frame per redraw: poll the
//! config file, step, rasterise into pixels' buffer (`FlockBackend::render_into`, the one copy of
//! the frame), draw the egui HUD and panel over it, present, apply what the panel changed.
//!
//! Controls: drag to orbit, wheel to zoom, space pause, `.` single step, `r` reset, `c` colour
//! mode, Esc quit.

use super::gfx::{no_display, one_line, steps_this_frame, tick_fps, Gfx};
use super::panel::{Actions, Hud, Panel};
use super::{default_style, headless, ViewError};
use crate::flock::config::FlockConfig;
use crate::flock::{FlockBackend, FlockState};
use murmur_common::render::{Camera, ColourMode, BACKGROUND};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::WindowId;

/// How often the config file's modification time is checked.
const CONFIG_POLL: Duration = Duration::from_millis(250);

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
    headless::check_size(opts.width, opts.height)?;
    check_display()?;
    let event_loop = EventLoop::new().map_err(|e| ViewError::NoDisplay(no_display(&e)))?;
    let mut app = App::new(backend, config, opts);
    event_loop
        .run_app(&mut app)
        .map_err(|e| ViewError::Graphics(one_line(&e)))?;
    match app.error.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Fails early, with the headless alternative in the message, when there is no X11 display.
pub fn check_display() -> Result<(), ViewError> {
    if cfg!(all(unix, not(target_os = "macos"))) && std::env::var_os("DISPLAY").is_none() {
        return Err(ViewError::NoDisplay("DISPLAY is not set".into()));
    }
    Ok(())
}

struct Watch {
    path: PathBuf,
    reload: Reload,
    modified: Option<SystemTime>,
    polled: Instant,
}

struct App {
    backend: Box<dyn FlockBackend>,
    config: FlockConfig,
    panel: Panel,
    camera: Camera,
    hud: Hud,
    watch: Option<Watch>,
    gfx: Option<Gfx>,
    error: Option<ViewError>,
    size: (u32, u32),
    mouse: crate::view::gfx::OrbitMouse,
    pending: Actions,
    last_frame: Instant,
    frames: u64,
    quit_after: Option<u64>,
}

impl App {
    fn new(backend: Box<dyn FlockBackend>, config: FlockConfig, opts: WindowOptions) -> App {
        let mut panel = Panel::new(&config);
        panel.colour = opts.colour;
        let watch = opts.watch.map(|w| Watch {
            modified: modified(&w.path),
            path: w.path,
            reload: w.reload,
            polled: Instant::now(),
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
            gfx: None,
            error: None,
            size: (opts.width, opts.height),
            mouse: Default::default(),
            pending: Actions::default(),
            last_frame: Instant::now(),
            frames: 0,
            quit_after: opts.quit_after,
        }
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, e: impl Into<ViewError>) {
        self.error.get_or_insert(e.into());
        event_loop.exit();
    }

    fn create(&mut self, event_loop: &ActiveEventLoop) -> Result<Gfx, ViewError> {
        let gfx = Gfx::create(event_loop, "murmur flock", self.size)?;
        let (w, h) = gfx.size();
        self.resize_frame(w, h);
        self.hud.display = gfx.adapter.clone();
        Ok(gfx)
    }

    fn resize_frame(&mut self, w: u32, h: u32) {
        self.size = (w, h);
        self.camera.width = w;
        self.camera.height = h;
    }

    /// One frame: config poll, steps, rasterise, HUD and panel, present, apply the panel.
    fn frame(&mut self, event_loop: &ActiveEventLoop) -> Result<(), ViewError> {
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

        let Some(gfx) = self.gfx.as_mut() else {
            return Ok(());
        };
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
        self.apply()?;
        self.frames += 1;
        if self.quit_after.is_some_and(|q| self.frames >= q) {
            event_loop.exit();
        }
        Ok(())
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
        if w.polled.elapsed() < CONFIG_POLL {
            return;
        }
        w.polled = Instant::now();
        let m = modified(&w.path);
        if m.is_none() || m == w.modified {
            return;
        }
        w.modified = m;
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
                let note = format!("reloaded {}", w.path.display());
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

    fn key(&mut self, event_loop: &ActiveEventLoop, key: &Key) {
        match key {
            Key::Named(NamedKey::Space) => self.panel.paused = !self.panel.paused,
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Character(c) => match c.as_str() {
                "." => self.pending.step = true,
                "r" | "R" => self.pending.reset = true,
                "c" | "C" => {
                    self.panel.colour = match self.panel.colour {
                        ColourMode::Heading => ColourMode::Speed,
                        ColourMode::Speed => ColourMode::Heading,
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }
}

fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match self.create(event_loop) {
            Ok(g) => {
                g.window.request_redraw();
                self.gfx = Some(g);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let Some(gfx) = self.gfx.as_mut() else {
            return;
        };
        let mut resized = None;
        let consumed = match gfx.event(&event, &mut resized) {
            Ok(c) => c,
            Err(e) => return self.fail(event_loop, e),
        };
        if let Some((w, h)) = resized {
            self.resize_frame(w, h);
        }
        if self.mouse.handle(&event, consumed, &mut self.camera) {
            return;
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.frame(event_loop) {
                    self.fail(event_loop, e);
                }
            }
            WindowEvent::KeyboardInput { event, .. }
                if !consumed && event.state == ElementState::Pressed =>
            {
                self.key(event_loop, &event.logical_key)
            }
            _ => {}
        }
    }
}
