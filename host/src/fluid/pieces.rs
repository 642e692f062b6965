//! The fields of a run on several ranks as ParaView's parallel image data: each rank writes its
//! piece (`NAME_STEP_pR.vti`), rank 0 writes `NAME_STEP.pvti` that stitches them, once every
//! piece is on disk (a `.pvti` never names a missing piece).
//!
//! A piece holds the rank's owned layers and, except on the last rank, the first layer of the
//! next slab: point data pieces meet on a shared layer, as ParaView expects. The vorticity and
//! Q-criterion need the velocity's neighbours, so the rank's fields come with two layers of the
//! neighbouring slabs on each side (`SlabFluid::piece` in `slab/adapter.rs`); every value written
//! equals the one a single-rank run writes.

use super::derived::Derived;
use super::driver::Sink;
use super::forces::state::SeriesState;
use super::forces::ForceSample;
use super::ib::plan::SampleSnapshot;
use super::output::{write_pvti, Snapshot};
use super::resume::NamedArray;
use super::slab::{Piece, SlabPlan};
use super::{Fields, FluidBackend, FluidError};
use crate::ranks::Comm;
use murmur_common::lbm::{Lattice, Units};
use std::path::PathBuf;
use std::sync::Arc;

/// Writes each rank's piece and rank 0's `.pvti` every output step.
pub struct PieceSink {
    pub name: String,
    pub dir: PathBuf,
    pub units: Units,
    /// The whole lattice's cell bytes.
    pub flags: Vec<u8>,
    /// Axes that wrap, for the velocity gradients.
    pub periodic: [bool; 3],
    pub comm: Arc<dyn Comm>,
    pub plan: SlabPlan,
    /// Files this rank wrote, in order.
    pub written: Vec<PathBuf>,
}

/// The values of the cells of `l` whose layer along `axis` lies in `keep` (`comps` values per
/// cell), in cell order.
fn crop_layers<T: Copy>(
    values: &[T],
    comps: usize,
    l: &Lattice,
    axis: usize,
    keep: std::ops::Range<u32>,
) -> Vec<T> {
    let mut out = Vec::new();
    for c in 0..l.cells() {
        let (x, y, z) = l.coords(c);
        if keep.contains(&[x, y, z][axis]) {
            out.extend_from_slice(&values[comps * c..comps * c + comps]);
        }
    }
    out
}

impl PieceSink {
    /// The piece file of `rank` at `step`.
    fn piece_name(&self, step: u64, rank: usize) -> String {
        format!("{}_{step:07}_p{rank}.vti", self.name)
    }
}

/// What a rank writes at one output step: its piece of the fields, their cell bytes and
/// derived fields, and where the piece starts in the whole lattice.
pub struct PieceData {
    pub fields: Fields,
    pub flags: Vec<u8>,
    pub derived: Derived,
    pub origin: [u32; 3],
}

impl PieceSink {
    /// This rank's piece at `step` from its fields with the neighbours' layers
    /// ([`super::slab::SlabFluid`] in piece mode): the derived fields computed over the whole
    /// extended piece, then the written layers kept.
    pub fn piece_data(&self, step: u64, piece_fields: &Fields) -> Result<PieceData, FluidError> {
        let rank = self.comm.rank();
        let piece = Piece::of(&self.plan, rank, self.periodic[self.plan.axis]);
        let a = self.plan.axis;
        let ext = piece_fields.lattice;
        // The cell bytes of the extended piece, from the whole lattice (the axis wraps).
        let g = self.plan.global;
        let n_axis = [g.nx, g.ny, g.nz][a] as i64;
        let flags: Vec<u8> = (0..ext.cells())
            .map(|c| {
                let (x, y, z) = ext.coords(c);
                let mut p = [x, y, z];
                p[a] = (piece.first + p[a] as i64).rem_euclid(n_axis) as u32;
                self.flags[g.index(p[0], p[1], p[2])]
            })
            .collect();
        let mut periodic = self.periodic;
        periodic[a] = false;
        let t = step as f64 * self.units.dt;
        let full = Snapshot::new(piece_fields, &flags, &self.units, t, periodic)?;
        // Keep the written layers.
        let keep = piece.below..piece.below + piece.written;
        let mut dims = [ext.nx, ext.ny, ext.nz];
        dims[a] = piece.written;
        let lattice = Lattice::new(dims[0], dims[1], dims[2]);
        let n = ext.cells();
        let mut data = Vec::with_capacity(4 * lattice.cells());
        for k in 0..4 {
            data.extend(crop_layers(
                &piece_fields.data[k * n..(k + 1) * n],
                1,
                &ext,
                a,
                keep.clone(),
            ));
        }
        let derived = Derived {
            lattice,
            vorticity: crop_layers(&full.derived.vorticity, 3, &ext, a, keep.clone()),
            q_criterion: crop_layers(&full.derived.q_criterion, 1, &ext, a, keep.clone()),
        };
        let mut origin = [0u32; 3];
        origin[a] = (piece.first + piece.below as i64) as u32;
        Ok(PieceData {
            fields: Fields { lattice, data },
            flags: crop_layers(&flags, 1, &ext, a, keep),
            derived,
            origin,
        })
    }
}

impl Sink for PieceSink {
    fn fields(
        &mut self,
        step: u64,
        piece_fields: &Fields,
        _: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError> {
        let rank = self.comm.rank();
        let a = self.plan.axis;
        let g = self.plan.global;
        let t = step as f64 * self.units.dt;
        let d = self.piece_data(step, piece_fields)?;
        let snapshot = Snapshot {
            fields: &d.fields,
            flags: &d.flags,
            units: self.units,
            time_s: t,
            derived: d.derived,
        };
        let origin = d.origin;
        let path = self.dir.join(self.piece_name(step, rank));
        snapshot.write_vti_piece(&path, origin, g)?;
        self.written.push(path);
        // Every piece is on disk before rank 0 names them.
        let oks = self.comm.all_gather(&[1u8])?;
        if rank == 0 && oks.iter().all(|m| m == &[1u8]) {
            let pieces: Vec<([u32; 3], [u32; 3], String)> = (0..self.plan.size())
                .map(|r| {
                    let p = Piece::of(&self.plan, r, self.periodic[a]);
                    let mut lo = [0u32; 3];
                    let mut hi = [g.nx - 1, g.ny - 1, g.nz - 1];
                    lo[a] = (p.first + p.below as i64) as u32;
                    hi[a] = lo[a] + p.written - 1;
                    (lo, hi, self.piece_name(step, r))
                })
                .collect();
            let path = self.dir.join(format!("{}_{step:07}.pvti", self.name));
            write_pvti(&path, g, &pieces, &self.units)?;
            self.written.push(path);
        }
        Ok(())
    }
}

/// Rank 0 writing pieces: the fields to its piece sink, everything else (the solids' force
/// rows and their series, which its checkpoints keep) to the run's own sink.
pub struct LeadPieces<'a> {
    pub pieces: &'a mut PieceSink,
    pub run: &'a mut dyn Sink,
}

impl Sink for LeadPieces<'_> {
    fn after_step(&mut self, backend: &mut dyn FluidBackend) -> Result<(), FluidError> {
        self.run.after_step(backend)
    }

    fn fields(
        &mut self,
        step: u64,
        fields: &Fields,
        samples: Option<&SampleSnapshot>,
    ) -> Result<(), FluidError> {
        self.pieces.fields(step, fields, samples)
    }

    fn wants_fields(&self) -> bool {
        self.pieces.wants_fields()
    }

    fn forces(&mut self, rows: &[ForceSample]) -> Result<(), FluidError> {
        self.run.forces(rows)
    }

    fn force_state(&self) -> Option<SeriesState> {
        self.run.force_state()
    }

    fn checkpoint_due(&self, step: u64) -> bool {
        self.run.checkpoint_due(step)
    }

    fn checkpoint(
        &mut self,
        backend: &mut dyn FluidBackend,
        last_output: Option<u64>,
        arrays: Vec<NamedArray>,
    ) -> Result<(), FluidError> {
        self.run.checkpoint(backend, last_output, arrays)
    }
}
