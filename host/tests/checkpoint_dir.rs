//! Checkpoints on disk (`murmur::internals::checkpoint`): a write that fails (full disk, aborted
//! write, failed fsync, a kill) keeps the previous checkpoint and leaves no temporary file; the
//! newest valid checkpoint of a folder; `--keep N` rotation; the manifest of several ranks.

use murmur::internals::checkpoint::{
    checkpoint_name, manifest_name, newest_valid, rank_name, remove_stale_temps, rotate, temp_path,
    verify_manifest, write_manifest, write_manifest_with, CheckpointError, CheckpointReader,
    CheckpointWriter, DType, EntryKind, FailMode, FailingSink, Header, Kind, Manifest,
    ManifestPiece, Piece, Written,
};
use std::path::{Path, PathBuf};

fn folder(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("murmur-ckdir-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn one_line(e: &CheckpointError) -> String {
    let m = e.to_string();
    assert!(!m.contains('\n'), "one line: {m}");
    m
}

/// Fills `w` with a few arrays of `seed` (about 70 kB) and finishes it.
fn fill(mut w: CheckpointWriter, seed: u32) -> Result<Written, CheckpointError> {
    let pops: Vec<u16> = (0..27 * 1000).map(|i| (i * 31 + seed) as u16).collect();
    let vel: Vec<f32> = (0..3000).map(|i| i as f32 * 0.5 + seed as f32).collect();
    w.write_slice("populations", &[1000, 27], &pops)?;
    w.write_slice("velocity", &[10, 10, 10, 3], &vel)?;
    w.write_slice("flags", &[1000], &vec![seed as u8; 1000])?;
    w.finish()
}

fn header(step: u64) -> Header {
    Header::new(Kind::Fluid, step, step as f64).with_field("model", "bgk")
}

fn write(path: &Path, step: u64, seed: u32) -> Written {
    fill(CheckpointWriter::create(path, header(step)).unwrap(), seed).unwrap()
}

#[test]
fn a_failed_write_keeps_the_previous_checkpoint_and_no_temporary() {
    let d = folder("fail");
    let path = d.join(checkpoint_name("fluid", 100));
    let p = path.display().to_string();
    write(&path, 100, 1);
    let old = std::fs::read(&path).unwrap();
    let size = old.len() as u64;
    let budgets = [
        0,
        1,
        29,
        64,
        200,
        1000,
        54_000,
        size / 2,
        size - 200,
        size - 1,
    ];
    for mode in [FailMode::Full, FailMode::Abort] {
        for n in budgets {
            let factory = FailingSink::factory(n, mode);
            let e = CheckpointWriter::create_with(&path, header(100), &*factory)
                .and_then(|w| fill(w, 2))
                .unwrap_err();
            let m = one_line(&e);
            let why = match mode {
                FailMode::Full => "no space left on device",
                _ => "write aborted",
            };
            assert!(
                m.starts_with(&format!("cannot write checkpoint {p}: ")),
                "{m}"
            );
            assert!(m.contains(why), "{mode:?} after {n} bytes: {m}");
            assert_eq!(
                std::fs::read(&path).unwrap(),
                old,
                "{mode:?} after {n} bytes"
            );
            assert_eq!(
                names(&d),
                ["fluid-0000000100.npz"],
                "{mode:?} after {n} bytes"
            );
        }
    }
    let factory = FailingSink::factory(0, FailMode::Sync);
    let e = CheckpointWriter::create_with(&path, header(100), &*factory)
        .and_then(|w| fill(w, 2))
        .unwrap_err();
    assert!(one_line(&e).contains("fsync: input/output error"), "{e}");
    assert_eq!(std::fs::read(&path).unwrap(), old);
    assert_eq!(names(&d), ["fluid-0000000100.npz"]);
    // With the budget the whole file needs, the same sink writes it.
    let factory = FailingSink::factory(u64::MAX, FailMode::Full);
    fill(
        CheckpointWriter::create_with(&path, header(100), &*factory).unwrap(),
        2,
    )
    .unwrap();
    let mut r = CheckpointReader::open(&path).unwrap();
    assert_eq!(r.read_vec::<u8>("flags").unwrap(), vec![2u8; 1000]);
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn a_killed_write_leaves_the_previous_checkpoint_and_a_stale_temporary() {
    let d = folder("kill");
    let a = d.join(checkpoint_name("fluid", 100));
    write(&a, 100, 1);
    let old = std::fs::read(&a).unwrap();
    // A kill in the middle of the next checkpoint, and of one that rewrites `a`: the writers
    // never finish nor drop.
    let b = d.join(checkpoint_name("fluid", 200));
    for path in [&b, &a] {
        let mut w = CheckpointWriter::create(path, header(200)).unwrap();
        w.begin_array("populations", DType::U16, &[1 << 20])
            .unwrap();
        w.write_chunk(&vec![7u8; 1 << 20]).unwrap();
        std::mem::forget(w);
        assert!(temp_path(path).exists());
    }
    assert_eq!(std::fs::read(&a).unwrap(), old);
    assert!(!b.exists());
    let found = newest_valid(&d).unwrap();
    assert_eq!(
        (found.path, found.step, found.notes.len()),
        (a.clone(), 100, 0)
    );
    // This process's temporaries stay (it may still write them); a dead writer's go.
    assert!(remove_stale_temps(&d).unwrap().is_empty());
    let dead = b.with_file_name("fluid-0000000200.npz.tmp-2147483646");
    std::fs::rename(temp_path(&b), &dead).unwrap();
    assert_eq!(remove_stale_temps(&d).unwrap(), [dead]);
    let mut left = names(&d);
    left.sort();
    let own = format!("fluid-0000000100.npz.tmp-{}", std::process::id());
    assert_eq!(left, ["fluid-0000000100.npz".to_string(), own]);
    std::fs::remove_dir_all(&d).unwrap();
}

/// Cuts `path` to `keep` bytes.
fn truncate(path: &Path, keep: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(keep)
        .unwrap();
}

#[test]
fn newest_valid_skips_a_truncated_or_corrupt_newest() {
    let d = folder("newest");
    let e = newest_valid(&d).unwrap_err();
    assert_eq!(
        one_line(&e),
        format!("no valid checkpoint in {}", d.display())
    );
    for step in [100, 200, 300] {
        write(&d.join(checkpoint_name("fluid", step)), step, step as u32);
    }
    std::fs::write(d.join("notes.txt"), "not a checkpoint").unwrap();
    let newest = d.join(checkpoint_name("fluid", 300));
    let len = std::fs::metadata(&newest).unwrap().len();
    truncate(&newest, len / 2);
    let found = newest_valid(&d).unwrap();
    assert_eq!((found.step, found.kind), (200, EntryKind::File));
    assert_eq!(found.notes.len(), 1);
    let want = format!("skipped: checkpoint {} is truncated", newest.display());
    assert!(found.notes[0].starts_with(&want), "{:?}", found.notes);
    // Step 200 corrupt too (one byte of its velocity): step 100.
    let second = d.join(checkpoint_name("fluid", 200));
    let mut bytes = std::fs::read(&second).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&second, bytes).unwrap();
    let found = newest_valid(&d).unwrap();
    assert_eq!(found.step, 100);
    assert_eq!(found.notes.len(), 2);
    assert!(
        found.notes[1].contains("is corrupt: array"),
        "{:?}",
        found.notes
    );
    truncate(&d.join(checkpoint_name("fluid", 100)), 10);
    let e = newest_valid(&d).unwrap_err();
    let m = one_line(&e);
    assert!(
        m.starts_with(&format!(
            "no valid checkpoint in {} (skipped: ",
            d.display()
        )),
        "{m}"
    );
    assert_eq!(m.matches("skipped:").count(), 3, "{m}");
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn keep_n_deletes_only_older_checkpoints_of_its_prefix() {
    let d = folder("keep");
    for step in [100, 200, 300, 400, 500] {
        write(&d.join(checkpoint_name("fluid", step)), step, 1);
    }
    write(&d.join(checkpoint_name("other", 100)), 100, 1);
    std::fs::write(d.join("notes.txt"), "kept").unwrap();
    let newest = d.join(checkpoint_name("fluid", 500));
    let e = rotate(&newest, 0).unwrap_err();
    assert!(one_line(&e).ends_with("--keep must be at least 1"), "{e}");
    // A newest that is not complete deletes nothing.
    let missing = d.join(checkpoint_name("fluid", 600));
    assert!(rotate(&missing, 1).is_err());
    assert_eq!(names(&d).len(), 7);
    let removed = rotate(&newest, 2).unwrap();
    assert_eq!(removed.len(), 3);
    assert_eq!(
        names(&d),
        [
            "fluid-0000000400.npz",
            "fluid-0000000500.npz",
            "notes.txt",
            "other-0000000100.npz"
        ]
    );
    // A later step (another run's) stays.
    write(&d.join(checkpoint_name("fluid", 900)), 900, 1);
    assert_eq!(
        rotate(&newest, 1).unwrap(),
        [d.join(checkpoint_name("fluid", 400))]
    );
    assert_eq!(
        names(&d),
        [
            "fluid-0000000500.npz",
            "fluid-0000000900.npz",
            "notes.txt",
            "other-0000000100.npz"
        ]
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// Writes a checkpoint of two ranks at `step` (slabs of an 8 x 4 x 4 lattice along x).
fn two_ranks(d: &Path, step: u64, seeds: [u32; 2]) -> PathBuf {
    let mut m = Manifest::new(Kind::Fluid, step, step as f64, vec![8, 4, 4]);
    m.fields.insert("model".into(), "bgk".into());
    for rank in 0..2u32 {
        let piece = Piece {
            rank,
            ranks: 2,
            global_shape: vec![8, 4, 4],
            offset: vec![4 * u64::from(rank), 0, 0],
            shape: vec![4, 4, 4],
        };
        let file = rank_name("fluid", step, rank);
        let w = CheckpointWriter::create(&d.join(&file), header(step).with_piece(piece.clone()));
        let written = fill(w.unwrap(), seeds[rank as usize]).unwrap();
        m.pieces.push(ManifestPiece {
            file,
            rank,
            offset: piece.offset,
            shape: piece.shape,
            header_sha256: written.header_sha256,
        });
    }
    let path = d.join(manifest_name("fluid", step));
    write_manifest(&path, &m).unwrap();
    assert_eq!(verify_manifest(&path).unwrap(), m);
    path
}

#[test]
fn several_ranks_write_a_manifest_checked_file_by_file() {
    let d = folder("ranks");
    write(&d.join(checkpoint_name("fluid", 50)), 50, 1);
    let manifest = two_ranks(&d, 100, [1, 2]);
    let found = newest_valid(&d).unwrap();
    assert_eq!(
        (&found.path, found.step, found.kind),
        (&manifest, 100, EntryKind::Manifest)
    );
    // Rank 1's file replaced by another checkpoint's: refused, and the single file is picked.
    let other = folder("ranks-other");
    two_ranks(&other, 100, [1, 3]);
    let r1 = rank_name("fluid", 100, 1);
    std::fs::copy(other.join(&r1), d.join(&r1)).unwrap();
    let e = verify_manifest(&manifest).unwrap_err();
    let want = format!("rank 1's file {r1} is not the one it lists (header SHA-256 differs)");
    assert!(one_line(&e).ends_with(&want), "{e}");
    let found = newest_valid(&d).unwrap();
    assert_eq!((found.step, found.notes.len()), (50, 1));
    std::fs::remove_file(d.join(&r1)).unwrap();
    let e = verify_manifest(&manifest).unwrap_err();
    assert!(one_line(&e).starts_with("cannot read checkpoint"), "{e}");
    // A manifest whose write fails leaves neither it nor a temporary.
    let m = verify_manifest(&two_ranks(&other, 200, [1, 2])).unwrap();
    let path = d.join(manifest_name("fluid", 300));
    let e = write_manifest_with(&path, &m, &*FailingSink::factory(10, FailMode::Full));
    assert!(one_line(&e.unwrap_err()).contains("no space left on device"));
    assert!(!path.exists() && !temp_path(&path).exists());
    // Rotation deletes a manifest and its ranks' files.
    let two = two_ranks(&d, 400, [1, 2]);
    let removed = rotate(&two, 1).unwrap();
    assert_eq!(removed.len(), 3, "{removed:?}"); // step 50; the manifest of 100 and rank 0
    assert_eq!(
        names(&d),
        [
            "fluid-0000000400.manifest.toml",
            "fluid-0000000400.rank000.npz",
            "fluid-0000000400.rank001.npz"
        ]
    );
    std::fs::remove_dir_all(&d).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
}
