//! The signed distances the flocks steer by, per solid of a scene: a primitive's analytic one
//! ([`sdf_of`]), a mesh's sampled on a grid in its own frame ([`mesh_grid`]), and the obstacle
//! list at a time ([`SolidDistances::obstacles`]).
//!
//! A mesh's grid: nodes `h` apart (half a cell, coarser for large meshes: at most
//! [`MAX_NODES`]) over the mesh's box grown by the avoidance reach and two nodes. Distances are
//! exact to the nearest triangle in a shell of one node around the surface, then carried
//! outward by sweeps that offer each node its neighbours' nearest triangles (the closest-point
//! propagation of level-set construction). The sign comes from the parity of the surface's
//! crossings along each grid row in x (a row through an edge or a corner counts it for exactly
//! one of the triangles sharing it, and the grid sits off the cell lattice by small irrational
//! fractions); an open surface has no inside and its distance stays unsigned, as a tube's.

use crate::fluid::ib::shapes::{Primitive, TriangleMesh};
use crate::fluid::ib::solid::Solid;
use murmur_common::coupling::sdf::{self, Obstacle, Sdf, SdfGrid};
use std::sync::Arc;

/// The most nodes of one mesh's grid (4 bytes each).
pub const MAX_NODES: usize = 1 << 22;

/// The signed-distance shape of a primitive (its lengths in cells, its own frame).
pub fn sdf_of(p: &Primitive) -> Sdf {
    let f = |v: f64| v as f32;
    match *p {
        Primitive::Sphere { radius } => Sdf {
            kind: sdf::SPHERE,
            a: f(radius),
            ..Sdf::default()
        },
        Primitive::Cylinder {
            radius,
            length,
            caps,
        } => Sdf {
            kind: sdf::CYLINDER,
            a: f(radius),
            b: f(0.5 * length),
            caps: caps as u32,
            ..Sdf::default()
        },
        Primitive::Box { half } => Sdf {
            kind: sdf::BOX,
            a: f(half[0]),
            b: f(half[1]),
            c: f(half[2]),
            ..Sdf::default()
        },
        Primitive::Torus { major, minor } => Sdf {
            kind: sdf::TORUS,
            a: f(major),
            b: f(minor),
            ..Sdf::default()
        },
        Primitive::Capsule { radius, length } => Sdf {
            kind: sdf::CAPSULE,
            a: f(radius),
            b: f(0.5 * length),
            ..Sdf::default()
        },
    }
}

/// The distances of a scene's solids: each solid's shape (in the scene's order; `None` for a
/// solid of samples alone, which nothing steers by) and the samples of the meshes' grids, in
/// one list.
#[derive(Clone, Debug, Default)]
pub struct SolidDistances {
    pub shapes: Vec<Option<Sdf>>,
    pub samples: Arc<[f32]>,
}

impl SolidDistances {
    /// The distances of `solids`, the meshes' grids reaching `reach` cells beyond their
    /// surfaces (the flocks' largest avoidance distance).
    pub fn of(solids: &[Solid], reach: f64) -> SolidDistances {
        let mut samples = Vec::new();
        let shapes = solids
            .iter()
            .map(|s| match (&s.shape, &s.surface) {
                (Some(p), _) => Some(sdf_of(p)),
                (None, Some(mesh)) => {
                    let (grid, values) = mesh_grid(mesh, reach, samples.len() as u32);
                    samples.extend(values);
                    Some(Sdf {
                        kind: sdf::GRID,
                        grid,
                        ..Sdf::default()
                    })
                }
                (None, None) => None,
            })
            .collect();
        SolidDistances {
            shapes,
            samples: Arc::from(samples),
        }
    }

    /// The obstacles at time `t` (fluid steps): each solid's shape with its state then.
    pub fn obstacles(&self, solids: &[Solid], t: f64) -> Vec<Obstacle> {
        solids
            .iter()
            .zip(&self.shapes)
            .filter_map(|(s, sdf)| {
                sdf.map(|sdf| Obstacle {
                    sdf,
                    state: s.state_at(t),
                })
            })
            .collect()
    }

    /// The list of `obstacles` with these samples.
    pub fn list<'a>(&'a self, obstacles: &'a [Obstacle]) -> sdf::ObstacleList<'a> {
        sdf::ObstacleList {
            list: obstacles,
            samples: &self.samples,
        }
    }
}

type P = [f64; 3];

fn sub(a: P, b: P) -> P {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

fn dot(a: P, b: P) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn add_scaled(a: P, b: P, t: f64) -> P {
    [a[0] + b[0] * t, a[1] + b[1] * t, a[2] + b[2] * t]
}

/// The squared distance from `p` to triangle `abc` (the closest point by the triangle's
/// Voronoi regions).
fn triangle_distance2(p: P, [a, b, c]: [P; 3]) -> f64 {
    let (ab, ac, ap) = (sub(b, a), sub(c, a), sub(p, a));
    let (d1, d2) = (dot(ab, ap), dot(ac, ap));
    let q = if d1 <= 0.0 && d2 <= 0.0 {
        a
    } else {
        let bp = sub(p, b);
        let (d3, d4) = (dot(ab, bp), dot(ac, bp));
        let cp = sub(p, c);
        let (d5, d6) = (dot(ab, cp), dot(ac, cp));
        let vc = d1 * d4 - d3 * d2;
        let vb = d5 * d2 - d1 * d6;
        let va = d3 * d6 - d5 * d4;
        if d3 >= 0.0 && d4 <= d3 {
            b
        } else if d6 >= 0.0 && d5 <= d6 {
            c
        } else if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
            add_scaled(a, ab, d1 / (d1 - d3))
        } else if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
            add_scaled(a, ac, d2 / (d2 - d6))
        } else if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
            add_scaled(b, sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6)))
        } else {
            let denom = 1.0 / (va + vb + vc);
            add_scaled(add_scaled(a, ab, vb * denom), ac, vc * denom)
        }
    };
    let d = sub(p, q);
    dot(d, d)
}

/// The grid of `mesh`'s signed distance (its own frame, cells; the module docs), its samples
/// numbered from `offset`, reaching `reach` cells beyond the surface.
pub fn mesh_grid(mesh: &TriangleMesh, reach: f64, offset: u32) -> (SdfGrid, Vec<f32>) {
    let (lo, hi) = mesh.bounds();
    let extent = [0, 1, 2].map(|a| hi[a] - lo[a]);
    let mut h: f64 = 0.5;
    let nodes_at = |h: f64, pad: f64| -> [usize; 3] {
        [0, 1, 2].map(|a| ((extent[a] + 2.0 * pad) / h).ceil() as usize + 2)
    };
    let pad_at = |h: f64| reach.max(0.0) + 2.0 * h;
    while nodes_at(h, pad_at(h)).iter().product::<usize>() > MAX_NODES {
        h *= 1.25;
    }
    let pad = pad_at(h);
    let dims = nodes_at(h, pad);
    // Off the lattice by a different irrational fraction of a node along each axis (the
    // module docs).
    let shift = [2f64.sqrt(), 3f64.sqrt(), 5f64.sqrt()];
    let origin = [0, 1, 2].map(|a| lo[a] - pad + h * 1e-3 * shift[a]);
    let node = |i: usize, j: usize, k: usize| {
        [
            origin[0] + i as f64 * h,
            origin[1] + j as f64 * h,
            origin[2] + k as f64 * h,
        ]
    };
    let index = |i: usize, j: usize, k: usize| i + dims[0] * (j + dims[1] * k);
    let corners = |t: usize| mesh.corners(t);
    let n = dims.iter().product::<usize>();
    let mut dist2 = vec![f64::INFINITY; n];
    let mut nearest = vec![u32::MAX; n];
    // The shell: nodes within a node of each triangle's box.
    for t in 0..mesh.triangles.len() {
        let c = corners(t);
        let range = |a: usize| {
            let (mn, mx) = c
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(mn, mx), p| {
                    (mn.min(p[a]), mx.max(p[a]))
                });
            let first = (((mn - origin[a]) / h).floor() as isize - 1).max(0) as usize;
            let last = (((mx - origin[a]) / h).ceil() as usize + 1).min(dims[a] - 1);
            first..=last
        };
        let (ri, rj, rk) = (range(0), range(1), range(2));
        for k in rk {
            for j in rj.clone() {
                for i in ri.clone() {
                    let d = triangle_distance2(node(i, j, k), c);
                    let at = index(i, j, k);
                    if d < dist2[at] {
                        dist2[at] = d;
                        nearest[at] = t as u32;
                    }
                }
            }
        }
    }
    // Sweeps in the eight diagonal directions, each node offered the nearest triangles of its
    // seven neighbours behind it.
    for dir in 0..8 {
        let step = [dir & 1, (dir >> 1) & 1, (dir >> 2) & 1].map(|b| if b == 0 { 1 } else { -1 });
        let order = |a: usize| -> Vec<usize> {
            match step[a] {
                1 => (0..dims[a]).collect(),
                _ => (0..dims[a]).rev().collect(),
            }
        };
        let (oi, oj, ok) = (order(0), order(1), order(2));
        for &k in &ok {
            for &j in &oj {
                for &i in &oi {
                    let at = index(i, j, k);
                    for m in 1..8usize {
                        let back = |a: usize, v: usize| -> Option<usize> {
                            if m >> a & 1 == 0 {
                                return Some(v);
                            }
                            let w = v as isize - step[a];
                            (w >= 0 && (w as usize) < dims[a]).then_some(w as usize)
                        };
                        let (Some(bi), Some(bj), Some(bk)) = (back(0, i), back(1, j), back(2, k))
                        else {
                            continue;
                        };
                        let t = nearest[index(bi, bj, bk)];
                        if t == u32::MAX || t == nearest[at] {
                            continue;
                        }
                        let d = triangle_distance2(node(i, j, k), corners(t as usize));
                        if d < dist2[at] {
                            dist2[at] = d;
                            nearest[at] = t;
                        }
                    }
                }
            }
        }
    }
    // The sign: crossings of the rows along x.
    let mut inside = vec![false; n];
    if mesh.is_closed() {
        let mut rows: Vec<Vec<f64>> = vec![Vec::new(); dims[1] * dims[2]];
        for t in 0..mesh.triangles.len() {
            let [a, mut b, mut c] = corners(t);
            // The triangle's projection on (y, z), counter-clockwise (a triangle seen edge-on
            // along x is crossed by no row).
            let area = (b[1] - a[1]) * (c[2] - a[2]) - (b[2] - a[2]) * (c[1] - a[1]);
            if area == 0.0 {
                continue;
            }
            if area < 0.0 {
                std::mem::swap(&mut b, &mut c);
            }
            // The rows whose (y, z) lies in the triangle's box.
            let span = |ax: usize| {
                let mn = a[ax].min(b[ax]).min(c[ax]);
                let mx = a[ax].max(b[ax]).max(c[ax]);
                let first = ((mn - origin[ax]) / h).ceil().max(0.0) as usize;
                let last = ((mx - origin[ax]) / h).floor();
                let last = if last < 0.0 {
                    0
                } else {
                    (last as usize + 1).min(dims[ax])
                };
                first..last
            };
            for k in span(2) {
                for j in span(1) {
                    let (y, z) = (origin[1] + j as f64 * h, origin[2] + k as f64 * h);
                    // Barycentric weights of (y, z); a row through an edge or a corner counts
                    // for exactly one of the triangles sharing it (an edge is in when it runs
                    // down in z, or along y toward +y: its reverse, the neighbour's, is not).
                    let weight = |p: P, q: P| {
                        let w = (q[1] - p[1]) * (z - p[2]) - (q[2] - p[2]) * (y - p[1]);
                        let (dy, dz) = (q[1] - p[1], q[2] - p[2]);
                        let on_edge_in = w == 0.0 && (dz < 0.0 || (dz == 0.0 && dy > 0.0));
                        (w > 0.0 || on_edge_in).then_some(w)
                    };
                    let (Some(wa), Some(wb), Some(wc)) = (weight(b, c), weight(c, a), weight(a, b))
                    else {
                        continue;
                    };
                    let sum = wa + wb + wc;
                    let x = (wa * a[0] + wb * b[0] + wc * c[0]) / sum;
                    rows[j + dims[1] * k].push(x);
                }
            }
        }
        for k in 0..dims[2] {
            for j in 0..dims[1] {
                let row = &mut rows[j + dims[1] * k];
                row.sort_by(f64::total_cmp);
                let mut crossed = 0;
                for i in 0..dims[0] {
                    let x = origin[0] + i as f64 * h;
                    while crossed < row.len() && row[crossed] < x {
                        crossed += 1;
                    }
                    inside[index(i, j, k)] = crossed % 2 == 1;
                }
            }
        }
    }
    let samples = dist2
        .iter()
        .zip(&inside)
        .map(|(&d2, &inn)| {
            let d = d2.sqrt() as f32;
            if inn {
                -d
            } else {
                d
            }
        })
        .collect();
    let grid = SdfGrid {
        offset,
        dims: dims.map(|d| d as u32),
        lo: origin.map(|o| o as f32),
        h: h as f32,
    };
    (grid, samples)
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::coupling::sdf::no_samples;
    use murmur_common::lbm::ib::solid::SolidState;
    use murmur_common::Vec3;

    fn still() -> SolidState {
        SolidState {
            rotation: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
            ..SolidState::default()
        }
    }

    /// A primitive's tessellation sampled on a grid reads as the primitive: within a small part
    /// of a cell of the analytic distance near the surface, and the same sign everywhere.
    #[test]
    fn meshes_of_primitives_sample_their_analytic_distances() {
        let shapes = [
            Primitive::Sphere { radius: 6.0 },
            Primitive::Box {
                half: [4.0, 7.0, 3.0],
            },
            Primitive::Torus {
                major: 8.0,
                minor: 2.5,
            },
        ];
        for p in shapes {
            let mesh = p.mesh(0.25).unwrap();
            assert!(mesh.is_closed(), "{p:?}");
            let (grid, samples) = mesh_grid(&mesh, 3.0, 0);
            let sampled = Sdf {
                kind: sdf::GRID,
                grid,
                ..Sdf::default()
            };
            let exact = sdf_of(&p);
            let read = |k: u32| samples[k as usize];
            let s = still();
            let mut worst: f32 = 0.0;
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 11) as f32 / (1u64 << 53) as f32
            };
            for _ in 0..2000 {
                let x = Vec3::new(next(), next(), next()) * 28.0 - Vec3::splat(14.0);
                let want = exact.distance(&s, x, &no_samples);
                let got = sampled.distance(&s, x, &read);
                if want.abs() < 3.0 {
                    worst = worst.max((got - want).abs());
                }
                if want.abs() > 0.3 {
                    assert_eq!(
                        got < 0.0,
                        want < 0.0,
                        "{p:?} at {x:?}: {got} against {want}"
                    );
                }
            }
            // The tessellation's own error (chords 0.25 cells long) and the grid's.
            assert!(worst < 0.15, "{p:?}: {worst}");
        }
    }

    #[test]
    fn an_open_surface_has_no_inside() {
        let mut mesh = Primitive::Sphere { radius: 5.0 }.mesh(0.5).unwrap();
        mesh.triangles.truncate(mesh.triangles.len() / 2);
        assert!(!mesh.is_closed());
        let (_, samples) = mesh_grid(&mesh, 2.0, 0);
        assert!(samples.iter().all(|&d| d >= 0.0));
    }

    #[test]
    fn large_meshes_get_coarser_grids() {
        let mesh = Primitive::Sphere { radius: 150.0 }.mesh(4.0).unwrap();
        let (grid, samples) = mesh_grid(&mesh, 2.0, 7);
        assert!(samples.len() <= MAX_NODES && grid.h > 0.5, "{grid:?}");
        assert_eq!(samples.len(), grid.len());
        assert_eq!(grid.offset, 7);
    }
}
