//! The library's API: [`Flock`] and [`Fluid`], the [`Backend`] they run on, the [`Error`] they
//! return, and [`DeviceArray`], a field left on the GPU. The CLI's `flock run` and `fluid run`
//! open their simulations through these types.

pub mod device;
pub mod error;
pub mod flock;
pub mod fluid;

pub use crate::backend::BackendChoice;

/// Where a simulation runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// CUDA on GPU 0 when a GPU and the kernels are usable, otherwise the CPU
    /// ([`Flock::fallback`](crate::Flock::fallback) says why).
    #[default]
    Auto,
    /// The CPU reference (rayon, all cores).
    Cpu,
    /// The Rust CUDA kernels on GPU `device` (0: the first); an error when it is not usable.
    Cuda {
        /// CUDA device ordinal.
        device: usize,
    },
}

impl Backend {
    /// The internal choice and the CUDA device ordinal.
    pub(crate) fn choice(self) -> (BackendChoice, usize) {
        match self {
            Backend::Auto => (BackendChoice::Auto, 0),
            Backend::Cpu => (BackendChoice::Cpu, 0),
            Backend::Cuda { device } => (BackendChoice::Cuda, device),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = error::Error;

    /// `auto`, `cpu`, `cuda` (GPU 0) or `cuda:N`.
    fn from_str(s: &str) -> error::Result<Backend> {
        match s {
            "auto" => Ok(Backend::Auto),
            "cpu" => Ok(Backend::Cpu),
            "cuda" => Ok(Backend::Cuda { device: 0 }),
            _ => s
                .strip_prefix("cuda:")
                .and_then(|d| d.parse().ok())
                .map(|device| Backend::Cuda { device })
                .ok_or_else(|| {
                    error::Error::invalid(format!(
                        "unknown backend {s:?}: use auto, cpu, cuda or cuda:N"
                    ))
                }),
        }
    }
}

/// Whether this build carries GPU kernels: `Ok(())`, or why not (then only the CPU backend
/// runs; `Backend::Auto` falls back to it and `Backend::Cuda` fails with this reason).
pub fn kernels() -> std::result::Result<(), String> {
    crate::gpu::ptx_source()
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Whether a CUDA GPU is usable now (a driver, a GPU, and this build's kernels): `Ok(())`, or
/// why not.
pub fn gpu_usable() -> std::result::Result<(), String> {
    crate::gpu::Gpu::open().map(drop).map_err(|e| e.to_string())
}
