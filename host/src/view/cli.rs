//! `murmur flock view` and `murmur flock render`: their arguments (the flock's own,
//! [`FlockArgs`], flattened in) and the commands. The viewer's config reload calls
//! [`FlockArgs::reload`].

use super::{headless, window};
use crate::flock::cli::FlockArgs;
use crate::flock::driver;
use crate::preflight;
use anyhow::Result;
use clap::Args;
use murmur_common::render::ColourMode;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct ViewArgs {
    #[command(flatten)]
    flock: FlockArgs,
    /// Window width in pixels (the frame follows the window when resized).
    #[arg(long, default_value_t = 1280)]
    width: u32,
    /// Window height in pixels.
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// Boid colours (toggle with `c`).
    #[arg(long, value_enum, default_value = "heading")]
    colour: ColourMode,
    /// Close the window after this many frames (scripted runs, screenshots).
    #[arg(long, value_name = "FRAMES")]
    quit_after: Option<u64>,
}

#[derive(Args)]
pub struct RenderArgs {
    #[command(flatten)]
    flock: FlockArgs,
    /// Number of frames to write.
    #[arg(long, value_name = "K")]
    frames: u32,
    /// Folder for frame_00000.png, frame_00001.png, ... (created when missing).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Simulation steps before each frame.
    #[arg(long, value_name = "S", default_value_t = 1)]
    every: u32,
    /// Frame width in pixels.
    #[arg(long, default_value_t = 1280)]
    width: u32,
    /// Frame height in pixels.
    #[arg(long, default_value_t = 720)]
    height: u32,
    /// Also write all frames as one animated GIF (25 frames per second).
    #[arg(long, value_name = "FILE.gif")]
    gif: Option<PathBuf>,
    /// Boid colours.
    #[arg(long, value_enum, default_value = "heading")]
    colour: ColourMode,
    /// Turn the camera about the vertical axis by this many degrees per frame.
    #[arg(long, value_name = "DEG", default_value_t = 0.0)]
    spin: f32,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// `murmur flock view`.
pub fn view(a: &ViewArgs) -> Result<()> {
    window::check_display()?;
    let (config, state) = a.flock.build_config()?;
    let settings = config.settings()?;
    let (backend, note) = driver::open_backend(a.flock.backend, &settings, &state)?;
    if let Some(note) = note {
        eprintln!("murmur: {note}");
    }
    // A saved config file is read again with the same command-line overrides on top (and the
    // snapshot's N when the flock came from --init).
    let init_n = a.flock.init.as_ref().map(|_| config.sim.n);
    let watch = a.flock.config.clone().map(|path| {
        let args = a.flock.clone();
        window::ConfigWatch {
            path,
            reload: Box::new(move || args.reload(init_n).map_err(|e| e.to_string())),
        }
    });
    let opts = window::WindowOptions {
        width: a.width,
        height: a.height,
        colour: a.colour,
        watch,
        quit_after: a.quit_after,
    };
    window::run(backend, config, opts)?;
    Ok(())
}

/// `murmur flock render`.
pub fn render(a: &RenderArgs) -> Result<()> {
    let opts = headless::RenderOptions {
        frames: a.frames,
        every: a.every,
        width: a.width,
        height: a.height,
        out: a.out.clone(),
        gif: a.gif.clone(),
        colour: a.colour,
        spin_deg: a.spin,
        progress: !a.quiet && std::io::stderr().is_terminal(),
    };
    preflight::check_output_dir(&a.out)?;
    if let Some(gif) = &a.gif {
        preflight::check_output_file(gif)?;
    }
    opts.prepare()?;
    let (settings, state) = a.flock.build()?;
    let (mut backend, note) = driver::open_backend(a.flock.backend, &settings, &state)?;
    if let Some(note) = note {
        eprintln!("murmur: {note}");
    }
    let report = headless::render(backend.as_mut(), &settings, &opts)?;
    let what = format!(
        "{}, {}, scale {}, {}x{}",
        backend.describe(),
        settings.method.name(),
        settings.params.scale,
        a.width,
        a.height
    );
    println!("{}", report.summary(&what));
    if let Some(gif) = &a.gif {
        println!("wrote {}", gif.display());
    }
    Ok(())
}
