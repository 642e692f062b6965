//! The binned scatter, per thread, for the CPU reference and the kernels alike: the samples
//! sorted by their bin node (the gather's bins per band cell, [`super::gather`]'s `ib_bin`,
//! scan and `ib_place`), each thread taking a run of consecutive entries of the sorted list.
//! Consecutive samples of one bin have the same 8 stencil nodes (except where a non-periodic
//! face moves a sample's bin node up, [`super::stencil::bin_node`]), so the thread looks their
//! band values up once per stretch of equal nodes ([`super::stages`]' node lookup), computes
//! each sample's force as the scatter does ([`super::stages::sample_force`]), sums the
//! samples' fixed-point terms per node and component in registers and adds each sum once. The
//! terms are the scatter's, and fixed-point sums do not depend on their order or grouping: the
//! band force and the solids' forces equal the scatter's bit for bit.

use super::band::{pass_index_of, to_fixed};
use super::forcing::spread_term;
use super::stages::{place, sample_force_at, Nodes, Reaction, NO_NODE};
use super::stencil::Stencil;
use crate::lbm::abi::IbForceBins;

/// A key equal for two raw stencils exactly when they have the same nodes: which nodes are
/// present and the lattice cell of the first present one (which, with its offset in the
/// stencil, fixes the node below the sample and so every other node). `u64::MAX` is no
/// stencil's key.
#[inline(always)]
fn node_key(stencil: &Stencil) -> u64 {
    let mut first = 0;
    for_8!(i => {
        let node = 7 - i;
        if stencil.present >> node & 1 != 0 {
            first = stencil.cells[node];
        }
    });
    (stencil.present as u64) << 32 | first as u64
}

/// Per node, the fixed-point sums of the terms of the samples seen since the last [`flush`].
type NodeSums = [[u64; 3]; 8];

/// Hands each node's sums to `add` (`k`: the index in the band's `pass` buffer of its x sum, y
/// and z at `super::band::BRICK_CELLS` and twice that after it), skipping nodes that are not fluid band
/// cells and sums that are zero, and zeroes them.
#[inline(always)]
fn flush(nodes: &Nodes, sums: &mut NodeSums, add: &mut impl FnMut(usize, [u64; 3])) {
    for_8!(i => {
        if nodes.cell[i] != NO_NODE && (sums[i][0] | sums[i][1] | sums[i][2]) != 0 {
            add(pass_index_of(nodes.cell[i], 0), sums[i]);
        }
        sums[i] = [0; 3];
    });
}

/// Stage `ib_force_bins`, the entries `lo..hi` of the samples' sorted list (a thread's run of
/// [`crate::lbm::abi::FORCE_RUN`] entries, or all of them on the CPU): every sample as
/// [`super::stages::sample_force`] computes it, `reaction(r)` for each (in list order), and the
/// spread of each stretch of samples with the same nodes handed to `add(k, sums)` once
/// ([`flush`]'s `k`; a stretch cut by the end of the run is added in two parts).
///
/// # Safety
/// The buffers as documented on [`IbForceBins`], the list sorted this step; `lo <= hi <=`
/// samples; every entry is handled once.
#[inline(always)]
pub unsafe fn run_force(
    a: &IbForceBins,
    lo: usize,
    hi: usize,
    mut add: impl FnMut(usize, [u64; 3]),
    mut reaction: impl FnMut(&Reaction),
) {
    let f = &a.force;
    let mut key = u64::MAX;
    let mut nodes = Nodes::NONE;
    let mut sums: NodeSums = [[0; 3]; 8];
    for k in lo..hi {
        let s = f.order.read(k) as usize;
        let sample = place(&f.samples, &f.solids, s);
        let stencil = Stencil::new(&f.domain, sample.0);
        let this = node_key(&stencil);
        if this != key {
            flush(&nodes, &mut sums, &mut add);
            nodes = Nodes::new(f, &stencil);
            key = this;
        }
        let (r, spread) = sample_force_at(f, k, s, sample, stencil, &nodes);
        if let Some(sp) = spread {
            for_8!(i => {
                if let Some((_, v)) = spread_term(&sp.stencil, sp.g, i) {
                    for (c, vc) in v.iter().enumerate() {
                        sums[i][c] = sums[i][c].wrapping_add(to_fixed(*vc));
                    }
                }
            });
        }
        reaction(&r);
    }
    flush(&nodes, &mut sums, &mut add);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::ib::stencil::Domain;
    use crate::lbm::layout::Lattice;

    #[test]
    fn node_keys_are_equal_exactly_when_the_nodes_are() {
        let lattice = Lattice::new(5, 3, 4);
        let mut state = 0x2545_f491_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            state >> 8
        };
        for periodic in [[false; 3], [true, false, true], [true; 3]] {
            let domain = Domain::new(lattice, periodic);
            let n = [5.0, 3.0, 4.0];
            let stencils: std::vec::Vec<Stencil> = (0..300)
                .map(|_| {
                    Stencil::new(
                        &domain,
                        [0, 1, 2].map(|a| (next() % ((n[a] as u32 + 2) * 4)) as f32 * 0.25 - 1.0),
                    )
                })
                .filter(|s| s.present != 0)
                .collect();
            assert!(stencils.len() > 100);
            let mut equal = 0;
            for a in &stencils {
                for b in &stencils {
                    let same = a.present == b.present
                        && (0..8).all(|i| a.present >> i & 1 == 0 || a.cells[i] == b.cells[i]);
                    assert_eq!(node_key(a) == node_key(b), same);
                    equal += same as usize;
                }
            }
            assert!(equal > 2 * stencils.len(), "{equal}");
        }
    }
}
