//! The trilinear stencil of a surface sample: the 2 x 2 x 2 lattice nodes around it, their hat
//! weights `K = phi(dx) phi(dy) phi(dz)`, `phi(r) = max(0, 1 - |r|)`, renormalised over the fluid
//! nodes, and the node geometry of the gather form (a node's weight, a sample's bin node, the
//! cell below). The conventions are [`super`]'s.
//!
//! Sources: Peskin, "The immersed boundary method", Acta Numerica 11 (2002) 479-517 (one discrete
//! delta kernel for interpolation and spreading); Krüger et al., "The Lattice Boltzmann Method",
//! Springer 2017, Ch. 11 (the 2-point kernel with the lattice Boltzmann method).

use crate::lbm::layout::Lattice;
use crate::math::floor_i32;

/// Nodes of a trilinear stencil.
pub const NODES: usize = 8;

/// The lattice a stencil lives on and which of its axes wrap. `#[repr(C)]`: it may travel to
/// kernels inside their argument structs.
///
/// On one rank of several ([`Domain::slab`]) `lattice` is the rank's slab of a larger lattice
/// along one axis, with a ghost layer on either side: along that axis the stencil is formed in
/// the whole lattice's coordinates (its extent, its wrap), exactly as on one rank, and its
/// nodes are then moved to the slab's layers; nodes outside the slab are absent.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Domain {
    pub lattice: Lattice,
    /// Bit `a` set: axis `a` (x = 0, y = 1, z = 2) is periodic (in the whole lattice).
    pub periodic: u32,
    /// The slab's axis (meaningless when `slab_extent` is 0).
    pub slab_axis: u32,
    /// Whole-lattice coordinate of the slab's layer 0 (its lower ghost layer; -1 on the
    /// first slab).
    pub slab_origin: i32,
    /// The whole lattice's extent along `slab_axis`; 0: the lattice is not a slab.
    pub slab_extent: u32,
}

impl Domain {
    /// `periodic[a]`: axis `a` wraps.
    #[inline(always)]
    pub const fn new(lattice: Lattice, periodic: [bool; 3]) -> Self {
        Domain {
            lattice,
            periodic: periodic[0] as u32 | (periodic[1] as u32) << 1 | (periodic[2] as u32) << 2,
            slab_axis: 0,
            slab_origin: 0,
            slab_extent: 0,
        }
    }

    /// This domain's lattice as the slab of a lattice of `extent` layers along `axis` whose
    /// local layer 0 is layer `origin` of the whole (`origin >= -1`; the periodic bits are the
    /// whole lattice's).
    #[inline(always)]
    pub const fn slab(mut self, axis: u32, origin: i32, extent: u32) -> Self {
        self.slab_axis = axis;
        self.slab_origin = origin;
        self.slab_extent = extent;
        self
    }

    /// The two stencil nodes along axis `a` of a sample at coordinate `p` on that axis.
    #[inline(always)]
    fn axis(&self, a: usize, p: f32) -> Axis {
        let l = &self.lattice;
        let n = match a {
            0 => l.nx,
            1 => l.ny,
            _ => l.nz,
        };
        if self.slab_extent == 0 || a as u32 != self.slab_axis {
            return axis(p, n, self.is_periodic(a));
        }
        let mut s = axis(p, self.slab_extent, self.is_periodic(a));
        unroll!(k in [0, 1] => {
            let local = self.local_layer(s.coord[k]);
            s.inside[k] = s.inside[k] && local < n;
            s.coord[k] = if s.inside[k] { local } else { 0 };
        });
        s
    }

    /// The slab layer of whole-lattice layer `c < slab_extent` (past the slab: `>= n`).
    #[inline(always)]
    const fn local_layer(&self, c: u32) -> u32 {
        let e = self.slab_extent as i64;
        let mut d = c as i64 - self.slab_origin as i64;
        if d < 0 {
            d += e;
        } else if d >= e {
            d -= e;
        }
        d as u32
    }

    /// Whether this rank answers for a sample at `pos`: always on one rank; on a slab, when
    /// the lower node of the sample's stencil along the slab axis (the upper one where the
    /// lower lies before a non-periodic lattice's first layer) is one of the slab's own layers
    /// (not a ghost). Exactly one slab answers for each sample with a node in the lattice, so
    /// what a sample adds to its solid's force is counted once.
    #[inline(always)]
    pub fn owns(&self, pos: [f32; 3]) -> bool {
        if self.slab_extent == 0 {
            return true;
        }
        let a = self.slab_axis as usize;
        let p = match a {
            0 => pos[0],
            1 => pos[1],
            _ => pos[2],
        };
        let s = axis(p, self.slab_extent, self.is_periodic(a));
        let c = if s.inside[0] {
            s.coord[0]
        } else if s.inside[1] {
            s.coord[1]
        } else {
            return false;
        };
        let l = &self.lattice;
        let n = match a {
            0 => l.nx,
            1 => l.ny,
            _ => l.nz,
        };
        let k = self.local_layer(c);
        k >= 1 && k + 1 < n
    }

    /// Every axis wraps, as the lattice's index math does (walls are cells inside the grid).
    #[inline(always)]
    pub const fn periodic(lattice: Lattice) -> Self {
        Self::new(lattice, [true; 3])
    }

    /// Whether axis `axis` wraps.
    #[inline(always)]
    pub const fn is_periodic(&self, axis: usize) -> bool {
        self.periodic >> axis & 1 != 0
    }
}

/// The two stencil nodes along one axis: their coordinates (wrapped where periodic), whether
/// they lie in the domain, and their hat weights `1 - t`, `t`.
#[derive(Clone, Copy)]
struct Axis {
    coord: [u32; 2],
    inside: [bool; 2],
    weight: [f32; 2],
}

#[inline(always)]
fn axis(p: f32, n: u32, periodic: bool) -> Axis {
    let i0 = floor_i32(p);
    // Exact: `p - floor(p)` is representable, so `t` is in [0, 1) (NaN for a NaN position).
    let t = p - i0 as f32;
    let weight = [1.0 - t, t];
    let n = if n > i32::MAX as u32 {
        i32::MAX
    } else {
        n as i32
    };
    if periodic {
        let c0 = if 0 <= i0 && i0 < n {
            i0
        } else {
            // None only for an empty axis (n = 0), whose nodes are marked outside below.
            i0.checked_rem_euclid(n).unwrap_or(0)
        };
        let c1 = if c0 + 1 >= n { 0 } else { c0 + 1 };
        Axis {
            coord: [c0 as u32, c1 as u32],
            inside: [n > 0, n > 0],
            weight,
        }
    } else {
        let i1 = i0.wrapping_add(1);
        let inside = [0 <= i0 && i0 < n, 0 <= i1 && i1 < n];
        Axis {
            coord: [
                if inside[0] { i0 as u32 } else { 0 },
                if inside[1] { i1 as u32 } else { 0 },
            ],
            inside,
            weight,
        }
    }
}

/// The trilinear stencil of one sample: node `i` (`0..8`) sits at offset
/// `(i & 1, i >> 1 & 1, i >> 2)` from the node `floor(X_s)` below the sample.
///
/// Invariant: an absent node (outside a non-periodic domain, or dropped by
/// [`Stencil::renormalise`]) has weight 0 and cell 0, and no function here calls back for it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stencil {
    pub(super) cells: [u32; NODES],
    pub(super) weights: [f32; NODES],
    pub(super) present: u8,
    /// The two node coordinates along each axis (see [`Stencil::node`]).
    axes: [[u32; 2]; 3],
}

impl Stencil {
    /// The stencil of a sample at `pos` (lattice units, cell centres at integers), with the raw
    /// weights `K = prod_a (1 - |x_a - X_a|)`: they sum to 1 unless nodes fall outside a
    /// non-periodic domain. A NaN position gives NaN weights, which [`Stencil::renormalise`]
    /// reports as no node left.
    #[inline(always)]
    pub fn new(domain: &Domain, pos: [f32; 3]) -> Self {
        let l = &domain.lattice;
        let ax = domain.axis(0, pos[0]);
        let ay = domain.axis(1, pos[1]);
        let az = domain.axis(2, pos[2]);
        let mut s = Stencil {
            cells: [0; NODES],
            weights: [0.0; NODES],
            present: 0,
            axes: [ax.coord, ay.coord, az.coord],
        };
        for_8!(i => {
            let (a, b, c) = (i & 1, i >> 1 & 1, i >> 2);
            if ax.inside[a] && ay.inside[b] && az.inside[c] {
                s.cells[i] = l.index(ax.coord[a], ay.coord[b], az.coord[c]) as u32;
                s.weights[i] = ax.weight[a] * ay.weight[b] * az.weight[c];
                s.present |= 1 << i;
            }
        });
        s
    }

    /// Drops the nodes for which `present(cell)` is false (walls, other non-fluid cells) and
    /// rescales the remaining weights to sum to 1. Returns the factor the raw weights were
    /// multiplied by (`1 / sum` of the raw weights kept: the gather form needs it, see
    /// [`weight`]), or `None` when no weight is left (every node with a non-zero weight dropped
    /// or outside, or a NaN position); the stencil is then empty: interpolation gives 0 and
    /// spreading adds nothing. `present` is called once per node inside the domain.
    #[inline(always)]
    pub fn renormalise(&mut self, present: impl Fn(usize) -> bool) -> Option<f32> {
        let cells = self.cells;
        self.renormalise_nodes(|i| present(cells[i] as usize))
    }

    /// [`Stencil::renormalise`] with `present(i)` asked of node `i` (a constant in the unrolled
    /// loop) rather than of its cell.
    #[inline(always)]
    pub fn renormalise_nodes(&mut self, present: impl Fn(usize) -> bool) -> Option<f32> {
        let mut sum = 0.0f32;
        for_8!(i => {
            if self.present >> i & 1 != 0 {
                if present(i) {
                    sum += self.weights[i];
                } else {
                    self.present &= !(1 << i);
                    self.cells[i] = 0;
                    self.weights[i] = 0.0;
                }
            }
        });
        if sum > 0.0 {
            let scale = 1.0 / sum;
            for_8!(i => {
                self.weights[i] *= scale;
            });
            Some(scale)
        } else {
            *self = Stencil {
                cells: [0; NODES],
                weights: [0.0; NODES],
                present: 0,
                axes: self.axes,
            };
            None
        }
    }

    /// Whether node `i` is present.
    #[inline(always)]
    pub const fn is_present(&self, i: usize) -> bool {
        i < NODES && self.present >> i & 1 != 0
    }

    /// Cell number of node `i` (0 when absent).
    #[inline(always)]
    pub const fn cell(&self, i: usize) -> usize {
        if i < NODES {
            self.cells[i] as usize
        } else {
            0
        }
    }

    /// Weight of node `i` (0 when absent).
    #[inline(always)]
    pub const fn weight(&self, i: usize) -> f32 {
        if i < NODES {
            self.weights[i]
        } else {
            0.0
        }
    }

    /// Lattice coordinates of node `i` (those of its cell when it is present): the band finds
    /// a node's brick from them without dividing its cell number.
    #[inline(always)]
    pub const fn node(&self, i: usize) -> [u32; 3] {
        [
            self.axes[0][i & 1],
            self.axes[1][i >> 1 & 1],
            self.axes[2][i >> 2 & 1],
        ]
    }

    /// The present nodes as a mask (bit `i`: node `i`).
    #[inline(always)]
    pub const fn present_mask(&self) -> u8 {
        self.present
    }

    /// Number of present nodes.
    #[inline(always)]
    pub const fn count(&self) -> u32 {
        self.present.count_ones()
    }
}

/// Gather form of step 3: the raw weight `K(node - X_s)` of the node at `node` (cell
/// coordinates) for a sample at `pos`, with the same periodic wrap and domain edges as
/// [`Stencil::new`] (0 if the node is not in the sample's stencil). A kernel running one thread
/// per fluid node sums `(weight(..) * scale_s) * (F_s dV_s)` over the samples near it, with
/// `scale_s` what [`Stencil::renormalise`] returned for the sample (0 when `None`); that is
/// the value [`spread`](super::forcing::spread) adds, bit for bit, when no axis has a single cell (on a periodic axis
/// of one cell both stencil nodes are the same cell and the gather adds their weights first).
#[inline(always)]
pub fn weight(domain: &Domain, node: [u32; 3], pos: [f32; 3]) -> f32 {
    let wx = axis_weight(domain.axis(0, pos[0]), node[0]);
    let wy = axis_weight(domain.axis(1, pos[1]), node[1]);
    let wz = axis_weight(domain.axis(2, pos[2]), node[2]);
    wx * wy * wz
}

/// Gather form of step 3, node by node: `term(node, K_i)` with the raw weight of each node `i`
/// of the stencil of a sample at `pos` that lies in the domain, in the stencil's order (a node
/// met twice, where a periodic axis has a single cell, comes twice). Each weight is the
/// product [`Stencil::new`] forms, in the same order, so `to_fixed(K_i * scale_s * g)` equals
/// what the scatter adds for that node bit for bit.
#[inline(always)]
pub fn each_node(domain: &Domain, pos: [f32; 3], mut term: impl FnMut([u32; 3], f32)) {
    let ax = domain.axis(0, pos[0]);
    let ay = domain.axis(1, pos[1]);
    let az = domain.axis(2, pos[2]);
    for_8!(i => {
        let (a, b, c) = (i & 1, i >> 1 & 1, i >> 2);
        if ax.inside[a] && ay.inside[b] && az.inside[c] {
            let node = [ax.coord[a], ay.coord[b], az.coord[c]];
            term(node, ax.weight[a] * ay.weight[b] * az.weight[c]);
        }
    });
}

/// Whether a node of the stencil of a sample at `pos` lies in the box of `side` cells per axis
/// from `lo` (coordinates in the domain, wrapped where periodic).
#[inline(always)]
pub fn reaches_box(domain: &Domain, pos: [f32; 3], lo: [u32; 3], side: u32) -> bool {
    let near = |a: Axis, lo: u32| {
        (a.inside[0] && a.coord[0].wrapping_sub(lo) < side)
            || (a.inside[1] && a.coord[1].wrapping_sub(lo) < side)
    };
    near(domain.axis(0, pos[0]), lo[0])
        && near(domain.axis(1, pos[1]), lo[1])
        && near(domain.axis(2, pos[2]), lo[2])
}

/// The bin node of a sample at `pos`: per axis the stencil's lower node (wrapped where the axis
/// is periodic), or its upper node where the lower one lies before a non-periodic domain's
/// first cell; `None` when the stencil has no node in the domain (or the position is NaN). Every
/// node of the stencil lies at the bin node or one cell above it along each axis (wrapped), so
/// a node finds the samples that reach it among the bins at itself and one cell below.
#[inline(always)]
pub fn bin_node(domain: &Domain, pos: [f32; 3]) -> Option<[u32; 3]> {
    let pick = |a: Axis| {
        if a.inside[0] {
            Some(a.coord[0])
        } else if a.inside[1] {
            Some(a.coord[1])
        } else {
            None
        }
    };
    if pos[0].is_nan() || pos[1].is_nan() || pos[2].is_nan() {
        return None;
    }
    Some([
        pick(domain.axis(0, pos[0]))?,
        pick(domain.axis(1, pos[1]))?,
        pick(domain.axis(2, pos[2]))?,
    ])
}

/// The coordinate one cell below `c` along axis `axis`: wrapped on a periodic axis of more
/// than one cell, `None` below a non-periodic domain's first cell (and on a periodic axis of
/// one cell, where it would be `c` itself).
#[inline(always)]
pub fn below(domain: &Domain, axis: usize, c: u32) -> Option<u32> {
    let n = match axis {
        0 => domain.lattice.nx,
        1 => domain.lattice.ny,
        _ => domain.lattice.nz,
    };
    if c > 0 {
        Some(c - 1)
    } else if domain.is_periodic(axis) && n > 1 {
        Some(n - 1)
    } else {
        None
    }
}

/// The hat weight of coordinate `c` in one axis's stencil (0 if neither node is `c`).
#[inline(always)]
fn axis_weight(a: Axis, c: u32) -> f32 {
    let w0 = if a.inside[0] && a.coord[0] == c {
        a.weight[0]
    } else {
        0.0
    };
    let w1 = if a.inside[1] && a.coord[1] == c {
        a.weight[1]
    } else {
        0.0
    };
    // `w + 0.0 == w` exactly: one matching node gives the stencil's own weight.
    w0 + w1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::ib::forcing::{interpolate, spread};
    use crate::lbm::ib::tests::Lcg;
    use std::vec;
    use std::vec::Vec;

    fn weight_sum(s: &Stencil) -> f32 {
        (0..NODES).map(|i| s.weight(i)).sum()
    }

    #[test]
    fn weights_are_a_partition_of_unity() {
        let l = Lattice::new(7, 5, 6);
        let periodic = Domain::periodic(l);
        let walled = Domain::new(l, [false; 3]);
        let mut rng = Lcg(1);
        for _ in 0..10_000 {
            // Anywhere, also outside the box: a periodic stencil always has all 8 nodes.
            let p = rng.pos(-20.0, 20.0);
            let s = Stencil::new(&periodic, p);
            assert_eq!(s.count(), 8);
            for i in 0..NODES {
                assert!((0.0..=1.0).contains(&s.weight(i)), "{p:?}: {}", s.weight(i));
                assert!(s.cell(i) < l.cells());
            }
            assert!((weight_sum(&s) - 1.0).abs() < 1e-6, "{p:?}");
            // Inside a non-periodic box, away from its last layer: the same weights.
            let q = [
                p[0].rem_euclid(6.0),
                p[1].rem_euclid(4.0),
                p[2].rem_euclid(5.0),
            ];
            let s = Stencil::new(&walled, q);
            assert_eq!(s.count(), 8, "{q:?}");
            assert!((weight_sum(&s) - 1.0).abs() < 1e-6, "{q:?}");
        }
        // A sample on a node: weight 1 there, 0 elsewhere.
        let s = Stencil::new(&periodic, [2.0, 3.0, 4.0]);
        assert_eq!(s.weight(0), 1.0);
        assert_eq!(s.cell(0), l.index(2, 3, 4));
        assert_eq!(weight_sum(&s), 1.0);
    }

    #[test]
    fn node_coordinates_are_those_of_the_node_cells() {
        let l = Lattice::new(7, 5, 6);
        let mut rng = Lcg(3);
        for domain in [Domain::periodic(l), Domain::new(l, [false, true, false])] {
            for _ in 0..5_000 {
                let s = Stencil::new(&domain, rng.pos(-3.0, 9.0));
                for i in 0..NODES {
                    if s.is_present(i) {
                        let (x, y, z) = l.coords(s.cell(i));
                        assert_eq!(s.node(i), [x, y, z], "node {i} of {s:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn renormalisation_next_to_a_wall() {
        let l = Lattice::new(8, 8, 8);
        let d = Domain::periodic(l);
        // Walls at x = 0 and x = 7 (a channel along y and z).
        let fluid = |c: usize| {
            let (x, _, _) = l.coords(c);
            x != 0 && x != 7
        };
        let mut s = Stencil::new(&d, [0.3, 2.4, 5.7]);
        let raw: Vec<f32> = (0..NODES).map(|i| s.weight(i)).collect();
        let scale = s.renormalise(fluid).expect("nodes at x = 1 remain");
        assert_eq!(s.count(), 4);
        assert!((weight_sum(&s) - 1.0).abs() < 1e-6);
        // Only the x = 1 nodes (odd i) remain, each its raw weight over 0.3.
        assert!((scale - 1.0 / 0.3).abs() < 1e-5);
        for (i, &r) in raw.iter().enumerate() {
            if i & 1 == 0 {
                assert!(!s.is_present(i));
                assert_eq!(s.weight(i), 0.0);
            } else {
                assert_eq!(l.coords(s.cell(i)).0, 1);
                assert_eq!(s.weight(i), r * scale);
            }
        }
        // Interpolation then averages the fluid nodes only: a wall velocity never leaks in.
        let u = interpolate(&s, |c| {
            if fluid(c) {
                [0.1, 0.0, 0.0]
            } else {
                [f32::NAN; 3]
            }
        });
        assert!((u[0] - 0.1).abs() < 1e-7);

        // A sample inside the wall, between x = 7 and x = 0 (periodic): nothing left.
        let mut s = Stencil::new(&d, [7.5, 3.2, 1.1]);
        assert_eq!(s.renormalise(fluid), None);
        assert_eq!(s.count(), 0);
        assert_eq!(weight_sum(&s), 0.0);
        assert_eq!(interpolate(&s, |_| [1.0; 3]), [0.0; 3]);
        let mut calls = 0;
        spread(&s, [1.0; 3], 1.0, |_, _| calls += 1);
        assert_eq!(calls, 0);
        // A sample on a wall node: its only non-zero weight is the wall's.
        let mut s = Stencil::new(&d, [0.0, 3.5, 1.0]);
        assert_eq!(s.renormalise(fluid), None);
        // Outside a non-periodic domain: no node at all.
        let mut s = Stencil::new(&Domain::new(l, [false; 3]), [-1.5, 3.0, 3.0]);
        assert_eq!(s.count(), 0);
        assert_eq!(s.renormalise(|_| true), None);
        // A NaN position reports none rather than spreading NaN.
        let mut s = Stencil::new(&d, [f32::NAN, 1.0, 1.0]);
        assert_eq!(s.renormalise(|_| true), None);
    }

    #[test]
    fn slabs_see_the_whole_lattice_stencil_and_one_owns_each_sample() {
        // 10 layers along x cut as 0..4, 4..7, 7..10; each slab has a ghost layer either side.
        let whole = Lattice::new(10, 3, 3);
        let cuts = [(0u32, 4u32), (4, 7), (7, 10)];
        for periodic in [true, false] {
            let pb = [periodic, true, true];
            let d1 = Domain::new(whole, pb);
            let slabs: std::vec::Vec<Domain> = cuts
                .iter()
                .map(|&(a, b)| {
                    Domain::new(Lattice::new(b - a + 2, 3, 3), pb).slab(0, a as i32 - 1, 10)
                })
                .collect();
            for k in 0..200 {
                let pos = [-1.5 + k as f32 * 0.0625, 1.25, 0.5];
                let one = Stencil::new(&d1, pos);
                let owners = slabs.iter().filter(|d| d.owns(pos)).count();
                let expected = usize::from(one.count() > 0);
                assert_eq!(owners, expected, "x = {}, periodic {periodic}", pos[0]);
                for (d, &(a, _)) in slabs.iter().zip(&cuts) {
                    let s = Stencil::new(d, pos);
                    // Every node the slab sees is the whole lattice's node, shifted, with the
                    // same weight; a slab that owns the sample sees all of them.
                    for i in 0..NODES {
                        if s.is_present(i) {
                            assert!(one.is_present(i));
                            let (x, y, z) = d.lattice.coords(s.cell(i));
                            let gx = (x as i32 + a as i32 - 1).rem_euclid(10) as u32;
                            assert_eq!(whole.index(gx, y, z), one.cell(i));
                            assert_eq!(s.weight(i).to_bits(), one.weight(i).to_bits());
                        }
                    }
                    if d.owns(pos) {
                        assert_eq!(s.count(), one.count(), "x = {}", pos[0]);
                    }
                }
            }
        }
    }

    #[test]
    fn periodic_wrap() {
        let l = Lattice::new(8, 4, 4);
        let d = Domain::periodic(l);
        let s = Stencil::new(&d, [8.0 - 0.25, 1.0, 2.0]);
        let mut got = Vec::new();
        spread(&s, [1.0, 0.0, 0.0], 1.0, |c, f| {
            if f[0] != 0.0 {
                got.push((l.coords(c), f[0]));
            }
        });
        got.sort_by_key(|g| g.0);
        assert_eq!(got, vec![((0, 1, 2), 0.75), ((7, 1, 2), 0.25)]);
        assert_eq!(weight(&d, [7, 1, 2], [7.75, 1.0, 2.0]), 0.25);
        assert_eq!(weight(&d, [0, 1, 2], [7.75, 1.0, 2.0]), 0.75);
        assert_eq!(weight(&d, [6, 1, 2], [7.75, 1.0, 2.0]), 0.0);
        // The same sample written one period to the left or below zero: the same stencil.
        assert_eq!(Stencil::new(&d, [-0.25, 1.0, 2.0]), s);
        assert_eq!(Stencil::new(&d, [-8.25, 1.0, -2.0]), s);
        // Non-periodic along x: the node past the face is absent, the other keeps its weight
        // until renormalised.
        let mut s = Stencil::new(&Domain::new(l, [false, true, true]), [7.75, 1.0, 2.0]);
        assert_eq!(s.count(), 4);
        assert_eq!(weight_sum(&s), 0.25);
        assert_eq!(s.renormalise(|_| true), Some(4.0));
        assert_eq!(weight_sum(&s), 1.0);
        // A 2D lattice (nz = 1, periodic): both z nodes are the one layer.
        let flat = Domain::periodic(Lattice::new(8, 8, 1));
        let s = Stencil::new(&flat, [2.5, 3.5, 0.3]);
        assert!((0..NODES).all(|i| flat.lattice.coords(s.cell(i)).2 == 0));
        assert!((weight_sum(&s) - 1.0).abs() < 1e-6);
        assert!((weight(&flat, [2, 3, 0], [2.5, 3.5, 0.3]) - 0.25).abs() < 1e-7);
    }
}
