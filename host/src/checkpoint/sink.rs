//! Where checkpoint bytes go: a [`Sink`] (a seekable writer that can fsync) made by a
//! [`SinkFactory`] for the temporary name, so tests inject one that fails ([`FailingSink`]);
//! the temporary name; the rename and the folder's fsync that publish a finished file.
//!
//! `crate::atomic_file::write_atomic` hands its closure a plain `BufWriter<File>` and does not
//! fsync the folder; a checkpoint needs a seekable writer (the zip's sizes are patched in place),
//! an injectable one, and the folder's fsync, hence this module.

use std::fs::File;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A seekable byte sink that can make what it holds durable.
pub trait Sink: Write + Seek + Send {
    /// Flushes any buffer and waits until the bytes are on the disk (fsync).
    fn sync(&mut self) -> io::Result<()>;
}

impl Sink for BufWriter<File> {
    fn sync(&mut self) -> io::Result<()> {
        self.flush()?;
        self.get_ref().sync_all()
    }
}

/// Makes the sink for a temporary path (created, or truncated if it exists).
pub type SinkFactory = dyn Fn(&Path) -> io::Result<Box<dyn Sink>> + Send + Sync;

/// The default sink: the file at `path`, behind a 4 MiB buffer, written back to the disk as it
/// goes ([`FileSink`]).
pub fn file_sink(path: &Path) -> io::Result<Box<dyn Sink>> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)?;
    Ok(Box::new(FileSink {
        w: BufWriter::with_capacity(4 << 20, file),
        pos: 0,
        end: 0,
        started: 0,
        settled: 0,
    }))
}

/// Bytes a [`FileSink`] hands to the disk's writeback at a time.
const WRITEBACK: u64 = 64 << 20;

/// A checkpoint's file, written back to the disk while it is written: on Linux, every
/// [`WRITEBACK`] bytes it starts the writeback of those bytes (`sync_file_range`), waits for
/// the span before them and drops that span from the page cache. So the disk writes while
/// the checkpoint is still being converted, the fsync at the end finds little left to write,
/// and a checkpoint of any size leaves at most two spans dirty (a file of many GiB would
/// otherwise sit in the page cache until the fsync and only then go to the disk). Elsewhere a
/// plain buffered file.
struct FileSink {
    w: BufWriter<File>,
    /// The write position, and the end of what was written.
    pos: u64,
    end: u64,
    /// Bytes before `started` were handed to the writeback; before `settled`, on the disk.
    started: u64,
    settled: u64,
}

impl FileSink {
    /// Starts the writeback of the bytes written since the last call and settles the span
    /// before them.
    fn write_back(&mut self) -> io::Result<()> {
        self.w.flush()?;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let fd = self.w.get_ref().as_raw_fd();
            let check = |r: libc::c_int| match r {
                0 => Ok(()),
                _ => Err(io::Error::last_os_error()),
            };
            let span = |a: u64, b: u64| (a as libc::off64_t, (b - a) as libc::off64_t);
            let (at, len) = span(self.started, self.end);
            // SAFETY: a file descriptor this sink owns; the call only starts the writeback.
            check(unsafe { libc::sync_file_range(fd, at, len, libc::SYNC_FILE_RANGE_WRITE) })?;
            if self.started > self.settled {
                let (at, len) = span(self.settled, self.started);
                let wait = libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER;
                // SAFETY: as above; waits for the span's writeback, then drops its clean pages.
                check(unsafe { libc::sync_file_range(fd, at, len, wait) })?;
                // A hint: its failure loses nothing.
                // SAFETY: as above.
                let _ = unsafe { libc::posix_fadvise(fd, at, len, libc::POSIX_FADV_DONTNEED) };
            }
        }
        self.settled = self.started;
        self.started = self.end;
        Ok(())
    }
}

impl Write for FileSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.w.write(buf)?;
        self.pos += n as u64;
        self.end = self.end.max(self.pos);
        if self.end - self.started >= WRITEBACK {
            self.write_back()?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

impl Seek for FileSink {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.pos = self.w.seek(to)?;
        Ok(self.pos)
    }
}

impl Sink for FileSink {
    fn sync(&mut self) -> io::Result<()> {
        self.w.flush()?;
        self.w.get_ref().sync_all()
    }
}

/// The temporary name a checkpoint is written under: `NAME.tmp-PID` beside it.
pub fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "checkpoint".into());
    path.with_file_name(format!("{name}.tmp-{}", std::process::id()))
}

/// The folder `path` is in (`.` for a bare name).
pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Makes a rename or removal in `dir` durable (fsync of the folder; nothing off Unix).
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Renames the finished `tmp` to `path` and fsyncs the folder.
pub(crate) fn publish(tmp: &Path, path: &Path) -> io::Result<()> {
    std::fs::rename(tmp, path)?;
    sync_dir(parent(path))
}

/// Writes `bytes` to `path` atomically through `factory`: temporary name, fsync, rename, fsync
/// of the folder; on failure the temporary file is removed and `path` is untouched.
pub(crate) fn write_file_atomic(
    path: &Path,
    bytes: &[u8],
    factory: &SinkFactory,
) -> io::Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let mut sink = factory(&tmp)?;
        sink.write_all(bytes)?;
        sink.sync()?;
        drop(sink);
        publish(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// The sink shared between the zip writer and the checkpoint writer: after the first error, or
/// once abandoned, it closes the file and swallows what follows, so that the zip writer's own
/// clean-up on drop neither writes on nor prints; the first error is kept for `finish`.
#[derive(Clone)]
pub(crate) struct Shared(Arc<Mutex<SharedState>>);

struct SharedState {
    sink: Option<Box<dyn Sink>>,
    error: Option<String>,
    /// The position and length so far, so that once the sink is closed seeks still answer as
    /// a file would (the zip writer computes member sizes from them).
    pos: u64,
    len: u64,
}

impl SharedState {
    fn moved(&mut self, pos: u64) {
        self.pos = pos;
        self.len = self.len.max(pos);
    }
}

impl Shared {
    pub(crate) fn new(sink: Box<dyn Sink>) -> Shared {
        Shared(Arc::new(Mutex::new(SharedState {
            sink: Some(sink),
            error: None,
            pos: 0,
            len: 0,
        })))
    }

    /// Runs `f` on the sink, or `idle` on the position and length once it is closed; the
    /// first error closes it.
    fn with<T>(
        &self,
        f: impl FnOnce(&mut dyn Sink) -> io::Result<T>,
        idle: impl FnOnce(&mut SharedState) -> T,
    ) -> io::Result<T> {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let Some(sink) = s.sink.as_mut() else {
            return Ok(idle(&mut s));
        };
        let r = f(sink.as_mut());
        if let Err(e) = &r {
            s.error.get_or_insert_with(|| super::one_line(e));
            s.sink = None;
        }
        r
    }

    /// The first error the sink returned.
    pub(crate) fn error(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .error
            .clone()
    }

    /// Flushes and fsyncs the sink, then closes it.
    pub(crate) fn sync_and_close(&self) -> io::Result<()> {
        self.with(|s| s.sync(), |_| ())?;
        self.abandon();
        Ok(())
    }

    /// Closes the sink; later writes are swallowed.
    pub(crate) fn abandon(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).sink = None;
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.with(|s| s.write(buf), |_| buf.len())?;
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let pos = s.pos + n as u64;
        s.moved(pos);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.with(|s| s.flush(), |_| ())
    }
}

impl Seek for Shared {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let at = self.with(
            |s| s.seek(to),
            |s| {
                let base = match to {
                    SeekFrom::Start(n) => return n,
                    SeekFrom::Current(d) => (s.pos, d),
                    SeekFrom::End(d) => (s.len, d),
                };
                base.0.saturating_add_signed(base.1)
            },
        )?;
        self.0.lock().unwrap_or_else(|p| p.into_inner()).moved(at);
        Ok(at)
    }
}

/// How a [`FailingSink`] fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailMode {
    /// Writes past the budget fail as a full disk does (`StorageFull`).
    Full,
    /// Writes past the budget fail as a pulled disk does (`BrokenPipe`: the write stops there).
    Abort,
    /// Writes succeed; the fsync fails (`Other`, an I/O error).
    Sync,
}

/// A sink that fails after `budget` bytes (the bytes before still reach the inner sink): the
/// tests' full disk, aborted write and failed fsync.
pub struct FailingSink {
    inner: Box<dyn Sink>,
    left: u64,
    mode: FailMode,
}

impl FailingSink {
    /// Wraps `inner`: fails as `mode` says once `budget` bytes were written.
    pub fn new(inner: Box<dyn Sink>, budget: u64, mode: FailMode) -> FailingSink {
        FailingSink {
            inner,
            left: budget,
            mode,
        }
    }

    /// A factory of file sinks that fail as `mode` says after `budget` bytes.
    pub fn factory(budget: u64, mode: FailMode) -> Box<SinkFactory> {
        Box::new(move |path: &Path| -> io::Result<Box<dyn Sink>> {
            Ok(Box::new(FailingSink::new(file_sink(path)?, budget, mode)))
        })
    }

    fn failure(&self) -> io::Error {
        match self.mode {
            FailMode::Full => io::Error::new(io::ErrorKind::StorageFull, "no space left on device"),
            FailMode::Abort => io::Error::new(io::ErrorKind::BrokenPipe, "write aborted"),
            FailMode::Sync => io::Error::other("input/output error"),
        }
    }
}

impl Write for FailingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.mode == FailMode::Sync {
            return self.inner.write(buf);
        }
        if self.left == 0 && !buf.is_empty() {
            return Err(self.failure());
        }
        let n = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.write(&buf[..n])?;
        self.left -= n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl Seek for FailingSink {
    fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
        self.inner.seek(pos)
    }
}

impl Sink for FailingSink {
    fn sync(&mut self) -> io::Result<()> {
        self.inner.flush()?;
        match self.mode {
            FailMode::Sync => Err(self.failure()),
            _ => self.inner.sync(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of several writeback spans, with a header patched in place after they went to
    /// the disk (as the zip writer patches its sizes), holds exactly the bytes written.
    #[test]
    fn a_file_written_back_as_it_goes_holds_what_was_written() {
        let dir = std::env::temp_dir().join(format!("murmur-sink-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f.bin");
        let chunk: Vec<u8> = (0..(1usize << 20)).map(|i| (i * 31 % 251) as u8).collect();
        let chunks = ((2 * WRITEBACK as usize) >> 20) + 3;
        let mut want = Vec::with_capacity(chunks << 20);
        let mut s = file_sink(&path).unwrap();
        for k in 0..chunks {
            s.write_all(&chunk[k % 7..]).unwrap();
            want.extend_from_slice(&chunk[k % 7..]);
        }
        s.seek(SeekFrom::Start(10)).unwrap();
        s.write_all(b"PATCH").unwrap();
        want[10..15].copy_from_slice(b"PATCH");
        s.seek(SeekFrom::End(0)).unwrap();
        s.write_all(b"tail").unwrap();
        want.extend_from_slice(b"tail");
        s.sync().unwrap();
        drop(s);
        let got = std::fs::read(&path).unwrap();
        assert!(got == want, "{} bytes, {} expected", got.len(), want.len());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
