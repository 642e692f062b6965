//! Signed distances to the solids, for the boids' avoidance rule and the projection that puts a
//! boid a moving solid swept over back outside. Primitives analytically, in the solid's own
//! frame (the round ones about its z axis, as the scene's shapes), meshes sampled on a grid in
//! that frame ([`SdfGrid`], its samples in one list beside the obstacles: [`Obstacles`]), moved
//! with the solid's state; lengths in cells, negative inside.

use crate::lbm::ib::solid::SolidState;
use crate::math::{length, sqrt, Vec3};

/// [`Sdf::kind`]: a sphere of radius `a`.
pub const SPHERE: u32 = 0;
/// [`Sdf::kind`]: a cylinder of radius `a` and length `2 b` along z, with flat caps when `caps`
/// (else an open tube, whose wall has no inside: its distance is never negative).
pub const CYLINDER: u32 = 1;
/// [`Sdf::kind`]: a box of half-edges `a`, `b`, `c`.
pub const BOX: u32 = 2;
/// [`Sdf::kind`]: a torus of major radius `a` and minor radius `b` about z.
pub const TORUS: u32 = 3;
/// [`Sdf::kind`]: a capsule of radius `a` whose straight part runs from `-b` to `b` along z.
pub const CAPSULE: u32 = 4;
/// [`Sdf::kind`]: a distance sampled on the grid [`Sdf::grid`] (a mesh's).
pub const GRID: u32 = 5;

/// A signed distance sampled at the nodes of a regular grid in the body frame: `dims` nodes
/// (at least 2 along each axis) from `lo`, `h` cells apart; node `(i, j, k)`'s value is sample
/// `offset + i + dims[0] (j + dims[1] k)` of the obstacles' list. Between nodes the values are
/// interpolated trilinearly; outside the grid's box, the value at the nearest point of the box
/// plus the distance to it. `#[repr(C)]`: part of [`Sdf`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SdfGrid {
    pub offset: u32,
    pub dims: [u32; 3],
    pub lo: [f32; 3],
    pub h: f32,
}

impl SdfGrid {
    /// The number of samples.
    pub fn len(&self) -> usize {
        self.dims[0] as usize * self.dims[1] as usize * self.dims[2] as usize
    }

    /// Whether the grid has no samples.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The distance at body-frame point `p`, the grid's samples read by `samples(k)`.
    #[inline(always)]
    pub fn at(&self, p: Vec3, samples: &impl Fn(u32) -> f32) -> f32 {
        let q = [p.x, p.y, p.z];
        let mut base = [0u32; 3];
        let mut frac = [0f32; 3];
        let mut out2 = 0.0;
        for a in 0..3 {
            let top = (self.dims[a] - 1) as f32;
            let t = (q[a] - self.lo[a]) / self.h;
            let c = t.clamp(0.0, top);
            let off = (t - c) * self.h;
            out2 += off * off;
            let i = (c as u32).min(self.dims[a] - 2);
            base[a] = i;
            frac[a] = c - i as f32;
        }
        let (nx, nxy) = (self.dims[0], self.dims[0] * self.dims[1]);
        let at = |i: u32, j: u32, k: u32| samples(self.offset + i + nx * j + nxy * k);
        let lerp = |a: f32, b: f32, t: f32| a + (b - a) * t;
        let [i, j, k] = base;
        let [fx, fy, fz] = frac;
        let c00 = lerp(at(i, j, k), at(i + 1, j, k), fx);
        let c10 = lerp(at(i, j + 1, k), at(i + 1, j + 1, k), fx);
        let c01 = lerp(at(i, j, k + 1), at(i + 1, j, k + 1), fx);
        let c11 = lerp(at(i, j + 1, k + 1), at(i + 1, j + 1, k + 1), fx);
        lerp(lerp(c00, c10, fy), lerp(c01, c11, fy), fz) + sqrt(out2)
    }
}

/// A primitive's shape in its own frame. `#[repr(C)]`: kernels take it in their arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sdf {
    pub kind: u32,
    pub a: f32,
    pub b: f32,
    pub c: f32,
    /// Cylinders: 1 with end caps.
    pub caps: u32,
    /// [`GRID`]: the samples' grid.
    pub grid: SdfGrid,
}

/// The samples of an obstacle list without sampled distances (every kind but [`GRID`]).
#[inline(always)]
pub fn no_samples(_: u32) -> f32 {
    f32::INFINITY
}

impl Sdf {
    /// The signed distance of body-frame point `p` (cells); a [`GRID`]'s samples read by
    /// `samples(k)`.
    #[inline(always)]
    pub fn local(&self, p: Vec3, samples: &impl Fn(u32) -> f32) -> f32 {
        match self.kind {
            SPHERE => length(p) - self.a,
            CYLINDER => {
                let radial = sqrt(p.x * p.x + p.y * p.y) - self.a;
                let axial = p.z.abs() - self.b;
                if self.caps != 0 {
                    box_2d(radial, axial)
                } else {
                    // The tube's wall: the distance to the circle segment, unsigned.
                    let along = axial.max(0.0);
                    sqrt(radial * radial + along * along)
                }
            }
            BOX => {
                let q = Vec3::new(p.x.abs() - self.a, p.y.abs() - self.b, p.z.abs() - self.c);
                length(q.max(Vec3::ZERO)) + q.x.max(q.y).max(q.z).min(0.0)
            }
            TORUS => {
                let ring = sqrt(p.x * p.x + p.y * p.y) - self.a;
                sqrt(ring * ring + p.z * p.z) - self.b
            }
            GRID => self.grid.at(p, samples),
            _ => {
                let z = p.z - p.z.clamp(-self.b, self.b);
                length(Vec3::new(p.x, p.y, z)) - self.a
            }
        }
    }

    /// The signed distance of world point `x` from the solid in `state`.
    #[inline(always)]
    pub fn distance(&self, state: &SolidState, x: Vec3, samples: &impl Fn(u32) -> f32) -> f32 {
        self.local(body_frame(state, x), samples)
    }

    /// The distance and the outward unit normal at world point `x` (central differences of
    /// step `h` cells in the body frame, turned into the world frame); the normal is zero where
    /// the differences vanish (the centre of a sphere).
    #[inline(always)]
    pub fn distance_normal(
        &self,
        state: &SolidState,
        x: Vec3,
        h: f32,
        samples: &impl Fn(u32) -> f32,
    ) -> (f32, Vec3) {
        let p = body_frame(state, x);
        let d = |q: Vec3| self.local(q, samples);
        let g = Vec3::new(
            d(p + Vec3::X * h) - d(p - Vec3::X * h),
            d(p + Vec3::Y * h) - d(p - Vec3::Y * h),
            d(p + Vec3::Z * h) - d(p - Vec3::Z * h),
        );
        let r = &state.rotation;
        let world = Vec3::new(
            r[0][0] * g.x + r[0][1] * g.y + r[0][2] * g.z,
            r[1][0] * g.x + r[1][1] * g.y + r[1][2] * g.z,
            r[2][0] * g.x + r[2][1] * g.y + r[2][2] * g.z,
        );
        let n = length(world);
        let normal = if n > 0.0 { world / n } else { Vec3::ZERO };
        (d(p), normal)
    }
}

/// The signed distance of a 2-D box's corner offsets `(qx, qy)`.
#[inline(always)]
fn box_2d(qx: f32, qy: f32) -> f32 {
    let (ox, oy) = (qx.max(0.0), qy.max(0.0));
    sqrt(ox * ox + oy * oy) + qx.max(qy).min(0.0)
}

/// World point `x` in the frame of the solid in `state`: `R^T (x - center)`.
#[inline(always)]
fn body_frame(state: &SolidState, x: Vec3) -> Vec3 {
    let d = x - Vec3::from_array(state.center);
    let r = &state.rotation;
    Vec3::new(
        r[0][0] * d.x + r[1][0] * d.y + r[2][0] * d.z,
        r[0][1] * d.x + r[1][1] * d.y + r[2][1] * d.z,
        r[0][2] * d.x + r[1][2] * d.y + r[2][2] * d.z,
    )
}

/// The avoidance rule's velocity change for a boid at signed distance `d` from a surface of
/// outward normal `normal`: `rate dt (1 - d / reach) normal` within `reach` of it (at most
/// `rate dt` at the surface), nothing further out.
#[inline(always)]
pub fn avoid(d: f32, normal: Vec3, reach: f32, rate_dt: f32) -> Vec3 {
    if d < reach && reach > 0.0 {
        normal * (rate_dt * (1.0 - d.max(0.0) / reach))
    } else {
        Vec3::ZERO
    }
}

/// A boid at signed distance `d < 0` (inside) moved back outside along `normal`, to `margin`
/// cells off the surface; others unchanged.
#[inline(always)]
pub fn project_out(x: Vec3, d: f32, normal: Vec3, margin: f32) -> Vec3 {
    if d < 0.0 {
        x + normal * (margin - d)
    } else {
        x
    }
}

/// A solid the boids avoid: its shape and its state at the time of the substep.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Obstacle {
    pub sdf: Sdf,
    pub state: SolidState,
}

/// The solids a boid avoids at the time of a substep: how many, each one, and the samples of
/// the sampled distances ([`GRID`]).
pub trait Obstacles {
    /// The number of obstacles.
    fn count(&self) -> usize;
    /// Obstacle `i < count()`.
    fn obstacle(&self, i: usize) -> Obstacle;
    /// Sample `k` of the grids' samples.
    fn sample(&self, k: u32) -> f32;

    /// The signed distance of world point `x` from obstacle `o` (one of these).
    #[inline(always)]
    fn distance(&self, o: &Obstacle, x: Vec3) -> f32 {
        o.sdf.distance(&o.state, x, &|k| self.sample(k))
    }

    /// The distance and outward normal at `x` of obstacle `o` ([`Sdf::distance_normal`]).
    #[inline(always)]
    fn distance_normal(&self, o: &Obstacle, x: Vec3, h: f32) -> (f32, Vec3) {
        o.sdf.distance_normal(&o.state, x, h, &|k| self.sample(k))
    }
}

/// Obstacles in host memory: the list and the grids' samples.
#[derive(Clone, Copy, Debug, Default)]
pub struct ObstacleList<'a> {
    pub list: &'a [Obstacle],
    pub samples: &'a [f32],
}

impl ObstacleList<'_> {
    /// Whether world point `x` lies inside any of the obstacles.
    pub fn inside(&self, x: Vec3) -> bool {
        self.list.iter().any(|o| self.distance(o, x) < 0.0)
    }
}

impl Obstacles for ObstacleList<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.list.len()
    }
    #[inline(always)]
    fn obstacle(&self, i: usize) -> Obstacle {
        self.list[i]
    }
    #[inline(always)]
    fn sample(&self, k: u32) -> f32 {
        self.samples[k as usize]
    }
}

/// How a coupled flock keeps off its obstacles. `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Avoidance {
    /// Distance within which the avoidance rule acts (cells).
    pub reach: f32,
    /// The rule's rate (per fluid step): the velocity change at the surface is `rate x dt`.
    pub rate: f32,
    /// How far off the surface the projection puts a boid a solid swept over (cells).
    pub margin: f32,
    /// Step of the central differences of the normals (cells).
    pub h: f32,
}

/// The fourth rule: the velocity change of a boid at `x` over a substep of `dt` fluid steps,
/// [`avoid`] summed over the `obstacles`.
#[inline(always)]
pub fn steer(obstacles: &impl Obstacles, x: Vec3, a: &Avoidance, dt: f32) -> Vec3 {
    let mut dv = Vec3::ZERO;
    for i in 0..obstacles.count() {
        let o = obstacles.obstacle(i);
        // The distance alone decides whether the rule acts; the normal only then.
        if obstacles.distance(&o, x) < a.reach {
            let (d, normal) = obstacles.distance_normal(&o, x, a.h);
            dv += avoid(d, normal, a.reach, a.rate * dt);
        }
    }
    dv
}

/// A boid at `x` after its move, put outside each of the `obstacles` it lies in
/// ([`project_out`] to `a.margin` off the surface, obstacle by obstacle).
#[inline(always)]
pub fn keep_out(obstacles: &impl Obstacles, x: Vec3, a: &Avoidance) -> Vec3 {
    let mut y = x;
    for i in 0..obstacles.count() {
        let o = obstacles.obstacle(i);
        if obstacles.distance(&o, y) < 0.0 {
            let (d, normal) = obstacles.distance_normal(&o, y, a.h);
            y = project_out(y, d, normal, a.margin);
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_origin() -> SolidState {
        SolidState {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ..SolidState::default()
        }
    }

    fn shape(kind: u32, a: f32, b: f32, c: f32, caps: u32) -> Sdf {
        Sdf {
            kind,
            a,
            b,
            c,
            caps,
            ..Sdf::default()
        }
    }

    const NONE: &dyn Fn(u32) -> f32 = &no_samples;

    #[test]
    fn distances_of_the_primitives() {
        let s = at_origin();
        let d = |sdf: Sdf, p: [f32; 3]| sdf.distance(&s, Vec3::from_array(p), &NONE);
        let close = |a: f32, b: f32| (a - b).abs() < 1e-5;
        let sphere = shape(SPHERE, 3.0, 0.0, 0.0, 0);
        assert!(close(d(sphere, [5.0, 0.0, 0.0]), 2.0) && close(d(sphere, [0.0, 1.0, 0.0]), -2.0));
        let cyl = shape(CYLINDER, 2.0, 4.0, 0.0, 1);
        assert!(close(d(cyl, [3.0, 0.0, 0.0]), 1.0));
        assert!(close(d(cyl, [0.0, 0.0, 6.0]), 2.0));
        assert!(close(d(cyl, [3.0, 0.0, 5.0]), 2f32.sqrt()));
        assert!(close(d(cyl, [0.5, 0.0, 0.0]), -1.5));
        let tube = shape(CYLINDER, 2.0, 4.0, 0.0, 0);
        assert!(close(d(tube, [0.5, 0.0, 0.0]), 1.5), "a tube has no inside");
        assert!(close(d(tube, [2.0, 0.0, 7.0]), 3.0));
        let cube = shape(BOX, 1.0, 2.0, 3.0, 0);
        assert!(close(d(cube, [2.0, 0.0, 0.0]), 1.0));
        assert!(close(d(cube, [2.0, 3.0, 0.0]), 2f32.sqrt()));
        assert!(close(d(cube, [0.0, 0.0, 2.5]), -0.5));
        let torus = shape(TORUS, 10.0, 2.0, 0.0, 0);
        assert!(close(d(torus, [10.0, 0.0, 0.0]), -2.0));
        assert!(close(d(torus, [0.0, 13.0, 0.0]), 1.0));
        assert!(close(d(torus, [0.0, 0.0, 0.0]), 8.0));
        let capsule = shape(CAPSULE, 1.0, 2.0, 0.0, 0);
        assert!(close(d(capsule, [0.0, 0.0, 4.0]), 1.0));
        assert!(close(d(capsule, [2.0, 0.0, 1.0]), 1.0));
    }

    #[test]
    fn moved_solids_move_their_distances_and_normals() {
        // A box turned a quarter about z and moved: its long body axis y lies along world x.
        let s = SolidState {
            center: [10.0, 20.0, 30.0],
            rotation: [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
            ..SolidState::default()
        };
        let cube = shape(BOX, 1.0, 5.0, 1.0, 0);
        assert!((cube.distance(&s, Vec3::new(16.0, 20.0, 30.0), &NONE) - 1.0).abs() < 1e-5);
        assert!((cube.distance(&s, Vec3::new(10.0, 22.0, 30.0), &NONE) - 1.0).abs() < 1e-5);
        let (d, n) = cube.distance_normal(&s, Vec3::new(10.0, 22.0, 30.0), 1e-2, &NONE);
        assert!(
            (d - 1.0).abs() < 1e-5 && length(n - Vec3::Y) < 1e-4,
            "{d} {n:?}"
        );
        let (_, n) = cube.distance_normal(&s, Vec3::new(16.0, 20.0, 30.0), 1e-2, &NONE);
        assert!(length(n - Vec3::X) < 1e-4, "{n:?}");
    }

    #[test]
    fn avoidance_grows_toward_the_surface_and_projection_puts_boids_outside() {
        let n = Vec3::Z;
        assert_eq!(avoid(3.0, n, 2.0, 0.1), Vec3::ZERO);
        assert!(length(avoid(1.0, n, 2.0, 0.1) - Vec3::new(0.0, 0.0, 0.05)) < 1e-7);
        assert!(length(avoid(-0.5, n, 2.0, 0.1) - Vec3::new(0.0, 0.0, 0.1)) < 1e-7);
        let s = at_origin();
        let sphere = shape(SPHERE, 3.0, 0.0, 0.0, 0);
        for p in [[1.0, 0.5, -0.2], [0.0, 2.9, 0.0], [-2.0, -1.0, 1.5]] {
            let x = Vec3::from_array(p);
            let (d, n) = sphere.distance_normal(&s, x, 1e-3, &NONE);
            let y = project_out(x, d, n, 0.01);
            let after = sphere.distance(&s, y, &NONE);
            assert!(after > 0.0 && (after - 0.01).abs() < 1e-3, "{p:?}: {after}");
        }
        let outside = Vec3::new(5.0, 0.0, 0.0);
        assert_eq!(project_out(outside, 2.0, Vec3::X, 0.01), outside);
    }

    #[test]
    fn steering_and_keeping_out_sum_over_the_obstacles() {
        let sphere = |x: f32| Obstacle {
            sdf: shape(SPHERE, 3.0, 0.0, 0.0, 0),
            state: SolidState {
                center: [x, 0.0, 0.0],
                ..at_origin()
            },
        };
        let list = [sphere(0.0), sphere(10.0)];
        let two = ObstacleList {
            list: &list,
            samples: &[],
        };
        let a = Avoidance {
            reach: 3.0,
            rate: 0.1,
            margin: 0.01,
            h: 1e-3,
        };
        // Midway, 2 cells from both surfaces: equal and opposite pushes.
        let mid = steer(&two, Vec3::new(5.0, 0.0, 0.0), &a, 1.0);
        assert!(length(mid) < 1e-5, "{mid:?}");
        // 1 cell off the first sphere only: (1 - 1/3) of the rate, outward.
        let near = steer(&two, Vec3::new(-4.0, 0.0, 0.0), &a, 2.0);
        assert!(
            length(near - Vec3::new(-0.2 * 2.0 / 3.0, 0.0, 0.0)) < 1e-5,
            "{near:?}"
        );
        let out = keep_out(&two, Vec3::new(9.0, 0.5, 0.0), &a);
        let d = two.distance(&list[1], out);
        assert!((d - 0.01).abs() < 1e-3, "{d}");
    }

    #[test]
    fn a_sampled_sphere_reads_as_the_analytic_one() {
        // The sphere of radius 4 sampled every half cell over [-6, 6]^3, from sample 3 on.
        let sphere = shape(SPHERE, 4.0, 0.0, 0.0, 0);
        let grid = SdfGrid {
            offset: 3,
            dims: [25; 3],
            lo: [-6.0; 3],
            h: 0.5,
        };
        let mut samples = std::vec![f32::NAN; 3];
        for k in 0..25 {
            for j in 0..25 {
                for i in 0..25 {
                    let p = Vec3::new(i as f32, j as f32, k as f32) * 0.5 - Vec3::splat(6.0);
                    samples.push(sphere.local(p, &NONE));
                }
            }
        }
        let sampled = Sdf {
            kind: GRID,
            grid,
            ..Sdf::default()
        };
        let read = |k: u32| samples[k as usize];
        let s = at_origin();
        for p in [
            [4.3, 0.2, -0.1],
            [0.0, -3.7, 0.4],
            [1.0, 1.0, 1.0],
            [2.9, 2.9, 0.0],
        ] {
            let x = Vec3::from_array(p);
            let (d, n) = sampled.distance_normal(&s, x, 0.25, &read);
            let exact = sphere.distance(&s, x, &NONE);
            assert!((d - exact).abs() < 0.05, "{p:?}: {d} against {exact}");
            assert!(length(n - x / length(x)) < 0.05, "{p:?}: {n:?}");
        }
        // Outside the grid's box: the border's value plus the distance to the box.
        let far = sampled.distance(&s, Vec3::new(10.0, 0.0, 0.0), &read);
        assert!((far - (2.0 + 4.0)).abs() < 1e-4, "{far}");
        let list = [Obstacle {
            sdf: sampled,
            state: s,
        }];
        let o = ObstacleList {
            list: &list,
            samples: &samples,
        };
        assert!(o.inside(Vec3::new(3.5, 0.0, 0.0)) && !o.inside(Vec3::new(4.5, 0.0, 0.0)));
    }
}
