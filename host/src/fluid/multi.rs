//! The fluid's commands on several ranks: opening a rank's slab (one process per GPU joined by
//! NCCL, or N CPU ranks in this process), `fluid ranks-check` (the same lattice on one rank and
//! on N, compared bit for bit) and `fluid scale` (strong and weak scaling of a periodic box).
//!
//! A run of several GPUs starts as `murmur fluid ... --gpus N` (this process starts the ranks,
//! [`crate::ranks::spawn`]) or under mpirun / srun (their variables name the ranks). Every rank
//! runs the same code on its slab; rank 0 prints and writes.

use super::slab::{SlabFluid, SlabPlan};
use super::{scene, FluidBackend, FluidError, Setup};
use crate::gpu::Gpu;
use crate::ranks::nccl::NcclComm;
use crate::ranks::{Comm, RankEnv, Ranks};
use anyhow::{bail, Result};
use murmur_common::lbm::{CollisionModel, StorageKind};
use std::sync::Arc;
use std::time::Instant;

/// One rank of a multi-GPU run: its communicator and its GPU.
pub struct GpuRank {
    pub env: RankEnv,
    pub comm: Arc<NcclComm>,
    pub gpu_ordinal: usize,
}

impl GpuRank {
    /// Joins the other ranks: opens GPU `local_rank` (modulo the GPUs this process sees, for
    /// launchers that hide the others) and the NCCL communicator.
    pub fn join(env: RankEnv) -> Result<GpuRank, FluidError> {
        let count = crate::gpu::device_count()?;
        if count == 0 {
            return Err(FluidError::Invalid(format!("rank {}: no GPU", env.rank)));
        }
        let ordinal = env.local_rank % count;
        let gpu = Gpu::open_device(ordinal)?;
        let comm = Arc::new(NcclComm::connect(&env, &gpu)?);
        drop(gpu);
        Ok(GpuRank {
            env,
            comm,
            gpu_ordinal: ordinal,
        })
    }

    /// Opens this rank's slab of `setup` cut as `plan` says.
    pub fn open(&self, setup: &Setup, plan: &SlabPlan) -> Result<SlabFluid, FluidError> {
        let local = plan.local_setup(setup, self.env.rank);
        let gpu = Gpu::open_device(self.gpu_ordinal)?;
        let inner = super::cuda::open_slab(gpu, &local, self.comm.clone(), plan.axis as u32)?;
        Ok(SlabFluid::new(
            inner,
            self.comm.clone() as Arc<dyn Comm>,
            plan.clone(),
        ))
    }

    /// An orderly end of the run on this rank.
    pub fn finish(&self) {
        self.comm.finish();
    }
}

/// The ranks of this process from `--gpus` and the environment: `Ok(None)` for a single-rank
/// run; `Err` for bad settings. The caller handles the launcher case first.
pub fn rank_env(opts: &Ranks) -> Result<Option<RankEnv>> {
    let env = RankEnv::from_env(opts)?;
    if let (Some(e), Some(n)) = (&env, opts.gpus) {
        if e.size != n {
            bail!(
                "--gpus {n} disagrees with the {} ranks {} started",
                e.size,
                e.source
            );
        }
    }
    if opts.gpus == Some(0) {
        bail!("--gpus must be at least 1");
    }
    Ok(env)
}

/// `fluid ranks-check`: the lattice on one rank and on several, compared.
#[derive(clap::Args)]
pub struct RanksCheckArgs {
    /// Scene file [default: a periodic Taylor-Green box of --size cells per edge].
    #[arg(value_name = "SCENE.toml")]
    pub scene: Option<std::path::PathBuf>,
    /// Edge of the periodic box when no scene is given.
    #[arg(long, default_value_t = 64)]
    pub size: u32,
    /// Steps on both.
    #[arg(long, default_value_t = 100)]
    pub steps: u64,
    /// Collision model.
    #[arg(long, value_enum, default_value = "bgk")]
    pub model: CollisionModel,
    /// Population storage.
    #[arg(long, value_enum, default_value = "fp32")]
    pub storage: StorageKind,
    /// N CPU ranks in this process (memory copies for NCCL) instead of GPUs.
    #[arg(long, value_name = "N")]
    pub ranks: Option<usize>,
    #[command(flatten)]
    pub world: Ranks,
}

/// The setup a check or scaling run uses: the scene, or a Taylor-Green box.
fn check_setup(a: &RanksCheckArgs) -> Result<Setup> {
    let mut setup = match &a.scene {
        Some(p) => {
            let mut file = scene::file::SceneFile::load(p)?;
            file.collision = a.model;
            file.build()?.setup
        }
        None => {
            if !(4..=2048).contains(&a.size) {
                bail!("--size must be within 4..=2048");
            }
            scene::taylor_green(a.size, a.size, 0.05, 0.01, a.model)?
        }
    };
    setup.storage = a.storage;
    Ok(setup)
}

/// Values whose bits differ.
fn differing(a: &[f32], b: &[f32]) -> usize {
    a.iter()
        .zip(b)
        .filter(|(x, y)| x.to_bits() != y.to_bits())
        .count()
        + a.len().abs_diff(b.len())
}

pub fn ranks_check(a: &RanksCheckArgs) -> Result<()> {
    if a.steps == 0 {
        bail!("--steps must be at least 1");
    }
    if let Some(n) = a.ranks {
        if a.world.gpus.is_some() {
            bail!("--ranks (CPU ranks in this process) and --gpus exclude each other");
        }
        if n < 2 {
            bail!("--ranks must be at least 2");
        }
        let setup = check_setup(a)?;
        let t0 = Instant::now();
        let r = super::slab::run_cpu_ranks(&setup, n, a.steps)?;
        let t_ranks = t0.elapsed().as_secs_f64();
        let t0 = Instant::now();
        let mut whole = super::cpu::open(&setup)?;
        for _ in 0..a.steps {
            whole.step()?;
        }
        let reference = whole.populations()?;
        let t_whole = t0.elapsed().as_secs_f64();
        report_solids(
            &r.forces,
            &whole.take_forces()?,
            &r.fields,
            &whole.fields()?,
        )?;
        return report(
            &format!("{n} CPU ranks"),
            &r.plan,
            a.steps,
            differing(&r.populations, &reference),
            reference.len(),
            t_ranks,
            t_whole,
        );
    }
    if crate::ranks::spawn::is_launcher(a.world.gpus) {
        return Ok(crate::ranks::spawn::launch(a.world.gpus.unwrap_or(1))?);
    }
    let Some(env) = RankEnv::or_single(rank_env(&a.world)?, &a.world)? else {
        bail!(
            "give --gpus N (N >= 2; 1 checks the slab path on one GPU), run under mpirun or \
             srun, or use --ranks N on the CPU"
        );
    };
    let setup = check_setup(a)?;
    let plan = SlabPlan::new(&setup, env.size)?;
    let rank = GpuRank::join(env)?;
    let t0 = Instant::now();
    let mut b = rank.open(&setup, &plan)?;
    for _ in 0..a.steps {
        b.step()?;
    }
    let pops = b.populations()?;
    let t_ranks = t0.elapsed().as_secs_f64();
    let forces = b.take_forces()?;
    let fields = if setup.immersed.is_empty() {
        None
    } else {
        Some(b.fields()?)
    };
    drop(b);
    rank.finish();
    if rank.env.rank != 0 {
        return Ok(());
    }
    // Rank 0: the whole lattice on its own GPU.
    let t0 = Instant::now();
    let gpu = Gpu::open_device(rank.gpu_ordinal)?;
    let mut whole: Box<dyn FluidBackend> = {
        let mut s = setup.clone();
        s.streaming = Some(murmur_common::lbm::Streaming::Pull);
        super::cuda::open_on(gpu, &s)?
    };
    for _ in 0..a.steps {
        whole.step()?;
    }
    let reference = whole.populations()?;
    let t_whole = t0.elapsed().as_secs_f64();
    if let Some(fields) = fields {
        report_solids(&forces, &whole.take_forces()?, &fields, &whole.fields()?)?;
    }
    report(
        &format!("{} GPUs", plan.size()),
        &plan,
        a.steps,
        differing(&pops, &reference),
        reference.len(),
        t_ranks,
        t_whole,
    )
}

/// With immersed solids: the solids' force rows (bits) and the velocity against the whole
/// lattice, as the largest difference over the largest speed.
fn report_solids(
    ranks: &[super::forces::ForceSample],
    whole: &[super::forces::ForceSample],
    f_ranks: &super::Fields,
    f_whole: &super::Fields,
) -> Result<()> {
    if whole.is_empty() {
        return Ok(());
    }
    let bits = |rows: &[super::forces::ForceSample]| -> Vec<u64> {
        rows.iter()
            .flat_map(|r| r.force.iter().chain(&r.torque).map(|v| v.to_bits()))
            .collect()
    };
    let (a, b) = (bits(ranks), bits(whole));
    let diff = a.iter().zip(&b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
    let mut du = 0.0f32;
    let mut umax = 0.0f32;
    for cell in 0..f_whole.n().min(f_ranks.n()) {
        let (x, y) = (f_ranks.u(cell), f_whole.u(cell));
        for c in 0..3 {
            du = du.max((x[c] - y[c]).abs());
        }
        umax = umax.max((y[0] * y[0] + y[1] * y[1] + y[2] * y[2]).sqrt());
    }
    println!(
        "immersed solids: {diff} of {} force and torque values differ over {} rows; velocity: \
         max |u_ranks - u_one| / max |u| = {:.2e}",
        b.len(),
        whole.len(),
        if umax > 0.0 { du / umax } else { du }
    );
    if diff != 0 {
        bail!("the solids' forces on several ranks differ from the whole lattice in {diff} values");
    }
    Ok(())
}

fn report(
    what: &str,
    plan: &SlabPlan,
    steps: u64,
    diff: usize,
    total: usize,
    t_ranks: f64,
    t_whole: f64,
) -> Result<()> {
    let l = plan.global;
    println!(
        "{} x {} x {} lattice, {steps} steps on {what} (slabs along {}, layers {:?}) vs one: \
         {diff} of {total} population values differ (bit for bit) [{t_ranks:.2} s vs {t_whole:.2} s]",
        l.nx,
        l.ny,
        l.nz,
        ["x", "y", "z"][plan.axis],
        plan.ranges
    );
    if diff != 0 {
        bail!("the decomposed run differs from the whole lattice in {diff} values");
    }
    println!("pass: identical");
    Ok(())
}

/// `fluid scale`: strong and weak scaling of a periodic box on the GPUs of the run.
#[derive(clap::Args)]
pub struct ScaleArgs {
    /// Edge of the box (strong scaling: this box on every GPU count; weak: this box per GPU,
    /// stacked along z).
    #[arg(long, default_value_t = 512)]
    pub size: u32,
    /// Timed steps.
    #[arg(long, default_value_t = 100)]
    pub steps: u64,
    /// Collision model.
    #[arg(long, value_enum, default_value = "bgk")]
    pub model: CollisionModel,
    /// Population storage.
    #[arg(long, value_enum, default_value = "fp32")]
    pub storage: StorageKind,
    /// Box dimensions NXxNYxNZ for the strong-scaling lattice instead of a cube (e.g.
    /// 1024x512x512).
    #[arg(long, value_name = "NXxNYxNZ")]
    pub dims: Option<String>,
    /// Strong scaling of this scene (its solids, walls, inlet and outlet; model and storage
    /// from the flags) instead of the periodic boxes.
    #[arg(long, value_name = "SCENE.toml", conflicts_with = "dims")]
    pub scene: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub world: Ranks,
}

/// Times `steps` steps of `b` (wall clock after a synchronisation, the slowest rank's when
/// several), in ms per step, with the mean stage times of the timed steps.
fn time_steps(b: &mut dyn FluidBackend, steps: u64) -> Result<(f64, String), FluidError> {
    let t = super::timed::timed_steps(
        b,
        super::timed::WARMUP_STEPS,
        steps,
        super::timed::StepOptions::PLAIN,
    )?;
    Ok((t.wall_ms, t.times.summary()))
}

fn parse_dims(s: &str) -> Result<[u32; 3]> {
    let v: Vec<u32> = s.split('x').filter_map(|p| p.parse().ok()).collect();
    match v.as_slice() {
        &[x, y, z] if [x, y, z].iter().all(|d| (4..=4096).contains(d)) => Ok([x, y, z]),
        _ => bail!("--dims: expected NXxNYxNZ with each within 4..=4096, got `{s}`"),
    }
}

fn periodic_box(dims: [u32; 3], model: CollisionModel, storage: StorageKind) -> Result<Setup> {
    let mut s = scene::Geometry {
        fluid: dims,
        faces: [scene::Boundary::Periodic; 6],
    }
    .setup(murmur_common::lbm::Rates::from_viscosity(0.01), model)?;
    s.initial = murmur_common::lbm::Initial::taylor_green(
        0.05,
        2.0 * std::f32::consts::PI / dims[0] as f32,
    );
    s.storage = storage;
    s.streaming = Some(murmur_common::lbm::Streaming::Pull);
    Ok(s)
}

pub fn scale(a: &ScaleArgs) -> Result<()> {
    if a.steps == 0 || !(8..=2048).contains(&a.size) {
        bail!("--steps must be > 0 and --size within 8..=2048");
    }
    let strong_dims = match &a.dims {
        Some(s) => parse_dims(s)?,
        None => [a.size; 3],
    };
    if crate::ranks::spawn::is_launcher(a.world.gpus) {
        return Ok(crate::ranks::spawn::launch(a.world.gpus.unwrap_or(1))?);
    }
    let Some(env) = RankEnv::or_single(rank_env(&a.world)?, &a.world)? else {
        bail!(
            "give --gpus N (N >= 2; 1 times the slab path on one GPU), or run under mpirun or srun"
        );
    };
    let n = env.size;
    if let Some(path) = &a.scene {
        let mut file = scene::file::SceneFile::load(path)?;
        file.collision = a.model;
        let mut setup = file.build()?.setup;
        setup.storage = a.storage;
        setup.streaming = Some(murmur_common::lbm::Streaming::Pull);
        let plan = SlabPlan::new(&setup, n)?;
        let rank = GpuRank::join(env)?;
        return scale_scene(a, &rank, &setup, &plan);
    }
    let rank = GpuRank::join(env)?;
    let me = rank.env.rank;
    // Strong: the same lattice on N GPUs.
    let strong = periodic_box(strong_dims, a.model, a.storage)?;
    let plan = SlabPlan::new(&strong, n)?;
    let (ms_strong, stages_strong) = {
        let mut b = rank.open(&strong, &plan)?;
        time_steps(&mut b, a.steps)?
    };
    // Weak: one box per GPU, stacked along z (on one rank the strong run is that box).
    let weak_dims = [a.size, a.size, a.size * n as u32];
    let weak = periodic_box(weak_dims, a.model, a.storage)?;
    let (ms_weak, stages_weak) = if n > 1 {
        let wplan = SlabPlan::new(&weak, n)?;
        let mut b = rank.open(&weak, &wplan)?;
        time_steps(&mut b, a.steps)?
    } else {
        (ms_strong, stages_strong.clone())
    };
    // The exchange alone: one face of the strong lattice each way per neighbour.
    let face = murmur_common::lbm::halo::face_cells(&plan.local_lattice(me), plan.axis as u32);
    let face_bytes = murmur_common::lbm::halo::CROSSING * face * a.storage.bytes();
    let t_exchange = rank.comm.time_exchange(face_bytes, 50)?;
    // The slowest rank decides.
    let all = rank
        .comm
        .all_gather(&[ms_strong.to_le_bytes(), ms_weak.to_le_bytes()].concat())?;
    rank.finish();
    if me != 0 {
        return Ok(());
    }
    let worst = |k: usize| {
        all.iter()
            .map(|m| f64::from_le_bytes(m[8 * k..8 * k + 8].try_into().unwrap_or([0; 8])))
            .fold(0.0f64, f64::max)
    };
    let (ms_strong, ms_weak) = (worst(0), worst(1));
    println!(
        "exchange: {:.1} MB to each neighbour and back in {:.1} us: {:.1} GB/s per direction and \
         link ({} ranks on a ring, NCCL send/recv)",
        face_bytes as f64 / 1e6,
        t_exchange * 1e6,
        // Each rank sends two messages and receives two; per neighbour pair and direction
        // one message of face_bytes moves in t.
        2.0 * face_bytes as f64 / t_exchange / 1e9 / if n == 2 { 1.0 } else { 2.0 },
        n
    );
    // One GPU: the strong lattice and one weak box on rank 0's GPU.
    let one = |s: &Setup| -> Result<f64> {
        let gpu = Gpu::open_device(rank.gpu_ordinal)?;
        let mut b = super::cuda::open_on(gpu, s)?;
        Ok(time_steps(b.as_mut(), a.steps)?.0)
    };
    let ms_one_strong = one(&strong)?;
    let one_box = periodic_box([a.size; 3], a.model, a.storage)?;
    let ms_one_box = if strong_dims == [a.size; 3] {
        ms_one_strong
    } else {
        one(&one_box)?
    };
    let mlups = |cells: usize, ms: f64| cells as f64 / ms / 1e3;
    let sc = strong.lattice().cells();
    let wc = weak.lattice().cells();
    let bc = one_box.lattice().cells();
    println!(
        "fluid scaling, {} {}, periodic box, {} steps timed (wall clock, slowest rank)",
        a.model.name(),
        a.storage.name(),
        a.steps
    );
    println!("rank 0's stages per step (CUDA events), strong: {stages_strong}");
    println!("rank 0's stages per step (CUDA events), weak: {stages_weak}");
    println!("| run | lattice | GPUs | ms/step | MLUPs/s | MLUPs/s per GPU | vs one GPU |");
    println!("|---|---|---|---|---|---|---|");
    let l = |d: [u32; 3]| format!("{}x{}x{}", d[0], d[1], d[2]);
    println!(
        "| one GPU | {} | 1 | {ms_one_strong:.3} | {:.0} | {:.0} | 1.00 |",
        l(strong_dims),
        mlups(sc, ms_one_strong),
        mlups(sc, ms_one_strong)
    );
    println!(
        "| {} | {} | {n} | {ms_strong:.3} | {:.0} | {:.0} | {:.2}x speed-up ({:.1} % efficiency) |",
        if n == 1 { "slab path" } else { "strong" },
        l(strong_dims),
        mlups(sc, ms_strong),
        mlups(sc, ms_strong) / n as f64,
        ms_one_strong / ms_strong,
        100.0 * ms_one_strong / ms_strong / n as f64
    );
    if n == 1 {
        return Ok(());
    }
    println!(
        "| one GPU | {} | 1 | {ms_one_box:.3} | {:.0} | {:.0} | 1.00 |",
        l([a.size; 3]),
        mlups(bc, ms_one_box),
        mlups(bc, ms_one_box)
    );
    println!(
        "| weak | {} | {n} | {ms_weak:.3} | {:.0} | {:.0} | {:.1} % of one GPU per GPU |",
        l(weak_dims),
        mlups(wc, ms_weak),
        mlups(wc, ms_weak) / n as f64,
        100.0 * mlups(wc, ms_weak) / n as f64 / mlups(bc, ms_one_box)
    );
    Ok(())
}

/// `fluid scale --scene`: the scene on the GPUs of the run against one GPU.
fn scale_scene(a: &ScaleArgs, rank: &GpuRank, setup: &Setup, plan: &SlabPlan) -> Result<()> {
    let n = plan.size();
    let (ms, stages) = {
        let mut b = rank.open(setup, plan)?;
        time_steps(&mut b, a.steps)?
    };
    let all = rank.comm.all_gather(&ms.to_le_bytes())?;
    rank.finish();
    if rank.env.rank != 0 {
        return Ok(());
    }
    let ms = all
        .iter()
        .map(|m| f64::from_le_bytes(m[..8].try_into().unwrap_or([0; 8])))
        .fold(0.0f64, f64::max);
    let gpu = Gpu::open_device(rank.gpu_ordinal)?;
    let (ms_one, stages_one) = {
        let mut b = super::cuda::open_on(gpu, setup)?;
        time_steps(b.as_mut(), a.steps)?
    };
    let l = plan.global;
    let cells = l.cells();
    let mlups = |ms: f64| cells as f64 / ms / 1e3;
    println!(
        "fluid scaling of {}, {} {}, {} x {} x {} ({} samples), slabs along {}, {} steps timed \
         (wall clock, slowest rank)",
        a.scene
            .as_deref()
            .unwrap_or(std::path::Path::new("?"))
            .display(),
        a.model.name(),
        a.storage.name(),
        l.nx,
        l.ny,
        l.nz,
        setup.immersed.samples(),
        ["x", "y", "z"][plan.axis],
        a.steps
    );
    println!("one GPU's stages per step (CUDA events): {stages_one}");
    println!("rank 0's stages per step (CUDA events): {stages}");
    println!("| run | GPUs | ms/step | MLUPs/s | vs one GPU |");
    println!("|---|---|---|---|---|");
    println!(
        "| one GPU | 1 | {ms_one:.3} | {:.0} | 1.00 |",
        mlups(ms_one)
    );
    println!(
        "| {} | {n} | {ms:.3} | {:.0} | {:.2}x speed-up ({:.1} % efficiency) |",
        if n == 1 { "slab path" } else { "strong" },
        mlups(ms),
        ms_one / ms,
        100.0 * ms_one / ms / n as f64
    );
    Ok(())
}
