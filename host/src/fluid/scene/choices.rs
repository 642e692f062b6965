//! The scene's named choices of a model: how a solid's surface meets the fluid, the subgrid
//! model and its default constant.

use serde::{Deserialize, Serialize};

/// How a solid's surface meets the fluid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum SolidBoundary {
    /// The immersed boundary: surface samples force the fluid (any motion).
    #[default]
    Immersed,
    /// Interpolated bounce-back on the cut links (Bouzidi et al. 2001; fixed solids only).
    InterpolatedBounceBack,
}

impl SolidBoundary {
    pub(super) fn is_immersed(&self) -> bool {
        *self == SolidBoundary::Immersed
    }

    /// The name a scene writes.
    pub fn name(self) -> &'static str {
        match self {
            SolidBoundary::Immersed => "immersed",
            SolidBoundary::InterpolatedBounceBack => "interpolated-bounce-back",
        }
    }
}

/// A subgrid model of the eddies the grid does not resolve.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Les {
    /// None: the grid resolves the flow.
    #[default]
    None,
    /// Smagorinsky's eddy viscosity from each cell's non-equilibrium stress.
    Smagorinsky,
    /// WALE's eddy viscosity from the whole velocity gradient (central differences of the
    /// velocity field the step before): no wall damping needed.
    Wale,
}

impl Les {
    pub(super) fn is_none(&self) -> bool {
        *self == Les::None
    }

    /// The name a scene writes.
    pub fn name(self) -> &'static str {
        match self {
            Les::None => "none",
            Les::Smagorinsky => "smagorinsky",
            Les::Wale => "wale",
        }
    }
}

/// The default Smagorinsky constant.
pub const DEFAULT_SMAGORINSKY: f32 = 0.1;

/// The default WALE constant `C_w` (Nicoud & Ducros 1999).
pub const DEFAULT_WALE: f32 = 0.5;

/// `initial.channel`: the start of a turbulent channel along x between walls across y
/// ([`murmur_common::lbm::init::ChannelStart`]), in SI units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelStartConfig {
    /// The friction velocity `u_tau` the run is driven to, m/s.
    pub friction_velocity: f64,
    /// Centre-plane velocity of the mean profile, m/s. Default: `18.3 u_tau` (the turbulent
    /// channel at Re_tau 180).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub centre_velocity: Option<f64>,
    /// The streaks' amplitude in units of `u_tau`.
    #[serde(default = "default_streaks")]
    pub streaks: f64,
    /// The spanwise and wall-normal motions' amplitude in units of `u_tau`.
    #[serde(default = "default_sway")]
    pub sway: f64,
    /// The noise's amplitude in units of `u_tau`.
    #[serde(default = "default_noise")]
    pub noise: f64,
}

fn default_streaks() -> f64 {
    2.5
}

fn default_sway() -> f64 {
    2.0
}

fn default_noise() -> f64 {
    1.5
}
