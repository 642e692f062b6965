//! Parameters of one stream-collide step: relaxation rates and what the boundaries and the body
//! force need. `#[repr(C)]`: they travel to the kernels inside their argument structs.

use super::Lattice;

/// Relaxation rates (`omega = 1 / tau`, lattice units). `#[repr(C)]`: part of the kernel
/// parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// Shear rate: kinematic viscosity `nu = (1 / shear - 1 / 2) / 3`. In (0, 2).
    pub shear: f32,
    /// Bulk rate (MRT models): bulk viscosity `2/3 (1 / bulk - 1 / 2)`. In (0, 2).
    pub bulk: f32,
    /// Rate of the moments of order 3 to 6 (RM-MRT). In (0, 2).
    pub high: f32,
    /// ACM-MRT limiter `lambda` (> 0): larger keeps the higher orders at the shear rate longer.
    pub lambda: f32,
}

impl Rates {
    /// Default bulk rate of the MRT models (1: bulk viscosity 1/3, damps acoustic waves).
    pub const DEFAULT_BULK: f32 = 1.0;
    /// Default higher-order rate of RM-MRT (1: higher moments set to equilibrium).
    pub const DEFAULT_HIGH: f32 = 1.0;
    /// Default ACM-MRT limiter (Geier et al. 2017 use values of this order).
    pub const DEFAULT_LAMBDA: f32 = 1e-2;

    /// The rates of viscosity `nu` (lattice units) with the default bulk, high and lambda.
    pub fn from_viscosity(nu: f32) -> Rates {
        Rates {
            shear: 1.0 / (3.0 * nu + 0.5),
            bulk: Self::DEFAULT_BULK,
            high: Self::DEFAULT_HIGH,
            lambda: Self::DEFAULT_LAMBDA,
        }
    }
}

/// Everything one stream-collide step needs besides the buffers. `#[repr(C)]`, passed by value to
/// the kernels; all fields are 4 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbmParams {
    pub lattice: Lattice,
    /// 1: write `rho, ux, uy, uz` to the fields buffer this step; 0: do not touch it.
    pub store_fields: u32,
    pub rates: Rates,
    /// Body force density (lattice units), applied with Guo forcing.
    pub force: [f32; 3],
    /// 1 when `force` is non-zero (skips the source term otherwise).
    pub has_force: u32,
    /// Velocity of [`CellKind::MovingWall`] cells (lattice units).
    pub wall_velocity: [f32; 3],
    /// Density at [`CellKind::Outlet`] cells (lattice units).
    pub outlet_density: f32,
    /// Velocity of [`CellKind::Inlet`] cells (lattice units).
    pub inlet_velocity: [f32; 3],
    pub _pad: u32,
}
