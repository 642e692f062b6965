//! `murmur fluid render`: fluid frames without a display. The lattice steps (with the scene's
//! inlet ramp and the smoke's advection every `smoke.every` steps), the backend draws each frame
//! where its lattice lives (`FluidBackend::render_into`), the host adds the colour bar and the
//! labels, and the frames become numbered PNG files and, optionally, one animated GIF (the
//! writers of `crate::view::frames`). With `--compare` one frame holds three panes, the
//! same scene under BGK, RM-MRT and ACM-MRT; a pane whose flow leaves its bounds keeps its last
//! frame, dimmed, and says at which step, cell and quantity its model gave up. Timing separates the simulation, the
//! smoke's advection, drawing and copying, and encoding.

use super::{colour_bar, scaled, text, upscale, Look, SOLID_RADIUS};
use crate::fluid::driver::check_health;
use crate::fluid::riders::Rider;
use crate::fluid::scene::Scene;
use crate::fluid::{FluidBackend, FluidError, SmokeSetup};
use crate::view::frames::{check_counts, check_output, FrameFiles, FrameTimes};
use crate::view::ViewError;
use murmur_common::lbm::health::Bounds;
use murmur_common::render::fluid::ViewKind;
use murmur_common::render::BACKGROUND;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// What to render and where.
#[derive(Clone, Debug)]
pub struct FluidRenderOptions {
    /// Number of frames (at least 1).
    pub frames: u32,
    /// Simulation steps before each frame (at least 1).
    pub every: u32,
    pub width: u32,
    pub height: u32,
    /// Folder of `frame_00000.png`, ...; created when missing.
    pub out: PathBuf,
    pub gif: Option<PathBuf>,
    pub look: Look,
    /// Camera turn about the vertical axis per frame, degrees.
    pub spin_deg: f32,
    /// Each pane is drawn at `1 / downsample` of its size and scaled up.
    pub downsample: u32,
    /// Steps run before frame 0 (not drawn).
    pub skip: u64,
    pub progress: bool,
}

impl FluidRenderOptions {
    /// Checks the options and creates the output folder, before anything runs.
    pub fn prepare(&self) -> Result<(), ViewError> {
        check_counts(self.frames, self.every)?;
        if !(1..=16).contains(&self.downsample) {
            return Err(ViewError::Options(format!(
                "--downsample must be 1 to 16, got {}",
                self.downsample
            )));
        }
        check_output(
            self.width,
            self.height,
            self.spin_deg,
            &self.out,
            self.gif.as_deref(),
        )
    }
}

/// One simulation drawn into one pane of the frame.
pub struct Pane {
    pub backend: Box<dyn FluidBackend>,
    /// What rides the pane's flow (a scene's flocks), stepped with it and drawn over it.
    pub rider: Option<Box<dyn Rider>>,
    /// Shown in the pane's corner (the model's name in a comparison).
    pub label: String,
    /// Why the pane stopped (its model gave up), if it did.
    pub failed: Option<String>,
    /// The step of the pane's last frame written (for the health check's message).
    last_frame: Option<u64>,
    /// The pane's last frame (kept when it stops; a comparison's panes only).
    last: Vec<u8>,
    /// The frame the backend draws, when it is not the output frame (scaled or a pane).
    small: Vec<u8>,
}

impl Pane {
    pub fn new(
        backend: Box<dyn FluidBackend>,
        rider: Option<Box<dyn Rider>>,
        label: String,
    ) -> Pane {
        Pane {
            backend,
            rider,
            label,
            failed: None,
            last_frame: None,
            last: Vec::new(),
            small: Vec::new(),
        }
    }
}

/// How the panes step: the inlets' schedule (ramp, gust), an extra factor on the inlet velocity, the
/// smoke, and the health check (`driver::check_health`, the run's): its bounds, every
/// `check_every` steps (0: only after each frame's steps).
#[derive(Clone, Debug)]
pub struct Stepping {
    pub inlet: crate::fluid::inlet::InletSchedule,
    pub inlet_factor: f32,
    pub smoke: SmokeSetup,
    pub health: Bounds,
    pub check_every: u64,
}

impl Stepping {
    pub fn of(scene: &Scene) -> Result<Stepping, FluidError> {
        Ok(Stepping {
            inlet: scene.inlet,
            inlet_factor: 1.0,
            smoke: super::smoke_setup(scene)?,
            health: scene.bounds(),
            check_every: scene.file.run.check_every,
        })
    }

    /// `steps` steps of `b`, advecting the smoke on every `smoke.every`-th step and checking the
    /// health on every `check_every`-th (`last_output`: the last frame written, for the
    /// message); returns the wall time spent advecting (the device is waited for around each
    /// advection).
    pub fn advance(
        &self,
        b: &mut dyn FluidBackend,
        mut rider: Option<&mut (dyn Rider + '_)>,
        steps: u64,
        last_output: Option<u64>,
    ) -> Result<Duration, FluidError> {
        let mut smoke = Duration::ZERO;
        for _ in 0..steps {
            let step = b.step_count() + 1;
            b.set_inlet_scale(self.inlet.scale(step) * self.inlet_factor);
            b.step()?;
            if let Some(r) = rider.as_deref_mut() {
                r.after_step(b)?;
            }
            if !self.smoke.sources.is_empty() && step.is_multiple_of(self.smoke.every as u64) {
                b.synchronize()?;
                let t = Instant::now();
                b.view()?.advect_smoke(&self.smoke)?;
                b.synchronize()?;
                smoke += t.elapsed();
            }
            if self.check_every > 0 && step.is_multiple_of(self.check_every) {
                check_health(b, &self.health, self.check_every, last_output)?;
            }
        }
        Ok(smoke)
    }

    /// [`Stepping::advance`], then the health check after the last step (a frame's), unless
    /// that step was just checked.
    pub fn advance_checked(
        &self,
        b: &mut dyn FluidBackend,
        rider: Option<&mut (dyn Rider + '_)>,
        steps: u64,
        last_output: Option<u64>,
    ) -> Result<Duration, FluidError> {
        let smoke = self.advance(b, rider, steps, last_output)?;
        let step = b.step_count();
        if steps > 0 && !(self.check_every > 0 && step.is_multiple_of(self.check_every)) {
            check_health(b, &self.health, self.check_every, last_output)?;
        }
        Ok(smoke)
    }

    /// Advances a pane (unless it stopped) and checks its health; a model that gives up marks
    /// the pane instead of failing the render when `tolerate` (a comparison).
    pub fn advance_pane(
        &self,
        p: &mut Pane,
        steps: u64,
        tolerate: bool,
    ) -> Result<Duration, FluidError> {
        if p.failed.is_some() {
            return Ok(Duration::ZERO);
        }
        match self.advance_checked(
            p.backend.as_mut(),
            p.rider.as_deref_mut(),
            steps,
            p.last_frame,
        ) {
            Ok(d) => Ok(d),
            Err(e) if tolerate => {
                let msg = e.breach().unwrap_or_else(|| e.to_string());
                p.failed = Some(format!("{}: gave up ({msg})", p.label));
                Ok(Duration::ZERO)
            }
            Err(e) => Err(e),
        }
    }
}

/// Wall time of a frame's parts: the backends drawing their panes (their stages and the copy
/// back) and the host's share (scaling, panes side by side, labels and the colour bar).
#[derive(Clone, Copy, Debug, Default)]
pub struct DrawTimes {
    pub backend: Duration,
    pub host: Duration,
}

/// Draws every pane side by side into `rgba` (`width x height`): pane `i` of `k` spans columns
/// `i w / k .. (i + 1) w / k`, drawn at `1 / downsample` and scaled up; labels and the colour
/// bar on top. `look` and the camera's angles are shared; each pane frames its own size. One
/// pane at full size is drawn straight into `rgba`.
#[allow(clippy::too_many_arguments)]
pub fn draw_panes(
    panes: &mut [Pane],
    scene: &Scene,
    look: &Look,
    yaw_offset: f32,
    width: u32,
    height: u32,
    downsample: u32,
    rgba: &mut [u8],
) -> Result<DrawTimes, FluidError> {
    let start = Instant::now();
    let mut backend = Duration::ZERO;
    let k = panes.len() as u32;
    let l = scene.setup.lattice();
    let range = look.range_for(scene);
    let frame_of = |w: u32, h: u32| {
        let mut cam = look.camera(l, w, h);
        cam.yaw += yaw_offset;
        look.frame(&cam, l, range, BACKGROUND)
    };
    if let [p] = panes {
        // One pane (a pane stops only in a comparison): no pane buffer, no copy of the last
        // frame.
        let (sw, sh) = scaled(width, height, downsample);
        let frame = frame_of(sw, sh);
        let t = Instant::now();
        let drawn = match p.rider.as_ref() {
            Some(r) => r.drawn()?,
            None => Default::default(),
        };
        if downsample == 1 {
            p.backend
                .view()?
                .render_into(&frame, SOLID_RADIUS, drawn.points(), rgba)?;
            backend += t.elapsed();
        } else {
            p.small.resize((sw * sh * 4) as usize, 0);
            p.backend
                .view()?
                .render_into(&frame, SOLID_RADIUS, drawn.points(), &mut p.small)?;
            backend += t.elapsed();
            upscale(&p.small, sw, downsample, rgba, width, height);
        }
    }
    for (i, p) in panes.iter_mut().enumerate().filter(|_| k > 1) {
        let x0 = i as u32 * width / k;
        let pw = (i as u32 + 1) * width / k - x0;
        let (sw, sh) = scaled(pw, height, downsample);
        let mut pane = vec![0u8; (pw * height * 4) as usize];
        if p.failed.is_none() {
            let frame = frame_of(sw, sh);
            p.small.resize((sw * sh * 4) as usize, 0);
            let t = Instant::now();
            let drawn = match p.rider.as_ref() {
                Some(r) => r.drawn()?,
                None => Default::default(),
            };
            p.backend
                .view()?
                .render_into(&frame, SOLID_RADIUS, drawn.points(), &mut p.small)?;
            backend += t.elapsed();
            if downsample == 1 {
                pane.copy_from_slice(&p.small);
            } else {
                upscale(&p.small, sw, downsample, &mut pane, pw, height);
            }
            p.last.clone_from(&pane);
        } else if p.last.len() == pane.len() {
            // The last good frame, dimmed.
            for (d, s) in pane.chunks_exact_mut(4).zip(p.last.chunks_exact(4)) {
                d.copy_from_slice(&[s[0] / 3, s[1] / 3, s[2] / 3, 255]);
            }
        } else {
            for d in pane.chunks_exact_mut(4) {
                d.copy_from_slice(&BACKGROUND.to_le_bytes());
            }
        }
        text(&mut pane, pw, height, 8, 6, &p.label);
        if let Some(m) = &p.failed {
            text(&mut pane, pw, height, 8, 24, m);
        }
        for y in 0..height {
            let (s, d) = ((y * pw * 4) as usize, ((y * width + x0) * 4) as usize);
            rgba[d..d + (pw * 4) as usize].copy_from_slice(&pane[s..s + (pw * 4) as usize]);
        }
    }
    if look.kind != ViewKind::Smoke {
        let unit = match look.quantity {
            murmur_common::render::fluid::Quantity::Vorticity => " (1/step)",
            murmur_common::render::fluid::Quantity::Q => " (1/step^2)",
            murmur_common::render::fluid::Quantity::Smoke => "",
            _ => " (lattice units)",
        };
        let label = format!("{}{unit}", look.quantity.name());
        colour_bar(rgba, width, height, look.map(), range.0, range.1, &label);
    }
    Ok(DrawTimes {
        backend,
        host: start.elapsed().saturating_sub(backend),
    })
}

/// Milliseconds per frame of drawing: in all, the backends', the host's.
#[derive(Clone, Copy, Debug)]
pub struct DrawMs {
    pub total: f64,
    pub backend: f64,
    pub host: f64,
}

/// Figures of a headless fluid render.
#[derive(Clone, Debug)]
pub struct FluidRenderReport {
    /// The steps of all panes, the GPU time of the first pane's; drawing means the fields,
    /// derived, light, splats, shading.
    pub times: FrameTimes,
    /// Wall time of one smoke advection (first pane), and the steps between two.
    pub smoke_ms: Option<f64>,
    pub smoke_every: u32,
    /// The drawing times over the frames after the first (which allocates the frame's buffers), split
    /// into the backends' share (their stages and the copy back) and the host's (scaling,
    /// panes, labels, colour bar); `None` with one frame.
    pub steady: Option<DrawMs>,
    /// Per-frame GPU time of each of the backend's render stages (first pane; None on the CPU).
    pub render_stages: Option<Vec<(&'static str, f64)>>,
    /// The panes that gave up.
    pub failed: Vec<String>,
}

impl FluidRenderReport {
    pub fn summary(&self, what: &str, out: &std::path::Path) -> String {
        let mut s = format!(
            "rendered {} frames ({what}) into {}\nper frame: {}",
            self.times.frames,
            out.display(),
            self.times.per_frame(4)
        );
        if let Some(d) = self.steady {
            s += &format!(
                "\nrender+copy after the first frame: {:.3} ms per frame (backend {:.3} ms: the \
                 frame's stages, and from a GPU the copy back; host {:.3} ms: scaling, panes, \
                 labels, colour bar)",
                d.total, d.backend, d.host
            );
        }
        if let Some(stages) = &self.render_stages {
            let list: Vec<String> = stages
                .iter()
                .map(|(n, ms)| format!("{n} {ms:.3} ms"))
                .collect();
            s += &format!(
                "\nrender stages per frame (GPU events): {}",
                list.join(", ")
            );
        }
        if let Some(a) = self.smoke_ms {
            let per_step = a / self.smoke_every as f64;
            let base = self.times.gpu_ms_per_step.unwrap_or(self.times.step_ms());
            s += &format!(
                "\nsmoke: {a:.4} ms per advection (fields + BFECC) every {} steps = {per_step:.4} \
                 ms per step, {:.1} % of a step ({base:.4} ms)",
                self.smoke_every,
                100.0 * per_step / base.max(1e-12)
            );
        }
        for f in &self.failed {
            s += &format!("\n{f}");
        }
        s
    }
}

/// Writes `opts.frames` frames of `panes` side by side; frame `k` shows the state after `skip +
/// k * every` steps. Call [`FluidRenderOptions::prepare`] first.
pub fn render(
    panes: &mut [Pane],
    scene: &Scene,
    stepping: &Stepping,
    opts: &FluidRenderOptions,
) -> Result<FluidRenderReport, ViewError> {
    let tolerate = panes.len() > 1;
    let mut rgba = vec![0u8; opts.width as usize * opts.height as usize * 4];
    let mut files = FrameFiles::create(&opts.out, opts.gif.as_deref(), opts.width, opts.height)?;
    let (mut sim, mut smoke, mut draw, mut write) = (
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
        Duration::ZERO,
    );
    // The frames after the first: in all, and the backends' and the host's shares.
    let mut steady = (Duration::ZERO, DrawTimes::default());
    let mut advections = 0u64;
    let bar = crate::backend::progress_bar(opts.frames as u64, "frame", opts.progress);
    for p in panes.iter_mut() {
        stepping.advance_pane(p, opts.skip, tolerate)?;
        p.backend.reset_times();
    }
    let every_smoke = stepping.smoke.every as u64;
    for k in 0..opts.frames {
        let t0 = Instant::now();
        let mut smoke_here = Duration::ZERO;
        if k > 0 {
            for (i, p) in panes.iter_mut().enumerate() {
                let before = p.backend.step_count();
                let d = stepping.advance_pane(p, opts.every as u64, tolerate)?;
                if i == 0 {
                    smoke += d;
                    let after = p.backend.step_count();
                    if !stepping.smoke.sources.is_empty() {
                        advections += after / every_smoke - before / every_smoke;
                    }
                }
                smoke_here += d;
            }
        }
        for p in panes.iter_mut().filter(|p| p.failed.is_none()) {
            p.backend.synchronize()?;
        }
        let t1 = Instant::now();
        let yaw = (k as f32 * opts.spin_deg).to_radians();
        let parts = draw_panes(
            panes,
            scene,
            &opts.look,
            yaw,
            opts.width,
            opts.height,
            opts.downsample,
            &mut rgba,
        )?;
        let t2 = Instant::now();
        files.write(k, &rgba)?;
        for p in panes.iter_mut().filter(|p| p.failed.is_none()) {
            p.last_frame = Some(p.backend.step_count());
        }
        let t3 = Instant::now();
        if k > 0 {
            sim += (t1 - t0).saturating_sub(smoke_here);
        }
        draw += t2 - t1;
        write += t3 - t2;
        if k > 0 {
            steady.0 += t2 - t1;
            steady.1.backend += parts.backend;
            steady.1.host += parts.host;
        }
        bar.inc(1);
    }
    bar.finish_and_clear();
    files.finish()?;
    let per_frame = |d: Duration| d.as_secs_f64() * 1e3 / opts.frames as f64;
    let stepped = (opts.frames - 1).max(1) as f64;
    Ok(FluidRenderReport {
        times: FrameTimes {
            frames: opts.frames,
            steps_per_frame: opts.every,
            sim_ms_per_frame: sim.as_secs_f64() * 1e3 / stepped,
            gpu_ms_per_step: panes[0].backend.gpu_ms_per_step(),
            render_ms_per_frame: per_frame(draw),
            write_ms_per_frame: per_frame(write),
        },
        smoke_ms: (advections > 0).then(|| smoke.as_secs_f64() * 1e3 / advections as f64),
        smoke_every: stepping.smoke.every,
        steady: (opts.frames > 1).then(|| {
            let ms = |d: Duration| d.as_secs_f64() * 1e3 / stepped;
            DrawMs {
                total: ms(steady.0),
                backend: ms(steady.1.backend),
                host: ms(steady.1.host),
            }
        }),
        render_stages: panes[0]
            .backend
            .view_hooks()
            .and_then(|v| v.render_times())
            .map(|t| t.mean_ms()),
        failed: panes.iter().filter_map(|p| p.failed.clone()).collect(),
    })
}
