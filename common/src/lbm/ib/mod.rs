//! The immersed boundary's math, written once for the CPU reference and the kernels (`no_std`,
//! `f32`, no allocation, no panic): the stencil ([`stencil`]), direct forcing ([`forcing`]), the
//! solids' states ([`solid`]), the band of cells that hold the force ([`band`]), the per-thread
//! stages of one step ([`stages`]), the gather form of the spreading ([`gather`]) and the
//! binned scatter ([`binned`]).
//!
//! Immersed-boundary coupling (direct forcing): interpolation of the lattice velocity to the
//! solid's surface samples, the force density there, and its spreading back to the lattice.
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
//! [`Lattice::index`](crate::lbm::Lattice::index).
//!
//! # The kernel
//!
//! The 2-point linear hat `phi(r) = max(0, 1 - |r|)` per axis, `K(d) = phi(dx) phi(dy) phi(dz)`
//! (trilinear): a sample touches the 2 x 2 x 2 nodes around it ([`stencil::Stencil`]). Its weights are
//! non-negative and sum to 1 (partition of unity), and it reproduces linear fields exactly. With
//! `dx = 1` the discrete delta function `delta_h = K / dx^3` is `K` itself.
//!
//! Nodes that are not fluid (walls, other boundary cells) or lie outside a non-periodic domain
//! are dropped and `K` renormalised over the rest, `K'_i = K_i / sum_present K_j`
//! ([`stencil::Stencil::renormalise`]); across periodic faces the stencil wraps.
//!
//! # One direct-forcing step (Uhlmann 2005, in the LBM form)
//!
//! 1. `u*(x)`: the lattice velocity before this step's immersed-boundary force, i.e.
//!    `u* = (j + F_ext / 2) / rho` with only the other body forces `F_ext` (Guo's half-force
//!    velocity, [`super::moments::velocity`]). Interpolate it at each sample:
//!    `U_s = sum_i K'(x_i - X_s) u*(x_i)` ([`forcing::interpolate`]).
//! 2. Force density at the sample ([`forcing::force_density`]):
//!    `F_s = 2 rho (u_b - U_s)`, `u_b = v + omega x r` ([`solid::solid_velocity`], `r = X_s - X_c` from
//!    the solid's centre of mass). It is the force per unit volume that the **solid exerts on the
//!    fluid**, in lattice units (`rho dx / dt^2`). The factor 2 (not 1) comes from Guo's
//!    half-force velocity: the velocity the collision sees is `u* + F / (2 rho)`
//!    ([`forcing::corrected_velocity`]), which equals `u_b` at a sample on a node.
//! 3. Spread to the lattice ([`forcing::spread`], or the gather form [`stencil::weight`]):
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
//! force units, `rho dx^4 / dt^2`; [`forcing::total_force`] on the host), plus inertial terms of the
//! fluid inside the solid that the caller adds.
//!
//! # Density at a sample
//!
//! `rho` in `F_s` is the fluid density at the sample: interpolate it with the same stencil
//! ([`forcing::interpolate_scalar`]) or use the reference density; the caller chooses.

/// `for i in 0..8`, unrolled (stencil arrays stay in registers on the GPU).
macro_rules! for_8 {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7] => $body)
    };
}

pub mod band;
pub mod binned;
pub mod forcing;
pub mod gather;
pub mod push;
pub mod solid;
pub mod stages;
pub mod stencil;

#[cfg(test)]
mod tests {
    /// Deterministic uniform numbers in [0, 1).
    pub(super) struct Lcg(pub(super) u64);
    impl Lcg {
        pub(super) fn next(&mut self) -> f32 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 40) as f32 / (1u64 << 24) as f32
        }
        pub(super) fn pos(&mut self, lo: f32, hi: f32) -> [f32; 3] {
            [0; 3].map(|_| lo + (hi - lo) * self.next())
        }
    }
}
