//! Reading a checkpoint: the header first (format, version, the arrays it lists), then each
//! array in chunks, checked against its SHA-256 (and the zip's CRC-32) as it passes; and the
//! manifest of several ranks.

use super::header::show;
use super::npy::{npy_header_len, parse_npy_header, PREFIX_MAX};
use super::sink::parent;
use super::writer::hex;
use super::{one_line, CheckpointError, Element, Header, Kind, Manifest, Result, HEADER_MEMBER};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};
use zip::ZipArchive;

/// The chunk [`CheckpointReader::verify`] reads in.
const VERIFY_CHUNK: usize = 8 << 20;

/// An open checkpoint whose header passed its checks. Arrays are read with
/// [`read_chunks`](Self::read_chunks) (or whole); each read checks the array's checksums.
pub struct CheckpointReader {
    path: PathBuf,
    zip: ZipArchive<BufReader<File>>,
    header: Header,
    header_sha256: String,
}

impl CheckpointReader {
    /// Opens `path`: its zip directory, its `header.toml` (format, version, each array's entry)
    /// and the presence of each listed array. Checksums are checked as arrays are read, or all
    /// at once by [`verify`](Self::verify).
    pub fn open(path: &Path) -> Result<CheckpointReader> {
        let p = path.display().to_string();
        let file = File::open(path).map_err(|e| CheckpointError::Read {
            path: p.clone(),
            message: one_line(e),
        })?;
        let not = |message: String| CheckpointError::NotCheckpoint {
            path: p.clone(),
            message,
        };
        let mut zip = ZipArchive::new(BufReader::with_capacity(1 << 20, file))
            .map_err(|e| not(format!("zip: {}", one_line(e))))?;
        let mut text = String::new();
        match zip.by_name(HEADER_MEMBER) {
            Err(_) => return Err(not(format!("no {HEADER_MEMBER} member"))),
            Ok(mut m) => m.read_to_string(&mut text).map_err(|e| {
                let message = match e.kind() {
                    io::ErrorKind::InvalidData => {
                        format!("{HEADER_MEMBER} does not match its CRC-32 checksum")
                    }
                    _ => format!("{HEADER_MEMBER}: {}", one_line(e)),
                };
                CheckpointError::Corrupt {
                    path: p.clone(),
                    message,
                }
            })?,
        };
        let header = Header::parse(&text, &p)?;
        for a in &header.arrays {
            let size = zip.by_name(&format!("{}.npy", a.name)).map(|m| m.size());
            let message = match size {
                Err(_) => format!("array {} is listed in {HEADER_MEMBER} but missing", a.name),
                Ok(s) if s < a.bytes => format!(
                    "array {} holds {s} bytes, fewer than its {} bytes of data",
                    a.name, a.bytes
                ),
                Ok(_) => continue,
            };
            return Err(CheckpointError::Corrupt { path: p, message });
        }
        Ok(CheckpointReader {
            path: path.to_path_buf(),
            zip,
            header_sha256: hex(&Sha256::digest(text.as_bytes())),
            header,
        })
    }

    /// The checkpoint's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// SHA-256 of its `header.toml` text.
    pub fn header_sha256(&self) -> &str {
        &self.header_sha256
    }

    /// Refuses the checkpoint unless it is of `kind`.
    pub fn expect_kind(&self, kind: Kind) -> Result<()> {
        if self.header.kind == kind {
            return Ok(());
        }
        Err(CheckpointError::Mismatch {
            path: self.path.display().to_string(),
            field: "kind".into(),
            found: self.header.kind.to_string(),
            expected: kind.to_string(),
        })
    }

    /// Refuses the checkpoint unless its header field `field` equals `value` (`expect("model",
    /// "bgk")`: "checkpoint X was written for model acm-mrt, this run uses model bgk").
    pub fn expect(&self, field: &str, value: impl Into<toml::Value>) -> Result<()> {
        let expected = value.into();
        let path = self.path.display().to_string();
        match self.header.fields.get(field) {
            Some(v) if *v == expected => Ok(()),
            Some(v) => Err(CheckpointError::Mismatch {
                path,
                field: field.into(),
                found: show(v),
                expected: show(&expected),
            }),
            None => Err(CheckpointError::MissingField {
                path,
                field: field.into(),
                expected: show(&expected),
            }),
        }
    }

    /// [`expect`](Self::expect) for each pair; the first that differs refuses.
    pub fn expect_all(&self, fields: &[(&str, toml::Value)]) -> Result<()> {
        fields
            .iter()
            .try_for_each(|(k, v)| self.expect(k, v.clone()))
    }

    /// Reads the array `name` in chunks of `chunk_bytes` (the last one shorter), handing each
    /// to `f`, and checks it: its `.npy` header against the checkpoint's header, its length, its
    /// CRC-32 and SHA-256. A checksum error comes after the last chunk, so a caller that loads
    /// state as chunks arrive must discard it on error (or [`verify`](Self::verify) first).
    /// With `chunk_bytes` a multiple of the element size, every chunk holds whole elements.
    pub fn read_chunks<E: From<CheckpointError>>(
        &mut self,
        name: &str,
        chunk_bytes: usize,
        mut f: impl FnMut(&[u8]) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let p = self.path.display().to_string();
        let corrupt = |message: String| CheckpointError::Corrupt {
            path: p.clone(),
            message,
        };
        let info = match self.header.array(name) {
            Some(a) => a.clone(),
            None => {
                let names: Vec<&str> = self.header.arrays.iter().map(|a| a.name.as_str()).collect();
                return Err(CheckpointError::Usage {
                    path: p.clone(),
                    message: format!("no array {name} (it holds {})", names.join(", ")),
                }
                .into());
            }
        };
        if chunk_bytes == 0 {
            return Err(CheckpointError::Usage {
                path: p,
                message: "chunks of 0 bytes".into(),
            }
            .into());
        }
        let mut member = self
            .zip
            .by_name(&format!("{name}.npy"))
            .map_err(|_| corrupt(format!("array {name} is missing")))?;
        // What a failed read means: the zip's CRC-32 (InvalidData), a short member, or I/O.
        let failed = |e: io::Error| match e.kind() {
            io::ErrorKind::InvalidData => CheckpointError::Checksum {
                path: p.clone(),
                array: name.into(),
                check: "CRC-32",
            },
            io::ErrorKind::UnexpectedEof => corrupt(format!("array {name} is cut short")),
            _ => CheckpointError::Read {
                path: p.clone(),
                message: format!("array {name}: {}", one_line(e)),
            },
        };
        let mut npy = vec![0u8; PREFIX_MAX];
        member.read_exact(&mut npy[..10]).map_err(failed)?;
        if npy[6] >= 2 {
            member.read_exact(&mut npy[10..12]).map_err(failed)?;
        } else {
            npy.truncate(10);
        }
        let len = npy_header_len(&npy).map_err(|m| corrupt(format!("array {name}: {m}")))?;
        if len > 1 << 20 {
            return Err(corrupt(format!("array {name}: a .npy header of {len} bytes")).into());
        }
        let start = npy.len();
        npy.resize(len, 0);
        member.read_exact(&mut npy[start..]).map_err(failed)?;
        let h = parse_npy_header(&npy).map_err(|m| corrupt(format!("array {name}: {m}")))?;
        if h.dtype != info.dtype || h.shape != info.shape || h.fortran_order {
            return Err(corrupt(format!(
                "array {name}: its .npy header says {} {:?}{}, {HEADER_MEMBER} says {} {:?}",
                h.dtype,
                h.shape,
                if h.fortran_order {
                    " (Fortran order)"
                } else {
                    ""
                },
                info.dtype,
                info.shape
            ))
            .into());
        }
        let mut hasher = Sha256::new();
        let chunk = usize::try_from(info.bytes).map_or(chunk_bytes, |b| chunk_bytes.min(b));
        let mut buf = vec![0u8; chunk];
        let mut left = info.bytes;
        while left > 0 {
            let n = usize::try_from(left).map_or(chunk, |l| chunk.min(l));
            member.read_exact(&mut buf[..n]).map_err(failed)?;
            hasher.update(&buf[..n]);
            f(&buf[..n])?;
            left -= n as u64;
        }
        // The read past the end is the one on which the zip checks its CRC-32.
        let mut extra = [0u8; 1];
        if member.read(&mut extra).map_err(failed)? != 0 {
            return Err(corrupt(format!("array {name} holds more bytes than its shape")).into());
        }
        if hex(&hasher.finalize()) != info.sha256 {
            return Err(CheckpointError::Checksum {
                path: p,
                array: name.into(),
                check: "SHA-256",
            }
            .into());
        }
        Ok(())
    }

    /// The array `name`'s bytes, whole and checked.
    pub fn read_bytes(&mut self, name: &str) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        self.read_chunks(name, VERIFY_CHUNK, |b: &[u8]| -> Result<()> {
            out.extend_from_slice(b);
            Ok(())
        })?;
        Ok(out)
    }

    /// The array `name` as Rust numbers of its dtype, whole and checked.
    pub fn read_vec<T: Element>(&mut self, name: &str) -> Result<Vec<T>> {
        if let Some(a) = self.header.array(name) {
            if a.dtype != T::DTYPE {
                return Err(CheckpointError::Usage {
                    path: self.path.display().to_string(),
                    message: format!("array {name} is {}, read as {}", a.dtype, T::DTYPE),
                });
            }
        }
        let size = T::DTYPE.size() as usize;
        let chunk = (VERIFY_CHUNK / size) * size;
        let mut out = Vec::new();
        self.read_chunks(name, chunk, |b: &[u8]| -> Result<()> {
            out.extend(b.chunks_exact(size).map(T::get));
            Ok(())
        })?;
        Ok(out)
    }

    /// Reads every array and checks its checksums; the first that fails refuses the file.
    pub fn verify(&mut self) -> Result<()> {
        let names: Vec<String> = self.header.arrays.iter().map(|a| a.name.clone()).collect();
        for name in names {
            self.read_chunks(&name, VERIFY_CHUNK, |_: &[u8]| -> Result<()> { Ok(()) })?;
        }
        Ok(())
    }
}

/// Reads and checks a manifest (format and version); its files are not opened.
pub fn read_manifest(path: &Path) -> Result<Manifest> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CheckpointError::Read {
        path: p.clone(),
        message: one_line(e),
    })?;
    Manifest::parse(&text, &p)
}

/// Reads a manifest and checks each rank's file: present, the one the manifest lists (its
/// header's SHA-256), of the manifest's step and kind, and every array's checksums.
pub fn verify_manifest(path: &Path) -> Result<Manifest> {
    let m = read_manifest(path)?;
    let corrupt = |message: String| CheckpointError::Corrupt {
        path: path.display().to_string(),
        message,
    };
    for (i, piece) in m.pieces.iter().enumerate() {
        if piece.rank as usize != i {
            return Err(corrupt(format!(
                "piece {i} is listed as rank {}",
                piece.rank
            )));
        }
        let file = parent(path).join(&piece.file);
        let mut r = CheckpointReader::open(&file)?;
        if r.header_sha256() != piece.header_sha256 {
            return Err(corrupt(format!(
                "rank {i}'s file {} is not the one it lists (header SHA-256 differs)",
                piece.file
            )));
        }
        let h = r.header();
        if h.step != m.step || h.kind != m.kind {
            return Err(corrupt(format!(
                "rank {i}'s file {} holds {} step {}, the manifest {} step {}",
                piece.file, h.kind, h.step, m.kind, m.step
            )));
        }
        r.verify()?;
    }
    Ok(m)
}
