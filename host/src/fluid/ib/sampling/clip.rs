//! A triangle's clip to a box, slab by slab, by Sutherland and Hodgman, "Reentrant polygon
//! clipping", CACM 17(1), 1974 (the tiles cut triangles into their pieces with it:
//! [`super::tiles`]).

/// A convex polygon of at most [`Poly::CAP`] corners: a triangle clipped by up to six planes.
#[derive(Clone, Copy)]
pub(super) struct Poly {
    pub(super) v: [[f64; 3]; Poly::CAP],
    pub(super) n: usize,
}

impl Poly {
    /// A triangle gains at most one corner per clipping plane: 3 + 6.
    const CAP: usize = 9;

    pub(super) fn triangle(t: [[f64; 3]; 3]) -> Poly {
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
    pub(super) fn slab(&self, k: usize, lo: f64, hi: f64) -> Poly {
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
