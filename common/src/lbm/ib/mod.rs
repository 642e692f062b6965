//! Immersed-boundary coupling (direct forcing): interpolation of the lattice velocity to the
//! solid's surface samples, the force density there, and its spreading back to the lattice.
//! Written once for the CPU reference and the kernels (`no_std`, `f32`, no allocation, no panic).
//!
//! Sources: Peskin, "The immersed boundary method", Acta Numerica 11 (2002) 479-517 (the method:
//! interpolation and spreading with one discrete delta kernel); Uhlmann, "An immersed boundary
//! method with direct forcing for the simulation of particulate flows", J. Comput. Phys. 209
//! (2005) 448-476 (direct forcing: the force that makes the interpolated velocity equal the
//! solid's); Wang, Fan, Luo, "Combined multi-direct forcing and immersed boundary method for
//! simulating flows with moving particles", Int. J. Multiphase Flow 34 (2008) 283-302
//! (multi-direct forcing); Krüger et al., "The Lattice Boltzmann Method", Springer 2017, Ch. 11
//! (IB with the lattice Boltzmann method, the 2-point kernel) and Sec. 6.3 (Guo forcing).
//!
//! # Units and conventions
//!
//! Lattice units throughout (`dx = dt = 1`): a sample position `X_s` is in cells, with cell
//! centres at integer coordinates (cell `(i, j, k)` is centred on `(i, j, k)`); velocities are
//! in `dx/dt`; densities are the lattice density `rho` (about 1). Cell numbers are those of
//! [`Lattice::index`].
//!
//! # The kernel
//!
//! The 2-point linear hat `phi(r) = max(0, 1 - |r|)` per axis, `K(d) = phi(dx) phi(dy) phi(dz)`
//! (trilinear): a sample touches the 2 x 2 x 2 nodes around it ([`Stencil`]). Its weights are
//! non-negative and sum to 1 (partition of unity), and it reproduces linear fields exactly. With
//! `dx = 1` the discrete delta function `delta_h = K / dx^3` is `K` itself.
//!
//! Nodes that are not fluid (walls, other boundary cells) or lie outside a non-periodic domain
//! are dropped and `K` renormalised over the rest, `K'_i = K_i / sum_present K_j`
//! ([`Stencil::renormalise`]); across periodic faces the stencil wraps.
//!
//! # One direct-forcing step (Uhlmann 2005, in the LBM form)
//!
//! 1. `u*(x)`: the lattice velocity before this step's immersed-boundary force, i.e.
//!    `u* = (j + F_ext / 2) / rho` with only the other body forces `F_ext` (Guo's half-force
//!    velocity, [`super::moments::velocity`]). Interpolate it at each sample:
//!    `U_s = sum_i K'(x_i - X_s) u*(x_i)` ([`interpolate`]).
//! 2. Force density at the sample ([`force_density`]):
//!    `F_s = 2 rho (u_b - U_s)`, `u_b = v + omega x r` ([`solid_velocity`], `r = X_s - X_c` from
//!    the solid's centre of mass). It is the force per unit volume that the **solid exerts on the
//!    fluid**, in lattice units (`rho dx / dt^2`). The factor 2 (not 1) comes from Guo's
//!    half-force velocity: the velocity the collision sees is `u* + F / (2 rho)`
//!    ([`corrected_velocity`]), which equals `u_b` at a sample on a node.
//! 3. Spread to the lattice ([`spread`], or the gather form [`weight`]):
//!    `f(x) = sum_s K'(x - X_s) F_s dV_s`, with `dV_s = dA_s dx = dA_s` the sample's volume
//!    (its share of the surface area times one cell). `f` is a force density (per cell, cell
//!    volume 1) and is added to the body force the Guo term uses.
//!
//! Multi-direct forcing (Wang et al. 2008), `k` passes: start from `u*_0 = u*` and `f = 0`; each
//! pass interpolates `U_s` from `u*_{m-1}`, computes `F_s^m = 2 rho (u_b - U_s)` and spreads it
//! into `f^m`, then `f += f^m` and `u*_m = u*_{m-1} + f^m / (2 rho)` on the touched nodes. The
//! collision uses `F_ext + f`. One pass is plain direct forcing.
//!
//! The force on the solid is the reaction, `-sum_s F_s dV_s` summed over all passes (lattice
//! force units, `rho dx^4 / dt^2`; [`total_force`] on the host), plus inertial terms of the
//! fluid inside the solid that the caller adds.
//!
//! # Density at a sample
//!
//! `rho` in `F_s` is the fluid density at the sample: interpolate it with the same stencil
//! ([`interpolate_scalar`]) or use the reference density; the caller chooses.

use super::layout::Lattice;
use crate::math::floor_i32;

/// Nodes of a trilinear stencil.
pub const NODES: usize = 8;

/// `for i in 0..8`, unrolled (stencil arrays stay in registers on the GPU).
macro_rules! for_8 {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7] => $body)
    };
}

pub mod band;
pub mod gather;
pub mod stages;

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
    cells: [u32; NODES],
    weights: [f32; NODES],
    present: u8,
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
        let mut sum = 0.0f32;
        for_8!(i => {
            if self.present >> i & 1 != 0 {
                if present(self.cells[i] as usize) {
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

    /// Number of present nodes.
    #[inline(always)]
    pub const fn count(&self) -> u32 {
        self.present.count_ones()
    }
}

/// `sum_i K_i u(x_i)` over the present nodes: the velocity at the sample (step 1).
/// `velocity_at` is called once per present node.
#[inline(always)]
pub fn interpolate(stencil: &Stencil, velocity_at: impl Fn(usize) -> [f32; 3]) -> [f32; 3] {
    let mut u = [0.0f32; 3];
    for_8!(i => {
        if stencil.present >> i & 1 != 0 {
            let v = velocity_at(stencil.cells[i] as usize);
            let w = stencil.weights[i];
            u[0] += w * v[0];
            u[1] += w * v[1];
            u[2] += w * v[2];
        }
    });
    u
}

/// `sum_i K_i s(x_i)` over the present nodes, for a scalar field (the density at the sample).
#[inline(always)]
pub fn interpolate_scalar(stencil: &Stencil, value_at: impl Fn(usize) -> f32) -> f32 {
    let mut s = 0.0f32;
    for_8!(i => {
        if stencil.present >> i & 1 != 0 {
            s += stencil.weights[i] * value_at(stencil.cells[i] as usize);
        }
    });
    s
}

/// Velocity of a rigid body at a point: `v + omega x r`, `r` from the centre of mass to the
/// point (lattice units: `v` in `dx/dt`, `omega` in `1/dt`, `r` in `dx`).
#[inline(always)]
pub fn solid_velocity(v: [f32; 3], omega: [f32; 3], r: [f32; 3]) -> [f32; 3] {
    [
        v[0] + (omega[1] * r[2] - omega[2] * r[1]),
        v[1] + (omega[2] * r[0] - omega[0] * r[2]),
        v[2] + (omega[0] * r[1] - omega[1] * r[0]),
    ]
}

/// Direct-forcing density at a sample, `F_s = 2 rho (u_b - u*)` (step 2): the force per unit
/// volume that the solid exerts on the fluid, lattice units (`rho dx / dt^2`). Positive along
/// `u_b - u*`: it pushes the fluid toward the solid's velocity. `u*` is the interpolated
/// velocity before this step's (or pass's) immersed-boundary force; the factor 2 makes Guo's
/// half-force velocity `u* + F / (2 rho)` equal `u_b` (see [`corrected_velocity`]).
#[inline(always)]
pub fn force_density(rho: f32, u_b: [f32; 3], u_star: [f32; 3]) -> [f32; 3] {
    let k = 2.0 * rho;
    [
        k * (u_b[0] - u_star[0]),
        k * (u_b[1] - u_star[1]),
        k * (u_b[2] - u_star[2]),
    ]
}

/// Guo's half-force velocity correction, `u* + F / (2 rho)`: the velocity the collision sees
/// once the force density `F` is added (the same as [`super::moments::velocity`] with
/// `j = rho u*`); the multi-direct-forcing update of `u*` between passes.
#[inline(always)]
pub fn corrected_velocity(u_star: [f32; 3], rho: f32, force: [f32; 3]) -> [f32; 3] {
    let h = 0.5 / rho;
    [
        u_star[0] + h * force[0],
        u_star[1] + h * force[1],
        u_star[2] + h * force[2],
    ]
}

/// Scatter form of step 3: `add(cell, K_i F_s dV)` for each present node, `dv` the sample's
/// volume `dA_s dx` (lattice units). Callers running samples in parallel need an atomic `add`.
#[inline(always)]
pub fn spread(stencil: &Stencil, f_s: [f32; 3], dv: f32, mut add: impl FnMut(usize, [f32; 3])) {
    let g = [f_s[0] * dv, f_s[1] * dv, f_s[2] * dv];
    for_8!(i => {
        if stencil.present >> i & 1 != 0 {
            let w = stencil.weights[i];
            add(stencil.cells[i] as usize, [w * g[0], w * g[1], w * g[2]]);
        }
    });
}

/// Gather form of step 3: the raw weight `K(node - X_s)` of the node at `node` (cell
/// coordinates) for a sample at `pos`, with the same periodic wrap and domain edges as
/// [`Stencil::new`] (0 if the node is not in the sample's stencil). A kernel running one thread
/// per fluid node sums `(weight(..) * scale_s) * (F_s dV_s)` over the samples near it, with
/// `scale_s` what [`Stencil::renormalise`] returned for the sample (0 when `None`); that is
/// the value [`spread`] adds, bit for bit, when no axis has a single cell (on a periodic axis
/// of one cell both stencil nodes are the same cell and the gather adds their weights first).
#[inline(always)]
pub fn weight(domain: &Domain, node: [u32; 3], pos: [f32; 3]) -> f32 {
    let wx = axis_weight(domain.axis(0, pos[0]), node[0]);
    let wy = axis_weight(domain.axis(1, pos[1]), node[1]);
    let wz = axis_weight(domain.axis(2, pos[2]), node[2]);
    wx * wy * wz
}

/// Gather form of step 3, term by term: calls `term(K_i)` with the raw weight of every node
/// `i` of the stencil of a sample at `pos` that sits on `node` (cell coordinates): none when the
/// node is not in the stencil, one in general, two or more only where a periodic axis has a
/// single cell (both nodes are that cell). Each weight is the product [`Stencil::new`] forms,
/// in the same order, so `to_fixed(K_i * scale_s * g)` equals what the scatter adds for that
/// node bit for bit.
#[inline(always)]
pub fn node_weights(domain: &Domain, node: [u32; 3], pos: [f32; 3], mut term: impl FnMut(f32)) {
    let ax = domain.axis(0, pos[0]);
    let ay = domain.axis(1, pos[1]);
    let az = domain.axis(2, pos[2]);
    let on = |a: &Axis, k: usize, c: u32| a.inside[k] && a.coord[k] == c;
    for_8!(i => {
        let (a, b, c) = (i & 1, i >> 1 & 1, i >> 2);
        if on(&ax, a, node[0]) && on(&ay, b, node[1]) && on(&az, c, node[2]) {
            term(ax.weight[a] * ay.weight[b] * az.weight[c]);
        }
    });
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

/// Most solids one scene may hold: their states travel by value inside the kernel arguments.
pub const MAX_SOLIDS: usize = 8;

/// A rigid solid's state at one step, lattice units: the one description of solid kinematics
/// both backends use. The host computes it once per step from the scene's motion (`f64`, then
/// rounded to `f32` once), so the CPU reference and the kernels see the same values.
///
/// A sample's world position is `center + R body` ([`SolidState::position`]) and its velocity
/// `v + omega x (X - center)` ([`SolidState::velocity_at`]); positions may lie outside
/// `[0, n)` along periodic axes ([`Stencil::new`] wraps them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolidState {
    /// Centre (the body frame's origin; the centre of mass for closed solids), cells.
    pub center: [f32; 3],
    pub _pad0: u32,
    /// Rotation body -> world, row-major: `world = R body`.
    pub rotation: [[f32; 3]; 3],
    /// Velocity of the centre, `dx/dt`.
    pub velocity: [f32; 3],
    pub _pad1: u32,
    /// Angular velocity, `1/dt`.
    pub omega: [f32; 3],
    pub _pad2: u32,
}

impl SolidState {
    /// World position of a sample at `body` (cells, body frame).
    #[inline(always)]
    pub fn position(&self, body: [f32; 3]) -> [f32; 3] {
        let r = &self.rotation;
        [
            self.center[0] + (r[0][0] * body[0] + r[0][1] * body[1] + r[0][2] * body[2]),
            self.center[1] + (r[1][0] * body[0] + r[1][1] * body[1] + r[1][2] * body[2]),
            self.center[2] + (r[2][0] * body[0] + r[2][1] * body[1] + r[2][2] * body[2]),
        ]
    }

    /// Offset `R body` of a sample from the centre (the lever arm `r` of torques and of
    /// `omega x r`).
    #[inline(always)]
    pub fn arm(&self, body: [f32; 3]) -> [f32; 3] {
        let r = &self.rotation;
        [
            r[0][0] * body[0] + r[0][1] * body[1] + r[0][2] * body[2],
            r[1][0] * body[0] + r[1][1] * body[1] + r[1][2] * body[2],
            r[2][0] * body[0] + r[2][1] * body[1] + r[2][2] * body[2],
        ]
    }

    /// The solid's velocity `u_b = v + omega x r` at a sample of lever arm `arm`.
    #[inline(always)]
    pub fn velocity_at(&self, arm: [f32; 3]) -> [f32; 3] {
        solid_velocity(self.velocity, self.omega, arm)
    }
}

/// Force on the solid from its samples' `(F_s, dV_s)`: `-sum_s F_s dV_s` (lattice units; host
/// side, summed in `f64`). Over several multi-direct-forcing passes, pass every pass's samples.
#[cfg(not(target_arch = "nvptx64"))]
pub fn total_force(samples: impl IntoIterator<Item = ([f32; 3], f32)>) -> [f32; 3] {
    let mut t = [0.0f64; 3];
    for (f, dv) in samples {
        for a in 0..3 {
            t[a] -= f[a] as f64 * dv as f64;
        }
    }
    [t[0] as f32, t[1] as f32, t[2] as f32]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::{initial_populations, moments};
    use std::vec;
    use std::vec::Vec;

    /// Deterministic uniform numbers in [0, 1).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 40) as f32 / (1u64 << 24) as f32
        }
        fn pos(&mut self, lo: f32, hi: f32) -> [f32; 3] {
            [0; 3].map(|_| lo + (hi - lo) * self.next())
        }
    }

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
    fn interpolation_reproduces_linear_fields() {
        let l = Lattice::new(16, 12, 10);
        let d = Domain::periodic(l);
        let mut rng = Lcg(2);
        for _ in 0..200 {
            let a = rng.pos(-0.1, 0.1);
            let b: [[f32; 3]; 3] = [0; 3].map(|_| rng.pos(-0.01, 0.01));
            let field = |x: [f32; 3]| -> [f32; 3] {
                [0, 1, 2].map(|r| a[r] + b[r][0] * x[0] + b[r][1] * x[1] + b[r][2] * x[2])
            };
            let velocity_at = |cell: usize| {
                let (x, y, z) = l.coords(cell);
                field([x as f32, y as f32, z as f32])
            };
            // Away from the periodic seam, so that the field is linear over the stencil.
            let p = [
                1.0 + 13.0 * rng.next(),
                1.0 + 9.0 * rng.next(),
                1.0 + 7.0 * rng.next(),
            ];
            let mut s = Stencil::new(&d, p);
            let got = interpolate(&s, velocity_at);
            let want = field(p);
            for r in 0..3 {
                assert!(
                    (got[r] - want[r]).abs() < 1e-6,
                    "{p:?} {r}: {got:?} vs {want:?}"
                );
            }
            // Renormalising over an all-fluid stencil changes nothing beyond rounding.
            assert!(s.renormalise(|_| true).is_some());
            let again = interpolate(&s, velocity_at);
            for r in 0..3 {
                assert!((again[r] - want[r]).abs() < 1e-6);
            }
        }
    }

    /// Spreads `samples` (position, F_s, dV) by scatter and by gather; checks they agree bit for
    /// bit and that the lattice total is `sum F_s dV`. `fluid` marks the cells that may take force.
    fn scatter_vs_gather(d: &Domain, fluid: &[bool], samples: &[([f32; 3], [f32; 3], f32)]) {
        let l = d.lattice;
        let mut scatter = vec![[0.0f32; 3]; l.cells()];
        let mut scales = Vec::new();
        let mut want = [0.0f64; 3];
        for &(p, f, dv) in samples {
            let mut s = Stencil::new(d, p);
            let scale = s.renormalise(|c| fluid[c]);
            scales.push(scale.unwrap_or(0.0));
            spread(&s, f, dv, |c, v| {
                for a in 0..3 {
                    scatter[c][a] += v[a];
                }
            });
            if scale.is_some() {
                for a in 0..3 {
                    want[a] += (f[a] * dv) as f64;
                }
            }
        }
        let mut total = [0.0f64; 3];
        for cell in 0..l.cells() {
            let (x, y, z) = l.coords(cell);
            let mut gather = [0.0f32; 3];
            if fluid[cell] {
                for (&(p, f, dv), &scale) in samples.iter().zip(&scales) {
                    let k = weight(d, [x, y, z], p) * scale;
                    if k != 0.0 {
                        let g = [f[0] * dv, f[1] * dv, f[2] * dv];
                        for a in 0..3 {
                            gather[a] += k * g[a];
                        }
                    }
                }
            } else {
                assert_eq!(scatter[cell], [0.0; 3], "force spread onto a wall");
            }
            assert_eq!(gather, scatter[cell], "cell ({x}, {y}, {z})");
            for a in 0..3 {
                total[a] += scatter[cell][a] as f64;
            }
        }
        for a in 0..3 {
            assert!(
                (total[a] - want[a]).abs() < 1e-6 * (1.0 + want[a].abs()),
                "axis {a}: {} vs {}",
                total[a],
                want[a]
            );
        }
        // The solid takes the reaction.
        let on_solid = total_force(
            samples
                .iter()
                .zip(&scales)
                .filter(|(_, &s)| s != 0.0)
                .map(|(&(_, f, dv), _)| (f, dv)),
        );
        for a in 0..3 {
            assert!((on_solid[a] as f64 + want[a]).abs() < 1e-6 * (1.0 + want[a].abs()));
        }
    }

    #[test]
    fn spreading_conserves_force_and_gather_equals_scatter() {
        let mut rng = Lcg(3);
        let samples: Vec<_> = (0..300)
            .map(|_| {
                let p = rng.pos(-3.0, 13.0);
                let f = rng.pos(-1e-3, 1e-3);
                (p, f, 0.2 + rng.next())
            })
            .collect();
        let l = Lattice::new(10, 9, 8);
        // Periodic, all fluid (samples outside the box wrap in).
        scatter_vs_gather(&Domain::periodic(l), &vec![true; l.cells()], &samples);
        // Non-periodic box with a wall slab y = 0..2 and a wall block: renormalised stencils.
        let fluid: Vec<bool> = (0..l.cells())
            .map(|c| {
                let (x, y, z) = l.coords(c);
                y >= 2 && !((3..6).contains(&x) && (2..5).contains(&z))
            })
            .collect();
        scatter_vs_gather(&Domain::new(l, [false, false, true]), &fluid, &samples);
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

    #[test]
    fn solid_velocity_is_v_plus_omega_cross_r() {
        let u = solid_velocity([0.01, 0.0, -0.02], [0.0, 0.0, 0.1], [2.0, 1.0, 5.0]);
        // omega x r = (0, 0, 0.1) x (2, 1, 5) = (-0.1, 0.2, 0).
        assert_eq!(u, [0.01 - 0.1, 0.2, -0.02]);
        let u = solid_velocity([0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        assert_eq!(u, [0.0, 0.0, 1.0]);
    }

    /// One direct-forcing pass on a uniform flow `u`, `u_b = 0`, a sample on node (3, 4, 5),
    /// `dV = 1`: `F_s = -2 rho u` and it all lands on that node; there, Guo's half-force velocity
    /// `(j + F / 2) / rho` with `u* = j / rho` is exactly 0 for `rho = 1`, and within 2 ulps of
    /// `|u|` otherwise (`rho (j / rho) != j` in rounding). Every other node keeps `u`.
    #[test]
    fn one_direct_forcing_pass_stops_the_flow_at_a_node() {
        let l = Lattice::new(8, 8, 8);
        let d = Domain::periodic(l);
        let node = l.index(3, 4, 5);
        for (rho, u) in [
            (1.0f32, [0.05f32, -0.03, 0.02]),
            (1.03, [0.05, -0.03, 0.02]),
            (0.97, [-0.07, 0.011, 0.04]),
        ] {
            // The lattice: equilibrium of (rho, u) everywhere, no other force.
            let f = initial_populations(rho, u);
            let (rho_c, j) = moments::density_momentum(&f);
            let u_star_cell = moments::velocity(rho_c, j, [0.0; 3]);

            let mut s = Stencil::new(&d, [3.0, 4.0, 5.0]);
            assert_eq!(s.renormalise(|_| true), Some(1.0));
            let u_s = interpolate(&s, |_| u_star_cell);
            assert_eq!(u_s, u_star_cell, "a sample on a node reads that node");
            let rho_s = interpolate_scalar(&s, |_| rho_c);
            assert_eq!(rho_s, rho_c);
            let f_s = force_density(rho_s, [0.0; 3], u_s);
            for a in 0..3 {
                assert_eq!(f_s[a], -2.0 * rho_s * u_s[a]);
            }
            let mut force = vec![[0.0f32; 3]; l.cells()];
            spread(&s, f_s, 1.0, |c, v| {
                for a in 0..3 {
                    force[c][a] += v[a];
                }
            });
            assert_eq!(force[node], f_s);
            assert!((0..l.cells()).all(|c| c == node || force[c] == [0.0; 3]));

            // What the collision sees at the node, and the helper's form of it.
            let after = moments::velocity(rho_c, j, force[node]);
            let helper = corrected_velocity(u_star_cell, rho_c, force[node]);
            for a in 0..3 {
                let tol = 2.0 * f32::EPSILON * u[a].abs();
                if rho == 1.0 {
                    assert_eq!(after[a], 0.0, "rho = 1, axis {a}");
                    assert_eq!(helper[a], 0.0, "rho = 1, axis {a}");
                } else {
                    assert!(after[a].abs() <= tol, "rho {rho}, axis {a}: {}", after[a]);
                    assert!(helper[a].abs() <= tol, "rho {rho}, axis {a}: {}", helper[a]);
                }
            }
        }
    }

    /// Multi-direct forcing on a plane of samples (spacing 1, `dV = 1`, at `(i + 0.3, j + 0.6,
    /// 1.25)`, a periodic lattice) in a uniform flow `u`, `u_b = 0`. Each node of the layers
    /// z = 1 and 2 collects the spread force with total xy weight 1 and z weight 0.75 or 0.25, so
    /// a pass multiplies the velocity at every sample by `1 - (0.75^2 + 0.25^2) = 0.375`: after
    /// `m` passes it is `0.375^m u` (one pass, plain direct forcing, leaves 37.5 % of the slip).
    /// The force on the solid is minus what the fluid received.
    #[test]
    fn multi_direct_forcing_reduces_the_slip_pass_by_pass() {
        let l = Lattice::new(12, 12, 4);
        let d = Domain::periodic(l);
        let (rho, u0) = (1.0f32, [0.04f32, 0.01, -0.02]);
        let mut u = vec![u0; l.cells()];
        let stencils: Vec<Stencil> = (0..144)
            .map(|k| Stencil::new(&d, [(k % 12) as f32 + 0.3, (k / 12) as f32 + 0.6, 1.25]))
            .collect();
        let mut f_total = vec![[0.0f32; 3]; l.cells()];
        let mut samples = Vec::new();
        let mut factor = 1.0f32;
        for _pass in 0..6 {
            let mut f_pass = vec![[0.0f32; 3]; l.cells()];
            for s in &stencils {
                let u_s = interpolate(s, |c| u[c]);
                for a in 0..3 {
                    assert!((u_s[a] - factor * u0[a]).abs() < 1e-7, "{u_s:?}, {factor}");
                }
                let f_s = force_density(rho, [0.0; 3], u_s);
                samples.push((f_s, 1.0));
                spread(s, f_s, 1.0, |c, v| {
                    for a in 0..3 {
                        f_pass[c][a] += v[a];
                    }
                });
            }
            for c in 0..l.cells() {
                u[c] = corrected_velocity(u[c], rho, f_pass[c]);
                for a in 0..3 {
                    f_total[c][a] += f_pass[c][a];
                }
            }
            factor *= 0.375;
        }
        let on_solid = total_force(samples);
        for a in 0..3 {
            let fluid: f64 = f_total.iter().map(|f| f[a] as f64).sum();
            let err = (on_solid[a] as f64 + fluid).abs();
            assert!(err < 1e-6 * fluid.abs(), "{a}: {} vs {fluid}", on_solid[a]);
        }
    }
}
