//! `murmur flock render`: frames without a display. The flock steps, the backend rasterises each
//! frame where its boids live (`FlockBackend::render_into`), and the frames become numbered PNG
//! files and, optionally, one animated GIF (`super::frames`). Timing separates simulation from drawing and copying.

use super::frames::{check_counts, check_output, FrameFiles, FrameTimes};
use super::{default_style, ViewError};
use crate::flock::{FlockBackend, FlockSettings};
use murmur_common::render::{Camera, ColourMode, BACKGROUND};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What to render and where.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    /// Number of frames (at least 1).
    pub frames: u32,
    /// Simulation steps before each frame (at least 1).
    pub every: u32,
    /// Frame size in pixels.
    pub width: u32,
    pub height: u32,
    /// Folder of the PNG frames `frame_00000.png`, ...; created when missing.
    pub out: PathBuf,
    /// Also write an animated GIF of all frames here.
    pub gif: Option<PathBuf>,
    pub colour: ColourMode,
    /// Camera turn about the vertical axis per frame, in degrees.
    pub spin_deg: f32,
    /// A progress bar over the frames on stderr.
    pub progress: bool,
}

impl RenderOptions {
    /// Checks the options and creates the output folder, before any simulation runs.
    pub fn prepare(&self) -> Result<(), ViewError> {
        check_counts(self.frames, self.every)?;
        check_output(
            self.width,
            self.height,
            self.spin_deg,
            &self.out,
            self.gif.as_deref(),
        )
    }
}

/// Figures of a headless render.
#[derive(Clone, Debug)]
pub struct RenderReport {
    pub n: usize,
    pub paths: Vec<PathBuf>,
    /// Drawing means rasterising the boids.
    pub times: FrameTimes,
}

impl RenderReport {
    /// The summary lines.
    pub fn summary(&self, what: &str) -> String {
        let folder = self
            .paths
            .first()
            .and_then(|p| p.parent())
            .unwrap_or(Path::new("."));
        format!(
            "rendered {} frames of {} boids ({what}) into {}\nper frame: {}",
            self.times.frames,
            self.n,
            folder.display(),
            self.times.per_frame(3)
        )
    }
}

/// Writes `opts.frames` frames; frame `k` shows the flock after `k * every` steps (frame 0 is the
/// initial state). Call [`RenderOptions::prepare`] first.
pub fn render(
    backend: &mut dyn FlockBackend,
    settings: &FlockSettings,
    opts: &RenderOptions,
) -> Result<RenderReport, ViewError> {
    let style = default_style(&settings.params, opts.colour);
    let mut camera = Camera::framing(settings.params.scale, opts.width, opts.height);
    let mut rgba = vec![0u8; opts.width as usize * opts.height as usize * 4];
    let mut files = FrameFiles::create(&opts.out, opts.gif.as_deref(), opts.width, opts.height)?;
    let (mut sim, mut draw, mut write) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let mut paths = Vec::new();
    let bar = crate::backend::progress_bar(opts.frames as u64, "frame", opts.progress);
    backend.reset_times();
    for k in 0..opts.frames {
        let t0 = Instant::now();
        if k > 0 {
            for _ in 0..opts.every {
                backend.step()?;
            }
        }
        backend.synchronize()?;
        let t1 = Instant::now();
        backend.render_into(&camera.view(&style), BACKGROUND, &mut rgba)?;
        let t2 = Instant::now();
        let path = files.write(k, &rgba)?;
        let t3 = Instant::now();
        if k > 0 {
            sim += t1 - t0;
        }
        draw += t2 - t1;
        write += t3 - t2;
        paths.push(path);
        camera.yaw += opts.spin_deg.to_radians();
        bar.inc(1);
    }
    bar.finish_and_clear();
    files.finish()?;
    let per_frame = |d: Duration| d.as_secs_f64() * 1e3 / opts.frames as f64;
    let stepped = (opts.frames - 1).max(1) as f64;
    Ok(RenderReport {
        n: backend.len(),
        paths,
        times: FrameTimes {
            frames: opts.frames,
            steps_per_frame: opts.every,
            sim_ms_per_frame: sim.as_secs_f64() * 1e3 / stepped,
            gpu_ms_per_step: backend.gpu_ms_per_step(),
            render_ms_per_frame: per_frame(draw),
            write_ms_per_frame: per_frame(write),
        },
    })
}
