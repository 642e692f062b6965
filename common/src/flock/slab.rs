//! The flock split across ranks along x (slabs), written once for the CPU ranks and the kernels:
//! which rank owns a position, and what an own boid's new position means for the exchange of
//! the next step (stay; stay and go to a neighbour as halo; migrate; migrate and stay here as
//! halo). Also the slab kernels' argument structs (`kernels-gpu/src/flock.rs`).
//!
//! Rank `k` owns the boids whose x lies in `[lo, hi)` (the first rank's `lo` is `-inf`, the
//! last rank's `hi` is `+inf`, so every position has exactly one owner, `+scale` included).
//! The neighbour search is not periodic (CIS 565), so a halo crosses only the faces between
//! two ranks, never the wrap at `±scale`; migration does cross the wrap (a boid leaving the
//! last slab at `+scale` reappears at `-scale` in the first).
//!
//! After an update, an own boid at new x is, with `halo` the halo width (at least the largest
//! rule distance) and a face "shared" when a rank lies behind it:
//! - in `[lo, hi)`: kept; also sent to the previous rank when `x < lo + halo` (shared face at
//!   `lo`), to the next when `x >= hi - halo` (shared face at `hi`);
//! - in a neighbour's slab: sent there (the face it crossed decides when both neighbours are
//!   the same rank, as with two ranks); kept here as a halo boid too when it is still within
//!   `halo` of a shared face, so the neighbour need not send it back;
//! - anywhere else: lost (it jumped a whole slab: the slab width check forbids it).
//!
//! So a rank's halo of the next step is complete once each rank has sent its stayers near a
//! shared face: the neighbour's new boids that came from here are kept here, and boids that
//! reach the neighbour from its other side land at least `width - step >= halo` away.

use super::{Body, FlockParams, Grid};
use crate::kernel::{DevSlice, DevSliceMut};
use crate::Vec3;

/// The id of an empty entry ([`Body::id`]): an entry the update left for a boid that migrated
/// away or a halo boid of the last step; binning skips it. Flocks on several ranks hold fewer
/// than `u32::MAX` boids, so no boid has this id.
pub const HOLE: u32 = u32::MAX;

/// One rank's slab and its neighbours' (x ranges, `[lo, hi)`), as the kernels see them.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Slab {
    pub lo: f32,
    pub hi: f32,
    pub prev_lo: f32,
    pub prev_hi: f32,
    pub next_lo: f32,
    pub next_hi: f32,
    /// Halo width (scene units): at least the largest rule distance.
    pub halo: f32,
    /// 1 when the face at `lo` is shared with the previous rank (not the domain's edge).
    pub prev_face: u32,
    /// 1 when the face at `hi` is shared with the next rank.
    pub next_face: u32,
    /// Send slot of the next rank: 1, or 0 with two ranks (the previous rank is the next too).
    /// The previous rank's slot is 0.
    pub next_slot: u32,
}

/// What happens to an own boid after its update (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fate {
    /// Stays in this rank's arrays (as an own boid, or as a halo boid of the next step).
    pub keep: bool,
    /// Sent to the rank of send slot 0 / 1.
    pub send: [bool; 2],
    /// Owned by no rank within one slab: an error.
    pub lost: bool,
}

impl Slab {
    /// True when this rank owns a boid at `x`.
    #[inline(always)]
    pub fn owns(&self, x: f32) -> bool {
        self.lo <= x && x < self.hi
    }

    /// What happens to an own boid whose new x is `x`.
    #[inline(always)]
    pub fn fate(&self, x: f32) -> Fate {
        let mut f = Fate::default();
        let (mut to_prev, mut to_next) = (false, false);
        if self.owns(x) {
            f.keep = true;
            to_prev = self.prev_face != 0 && x < self.lo + self.halo;
            to_next = self.next_face != 0 && x >= self.hi - self.halo;
        } else {
            let prev = self.prev_lo <= x && x < self.prev_hi;
            let next = self.next_lo <= x && x < self.next_hi;
            // With two ranks both neighbours are one rank: the face crossed decides.
            let go_next = if x >= self.hi { next } else { next && !prev };
            if go_next {
                to_next = true;
                f.keep = self.next_face != 0 && x < self.hi + self.halo;
            } else if prev {
                to_prev = true;
                f.keep = self.prev_face != 0 && x >= self.lo - self.halo;
            } else {
                f.lost = true;
            }
        }
        f.send[0] = to_prev || (to_next && self.next_slot == 0);
        f.send[1] = to_next && self.next_slot == 1;
        f
    }
}

/// Words of [`SlabSends::tally`].
pub mod tally {
    /// Boids claimed for send slot 0 and 1 (may exceed the buffers: the host checks).
    pub const SENT: usize = 0;
    /// Boids that left for no neighbour.
    pub const LOST: usize = 2;
    /// Own boids found (the start).
    pub const KEPT: usize = 3;
    /// Entries the update does not keep: halo boids and boids that left. Counted instead of
    /// the kept ones, which are nearly all entries: a warp whose entries are all kept (every
    /// warp, on one rank) makes no atomic on this one word.
    pub const DROPPED: usize = 4;
    /// Words in all.
    pub const WORDS: usize = 5;
}

/// Where a slab kernel puts the boids it sends: per send slot (0: the previous rank, 1: the
/// next) bodies and velocities (`len` = the buffers' capacity), and the tally ([`tally`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SlabSends {
    pub body: [DevSliceMut<Body>; 2],
    pub vel: [DevSliceMut<Vec3>; 2],
    pub tally: DevSliceMut<u32>,
}

/// `slab_init`: the CIS 565 start of boids `base..base + n` (the numbers of `init_flock`);
/// those this rank owns are appended to `body` / `vel` (ids travel), claimed through
/// `tally[KEPT]`. With empty buffers it only counts them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct InitSlab {
    pub n: u32,
    pub scale: f32,
    pub base: u64,
    pub seed: u64,
    pub slab: Slab,
    pub body: DevSliceMut<Body>,
    pub vel: DevSliceMut<Vec3>,
    pub tally: DevSliceMut<u32>,
}

/// `slab_route`: the start's own boids `0..n` (all kept): each counted into its cell, and sent
/// as halo where [`Slab::fate`] says.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RouteSlab {
    pub n: u32,
    pub grid: Grid,
    pub slab: Slab,
    pub body: DevSlice<Body>,
    pub vel: DevSlice<Vec3>,
    pub counts: DevSliceMut<u32>,
    pub sends: SlabSends,
}

/// `slab_scatter`: `scatter_cells` over entries `0..n` that skips [`HOLE`]s: each boid claims
/// the next entry of its cell in `cell_end` and moves there.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ScatterSlab {
    pub n: u32,
    pub grid: Grid,
    pub body_in: DevSlice<Body>,
    pub vel_in: DevSlice<Vec3>,
    pub cell_end: DevSliceMut<u32>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
}

/// `update_boids_slab`: `update_boids_coherent` over own + halo boids in cell order, for own
/// boids only: entry `i` of the outputs gets the new state of an own boid that [`Slab::fate`]
/// keeps (counted into its new cell), else a [`HOLE`]; boids sent go to `sends`; the other
/// entries (holes now) are tallied in `tally[DROPPED]`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UpdateSlab {
    pub n: u32,
    pub grid: Grid,
    pub params: FlockParams,
    pub slab: Slab,
    pub cell_end: DevSlice<u32>,
    pub body: DevSlice<Body>,
    pub vel: DevSlice<Vec3>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
    pub counts: DevSliceMut<u32>,
    pub sends: SlabSends,
}

/// `slab_unpack`: boids `0..n` received from a neighbour appended (`body_out` / `vel_out` start
/// where they go) and counted into their cells.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct UnpackSlab {
    pub n: u32,
    pub grid: Grid,
    pub body_in: DevSlice<Body>,
    pub vel_in: DevSlice<Vec3>,
    pub body_out: DevSliceMut<Body>,
    pub vel_out: DevSliceMut<Vec3>,
    pub counts: DevSliceMut<u32>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rank `rank` of `size` equal slabs of `[-100, 100)`, halo 5.
    fn slab(rank: usize, size: usize) -> Slab {
        let w = 200.0 / size as f32;
        let lo = |k: usize| {
            if k == 0 {
                f32::NEG_INFINITY
            } else {
                -100.0 + k as f32 * w
            }
        };
        let hi = |k: usize| {
            if k + 1 == size {
                f32::INFINITY
            } else {
                -100.0 + (k + 1) as f32 * w
            }
        };
        let (p, n) = ((rank + size - 1) % size, (rank + 1) % size);
        Slab {
            lo: lo(rank),
            hi: hi(rank),
            prev_lo: lo(p),
            prev_hi: hi(p),
            next_lo: lo(n),
            next_hi: hi(n),
            halo: 5.0,
            prev_face: (rank > 0) as u32,
            next_face: (rank + 1 < size) as u32,
            next_slot: if size == 2 { 0 } else { 1 },
        }
    }

    #[test]
    fn two_ranks_share_one_slot_and_one_face() {
        let s0 = slab(0, 2);
        // A stayer near the shared face at 0 goes to rank 1 as halo; near -100 (the wrap) not.
        assert_eq!(
            s0.fate(-2.0),
            Fate {
                keep: true,
                send: [true, false],
                lost: false
            }
        );
        assert_eq!(s0.fate(-99.0).send, [false, false]);
        // Crossing the face at 0: migrates and stays as halo.
        let f = s0.fate(0.1);
        assert!(f.keep && f.send[0] && !f.lost);
        // Wrapping from -100 to +100: migrates to rank 1, not kept (no halo across the wrap).
        let f = s0.fate(100.0);
        assert!(!f.keep && f.send[0]);
        let s1 = slab(1, 2);
        assert!(s1.fate(-0.1).keep && s1.fate(-0.1).send[0]);
        let f = s1.fate(-100.0);
        assert!(!f.keep && f.send[0]);
        assert!(s1.owns(100.0) && !s0.owns(100.0) && s0.owns(-100.0));
    }

    #[test]
    fn four_ranks_route_by_slab() {
        let s0 = slab(0, 4);
        // +100 belongs to rank 3, rank 0's previous rank (slot 0).
        let f = s0.fate(100.0);
        assert_eq!((f.keep, f.send, f.lost), (false, [true, false], false));
        let f = s0.fate(-50.0);
        assert_eq!((f.keep, f.send), (true, [false, true]));
        let s2 = slab(2, 4);
        assert_eq!(s2.fate(-0.5).send, [true, false]);
        assert!(s2.fate(-0.5).keep);
        assert_eq!(s2.fate(50.5).send, [false, true]);
        // Two slabs away: lost.
        assert!(s2.fate(-60.0).lost);
        let s3 = slab(3, 4);
        let f = s3.fate(-100.0);
        assert_eq!((f.keep, f.send), (false, [false, true]));
    }
}
