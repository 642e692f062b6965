//! `murmur fluid boundary-bench`: what a scene's walls, inlets and outlets cost. The scene (its
//! immersed solids left out) is timed against a periodic box of the same size, with each way of
//! launching the boundary kernel ([`BoundaryLaunch`]): ms per step, MLUPs/s over all cells, the
//! ratio to the periodic box and the stage times, per storage and streaming scheme.

use super::driver::{self, BackendChoice};
use super::scene::{self, SceneFile};
use super::timed::{timed_steps, StepOptions, WARMUP_STEPS};
use super::{BoundaryLaunch, FluidBackend, FluidError, Setup};
use anyhow::{bail, Result};
use murmur_common::lbm::boundary::FLUID;
use murmur_common::lbm::{CollisionModel, StorageKind, Streaming};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct BoundaryBenchArgs {
    /// Scene file with walls, inlets or outlets, e.g. assets/fluid/obstacle.toml (its solids
    /// are left out).
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    /// Timed steps per run.
    #[arg(long, default_value_t = 200)]
    pub steps: u64,
    /// Untimed steps before the timed ones.
    #[arg(long, default_value_t = WARMUP_STEPS)]
    pub warmup: u64,
    /// Collision model [default: the scene's].
    #[arg(long, value_enum)]
    pub model: Option<CollisionModel>,
    /// Population storages, comma separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "fp32")]
    pub storage: Vec<StorageKind>,
    /// Streaming schemes, comma separated: pull (two copies), in-place (one copy).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "pull")]
    pub streaming: Vec<Streaming>,
    /// Boundary launches to time, comma separated: tail, beside[-N], serial (see `fluid run
    /// --boundary-launch`).
    #[arg(long, value_delimiter = ',', default_value = "tail,beside-1,beside-2,serial", value_parser = BoundaryLaunch::parse)]
    pub launches: Vec<BoundaryLaunch>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// GPU: launch each step of the periodic box and of the scene as one CUDA graph, the
    /// inlet's ramp included (the stage times then show one stage).
    #[arg(long)]
    pub graph: bool,
}

/// What one run is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// Every cell fluid, every axis periodic: the interior kernel alone.
    Periodic,
    /// The scene, its boundary kernel launched as given.
    Scene(BoundaryLaunch),
    /// The scene with its outlet layer in a kernel of its own (`Setup::layer_kernel`).
    OwnLayer(BoundaryLaunch),
}

impl Run {
    fn name(self) -> String {
        match self {
            Run::Periodic => "periodic box".to_string(),
            Run::Scene(b) => format!("scene, {b}"),
            Run::OwnLayer(b) => format!("scene, {b}, outlet layer's own kernel"),
        }
    }
}

/// `(stage, ms per step)` in step order.
pub type Stages = Vec<(&'static str, f64)>;

/// The figures of one run.
#[derive(Clone, Debug)]
pub struct BoundaryRow {
    pub storage: StorageKind,
    pub streaming: Streaming,
    pub run: Run,
    pub ms_per_step: f64,
    /// Million lattice updates per second over all cells (walls included, as `fluid run`).
    pub mlups: f64,
    pub stages: Stages,
}

/// The periodic box of `setup`'s size: every cell fluid, no outlet layer, no solids; the same
/// model, parameters, initial fields, storage and layout.
pub fn periodic_box(setup: &Setup) -> Setup {
    let mut s = setup.clone();
    s.flags.fill(FLUID);
    s.params.sponge_axis = 3;
    s.immersed.solids.clear();
    s.immersed.periodic = [true; 3];
    s
}

/// Runs `warmup` then `steps` timed steps of `setup` on a backend `open` builds (the inlets
/// ramp as in a run over `ramp` steps) and returns the ms per step (CUDA events on the GPU, the
/// wall clock on the CPU) and the mean stage times.
pub fn time_setup(
    open: &mut super::validate::Opener,
    setup: &Setup,
    warmup: u64,
    steps: u64,
    ramp: f64,
) -> Result<(f64, Stages), FluidError> {
    let mut b = open(setup)?;
    let t = timed_steps(b.as_mut(), warmup, steps, StepOptions::ramped(ramp))?;
    Ok((t.ms_per_step(), t.times.mean_ms()))
}

/// The markdown table: one row per run, the ratio to the periodic box of the same storage and
/// streaming.
pub fn table(rows: &[BoundaryRow]) -> String {
    let mut out = String::from(
        "| storage | streaming | run | ms/step | MLUPs/s | of periodic | stages (ms per step) |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for r in rows {
        let periodic = rows
            .iter()
            .find(|p| {
                p.run == Run::Periodic && p.storage == r.storage && p.streaming == r.streaming
            })
            .map(|p| p.mlups);
        out += &format!(
            "| {} | {} | {} | {:.4} | {:.0} | {} | {} |\n",
            r.storage.name(),
            r.streaming.name(),
            r.run.name(),
            r.ms_per_step,
            r.mlups,
            periodic.map_or("-".to_string(), |p| format!("{:.1} %", 100.0 * r.mlups / p)),
            r.stages
                .iter()
                .map(|(n, ms)| format!("{n} {ms:.4}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    out
}

/// `murmur fluid boundary-bench`.
pub fn boundary_bench_cmd(a: &BoundaryBenchArgs) -> Result<()> {
    if a.steps == 0 || a.launches.is_empty() {
        bail!("--steps must be at least 1 and --launches name at least one launch");
    }
    let mut file = SceneFile::load(&a.scene)?;
    if let Some(m) = a.model {
        file.collision = m;
    }
    let in_scene = scene::in_scene(&a.scene);
    if a.backend == BackendChoice::Cpu {
        scene::check_cpu_memory(&file, &a.scene, 4)?;
    }
    let mut scene = file.build().map_err(in_scene)?;
    for w in &scene.warnings {
        eprintln!("murmur: warning: {w}");
    }
    let solids = scene.setup.immersed.solids.len();
    scene.setup.immersed.solids.clear();
    let l = scene.setup.lattice();
    let prepared = scene.setup.prepared_flags();
    let layered = scene.setup.sponge_box(&prepared).is_some();
    let listed = scene.setup.boundary_list(&prepared).len();
    if listed == 0 {
        bail!(
            "scene {}: it has no walls, inlets or outlets (every axis periodic)",
            a.scene.display()
        );
    }
    // The first backend's description (and the fallback's note, once).
    let note = std::cell::OnceCell::new();
    let choice = a.backend;
    let mut open = |setup: &Setup| -> Result<Box<dyn FluidBackend>, FluidError> {
        let (b, n) = driver::open_backend(choice, setup)?;
        if note.set(b.describe()).is_ok() {
            if let Some(n) = n {
                eprintln!("murmur: {n}");
            }
        }
        Ok(b)
    };
    let mut rows = Vec::new();
    for (&storage, &streaming) in a
        .storage
        .iter()
        .flat_map(|s| a.streaming.iter().map(move |t| (s, t)))
    {
        let mut setup = scene.setup.clone();
        setup.storage = storage;
        setup.streaming = Some(streaming);
        setup.graph = a.graph;
        // With an outlet layer, the first launch again with the layer in its own kernel.
        let own_layer = layered.then(|| Run::OwnLayer(a.launches[0]));
        let runs = [Run::Periodic]
            .into_iter()
            .chain(a.launches.iter().map(|&b| Run::Scene(b)))
            .chain(own_layer);
        for (k, run) in runs.enumerate() {
            // The CPU has no boundary kernel to place: one scene row.
            let cpu = note.get().is_some_and(|d: &String| d.starts_with("cpu"));
            if cpu && k > 1 {
                continue;
            }
            let (s, ramp) = match run {
                Run::Periodic => (periodic_box(&setup), 0.0),
                Run::Scene(b) | Run::OwnLayer(b) => {
                    let mut s = setup.clone();
                    s.boundary_launch = b;
                    s.layer_kernel = matches!(run, Run::OwnLayer(_));
                    (s, scene.inlet.ramp_steps)
                }
            };
            let (ms, stages) = time_setup(&mut open, &s, a.warmup, a.steps, ramp)?;
            let mlups = l.cells() as f64 / ms / 1e3;
            eprintln!(
                "  {} {} {}: {ms:.4} ms/step, {mlups:.0} MLUPs/s",
                storage.name(),
                streaming.name(),
                run.name()
            );
            rows.push(BoundaryRow {
                storage,
                streaming,
                run,
                ms_per_step: ms,
                mlups,
                stages,
            });
        }
    }
    let what = note.get().cloned().unwrap_or_default();
    println!(
        "boundary-bench {} on {what}: {} x {} x {} cells, {} listed next to boundaries ({:.1} %), \
         {}{}, {} warm-up + {} timed steps, {}{}",
        scene.file.name,
        l.nx,
        l.ny,
        l.nz,
        listed,
        100.0 * listed as f64 / l.cells() as f64,
        scene.file.collision.name(),
        if solids > 0 {
            format!(", its {solids} solid(s) left out")
        } else {
            String::new()
        },
        a.warmup,
        a.steps,
        if what.starts_with("cpu") {
            "CPU wall clock"
        } else {
            "CUDA events"
        },
        if a.graph {
            ", each step one CUDA graph"
        } else {
            ""
        }
    );
    print!("{}", table(&rows));
    if what.starts_with("cpu") {
        println!("(the CPU runs no boundary kernel: its scene row is the whole step)");
    }
    // The targets: 92 % of the periodic box from 8M cells on, 85 % below.
    let target = if l.cells() >= 8_000_000 { 92 } else { 85 };
    for p in rows.iter().filter(|r| r.run == Run::Periodic) {
        let best = rows
            .iter()
            .filter(|r| {
                r.run != Run::Periodic && r.storage == p.storage && r.streaming == p.streaming
            })
            .max_by(|a, b| a.mlups.total_cmp(&b.mlups));
        if let Some(r) = best {
            println!(
                "{} {} {}: best {}, {:.0} MLUPs/s, {:.1} % of the periodic box ({:.0} MLUPs/s; \
                 target: at least {target} %)",
                scene.file.name,
                r.storage.name(),
                r.streaming.name(),
                r.run.name(),
                r.mlups,
                100.0 * r.mlups / p.mlups,
                p.mlups
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fluid::plan::{FluidStage, Layers};

    #[test]
    fn the_periodic_box_keeps_the_size_and_drops_the_boundaries() {
        let s = scene::taylor_green(8, 1, 0.0, 0.1, CollisionModel::Bgk).unwrap();
        let mut walled = s.clone();
        walled.flags[3] = murmur_common::lbm::CellKind::Wall as u8;
        walled.params.sponge_axis = 0;
        let b = periodic_box(&walled);
        assert_eq!(b.lattice(), s.lattice());
        assert!(b.flags.iter().all(|&f| f == FLUID));
        assert_eq!(b.params.sponge_axis, 3);
        assert!(b.boundary_list(&b.prepared_flags()).is_empty());
    }

    #[test]
    fn the_table_gives_the_ratio_to_the_periodic_box() {
        let row = |run, mlups| BoundaryRow {
            storage: StorageKind::Fp32,
            streaming: Streaming::Pull,
            run,
            ms_per_step: 1.0,
            mlups,
            stages: vec![
                (FluidStage::StreamCollide(Layers::ALL).name(), 0.9),
                (FluidStage::Boundary.name(), 0.1),
            ],
        };
        let t = table(&[
            row(Run::Periodic, 200.0),
            row(Run::Scene(BoundaryLaunch::Tail), 180.0),
        ]);
        assert!(t.contains("| scene, tail | 1.0000 | 180 | 90.0 % |"), "{t}");
        assert!(t.contains("stream_collide 0.9000, boundary 0.1000"), "{t}");
    }
}
