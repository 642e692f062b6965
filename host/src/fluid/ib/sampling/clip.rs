//! Triangles cut into the pieces that lie in each tile: a triangle's clip to a tile's box,
//! slab by slab, by Sutherland and Hodgman, "Reentrant polygon clipping", CACM 17(1), 1974.

use super::tiles::Axis;
use crate::fluid::ib::shapes::{cross, norm, sub};

/// A convex polygon of at most [`Poly::CAP`] corners: a triangle clipped by up to six planes.
#[derive(Clone, Copy)]
struct Poly {
    v: [[f64; 3]; Poly::CAP],
    n: usize,
}

impl Poly {
    /// A triangle gains at most one corner per clipping plane: 3 + 6.
    const CAP: usize = 9;

    fn triangle(t: [[f64; 3]; 3]) -> Poly {
        let mut v = [[0.0; 3]; Poly::CAP];
        v[..3].copy_from_slice(&t);
        Poly { v, n: 3 }
    }

    /// The part with `x_k >= bound` (`upper`) or `x_k < bound` (Sutherland and Hodgman,
    /// "Reentrant polygon clipping", CACM 17(1), 1974). Half-open, so a face lying in a tile
    /// boundary belongs to exactly one of the two tiles; points made on the plane get
    /// `x_k = bound` exactly.
    fn clip(&self, k: usize, bound: f64, upper: bool) -> Poly {
        let inside = |p: &[f64; 3]| if upper { p[k] >= bound } else { p[k] < bound };
        let mut out = Poly {
            v: [[0.0; 3]; Poly::CAP],
            n: 0,
        };
        for i in 0..self.n {
            let (a, b) = (self.v[i], self.v[(i + 1) % self.n]);
            let (ia, ib) = (inside(&a), inside(&b));
            if ia {
                out.push(a);
            }
            if ia != ib {
                let t = (bound - a[k]) / (b[k] - a[k]);
                let mut p = [0, 1, 2].map(|m| a[m] + t * (b[m] - a[m]));
                p[k] = bound;
                out.push(p);
            }
        }
        out
    }

    fn push(&mut self, p: [f64; 3]) {
        // Convexity bounds the count; the guard only keeps a rounding surprise from indexing out.
        if self.n < Poly::CAP {
            self.v[self.n] = p;
            self.n += 1;
        }
    }

    /// The part within `[lo, hi)` along axis `k` (infinite bounds clip nothing).
    fn slab(&self, k: usize, lo: f64, hi: f64) -> Poly {
        let mut p = *self;
        if lo > f64::NEG_INFINITY {
            p = p.clip(k, lo, true);
        }
        if hi < f64::INFINITY && p.n >= 3 {
            p = p.clip(k, hi, false);
        }
        p
    }
}

/// Calls `f(tile, piece)` for the parts of triangle `t` in each tile: the triangle itself when
/// its bounding box lies in one tile, else its clip to each tile of the box (slab by slab, so
/// the work follows the pieces), fanned into triangles and moved into the grid's periodic copy.
/// Zero-area pieces are dropped.
pub(super) fn for_each_piece(
    axes: &[Axis; 3],
    t: [[f64; 3]; 3],
    mut f: impl FnMut([usize; 3], [[f64; 3]; 3]),
) {
    let range = [0, 1, 2].map(|k| {
        let lo = t[0][k].min(t[1][k]).min(t[2][k]);
        let hi = t[0][k].max(t[1][k]).max(t[2][k]);
        (axes[k].tile_at(lo), axes[k].tile_at(hi))
    });
    let mut emit = |tile: [usize; 3], shift: [f64; 3], p: [[f64; 3]; 3]| {
        let p = p.map(|v| [0, 1, 2].map(|k| v[k] - shift[k]));
        if norm(cross(sub(p[1], p[0]), sub(p[2], p[0]))) > 0.0 {
            f(tile, p);
        }
    };
    if range.iter().all(|(lo, hi)| lo == hi) {
        let v = [0, 1, 2].map(|k| axes[k].virtual_tile(range[k].0));
        emit([v[0].0, v[1].0, v[2].0], [v[0].3, v[1].3, v[2].3], t);
        return;
    }
    let whole = Poly::triangle(t);
    for jx in range[0].0..=range[0].1 {
        let (tx, lo, hi, sx) = axes[0].virtual_tile(jx);
        let px = whole.slab(0, lo, hi);
        if px.n < 3 {
            continue;
        }
        for jy in range[1].0..=range[1].1 {
            let (ty, lo, hi, sy) = axes[1].virtual_tile(jy);
            let py = px.slab(1, lo, hi);
            if py.n < 3 {
                continue;
            }
            for jz in range[2].0..=range[2].1 {
                let (tz, lo, hi, sz) = axes[2].virtual_tile(jz);
                let pz = py.slab(2, lo, hi);
                for i in 1..pz.n.saturating_sub(1) {
                    emit([tx, ty, tz], [sx, sy, sz], [pz.v[0], pz.v[i], pz.v[i + 1]]);
                }
            }
        }
    }
}
