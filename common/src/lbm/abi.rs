//! Argument structs of the lattice kernels (`kernels-gpu/src/lbm.rs`). The CPU reference builds
//! the same structs over its own buffers and calls the same cell functions ([`super::stream`]).

use super::access::{Populations, Storage};
use super::collide::Model;
use super::ib::band::{BandMut, BandRef};
use super::ib::solid::{SolidState, MAX_SOLIDS};
use super::ib::stencil::Domain;
use super::init::Initial;
use super::params::LbmParams;
use crate::kernel::{DevSlice, DevSliceMut, Variant};

/// `lbm_init_*`: every cell's populations = the equilibrium of its initial fields
/// ([`Initial`]), stored as the post-collision state of step 0 (`pops` at step 0).
#[repr(C)]
pub struct Init<S: Storage> {
    pub pops: Populations<S>,
    pub initial: Initial,
    pub flags: DevSlice<u8>,
    pub f: DevSliceMut<S::Elem>,
}

/// How the interior stream-collide kernels map threads to cells: the z layers `z0..z1` (`z1`
/// clamped to the lattice; a slab's face layers run apart from its middle), one thread per cell.
/// `#[repr(C)]`: part of the kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellLaunch {
    /// 0: a 1D grid, one thread per cell number from the first cell of layer `z0`; 1: a 3D grid
    /// of 3D blocks, the cell at `(block index * block size + thread index)` per axis, `z0`
    /// added along z (threads outside the layers idle).
    pub three_d: u32,
    pub z0: u32,
    pub z1: u32,
    pub _pad: u32,
}

impl CellLaunch {
    /// Every cell, one thread per cell number.
    pub const FLAT: CellLaunch = CellLaunch {
        three_d: 0,
        z0: 0,
        z1: u32::MAX,
        _pad: 0,
    };

    /// The same launch over layers `z0..z1` only.
    pub const fn layers(mut self, z0: u32, z1: u32) -> CellLaunch {
        self.z0 = z0;
        self.z1 = z1;
        self
    }

    /// The layers `z0..z1` clamped to `nz` (empty when `z1 <= z0`).
    #[inline(always)]
    pub const fn range(&self, nz: u32) -> (u32, u32) {
        let z1 = if self.z1 < nz { self.z1 } else { nz };
        let z0 = if self.z0 < z1 { self.z0 } else { z1 };
        (z0, z1)
    }
}

impl Default for CellLaunch {
    fn default() -> Self {
        CellLaunch::FLAT
    }
}

/// One stream-collide step of model `M` on populations stored as `S`: each fluid cell pulls
/// from `f` (the previous step's state, `pops` at this step's parity), collides and writes to
/// `dst`: the same buffer when streaming in place (into the slots it read), the other copy
/// when pulling. `flags` holds one cell byte per cell, with the
/// near-boundary bits; `outlet_u` the last collision velocity of the listed cells next to an
/// outlet (three floats per list entry; empty without outlets).
#[repr(C)]
pub struct StreamCollide<M, S: Storage> {
    pub p: LbmParams,
    pub pops: Populations<S>,
    pub flags: DevSlice<u8>,
    pub f: DevSliceMut<S::Elem>,
    pub dst: DevSliceMut<S::Elem>,
    /// The immersed-boundary force of band cells ([`BandRef::NONE`] without solids).
    pub band: BandRef,
    pub outlet_u: DevSliceMut<f32>,
    /// With WALE ([`super::wale`]): the velocity every fluid cell's collision left the step
    /// before (three arrays of `cells` floats), read at the neighbours; empty without.
    pub velocity: DevSlice<f32>,
    /// With WALE: where this step's collision velocities go (the other copy of the field).
    pub velocity_out: DevSliceMut<f32>,
    pub launch: CellLaunch,
    pub model: Variant<M>,
}

/// The same step for interior cells, adding the band's immersed-boundary force (the plain
/// interior kernel ignores the band, so scenes without solids pay nothing for it).
#[repr(C)]
pub struct StreamCollideBand<M, S: Storage> {
    pub step: StreamCollide<M, S>,
}

/// The same step for the interior cells and the outlet layer's (byte `FLUID` or
/// `FLUID | SPONGE`), each with its rates, adding the band's immersed-boundary force: the
/// interior kernel of a scene with an outlet layer.
#[repr(C)]
pub struct StreamCollideLayer<M, S: Storage> {
    pub step: StreamCollide<M, S>,
}

/// The same step for the outlet layer's interior cells (byte `FLUID | SPONGE`), with their
/// rates and the band's force ([`crate::lbm::stream_collide_sponge`]); every other cell returns
/// at once. One thread per cell of the box `lo .. lo + dims` (x fastest), the box of the
/// layer's cells (within a range of z layers).
#[repr(C)]
pub struct StreamCollideSponge<M, S: Storage> {
    pub step: StreamCollide<M, S>,
    pub lo: [u32; 3],
    pub dims: [u32; 3],
}

impl<M, S: Storage> StreamCollideSponge<M, S> {
    /// Threads the launch needs: the cells of the box.
    pub const fn threads(&self) -> u64 {
        self.dims[0] as u64 * self.dims[1] as u64 * self.dims[2] as u64
    }

    /// The lattice cell of thread `i` (`None` past the box).
    #[inline(always)]
    pub fn cell(&self, i: u64) -> Option<usize> {
        if i >= self.threads() {
            return None;
        }
        let (dx, dy) = (self.dims[0] as u64, self.dims[1] as u64);
        let x = self.lo[0] + (i % dx) as u32;
        let y = self.lo[1] + (i / dx % dy) as u32;
        let z = self.lo[2] + (i / (dx * dy)) as u32;
        Some(self.step.p.lattice.index(x, y, z))
    }
}

/// The same step over the listed fluid cells `cells` (those next to non-fluid cells),
/// boundary conditions applied while pulling; list entry `i` keeps its outlet velocity at
/// `outlet_u[3 i..]`.
#[repr(C)]
pub struct Boundary<M, S: Storage> {
    pub step: StreamCollide<M, S>,
    pub cells: DevSlice<u32>,
}

/// `lbm_fields_*`: `rho, ux, uy, uz` of every cell into `fields` (four arrays of `cells`
/// floats) from the populations the last step left ([`super::stream::cell_fields`]).
#[repr(C)]
pub struct FieldsArgs<S: Storage> {
    pub p: LbmParams,
    pub pops: Populations<S>,
    pub flags: DevSlice<u8>,
    pub f: DevSlice<S::Elem>,
    pub band: BandRef,
    pub fields: DevSliceMut<f32>,
}

/// What the lattice kernels' argument structs share: copyable whatever the model and storage
/// (derive would require `M: Copy`), debug output without the buffers' element types.
macro_rules! lattice_args {
    ($($name:ident [$($gen:tt)*] [$($arg:tt)*];)*) => {$(
        impl<$($gen)*> Clone for $name<$($arg)*> {
            #[inline(always)]
            fn clone(&self) -> Self {
                *self
            }
        }
        impl<$($gen)*> Copy for $name<$($arg)*> {}
        impl<$($gen)*> core::fmt::Debug for $name<$($arg)*> {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    )*};
}
pub(crate) use lattice_args;

lattice_args! {
    Init [S: Storage] [S];
    StreamCollide [M, S: Storage] [M, S];
    StreamCollideBand [M, S: Storage] [M, S];
    StreamCollideSponge [M, S: Storage] [M, S];
    Boundary [M, S: Storage] [M, S];
    StreamCollideLayer [M, S: Storage] [M, S];
    FieldsArgs [S: Storage] [S];
    Health [S: Storage] [S];
    IbVelocity [S: Storage] [S];
    Halo [S: Storage] [S];
    HaloPack [S: Storage] [S];
    HaloUnpack [S: Storage] [S];
}

impl<M: Model, S: Storage> StreamCollide<M, S> {
    /// The step's buffers and parameters, for model `M`, streaming in place.
    pub fn new(
        p: LbmParams,
        pops: Populations<S>,
        flags: DevSlice<u8>,
        f: DevSliceMut<S::Elem>,
    ) -> Self {
        StreamCollide {
            p,
            pops,
            flags,
            f,
            dst: f,
            band: BandRef::NONE,
            outlet_u: DevSliceMut::empty(),
            velocity: DevSlice::empty(),
            velocity_out: DevSliceMut::empty(),
            launch: CellLaunch::FLAT,
            model: Variant::NEW,
        }
    }

    /// The same step, adding the band's immersed-boundary force.
    pub const fn with_band(mut self, band: BandRef) -> Self {
        self.band = band;
        self
    }

    /// The same step writing to `dst` (pull streaming: the other copy).
    pub const fn with_dst(mut self, dst: DevSliceMut<S::Elem>) -> Self {
        self.dst = dst;
        self
    }

    /// The same step, launched as `launch` says.
    pub const fn with_launch(mut self, launch: CellLaunch) -> Self {
        self.launch = launch;
        self
    }

    /// The same step over the z layers `z0..z1` only.
    pub const fn with_layers(mut self, z0: u32, z1: u32) -> Self {
        self.launch = self.launch.layers(z0, z1);
        self
    }

    /// The same step reading WALE's velocity field of the step before from `velocity` and
    /// writing this step's to `velocity_out` ([`super::wale`]).
    pub const fn with_velocity(
        mut self,
        velocity: DevSlice<f32>,
        velocity_out: DevSliceMut<f32>,
    ) -> Self {
        self.velocity = velocity;
        self.velocity_out = velocity_out;
        self
    }

    /// The same step, keeping outlet velocities in `outlet_u`.
    pub const fn with_outlet_u(mut self, outlet_u: DevSliceMut<f32>) -> Self {
        self.outlet_u = outlet_u;
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

/// `ib_clear`: the band table to empty, its counter, its reached cells and this step's force
/// record (a [`RECORD_FLOATS`] slice of the ring) to zero.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbClear {
    pub table: DevSliceMut<u32>,
    pub counter: DevSliceMut<u32>,
    pub record: DevSliceMut<u64>,
    /// The band's reached cells ([`super::ib::band::BandMut::reach`]).
    pub reach: DevSliceMut<u64>,
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
/// populations `f` it pulls this step (`pops` at this step's parity).
#[repr(C)]
pub struct IbVelocity<S: Storage> {
    pub p: LbmParams,
    pub pops: Populations<S>,
    pub flags: DevSlice<u8>,
    pub f: DevSlice<S::Elem>,
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

/// `ib_force_bins`: the binned scatter ([`super::ib::binned`]), pass `force.pass`: thread `t`
/// (grid-stride) takes entries `t FORCE_RUN ..` of the samples' list sorted by bin
/// (`force.order`, the gather's counting sort, [`Bins::cells`]); each sample's force as
/// [`IbForce`] computes it (`force.spread` is [`SPREAD_SCATTER`]), the terms of consecutive
/// samples that share their nodes summed in the thread and added with one atomic per node and
/// component. Its own struct so that the kernel table names its entry point.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbForceBins {
    pub force: IbForce,
}

/// Entries of the sorted sample list one `ib_force_bins` thread takes.
pub const FORCE_RUN: usize = 8;

/// Warps of an `ib_force` block: the kernel sums its block's reactions in shared memory
/// ([`ForceShared`]) and adds them to the record once per block, since every sample of a solid
/// adds to the same [`FORCE_RECORD`] words.
pub const FORCE_BLOCK_WARPS: usize = 4;
/// Threads of an `ib_force` block.
pub const FORCE_BLOCK: u32 = 32 * FORCE_BLOCK_WARPS as u32;
/// Words of a lane's row of spread terms in [`ForceShared::terms`]: 8 nodes x 3 components and
/// one of padding, so that the 16 lanes of a half-warp storing the same column hit 16 distinct
/// pairs of banks (a row of 25 `u64` is 50 banks: `18 lane mod 32` is distinct and even for
/// lanes 0-15).
pub const TERM_STRIDE: usize = 25;

/// Shared memory of one `ib_force` block: per warp the solid all its samples belong to
/// (`u32::MAX` when they mix solids or the warp has none) and its reaction's fixed-point sums;
/// per lane the band cells of its stencil's 8 nodes and its 24 fixed-point spread terms (node
/// `i`, component `c` in column `3 i + c`), which the lanes of the warp sum over each group of
/// samples with the same nodes.
#[repr(C)]
pub struct ForceShared {
    pub solid: [u32; FORCE_BLOCK_WARPS],
    pub sums: [[u64; FORCE_RECORD]; FORCE_BLOCK_WARPS],
    pub cells: [[[u32; 8]; 32]; FORCE_BLOCK_WARPS],
    pub terms: [[[u64; TERM_STRIDE]; 32]; FORCE_BLOCK_WARPS],
}

/// [`IbForce::spread`]: atomic fixed-point adds into the band's pass sums.
pub const SPREAD_SCATTER: u32 = 0;
/// [`IbForce::spread`]: each sample's position and force stored for the gather.
pub const SPREAD_STORE: u32 = 1;

/// How the gather bins samples ([`super::ib::gather`]). `#[repr(C)]`: part of kernel arguments.
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
/// [`super::ib::stencil::bin_node`].
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

/// `ib_gather`: after each `ib_force`, one block of [`GATHER_BLOCK`] threads per band slot in
/// use (grid-stride over the slots): its threads read the samples of the bins that reach the
/// slot's brick once between them ([`super::ib::gather::brick_terms`]), sum each term into the
/// brick's cell sums in shared memory ([`GatherShared`]), then update each cell as `ib_update`
/// does. The entries of bin `b` are `starts[b]..starts[b + 1]`; entry `k` is sample place
/// `list[k]` in `at` / `force` (`list` empty: place `k`, the samples stored in bin order).
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

/// Warps of an `ib_gather` block.
pub const GATHER_WARPS: usize = 4;
/// Threads of an `ib_gather` block.
pub const GATHER_BLOCK: u32 = 32 * GATHER_WARPS as u32;

/// Shared memory of one `ib_gather` block: the fixed-point sums of its brick's cells, and per
/// warp a queue of the entries found to reach the brick (up to 63 wait while fewer than 32
/// have been found).
#[repr(C)]
pub struct GatherShared {
    pub sums: [[u64; 3]; super::ib::band::BRICK_CELLS],
    pub queue: [[u32; 64]; GATHER_WARPS],
}

/// `ib_update`: one thread per band cell, between passes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct IbUpdate {
    pub band: BandMut,
}

/// `ib_band_pack` / `ib_band_unpack`: one thread per cell of layer `layer` across `axis`,
/// moving the band values `rho, u*` of the cell (`rho = 0`: not in the band) between the band
/// and the exchange buffer `buf` (4 floats per face cell, value-major; [`super::halo`]), so
/// that the samples near a slab face interpolate from every node of their stencil.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BandHalo {
    pub band: BandMut,
    pub buf: DevSliceMut<f32>,
    pub axis: u32,
    pub layer: u32,
}

/// [`BandHalo`] packing (a face layer's band values to the buffer).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BandPack {
    pub halo: BandHalo,
}

/// [`BandHalo`] unpacking (the buffer to a ghost layer's band cells).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BandUnpack {
    pub halo: BandHalo,
}

/// `lbm_halo_pack_*` / `lbm_halo_unpack_*`: one thread per cell of layer `layer` across
/// `axis`, moving its 9 populations with `c . e_axis == sign` between the lattice `f` and the
/// exchange buffer `buf` ([`super::halo`]; pull streaming).
#[repr(C)]
pub struct Halo<S: Storage> {
    pub pops: Populations<S>,
    pub f: DevSliceMut<S::Elem>,
    pub buf: DevSliceMut<S::Elem>,
    pub axis: u32,
    pub layer: u32,
    pub sign: i32,
    pub _pad: u32,
}

/// [`Halo`] packing (lattice to buffer).
#[repr(C)]
pub struct HaloPack<S: Storage> {
    pub halo: Halo<S>,
}

/// [`Halo`] unpacking (buffer to lattice).
#[repr(C)]
pub struct HaloUnpack<S: Storage> {
    pub halo: Halo<S>,
}

/// `lbm_health_*`: one thread per cell reduces the density and velocity of fluid cells
/// ([`super::stream::cell_fields`]) into `out` ([`super::health`]): `out` holds
/// [`super::health::word::WORDS`] words, zeroed before the launch, 8-byte aligned (its `u64`
/// sums). `bounds` with its exempt boxes in this lattice's coordinates.
#[repr(C)]
pub struct Health<S: Storage> {
    pub p: LbmParams,
    pub pops: Populations<S>,
    pub bounds: super::health::Bounds,
    pub flags: DevSlice<u8>,
    pub f: DevSlice<S::Elem>,
    pub band: BandRef,
    pub out: DevSliceMut<u32>,
}
