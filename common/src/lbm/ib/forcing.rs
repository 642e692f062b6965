//! Direct forcing (Uhlmann 2005) and multi-direct forcing (Wang, Fan, Luo 2008) at one sample:
//! the lattice velocity and density interpolated to it, the force density `F_s = 2 rho (u_b - u*)`
//! there, Guo's half-force velocity correction, the spreading of `F_s dV_s` back to the lattice,
//! and the reaction on the solid. The steps are numbered as in [`super`]'s docs.
//!
//! Sources: Uhlmann, "An immersed boundary method with direct forcing for the simulation of
//! particulate flows", J. Comput. Phys. 209 (2005) 448-476; Wang, Fan, Luo, "Combined
//! multi-direct forcing and immersed boundary method for simulating flows with moving
//! particles", Int. J. Multiphase Flow 34 (2008) 283-302; Krüger et al., "The Lattice Boltzmann
//! Method", Springer 2017, Sec. 6.3 (Guo forcing).

use super::stencil::Stencil;

/// `sum_i K_i u(x_i)` over the present nodes: the velocity at the sample (step 1).
/// `velocity_at` is called once per present node.
#[inline(always)]
pub fn interpolate(stencil: &Stencil, velocity_at: impl Fn(usize) -> [f32; 3]) -> [f32; 3] {
    interpolate_nodes(stencil, |i| velocity_at(stencil.cells[i] as usize))
}

/// [`interpolate`] with `velocity_at(i)` asked of node `i` (a constant in the unrolled loop)
/// rather than of its cell.
#[inline(always)]
pub fn interpolate_nodes(stencil: &Stencil, velocity_at: impl Fn(usize) -> [f32; 3]) -> [f32; 3] {
    let mut u = [0.0f32; 3];
    for_8!(i => {
        if stencil.present >> i & 1 != 0 {
            let v = velocity_at(i);
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
    interpolate_scalar_nodes(stencil, |i| value_at(stencil.cells[i] as usize))
}

/// [`interpolate_scalar`] with `value_at(i)` asked of node `i`.
#[inline(always)]
pub fn interpolate_scalar_nodes(stencil: &Stencil, value_at: impl Fn(usize) -> f32) -> f32 {
    let mut s = 0.0f32;
    for_8!(i => {
        if stencil.present >> i & 1 != 0 {
            s += stencil.weights[i] * value_at(i);
        }
    });
    s
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
/// once the force density `F` is added (the same as [`crate::lbm::moments::velocity`] with
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
    let g = spread_total(f_s, dv);
    for_8!(i => {
        if let Some((cell, v)) = spread_term(stencil, g, i) {
            add(cell, v);
        }
    });
}

/// What a sample spreads in all, `g = F_s dV`.
#[inline(always)]
pub fn spread_total(f_s: [f32; 3], dv: f32) -> [f32; 3] {
    [f_s[0] * dv, f_s[1] * dv, f_s[2] * dv]
}

/// Node `i`'s term of [`spread`]: `(cell, K_i g)` when node `i` is present, `g` from
/// [`spread_total`]. Call it with a constant `i` (in an unrolled loop): a runtime index into the
/// stencil's arrays would put them in local memory on the GPU.
#[inline(always)]
pub fn spread_term(stencil: &Stencil, g: [f32; 3], i: usize) -> Option<(usize, [f32; 3])> {
    if stencil.present >> i & 1 == 0 {
        return None;
    }
    let w = stencil.weights[i];
    Some((stencil.cells[i] as usize, [w * g[0], w * g[1], w * g[2]]))
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
    use crate::lbm::ib::stencil::{weight, Domain};
    use crate::lbm::ib::tests::Lcg;
    use crate::lbm::{initial_populations, moments, Lattice};
    use std::vec;
    use std::vec::Vec;

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
