//! Frames written to files by both viewers' headless renders (`murmur flock render`, `murmur
//! fluid render`): the checks of a render's options, numbered PNG files and one animated GIF,
//! and the per-frame times both summaries print.

use super::ViewError;
use crate::atomic_file::write_atomic;
use image::codecs::gif::{GifEncoder, Repeat};
use image::codecs::png::PngEncoder;
use image::{ExtendedColorType, ImageEncoder, RgbaImage};
use std::path::{Path, PathBuf};

/// Smallest and largest frame side in pixels.
pub const MIN_SIDE: u32 = 16;
pub const MAX_SIDE: u32 = 8192;

/// GIF frame delay: 25 frames per second.
const GIF_DELAY_MS: u32 = 40;

/// Refuses a render of no frames (`--frames`) or no steps between two (`--every`).
pub fn check_counts(frames: u32, every: u32) -> Result<(), ViewError> {
    if frames == 0 {
        return Err(ViewError::Options("--frames must be at least 1".into()));
    }
    if every == 0 {
        return Err(ViewError::Options("--every must be at least 1".into()));
    }
    Ok(())
}

/// Checks a render's frame size and camera turn (`--spin`, degrees per frame), that its output
/// folder `out` can be made or written into and that its GIF can be written, before anything
/// runs. Nothing is created: [`FrameFiles::create`] makes the folder once every check passed.
pub fn check_output(
    width: u32,
    height: u32,
    spin_deg: f32,
    out: &Path,
    gif: Option<&Path>,
) -> Result<(), ViewError> {
    check_size(width, height)?;
    if !spin_deg.is_finite() {
        return Err(ViewError::Options("--spin must be a finite number".into()));
    }
    crate::preflight::check_output_dir(out).map_err(|e| ViewError::Options(e.to_string()))?;
    if let Some(gif) = gif {
        crate::atomic_file::check_writable_parent(gif).map_err(|e| ViewError::Write {
            path: gif.display().to_string(),
            message: e.to_string(),
        })?;
    }
    Ok(())
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

/// The per-frame times of a headless render, both viewers'.
#[derive(Clone, Debug)]
pub struct FrameTimes {
    pub frames: u32,
    pub steps_per_frame: u32,
    /// Wall time of the steps between two frames, until the device is idle again (0 for one
    /// frame; the fluid's smoke advections left out).
    pub sim_ms_per_frame: f64,
    /// GPU time per step from CUDA events (None on the CPU).
    pub gpu_ms_per_step: Option<f64>,
    /// Wall time per frame of drawing and copying the RGBA frame to host memory.
    pub render_ms_per_frame: f64,
    /// Wall time per frame of PNG (and GIF) encoding and writing.
    pub write_ms_per_frame: f64,
}

impl FrameTimes {
    /// Wall time per step of the simulation between two frames.
    pub fn step_ms(&self) -> f64 {
        self.sim_ms_per_frame / self.steps_per_frame as f64
    }

    /// The line of figures per frame (`wall_decimals`: of the wall ms per step).
    pub fn per_frame(&self, wall_decimals: usize) -> String {
        let mut s = String::new();
        if self.frames > 1 {
            s += &format!(
                "simulation {:.3} ms ({} steps, {:.*} ms/step wall",
                self.sim_ms_per_frame,
                self.steps_per_frame,
                wall_decimals,
                self.step_ms(),
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

/// A render's frames as files: `frame_00000.png`, ... in a folder, and, when asked, all of
/// them in one animated GIF.
pub struct FrameFiles {
    out: PathBuf,
    gif: Option<GifWriter>,
    width: u32,
    height: u32,
}

impl FrameFiles {
    /// Frames of `width x height` pixels into the folder `out` (created here, when missing)
    /// and `gif`.
    pub fn create(
        out: &Path,
        gif: Option<&Path>,
        width: u32,
        height: u32,
    ) -> Result<FrameFiles, ViewError> {
        std::fs::create_dir_all(out).map_err(|source| ViewError::OutDir {
            path: out.display().to_string(),
            source,
        })?;
        Ok(FrameFiles {
            out: out.to_path_buf(),
            gif: gif.map(GifWriter::create).transpose()?,
            width,
            height,
        })
    }

    /// Writes `rgba` as frame `k` (and the GIF's next frame); returns the PNG file's path.
    pub fn write(&mut self, k: u32, rgba: &[u8]) -> Result<PathBuf, ViewError> {
        let path = self.out.join(format!("frame_{k:05}.png"));
        write_png(&path, rgba, self.width, self.height)?;
        if let Some(g) = self.gif.as_mut() {
            g.push(rgba, self.width, self.height)?;
        }
        Ok(path)
    }

    /// Puts the GIF in place.
    pub fn finish(self) -> Result<(), ViewError> {
        match self.gif {
            Some(g) => g.finish(),
            None => Ok(()),
        }
    }
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

/// An animated GIF written frame by frame into a temporary file, renamed into place at the end.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_figures_per_frame() {
        let mut t = FrameTimes {
            frames: 3,
            steps_per_frame: 2,
            sim_ms_per_frame: 1.0,
            gpu_ms_per_step: Some(0.25),
            render_ms_per_frame: 2.0,
            write_ms_per_frame: 3.0,
        };
        assert_eq!(
            t.per_frame(3),
            "simulation 1.000 ms (2 steps, 0.500 ms/step wall, 0.2500 ms/step GPU events), \
             render+copy 2.000 ms, encode+write 3.000 ms"
        );
        t.gpu_ms_per_step = None;
        assert_eq!(
            t.per_frame(4),
            "simulation 1.000 ms (2 steps, 0.5000 ms/step wall), render+copy 2.000 ms, \
             encode+write 3.000 ms"
        );
        t.frames = 1;
        assert_eq!(
            t.per_frame(4),
            "no simulation (one frame: the initial state), render+copy 2.000 ms, encode+write \
             3.000 ms"
        );
    }

    #[test]
    fn options_are_checked_in_order() {
        let e = |r: Result<(), ViewError>| r.unwrap_err().to_string();
        assert!(e(check_counts(0, 0)).contains("--frames"));
        assert!(e(check_counts(1, 0)).contains("--every"));
        assert!(check_counts(1, 1).is_ok());
        let dir = std::env::temp_dir().join(format!("murmur-frames-{}", std::process::id()));
        assert!(e(check_output(8, 64, f32::NAN, &dir, None)).contains("frame size 8x64"));
        assert!(e(check_output(64, 64, f32::NAN, &dir, None)).contains("--spin"));
        assert!(!dir.exists(), "nothing is created before the checks pass");
        check_output(64, 64, 0.0, &dir.join("out"), None).unwrap();
        assert!(!dir.exists(), "the checks create nothing");
        FrameFiles::create(&dir.join("out"), None, 64, 64).unwrap();
        assert!(dir.join("out").is_dir());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
