//! A solid ready for the immersed boundary: its surface samples in its own frame, its motion,
//! and the kinematics of each step computed in one place ([`Solid::state`]) for both backends.
//!
//! Lattice units throughout: positions in cells (cell centres at integers), time in steps,
//! velocities in `dx/dt`, angles in radians, rates in `1/dt`.

use murmur_common::lbm::ib::solid::SolidState;
use std::f64::consts::PI;

/// How a solid moves. Every motion starts from the solid's initial pose at step 0; `ramp`
/// (steps, 0 for none) scales the motion's velocity up linearly from 0, and the pose is the
/// exact integral of that velocity, so position and velocity always agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Motion {
    /// Does not move.
    Fixed,
    /// Translates at `velocity` (`dx/dt`).
    Translate { velocity: [f64; 3], ramp: f64 },
    /// Rotates about `axis` (unit vector) through its centre at `rate` (radians per step).
    Rotate {
        axis: [f64; 3],
        rate: f64,
        ramp: f64,
    },
    /// Oscillates along `amplitude` (cells): offset `amplitude sin(2 pi frequency t)`,
    /// `frequency` in 1/steps.
    Oscillate {
        amplitude: [f64; 3],
        frequency: f64,
        ramp: f64,
    },
    /// Oscillates about `axis` (unit vector): angle `amplitude sin(2 pi frequency t)` radians.
    OscillateRotation {
        axis: [f64; 3],
        amplitude: f64,
        frequency: f64,
        ramp: f64,
    },
}

/// `s(t)` of a linear ramp over `ramp` steps (1 without ramp) and its integral `S(t)`.
fn ramp_factor(t: f64, ramp: f64) -> (f64, f64) {
    if ramp <= 0.0 {
        (1.0, t)
    } else if t < ramp {
        (t / ramp, 0.5 * t * t / ramp)
    } else {
        (1.0, t - 0.5 * ramp)
    }
}

/// One motion's displacement and rotation at a time, with their rates and accelerations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Kinematics {
    /// Displacement of the centre from its initial position (cells).
    pub offset: [f64; 3],
    /// Velocity of the centre (`dx/dt`).
    pub velocity: [f64; 3],
    /// Acceleration of the centre (`dx/dt^2`).
    pub acceleration: [f64; 3],
    /// Rotation since step 0: unit axis and angle (radians).
    pub axis: [f64; 3],
    pub angle: f64,
    /// Angular velocity (`1/dt`) and angular acceleration (`1/dt^2`), world frame.
    pub omega: [f64; 3],
    pub alpha: [f64; 3],
}

impl Motion {
    /// Whether the solid ever moves.
    pub fn is_fixed(&self) -> bool {
        matches!(self, Motion::Fixed)
    }

    /// The largest speed of any point within `radius` cells of the centre (`dx/dt`): the value
    /// the lattice's Mach limit is checked against.
    pub fn max_speed(&self, radius: f64) -> f64 {
        match *self {
            Motion::Fixed => 0.0,
            Motion::Translate { velocity, .. } => norm(velocity),
            Motion::Rotate { rate, .. } => rate.abs() * radius,
            Motion::Oscillate {
                amplitude,
                frequency,
                ..
            } => 2.0 * PI * frequency.abs() * norm(amplitude),
            Motion::OscillateRotation {
                amplitude,
                frequency,
                ..
            } => 2.0 * PI * frequency.abs() * amplitude.abs() * radius,
        }
    }

    /// Displacement, rotation and their derivatives at time `t` (steps).
    pub fn at(&self, t: f64) -> Kinematics {
        let mut k = Kinematics {
            axis: [0.0, 0.0, 1.0],
            ..Kinematics::default()
        };
        match *self {
            Motion::Fixed => {}
            Motion::Translate { velocity, ramp } => {
                let (s, integral) = ramp_factor(t, ramp);
                let ds = if ramp > 0.0 && t < ramp {
                    1.0 / ramp
                } else {
                    0.0
                };
                k.offset = velocity.map(|v| v * integral);
                k.velocity = velocity.map(|v| v * s);
                k.acceleration = velocity.map(|v| v * ds);
            }
            Motion::Rotate { axis, rate, ramp } => {
                let (s, integral) = ramp_factor(t, ramp);
                let ds = if ramp > 0.0 && t < ramp {
                    1.0 / ramp
                } else {
                    0.0
                };
                k.axis = axis;
                k.angle = rate * integral;
                k.omega = axis.map(|a| a * rate * s);
                k.alpha = axis.map(|a| a * rate * ds);
            }
            Motion::Oscillate {
                amplitude,
                frequency,
                ramp,
            } => {
                let (x, v, a) = ramped_sine(t, frequency, ramp);
                k.offset = amplitude.map(|c| c * x);
                k.velocity = amplitude.map(|c| c * v);
                k.acceleration = amplitude.map(|c| c * a);
            }
            Motion::OscillateRotation {
                axis,
                amplitude,
                frequency,
                ramp,
            } => {
                let (x, v, a) = ramped_sine(t, frequency, ramp);
                k.axis = axis;
                k.angle = amplitude * x;
                k.omega = axis.map(|c| c * amplitude * v);
                k.alpha = axis.map(|c| c * amplitude * a);
            }
        }
        k
    }
}

/// `g(t) = s(t) sin(w t)` with the linear ramp `s`, and its first two derivatives.
fn ramped_sine(t: f64, frequency: f64, ramp: f64) -> (f64, f64, f64) {
    let w = 2.0 * PI * frequency;
    let (sn, cs) = (w * t).sin_cos();
    let (s, ds) = if ramp > 0.0 && t < ramp {
        (t / ramp, 1.0 / ramp)
    } else {
        (1.0, 0.0)
    };
    (
        s * sn,
        ds * sn + s * w * cs,
        2.0 * ds * w * cs - s * w * w * sn,
    )
}

/// Mass properties of a closed solid, per unit density (lattice units): what the force on an
/// accelerating solid adds for the fluid it encloses (`rho V dU/dt`, `rho I dOmega/dt`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProperties {
    /// Volume, cells^3.
    pub volume: f64,
    /// Inertia tensor about the centre, body frame, cells^5 (times the density: a moment of
    /// inertia).
    pub inertia: [[f64; 3]; 3],
}

/// A solid as the immersed boundary sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Solid {
    /// Name in logs and output files.
    pub name: String,
    /// Sample positions relative to the centre, body frame (cells).
    pub body: Vec<[f32; 3]>,
    /// Surface area each sample stands for (cells^2); `dV_s = dA_s dx`.
    pub area: Vec<f32>,
    /// Centre at step 0 (cells, lattice coordinates).
    pub center: [f64; 3],
    /// Orientation at step 0: unit quaternion `[w, x, y, z]`, body -> world.
    pub orientation: [f64; 4],
    pub motion: Motion,
    /// Radius of the smallest sphere about the centre holding the surface (cells).
    pub radius: f64,
    /// Volume and inertia when the surface is closed (`None` for open surfaces).
    pub mass: Option<MassProperties>,
    /// Reference area for the force coefficients (cells^2).
    pub reference_area: f64,
    /// The analytic shape in the body frame, for primitives (`None`: a mesh, or built from
    /// samples alone); the coupled flock's signed distances read it.
    pub shape: Option<super::shapes::Primitive>,
    /// The surface in the body frame (cells) of a solid from a mesh file (`None`: a primitive,
    /// or built from samples alone); the coupled flock samples its signed distance.
    pub surface: Option<std::sync::Arc<super::TriangleMesh>>,
}

impl Solid {
    /// A solid from a surface `mesh` given in its own frame about its centre (cells): placed at
    /// `center` with `orientation` (unit quaternion, body -> world), sampled there by
    /// Poisson-disk dart throwing at spacing `spacing` (cells) from `seed`, with the periodic
    /// lengths `periodic` (0 for walls). Sample offsets are stored in the body frame (minimum
    /// image across periodic axes), moved `retraction` cells into the solid along the surface's
    /// inward normal (see [`super::plan::RETRACTION`]).
    #[allow(clippy::too_many_arguments)]
    pub fn sampled(
        name: &str,
        mesh: &super::TriangleMesh,
        center: [f64; 3],
        orientation: [f64; 4],
        motion: Motion,
        spacing: f64,
        seed: u64,
        periodic: [f64; 3],
        max_samples: usize,
        retraction: f64,
    ) -> Result<(Solid, super::Samples), super::SamplingError> {
        let pose = super::Pose::new(center, orientation, 1.0)?;
        let world = mesh.transformed(&pose);
        let any_periodic = periodic.iter().any(|&p| p > 0.0);
        let samples = super::poisson_disk(
            &world,
            spacing,
            seed,
            any_periodic.then_some(periodic),
            max_samples,
        )?;
        let r = quat_matrix(pose.rotation);
        let offsets: Vec<[f64; 3]> = samples
            .positions
            .iter()
            .map(|p| {
                let d = super::sampling::delta(*p, center, periodic);
                // R^T d: back into the body frame.
                [0, 1, 2].map(|j| r[0][j] * d[0] + r[1][j] * d[1] + r[2][j] * d[2])
            })
            .collect();
        let normals = if retraction != 0.0 {
            surface_normals(mesh, &offsets, spacing)
        } else {
            vec![[0.0; 3]; offsets.len()]
        };
        let body = offsets
            .iter()
            .zip(&normals)
            .map(|(o, n)| [0, 1, 2].map(|a| (o[a] - retraction * n[a]) as f32))
            .collect();
        let radius = mesh
            .vertices
            .iter()
            .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
            .fold(0.0, f64::max);
        let mass = mesh.mass_properties().map(|(_, m)| m);
        Ok((
            Solid {
                name: name.to_string(),
                body,
                area: samples.area.iter().map(|&a| a as f32).collect(),
                center,
                orientation: pose.rotation,
                motion,
                radius,
                mass,
                reference_area: 1.0,
                shape: None,
                surface: None,
            },
            samples,
        ))
    }

    /// The solid's state at step `step` (time `t = step` in steps): pose, velocity and angular
    /// velocity, rounded to `f32` once.
    pub fn state(&self, step: u64) -> SolidState {
        self.state_at(step as f64)
    }

    /// The solid's state at time `t` (steps; between steps for the coupled flock's substeps).
    pub fn state_at(&self, t: f64) -> SolidState {
        let k = self.motion.at(t);
        let turn = quat_from_axis_angle(k.axis, k.angle);
        let q = quat_mul(turn, self.orientation);
        let r = quat_matrix(q);
        let f = |v: [f64; 3]| v.map(|c| c as f32);
        SolidState {
            center: f([0, 1, 2].map(|a| self.center[a] + k.offset[a])),
            _pad0: 0,
            rotation: r.map(f),
            velocity: f(k.velocity),
            _pad1: 0,
            omega: f(k.omega),
            _pad2: 0,
        }
    }

    /// The force and torque the solid's motion adds on the fluid inside it, for closed solids:
    /// `rho V dU/dt` and `rho I dOmega/dt` (world frame, lattice units, density `rho`). Zero
    /// for open surfaces and for solids that do not accelerate.
    pub fn inner_inertia(&self, step: u64, rho: f64) -> ([f64; 3], [f64; 3]) {
        let Some(m) = self.mass else {
            return ([0.0; 3], [0.0; 3]);
        };
        let k = self.motion.at(step as f64);
        let force = k.acceleration.map(|a| rho * m.volume * a);
        // I_world = R I_body R^T, with R the current orientation.
        let turn = quat_from_axis_angle(k.axis, k.angle);
        let r = quat_matrix(quat_mul(turn, self.orientation));
        let mut torque = [0.0; 3];
        for i in 0..3 {
            for j in 0..3 {
                let mut iw = 0.0;
                for a in 0..3 {
                    for b in 0..3 {
                        iw += r[i][a] * m.inertia[a][b] * r[j][b];
                    }
                }
                torque[i] += rho * iw * k.alpha[j];
            }
        }
        (force, torque)
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.body.len()
    }

    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }
}

/// The outward unit normal of the triangle of `mesh` nearest to each of `points` (all in the
/// mesh's frame; the points lie on the surface), found through a hash grid of the triangles'
/// bounding boxes with cells of `max(2 spacing, 1)`.
pub fn surface_normals(
    mesh: &super::TriangleMesh,
    points: &[[f64; 3]],
    spacing: f64,
) -> Vec<[f64; 3]> {
    use std::collections::HashMap;
    let h = (2.0 * spacing).max(1.0);
    let key = |p: [f64; 3]| p.map(|c| (c / h).floor() as i64);
    let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    for t in 0..mesh.triangles.len() {
        let c = mesh.corners(t);
        let lo = key([0, 1, 2].map(|a| c[0][a].min(c[1][a]).min(c[2][a])));
        let hi = key([0, 1, 2].map(|a| c[0][a].max(c[1][a]).max(c[2][a])));
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    grid.entry([x, y, z]).or_default().push(t as u32);
                }
            }
        }
    }
    points
        .iter()
        .map(|&p| {
            let k = key(p);
            let mut best = (f64::INFINITY, [0.0; 3]);
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let Some(list) = grid.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) else {
                            continue;
                        };
                        for &t in list {
                            let c = mesh.corners(t as usize);
                            let d = point_triangle_distance2(p, c);
                            if d < best.0 {
                                best = (d, triangle_normal(c));
                            }
                        }
                    }
                }
            }
            best.1
        })
        .collect()
}

fn sub3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot3(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross3(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// Unit normal of a counter-clockwise triangle (outward for the meshes here).
fn triangle_normal(c: [[f64; 3]; 3]) -> [f64; 3] {
    let n = cross3(sub3(c[1], c[0]), sub3(c[2], c[0]));
    let l = norm(n);
    if l > 0.0 {
        n.map(|v| v / l)
    } else {
        [0.0; 3]
    }
}

/// Squared distance from `p` to the triangle `c` (Ericson, "Real-Time Collision Detection",
/// 2005, Sec. 5.1.5: the closest point by Voronoi regions of the vertices and edges).
fn point_triangle_distance2(p: [f64; 3], c: [[f64; 3]; 3]) -> f64 {
    let [a, b, cc] = c;
    let (ab, ac, ap) = (sub3(b, a), sub3(cc, a), sub3(p, a));
    let (d1, d2) = (dot3(ab, ap), dot3(ac, ap));
    let closest = if d1 <= 0.0 && d2 <= 0.0 {
        a
    } else {
        let bp = sub3(p, b);
        let (d3, d4) = (dot3(ab, bp), dot3(ac, bp));
        let cp = sub3(p, cc);
        let (d5, d6) = (dot3(ab, cp), dot3(ac, cp));
        let (vc, vb, va) = (d1 * d4 - d3 * d2, d5 * d2 - d1 * d6, d3 * d6 - d5 * d4);
        let lerp = |o: [f64; 3], e: [f64; 3], t: f64| [0, 1, 2].map(|i| o[i] + t * e[i]);
        if d3 >= 0.0 && d4 <= d3 {
            b
        } else if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
            lerp(a, ab, d1 / (d1 - d3))
        } else if d6 >= 0.0 && d5 <= d6 {
            cc
        } else if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
            lerp(a, ac, d2 / (d2 - d6))
        } else if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
            lerp(b, sub3(cc, b), (d4 - d3) / ((d4 - d3) + (d5 - d6)))
        } else {
            let denom = 1.0 / (va + vb + vc);
            let (v, w) = (vb * denom, vc * denom);
            [0, 1, 2].map(|i| a[i] + ab[i] * v + ac[i] * w)
        }
    };
    let d = sub3(p, closest);
    dot3(d, d)
}

fn norm(v: [f64; 3]) -> f64 {
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// Unit quaternion `[w, x, y, z]` of a rotation by `angle` about the unit `axis`.
pub fn quat_from_axis_angle(axis: [f64; 3], angle: f64) -> [f64; 4] {
    let (s, c) = (0.5 * angle).sin_cos();
    [c, s * axis[0], s * axis[1], s * axis[2]]
}

/// Hamilton product `a b` (rotate by `b`, then by `a`).
pub fn quat_mul(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    let [aw, ax, ay, az] = a;
    let [bw, bx, by, bz] = b;
    [
        aw * bw - ax * bx - ay * by - az * bz,
        aw * bx + ax * bw + ay * bz - az * by,
        aw * by - ax * bz + ay * bw + az * bx,
        aw * bz + ax * by - ay * bx + az * bw,
    ]
}

/// Rotation matrix (row-major, `world = R body`) of a unit quaternion.
pub fn quat_matrix(q: [f64; 4]) -> [[f64; 3]; 3] {
    let [w, x, y, z] = q;
    [
        [
            1.0 - 2.0 * (y * y + z * z),
            2.0 * (x * y - w * z),
            2.0 * (x * z + w * y),
        ],
        [
            2.0 * (x * y + w * z),
            1.0 - 2.0 * (x * x + z * z),
            2.0 * (y * z - w * x),
        ],
        [
            2.0 * (x * z - w * y),
            2.0 * (y * z + w * x),
            1.0 - 2.0 * (x * x + y * y),
        ],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_derivative(m: &Motion, t: f64) -> ([f64; 3], [f64; 3]) {
        let h = 1e-3;
        let (a, b) = (m.at(t - h), m.at(t + h));
        let v = [0, 1, 2].map(|i| (b.offset[i] - a.offset[i]) / (2.0 * h));
        let acc = [0, 1, 2].map(|i| (b.velocity[i] - a.velocity[i]) / (2.0 * h));
        (v, acc)
    }

    #[test]
    fn positions_integrate_velocities() {
        let motions = [
            Motion::Translate {
                velocity: [0.05, -0.01, 0.0],
                ramp: 100.0,
            },
            Motion::Oscillate {
                amplitude: [2.0, 0.0, 1.0],
                frequency: 1e-3,
                ramp: 300.0,
            },
        ];
        for m in motions {
            for t in [10.0, 99.0, 150.0, 420.0, 2000.0] {
                let k = m.at(t);
                let (v, a) = numeric_derivative(&m, t);
                for i in 0..3 {
                    assert!((k.velocity[i] - v[i]).abs() < 1e-6, "{m:?} t {t} v");
                    assert!((k.acceleration[i] - a[i]).abs() < 1e-6, "{m:?} t {t} a");
                }
            }
        }
    }

    #[test]
    fn rotation_state_moves_samples_with_omega_cross_r() {
        let solid = Solid {
            name: "s".into(),
            body: vec![[3.0, 0.0, 0.0]],
            area: vec![1.0],
            center: [10.0, 10.0, 10.0],
            orientation: [1.0, 0.0, 0.0, 0.0],
            motion: Motion::Rotate {
                axis: [0.0, 0.0, 1.0],
                rate: 0.01,
                ramp: 0.0,
            },
            radius: 3.0,
            mass: None,
            reference_area: 1.0,
            shape: None,
            surface: None,
        };
        let s0 = solid.state(0);
        let s1 = solid.state(1);
        let (p0, p1) = (s0.position(solid.body[0]), s1.position(solid.body[0]));
        let u = s0.velocity_at(s0.arm(solid.body[0]));
        // One step of rotation moves the sample by about u.
        for a in 0..3 {
            assert!((p1[a] - p0[a] - u[a]).abs() < 2e-4, "axis {a}");
        }
        assert!((u[1] - 0.03).abs() < 1e-7);
        let s = solid.state(157);
        let p = s.position(solid.body[0]);
        assert!((p[0] - (10.0 + 3.0 * (1.57f64).cos()) as f32).abs() < 1e-5);
        assert!((p[1] - (10.0 + 3.0 * (1.57f64).sin()) as f32).abs() < 1e-5);
    }

    #[test]
    fn accelerating_closed_solid_adds_the_inner_fluids_inertia() {
        let solid = Solid {
            name: "s".into(),
            body: vec![],
            area: vec![],
            center: [0.0; 3],
            orientation: [1.0, 0.0, 0.0, 0.0],
            motion: Motion::Translate {
                velocity: [0.1, 0.0, 0.0],
                ramp: 50.0,
            },
            radius: 1.0,
            mass: Some(MassProperties {
                volume: 4.0,
                inertia: [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]],
            }),
            reference_area: 1.0,
            shape: None,
            surface: None,
        };
        let (f, t) = solid.inner_inertia(10, 1.0);
        assert!((f[0] - 4.0 * 0.1 / 50.0).abs() < 1e-12);
        assert_eq!(t, [0.0; 3]);
        let (f, _) = solid.inner_inertia(60, 1.0);
        assert_eq!(f, [0.0; 3]);
    }
}
