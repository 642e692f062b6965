//! The egui pieces both viewers' overlays share: the panel's window and its run controls
//! (pause, step, reset, steps per frame), when a slider's value counts as set, and the HUD's
//! box, its GPU-timer figure and its message line.

/// The panel's window titled `title`, first at `pos` and `width` points wide, not resizable.
pub fn panel_window(title: &'static str, pos: [f32; 2], width: f32) -> egui::Window<'static> {
    egui::Window::new(title)
        .default_pos(pos)
        .default_width(width)
        .resizable(false)
}

/// The run controls: a pause / run button (space), step (`.`) and reset (`r`), which set
/// `step` and `reset` when clicked, and the steps per frame up to `max_steps`.
pub fn run_controls(
    ui: &mut egui::Ui,
    paused: &mut bool,
    step: &mut bool,
    reset: &mut bool,
    steps_per_frame: &mut u32,
    max_steps: u32,
) {
    ui.horizontal(|ui| {
        let label = if *paused { "run" } else { "pause" };
        if ui.button(label).on_hover_text("space").clicked() {
            *paused = !*paused;
        }
        if ui.button("step").on_hover_text(".").clicked() {
            *step = true;
        }
        if ui.button("reset").on_hover_text("r").clicked() {
            *reset = true;
        }
    });
    ui.add(egui::Slider::new(steps_per_frame, 1..=max_steps).text("steps/frame"));
}

/// A slider value is taken when the drag ends or it is typed in, not on every drag frame.
pub fn committed(r: &egui::Response) -> bool {
    r.drag_stopped() || (r.changed() && !r.dragged())
}

/// The HUD: `body` in a box at the top left that takes no input, its lines not wrapped.
pub fn hud(ctx: &egui::Context, body: impl FnOnce(&mut egui::Ui)) {
    egui::Area::new(egui::Id::new("hud"))
        .fixed_pos([10.0, 8.0])
        .interactable(false)
        .show(ctx, |ui| {
            egui::Frame::popup(ui.style()).show(ui, |ui| {
                ui.style_mut().wrap_mode = Some(egui::TextWrapMode::Extend);
                body(ui)
            });
        });
}

/// The HUD's GPU figure: the mean ms per step from CUDA events, or that there is no timer.
pub fn gpu_figure(ms_per_step: Option<f64>) -> String {
    match ms_per_step {
        Some(ms) => format!("{ms:.3} ms/step GPU"),
        None => "no GPU timer".into(),
    }
}

/// The HUD's last message, highlighted (nothing without one).
pub fn message(ui: &mut egui::Ui, message: Option<&String>) {
    if let Some(m) = message {
        ui.colored_label(egui::Color32::from_rgb(255, 200, 80), m);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_figure_says_when_there_is_no_timer() {
        assert_eq!(gpu_figure(Some(0.12345)), "0.123 ms/step GPU");
        assert_eq!(gpu_figure(None), "no GPU timer");
    }
}
