//! A rank's state ([`crate::fluid::state`]) on several ranks: what each rank captures, how N
//! ranks' captures make the whole lattice's and how the whole lattice's splits for M ranks.
//!
//! - **The populations**: a rank's pieces hold the cells it owns, its *own box*
//!   ([`SlabPlan::own_box`]: the global offset and shape of its owned layers, no ghosts),
//!   numbered x fastest within the box, each cell's 27 values in the canonical order. A box
//!   file is then the box's part of the whole lattice's canonical array, shape
//!   `(sz, sy, sx, 27)`. [`copy_box`] moves the cells two boxes share (from N ranks' boxes
//!   into the whole lattice, or into M ranks' boxes).
//! - **The small state** ([`SmallState`]): a rank captures the whole lattice's size, the step,
//!   the inlet scale, the rates and the outlet velocities of the cells it owns, numbered
//!   globally (x fastest over the whole lattice). Its immersed state is the whole lattice's:
//!   every rank runs every sample and the solids' motion is a function of the step; the force
//!   records of steps not yet taken are summed over the ranks when taken (every rank holds the
//!   same rows), and each sample's force is the one of the rank that owns the sample, gathered
//!   by the capture (collective). [`merge_small`] joins N ranks' captures (the outlet cells'
//!   union, the rest checked equal); [`split_small`] keeps a rank's outlet cells. A rank's
//!   restore also takes the whole lattice's state (it keeps the outlet cells it owns).
//! - **The ghost layers**: a restore writes the owned cells only; the next step first
//!   exchanges the crossing populations of the face layers into the ghost layers (every rank
//!   restores, so every rank exchanges), and the values of ghost slots never exchanged are the
//!   initial state's, as in a run that never stopped.

use super::{SlabFluid, SlabPlan};
use crate::fluid::state::{self, SmallState};
use crate::fluid::{FluidBackend, FluidError};
use murmur_common::lbm::Lattice;

/// A box of cells: its global offset and its shape, `[x, y, z]`.
pub type CellBox = ([u32; 3], [u32; 3]);

impl SlabPlan {
    /// The cells `rank` owns (no ghost layers): their global offset and shape, `[x, y, z]`.
    pub fn own_box(&self, rank: usize) -> CellBox {
        let mut offset = [0u32; 3];
        let mut shape = [self.global.nx, self.global.ny, self.global.nz];
        offset[self.axis] = self.ranges[rank].start;
        shape[self.axis] = self.owned(rank);
        (offset, shape)
    }
}

/// Cells of a box's shape.
pub fn box_len(shape: [u32; 3]) -> usize {
    shape.iter().map(|&s| s as usize).product()
}

/// The local cell of a slab's own-box cell `i` (x fastest within the box): `local` is the
/// slab's lattice with one ghost layer on either side along `axis`.
pub fn own_cell(local: Lattice, axis: usize, i: usize) -> usize {
    let mut shape = [local.nx, local.ny, local.nz];
    shape[axis] -= 2;
    let mut c = coords(shape, i);
    c[axis] += 1;
    local.index(c[0], c[1], c[2])
}

/// The buffer's cells of a state piece `cells` on a lattice `local` (`slab`: a rank's slab
/// cut along that axis, whose pieces number its own box's cells; `None`: the whole lattice,
/// whose pieces number its cells), checked against the piece's `bytes`; and the range of
/// local cells that holds them (ascending: the map keeps their order).
pub fn piece_cells(
    local: Lattice,
    slab: Option<usize>,
    storage: murmur_common::lbm::StorageKind,
    cells: &std::ops::Range<usize>,
    bytes: usize,
) -> Result<(impl Iterator<Item = usize> + Clone, std::ops::Range<usize>), FluidError> {
    let mut room = local;
    if let Some(axis) = slab {
        // The own box: the lattice without its ghost layers.
        let mut d = [local.nx, local.ny, local.nz];
        d[axis] -= 2;
        room = Lattice::new(d[0], d[1], d[2]);
    }
    state::check_piece(room, storage, cells, bytes)?;
    let map = move |i: usize| match slab {
        Some(axis) => own_cell(local, axis, i),
        None => i,
    };
    let span = match cells.is_empty() {
        true => 0..0,
        false => map(cells.start)..map(cells.end - 1) + 1,
    };
    Ok((cells.clone().map(map), span))
}

/// Coordinates of cell `i` of a box of `shape` (x fastest).
fn coords(shape: [u32; 3], i: usize) -> [u32; 3] {
    let (sx, sy) = (shape[0] as usize, shape[1] as usize);
    [
        (i % sx) as u32,
        (i / sx % sy) as u32,
        (i / (sx * sy)) as u32,
    ]
}

/// Copies the cells boxes `from` and `to` share from `src` (the cells of `from`, x fastest,
/// `cell_bytes` bytes each) into `dst` (those of `to`); returns the cells copied. The boxes
/// are in one lattice's coordinates (no wrap).
pub fn copy_box(
    src: &[u8],
    from: CellBox,
    dst: &mut [u8],
    to: CellBox,
    cell_bytes: usize,
) -> Result<usize, FluidError> {
    for (what, b, len) in [("source", from, src.len()), ("target", to, dst.len())] {
        let want = box_len(b.1) * cell_bytes;
        if len != want {
            return Err(FluidError::WrongSize {
                what: format!("the {what} box's bytes ({len}, {want} expected)"),
            });
        }
    }
    let lo: [u32; 3] = std::array::from_fn(|a| from.0[a].max(to.0[a]));
    let hi: [u32; 3] = std::array::from_fn(|a| (from.0[a] + from.1[a]).min(to.0[a] + to.1[a]));
    if (0..3).any(|a| lo[a] >= hi[a]) {
        return Ok(0);
    }
    let at = |b: CellBox, x: u32, y: u32, z: u32| {
        let (o, s) = b;
        ((x - o[0]) as usize
            + s[0] as usize * ((y - o[1]) as usize + s[1] as usize * (z - o[2]) as usize))
            * cell_bytes
    };
    // Rows along x are contiguous in both boxes.
    let row = (hi[0] - lo[0]) as usize * cell_bytes;
    for z in lo[2]..hi[2] {
        for y in lo[1]..hi[1] {
            let (s, d) = (at(from, lo[0], y, z), at(to, lo[0], y, z));
            dst[d..d + row].copy_from_slice(&src[s..s + row]);
        }
    }
    Ok(box_len(std::array::from_fn(|a| hi[a] - lo[a])))
}

/// The whole lattice's small state from every rank's capture (any order): the outlet cells'
/// union (each owned by one rank), the rest equal on every rank.
pub fn merge_small(parts: &[SmallState]) -> Result<SmallState, FluidError> {
    let Some(first) = parts.first() else {
        return Err(FluidError::Invalid("no rank's state to merge".into()));
    };
    let mut whole = first.clone();
    for (k, p) in parts.iter().enumerate().skip(1) {
        let same = SmallState {
            outlet_u: Vec::new(),
            band: Vec::new(),
            ..p.clone()
        } == SmallState {
            outlet_u: Vec::new(),
            band: Vec::new(),
            ..first.clone()
        };
        if !same {
            return Err(FluidError::Invalid(format!(
                "rank state {k} differs from rank state 0 beside its outlet cells (another \
                 run or step)"
            )));
        }
        whole.outlet_u.extend_from_slice(&p.outlet_u);
        whole.band.extend_from_slice(&p.band);
    }
    whole.band.sort_by_key(|b| b.cell);
    if let Some(w) = whole.band.windows(2).find(|w| w[0].cell == w[1].cell) {
        return Err(FluidError::Invalid(format!(
            "two rank states hold band cell {}",
            w[0].cell
        )));
    }
    whole.outlet_u.sort_by_key(|v| v.cell);
    if let Some(w) = whole.outlet_u.windows(2).find(|w| w[0].cell == w[1].cell) {
        return Err(FluidError::Invalid(format!(
            "two rank states hold outlet cell {}",
            w[0].cell
        )));
    }
    Ok(whole)
}

/// `rank`'s part of the whole lattice's small state under `plan`: the outlet cells and the
/// band cells it owns (whole-lattice cell numbers).
pub fn split_small(whole: &SmallState, plan: &SlabPlan, rank: usize) -> SmallState {
    let range = plan.ranges[rank].clone();
    let g = plan.global;
    let owned = |cell: u32| {
        let (x, y, z) = g.coords(cell as usize);
        range.contains(&[x, y, z][plan.axis])
    };
    SmallState {
        outlet_u: whole
            .outlet_u
            .iter()
            .filter(|v| owned(v.cell))
            .copied()
            .collect(),
        band: whole
            .band
            .iter()
            .filter(|b| owned(b.cell))
            .copied()
            .collect(),
        ..whole.clone()
    }
}

impl SlabPlan {
    /// `rank`'s local cell of global cell `cell` (`None`: another rank owns it).
    pub fn local_cell(&self, rank: usize, cell: usize) -> Option<usize> {
        let (x, y, z) = self.global.coords(cell);
        let mut c = [x, y, z];
        let range = &self.ranges[rank];
        if !range.contains(&c[self.axis]) {
            return None;
        }
        c[self.axis] = c[self.axis] - range.start + 1;
        Some(self.local_lattice(rank).index(c[0], c[1], c[2]))
    }
}

impl SlabFluid {
    /// The cells this rank owns (no ghost layers): their global offset and shape, `[x, y, z]`
    /// ([`SlabPlan::own_box`]); its state pieces number them x fastest.
    pub fn own_box(&self) -> CellBox {
        self.plan.own_box(self.rank())
    }

    /// Runs `f` on this rank's backend, marked as work, not a wait on the other ranks.
    pub(super) fn busy<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.comm.set_busy(true);
        let r = f(self);
        self.comm.set_busy(false);
        r
    }

    /// Collective: this rank's part of the whole lattice's small state (see the module docs).
    pub(super) fn capture_rank(&mut self) -> Result<SmallState, FluidError> {
        // The pending records are summed over the ranks inside (collective).
        let mut s = self.inner.capture_small_state()?;
        let r = self.rank();
        s.lattice = self.plan.global;
        // The band's owned cells (the ghost layers' belong to the neighbours).
        let owned = self.plan.owned(r);
        let (local, axis) = (self.plan.local_lattice(r), self.plan.axis);
        s.band.retain(|b| {
            let (x, y, z) = local.coords(b.cell as usize);
            (1..=owned).contains(&[x, y, z][axis])
        });
        let global = |cell: usize| self.plan.global_cell(r, cell);
        renumber(&mut s.outlet_u, |v| &mut v.cell, global);
        renumber(&mut s.band, |b| &mut b.cell, global);
        if s.immersed.is_some() {
            // Each sample's force from the rank that owns it (collective).
            let snap = FluidBackend::samples(self)?;
            if let (Some(im), Some(snap)) = (s.immersed.as_mut(), snap) {
                im.sample_force = snap.force.iter().flatten().copied().collect();
            }
        }
        Ok(s)
    }

    /// Restores this rank's part of `s` (any rank count's capture, merged or split).
    pub(super) fn restore_rank(&mut self, s: &SmallState) -> Result<(), FluidError> {
        state::check_small(
            s,
            self.plan.global,
            self.inner.model(),
            self.inner.storage(),
            self.inner.streaming(),
        )?;
        let r = self.rank();
        let mut mine = split_small(s, &self.plan, r);
        mine.lattice = self.plan.local_lattice(r);
        // Owned cells only: `split_small` kept those.
        let local = |cell: usize| self.plan.local_cell(r, cell).unwrap_or(usize::MAX);
        renumber(&mut mine.outlet_u, |v| &mut v.cell, local);
        renumber(&mut mine.band, |b| &mut b.cell, local);
        self.busy(|b| b.inner.restore_small_state(&mine))
    }
}

/// Renumbers the cell of every item (`cell` picks it) by `map` and sorts them by cell.
fn renumber<T>(items: &mut Vec<T>, cell: fn(&mut T) -> &mut u32, map: impl Fn(usize) -> usize) {
    let mut keyed: Vec<(u32, T)> = items
        .drain(..)
        .map(|mut item| {
            let c = cell(&mut item);
            *c = map(*c as usize) as u32;
            (*c, item)
        })
        .collect();
    keyed.sort_by_key(|(c, _)| *c);
    items.extend(keyed.into_iter().map(|(_, item)| item));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxes_copy_their_shared_cells_into_the_whole() {
        // A 5 x 4 x 3 lattice cut along y into two boxes; 2 bytes per cell.
        let whole: Vec<u8> = (0..60u8).flat_map(|c| [c, 100 + c]).collect();
        let g = ([0, 0, 0], [5, 4, 3]);
        let boxes = [([0, 0, 0], [5, 1, 3]), ([0, 1, 0], [5, 3, 3])];
        let mut back = vec![0u8; whole.len()];
        let mut total = 0;
        for b in boxes {
            let mut part = vec![0u8; box_len(b.1) * 2];
            assert_eq!(copy_box(&whole, g, &mut part, b, 2).unwrap(), box_len(b.1));
            // The box's first cell is the whole's cell at its offset.
            let first = (b.0[1] * 5) as u8;
            assert_eq!(&part[..2], &[first, 100 + first]);
            total += copy_box(&part, b, &mut back, g, 2).unwrap();
        }
        assert_eq!(total, 60);
        assert_eq!(back, whole);
        // Disjoint boxes share nothing; bytes of another size are refused.
        let mut other = vec![0u8; 90];
        assert_eq!(
            copy_box(&whole[..30], boxes[0], &mut other, boxes[1], 2).unwrap(),
            0
        );
        let err = copy_box(&whole, boxes[0], &mut other, boxes[1], 2).unwrap_err();
        assert!(err.to_string().contains("source box"), "{err}");
    }

    #[test]
    fn own_cells_skip_the_ghost_layers() {
        let local = Lattice::new(3, 4, 2);
        // Along y: owned layers 1..=2.
        assert_eq!(own_cell(local, 1, 0), local.index(0, 1, 0));
        assert_eq!(own_cell(local, 1, 5), local.index(2, 2, 0));
        assert_eq!(own_cell(local, 1, 6), local.index(0, 1, 1));
    }
}
