//! `murmur fluid run`: layer the settings, open the backend, drive the run, print its summary.

pub mod open;
mod resume;
pub mod settings;

use super::cli::RunArgs;
use super::defaults::{Defaults, DeviceClass};
use super::driver::{self, BackendChoice, LastOutput, RunOptions};
use super::multi::{self, GpuRank};
use super::pieces::{LeadPieces, PieceSink};
use super::resume::{Checkpoints, Identity};
use super::riders::{OpenRider, Rider, Riders, RidingSink};
use super::scene::file::Les;
use super::scene::{self, Scene, SceneFile};
use super::sink::{self, Out, RunSink};
use super::slab::state::CellBox;
use super::slab::SlabPlan;
use super::statistics::Statistics;
use super::FluidBackend;
use crate::ranks::Comm;
use crate::ranks::RankEnv;
use anyhow::{bail, Result};
use murmur_common::lbm::Units;
use settings::{CacheUse, Partial, Settings};
use std::io::IsTerminal;
use std::sync::Arc;

/// How this process takes part in the run.
enum World {
    /// One lattice.
    One,
    /// One rank of a run over GPUs (NCCL).
    Gpu(RankEnv),
    /// One of `--ranks N` CPU ranks, a thread of this process.
    Cpu(Arc<dyn Comm>),
}

/// `murmur fluid run`; `rider` opens what rides the run from a layer above the fluid (the
/// coupled flocks; [`super::riders::none`] for nothing).
pub fn run(a: &RunArgs, rider: OpenRider) -> Result<()> {
    if let Some(n) = a.cpu_ranks {
        return cpu_ranks(a, n, rider);
    }
    refuse_cpu_ranks(a, a.world.gpus.is_some_and(|n| n > 1))?;
    if crate::ranks::spawn::is_launcher(a.world.gpus) {
        return Ok(crate::ranks::spawn::launch(a.world.gpus.unwrap_or(1))?);
    }
    // `--gpus 1`: one rank through the slab code, as the check and scaling commands run it.
    let ranked = crate::ranks::env::RankEnv::or_single(multi::rank_env(&a.world)?, &a.world)?;
    refuse_cpu_ranks(a, ranked.is_some())?;
    run_in(a, ranked.map_or(World::One, World::Gpu), rider)
}

/// `--ranks N`: N CPU ranks, threads of this process joined by memory copies (the slabs and
/// exchange of a run over GPUs, without a GPU).
fn cpu_ranks(a: &RunArgs, n: usize, open_rider: OpenRider) -> Result<()> {
    if n == 0 {
        bail!("--ranks must be at least 1");
    }
    if a.backend == BackendChoice::Cuda {
        bail!("--ranks N runs CPU ranks in this process: for GPUs use --gpus N");
    }
    crate::ranks::local::run_ranks(n, |c| run_in(a, World::Cpu(Arc::new(c)), open_rider)).map(drop)
}

/// The run of this process (one lattice, or one rank).
fn run_in(a: &RunArgs, world: World, open_rider: OpenRider) -> Result<()> {
    // Rank 0 (or the only rank) prints and writes.
    let lead = match &world {
        World::One => true,
        World::Gpu(e) => e.rank == 0,
        World::Cpu(c) => c.rank() == 0,
    };
    let backend = match world {
        World::Cpu(_) => BackendChoice::Cpu,
        _ => a.backend,
    };
    let flags = Partial::flags(a);
    let mut file = SceneFile::load(&a.scene)?;
    let overridden = a
        .overrides
        .apply(&mut file)
        .map_err(scene::in_scene(&a.scene))?;
    let unbuilt = Settings::layered(None, None, &Partial::scene_file(&file), &flags);
    // The build takes the model.
    file.collision = unbuilt.model;
    let in_scene = scene::in_scene(&a.scene);
    if backend == BackendChoice::Cpu && matches!(world, World::One) {
        // The CPU lattice and the setup it is built from, before either exists.
        scene::check_cpu_memory(&file, &a.scene, unbuilt.storage.bytes())?;
    }
    let mut scene = file.build().map_err(in_scene)?;
    scene.warnings.splice(0..0, overridden);
    // The device defaults of the device the backend will be: the knobs it opens with.
    let class = DeviceClass::expected(backend);
    let device = Partial::device(&Defaults::of(class), !scene.setup.immersed.is_empty());
    let settings = Settings::layered(Some(&device), None, &Partial::scene(&scene), &flags);
    settings.apply(&mut scene.setup);
    scene.setup.graph = a.storage.graph;
    refuse_fp16_channel(&scene, &a.scene)?;
    if lead {
        for w in &scene.warnings {
            eprintln!("murmur: warning: {w}");
        }
        for line in &scene.info {
            println!("{line}");
        }
    }
    let out = output(a)?;
    let steps = settings.steps;
    let identity = Identity::of(&scene.file)?;
    let checkpoint = resume::open_resume(a, lead)?;
    if let Some(c) = &checkpoint {
        resume::check_steps(c, steps)?;
    }
    let schedule = resume::schedule(a, &scene.file.name, &out);
    let opened = open(a, scene, world, &out)?;
    let mut opened = tune(a, &flags, opened, class, lead)?;
    // Checked and restored before the output folder exists or any step runs.
    let resumed = match checkpoint {
        Some(c) => {
            let flags = opened.scene().setup.flags.clone();
            let link = opened.rank.as_ref().map(|r| (r.comm.clone(), r.cells));
            let rank = link.as_ref().map(|(c, b)| (&**c as &dyn Comm, *b));
            Some(resume::restore(
                &c,
                &identity,
                opened.backend_mut(),
                &flags,
                rank,
            )?)
        }
        None => None,
    };
    // What rides the run, opened on the fluid's state at the start and checked before any
    // output or step.
    let scene_now = opened.scene().clone();
    let rider = open_rider(&a.scene, &scene_now, opened.backend_mut())?;
    let stats = Statistics::open(&scene_now, opened.backend_mut(), steps, &out)
        .map_err(scene::in_scene(&a.scene))?;
    let mut rider = Riders::join(rider, stats.map(|s| Box::new(s) as Box<dyn Rider>));
    if let (Some(r), Some(from)) = (rider.as_mut(), &resumed) {
        r.restore(&from.arrays, opened.backend_mut())?;
    }
    if a.checkpoint.checkpoint_every > 0 || a.checkpoint.checkpoint_dir.is_some() {
        schedule.prepare()?;
    }
    // The folder last, once the scene, the backend and the tuning have all passed.
    if let Out::Dir(dir) = &out {
        crate::preflight::create_output_dir(dir)?;
    }
    let first = opened.backend().step_count();
    let opts = options(a, opened.scene(), &out, lead, steps - first);
    let ranks = opened.rank.as_ref().map(|r| {
        let scene = opened.scene();
        RankCheckpointsSpec {
            schedule: schedule.clone(),
            identity: identity.clone(),
            units: scene.units,
            flags: scene.setup.flags.clone(),
            cells: r.cells,
            comm: r.comm.clone(),
        }
    });
    if !lead {
        return follow(opened, &out, opts, ranks, rider);
    }
    header(opened.scene(), opened.backend(), steps);
    if let Some(r) = &resumed {
        println!("{}", r.line(steps));
    }
    for line in rider.iter().flat_map(|r| r.header()) {
        println!("{line}");
    }
    let units = opened.scene().units;
    let checkpoints = match ranks {
        Some(r) => Saving::Ranks(r),
        None => Saving::One(Checkpoints::new(schedule, identity, units)),
    };
    finish(opened, out, opts, checkpoints, resumed, rider)
}

/// What a rank's [`resume::RankCheckpoints`] sink is made of.
struct RankCheckpointsSpec {
    schedule: crate::checkpoint::Schedule,
    identity: Identity,
    units: Units,
    flags: Vec<u8>,
    cells: CellBox,
    comm: Arc<dyn Comm>,
}

impl RankCheckpointsSpec {
    fn sink<'a>(self, inner: &'a mut dyn driver::Sink) -> resume::RankCheckpoints<'a> {
        resume::RankCheckpoints {
            inner,
            schedule: self.schedule,
            identity: self.identity,
            units: self.units,
            flags: self.flags,
            cells: self.cells,
            comm: self.comm,
            written: Vec::new(),
        }
    }
}

/// A turbulent channel's start in FP16 storage is refused: its driving force per step lies
/// far below FP16's resolution of the populations, so the flow would never feel it.
fn refuse_fp16_channel(scene: &Scene, path: &std::path::Path) -> Result<()> {
    let storage = scene.setup.storage;
    if scene.file.initial.channel.is_some() && storage != murmur_common::lbm::StorageKind::Fp32 {
        let g = scene
            .units
            .acceleration_to_lattice(scene.file.body_force.acceleration[0]);
        bail!(
            "scene {}: a turbulent channel runs in FP32: its driving force ({g:.1e} per step, \
             lattice) is below the resolution of {} populations; use --storage fp32",
            path.display(),
            storage.name()
        );
    }
    Ok(())
}

/// How the run writes its checkpoints.
enum Saving {
    /// One lattice: the run's sink writes them.
    One(Checkpoints),
    /// A rank of several: a sink around the rank's own.
    Ranks(RankCheckpointsSpec),
}

/// Several ranks run on GPUs only: refused with `--backend cpu` when `several` ranks would run.
fn refuse_cpu_ranks(a: &RunArgs, several: bool) -> Result<()> {
    if several && a.backend == BackendChoice::Cpu {
        bail!("several ranks run on GPUs: leave out --backend cpu (fluid ranks-check --ranks N checks the decomposition on the CPU)");
    }
    Ok(())
}

/// Where `--out` sends the fields, checked before any step.
fn output(a: &RunArgs) -> Result<Out> {
    Ok(match &a.out {
        None => Out::None,
        Some(p) if matches!(p.extension().and_then(|e| e.to_str()), Some("vti" | "npz")) => {
            crate::preflight::check_output_file(p)?;
            Out::File(p.clone())
        }
        Some(p) if p.extension().is_some() => {
            bail!(
                "--out {}: use a folder, or a file ending in .vti or .npz",
                p.display()
            )
        }
        Some(p) => {
            crate::preflight::check_output_dir(p)?;
            Out::Dir(p.clone())
        }
    })
}

/// A run's open simulation: a [`Fluid`](crate::Fluid) on one device, or this rank's slab
/// (with its scene) beside the rank and (writing a folder) the sink of its pieces.
struct Opened {
    sim: Sim,
    rank: Option<RankLink>,
    pieces: Option<PieceSink>,
}

/// A rank's place among the others.
struct RankLink {
    comm: Arc<dyn Comm>,
    /// The GPU rank (NCCL), if this is one.
    gpu: Option<GpuRank>,
    /// The cells this rank owns.
    cells: CellBox,
}

impl RankLink {
    /// An orderly end of the run on this rank.
    fn finish(&self) {
        if let Some(g) = &self.gpu {
            g.finish();
        }
    }
}

/// The simulation a run steps.
enum Sim {
    /// One device: the library's `Fluid`, which holds the scene.
    One(Box<crate::Fluid>),
    /// This rank's slab of several.
    Slab {
        backend: Box<dyn FluidBackend>,
        scene: Box<Scene>,
    },
}

impl Opened {
    fn scene(&self) -> &Scene {
        match &self.sim {
            Sim::One(f) => f.built(),
            Sim::Slab { scene, .. } => scene,
        }
    }

    fn backend(&self) -> &dyn FluidBackend {
        match &self.sim {
            Sim::One(f) => f.backend(),
            Sim::Slab { backend, .. } => backend.as_ref(),
        }
    }

    fn backend_mut(&mut self) -> &mut dyn FluidBackend {
        match &mut self.sim {
            Sim::One(f) => f.backend_mut(),
            Sim::Slab { backend, .. } => backend.as_mut(),
        }
    }
}

/// Opens `scene`: one slab per rank of `world`, else a [`Fluid`](crate::Fluid) as
/// `--backend` says (a note on stderr when auto falls back).
fn open(a: &RunArgs, scene: Scene, world: World, out: &Out) -> Result<Opened> {
    let in_scene = scene::in_scene(&a.scene);
    let (mut slab, plan, gpu) = match world {
        World::One => {
            let fluid = crate::Fluid::from_built(scene, a.backend, 0)?;
            if let Some(note) = fluid.fallback() {
                eprintln!("murmur: {note}");
            }
            return Ok(Opened {
                sim: Sim::One(Box::new(fluid)),
                rank: None,
                pieces: None,
            });
        }
        // One slab per rank; the tuning cache is for one GPU and stays out of it.
        World::Gpu(env) => {
            let plan = SlabPlan::new(&scene.setup, env.size).map_err(in_scene)?;
            let r = GpuRank::join(env)?;
            (r.open(&scene.setup, &plan)?, plan, Some(r))
        }
        World::Cpu(comm) => {
            let plan = SlabPlan::new(&scene.setup, comm.size()).map_err(in_scene)?;
            let slab = super::slab::open_cpu_rank(&scene.setup, &plan, comm)?;
            (slab, plan, None)
        }
    };
    let link = RankLink {
        comm: slab.comm().clone(),
        gpu,
        cells: slab.own_box(),
    };
    // Several ranks writing a folder: each rank writes its piece, rank 0 the .pvti.
    let mut pieces = None;
    if let Out::Dir(dir) = out {
        let periodic = scene.setup.immersed.periodic;
        slab.write_pieces(periodic[plan.axis]);
        pieces = Some(PieceSink {
            name: scene.file.name.clone(),
            dir: dir.clone(),
            units: scene.units,
            flags: scene.setup.flags.clone(),
            periodic,
            comm: slab.comm().clone(),
            plan: plan.clone(),
            written: Vec::new(),
        });
    }
    Ok(Opened {
        sim: Sim::Slab {
            backend: Box::new(slab),
            scene: Box::new(scene),
        },
        rank: Some(link),
        pieces,
    })
}

/// Layers the device defaults of the opened backend and the tuning cache's entry into the
/// settings of `scene` and prints (on the `lead` rank) where the knobs came from. The cache is
/// keyed by the opened backend's device, so both are looked up after the open (`expected`: the
/// class the backend was opened for); knobs that differ reopen the same backend with them.
/// Several ranks take their device defaults and leave the cache out (it is for one GPU).
fn tune(
    a: &RunArgs,
    flags: &Partial,
    opened: Opened,
    expected: DeviceClass,
    lead: bool,
) -> Result<Opened> {
    let describe = opened.backend().describe();
    let (class, cache) = match &opened.rank {
        Some(_) => (expected, CacheUse::Off("the tuning cache is for one GPU")),
        None if a.no_tuning => (
            DeviceClass::of(&describe),
            CacheUse::Off("the tuning cache is off: --no-tuning"),
        ),
        None => (DeviceClass::of(&describe), CacheUse::Device(&describe)),
    };
    let (settings, line) = Settings::picked(opened.scene(), &a.scene, class, cache, flags);
    if lead {
        println!("{line}");
    }
    let Sim::One(fluid) = opened.sim else {
        // Several ranks: the same class as the open, the same knobs.
        return Ok(opened);
    };
    let solids = !fluid.built().setup.immersed.is_empty();
    Ok(Opened {
        sim: Sim::One(Box::new(fluid.reopened(settings.knobs(solids), line)?)),
        ..opened
    })
}

/// The driver's options for `scene`.
fn options(a: &RunArgs, scene: &Scene, out: &Out, lead: bool, steps: u64) -> RunOptions {
    RunOptions {
        steps,
        check_every: scene.file.run.check_every,
        output_every: match out {
            Out::Dir(_) => scene.file.run.output_every.unwrap_or(0),
            _ => 0,
        },
        forces_every: scene.forces.every,
        health: scene.bounds(),
        // Rank 0 (or the only rank) shows the progress.
        progress: lead && !a.quiet && std::io::stderr().is_terminal(),
        inlet: scene.inlet,
    }
}

/// Another rank than 0: the same steps and collective checks, no output of its own.
fn follow(
    mut opened: Opened,
    out: &Out,
    opts: RunOptions,
    ranks: Option<RankCheckpointsSpec>,
    mut rider: Option<Box<dyn Rider>>,
) -> Result<()> {
    let mut last_good: Option<LastOutput> = None;
    let mut follower = driver::Follower {
        fields: !matches!(out, Out::None),
    };
    let mut pieces = opened.pieces.take();
    let own: &mut dyn driver::Sink = match pieces.as_mut() {
        Some(p) => p,
        None => &mut follower,
    };
    let mut saving = None;
    let own: &mut dyn driver::Sink = match ranks {
        Some(r) => saving.insert(r.sink(own)),
        None => own,
    };
    // The rider steps on every rank (its exchanges are collective; its arrays go into the
    // checkpoints); rank 0 writes its files.
    let name = opened.scene().file.name.clone();
    let mut riding: Option<RidingSink> = None;
    let inner: &mut dyn driver::Sink = match rider.as_deref_mut() {
        Some(r) => riding.insert(RidingSink {
            inner: own,
            rider: r,
            out: out.clone(),
            name,
            written: Vec::new(),
        }),
        None => own,
    };
    let sink = inner;
    let first = opened.backend().step_count();
    let comm = opened.rank.as_ref().map(|r| r.comm.clone());
    let mut stop = crate::stop::command_probe(comm.as_deref().map(|c| c as _), AGREE_EVERY);
    let report = driver::run_until(opened.backend_mut(), opts, &mut last_good, sink, &mut *stop)?;
    if let Some(r) = &opened.rank {
        r.finish();
    }
    match report.stopped {
        Some(s) => Err(crate::stop::SignalStop::new(s.step, first + opts.steps, false).into()),
        None => Ok(()),
    }
}

/// Steps between the ranks' agreements on a stop signal ([`crate::stop::Agreed`]).
const AGREE_EVERY: u64 = crate::stop::FLUID_AGREE_EVERY;

/// The line that opens a run: the scene, its lattice, backend and scales.
fn header(scene: &Scene, backend: &dyn FluidBackend, steps: u64) {
    let units = scene.units;
    let l = scene.setup.lattice();
    let p = &scene.setup.params;
    let nu = (1.0 / p.rates.shear as f64 - 0.5) / 3.0;
    let ph = &scene.file.physical;
    let lat = &scene.file.lattice;
    let les = match lat.les {
        Les::None => String::new(),
        Les::Smagorinsky => format!(" + smagorinsky C_s {}", lat.smagorinsky),
        Les::Wale => format!(" + wale C_w {}", lat.wale),
    };
    println!(
        "scene {} ({}{les}, {} {} {}): {} x {} x {} cells, {}, {:.1} MiB, dx {:.4e} m, dt {:.4e} s, tau \
         {:.4}, Re {:.0}, lattice Mach {:.3}, {} steps = {:.4} s",
        scene.file.name,
        scene.file.collision.name(),
        backend.storage().name(),
        backend.streaming().name(),
        scene.setup.layout.describe(),
        l.nx,
        l.ny,
        l.nz,
        backend.describe(),
        backend.allocated_bytes() as f64 / (1u64 << 20) as f64,
        units.dx,
        units.dt,
        Units::tau(nu),
        ph.velocity * ph.length / ph.viscosity,
        Units::mach(units.velocity_to_lattice(ph.velocity)),
        steps,
        steps as f64 * units.dt
    );
}

/// Rank 0 (or the only rank): runs to the outputs and prints the summary, the stage times, the
/// health at the end, the forces' summaries and the last files written.
fn finish(
    mut opened: Opened,
    out: Out,
    opts: RunOptions,
    saving: Saving,
    resumed: Option<resume::Resumed>,
    mut rider: Option<Box<dyn Rider>>,
) -> Result<()> {
    let scene = opened.scene();
    let csv = out.forces_csv(&scene.file.name);
    if let Some(p) = &csv {
        crate::preflight::check_output_file(p)?;
    }
    let forces = match &resumed {
        Some(r) => {
            sink::resumed_force_series(scene, r.extra.series.as_ref(), r.step, csv.as_deref())?
        }
        None => sink::force_series(scene, csv.as_deref())?,
    };
    let mut sink = RunSink {
        name: scene.file.name.clone(),
        flags: scene.setup.flags.clone().into(),
        units: scene.units,
        periodic: scene.setup.immersed.periodic,
        out,
        written: Vec::new(),
        forces,
        checkpoints: None,
    };
    let mut ranks = None;
    match saving {
        Saving::One(c) => sink.checkpoints = Some(c),
        Saving::Ranks(r) => ranks = Some(r),
    }
    let mut pieces = opened.pieces.take();
    let comm = opened.rank.as_ref().map(|r| r.comm.clone());
    let backend = opened.backend_mut();
    let mut last_good: Option<LastOutput> = resumed
        .as_ref()
        .and_then(|r| r.extra.last_output)
        .map(|step| LastOutput { step });
    let first = backend.step_count();
    let mut stop = crate::stop::command_probe(comm.as_deref().map(|c| c as _), AGREE_EVERY);
    let mut manifests = Vec::new();
    let mut ridden = Vec::new();
    let (sink_out, sink_name) = (sink.out.clone(), sink.name.clone());
    let result = {
        let mut lead;
        let own: &mut dyn driver::Sink = match pieces.as_mut() {
            Some(p) => {
                lead = LeadPieces {
                    pieces: p,
                    run: &mut sink,
                };
                &mut lead
            }
            None => &mut sink,
        };
        // A rank's checkpoints around its own sink, the rider around both (its arrays go into
        // the checkpoints).
        let mut saving = None;
        let own: &mut dyn driver::Sink = match ranks {
            Some(r) => saving.insert(r.sink(own)),
            None => own,
        };
        let mut riding: Option<RidingSink> = None;
        let inner: &mut dyn driver::Sink = match rider.as_deref_mut() {
            Some(r) => riding.insert(RidingSink {
                inner: own,
                rider: r,
                out: sink_out,
                name: sink_name,
                written: Vec::new(),
            }),
            None => own,
        };
        let result = driver::run_until(backend, opts, &mut last_good, inner, &mut *stop);
        if let Some(r) = riding {
            ridden = r.written;
        }
        if let Some(s) = saving {
            manifests = s.written;
        }
        result
    };
    drop(stop);
    // A checkpoint written beside the run is complete (or failed) before the run reports.
    let settled = sink.checkpoints.as_mut().map_or(Ok(()), |c| c.settle());
    // The force file keeps every row handed over, also when the run stops early.
    let summaries = sink.finish();
    let report = result?;
    settled?;
    if let Some(p) = pieces {
        sink.written.extend(p.written);
    }
    sink.written.extend(ridden);
    if let Some(r) = &opened.rank {
        r.finish();
    }
    let checkpoints = sink.checkpoints.take();
    if let Some(s) = report.stopped {
        let of = first + opts.steps;
        let mut stop = crate::stop::SignalStop::new(s.step, of, true);
        let last = checkpoints
            .as_ref()
            .and_then(|c| c.last())
            .or(manifests.last().map(|p| p.as_path()));
        if let Some(p) = last {
            stop = stop.with_checkpoint(p);
        }
        return Err(stop.into());
    }
    println!("{}", report.summary(&opened.backend().describe()));
    if let Some(line) = checkpoints.as_ref().and_then(|c| c.summary()) {
        println!("{line}");
    }
    if let Some(m) = manifests.last() {
        println!(
            "checkpoints: {} written by every rank, the last {}",
            manifests.len(),
            m.display()
        );
    }
    if !report.stages.is_empty() {
        println!("stages (mean per step): {}", report.stages);
    }
    if let Some(h) = report.health {
        println!(
            "health at the end: density {:.4} .. {:.4}, max local Mach {:.3}",
            h.min_rho, h.max_rho, h.max_mach
        );
    }
    for s in summaries? {
        println!("{s}");
    }
    for line in rider.iter().flat_map(|r| r.summary()) {
        println!("{line}");
    }
    for p in sink.written.iter().rev().take(3) {
        println!("wrote {}", p.display());
    }
    Ok(())
}
