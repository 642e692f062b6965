//! The exact surface of a fixed solid in lattice coordinates, for its cut links: which nodes are
//! inside, and where a link from an outside node to an inside one crosses the surface.
//!
//! Primitives are implicit functions in `f64` of the body-frame point, negative inside, whose
//! zero set is exactly the surface (maxima of planes, cylinders and spheres, not distances where
//! a distance would need more work); a link's crossing is their root along the link, found by
//! bisection to the last bit of `f64`. Meshes: the mesh's own triangles
//! ([`super::mesh::MeshCutter`]: parity along lattice rows, ray-triangle crossings).

use super::mesh::MeshCutter;
use crate::fluid::ib::shapes::Pose;
use crate::fluid::ib::solid::quat_matrix;
use crate::fluid::ib::{Primitive, Solid};

/// Bisection steps of a crossing: enough to pin an `f64` root in a unit interval.
const BISECTIONS: u32 = 64;

/// A solid's surface, placed.
pub enum Surface {
    /// An implicit primitive in its pose.
    Implicit(Placed),
    /// A closed mesh in world lattice coordinates.
    Mesh(Box<MeshCutter>),
}

/// An implicit primitive placed in the world: the body frame's rotation (world from body,
/// rows) and its centre.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Placed {
    pub shape: Implicit,
    pub rotation: [[f64; 3]; 3],
    pub center: [f64; 3],
}

impl Placed {
    /// The implicit function at world point `x` (negative inside).
    fn value_at(&self, x: [f64; 3]) -> f64 {
        let c = self.center;
        let d = [x[0] - c[0], x[1] - c[1], x[2] - c[2]];
        // The transpose takes world to body.
        let r = &self.rotation;
        self.shape
            .value([0, 1, 2].map(|j| (0..3).map(|i| r[i][j] * d[i]).sum()))
    }
}

/// A primitive as an implicit function of the body-frame point.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Implicit {
    Sphere {
        radius: f64,
    },
    /// A capped cylinder along z of half length `half`.
    Cylinder {
        radius: f64,
        half: f64,
    },
    /// A cylinder along z without ends: the lattice holds only its middle (it spans the domain
    /// along its axis, checked by the caller).
    Tube {
        radius: f64,
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
        half: f64,
    },
}

impl Implicit {
    /// From a scene's primitive; an uncapped cylinder is a [`Implicit::Tube`].
    pub fn of(p: &Primitive) -> Implicit {
        match *p {
            Primitive::Sphere { radius } => Implicit::Sphere { radius },
            Primitive::Cylinder {
                radius,
                length,
                caps: true,
            } => Implicit::Cylinder {
                radius,
                half: 0.5 * length,
            },
            Primitive::Cylinder { radius, .. } => Implicit::Tube { radius },
            Primitive::Box { half } => Implicit::Box { half },
            Primitive::Torus { major, minor } => Implicit::Torus { major, minor },
            Primitive::Capsule { radius, length } => Implicit::Capsule {
                radius,
                half: 0.5 * length,
            },
        }
    }

    /// Negative inside, zero on the surface, positive outside (body frame, cells).
    pub fn value(&self, p: [f64; 3]) -> f64 {
        let radial = (p[0] * p[0] + p[1] * p[1]).sqrt();
        match *self {
            Implicit::Sphere { radius } => norm(p) - radius,
            Implicit::Cylinder { radius, half } => (radial - radius).max(p[2].abs() - half),
            Implicit::Tube { radius } => radial - radius,
            Implicit::Box { half } => (p[0].abs() - half[0])
                .max(p[1].abs() - half[1])
                .max(p[2].abs() - half[2]),
            Implicit::Torus { major, minor } => {
                let ring = radial - major;
                (ring * ring + p[2] * p[2]).sqrt() - minor
            }
            Implicit::Capsule { radius, half } => {
                let z = p[2] - p[2].clamp(-half, half);
                norm([p[0], p[1], z]) - radius
            }
        }
    }

    /// Half extents of its bounding box in the body frame (`None` along a tube's axis).
    fn half_extent(&self) -> [Option<f64>; 3] {
        match *self {
            Implicit::Sphere { radius } => [Some(radius); 3],
            Implicit::Cylinder { radius, half } => [Some(radius), Some(radius), Some(half)],
            Implicit::Tube { radius } => [Some(radius), Some(radius), None],
            Implicit::Box { half } => half.map(Some),
            Implicit::Torus { major, minor } => {
                [Some(major + minor), Some(major + minor), Some(minor)]
            }
            Implicit::Capsule { radius, half } => [Some(radius), Some(radius), Some(half + radius)],
        }
    }
}

fn norm(p: [f64; 3]) -> f64 {
    (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt()
}

impl Surface {
    /// The surface of fixed solid `solid` (its pose at step 0): its primitive, else its mesh
    /// (closed); `None` for a solid with neither (built from samples alone).
    pub fn of(solid: &Solid) -> Option<Surface> {
        if let Some(p) = &solid.shape {
            return Some(Surface::Implicit(Placed {
                shape: Implicit::of(p),
                rotation: quat_matrix(solid.orientation),
                center: solid.center,
            }));
        }
        let mesh = solid.surface.as_ref()?;
        let pose = Pose::new(solid.center, solid.orientation, 1.0).ok()?;
        Some(Surface::Mesh(Box::new(MeshCutter::new(
            &mesh.transformed(&pose),
        ))))
    }

    /// The world bounding box (lattice coordinates); `None` along an axis the surface spans
    /// without end (a tube's).
    pub fn bounds(&self) -> [Option<(f64, f64)>; 3] {
        match self {
            Surface::Implicit(Placed {
                shape,
                rotation,
                center,
            }) => {
                let h = shape.half_extent();
                [0, 1, 2].map(|i| {
                    let mut r = 0.0;
                    for (j, hj) in h.iter().enumerate() {
                        match hj {
                            Some(hj) => r += rotation[i][j].abs() * hj,
                            // An endless axis: unbounded unless it is orthogonal to world i.
                            None if rotation[i][j].abs() > 1e-12 => return None,
                            None => {}
                        }
                    }
                    Some((center[i] - r, center[i] + r))
                })
            }
            Surface::Mesh(m) => {
                let (lo, hi) = m.bounds();
                [0, 1, 2].map(|i| Some((lo[i], hi[i])))
            }
        }
    }

    /// Inside flags of the integer nodes `lo..=hi` (x fastest): inside or on the surface.
    pub fn inside_box(&self, lo: [i64; 3], hi: [i64; 3]) -> Vec<bool> {
        match self {
            Surface::Implicit(placed) => {
                let mut out = Vec::new();
                for z in lo[2]..=hi[2] {
                    for y in lo[1]..=hi[1] {
                        for x in lo[0]..=hi[0] {
                            out.push(placed.value_at([x as f64, y as f64, z as f64]) <= 0.0);
                        }
                    }
                }
                out
            }
            Surface::Mesh(m) => m.inside_box(lo, hi),
        }
    }

    /// Where the link from outside point `a` to inside point `b` crosses the surface: the
    /// fraction of the way from `a`, in `(0, 1]`; `None` where a mesh's triangles miss it.
    pub fn crossing(&self, a: [f64; 3], b: [f64; 3]) -> Option<f64> {
        match self {
            Surface::Implicit(placed) => {
                let at = |t: f64| placed.value_at([0, 1, 2].map(|i| a[i] + t * (b[i] - a[i])));
                // f(lo) > 0 (outside), f(hi) <= 0 (inside or on).
                let (mut lo, mut hi) = (0.0f64, 1.0f64);
                for _ in 0..BISECTIONS {
                    let mid = 0.5 * (lo + hi);
                    if mid <= lo || mid >= hi {
                        break;
                    }
                    if at(mid) > 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                Some(hi)
            }
            Surface::Mesh(m) => m.crossing(a, b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placed(shape: Implicit, center: [f64; 3]) -> Surface {
        Surface::Implicit(Placed {
            shape,
            rotation: quat_matrix([1.0, 0.0, 0.0, 0.0]),
            center,
        })
    }

    #[test]
    fn sphere_crossings_are_the_ray_sphere_roots() {
        let c = [10.3, 9.7, 10.1];
        let s = placed(Implicit::Sphere { radius: 4.2 }, c);
        let (a, b) = ([15.0, 10.0, 10.0], [14.0, 9.0, 10.0]);
        let t = s.crossing(a, b).unwrap();
        // |a + t (b - a) - c| = r: a quadratic in t.
        let d = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let m = [a[0] - c[0], a[1] - c[1], a[2] - c[2]];
        let (qa, qb) = (
            d.iter().map(|x| x * x).sum::<f64>(),
            2.0 * (0..3).map(|i| d[i] * m[i]).sum::<f64>(),
        );
        let qc = m.iter().map(|x| x * x).sum::<f64>() - 4.2 * 4.2;
        let root = (-qb - (qb * qb - 4.0 * qa * qc).sqrt()) / (2.0 * qa);
        assert!((t - root).abs() < 1e-14, "{t} vs {root}");
    }

    #[test]
    fn rotated_boxes_and_tubes_classify_and_bound() {
        // A box turned 90 degrees about z: its x and y extents swap.
        let q = crate::fluid::ib::solid::quat_from_axis_angle(
            [0.0, 0.0, 1.0],
            0.5 * std::f64::consts::PI,
        );
        let s = Surface::Implicit(Placed {
            shape: Implicit::Box {
                half: [3.0, 1.0, 1.0],
            },
            rotation: quat_matrix(q),
            center: [5.0, 5.0, 5.0],
        });
        let b = s.bounds();
        let (x0, x1) = b[0].unwrap();
        let (y0, y1) = b[1].unwrap();
        assert!((x1 - x0 - 2.0).abs() < 1e-12 && (y1 - y0 - 6.0).abs() < 1e-12);
        let inside = s.inside_box([5, 2, 5], [5, 8, 5]);
        assert_eq!(inside, [true, true, true, true, true, true, true]);
        // A tube along z has no bounds along z.
        let t = placed(Implicit::Tube { radius: 2.0 }, [4.0, 4.0, 0.0]);
        assert!(t.bounds()[2].is_none() && t.bounds()[0].is_some());
        assert_eq!(t.inside_box([4, 4, -100], [4, 4, -100]), [true]);
    }

    #[test]
    fn a_surface_through_the_inside_node_cuts_at_one() {
        let s = placed(Implicit::Sphere { radius: 3.0 }, [0.0; 3]);
        let t = s.crossing([4.0, 0.0, 0.0], [3.0, 0.0, 0.0]).unwrap();
        // To the last bits of f64 (the points near the end round onto the surface).
        assert!((t - 1.0).abs() < 1e-12 && t as f32 == 1.0, "{t}");
        assert_eq!(s.inside_box([3, 0, 0], [4, 0, 0]), [true, false]);
    }
}
