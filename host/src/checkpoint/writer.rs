//! Writing a checkpoint: arrays streamed in as chunks (each hashed as it passes, so a lattice
//! never sits in memory whole), the header last, then fsync, rename and the folder's fsync.

use super::header::valid_name;
use super::npy::npy_header;
use super::sink::{file_sink, parent, publish, temp_path, Shared, SinkFactory};
use super::{one_line, ArrayInfo, CheckpointError, DType, Element, Header, Result, HEADER_MEMBER};
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

/// Chunks from this size on are hashed on another thread while they are written.
const PARALLEL_HASH: usize = 1 << 20;

/// A finished checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Its path.
    pub path: PathBuf,
    /// Its size on disk, in bytes.
    pub bytes: u64,
    /// SHA-256 of its `header.toml` text (what a manifest records for it).
    pub header_sha256: String,
}

/// The array being written.
struct Open {
    info: ArrayInfo,
    hasher: Sha256,
    written: u64,
}

/// A checkpoint being written under its temporary name (`NAME.tmp-PID`). Arrays go in with
/// [`begin_array`](Self::begin_array), [`write_chunk`](Self::write_chunk) and
/// [`end_array`](Self::end_array) (or [`write_array`](Self::write_array) /
/// [`write_slice`](Self::write_slice) whole); [`finish`](Self::finish) publishes the file. After
/// an error every call repeats it; dropped before `finish`, the writer removes its temporary file
/// and the previous checkpoint of that name, if any, is untouched.
pub struct CheckpointWriter {
    path: PathBuf,
    tmp: PathBuf,
    shared: Shared,
    zip: Option<ZipWriter<Shared>>,
    header: Header,
    open: Option<Open>,
    failed: Option<String>,
    done: bool,
}

impl CheckpointWriter {
    /// Starts the checkpoint `path` with `header` (its `arrays` empty: the writer lists them),
    /// written to a file.
    pub fn create(path: &Path, header: Header) -> Result<CheckpointWriter> {
        CheckpointWriter::create_with(path, header, &file_sink)
    }

    /// [`create`](Self::create), writing through the sink `factory` makes for the temporary
    /// path.
    pub fn create_with(
        path: &Path,
        header: Header,
        factory: &SinkFactory,
    ) -> Result<CheckpointWriter> {
        let p = path.display().to_string();
        if !header.arrays.is_empty() {
            return Err(CheckpointError::Usage {
                path: p,
                message: "the header's arrays are listed by the writer, not the caller".into(),
            });
        }
        let dir = parent(path);
        if !dir.is_dir() {
            return Err(CheckpointError::Write {
                path: p,
                message: format!("folder {} does not exist", dir.display()),
            });
        }
        let tmp = temp_path(path);
        let sink = factory(&tmp).map_err(|e| CheckpointError::Write {
            path: p,
            message: format!("{}: {}", tmp.display(), one_line(e)),
        })?;
        let shared = Shared::new(sink);
        Ok(CheckpointWriter {
            path: path.to_path_buf(),
            tmp,
            zip: Some(ZipWriter::new(shared.clone())),
            shared,
            header,
            open: None,
            failed: None,
            done: false,
        })
    }

    /// The header so far (the arrays ended until now).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The path the checkpoint will have.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Starts the array `name` (ASCII letters, digits, `_`, `-`) of `dtype` and `shape` (C
    /// order): its chunks follow, `shape`'s product times the element size in bytes in all.
    pub fn begin_array(&mut self, name: &str, dtype: DType, shape: &[u64]) -> Result<()> {
        self.check()?;
        let r = self.begin(name, dtype, shape);
        self.keep(r)
    }

    fn begin(&mut self, name: &str, dtype: DType, shape: &[u64]) -> Result<()> {
        if let Some(open) = &self.open {
            return Err(self.usage(format!(
                "array {name} begun before array {} ended",
                open.info.name
            )));
        }
        if !valid_name(name) {
            return Err(self.usage(format!(
                "array name {name:?} is not 1 to 100 letters, digits, _ or - (nor header)"
            )));
        }
        if self.header.array(name).is_some() {
            return Err(self.usage(format!("array {name} written twice")));
        }
        let bytes = dtype
            .bytes_of(shape)
            .ok_or_else(|| self.usage(format!("array {name}: shape {shape:?} is too large")))?;
        let npy = npy_header(dtype, shape);
        let large = npy.len() as u64 + bytes >= u64::from(u32::MAX);
        let options = stored().large_file(large);
        let zip = self
            .zip
            .as_mut()
            .expect("the zip writer lives until finish");
        zip.start_file(format!("{name}.npy"), options)
            .map_err(|e| write_error(&self.path, &self.shared, one_line(e)))?;
        zip.write_all(&npy)
            .map_err(|e| write_error(&self.path, &self.shared, one_line(e)))?;
        self.open = Some(Open {
            info: ArrayInfo {
                name: name.into(),
                dtype,
                shape: shape.to_vec(),
                bytes,
                sha256: String::new(),
            },
            hasher: Sha256::new(),
            written: 0,
        });
        Ok(())
    }

    /// Appends `bytes` (little-endian elements, any split: chunks need not end on an element)
    /// to the array begun last.
    pub fn write_chunk(&mut self, bytes: &[u8]) -> Result<()> {
        self.check()?;
        let r = self.chunk(bytes);
        self.keep(r)
    }

    fn chunk(&mut self, bytes: &[u8]) -> Result<()> {
        let Some(open) = self.open.as_mut() else {
            return Err(self.usage("a chunk written outside an array".into()));
        };
        if open.written + bytes.len() as u64 > open.info.bytes {
            let m = format!(
                "array {}: more than the {} bytes its shape {:?} of {} holds",
                open.info.name, open.info.bytes, open.info.shape, open.info.dtype
            );
            return Err(self.usage(m));
        }
        open.written += bytes.len() as u64;
        let zip = self
            .zip
            .as_mut()
            .expect("the zip writer lives until finish");
        let hasher = &mut open.hasher;
        let written = if bytes.len() >= PARALLEL_HASH {
            rayon::join(|| hasher.update(bytes), || zip.write_all(bytes)).1
        } else {
            hasher.update(bytes);
            zip.write_all(bytes)
        };
        written.map_err(|e| write_error(&self.path, &self.shared, one_line(e)))
    }

    /// Ends the array begun last; fails if its chunks held fewer bytes than its shape.
    pub fn end_array(&mut self) -> Result<()> {
        self.check()?;
        let r = match self.open.take() {
            None => Err(self.usage("end_array without begin_array".into())),
            Some(open) if open.written != open.info.bytes => Err(self.usage(format!(
                "array {}: {} bytes written, its shape {:?} of {} holds {}",
                open.info.name, open.written, open.info.shape, open.info.dtype, open.info.bytes
            ))),
            Some(open) => {
                let mut info = open.info;
                info.sha256 = hex(&open.hasher.finalize());
                self.header.arrays.push(info);
                Ok(())
            }
        };
        self.keep(r)
    }

    /// Writes a whole array from its little-endian bytes.
    pub fn write_array(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[u64],
        bytes: &[u8],
    ) -> Result<()> {
        self.begin_array(name, dtype, shape)?;
        self.write_chunk(bytes)?;
        self.end_array()
    }

    /// Writes a whole array of Rust numbers, converted to little-endian a megabyte at a time.
    pub fn write_slice<T: Element>(&mut self, name: &str, shape: &[u64], data: &[T]) -> Result<()> {
        self.begin_array(name, T::DTYPE, shape)?;
        let per = ((1usize << 20) / T::DTYPE.size() as usize).max(1);
        let mut buf = Vec::with_capacity(per * T::DTYPE.size() as usize);
        for piece in data.chunks(per) {
            buf.clear();
            for &x in piece {
                x.put(&mut buf);
            }
            self.write_chunk(&buf)?;
        }
        self.end_array()
    }

    /// Writes the header as the last member, closes the archive, fsyncs it, renames it to its
    /// path (replacing a previous file there) and fsyncs the folder.
    pub fn finish(mut self) -> Result<Written> {
        self.check()?;
        let r = self.publish();
        self.keep(r)
    }

    fn publish(&mut self) -> Result<Written> {
        if let Some(open) = &self.open {
            return Err(self.usage(format!("finish before array {} ended", open.info.name)));
        }
        let text = self
            .header
            .to_toml()
            .map_err(|m| self.usage(format!("header: {m}")))?;
        let options = stored();
        let (path, shared) = (&self.path, &self.shared);
        let werr = |m: String| write_error(path, shared, m);
        let mut zip = self.zip.take().expect("the zip writer lives until finish");
        zip.start_file(HEADER_MEMBER, options)
            .map_err(|e| werr(one_line(e)))?;
        zip.write_all(text.as_bytes())
            .map_err(|e| werr(one_line(e)))?;
        zip.finish().map_err(|e| werr(one_line(e)))?;
        if let Some(e) = self.shared.error() {
            return Err(werr(e));
        }
        self.shared
            .sync_and_close()
            .map_err(|e| CheckpointError::Write {
                path: path.display().to_string(),
                message: format!("fsync: {}", one_line(e)),
            })?;
        publish(&self.tmp, &self.path)
            .map_err(|e| werr(format!("rename {}: {}", self.tmp.display(), one_line(e))))?;
        self.done = true;
        Ok(Written {
            path: self.path.clone(),
            bytes: std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0),
            header_sha256: hex(&Sha256::digest(text.as_bytes())),
        })
    }

    fn check(&self) -> Result<()> {
        match &self.failed {
            Some(e) => Err(CheckpointError::Usage {
                path: self.path.display().to_string(),
                message: format!("stopped by an earlier error ({e})"),
            }),
            None => Ok(()),
        }
    }

    fn keep<T>(&mut self, r: Result<T>) -> Result<T> {
        if let Err(e) = &r {
            self.failed = Some(e.to_string());
        }
        r
    }

    fn usage(&self, message: String) -> CheckpointError {
        CheckpointError::Usage {
            path: self.path.display().to_string(),
            message,
        }
    }
}

/// A write error, with the sink's first error where the zip writer reports a later one.
fn write_error(path: &Path, shared: &Shared, message: String) -> CheckpointError {
    CheckpointError::Write {
        path: path.display().to_string(),
        message: shared.error().unwrap_or(message),
    }
}

impl Drop for CheckpointWriter {
    fn drop(&mut self) {
        if !self.done {
            self.shared.abandon();
            drop(self.zip.take());
            let _ = std::fs::remove_file(&self.tmp);
        }
    }
}

/// A member stored as it is (no compression: speed), dated 1980-01-01 like every member, so
/// that the same state gives the same bytes.
fn stored() -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(CompressionMethod::Stored)
        .last_modified_time(zip::DateTime::default())
}

/// Lowercase hex digits of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the manifest of a checkpoint of several ranks, atomically (temporary name, fsync,
/// rename, fsync of the folder). Write it after every rank's file is finished: a manifest then
/// names only complete files.
pub fn write_manifest(path: &Path, manifest: &super::Manifest) -> Result<()> {
    write_manifest_with(path, manifest, &file_sink)
}

/// [`write_manifest`] through the sink `factory` makes for the temporary path.
pub fn write_manifest_with(
    path: &Path,
    manifest: &super::Manifest,
    factory: &SinkFactory,
) -> Result<()> {
    let p = path.display().to_string();
    let text = manifest.to_toml().map_err(|m| CheckpointError::Usage {
        path: p.clone(),
        message: format!("manifest: {m}"),
    })?;
    super::sink::write_file_atomic(path, text.as_bytes(), factory).map_err(|e| {
        CheckpointError::Write {
            path: p,
            message: one_line(e),
        }
    })
}
