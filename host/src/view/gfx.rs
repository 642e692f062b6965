//! The window stack both viewers share (`murmur flock view`, `murmur fluid view`): a winit
//! window, pixels' buffer (the frame the backend drew lands in it), and the egui layer drawn
//! over it, presented in one wgpu pass.

use super::ViewError;
use pixels::{Pixels, SurfaceTexture};
use std::sync::Arc;
use std::time::Instant;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::ActiveEventLoop;
use winit::window::Window;

/// The window, its pixel buffer and the egui layer, created on `resumed`.
pub struct Gfx {
    pub window: Arc<Window>,
    pub pixels: Pixels<'static>,
    egui: EguiLayer,
    /// The graphics adapter that presents, e.g. `llvmpipe (Vulkan)`.
    pub adapter: String,
}

struct EguiLayer {
    ctx: egui::Context,
    state: egui_winit::State,
    renderer: egui_wgpu::Renderer,
    screen: egui_wgpu::ScreenDescriptor,
}

/// The frame rate shown in the HUD: the time from `last` to `now` (which becomes `last`),
/// smoothed into `fps` over about ten frames (0 until the first frame).
pub fn tick_fps(fps: &mut f64, last: &mut Instant, now: Instant) {
    let dt = (now - *last).as_secs_f64();
    *last = now;
    if dt > 0.0 {
        let rate = 1.0 / dt;
        *fps = if *fps > 0.0 {
            0.9 * *fps + 0.1 * rate
        } else {
            rate
        };
    }
}

/// The steps of this frame: `per_frame` while running; while paused, one when a single step
/// was asked (`single`, taken either way, so an ask while running is not kept for later).
pub fn steps_this_frame(paused: bool, single: &mut bool, per_frame: u32) -> u32 {
    if paused {
        u32::from(std::mem::take(single))
    } else {
        *single = false;
        per_frame
    }
}

/// The error on one line.
pub fn one_line(e: &dyn std::fmt::Display) -> String {
    e.to_string().replace('\n', " ")
}

/// winit's connection error without the source location it prefixes (`os error at
/// .../winit-0.30.13/src/...rs:788: `), with the display it tried.
pub fn no_display(e: &winit::error::EventLoopError) -> String {
    let text = one_line(e);
    let reason = text.rsplit_once(": ").map_or(text.as_str(), |(_, r)| r);
    let display = std::env::var("DISPLAY").unwrap_or_default();
    format!("DISPLAY={display}: {reason}")
}

impl Gfx {
    /// Opens a window titled `title` of `size` physical pixels with a buffer of its inner size.
    pub fn create(
        event_loop: &ActiveEventLoop,
        title: &str,
        size: (u32, u32),
    ) -> Result<Gfx, ViewError> {
        let gfx = |e: &dyn std::fmt::Display| ViewError::Graphics(one_line(e));
        let attrs = Window::default_attributes()
            .with_title(title)
            .with_inner_size(PhysicalSize::new(size.0, size.1));
        let window = Arc::new(event_loop.create_window(attrs).map_err(|e| gfx(&e))?);
        let inner = window.inner_size();
        let (w, h) = (inner.width.max(1), inner.height.max(1));
        let surface = SurfaceTexture::new(w, h, window.clone());
        let pixels = Pixels::new(w, h, surface).map_err(|e| gfx(&e))?;
        let info = pixels.adapter().get_info();
        let adapter = format!("{} ({:?})", info.name, info.backend);
        let ctx = egui::Context::default();
        let max_texture = pixels.device().limits().max_texture_dimension_2d as usize;
        let state = egui_winit::State::new(
            ctx.clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(max_texture),
        );
        let renderer = egui_wgpu::Renderer::new(
            pixels.device(),
            pixels.render_texture_format(),
            egui_wgpu::RendererOptions::default(),
        );
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [w, h],
            pixels_per_point: window.scale_factor() as f32,
        };
        Ok(Gfx {
            window,
            pixels,
            egui: EguiLayer {
                ctx,
                state,
                renderer,
                screen,
            },
            adapter,
        })
    }

    /// The buffer's size in pixels.
    pub fn size(&self) -> (u32, u32) {
        let t = self.pixels.texture();
        (t.width(), t.height())
    }

    /// Hands a window event to egui; true when egui used it (the viewer then ignores it).
    /// Resizes and scale changes are applied here; a resize returns its new size in `resized`.
    pub fn event(
        &mut self,
        event: &WindowEvent,
        resized: &mut Option<(u32, u32)>,
    ) -> Result<bool, ViewError> {
        let consumed = self
            .egui
            .state
            .on_window_event(&self.window, event)
            .consumed;
        match event {
            WindowEvent::Resized(s) if s.width > 0 && s.height > 0 => {
                self.pixels
                    .resize_surface(s.width, s.height)
                    .and_then(|()| self.pixels.resize_buffer(s.width, s.height))
                    .map_err(|e| ViewError::Graphics(one_line(&e)))?;
                self.egui.screen.size_in_pixels = [s.width, s.height];
                *resized = Some((s.width, s.height));
            }
            WindowEvent::ScaleFactorChanged { scale_factor, .. } => {
                self.egui.screen.pixels_per_point = *scale_factor as f32;
            }
            _ => {}
        }
        Ok(consumed)
    }

    /// Runs `ui` for egui, then uploads the buffer, draws egui over it and presents; returns
    /// the milliseconds that took (vsync waits included) and asks for the next redraw.
    pub fn present(&mut self, ui: impl FnMut(&egui::Context)) -> Result<f64, ViewError> {
        let mut ui = ui;
        let egui = &mut self.egui;
        let input = egui.state.take_egui_input(&self.window);
        let out = egui.ctx.run_ui(input, |u| ui(u.ctx()));
        egui.state
            .handle_platform_output(&self.window, out.platform_output);
        let jobs = egui.ctx.tessellate(out.shapes, out.pixels_per_point);
        let textures = out.textures_delta;
        let (renderer, screen) = (&mut egui.renderer, &egui.screen);
        let t = Instant::now();
        self.pixels
            .render_with(|encoder, target, context| {
                context.scaling_renderer.render(encoder, target);
                for (id, delta) in &textures.set {
                    renderer.update_texture(&context.device, &context.queue, *id, delta);
                }
                renderer.update_buffers(&context.device, &context.queue, encoder, &jobs, screen);
                let mut pass = encoder
                    .begin_render_pass(&pixels::wgpu::RenderPassDescriptor {
                        label: Some("egui"),
                        color_attachments: &[Some(pixels::wgpu::RenderPassColorAttachment {
                            view: target,
                            resolve_target: None,
                            ops: pixels::wgpu::Operations {
                                load: pixels::wgpu::LoadOp::Load,
                                store: pixels::wgpu::StoreOp::Store,
                            },
                            depth_slice: None,
                        })],
                        depth_stencil_attachment: None,
                        timestamp_writes: None,
                        occlusion_query_set: None,
                        multiview_mask: None,
                    })
                    .forget_lifetime();
                renderer.render(&mut pass, &jobs, screen);
                drop(pass);
                for id in &textures.free {
                    renderer.free_texture(id);
                }
                Ok(())
            })
            .map_err(|e| ViewError::Graphics(one_line(&e)))?;
        self.window.request_redraw();
        Ok(t.elapsed().as_secs_f64() * 1e3)
    }
}

/// Orbit speed of a mouse drag.
const RADIANS_PER_PIXEL: f32 = 0.005;
/// Pixels of a touchpad scroll per zoom step.
const PIXELS_PER_ZOOM_STEP: f64 = 50.0;

/// The orbit camera's mouse: a left drag orbits, the wheel zooms; events the panel took
/// (`consumed`) start no drag and no zoom. Both viewers use it.
#[derive(Default)]
pub struct OrbitMouse {
    dragging: bool,
    cursor: Option<(f64, f64)>,
}

impl OrbitMouse {
    /// Applies `event` to `camera`; true when it was a mouse event (nothing else to do).
    pub fn handle(
        &mut self,
        event: &WindowEvent,
        consumed: bool,
        camera: &mut murmur_common::render::Camera,
    ) -> bool {
        use winit::event::{ElementState, MouseButton, MouseScrollDelta};
        match event {
            WindowEvent::MouseInput {
                state,
                button: MouseButton::Left,
                ..
            } => self.dragging = *state == ElementState::Pressed && !consumed,
            WindowEvent::CursorMoved { position, .. } => {
                if let (true, Some((x, y))) = (self.dragging, self.cursor) {
                    let (dx, dy) = ((position.x - x) as f32, (position.y - y) as f32);
                    camera.orbit(dx, dy, RADIANS_PER_PIXEL);
                }
                self.cursor = Some((position.x, position.y));
            }
            WindowEvent::MouseWheel { delta, .. } => {
                if !consumed {
                    let steps = match delta {
                        MouseScrollDelta::LineDelta(_, y) => *y,
                        MouseScrollDelta::PixelDelta(p) => (p.y / PIXELS_PER_ZOOM_STEP) as f32,
                    };
                    camera.zoom(steps);
                }
            }
            _ => return false,
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_single_step_is_taken_once_and_only_while_paused() {
        let mut single = true;
        assert_eq!(steps_this_frame(true, &mut single, 8), 1);
        assert!(!single);
        assert_eq!(steps_this_frame(true, &mut single, 8), 0);
        single = true;
        assert_eq!(steps_this_frame(false, &mut single, 8), 8);
        assert!(!single, "an ask while running is dropped");
    }

    #[test]
    fn the_frame_rate_starts_at_the_first_frame_and_then_smooths() {
        let (mut fps, t0) = (0.0, Instant::now());
        let ms = |n| t0 + std::time::Duration::from_millis(n);
        let mut last = t0;
        tick_fps(&mut fps, &mut last, ms(100));
        assert!((fps - 10.0).abs() < 1e-9, "{fps}");
        assert_eq!(last, ms(100));
        tick_fps(&mut fps, &mut last, ms(110));
        assert!((fps - 19.0).abs() < 1e-6, "0.9 x 10 + 0.1 x 100: {fps}");
    }
}
