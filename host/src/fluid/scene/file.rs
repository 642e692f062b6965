//! The scene file: typed TOML, physical (SI) units, every table closed to unknown keys. Errors
//! name the key path (`solids[0].shape`) and the line.

use super::super::FluidError;
pub use super::choices::{Les, SolidBoundary, DEFAULT_SMAGORINSKY, DEFAULT_WALE};
use murmur_common::lbm::{CollisionModel, Rates};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// A fluid scene file (`assets/fluid/*.toml`; the format is documented in
/// `docs/fluid/scenes.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Short name, used for output file names.
    pub name: String,
    /// What the scene shows.
    #[serde(default)]
    pub description: String,
    /// Collision operator: `bgk`, `rm-mrt`, `acm-mrt`.
    #[serde(default)]
    pub collision: CollisionModel,
    /// The physical scales `L`, `U`, `nu`, `rho` (SI).
    pub physical: Physical,
    /// The resolution and the lattice velocity.
    pub lattice: LatticeConfig,
    /// The fluid box.
    pub domain: DomainConfig,
    /// Boundary of each face; faces left out are no-slip walls.
    #[serde(default)]
    pub faces: Faces,
    /// The state at step 0 (at rest by default).
    #[serde(default)]
    pub initial: Initial,
    /// A uniform acceleration of the fluid (none by default).
    #[serde(default)]
    pub body_force: BodyForce,
    /// Immersed solids (at most `murmur_common::lbm::ib::solid::MAX_SOLIDS`).
    #[serde(default)]
    pub solids: Vec<SolidConfig>,
    /// The force coefficients' axes and velocity, and how often forces are recorded.
    #[serde(default)]
    pub forces: ForcesConfig,
    /// How the immersed boundary spreads its forces.
    #[serde(default, skip_serializing_if = "ImmersedConfig::is_default")]
    pub immersed: ImmersedConfig,
    /// The bounds a healthy flow keeps.
    #[serde(default)]
    pub health: HealthConfig,
    /// Run length, output and health-check intervals (steps).
    #[serde(default)]
    pub run: RunConfig,
    /// The viewer's smoke: its sources and how it advects (`murmur fluid view | render`).
    #[serde(default, skip_serializing_if = "SmokeConfig::is_default")]
    pub smoke: SmokeConfig,
    /// The viewer's defaults (`murmur fluid view | render`; the command line overrides them).
    #[serde(default, skip_serializing_if = "ViewConfig::is_default")]
    pub view: ViewConfig,
    /// Turbulence statistics (`[statistics]`): time averages from a start step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<crate::fluid::statistics::Table>,
    /// Coupled flocks (`[[flocks]]`): read and checked by the coupling layer above the fluid
    /// (`crate::coupling::scene`); the fluid carries the tables through unread (they count in
    /// a checkpoint's identity).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flocks: Vec<toml::Table>,
    /// Folder of the scene file: mesh paths are relative to it (empty for a scene built in
    /// code: the working folder).
    #[serde(skip)]
    pub dir: PathBuf,
}

/// Physical scales (SI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Physical {
    /// Characteristic length `L`, m (`lattice.resolution` cells across it).
    pub length: f64,
    /// Characteristic velocity `U`, m/s (represented by `lattice.velocity`).
    pub velocity: f64,
    /// Kinematic viscosity `nu`, m^2/s (`Re = U L / nu`).
    pub viscosity: f64,
    /// Reference density, kg/m^3 (lattice density 1).
    #[serde(default = "water")]
    pub density: f64,
}

pub(super) fn water() -> f64 {
    1000.0
}

/// Lattice choices.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LatticeConfig {
    /// Cells across `L`.
    pub resolution: u32,
    /// Lattice velocity representing `U` (sets the time step; Mach = u sqrt 3).
    #[serde(default = "default_u_lb")]
    pub velocity: f64,
    /// Bulk relaxation rate of the MRT models.
    #[serde(default = "default_bulk")]
    pub bulk_rate: f32,
    /// Rate of the moments of order 3-6 in RM-MRT; ACM-MRT's base rate before its limiter.
    #[serde(default = "default_high")]
    pub high_rate: f32,
    /// ACM-MRT limiter lambda.
    #[serde(default = "default_lambda")]
    pub acm_lambda: f32,
    /// Subgrid model: `none`, `smagorinsky` or `wale`.
    #[serde(default, skip_serializing_if = "Les::is_none")]
    pub les: Les,
    /// The Smagorinsky constant `C_s` (with `les = "smagorinsky"`).
    #[serde(default = "default_smagorinsky")]
    pub smagorinsky: f32,
    /// The WALE constant `C_w` (with `les = "wale"`). Left out of the canonical text at its
    /// default, so scenes hash as they did before the model.
    #[serde(default = "default_wale", skip_serializing_if = "is_default_wale")]
    pub wale: f32,
}

fn default_smagorinsky() -> f32 {
    DEFAULT_SMAGORINSKY
}

fn default_wale() -> f32 {
    DEFAULT_WALE
}

fn is_default_wale(cw: &f32) -> bool {
    *cw == DEFAULT_WALE
}

pub(super) fn default_u_lb() -> f64 {
    0.1
}
fn default_bulk() -> f32 {
    Rates::DEFAULT_BULK
}
fn default_high() -> f32 {
    Rates::DEFAULT_HIGH
}
fn default_lambda() -> f32 {
    Rates::DEFAULT_LAMBDA
}

/// The fluid box: its size in metres or in cells (one of the two), boundary layers not counted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainConfig {
    /// Size along x, y, z, m (rounded to whole cells of `dx = L / resolution`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<[f64; 3]>,
    /// Fluid cells along x, y, z.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<[u32; 3]>,
}

/// A gusting inflow: the inlet's speed times `1 + intensity x g(t)`, `g` a seeded random
/// process with unit variance at knots `time_scale` apart, joined smoothly
/// (`crate::fluid::inlet::Gust`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GustConfig {
    /// RMS of the relative speed change (0.1: 10 %).
    pub intensity: f64,
    /// Seconds between independent values.
    pub time_scale: f64,
    #[serde(default)]
    pub seed: u64,
}

/// The boundary of each face.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faces {
    /// The face at x = 0.
    #[serde(default)]
    pub x_min: FaceConfig,
    /// The face at the far end of x.
    #[serde(default)]
    pub x_max: FaceConfig,
    /// The face at y = 0.
    #[serde(default)]
    pub y_min: FaceConfig,
    /// The face at the far end of y.
    #[serde(default)]
    pub y_max: FaceConfig,
    /// The face at z = 0.
    #[serde(default)]
    pub z_min: FaceConfig,
    /// The face at the far end of z.
    #[serde(default)]
    pub z_max: FaceConfig,
}

/// Keys of the faces in index order (`-x, +x, -y, +y, -z, +z`).
pub const FACE_KEYS: [&str; 6] = ["x_min", "x_max", "y_min", "y_max", "z_min", "z_max"];

impl Faces {
    /// The faces in index order.
    pub fn all(&self) -> [&FaceConfig; 6] {
        [
            &self.x_min,
            &self.x_max,
            &self.y_min,
            &self.y_max,
            &self.z_min,
            &self.z_max,
        ]
    }
}

/// The boundary of one face.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum FaceConfig {
    /// Wraps to the opposite face (which must be periodic too).
    Periodic {},
    /// No-slip wall at rest.
    Wall {},
    /// Free-slip wall: no flow through it, no shear stress on it.
    FreeSlip {},
    /// Wall moving in its own plane.
    MovingWall {
        /// m/s, tangential to the face.
        velocity: [f64; 3],
    },
    /// Velocity inlet.
    Inlet {
        /// m/s, pointing into the domain; the peak of a parabolic profile. Default: `U` along
        /// the inward normal.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        velocity: Option<[f64; 3]>,
        /// Uniform or parabolic across the face.
        #[serde(default)]
        profile: Profile,
        /// Seconds over which the inflow rises smoothly from 0 (0: at once). Every inlet of a
        /// scene has the same ramp.
        #[serde(default)]
        ramp: f64,
        /// A gust on the inflow speed (none by default); every gusting inlet of a scene has
        /// the same one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gust: Option<GustConfig>,
    },
    /// Pressure outlet.
    Outlet {
        /// kg/m^3. Default: `physical.density`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        density: Option<f64>,
        /// Thickness (m) of the outlet layer before this face, whose viscosity rises toward
        /// `nu = 1/6` (lattice units) at the outlet to damp vortices leaving the domain. Left
        /// out: none. At most one outlet may have one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sponge: Option<f64>,
    },
}

impl Default for FaceConfig {
    fn default() -> Self {
        FaceConfig::Wall {}
    }
}

/// The velocity profile of an inlet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// The same velocity over the whole face.
    #[default]
    Uniform,
    /// A parabola across every wall-bounded axis of the face, zero on the wall planes: one such
    /// axis (a 2D channel) gives `4 U s (1 - s)`, two give `16 U s t (1 - s) (1 - t)`.
    Parabolic,
    /// The DFG 3D benchmark's `16 U_m y z (H - y) (H - z) / H^4`: the parabolic profile, with
    /// both axes across the face required to be wall-bounded.
    #[serde(rename = "dfg-3d")]
    Dfg3d,
}

/// The initial state: density 1 (lattice), velocity `velocity` plus an optional Taylor-Green
/// vortex.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Initial {
    /// Uniform velocity, m/s.
    #[serde(default)]
    pub velocity: [f64; 3],
    /// A Taylor-Green vortex added to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taylor_green: Option<TaylorGreen>,
    /// A turbulent channel's start added to it (flow along x, walls across y).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<super::choices::ChannelStartConfig>,
}

/// A Taylor-Green vortex in the xy plane: `ux = A sin(kx) cos(ky)`, `uy = -A cos(kx) sin(ky)`,
/// `k = 2 pi / wavelength` (physical coordinates), with the pressure of the exact solution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaylorGreen {
    /// Peak velocity `A`, m/s.
    pub amplitude: f64,
    /// m. Default: `physical.length`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wavelength: Option<f64>,
}

/// A uniform body force, as the acceleration it gives the fluid.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyForce {
    /// m/s^2.
    #[serde(default)]
    pub acceleration: [f64; 3],
}

/// An immersed solid.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolidConfig {
    /// Name in messages and outputs. Default: the shape's type or the mesh file's stem.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its shape (lengths in m, times `scale`).
    pub shape: ShapeConfig,
    /// Centre, m from the domain's origin (a mesh is centred on its centre of mass when
    /// closed, on its bounding box's centre otherwise).
    pub position: [f64; 3],
    /// Its rotation from the shape's own axes. Default: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orientation: Option<Orientation>,
    /// Uniform scale of the shape (for meshes: file units to metres).
    #[serde(default = "unit")]
    pub scale: f64,
    /// How it moves. Default: fixed.
    #[serde(default)]
    pub motion: MotionConfig,
    /// Reference area of the force coefficients, m^2. Default: the projected frontal area
    /// along the drag axis, for spheres and for cylinders across or along it; required
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_area: Option<f64>,
    /// Smallest distance between surface samples, lattice cells. Default 0.5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spacing: Option<f64>,
    /// Samples per cell^2 of surface instead of `spacing` (10 to 100 are usual).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_per_cell: Option<f64>,
    /// Seed of the sampling.
    #[serde(default = "one_u64")]
    pub seed: u64,
    /// How the fluid meets it: `immersed` (the default; moving solids too) or
    /// `interpolated-bounce-back` (fixed solids: second-order walls on the cut links).
    #[serde(default, skip_serializing_if = "SolidBoundary::is_immersed")]
    pub boundary: SolidBoundary,
}

pub(super) fn unit() -> f64 {
    1.0
}
pub(super) fn one_u64() -> u64 {
    1
}
pub(super) fn z_axis() -> [f64; 3] {
    [0.0, 0.0, 1.0]
}
pub(super) fn yes() -> bool {
    true
}

/// A solid's shape, lengths in m (times `scale`). Round shapes have their axis along `axis`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ShapeConfig {
    /// A sphere.
    Sphere {
        /// m.
        radius: f64,
    },
    /// A circular cylinder centred on its position.
    Cylinder {
        /// m.
        radius: f64,
        /// Along the axis, m.
        length: f64,
        /// Flat end caps (false: an open tube).
        #[serde(default = "yes")]
        caps: bool,
        /// Direction of the axis (normalised). Default: z.
        #[serde(default = "z_axis")]
        axis: [f64; 3],
    },
    /// A box centred on its position.
    Box {
        /// Edge lengths along the solid's own x, y, z.
        size: [f64; 3],
    },
    /// A torus about `axis`.
    Torus {
        /// From the axis to the tube's centre, m.
        major_radius: f64,
        /// The tube's radius, m.
        minor_radius: f64,
        /// Direction of the axis (normalised). Default: z.
        #[serde(default = "z_axis")]
        axis: [f64; 3],
    },
    /// A cylinder with hemispherical ends.
    Capsule {
        /// m.
        radius: f64,
        /// Length of the straight part, m.
        length: f64,
        /// Direction of the axis (normalised). Default: z.
        #[serde(default = "z_axis")]
        axis: [f64; 3],
    },
    /// A triangle mesh file (OBJ or STL), path relative to the scene file.
    Mesh {
        /// The file (relative to [`SceneFile::dir`]).
        file: PathBuf,
    },
}

/// A rotation: `axis` and `angle` (degrees), or a `quaternion` `[w, x, y, z]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Orientation {
    /// The rotation's axis (with `angle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub axis: Option<[f64; 3]>,
    /// The rotation's angle about `axis`, degrees.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub angle: Option<f64>,
    /// The rotation as a unit quaternion `[w, x, y, z]` (instead of `axis` and `angle`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quaternion: Option<[f64; 4]>,
}

/// How a solid moves; `ramp` (s, 0 for none) raises its velocity linearly from 0.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum MotionConfig {
    /// At rest.
    Fixed {},
    /// Constant velocity, m/s.
    Translate {
        /// m/s.
        velocity: [f64; 3],
        /// s.
        #[serde(default)]
        ramp: f64,
    },
    /// Rotation about `axis` through the centre at `rate` rad/s.
    Rotate {
        /// Direction of the axis (normalised).
        axis: [f64; 3],
        /// rad/s.
        rate: f64,
        /// s.
        #[serde(default)]
        ramp: f64,
    },
    /// Translation `amplitude sin(2 pi frequency t)`, amplitude in m, frequency in Hz.
    Oscillate {
        /// m.
        amplitude: [f64; 3],
        /// Hz.
        frequency: f64,
        /// s.
        #[serde(default)]
        ramp: f64,
    },
    /// Rotation about `axis` by `amplitude sin(2 pi frequency t)`, amplitude in degrees.
    OscillateRotation {
        /// Direction of the axis (normalised).
        axis: [f64; 3],
        /// Degrees.
        amplitude: f64,
        /// Hz.
        frequency: f64,
        /// s.
        #[serde(default)]
        ramp: f64,
    },
}

impl Default for MotionConfig {
    fn default() -> Self {
        MotionConfig::Fixed {}
    }
}

/// Force output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForcesConfig {
    /// Velocity of the force coefficients, m/s. Default: `physical.velocity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_velocity: Option<f64>,
    /// Direction of the drag (normalised).
    #[serde(default = "x_axis")]
    pub drag_axis: [f64; 3],
    /// Direction of the lift (normalised; perpendicular to the drag).
    #[serde(default = "y_axis")]
    pub lift_axis: [f64; 3],
    /// Steps between writes of the force file.
    #[serde(default = "default_forces_every")]
    pub every: u64,
}

fn x_axis() -> [f64; 3] {
    [1.0, 0.0, 0.0]
}
fn y_axis() -> [f64; 3] {
    [0.0, 1.0, 0.0]
}
fn default_forces_every() -> u64 {
    100
}

impl Default for ForcesConfig {
    fn default() -> Self {
        ForcesConfig {
            reference_velocity: None,
            drag_axis: x_axis(),
            lift_axis: y_axis(),
            every: default_forces_every(),
        }
    }
}

/// The immersed boundary's spreading (`crate::fluid::ib::spread::IbSpread`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImmersedConfig {
    /// `scatter`, `binned`, `gather` or `blocks`. Default: the fastest (`IbSpread::default`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<SpreadName>,
    /// Block side `l` in cells for `blocks` (default 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block: Option<u32>,
    /// Cells the samples sit inside their solids, 0 to 1 (default: by the fluid's relaxation
    /// time, from the Couette study, `ib::plan::retraction_for`; for studies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retraction: Option<f64>,
    /// Multi-direct-forcing passes per step, 1 to 8 (default 3, chosen with the retraction;
    /// for studies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
}

impl ImmersedConfig {
    fn is_default(&self) -> bool {
        *self == ImmersedConfig::default()
    }

    /// Its retraction and passes.
    pub fn tuning(&self) -> crate::fluid::ib::plan::IbTuning {
        crate::fluid::ib::plan::IbTuning {
            retraction: self.retraction,
            passes: self.passes,
        }
    }
}

/// A spreading method's name in a scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpreadName {
    /// Each sample adds into its stencil's cells with atomic fixed-point adds.
    Scatter,
    /// Samples sorted by their bin node; a thread sums the terms of consecutive samples with
    /// the same nodes and adds them once.
    Binned,
    /// Samples binned per band cell; each band cell sums the bins around it.
    Gather,
    /// Samples sorted by blocks of `block`^3 cells; each band cell sums its block and the
    /// blocks its support reaches.
    Blocks,
}

/// Bounds a healthy run keeps (lattice units).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthConfig {
    /// Largest `|rho - 1|`.
    #[serde(default = "default_max_drho")]
    pub max_density_deviation: f64,
    /// Largest lattice Mach number `|u| sqrt 3`.
    #[serde(default = "default_max_mach")]
    pub max_mach: f64,
}

fn default_max_drho() -> f64 {
    super::Health::DEFAULT.max_density_deviation
}
fn default_max_mach() -> f64 {
    super::Health::DEFAULT.max_mach
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            max_density_deviation: default_max_drho(),
            max_mach: default_max_mach(),
        }
    }
}

/// Run length and output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// Steps to run (overridden by `--steps`).
    pub steps: u64,
    /// Write fields every this many steps (at least 1) when the output is a folder; left out:
    /// only at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_every: Option<u64>,
    /// Check the fields for NaN every this many steps.
    pub check_every: u64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            steps: 1000,
            output_every: None,
            check_every: 100,
        }
    }
}

/// `[smoke]`: a passive scalar for the viewer, injected by its sources and carried by the flow.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SmokeConfig {
    /// Steps between two advections (the advection's time step, in steps).
    pub every: u32,
    /// Seconds over which smoke away from the sources fades to half (0: never).
    pub half_life: f64,
    /// Where smoke is injected.
    pub sources: Vec<SmokeSourceConfig>,
}

impl Default for SmokeConfig {
    fn default() -> Self {
        SmokeConfig {
            every: crate::fluid::SmokeSetup::DEFAULT_EVERY,
            half_life: 0.0,
            sources: Vec::new(),
        }
    }
}

impl SmokeConfig {
    fn is_default(&self) -> bool {
        *self == SmokeConfig::default()
    }
}

/// A smoke source, `{ type = ... }`; lengths in m, positions from the domain's origin.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum SmokeSourceConfig {
    /// A ball.
    Point {
        /// Centre, m.
        position: [f64; 3],
        /// m.
        radius: f64,
        /// Concentration held in the source (1: full).
        #[serde(default = "one")]
        amount: f64,
    },
    /// A disc one cell thick across `normal`.
    Disc {
        /// Centre, m.
        position: [f64; 3],
        /// The disc's normal (normalised).
        normal: [f64; 3],
        /// m.
        radius: f64,
        /// Concentration held in the source (1: full).
        #[serde(default = "one")]
        amount: f64,
    },
    /// The first fluid layer behind an inlet face (`face`, default: the scene's first inlet):
    /// the whole face, or with `spacing` dots of `radius` on a grid of that pitch (streaklines).
    Inlet {
        /// The face's key (`x_min`, ...).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        face: Option<String>,
        /// Pitch of the dots, m (0: the whole face).
        #[serde(default)]
        spacing: f64,
        /// Radius of each dot, m.
        #[serde(default)]
        radius: f64,
        /// Concentration held in the source (1: full).
        #[serde(default = "one")]
        amount: f64,
    },
}

fn one() -> f64 {
    1.0
}

/// `[view]`: how `murmur fluid view` and `render` start.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ViewConfig {
    /// `slice`, `volume` or `smoke`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view: Option<murmur_common::render::fluid::ViewKind>,
    /// What a slice or volume shows: `speed`, `ux`, `uy`, `uz`, `vorticity`, `q`, `pressure`,
    /// `smoke`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quantity: Option<murmur_common::render::fluid::Quantity>,
    /// The slice's axis: `x`, `y` or `z`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub axis: Option<char>,
    /// The slice's position along its axis, m from the domain's origin.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<f64>,
    /// The colour range, lattice units of the quantity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
}

impl ViewConfig {
    fn is_default(&self) -> bool {
        *self == ViewConfig::default()
    }
}

impl SceneFile {
    /// Reads a TOML scene; mesh paths will resolve relative to its folder.
    pub fn load(path: &Path) -> Result<SceneFile, FluidError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            FluidError::Invalid(format!("cannot read scene {}: {e}", path.display()))
        })?;
        let mut file = SceneFile::parse(&text)
            .map_err(|e| FluidError::Invalid(format!("scene {}: {e}", path.display())))?;
        file.dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(file)
    }

    /// Parses a scene's text (mesh paths relative to the working folder). The error is one
    /// line naming the key path and line: "unknown field `raduis`, expected `radius` at
    /// `solids[0].shape` (line 12)". A key of the first scene format gets the line naming what
    /// replaced it (`super::migrate`) instead of "unknown field".
    pub fn parse(text: &str) -> Result<SceneFile, String> {
        let de = toml::Deserializer::parse(text).map_err(|e| describe(text, &e, None))?;
        serde_path_to_error::deserialize(de).map_err(|e| {
            if let Some(old) = super::migrate::old_format(text) {
                return old;
            }
            let path = e.path().to_string();
            describe(text, e.inner(), Some(path))
        })
    }
}

/// One line from a TOML error: its message, the key path when known and the line (also for
/// the tables a layer above the fluid reads from a scene file).
pub fn describe(text: &str, e: &toml::de::Error, path: Option<String>) -> String {
    let message = e
        .message()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let line = e
        .span()
        .and_then(|s| text.get(..s.start))
        .map(|before| before.matches('\n').count() + 1);
    match (path.filter(|p| !p.is_empty() && p != "."), line) {
        (Some(p), Some(l)) => format!("{message} at {p} (line {l})"),
        (Some(p), None) => format!("{message} at {p}"),
        (None, Some(l)) => format!("{message} at line {l}"),
        (None, None) => message,
    }
}
