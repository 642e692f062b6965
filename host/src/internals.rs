//! murmur's internals: the modules the CLI (`main.rs`) and the integration tests in
//! `host/tests/` reach into. They are public for those two and hidden from the documentation;
//! nothing here is a stable API. The library's API is the crate root (`murmur::Flock`,
//! `murmur::Fluid`, ...), built on these modules.
//!
//! The files stay where the tree shows them (`host/src/flock/`, `host/src/fluid/`, ...); the
//! crate root imports each module, so inside the crate they are `crate::flock`,
//! `crate::fluid`, ....

#[path = "atomic_file.rs"]
pub mod atomic_file;
#[path = "backend.rs"]
pub mod backend;
#[path = "checkpoint/mod.rs"]
pub mod checkpoint;
#[path = "cli/mod.rs"]
pub mod cli;
#[path = "coupling/mod.rs"]
pub mod coupling;
#[path = "flock/mod.rs"]
pub mod flock;
#[path = "fluid/mod.rs"]
pub mod fluid;
#[path = "gpu/mod.rs"]
pub mod gpu;
#[path = "preflight.rs"]
pub mod preflight;
#[path = "ranks/mod.rs"]
pub mod ranks;
#[path = "raster/mod.rs"]
pub mod raster;
#[path = "stop.rs"]
pub mod stop;
#[path = "timing.rs"]
pub mod timing;
#[path = "view/mod.rs"]
pub mod view;
