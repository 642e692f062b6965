//! The flock on several ranks, as commands: `flock run --gpus N` (or under mpirun / srun /
//! RANK+WORLD_SIZE, or `--ranks N` on the CPU), `flock check-ranks` (the same flock on 1 rank
//! and on N, compared by id) and `flock scale` (strong and weak scaling on the GPUs). The slab
//! decomposition is [`super::slab`] (CPU ranks) and [`super::slab_cuda`] (one process per GPU).
//! Rank 0 prints; a failing rank stops the others (the launcher, or the communicator's
//! watchdog) and nothing is saved.

use super::bench::constant_density_scale;
use super::capture::FlockCapture;
use super::cli::checkpoint_prefix;
use super::cli::{pick_grid_for, FlockArgs, RunArgs};
use super::cpu::CpuFlock;
use super::cuda::{CudaFlock, UpdateForm};
use super::driver::{self, si, BackendChoice, Start};
use super::resume::{self, Resume};
use super::slab::{
    barrier, check_ranks, halo_width, run_cpu_ranks, run_rank, run_rank_with, Between, CpuRank,
    SlabError,
};
use super::slab_cuda::CudaRank;
use super::{
    snapshot, Difference, FlockBackend, FlockSettings, FlockState, Method, SimError, SortArg,
    WithinCell,
};
use crate::checkpoint::Schedule;
use crate::gpu::Gpu;
use crate::preflight;
use crate::ranks::nccl::NcclComm;
use crate::ranks::{spawn, RankEnv, Ranks};
use crate::stop::FLOCK_AGREE_EVERY;
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// True when these options split the flock across ranks: `--gpus N` with N > 1, the rank
/// variables of a launcher, or `--ranks N` with N > 1.
pub fn split(ranks: &Ranks, cpu_ranks: Option<usize>) -> Result<bool> {
    if cpu_ranks == Some(0) || ranks.gpus == Some(0) {
        bail!("--ranks and --gpus must be at least 1");
    }
    Ok(spawn::is_launcher(ranks.gpus)
        || cpu_ranks.is_some_and(|n| n > 1)
        || RankEnv::from_env(ranks)?.is_some())
}

/// The settings and start of a flock on `ranks` ranks, with the checks every rank (and the
/// launcher, before it starts any) makes.
fn build(f: &FlockArgs, ranks: usize, gpu: bool) -> Result<(FlockSettings, Start)> {
    match (gpu, f.backend) {
        (true, BackendChoice::Cpu) => {
            bail!("--gpus runs on GPUs: for CPU ranks use --ranks N with --backend cpu")
        }
        (false, BackendChoice::Cuda) => {
            bail!("--ranks N runs CPU ranks in this process: for GPUs use --gpus N")
        }
        _ => {}
    }
    let (c, start) = f.build_config_for(ranks)?;
    let settings = c.settings_for(ranks)?;
    if !matches!(settings.method, Method::Coherent | Method::CoherentShared) {
        bail!(
            "--method {}: a flock split across ranks runs the coherent method only",
            settings.method.name()
        );
    }
    if gpu && settings.sort == SortArg::Radix {
        bail!("--sort radix: a flock split across GPUs bins with the counting sort only");
    }
    check_ranks(&settings.params, ranks, start.len() as u64)?;
    Ok((settings, start))
}

fn list(v: &[u64]) -> String {
    v.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn grid_text(s: &FlockSettings) -> String {
    format!(
        "coherent, scale {}, cell width factor {}, x-split {}",
        s.params.scale, s.cell_width_factor, s.x_split
    )
}

/// The summary line of a run.
fn summary(steps: u64, n: u64, what: &str, wall: Duration) -> String {
    let s = wall.as_secs_f64();
    format!(
        "{steps} steps of {n} boids ({what}) in {s:.3} s: {:.3} ms/step wall, {} boid-steps/s",
        s * 1e3 / steps.max(1) as f64,
        si(steps as f64 * n as f64 / s.max(1e-12))
    )
}

/// `flock run` on several ranks.
pub fn run(a: &RunArgs) -> Result<()> {
    if spawn::is_launcher(a.ranks.gpus) {
        let n = a.ranks.gpus.unwrap_or(1);
        let resumed = resumed(a)?;
        build(&resumed.flock, n, true)?;
        if let Some(out) = &a.save {
            preflight::check_output_file(out)?;
        }
        spawn::launch(n)?;
        return Ok(());
    }
    if let Some(env) = RankEnv::from_env(&a.ranks)? {
        return run_gpu(a, &env);
    }
    run_cpu(a, a.cpu_ranks.unwrap_or(1))
}

/// A run of ranks' checkpoint options: the checkpoint it resumes from (if any), the flock's
/// options for it, the schedule.
struct Resumed {
    from: Option<Resume>,
    flock: FlockArgs,
    schedule: Schedule,
}

impl Resumed {
    /// The flock's step at the start.
    fn first(&self) -> u64 {
        self.from.as_ref().map_or(0, |r| r.step())
    }

    /// The start: the checkpoint's boids, else the flags'.
    fn start(&self, start: Start) -> Start {
        match &self.from {
            Some(r) => Start::State(r.capture.state.clone()),
            None => start,
        }
    }

    /// Rank 0's checkpoint writer: the flock by id (the ranks sort each cell by id, so the
    /// order in memory does not reach the bits), `within` as the ranks bin.
    fn saver<'a>(
        &'a self,
        settings: &'a FlockSettings,
        within: WithinCell,
        backend: &'a str,
    ) -> impl FnMut(u64, &FlockState) -> Result<PathBuf, SlabError> + 'a {
        move |step, state| {
            let capture = FlockCapture {
                state: state.clone(),
                buffer: 0,
                within,
                settings: settings.clone(),
            };
            let w = resume::save(&self.schedule.path(step), step, &capture, backend)
                .map_err(SimError::from)?;
            self.schedule.rotate(&w.path).map_err(SimError::from)?;
            Ok(w.path)
        }
    }

    fn print(&self) {
        if let Some(r) = &self.from {
            println!("resumed from step {} ({})", r.step(), r.path.display());
        }
    }
}

/// `--resume` and the schedule of `flock run` on ranks (the checks of one rank's run).
fn resumed(a: &RunArgs) -> Result<Resumed> {
    let from = match &a.checkpoint.resume {
        Some(p) => Some(resume::open(p, a.steps)?),
        None => None,
    };
    let flock = match &from {
        Some(r) => a.flock.resuming(r)?,
        None => a.flock.clone(),
    };
    let schedule = Schedule::new(
        &a.checkpoint,
        &checkpoint_prefix(&a.flock),
        a.save.as_deref(),
        false,
    );
    Ok(Resumed {
        from,
        flock,
        schedule,
    })
}

/// The error of a run the stop probe ended at `step`, having written `checkpoint`.
fn stopped(step: u64, of: u64, lead: bool, checkpoint: Option<&PathBuf>) -> anyhow::Error {
    let stop = crate::stop::SignalStop::new(step, of, lead);
    match checkpoint {
        Some(p) => stop.with_checkpoint(p).into(),
        None => stop.into(),
    }
}

fn run_cpu(a: &RunArgs, ranks: usize) -> Result<()> {
    let resumed = resumed(a)?;
    let (settings, start) = build(&resumed.flock, ranks, false)?;
    if let Some(r) = &resumed.from {
        r.check(&settings)?;
    }
    if let Some(out) = &a.save {
        preflight::check_output_file(out)?;
    }
    resumed.schedule.prepare()?;
    let start = resumed.start(start);
    let n = start.len() as u64;
    let cells = settings.grid().cell_count() as u64;
    // The whole start (shared by the ranks), each rank's share with its buffers, the cell
    // tables, the gathered state.
    preflight::check_host_memory(
        &format!("the CPU flock of {n} boids on {ranks} ranks"),
        super::cpu_host_bytes(n, cells) + ranks as u64 * 4 * (cells + 1) + 2 * 28 * n,
    )?;
    let state = start.to_state(settings.params.scale);
    let first = resumed.first();
    let steps = a.steps - first;
    // The same protocol as the GPU ranks (`run_rank_with`), with the same options.
    check_ranks(&settings.params, ranks, n)?;
    let out = crate::ranks::local::run_ranks(ranks, |comm| -> Result<_, SlabError> {
        let mut r = CpuRank::start(&comm, &settings, &state)?;
        let mut stop = crate::stop::command_probe(Some(&comm), FLOCK_AGREE_EVERY);
        let mut save = resumed.saver(&settings, WithinCell::ById, "cpu");
        let between = Between {
            first,
            every: a.checkpoint.checkpoint_every,
            stop: &mut *stop,
            save: &mut save,
        };
        run_rank_with(&comm, &mut r, steps, a.save.is_some(), n, || {}, between)
    })?;
    let run = out.into_iter().next().expect("rank 0 ran");
    if let Some(step) = run.stopped {
        return Err(stopped(step, a.steps, true, run.checkpoint.as_ref()));
    }
    let what = format!(
        "{ranks} CPU ranks (slabs along x, halo {}), {} threads, {}",
        halo_width(&settings.params),
        rayon::current_num_threads(),
        grid_text(&settings)
    );
    resumed.print();
    println!("{}", summary(steps, n, &what, run.wall));
    let own = match &run.own {
        Some(own) => format!("own boids per rank: {}; ", list(own)),
        None => String::new(),
    };
    println!("{own}held (own + halo): {}", list(&run.held));
    if let (Some(path), Some(s)) = (&a.save, &run.state) {
        snapshot::save(path, s)?;
        println!("saved {} boids to {}", s.len(), path.display());
    }
    Ok(())
}

/// Joins the other ranks on this rank's GPU.
fn connect(env: &RankEnv) -> Result<(Gpu, NcclComm)> {
    let gpu = Gpu::open_device(env.local_rank)
        .with_context(|| format!("rank {} on GPU {}", env.rank, env.local_rank))?;
    let comm = NcclComm::connect(env, &gpu)
        .with_context(|| format!("rank {} joining the communicator", env.rank))?;
    Ok((gpu, comm))
}

fn open_rank(
    comm: &NcclComm,
    gpu: Gpu,
    settings: &FlockSettings,
    start: &Start,
) -> Result<CudaRank, SlabError> {
    match start {
        Start::Random { n, seed } => CudaRank::random(comm, gpu, settings, *n as u64, *seed),
        Start::State(s) => CudaRank::from_state(comm, gpu, settings, s),
    }
}

/// Runs `steps` steps between two barriers: the wall time of the slowest rank.
fn timed_steps(r: &mut CudaRank, comm: &NcclComm, steps: u64) -> Result<Duration> {
    barrier(comm)?;
    let t0 = Instant::now();
    for _ in 0..steps {
        r.step(comm)?;
    }
    r.synchronize()?;
    barrier(comm)?;
    Ok(t0.elapsed())
}

fn run_gpu(a: &RunArgs, env: &RankEnv) -> Result<()> {
    let resumed = resumed(a)?;
    let (settings, start) = build(&resumed.flock, env.size, true)?;
    if let Some(r) = &resumed.from {
        r.check(&settings)?;
    }
    if env.rank == 0 {
        if let Some(out) = &a.save {
            preflight::check_output_file(out)?;
        }
        resumed.schedule.prepare()?;
    }
    let start = resumed.start(start);
    let n = start.len() as u64;
    let (gpu, comm) = connect(env)?;
    let name = gpu.name.clone();
    let mut r = open_rank(&comm, gpu, &settings, &start)?;
    let first = resumed.first();
    let steps = a.steps - first;
    let progress = env.rank == 0 && !a.quiet && std::io::stderr().is_terminal();
    let bar = crate::backend::step_bar(steps, progress);
    // Every rank makes the same collective calls whatever its rank and the options.
    let run = {
        let mut stop = crate::stop::command_probe(Some(&comm), FLOCK_AGREE_EVERY);
        let mut save = resumed.saver(&settings, WithinCell::Binned, "cuda");
        let between = Between {
            first,
            every: a.checkpoint.checkpoint_every,
            stop: &mut *stop,
            save: &mut save,
        };
        let tick = || bar.inc(1);
        run_rank_with(&comm, &mut r, steps, a.save.is_some(), n, tick, between)?
    };
    bar.finish_and_clear();
    comm.finish();
    if let Some(step) = run.stopped {
        let lead = env.rank == 0;
        return Err(stopped(step, a.steps, lead, run.checkpoint.as_ref()));
    }
    if env.rank != 0 {
        return Ok(());
    }
    resumed.print();
    let width = 2.0 * settings.params.scale / env.size as f32;
    let what = format!(
        "{} GPUs ({name}, ranks from {}), slabs along x {width} wide, halo {}, {}",
        env.size,
        env.source,
        halo_width(&settings.params),
        grid_text(&settings)
    );
    println!("{}", summary(steps, n, &what, run.wall));
    println!(
        "start share per rank: {}; held now (own + halo): {}; {:.1} device bytes per own boid \
         on rank 0",
        list(&r.start_counts),
        list(&run.held),
        r.bytes_per_own_boid()
    );
    if let (Some(path), Some(s)) = (&a.save, &run.state) {
        snapshot::save(path, s)?;
        println!("saved {} boids to {}", s.len(), path.display());
    }
    Ok(())
}

#[derive(Args)]
pub struct CheckRanksArgs {
    #[command(flatten)]
    flock: FlockArgs,
    #[command(flatten)]
    ranks: Ranks,
    /// Compare N CPU ranks in this process with the single-rank CPU reference.
    #[arg(long = "ranks", value_name = "N", conflicts_with = "gpus")]
    cpu_ranks: Option<usize>,
    /// Steps run on both.
    #[arg(long, default_value_t = 10)]
    steps: u64,
    /// Largest position or velocity difference (any component, matched by id) that passes.
    #[arg(long, default_value_t = 1e-4)]
    tolerance: f32,
}

/// One comparison line: `what` after the steps, the largest differences (positions the shorter
/// way round the periodic domain), the boids beyond the tolerance and those differing at all.
fn compare_line(what: &str, a: &CheckRanksArgs, n: u64, d: &Difference) -> String {
    format!(
        "{what} after {} steps, {n} boids: largest position difference {:.3e}, velocity \
         difference {:.3e} (by id, periodic); {} boids beyond {:.0e}, {} differ",
        a.steps, d.pos, d.vel, d.beyond, a.tolerance, d.differ
    )
}

/// Prints the check's line and its verdict; an error when it fails.
fn verdict(what: &str, a: &CheckRanksArgs, n: u64, d: &Difference) -> Result<()> {
    let pass = d.pos <= a.tolerance && d.vel <= a.tolerance;
    let how = match (pass, d.differ) {
        (true, 0) => "pass (bit for bit)",
        (true, _) => "pass",
        _ => "FAIL",
    };
    println!(
        "{} (tolerance {:.0e}): {how}",
        compare_line(what, a, n, d),
        a.tolerance
    );
    if !pass {
        bail!("the flock split across ranks differs from the single-rank flock");
    }
    Ok(())
}

/// `flock check-ranks`: the flock split across ranks against one rank, both with each cell in
/// id order (`WithinCell::ById`: the same sums in the same order, so the same bits are
/// expected), after a control that shows what the order of the sums alone does (one rank
/// against itself in another order, or twice with the GPU's counting sort).
pub fn check(a: &CheckRanksArgs) -> Result<()> {
    if !(a.tolerance.is_finite() && a.tolerance >= 0.0) {
        bail!("--tolerance must be a number >= 0");
    }
    if spawn::is_launcher(a.ranks.gpus) {
        let n = a.ranks.gpus.unwrap_or(1);
        build(&a.flock, n, true)?;
        spawn::launch(n)?;
        return Ok(());
    }
    if let Some(env) = RankEnv::from_env(&a.ranks)? {
        return check_gpu(a, &env);
    }
    let ranks = match a.cpu_ranks {
        Some(n) if n > 1 => n,
        _ => bail!("check-ranks needs --ranks N (CPU ranks) or --gpus N, with N >= 2"),
    };
    let (settings, start) = build(&a.flock, ranks, false)?;
    let state = start.to_state(settings.params.scale);
    let n = state.len() as u64;
    let single = |within| -> Result<FlockState> {
        let mut f = CpuFlock::new(&settings, &state);
        f.set_within_cell(within);
        for _ in 0..a.steps {
            f.step()?;
        }
        Ok(f.state()?)
    };
    let by_id = single(WithinCell::ById)?;
    let binned = single(WithinCell::Binned)?;
    let scale = settings.params.scale;
    let control = binned.difference(&by_id, scale, a.tolerance);
    println!(
        "{}",
        compare_line(
            "control: 1 CPU rank with each cell as sorted against in id order",
            a,
            n,
            &control
        )
    );
    let split = run_cpu_ranks(&settings, &state, ranks, a.steps)?;
    let what = format!("flock on {ranks} CPU ranks against 1, each cell in id order,");
    verdict(
        &what,
        a,
        n,
        &split.state.difference(&by_id, scale, a.tolerance),
    )
}

/// The flock on one GPU (rank 0 alone, after the split runs): `steps` steps with each cell
/// in `within` order and the branched update (the slab kernel's sums).
fn single_gpu(
    settings: &FlockSettings,
    start: &Start,
    steps: u64,
    within: WithinCell,
) -> Result<FlockState> {
    let n = start.len() as u32;
    let mut f = CudaFlock::new(settings, n)?;
    match start {
        Start::Random { seed, .. } => f.init_random(*seed)?,
        Start::State(s) => f.set_state(s)?,
    }
    f.set_update_form(UpdateForm::Branched);
    f.set_within_cell(within);
    for _ in 0..steps {
        f.step()?;
    }
    Ok(f.state()?)
}

fn check_gpu(a: &CheckRanksArgs, env: &RankEnv) -> Result<()> {
    let (settings, start) = build(&a.flock, env.size, true)?;
    let n = start.len() as u64;
    if n > u32::MAX as u64 / 2 {
        bail!(
            "check-ranks compares with one GPU: at most {} boids",
            u32::MAX / 2
        );
    }
    let (gpu, comm) = connect(env)?;
    // The split flock twice: each cell in id order (the check), then as the counting sort
    // leaves it (what a run does; compared with the control). Same calls on every rank.
    let mut gpu = Some(gpu);
    let mut split = Vec::new();
    for within in [WithinCell::ById, WithinCell::Binned] {
        let g = gpu.take().expect("the GPU comes back after each run");
        let mut r = open_rank(&comm, g, &settings, &start)?;
        r.set_within_cell(within);
        let run = run_rank(&comm, &mut r, a.steps, true, n, || {})?;
        gpu = Some(r.gpu);
        split.push(run.state);
    }
    comm.finish();
    drop(gpu);
    let (Some(by_id), Some(binned)) = (split[0].take(), split[1].take()) else {
        return Ok(());
    };
    // Rank 0: the same flock on one GPU: twice as the counting sort leaves the cells (the
    // control: how far the order of the sums alone moves a flock), once in id order.
    let scale = settings.params.scale;
    let once = single_gpu(&settings, &start, a.steps, WithinCell::Binned)?;
    let twice = single_gpu(&settings, &start, a.steps, WithinCell::Binned)?;
    println!(
        "{}",
        compare_line(
            "control: 1 GPU against itself, cells as the counting sort leaves them,",
            a,
            n,
            &twice.difference(&once, scale, a.tolerance)
        )
    );
    println!(
        "{}",
        compare_line(
            &format!(
                "flock on {} GPUs against 1, cells as the counting sort leaves them,",
                env.size
            ),
            a,
            n,
            &binned.difference(&once, scale, a.tolerance)
        )
    );
    let reference = single_gpu(&settings, &start, a.steps, WithinCell::ById)?;
    let what = format!(
        "flock on {} GPUs against 1, each cell in id order,",
        env.size
    );
    verdict(
        &what,
        a,
        n,
        &by_id.difference(&reference, scale, a.tolerance),
    )
}

#[derive(Args)]
pub struct ScaleArgs {
    #[command(flatten)]
    flock: FlockArgs,
    #[command(flatten)]
    ranks: Ranks,
    /// Flock sizes run on all ranks, each at the density of 1M boids at scale 100.
    #[arg(long, value_delimiter = ',', default_value = "100000000,200000000")]
    sizes: Vec<u64>,
    /// Flock sizes rank 0 then runs on its GPU alone (the reference; empty: none).
    #[arg(long, value_delimiter = ',', default_value = "100000000")]
    single: Vec<u64>,
    /// Steps run and discarded first.
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    /// Timed steps (wall time between barriers, per size).
    #[arg(long, default_value_t = 20)]
    steps: u64,
}

/// Settings of one scaling size (constant density; the grid by density unless given).
fn scale_settings(f: &FlockArgs, n: u64, ranks: usize) -> Result<FlockSettings> {
    let mut c = f.config()?;
    c.sim.n = n;
    c.params.scale = constant_density_scale(n as usize);
    if !f.grid_given()? {
        pick_grid_for(&mut c, ranks);
    }
    let s = c.settings_for(ranks)?;
    if ranks > 1 {
        check_ranks(&s.params, ranks, n)?;
    }
    Ok(s)
}

/// One row of `flock scale`: a size on some GPUs through the slab path or the single-GPU path.
struct ScaleRow {
    n: u64,
    scale: f32,
    gpus: usize,
    slabs: bool,
    ms: f64,
    bytes_per_boid: f64,
}

/// `flock scale`.
pub fn scale(a: &ScaleArgs) -> Result<()> {
    if a.steps == 0 || a.sizes.is_empty() || a.sizes.contains(&0) || a.single.contains(&0) {
        bail!("--steps and every size must be positive, with at least one of --sizes");
    }
    if spawn::is_launcher(a.ranks.gpus) {
        let n = a.ranks.gpus.unwrap_or(1);
        for &s in &a.sizes {
            scale_settings(&a.flock, s, n)?;
        }
        for &s in &a.single {
            scale_settings(&a.flock, s, 1)?;
        }
        spawn::launch(n)?;
        return Ok(());
    }
    let Some(env) = RankEnv::or_single(RankEnv::from_env(&a.ranks)?, &a.ranks)? else {
        bail!(
            "flock scale runs on several GPUs: pass --gpus N (N >= 2; 1 times the slab path on \
             one GPU) or start it under mpirun / srun"
        );
    };
    let seed = a.flock.config()?.sim.seed;
    let (mut gpu, comm) = connect(&env)?;
    let name = gpu.name.clone();
    let mut rows: Vec<ScaleRow> = Vec::new();
    for &n in &a.sizes {
        let settings = scale_settings(&a.flock, n, env.size)?;
        let mut r = CudaRank::random(&comm, gpu, &settings, n, seed)?;
        for _ in 0..a.warmup {
            r.step(&comm)?;
        }
        let wall = timed_steps(&mut r, &comm, a.steps)?;
        rows.push(ScaleRow {
            n,
            scale: settings.params.scale,
            gpus: env.size,
            slabs: true,
            ms: wall.as_secs_f64() * 1e3 / a.steps as f64,
            bytes_per_boid: r.bytes_per_own_boid(),
        });
        gpu = r.gpu;
    }
    barrier(&comm)?;
    comm.finish();
    drop(gpu);
    if env.rank != 0 {
        return Ok(());
    }
    for &n in &a.single {
        let settings = scale_settings(&a.flock, n, 1)?;
        let mut f = super::cuda::open_random(&settings, n as u32, seed, 0)?;
        for _ in 0..a.warmup {
            f.step()?;
        }
        let report = driver::run(f.as_mut(), a.steps, false)?;
        rows.push(ScaleRow {
            n,
            scale: settings.params.scale,
            gpus: 1,
            slabs: false,
            ms: report.wall.as_secs_f64() * 1e3 / a.steps as f64,
            bytes_per_boid: f.device_bytes_per_boid().unwrap_or(0.0),
        });
    }
    println!(
        "flock scaling on {name}, constant density (1M boids at scale 100), wall time per step"
    );
    println!(
        "| boids | scale | GPUs | path | ms/step | boid-steps/s | device bytes per own boid |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        println!(
            "| {} | {:.1} | {} | {} | {:.3} | {} | {:.1} |",
            r.n,
            r.scale,
            r.gpus,
            if r.slabs { "slabs" } else { "one GPU" },
            r.ms,
            si(r.n as f64 / r.ms * 1e3),
            r.bytes_per_boid
        );
    }
    let time = |n: u64, slabs: bool| {
        rows.iter()
            .find(|r| r.n == n && r.slabs == slabs)
            .map(|r| r.ms)
    };
    for &n in &a.sizes {
        let Some(tn) = time(n, true) else { continue };
        if let Some(t1) = time(n, false) {
            if env.size == 1 {
                println!(
                    "the slab path on one GPU: {n} boids {tn:.3} ms/step against {t1:.3} on the \
                     single-GPU path: {:.3}x the time",
                    tn / t1
                );
            } else {
                println!(
                    "strong scaling: {n} boids on {} GPUs {tn:.3} ms/step against {t1:.3} on \
                     one: {:.2}x faster (target 1.9x on 2)",
                    env.size,
                    t1 / tn
                );
            }
        }
        let share = n / env.size as u64;
        if let (true, Some(t1)) = (env.size > 1, time(share, false)) {
            println!(
                "weak scaling: {n} boids on {} GPUs {tn:.3} ms/step against {share} on one \
                 {t1:.3}: {:.3}x the time (target at most 1.05x)",
                env.size,
                tn / t1
            );
        }
    }
    Ok(())
}
