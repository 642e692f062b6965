//! The immersed-boundary stages of one step, per thread, for the CPU reference and the kernels
//! alike (the math is [`super::stencil`] and [`super::forcing`], the band storage [`super::band`]). In step order:
//!
//! 1. [`clear`]: empty the band table, reset its counter and this step's force record;
//! 2. [`mark`] (per sample): the solid's state gives the sample's position; every fluid node of
//!    its stencil puts its brick into the band;
//! 3. [`band_velocity`] (per band cell): `rho` and `u* = (j + F_ext / 2) / rho` from the
//!    populations the cell pulls this step (the velocity before this step's forcing), the
//!    force values zeroed;
//! 4. per multi-direct-forcing pass: [`sample_force`] (per sample: interpolate `u*` and `rho`,
//!    `F_s = 2 rho (u_b - u*)`, spread `F_s dA_s` into the band ([`spread_terms`]), add the
//!    reaction to the solid's force and torque) and [`band_update`] (per band cell: the pass's
//!    force into the step's, `u* += f / (2 rho)` for the next pass);
//! 5. the stream-collide step adds the band's force to the body force of band cells
//!    ([`super::band::BandRef::force`]).
//!
//! Spreading and the solid sums add into shared values: [`spread_terms`] and [`Reaction`] hand
//! the terms to the caller, which adds them (the kernels with atomics, a warp's or a block's
//! terms for one address summed first; the CPU in sample order).

use super::band::{
    band_cell, claim_at, claim_brick_at, from_fixed, pass_index, pass_index_of, slot, to_fixed,
    BRICK_CELLS,
};
use super::forcing::{
    force_density, interpolate_nodes, interpolate_scalar_nodes, spread_term, spread_total,
};
use super::stencil::{bin_node, Stencil};
use crate::lbm::abi::{
    IbClear, IbForce, IbMark, IbUpdate, IbVelocity, FORCE_RECORD, RECORD_SCALE, SPREAD_SCATTER,
};
use crate::lbm::access::Storage;
use crate::lbm::boundary::{FLUID, GHOST, KIND_MASK};
use crate::lbm::{moments, stream};

/// Stage `ib_clear`, element `i`: table entry `i`, the counter (thread 0) and force-record
/// value `i`.
///
/// # Safety
/// The buffers as documented on [`IbClear`]; each `i` is handled once.
#[inline(always)]
pub unsafe fn clear(a: &IbClear, i: usize) {
    if (i as u64) < a.table.len() {
        a.table.write(i, super::band::EMPTY);
    }
    if (i as u64) < a.counter.len() {
        a.counter.write(i, 0);
    }
    if (i as u64) < a.record.len() {
        a.record.write(i, 0);
    }
    if (i as u64) < a.reach.len() {
        a.reach.write(i, 0);
    }
}

/// Elements [`clear`] covers.
pub fn clear_items(a: &IbClear) -> u64 {
    let mut m = a.table.len();
    for n in [a.record.len(), a.counter.len(), a.reach.len()] {
        if n > m {
            m = n;
        }
    }
    m
}

/// The state of solid `i` (solid 0 for an index out of range). Selected with constant
/// indices: a runtime index into the by-value kernel argument would copy all states to local
/// memory on the GPU.
#[inline(always)]
pub fn state_of(solids: &crate::lbm::abi::Solids, i: usize) -> super::solid::SolidState {
    const _: () = assert!(super::solid::MAX_SOLIDS == 8);
    let mut st = solids.states[0];
    unroll!(k in [1, 2, 3, 4, 5, 6, 7] => {
        if i == k {
            st = solids.states[k];
        }
    });
    st
}

/// The world position, lever arm and area of sample `s`, and its solid's index.
///
/// # Safety
/// `s < samples.body.len()`.
#[inline(always)]
pub(super) unsafe fn place(
    samples: &crate::lbm::abi::SampleSet,
    solids: &crate::lbm::abi::Solids,
    s: usize,
) -> ([f32; 3], [f32; 3], f32, usize) {
    let b = samples.body.read(s);
    let solid = samples.solid.read(s) as usize;
    let state = &state_of(solids, solid);
    let arm = state.arm([b[0], b[1], b[2]]);
    let pos = [
        state.center[0] + arm[0],
        state.center[1] + arm[1],
        state.center[2] + arm[2],
    ];
    (pos, arm, b[3], solid)
}

/// Stage `ib_mark`, sample `s`: claims the bricks of its stencil's fluid nodes.
///
/// # Safety
/// The buffers as documented on [`IbMark`]; `s < samples`.
#[inline(always)]
pub unsafe fn mark(a: &IbMark, s: usize) {
    let (pos, _, _, _) = place(&a.samples, &a.solids, s);
    let stencil = Stencil::new(&a.domain, pos);
    unroll!(i in [0, 1, 2, 3, 4, 5, 6, 7] => {
        if stencil.is_present(i) && a.flags.read(stencil.cell(i)) & KIND_MASK == FLUID {
            claim_at(&a.band, stencil.node(i));
        }
    });
    // The gather bins samples by this node's band cell, so its brick joins the band even when
    // the node is a wall (its cells get `rho = 0` and take no force).
    if let Some(k) = bin_node(&a.domain, pos) {
        claim_brick_at(&a.band, k);
    }
}

/// Stage `ib_velocity`, element `i` of the band's cells (slot `i / 64`, cell `i % 64`; callers
/// take `i` below `used x 64`, later slots return at once):
/// `rho` and `u*` of the band cell, its forces zeroed; cells outside the lattice, not fluid or
/// not reached by a stencil this step get `rho = 0`, which the interpolation reads as absent.
///
/// # Safety
/// The buffers as documented on [`IbVelocity`]; each `i` is handled once.
#[inline(always)]
pub unsafe fn band_velocity<S: Storage>(a: &IbVelocity<S>, i: usize) {
    let band = &a.band;
    let s = (i / BRICK_CELLS) as u32;
    if s >= band.used() {
        return;
    }
    let local = i % BRICK_CELLS;
    let brick = band.brick_of.read(s as usize) as usize;
    let (mut rho, mut u) = (0.0f32, [0.0f32; 3]);
    // Only the cells a stencil reaches pull (the others keep `rho = 0`, read as absent).
    if let (true, Some(cell)) = (band.reached(brick, local), band.bricks.cell(brick, local)) {
        // A slab's ghost cells get their values from the neighbouring slab
        // ([`crate::lbm::halo::band_unpack`]): they cannot pull here.
        let flag = a.flags.read(cell);
        if flag & KIND_MASK == FLUID && flag != GHOST {
            let f = stream::pull_cell(&a.p, &a.pops, a.flags, a.f, cell);
            let (r, j) = moments::density_momentum(&f);
            rho = r;
            u = moments::velocity(r, j, a.p.force);
        }
    }
    band.set(s, slot::RHO, local, rho);
    for (c, &uc) in u.iter().enumerate() {
        band.set(s, slot::U + c, local, uc);
        band.set(s, slot::FORCE + c, local, 0.0);
        band.pass.write(pass_index(s, c, local), 0);
    }
}

/// What one sample adds to its solid: the reaction `-F_s dA_s` and its torque about the
/// solid's centre.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reaction {
    pub solid: u32,
    pub force: [f32; 3],
    pub torque: [f32; 3],
}

/// A node outside the band, absent, or not fluid, in [`Nodes::cell`].
pub const NO_NODE: u32 = u32::MAX;

/// The band values at a stencil's nodes, looked up once per pass: node `i`'s band cell
/// ([`band_cell`], [`NO_NODE`] unless the node is a fluid band cell with `rho > 0`), its `rho`
/// and `u*`. The nodes' loads do not depend on each other, so a thread has all of them in
/// flight at once (the table's 8 entries, then the pool's values).
pub(super) struct Nodes {
    pub(super) cell: [u32; 8],
    rho: [f32; 8],
    u: [[f32; 3]; 8],
}

impl Nodes {
    /// No node present (before a first lookup).
    pub(super) const NONE: Nodes = Nodes {
        cell: [NO_NODE; 8],
        rho: [0.0; 8],
        u: [[0.0; 3]; 8],
    };

    /// # Safety
    /// The buffers as documented on [`IbForce`]; the stencil's cells lie in the lattice.
    #[inline(always)]
    pub(super) unsafe fn new(a: &IbForce, stencil: &Stencil) -> Nodes {
        let band = &a.band;
        let mut n = Nodes {
            cell: [NO_NODE; 8],
            rho: [0.0; 8],
            u: [[0.0; 3]; 8],
        };
        for_8!(i => {
            if stencil.is_present(i) {
                let cell = stencil.cell(i);
                let fluid = a.flags.read(cell) & KIND_MASK == FLUID;
                if let Some((sl, local)) = band.slot_at(stencil.node(i)) {
                    let rho = band.get(sl, slot::RHO, local);
                    n.u[i] = [
                        band.get(sl, slot::U, local),
                        band.get(sl, slot::U + 1, local),
                        band.get(sl, slot::U + 2, local),
                    ];
                    if fluid && rho > 0.0 {
                        n.cell[i] = band_cell(sl, local);
                        n.rho[i] = rho;
                    }
                }
            }
        });
        n
    }
}

/// What a sample spreads in one pass of the scatter: its renormalised stencil, its nodes' band
/// cells and `g = F_s dA_s` ([`spread_terms`] hands out its terms).
#[derive(Clone, Copy, Debug)]
pub struct Spread {
    pub(super) stencil: Stencil,
    pub(super) cell: [u32; 8],
    pub(super) g: [f32; 3],
}

impl Spread {
    /// A key equal for two spreads exactly when their nodes are the same band cells (absent
    /// ones alike): the first present node's band cell and which nodes are present. The first
    /// present node and its offset in the stencil fix the node below the sample, and with it
    /// every other node, so the kernels may sum the terms of all 8 nodes over the lanes of one
    /// key ([`spread_terms`]). Never `u64::MAX`.
    #[inline(always)]
    pub fn group_key(&self) -> u64 {
        let present = self.stencil.present;
        // Node by node from the last (constant indices: a runtime index would put `cell` in
        // local memory on the GPU).
        let mut first = 0;
        for_8!(i => {
            let node = 7 - i;
            if present >> node & 1 != 0 {
                first = self.cell[node];
            }
        });
        (present as u64) << 32 | first as u64
    }
}

/// Stage `ib_force`, thread `t` (sample `order[t]`, or `t`), one pass: interpolates `u*` and
/// `rho` over the stencil's fluid band nodes (renormalised), computes `F_s = 2 rho (u_b - u*)`,
/// stores it for the gather ([`IbForce::spread`]) or returns what the sample spreads into the
/// band's fixed-point pass sums ([`spread_terms`]), adds the reaction `-F_s dA_s` to the
/// sample's record and returns it for the solid. A sample with no fluid node left exerts and
/// spreads nothing.
///
/// # Safety
/// The buffers as documented on [`IbForce`]; `t < samples`.
#[inline(always)]
pub unsafe fn sample_force(a: &IbForce, t: usize) -> (Reaction, Option<Spread>) {
    let s = if a.order.is_empty() {
        t
    } else {
        a.order.read(t) as usize
    };
    let sample = place(&a.samples, &a.solids, s);
    let stencil = Stencil::new(&a.domain, sample.0);
    let nodes = Nodes::new(a, &stencil);
    sample_force_at(a, t, s, sample, stencil, &nodes)
}

/// [`sample_force`] of sample `s` (thread `t`) placed at `sample` ([`place`]) with its raw
/// `stencil`, whose nodes' band values `nodes` holds (looked up once for the samples that
/// share them: [`super::binned`]).
///
/// # Safety
/// As [`sample_force`]; `nodes` looked up for a stencil with `stencil`'s nodes this pass.
#[inline(always)]
pub(super) unsafe fn sample_force_at(
    a: &IbForce,
    t: usize,
    s: usize,
    sample: ([f32; 3], [f32; 3], f32, usize),
    mut stencil: Stencil,
    nodes: &Nodes,
) -> (Reaction, Option<Spread>) {
    let (pos, arm, area, solid) = sample;
    let store = a.spread != SPREAD_SCATTER;
    let mut reaction = Reaction {
        solid: solid as u32,
        ..Reaction::default()
    };
    let Some(scale) = stencil.renormalise_nodes(|i| nodes.cell[i] != NO_NODE) else {
        if store {
            a.at.write(t, [pos[0], pos[1], pos[2], 0.0]);
        }
        return (reaction, None);
    };
    let u_star = interpolate_nodes(&stencil, |i| nodes.u[i]);
    let rho = interpolate_scalar_nodes(&stencil, |i| nodes.rho[i]);
    let u_b = state_of(&a.solids, solid).velocity_at(arm);
    let f_s = force_density(rho, u_b, u_star);
    let spread = if store {
        a.at.write(t, [pos[0], pos[1], pos[2], scale]);
        // The product `spread_total` forms: the gather's terms equal the scatter's bit for bit.
        a.force
            .write(t, [f_s[0] * area, f_s[1] * area, f_s[2] * area, 0.0]);
        None
    } else {
        Some(Spread {
            stencil,
            cell: nodes.cell,
            g: spread_total(f_s, area),
        })
    };
    let g = [-f_s[0] * area, -f_s[1] * area, -f_s[2] * area];
    for (c, &gc) in g.iter().enumerate() {
        let p = a.sample_force.at(3 * s + c);
        let before = if a.pass == 0 { 0.0 } else { *p };
        *p = before + gc;
    }
    if !a.domain.owns(pos) {
        // Another slab counts this sample's reaction ([`super::stencil::Domain::owns`]).
        return (reaction, spread);
    }
    reaction.force = g;
    reaction.torque = [
        arm[1] * g[2] - arm[2] * g[1],
        arm[2] * g[0] - arm[0] * g[2],
        arm[0] * g[1] - arm[1] * g[0],
    ];
    (reaction, spread)
}

/// The fixed-point terms a sample spreads ([`sample_force`]'s `Spread`; `None` spreads
/// nothing), node by node: `term(Some((k, v)))` for a present node, `k` the index in the band's
/// `pass` buffer of its x sum (y and z follow at `BRICK_CELLS` and `2 BRICK_CELLS`) and `v` the
/// three terms to add there (wrapping), else `term(None)`. `term` is called exactly 8 times
/// whatever the sample, so that a warp's lanes can combine their terms in it.
#[inline(always)]
pub fn spread_terms(spread: Option<&Spread>, mut term: impl FnMut(Option<(usize, [u64; 3])>)) {
    spread_nodes(spread, |_, t| {
        term(t.map(|(cell, v)| (pass_index_of(cell, 0), v)));
    });
}

/// [`spread_terms`] node by node with the node's index `i` (constant in each call) and its band
/// cell: `term(i, Some((cell, v)))` for a present node (component `c`'s sum at
/// [`pass_index_of`]`(cell, c)`), else `term(i, None)`.
#[inline(always)]
pub fn spread_nodes(spread: Option<&Spread>, mut term: impl FnMut(usize, Option<(u32, [u64; 3])>)) {
    for_8!(i => {
        let t = match spread {
            Some(sp) => spread_term(&sp.stencil, sp.g, i).map(|(_, v)| {
                (sp.cell[i], [to_fixed(v[0]), to_fixed(v[1]), to_fixed(v[2])])
            }),
            None => None,
        };
        term(i, t);
    });
}

/// Index of value `c` (force x, y, z, torque x, y, z) of `solid` in a step's force record.
#[inline(always)]
pub const fn record_index(solid: u32, c: usize) -> usize {
    solid as usize * FORCE_RECORD + c
}

/// A reaction value in the record's fixed point.
#[inline(always)]
pub fn record_fixed(v: f32) -> u64 {
    ((v * RECORD_SCALE) as i64) as u64
}

/// A record's fixed-point total as a float (`f64`: the host reads it).
#[inline(always)]
pub fn record_value(v: u64) -> f64 {
    (v as i64) as f64 / RECORD_SCALE as f64
}

/// Stage `ib_update`, element `i` of the band's cells (as [`band_velocity`]), after each pass:
/// the pass's fixed-point force `f` joins the step's force and `u* += f / (2 rho)` for the next
/// pass.
///
/// # Safety
/// The buffers as documented on [`IbUpdate`]; each `i` is handled once.
#[inline(always)]
pub unsafe fn band_update(a: &IbUpdate, i: usize) {
    let band = &a.band;
    let s = (i / BRICK_CELLS) as u32;
    if s >= band.used() {
        return;
    }
    let local = i % BRICK_CELLS;
    let rho = band.get(s, slot::RHO, local);
    if rho <= 0.0 {
        return;
    }
    let mut sums = [0u64; 3];
    for (c, v) in sums.iter_mut().enumerate() {
        let k = pass_index(s, c, local);
        *v = band.pass.read(k);
        band.pass.write(k, 0);
    }
    apply_pass(band, s, local, rho, sums);
}

/// The pass's fixed-point force `sums` of band cell `local` of slot `s` (density `rho > 0`)
/// joins the step's force, and `u* += f / (2 rho)`.
///
/// # Safety
/// As [`super::band::BandMut::set`].
#[inline(always)]
pub(super) unsafe fn apply_pass(
    band: &super::band::BandMut,
    s: u32,
    local: usize,
    rho: f32,
    sums: [u64; 3],
) {
    let h = 0.5 / rho;
    for (c, &v) in sums.iter().enumerate() {
        let f = from_fixed(v);
        band.set(
            s,
            slot::U + c,
            local,
            band.get(s, slot::U + c, local) + h * f,
        );
        band.set(
            s,
            slot::FORCE + c,
            local,
            band.get(s, slot::FORCE + c, local) + f,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lbm::ib::stencil::Domain;
    use crate::lbm::layout::Lattice;
    use std::vec::Vec;

    /// A sample's spread with band cells standing in for the nodes' lattice cells, the nodes
    /// whose cell is a multiple of 5 dropped as if not fluid.
    fn spread_at(domain: &Domain, pos: [f32; 3]) -> Option<Spread> {
        let mut stencil = Stencil::new(domain, pos);
        stencil.renormalise(|cell| cell % 5 != 0)?;
        let mut cell = [NO_NODE; 8];
        for (i, c) in cell.iter_mut().enumerate() {
            if stencil.is_present(i) {
                *c = stencil.cell(i) as u32;
            }
        }
        Some(Spread {
            stencil,
            cell,
            g: [1.0; 3],
        })
    }

    #[test]
    fn group_keys_are_equal_exactly_when_the_nodes_are() {
        let lattice = Lattice::new(5, 3, 4);
        let mut state = 0x9e37_79b9_u32;
        let mut next = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            state >> 8
        };
        for periodic in [[false; 3], [true, false, true], [true; 3]] {
            let domain = Domain::new(lattice, periodic);
            // Positions from a cell outside the lattice on either side, on a grid of quarter
            // cells (so that many samples share their nodes) and a few off it.
            let n = [5.0, 3.0, 4.0];
            let spreads: Vec<Spread> = (0..400)
                .filter_map(|k| {
                    let pos = [0, 1, 2].map(|a| {
                        let q = (next() % ((n[a] as u32 + 2) * 4)) as f32 * 0.25 - 1.0;
                        if k % 7 == 0 {
                            q + 0.1
                        } else {
                            q
                        }
                    });
                    spread_at(&domain, pos)
                })
                .collect();
            assert!(spreads.len() > 100, "{} spreads", spreads.len());
            let mut equal = 0;
            for a in &spreads {
                assert_ne!(a.group_key(), u64::MAX);
                for b in &spreads {
                    let same = a.stencil.present == b.stencil.present && a.cell == b.cell;
                    assert_eq!(a.group_key() == b.group_key(), same, "{a:?} {b:?}");
                    equal += same as usize;
                }
            }
            assert!(
                equal > 2 * spreads.len(),
                "too few pairs share their nodes: {equal}"
            );
        }
    }
}
