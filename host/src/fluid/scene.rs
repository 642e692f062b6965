//! Scenes: typed TOML files (`assets/fluid/*.toml`) in physical units, converted to lattice units
//! by `murmur_common::lbm::Units` (the one place), the geometry builders shared with the
//! validation cases, and the stability checks every entry point goes through.

use super::{Fields, FluidError, Setup};
use murmur_common::lbm::{CellKind, CollisionModel, Lattice, LbmParams, Rates, Units};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Lattice Mach number above which a setup is refused (compressibility errors grow as Ma^2).
pub const MAX_MACH: f64 = 0.3;
/// Lattice Mach number above which a warning is printed.
pub const WARN_MACH: f64 = 0.2;
/// Relaxation times below this (but above 1/2) draw a warning: BGK is unstable at most
/// resolutions there; the MRT models are more forgiving.
pub const WARN_TAU: f64 = 0.51;
/// `tau` must exceed 1/2 by at least this (below it the FP32 shear rate rounds to 2).
pub const MIN_TAU_MARGIN: f64 = 1e-5;
/// Host bytes per cell of a [`Setup`]: the cell-kind byte and the initial density and velocity.
pub const SETUP_BYTES_PER_CELL: u64 = 1 + 16;
/// Largest lattice the host accepts (32-bit cell coordinates).
pub const MAX_CELLS: u64 = murmur_common::lbm::Lattice::MAX_CELLS;

/// A fluid scene file.
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
    /// The flow and its geometry.
    pub flow: Flow,
    pub physical: Physical,
    pub lattice: LatticeConfig,
    #[serde(default)]
    pub run: RunConfig,
}

/// The flow: geometry and boundaries. Lengths in units of `physical.length`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Flow {
    /// Lid-driven cavity: square `L x L` with the lid (top, +y) moving at `U` along +x; periodic
    /// along z over `depth_cells` cells (1: the 2D cavity of Ghia et al.).
    Cavity {
        #[serde(default = "one")]
        depth_cells: u32,
    },
    /// Periodic 2D Taylor-Green vortex of wavelength `L` and peak velocity `U`, uniform along z.
    TaylorGreen {
        #[serde(default = "one")]
        depth_cells: u32,
    },
    /// Channel of width `L` between walls at +-y, driven by a body force giving centre velocity
    /// `U`; periodic along x and z.
    Poiseuille,
    /// Channel `length x width x height` (in L) with a velocity inlet (`U`, -x face), a pressure
    /// outlet (+x face), walls on the other faces and a sphere of diameter L.
    Obstacle {
        length: f64,
        width: f64,
        height: f64,
        /// Sphere centre, in units of L from the inlet corner.
        center: [f64; 3],
    },
}

fn one() -> u32 {
    1
}

/// Physical scales (SI).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Physical {
    /// Characteristic length `L`, m.
    pub length: f64,
    /// Characteristic velocity `U`, m/s.
    pub velocity: f64,
    /// Kinematic viscosity `nu`, m^2/s (`Re = U L / nu`).
    pub viscosity: f64,
    /// Density, kg/m^3.
    #[serde(default = "water")]
    pub density: f64,
}

fn water() -> f64 {
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
    /// Rate of the moments of order 3-6 in RM-MRT.
    #[serde(default = "default_high")]
    pub high_rate: f32,
    /// ACM-MRT limiter lambda.
    #[serde(default = "default_lambda")]
    pub acm_lambda: f32,
}

fn default_u_lb() -> f64 {
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

/// A scene ready to run: the backend setup, its units and the warnings the checks raised.
#[derive(Clone, Debug)]
pub struct Scene {
    pub file: SceneFile,
    pub units: Units,
    pub setup: Setup,
    pub warnings: Vec<String>,
}

impl SceneFile {
    /// Reads a TOML scene (unknown keys are errors).
    pub fn load(path: &Path) -> Result<SceneFile, FluidError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            FluidError::Invalid(format!("cannot read scene {}: {e}", path.display()))
        })?;
        toml::from_str(&text)
            .map_err(|e| FluidError::Invalid(format!("scene {}: {}", path.display(), e.message())))
    }

    /// The lattice's size in cells (x, y, z), without building anything: what the memory
    /// checks count before the setup's arrays exist.
    pub fn dims(&self) -> Result<[u32; 3], FluidError> {
        let n = self.lattice.resolution;
        let wide = |x: u32, extra: u32| {
            x.checked_add(extra)
                .ok_or_else(|| FluidError::Invalid(format!("lattice.resolution {n} is too large")))
        };
        Ok(match &self.flow {
            Flow::Cavity { depth_cells } => [wide(n, 2)?, wide(n, 2)?, *depth_cells],
            Flow::TaylorGreen { depth_cells } => [n, n, *depth_cells],
            Flow::Poiseuille => [1, wide(n, 2)?, 1],
            Flow::Obstacle {
                length,
                width,
                height,
                ..
            } => {
                let dims = [*length, *width, *height].map(|d| (d * n as f64).round());
                if dims.iter().any(|d| !(4.0..1e5).contains(d)) {
                    return Err(FluidError::Invalid(format!(
                        "obstacle domain {length} x {width} x {height} L gives {dims:?} cells"
                    )));
                }
                dims.map(|d| d as u32)
            }
        })
    }

    /// Converts to lattice units, checks stability and builds the setup.
    pub fn build(&self) -> Result<Scene, FluidError> {
        let ph = &self.physical;
        for (name, v) in [
            ("physical.length", ph.length),
            ("physical.velocity", ph.velocity),
            ("physical.viscosity", ph.viscosity),
            ("physical.density", ph.density),
            ("lattice.velocity", self.lattice.velocity),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(FluidError::Invalid(format!(
                    "{name} must be a finite number > 0, got {v}"
                )));
            }
        }
        let n = self.lattice.resolution;
        if n < 4 {
            return Err(FluidError::Invalid(format!(
                "lattice.resolution must be at least 4 cells, got {n}"
            )));
        }
        let units = Units::from_scales(
            ph.length,
            n as f64,
            ph.velocity,
            self.lattice.velocity,
            ph.density,
        );
        let u = units.velocity_to_lattice(ph.velocity);
        let nu = units.viscosity_to_lattice(ph.viscosity);
        let mut rates = Rates::from_viscosity(nu as f32);
        rates.bulk = self.lattice.bulk_rate;
        rates.high = self.lattice.high_rate;
        rates.lambda = self.lattice.acm_lambda;
        let mut warnings = check_stability(nu, u, self.collision)?;
        check_rates(&rates)?;
        let model = self.collision;
        let mut setup = match &self.flow {
            Flow::Cavity { depth_cells } => cavity(n, *depth_cells, u as f32, nu as f32, model)?,
            Flow::TaylorGreen { depth_cells } => {
                taylor_green(n, *depth_cells, u as f32, nu as f32, model)?
            }
            Flow::Poiseuille => poiseuille(n, u as f32, nu as f32, model)?,
            Flow::Obstacle { center, .. } => {
                let dims = self.dims()?;
                let c = center.map(|c| (c * n as f64) as f32);
                obstacle(dims, c, 0.5 * n as f32, u as f32, nu as f32, model)?
            }
        };
        setup.params.rates = rates;
        if self.run.output_every == Some(0) {
            return Err(FluidError::Invalid(
                "run.output_every must be at least 1 (leave it out to write only at the end)"
                    .into(),
            ));
        }
        if self.run.check_every == 0 {
            warnings.push("run.check_every = 0: the NaN check is off".into());
        }
        Ok(Scene {
            file: self.clone(),
            units,
            setup,
            warnings,
        })
    }
}

/// Refuses unstable setups: `tau <= 1/2` (zero or negative viscosity) and lattice Mach numbers
/// above [`MAX_MACH`]; returns warnings for marginal ones.
pub fn check_stability(
    nu_lb: f64,
    u_lb: f64,
    model: CollisionModel,
) -> Result<Vec<String>, FluidError> {
    let tau = Units::tau(nu_lb);
    let mut warnings = Vec::new();
    if !(tau.is_finite() && tau > 0.5 + MIN_TAU_MARGIN) {
        return Err(FluidError::Invalid(format!(
            "relaxation time tau = {tau:.6} <= 0.5 (lattice viscosity {nu_lb:.3e}): the scheme \
             is unstable; raise the viscosity or the lattice velocity, or lower the resolution"
        )));
    }
    if tau < WARN_TAU {
        warnings.push(format!(
            "tau = {tau:.5} is close to 0.5: {} may become unstable; refine the grid or lower \
             the Reynolds number",
            model.name()
        ));
    }
    let mach = Units::mach(u_lb);
    if mach > MAX_MACH {
        return Err(FluidError::Invalid(format!(
            "lattice Mach number {mach:.3} > {MAX_MACH} (lattice velocity {u_lb:.4}): \
             compressibility errors and instability; lower lattice.velocity"
        )));
    }
    if mach > WARN_MACH {
        warnings.push(format!(
            "lattice Mach number {mach:.3} > {WARN_MACH}: expect compressibility errors"
        ));
    }
    Ok(warnings)
}

/// Relaxation rates must lie in (0, 2); lambda > 0.
pub fn check_rates(r: &Rates) -> Result<(), FluidError> {
    for (name, v) in [
        ("shear rate", r.shear),
        ("lattice.bulk_rate", r.bulk),
        ("lattice.high_rate", r.high),
    ] {
        if !(v > 0.0 && v < 2.0) {
            return Err(FluidError::Invalid(format!(
                "{name} must lie in (0, 2), got {v}"
            )));
        }
    }
    if !(r.lambda.is_finite() && r.lambda > 0.0) {
        return Err(FluidError::Invalid(format!(
            "lattice.acm_lambda must be a finite number > 0, got {}",
            r.lambda
        )));
    }
    Ok(())
}

/// Parameters for a lattice with viscosity `nu` and no force or boundary velocities.
pub fn base_params(lattice: Lattice, nu: f32) -> LbmParams {
    LbmParams {
        lattice,
        store_fields: 0,
        rates: Rates::from_viscosity(nu),
        force: [0.0; 3],
        has_force: 0,
        wall_velocity: [0.0; 3],
        outlet_density: 1.0,
        inlet_velocity: [0.0; 3],
        _pad: 0,
    }
}

fn lattice_checked(nx: u32, ny: u32, nz: u32) -> Result<Lattice, FluidError> {
    let l = Lattice::new(nx, ny, nz);
    if nx == 0 || ny == 0 || nz == 0 || l.cells() as u64 > MAX_CELLS / 32 {
        return Err(FluidError::Invalid(format!(
            "lattice {nx} x {ny} x {nz} is empty or too large"
        )));
    }
    crate::preflight::check_host_memory(
        &format!("the {nx} x {ny} x {nz} lattice's setup"),
        l.cells() as u64 * SETUP_BYTES_PER_CELL,
    )?;
    Ok(l)
}

/// Lid-driven cavity: `n x n` fluid cells inside one layer of walls (`(n + 2)^2 x depth`), the
/// top layer (y = n + 1) a lid moving at `u_lid` along +x. Lattice units.
pub fn cavity(
    n: u32,
    depth: u32,
    u_lid: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    let lattice = lattice_checked(n + 2, n + 2, depth)?;
    let mut flags = vec![CellKind::Fluid as u8; lattice.cells()];
    for (cell, f) in flags.iter_mut().enumerate() {
        let (x, y, _) = lattice.coords(cell);
        if y == n + 1 {
            *f = CellKind::MovingWall as u8;
        } else if x == 0 || x == n + 1 || y == 0 {
            *f = CellKind::Wall as u8;
        }
    }
    let mut params = base_params(lattice, nu);
    params.wall_velocity = [u_lid, 0.0, 0.0];
    Ok(Setup {
        model,
        params,
        flags,
        init: Fields::rest(lattice),
        immersed: Default::default(),
    })
}

/// Taylor-Green vortex on a periodic `n x n x depth` lattice (wavelength `n` cells):
/// `ux = u0 sin(kx) cos(ky)`, `uy = -u0 cos(kx) sin(ky)`, `rho = 1 - 3 u0^2 / 4 (cos 2kx +
/// cos 2ky)` (the pressure of the exact solution). Kinetic energy decays as `exp(-4 nu k^2 t)`.
pub fn taylor_green(
    n: u32,
    depth: u32,
    u0: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    let lattice = lattice_checked(n, n, depth)?;
    let mut init = Fields::rest(lattice);
    let k = 2.0 * std::f64::consts::PI / n as f64;
    for cell in 0..lattice.cells() {
        let (x, y, _) = lattice.coords(cell);
        let (x, y) = (x as f64 * k, y as f64 * k);
        let u0 = u0 as f64;
        let rho = 1.0 - 0.75 * u0 * u0 * ((2.0 * x).cos() + (2.0 * y).cos());
        let u = [u0 * x.sin() * y.cos(), -u0 * x.cos() * y.sin(), 0.0];
        init.set(cell, rho as f32, u.map(|v| v as f32));
    }
    Ok(Setup {
        model,
        params: base_params(lattice, nu),
        flags: vec![CellKind::Fluid as u8; lattice.cells()],
        init,
        immersed: Default::default(),
    })
}

/// Body-force-driven Poiseuille flow: `h` fluid cells between walls at y = 0 and y = h + 1,
/// one cell along x and z (periodic). The force gives centre velocity `u_max`:
/// `F = 8 nu u_max / h^2` (walls halfway, at y = 1/2 and h + 1/2).
pub fn poiseuille(h: u32, u_max: f32, nu: f32, model: CollisionModel) -> Result<Setup, FluidError> {
    let lattice = lattice_checked(1, h + 2, 1)?;
    let flags = (0..lattice.cells())
        .map(|c| {
            let (_, y, _) = lattice.coords(c);
            if y == 0 || y == h + 1 {
                CellKind::Wall as u8
            } else {
                CellKind::Fluid as u8
            }
        })
        .collect();
    let mut params = base_params(lattice, nu);
    params.force = [8.0 * nu * u_max / (h as f32 * h as f32), 0.0, 0.0];
    params.has_force = 1;
    Ok(Setup {
        model,
        params,
        flags,
        init: Fields::rest(lattice),
        immersed: Default::default(),
    })
}

/// Channel with a sphere: velocity inlet at x = 0, pressure outlet (density 1) at x = nx - 1,
/// walls on the y and z faces, a sphere of `radius` cells at `center`. Starts at rest.
pub fn obstacle(
    dims: [u32; 3],
    center: [f32; 3],
    radius: f32,
    u_in: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    let [nx, ny, nz] = dims;
    let lattice = lattice_checked(nx, ny, nz)?;
    let flags = (0..lattice.cells())
        .map(|c| {
            let (x, y, z) = lattice.coords(c);
            let d = [x as f32 + 0.5, y as f32 + 0.5, z as f32 + 0.5];
            let r2: f32 = (0..3).map(|a| (d[a] - center[a]).powi(2)).sum();
            if x == 0 {
                CellKind::Inlet as u8
            } else if x == nx - 1 {
                CellKind::Outlet as u8
            } else if y == 0 || y == ny - 1 || z == 0 || z == nz - 1 || r2 <= radius * radius {
                CellKind::Wall as u8
            } else {
                CellKind::Fluid as u8
            }
        })
        .collect();
    let mut params = base_params(lattice, nu);
    params.inlet_velocity = [u_in, 0.0, 0.0];
    params.outlet_density = 1.0;
    Ok(Setup {
        model,
        params,
        flags,
        init: Fields::rest(lattice),
        immersed: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_match_the_built_lattices() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            // Scenes only: assets/fluid/ also holds the meshes/ folder.
            if path.extension().is_none_or(|x| x != "toml") {
                continue;
            }
            let file = SceneFile::load(&path).unwrap();
            let l = file.build().unwrap().setup.lattice();
            assert_eq!(
                file.dims().unwrap(),
                [l.nx, l.ny, l.nz],
                "{}",
                path.display()
            );
        }
    }
}
