//! Frames to PNG: a flock seen by the camera `murmur flock render` starts from, or a slice of a
//! fluid scene's speed, drawn every few steps into a folder.
//!
//! ```text
//! cargo run --release --example render_frames                      # a flock, 5 frames, CPU
//! cargo run --release --example render_frames -- --fluid           # the lid-driven cavity
//! cargo run --release --example render_frames -- --n 1000000 --frames 100 --backend cuda
//! ```

use clap::Parser;
use murmur::{Backend, ColourMode, Flock, FlockSettings, Fluid};
use std::path::PathBuf;

#[derive(Parser)]
struct Args {
    /// Draw a fluid scene's speed slice instead of a flock.
    #[arg(long)]
    fluid: bool,
    /// The fluid scene file (with `--fluid`).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/fluid/cavity-re100.toml"))]
    scene: PathBuf,
    /// Number of boids.
    #[arg(long, default_value_t = 5_000)]
    n: usize,
    /// Frames to write.
    #[arg(long, default_value_t = 5)]
    frames: u32,
    /// Steps between frames.
    #[arg(long, default_value_t = 20)]
    every: u64,
    /// Frame width, pixels.
    #[arg(long, default_value_t = 320)]
    width: u32,
    /// Frame height, pixels.
    #[arg(long, default_value_t = 240)]
    height: u32,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[arg(long, default_value = "cpu")]
    backend: Backend,
    /// The folder for the frames (default: `murmur-frames` in the system's temporary folder).
    #[arg(long)]
    out: Option<PathBuf>,
}

fn main() {
    // The error's one line, not its `Debug` form.
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let a = Args::parse();
    let dir = a
        .out
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("murmur-frames"));
    std::fs::create_dir_all(&dir)?;
    let mut frame: Box<dyn FnMut() -> murmur::Result<image::RgbaImage>> = if a.fluid {
        let mut fluid = Fluid::from_file(&a.scene, a.backend)?;
        println!("{} on {}", a.scene.display(), fluid.describe());
        let look = fluid.look()?;
        let (every, w, h) = (a.every, a.width, a.height);
        Box::new(move || {
            fluid.step(every)?;
            fluid.render(&look, w, h)
        })
    } else {
        let mut flock = Flock::new(FlockSettings {
            n: a.n,
            backend: a.backend,
            ..FlockSettings::default()
        })?;
        println!("{} boids on {}", flock.len(), flock.describe());
        let mut camera = flock.camera(a.width, a.height);
        let every = a.every;
        Box::new(move || {
            flock.step(every)?;
            // A slow turn about the vertical axis, a little each frame.
            camera.yaw += 0.05;
            flock.render(&camera, ColourMode::Heading)
        })
    };
    for i in 0..a.frames {
        let image = frame()?;
        let path = dir.join(format!("frame-{i:04}.png"));
        image.save(&path)?;
        println!(
            "wrote {} ({} x {})",
            path.display(),
            image.width(),
            image.height()
        );
    }
    Ok(())
}
