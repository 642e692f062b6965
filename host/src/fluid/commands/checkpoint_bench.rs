//! `murmur fluid checkpoint-bench`: what a checkpoint costs a run. A periodic box of `--size`^3
//! cells is stepped, then checkpointed between two steps (populations streamed piece by piece,
//! the readers' density and velocity, fsync and rename) and restored from the file with its
//! pages dropped from the page cache (so the read comes from the disk); then checkpointed as
//! `fluid run` does where the backend takes a copy of its populations, beside the run going on,
//! and the steps done meanwhile timed again alone; beside it the container alone (the same
//! bytes, no lattice) and the process's peak resident memory.

use super::super::cli::StorageArgs;
use super::super::defaults::{Defaults, DeviceClass};
use super::super::driver::{self, BackendChoice};
use super::super::resume::{self, Expected, FluidCheckpoint, Identity, RunExtra, SaveContext};
use super::super::scene::taylor_green;
use crate::checkpoint::file_sink;
use anyhow::{bail, Context, Result};
use murmur_common::lbm::{CollisionModel, Units};
use std::path::PathBuf;
use std::time::Instant;

#[derive(clap::Args)]
pub struct CheckpointBenchArgs {
    /// Edge of the periodic cube, cells.
    #[arg(long, default_value_t = 256)]
    pub size: u32,
    /// Collision model.
    #[arg(long, value_enum, default_value = "bgk")]
    pub model: CollisionModel,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Folder of the checkpoint file (on the disk to measure); the file is deleted afterwards.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
    /// Steps timed for the cost of a step.
    #[arg(long, default_value_t = 20)]
    pub steps: u64,
    /// The checkpoint interval whose cost per step is reported.
    #[arg(long, value_name = "K", default_value_t = 1000)]
    pub every: u64,
}

/// Peak resident memory of this process (`VmHWM`), bytes; `None` off Linux.
pub fn vm_hwm() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn hwm_text(x: Option<u64>) -> String {
    x.map_or("unknown".into(), |b| format!("{:.0} MiB", mib(b)))
}

pub fn checkpoint_bench(a: &CheckpointBenchArgs) -> Result<()> {
    if a.size < 2 || a.steps == 0 || a.every == 0 {
        bail!("--size must be at least 2, --steps and --every at least 1");
    }
    if !a.dir.is_dir() {
        bail!("--dir {}: no such folder", a.dir.display());
    }
    let mut setup = taylor_green(a.size, a.size, 0.05, 0.01, a.model)?;
    a.storage
        .apply(&mut setup, &Defaults::of(DeviceClass::expected(a.backend)));
    let (mut backend, note) = driver::open_backend(a.backend, &setup)?;
    if let Some(n) = note {
        eprintln!("murmur: {n}");
    }
    let l = backend.lattice();
    println!(
        "checkpoint bench: {} x {} x {} cells, {} {} {}, {}",
        l.nx,
        l.ny,
        l.nz,
        a.model.name(),
        backend.storage().name(),
        backend.streaming().name(),
        backend.describe()
    );
    backend.step()?;
    backend.synchronize()?;
    let t0 = Instant::now();
    for _ in 0..a.steps {
        backend.step()?;
    }
    backend.synchronize()?;
    let step_s = t0.elapsed().as_secs_f64() / a.steps as f64;
    let before = vm_hwm();
    let identity = Identity::of_text("checkpoint-bench", "name = \"checkpoint-bench\"\n")?;
    let units = Units {
        dx: 1.0,
        dt: 1.0,
        rho0: 1.0,
    };
    let path = a
        .dir
        .join(format!("checkpoint-bench-{}.npz", std::process::id()));
    let extra = RunExtra::default();
    let cx = SaveContext {
        identity: &identity,
        units,
        flags: &setup.flags,
        extra: &extra,
        factory: &file_sink,
    };
    let t0 = Instant::now();
    let written = resume::save(&path, backend.as_mut(), &cx);
    let write_s = t0.elapsed().as_secs_f64();
    let written = written.inspect_err(|_| {
        let _ = std::fs::remove_file(&path);
    })?;
    let after_write = vm_hwm();
    let bytes = written.bytes;
    let gbps = |s: f64| bytes as f64 / 1e9 / s.max(1e-9);
    let cold = crate::checkpoint::drop_cache(&path);
    let pops = l.cells() as u64 * 27 * backend.storage().bytes() as u64;
    println!(
        "file: {:.1} MiB ({:.1} MiB of populations, {:.1} MiB of readers' density and velocity, \
         flags {:.1} MiB)",
        mib(bytes),
        mib(pops),
        mib(l.cells() as u64 * 16),
        mib(l.cells() as u64)
    );
    println!(
        "write (the run's checkpoint: 3 passes over the lattice's pieces, SHA-256 and CRC-32, \
         fsync and rename): {write_s:.3} s, {:.2} GB/s",
        gbps(write_s)
    );
    let t0 = Instant::now();
    let restored = (|| -> Result<()> {
        let mut c = FluidCheckpoint::open(&path)?;
        c.check(&Expected {
            identity: &identity,
            model: backend.model(),
            storage: backend.storage(),
            streaming: backend.streaming(),
            lattice: l,
        })?;
        c.restore(backend.as_mut(), &setup.flags)?;
        backend.synchronize()?;
        Ok(())
    })();
    let read_s = t0.elapsed().as_secs_f64();
    let _ = std::fs::remove_file(&path);
    restored.context("restoring the checkpoint")?;
    let after_read = vm_hwm();
    println!(
        "read (restore into the backend, every checksum checked, {}): {read_s:.3} s, {:.2} GB/s",
        if cold {
            "the file's pages dropped from the page cache first"
        } else {
            "from the page cache"
        },
        gbps(read_s)
    );
    beside(
        a,
        backend.as_mut(),
        &setup.flags,
        &identity,
        units,
        step_s,
        bytes,
    )?;
    let raw = crate::checkpoint::bench(&a.dir, bytes, 8 << 20)?;
    println!(
        "the container alone, {:.1} MiB: write {:.3} s, {:.2} GB/s; read {:.3} s, {:.2} GB/s ({})",
        mib(raw.bytes),
        raw.write_s,
        raw.write_gbps,
        raw.read_s,
        raw.read_gbps,
        if raw.read_cold { "cold" } else { "page cache" }
    );
    println!(
        "a step: {:.3} ms; a checkpoint every {} steps written between two steps costs {:.2} % \
         of the run ({:.3} ms per step)",
        step_s * 1e3,
        a.every,
        100.0 * write_s / (a.every as f64 * step_s),
        write_s / a.every as f64 * 1e3
    );
    let piece = resume::PIECE_CELLS as u64 * 27 * backend.storage().bytes() as u64;
    let grew = |x: Option<u64>| match (before, x) {
        (Some(b), Some(x)) => format!("{:+.0} MiB", mib(x.saturating_sub(b))),
        _ => "unknown".into(),
    };
    println!(
        "peak resident memory (VmHWM): {} before, {} after the write ({}), {} after the read ({}); \
         one piece is {:.0} MiB of populations (a copy beside the run lives on the GPU, or in \
         the host's memory for the CPU reference)",
        hwm_text(before),
        hwm_text(after_write),
        grew(after_write),
        hwm_text(after_read),
        grew(after_read),
        mib(piece)
    );
    Ok(())
}

/// The checkpoint as `fluid run` writes it where the backend takes a copy of its populations:
/// the run pauses for the copy, steps on while a thread writes the file, and the steps done
/// meanwhile are timed again alone; the difference is what the checkpoint cost the run.
fn beside(
    a: &CheckpointBenchArgs,
    backend: &mut dyn super::super::FluidBackend,
    flags: &[u8],
    identity: &Identity,
    units: Units,
    step_s: f64,
    bytes: u64,
) -> Result<()> {
    use crate::checkpoint::{CheckpointArgs, Schedule};
    let args = CheckpointArgs {
        checkpoint_every: 1,
        checkpoint_dir: Some(a.dir.clone()),
        ..Default::default()
    };
    let prefix = format!("checkpoint-bench-{}", std::process::id());
    let mut c = resume::Checkpoints::new(
        Schedule::new(&args, &prefix, None, false),
        identity.clone(),
        units,
    );
    let flags: std::sync::Arc<[u8]> = flags.into();
    let path = c.schedule.path(backend.step_count());
    backend.synchronize()?;
    let t0 = Instant::now();
    let started = c.write(backend, &flags, None, None, Vec::new());
    backend.synchronize()?;
    let pause = t0.elapsed().as_secs_f64();
    let mut steps = 0u64;
    let stepped = (|| -> Result<()> {
        started?;
        while c.busy() {
            backend.step()?;
            backend.synchronize()?;
            steps += 1;
        }
        Ok(())
    })();
    let with_s = t0.elapsed().as_secs_f64();
    let settled = c.settle();
    let _ = std::fs::remove_file(&path);
    stepped?;
    settled?;
    if c.beside_count == 0 {
        println!(
            "beside the run: {} takes no copy of its populations here (too little free memory); \
             `fluid run` writes between two steps",
            backend.describe()
        );
        return Ok(());
    }
    let written_s = c.beside_time.as_secs_f64();
    let t1 = Instant::now();
    for _ in 0..steps {
        backend.step()?;
        backend.synchronize()?;
    }
    let alone_s = t1.elapsed().as_secs_f64();
    let cost = (with_s - alone_s).max(0.0);
    println!(
        "beside the run (what fluid run does here: a copy of the populations, the file written \
         from it on a thread of its own): the run paused {pause:.3} s for the copy; the file was \
         complete {written_s:.3} s later ({:.2} GB/s), while the run did {steps} steps in \
         {with_s:.3} s, {alone_s:.3} s alone: the checkpoint cost the run {cost:.3} s",
        bytes as f64 / 1e9 / written_s.max(1e-9)
    );
    let gap = a.every as f64 * step_s;
    let fewest = (written_s / step_s.max(1e-12)).ceil() as u64;
    if gap >= written_s {
        println!(
            "a checkpoint every {} steps written beside the run costs {:.2} % of the run (one \
             is in flight at a time: from every {fewest} steps on, none waits for the last)",
            a.every,
            100.0 * cost / gap
        );
    } else {
        let wait = written_s - gap;
        println!(
            "a checkpoint every {} steps ({gap:.3} s of run) comes before the last one's file is \
             complete: the run waits {wait:.3} s for each, {:.1} % of the run; from every \
             {fewest} steps on, a checkpoint costs the run {cost:.3} s",
            a.every,
            100.0 * (wait + cost) / gap
        );
    }
    Ok(())
}
