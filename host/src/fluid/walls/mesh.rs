//! Cut links of a closed triangle mesh: which lattice nodes are inside, where a link crosses
//! the surface.
//!
//! Built for interpolated bounce-back (Bouzidi et al. 2001). The mesh is given in lattice units:
//! node `(i, j, k)` sits at the point `(i, j, k)`. [`MeshCutter::inside_box`] flags solid nodes by
//! scanline parity along x; [`MeshCutter::crossing`] gives the fraction `t` of a link a -> b at which
//! it first meets the surface (Möller–Trumbore against a uniform 3D grid of triangles).
//!
//! # Tie-breaking rule (rows through edges and vertices)
//! A row `{y = j, z = k}` is tested against the triangles' projections on the yz plane. The row
//! point is displaced symbolically to `(j + ε, k + ε²)`, `0 < ε ≪ 1` (Simulation of Simplicity):
//! a row through a projected edge belongs to the triangle on the +y side of that edge (the +z side
//! when the edge is parallel to y), so a crossing shared by several triangles (edge, vertex fan) is
//! counted exactly once, and a row that merely grazes the surface (silhouette) counts none.
//! Edge signs are exact: vertex coordinates are first translated to the row (`y - j`, `z - k`:
//! the same rounding for every triangle sharing a vertex), then `y0 z1 - z0 y1` is evaluated in f64
//! and, when the two products round equal, the exact sign is taken from their FMA rounding errors.
//! A shared edge thus gets exactly opposite signs in its two triangles and parity is watertight.
//! Nodes on the surface (within 1e-10 along x) are flagged inside separately, including nodes on
//! faces parallel to x, which the perturbed row never crosses.
use crate::fluid::ib::TriangleMesh;
use std::collections::HashMap;

/// Nodes within this x distance (cells) of a surface crossing count as on the surface.
const SURF_TOL: f64 = 1e-10;
/// Slack on the Möller–Trumbore barycentric bounds, so edge and vertex hits are not missed.
const BARY_TOL: f64 = 1e-9;
/// Hits with t up to 1 + T_TOL are accepted and clamped to 1 (round-off of a node on the surface).
const T_TOL: f64 = 1e-7;
/// Padding (cells) of triangle and segment boxes in the 3D grid.
const PAD: f64 = 1e-6;

/// A closed mesh indexed for inside tests of lattice nodes and segment crossings.
///
/// Triangles with an out-of-range index or a non-finite vertex are dropped; zero-area triangles
/// never produce a crossing. Memory is O(triangles + occupied row bins and grid cells).
pub struct MeshCutter {
    verts: Vec<[f64; 3]>,
    tris: Vec<[u32; 3]>,
    lo: [f64; 3],
    hi: [f64; 3],
    /// Row bins over integer (j, k) = row_org + (a, b), bin a + b * row_dim[0] (CSR): triangles
    /// whose closed yz bounding box contains (j, k).
    row_org: [i64; 2],
    row_dim: [usize; 2],
    row_start: Vec<usize>,
    row_tris: Vec<u32>,
    /// Uniform 3D grid (cell width h, origin lo): occupied cell -> range of `cell_tris`.
    h: f64,
    ncell: [i64; 3],
    cells: HashMap<[i32; 3], (usize, usize)>,
    cell_tris: Vec<u32>,
}

type V3 = [f64; 3];
fn sub(a: V3, b: V3) -> V3 {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
fn dot(a: V3, b: V3) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
fn cross(a: V3, b: V3) -> V3 {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}
fn sign(x: f64) -> i8 {
    (x > 0.0) as i8 - (x < 0.0) as i8
}
/// Integer points lo..=hi, x fastest, then y, then z.
fn grid(lo: [i64; 3], hi: [i64; 3]) -> impl Iterator<Item = [i64; 3]> {
    (lo[2]..=hi[2]).flat_map(move |z| {
        (lo[1]..=hi[1]).flat_map(move |y| (lo[0]..=hi[0]).map(move |x| [x, y, z]))
    })
}

/// Exact sign of `a[0] b[1] - a[1] b[0]` (f64 products are monotone, so a nonzero difference has
/// the right sign; on a tie the FMA rounding errors decide; exact barring underflow).
fn orient(a: [f64; 2], b: [f64; 2]) -> i8 {
    let (p, q) = (a[0] * b[1], a[1] * b[0]);
    sign(if p != q {
        p - q
    } else {
        a[0].mul_add(b[1], -p) - a[1].mul_add(b[0], -q)
    })
}

/// Sign of the edge function of a -> b at the row point displaced to (ε, ε²): the expansion is
/// `e0 + ε (a_z - b_z) + ε² (b_y - a_y)`, so the first nonzero term decides; 0 only if a == b.
fn sos(e0: i8, a: [f64; 2], b: [f64; 2]) -> i8 {
    if e0 != 0 {
        e0
    } else if a[1] != b[1] {
        sign(a[1] - b[1])
    } else {
        sign(b[0] - a[0])
    }
}

impl MeshCutter {
    /// Indexes `mesh` (world lattice coordinates). Build cost O(triangles + touched grid cells).
    pub fn new(mesh: &TriangleMesh) -> MeshCutter {
        let vs = &mesh.vertices;
        let ok = |i: u32| {
            vs.get(i as usize)
                .is_some_and(|v| v.iter().all(|c| c.is_finite()))
        };
        let tris: Vec<[u32; 3]> = mesh
            .triangles
            .iter()
            .copied()
            .filter(|t| t.iter().all(|&i| ok(i)))
            .collect();
        let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
        for (&i, a) in tris
            .iter()
            .flatten()
            .flat_map(|i| [i; 3])
            .zip((0..3).cycle())
        {
            (lo[a], hi[a]) = (lo[a].min(vs[i as usize][a]), hi[a].max(vs[i as usize][a]));
        }
        if tris.is_empty() {
            (lo, hi) = ([0.0; 3], [0.0; 3]);
        }
        let row_org = [lo[1].ceil() as i64, lo[2].ceil() as i64];
        let row_dim = [0, 1].map(|a| (hi[a + 1].floor() as i64 - row_org[a] + 1).max(0) as usize);
        let row_start = vec![0; row_dim[0] * row_dim[1] + 1];
        let (verts, cells, h, ncell) = (vs.clone(), HashMap::new(), 1.5, [1; 3]);
        let (row_tris, cell_tris) = (Vec::new(), Vec::new());
        let mut m = MeshCutter {
            verts,
            tris,
            lo,
            hi,
            row_org,
            row_dim,
            row_start,
            row_tris,
            h,
            ncell,
            cells,
            cell_tris,
        };
        m.build_rows();
        m.build_grid();
        m
    }

    /// The mesh's bounding box (min corner, max corner).
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        (self.lo, self.hi)
    }

    fn corners(&self, t: u32) -> [V3; 3] {
        self.tris[t as usize].map(|i| self.verts[i as usize])
    }

    fn tri_box(&self, t: u32) -> (V3, V3) {
        let c = self.corners(t);
        let (lo, hi) = (
            [0, 1, 2].map(|a| c[0][a].min(c[1][a])),
            [0, 1, 2].map(|a| c[0][a].max(c[1][a])),
        );
        (
            [0, 1, 2].map(|a| lo[a].min(c[2][a])),
            [0, 1, 2].map(|a| hi[a].max(c[2][a])),
        )
    }

    /// Row bins: each triangle goes to every integer (j, k) inside its closed yz box (two passes).
    fn build_rows(&mut self) {
        let (org, dim) = (self.row_org, self.row_dim.map(|d| d as i64));
        let bins = |(l, h): (V3, V3)| {
            let lo = [
                0,
                (l[1].ceil() as i64 - org[0]).max(0),
                (l[2].ceil() as i64 - org[1]).max(0),
            ];
            let hi = [
                0,
                h[1].floor() as i64 - org[0],
                h[2].floor() as i64 - org[1],
            ];
            let hi = [0, hi[1].min(dim[0] - 1), hi[2].min(dim[1] - 1)];
            grid(lo, hi).map(move |p| (p[2] * dim[0] + p[1]) as usize)
        };
        let mut start = std::mem::take(&mut self.row_start);
        for t in 0..self.tris.len() as u32 {
            bins(self.tri_box(t)).for_each(|b| start[b + 1] += 1);
        }
        for b in 1..start.len() {
            start[b] += start[b - 1];
        }
        let mut fill = start.clone();
        self.row_tris = vec![0; start[start.len() - 1]];
        for t in 0..self.tris.len() as u32 {
            for b in bins(self.tri_box(t)) {
                (self.row_tris[fill[b]], fill[b]) = (t, fill[b] + 1);
            }
        }
        self.row_start = start;
    }

    /// 3D grid: cell width max(1.5, mean triangle extent); a non-degenerate triangle goes to the
    /// cells of its bounding box that its plane passes through.
    fn build_grid(&mut self) {
        let nt = self.tris.len() as u32;
        let size = |(l, h): (V3, V3)| (h[0] - l[0]).max(h[1] - l[1]).max(h[2] - l[2]);
        let ext: f64 = (0..nt).map(|t| size(self.tri_box(t))).sum();
        self.h = (ext / nt.max(1) as f64).max(1.5);
        self.ncell = [0, 1, 2].map(|a| ((self.hi[a] - self.lo[a]) / self.h).floor() as i64 + 1);
        let mut pairs: Vec<([i32; 3], u32)> = Vec::new();
        for t in 0..nt {
            let c = self.corners(t);
            let n = cross(sub(c[1], c[0]), sub(c[2], c[0]));
            let nn = dot(n, n).sqrt();
            if nn == 0.0 {
                continue;
            }
            let (l, h) = self.tri_box(t);
            let c0 = [0, 1, 2].map(|a| self.cell(l[a] - PAD, a));
            let c1 = [0, 1, 2].map(|a| self.cell(h[a] + PAD, a));
            let (d, r) = (
                dot(n, c[0]),
                0.5 * self.h * (n[0].abs() + n[1].abs() + n[2].abs()) + PAD * nn,
            );
            for q in grid(c0, c1) {
                if (dot(
                    n,
                    [0, 1, 2].map(|a| self.lo[a] + (q[a] as f64 + 0.5) * self.h),
                ) - d)
                    .abs()
                    <= r
                {
                    pairs.push((q.map(|x| x as i32), t));
                }
            }
        }
        pairs.sort_unstable();
        self.cell_tris = pairs.iter().map(|p| p.1).collect();
        let mut s = 0;
        for e in 1..=pairs.len() {
            if e == pairs.len() || pairs[e].0 != pairs[s].0 {
                self.cells.insert(pairs[s].0, (s, e));
                s = e;
            }
        }
    }

    fn cell(&self, x: f64, a: usize) -> i64 {
        (((x - self.lo[a]) / self.h).floor() as i64).clamp(0, self.ncell[a] - 1)
    }

    /// Inside flags of the integer nodes lo..=hi (inclusive on both ends; x fastest, then y, then z):
    /// true when the node is inside or exactly on the surface.
    pub fn inside_box(&self, lo: [i64; 3], hi: [i64; 3]) -> Vec<bool> {
        let n = [0, 1, 2].map(|a| (hi[a] - lo[a] + 1).max(0) as usize);
        let mut out = vec![false; n[0] * n[1] * n[2]];
        let (mut par, mut surf) = (Vec::new(), Vec::new());
        for (r, q) in grid([0, lo[1], lo[2]], [0, hi[1], hi[2]])
            .enumerate()
            .filter(|_| n[0] > 0)
        {
            let (j, k, bj, bk) = (q[1], q[2], q[1] - self.row_org[0], q[2] - self.row_org[1]);
            if bj < 0 || bk < 0 || bj >= self.row_dim[0] as i64 || bk >= self.row_dim[1] as i64 {
                continue;
            }
            let b = bk as usize * self.row_dim[0] + bj as usize;
            par.clear();
            surf.clear();
            for &t in &self.row_tris[self.row_start[b]..self.row_start[b + 1]] {
                self.row_hits(t, j as f64, k as f64, &mut par, &mut surf);
            }
            par.sort_unstable_by(f64::total_cmp);
            let (row, mut c) = (&mut out[r * n[0]..(r + 1) * n[0]], 0);
            for (i, cell) in (lo[0]..).zip(row.iter_mut()) {
                while c < par.len() && par[c] < i as f64 {
                    c += 1;
                }
                *cell = c % 2 == 1;
            }
            for &(x0, x1) in &surf {
                let (i0, i1) = (
                    (x0 - SURF_TOL).ceil() as i64,
                    (x1 + SURF_TOL).floor() as i64,
                );
                let (i0, i1) = (i0.max(lo[0]), i1.min(hi[0]));
                (i0..=i1).for_each(|i| row[(i - lo[0]) as usize] = true);
            }
        }
        out
    }

    /// Row {y = j, z = k} against triangle t: pushes the x of a parity crossing (tie rule in the
    /// module docs) to `par`, and x intervals where the row touches the closed triangle to `surf`.
    fn row_hits(&self, t: u32, j: f64, k: f64, par: &mut Vec<f64>, surf: &mut Vec<(f64, f64)>) {
        let c = self.corners(t);
        let p = c.map(|v| [v[1] - j, v[2] - k]);
        let e = [orient(p[0], p[1]), orient(p[1], p[2]), orient(p[2], p[0])];
        let s = [
            sos(e[0], p[0], p[1]),
            sos(e[1], p[1], p[2]),
            sos(e[2], p[2], p[0]),
        ];
        let n = cross(sub(c[1], c[0]), sub(c[2], c[0]));
        let (xmin, xmax) = (
            c[0][0].min(c[1][0]).min(c[2][0]),
            c[0][0].max(c[1][0]).max(c[2][0]),
        );
        let plane_x = || {
            let x = c[0][0] + (n[1] * p[0][0] + n[2] * p[0][1]) / n[0];
            if x.is_finite() {
                x.max(xmin).min(xmax)
            } else {
                0.5 * (xmin + xmax)
            }
        };
        if s[0] != 0 && s[0] == s[1] && s[1] == s[2] {
            par.push(plane_x());
        }
        let nn = dot(n, n).sqrt(); // zero-area triangle: no surface of its own
        if nn != 0.0
            && n[0].abs() > 1e-12 * nn
            && (e.iter().all(|&x| x >= 0) || e.iter().all(|&x| x <= 0))
        {
            surf.push((plane_x(), plane_x()));
        }
        // Plane parallel to x: the row touches the triangle only if it lies in its plane; then
        // clip the row against the triangle using the in-plane coordinate s = n_z y' - n_y z'.
        if nn == 0.0
            || n[0].abs() > 1e-12 * nn
            || (n[1] * p[0][0] + n[2] * p[0][1]).abs() > SURF_TOL * nn
        {
            return;
        }
        let sv = p.map(|q| n[2] * q[0] - n[1] * q[1]);
        let on = |s: f64| s.abs() <= SURF_TOL * nn;
        let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
        for a in 0..3 {
            let b = (a + 1) % 3;
            let x = if on(sv[a]) {
                c[a][0]
            } else if !on(sv[b]) && (sv[a] < 0.0) != (sv[b] < 0.0) {
                c[a][0] + (c[b][0] - c[a][0]) * sv[a] / (sv[a] - sv[b])
            } else {
                continue;
            };
            (x0, x1) = (x0.min(x), x1.max(x));
        }
        if x0 <= x1 {
            surf.push((x0, x1));
        }
    }

    /// First crossing of the segment a -> b with the surface, as the fraction t in (0, 1] of the
    /// way from a to b (the smallest t of all triangle hits with t > 0, t <= 1 after clamping
    /// tiny round-off); None when no triangle is hit.
    pub fn crossing(&self, a: [f64; 3], b: [f64; 3]) -> Option<f64> {
        let (mut c0, mut c1) = ([0i64; 3], [0i64; 3]);
        for ax in 0..3 {
            let (mn, mx) = (a[ax].min(b[ax]) - PAD, a[ax].max(b[ax]) + PAD);
            if self.tris.is_empty() || mx < self.lo[ax] - PAD || mn > self.hi[ax] + PAD {
                return None;
            }
            (c0[ax], c1[ax]) = (self.cell(mn, ax), self.cell(mx, ax));
        }
        let d = sub(b, a);
        let hits = grid(c0, c1).filter_map(|q| self.cells.get(&q.map(|x| x as i32)));
        let hits = hits.flat_map(|&(s, e)| {
            self.cell_tris[s..e]
                .iter()
                .filter_map(|&t| self.hit(t, a, d))
        });
        hits.reduce(f64::min)
    }

    /// Möller–Trumbore with slack on the barycentric bounds; t in (0, 1 + T_TOL], clamped to 1.
    fn hit(&self, t: u32, o: [f64; 3], d: [f64; 3]) -> Option<f64> {
        let c = self.corners(t);
        let (e1, e2) = (sub(c[1], c[0]), sub(c[2], c[0]));
        let pv = cross(d, e2);
        let det = dot(e1, pv);
        let n = cross(e1, e2);
        if det.abs() <= 1e-12 * (dot(d, d) * dot(n, n)).sqrt() {
            return None; // parallel to the triangle's plane, or degenerate
        }
        let tv = sub(o, c[0]);
        let u = dot(tv, pv) / det;
        if !(-BARY_TOL..=1.0 + BARY_TOL).contains(&u) {
            return None;
        }
        let qv = cross(tv, e1);
        let v = dot(d, qv) / det;
        if v < -BARY_TOL || u + v > 1.0 + BARY_TOL {
            return None;
        }
        let t = dot(e2, qv) / det;
        (t > 0.0 && t <= 1.0 + T_TOL).then_some(t.min(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::f64::consts::PI;
    use std::time::Instant;

    /// Pushes triangle t, flipped if needed so that its normal points away from `centre`.
    fn add_out(m: &mut TriangleMesh, t: [u32; 3], centre: V3) {
        let v = t.map(|i| m.vertices[i as usize]);
        let g = [0, 1, 2].map(|a| (v[0][a] + v[1][a] + v[2][a]) / 3.0 - centre[a]);
        let flip = dot(cross(sub(v[1], v[0]), sub(v[2], v[0])), g) < 0.0;
        m.triangles.push(if flip { [t[0], t[2], t[1]] } else { t });
    }

    fn box_mesh(lo: V3, hi: V3) -> TriangleMesh {
        let vertices = (0..8)
            .map(|i| [0, 1, 2].map(|a| if i >> a & 1 == 1 { hi[a] } else { lo[a] }))
            .collect();
        let (mut m, c) = (
            TriangleMesh {
                vertices,
                triangles: vec![],
            },
            [0, 1, 2].map(|a| 0.5 * (lo[a] + hi[a])),
        );
        for (a, s) in (0..3).flat_map(|a| [(a, 0u32), (a, 1)]) {
            let (b, d) = ((a + 1) % 3, (a + 2) % 3);
            let q = [(0u32, 0u32), (1, 0), (1, 1), (0, 1)].map(|(x, y)| s << a | x << b | y << d);
            add_out(&mut m, [q[0], q[1], q[2]], c);
            add_out(&mut m, [q[0], q[2], q[3]], c);
        }
        m
    }

    /// UV sphere: nu segments in longitude, nv bands in latitude, 2 nu (nv - 1) triangles.
    fn sphere(c: V3, r: f64, nu: usize, nv: usize) -> TriangleMesh {
        let mut m = TriangleMesh {
            vertices: vec![[c[0], c[1], c[2] + r]],
            triangles: vec![],
        };
        for (i, j) in (1..nv).flat_map(|i| (0..nu).map(move |j| (i, j))) {
            let (th, ph) = (PI * i as f64 / nv as f64, 2.0 * PI * j as f64 / nu as f64);
            m.vertices.push([
                c[0] + r * th.sin() * ph.cos(),
                c[1] + r * th.sin() * ph.sin(),
                c[2] + r * th.cos(),
            ]);
        }
        m.vertices.push([c[0], c[1], c[2] - r]);
        let ring = |i: usize, j: usize| (1 + (i - 1) * nu + j % nu) as u32;
        let south = (1 + (nv - 1) * nu) as u32;
        for j in 0..nu {
            m.triangles.push([0, ring(1, j), ring(1, j + 1)]);
            m.triangles
                .push([ring(nv - 1, j), south, ring(nv - 1, j + 1)]);
            for i in 1..nv - 1 {
                m.triangles
                    .push([ring(i, j), ring(i + 1, j), ring(i + 1, j + 1)]);
                m.triangles
                    .push([ring(i, j), ring(i + 1, j + 1), ring(i, j + 1)]);
            }
        }
        m
    }

    /// Nodes lo..=hi as points, x fastest (the order of `inside_box`).
    fn nodes(lo: [i64; 3], hi: [i64; 3]) -> impl Iterator<Item = V3> {
        grid(lo, hi).map(|p| p.map(|x| x as f64))
    }

    /// Calls f(a, b, t, hit point) for every link from an outside node a to an inside node b in the
    /// box (panics when `crossing` finds nothing); returns the number of links.
    type Link<'a> = &'a mut dyn FnMut(V3, V3, f64, V3);
    fn links(cut: &MeshCutter, lo: [i64; 3], hi: [i64; 3], ins: &[bool], f: Link) -> usize {
        let n = [0, 1, 2].map(|a| hi[a] - lo[a] + 1);
        let idx = |p: [i64; 3]| {
            ((p[2] - lo[2]) * n[1] * n[0] + (p[1] - lo[1]) * n[0] + p[0] - lo[0]) as usize
        };
        let mut count = 0;
        let outside = grid(lo, hi).filter(|&a| !ins[idx(a)]);
        for (a, d) in outside.flat_map(|a| grid([-1; 3], [1; 3]).map(move |d| (a, d))) {
            let b = [0, 1, 2].map(|q| a[q] + d[q]);
            if d != [0; 3] && (0..3).all(|q| lo[q] <= b[q] && b[q] <= hi[q]) && ins[idx(b)] {
                let (a, b) = (a.map(|x| x as f64), b.map(|x| x as f64));
                let t = cut
                    .crossing(a, b)
                    .unwrap_or_else(|| panic!("no crossing {a:?} -> {b:?}"));
                f(a, b, t, [0, 1, 2].map(|q| a[q] + t * (b[q] - a[q])));
                count += 1;
            }
        }
        count
    }

    /// Nodes farther than 0.02 from the analytic sphere are classified as it says.
    fn check_sphere(ins: &[bool], lo: [i64; 3], hi: [i64; 3], c: V3, r: f64) {
        for (p, &f) in nodes(lo, hi).zip(ins) {
            let d = dot(sub(p, c), sub(p, c)).sqrt() - r;
            assert!(d.abs() <= 0.02 || f == (d < 0.0), "node {p:?} at {d}");
        }
    }

    #[test]
    fn box_integer_and_half_integer_exact() {
        for (blo, bhi) in [
            ([2.0, 3.0, 4.0], [10.0, 9.0, 8.0]),
            ([2.5, 3.5, 4.5], [9.5, 8.5, 7.5]),
        ] {
            let cut = MeshCutter::new(&box_mesh(blo, bhi));
            assert_eq!(cut.bounds(), (blo, bhi));
            let (lo, hi) = ([0, 1, 2], [12, 11, 10]);
            let ins = cut.inside_box(lo, hi);
            for (p, &f) in nodes(lo, hi).zip(&ins) {
                assert_eq!(
                    f,
                    (0..3).all(|a| blo[a] <= p[a] && p[a] <= bhi[a]),
                    "node {p:?}"
                );
            }
            let nl = links(&cut, lo, hi, &ins, &mut |a, b, t, _| {
                let te = (0..3).filter(|&q| a[q] != b[q]).fold(0.0f64, |m, q| {
                    let d = b[q] - a[q];
                    m.max(((blo[q] - a[q]) / d).min((bhi[q] - a[q]) / d))
                });
                assert!((t - te).abs() < 1e-12, "{a:?} -> {b:?}: {t} vs {te}");
            });
            assert!(nl > 500, "{nl} links");
        }
    }

    #[test]
    fn sphere_classification_and_crossings() {
        let (c, r) = ([20.1, 19.7, 20.4], 10.3);
        let cut = MeshCutter::new(&sphere(c, r, 400, 200)); // chord error < 1e-3
        let (lo, hi) = ([5, 5, 5], [36, 35, 36]);
        let ins = cut.inside_box(lo, hi);
        check_sphere(&ins, lo, hi, c, r);
        let mut worst = 0.0f64;
        let nl = links(&cut, lo, hi, &ins, &mut |a, b, t, _| {
            let (d, o) = (sub(b, a), sub(a, c));
            let (qa, qb, qc) = (dot(d, d), 2.0 * dot(d, o), dot(o, o) - r * r);
            let te = ((-qb - (qb * qb - 4.0 * qa * qc).max(0.0).sqrt()) / (2.0 * qa)).max(0.0);
            worst = worst.max((t - te).abs());
        });
        eprintln!("sphere: {nl} cut links, worst |t - t_exact| = {worst:.2e}");
        assert!(worst < 0.02 && nl > 1000);
    }

    #[test]
    fn torus_hole_is_outside() {
        let (rr, r, c, nu, nv) = (8.0, 3.0, [15.3, 14.8, 15.6], 200, 80);
        let (ax, ang) = ([1.0 / 3f64.sqrt(); 3], 0.7f64); // rotation about (1,1,1)/sqrt3
        let rot = |v: V3, s: f64| {
            let (co, si, k) = (ang.cos(), s * ang.sin(), cross(ax, v));
            [0, 1, 2].map(|q| v[q] * co + k[q] * si + ax[q] * dot(ax, v) * (1.0 - co))
        };
        let mut m = TriangleMesh::default();
        let id = |u: usize, v: usize| ((u % nu) * nv + v % nv) as u32;
        for (u, v) in (0..nu).flat_map(|u| (0..nv).map(move |v| (u, v))) {
            let (pu, pv) = (
                2.0 * PI * u as f64 / nu as f64,
                2.0 * PI * v as f64 / nv as f64,
            );
            let w = rot(
                [
                    (rr + r * pv.cos()) * pu.cos(),
                    (rr + r * pv.cos()) * pu.sin(),
                    r * pv.sin(),
                ],
                1.0,
            );
            m.vertices.push([0, 1, 2].map(|q| c[q] + w[q]));
            m.triangles.push([id(u, v), id(u + 1, v), id(u + 1, v + 1)]);
            m.triangles.push([id(u, v), id(u + 1, v + 1), id(u, v + 1)]);
        }
        let cut = MeshCutter::new(&m);
        let local = |p: V3| rot(sub(p, c), -1.0);
        let dist = |p: V3| (local(p)[0].hypot(local(p)[1]) - rr).hypot(local(p)[2]) - r;
        let (lo, hi) = ([0; 3], [31; 3]);
        let ins = cut.inside_box(lo, hi);
        let mut hole = 0;
        for (p, &f) in nodes(lo, hi)
            .zip(&ins)
            .filter(|(p, _)| dist(*p).abs() > 0.05)
        {
            assert_eq!(f, dist(p) < 0.0, "node {p:?} at {}", dist(p));
            hole += (dot(local(p), local(p)) < 16.0) as usize;
        }
        let nl = links(&cut, lo, hi, &ins, &mut |a, b, t, h| {
            assert!(dist(h).abs() < 0.05, "{a:?} -> {b:?}: t {t}")
        });
        assert!(hole > 100 && nl > 1000, "{hole} hole nodes, {nl} links");
    }

    #[test]
    fn octahedron_vertices_on_rows() {
        let (c, r) = ([10.0; 3], 5.0);
        let mut m = TriangleMesh::default();
        for a in 0..6 {
            m.vertices.push([0, 1, 2].map(|q| {
                c[q] + if q == a % 3 {
                    if a < 3 {
                        r
                    } else {
                        -r
                    }
                } else {
                    0.0
                }
            }));
        }
        for s in 0..8 {
            add_out(
                &mut m,
                [0, 1, 2].map(|q| (q + if s >> q & 1 == 1 { 3 } else { 0 }) as u32),
                c,
            );
        }
        // Degenerate extras (must not panic): a repeated vertex, three collinear vertices, a bad index.
        m.vertices
            .extend([[9.0, 10.0, 10.0], [10.0, 10.0, 10.0], [11.0, 10.0, 10.0]]);
        m.triangles.extend([[0, 0, 1], [6, 7, 8], [6, 7, 99]]);
        let cut = MeshCutter::new(&m);
        let (lo, hi) = ([3, 3, 3], [17, 17, 17]);
        let ins = cut.inside_box(lo, hi);
        let l1 = |p: V3| (0..3).map(|q| (p[q] - c[q]).abs()).sum::<f64>();
        for (p, &f) in nodes(lo, hi).zip(&ins) {
            assert_eq!(f, l1(p) <= r, "node {p:?}");
        }
        let nl = links(&cut, lo, hi, &ins, &mut |a, b, t, h| {
            assert!((l1(h) - r).abs() < 1e-9, "{a:?}->{b:?}: {t}")
        });
        assert!(nl > 500);
    }

    #[test]
    fn speed_half_million_triangles() {
        let (c, r) = ([65.0; 3], 60.0);
        let m = sphere(c, r, 700, 358);
        let t0 = Instant::now();
        let cut = MeshCutter::new(&m);
        let (tb, t1) = (t0.elapsed(), Instant::now());
        let ins = cut.inside_box([0; 3], [129; 3]);
        let ti = t1.elapsed();
        eprintln!(
            "speed: {} triangles, new {tb:.2?}, inside_box 130^3 {ti:.2?}",
            m.triangles.len()
        );
        check_sphere(&ins, [0; 3], [129; 3], c, r);
        assert!(ti.as_secs_f64() < 20.0);
    }
}
