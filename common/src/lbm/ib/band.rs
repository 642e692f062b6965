//! The immersed-boundary band: the cells near solid samples, the only cells that hold an
//! immersed-boundary force. The lattice keeps its bytes per cell: the band lives in bricks of
//! [`BRICK`]^3 cells, a table of one `u32` per brick (its slot in the pool, or [`EMPTY`]; 1/16
//! byte per cell) and a pool of slots, each holding [`slot::FLOATS`] values for each of its
//! cells. A brick joins the band when a sample's stencil touches one of its cells
//! ([`claim_at`]); the table is rebuilt every step, so the band follows moving solids.
//!
//! Pool layout: value `v` of cell `local` of slot `s` at `(s * FLOATS + v) * BRICK_CELLS +
//! local` (neighbouring threads, neighbouring cells of one brick, touch consecutive floats).
//!
//! The force a pass spreads is summed in fixed point ([`to_fixed`], `i64` per component, in
//! the `pass` buffer laid out like the pool with 3 values per cell): integer addition is
//! associative, so the sum does not depend on the order in which samples add, and the GPU's
//! atomic sums equal the CPU's sequential ones bit for bit.

use crate::kernel::{DevSlice, DevSliceMut};
use crate::lbm::Lattice;

/// Edge of a brick, cells.
pub const BRICK: u32 = 4;
/// Cells per brick.
pub const BRICK_CELLS: usize = (BRICK * BRICK * BRICK) as usize;
/// Table entry of a brick outside the band.
pub const EMPTY: u32 = u32::MAX;
/// Table entry of a brick being claimed (its slot number follows in the same launch).
pub const CLAIMED: u32 = u32::MAX - 1;

/// What a pool slot holds per cell.
pub mod slot {
    /// Density `rho` (0 for a cell that is not fluid or lies outside the lattice).
    pub const RHO: usize = 0;
    /// `u*`: the velocity before this step's immersed-boundary force (3 values).
    pub const U: usize = 1;
    /// The immersed-boundary force density of this step, summed over passes (3 values).
    pub const FORCE: usize = 4;
    /// Values per cell.
    pub const FLOATS: usize = 7;
    /// Fixed-point values per cell in the `pass` buffer: the force density of the current pass.
    pub const PASS_VALUES: usize = 3;
}

/// Scale of the fixed-point force sums: `2^40` (resolution `9e-13` in lattice force density;
/// values up to `2^23` fit an `i64`).
pub const FIXED_SCALE: f32 = (1u64 << 40) as f32;

/// `v` in fixed point (truncated toward zero; the scale is a power of two, so the product is
/// exact).
#[inline(always)]
pub fn to_fixed(v: f32) -> u64 {
    ((v * FIXED_SCALE) as i64) as u64
}

/// A fixed-point sum back as a float.
#[inline(always)]
pub fn from_fixed(v: u64) -> f32 {
    (v as i64) as f32 * (1.0 / FIXED_SCALE)
}

/// Index of component `c` of cell `local` of `slot` in the `pass` buffer.
#[inline(always)]
pub const fn pass_index(slot: u32, c: usize, local: usize) -> usize {
    (slot as usize * slot::PASS_VALUES + c) * BRICK_CELLS + local
}

/// Words of a `pass` buffer of `capacity` slots.
#[inline(always)]
pub const fn pass_len(capacity: u32) -> usize {
    capacity as usize * slot::PASS_VALUES * BRICK_CELLS
}

/// Counter words of the band: slots in use and the overflow flag.
pub mod counter {
    /// Slots claimed this step (may exceed the capacity: see [`OVERFLOW`]).
    pub const USED: usize = 0;
    /// Non-zero when a claim found the pool full.
    pub const OVERFLOW: usize = 1;
    /// Words.
    pub const WORDS: usize = 2;
}

/// How the lattice is cut into bricks. `#[repr(C)]`: part of kernel arguments.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bricks {
    pub lattice: Lattice,
    /// Bricks along x, y, z (the last ones may stick out of the lattice).
    pub dims: [u32; 3],
}

impl Bricks {
    #[inline(always)]
    pub const fn new(lattice: Lattice) -> Self {
        Bricks {
            lattice,
            dims: [
                lattice.nx.div_ceil(BRICK),
                lattice.ny.div_ceil(BRICK),
                lattice.nz.div_ceil(BRICK),
            ],
        }
    }

    /// Number of bricks (the table's length).
    #[inline(always)]
    pub const fn count(&self) -> usize {
        self.dims[0] as usize * self.dims[1] as usize * self.dims[2] as usize
    }

    /// Brick number and cell within it of the cell at `(x, y, z)`.
    #[inline(always)]
    pub const fn locate(&self, x: u32, y: u32, z: u32) -> (usize, usize) {
        let (bx, by, bz) = (x / BRICK, y / BRICK, z / BRICK);
        let brick = bx as usize
            + self.dims[0] as usize * (by as usize + self.dims[1] as usize * bz as usize);
        let local = (x % BRICK) + BRICK * ((y % BRICK) + BRICK * (z % BRICK));
        (brick, local as usize)
    }

    /// Brick and local index of a cell number.
    #[inline(always)]
    pub const fn locate_cell(&self, cell: usize) -> (usize, usize) {
        let (x, y, z) = self.lattice.coords(cell);
        self.locate(x, y, z)
    }

    /// Cell number of cell `local` of `brick`, or `None` where the brick sticks out of the
    /// lattice.
    #[inline(always)]
    pub const fn cell(&self, brick: usize, local: usize) -> Option<usize> {
        let b = brick as u32;
        let (bx, byz) = (b % self.dims[0], b / self.dims[0]);
        let (by, bz) = (byz % self.dims[1], byz / self.dims[1]);
        let l = local as u32;
        let x = bx * BRICK + l % BRICK;
        let y = by * BRICK + (l / BRICK) % BRICK;
        let z = bz * BRICK + l / (BRICK * BRICK);
        let lat = &self.lattice;
        if x < lat.nx && y < lat.ny && z < lat.nz {
            Some(lat.index(x, y, z))
        } else {
            None
        }
    }
}

/// Index of value `v` of cell `local` of `slot` in the pool.
#[inline(always)]
pub const fn pool_index(slot: u32, v: usize, local: usize) -> usize {
    (slot as usize * slot::FLOATS + v) * BRICK_CELLS + local
}

/// Floats of a pool of `capacity` slots.
#[inline(always)]
pub const fn pool_len(capacity: u32) -> usize {
    capacity as usize * slot::FLOATS * BRICK_CELLS
}

/// The band, written by the immersed-boundary stages.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BandMut {
    pub bricks: Bricks,
    /// Slots the pool holds.
    pub capacity: u32,
    pub _pad: u32,
    /// Slot of each brick, or [`EMPTY`] (`bricks.count()` entries).
    pub table: DevSliceMut<u32>,
    /// Brick of each slot (`capacity` entries).
    pub brick_of: DevSliceMut<u32>,
    /// `capacity` slots of [`slot::FLOATS`] x [`BRICK_CELLS`] floats.
    pub pool: DevSliceMut<f32>,
    /// `capacity` slots of [`slot::PASS_VALUES`] x [`BRICK_CELLS`] fixed-point sums.
    pub pass: DevSliceMut<u64>,
    /// [`counter::WORDS`] words.
    pub counter: DevSliceMut<u32>,
    /// Per brick (`bricks.count()` words) bit `local` set when a sample's stencil reaches the
    /// brick's fluid cell `local` this step ([`claim_at`]): the band's other cells keep
    /// `rho = 0` and take no force, so only these pull their populations.
    pub reach: DevSliceMut<u64>,
}

/// The band as the stream-collide step reads it: the force density of band cells, the pool's
/// force values (the samples' force, or a restored band's) plus the pushes' fixed-point sums.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct BandRef {
    pub bricks: Bricks,
    /// 0: there is no band (no solids); the step adds no immersed-boundary force.
    pub active: u32,
    /// 1: the pool's force values hold the band's force (the samples ran this step, or the
    /// band was restored); 0: they are stale and only the pushes count.
    pub forces: u32,
    pub table: DevSlice<u32>,
    pub pool: DevSlice<f32>,
    /// The pushes' sums of the step ([`slot::PASS_VALUES`] per cell, the `pass` buffer's
    /// layout: [`pass_index`]; empty without pushes).
    pub pushes: DevSlice<u64>,
}

impl BandRef {
    /// No band.
    pub const NONE: BandRef = BandRef {
        bricks: Bricks {
            lattice: Lattice::new(0, 0, 0),
            dims: [0; 3],
        },
        active: 0,
        forces: 0,
        table: DevSlice::empty(),
        pool: DevSlice::empty(),
        pushes: DevSlice::empty(),
    };

    /// The read view of an active band over `table` and `pool` (its force values hold the
    /// force; no pushes).
    #[inline(always)]
    pub const fn new(bricks: Bricks, table: DevSlice<u32>, pool: DevSlice<f32>) -> Self {
        BandRef {
            bricks,
            active: 1,
            forces: 1,
            table,
            pool,
            pushes: DevSlice::empty(),
        }
    }

    /// The view with the pushes' sums `pass` added to the force, the pool's force values read
    /// only when `forces`.
    #[inline(always)]
    pub const fn with_pushes(mut self, pass: DevSlice<u64>, forces: bool) -> Self {
        self.pushes = pass;
        self.forces = forces as u32;
        self
    }

    /// The immersed-boundary force density at `cell`, if the cell is in the band: the pool's
    /// force (0 where it is stale) plus the pushes' sums, each `force + from_fixed(sum)`.
    ///
    /// # Safety
    /// `table` holds `bricks.count()` entries whose slots index `pool` (and `pushes` when not
    /// empty); `cell < cells`.
    #[inline(always)]
    pub unsafe fn force(&self, cell: usize) -> Option<[f32; 3]> {
        let (s, local) = slot_in(&self.bricks, self.table, cell)?;
        let mut f = [0.0f32; 3];
        if self.forces != 0 {
            f = [
                self.pool.read(pool_index(s, slot::FORCE, local)),
                self.pool.read(pool_index(s, slot::FORCE + 1, local)),
                self.pool.read(pool_index(s, slot::FORCE + 2, local)),
            ];
        }
        if !self.pushes.is_empty() {
            for (c, v) in f.iter_mut().enumerate() {
                *v += from_fixed(self.pushes.read(pass_index(s, c, local)));
            }
        }
        Some(f)
    }
}

impl BandMut {
    /// Slots in use this step (at most the capacity).
    ///
    /// # Safety
    /// `counter` holds [`counter::WORDS`] words, not written during the launch.
    #[inline(always)]
    pub unsafe fn used(&self) -> u32 {
        let n = self.counter.read(counter::USED);
        if n < self.capacity {
            n
        } else {
            self.capacity
        }
    }

    /// Cells of the slots in use this step (`used() x BRICK_CELLS`): the items of the band
    /// stages, whose cell `i` is cell `i % BRICK_CELLS` of slot `i / BRICK_CELLS`.
    ///
    /// # Safety
    /// As [`BandMut::used`].
    #[inline(always)]
    pub unsafe fn used_cells(&self) -> usize {
        self.used() as usize * BRICK_CELLS
    }

    /// The slot of the brick holding `cell`, if it is in the band.
    ///
    /// # Safety
    /// As [`BandRef::force`], with no claim running in the same launch.
    #[inline(always)]
    pub unsafe fn slot_of(&self, cell: usize) -> Option<(u32, usize)> {
        slot_in(&self.bricks, self.table.as_const(), cell)
    }

    /// Whether a stencil reached cell `local` of `brick` this step.
    ///
    /// # Safety
    /// `brick < bricks.count()`, no [`claim_at`] running in the same launch.
    #[inline(always)]
    pub unsafe fn reached(&self, brick: usize, local: usize) -> bool {
        self.reach.read(brick) >> local & 1 != 0
    }

    /// [`BandMut::slot_of`] the cell at lattice coordinates `node`.
    ///
    /// # Safety
    /// As [`BandMut::slot_of`], `node` inside the lattice.
    #[inline(always)]
    pub unsafe fn slot_at(&self, node: [u32; 3]) -> Option<(u32, usize)> {
        let (brick, local) = self.bricks.locate(node[0], node[1], node[2]);
        let s = self.table.read(brick);
        if s >= CLAIMED {
            None
        } else {
            Some((s, local))
        }
    }

    /// Value `v` of a band cell.
    ///
    /// # Safety
    /// `slot < capacity`, `v < FLOATS`, `local < BRICK_CELLS`.
    #[inline(always)]
    pub unsafe fn get(&self, slot: u32, v: usize, local: usize) -> f32 {
        self.pool.read(pool_index(slot, v, local))
    }

    /// Sets value `v` of a band cell.
    ///
    /// # Safety
    /// As [`BandMut::get`], and no other thread accesses the value in the launch.
    #[inline(always)]
    pub unsafe fn set(&self, slot: u32, v: usize, local: usize, value: f32) {
        self.pool.write(pool_index(slot, v, local), value)
    }
}

/// The slot of the brick holding `cell` and the cell's place in it, if the brick is in the band.
///
/// # Safety
/// `table` holds `bricks.count()` entries; `cell < cells`.
#[inline(always)]
unsafe fn slot_in(bricks: &Bricks, table: DevSlice<u32>, cell: usize) -> Option<(u32, usize)> {
    let (brick, local) = bricks.locate_cell(cell);
    let s = table.read(brick);
    if s >= CLAIMED {
        None
    } else {
        Some((s, local))
    }
}

/// Puts the brick holding the cell at lattice coordinates `node` into the band: the first
/// claim of a brick takes the next free slot (atomically, so concurrent claims of one brick
/// take one slot) and records the brick for it; when the pool is full the overflow flag is
/// raised and the brick stays out. The node is not marked reached (see [`claim_at`]).
///
/// # Safety
/// The band's buffers are sized as documented on [`BandMut`]; the table was cleared to
/// [`EMPTY`] and the counter to 0 before the launch; `node` inside the lattice.
#[inline(always)]
pub unsafe fn claim_brick_at(band: &BandMut, node: [u32; 3]) {
    let (brick, _) = band.bricks.locate(node[0], node[1], node[2]);
    claim_brick(band, brick);
}

/// [`claim_brick_at`], and mark the node, a fluid stencil node, reached ([`BandMut::reach`]).
///
/// # Safety
/// As [`claim_brick_at`]; `reach` was cleared with the table.
#[inline(always)]
pub unsafe fn claim_at(band: &BandMut, node: [u32; 3]) {
    use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
    let (brick, local) = band.bricks.locate(node[0], node[1], node[2]);
    claim_brick(band, brick);
    let bit = 1u64 << local;
    let word = AtomicU64::from_ptr(band.reach.at(brick));
    if word.load(Relaxed) & bit == 0 {
        word.fetch_or(bit, Relaxed);
    }
}

/// [`claim_brick_at`] by brick number.
///
/// # Safety
/// As [`claim_brick_at`], `brick < bricks.count()`.
#[inline(always)]
unsafe fn claim_brick(band: &BandMut, brick: usize) {
    use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
    let entry = AtomicU32::from_ptr(band.table.at(brick));
    if entry.load(Relaxed) != EMPTY {
        return;
    }
    if entry
        .compare_exchange(EMPTY, CLAIMED, Relaxed, Relaxed)
        .is_err()
    {
        return;
    }
    let s = band.counter.fetch_add(counter::USED, 1);
    if s < band.capacity {
        band.brick_of.write(s as usize, brick as u32);
        entry.store(s, Relaxed);
    } else {
        entry.store(EMPTY, Relaxed);
        band.counter.write(counter::OVERFLOW, 1);
    }
}

/// Slots a band needs for solids of bounding radii `radii` (cells) on `bricks`: for each
/// solid the bricks of the cube of side `2 r + 3` cells (the solid and its stencils) wherever
/// it sits, capped by the lattice's bricks along each axis.
pub fn capacity_for(bricks: &Bricks, radii: impl IntoIterator<Item = f32>) -> u32 {
    let mut total: u64 = 0;
    for r in radii {
        let side = 2.0 * r + 3.0;
        let mut n: u64 = 1;
        for a in 0..3 {
            let per = (side / BRICK as f32) as u64 + 2;
            n *= if per < bricks.dims[a] as u64 {
                per
            } else {
                bricks.dims[a] as u64
            };
        }
        total += n;
    }
    let all = bricks.count() as u64;
    let cap = if total < all { total } else { all };
    if cap > MAX_SLOTS as u64 {
        MAX_SLOTS
    } else {
        cap as u32
    }
}

/// Most slots a pool holds: a band cell's number `slot x BRICK_CELLS + local` fits a `u32`
/// ([`band_cell`]), and slot numbers stay below [`CLAIMED`]. A larger band overflows.
pub const MAX_SLOTS: u32 = u32::MAX / BRICK_CELLS as u32;

/// The number of cell `local` of slot `slot` among the band's cells.
#[inline(always)]
pub const fn band_cell(slot: u32, local: usize) -> u32 {
    slot * BRICK_CELLS as u32 + local as u32
}

/// The `pass` index of component `c` of band cell `b` ([`band_cell`]).
#[inline(always)]
pub const fn pass_index_of(b: u32, c: usize) -> usize {
    pass_index(b / BRICK_CELLS as u32, c, b as usize % BRICK_CELLS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bricks_locate_and_back() {
        let l = Lattice::new(10, 7, 5);
        let b = Bricks::new(l);
        assert_eq!(b.dims, [3, 2, 2]);
        for cell in 0..l.cells() {
            let (brick, local) = b.locate_cell(cell);
            assert!(brick < b.count() && local < BRICK_CELLS);
            assert_eq!(b.cell(brick, local), Some(cell));
        }
        // The last brick along x covers x = 8..12, of which 10 and 11 lie outside.
        let (brick, _) = b.locate(9, 0, 0);
        assert_eq!(b.cell(brick, 2), None);
    }

    /// A band's host buffers, for [`BandMut`] views over them.
    struct HostBand {
        bricks: Bricks,
        capacity: u32,
        table: std::vec::Vec<u32>,
        brick_of: std::vec::Vec<u32>,
        pool: std::vec::Vec<f32>,
        pass: std::vec::Vec<u64>,
        count: std::vec::Vec<u32>,
        reach: std::vec::Vec<u64>,
    }

    impl HostBand {
        /// An empty band of `capacity` slots on `lattice` (the table cleared).
        fn new(lattice: Lattice, capacity: u32) -> HostBand {
            let bricks = Bricks::new(lattice);
            HostBand {
                bricks,
                capacity,
                table: std::vec![EMPTY; bricks.count()],
                brick_of: std::vec![0; capacity as usize],
                pool: std::vec![0.0; pool_len(capacity)],
                pass: std::vec![0; pass_len(capacity)],
                count: std::vec![0; counter::WORDS],
                reach: std::vec![0; bricks.count()],
            }
        }

        fn view(&mut self) -> BandMut {
            fn raw<T>(v: &mut [T]) -> DevSliceMut<T> {
                // SAFETY: the vector's memory, kept by the `HostBand` the view borrows from.
                unsafe { DevSliceMut::from_raw(v.as_mut_ptr(), v.len() as u64) }
            }
            BandMut {
                bricks: self.bricks,
                capacity: self.capacity,
                _pad: 0,
                table: raw(&mut self.table),
                brick_of: raw(&mut self.brick_of),
                pool: raw(&mut self.pool),
                pass: raw(&mut self.pass),
                counter: raw(&mut self.count),
                reach: raw(&mut self.reach),
            }
        }
    }

    #[test]
    fn claims_take_one_slot_per_brick_and_flag_overflow() {
        let l = Lattice::new(8, 8, 8);
        let mut host = HostBand::new(l, 1);
        let band = host.view();
        unsafe {
            claim_brick_at(&band, [1, 1, 1]);
            claim_brick_at(&band, [2, 3, 0]);
            assert_eq!(band.slot_of(l.index(3, 3, 3)), Some((0, 63)));
            claim_brick_at(&band, [5, 1, 1]);
            assert_eq!(band.slot_of(l.index(5, 1, 1)), None);
        }
        assert_eq!(host.count, [2, 1]);
        assert_eq!(host.brick_of[0], 0);
    }

    #[test]
    fn claims_at_stencil_nodes_mark_just_those_cells_reached() {
        let l = Lattice::new(8, 8, 8);
        let mut host = HostBand::new(l, 4);
        let (bricks, band) = (host.bricks, host.view());
        unsafe {
            claim_at(&band, [1, 2, 3]);
            claim_at(&band, [1, 2, 3]);
            claim_at(&band, [2, 2, 3]);
            claim_brick_at(&band, [5, 6, 7]);
            // Both claims found their slots, without dividing a cell number.
            assert_eq!(band.slot_at([1, 2, 3]), band.slot_of(l.index(1, 2, 3)));
            assert_eq!(band.slot_at([5, 6, 7]), band.slot_of(l.index(5, 6, 7)));
            assert!(band.slot_at([5, 6, 7]).is_some());
            for cell in 0..l.cells() {
                let (x, y, z) = l.coords(cell);
                let (brick, local) = bricks.locate(x, y, z);
                let want = [x, y, z] == [1, 2, 3] || [x, y, z] == [2, 2, 3];
                assert_eq!(band.reached(brick, local), want, "({x}, {y}, {z})");
            }
        }
        assert_eq!(host.count, [2, 0]);
    }

    #[test]
    fn fixed_point_sums_do_not_depend_on_order() {
        let v = [1.25e-3f32, -7.5e-7, 3.3e-2, 1e-9, -2.2e-2];
        let a = v.iter().fold(0u64, |s, &x| s.wrapping_add(to_fixed(x)));
        let b = v
            .iter()
            .rev()
            .fold(0u64, |s, &x| s.wrapping_add(to_fixed(x)));
        assert_eq!(a, b);
        let exact: f64 = v.iter().map(|&x| x as f64).sum();
        assert!((from_fixed(a) as f64 - exact).abs() < 1e-9);
    }

    #[test]
    fn capacity_covers_a_sphere_anywhere() {
        let bricks = Bricks::new(Lattice::new(64, 64, 1));
        // r = 6: side 15 cells = 3.75 bricks, at most 5 bricks touched per axis (z capped at 1).
        assert_eq!(capacity_for(&bricks, [6.0]), 25);
        assert_eq!(capacity_for(&bricks, [100.0]), bricks.count() as u32);
    }
}
