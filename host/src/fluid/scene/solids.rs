//! A scene's immersed solids: each shape meshed in its own frame (lattice cells), placed by its
//! pose, its surface sampled by Poisson-disk dart throwing in lattice coordinates (periodic
//! along periodic axes), the samples turned into offsets from the centre in the body frame, and
//! its motion, mass properties and reference area in lattice units. Every solid is checked
//! before any step: inside the domain and clear of inlets and outlets, slow enough for the
//! lattice, a volume when it accelerates, a sample count that fits.

use super::file::{MotionConfig, Orientation, SceneFile, ShapeConfig, SolidConfig, FACE_KEYS};
use super::geometry::{Boundary, Geometry};
use super::{ForceSettings, MAX_MACH, WARN_MACH};
use crate::fluid::ib::mesh::load_mesh;
use crate::fluid::ib::sampling::max_count;
use crate::fluid::ib::shapes::unit;
use crate::fluid::ib::solid::{quat_from_axis_angle, quat_matrix, quat_mul};
use crate::fluid::ib::{MassProperties, Motion, Pose, Primitive, Solid, TriangleMesh};
use crate::fluid::FluidError;
use murmur_common::lbm::ib::solid::MAX_SOLIDS;
use murmur_common::lbm::Units;
use std::f64::consts::PI;

/// Most surface samples of all solids of a scene together.
pub const MAX_SAMPLES: usize = 1 << 22;
/// Host bytes per surface sample while a solid is built (position, area, nearest-neighbour
/// distance, body offset, and the tessellated mesh and background grid around it): what the
/// memory check counts.
pub const SAMPLE_BYTES: u64 = 128;
/// Sample spacing of a solid that gives none (lattice cells).
pub const DEFAULT_SPACING: f64 = 0.5;
/// Samples per `d^2` that dart throwing reaches (its jamming limit, see
/// `ib::sampling`): `samples_per_cell` `n` becomes the spacing `d = sqrt(0.697 / n)`.
pub const JAMMING_DENSITY: f64 = 0.697;

const AXES: [&str; 3] = ["x", "y", "z"];

/// The solids of a scene with the lines to print about them.
pub struct BuiltSolids {
    pub solids: Vec<Solid>,
    /// One line per solid: its samples and their spacing.
    pub info: Vec<String>,
    pub warnings: Vec<String>,
}

/// Builds every solid of `file`; errors name the solid (`solids[0] (sphere): ...`).
pub fn build(
    file: &SceneFile,
    units: &Units,
    geometry: &Geometry,
    forces: &ForceSettings,
) -> Result<BuiltSolids, FluidError> {
    if file.solids.len() > MAX_SOLIDS {
        return Err(FluidError::Invalid(format!(
            "solids: {} solids, at most {MAX_SOLIDS}",
            file.solids.len()
        )));
    }
    let mut out = BuiltSolids {
        solids: Vec::new(),
        info: Vec::new(),
        warnings: Vec::new(),
    };
    let mut used = 0;
    for (i, config) in file.solids.iter().enumerate() {
        let name = config.name.clone().unwrap_or_else(|| default_name(config));
        let context = format!("solids[{i}] ({name})");
        let b = Builder {
            file,
            units,
            geometry,
            forces,
            config,
        };
        let (solid, summary) = b
            .build(name, MAX_SAMPLES - used, &mut out.warnings, &context)
            .map_err(|e| FluidError::Invalid(format!("{context}: {e}")))?;
        used += solid.len();
        out.info.push(format!("solid {}: {summary}", solid.name));
        out.solids.push(solid);
    }
    Ok(out)
}

fn default_name(config: &SolidConfig) -> String {
    match &config.shape {
        ShapeConfig::Sphere { .. } => "sphere".into(),
        ShapeConfig::Cylinder { .. } => "cylinder".into(),
        ShapeConfig::Box { .. } => "box".into(),
        ShapeConfig::Torus { .. } => "torus".into(),
        ShapeConfig::Capsule { .. } => "capsule".into(),
        ShapeConfig::Mesh { file } => file
            .file_stem()
            .map_or("mesh".into(), |s| s.to_string_lossy().into_owned()),
    }
}

/// A shape in its own frame, lattice cells, centred on its centre.
struct Body {
    /// The primitive, or `None` for a mesh file.
    primitive: Option<Primitive>,
    /// The loaded mesh (for files), already centred.
    mesh: Option<TriangleMesh>,
    /// Rotation taking the shape's own z axis onto its configured axis.
    align: [f64; 4],
    mass: Option<MassProperties>,
    /// Surface area (analytic for primitives), cells^2.
    area: f64,
}

struct Builder<'a> {
    file: &'a SceneFile,
    units: &'a Units,
    geometry: &'a Geometry,
    forces: &'a ForceSettings,
    config: &'a SolidConfig,
}

impl Builder<'_> {
    fn build(
        &self,
        name: String,
        limit: usize,
        warnings: &mut Vec<String>,
        context: &str,
    ) -> Result<(Solid, String), String> {
        let c = self.config;
        let units = self.units;
        let d = self.spacing()?;
        if !(c.scale.is_finite() && c.scale > 0.0) {
            return Err(format!(
                "scale must be a finite number > 0, got {}",
                c.scale
            ));
        }
        let mut body = self.body()?;

        // The sample count, bounded before anything is tessellated.
        let needed = max_count(body.area, d);
        if needed > limit as u64 {
            let left = if limit < MAX_SAMPLES {
                format!("the {limit} the other solids leave of ")
            } else {
                String::new()
            };
            return Err(format!(
                "sampling at spacing {d} cells would need up to {needed} samples (area {:.1} \
                 cells^2), over {left}the limit of {MAX_SAMPLES} samples per scene; raise \
                 spacing or lower samples_per_cell",
                body.area
            ));
        }
        crate::preflight::check_host_memory(
            &format!("the surface samples of solid {name}"),
            needed.saturating_mul(SAMPLE_BYTES),
        )
        .map_err(|e| e.to_string())?;

        let own = match (&body.primitive, body.mesh.take()) {
            (Some(p), _) => p.mesh(d).map_err(|e| e.to_string())?,
            (None, Some(m)) => m,
            (None, None) => unreachable!("a body is a primitive or a mesh"),
        };
        if c.position.iter().any(|x| !x.is_finite()) {
            return Err(format!("position must be finite, got {:?}", c.position));
        }
        let center = [0, 1, 2].map(|a| c.position[a] / units.dx + self.geometry.offset(a));
        let orientation = quat_mul(orientation(c.orientation.as_ref())?, body.align);
        let pose = Pose::new(center, orientation, 1.0).map_err(|e| e.to_string())?;
        let world = own.transformed(&pose);
        let radius = own
            .vertices
            .iter()
            .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
            .fold(0.0, f64::max);

        let motion = motion(&c.motion, units)?;
        let speed = motion.max_speed(radius);
        let mach = Units::mach(speed);
        if mach > MAX_MACH {
            return Err(format!(
                "its motion reaches {:.4} m/s, lattice Mach {mach:.3} > {MAX_MACH}; slow it \
                 down or lower lattice.velocity",
                units.velocity_to_si(speed)
            ));
        }
        if mach > WARN_MACH {
            warnings.push(format!(
                "{context}: its motion reaches lattice Mach {mach:.3} > {WARN_MACH}: expect \
                 compressibility errors"
            ));
        }
        if body.mass.is_none() {
            body.mass = periodic_tube_mass(&body, orientation, self.geometry);
        }
        if accelerates(&motion) && body.mass.is_none() {
            return Err(
                "its surface is not closed, but its motion accelerates: the fluid inside an \
                 accelerating solid needs the solid's volume; close the surface, or use a \
                 motion without acceleration (fixed, or constant without ramp)"
                    .into(),
            );
        }
        self.check_placement(&world, center, radius, &motion, warnings, context)?;

        let periodic = self.geometry.periodic();
        let period = [0, 1, 2].map(|a| {
            if periodic[a] {
                self.geometry.fluid[a] as f64
            } else {
                0.0
            }
        });
        // Samples in the world pose (periodic where the domain is), kept as body-frame offsets
        // retracted into the solid; the primitive's analytic mass properties replace the
        // tessellation's.
        // The molecular relaxation time sets where the diffuse interface's wall is.
        let tau = Units::tau(units.viscosity_to_lattice(self.file.physical.viscosity));
        let retraction = self.file.immersed.tuning().retraction_at(tau);
        let (mut solid, samples) = Solid::sampled(
            &name,
            &own,
            center,
            orientation,
            motion,
            d,
            c.seed,
            period,
            limit,
            retraction,
        )
        .map_err(|e| e.to_string())?;
        solid.mass = body.mass;
        solid.shape = body.primitive;
        if solid.shape.is_none() {
            solid.surface = Some(std::sync::Arc::new(own));
        }
        solid.reference_area = self.reference_area(&body, quat_matrix(solid.orientation))?;
        Ok((
            solid,
            format!("{}; retracted {retraction:.3} cells", samples.summary()),
        ))
    }

    /// The minimum sample distance, cells.
    fn spacing(&self) -> Result<f64, String> {
        let d = match (self.config.spacing, self.config.samples_per_cell) {
            (Some(_), Some(_)) => {
                return Err("give spacing or samples_per_cell, not both".into());
            }
            (Some(d), None) => d,
            (None, Some(n)) => {
                if !(n.is_finite() && n > 0.0) {
                    return Err(format!(
                        "samples_per_cell must be a finite number > 0, got {n}"
                    ));
                }
                (JAMMING_DENSITY / n).sqrt()
            }
            (None, None) => DEFAULT_SPACING,
        };
        if d.is_finite() && d > 0.0 {
            Ok(d)
        } else {
            Err(format!(
                "spacing must be a finite number of cells > 0, got {d}"
            ))
        }
    }

    /// The shape in its own frame, scaled to lattice cells.
    fn body(&self) -> Result<Body, String> {
        let cells = |m: f64| m * self.config.scale / self.units.dx;
        let z = [1.0, 0.0, 0.0, 0.0];
        let (primitive, align) = match &self.config.shape {
            ShapeConfig::Sphere { radius } => (
                Primitive::Sphere {
                    radius: cells(*radius),
                },
                z,
            ),
            ShapeConfig::Cylinder {
                radius,
                length,
                caps,
                axis,
            } => (
                Primitive::Cylinder {
                    radius: cells(*radius),
                    length: cells(*length),
                    caps: *caps,
                },
                align_z(*axis)?,
            ),
            ShapeConfig::Box { size } => (
                Primitive::Box {
                    half: size.map(|s| 0.5 * cells(s)),
                },
                z,
            ),
            ShapeConfig::Torus {
                major_radius,
                minor_radius,
                axis,
            } => (
                Primitive::Torus {
                    major: cells(*major_radius),
                    minor: cells(*minor_radius),
                },
                align_z(*axis)?,
            ),
            ShapeConfig::Capsule {
                radius,
                length,
                axis,
            } => (
                Primitive::Capsule {
                    radius: cells(*radius),
                    length: cells(*length),
                },
                align_z(*axis)?,
            ),
            ShapeConfig::Mesh { file } => return self.mesh_body(file),
        };
        Ok(Body {
            primitive: Some(primitive),
            mesh: None,
            align,
            mass: primitive_mass(&primitive),
            area: primitive.analytic_area(),
        })
    }

    /// A mesh file read, scaled to cells and centred on its centre of mass (closed meshes) or
    /// its bounding box's centre.
    fn mesh_body(&self, file: &std::path::Path) -> Result<Body, String> {
        let path = self.file.dir.join(file);
        let shown = path.display().to_string();
        let mut mesh = load_mesh(&path).map_err(|e| {
            let m = e.to_string();
            if m.contains(&shown) {
                m
            } else {
                format!("{shown}: {m}")
            }
        })?;
        mesh.validate().map_err(|e| format!("{shown}: {e}"))?;
        let k = self.config.scale / self.units.dx;
        for v in &mut mesh.vertices {
            *v = v.map(|x| x * k);
        }
        let (centre, mass) = match mesh.mass_properties() {
            Some((c, m)) => (c, Some(m)),
            None => {
                let (lo, hi) = mesh.bounds();
                ([0, 1, 2].map(|a| 0.5 * (lo[a] + hi[a])), None)
            }
        };
        for v in &mut mesh.vertices {
            *v = [0, 1, 2].map(|a| v[a] - centre[a]);
        }
        Ok(Body {
            primitive: None,
            area: mesh.area(),
            mesh: Some(mesh),
            align: [1.0, 0.0, 0.0, 0.0],
            mass,
        })
    }

    /// Refuses a solid outside the domain or reaching into an inlet or outlet, over the region
    /// its motion sweeps (its bounding box, widened by an oscillation's amplitude; the sphere
    /// of its radius for rotations); warns when a translation leaves the domain within
    /// `run.steps`.
    fn check_placement(
        &self,
        world: &TriangleMesh,
        center: [f64; 3],
        radius: f64,
        motion: &Motion,
        warnings: &mut Vec<String>,
        context: &str,
    ) -> Result<(), String> {
        let g = self.geometry;
        let (mut lo, mut hi) = world.bounds();
        match motion {
            Motion::Oscillate { amplitude, .. } => {
                for a in 0..3 {
                    lo[a] -= amplitude[a].abs();
                    hi[a] += amplitude[a].abs();
                }
            }
            Motion::Rotate { .. } | Motion::OscillateRotation { .. } => {
                for a in 0..3 {
                    lo[a] = lo[a].min(center[a] - radius);
                    hi[a] = hi[a].max(center[a] + radius);
                }
            }
            Motion::Fixed | Motion::Translate { .. } => {}
        }
        let periodic = g.periodic();
        let si = |a: usize, l: f64| (l - g.offset(a)) * self.units.dx;
        for a in 0..3 {
            if periodic[a] {
                continue;
            }
            let (wlo, whi) = g.walls(a);
            let span = format!(
                "along {} it spans {:.4}..{:.4} m",
                AXES[a],
                si(a, lo[a]),
                si(a, hi[a])
            );
            if hi[a] <= wlo || lo[a] >= whi {
                return Err(format!(
                    "it lies outside the domain: {span}, the domain 0..{:.4} m",
                    si(a, whi)
                ));
            }
            for (face, crosses, plane) in [(2 * a, lo[a] < wlo, wlo), (2 * a + 1, hi[a] > whi, whi)]
            {
                if crosses && matches!(g.faces[face], Boundary::Inlet { .. } | Boundary::Outlet(_))
                {
                    return Err(format!(
                        "it reaches into {} at faces.{}: {span}, the face is at {} = {:.4} m",
                        g.faces[face].describe(),
                        FACE_KEYS[face],
                        AXES[a],
                        si(a, plane)
                    ));
                }
            }
        }
        if let Motion::Translate { .. } = motion {
            let steps = self.file.run.steps;
            let shift = motion.at(steps as f64).offset;
            for a in (0..3).filter(|&a| !periodic[a]) {
                let (wlo, whi) = g.walls(a);
                if hi[a] + shift[a] <= wlo || lo[a] + shift[a] >= whi {
                    warnings.push(format!(
                        "{context}: its translation carries it out of the domain along {} \
                         within run.steps = {steps}",
                        AXES[a]
                    ));
                }
            }
        }
        Ok(())
    }

    /// The reference area, cells^2: the configured one, or the frontal area of a sphere, or of
    /// a cylinder lying across or along the drag axis.
    fn reference_area(&self, body: &Body, r: [[f64; 3]; 3]) -> Result<f64, String> {
        if let Some(a) = self.config.reference_area {
            if !(a.is_finite() && a > 0.0) {
                return Err(format!(
                    "reference_area must be a finite number of m^2 > 0, got {a}"
                ));
            }
            return Ok(a / (self.units.dx * self.units.dx));
        }
        let drag = self.forces.drag_axis;
        match body.primitive {
            Some(Primitive::Sphere { radius }) => Ok(PI * radius * radius),
            Some(Primitive::Cylinder { radius, length, .. }) => {
                // The cylinder's axis in the world: the third column of R.
                let along = (0..3).map(|i| r[i][2] * drag[i]).sum::<f64>().abs();
                if along < 1e-9 {
                    Ok(2.0 * radius * length)
                } else if along > 1.0 - 1e-9 {
                    Ok(PI * radius * radius)
                } else {
                    Err(
                        "reference_area (m^2) is required: the cylinder lies neither across \
                         nor along forces.drag_axis"
                            .into(),
                    )
                }
            }
            _ => Err(format!(
                "reference_area (m^2) is required for a {}",
                default_name(self.config)
            )),
        }
    }
}

/// The rotation of an orientation: axis and angle (degrees) or a quaternion; identity if none.
fn orientation(o: Option<&Orientation>) -> Result<[f64; 4], String> {
    let Some(o) = o else {
        return Ok([1.0, 0.0, 0.0, 0.0]);
    };
    match (o.axis, o.angle, o.quaternion) {
        (None, None, Some(q)) => {
            let n = q.iter().map(|x| x * x).sum::<f64>().sqrt();
            if n > 0.0 && n.is_finite() {
                Ok(q.map(|x| x / n))
            } else {
                Err(format!(
                    "orientation.quaternion must be a non-zero [w, x, y, z], got {q:?}"
                ))
            }
        }
        (Some(axis), Some(angle), None) => {
            let axis = unit("orientation.axis", axis)?;
            if !angle.is_finite() {
                return Err(format!("orientation.angle must be finite, got {angle}"));
            }
            Ok(quat_from_axis_angle(axis, angle.to_radians()))
        }
        _ => Err("orientation takes axis and angle (degrees), or quaternion [w, x, y, z]".into()),
    }
}

/// The rotation taking the z axis onto `axis`.
fn align_z(axis: [f64; 3]) -> Result<[f64; 4], String> {
    let a = unit("shape.axis", axis)?;
    if a[2] > 1.0 - 1e-12 {
        return Ok([1.0, 0.0, 0.0, 0.0]);
    }
    if a[2] < -1.0 + 1e-12 {
        return Ok([0.0, 1.0, 0.0, 0.0]);
    }
    // z x a, of length sin(angle).
    let c = [-a[1], a[0], 0.0];
    let s = (c[0] * c[0] + c[1] * c[1]).sqrt();
    Ok(quat_from_axis_angle(
        [c[0] / s, c[1] / s, 0.0],
        s.atan2(a[2]),
    ))
}

/// A motion in lattice units.
fn motion(m: &MotionConfig, units: &Units) -> Result<Motion, String> {
    let ramp = |s: f64| {
        if s.is_finite() && s >= 0.0 {
            Ok(units.time_to_steps(s))
        } else {
            Err(format!("motion.ramp must be a time >= 0 s, got {s}"))
        }
    };
    let finite = |what: &str, v: &[f64]| {
        if v.iter().all(|x| x.is_finite()) {
            Ok(())
        } else {
            Err(format!("motion.{what} must be finite, got {v:?}"))
        }
    };
    Ok(match *m {
        MotionConfig::Fixed {} => Motion::Fixed,
        MotionConfig::Translate { velocity, ramp: r } => {
            finite("velocity", &velocity)?;
            Motion::Translate {
                velocity: velocity.map(|v| units.velocity_to_lattice(v)),
                ramp: ramp(r)?,
            }
        }
        MotionConfig::Rotate {
            axis,
            rate,
            ramp: r,
        } => {
            finite("rate", &[rate])?;
            Motion::Rotate {
                axis: unit("motion.axis", axis)?,
                rate: rate * units.dt,
                ramp: ramp(r)?,
            }
        }
        MotionConfig::Oscillate {
            amplitude,
            frequency,
            ramp: r,
        } => {
            finite("amplitude", &amplitude)?;
            finite("frequency", &[frequency])?;
            Motion::Oscillate {
                amplitude: amplitude.map(|a| a / units.dx),
                frequency: frequency * units.dt,
                ramp: ramp(r)?,
            }
        }
        MotionConfig::OscillateRotation {
            axis,
            amplitude,
            frequency,
            ramp: r,
        } => {
            finite("amplitude", &[amplitude])?;
            finite("frequency", &[frequency])?;
            Motion::OscillateRotation {
                axis: unit("motion.axis", axis)?,
                amplitude: amplitude.to_radians(),
                frequency: frequency * units.dt,
                ramp: ramp(r)?,
            }
        }
    })
}

/// Whether a motion ever accelerates the solid (then the fluid inside it needs its volume).
fn accelerates(m: &Motion) -> bool {
    match *m {
        Motion::Fixed => false,
        Motion::Translate { velocity, ramp } => ramp > 0.0 && velocity != [0.0; 3],
        Motion::Rotate { rate, ramp, .. } => ramp > 0.0 && rate != 0.0,
        Motion::Oscillate {
            amplitude,
            frequency,
            ..
        } => frequency != 0.0 && amplitude != [0.0; 3],
        Motion::OscillateRotation {
            amplitude,
            frequency,
            ..
        } => frequency != 0.0 && amplitude != 0.0,
    }
}

/// Volume and inertia about the centre (own frame, unit density) of a closed primitive; `None`
/// for an open tube.
/// The mass properties of an open cylinder that runs through a periodic axis over exactly the
/// period: its periodic images close it, so it encloses the volume of a capped cylinder.
fn periodic_tube_mass(
    body: &Body,
    orientation: [f64; 4],
    geometry: &Geometry,
) -> Option<MassProperties> {
    let Some(Primitive::Cylinder {
        radius,
        length,
        caps: false,
    }) = body.primitive
    else {
        return None;
    };
    let r = quat_matrix(orientation);
    let axis = [r[0][2], r[1][2], r[2][2]];
    let periodic = geometry.periodic();
    (0..3).find_map(|a| {
        let along = axis[a].abs() > 1.0 - 1e-9;
        let period = geometry.fluid[a] as f64;
        (along && periodic[a] && (length - period).abs() <= 1e-6 * period).then(|| {
            primitive_mass(&Primitive::Cylinder {
                radius,
                length,
                caps: true,
            })
        })?
    })
}

fn primitive_mass(p: &Primitive) -> Option<MassProperties> {
    let diag = |v: f64, ixx: f64, iyy: f64, izz: f64| MassProperties {
        volume: v,
        inertia: [[ixx, 0.0, 0.0], [0.0, iyy, 0.0], [0.0, 0.0, izz]],
    };
    Some(match *p {
        Primitive::Sphere { radius: r } => {
            let v = 4.0 / 3.0 * PI * r.powi(3);
            let i = 0.4 * v * r * r;
            diag(v, i, i, i)
        }
        Primitive::Cylinder { caps: false, .. } => return None,
        Primitive::Cylinder {
            radius: r,
            length: l,
            ..
        } => {
            let v = PI * r * r * l;
            let side = v * (3.0 * r * r + l * l) / 12.0;
            diag(v, side, side, 0.5 * v * r * r)
        }
        Primitive::Box { half: [a, b, c] } => {
            let v = 8.0 * a * b * c;
            diag(
                v,
                v * (b * b + c * c) / 3.0,
                v * (a * a + c * c) / 3.0,
                v * (a * a + b * b) / 3.0,
            )
        }
        Primitive::Torus {
            major: big,
            minor: r,
        } => {
            let v = 2.0 * PI * PI * big * r * r;
            let side = v * (0.5 * big * big + 0.625 * r * r);
            diag(v, side, side, v * (big * big + 0.75 * r * r))
        }
        Primitive::Capsule {
            radius: r,
            length: l,
        } => {
            // The cylinder plus two hemispheres, each moved from its flat face (inertia
            // 2/5 m r^2 about a diameter there) to the centre through its own centroid,
            // 3 r / 8 from the flat face.
            let (vc, vs) = (PI * r * r * l, 4.0 / 3.0 * PI * r.powi(3));
            let side = vc * (l * l / 12.0 + r * r / 4.0)
                + vs * (0.4 * r * r + l * l / 4.0 + 3.0 * l * r / 8.0);
            diag(vc + vs, side, side, vc * r * r / 2.0 + vs * 0.4 * r * r)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn align_z_turns_z_onto_the_axis() {
        for axis in [
            [1.0, 0.0, 0.0],
            [0.0, -1.0, 0.0],
            [0.0, 0.0, -1.0],
            [1.0, 2.0, -2.0],
        ] {
            let q = align_z(axis).unwrap();
            let r = quat_matrix(q);
            let n = (axis.iter().map(|x| x * x).sum::<f64>()).sqrt();
            for i in 0..3 {
                assert!((r[i][2] - axis[i] / n).abs() < 1e-12, "{axis:?}");
            }
        }
        assert!(align_z([0.0; 3]).is_err());
    }

    #[test]
    fn primitive_volumes_match_their_meshes() {
        // The divergence theorem over the fine meshes.
        let volume = |m: &TriangleMesh| -> f64 {
            (0..m.triangles.len())
                .map(|t| {
                    let [a, b, c] = m.corners(t);
                    let bc = [
                        b[1] * c[2] - b[2] * c[1],
                        b[2] * c[0] - b[0] * c[2],
                        b[0] * c[1] - b[1] * c[0],
                    ];
                    (a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2]) / 6.0
                })
                .sum()
        };
        for p in [
            Primitive::Sphere { radius: 3.0 },
            Primitive::Cylinder {
                radius: 2.0,
                length: 5.0,
                caps: true,
            },
            Primitive::Box {
                half: [1.0, 2.0, 3.0],
            },
            Primitive::Torus {
                major: 4.0,
                minor: 1.0,
            },
            Primitive::Capsule {
                radius: 1.0,
                length: 2.0,
            },
        ] {
            let m = primitive_mass(&p).unwrap();
            let v = volume(&p.mesh(0.1).unwrap());
            // Inscribed meshes of at least 64 segments per circle: within 0.5 %.
            assert!(
                (m.volume - v).abs() / v < 5e-3,
                "{p:?}: {} vs {v}",
                m.volume
            );
        }
        assert!(primitive_mass(&Primitive::Cylinder {
            radius: 1.0,
            length: 1.0,
            caps: false
        })
        .is_none());
    }
}
