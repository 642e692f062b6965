//! The WALE subgrid model (wall-adapting local eddy viscosity; Nicoud & Ducros 1999): an eddy
//! viscosity from the whole velocity gradient `g_ij = d u_i / d x_j`,
//!
//! `nu_t = (C_w Delta)^2 (Sd:Sd)^(3/2) / ((S:S)^(5/2) + (Sd:Sd)^(5/4))`,
//!
//! with `S` the strain rate (the symmetric part of `g`) and `Sd` the traceless symmetric part
//! of `g^2`. It vanishes in pure shear and towards a wall (as `y^3`), so it needs no wall
//! damping, where the Smagorinsky model ([`super::les`]) over-dissipates.
//!
//! `g` comes from central differences of the velocity every fluid cell's collision left the
//! step before (three arrays of `cells` floats, x, y then z, read at the six face neighbours;
//! a non-fluid neighbour gives its boundary's velocity, `super::stream::boundary_fields`),
//! so the model lags the flow by one step. Each collision writes its velocity into the other
//! copy of the field ([`crate::lbm::abi::StreamCollide::velocity_out`]): no cell reads what
//! another writes in the same step, so the result does not depend on the order cells run in.
//! The cell's relaxation time is `tau_0 + 3 nu_t` (`Delta` one cell), the shear rate for
//! BGK's single rate and for the MRT models' shear moments, as with the Smagorinsky model.
//! [`super::LbmParams::wale`] holds `C_w^2`.

use super::boundary::{FLUID, KIND_MASK};
use super::params::LbmParams;
use super::Rates;
use crate::kernel::{DevSlice, DevSliceMut};
use crate::math::sqrt;

/// `C_w^2`, the factor [`LbmParams::wale`] holds, of the WALE constant `cw`.
pub fn factor(cw: f32) -> f32 {
    cw * cw
}

/// The eddy viscosity (lattice units, `Delta` one cell) of the velocity gradient `g`
/// (`g[i][j] = d u_i / d x_j`) under the model of factor `factor` (`C_w^2`); 0 where the
/// gradient vanishes.
#[inline(always)]
pub fn eddy_viscosity(g: &[[f32; 3]; 3], factor: f32) -> f32 {
    let mut g2 = [[0.0f32; 3]; 3];
    for i in 0..3 {
        for j in 0..3 {
            g2[i][j] = g[i][0] * g[0][j] + g[i][1] * g[1][j] + g[i][2] * g[2][j];
        }
    }
    let third = (g2[0][0] + g2[1][1] + g2[2][2]) * (1.0 / 3.0);
    let (mut ss, mut dd) = (0.0f32, 0.0f32);
    for i in 0..3 {
        for j in 0..3 {
            let s = 0.5 * (g[i][j] + g[j][i]);
            let trace = if i == j { third } else { 0.0 };
            let d = 0.5 * (g2[i][j] + g2[j][i]) - trace;
            ss += s * s;
            dd += d * d;
        }
    }
    let root_dd = sqrt(dd);
    let den = ss * ss * sqrt(ss) + dd * sqrt(root_dd);
    if den > 0.0 {
        factor * dd * root_dd / den
    } else {
        0.0
    }
}

/// The velocity gradient `g[i][j] = d u_i / d x_j` at `cell` by central differences of the
/// field `u` (three arrays of `cells` floats; periodic wrap as the populations' pull). With
/// `near` (the cell has non-fluid neighbours), a non-fluid neighbour's velocity is
/// `boundary(byte, cell)`, its boundary's.
///
/// # Safety
/// `cell < cells`, `u` holds `3 cells` floats, `flags` `cells` bytes.
#[inline(always)]
pub unsafe fn gradient(
    p: &LbmParams,
    flags: DevSlice<u8>,
    u: DevSlice<f32>,
    cell: usize,
    near: bool,
    boundary: impl Fn(u8, usize) -> [f32; 3],
) -> [[f32; 3]; 3] {
    let n = p.lattice.cells();
    // `o[axis]` is `[x + 1, x, x - 1]` times the axis' stride.
    let o = p.lattice.pull_offsets(cell);
    let pairs = [
        (o[0][0] + o[1][1] + o[2][1], o[0][2] + o[1][1] + o[2][1]),
        (o[0][1] + o[1][0] + o[2][1], o[0][1] + o[1][2] + o[2][1]),
        (o[0][1] + o[1][1] + o[2][0], o[0][1] + o[1][1] + o[2][2]),
    ];
    let at = |cell: usize| {
        if near {
            let byte = flags.read(cell);
            if byte & KIND_MASK != FLUID {
                return boundary(byte, cell);
            }
        }
        [u.read(cell), u.read(n + cell), u.read(2 * n + cell)]
    };
    let mut g = [[0.0f32; 3]; 3];
    for (j, &(plus, minus)) in pairs.iter().enumerate() {
        let (up, um) = (at(plus as usize), at(minus as usize));
        for i in 0..3 {
            g[i][j] = 0.5 * (up[i] - um[i]);
        }
    }
    g
}

/// `rates` with the shear rate of a cell of eddy viscosity `nu_t`: `tau = tau_0 + 3 nu_t`.
#[inline(always)]
pub fn with_eddy_viscosity(rates: &Rates, nu_t: f32) -> Rates {
    Rates {
        shear: 1.0 / (1.0 / rates.shear + 3.0 * nu_t),
        ..*rates
    }
}

/// Keeps the velocity `u` of `cell`'s collision in the field `out` (three arrays of `n`
/// floats) for the next step.
///
/// # Safety
/// `cell < n`, `out` holds `3 n` floats, and no other thread writes `cell`'s.
#[inline(always)]
pub unsafe fn keep(out: DevSliceMut<f32>, n: usize, cell: usize, u: [f32; 3]) {
    out.write(cell, u[0]);
    out.write(n + cell, u[1]);
    out.write(2 * n + cell, u[2]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pure_shear_has_no_eddy_viscosity_and_rotation_has() {
        // A simple shear u = (a y, 0, 0): Sd vanishes (g^2 = 0), so does nu_t.
        let shear = [[0.0, 0.01, 0.0], [0.0; 3], [0.0; 3]];
        assert_eq!(eddy_viscosity(&shear, factor(0.5)), 0.0);
        // Solid-body rotation: S = 0, but g^2 = -w^2 diag(1, 1, 0) has a traceless part, so
        // nu_t = C_w^2 (Sd:Sd)^(1/4) > 0: WALE sees rotation (the sigma model would not).
        let w = 0.01f32;
        let rotation = [[0.0, -w, 0.0], [w, 0.0, 0.0], [0.0; 3]];
        assert!(eddy_viscosity(&rotation, factor(0.5)) > 0.0);
        assert_eq!(eddy_viscosity(&[[0.0; 3]; 3], factor(0.5)), 0.0);
    }

    #[test]
    fn the_eddy_viscosity_matches_the_formula_in_f64() {
        let g = [
            [0.003f32, -0.012, 0.004],
            [0.007, -0.001, 0.009],
            [-0.002, 0.005, -0.002],
        ];
        let gd = g.map(|r| r.map(f64::from));
        let mut g2 = [[0.0f64; 3]; 3];
        for i in 0..3 {
            for j in 0..3 {
                g2[i][j] = (0..3).map(|k| gd[i][k] * gd[k][j]).sum();
            }
        }
        let tr = (g2[0][0] + g2[1][1] + g2[2][2]) / 3.0;
        let (mut ss, mut dd) = (0.0, 0.0);
        for i in 0..3 {
            for j in 0..3 {
                ss += (0.5 * (gd[i][j] + gd[j][i])).powi(2);
                let d = 0.5 * (g2[i][j] + g2[j][i]) - if i == j { tr } else { 0.0 };
                dd += d * d;
            }
        }
        let want = 0.25 * dd.powf(1.5) / (ss.powf(2.5) + dd.powf(1.25));
        let got = f64::from(eddy_viscosity(&g, factor(0.5)));
        assert!((got - want).abs() < 1e-5 * want, "{got} {want}");
    }

    #[test]
    fn the_gradient_of_a_linear_field_is_exact_and_wraps() {
        use crate::lbm::Rates;
        // u = (0.01 y, -0.02 x, 0.003 z) on a periodic 6 x 5 x 4 box, read away from the wrap;
        // at the wrap the central difference spans the jump.
        let lattice = crate::lbm::Lattice::new(6, 5, 4);
        let n = lattice.cells();
        let mut u = std::vec![0.0f32; 3 * n];
        for cell in 0..n {
            let (x, y, z) = lattice.coords(cell);
            u[cell] = 0.01 * y as f32;
            u[n + cell] = -0.02 * x as f32;
            u[2 * n + cell] = 0.003 * z as f32;
        }
        let flags = std::vec![FLUID; n];
        let p = LbmParams::new(lattice, Rates::from_viscosity(0.01));
        // SAFETY: the views are the vectors', sized for the lattice.
        let (uv, fv) = unsafe {
            (
                DevSlice::from_raw(u.as_ptr(), u.len() as u64),
                DevSlice::from_raw(flags.as_ptr(), n as u64),
            )
        };
        let none = |_: u8, _: usize| [f32::NAN; 3];
        let g = unsafe { gradient(&p, fv, uv, lattice.index(2, 2, 1), false, none) };
        let want = [[0.0, 0.01, 0.0], [-0.02, 0.0, 0.0], [0.0, 0.0, 0.003]];
        for i in 0..3 {
            for j in 0..3 {
                assert!((g[i][j] - want[i][j]).abs() < 1e-7, "{g:?}");
            }
        }
        // x = 0: the neighbour at x - 1 is x = 5 (periodic).
        let g = unsafe { gradient(&p, fv, uv, lattice.index(0, 2, 1), false, none) };
        assert!((g[1][0] - 0.5 * (-0.02 - -0.1)).abs() < 1e-7, "{g:?}");
    }
}
