//! murmur: flocks of millions of boids and D3Q27 lattice Boltzmann fluids, on the CPU or an
//! NVIDIA GPU, with kernels written in Rust. This crate is the library the `murmur` command is
//! built on.
//!
//! ```
//! use murmur::{Backend, Flock, FlockSettings, Fluid};
//!
//! // A flock of 2,000 boids on the CPU reference, 10 steps.
//! let mut flock = Flock::new(FlockSettings {
//!     n: 2_000,
//!     backend: Backend::Cpu,
//!     ..FlockSettings::default()
//! })?;
//! flock.step(10)?;
//! let pos = flock.positions()?; // ordered by id, scene units
//! assert_eq!(pos.len(), 2_000);
//!
//! // The lid-driven cavity scene, 20 steps, its velocity as an (nz, ny, nx, 3) array in m/s.
//! let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../assets/fluid/cavity-re100.toml");
//! let mut fluid = Fluid::from_file(path, Backend::Cpu)?;
//! fluid.step(20)?;
//! let u = fluid.velocity()?;
//! let [nx, ny, nz] = fluid.shape();
//! assert_eq!(u.shape(), &[nz, ny, nx, 3]);
//! # Ok::<(), murmur::Error>(())
//! ```
//!
//! - [`Flock`] (settings in [`FlockSettings`], rules in [`Rules`]): step, read the state by
//!   id, change the rules between steps, save a snapshot, draw a frame.
//! - [`Fluid`] (a scene file, or a [`scene::SceneFile`] built in code): step with the scene's
//!   health checks and inlet ramp, read velocity, density and vorticity as [`ndarray`] arrays
//!   in SI units, the forces on immersed solids, draw a slice.
//! - [`Backend`]: `Auto` (CUDA when usable, else the CPU), `Cpu`, `Cuda { device }`.
//! - [`DeviceArray`]: a CUDA simulation's field left on the GPU, for other GPU code.
//! - [`Error`]: every failure, one line, with an [`ErrorKind`].
//!
//! The library installs no signal handler (the `murmur` command does); long runs stop between
//! steps through [`Flock::step_while`] and [`Fluid::step_while`].
//!
//! The integration tests and the CLI reach into the internals through one hidden module,
//! `murmur::internals`: it is not part of the API.

#![deny(missing_docs)]

mod api;
#[doc(hidden)]
pub mod internals;

// Inside the crate the internals are `crate::flock`, `crate::fluid`, ...
use internals::{atomic_file, backend, flock, fluid, gpu, preflight, ranks, raster};
use internals::{stop, timing, view};
// The parser's own tests name `crate::cli`; nothing in the crate uses `crate::checkpoint` yet
// (the commands that will come later).
#[allow(unused_imports)]
use internals::{checkpoint, cli, coupling};

pub use api::device::{DType, DeviceArray};
pub use api::error::{Error, ErrorKind, Result};
pub use api::flock::{Flock, FlockSettings, Method, Rules};
pub use api::fluid::{Fluid, SolidForces};
pub use api::{gpu_usable, kernels, Backend};
pub use flock::FlockState;
pub use fluid::Fields;
pub use murmur_common::lbm::Units;
/// How a [`Flock`] frame is seen and coloured.
pub use murmur_common::render::{Camera, ColourMode};

/// What a [`Fluid`] frame shows: [`Look`](look::Look) (a slice or a volume of a
/// [`Quantity`](look::Quantity)).
pub mod look {
    pub use crate::view::fluid::Look;
    pub use murmur_common::render::fluid::{Quantity, ViewKind};
}

/// A fluid scene as data: what a scene file holds (physical units), to build in code
/// ([`SceneFile::new`](scene::SceneFile::new) and the constructors beside it) or to parse from
/// TOML ([`SceneFile::parse`](scene::SceneFile::parse)). The format is documented in
/// `docs/fluid/scenes.md`.
///
/// ```
/// use murmur::scene::{DomainConfig, FaceConfig, Faces, LatticeConfig, Physical, SceneFile};
/// use murmur::scene::{ShapeConfig, SolidConfig};
///
/// // A 2D channel, 1 m/s past a 0.5 m cylinder at Re 50: 48 x 24 cells, one deep.
/// let scene = SceneFile::new(
///     "channel",
///     Physical::new(0.5, 1.0, 0.01),
///     LatticeConfig::new(8).with_velocity(0.05),
///     DomainConfig::cells([48, 24, 1]),
/// )
/// .with_faces(Faces::channel_x(FaceConfig::FreeSlip {}, FaceConfig::Periodic {}))
/// .with_solid(SolidConfig::new(ShapeConfig::tube(0.25, 0.0625), [1.0, 1.5, 0.03125]));
/// assert_eq!(scene.physical.reynolds(), 50.0);
/// ```
pub mod scene {
    pub use crate::fluid::scene::file::*;
    pub use murmur_common::lbm::CollisionModel;
}
