//! The flock viewer: an orbit camera over the flock, boids rasterised by the backend that holds
//! them (`FlockBackend::render_into`: `crate::raster`, on the CPU or as kernels on CUDA),
//! shown in a window (`window.rs`, winit + pixels, with the egui panel of `panel.rs`) or written
//! as PNG/GIF frames without a display (`headless.rs`). Projection, colours and the per-pixel
//! nearest-boid keys are `murmur_common::render`, shared with the kernels. The fluid viewer
//! (`fluid/`) shares the window stack (`gfx.rs`), the window loop (`shell.rs`), the overlay's
//! pieces (`overlay.rs`) and the frame files (`frames.rs`).

pub mod cli;
pub mod fluid;
pub mod frames;
pub mod gfx;
pub mod headless;
pub mod overlay;
pub mod panel;
pub mod shell;
pub mod window;

use crate::flock::SimError;
use murmur_common::flock::FlockParams;
use murmur_common::render::{ColourMode, Style};

/// Boid radius as a fraction of the domain half-width (0.5 scene units at the default scale 100:
/// about a pixel at the default camera distance and 720 pixels of height).
pub const BOID_RADIUS_PER_SCALE: f32 = 0.005;

/// How the boids of a flock with rule parameters `params` are drawn by default.
pub fn default_style(params: &FlockParams, colour: ColourMode) -> Style {
    Style {
        boid_radius: BOID_RADIUS_PER_SCALE * params.scale,
        colour,
        max_speed: params.max_speed,
        scale: params.scale,
    }
}

/// Why the viewer or a headless render stopped.
#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{0}")]
    Options(String),
    #[error("cannot use {path} as the output folder: {source}")]
    OutDir {
        path: String,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {message}")]
    Write { path: String, message: String },
    #[error(
        "no display to open a window on ({0}); `murmur flock render --frames K --out DIR` writes \
         frames without one"
    )]
    NoDisplay(String),
    #[error(
        "no display to open a window on ({0}); `murmur fluid render SCENE.toml --frames K --out \
         DIR` writes frames without one"
    )]
    NoFluidDisplay(String),
    #[error("the window's graphics failed: {0}")]
    Graphics(String),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error(transparent)]
    Fluid(#[from] crate::fluid::FluidError),
}
