//! ACM-MRT in two kernels: the paper's remedy for the register pressure of its central-moment
//! collision, kept as a measured alternative to the fused kernel (`murmur fluid bench --split`,
//! interior cells of a periodic box). The first kernel pulls a cell's populations, takes its
//! density and velocity (with the body force, as [`super::collide_with`] does) and stores its
//! central moments; the second relaxes them ([`acm_mrt::relax`]), transforms back and stores
//! the populations. The values are those of the fused update, bit for bit: the same functions
//! in the same order, the moments passing through memory as the same `f32`s.
//!
//! The price is traffic: [`VALUES`] floats per cell written and read again (240 B) on top of the
//! fused update's 217 B (FP32).

use super::abi::{SplitMoments, SplitRelax};
use super::access::Storage;
use super::{acm_mrt, forcing, moments, CellKind, Q};

/// Floats per cell between the two kernels: the 27 central moments, then `rho` and `u`.
pub const VALUES: usize = Q + 4;

/// First kernel: pull, moments, store them at `scratch[k * cells + cell]`.
///
/// # Safety
/// `cell < lattice.cells()`, `flags` holds the cell bytes, `f` the populations, `scratch`
/// [`VALUES`]` x cells` floats.
#[inline(always)]
pub unsafe fn moments_stage<S: Storage>(a: &SplitMoments<S>, cell: usize) {
    if a.flags.read(cell) != CellKind::Fluid as u8 {
        return;
    }
    let n = a.p.lattice.cells();
    let mut f = a.pops.pull(a.f, cell);
    let force = a.p.force;
    let (rho, j) = moments::density_momentum(&f);
    let u = moments::velocity(rho, j, force);
    if a.p.has_force != 0 {
        forcing::add_half_source(&mut f, u, force);
    }
    moments::to_moments(&mut f, u);
    for_q!(k => {
        a.scratch.write(k * n + cell, f[k]);
    });
    a.scratch.write(Q * n + cell, rho);
    a.scratch.write((Q + 1) * n + cell, u[0]);
    a.scratch.write((Q + 2) * n + cell, u[1]);
    a.scratch.write((Q + 3) * n + cell, u[2]);
}

/// Second kernel: relax the stored moments, back to populations, store them.
///
/// # Safety
/// As [`moments_stage`], with `dst` the populations this step writes.
#[inline(always)]
pub unsafe fn relax_stage<S: Storage>(a: &SplitRelax<S>, cell: usize) {
    if a.flags.read(cell) != CellKind::Fluid as u8 {
        return;
    }
    let n = a.p.lattice.cells();
    let mut m = [0.0f32; Q];
    for_q!(k => {
        m[k] = a.scratch.read(k * n + cell);
    });
    let rho = a.scratch.read(Q * n + cell);
    let u = [
        a.scratch.read((Q + 1) * n + cell),
        a.scratch.read((Q + 2) * n + cell),
        a.scratch.read((Q + 3) * n + cell),
    ];
    acm_mrt::relax(&mut m, rho, &a.p.rates);
    moments::from_moments(&mut m, u);
    let force = a.p.force;
    if a.p.has_force != 0 {
        forcing::add_half_source(&mut m, u, force);
    }
    a.pops.store(a.dst, cell, &m);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::{DevSlice, DevSliceMut};
    use crate::lbm::abi::StreamCollide;
    use crate::lbm::access::Populations;
    use crate::lbm::stream::stream_collide_interior;
    use crate::lbm::{AcmMrt, Fp32, Lattice, Layout, LbmParams, Rates};
    use crate::rng::uniform;
    use std::vec::Vec;

    /// One step of a periodic box of random populations by the fused interior update and by
    /// the two split stages: the same bits, with and without a body force and limiter.
    #[test]
    fn split_stages_store_the_fused_updates_bits() {
        let lattice = Lattice::new(6, 5, 4);
        let n = lattice.cells();
        for (seed, force, high) in [(1u64, 0.0f32, 1.0f32), (2, 3e-5, 1.0), (3, 0.0, 1.6)] {
            for layout in [Layout::SOA, Layout { alpha: 4 }] {
                let mut p = LbmParams::new(lattice, Rates::from_viscosity(0.01));
                p.force = [force, -0.5 * force, 0.0];
                p.has_force = (force != 0.0) as u32;
                p.rates.high = high;
                let pops = Populations::<Fp32>::new(lattice, layout, 1);
                let mut f: Vec<f32> = (0..pops.len())
                    .map(|i| 0.02 + 0.05 * uniform(seed, i as u64))
                    .collect();
                let flags = std::vec![CellKind::Fluid as u8; n];
                let mut fused = std::vec![0.0f32; pops.len()];
                let mut split = std::vec![0.0f32; pops.len()];
                let mut scratch = std::vec![0.0f32; VALUES * n];
                // SAFETY: the views cover the vectors, which outlive them; one cell at a time.
                unsafe {
                    let flags = DevSlice::from_raw(flags.as_ptr(), n as u64);
                    let fv = DevSliceMut::from_raw(f.as_mut_ptr(), f.len() as u64);
                    let a = StreamCollide::<AcmMrt, Fp32>::new(p, pops, flags, fv).with_dst(
                        DevSliceMut::from_raw(fused.as_mut_ptr(), fused.len() as u64),
                    );
                    let sv = DevSliceMut::from_raw(scratch.as_mut_ptr(), scratch.len() as u64);
                    let m = SplitMoments {
                        p,
                        pops,
                        flags,
                        f: fv.as_const(),
                        scratch: sv,
                    };
                    let r = SplitRelax {
                        p,
                        pops,
                        flags,
                        scratch: sv.as_const(),
                        dst: DevSliceMut::from_raw(split.as_mut_ptr(), split.len() as u64),
                    };
                    for cell in 0..n {
                        stream_collide_interior(&a, cell);
                        moments_stage(&m, cell);
                    }
                    for cell in 0..n {
                        relax_stage(&r, cell);
                    }
                }
                let differ = fused
                    .iter()
                    .zip(&split)
                    .filter(|(x, y)| x.to_bits() != y.to_bits())
                    .count();
                assert_eq!(
                    differ, 0,
                    "seed {seed} {layout:?}: split differs from fused"
                );
            }
        }
    }
}
