//! `murmur flock render`: frames without a display. The flock steps, the backend rasterises each
//! frame where its boids live (`FlockBackend::render_into`), and the frames become numbered PNG
//! files and, optionally, one animated GIF. Timing separates simulation from drawing and copying.

use super::{default_style, ViewError};
use crate::atomic_file::write_atomic;
use crate::flock::{FlockBackend, FlockSettings};
use image::codecs::gif::{GifEncoder, Repeat};
use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder, RgbaImage};
use murmur_common::render::{Camera, ColourMode, BACKGROUND};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Smallest and largest frame side in pixels.
pub const MIN_SIDE: u32 = 16;
pub const MAX_SIDE: u32 = 8192;

/// GIF frame delay: 25 frames per second.
const GIF_DELAY_MS: u32 = 40;

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
        if self.frames == 0 {
            return Err(ViewError::Options("--frames must be at least 1".into()));
        }
        if self.every == 0 {
            return Err(ViewError::Options("--every must be at least 1".into()));
        }
        check_size(self.width, self.height)?;
        if !self.spin_deg.is_finite() {
            return Err(ViewError::Options("--spin must be a finite number".into()));
        }
        std::fs::create_dir_all(&self.out).map_err(|source| ViewError::OutDir {
            path: self.out.display().to_string(),
            source,
        })?;
        if let Some(gif) = &self.gif {
            crate::atomic_file::check_writable_parent(gif).map_err(|e| ViewError::Write {
                path: gif.display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(())
    }

    /// Path of frame `k`.
    pub fn frame_path(&self, k: u32) -> PathBuf {
        self.out.join(format!("frame_{k:05}.png"))
    }
}

/// Rejects frame sizes outside `MIN_SIDE..=MAX_SIDE`.
pub fn check_size(width: u32, height: u32) -> Result<(), ViewError> {
    let ok = |s: u32| (MIN_SIDE..=MAX_SIDE).contains(&s);
    if !(ok(width) && ok(height)) {
        return Err(ViewError::Options(format!(
            "frame size {width}x{height} is out of range ({MIN_SIDE} to {MAX_SIDE} pixels a side)"
        )));
    }
    Ok(())
}

/// Figures of a headless render.
#[derive(Clone, Debug)]
pub struct RenderReport {
    pub frames: u32,
    pub steps_per_frame: u32,
    pub n: usize,
    pub paths: Vec<PathBuf>,
    /// Wall time of the steps between two frames, until the device is idle again (0 for one frame).
    pub sim_ms_per_frame: f64,
    /// GPU time per step from CUDA events (None on the CPU).
    pub gpu_ms_per_step: Option<f64>,
    /// Wall time per frame of rasterising and copying the RGBA frame to host memory.
    pub render_ms_per_frame: f64,
    /// Wall time per frame of PNG (and GIF) encoding and writing.
    pub write_ms_per_frame: f64,
}

impl RenderReport {
    /// The summary lines.
    pub fn summary(&self, what: &str) -> String {
        let folder = self
            .paths
            .first()
            .and_then(|p| p.parent())
            .unwrap_or(Path::new("."));
        let mut s = format!(
            "rendered {} frames of {} boids ({what}) into {}\nper frame: ",
            self.frames,
            self.n,
            folder.display()
        );
        if self.frames > 1 {
            s += &format!(
                "simulation {:.3} ms ({} steps, {:.3} ms/step wall",
                self.sim_ms_per_frame,
                self.steps_per_frame,
                self.sim_ms_per_frame / self.steps_per_frame as f64,
            );
            if let Some(g) = self.gpu_ms_per_step {
                s += &format!(", {g:.4} ms/step GPU events");
            }
            s += "), ";
        } else {
            s += "no simulation (one frame: the initial state), ";
        }
        s += &format!(
            "render+copy {:.3} ms, encode+write {:.3} ms",
            self.render_ms_per_frame, self.write_ms_per_frame
        );
        s
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
    let mut gif = match &opts.gif {
        Some(path) => Some(GifWriter::create(path)?),
        None => None,
    };
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
        let path = opts.frame_path(k);
        write_png(&path, &rgba, opts.width, opts.height)?;
        if let Some(g) = gif.as_mut() {
            g.push(&rgba, opts.width, opts.height)?;
        }
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
    if let Some(g) = gif {
        g.finish()?;
    }
    let per_frame = |d: Duration| d.as_secs_f64() * 1e3 / opts.frames as f64;
    let stepped = (opts.frames - 1).max(1) as f64;
    Ok(RenderReport {
        frames: opts.frames,
        steps_per_frame: opts.every,
        n: backend.len(),
        paths,
        sim_ms_per_frame: sim.as_secs_f64() * 1e3 / stepped,
        gpu_ms_per_step: backend.gpu_ms_per_step(),
        render_ms_per_frame: per_frame(draw),
        write_ms_per_frame: per_frame(write),
    })
}

/// Writes one `RGBA8` frame as a PNG file (atomically).
pub fn write_png(path: &Path, rgba: &[u8], width: u32, height: u32) -> Result<(), ViewError> {
    write_atomic(path, |w| {
        PngEncoder::new(w)
            .write_image(rgba, width, height, ExtendedColorType::Rgba8)
            .map_err(std::io::Error::other)
    })
    .map_err(|e| ViewError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// An animated GIF written frame by frame into a temporary file, renamed into place at the end
/// (also the fluid viewer's, `crate::view::fluid::headless`).
pub struct GifWriter {
    path: PathBuf,
    tmp: PathBuf,
    encoder: GifEncoder<std::io::BufWriter<std::fs::File>>,
}

impl GifWriter {
    pub fn create(path: &Path) -> Result<GifWriter, ViewError> {
        let err = |e: &dyn std::fmt::Display| ViewError::Write {
            path: path.display().to_string(),
            message: e.to_string(),
        };
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let tmp = path.with_file_name(format!(
            ".{}.tmp{}",
            name.unwrap_or_else(|| "out.gif".into()),
            std::process::id()
        ));
        let file = std::fs::File::create(&tmp).map_err(|e| err(&e))?;
        // Speed 10: NeuQuant palette per frame, a balance of size and encoding time.
        let mut encoder = GifEncoder::new_with_speed(std::io::BufWriter::new(file), 10);
        encoder.set_repeat(Repeat::Infinite).map_err(|e| err(&e))?;
        Ok(GifWriter {
            path: path.to_path_buf(),
            tmp,
            encoder,
        })
    }

    pub fn push(&mut self, rgba: &[u8], width: u32, height: u32) -> Result<(), ViewError> {
        let err = |m: String| ViewError::Write {
            path: self.path.display().to_string(),
            message: m,
        };
        let img = RgbaImage::from_raw(width, height, rgba.to_vec())
            .ok_or_else(|| err("frame buffer size mismatch".into()))?;
        let delay = image::Delay::from_numer_denom_ms(GIF_DELAY_MS, 1);
        self.encoder
            .encode_frame(image::Frame::from_parts(img, 0, 0, delay))
            .map_err(|e| err(e.to_string()))
    }

    pub fn finish(self) -> Result<(), ViewError> {
        let GifWriter { path, tmp, encoder } = self;
        // Dropping the encoder writes the GIF trailer and flushes the buffer.
        drop(encoder);
        let done = std::fs::File::open(&tmp)
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, &path));
        done.map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            ViewError::Write {
                path: path.display().to_string(),
                message: e.to_string(),
            }
        })
    }
}
