//! The checkpoint container (`murmur::internals::checkpoint`): round trips of every dtype,
//! chunked writes, the `.npy` headers NumPy reads, and the refusals of a bad file (checksum,
//! version, header fields, not a checkpoint). The atomic writes and the folder of checkpoints
//! are in `checkpoint_dir.rs`.

use murmur::internals::checkpoint::{
    parse_npy_header, CheckpointError, CheckpointReader, CheckpointWriter, DType, Header, Kind,
    Piece, Written,
};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// A fresh folder for one test.
fn folder(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("murmur-ckfile-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The sample state: a velocity field (nz, ny, nx, 3) f32, FP16 population bits, flags, ids,
/// a time series.
struct Sample {
    velocity: Vec<f32>,
    populations: Vec<u16>,
    flags: Vec<u8>,
    ids: Vec<u32>,
    series: Vec<f64>,
    counts: Vec<i64>,
}

const VEL: [u64; 4] = [3, 4, 5, 3];
const POP: [u64; 2] = [60, 27];

fn sample(seed: u32) -> Sample {
    let n = |s: &[u64]| s.iter().product::<u64>() as usize;
    Sample {
        velocity: (0..n(&VEL))
            .map(|i| (i as f32 * 0.37 + seed as f32).sin())
            .collect(),
        populations: (0..n(&POP))
            .map(|i| (i as u32 * 2_654 + seed) as u16)
            .collect(),
        flags: (0..60).map(|i| (i % 7) as u8).collect(),
        ids: (0..1000).rev().map(|i| i + seed).collect(),
        series: (0..17)
            .map(|i| f64::from(i) / 3.0 + f64::from(seed))
            .collect(),
        counts: vec![-1, i64::MAX, i64::MIN, 0],
    }
}

fn header(step: u64) -> Header {
    Header::new(Kind::Fluid, step, step as f64 * 1e-3)
        .with_field("model", "acm-mrt")
        .with_field("storage", "fp16s")
        .with_field(
            "lattice",
            toml::Value::Array(vec![5.into(), 4.into(), 3.into()]),
        )
        .with_field("tau", 0.5123)
}

fn write(path: &Path, step: u64, seed: u32) -> Written {
    let s = sample(seed);
    let mut w = CheckpointWriter::create(path, header(step)).unwrap();
    w.write_slice("velocity", &VEL, &s.velocity).unwrap();
    w.write_slice("populations", &POP, &s.populations).unwrap();
    w.write_slice("flags", &[60], &s.flags).unwrap();
    w.write_slice("ids", &[1000], &s.ids).unwrap();
    w.write_slice("series", &[17], &s.series).unwrap();
    w.write_slice("counts", &[2, 2], &s.counts).unwrap();
    w.write_slice("scalar", &[], &[42u64]).unwrap();
    w.finish().unwrap()
}

fn one_line(e: &CheckpointError) -> String {
    let m = e.to_string();
    assert!(!m.contains('\n'), "one line: {m}");
    m
}

#[test]
fn every_dtype_round_trips() {
    let d = folder("round-trip");
    let path = d.join("fluid-0000000100.npz");
    let written = write(&path, 100, 1);
    assert_eq!(written.bytes, std::fs::metadata(&path).unwrap().len());
    let s = sample(1);
    let mut r = CheckpointReader::open(&path).unwrap();
    let h = r.header().clone();
    assert_eq!(
        (h.kind, h.step, h.time, h.format_version),
        (Kind::Fluid, 100, 100.0 * 1e-3, 1)
    );
    assert_eq!(h.murmur_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(h.fields, header(100).fields);
    assert_eq!(r.header_sha256(), written.header_sha256);
    let names: Vec<_> = h.arrays.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "velocity",
            "populations",
            "flags",
            "ids",
            "series",
            "counts",
            "scalar"
        ]
    );
    let v = h.array("velocity").unwrap();
    assert_eq!(
        (v.dtype, v.shape.as_slice(), v.bytes),
        (DType::F32, &VEL[..], 720)
    );
    r.verify().unwrap();
    assert_eq!(r.read_vec::<f32>("velocity").unwrap(), s.velocity);
    assert_eq!(r.read_vec::<u16>("populations").unwrap(), s.populations);
    assert_eq!(r.read_vec::<u8>("flags").unwrap(), s.flags);
    assert_eq!(r.read_vec::<u32>("ids").unwrap(), s.ids);
    assert_eq!(r.read_vec::<f64>("series").unwrap(), s.series);
    assert_eq!(r.read_vec::<i64>("counts").unwrap(), s.counts);
    assert_eq!(r.read_vec::<u64>("scalar").unwrap(), [42]);
    let e = r.read_vec::<u32>("velocity").unwrap_err();
    assert!(
        one_line(&e).contains("array velocity is float32, read as uint32"),
        "{e}"
    );
    let e = r.read_bytes("pressure").unwrap_err();
    assert!(
        one_line(&e).contains("no array pressure (it holds velocity, populations"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn chunked_writes_and_reads_equal_whole_ones() {
    let d = folder("chunks");
    let whole = d.join("whole-0000000001.npz");
    let chunked = d.join("chunked-0000000001.npz");
    // 3 MiB + 5 bytes: chunks over 1 MiB take the parallel hash, the rest the serial one.
    let big: Vec<u8> = (0..(3usize << 20) + 5)
        .map(|i| (i * 7 % 251) as u8)
        .collect();
    let mut w = CheckpointWriter::create(&whole, header(1)).unwrap();
    w.write_array("big", DType::U8, &[big.len() as u64], &big)
        .unwrap();
    w.write_array("vel", DType::F32, &[2, 3], &[7u8; 24])
        .unwrap();
    let a = w.finish().unwrap();
    let mut w = CheckpointWriter::create(&chunked, header(1)).unwrap();
    w.begin_array("big", DType::U8, &[big.len() as u64])
        .unwrap();
    let mut rest = &big[..];
    for n in [0, 1, 7, (1 << 20) + 3, 4096, 2 << 20].into_iter().cycle() {
        let n = n.min(rest.len());
        w.write_chunk(&rest[..n]).unwrap();
        rest = &rest[n..];
        if rest.is_empty() {
            break;
        }
    }
    w.end_array().unwrap();
    w.begin_array("vel", DType::F32, &[2, 3]).unwrap();
    for _ in 0..8 {
        w.write_chunk(&[7u8; 3]).unwrap(); // chunks split elements
    }
    w.end_array().unwrap();
    let b = w.finish().unwrap();
    assert_eq!(a.header_sha256, b.header_sha256);
    assert_eq!(
        std::fs::read(&whole).unwrap(),
        std::fs::read(&chunked).unwrap()
    );
    let mut r = CheckpointReader::open(&chunked).unwrap();
    for chunk in [1usize, 1000, 1 << 20, 64 << 20] {
        let mut got = Vec::new();
        let mut sizes = Vec::new();
        r.read_chunks("big", chunk, |c: &[u8]| -> Result<(), CheckpointError> {
            sizes.push(c.len());
            got.extend_from_slice(c);
            Ok(())
        })
        .unwrap();
        assert_eq!(got, big);
        assert!(sizes[..sizes.len() - 1]
            .iter()
            .all(|&s| s == chunk.min(big.len())));
    }
    // The caller's own error type, and its error, come back through read_chunks.
    #[derive(Debug)]
    enum Mine {
        Stop,
        Ck(CheckpointError),
    }
    impl From<CheckpointError> for Mine {
        fn from(e: CheckpointError) -> Mine {
            Mine::Ck(e)
        }
    }
    let mut calls = 0;
    let r2 = r.read_chunks("big", 1000, |_: &[u8]| {
        calls += 1;
        if calls == 3 {
            Err(Mine::Stop)
        } else {
            Ok(())
        }
    });
    assert!(matches!(r2, Err(Mine::Stop)) && calls == 3);
    let r3 = r.read_chunks("nope", 1000, |_: &[u8]| Ok::<(), Mine>(()));
    assert!(matches!(r3, Err(Mine::Ck(CheckpointError::Usage { .. }))));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn members_are_npy_files_numpy_and_ndarray_npy_read() {
    let d = folder("npy");
    let path = d.join("fluid-0000000100.npz");
    write(&path, 100, 2);
    let s = sample(2);
    // Each member, parsed back byte by byte: a NumPy 1.0 header padded to 64, then the data.
    let mut zip = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
    let names: Vec<String> = zip.file_names().map(String::from).collect();
    assert!(names.contains(&"header.toml".to_string()) && names.contains(&"ids.npy".into()));
    for (name, dtype, shape) in [
        ("velocity", DType::F32, &VEL[..]),
        ("populations", DType::U16, &POP[..]),
        ("flags", DType::U8, &[60][..]),
        ("scalar", DType::U64, &[][..]),
    ] {
        let mut m = zip.by_name(&format!("{name}.npy")).unwrap();
        assert_eq!(m.compression(), zip::CompressionMethod::Stored);
        let mut bytes = Vec::new();
        m.read_to_end(&mut bytes).unwrap();
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let h = parse_npy_header(&bytes).unwrap();
        assert_eq!(
            (h.dtype, h.shape.as_slice(), h.fortran_order),
            (dtype, shape, false)
        );
        assert_eq!(h.len % 64, 0);
        assert_eq!(bytes[h.len - 1], b'\n');
        assert_eq!((bytes.len() - h.len) as u64, dtype.bytes_of(shape).unwrap());
    }
    // An independent reader of the format: ndarray-npy, what murmur's snapshots use.
    let mut npz = ndarray_npy::NpzReader::new(std::fs::File::open(&path).unwrap()).unwrap();
    let v: ndarray::Array4<f32> = npz.by_name("velocity").unwrap();
    assert_eq!(v.shape(), &[3, 4, 5, 3]);
    assert_eq!(v.as_slice().unwrap(), s.velocity.as_slice());
    let p: ndarray::Array2<u16> = npz.by_name("populations.npy").unwrap();
    assert_eq!(p.as_slice().unwrap(), s.populations.as_slice());
    let c: ndarray::Array2<i64> = npz.by_name("counts").unwrap();
    assert_eq!(c.as_slice().unwrap(), s.counts.as_slice());
    // The header is plain TOML text.
    let mut text = String::new();
    zip.by_name("header.toml")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let t: toml::Table = text.parse().unwrap();
    assert_eq!(t["format"].as_str(), Some("murmur-checkpoint"));
    assert_eq!(t["fields"]["model"].as_str(), Some("acm-mrt"));
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn numpy_loads_a_checkpoint_when_it_is_installed() {
    let python = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/py/bin/python");
    let has_numpy = std::process::Command::new(&python)
        .args(["-c", "import numpy, tomllib"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_numpy {
        println!(
            "skipped: no Python with numpy and tomllib at {} (scripts/python-wheel.sh makes \
             it); the .npy bytes are checked in Rust by members_are_npy_files_...",
            python.display()
        );
        return;
    }
    let d = folder("numpy");
    let path = d.join("fluid-0000000100.npz");
    write(&path, 100, 3);
    let s = sample(3);
    // The snippet of docs/checkpoints.md (the path from argv), then what it loaded.
    let script = "import numpy as np, tomllib, sys\n\
        ck = np.load(sys.argv[1])\n\
        header = tomllib.loads(ck['header.toml'].decode())\n\
        u = ck['velocity']  # (nz, ny, nx, 3) float32\n\
        print(header['step'], header['fields']['model'], u.dtype, u.shape, repr(float(u[2, 3, 4, 1])))\n\
        print(ck['populations'].dtype, ck['scalar'].shape, ck['counts'][0, 1], sorted(ck.files)[0])\n";
    let out = std::process::Command::new(&python)
        .args(["-c", script, path.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let u = s.velocity[((2 * 4 + 3) * 5 + 4) * 3 + 1];
    let want = format!(
        "100 acm-mrt float32 (3, 4, 5, 3) {}\nuint16 () {} counts\n",
        f64::from(u),
        i64::MAX
    );
    assert_eq!(text, want);
    std::fs::remove_dir_all(&d).unwrap();
}

/// The offset in the file of array `name`'s first data byte.
fn data_offset(path: &Path, name: &str) -> u64 {
    let mut zip = zip::ZipArchive::new(std::fs::File::open(path).unwrap()).unwrap();
    let m = zip.by_name(&format!("{name}.npy")).unwrap();
    m.data_start() + 128
}

fn flip(path: &Path, at: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[at as usize] ^= 0x10;
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_corrupt_byte_is_refused_naming_its_array() {
    let d = folder("corrupt");
    let path = d.join("fluid-0000000100.npz");
    for (array, k) in [("velocity", 0), ("populations", 3000), ("ids", 3999)] {
        write(&path, 100, 4);
        flip(&path, data_offset(&path, array) + k);
        let mut r = CheckpointReader::open(&path).unwrap();
        let e = r.verify().unwrap_err();
        let m = one_line(&e);
        assert!(matches!(e, CheckpointError::Checksum { .. }), "{m}");
        assert!(
            m.contains(&format!("is corrupt: array {array} does not match its")),
            "{m}"
        );
        // The other arrays still read.
        assert_eq!(r.read_vec::<f64>("series").unwrap(), sample(4).series);
    }
    // A byte of an array's .npy header: the header no longer matches.
    write(&path, 100, 4);
    flip(&path, data_offset(&path, "flags") - 128 + 30);
    let e = CheckpointReader::open(&path).unwrap().verify().unwrap_err();
    assert!(one_line(&e).contains("corrupt: array flags"), "{e}");
    // A byte of header.toml.
    write(&path, 100, 4);
    let at = {
        let mut zip = zip::ZipArchive::new(std::fs::File::open(&path).unwrap()).unwrap();
        let m = zip.by_name("header.toml").unwrap();
        m.data_start() + 40
    };
    flip(&path, at);
    let e = CheckpointReader::open(&path).err().unwrap();
    assert!(
        one_line(&e).contains("header.toml does not match its CRC-32"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

/// A copy of `from` at `to` with its header text changed by `edit`.
fn with_header(from: &Path, to: &Path, edit: impl Fn(String) -> String) {
    let mut src = zip::ZipArchive::new(std::fs::File::open(from).unwrap()).unwrap();
    let mut text = String::new();
    src.by_name("header.toml")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    let mut out = zip::ZipWriter::new(std::fs::File::create(to).unwrap());
    for i in 0..src.len() {
        let f = src.by_index_raw(i).unwrap();
        if f.name() != "header.toml" {
            out.raw_copy_file(f).unwrap();
        }
    }
    out.start_file("header.toml", zip::write::SimpleFileOptions::default())
        .unwrap();
    out.write_all(edit(text).as_bytes()).unwrap();
    out.finish().unwrap();
}

#[test]
fn another_version_or_header_is_refused_in_one_line() {
    let d = folder("version");
    let good = d.join("fluid-0000000100.npz");
    write(&good, 100, 5);
    let bad = d.join("bad.npz");
    let p = bad.display().to_string();
    with_header(&good, &bad, |t| {
        t.replace("format_version = 1", "format_version = 2")
    });
    let e = CheckpointReader::open(&bad).err().unwrap();
    let want = format!(
        "checkpoint {p} has format version 2; murmur {} reads version 1",
        env!("CARGO_PKG_VERSION")
    );
    assert_eq!(one_line(&e), want);
    // A version 2 whose other fields changed too is still refused for its version.
    with_header(&good, &bad, |_| {
        "format = \"murmur-checkpoint\"\nformat_version = 2\n".into()
    });
    assert!(matches!(
        CheckpointReader::open(&bad),
        Err(CheckpointError::Version { .. })
    ));
    with_header(&good, &bad, |t| {
        t.replace("murmur-checkpoint", "something-else")
    });
    let e = CheckpointReader::open(&bad).err().unwrap();
    assert!(
        one_line(&e).contains("not a murmur checkpoint: format is something-else"),
        "{e}"
    );
    with_header(&good, &bad, |t| t.replace("step = 100", "step = \"x\""));
    let e = CheckpointReader::open(&bad).err().unwrap();
    assert!(
        one_line(&e).contains("not a murmur checkpoint: header.toml:"),
        "{e}"
    );
    with_header(&good, &bad, |t| {
        t.replace("name = \"ids\"", "name = \"idz\"")
    });
    let e = CheckpointReader::open(&bad).err().unwrap();
    assert!(
        one_line(&e).ends_with("array idz is listed in header.toml but missing"),
        "{e}"
    );
    with_header(&good, &bad, |t| {
        t + "[[arrays]]\nname = \"x\"\ndtype = \"<f4\"\nshape = [2]\nbytes = 9\nsha256 = \"00\"\n"
    });
    let e = CheckpointReader::open(&bad).err().unwrap();
    assert!(
        one_line(&e).contains("array x: 9 bytes listed, its shape [2] of float32"),
        "{e}"
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn expected_fields_refuse_naming_what_differs() {
    let d = folder("expect");
    let path = d.join("fluid-0000000100.npz");
    write(&path, 100, 6);
    let p = path.display().to_string();
    let r = CheckpointReader::open(&path).unwrap();
    r.expect("model", "acm-mrt").unwrap();
    r.expect("tau", 0.5123).unwrap();
    r.expect_kind(Kind::Fluid).unwrap();
    let lattice = |v: [i64; 3]| toml::Value::Array(v.map(toml::Value::from).to_vec());
    r.expect_all(&[("storage", "fp16s".into()), ("lattice", lattice([5, 4, 3]))])
        .unwrap();
    let e = r.expect("model", "bgk").unwrap_err();
    assert_eq!(
        one_line(&e),
        format!("checkpoint {p} was written for model acm-mrt, this run uses model bgk")
    );
    let e = r
        .expect_all(&[
            ("storage", "fp16s".into()),
            ("lattice", lattice([64, 4, 3])),
        ])
        .unwrap_err();
    assert_eq!(
        one_line(&e),
        format!(
            "checkpoint {p} was written for lattice [5, 4, 3], this run uses lattice [64, 4, 3]"
        )
    );
    let e = r.expect("streaming", "pull").unwrap_err();
    assert_eq!(
        one_line(&e),
        format!("checkpoint {p} has no field streaming (this run uses streaming pull)")
    );
    let e = r.expect_kind(Kind::Flock).unwrap_err();
    assert_eq!(
        one_line(&e),
        format!("checkpoint {p} was written for kind fluid, this run uses kind flock")
    );
    std::fs::remove_dir_all(&d).unwrap();
}

#[test]
fn other_files_are_not_checkpoints() {
    let d = folder("not");
    let cases: [(&str, &[u8], &str); 3] = [
        (
            "empty.npz",
            b"",
            "truncated or not a murmur checkpoint: zip:",
        ),
        (
            "text.npz",
            b"hello, world\n",
            "truncated or not a murmur checkpoint: zip:",
        ),
        (
            "half.npz",
            b"PK\x03\x04\x14\x00",
            "truncated or not a murmur checkpoint: zip:",
        ),
    ];
    for (name, bytes, want) in cases {
        let f = d.join(name);
        std::fs::write(&f, bytes).unwrap();
        let e = CheckpointReader::open(&f).err().unwrap();
        assert!(one_line(&e).contains(want), "{e}");
    }
    // A plain .npz (a flock snapshot's kind) has no header.toml.
    let f = d.join("plain.npz");
    let mut npz = ndarray_npy::NpzWriter::new(std::fs::File::create(&f).unwrap());
    npz.add_array("pos", &ndarray::Array1::<f32>::zeros(3))
        .unwrap();
    npz.finish().unwrap();
    let e = CheckpointReader::open(&f).err().unwrap();
    assert!(
        one_line(&e).ends_with("not a murmur checkpoint: no header.toml member"),
        "{e}"
    );
    let e = CheckpointReader::open(&d.join("missing.npz"))
        .err()
        .unwrap();
    assert!(one_line(&e).starts_with("cannot read checkpoint"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}

/// One wrong use of a writer.
type Misuse = fn(&mut CheckpointWriter) -> Result<(), CheckpointError>;

#[test]
fn misuse_is_an_error_and_leaves_no_file() {
    let d = folder("misuse");
    let path = d.join("fluid-0000000001.npz");
    let cases: [(&str, Misuse); 6] = [
        ("more than the 8 bytes", |w| {
            w.begin_array("a", DType::F32, &[2])?;
            w.write_chunk(&[0; 9])
        }),
        ("4 bytes written, its shape [2] of float32 holds 8", |w| {
            w.begin_array("a", DType::F32, &[2])?;
            w.write_chunk(&[0; 4])?;
            w.end_array()
        }),
        ("array name \"a b\" is not", |w| {
            w.begin_array("a b", DType::U8, &[1])
        }),
        ("array name \"header\" is not", |w| {
            w.begin_array("header", DType::U8, &[1])
        }),
        ("array a written twice", |w| {
            w.write_array("a", DType::U8, &[1], &[1])?;
            w.write_array("a", DType::U8, &[1], &[1])
        }),
        ("begun before array a ended", |w| {
            w.begin_array("a", DType::U8, &[1])?;
            w.begin_array("b", DType::U8, &[1])
        }),
    ];
    for (want, f) in cases {
        let mut w = CheckpointWriter::create(&path, header(1)).unwrap();
        let e = f(&mut w).unwrap_err();
        assert!(one_line(&e).contains(want), "{e}");
        // Every later call repeats it; finish too.
        let e = w.finish().unwrap_err();
        assert!(one_line(&e).contains("stopped by an earlier error"), "{e}");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            0,
            "{want}: a file left"
        );
    }
    let e = CheckpointWriter::create(&d.join("no/such/dir.npz"), header(1))
        .err()
        .unwrap();
    assert!(one_line(&e).contains("does not exist"), "{e}");
    let h = Piece {
        rank: 0,
        ranks: 2,
        global_shape: vec![8, 4, 4],
        offset: vec![0, 0, 0],
        shape: vec![4, 4, 4],
    };
    let w = CheckpointWriter::create(&path, header(1).with_piece(h.clone())).unwrap();
    w.finish().unwrap();
    let r = CheckpointReader::open(&path).unwrap();
    assert_eq!(r.header().piece.as_ref(), Some(&h));
    assert!(r.header().arrays.is_empty());
    std::fs::remove_dir_all(&d).unwrap();
}
