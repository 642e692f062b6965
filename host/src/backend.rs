//! What every simulation driver shares: the choice of backend (with the CPU fallback) and the
//! step progress bar.

/// Which backend to run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BackendChoice {
    /// CUDA when a GPU and the kernels are usable, otherwise the CPU (and say why).
    Auto,
    /// The CPU reference (rayon, all cores).
    Cpu,
    /// The Rust CUDA kernels; an error when no GPU is usable.
    Cuda,
}

impl BackendChoice {
    /// Opens the chosen backend. With `Auto`, a CUDA failure falls back to the CPU and the
    /// returned note says why.
    pub fn open<T, E, G>(
        self,
        cpu: impl FnOnce() -> Result<T, E>,
        cuda: impl FnOnce() -> Result<T, G>,
    ) -> Result<(T, Option<String>), E>
    where
        G: std::fmt::Display,
        E: From<G>,
    {
        match self {
            BackendChoice::Cpu => Ok((cpu()?, None)),
            BackendChoice::Cuda => Ok((cuda()?, None)),
            BackendChoice::Auto => match cuda() {
                Ok(b) => Ok((b, None)),
                Err(e) => Ok((cpu()?, Some(format!("{e}; running on the CPU backend")))),
            },
        }
    }
}

/// A progress bar over `steps` steps (hidden unless `show`).
pub fn step_bar(steps: u64, show: bool) -> indicatif::ProgressBar {
    progress_bar(steps, "step", show)
}

/// A progress bar over `len` things named `unit` (`step 3/100`, `frame 3/60`), hidden unless
/// `show`.
pub fn progress_bar(len: u64, unit: &str, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let b = indicatif::ProgressBar::new(len);
    let template =
        format!("{{spinner}} {unit} {{pos}}/{{len}} [{{bar:30}}] {{per_sec}} eta {{eta}}");
    b.set_style(
        indicatif::ProgressStyle::with_template(&template)
            .expect("valid template")
            .progress_chars("=> "),
    );
    b
}
