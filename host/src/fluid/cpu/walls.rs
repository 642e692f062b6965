//! The CPU's fixed solids with interpolated bounce-back: stage `wall_links` over every cut link
//! (`murmur_common::lbm::links::fill_links`, the kernel's math), and the force records of the
//! steps not yet read.

use super::{view, view_mut};
use crate::fluid::forces::ForceSample;
use crate::fluid::walls::Walls;
use crate::fluid::Setup;
use murmur_common::lbm::links::{fill_links, WallLinks};
use murmur_common::lbm::{Populations, Storage};

/// The cut links and the records of the steps since the last read.
pub(super) struct CpuWalls {
    walls: Walls,
    /// Force rows are numbered after the immersed solids'.
    first: usize,
    /// One record per pending step, back to back.
    records: Vec<u64>,
    /// The steps of `records`, oldest first.
    pending: Vec<u64>,
}

impl CpuWalls {
    /// The walls of `setup`, if it has any.
    pub(super) fn new(setup: &Setup) -> Option<CpuWalls> {
        (!setup.walls.is_empty()).then(|| CpuWalls {
            walls: setup.walls.clone(),
            first: setup.immersed.solids.len(),
            records: Vec::new(),
            pending: Vec::new(),
        })
    }

    /// Stage `wall_links` of step `step`: the links filled in `f` (the copy the step reads),
    /// the step's forces recorded.
    pub(super) fn fill<S: Storage>(&mut self, pops: Populations<S>, f: &mut [S::Elem], step: u64) {
        let len = self.walls.record_len();
        let at = self.records.len();
        self.records.resize(at + len, 0);
        self.pending.push(step);
        let a = WallLinks::<S> {
            pops,
            links: view(&self.walls.links),
            f: view_mut(f),
            record: view_mut(&mut self.records[at..]),
            solids: self.walls.solids.len() as u32,
            _pad: 0,
        };
        // SAFETY: `f` holds the lattice's populations, the links' cells are fluid nodes of it,
        // the record slice holds one record; one thread.
        unsafe { fill_links(&a) };
    }

    /// The rows of every pending step, oldest first; the records emptied.
    pub(super) fn drain(&mut self) -> Vec<ForceSample> {
        let len = self.walls.record_len();
        let rows = self
            .pending
            .iter()
            .enumerate()
            .flat_map(|(i, &step)| {
                self.walls
                    .rows(self.first, step, &self.records[i * len..(i + 1) * len])
            })
            .collect();
        self.pending.clear();
        self.records.clear();
        rows
    }
}
