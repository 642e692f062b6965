//! How the ranks of a run meet: rank 0 makes the NCCL unique id (128 bytes) and hands it to the
//! others, through a file every rank can read or through a TCP address of rank 0.
//!
//! - `file:PATH`: rank 0 writes the id atomically (temporary file, then rename); the others
//!   wait for a file written after they started (an older one is a stale run's) and read it.
//!   Rank 0 removes it when the run ends.
//! - `tcp:HOST:PORT`: rank 0 listens on PORT; each other rank connects, says its rank and
//!   receives the id. The connections stay open as liveness links: when a process dies its
//!   link closes without the closing byte an orderly end sends, and the rank at the other end
//!   learns which rank stopped ([`Links`]).

use super::CommError;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

/// Bytes of the id the ranks share.
pub const ID_BYTES: usize = 128;

/// Where the ranks meet.
#[derive(Clone, Debug, PartialEq)]
pub enum Rendezvous {
    File(PathBuf),
    Tcp { host: String, port: u16 },
}

/// The byte an orderly end sends over a liveness link before closing it.
const BYE: u8 = b'B';

impl Rendezvous {
    /// `file:PATH` or `tcp:HOST:PORT` (also `tcp://HOST:PORT`).
    pub fn parse(spec: &str) -> Result<Rendezvous, CommError> {
        let bad = |why: &str| {
            CommError::Setup(format!(
                "bad rendezvous {spec:?}: {why} (expected file:PATH or tcp:HOST:PORT)"
            ))
        };
        if let Some(path) = spec.strip_prefix("file:") {
            if path.is_empty() {
                return Err(bad("empty path"));
            }
            return Ok(Rendezvous::File(PathBuf::from(path)));
        }
        if let Some(rest) = spec.strip_prefix("tcp:") {
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
            let port: u16 = port.parse().map_err(|_| bad("the port is not a number"))?;
            if host.is_empty() || port == 0 {
                return Err(bad("empty host or port 0"));
            }
            return Ok(Rendezvous::Tcp {
                host: host.trim_matches(['[', ']']).to_string(),
                port,
            });
        }
        Err(bad("unknown kind"))
    }

    /// Meets the other ranks: rank 0 passes `id` (its own), every rank gets rank 0's id and,
    /// over TCP, the liveness links. Waits at most `timeout`.
    pub fn meet(
        &self,
        rank: usize,
        size: usize,
        id: Option<[u8; ID_BYTES]>,
        timeout: Duration,
    ) -> Result<([u8; ID_BYTES], Option<Links>), CommError> {
        match self {
            Rendezvous::File(path) => file_meet(path, rank, id, timeout).map(|id| (id, None)),
            Rendezvous::Tcp { host, port } => {
                let (id, links) = tcp_meet(host, *port, rank, size, id, timeout)?;
                Ok((id, Some(links)))
            }
        }
    }

    /// Cleans up after an orderly end (rank 0 removes the file).
    pub fn finish(&self, rank: usize) {
        if let (Rendezvous::File(path), 0) = (self, rank) {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn hex(id: &[u8; ID_BYTES]) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(s: &str) -> Option<[u8; ID_BYTES]> {
    let s = s.trim();
    if s.len() != 2 * ID_BYTES {
        return None;
    }
    let mut id = [0u8; ID_BYTES];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

/// When this process started (a file older than that, less a margin for launchers that start
/// ranks a little apart, is a stale run's).
fn process_start() -> SystemTime {
    static START: std::sync::OnceLock<SystemTime> = std::sync::OnceLock::new();
    *START.get_or_init(SystemTime::now)
}

/// Records the start time (call early in `main`-like code paths).
pub fn note_start() {
    process_start();
}

fn file_meet(
    path: &std::path::Path,
    rank: usize,
    id: Option<[u8; ID_BYTES]>,
    timeout: Duration,
) -> Result<[u8; ID_BYTES], CommError> {
    if rank == 0 {
        let id = id.ok_or_else(|| CommError::Setup("rank 0 has no id to share".into()))?;
        crate::atomic_file::write_atomic(path, |w| writeln!(w, "{}", hex(&id))).map_err(|e| {
            CommError::Setup(format!("rendezvous: cannot write {}: {e}", path.display()))
        })?;
        return Ok(id);
    }
    let since = process_start() - Duration::from_secs(60);
    let deadline = Instant::now() + timeout;
    loop {
        if let Ok(meta) = std::fs::metadata(path) {
            let fresh = meta.modified().map(|m| m >= since).unwrap_or(true);
            if fresh {
                if let Some(id) = std::fs::read_to_string(path)
                    .ok()
                    .as_deref()
                    .and_then(unhex)
                {
                    return Ok(id);
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(CommError::Setup(format!(
                "rendezvous: rank {rank} found no id from rank 0 in {} within {:.0} s (is \
                 rank 0 running, and is the path on a file system both can see?)",
                path.display(),
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn tcp_meet(
    host: &str,
    port: u16,
    rank: usize,
    size: usize,
    id: Option<[u8; ID_BYTES]>,
    timeout: Duration,
) -> Result<([u8; ID_BYTES], Links), CommError> {
    let deadline = Instant::now() + timeout;
    if rank == 0 {
        let id = id.ok_or_else(|| CommError::Setup("rank 0 has no id to share".into()))?;
        let listener = TcpListener::bind(("0.0.0.0", port)).map_err(|e| {
            CommError::Setup(format!(
                "rendezvous: rank 0 cannot listen on port {port}: {e}"
            ))
        })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| CommError::Setup(format!("rendezvous: {e}")))?;
        let mut peers: Vec<Option<TcpStream>> = (0..size).map(|_| None).collect();
        let mut joined = 1;
        while joined < size {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).ok();
                    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
                    let mut r = [0u8; 4];
                    if s.read_exact(&mut r).is_err() {
                        continue;
                    }
                    let r = u32::from_le_bytes(r) as usize;
                    if r == 0 || r >= size || peers[r].is_some() {
                        continue;
                    }
                    s.write_all(&id)
                        .map_err(|e| CommError::Setup(format!("rendezvous: rank {r}: {e}")))?;
                    s.set_read_timeout(None).ok();
                    peers[r] = Some(s);
                    joined += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing: Vec<String> = (1..size)
                            .filter(|&r| peers[r].is_none())
                            .map(|r| r.to_string())
                            .collect();
                        return Err(CommError::Setup(format!(
                            "rendezvous: rank(s) {} did not reach rank 0 on port {port} within \
                             {:.0} s",
                            missing.join(", "),
                            timeout.as_secs_f64()
                        )));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(CommError::Setup(format!("rendezvous: accept: {e}"))),
            }
        }
        let links = peers
            .into_iter()
            .enumerate()
            .filter_map(|(r, s)| s.map(|s| (r, s)))
            .collect();
        return Ok((id, Links::new(links)));
    }
    let addr = format!("{host}:{port}");
    loop {
        let attempt = addr
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .and_then(|a| TcpStream::connect_timeout(&a, Duration::from_secs(2)).ok());
        if let Some(mut s) = attempt {
            s.set_read_timeout(Some(
                deadline
                    .saturating_duration_since(Instant::now())
                    .max(Duration::from_secs(1)),
            ))
            .ok();
            let mut got = [0u8; ID_BYTES];
            if s.write_all(&(rank as u32).to_le_bytes()).is_ok() && s.read_exact(&mut got).is_ok() {
                s.set_read_timeout(None).ok();
                return Ok((got, Links::new(vec![(0, s)])));
            }
        }
        if Instant::now() >= deadline {
            return Err(CommError::Setup(format!(
                "rendezvous: rank {rank} could not reach rank 0 at {addr} within {:.0} s",
                timeout.as_secs_f64()
            )));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Open connections to other ranks that tell when a peer process ends: a link that closes
/// without the closing byte means that rank died.
#[derive(Debug)]
pub struct Links {
    links: Vec<(usize, TcpStream)>,
    done: Arc<AtomicBool>,
}

impl Links {
    fn new(links: Vec<(usize, TcpStream)>) -> Links {
        Links {
            links,
            done: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Watches every link on its own thread; `on_loss(rank)` runs when a link closes before
    /// [`Links::bye`] or the peer's own closing byte.
    pub fn watch(&self, on_loss: Arc<dyn Fn(usize) + Send + Sync>) {
        for (r, s) in &self.links {
            let Ok(mut s) = s.try_clone() else { continue };
            let (r, done, on_loss) = (*r, self.done.clone(), on_loss.clone());
            std::thread::spawn(move || {
                let mut b = [0u8; 1];
                let orderly = matches!(s.read(&mut b), Ok(1) if b[0] == BYE);
                if !orderly && !done.load(Ordering::SeqCst) {
                    on_loss(r);
                }
            });
        }
    }

    /// An orderly end: tells the peers, stops watching.
    pub fn bye(&self) {
        self.done.store(true, Ordering::SeqCst);
        for (_, s) in &self.links {
            let mut s = s;
            let _ = s.write_all(&[BYE]);
            let _ = s.flush();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_specs() {
        assert_eq!(
            Rendezvous::parse("file:/tmp/a").unwrap(),
            Rendezvous::File("/tmp/a".into())
        );
        assert_eq!(
            Rendezvous::parse("tcp://node0:29500").unwrap(),
            Rendezvous::Tcp {
                host: "node0".into(),
                port: 29500
            }
        );
        for bad in [
            "",
            "file:",
            "tcp:node0",
            "tcp:node0:x",
            "tcp::5",
            "http://x",
        ] {
            let e = Rendezvous::parse(bad).unwrap_err().to_string();
            assert!(e.contains("bad rendezvous"), "{bad}: {e}");
        }
    }

    #[test]
    fn hex_round_trips() {
        let mut id = [0u8; ID_BYTES];
        for (i, b) in id.iter_mut().enumerate() {
            *b = (i * 37) as u8;
        }
        assert_eq!(unhex(&hex(&id)), Some(id));
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn file_rendezvous_hands_the_id_over() {
        let dir = std::env::temp_dir().join(format!("murmur-rdv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("id");
        let _ = std::fs::remove_file(&path);
        let r = Rendezvous::File(path.clone());
        let id = [7u8; ID_BYTES];
        let t = Duration::from_secs(10);
        let other = {
            let r = r.clone();
            std::thread::spawn(move || r.meet(1, 2, None, t).map(|x| x.0))
        };
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(r.meet(0, 2, Some(id), t).unwrap().0, id);
        assert_eq!(other.join().unwrap().unwrap(), id);
        r.finish(0);
        assert!(!path.exists());
        // Nobody writes: a clear error after the timeout.
        let e = r.meet(1, 2, None, Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("found no id from rank 0"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn tcp_rendezvous_and_liveness() {
        // A free port: bind to 0, read it, release it.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let r = Rendezvous::Tcp {
            host: "127.0.0.1".into(),
            port,
        };
        let id = [9u8; ID_BYTES];
        let t = Duration::from_secs(10);
        let peers: Vec<_> = (1..3)
            .map(|k| {
                let r = r.clone();
                std::thread::spawn(move || r.meet(k, 3, None, t).unwrap())
            })
            .collect();
        let (got, links0) = r.meet(0, 3, Some(id), t).unwrap();
        assert_eq!(got, id);
        let mut peer_links = Vec::new();
        for p in peers {
            let (got, links) = p.join().unwrap();
            assert_eq!(got, id);
            peer_links.push(links.unwrap());
        }
        let lost = Arc::new(std::sync::Mutex::new(Vec::new()));
        let l2 = lost.clone();
        links0
            .unwrap()
            .watch(Arc::new(move |r| l2.lock().unwrap().push(r)));
        // Rank 1 ends in order, rank 2 dies (its link closes without the byte).
        peer_links[0].bye();
        drop(peer_links);
        let t0 = Instant::now();
        while lost.lock().unwrap().is_empty() && t0.elapsed() < Duration::from_secs(5) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(*lost.lock().unwrap(), vec![2]);
    }
}
