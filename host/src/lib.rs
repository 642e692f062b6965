//! murmur's host library: configuration, the CPU reference and CUDA backends, snapshots, the
//! simulation driver, the viewer (window and headless frames). The binary (`main.rs`) is a thin
//! CLI over it; tests use it directly.

pub mod atomic_file;
pub mod backend;
pub mod cli;
pub mod flock;
pub mod fluid;
pub mod gpu;
pub mod preflight;
pub mod ranks;
pub mod raster;
pub mod timing;
pub mod view;
