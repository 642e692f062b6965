//! What a layer riding the fluid (the coupled flocks) needs of a rank's slab: the fields
//! around the slab, the rank that owns a point, and pushes routed to every rank whose layers
//! their stencils reach (a push near a slab face adds to the neighbour's cells as well).

use super::{as_bytes, extent, Piece, SlabFluid, SlabPlan};
use crate::fluid::{Fields, FluidError};
use murmur_common::lbm::ib::stencil::Domain;
use murmur_common::lbm::Lattice;

/// The fluid's fields around one rank's slab ([`SlabFluid::fields_around`]).
pub struct AroundSlab {
    /// The fields of the slab's owned layers with up to two layers of each neighbouring slab
    /// (the output's [`Piece`]).
    pub fields: Fields,
    /// The stencils' domain over `fields`' lattice: whole-lattice positions map onto it.
    pub domain: Domain,
    /// The whole lattice and the slab axis.
    pub global: Lattice,
    pub axis: usize,
    /// Whole-lattice layer of the first layer of `fields` (below 0: wrapped).
    pub first: i64,
}

impl AroundSlab {
    /// The whole-lattice cell of `local`, a cell of `fields`' lattice.
    pub fn global_cell(&self, local: usize) -> usize {
        let (x, y, z) = self.fields.lattice.coords(local);
        let mut c = [x, y, z];
        let n = extent(&self.global, self.axis) as i64;
        c[self.axis] = (self.first + c[self.axis] as i64).rem_euclid(n) as u32;
        self.global.index(c[0], c[1], c[2])
    }
}

impl SlabPlan {
    /// The rank owning whole-lattice layer `layer` (`< extent`) along the slab axis.
    pub fn owner(&self, layer: u32) -> usize {
        self.ranges
            .partition_point(|r| r.end <= layer)
            .min(self.size() - 1)
    }

    /// The two layers along the slab axis of the stencil of a point at `p` on that axis (the
    /// layers below and above it, wrapped where the axis wraps; `None` past a wall).
    fn stencil_layers(&self, p: f32) -> [Option<u32>; 2] {
        let n = extent(&self.global, self.axis) as i64;
        let below = if p.is_finite() { p.floor() as i64 } else { 0 };
        [below, below + 1].map(|k| {
            if self.ib_periodic[self.axis] {
                Some(k.rem_euclid(n) as u32)
            } else {
                (0..n).contains(&k).then_some(k as u32)
            }
        })
    }

    /// The rank owning a point at `pos` (lattice coordinates): the owner of its stencil's
    /// lower layer along the slab axis (clamped into a lattice that does not wrap), as
    /// [`Domain::owns`] answers for a sample.
    pub fn owner_of(&self, pos: [f32; 3]) -> usize {
        let n = extent(&self.global, self.axis) as i64;
        let p = pos[self.axis];
        let k = if p.is_finite() { p.floor() as i64 } else { 0 };
        let k = if self.ib_periodic[self.axis] {
            k.rem_euclid(n)
        } else {
            k.clamp(0, n - 1)
        };
        self.owner(k as u32)
    }

    /// Whether a stencil at `pos` reaches a layer of `rank`.
    fn reaches(&self, pos: [f32; 3], rank: usize) -> bool {
        self.stencil_layers(pos[self.axis])
            .iter()
            .flatten()
            .any(|&k| self.owner(k) == rank)
    }
}

/// Bytes of a routed push: its position, then its three totals.
const PUSH_BYTES: usize = 12 + 24;

impl SlabFluid {
    /// The fields around this rank's slab for a layer riding the fluid: its owned layers with
    /// up to two layers of each neighbour (across the wrap where the stencils wrap along the
    /// slab axis). Collective.
    pub fn fields_around(&mut self) -> Result<AroundSlab, FluidError> {
        let axis = self.plan.axis;
        let periodic = self.plan.ib_periodic[axis];
        let piece = Piece::of(&self.plan, self.rank(), periodic);
        let fields = self.piece(periodic)?;
        let domain = Domain::new(fields.lattice, self.plan.ib_periodic).slab(
            axis as u32,
            piece.first as i32,
            extent(&self.plan.global, axis),
        );
        Ok(AroundSlab {
            fields,
            domain,
            global: self.plan.global,
            axis,
            first: piece.first,
        })
    }

    /// The pushes this rank's next step takes: its own (`pos` in whole-lattice coordinates,
    /// three fixed-point totals each) and every other rank's whose stencil reaches one of its
    /// layers. Each rank then spreads the whole stencil of each push it holds over the nodes
    /// of its slab (the ghost layers' fluid cells count as fluid), so the terms on either side
    /// of a slab face are those of one lattice and add up to the push exactly. Collective.
    pub(super) fn route_pushes(
        &self,
        pos: &[[f32; 3]],
        total: &[u64],
    ) -> Result<(Vec<[f32; 3]>, Vec<u64>), FluidError> {
        if total.len() != 3 * pos.len() {
            return Err(FluidError::WrongSize {
                what: format!("{} pushes with {} totals", pos.len(), total.len()),
            });
        }
        let me = self.rank();
        let plan = &self.plan;
        let mut out = Vec::new();
        for (p, t) in pos.iter().zip(total.chunks_exact(3)) {
            let others = plan
                .stencil_layers(p[plan.axis])
                .iter()
                .flatten()
                .any(|&k| plan.owner(k) != me);
            if others {
                out.extend_from_slice(as_bytes(p));
                out.extend_from_slice(as_bytes(t));
            }
        }
        let all = self.comm.all_gather(&out)?;
        let (mut pos, mut total) = (pos.to_vec(), total.to_vec());
        for (peer, m) in all.iter().enumerate() {
            if peer == me {
                continue;
            }
            let bad = || FluidError::WrongSize {
                what: format!("the pushes rank {peer} sent"),
            };
            if !m.len().is_multiple_of(PUSH_BYTES) {
                return Err(bad());
            }
            // Each record: the position (3 f32) then the totals (3 u64), in memory order
            // ([`as_bytes`]); the chunks are whole records, so the slices are exact.
            for r in m.chunks_exact(PUSH_BYTES) {
                let word = |at: usize| f32::from_ne_bytes([r[at], r[at + 1], r[at + 2], r[at + 3]]);
                let p = [word(0), word(4), word(8)];
                if plan.reaches(p, me) {
                    pos.push(p);
                    total.extend(r[12..].chunks_exact(8).map(|b| {
                        u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
                    }));
                }
            }
        }
        Ok((pos, total))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::lbm::CollisionModel;

    #[test]
    fn every_point_has_one_owner_and_its_stencil_reaches_it() {
        let setup =
            crate::fluid::scene::taylor_green(16, 12, 0.05, 0.01, CollisionModel::Bgk).unwrap();
        let plan = SlabPlan::new(&setup, 3).unwrap();
        let a = plan.axis;
        for i in 0..64 {
            let mut p = [3.0f32, 3.0, 3.0];
            // Across the whole axis and past both ends (the axis wraps).
            p[a] = -1.0 + i as f32 * 0.3;
            let owner = plan.owner_of(p);
            assert!(plan.reaches(p, owner), "{p:?}");
            let layer = (p[a].floor() as i64).rem_euclid(16) as u32;
            assert!(plan.ranges[owner].contains(&layer), "{p:?}");
        }
        // A point between the last layer of rank 0 and the first of rank 1 reaches both.
        let mut p = [3.0f32; 3];
        p[a] = plan.ranges[0].end as f32 - 0.5;
        assert!(plan.reaches(p, 0) && plan.reaches(p, 1) && !plan.reaches(p, 2));
    }
}
