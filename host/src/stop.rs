//! The `murmur` command's stop signals, and the stop probe the run drivers poll between steps.
//!
//! Only the command installs the handlers ([`StopRequest::install`], called from `main.rs`): the
//! library installs none (a Python host owns its SIGINT), and its drivers stop only through a
//! [`StopProbe`] they are handed ([`Never`] by default).
//!
//! With the handlers installed:
//!
//! - While a run loop is armed ([`StopRequest::arm`]: `flock run`, `fluid run`), the first SIGINT
//!   or SIGTERM (what Slurm sends before a time limit) only records the signal; the loop finishes
//!   the step it is in, stops, and the command prints one line and exits with [`EXIT_STOPPED`].
//! - A second SIGINT or SIGTERM, or the first one while no loop is armed (setup, a benchmark,
//!   writing the last outputs), exits at once from the handler with `128 + signal`:
//!   [`EXIT_SIGINT`] (130) or [`EXIT_SIGTERM`] (143), the codes a shell reports for a process
//!   those signals killed.
//!
//! Why 75 for a clean stop: it is `EX_TEMPFAIL` of `sysexits.h` ("a temporary failure; the user
//! is invited to retry"), which is what a stopped run is: it ended at a step boundary and can go
//! on. A job script tells it apart from a crash (1), a kill (130, 143) and a finished run (0),
//! and requeues on 75 alone. 130 or 143 would read as "killed mid-step, nothing kept".
//!
//! Several ranks must stop at the same step. [`Agreed`] polls the local flag every step (one
//! atomic load) but decides only every `every` steps, with one [`Comm::any`] (an all-gather of
//! one byte per rank): a rank that saw a signal stops at the next multiple of `every`, and so does
//! every other rank, signalled or not. The cost is one small collective per `every` steps and a
//! stop up to `every - 1` steps later than one rank alone would stop.

use crate::ranks::{Comm, CommError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Exit status of a run stopped cleanly by SIGINT or SIGTERM at a step boundary
/// (`EX_TEMPFAIL`): the run can go on.
pub const EXIT_STOPPED: i32 = 75;
/// Exit status when a SIGINT ends the process at once (a second signal, or one outside a run
/// loop): `128 + SIGINT`.
pub const EXIT_SIGINT: i32 = 130;
/// Exit status when a SIGTERM ends the process at once: `128 + SIGTERM`.
pub const EXIT_SIGTERM: i32 = 143;

/// The first signal's number (0: none yet).
static SIGNAL: AtomicUsize = AtomicUsize::new(0);
/// True when the next signal ends the process at once: no loop armed, or a signal already came.
static IMMEDIATE: AtomicBool = AtomicBool::new(true);
/// Whether the handlers are in.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The command's stop request: the signal handlers, once installed.
#[derive(Debug)]
pub struct StopRequest {
    _installed: (),
}

static REQUEST: StopRequest = StopRequest { _installed: () };

impl StopRequest {
    /// Installs the SIGINT and SIGTERM handlers (once; later calls return the same request).
    /// For the `murmur` command only, never the library.
    #[cfg(unix)]
    pub fn install() -> std::io::Result<&'static StopRequest> {
        use signal_hook::consts::{SIGINT, SIGTERM};
        use signal_hook::flag;
        if !INSTALLED.swap(true, Ordering::SeqCst) {
            for (sig, code) in [(SIGINT, EXIT_SIGINT), (SIGTERM, EXIT_SIGTERM)] {
                // In this order: the exit first (it reads the flag the last action raises), so
                // the first signal of an armed loop is only recorded.
                flag::register_conditional_shutdown(sig, code, &IMMEDIATE)?;
                flag::register_usize(sig, &SIGNAL, sig as usize)?;
                flag::register(sig, &IMMEDIATE)?;
            }
        }
        Ok(&REQUEST)
    }

    /// Without Unix signals: a request that never fires.
    #[cfg(not(unix))]
    pub fn install() -> std::io::Result<&'static StopRequest> {
        Ok(&REQUEST)
    }

    /// The installed request (`None` in the library, or before `main` installs it).
    pub fn installed() -> Option<&'static StopRequest> {
        INSTALLED.load(Ordering::SeqCst).then_some(&REQUEST)
    }

    /// True once a SIGINT or SIGTERM has come.
    pub fn requested(&self) -> bool {
        SIGNAL.load(Ordering::SeqCst) != 0
    }

    /// The first signal's name (`"SIGINT"`, `"SIGTERM"`), if one came.
    pub fn signal(&self) -> Option<&'static str> {
        match SIGNAL.load(Ordering::SeqCst) {
            0 => None,
            2 => Some("SIGINT"),
            15 => Some("SIGTERM"),
            _ => Some("a signal"),
        }
    }

    /// Arms the stop for a run loop: until the guard drops, the first signal is only recorded.
    pub fn arm(&'static self) -> Armed {
        IMMEDIATE.store(false, Ordering::SeqCst);
        // A signal between the two stores has been recorded: the next one exits at once.
        if self.requested() {
            IMMEDIATE.store(true, Ordering::SeqCst);
        }
        Armed { request: self }
    }
}

/// The signals a launcher passes on to the ranks it started ([`crate::ranks::spawn::launch`]):
/// while a relay lives, a SIGINT or SIGTERM does not end this process; [`Relay::take`] reports
/// each kind of signal that came since its last call, once. (Two signals of one kind between
/// two calls count as one; a second signal before the next call ends the launcher at once.)
#[derive(Debug)]
pub struct Relay {
    flags: Vec<(i32, std::sync::Arc<AtomicBool>)>,
}

impl Relay {
    /// Starts relaying (the handlers must be installed: otherwise nothing is ever reported).
    pub fn new() -> Relay {
        let mut flags = Vec::new();
        #[cfg(unix)]
        if StopRequest::installed().is_some() {
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                let flag = std::sync::Arc::new(AtomicBool::new(false));
                if signal_hook::flag::register(sig, flag.clone()).is_ok() {
                    flags.push((sig, flag));
                }
            }
            IMMEDIATE.store(false, Ordering::SeqCst);
        }
        Relay { flags }
    }

    /// The signals that came since the last call (their numbers).
    pub fn take(&self) -> Vec<i32> {
        let came: Vec<i32> = self
            .flags
            .iter()
            .filter(|(_, f)| f.swap(false, Ordering::SeqCst))
            .map(|(s, _)| *s)
            .collect();
        if !came.is_empty() {
            // The handler set it on the signal: the relay goes on.
            IMMEDIATE.store(false, Ordering::SeqCst);
        }
        came
    }
}

impl Default for Relay {
    fn default() -> Relay {
        Relay::new()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        IMMEDIATE.store(true, Ordering::SeqCst);
    }
}

/// An armed [`StopRequest`] (see [`StopRequest::arm`]); the probe of a run loop.
#[derive(Debug)]
pub struct Armed {
    request: &'static StopRequest,
}

impl Armed {
    /// The request this guard armed.
    pub fn request(&self) -> &'static StopRequest {
        self.request
    }
}

impl Drop for Armed {
    fn drop(&mut self) {
        IMMEDIATE.store(true, Ordering::SeqCst);
    }
}

impl StopProbe for Armed {
    fn stop_after(&mut self, _done: u64) -> Result<bool, CommError> {
        Ok(self.request.requested())
    }
}

/// What a run driver asks after every step.
pub trait StopProbe {
    /// Asked after each step, `done` steps into this run (1, 2, ...): true stops the run there.
    /// Several ranks must answer alike at the same `done` ([`Agreed`]).
    fn stop_after(&mut self, done: u64) -> Result<bool, CommError>;
}

/// The probe that never stops (the library's drivers, every command but `run`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Never;

impl StopProbe for Never {
    fn stop_after(&mut self, _done: u64) -> Result<bool, CommError> {
        Ok(false)
    }
}

/// A closure as a probe: `|| flag.load(..)`.
pub struct Local<F: FnMut() -> bool>(pub F);

impl<F: FnMut() -> bool> StopProbe for Local<F> {
    fn stop_after(&mut self, _done: u64) -> Result<bool, CommError> {
        Ok((self.0)())
    }
}

/// Several ranks' agreement on when to stop: every `every` steps one [`Comm::any`] of the local
/// probe's answer, so every rank stops after the same step or none does.
pub struct Agreed<'a, P: StopProbe> {
    /// This rank's own probe (a signal flag), asked every step and remembered.
    pub local: P,
    /// The ranks.
    pub comm: &'a dyn Comm,
    /// Steps between agreements (>= 1).
    pub every: u64,
    /// Whether the local probe has said stop (it is asked every step, so a short-lived answer
    /// is not missed between agreements).
    seen: bool,
}

impl<'a, P: StopProbe> Agreed<'a, P> {
    /// Agreement every `every` steps (0 counts as 1) over `comm`.
    pub fn new(local: P, comm: &'a dyn Comm, every: u64) -> Self {
        Agreed {
            local,
            comm,
            every: every.max(1),
            seen: false,
        }
    }
}

impl<P: StopProbe> StopProbe for Agreed<'_, P> {
    fn stop_after(&mut self, done: u64) -> Result<bool, CommError> {
        self.seen |= self.local.stop_after(done)?;
        if !done.is_multiple_of(self.every) {
            return Ok(false);
        }
        self.comm.any(self.seen)
    }
}

/// Steps between two agreements of a flock split across ranks: its steps are short (0.1 to a few
/// ms), so the one-byte all-gather is kept to one per 64 steps.
pub const FLOCK_AGREE_EVERY: u64 = 64;
/// Steps between two agreements of a fluid split across ranks: its steps are long (a 512^3 step
/// is tens of ms), so the stop comes at most 7 steps late.
pub const FLUID_AGREE_EVERY: u64 = 8;

/// How a run ended early: stopped by its probe after `step`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stopped {
    /// The last step completed: steps into the run for the flock, the lattice's step count for
    /// the fluid.
    pub step: u64,
}

/// A run the command stopped on a signal: its one-line message, and [`EXIT_STOPPED`] from
/// `main`.
#[derive(Debug, thiserror::Error)]
#[error("stopped by {signal} after step {step} of {of}; {}", match checkpoint {
    Some(p) => format!("wrote checkpoint {p}"),
    None => "no checkpoint written".to_string(),
})]
pub struct SignalStop {
    /// `"SIGINT"` or `"SIGTERM"`.
    pub signal: &'static str,
    /// The last step completed.
    pub step: u64,
    /// The step the run would have ended at.
    pub of: u64,
    /// Whether this process prints the line (rank 0, or the only rank).
    pub lead: bool,
    /// The checkpoint written at the stop (a `.npz`, or the manifest of several ranks), if any.
    pub checkpoint: Option<String>,
}

impl SignalStop {
    /// The error for a run that stopped after `step` of `of` on the installed request's signal.
    pub fn new(step: u64, of: u64, lead: bool) -> SignalStop {
        SignalStop {
            signal: StopRequest::installed()
                .and_then(|r| r.signal())
                .unwrap_or("a signal"),
            step,
            of,
            lead,
            checkpoint: None,
        }
    }

    /// This stop, having written the checkpoint `path`.
    pub fn with_checkpoint(mut self, path: &std::path::Path) -> SignalStop {
        self.checkpoint = Some(path.display().to_string());
        self
    }
}

/// The probe of a command's run loop: the installed request, armed (or [`Never`] without one),
/// agreed over `comm` every `every` steps when the run has several ranks. Every rank of a run
/// must take the same branch: with `comm`, every rank agrees, signalled or not.
pub fn command_probe<'a>(comm: Option<&'a dyn Comm>, every: u64) -> Box<dyn StopProbe + 'a> {
    let local: Box<dyn StopProbe> = match StopRequest::installed() {
        Some(r) => Box::new(r.arm()),
        None => Box::new(Never),
    };
    match comm {
        Some(c) => Box::new(Agreed::new(local, c, every)),
        None => local,
    }
}

impl<P: StopProbe + ?Sized> StopProbe for Box<P> {
    fn stop_after(&mut self, done: u64) -> Result<bool, CommError> {
        (**self).stop_after(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ranks::LocalComm;

    #[test]
    fn never_and_local() {
        assert!(!Never.stop_after(1).unwrap());
        let mut k = 0;
        let mut p = Local(|| {
            k += 1;
            k >= 3
        });
        assert!(!p.stop_after(1).unwrap());
        assert!(!p.stop_after(2).unwrap());
        assert!(p.stop_after(3).unwrap());
    }

    #[test]
    fn agreed_ranks_stop_at_the_same_multiple() {
        // Rank 0's flag rises after step 5 and stays, rank 1's is up only at step 12, rank 2's
        // never: every rank stops after step 8 (the first agreement after rank 0's signal),
        // none earlier; with rank 0 silent, rank 1's one-step flag is still seen at 16.
        for (first, want) in [(5u64, 8u64), (u64::MAX, 16)] {
            let comms = LocalComm::world(3);
            let stops: Vec<u64> = std::thread::scope(|s| {
                let hs: Vec<_> = comms
                    .iter()
                    .map(|c| {
                        s.spawn(move || {
                            let r = c.rank();
                            let mut d = 0u64;
                            let local = Local(move || {
                                d += 1;
                                (r == 0 && d >= first) || (r == 1 && d == 12)
                            });
                            let mut p = Agreed::new(local, c, 8);
                            (1..=100).find(|&d| p.stop_after(d).unwrap()).unwrap()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert_eq!(stops, vec![want; 3]);
        }
    }
}
