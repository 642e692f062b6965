//! Flock snapshots as NumPy `.npz`: `pos` (N,3) f32, `vel` (N,3) f32, `id` (N,) u32. Reads also
//! take `np.savez_compressed` archives, float64 positions and velocities (converted, with a
//! note) and any integer type of ids.
//!
//! Saved ordered by id (`pos[i]` is boid `i`), so `numpy.load` users can match boids across
//! snapshots and methods. Writes are atomic (temporary file, then rename).

use super::FlockState;
use crate::atomic_file::write_atomic;
use murmur_common::Vec3;
use ndarray::{Array1, Array2, Ix1, Ix2, OwnedRepr};
use ndarray_npy::{NpzReader, NpzWriter, ReadNpyError, ReadNpzError};
use std::path::Path;

/// A snapshot that could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot open snapshot {path}: {source}")]
    Open {
        path: String,
        source: std::io::Error,
    },
    #[error("snapshot {path} is not a readable .npz with pos, vel and id: {message}")]
    Corrupt { path: String, message: String },
    #[error("snapshot {path}: {message}")]
    Invalid { path: String, message: String },
    #[error("cannot write snapshot {path}: {message}")]
    Write { path: String, message: String },
}

/// Writes `state` (any order) to `path`, ordered by id.
pub fn save(path: &Path, state: &FlockState) -> Result<(), SnapshotError> {
    let s = state.sorted_by_id();
    let n = s.len();
    let flat = |v: &[Vec3]| {
        Array2::from_shape_vec((n, 3), v.iter().flat_map(|p| p.to_array()).collect())
            .expect("n x 3 values")
    };
    let (pos, vel, id) = (flat(&s.pos), flat(&s.vel), Array1::from_vec(s.id.clone()));
    write_atomic(path, |w| {
        let mut npz = NpzWriter::new(w);
        let e = |e: ndarray_npy::WriteNpzError| std::io::Error::other(e.to_string());
        npz.add_array("pos", &pos).map_err(e)?;
        npz.add_array("vel", &vel).map_err(e)?;
        npz.add_array("id", &id).map_err(e)?;
        npz.finish().map_err(e)?;
        Ok(())
    })
    .map_err(|e| SnapshotError::Write {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}

/// Reads and checks a snapshot: shapes, finite values, ids a permutation of `0..n`.
pub fn load(path: &Path) -> Result<FlockState, SnapshotError> {
    load_with_notes(path).map(|(state, _)| state)
}

/// [`load`], with the conversions it made, one line each (`pos is float64: converted to
/// float32`): plain and `np.savez_compressed` archives are read; `pos` and `vel` may be float32
/// or float64, `id` any integer type holding `0..n`.
pub fn load_with_notes(path: &Path) -> Result<(FlockState, Vec<String>), SnapshotError> {
    let p = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| SnapshotError::Open {
        path: p.clone(),
        source,
    })?;
    let corrupt = |m: String| SnapshotError::Corrupt {
        path: p.clone(),
        message: m,
    };
    let invalid = |m: String| SnapshotError::Invalid {
        path: p.clone(),
        message: m,
    };
    let mut npz = NpzReader::new(file).map_err(|e| corrupt(e.to_string()))?;
    let mut notes = Vec::new();
    let mut floats = |name: &str| -> Result<Array2<f32>, SnapshotError> {
        match npz.by_name::<OwnedRepr<f32>, Ix2>(name) {
            Ok(a) => Ok(a),
            Err(ReadNpzError::Npy(ReadNpyError::WrongDescriptor(d))) => {
                match npz.by_name::<OwnedRepr<f64>, Ix2>(name) {
                    Ok(a) => {
                        notes.push(format!("{p}: {name} is float64: converted to float32"));
                        Ok(a.mapv(|x| x as f32))
                    }
                    Err(_) => Err(invalid(format!("{name} must be float32 (got {d})"))),
                }
            }
            Err(e) => Err(corrupt(format!("{name}: {e}"))),
        }
    };
    let pos = floats("pos")?;
    let vel = floats("vel")?;
    let id = read_ids(&mut npz).map_err(|e| match e {
        IdError::Read(e) => corrupt(format!("id: {e}")),
        IdError::Dtype(d) => invalid(format!("id must be an integer array (got {d})")),
        IdError::Range(x) => invalid(format!("id holds {x}, which is not an index")),
    })?;
    let n = pos.nrows();
    if pos.ncols() != 3 || vel.ncols() != 3 {
        return Err(invalid(format!(
            "pos and vel must be (N, 3), got {:?} and {:?}",
            pos.shape(),
            vel.shape()
        )));
    }
    if vel.nrows() != n || id.len() != n {
        return Err(invalid(format!(
            "pos, vel and id disagree on N: {}, {}, {}",
            n,
            vel.nrows(),
            id.len()
        )));
    }
    if n == 0 {
        return Err(invalid("it holds no boids".into()));
    }
    if let Some(x) = pos.iter().chain(vel.iter()).find(|x| !x.is_finite()) {
        return Err(invalid(format!("it holds a non-finite value ({x})")));
    }
    let mut seen = vec![false; n];
    for &i in id.iter() {
        if (i as usize) >= n || std::mem::replace(&mut seen[i as usize], true) {
            return Err(invalid(format!(
                "id must be a permutation of 0..{n}; found {i} out of range or twice"
            )));
        }
    }
    let rows = |a: &Array2<f32>| {
        a.rows()
            .into_iter()
            .map(|r| Vec3::new(r[0], r[1], r[2]))
            .collect::<Vec<_>>()
    };
    let state = FlockState {
        pos: rows(&pos),
        vel: rows(&vel),
        id: id.to_vec(),
    };
    Ok((state, notes))
}

enum IdError {
    Read(ReadNpzError),
    Dtype(String),
    Range(String),
}

/// `id` as u32, from any integer dtype NumPy writes (`np.arange` gives int64).
fn read_ids(npz: &mut NpzReader<std::fs::File>) -> Result<Array1<u32>, IdError> {
    fn wrong(e: &ReadNpzError) -> bool {
        matches!(e, ReadNpzError::Npy(ReadNpyError::WrongDescriptor(_)))
    }
    fn convert<T: Copy + std::fmt::Display>(
        a: Array1<T>,
        f: impl Fn(T) -> Option<u32>,
    ) -> Result<Array1<u32>, IdError> {
        a.iter()
            .map(|&x| f(x).ok_or_else(|| IdError::Range(x.to_string())))
            .collect::<Result<Vec<u32>, _>>()
            .map(Array1::from_vec)
    }
    let first = match npz.by_name::<OwnedRepr<u32>, Ix1>("id") {
        Ok(a) => return Ok(a),
        Err(e) if wrong(&e) => e,
        Err(e) => return Err(IdError::Read(e)),
    };
    if let Ok(a) = npz.by_name::<OwnedRepr<i64>, Ix1>("id") {
        return convert(a, |x| u32::try_from(x).ok());
    }
    if let Ok(a) = npz.by_name::<OwnedRepr<u64>, Ix1>("id") {
        return convert(a, |x| u32::try_from(x).ok());
    }
    if let Ok(a) = npz.by_name::<OwnedRepr<i32>, Ix1>("id") {
        return convert(a, |x| u32::try_from(x).ok());
    }
    match first {
        ReadNpzError::Npy(ReadNpyError::WrongDescriptor(d)) => Err(IdError::Dtype(d.to_string())),
        e => Err(IdError::Read(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_ids_with_their_boids() {
        let dir = std::env::temp_dir().join(format!("murmur-snap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("s.npz");
        // A shuffled state: ids 2, 0, 1.
        let state = FlockState {
            pos: vec![
                Vec3::new(2.0, 2.5, 2.25),
                Vec3::new(0.0, 0.5, 0.25),
                Vec3::new(1.0, 1.5, 1.25),
            ],
            vel: vec![Vec3::splat(0.2), Vec3::splat(0.0), Vec3::splat(0.1)],
            id: vec![2, 0, 1],
        };
        save(&path, &state).unwrap();
        let back = load(&path).unwrap();
        assert_eq!(back.id, vec![0, 1, 2]);
        assert_eq!(back.pos[2], Vec3::new(2.0, 2.5, 2.25));
        assert_eq!(back.vel[1], Vec3::splat(0.1));
        assert_eq!(back, state.sorted_by_id());
        std::fs::write(&path, b"not a zip").unwrap();
        assert!(matches!(load(&path), Err(SnapshotError::Corrupt { .. })));
        assert!(matches!(
            load(&dir.join("missing.npz")),
            Err(SnapshotError::Open { .. })
        ));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
