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
    /// Rate of the moments of order 3 to 6: RM-MRT's, and ACM-MRT's base rate before its
    /// limiter (`acm_mrt`: at the shear rate instead, ACM-MRT is unstable as `tau -> 1/2`).
    /// In (0, 2).
    pub high: f32,
    /// ACM-MRT limiter `lambda` (> 0): larger keeps the higher orders at `high` longer (with
    /// `high = 1`, the default, it has nothing to limit).
    pub lambda: f32,
}

impl Rates {
    /// Default bulk rate of the MRT models (1: bulk viscosity 1/3, damps acoustic waves).
    pub const DEFAULT_BULK: f32 = 1.0;
    /// Default higher-order rate of RM-MRT and ACM-MRT (1: higher moments set to equilibrium).
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

/// Number of domain faces, in the order of [`LbmParams::faces`]: `-x, +x, -y, +y, -z, +z`.
pub const FACES: usize = 6;

/// What the boundary cells of one domain face impose (lattice units). A cell byte names its face
/// ([`super::boundary::face_of`]); its kind says which fields apply: moving walls and inlets use
/// `velocity` (inlets times their profile and [`LbmParams::inlet_scale`]), outlets `density`.
/// `#[repr(C)]`, 48 bytes: part of the kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Face {
    /// Velocity of a moving wall; peak velocity of an inlet.
    pub velocity: [f32; 3],
    /// Density of an outlet.
    pub density: f32,
    /// Inlet profile: bit `a` set multiplies the velocity by the parabola
    /// `max(0, 1 - ((x_a - center[a]) inv_half_width[a])^2)` along axis `a` (0 at the wall
    /// planes, 1 halfway between them). No bit: uniform. See [`super::boundary::profile`].
    pub parabolic: u32,
    /// Midpoint of the parabola along each axis (lattice coordinates).
    pub center: [f32; 3],
    /// One over the half-width of the parabola along each axis (cells^-1).
    pub inv_half_width: [f32; 3],
    pub _pad: u32,
}

impl Face {
    /// A face imposing nothing: velocity 0, density 1, uniform.
    pub const REST: Face = Face {
        velocity: [0.0; 3],
        density: 1.0,
        parabolic: 0,
        center: [0.0; 3],
        inv_half_width: [0.0; 3],
        _pad: 0,
    };

    /// A moving wall or a uniform inlet at `velocity`.
    pub const fn moving(velocity: [f32; 3]) -> Face {
        Face {
            velocity,
            ..Face::REST
        }
    }

    /// An outlet at `density`.
    pub const fn outlet(density: f32) -> Face {
        Face {
            density,
            ..Face::REST
        }
    }

    /// This face with a parabolic inlet profile along `axis`, 0 at the planes `lo` and `hi`
    /// (lattice coordinates) and 1 halfway between them.
    pub fn with_parabola(mut self, axis: usize, lo: f32, hi: f32) -> Face {
        self.parabolic |= 1 << axis;
        self.center[axis] = 0.5 * (lo + hi);
        self.inv_half_width[axis] = 2.0 / (hi - lo);
        self
    }
}

/// Everything one stream-collide step needs besides the buffers. `#[repr(C)]`, passed by value to
/// the kernels; all fields are 4 bytes and the size is a multiple of 8.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbmParams {
    pub lattice: Lattice,
    pub _pad: u32,
    pub rates: Rates,
    /// Body force density (lattice units), applied with Guo forcing.
    pub force: [f32; 3],
    /// 1 when `force` is non-zero (skips the source term otherwise).
    pub has_force: u32,
    /// What the boundary cells of each face impose, `-x, +x, -y, +y, -z, +z`.
    pub faces: [Face; FACES],
    /// Factor on every inlet velocity: the ramp of the current step
    /// ([`super::boundary::inlet_scale`]), 1 without one.
    pub inlet_scale: f32,
    /// The outlet layer ([`super::boundary::SPONGE`] cells): the axis it runs along (3: none).
    pub sponge_axis: u32,
    /// Coordinate along `sponge_axis` where the layer starts (strength 0).
    pub sponge_start: f32,
    /// One over the layer's signed thickness: strength `((x - start) inv)^2`, 1 at the outlet.
    pub sponge_inv: f32,
    /// The Smagorinsky subgrid model's factor `18 sqrt(2) C_s^2` ([`super::les`]); 0: no
    /// subgrid model.
    pub smagorinsky: f32,
    /// The WALE subgrid model's factor `C_w^2` ([`super::wale`]); 0: no WALE. Reads the
    /// stream-collide step's velocity fields.
    pub wale: f32,
}

const _: () = assert!(core::mem::size_of::<Face>() == 48);
const _: () = assert!(core::mem::size_of::<LbmParams>() & 7 == 0);

impl LbmParams {
    /// Parameters of `lattice` with `rates`: no force, every face at rest, inlet scale 1.
    pub const fn new(lattice: Lattice, rates: Rates) -> LbmParams {
        LbmParams {
            lattice,
            _pad: 0,
            rates,
            force: [0.0; 3],
            has_force: 0,
            faces: [Face::REST; FACES],
            inlet_scale: 1.0,
            sponge_axis: 3,
            sponge_start: 0.0,
            sponge_inv: 0.0,
            smagorinsky: 0.0,
            wale: 0.0,
        }
    }

    /// The data of face `face` (0..5); [`Face::REST`] for any other value (a cell that belongs
    /// to no face). One arm per face, each reading its face at a constant offset: an index
    /// computed at run time would make the GPU copy the whole parameter block to local memory.
    #[inline(always)]
    pub fn face(&self, face: u8) -> Face {
        match face {
            0 => self.faces[0],
            1 => self.faces[1],
            2 => self.faces[2],
            3 => self.faces[3],
            4 => self.faces[4],
            5 => self.faces[5],
            _ => Face::REST,
        }
    }
}
