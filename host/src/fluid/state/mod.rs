//! The fluid's complete simulation state in memory, bit for bit: what a backend must hold for
//! its next step to store the same bits as a run that never stopped, in one form that does not
//! depend on the backend (CPU or CUDA), the layout (CSoA granularity) or, in place, the parity
//! of the step.
//!
//! # What is captured, and why
//!
//! - **The populations** ([`FluidBackend::read_state_piece`]): every cell's 27 post-collision
//!   populations of the last step, in their storage encoding (FP32 as its bits, FP16S and FP16C
//!   as the 16 stored bits), little-endian, in the canonical order `(cell * 27 + q)`, cells
//!   numbered x fastest over the whole lattice. The next step pulls from them. In place, the
//!   slot that holds `f*_q` of a cell depends on the parity of the step
//!   (`Populations::own_index`): reading through it resolves the parity, and writing through
//!   it into a backend at the same step puts every value back in its slot. Over all cells and
//!   directions the map is a bijection onto the lattice's slots, so the pieces hold every
//!   stored value once, walls, inlets and outlets included. The conversion works a range of
//!   cells at a time, so a writer can stream a lattice larger than its memory.
//! - **The step** ([`SmallState::step`]): the solids' motion and the inlet profiles are
//!   functions of time, and in place the parity of the step says where the populations lie.
//! - **The inlet scale** ([`SmallState::inlet_scale`]): the factor the driver's ramp set for the
//!   next step's inlets (`LbmParams::inlet_scale`).
//! - **The rates** ([`SmallState::rates`]): the viewer may change them during a run.
//! - **The outlet velocities** ([`SmallState::outlet_u`]): each fluid cell next to an outlet
//!   keeps the velocity of its last collision, which the next step's anti-bounce-back reads.
//!   Only those cells' values are ever read; they are kept sparse, by cell number.
//! - **The immersed boundary** ([`ImmersedState`]): a solid's motion is prescribed, a function
//!   of the step, so its state at the next step is recorded as a check (a restore into a
//!   backend whose solids would move otherwise is refused). The band (the cells near the
//!   samples and their forces) is rebuilt from nothing by every step, so the next step reads
//!   none of it. Kept: every sample's force of the last step (what `samples()` reports) and
//!   the force records of steps not yet taken ([`FluidBackend::take_forces`]), decoded, so the
//!   force series continues without a gap or a repeat.
//!
//! In the pull scheme the second copy of the populations is written by every step before it
//! is read, except the slots of cells that do not run (walls, inlets, outlets), which keep the
//! values initialisation gave both copies; a restore writes each piece into both copies.
//!
//! # Not captured
//!
//! - The band itself: right after a restore, before the next step, [`FluidBackend::fields`]
//!   and [`FluidBackend::health`] see no immersed-boundary force in the band's cells (the
//!   velocity there differs from the uninterrupted run's by half the last step's force); the
//!   next step rebuilds it and every later value is the uninterrupted run's. A checkpoint's
//!   fields for readers are computed when it is captured.
//! - The viewer's smoke and frame scratch (the viewer is not resumed).
//! - A rank's ghost layers ([`super::slab`]): a rank's pieces hold the cells it owns, numbered
//!   x fastest within its box ([`super::slab::SlabPlan::own_box`]); the next step exchanges
//!   the ghost layers first ([`super::slab::state`]).
//! - What the driver keeps beside the backend (the force series' accumulators, the health
//!   check's schedule, output numbering).

pub mod snapshot;
#[cfg(test)]
mod tests;
pub mod window;

use super::forces::ForceSample;
use super::{FluidBackend, FluidError};
use murmur_common::lbm::boundary::{FLUID, GHOST, KIND_MASK, OUTLET};
use murmur_common::lbm::ib::solid::SolidState;
use murmur_common::lbm::{
    CollisionModel, Lattice, Populations, Rates, Storage, StorageKind, Streaming, Q,
};
use std::ops::Range;

#[cfg(not(target_endian = "little"))]
compile_error!(
    "the fluid state's pieces are written as the host's bytes: little-endian hosts only"
);

/// The lattice's whole state in memory: [`SmallState`] and every cell's populations.
#[derive(Clone, Debug, PartialEq)]
pub struct FluidState {
    pub small: SmallState,
    /// Every cell's 27 stored populations, `(cell * 27 + q)`, each `storage.bytes()` bytes,
    /// little-endian (see the module docs).
    pub populations: Vec<u8>,
}

/// Everything but the populations: small beside them (the outlet cells and the samples).
#[derive(Clone, Debug, PartialEq)]
pub struct SmallState {
    pub lattice: Lattice,
    pub model: CollisionModel,
    /// The number format of the populations (what the pieces' bytes encode).
    pub storage: StorageKind,
    /// The scheme of the backend captured: a restore needs the same (in place, the slots of
    /// cells that do not run hold values pull keeps elsewhere).
    pub streaming: Streaming,
    /// Steps done.
    pub step: u64,
    /// `LbmParams::inlet_scale` for the next step.
    pub inlet_scale: f32,
    /// The relaxation rates in use.
    pub rates: Rates,
    /// The last collision velocity of every fluid cell next to an outlet, by cell number
    /// (ascending; lattice units).
    pub outlet_u: Vec<OutletVelocity>,
    /// The immersed boundary's state (`None` without solids).
    pub immersed: Option<ImmersedState>,
    /// The band's force of the last step (solids' and pushes'), per cell where it is not zero
    /// (ascending cells): what the fields read until the next step rebuilds the band. Empty
    /// without a band. A rank's capture keeps its owned cells, in whole-lattice numbers.
    pub band: Vec<crate::fluid::ib::plan::BandForce>,
    /// WALE's velocity field ([`murmur_common::lbm::wale`]): every cell's last collision
    /// velocity, three arrays of `cells` floats (x, y, z; lattice units). Empty without WALE.
    pub velocity: Vec<f32>,
}

/// The last collision velocity of one fluid cell next to an outlet.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutletVelocity {
    /// Cell number (x fastest).
    pub cell: u32,
    /// Velocity, lattice units.
    pub u: [f32; 3],
}

/// What the immersed boundary carries from one step to the next.
#[derive(Clone, Debug, PartialEq)]
pub struct ImmersedState {
    /// Each solid's state during the next step (position in cells, rotation, velocities per
    /// step), a check: the motion is a function of the step.
    pub solids: Vec<SolidState>,
    /// Every sample's force of the last step, three values per sample (lattice units).
    pub sample_force: Vec<f32>,
    /// The forces of steps not yet taken, oldest first.
    pub pending: Vec<ForceSample>,
}

/// Bytes of one cell's populations in `storage`.
pub fn cell_bytes(storage: StorageKind) -> usize {
    Q * storage.bytes()
}

/// The error of a backend that cannot capture or restore its state.
pub fn unsupported(what: &str) -> FluidError {
    FluidError::Invalid(format!(
        "{what} cannot capture or restore its state: run on one lattice (the CPU or one GPU)"
    ))
}

/// Checks that `cells` lies in `lattice` and `bytes` is its size in `storage`.
pub fn check_piece(
    lattice: Lattice,
    storage: StorageKind,
    cells: &Range<usize>,
    bytes: usize,
) -> Result<(), FluidError> {
    if cells.start > cells.end || cells.end > lattice.cells() {
        return Err(FluidError::Invalid(format!(
            "state piece of cells {}..{} outside the lattice's {} cells",
            cells.start,
            cells.end,
            lattice.cells()
        )));
    }
    let want = cells.len() * cell_bytes(storage);
    if bytes != want {
        return Err(FluidError::WrongSize {
            what: format!(
                "the state piece of cells {}..{} ({bytes} bytes, {want} expected)",
                cells.start, cells.end
            ),
        });
    }
    Ok(())
}

/// Checks that `s` can be restored into a backend of `lattice`, `model`, `storage` and
/// `streaming`: the field that differs, named.
pub fn check_small(
    s: &SmallState,
    lattice: Lattice,
    model: CollisionModel,
    storage: StorageKind,
    streaming: Streaming,
) -> Result<(), FluidError> {
    let differs = |what: &str, theirs: String, ours: String| {
        Err(FluidError::Invalid(format!(
            "the state's {what} is {theirs}, this lattice's {ours}"
        )))
    };
    let dims = |l: Lattice| format!("{} x {} x {}", l.nx, l.ny, l.nz);
    if s.lattice != lattice {
        return differs("lattice size", dims(s.lattice), dims(lattice));
    }
    if s.model != model {
        return differs("model", format!("{:?}", s.model), format!("{model:?}"));
    }
    if s.storage != storage {
        return differs("storage", s.storage.name().into(), storage.name().into());
    }
    if s.streaming != streaming {
        return differs(
            "streaming",
            s.streaming.name().into(),
            streaming.name().into(),
        );
    }
    Ok(())
}

/// The stored value `e` as its bytes (the storage types are `f32` and `u16`: plain numbers,
/// no padding).
fn put<E: Copy>(e: E, out: &mut [u8]) {
    let n = std::mem::size_of::<E>();
    // SAFETY: `e` is a plain number of `n` bytes (above); `out` holds `n` bytes (the caller
    // slices it so).
    unsafe { std::ptr::copy_nonoverlapping(&e as *const E as *const u8, out.as_mut_ptr(), n) }
}

/// The bytes of `cells` in canonical order from a buffer of `pops` read through `src` (the
/// stored value at a buffer index; `None` where the caller holds no such index). `cells` are
/// the buffer's cell numbers, in the order of the bytes (a range, or a slab's own box).
pub fn gather<S: Storage>(
    pops: &Populations<S>,
    cells: impl IntoIterator<Item = usize>,
    src: impl Fn(usize) -> Option<S::Elem> + Sync,
    out: &mut [u8],
) -> Result<(), FluidError> {
    use rayon::prelude::*;
    let b = std::mem::size_of::<S::Elem>();
    // The cells in order, then their values on every core (a piece is millions of values).
    let cells: Vec<usize> = cells.into_iter().collect();
    out.par_chunks_mut(Q * b)
        .zip(cells.par_iter())
        .try_for_each(|(cell_out, &cell)| {
            for q in 0..Q {
                let e = src(pops.own_index(q, cell)).ok_or_else(outside)?;
                put(e, &mut cell_out[q * b..(q + 1) * b]);
            }
            Ok(())
        })
}

/// The stored values of `cells` from canonical bytes `data` into `dst`, each at
/// `slot(index)` for its buffer index in `pops` (`None`: the caller holds no such index), on
/// every core. `cells` as for [`gather`].
///
/// Every slot is written once (the map onto the buffer's slots is a bijection: see the module
/// docs), so the cells are spread over the cores and each value is stored with a relaxed
/// atomic store of its bits: were the map ever not one-to-one, a slot would end with one of
/// the values aimed at it, never a torn one.
pub fn scatter<S: Storage>(
    pops: &Populations<S>,
    cells: impl IntoIterator<Item = usize>,
    data: &[u8],
    slot: impl Fn(usize) -> Option<usize> + Sync,
    dst: &mut [S::Elem],
) -> Result<(), FluidError> {
    use rayon::prelude::*;
    use std::sync::atomic::{AtomicU16, AtomicU32, Ordering::Relaxed};
    let b = std::mem::size_of::<S::Elem>();
    let cells: Vec<usize> = cells.into_iter().collect();
    if data.len() != cells.len() * Q * b {
        return Err(FluidError::WrongSize {
            what: format!(
                "a state piece of {} cells ({} bytes, {} expected)",
                cells.len(),
                data.len(),
                cells.len() * Q * b
            ),
        });
    }
    let len = dst.len();
    let at = |k: Option<usize>| k.filter(|&k| k < len).ok_or_else(outside);
    let run = |store: &(dyn Fn(usize, &[u8]) + Sync)| {
        data.par_chunks(Q * b)
            .zip(cells.par_iter())
            .try_for_each(|(values, &cell)| {
                for q in 0..Q {
                    let k = at(slot(pops.own_index(q, cell)))?;
                    store(k, &values[q * b..(q + 1) * b]);
                }
                Ok(())
            })
    };
    assert_eq!(
        std::mem::align_of::<S::Elem>(),
        b,
        "a stored value is aligned to its size"
    );
    let ptr = dst.as_mut_ptr();
    match b {
        4 => {
            // SAFETY: `dst` is borrowed exclusively for this call; its `len` values are 4
            // bytes each, 4-aligned (asserted), the size and alignment of `AtomicU32`, and
            // every bit pattern is a valid stored value (`f32`).
            let a = unsafe { std::slice::from_raw_parts(ptr as *const AtomicU32, len) };
            run(&|k, v| a[k].store(u32::from_le_bytes([v[0], v[1], v[2], v[3]]), Relaxed))
        }
        2 => {
            // SAFETY: as above, 2-byte values (`u16`, FP16 bits) and `AtomicU16`.
            let a = unsafe { std::slice::from_raw_parts(ptr as *const AtomicU16, len) };
            run(&|k, v| a[k].store(u16::from_le_bytes([v[0], v[1]]), Relaxed))
        }
        _ => Err(FluidError::Invalid(format!(
            "stored values of {b} bytes have no state pieces"
        ))),
    }
}

fn outside() -> FluidError {
    FluidError::Invalid("a population slot outside the staged part of the lattice".into())
}

/// The fluid cells (not a slab's ghosts) with an outlet among their 27 neighbours, ascending:
/// the cells whose outlet velocity the next step reads (`flags` the backend's prepared bytes).
pub fn outlet_cells(lattice: Lattice, flags: &[u8]) -> Vec<u32> {
    use rayon::prelude::*;
    if !flags.iter().any(|&b| b & KIND_MASK == OUTLET) {
        return Vec::new();
    }
    (0..lattice.cells() as u32)
        .into_par_iter()
        .filter(|&c| {
            let b = flags[c as usize];
            if b & KIND_MASK != FLUID || b == GHOST {
                return false;
            }
            let o = lattice.pull_offsets(c as usize);
            (0..Q)
                .any(|q| flags[murmur_common::lbm::access::neighbour(&o, q)] & KIND_MASK == OUTLET)
        })
        .collect()
}

/// Checks that the captured outlet cells are `cells` (this lattice's).
pub fn check_outlet_cells(captured: &[OutletVelocity], cells: &[u32]) -> Result<(), FluidError> {
    if captured.len() != cells.len() || captured.iter().zip(cells).any(|(v, &c)| v.cell != c) {
        return Err(FluidError::Invalid(format!(
            "the state's {} cells next to outlets are not this lattice's {}",
            captured.len(),
            cells.len()
        )));
    }
    Ok(())
}

/// Checks a captured WALE velocity field against this backend's `len` floats (0 without WALE).
pub fn check_velocity(captured: &[f32], len: usize) -> Result<(), FluidError> {
    match (captured.len(), len) {
        (a, b) if a == b => Ok(()),
        (0, _) => Err(FluidError::Invalid(
            "the state has no WALE velocity field: it was written without les = \"wale\"".into(),
        )),
        (_, 0) => Err(FluidError::Invalid(
            "the state holds a WALE velocity field: it was written with les = \"wale\"".into(),
        )),
        (a, b) => Err(FluidError::Invalid(format!(
            "the state's WALE velocity field holds {a} values, this lattice's {b}"
        ))),
    }
}

/// Checks a captured immersed boundary against this backend's: the same solids in the same
/// states at the next step, the same number of samples.
pub fn check_immersed(
    captured: Option<&ImmersedState>,
    states: Option<(&[SolidState], usize)>,
) -> Result<(), FluidError> {
    match (captured, states) {
        (None, None) => Ok(()),
        (Some(c), Some((solids, samples))) => {
            if c.solids.len() != solids.len() || c.sample_force.len() != 3 * samples {
                return Err(FluidError::Invalid(format!(
                    "the state has {} solids and {} samples, this lattice {} and {samples}",
                    c.solids.len(),
                    c.sample_force.len() / 3,
                    solids.len()
                )));
            }
            match c.solids.iter().zip(solids).position(|(a, b)| a != b) {
                Some(i) => Err(FluidError::Invalid(format!(
                    "solid {i} of the state is not where this lattice's solid {i} is at the \
                     same step"
                ))),
                None => Ok(()),
            }
        }
        (Some(_), None) => Err(FluidError::Invalid(
            "the state has immersed solids, this lattice none".into(),
        )),
        (None, Some(_)) => Err(FluidError::Invalid(
            "this lattice has immersed solids, the state none".into(),
        )),
    }
}

/// Captures `backend`'s whole state, the populations `piece` cells at a time.
pub fn capture(backend: &mut dyn FluidBackend, piece: usize) -> Result<FluidState, FluidError> {
    let small = backend.capture_small_state()?;
    let n = backend.lattice().cells();
    let b = cell_bytes(backend.storage());
    let mut populations = vec![0u8; n * b];
    for (k, out) in populations.chunks_mut(piece.max(1) * b).enumerate() {
        let start = k * piece.max(1);
        backend.read_state_piece(start..start + out.len() / b, out)?;
    }
    Ok(FluidState { small, populations })
}

/// Restores `state` into `backend` (opened from the same setup, in any layout), the
/// populations `piece` cells at a time: the small state first (the step places the
/// populations in place), then the pieces.
pub fn restore(
    backend: &mut dyn FluidBackend,
    state: &FluidState,
    piece: usize,
) -> Result<(), FluidError> {
    backend.restore_small_state(&state.small)?;
    let b = cell_bytes(backend.storage());
    let want = backend.lattice().cells() * b;
    if state.populations.len() != want {
        return Err(FluidError::WrongSize {
            what: format!(
                "the state's populations ({} bytes, {want} expected)",
                state.populations.len()
            ),
        });
    }
    for (k, data) in state.populations.chunks(piece.max(1) * b).enumerate() {
        let start = k * piece.max(1);
        backend.write_state_piece(start..start + data.len() / b, data)?;
    }
    Ok(())
}
