//! Solid shapes as closed triangle meshes: the primitives (sphere, cylinder, box, torus,
//! capsule) tessellated in their own frame, and the [`Pose`] that places them in the lattice.
//!
//! Every round primitive is a surface of revolution about its z axis: a polyline profile
//! `(rho, z)` revolved by `n` segments. Each band between two profile points is a planar
//! isosceles trapezoid (two triangles); profile points on the axis become a single vertex with a
//! triangle fan. Vertices of a ring are shared, so closed profiles give watertight meshes.
//!
//! Resolution: the tessellators take `max_edge` (lattice cells), the longest chord along any
//! circle of the shape, normally the sampling spacing. A circle of radius `r` gets
//! `n = max(64, ceil(2 pi r / max_edge))` segments. An inscribed `n`-gon's perimeter is
//! `n sin(pi/n) / pi` of the circle's, a relative deficit below `pi^2 / (6 n^2)` = 0.04 % at
//! `n = 64`; a revolved polygonal profile loses at most that factor twice (around the axis and
//! along the profile), so every round primitive's mesh area is within 0.1 % of the analytic one
//! (the tests check 0.5 %). `max_edge <= d` also keeps the facets within `d^2 / (8 r)` of the
//! true surface, far below a lattice cell for the radii the solver resolves.

use std::f64::consts::PI;

/// Fewest segments on any full circle: bounds the area deficit by 0.04 % per direction.
pub const MIN_SEGMENTS: usize = 64;

/// What is wrong with a mesh file (the detail of [`ShapeError::MeshFile`]).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MeshProblem {
    /// The file cannot be read (the OS reason).
    #[error("cannot read it: {0}")]
    Read(String),
    /// The extension names no format this reader knows.
    #[error("unknown mesh format {0:?} (expected .obj or .stl)")]
    Extension(String),
    /// The contents do not parse.
    #[error("{format} parse error: {reason}")]
    Parse {
        format: &'static str,
        reason: String,
    },
    /// The file parses but holds no triangle.
    #[error("no triangles")]
    NoTriangles,
    /// A vertex coordinate is NaN or infinite.
    #[error("non-finite vertex {0:?}")]
    NonFinite([f64; 3]),
    /// A face refers to a vertex the file does not have (the count it has).
    #[error("a face refers to a vertex the file does not define (it defines {0})")]
    IndexOutOfRange(usize),
}

/// A shape that cannot be meshed or placed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ShapeError {
    /// A length that must be positive and finite is not.
    #[error("degenerate shape: {what} = {value} (must be positive and finite)")]
    NonPositive { what: &'static str, value: f64 },
    /// A coordinate that must be finite is not.
    #[error("{what} has a non-finite component {value}")]
    NonFinite { what: &'static str, value: f64 },
    /// The torus tube would cross the axis (a self-intersecting spindle torus).
    #[error("degenerate torus: minor radius {minor} must be below major radius {major}")]
    SpindleTorus { major: f64, minor: f64 },
    /// The rotation of a pose has zero or non-finite length.
    #[error("pose rotation {0:?} is not a rotation (zero or non-finite quaternion)")]
    BadRotation([f64; 4]),
    /// A mesh with no triangles, a zero total area, non-finite vertices or indices out of range.
    #[error("degenerate mesh: {0}")]
    BadMesh(String),
    /// A mesh file that cannot be read or holds no usable surface.
    #[error("mesh file {path}: {problem}")]
    MeshFile { path: String, problem: MeshProblem },
}

/// A triangle mesh in lattice units (cells); triangles are counter-clockwise seen from outside.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriangleMesh {
    pub vertices: Vec<[f64; 3]>,
    pub triangles: Vec<[u32; 3]>,
}

pub(crate) fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

pub(crate) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

pub(crate) fn norm(a: [f64; 3]) -> f64 {
    (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]).sqrt()
}

/// `v / |v|`, or an error naming `what` for zero or non-finite vectors (a scene's axes).
pub(crate) fn unit(what: &str, v: [f64; 3]) -> Result<[f64; 3], String> {
    let n = norm(v);
    if n > 0.0 && n.is_finite() {
        Ok(v.map(|x| x / n))
    } else {
        Err(format!("{what} must be a non-zero vector, got {v:?}"))
    }
}

impl TriangleMesh {
    /// The corners of triangle `t`.
    pub fn corners(&self, t: usize) -> [[f64; 3]; 3] {
        self.triangles[t].map(|i| self.vertices[i as usize])
    }

    /// Area of triangle `t` (cells^2).
    pub fn triangle_area(&self, t: usize) -> f64 {
        let [a, b, c] = self.corners(t);
        0.5 * norm(cross(sub(b, a), sub(c, a)))
    }

    /// Total surface area (cells^2).
    pub fn area(&self) -> f64 {
        (0..self.triangles.len())
            .map(|t| self.triangle_area(t))
            .sum()
    }

    /// Axis-aligned bounding box `(min, max)` of the vertices (cells).
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        for v in &self.vertices {
            for k in 0..3 {
                lo[k] = lo[k].min(v[k]);
                hi[k] = hi[k].max(v[k]);
            }
        }
        (lo, hi)
    }

    /// Checks that the mesh can be sampled: triangles present, indices in range, finite
    /// vertices, positive total area.
    pub fn validate(&self) -> Result<(), ShapeError> {
        if self.triangles.is_empty() {
            return Err(ShapeError::BadMesh("no triangles".into()));
        }
        if let Some(v) = self
            .vertices
            .iter()
            .find(|v| v.iter().any(|x| !x.is_finite()))
        {
            return Err(ShapeError::BadMesh(format!("non-finite vertex {v:?}")));
        }
        let n = self.vertices.len();
        if let Some(t) = self
            .triangles
            .iter()
            .find(|t| t.iter().any(|&i| i as usize >= n))
        {
            return Err(ShapeError::BadMesh(format!(
                "triangle {t:?} indexes past {n} vertices"
            )));
        }
        let area = self.area();
        if !(area > 0.0 && area.is_finite()) {
            return Err(ShapeError::BadMesh(format!("total area {area}")));
        }
        Ok(())
    }

    /// The mesh placed by `pose`: every vertex `p` becomes `position + scale * R p`.
    pub fn transformed(&self, pose: &Pose) -> TriangleMesh {
        TriangleMesh {
            vertices: self.vertices.iter().map(|&p| pose.apply(p)).collect(),
            triangles: self.triangles.clone(),
        }
    }
}

/// Placement of a shape: `x = position + scale * R(rotation) p` for a point `p` of the shape's
/// own frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pose {
    /// Translation (cells).
    pub position: [f64; 3],
    /// Unit quaternion `[w, x, y, z]`.
    pub rotation: [f64; 4],
    /// Uniform scale factor (dimensionless, positive).
    pub scale: f64,
}

impl Default for Pose {
    fn default() -> Self {
        Pose {
            position: [0.0; 3],
            rotation: [1.0, 0.0, 0.0, 0.0],
            scale: 1.0,
        }
    }
}

impl Pose {
    /// A pose from a translation (cells), a rotation of `angle` radians about `axis` (any
    /// non-zero length) and a uniform scale.
    pub fn from_axis_angle(
        position: [f64; 3],
        axis: [f64; 3],
        angle: f64,
        scale: f64,
    ) -> Result<Pose, ShapeError> {
        let len = norm(axis);
        if !(len > 0.0 && len.is_finite() && angle.is_finite()) {
            return Err(ShapeError::BadRotation([angle, axis[0], axis[1], axis[2]]));
        }
        let (s, c) = (0.5 * angle).sin_cos();
        Pose::new(
            position,
            [c, s * axis[0] / len, s * axis[1] / len, s * axis[2] / len],
            scale,
        )
    }

    /// A pose from a translation (cells), a quaternion `[w, x, y, z]` (normalised here) and a
    /// uniform scale.
    pub fn new(position: [f64; 3], rotation: [f64; 4], scale: f64) -> Result<Pose, ShapeError> {
        positive("scale", scale)?;
        if let Some(&value) = position.iter().find(|p| !p.is_finite()) {
            return Err(ShapeError::NonFinite {
                what: "pose position",
                value,
            });
        }
        let len = rotation.iter().map(|q| q * q).sum::<f64>().sqrt();
        if !(len > 0.0 && len.is_finite()) {
            return Err(ShapeError::BadRotation(rotation));
        }
        Ok(Pose {
            position,
            rotation: rotation.map(|q| q / len),
            scale,
        })
    }

    /// `R p` for the pose's rotation (unit quaternion assumed).
    pub fn rotate(&self, p: [f64; 3]) -> [f64; 3] {
        let [w, x, y, z] = self.rotation;
        let u = [x, y, z];
        // p + 2 w (u x p) + 2 u x (u x p)
        let t = cross(u, p).map(|c| 2.0 * c);
        let ut = cross(u, t);
        [
            p[0] + w * t[0] + ut[0],
            p[1] + w * t[1] + ut[1],
            p[2] + w * t[2] + ut[2],
        ]
    }

    /// `position + scale * R p` (cells).
    pub fn apply(&self, p: [f64; 3]) -> [f64; 3] {
        let r = self.rotate(p);
        [
            self.position[0] + self.scale * r[0],
            self.position[1] + self.scale * r[1],
            self.position[2] + self.scale * r[2],
        ]
    }
}

fn positive(what: &'static str, value: f64) -> Result<(), ShapeError> {
    if value > 0.0 && value.is_finite() {
        Ok(())
    } else {
        Err(ShapeError::NonPositive { what, value })
    }
}

/// Segments on a full circle of radius `r` so that chords are at most `max_edge` long, at
/// least [`MIN_SEGMENTS`].
pub fn circle_segments(r: f64, max_edge: f64) -> usize {
    let n = (2.0 * PI * r / max_edge).ceil();
    if n.is_finite() && n > MIN_SEGMENTS as f64 {
        n as usize
    } else {
        MIN_SEGMENTS
    }
}

/// Points of an arc of `radius` about `(rho0, z0)` in the `(rho, z)` plane, from angle `a0` to
/// `a1` (radians), the first included and the last excluded, chords at most `max_edge` long.
fn arc(rho0: f64, z0: f64, radius: f64, a0: f64, a1: f64, max_edge: f64) -> Vec<(f64, f64)> {
    let full = circle_segments(radius, max_edge) as f64;
    let m = ((a1 - a0).abs() / (2.0 * PI) * full).ceil().max(1.0) as usize;
    (0..m)
        .map(|i| {
            let a = a0 + (a1 - a0) * i as f64 / m as f64;
            (rho0 + radius * a.cos(), z0 + radius * a.sin())
        })
        .collect()
}

/// Revolves a profile `(rho, z)` about the z axis with `n` segments. `rho == 0` points become
/// one vertex on the axis. A `closed` profile joins its last point to its first (a torus).
/// The profile runs so that its direction `(d rho, d z)` turned clockwise points outward (up the
/// outside of the shape), which makes every triangle counter-clockwise seen from outside.
fn revolve(profile: &[(f64, f64)], n: usize, closed: bool) -> TriangleMesh {
    let mut mesh = TriangleMesh::default();
    // Each profile point's first vertex index and whether it is a single axis vertex.
    let mut rings = Vec::with_capacity(profile.len());
    for &(rho, z) in profile {
        let first = mesh.vertices.len() as u32;
        if rho == 0.0 {
            mesh.vertices.push([0.0, 0.0, z]);
            rings.push((first, true));
        } else {
            for j in 0..n {
                let (s, c) = (2.0 * PI * j as f64 / n as f64).sin_cos();
                mesh.vertices.push([rho * c, rho * s, z]);
            }
            rings.push((first, false));
        }
    }
    let pairs = if closed {
        profile.len()
    } else {
        profile.len() - 1
    };
    let n32 = n as u32;
    for i in 0..pairs {
        let (a, a_axis) = rings[i];
        let (b, b_axis) = rings[(i + 1) % profile.len()];
        for j in 0..n32 {
            let k = (j + 1) % n32;
            match (a_axis, b_axis) {
                (true, true) => {}
                (true, false) => mesh.triangles.push([a, b + k, b + j]),
                (false, true) => mesh.triangles.push([a + j, a + k, b]),
                (false, false) => {
                    mesh.triangles.push([a + j, a + k, b + k]);
                    mesh.triangles.push([a + j, b + k, b + j]);
                }
            }
        }
    }
    mesh
}

/// A sphere of `radius` (cells) centred on the origin, chords at most `max_edge` (cells).
pub fn sphere(radius: f64, max_edge: f64) -> Result<TriangleMesh, ShapeError> {
    positive("sphere radius", radius)?;
    positive("max_edge", max_edge)?;
    let mut profile = arc(0.0, 0.0, radius, -0.5 * PI, 0.5 * PI, max_edge);
    profile[0].0 = 0.0;
    profile.push((0.0, radius));
    Ok(revolve(&profile, circle_segments(radius, max_edge), false))
}

/// A cylinder of `radius` and `length` (cells) along z, centred on the origin, with flat end
/// caps or open (a tube, e.g. a pipe through periodic faces).
pub fn cylinder(
    radius: f64,
    length: f64,
    caps: bool,
    max_edge: f64,
) -> Result<TriangleMesh, ShapeError> {
    positive("cylinder radius", radius)?;
    positive("cylinder length", length)?;
    positive("max_edge", max_edge)?;
    let h = 0.5 * length;
    let profile: Vec<(f64, f64)> = if caps {
        vec![(0.0, -h), (radius, -h), (radius, h), (0.0, h)]
    } else {
        vec![(radius, -h), (radius, h)]
    };
    Ok(revolve(&profile, circle_segments(radius, max_edge), false))
}

/// An axis-aligned box with `half` extents (cells) centred on the origin: 12 triangles (flat
/// faces are exact at any resolution).
pub fn cuboid(half: [f64; 3]) -> Result<TriangleMesh, ShapeError> {
    for h in half {
        positive("box half extent", h)?;
    }
    let vertices = (0..8)
        .map(|i| [0, 1, 2].map(|k| if i >> k & 1 == 1 { half[k] } else { -half[k] }))
        .collect();
    // Corner i has bit k set where coordinate k is +half[k]; faces counter-clockwise outside.
    let triangles = vec![
        [0, 2, 3],
        [0, 3, 1], // z-
        [4, 5, 7],
        [4, 7, 6], // z+
        [0, 1, 5],
        [0, 5, 4], // y-
        [2, 6, 7],
        [2, 7, 3], // y+
        [0, 4, 6],
        [0, 6, 2], // x-
        [1, 3, 7],
        [1, 7, 5], // x+
    ];
    Ok(TriangleMesh {
        vertices,
        triangles,
    })
}

/// A torus about the z axis: tube of radius `minor` whose centre circle has radius `major`
/// (cells), `minor < major`.
pub fn torus(major: f64, minor: f64, max_edge: f64) -> Result<TriangleMesh, ShapeError> {
    positive("torus major radius", major)?;
    positive("torus minor radius", minor)?;
    positive("max_edge", max_edge)?;
    if minor >= major {
        return Err(ShapeError::SpindleTorus { major, minor });
    }
    // Counter-clockwise in (rho, z) from the innermost point: up the outside edge.
    let profile = arc(major, 0.0, minor, -PI, PI, max_edge);
    Ok(revolve(
        &profile,
        circle_segments(major + minor, max_edge),
        true,
    ))
}

/// A capsule along z: a cylinder of `radius` and `length` (cells, the straight part) with
/// hemispherical ends, centred on the origin.
pub fn capsule(radius: f64, length: f64, max_edge: f64) -> Result<TriangleMesh, ShapeError> {
    positive("capsule radius", radius)?;
    positive("capsule length", length)?;
    positive("max_edge", max_edge)?;
    let h = 0.5 * length;
    let mut profile = arc(0.0, -h, radius, -0.5 * PI, 0.0, max_edge);
    profile[0].0 = 0.0;
    profile.push((radius, -h));
    profile.extend(arc(0.0, h, radius, 0.0, 0.5 * PI, max_edge));
    profile.push((0.0, h + radius));
    Ok(revolve(&profile, circle_segments(radius, max_edge), false))
}

/// A primitive solid in its own frame (axis z for the round ones), lengths in cells.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Primitive {
    Sphere {
        radius: f64,
    },
    Cylinder {
        radius: f64,
        length: f64,
        caps: bool,
    },
    Box {
        half: [f64; 3],
    },
    Torus {
        major: f64,
        minor: f64,
    },
    Capsule {
        radius: f64,
        length: f64,
    },
}

impl Primitive {
    /// The closed (or, for an uncapped cylinder, open) mesh with chords at most `max_edge`.
    pub fn mesh(&self, max_edge: f64) -> Result<TriangleMesh, ShapeError> {
        match *self {
            Primitive::Sphere { radius } => sphere(radius, max_edge),
            Primitive::Cylinder {
                radius,
                length,
                caps,
            } => cylinder(radius, length, caps, max_edge),
            Primitive::Box { half } => cuboid(half),
            Primitive::Torus { major, minor } => torus(major, minor, max_edge),
            Primitive::Capsule { radius, length } => capsule(radius, length, max_edge),
        }
    }

    /// The exact surface area of the smooth shape (cells^2), unscaled.
    pub fn analytic_area(&self) -> f64 {
        match *self {
            Primitive::Sphere { radius } => 4.0 * PI * radius * radius,
            Primitive::Cylinder {
                radius,
                length,
                caps,
            } => {
                2.0 * PI * radius * length
                    + if caps {
                        2.0 * PI * radius * radius
                    } else {
                        0.0
                    }
            }
            Primitive::Box { half: [a, b, c] } => 8.0 * (a * b + b * c + c * a),
            Primitive::Torus { major, minor } => 4.0 * PI * PI * major * minor,
            Primitive::Capsule { radius, length } => {
                2.0 * PI * radius * length + 4.0 * PI * radius * radius
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::ib::sampling::{poisson_disk, SamplingError};

    /// Signed volume by the divergence theorem: positive for outward-facing triangles.
    fn volume(mesh: &TriangleMesh) -> f64 {
        (0..mesh.triangles.len())
            .map(|t| {
                let [a, b, c] = mesh.corners(t);
                let bc = cross(b, c);
                (a[0] * bc[0] + a[1] * bc[1] + a[2] * bc[2]) / 6.0
            })
            .sum()
    }

    #[test]
    fn primitive_mesh_areas_match_analytic_within_half_a_percent() {
        let shapes = [
            Primitive::Sphere { radius: 12.0 },
            Primitive::Sphere { radius: 1.0 },
            Primitive::Cylinder {
                radius: 5.0,
                length: 20.0,
                caps: true,
            },
            Primitive::Cylinder {
                radius: 0.8,
                length: 3.0,
                caps: false,
            },
            Primitive::Box {
                half: [3.0, 1.0, 0.5],
            },
            Primitive::Torus {
                major: 10.0,
                minor: 3.0,
            },
            Primitive::Torus {
                major: 2.0,
                minor: 1.5,
            },
            Primitive::Capsule {
                radius: 4.0,
                length: 10.0,
            },
        ];
        for shape in shapes {
            for spacing in [0.5, 1.0, 0.1] {
                let mesh = shape.mesh(spacing).unwrap();
                mesh.validate().unwrap();
                let (mesh_area, exact) = (mesh.area(), shape.analytic_area());
                let err = (mesh_area - exact).abs() / exact;
                assert!(err < 5e-3, "{shape:?} at {spacing}: {mesh_area} vs {exact}");
                // Inscribed meshes lose area, never gain it.
                assert!(mesh_area <= exact * (1.0 + 1e-12), "{shape:?}");
            }
        }
    }

    #[test]
    fn closed_meshes_face_outward() {
        let cases = [
            (sphere(3.0, 0.5).unwrap(), 4.0 / 3.0 * PI * 27.0),
            (cylinder(2.0, 5.0, true, 0.5).unwrap(), PI * 4.0 * 5.0),
            (cuboid([1.0, 2.0, 3.0]).unwrap(), 48.0),
            (torus(4.0, 1.0, 0.5).unwrap(), 2.0 * PI * PI * 4.0),
            (capsule(1.0, 2.0, 0.5).unwrap(), PI * 2.0 + 4.0 / 3.0 * PI),
        ];
        for (mesh, exact) in cases {
            let v = volume(&mesh);
            assert!((v - exact).abs() / exact < 1e-2, "volume {v} vs {exact}");
        }
    }

    #[test]
    fn bad_shapes_are_refused() {
        assert!(matches!(
            sphere(0.0, 0.5),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(matches!(
            cylinder(1.0, -1.0, true, 0.5),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(matches!(
            torus(1.0, 1.0, 0.5),
            Err(ShapeError::SpindleTorus { .. })
        ));
        assert!(matches!(
            cuboid([1.0, f64::NAN, 1.0]),
            Err(ShapeError::NonPositive { .. })
        ));
        assert!(Pose::new([0.0; 3], [0.0; 4], 1.0).is_err());
        assert!(Pose::new([0.0; 3], [1.0, 0.0, 0.0, 0.0], 0.0).is_err());
        let flat = TriangleMesh {
            vertices: vec![[0.0; 3], [1.0, 0.0, 0.0], [2.0, 0.0, 0.0]],
            triangles: vec![[0, 1, 2]],
        };
        assert!(matches!(
            poisson_disk(&flat, 0.5, 1, None, 1000),
            Err(SamplingError::Shape(ShapeError::BadMesh(_)))
        ));
    }
}
