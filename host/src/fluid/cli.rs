//! The arguments of `fluid run | validate | bench | parity | case`, one struct per command.
//!
//! `crate::cli` dispatches them to `super::run` and `super::commands`; the other fluid commands'
//! arguments sit beside their code (`ib_bench`, `boundary_bench`, `multi`, `tune`, `noise`).

use super::defaults::Defaults;
use super::driver::BackendChoice;
use super::{Block, BoundaryLaunch, Setup};
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming};
use std::path::PathBuf;

/// An immersed-boundary validation case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CaseName {
    /// DFG 2D-1: Re 20, steady; C_D and the front-back pressure difference.
    #[value(name = "dfg-2d-1")]
    Dfg2d1,
    /// DFG 2D-2: Re 100, vortex shedding; St, max C_D, max C_L.
    #[value(name = "dfg-2d-2")]
    Dfg2d2,
    /// DFG 3D-1Z: Re 20 in a square channel; C_D.
    #[value(name = "dfg-3d-1z")]
    Dfg3d1z,
    /// A cylinder moving through fluid at rest vs the fixed cylinder in a uniform flow.
    Galilean,
    /// Cylindrical Couette flow between two immersed cylinders (the study behind k and the
    /// retraction).
    Couette,
    /// The turbulent channel at Re_tau 180 against the DNS of Moser, Kim & Mansour (1999):
    /// runs the channel scene (chained with --checkpoint-every and --resume) or reads a run's
    /// statistics (--profile).
    #[value(name = "channel-180")]
    Channel180,
}

/// The immersed boundary's fixed choices, overridden for a study (`[immersed]` of a scene).
#[derive(clap::Args, Clone, Copy, Debug, Default)]
pub struct ImmersedArgs {
    /// Cells the immersed samples sit inside the solid, 0 to 1 [default: by the relaxation
    /// time, 0.25 at tau 1].
    #[arg(long, value_name = "CELLS")]
    pub retraction: Option<f64>,
    /// Multi-direct-forcing passes per step, 1 to 8 [default: 3].
    #[arg(long, value_name = "K")]
    pub passes: Option<u32>,
}

impl ImmersedArgs {
    /// The tuning these ask for, checked; refused beside a wall method without samples.
    pub fn tuning(
        &self,
        boundary: super::scene::file::SolidBoundary,
    ) -> anyhow::Result<crate::fluid::ib::plan::IbTuning> {
        let t = crate::fluid::ib::plan::IbTuning {
            retraction: self.retraction,
            passes: self.passes,
        };
        t.check().map_err(|e| anyhow::anyhow!("--{e}"))?;
        if !t.is_default() && boundary != super::scene::file::SolidBoundary::Immersed {
            anyhow::bail!(
                "--retraction and --passes tune the immersed boundary; --boundary {} has none",
                boundary.name()
            );
        }
        Ok(t)
    }
}

/// How the populations are stored: number format and layout.
#[derive(clap::Args, Clone, Copy, Debug)]
pub struct StorageArgs {
    /// Number format of the populations: fp32, fp16s (IEEE half of (f - w) 32768) or fp16c
    /// (custom 1-4-11 float of f - w); arithmetic is FP32 in every case.
    #[arg(long, value_enum, default_value = "fp32")]
    pub storage: StorageKind,
    /// Population layout: `soa` (structure of arrays) or the CSoA granularity alpha, a power of
    /// two (alpha cells' values of each population stored together) [default: the tuning
    /// cache's, else the device's defaults (docs/fluid/tuning.md)].
    #[arg(long, value_name = "soa|ALPHA", value_parser = parse_layout)]
    pub layout: Option<Layout>,
    /// Thread blocks of the stream-collide kernel on the GPU: `flat` (128 threads per block
    /// over the cell numbers) or XxYxZ, e.g. 32x4x2 (x a multiple of 32) [default: the tuning
    /// cache's, else the device's defaults].
    #[arg(long, value_name = "flat|XxYxZ", value_parser = Block::parse)]
    pub block: Option<Block>,
    /// Streaming: `pull` (two copies of the populations, the fastest) or `in-place` (one copy,
    /// esoteric pull: twice the cells fit) [default: pull when both copies fit, else in-place].
    #[arg(long, value_enum)]
    pub streaming: Option<Streaming>,
    /// Where the GPU runs the boundary kernel: `tail` (a second stream, its blocks filling the
    /// interior kernel's last wave), `beside[-N]` (a second stream at high priority, N blocks
    /// per SM running through the interior kernel), or `serial` (after it: each kernel's own
    /// time in the stage times).
    #[arg(long, value_name = "tail|beside[-N]|serial", default_value = "tail", value_parser = BoundaryLaunch::parse)]
    pub boundary_launch: BoundaryLaunch,
    /// GPU: launch each step as one CUDA graph, ramping inlets and immersed solids included
    /// (one lattice, not a rank's slab; the stage times then show one stage, `step (CUDA
    /// graph)`).
    #[arg(long)]
    pub graph: bool,
}

impl StorageArgs {
    /// `setup` stored and launched this way, on a device whose defaults are `device`: its
    /// layout and blocks for a knob the user did not set (`fluid bench` and `fluid validate`
    /// set both themselves).
    pub fn apply(&self, setup: &mut Setup, device: &Defaults) {
        setup.storage = self.storage;
        setup.layout = self.layout.unwrap_or(device.knobs.layout);
        setup.block = self.block.unwrap_or(device.knobs.block);
        setup.streaming = self.streaming;
        setup.boundary_launch = self.boundary_launch;
        setup.graph = self.graph;
    }
}

/// `soa` or a power of two.
pub fn parse_layout(s: &str) -> Result<Layout, String> {
    if s.eq_ignore_ascii_case("soa") {
        return Ok(Layout::SOA);
    }
    let alpha: u32 = s
        .parse()
        .map_err(|_| format!("expected `soa` or a power of two, got `{s}`"))?;
    Layout::csoa(alpha).ok_or_else(|| format!("alpha must be a power of two, got {alpha}"))
}

#[derive(clap::Args)]
pub struct CaseArgs {
    #[arg(value_enum)]
    pub case: CaseName,
    /// Cells per cylinder diameter.
    #[arg(long, default_value_t = 20)]
    pub cells_per_d: u32,
    /// Physical time simulated, seconds (DFG cases) [default: 30 for 2D-1 and 3D-1Z, 12 for 2D-2].
    #[arg(long)]
    pub seconds: Option<f64>,
    /// Diameters travelled before the averaging window (Galilean check).
    #[arg(long, default_value_t = 30.0)]
    pub travel: f64,
    /// Lattice velocity of the peak inflow (DFG) or of the cylinder's speed (Galilean).
    #[arg(long, default_value_t = 0.05)]
    pub u_lb: f64,
    /// Collision model.
    #[arg(long, value_enum, default_value = "acm-mrt")]
    pub model: CollisionModel,
    /// How the cylinder meets the fluid (DFG cases).
    #[arg(long, value_enum, default_value = "immersed")]
    pub boundary: super::scene::file::SolidBoundary,
    #[command(flatten)]
    pub immersed: ImmersedArgs,
    /// Relaxation time of the couette case, above 0.5 [default: 1]: its viscosity
    /// `(tau - 1/2) / 3`, its steps `1000 / nu` (the same number of diffusion times).
    #[arg(long, value_name = "T")]
    pub tau: Option<f64>,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub storage: StorageArgs,
    /// The channel's scene (channel-180) [default: assets/fluid/channel-180.toml].
    #[arg(long, value_name = "SCENE.toml")]
    pub scene: Option<PathBuf>,
    /// Compare the profiles of a run made before (its `NAME_statistics.csv`) instead of
    /// running (channel-180).
    #[arg(long, value_name = "CSV")]
    pub profile: Option<PathBuf>,
    /// Draw the profiles beside the DNS into this PNG (channel-180).
    #[arg(long, value_name = "PNG")]
    pub plot: Option<PathBuf>,
    /// The run's output folder (channel-180) [default: channel-180-run].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Steps to run to (channel-180) [default: the scene's run.steps].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Resume the run from a checkpoint or a folder of them (channel-180).
    #[arg(long, value_name = "PATH")]
    pub resume: Option<PathBuf>,
    /// Write a checkpoint every K steps (channel-180; 0: only when a signal stops the run).
    #[arg(long, value_name = "K", default_value_t = 0)]
    pub checkpoint_every: u64,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scene file, e.g. assets/fluid/cavity-re100.toml.
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    /// Steps to run [default: the scene's run.steps].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Collision model [default: the scene's].
    #[arg(long, value_enum)]
    pub model: Option<CollisionModel>,
    /// Output: a FILE.vti or FILE.npz for the final fields, or a folder that gets both formats
    /// every run.output_every steps and at the end.
    #[arg(long, value_name = "DIR|FILE")]
    pub out: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// Ignore the tuning cache (`fluid tune`): run with the device defaults' layout, blocks and
    /// spreading (the cache is also left out when --layout or --block is given).
    #[arg(long)]
    pub no_tuning: bool,
    #[command(flatten)]
    pub overrides: super::scene::SceneOverrides,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub world: crate::ranks::Ranks,
    /// Split the lattice into N slabs run by N CPU ranks (threads of this process exchanging
    /// their faces by memory copies: the decomposition of --gpus without a GPU).
    #[arg(long = "ranks", value_name = "N", conflicts_with = "gpus")]
    pub cpu_ranks: Option<usize>,
    #[command(flatten)]
    pub checkpoint: crate::checkpoint::CheckpointArgs,
}

#[derive(clap::Args)]
pub struct ValidateArgs {
    /// Backend to validate.
    #[arg(long, value_enum, default_value = "cpu")]
    pub backend: BackendChoice,
    /// Small grids for the CPU: 8 minutes on a 2-core CPU shared with other work (the cases'
    /// times: docs/fluid/validation.md); the full sizes are meant for a GPU.
    #[arg(long)]
    pub quick: bool,
    /// Collision models, comma separated [default: all] (the immersed-boundary cases run
    /// ACM-MRT).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub models: Vec<CollisionModel>,
    /// Skip the immersed-boundary cases (Couette, DFG, Galilean).
    #[arg(long)]
    pub no_ib: bool,
    /// Skip the coupled flock's cases (an inertial boid in a uniform flow, tracers in a
    /// Poiseuille channel and in a Taylor-Green vortex).
    #[arg(long)]
    pub no_flocks: bool,
    /// Population storages to validate, comma separated (each runs every case).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fp32")]
    pub storage: Vec<StorageKind>,
    /// Population layout: `soa` or a CSoA granularity (power of two); soa unless given, not the
    /// device defaults of `fluid run`.
    #[arg(long, value_name = "soa|ALPHA", default_value = "soa", value_parser = parse_layout)]
    pub layout: Layout,
}

#[derive(clap::Args)]
pub struct BenchArgs {
    /// Backend to measure.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Cube edge lengths, comma separated.
    #[arg(long, value_delimiter = ',', default_values_t = vec![128u32, 256])]
    pub sizes: Vec<u32>,
    /// Collision models, comma separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub models: Vec<CollisionModel>,
    /// Timed steps per measurement.
    #[arg(long, default_value_t = 100)]
    pub steps: u64,
    /// Population storages, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fp32")]
    pub storage: Vec<StorageKind>,
    /// Population layouts, comma separated: `soa` or CSoA granularities (powers of two); soa
    /// unless given, not the device defaults of `fluid run`.
    #[arg(long, value_name = "soa|ALPHA", value_delimiter = ',', default_value = "soa", value_parser = parse_layout)]
    pub layout: Vec<Layout>,
    /// Thread blocks of the stream-collide kernel: `flat` or XxYxZ (x a multiple of 32); flat
    /// unless given.
    #[arg(long, value_name = "flat|XxYxZ", default_value = "flat", value_parser = Block::parse)]
    pub block: Block,
    /// GPU: launch each step as one CUDA graph (the step time then includes what launching
    /// costs, without the gaps between launches).
    #[arg(long)]
    pub graph: bool,
    /// Streaming schemes, comma separated: pull (two copies), in-place (one copy).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "pull")]
    pub streaming: Vec<Streaming>,
    /// Subgrid models, comma separated: none, smagorinsky (C_s 0.1), wale (C_w 0.5).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "none")]
    pub les: Vec<super::scene::file::Les>,
}

#[derive(clap::Args)]
pub struct ParityArgs {
    /// Steps to run on both backends.
    #[arg(long, default_value_t = 100)]
    pub steps: u64,
    /// Collision models, comma separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub models: Vec<CollisionModel>,
    /// Population storages, comma separated [default: all].
    #[arg(long, value_enum, value_delimiter = ',')]
    pub storage: Vec<StorageKind>,
}
