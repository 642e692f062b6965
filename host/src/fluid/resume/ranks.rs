//! Checkpoints of several ranks, and checkpoints read by another number of ranks.
//!
//! - **Writing** ([`save_ranks`], collective): every rank writes its own box of the lattice to
//!   `PREFIX-STEP.rankRRR.npz` (the header's `piece` gives its offset and shape in the whole,
//!   NumPy order `[z, y, x]`), then rank 0 writes the manifest `PREFIX-STEP.manifest.toml` that
//!   lists every file with its header's SHA-256, once every file is complete. Every rank learns
//!   whether all writes succeeded: all fail or none does.
//! - **Reading** ([`restore_boxes`]): the sources are a manifest's files or one file (its box the
//!   whole lattice); a rank (or one lattice) reads the files whose boxes overlap its own and
//!   copies the shared cells: a checkpoint of N ranks resumes on M. The cut is along one axis
//!   whatever the number of ranks, so the overlaps are layers. The small state is merged from
//!   every file's (the outlet cells each owns; the rest is the whole lattice's in each).

use super::{arrays, identity, Expected, RunExtra, SaveContext};
use crate::checkpoint::{
    manifest_name, rank_name, read_manifest, write_manifest, CheckpointReader, Kind, Manifest,
    ManifestPiece, Piece, Schedule,
};
use crate::fluid::slab::state::{box_len, copy_box, merge_small, CellBox};
use crate::fluid::state::{cell_bytes, SmallState};
use crate::fluid::{FluidBackend, FluidError};
use crate::ranks::Comm;
use std::path::{Path, PathBuf};

/// One file to read and the cells it holds (`[x, y, z]` offset and shape).
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub path: PathBuf,
    pub cells: CellBox,
    /// The SHA-256 of its header the manifest lists (`None`: one file, no manifest).
    pub header_sha256: Option<String>,
}

fn xyz(v: &[u64]) -> Option<[u32; 3]> {
    match v {
        [z, y, x] => Some([*x as u32, *y as u32, *z as u32]),
        _ => None,
    }
}

/// The files of the checkpoint `path`: a manifest's, or the one file.
pub fn sources(path: &Path, manifest: bool, whole: [u32; 3]) -> Result<Vec<Source>, FluidError> {
    if !manifest {
        return Ok(vec![Source {
            path: path.to_path_buf(),
            cells: ([0; 3], whole),
            header_sha256: None,
        }]);
    }
    let m = read_manifest(path)?;
    if m.kind != Kind::Fluid {
        return Err(FluidError::Invalid(format!(
            "checkpoint {} is a {} checkpoint, not a fluid's",
            path.display(),
            m.kind
        )));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    m.pieces
        .iter()
        .map(|p| {
            let bad = || {
                FluidError::Invalid(format!(
                    "checkpoint {} is corrupt: rank {}'s offset or shape is not three numbers",
                    path.display(),
                    p.rank
                ))
            };
            Ok(Source {
                path: dir.join(&p.file),
                cells: (
                    xyz(&p.offset).ok_or_else(bad)?,
                    xyz(&p.shape).ok_or_else(bad)?,
                ),
                header_sha256: Some(p.header_sha256.clone()),
            })
        })
        .collect()
}

/// Restores the checkpoint made of `sources` into `backend`, whose state pieces number the
/// cells of `target` (a rank's own box; the whole lattice for one lattice): each source's header
/// checked against `want` (and the manifest's SHA-256), the small state merged from all of
/// them, the populations and flags of the overlapping ones copied into the box. Returns the
/// step and the run's extra state (the force series from the file that holds it).
pub fn restore_boxes(
    sources: &[Source],
    target: CellBox,
    backend: &mut dyn FluidBackend,
    flags: &[u8],
    want: &Expected,
) -> Result<(u64, RunExtra), FluidError> {
    let b = cell_bytes(want.storage);
    let n = box_len(target.1);
    let l = want.lattice;
    let whole = ([0u32; 3], [l.nx, l.ny, l.nz]);
    let mut want_flags = vec![0u8; n];
    copy_box(flags, whole, &mut want_flags, target, 1)?;
    let mut pops = vec![0u8; n * b];
    let mut got_flags = vec![0u8; n];
    let mut covered = 0usize;
    let mut smalls: Vec<SmallState> = Vec::new();
    let mut extra = RunExtra::default();
    let mut step = None;
    for src in sources {
        let mut r = CheckpointReader::open(&src.path)?;
        if let Some(sha) = &src.header_sha256 {
            if r.header_sha256() != sha {
                return Err(FluidError::Invalid(format!(
                    "checkpoint {} is not the file its manifest lists (header SHA-256 differs)",
                    src.path.display()
                )));
            }
        }
        r.expect_kind(Kind::Fluid)?;
        identity::check(&r, want.identity)?;
        super::check_fields(&r, want)?;
        let s = r.header().step;
        if *step.get_or_insert(s) != s {
            return Err(FluidError::Invalid(format!(
                "checkpoint {} is of step {s}, the others of step {}",
                src.path.display(),
                step.unwrap_or(0)
            )));
        }
        smalls.push(arrays::read_small(&mut r)?);
        if let Some(series) = arrays::read_series(&mut r)? {
            extra.series = Some(series);
        }
        if let Some(v) = r
            .header()
            .fields
            .get("last_output")
            .and_then(|v| v.as_integer())
        {
            extra.last_output = Some(v as u64);
        }
        let m = box_len(src.cells.1);
        let overlap: [bool; 3] = std::array::from_fn(|a| {
            src.cells.0[a] < target.0[a] + target.1[a]
                && target.0[a] < src.cells.0[a] + src.cells.1[a]
        });
        if !overlap.iter().all(|&o| o) {
            continue;
        }
        let f = r.read_bytes("flags")?;
        if f.len() != m {
            return Err(FluidError::Invalid(format!(
                "checkpoint {} holds {} cells' flags, its box {m}",
                src.path.display(),
                f.len()
            )));
        }
        copy_box(&f, src.cells, &mut got_flags, target, 1)?;
        let p = r.read_bytes("populations")?;
        if p.len() != m * b {
            return Err(FluidError::Invalid(format!(
                "checkpoint {} holds {} bytes of populations, its box {}",
                src.path.display(),
                p.len(),
                m * b
            )));
        }
        covered += copy_box(&p, src.cells, &mut pops, target, b)?;
    }
    if covered != n {
        return Err(FluidError::Invalid(format!(
            "the checkpoint's files hold {covered} of the {n} cells this run needs"
        )));
    }
    if got_flags != want_flags {
        return Err(FluidError::Invalid(
            "the checkpoint has other cell flags than this scene".into(),
        ));
    }
    let small = merge_small(&smalls)?;
    backend.restore_small_state(&small)?;
    backend.write_state_piece(0..n, &pops)?;
    Ok((step.unwrap_or(0), extra))
}

/// Collective: every rank writes its box of `backend` at its step (`cells` its own box, `rank`
/// of `ranks`), then rank 0 the manifest; `keep` applied on rank 0. Returns the manifest's path
/// (on every rank). All ranks fail if any rank's write fails.
pub fn save_ranks(
    schedule: &Schedule,
    backend: &mut dyn FluidBackend,
    cx: &SaveContext,
    cells: CellBox,
    comm: &dyn Comm,
) -> Result<PathBuf, FluidError> {
    let step = backend.step_count();
    let (rank, ranks) = (comm.rank(), comm.size());
    let l = backend.lattice();
    let zyx = |v: [u32; 3]| vec![v[2] as u64, v[1] as u64, v[0] as u64];
    let piece = Piece {
        rank: rank as u32,
        ranks: ranks as u32,
        global_shape: zyx([l.nx, l.ny, l.nz]),
        offset: zyx(cells.0),
        shape: zyx(cells.1),
    };
    let name = rank_name(&schedule.prefix, step, rank as u32);
    let path = schedule.dir.join(&name);
    let mine = super::save_box(&path, backend, cx, cells, Some(piece));
    let report = match &mine {
        Ok(w) => format!("ok {}", w.header_sha256),
        Err(e) => format!("error rank {rank}: {e}"),
    };
    let all = comm.all_gather(report.as_bytes())?;
    let all: Vec<String> = all
        .iter()
        .map(|m| String::from_utf8_lossy(m).into_owned())
        .collect();
    if let Some(e) = all.iter().find(|m| !m.starts_with("ok ")) {
        mine?;
        return Err(FluidError::Invalid(
            e.trim_start_matches("error ").to_string(),
        ));
    }
    let manifest = schedule.dir.join(manifest_name(&schedule.prefix, step));
    let boxes = comm_boxes(cells, comm)?;
    let mut written = Ok(());
    if rank == 0 {
        let header = CheckpointReader::open(&path)?.header().clone();
        let mut m = Manifest::new(Kind::Fluid, step, header.time, zyx([l.nx, l.ny, l.nz]));
        m.fields = header.fields.clone();
        m.fields.remove("last_output");
        for (r, (sha, b)) in all.iter().zip(boxes).enumerate() {
            m.pieces.push(ManifestPiece {
                file: rank_name(&schedule.prefix, step, r as u32),
                rank: r as u32,
                offset: zyx(b.0),
                shape: zyx(b.1),
                header_sha256: sha.trim_start_matches("ok ").to_string(),
            });
        }
        written = write_manifest(&manifest, &m)
            .map_err(FluidError::from)
            .and_then(|()| {
                schedule
                    .rotate(&manifest)
                    .map(drop)
                    .map_err(FluidError::from)
            });
    }
    let failed = comm.any(written.is_err())?;
    written?;
    if failed {
        return Err(FluidError::Invalid(format!(
            "rank 0 could not write the manifest {}",
            manifest.display()
        )));
    }
    Ok(manifest)
}

/// Every rank's box, gathered (collective; only rank 0 uses the answer).
fn comm_boxes(cells: CellBox, comm: &dyn Comm) -> Result<Vec<CellBox>, FluidError> {
    let mine: Vec<u8> = cells
        .0
        .iter()
        .chain(cells.1.iter())
        .flat_map(|v| v.to_le_bytes())
        .collect();
    let all = comm.all_gather(&mine)?;
    Ok(all
        .iter()
        .map(|m| {
            let v: Vec<u32> = m
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            ([v[0], v[1], v[2]], [v[3], v[4], v[5]])
        })
        .collect())
}
