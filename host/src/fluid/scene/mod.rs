//! Scenes: typed TOML files (`assets/fluid/*.toml`, format in `docs/fluid/scenes.md`)
//! in physical units, converted to lattice units by `murmur_common::lbm::Units` (the one place):
//! the domain and the boundary of each face ([`geometry`]), the initial state, the body force,
//! immersed solids ([`solids`]), force output and health bounds ([`health`]); the command
//! line's overrides ([`overrides`]); the stability checks every entry point goes through; and
//! the lattice-unit builders shared with the validation cases.

mod build;
mod choices;
pub mod file;
pub mod geometry;
pub mod health;
pub mod migrate;
mod new;
pub mod overrides;
pub mod solids;

pub use file::{
    BodyForce, DomainConfig, FaceConfig, Faces, ForcesConfig, HealthConfig, Initial, LatticeConfig,
    MotionConfig, Orientation, Physical, Profile, RunConfig, SceneFile, ShapeConfig, SolidConfig,
    TaylorGreen,
};
pub use geometry::{Boundary, Geometry};
pub use overrides::SceneOverrides;

use super::{FluidError, Setup};
use murmur_common::lbm::boundary::{cell_byte, FLUID, NO_FACE};
use murmur_common::lbm::{CellKind, CollisionModel, Lattice, Rates, Units};

/// Lattice Mach number above which a setup is refused (compressibility errors grow as Ma^2).
pub const MAX_MACH: f64 = 0.3;
/// Lattice Mach number above which a warning is printed.
pub const WARN_MACH: f64 = 0.2;
/// Relaxation times below this (but above 1/2) draw a warning: BGK is unstable at most
/// resolutions there; the MRT models are more forgiving.
pub const WARN_TAU: f64 = 0.51;
/// `tau` must exceed 1/2 by at least this (below it the FP32 shear rate rounds to 2).
pub const MIN_TAU_MARGIN: f64 = 1e-5;
/// Host bytes per cell of a [`Setup`] and its backend's preparation: the cell-kind byte and its
/// copy with the near-boundary bits (the initial fields are computed where the populations
/// live, never stored per cell).
pub const SETUP_BYTES_PER_CELL: u64 = 2;

/// A scene's error with the scene file's path in front (other errors as they are).
pub fn in_scene(path: &std::path::Path) -> impl Fn(FluidError) -> FluidError + Copy + '_ {
    move |e| match e {
        FluidError::Invalid(m) => FluidError::Invalid(format!("scene {}: {m}", path.display())),
        e => e,
    }
}

/// Refuses, before anything is built, a CPU lattice of `file` that host memory cannot hold:
/// populations of `population_bytes` each, the cell byte, an outlet velocity and the setup.
pub fn check_cpu_memory(
    file: &SceneFile,
    path: &std::path::Path,
    population_bytes: usize,
) -> Result<(), FluidError> {
    let [nx, ny, nz] = file.dims().map_err(in_scene(path))?;
    let cells = nx as u64 * ny as u64 * nz as u64;
    let per_cell = (27 * population_bytes + 1 + 12) as u64;
    crate::preflight::check_host_memory(
        &format!("the CPU lattice of {nx} x {ny} x {nz} cells"),
        cells * (per_cell + SETUP_BYTES_PER_CELL),
    )?;
    Ok(())
}
/// Largest lattice the host accepts (32-bit cell coordinates).
pub const MAX_CELLS: u64 = murmur_common::lbm::Lattice::MAX_CELLS;

/// A scene ready to run: the backend setup, its units, what the run driver needs beside it,
/// and the lines to print when it opens.
#[derive(Clone, Debug)]
pub struct Scene {
    pub file: SceneFile,
    pub units: Units,
    pub setup: Setup,
    pub warnings: Vec<String>,
    /// Facts worth a line when the scene opens (each solid's samples and their spacing).
    pub info: Vec<String>,
    pub forces: ForceSettings,
    pub health: Health,
    /// What the inlets do over time (a ramp, a gust); the driver sets `LbmParams::inlet_scale`
    /// from it before each step.
    pub inlet: crate::fluid::inlet::InletSchedule,
}

/// How forces on the solids are reported (lattice units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ForceSettings {
    /// Velocity of the force coefficients `C = 2 F / (rho U^2 A)` (`dx/dt`).
    pub reference_velocity: f64,
    /// Unit drag direction.
    pub drag_axis: [f64; 3],
    /// Unit lift direction, perpendicular to the drag.
    pub lift_axis: [f64; 3],
    /// Steps between writes of the force file.
    pub every: u64,
}

/// Bounds of a healthy run (lattice units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Health {
    /// Largest `|rho - 1|`.
    pub max_density_deviation: f64,
    /// Largest lattice Mach number `|u| sqrt 3`.
    pub max_mach: f64,
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

pub(crate) fn lattice_checked(nx: u32, ny: u32, nz: u32) -> Result<Lattice, FluidError> {
    let l = Lattice::new(nx, ny, nz);
    if nx == 0 || ny == 0 || nz == 0 || l.cells() as u64 > MAX_CELLS {
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
/// top layer (y = n + 1) a lid moving at `u_lid` along +x, periodic along z. Lattice units.
pub fn cavity(
    n: u32,
    depth: u32,
    u_lid: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    Geometry {
        fluid: [n, n, depth],
        faces: [
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Moving([u_lid, 0.0, 0.0]),
            Boundary::Periodic,
            Boundary::Periodic,
        ],
    }
    .setup(Rates::from_viscosity(nu), model)
}

/// Taylor-Green vortex on a periodic `n x n x depth` lattice (wavelength `n` cells):
/// `ux = u0 sin(kx) cos(ky)`, `uy = -u0 cos(kx) sin(ky)`, `rho = 1 - 3 u0^2 / 4 (cos 2kx +
/// cos 2ky)` (the pressure of the exact solution), at the cell indices `x, y`. Kinetic energy
/// decays as `exp(-4 nu k^2 t)`.
pub fn taylor_green(
    n: u32,
    depth: u32,
    u0: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    let mut setup = Geometry {
        fluid: [n, n, depth],
        faces: [Boundary::Periodic; 6],
    }
    .setup(Rates::from_viscosity(nu), model)?;
    setup.initial =
        murmur_common::lbm::Initial::taylor_green(u0, 2.0 * std::f32::consts::PI / n as f32);
    Ok(setup)
}

/// Body-force-driven Poiseuille flow: `h` fluid cells between walls at y = 0 and y = h + 1,
/// one cell along x and z (periodic). The force gives centre velocity `u_max`:
/// `F = 8 nu u_max / h^2` (walls halfway, at y = 1/2 and h + 1/2).
pub fn poiseuille(h: u32, u_max: f32, nu: f32, model: CollisionModel) -> Result<Setup, FluidError> {
    let mut setup = Geometry {
        fluid: [1, h, 1],
        faces: [
            Boundary::Periodic,
            Boundary::Periodic,
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Periodic,
            Boundary::Periodic,
        ],
    }
    .setup(Rates::from_viscosity(nu), model)?;
    setup.params.force = [8.0 * nu * u_max / (h as f32 * h as f32), 0.0, 0.0];
    setup.params.has_force = 1;
    Ok(setup)
}

/// Channel of `dims` cells (boundary layers included) with a uniform velocity inlet at `u_in`
/// (x = 0), a pressure outlet at density 1 (x = nx - 1), no-slip walls on the y and z faces and
/// a voxel sphere (wall cells of no face) of `radius` cells at `center` (measured from the
/// lattice's corner: cell `i` spans `i..i + 1`). Starts at rest.
pub fn obstacle(
    dims: [u32; 3],
    center: [f32; 3],
    radius: f32,
    u_in: f32,
    nu: f32,
    model: CollisionModel,
) -> Result<Setup, FluidError> {
    if dims.iter().any(|&d| d < 3) {
        return Err(FluidError::Invalid(format!(
            "obstacle lattice {dims:?} needs at least 3 cells along each axis"
        )));
    }
    let mut setup = Geometry {
        fluid: dims.map(|d| d - 2),
        faces: [
            Boundary::Inlet {
                velocity: [u_in, 0.0, 0.0],
                parabolic: 0,
            },
            Boundary::Outlet(1.0),
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Wall,
        ],
    }
    .setup(Rates::from_viscosity(nu), model)?;
    let lattice = setup.lattice();
    for (cell, f) in setup.flags.iter_mut().enumerate() {
        let (x, y, z) = lattice.coords(cell);
        let d = [x as f32 + 0.5, y as f32 + 0.5, z as f32 + 0.5];
        let r2: f32 = (0..3).map(|a| (d[a] - center[a]).powi(2)).sum();
        if *f == FLUID && r2 <= radius * radius {
            *f = cell_byte(CellKind::Wall, NO_FACE);
        }
    }
    Ok(setup)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn asset(name: &str) -> SceneFile {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../assets/fluid")
            .join(name);
        SceneFile::load(&path).unwrap()
    }

    /// A 2 x 1 x 1 m box (32 x 16 x 16 cells at 16 cells per metre) with `rest` appended.
    fn scene(rest: &str) -> Result<Scene, String> {
        let text = format!(
            "name = \"t\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.05\n\
             [lattice]\nresolution = 16\n[domain]\nsize = [2.0, 1.0, 1.0]\n{rest}"
        );
        SceneFile::parse(&text)?.build().map_err(|e| e.to_string())
    }

    #[test]
    fn dims_match_the_built_lattices() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../assets/fluid");
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "toml") {
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

    #[test]
    fn the_validation_assets_build_what_the_builders_build() {
        let cavity_scene = asset("cavity-re100.toml").build().unwrap();
        let p = &cavity_scene.setup.params;
        let nu = (1.0 / p.rates.shear - 0.5) / 3.0;
        let built = cavity(128, 1, 0.1, nu, CollisionModel::Bgk).unwrap();
        assert_eq!(cavity_scene.setup.flags, built.flags);
        assert_eq!(p.faces, built.params.faces);
        assert_eq!(cavity_scene.setup.initial, built.initial);

        let s = asset("poiseuille.toml").build().unwrap();
        let u = s.units.velocity_to_lattice(s.file.physical.velocity) as f32;
        let nu = s.units.viscosity_to_lattice(s.file.physical.viscosity) as f32;
        let built = poiseuille(32, u, nu, CollisionModel::Bgk).unwrap();
        assert_eq!(s.setup.flags, built.flags);
        let (a, b) = (s.setup.params.force[0], built.params.force[0]);
        assert!((a - b).abs() <= 1e-6 * b, "{a} vs {b}");

        let s = asset("taylor-green.toml").build().unwrap();
        assert_eq!(s.setup.lattice(), Lattice::new(64, 64, 64));
        assert_eq!(s.setup.immersed.periodic, [true; 3]);
        let l = s.setup.lattice();
        let peak = (0..l.cells())
            .map(|c| {
                let (x, y, z) = l.coords(c);
                s.setup.initial.at([x, y, z], true).1[0].abs()
            })
            .fold(0.0f32, f32::max);
        assert!((peak - 0.05).abs() < 1e-3, "{peak}");
    }

    use crate::fluid::ib::plan::retraction_for;

    /// The default retraction of a scene's solids: at its molecular relaxation time.
    fn retraction_of(s: &Scene, viscosity: f64) -> f64 {
        retraction_for(Units::tau(s.units.viscosity_to_lattice(viscosity)))
    }

    #[test]
    fn the_obstacle_sphere_is_an_immersed_solid() {
        let s = asset("obstacle.toml").build().unwrap();
        let [sphere] = &s.setup.immersed.solids[..] else {
            panic!("one solid expected");
        };
        // 0.2 m from the inlet plane at 24 cells per 0.1 m: lattice 48.5 (the origin at 0.5).
        assert_eq!(sphere.center, [48.5, 36.5, 37.7]);
        assert!((sphere.radius - 12.0).abs() < 1e-9);
        assert!((sphere.reference_area - std::f64::consts::PI * 144.0).abs() < 1e-9);
        // The samples sit the retraction inside the surface (less a little on the
        // tessellation's flat triangles).
        let inside = 12.0 - retraction_of(&s, 5e-4);
        for b in &sphere.body {
            let r = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt() as f64;
            assert!(r > inside - 0.1 && r < inside + 1e-3, "{r} {inside}");
        }
        let line = format!("retracted {:.3} cells", 12.0 - inside);
        assert!(s.info.iter().any(|l| l.contains(&line)), "{:?}", s.info);
        let total: f32 = sphere.area.iter().sum();
        assert!((total as f64 - 4.0 * std::f64::consts::PI * 144.0).abs() < 5.0);
        assert!(sphere.mass.is_some());
        assert_eq!(s.info.len(), 1);
        assert!((s.inlet.ramp_steps - 0.05 / s.units.dt).abs() < 1e-9);
        assert_eq!(s.forces.drag_axis, [1.0, 0.0, 0.0]);
        assert_eq!(s.health.max_mach, 0.5);
        // No voxel wall inside: the solid is the immersed boundary's.
        assert_eq!(
            s.setup.flags[s.setup.lattice().index(48, 36, 37)],
            murmur_common::lbm::boundary::FLUID
        );
    }

    #[test]
    fn body_offsets_are_in_the_solids_own_frame() {
        // A capsule along z turned onto x, then by 30 degrees about y: in the body frame the
        // samples lie within the capsule about its own z axis.
        let s = scene(
            "[faces]\nx_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }\n\
             [[solids]]\nshape = { type = \"capsule\", radius = 0.125, length = 0.5, \
             axis = [1, 0, 0] }\nposition = [1.0, 0.5, 0.5]\nreference_area = 0.1\n\
             orientation = { axis = [0, 1, 0], angle = 30 }\n",
        )
        .unwrap();
        let solid = &s.setup.immersed.solids[0];
        let retraction = retraction_of(&s, 0.05);
        for b in &solid.body {
            let radial = ((b[0] * b[0] + b[1] * b[1]) as f64).sqrt();
            let along = (b[2].abs() as f64 - 4.0).max(0.0);
            assert!(
                (radial * radial + along * along).sqrt() <= 2.0 - retraction + 1e-3,
                "{b:?}"
            );
            assert!(b[2].abs() as f64 <= 6.0 - retraction + 1e-4);
        }
        assert!(solid.body.iter().any(|b| b[2] as f64 > 5.9 - retraction));
        // The world axis of the body's z: x turned by 30 degrees about y.
        let r = crate::fluid::ib::solid::quat_matrix(solid.orientation);
        let want = [30f64.to_radians().cos(), 0.0, -30f64.to_radians().sin()];
        for i in 0..3 {
            assert!((r[i][2] - want[i]).abs() < 1e-12, "{r:?}");
        }
    }

    #[test]
    fn immersed_retraction_and_passes_override_the_fixed_choices() {
        let sphere = "[faces]\nx_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }\n\
             [[solids]]\nshape = { type = \"sphere\", radius = 0.25 }\nposition = [1.0, 0.5, 0.5]\n";
        let radii = |s: &Scene| {
            let b = &s.setup.immersed.solids[0].body;
            let r = b
                .iter()
                .map(|b| (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt() as f64);
            (r.clone().fold(f64::MAX, f64::min), r.fold(0.0, f64::max))
        };
        let plain = scene(sphere).unwrap();
        assert_eq!(plain.setup.immersed.passes, crate::fluid::ib::plan::PASSES);
        let (lo, hi) = radii(&plain);
        // Samples on the tessellation's flat triangles lie a little inside the sphere.
        let r = retraction_of(&plain, 0.05);
        assert!(lo > 4.0 - r - 0.03 && hi < 4.0 - r + 1e-3, "{lo} {hi}");
        let tuned = scene(&format!(
            "{sphere}[immersed]\nretraction = 0.4\npasses = 2\n"
        ))
        .unwrap();
        assert_eq!(tuned.setup.immersed.passes, 2);
        let (lo, hi) = radii(&tuned);
        assert!(lo > 3.6 - 0.03 && hi < 3.6 + 1e-3, "{lo} {hi}");
        // Left out of the canonical text when unset, so a scene's identity stays as it was.
        let file = SceneFile::parse(&format!(
            "name = \"t\"\n[physical]\nlength = 1.0\nvelocity = 1.0\nviscosity = 0.05\n\
             [lattice]\nresolution = 16\n[domain]\nsize = [2.0, 1.0, 1.0]\n{sphere}"
        ))
        .unwrap();
        let text = toml::to_string(&file).unwrap();
        assert!(
            !text.contains("retraction") && !text.contains("passes"),
            "{text}"
        );
        for (keys, want) in [
            (
                "retraction = 1.5",
                "immersed: retraction must be 0 to 1 cells, got 1.5",
            ),
            (
                "retraction = -0.1",
                "immersed: retraction must be 0 to 1 cells, got -0.1",
            ),
            ("passes = 0", "immersed: passes must be 1 to 8, got 0"),
            ("passes = 9", "immersed: passes must be 1 to 8, got 9"),
        ] {
            let e = scene(&format!("{sphere}[immersed]\n{keys}\n"))
                .err()
                .unwrap()
                .to_string();
            assert!(e.contains(want) && !e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn a_solid_across_a_periodic_face_takes_the_minimum_image() {
        // Centre 0.05 m from the periodic x origin: part of the sphere wraps to the far end.
        let s = scene(
            "[faces]\nx_min = { type = \"periodic\" }\nx_max = { type = \"periodic\" }\n\
             [[solids]]\nshape = { type = \"sphere\", radius = 0.25 }\n\
             position = [0.05, 0.5, 0.5]\n",
        )
        .unwrap();
        let solid = &s.setup.immersed.solids[0];
        assert_eq!(solid.center[0], 0.05 * 16.0 - 0.5);
        let inside = 4.0 - retraction_of(&s, 0.05);
        for b in &solid.body {
            let r = (b[0] * b[0] + b[1] * b[1] + b[2] * b[2]).sqrt() as f64;
            assert!(r > inside - 0.03 && r < inside + 1e-3, "{r} {inside}");
        }
    }

    #[test]
    fn scene_values_are_checked() {
        let err = |rest: &str| scene(rest).unwrap_err();
        assert!(err("[faces]\nz_max = { type = \"periodic\" }\n").contains("faces.z_max"));
        assert!(
            err("[faces]\ny_max = { type = \"moving-wall\", velocity = [0, 1, 0] }\n")
                .contains("moves in its own plane")
        );
        assert!(
            err("[faces]\nx_min = { type = \"inlet\", velocity = [2.0, 0, 0] }\n")
                .contains("lattice Mach")
        );
        assert!(err(
            "[faces]\nx_min = { type = \"inlet\", ramp = 1 }\ny_min = { type = \"inlet\" }\n"
        )
        .contains("every inlet ramps up together"));
        assert!(
            err("[faces]\nx_min = { type = \"wall\", velocity = [1, 0, 0] }\n")
                .contains("unknown field `velocity`")
        );
        assert!(err("[forces]\nlift_axis = [1, 1, 0]\n").contains("perpendicular"));
        assert!(err("[domain]\ncells = [3, 3, 3]\n").contains("line"));
        assert!(err(
            "[[solids]]\nshape = { type = \"box\", size = [0.2, 0.2, 0.2] }\n\
             position = [1, 0.5, 0.5]\n"
        )
        .contains("reference_area (m^2) is required for a box"));
        let s = scene(
            "[faces]\nx_min = { type = \"inlet\", profile = \"parabolic\", ramp = 0.5 }\n\
             x_max = { type = \"outlet\", density = 1001.0 }\ny_min = { type = \"free-slip\" }\n\
             y_max = { type = \"free-slip\" }\nz_min = { type = \"periodic\" }\n\
             z_max = { type = \"periodic\" }\n",
        )
        .unwrap();
        let p = &s.setup.params;
        // Parabolic across y (free-slip walls count); z is periodic.
        assert_eq!(p.faces[0].parabolic, 0b010);
        assert_eq!(p.faces[0].velocity, [0.1, 0.0, 0.0]);
        assert_eq!(p.faces[1].density, 1.001);
        assert_eq!(s.setup.lattice(), Lattice::new(34, 18, 16));
        assert!((s.inlet.ramp_steps - 80.0).abs() < 1e-9);
        assert!(s.inlet.gust.is_none());
    }

    #[test]
    fn a_gusting_inlet_reads_in_lattice_time_and_bad_gusts_are_refused() {
        let gusty = |g: &str| {
            scene(&format!(
                "[faces]\nx_min = {{ type = \"inlet\", gust = {{ {g} }} }}\n\
                 x_max = {{ type = \"outlet\" }}\n"
            ))
        };
        let s = gusty("intensity = 0.1, time_scale = 0.5, seed = 3").unwrap();
        let g = s.inlet.gust.unwrap();
        // 0.5 s at dt = 1 / 160 s (u_lb 0.1 of 1 m/s over 1/16 m).
        assert!((g.time_scale - 80.0).abs() < 1e-9 && g.intensity == 0.1 && g.seed == 3);
        assert!(s.inlet.varies());
        let err = |g: &str| gusty(g).unwrap_err();
        assert!(err("intensity = 2.0, time_scale = 0.5").contains("within 0..=1"));
        assert!(err("intensity = 0.1, time_scale = 0").contains("time_scale must be"));
        assert!(err("intensity = 0.1").contains("missing field `time_scale`"));
        assert!(err("intensity = 0.1, time_scale = 1, speed = 1").contains("unknown field"));
    }
}
