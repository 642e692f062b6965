//! The viewer's egui overlay: the HUD (N, method, backend, GPU ms per step, frames per second)
//! and the tinkering panel (every rule parameter, N, method, cell-width factor, colour, speed).
//! The panel edits a [`FlockConfig`]; the window validates it with `FlockConfig::settings` and
//! applies it through `set_settings` (or `set_state` for N, scale and seed: a new flock).

use super::overlay;
use crate::flock::config::{FlockConfig, MAX_X_SPLIT};
use crate::flock::Method;
use murmur_common::flock::{FlockParams, PARAMS};
use murmur_common::render::ColourMode;

/// Slider range of N (logarithmic).
pub const N_RANGE: (u64, u64) = (100, 4_000_000);

/// Figures the HUD shows, measured by the window.
#[derive(Clone, Debug, Default)]
pub struct Hud {
    pub n: usize,
    pub method: &'static str,
    pub backend: String,
    /// The graphics adapter that presents the window, e.g. `llvmpipe (Vulkan)`.
    pub display: String,
    pub step: u64,
    pub paused: bool,
    /// GPU time per step from CUDA events (None on the CPU).
    pub gpu_ms_per_step: Option<f64>,
    /// Wall time of the last frame's steps.
    pub sim_ms: f64,
    /// Wall time of the last frame's rasterisation and copy into the window's buffer.
    pub render_ms: f64,
    /// Wall time of the last frame's upload to the window's texture, egui and presentation
    /// (includes waiting for vsync).
    pub present_ms: f64,
    pub fps: f64,
    /// The last one-line message (a bad config file, a rejected value, a reload).
    pub message: Option<String>,
}

/// What the user asked for in this frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Actions {
    /// Rules, method or grid changed: apply with `set_settings`.
    pub settings: bool,
    /// N, scale or seed changed, or "reset" was pressed: a new random flock.
    pub reset: bool,
    /// Advance one step (while paused).
    pub step: bool,
}

/// The panel's own state besides the configuration.
#[derive(Clone, Debug)]
pub struct Panel {
    pub steps_per_frame: u32,
    pub colour: ColourMode,
    pub paused: bool,
    /// Pending N while its slider is dragged (applied on release: a new flock is costly).
    n_edit: u64,
    scale_edit: f32,
}

impl Panel {
    pub fn new(config: &FlockConfig) -> Panel {
        Panel {
            steps_per_frame: 1,
            colour: ColourMode::Heading,
            paused: false,
            n_edit: config.sim.n,
            scale_edit: config.params.scale,
        }
    }

    /// Takes N and scale from a reloaded configuration.
    pub fn sync(&mut self, config: &FlockConfig) {
        self.n_edit = config.sim.n;
        self.scale_edit = config.params.scale;
    }

    /// Draws the HUD and the panel; edits `config` and reports what changed.
    pub fn ui(&mut self, ctx: &egui::Context, config: &mut FlockConfig, hud: &Hud) -> Actions {
        let mut act = Actions::default();
        hud_ui(ctx, hud);
        overlay::panel_window("flock", [10.0, 110.0], 260.0).show(ctx, |ui| {
            overlay::run_controls(
                ui,
                &mut self.paused,
                &mut act.step,
                &mut act.reset,
                &mut self.steps_per_frame,
                20,
            );
            ui.horizontal(|ui| {
                ui.label("colour (c)");
                ui.radio_value(&mut self.colour, ColourMode::Heading, "heading");
                ui.radio_value(&mut self.colour, ColourMode::Speed, "speed");
            });
            ui.separator();
            let n = ui.add(
                egui::Slider::new(&mut self.n_edit, N_RANGE.0..=N_RANGE.1)
                    .logarithmic(true)
                    .text("N (new flock)"),
            );
            if overlay::committed(&n) && self.n_edit != config.sim.n {
                config.sim.n = self.n_edit;
                act.reset = true;
            }
            egui::ComboBox::from_label("method")
                .selected_text(config.sim.method.name())
                .show_ui(ui, |ui| {
                    for m in Method::ALL {
                        act.settings |= ui
                            .selectable_value(&mut config.sim.method, m, m.name())
                            .changed();
                    }
                });
            if config.sim.method == Method::Naive && config.sim.n > 20_000 {
                ui.colored_label(egui::Color32::YELLOW, "naive is O(N²): slow at this N");
            }
            act.settings |= ui
                .add(
                    egui::Slider::new(&mut config.sim.cell_width_factor, 0.5..=4.0)
                        .text("cell width factor"),
                )
                .changed();
            act.settings |= ui
                .add(
                    egui::Slider::new(&mut config.sim.x_split, 1..=MAX_X_SPLIT)
                        .text("x-split (cells along x narrower)"),
                )
                .changed();
            ui.separator();
            for spec in &PARAMS {
                let (name, (lo, hi)) = (spec.name, spec.slider);
                if name == "scale" {
                    let r = ui.add(
                        egui::Slider::new(&mut self.scale_edit, lo..=hi).text("scale (new flock)"),
                    );
                    if overlay::committed(&r) && self.scale_edit != config.params.scale {
                        config.params.scale = self.scale_edit;
                        act.reset = true;
                    }
                    continue;
                }
                let v = (spec.field)(&mut config.params);
                act.settings |= ui.add(egui::Slider::new(v, lo..=hi).text(name)).changed();
            }
            if ui.button("CIS 565 defaults").clicked() {
                let scale = config.params.scale;
                config.params = FlockParams {
                    scale,
                    ..FlockParams::CIS565
                };
                act.settings = true;
            }
        });
        act
    }
}

fn hud_ui(ctx: &egui::Context, hud: &Hud) {
    overlay::hud(ctx, |ui| {
        let gpu = overlay::gpu_figure(hud.gpu_ms_per_step);
        ui.label(format!(
            "N {}  {}  {}  step {}{}",
            hud.n,
            hud.method,
            hud.backend,
            hud.step,
            if hud.paused { "  (paused)" } else { "" }
        ));
        ui.label(format!(
            "{:.1} fps   sim {:.2} ms   render+copy {:.2} ms   present {:.2} ms   {gpu}",
            hud.fps, hud.sim_ms, hud.render_ms, hud.present_ms
        ));
        ui.label(format!("display: {}", hud.display));
        overlay::message(ui, hud.message.as_ref());
    });
}
