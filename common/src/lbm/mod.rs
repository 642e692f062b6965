//! Kinetic fluid: the D3Q27 lattice Boltzmann method, written once for the CPU reference and the
//! GPU kernels. Stage of one step: the fused pull `stream -> macroscopic -> force -> collide ->
//! store` of [`stream_collide_cell`].
//!
//! Sources: Krüger, Kusumaatmaja, Kuzmin, Shardt, Silva, Viggen, "The Lattice Boltzmann Method:
//! Principles and Practice", Springer 2017 (D3Q27, BGK, Guo forcing, boundaries, units);
//! Geier, Schönherr, Pasquali, Krafczyk, "The cumulant lattice Boltzmann equation in three
//! dimensions", Comput. Math. Appl. 70 (2015) (central moments, chimera transform);
//! Li, Chen, Desbrun, Zheng, Liu, ACM TOG 39(4) 2020 (ACM-MRT). Each file cites its equations.
//!
//! Memory (FP32, see [`layout`]): 216 B of populations, 1 B of cell type and 16 B of optional
//! fields per cell; 217 B moved per cell update.

/// Fully unrolled loop: `$i` is a `const usize` in the body. The hot loops over the 27
/// directions use it so that populations and moments stay in registers on the GPU (an array
/// indexed by a runtime loop counter would live in local memory).
macro_rules! unroll {
    ($i:ident in [$($n:literal),*] => $body:block) => {
        $( { #[allow(non_upper_case_globals)] const $i: usize = $n; $body } )*
    };
}

/// `for q in 0..27`, unrolled.
macro_rules! for_q {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
            21, 22, 23, 24, 25, 26] => $body)
    };
}

/// `for k in 0..9`, unrolled.
macro_rules! for_9 {
    ($i:ident => $body:block) => {
        unroll!($i in [0, 1, 2, 3, 4, 5, 6, 7, 8] => $body)
    };
}

pub mod acm_mrt;
pub mod bgk;
pub mod boundary;
pub mod d3q27;
pub mod equilibrium;
pub mod forcing;
pub mod layout;
pub mod moments;
pub mod rm_mrt;
pub mod units;

pub use boundary::CellKind;
pub use d3q27::Q;
pub use layout::Lattice;
pub use units::Units;

use boundary::{anti_bounce_back, moving_bounce_back, FLUID, KIND_MASK, NEAR_BOUNDARY, OUTLET};
use d3q27::{opposite, velocity};
use moments::moment_index as mi;

/// The collision operator. `#[repr(u32)]`: the host picks a kernel entry point per model.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
pub enum CollisionModel {
    /// Single relaxation time (`bgk.rs`).
    #[default]
    Bgk = 0,
    /// Raw-moment multiple relaxation time (`rm_mrt.rs`).
    RmMrt = 1,
    /// Adaptive central-moment multiple relaxation time (`acm_mrt.rs`).
    AcmMrt = 2,
}

impl CollisionModel {
    pub const ALL: [CollisionModel; 3] = [
        CollisionModel::Bgk,
        CollisionModel::RmMrt,
        CollisionModel::AcmMrt,
    ];

    /// `bgk`, `rm-mrt`, `acm-mrt`.
    pub const fn name(self) -> &'static str {
        match self {
            CollisionModel::Bgk => "bgk",
            CollisionModel::RmMrt => "rm-mrt",
            CollisionModel::AcmMrt => "acm-mrt",
        }
    }
}

/// Model id of [`CollisionModel::Bgk`] as a const generic argument.
pub const BGK: u32 = CollisionModel::Bgk as u32;
/// Model id of [`CollisionModel::RmMrt`].
pub const RM_MRT: u32 = CollisionModel::RmMrt as u32;
/// Model id of [`CollisionModel::AcmMrt`].
pub const ACM_MRT: u32 = CollisionModel::AcmMrt as u32;

/// Relaxation rates (`omega = 1 / tau`, lattice units). `#[repr(C)]`: part of the kernel
/// parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rates {
    /// Shear rate: kinematic viscosity `nu = (1 / shear - 1 / 2) / 3`. In (0, 2).
    pub shear: f32,
    /// Bulk rate (MRT models): bulk viscosity `2/3 (1 / bulk - 1 / 2)`. In (0, 2).
    pub bulk: f32,
    /// Rate of the moments of order 3 to 6 (RM-MRT). In (0, 2).
    pub high: f32,
    /// ACM-MRT limiter `lambda` (> 0): larger keeps the higher orders at the shear rate longer.
    pub lambda: f32,
}

impl Rates {
    /// Default bulk rate of the MRT models (1: bulk viscosity 1/3, damps acoustic waves).
    pub const DEFAULT_BULK: f32 = 1.0;
    /// Default higher-order rate of RM-MRT (1: higher moments set to equilibrium).
    pub const DEFAULT_HIGH: f32 = 1.0;
    /// Default ACM-MRT limiter (Geier et al. 2017 use values of this order).
    pub const DEFAULT_LAMBDA: f32 = 1e-2;

    /// The rates of viscosity `nu` (lattice units) with the default bulk, high and lambda.
    pub fn from_viscosity(nu: f32) -> Rates {
        Rates {
            shear: 1.0 / (3.0 * nu + 0.5),
            bulk: Self::DEFAULT_BULK,
            high: Self::DEFAULT_HIGH,
            lambda: Self::DEFAULT_LAMBDA,
        }
    }
}

/// Everything one stream-collide step needs besides the buffers. `#[repr(C)]`, passed by value to
/// the kernels; all fields are 4 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LbmParams {
    pub lattice: Lattice,
    /// 1: write `rho, ux, uy, uz` to the fields buffer this step; 0: do not touch it.
    pub store_fields: u32,
    pub rates: Rates,
    /// Body force density (lattice units), applied with Guo forcing.
    pub force: [f32; 3],
    /// 1 when `force` is non-zero (skips the source term otherwise).
    pub has_force: u32,
    /// Velocity of [`CellKind::MovingWall`] cells (lattice units).
    pub wall_velocity: [f32; 3],
    /// Density at [`CellKind::Outlet`] cells (lattice units).
    pub outlet_density: f32,
    /// Velocity of [`CellKind::Inlet`] cells (lattice units).
    pub inlet_velocity: [f32; 3],
    pub _pad: u32,
}

// SAFETY: `#[repr(C)]` struct of 4-byte f32/u32 fields only (no padding, no pointers), passed by
// value to the stream-collide kernels.
#[cfg(all(feature = "cuda", not(target_arch = "nvptx64")))]
unsafe impl cudarc::driver::DeviceRepr for LbmParams {}

/// Relaxes moments `m` toward `eq`: order-2 shear moments with `shear`, the order-2 trace with
/// `bulk`, and each moment of order 3 to 6 with `high(value, equilibrium)`. Orders 0 and 1 are
/// left for the caller (conserved).
#[inline(always)]
pub(crate) fn relax_moments(
    m: &mut [f32; Q],
    eq: &[f32; Q],
    shear: f32,
    bulk: f32,
    high: impl Fn(f32, f32) -> f32,
) {
    unroll!(i in [0, 1, 2] => {
        let k = [mi(1, 1, 0), mi(1, 0, 1), mi(0, 1, 1)][i];
        m[k] += shear * (eq[k] - m[k]);
    });
    let (xx, yy, zz) = (m[mi(2, 0, 0)], m[mi(0, 2, 0)], m[mi(0, 0, 2)]);
    let (exx, eyy, ezz) = (eq[mi(2, 0, 0)], eq[mi(0, 2, 0)], eq[mi(0, 0, 2)]);
    let (d1, e1) = (xx - yy, exx - eyy);
    let (d2, e2) = (xx - zz, exx - ezz);
    let (t, et) = (xx + yy + zz, exx + eyy + ezz);
    let d1 = d1 + shear * (e1 - d1);
    let d2 = d2 + shear * (e2 - d2);
    let t = t + bulk * (et - t);
    let xx = (d1 + d2 + t) * (1.0 / 3.0);
    m[mi(2, 0, 0)] = xx;
    m[mi(0, 2, 0)] = xx - d1;
    m[mi(0, 0, 2)] = xx - d2;
    for_q!(k => {
        if moments::order(k) >= 3 {
            let w = high(m[k], eq[k]);
            m[k] += w * (eq[k] - m[k]);
        }
    });
}

/// Collides 27 populations with collision model `MODEL` ([`BGK`], [`RM_MRT`], [`ACM_MRT`]) and
/// Guo forcing: `f + S/2 -> collide -> + S/2`. Returns `(rho, u)`.
#[inline(always)]
pub fn collide<const MODEL: u32>(f: &mut [f32; Q], p: &LbmParams) -> (f32, [f32; 3]) {
    let (rho, j) = moments::density_momentum(f);
    let u = moments::velocity(rho, j, p.force);
    if p.has_force != 0 {
        forcing::add_half_source(f, u, p.force);
    }
    match MODEL {
        BGK => bgk::collide(f, rho, u, &p.rates),
        RM_MRT => rm_mrt::collide(f, rho, u, &p.rates),
        _ => acm_mrt::collide(f, rho, u, &p.rates),
    }
    if p.has_force != 0 {
        forcing::add_half_source(f, u, p.force);
    }
    (rho, u)
}

/// The full update of one cell, pull scheme (Krüger et al. 2017, Sec. 13.3.2): gather the 27
/// populations from the neighbours `x - c_q` of `src` (post-collision of the previous step),
/// applying the boundary of any non-fluid neighbour; collide; store to `dst` at the cell itself;
/// optionally store the fields. Non-fluid cells only write their prescribed fields. `flags` must
/// carry the [`boundary::NEAR_BOUNDARY`] bits ([`boundary::mark_near_boundary`]).
///
/// The GPU splits the same work in two kernels: [`stream_collide_interior`] over all cells
/// (fluid cells without non-fluid neighbours: few registers, no boundary code) and this function
/// over a list of the other cells.
///
/// # Safety
/// `cell < lattice.cells()`; `flags` holds `cells` bytes, `src` and `dst` `27 cells` floats
/// (`dst` not aliasing `src`), `fields` `4 cells` floats when `store_fields != 0`. Each call
/// writes only the slots of `cell`, so calls for different cells may run concurrently.
#[inline(always)]
pub unsafe fn stream_collide_cell<const MODEL: u32>(
    p: &LbmParams,
    cell: usize,
    flags: *const u8,
    src: *const f32,
    dst: *mut f32,
    fields: *mut f32,
) {
    let n = p.lattice.cells();
    let flag = *flags.add(cell);
    if flag & KIND_MASK != FLUID {
        if p.store_fields != 0 {
            let (rho, u) = boundary_fields(p, flag);
            store_fields(fields, n, cell, rho, u);
        }
        return;
    }
    let mut f = if flag & NEAR_BOUNDARY == 0 {
        gather_interior(p, cell, src)
    } else {
        gather_with_boundaries(p, cell, flags, src)
    };
    let (rho, u) = collide::<MODEL>(&mut f, p);
    store_populations(dst, n, cell, &f);
    if p.store_fields != 0 {
        store_fields(fields, n, cell, rho, u);
    }
}

/// [`stream_collide_cell`] for interior fluid cells only (byte exactly [`CellKind::Fluid`]);
/// returns at once for every other cell, which [`stream_collide_cell`] handles from a list.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
pub unsafe fn stream_collide_interior<const MODEL: u32>(
    p: &LbmParams,
    cell: usize,
    flags: *const u8,
    src: *const f32,
    dst: *mut f32,
    fields: *mut f32,
) {
    if *flags.add(cell) != FLUID {
        return;
    }
    let n = p.lattice.cells();
    let mut f = gather_interior(p, cell, src);
    let (rho, u) = collide::<MODEL>(&mut f, p);
    store_populations(dst, n, cell, &f);
    if p.store_fields != 0 {
        store_fields(fields, n, cell, rho, u);
    }
}

/// Pulls the 27 populations of a cell whose neighbours are all fluid.
///
/// # Safety
/// `src` holds `27 n` floats, `cell < n`.
#[inline(always)]
unsafe fn gather_interior(p: &LbmParams, cell: usize, src: *const f32) -> [f32; Q] {
    let n = p.lattice.cells();
    let o = p.lattice.pull_offsets(cell);
    let mut f = [0.0f32; Q];
    for_q!(q => {
        let c = velocity(q);
        let nb = o[0][(c[0] + 1) as usize] + o[1][(c[1] + 1) as usize] + o[2][(c[2] + 1) as usize];
        f[q] = *src.add(q * n + nb as usize);
    });
    f
}

/// Pulls the 27 populations of a cell next to non-fluid cells: fluid neighbours are pulled,
/// boundary neighbours apply their condition.
///
/// # Safety
/// As [`stream_collide_cell`].
#[inline(always)]
unsafe fn gather_with_boundaries(
    p: &LbmParams,
    cell: usize,
    flags: *const u8,
    src: *const f32,
) -> [f32; Q] {
    let n = p.lattice.cells();
    let o = p.lattice.pull_offsets(cell);
    let mut kinds = [0u8; Q];
    let mut mask = 0u32;
    for_q!(q => {
        let c = velocity(q);
        let nb = o[0][(c[0] + 1) as usize] + o[1][(c[1] + 1) as usize] + o[2][(c[2] + 1) as usize];
        kinds[q] = *flags.add(nb as usize) & KIND_MASK;
        mask |= 1 << kinds[q];
    });
    // Own velocity for the outlet (from this cell's post-collision populations).
    let mut u_own = [0.0f32; 3];
    if mask & (1 << OUTLET) != 0 {
        let mut own = [0.0f32; Q];
        for_q!(q => {
            own[q] = *src.add(q * n + cell);
        });
        let (rho, j) = moments::density_momentum(&own);
        let h = [-p.force[0], -p.force[1], -p.force[2]];
        u_own = moments::velocity(rho, j, h);
    }
    let mut f = [0.0f32; Q];
    for_q!(q => {
        let c = velocity(q);
        let nb = o[0][(c[0] + 1) as usize] + o[1][(c[1] + 1) as usize] + o[2][(c[2] + 1) as usize];
        f[q] = if kinds[q] == FLUID {
            *src.add(q * n + nb as usize)
        } else {
            let f_out = *src.add(opposite(q) * n + cell);
            match CellKind::from_u8(kinds[q]) {
                CellKind::MovingWall => moving_bounce_back(q, f_out, p.wall_velocity),
                CellKind::Inlet => moving_bounce_back(q, f_out, p.inlet_velocity),
                CellKind::Outlet => anti_bounce_back(q, f_out, p.outlet_density, u_own),
                _ => f_out,
            }
        };
    });
    f
}

/// Writes the 27 populations of `cell` to a structure-of-arrays buffer of `27 n` floats.
///
/// # Safety
/// `f_buf` holds `27 n` floats and `cell < n`.
#[inline(always)]
pub unsafe fn store_populations(f_buf: *mut f32, n: usize, cell: usize, f: &[f32; Q]) {
    for_q!(q => {
        *f_buf.add(q * n + cell) = f[q];
    });
}

/// The fields reported for a non-fluid cell: density 1 (outlet: its density), its velocity.
#[inline(always)]
pub fn boundary_fields(p: &LbmParams, kind: u8) -> (f32, [f32; 3]) {
    match CellKind::from_u8(kind) {
        CellKind::MovingWall => (1.0, p.wall_velocity),
        CellKind::Inlet => (1.0, p.inlet_velocity),
        CellKind::Outlet => (p.outlet_density, [0.0; 3]),
        _ => (1.0, [0.0; 3]),
    }
}

/// Writes `rho, ux, uy, uz` of `cell` to a fields buffer of `4 n` floats (structure of arrays).
///
/// # Safety
/// `fields` holds `4 n` floats and `cell < n`.
#[inline(always)]
pub unsafe fn store_fields(fields: *mut f32, n: usize, cell: usize, rho: f32, u: [f32; 3]) {
    *fields.add(cell) = rho;
    *fields.add(n + cell) = u[0];
    *fields.add(2 * n + cell) = u[1];
    *fields.add(3 * n + cell) = u[2];
}

/// Initial populations of a cell: the equilibrium of `(rho, u)` (second order). Stored as the
/// post-collision state of step 0.
#[inline(always)]
pub fn initial_populations(rho: f32, u: [f32; 3]) -> [f32; Q] {
    equilibrium::equilibria(rho, u)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(force: [f32; 3]) -> LbmParams {
        LbmParams {
            lattice: Lattice::new(1, 1, 1),
            store_fields: 0,
            rates: Rates {
                shear: 1.7,
                bulk: 1.2,
                high: 1.1,
                lambda: 1e-2,
            },
            force,
            has_force: (force != [0.0; 3]) as u32,
            wall_velocity: [0.0; 3],
            outlet_density: 1.0,
            inlet_velocity: [0.0; 3],
            _pad: 0,
        }
    }

    /// A non-equilibrium state: equilibrium of (rho, u) plus a deterministic perturbation.
    fn perturbed() -> [f32; Q] {
        let mut f = initial_populations(1.02, [0.05, -0.03, 0.02]);
        for (q, v) in f.iter_mut().enumerate() {
            *v *= 1.0 + 0.03 * (((q * 13) % 7) as f32 - 3.0) / 3.0;
        }
        f
    }

    fn conserved(model: u32, force: [f32; 3]) {
        let p = params(force);
        let mut f = perturbed();
        let (rho0, j0) = moments::density_momentum(&f);
        let (rho, u) = match model {
            BGK => collide::<BGK>(&mut f, &p),
            RM_MRT => collide::<RM_MRT>(&mut f, &p),
            _ => collide::<ACM_MRT>(&mut f, &p),
        };
        let (rho1, j1) = moments::density_momentum(&f);
        assert!(
            (rho1 - rho0).abs() < 2e-6,
            "mass, model {model}: {rho0} -> {rho1}"
        );
        assert!((rho - rho0).abs() < 1e-7);
        for a in 0..3 {
            // Momentum changes by exactly the force (Guo): j1 = j0 + F.
            let want = j0[a] + force[a];
            assert!(
                (j1[a] - want).abs() < 2e-6,
                "momentum {a}, model {model}: {} vs {want}",
                j1[a]
            );
            assert!((u[a] - (j0[a] + 0.5 * force[a]) / rho0).abs() < 1e-6);
        }
        assert!(f.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn every_collision_conserves_mass_and_momentum() {
        for model in [BGK, RM_MRT, ACM_MRT] {
            conserved(model, [0.0; 3]);
            conserved(model, [1e-4, -2e-4, 5e-5]);
        }
    }

    #[test]
    fn equilibrium_moments() {
        let (rho, u) = (1.03f32, [0.06f32, -0.04, 0.025]);
        let f = initial_populations(rho, u);
        let mut m = f;
        moments::to_moments(&mut m, [0.0; 3]);
        assert!((m[mi(0, 0, 0)] - rho).abs() < 1e-6);
        let ja = [mi(1, 0, 0), mi(0, 1, 0), mi(0, 0, 1)];
        for a in 0..3 {
            assert!((m[ja[a]] - rho * u[a]).abs() < 1e-6);
        }
        // Pi_ab = rho (u_a u_b + delta_ab / 3).
        assert!((m[mi(2, 0, 0)] - rho * (u[0] * u[0] + 1.0 / 3.0)).abs() < 1e-6);
        assert!((m[mi(1, 1, 0)] - rho * u[0] * u[1]).abs() < 1e-6);
        assert!((m[mi(0, 1, 1)] - rho * u[1] * u[2]).abs() < 1e-6);
    }

    #[test]
    fn equilibrium_is_a_fixed_point_of_bgk() {
        let p = params([0.0; 3]);
        let f0 = initial_populations(1.0, [0.03, 0.01, -0.02]);
        let mut f = f0;
        collide::<BGK>(&mut f, &p);
        for q in 0..Q {
            assert!((f[q] - f0[q]).abs() < 1e-7);
        }
    }

    #[test]
    fn mrt_with_equal_rates_is_bgk_with_product_equilibrium() {
        // With every rate omega, RM-MRT and central-moment MRT both relax all moments toward the
        // same product-form equilibrium: they must agree (ACM with a huge lambda = plain CM-MRT).
        let omega = 1.6;
        let mut p = params([0.0; 3]);
        p.rates = Rates {
            shear: omega,
            bulk: omega,
            high: omega,
            lambda: 1e12,
        };
        let mut a = perturbed();
        let mut b = a;
        collide::<RM_MRT>(&mut a, &p);
        collide::<ACM_MRT>(&mut b, &p);
        for q in 0..Q {
            assert!((a[q] - b[q]).abs() < 2e-6, "q = {q}: {} vs {}", a[q], b[q]);
        }
    }

    #[test]
    fn acm_rate_adapts_between_shear_and_one() {
        let w = acm_mrt::adaptive_rate(1.8, 0.0, 1e-2);
        assert_eq!(w, 1.8);
        let w = acm_mrt::adaptive_rate(1.8, 1e3, 1e-2);
        assert!((w - 1.0).abs() < 1e-4);
        let w = acm_mrt::adaptive_rate(1.8, -1e-2, 1e-2);
        assert!((w - 1.4).abs() < 1e-6);
    }
}
