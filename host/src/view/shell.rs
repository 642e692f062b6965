//! The window loop both viewers share (`murmur flock view`, `murmur fluid view`): the display
//! check, the event loop, the window's creation and events (egui first, then the orbit mouse,
//! the common keys), the frame count that closes a scripted run, the watched file, and the
//! first error, which ends the loop and is returned.

use super::gfx::{no_display, one_line, Gfx, OrbitMouse};
use super::ViewError;
use murmur_common::render::Camera;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use winit::application::ApplicationHandler;
use winit::event::{ElementState, WindowEvent};
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::keyboard::{Key, NamedKey};
use winit::window::WindowId;

/// How often a watched file's modification time is checked.
pub const FILE_POLL: Duration = Duration::from_millis(250);

/// The no-display error of a viewer: its message names that viewer's headless command.
pub type NoDisplay = fn(String) -> ViewError;

/// Fails early, with the headless alternative in the message (`no_display`), when there is no
/// X11 display.
pub fn check_display(no_display: NoDisplay) -> Result<(), ViewError> {
    if cfg!(all(unix, not(target_os = "macos"))) && std::env::var_os("DISPLAY").is_none() {
        return Err(no_display("DISPLAY is not set".into()));
    }
    Ok(())
}

/// A key both viewers handle, or another character (Esc closes the window in the shell).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control<'a> {
    /// Space: pause or run.
    Pause,
    /// `.`: one step.
    Step,
    /// `r`: start again.
    Reset,
    /// Any other character.
    Char(&'a str),
}

impl Control<'_> {
    /// The control of a pressed key (`None`: Esc and the keys no viewer uses).
    fn of(key: &Key) -> Option<Control<'_>> {
        match key {
            Key::Named(NamedKey::Space) => Some(Control::Pause),
            Key::Character(c) => Some(match c.as_str() {
                "." => Control::Step,
                "r" | "R" => Control::Reset,
                c => Control::Char(c),
            }),
            _ => None,
        }
    }
}

/// A file watched for saves: its modification time, checked every [`FILE_POLL`].
pub struct FileWatch {
    pub path: PathBuf,
    modified: Option<SystemTime>,
    polled: Instant,
}

impl FileWatch {
    pub fn new(path: PathBuf) -> FileWatch {
        FileWatch {
            modified: modified(&path),
            path,
            polled: Instant::now(),
        }
    }

    /// True when a poll is due and the file's modification time differs from the last one
    /// seen (a file that cannot be read is not a change).
    pub fn changed(&mut self) -> bool {
        if self.polled.elapsed() < FILE_POLL {
            return false;
        }
        self.polled = Instant::now();
        let m = modified(&self.path);
        if m.is_none() || m == self.modified {
            return false;
        }
        self.modified = m;
        true
    }
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

/// What a viewer does inside the shell.
pub trait Viewer {
    /// The window's title.
    const TITLE: &'static str;
    /// The frame's size in pixels (the window opens at it).
    fn size_mut(&mut self) -> &mut (u32, u32);
    /// The camera the mouse orbits and zooms.
    fn camera(&mut self) -> &mut Camera;
    /// The window's buffer is now `w x h` (at its creation and on each resize): the frame's
    /// size and the camera's follow.
    fn resized(&mut self, w: u32, h: u32) {
        *self.size_mut() = (w, h);
        let camera = self.camera();
        camera.width = w;
        camera.height = h;
    }
    /// The window was created (after `resized`).
    fn created(&mut self, _gfx: &Gfx) {}
    /// One frame into `gfx` (a redraw): step, draw, present, apply the panel.
    fn frame(&mut self, gfx: &mut Gfx) -> Result<(), ViewError>;
    /// A key the panel did not take.
    fn control(&mut self, control: Control);
    /// An error met during the last frame that does not stop the window (it is returned when
    /// the window closes, unless an earlier one is).
    fn deferred_error(&mut self) -> Option<ViewError> {
        None
    }
}

struct Shell<V> {
    viewer: V,
    gfx: Option<Gfx>,
    error: Option<ViewError>,
    mouse: OrbitMouse,
    frames: u64,
    quit_after: Option<u64>,
}

/// Opens the event loop (`no_display` when there is no display), then the viewer `make`
/// builds, and runs until the window is closed or `quit_after` frames were drawn.
pub fn run<V: Viewer>(
    no_display_error: NoDisplay,
    quit_after: Option<u64>,
    make: impl FnOnce() -> Result<V, ViewError>,
) -> Result<(), ViewError> {
    let event_loop = EventLoop::new().map_err(|e| no_display_error(no_display(&e)))?;
    let mut shell = Shell {
        viewer: make()?,
        gfx: None,
        error: None,
        mouse: OrbitMouse::default(),
        frames: 0,
        quit_after,
    };
    event_loop
        .run_app(&mut shell)
        .map_err(|e| ViewError::Graphics(one_line(&e)))?;
    match shell.error.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

impl<V: Viewer> Shell<V> {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: impl Into<ViewError>) {
        self.error.get_or_insert(e.into());
        event_loop.exit();
    }

    fn redraw(&mut self, event_loop: &ActiveEventLoop) {
        let Some(gfx) = self.gfx.as_mut() else {
            return;
        };
        let r = self.viewer.frame(gfx);
        if let Some(e) = self.viewer.deferred_error() {
            self.error.get_or_insert(e);
        }
        match r {
            Ok(()) => {
                self.frames += 1;
                if self.quit_after.is_some_and(|q| self.frames >= q) {
                    event_loop.exit();
                }
            }
            Err(e) => self.fail(event_loop, e),
        }
    }
}

impl<V: Viewer> ApplicationHandler for Shell<V> {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match Gfx::create(event_loop, V::TITLE, *self.viewer.size_mut()) {
            Ok(g) => {
                let (w, h) = g.size();
                self.viewer.resized(w, h);
                self.viewer.created(&g);
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
            self.viewer.resized(w, h);
        }
        if self.mouse.handle(&event, consumed, self.viewer.camera()) {
            return;
        }
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::RedrawRequested => self.redraw(event_loop),
            WindowEvent::KeyboardInput { event, .. }
                if !consumed && event.state == ElementState::Pressed =>
            {
                match &event.logical_key {
                    Key::Named(NamedKey::Escape) => event_loop.exit(),
                    key => {
                        if let Some(c) = Control::of(key) {
                            self.viewer.control(c)
                        }
                    }
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_map_to_the_shared_controls() {
        let ch = |s: &str| Key::Character(s.into());
        assert_eq!(
            Control::of(&Key::Named(NamedKey::Space)),
            Some(Control::Pause)
        );
        assert_eq!(Control::of(&ch(".")), Some(Control::Step));
        assert_eq!(Control::of(&ch("r")), Some(Control::Reset));
        assert_eq!(Control::of(&ch("R")), Some(Control::Reset));
        assert_eq!(Control::of(&ch("c")), Some(Control::Char("c")));
        assert_eq!(Control::of(&Key::Named(NamedKey::Enter)), None);
    }

    #[test]
    fn a_watched_file_changes_when_its_time_does() {
        let dir = std::env::temp_dir().join(format!("murmur-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("scene.toml");
        std::fs::write(&path, "a").unwrap();
        let mut w = FileWatch::new(path.clone());
        assert!(!w.changed(), "no poll before FILE_POLL");
        w.polled -= FILE_POLL;
        assert!(!w.changed(), "the same time");
        let later = SystemTime::now() + Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .and_then(|f| f.set_modified(later))
            .unwrap();
        w.polled -= FILE_POLL;
        assert!(w.changed());
        w.polled -= FILE_POLL;
        assert!(!w.changed(), "seen once");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
