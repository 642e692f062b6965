//! Argument structs of the lattice kernels (`kernels-gpu/src/lbm.rs`). The CPU reference builds
//! the same structs over its own buffers and calls the same cell functions ([`super::stream`]).

use super::band::{BandMut, BandRef};
use super::collide::Model;
use super::ib::{Domain, SolidState, MAX_SOLIDS};
use super::params::LbmParams;
use crate::kernel::{DevSlice, DevSliceMut, Variant};

/// `lbm_init`: the populations of every cell = the equilibrium of its `rho, ux, uy, uz`
/// (`fields`: four arrays of `cells` floats), as the post-collision state of step 0.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Init {
    pub lattice: super::Lattice,
    pub _pad: u32,
    pub fields: DevSlice<f32>,
    pub f: DevSliceMut<f32>,
}

/// One stream-collide step of model `M`: pull from `src` (the previous step's populations),
/// collide, write `dst` (a different buffer), and the fields `rho, ux, uy, uz` when
/// `p.store_fields != 0`. `flags` holds one cell byte per cell, with the near-boundary bits.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StreamCollide<M> {
    pub p: LbmParams,
    pub flags: DevSlice<u8>,
    pub src: DevSlice<f32>,
    pub dst: DevSliceMut<f32>,
    pub fields: DevSliceMut<f32>,
    /// The immersed-boundary force of band cells ([`BandRef::NONE`] without solids).
    pub band: BandRef,
    pub model: Variant<M>,
}

/// The same step for interior cells, adding the band's immersed-boundary force (the plain
/// interior kernel ignores the band, so scenes without solids pay nothing for it).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct StreamCollideBand<M> {
    pub step: StreamCollide<M>,
}

/// The same step over the listed cells `cells` (non-fluid cells and the fluid cells next to
/// them), boundary conditions applied while pulling.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Boundary<M> {
    pub step: StreamCollide<M>,
    pub cells: DevSlice<u32>,
}

impl<M: Model> StreamCollide<M> {
    /// The step's buffers and parameters, for model `M`.
    pub fn new(
        p: LbmParams,
        flags: DevSlice<u8>,
        src: DevSlice<f32>,
        dst: DevSliceMut<f32>,
        fields: DevSliceMut<f32>,
    ) -> Self {
        StreamCollide {
            p,
            flags,
            src,
            dst,
            fields,
            band: BandRef::NONE,
            model: Variant::NEW,
        }
    }

    /// The same step, adding the band's immersed-boundary force.
    pub const fn with_band(mut self, band: BandRef) -> Self {
        self.band = band;
        self
    }
}

/// Values of one solid in a step's force record: force x, y, z, torque x, y, z (the reaction
/// on the solid, lattice units, about its centre), each a fixed-point sum
/// ([`RECORD_SCALE`]) so the total does not depend on the order samples add in.
pub const FORCE_RECORD: usize = 6;
/// Floats of one step's force record: [`FORCE_RECORD`] per solid slot.
pub const RECORD_FLOATS: usize = FORCE_RECORD * MAX_SOLIDS;
/// Scale of the fixed-point force records: `2^32` (resolution `2.3e-10`, totals up to `2^31`).
pub const RECORD_SCALE: f32 = (1u64 << 32) as f32;

/// The solids' states of one step, by value (see [`SolidState`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Solids {
    pub states: [SolidState; MAX_SOLIDS],
}

/// The surface samples: `body[s] = (x, y, z, dA)`, the offset from the solid's centre in its
/// own frame (cells) and the sample's area (cells^2); `solid[s]` its solid's index.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SampleSet {
    pub body: DevSlice<[f32; 4]>,
    pub solid: DevSlice<u32>,
}

/// `ib_clear`: the band table to empty, its counter and this step's force record (a
/// [`RECORD_FLOATS`] slice of the ring) to zero.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbClear {
    pub table: DevSliceMut<u32>,
    pub counter: DevSliceMut<u32>,
    pub record: DevSliceMut<u64>,
}

/// `ib_mark`: one thread per sample claims the bricks of its stencil's fluid nodes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbMark {
    pub domain: Domain,
    pub flags: DevSlice<u8>,
    pub samples: SampleSet,
    pub band: BandMut,
    pub solids: Solids,
}

/// `ib_velocity`: one thread per band cell (`capacity x 64`) stores `rho` and `u*` from the
/// populations `src` it pulls this step.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbVelocity {
    pub p: LbmParams,
    pub flags: DevSlice<u8>,
    pub src: DevSlice<f32>,
    pub band: BandMut,
}

/// `ib_force`: one thread per sample, pass `pass` of `passes`: interpolation, force density,
/// the spreading (`spread`, below), the sample's force (`3` floats per sample, `sample_force`)
/// and the solid's reaction summed into `record` (this step's [`RECORD_FLOATS`]).
///
/// Thread `t` takes sample `order[t]` (`order` empty: sample `t`). With `spread` =
/// [`SPREAD_SCATTER`] it adds its force into the band's pass sums; with [`SPREAD_STORE`] it
/// writes `at[t] = (X_s, scale_s)` (the renormalisation factor, 0 when no node is left) and
/// `force[t] = (F_s dA_s, 0)` for the gather ([`IbGather`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbForce {
    pub domain: Domain,
    pub pass: u32,
    pub passes: u32,
    pub spread: u32,
    pub _pad: u32,
    pub flags: DevSlice<u8>,
    pub samples: SampleSet,
    pub order: DevSlice<u32>,
    pub band: BandMut,
    pub record: DevSliceMut<u64>,
    pub sample_force: DevSliceMut<f32>,
    pub at: DevSliceMut<[f32; 4]>,
    pub force: DevSliceMut<[f32; 4]>,
    pub solids: Solids,
}

/// [`IbForce::spread`]: atomic fixed-point adds into the band's pass sums.
pub const SPREAD_SCATTER: u32 = 0;
/// [`IbForce::spread`]: each sample's position and force stored for the gather.
pub const SPREAD_STORE: u32 = 1;

/// How the gather bins samples ([`super::gather`]). `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bins {
    /// [`BIN_CELL`] or [`BIN_BLOCK`].
    pub kind: u32,
    /// Block side `l`, cells ([`BIN_BLOCK`]).
    pub side: u32,
    /// Blocks along x, y, z ([`BIN_BLOCK`]).
    pub dims: [u32; 3],
    /// Bins: band cells (`capacity x 64`) or blocks. Bin `count` holds the samples that reach
    /// no node; the counts and starts have `count + 2` entries (the last start is the total).
    pub count: u32,
}

/// [`Bins::kind`]: one bin per band cell (slot `x 64 +` cell), a sample in the bin of its
/// [`super::ib::bin_node`].
pub const BIN_CELL: u32 = 0;
/// [`Bins::kind`]: one bin per block of `side^3` lattice cells, a sample in the block of its
/// bin node.
pub const BIN_BLOCK: u32 = 1;

/// `ib_bin`: one thread per sample: its bin into `key`, its place among the bin's samples
/// (the count before it, an atomic add) into `rank`, the bin's count raised.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbBin {
    pub domain: Domain,
    pub bins: Bins,
    pub samples: SampleSet,
    pub band: BandMut,
    pub counts: DevSliceMut<u32>,
    pub key: DevSliceMut<u32>,
    pub rank: DevSliceMut<u32>,
    pub solids: Solids,
}

/// `ib_place`: one thread per sample: `list[starts[key] + rank] = sample` (the counting
/// sort's scatter; `starts` the exclusive scan of the counts).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbPlace {
    pub key: DevSlice<u32>,
    pub rank: DevSlice<u32>,
    pub starts: DevSlice<u32>,
    pub list: DevSliceMut<u32>,
}

/// `ib_gather`: one thread per band cell (`capacity x 64`), after each `ib_force`: sums the
/// forces of the samples in the bins its stencil support reaches into the pass's force, then
/// updates as `ib_update` does. The entries of bin `b` are `starts[b]..starts[b + 1]`; entry
/// `k` is sample place `list[k]` in `at` / `force` (`list` empty: place `k`, the samples stored
/// in bin order).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbGather {
    pub domain: Domain,
    pub bins: Bins,
    pub band: BandMut,
    pub starts: DevSlice<u32>,
    pub list: DevSlice<u32>,
    pub at: DevSlice<[f32; 4]>,
    pub force: DevSlice<[f32; 4]>,
}

/// `ib_update`: one thread per band cell, between passes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbUpdate {
    pub band: BandMut,
}

/// `lbm_health`: one thread per cell reduces the fields of fluid cells into `out`
/// ([`super::health`]).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Health {
    pub lattice: super::Lattice,
    pub bounds: super::health::Bounds,
    pub flags: DevSlice<u8>,
    pub fields: DevSlice<f32>,
    pub out: DevSliceMut<u32>,
}
