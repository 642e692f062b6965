//! The population-access layer: the one place that knows where population `q` of a cell lives
//! and how it is stored.
//!
//! Every CPU and GPU path reads and writes populations through [`Populations`]: the CPU
//! reference, the kernels, initialisation, the fields and health stages and the backends'
//! downloads. Three choices live here and nowhere else:
//!
//! - **Storage** ([`Storage`]): FP32 ([`Fp32`]), or 16 bits with FP32 arithmetic: [`Fp16S`]
//!   (IEEE half of `(f - w_q) 32768`) and [`Fp16C`] (a custom 1-4-11 float of `f - w_q`); the
//!   bit layouts are in [`super::half`]. Values are decoded on load and encoded on store, so
//!   every formula (collision, boundaries) sees unshifted FP32 populations.
//! - **Layout** ([`Layout`]): collected structure of arrays (CSoA) with granularity `alpha`:
//!   cells are taken in groups of `alpha` consecutive cells, and a group stores its 27
//!   populations one after the other, `alpha` values each:
//!   `index(q, cell) = (cell / alpha) 27 alpha + q alpha + cell % alpha`. `alpha` is a power of
//!   two; the last group is padded when the cell count is not a multiple. [`Layout::SOA`] is
//!   its own mode (no padding): `index = q cells + cell`, the plain structure of arrays.
//! - **In-place streaming, esoteric pull** (Lehmann 2022, after Geier & Schönherr 2017's
//!   esoteric twist): ONE copy of the populations. Directions pair with their opposites
//!   (`q < 13` is the "positive" member of the pair `(q, 26 - q)`). A step reads, for each
//!   positive `q`, one slot at the cell itself and one at its neighbour `x + c_q`, and writes
//!   the post-collision values back into the same two slots, swapped: each slot is read and
//!   written by exactly one cell per step, so cells update in place and in parallel. Which slot
//!   holds which direction alternates with the parity of the step ([`Populations::odd`]).
//!
//! Where the state lives, with `q̄ = 26 - q` and `odd` the parity of the step being computed:
//! - `f_q` arriving at `x` is read from slot `rs(q)` of cell `x` (positive `q`) or of cell
//!   `x - c_q` (the others), `rs(q) = q` on odd steps, `q̄` on even ones;
//! - the post-collision `f*_q` of `x` is written to slot `ws(q)` of cell `x + c_q` (positive
//!   `q`) or of `x` (the others), `ws(q) = q̄` on odd steps, `q` on even ones;
//! - so during a step the previous step's `f*_q(x)` (what bounce-back reflects) sits in slot
//!   `rs(q)` of `x + c_q` (positive) or `x` (the others): [`Populations::own`].
//!
//! A cell that does not run (walls, inlets, outlets) owns slots nobody else touches during a
//! step; the boundary formulas read the reflected values from there, so no cell reads a slot
//! another cell writes in the same step ([`Populations::own`] states when a read is safe).

use super::d3q27::{opposite, velocity, weight, Q, REST};
use super::half::{f16_to_f32, f16c_to_f32, f32_to_f16, f32_to_f16c};
use super::half::{FP16S_INV_SCALE, FP16S_SCALE};
use super::Lattice;
use crate::kernel::{DevSlice, DevSliceMut, Variant};
use crate::math::fma;

/// How population values are held in memory. Decoding and encoding are the same bit operations
/// on the CPU and the GPU, so both backends store identical bits.
pub trait Storage: Copy + Send + Sync + 'static {
    /// One stored value.
    type Elem: Copy + Default + PartialEq + core::fmt::Debug + Send + Sync + 'static;
    /// `fp32`, `fp16s`, `fp16c`: names on the command line and in kernel names.
    const NAME: &'static str;
    /// The configuration value that selects this storage.
    const KIND: StorageKind;
    /// Whether a step updates the one copy in place (esoteric pull, [`InPlace`]) rather than
    /// pulling from one copy into the other. A type property, so each kernel holds only its
    /// own scheme's address arithmetic.
    const IN_PLACE: bool = false;
    /// The stored form of population `q`'s value `f`.
    fn encode(q: usize, f: f32) -> Self::Elem;
    /// The value of population `q` stored as `e`.
    fn decode(q: usize, e: Self::Elem) -> f32;
}

/// FP32: the value itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp32;

/// FP16S: IEEE binary16 of `(f - w_q) 32768` (round to nearest even).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp16S;

/// FP16C: the custom 1-4-11 float of `f - w_q` (round to nearest even, saturating).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fp16C;

impl Storage for Fp32 {
    const KIND: StorageKind = StorageKind::Fp32;
    type Elem = f32;
    const NAME: &'static str = "fp32";
    #[inline(always)]
    fn encode(_q: usize, f: f32) -> f32 {
        f
    }
    #[inline(always)]
    fn decode(_q: usize, e: f32) -> f32 {
        e
    }
}

impl Storage for Fp16S {
    const KIND: StorageKind = StorageKind::Fp16s;
    type Elem = u16;
    const NAME: &'static str = "fp16s";
    /// `(f - w) 32768` as one fused multiply-add, `32768 f - 32768 w`: the scale is a power of
    /// two, so scaling commutes with rounding and this is the rounded difference times 32768
    /// (the difference of two populations near their weights is never subnormal), one
    /// instruction fewer per population than subtracting, then scaling.
    #[inline(always)]
    fn encode(q: usize, f: f32) -> u16 {
        f32_to_f16(fma(f, FP16S_SCALE, -(weight(q) * FP16S_SCALE)))
    }
    /// `h / 32768 + w` as one fused multiply-add: the product by a power of two is exact, so
    /// rounding once is what the multiply, then add, gave.
    #[inline(always)]
    fn decode(q: usize, e: u16) -> f32 {
        fma(f16_to_f32(e), FP16S_INV_SCALE, weight(q))
    }
}

impl Storage for Fp16C {
    const KIND: StorageKind = StorageKind::Fp16c;
    type Elem = u16;
    const NAME: &'static str = "fp16c";
    #[inline(always)]
    fn encode(q: usize, f: f32) -> u16 {
        f32_to_f16c(f - weight(q))
    }
    #[inline(always)]
    fn decode(q: usize, e: u16) -> f32 {
        f16c_to_f32(e) + weight(q)
    }
}

/// The storage of a run, as configured; [`with_storage`](crate::with_storage) turns it into its
/// [`Storage`] type.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StorageKind {
    /// 32-bit floats (4 bytes per population).
    #[default]
    Fp32 = 0,
    /// IEEE half of `(f - w) 32768` (2 bytes per population).
    Fp16s = 1,
    /// Custom 1-4-11 float of `f - w` (2 bytes per population).
    Fp16c = 2,
}

impl StorageKind {
    pub const ALL: [StorageKind; 3] = [StorageKind::Fp32, StorageKind::Fp16s, StorageKind::Fp16c];

    /// `fp32`, `fp16s`, `fp16c`.
    pub const fn name(self) -> &'static str {
        match self {
            StorageKind::Fp32 => Fp32::NAME,
            StorageKind::Fp16s => Fp16S::NAME,
            StorageKind::Fp16c => Fp16C::NAME,
        }
    }

    /// Bytes of one stored population.
    pub const fn bytes(self) -> usize {
        match self {
            StorageKind::Fp32 => 4,
            StorageKind::Fp16s | StorageKind::Fp16c => 2,
        }
    }
}

/// Runs `$body` with `$s` the [`Storage`] type of a [`StorageKind`] and a [`Streaming`]
/// (exhaustive dispatch).
#[macro_export]
macro_rules! with_storage {
    ($kind:expr, $streaming:expr, $s:ident => $body:expr) => {
        match ($kind, $streaming) {
            ($crate::lbm::StorageKind::Fp32, $crate::lbm::Streaming::Pull) => {
                type $s = $crate::lbm::Fp32;
                $body
            }
            ($crate::lbm::StorageKind::Fp16s, $crate::lbm::Streaming::Pull) => {
                type $s = $crate::lbm::Fp16S;
                $body
            }
            ($crate::lbm::StorageKind::Fp16c, $crate::lbm::Streaming::Pull) => {
                type $s = $crate::lbm::Fp16C;
                $body
            }
            ($crate::lbm::StorageKind::Fp32, $crate::lbm::Streaming::InPlace) => {
                type $s = $crate::lbm::InPlace<$crate::lbm::Fp32>;
                $body
            }
            ($crate::lbm::StorageKind::Fp16s, $crate::lbm::Streaming::InPlace) => {
                type $s = $crate::lbm::InPlace<$crate::lbm::Fp16S>;
                $body
            }
            ($crate::lbm::StorageKind::Fp16c, $crate::lbm::Streaming::InPlace) => {
                type $s = $crate::lbm::InPlace<$crate::lbm::Fp16C>;
                $body
            }
        }
    };
}

/// Storage `S` streamed in place (esoteric pull): the same number format, one copy.
pub struct InPlace<S>(core::marker::PhantomData<S>);

impl<S> Clone for InPlace<S> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for InPlace<S> {}
impl<S> Default for InPlace<S> {
    fn default() -> Self {
        InPlace(core::marker::PhantomData)
    }
}
impl<S> core::fmt::Debug for InPlace<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("InPlace")
    }
}

impl<S: Storage> Storage for InPlace<S> {
    type Elem = S::Elem;
    const NAME: &'static str = S::NAME;
    const KIND: StorageKind = S::KIND;
    const IN_PLACE: bool = true;
    #[inline(always)]
    fn encode(q: usize, f: f32) -> S::Elem {
        S::encode(q, f)
    }
    #[inline(always)]
    fn decode(q: usize, e: S::Elem) -> f32 {
        S::decode(q, e)
    }
}

/// The CSoA layout: `lo = alpha - 1` selects a cell's place in its group, `stride` is the
/// distance between two populations of one cell (`alpha`, or the cell count for
/// [`Layout::SOA`], where `lo` is all ones). `#[repr(C)]`: part of the kernel parameters.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// 0 for the structure of arrays, else `alpha` (a power of two).
    pub alpha: u32,
}

impl Layout {
    /// The plain structure of arrays (`alpha = cells`, no padding).
    pub const SOA: Layout = Layout { alpha: 0 };

    /// CSoA with granularity `alpha`, `None` unless `alpha` is a power of two.
    pub const fn csoa(alpha: u32) -> Option<Layout> {
        if alpha.is_power_of_two() {
            Some(Layout { alpha })
        } else {
            None
        }
    }

    /// `"soa"` or `"csoa-<alpha>"`.
    pub fn describe(&self) -> LayoutName {
        LayoutName(self.alpha)
    }
}

/// Display form of a [`Layout`].
pub struct LayoutName(u32);

impl core::fmt::Display for LayoutName {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            0 => write!(f, "soa"),
            a => write!(f, "csoa-{a}"),
        }
    }
}

/// How a step streams: [`Streaming::Pull`] reads one copy of the populations and writes the
/// other (two copies, every store aligned: the fastest), [`Streaming::InPlace`] updates one
/// copy in place (esoteric pull: half the memory).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "kebab-case"))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Streaming {
    /// Two copies: pull from the previous step's, write this step's (ping-pong).
    #[default]
    Pull = 0,
    /// One copy, updated in place (esoteric pull).
    InPlace = 1,
}

impl Streaming {
    /// `pull` or `in-place`.
    pub const fn name(self) -> &'static str {
        match self {
            Streaming::Pull => "pull",
            Streaming::InPlace => "in-place",
        }
    }

    /// Copies of the populations the scheme keeps.
    pub const fn copies(self) -> u64 {
        match self {
            Streaming::Pull => 2,
            Streaming::InPlace => 1,
        }
    }
}

/// Where the populations of a lattice live, for one step. `#[repr(C)]`: kernels receive it
/// inside their parameters.
#[repr(C)]
pub struct Populations<S> {
    pub lattice: Lattice,
    /// Parity of the step being computed (1: odd). Reads find the state the previous step
    /// left; writes leave this step's.
    pub odd: u32,
    /// `alpha - 1`, or all ones for the structure of arrays.
    pub lo: u32,
    /// Distance between populations `q` and `q + 1` of a cell: `alpha` or the cell count.
    pub stride: u32,
    pub storage: Variant<S>,
}

impl<S> Clone for Populations<S> {
    #[inline(always)]
    fn clone(&self) -> Self {
        *self
    }
}
impl<S> Copy for Populations<S> {}

impl<S> core::fmt::Debug for Populations<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Populations")
            .field("lattice", &self.lattice)
            .field("odd", &self.odd)
            .field("lo", &self.lo)
            .field("stride", &self.stride)
            .finish()
    }
}

/// Whether `q` is the positive member of its pair `(q, 26 - q)`.
#[inline(always)]
const fn positive(q: usize) -> bool {
    q < REST
}

impl<S: Storage> Populations<S> {
    /// The populations of `lattice` in `layout`, during step `step` (0: initialisation). With
    /// an [`InPlace`] storage a step updates one copy; otherwise reads take the previous step's
    /// copy and stores go to the other one, population `q` of a cell in slot `q` of that cell
    /// in both (the callers pass each buffer).
    #[inline(always)]
    pub const fn new(lattice: Lattice, layout: Layout, step: u64) -> Self {
        let (lo, stride) = if layout.alpha == 0 {
            (u32::MAX, lattice.cells() as u32)
        } else {
            (layout.alpha - 1, layout.alpha)
        };
        Populations {
            lattice,
            odd: (step & 1) as u32,
            lo,
            stride,
            storage: Variant::NEW,
        }
    }

    /// The same populations during step `step`.
    #[inline(always)]
    pub const fn at_step(mut self, step: u64) -> Self {
        self.odd = (step & 1) as u32;
        self
    }

    /// Stored values of the lattice: `27 cells`, padded to whole groups of `alpha` cells.
    #[inline(always)]
    pub const fn len(&self) -> usize {
        let cells = self.lattice.cells();
        if self.lo == u32::MAX {
            Q * cells
        } else {
            let alpha = self.stride as usize;
            Q * cells.div_ceil(alpha) * alpha
        }
    }

    /// Whether the lattice has no cells.
    #[inline(always)]
    pub const fn is_empty(&self) -> bool {
        self.lattice.cells() == 0
    }

    /// Index of slot `slot` of `cell`.
    #[inline(always)]
    pub const fn index(&self, slot: usize, cell: usize) -> usize {
        let c = cell as u32;
        (c & !self.lo) as usize * Q + slot * self.stride as usize + (c & self.lo) as usize
    }

    /// Slot that `f_q` arriving this step is read from.
    #[inline(always)]
    const fn read_slot(&self, q: usize) -> usize {
        if self.odd != 0 {
            q
        } else {
            opposite(q)
        }
    }

    /// Slot this step's `f*_q` is written to.
    #[inline(always)]
    const fn write_slot(&self, q: usize) -> usize {
        if self.odd != 0 {
            opposite(q)
        } else {
            q
        }
    }

    #[inline(always)]
    unsafe fn load(&self, f: DevSlice<S::Elem>, q: usize, slot: usize, cell: usize) -> f32 {
        S::decode(q, f.read(self.index(slot, cell)))
    }

    /// `f_q` arriving at `cell` from its neighbour `x - c_q` when that neighbour is fluid: the
    /// value the neighbour left last step. `o` are `cell`'s [`Lattice::pull_offsets`].
    ///
    /// # Safety
    /// `f` holds [`Populations::len`] values and `cell < cells`.
    #[inline(always)]
    pub unsafe fn arriving(
        &self,
        f: DevSlice<S::Elem>,
        o: &[[u32; 3]; 3],
        q: usize,
        cell: usize,
    ) -> f32 {
        self.load_index(f, q, self.arriving_index(o, q, cell))
    }

    /// Where [`Populations::arriving`] reads `f_q` of `cell`: an index into the buffer.
    #[inline(always)]
    pub fn arriving_index(&self, o: &[[u32; 3]; 3], q: usize, cell: usize) -> usize {
        if !S::IN_PLACE {
            return self.index(q, neighbour(o, q));
        }
        let at = if positive(q) { cell } else { neighbour(o, q) };
        self.index(self.read_slot(q), at)
    }

    /// The stored value at index `i` decoded as population `q`. Decoding depends on the
    /// direction only through its weight `w_q`, which is the same for `q`, its opposite and its
    /// mirror images (`W1` is symmetric), so one `q` serves a load from any of them.
    ///
    /// # Safety
    /// `i < ` [`Populations::len`] and `f` holds that many values.
    #[inline(always)]
    pub unsafe fn load_index(&self, f: DevSlice<S::Elem>, q: usize, i: usize) -> f32 {
        S::decode(q, f.read(i))
    }

    /// The 27 populations arriving at `cell` when every neighbour is fluid (periodic wrap).
    ///
    /// # Safety
    /// As [`Populations::arriving`].
    #[inline(always)]
    pub unsafe fn pull(&self, f: DevSlice<S::Elem>, cell: usize) -> [f32; Q] {
        let o = self.lattice.pull_offsets(cell);
        let mut out = [0.0f32; Q];
        for_q!(q => {
            out[q] = self.arriving(f, &o, q, cell);
        });
        out
    }

    /// The previous step's post-collision `f*_q` of `cell` (what bounce-back turns around).
    /// During a step it is safe to read when the cell `x + c_q` does not run this step (a
    /// boundary cell), or in a stage that writes no populations.
    ///
    /// # Safety
    /// `f` holds [`Populations::len`] values and `cell < cells`.
    #[inline(always)]
    pub unsafe fn own(&self, f: DevSlice<S::Elem>, q: usize, cell: usize) -> f32 {
        if !S::IN_PLACE {
            return self.load(f, q, q, cell);
        }
        let at = if positive(q) {
            neighbour(&self.lattice.pull_offsets(cell), opposite(q))
        } else {
            cell
        };
        self.load(f, q, self.read_slot(q), at)
    }

    /// Where [`Populations::own`] finds `f*_q` of `cell`: an index into the buffer. Over all
    /// cells and directions a bijection onto the lattice's slots (in place, each slot belongs
    /// to one cell per step), so a whole state is read and written through it, one cell's 27
    /// values at a time, independent of the layout and of the parity.
    #[inline(always)]
    pub fn own_index(&self, q: usize, cell: usize) -> usize {
        if !S::IN_PLACE {
            return self.index(q, cell);
        }
        let at = if positive(q) {
            neighbour(&self.lattice.pull_offsets(cell), opposite(q))
        } else {
            cell
        };
        self.index(self.read_slot(q), at)
    }

    /// All 27 post-collision populations `cell` left last step (stages that write none).
    ///
    /// # Safety
    /// As [`Populations::own`].
    #[inline(always)]
    pub unsafe fn own_all(&self, f: DevSlice<S::Elem>, cell: usize) -> [f32; Q] {
        let o = self.lattice.pull_offsets(cell);
        let mut out = [0.0f32; Q];
        for_q!(q => {
            out[q] = if !S::IN_PLACE {
                self.load(f, q, q, cell)
            } else {
                let at = if positive(q) { neighbour(&o, opposite(q)) } else { cell };
                self.load(f, q, self.read_slot(q), at)
            };
        });
        out
    }

    /// The population leaving `cell` toward a boundary neighbour along `-c_q` last step, which
    /// bounce-back turns into the one arriving along `c_q`: `f*_{q̄}(x)`, read from the slot
    /// the boundary neighbour `x - c_q` owns.
    ///
    /// # Safety
    /// As [`Populations::arriving`].
    #[inline(always)]
    pub unsafe fn reflected(
        &self,
        f: DevSlice<S::Elem>,
        o: &[[u32; 3]; 3],
        q: usize,
        cell: usize,
    ) -> f32 {
        self.load_index(f, opposite(q), self.reflected_index(o, q, cell))
    }

    /// Where [`Populations::reflected`] reads `f*_{q̄}` of `cell`: an index into the buffer.
    #[inline(always)]
    pub fn reflected_index(&self, o: &[[u32; 3]; 3], q: usize, cell: usize) -> usize {
        let r = opposite(q);
        if !S::IN_PLACE {
            return self.index(r, cell);
        }
        let at = if positive(r) { neighbour(o, q) } else { cell };
        self.index(self.read_slot(r), at)
    }

    /// Where the previous step's `f*_m` of the cell `from = x - c_q` without its components
    /// along `axes` lies, `m` being `c_q` with those components negated (a free-slip
    /// reflection): the slot [`Populations::own`]`(f, m, from)` reads, found from `cell`'s own
    /// offsets `o` (in place, `from + c_m` is `x` minus the `axes` components of `c_q`).
    #[inline(always)]
    pub fn mirrored_index(&self, o: &[[u32; 3]; 3], q: usize, axes: u32, m: usize) -> usize {
        if !S::IN_PLACE {
            return self.index(m, neighbour_without(o, q, axes));
        }
        let at = if positive(m) {
            neighbour_without(o, q, 7 & !axes)
        } else {
            neighbour_without(o, q, axes)
        };
        self.index(self.read_slot(m), at)
    }

    /// Stores this step's 27 post-collision populations of `cell`: in place, into the slots it
    /// read; else into slot `q` of the cell in the other copy `f`.
    ///
    /// # Safety
    /// `f` holds [`Populations::len`] values, `cell < cells`; calls for different cells may run
    /// concurrently (every slot belongs to one cell per step).
    #[inline(always)]
    pub unsafe fn store(&self, f: DevSliceMut<S::Elem>, cell: usize, values: &[f32; Q]) {
        if !S::IN_PLACE {
            for_q!(q => {
                f.write(self.index(q, cell), S::encode(q, values[q]));
            });
            return;
        }
        let o = self.lattice.pull_offsets(cell);
        for_q!(q => {
            let at = if positive(q) { neighbour(&o, opposite(q)) } else { cell };
            f.write(self.index(self.write_slot(q), at), S::encode(q, values[q]));
        });
    }
}

/// Cell number of `x - c_q` from the per-axis offsets of [`Lattice::pull_offsets`].
#[inline(always)]
pub fn neighbour(o: &[[u32; 3]; 3], q: usize) -> usize {
    let c = velocity(q);
    (o[0][(c[0] + 1) as usize] + o[1][(c[1] + 1) as usize] + o[2][(c[2] + 1) as usize]) as usize
}

/// Cell number of `x - c_q` without the components of `c_q` along the axes of bit mask `axes`
/// (bit `a` for axis `a`): the cell a reflection off walls of those normals sends a population
/// to `x` from.
#[inline(always)]
pub fn neighbour_without(o: &[[u32; 3]; 3], q: usize, axes: u32) -> usize {
    let c = velocity(q);
    // Constant indices on both sides of the choice: a runtime index into `o` would move it
    // to local memory on the GPU.
    let pick = |a: usize| {
        if axes >> a & 1 != 0 {
            o[a][1]
        } else {
            o[a][(c[a] + 1) as usize]
        }
    };
    (pick(0) + pick(1) + pick(2)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    /// FP16S's fused forms store and read what subtracting, then scaling (and scaling, then
    /// adding) gave: every 16-bit code of every direction, and populations from 0 to 1.1 on
    /// a fine grid and around each weight.
    #[test]
    fn fp16s_fused_forms_equal_the_two_step_forms() {
        for q in 0..Q {
            let w = weight(q);
            for e in 0..=u16::MAX {
                let two_step = f16_to_f32(e) * FP16S_INV_SCALE + w;
                let fused = Fp16S::decode(q, e);
                assert!(
                    fused.to_bits() == two_step.to_bits() || (fused.is_nan() && two_step.is_nan()),
                    "decode q {q} code {e:#06x}: {fused} against {two_step}"
                );
            }
            let grid = (0..200_000).map(|i| i as f32 * 5.5e-6);
            let near = (-20_000..20_000).map(|i| w + i as f32 * 1.7e-7);
            for f in grid.chain(near) {
                let two_step = f32_to_f16((f - w) * FP16S_SCALE);
                assert_eq!(Fp16S::encode(q, f), two_step, "encode q {q} f {f:e}");
            }
        }
    }

    fn view<T>(v: &[T]) -> DevSlice<T> {
        // SAFETY: the slice outlives the view in each test.
        unsafe { DevSlice::from_raw(v.as_ptr(), v.len() as u64) }
    }

    fn view_mut<T>(v: &mut [T]) -> DevSliceMut<T> {
        // SAFETY: as `view`.
        unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
    }

    /// A value naming population `q` of `cell` at step `t` (exact in FP32).
    fn tag(t: u64, q: usize, cell: usize) -> f32 {
        (t * 100_000 + q as u64 * 1000 + cell as u64) as f32
    }

    /// Streams a tagged state for three steps with every cell running and checks that each
    /// cell pulls exactly the values its upstream neighbours stored, for several layouts and
    /// both schemes.
    #[test]
    fn streaming_pulls_the_upstream_values() {
        pulls_the_upstream_values::<InPlace<Fp32>>();
        pulls_the_upstream_values::<Fp32>();
    }

    fn pulls_the_upstream_values<S: Storage<Elem = f32>>() {
        let l = Lattice::new(4, 3, 5);
        {
            for layout in [Layout::SOA, Layout { alpha: 1 }, Layout { alpha: 8 }] {
                let pops = Populations::<S>::new(l, layout, 0);
                let mut f = std::vec![f32::NAN; pops.len()];
                let mut g = f.clone();
                for cell in 0..l.cells() {
                    let v: [f32; Q] = core::array::from_fn(|q| tag(0, q, cell));
                    unsafe { pops.store(view_mut(&mut f), cell, &v) };
                }
                for t in 1..=3u64 {
                    let p = pops.at_step(t);
                    // Every cell reads before any writes (in place, a step's reads and writes
                    // touch the same slots, each slot belonging to one cell).
                    let pulled: Vec<[f32; Q]> = (0..l.cells())
                        .map(|cell| unsafe { p.pull(view(&f), cell) })
                        .collect();
                    for (cell, got) in pulled.iter().enumerate() {
                        let (x, y, z) = l.coords(cell);
                        for (q, &v) in got.iter().enumerate() {
                            let c = velocity(q);
                            let wrap = |a: u32, d: i32, n: u32| {
                                ((a as i32 - d).rem_euclid(n as i32)) as u32
                            };
                            let from =
                                l.index(wrap(x, c[0], 4), wrap(y, c[1], 3), wrap(z, c[2], 5));
                            assert_eq!(v, tag(t - 1, q, from), "{layout:?} step {t} q {q}");
                        }
                        // Before this step's writes, `own` and `reflected` see the last step.
                        let o = l.pull_offsets(cell);
                        for q in 0..Q {
                            assert_eq!(unsafe { p.own(view(&f), q, cell) }, tag(t - 1, q, cell));
                            assert_eq!(
                                unsafe { p.reflected(view(&f), &o, q, cell) },
                                tag(t - 1, opposite(q), cell)
                            );
                        }
                    }
                    let dst = if S::IN_PLACE { &mut f } else { &mut g };
                    for cell in 0..l.cells() {
                        let v: [f32; Q] = core::array::from_fn(|q| tag(t, q, cell));
                        unsafe { p.store(view_mut(dst), cell, &v) };
                    }
                    if !S::IN_PLACE {
                        core::mem::swap(&mut f, &mut g);
                    }
                }
            }
        }
    }

    /// `own_index` is where `own` reads, and a bijection onto the lattice's slots, for both
    /// schemes, both parities and several layouts.
    #[test]
    fn own_index_is_where_own_reads_and_a_bijection() {
        own_index_agrees::<InPlace<Fp32>>();
        own_index_agrees::<Fp32>();
    }

    fn own_index_agrees<S: Storage<Elem = f32>>() {
        let l = Lattice::new(4, 3, 5);
        for layout in [Layout::SOA, Layout { alpha: 1 }, Layout { alpha: 8 }] {
            for step in [1u64, 2] {
                let pops = Populations::<S>::new(l, layout, step);
                let f: Vec<f32> = (0..pops.len()).map(|i| i as f32).collect();
                let mut seen = std::vec![false; pops.len()];
                for cell in 0..l.cells() {
                    for q in 0..Q {
                        let i = pops.own_index(q, cell);
                        assert_eq!(unsafe { pops.own(view(&f), q, cell) }, f[i]);
                        assert!(!seen[i], "{layout:?} step {step}: slot {i} twice");
                        seen[i] = true;
                    }
                }
            }
        }
    }

    #[test]
    fn csoa_index_is_a_bijection_onto_the_padded_buffer() {
        let l = Lattice::new(5, 3, 3);
        for alpha in [1u32, 2, 4, 16, 64] {
            let pops = Populations::<Fp32>::new(l, Layout { alpha }, 0);
            let mut seen = std::vec![false; pops.len()];
            for cell in 0..l.cells() {
                for q in 0..Q {
                    let i = pops.index(q, cell);
                    assert!(!seen[i], "alpha {alpha}: index {i} twice");
                    seen[i] = true;
                }
            }
            let groups = l.cells().div_ceil(alpha as usize);
            assert_eq!(pops.len(), groups * alpha as usize * Q);
            if alpha > 1 {
                // Consecutive cells of a group are adjacent for each population.
                assert_eq!(pops.index(3, 1), pops.index(3, 0) + 1);
            }
        }
        let soa = Populations::<Fp32>::new(l, Layout::SOA, 0);
        assert_eq!(soa.index(2, 7), 2 * l.cells() + 7);
        assert_eq!(soa.len(), Q * l.cells());
    }

    #[test]
    fn sixteen_bit_storage_round_trips_near_the_weights() {
        for q in 0..Q {
            let w = weight(q);
            for d in [0.0f32, 1e-4, -3e-3, 0.05] {
                let f = w + d;
                let s = Fp16S::decode(q, Fp16S::encode(q, f));
                let c = Fp16C::decode(q, Fp16C::encode(q, f));
                assert!(
                    (s - f).abs() <= 1e-3 * d.abs() + 1e-7,
                    "fp16s q {q} {f} -> {s}"
                );
                assert!(
                    (c - f).abs() <= 1e-3 * d.abs() + 1e-7,
                    "fp16c q {q} {f} -> {c}"
                );
            }
        }
    }
}
