//! The fluid viewer's egui overlay: the HUD (scene, lattice, backend, model, step, timings, the
//! CPU's downsampling, the last message) and the panel (pause, step, reset, steps per frame, the
//! collision model, the inlet velocity and the Reynolds number, the view, the quantity, the
//! slice, the colour range).

use super::Look;
use crate::view::overlay;
use murmur_common::lbm::CollisionModel;
use murmur_common::render::fluid::{Quantity, ViewKind};

/// Figures the HUD shows, measured by the window.
#[derive(Clone, Debug, Default)]
pub struct Hud {
    pub scene: String,
    pub lattice: [u32; 3],
    pub backend: String,
    pub display: String,
    pub step: u64,
    pub paused: bool,
    pub gpu_ms_per_step: Option<f64>,
    pub sim_ms: f64,
    /// Wall time of the last frame's smoke advections.
    pub smoke_ms: f64,
    pub render_ms: f64,
    pub present_ms: f64,
    pub fps: f64,
    /// `Some(k)`: the CPU draws at 1/k of the window's resolution.
    pub downsample: Option<u32>,
    /// The last one-line message (a bad scene edit, a reload, an unstable flow).
    pub message: Option<String>,
}

/// What the user asked for in this frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Actions {
    /// Start the scene again from its initial state.
    pub reset: bool,
    /// One step (while paused).
    pub step: bool,
    /// The model changed.
    pub model: bool,
    /// The Reynolds number changed (new rates).
    pub reynolds: bool,
    /// The view's kind or axis changed: frame the camera again.
    pub reframe: bool,
}

/// The panel's state.
#[derive(Clone, Debug)]
pub struct Panel {
    pub paused: bool,
    pub steps_per_frame: u32,
    pub model: CollisionModel,
    /// Factor on the scene's inlet velocity.
    pub inlet_factor: f32,
    /// Reynolds number on the scene's length and (scaled) velocity.
    pub reynolds: f64,
    /// The scene's own Reynolds number (at inlet factor 1).
    pub scene_reynolds: f64,
    pub look: Look,
    /// The colour range shown (the look's own, or the scene's default).
    pub range: (f32, f32),
}

impl Panel {
    pub fn ui(&mut self, ctx: &egui::Context, hud: &Hud, dims: [u32; 3]) -> Actions {
        let mut act = Actions::default();
        hud_ui(ctx, hud);
        overlay::panel_window("fluid", [10.0, 120.0], 270.0).show(ctx, |ui| {
            overlay::run_controls(
                ui,
                &mut self.paused,
                &mut act.step,
                &mut act.reset,
                &mut self.steps_per_frame,
                100,
            );
            egui::ComboBox::from_label("model")
                .selected_text(self.model.name())
                .show_ui(ui, |ui| {
                    for m in CollisionModel::ALL {
                        act.model |= ui.selectable_value(&mut self.model, m, m.name()).changed();
                    }
                });
            let inlet = ui
                .add(egui::Slider::new(&mut self.inlet_factor, 0.0..=2.0).text("inlet velocity x"));
            if inlet.changed() {
                // The viscosity stays: Re follows the velocity.
                self.reynolds = self.scene_reynolds * self.inlet_factor as f64;
            }
            let re = ui.add(
                egui::Slider::new(&mut self.reynolds, 1.0..=1e6)
                    .logarithmic(true)
                    .text("Reynolds number"),
            );
            act.reynolds |= overlay::committed(&re);
            ui.separator();
            ui.horizontal(|ui| {
                for (k, name) in [
                    (ViewKind::Slice, "slice"),
                    (ViewKind::Volume, "volume"),
                    (ViewKind::Smoke, "smoke"),
                ] {
                    if ui.radio_value(&mut self.look.kind, k, name).changed() {
                        act.reframe = true;
                        if k == ViewKind::Volume && !self.look.quantity.derived() {
                            self.look.quantity = Quantity::Q;
                            self.look.range = None;
                        }
                    }
                }
            });
            egui::ComboBox::from_label("quantity")
                .selected_text(self.look.quantity.name())
                .show_ui(ui, |ui| {
                    for q in Quantity::ALL {
                        if ui
                            .selectable_value(&mut self.look.quantity, q, q.name())
                            .changed()
                        {
                            self.look.range = None;
                        }
                    }
                });
            ui.horizontal(|ui| {
                ui.label("slice axis");
                for (a, name) in ["x", "y", "z"].iter().enumerate() {
                    if ui.radio_value(&mut self.look.axis, a, *name).changed() {
                        self.look.at = None;
                        act.reframe = true;
                    }
                }
            });
            let n = dims[self.look.axis];
            let mut at = self.look.at.unwrap_or(n / 2).min(n - 1);
            if ui
                .add(egui::Slider::new(&mut at, 0..=n - 1).text("slice cell"))
                .changed()
            {
                self.look.at = Some(at);
            }
            ui.horizontal(|ui| {
                ui.label("range");
                let (mut lo, mut hi) = self.range;
                let speed = ((hi - lo).abs() * 0.01).max(1e-9);
                let a = ui.add(egui::DragValue::new(&mut lo).speed(speed));
                let b = ui.add(egui::DragValue::new(&mut hi).speed(speed));
                if (a.changed() || b.changed()) && lo < hi {
                    self.look.range = Some((lo, hi));
                }
                if ui.button("auto").clicked() {
                    self.look.range = None;
                }
            });
            if self.look.kind != ViewKind::Slice {
                ui.add(
                    egui::Slider::new(&mut self.look.step, 0.25..=4.0).text("march step (cells)"),
                );
            }
            match self.look.kind {
                ViewKind::Volume => {
                    ui.add(egui::Slider::new(&mut self.look.opacity, 0.01..=4.0).text("opacity"));
                }
                ViewKind::Smoke => {
                    ui.add(
                        egui::Slider::new(&mut self.look.sigma, 0.01..=4.0).text("smoke density"),
                    );
                    ui.add(
                        egui::Slider::new(&mut self.look.ambient, 0.0..=1.0).text("ambient light"),
                    );
                }
                ViewKind::Slice => {}
            }
        });
        act
    }
}

fn hud_ui(ctx: &egui::Context, hud: &Hud) {
    overlay::hud(ctx, |ui| {
        let [nx, ny, nz] = hud.lattice;
        ui.label(format!(
            "{}  {nx} x {ny} x {nz}  {}  step {}{}",
            hud.scene,
            hud.backend,
            hud.step,
            if hud.paused { "  (paused)" } else { "" }
        ));
        let gpu = overlay::gpu_figure(hud.gpu_ms_per_step);
        ui.label(format!(
                    "{:.1} fps   sim {:.2} ms   smoke {:.2} ms   render+copy {:.2} ms   present {:.2} ms   {gpu}",
                    hud.fps, hud.sim_ms, hud.smoke_ms, hud.render_ms, hud.present_ms
                ));
        let mut display = format!("display: {}", hud.display);
        if let Some(k) = hud.downsample.filter(|&k| k > 1) {
            display += &format!("   CPU backend: drawn at 1/{k} resolution");
        }
        ui.label(display);
        overlay::message(ui, hud.message.as_ref());
    });
}
