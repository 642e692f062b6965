//! `murmur fluid tune`: a cost-model-pruned search for the fastest population layout, thread
//! blocks and immersed-boundary spreading of one scene on one device, stored in the tuning
//! cache ([`super::tuning`]) that `murmur fluid run` reads.
//!
//! The search is coordinate descent from the device defaults ([`super::defaults`]), not the
//! full product: first layout x block together on the fluid step (the scene's spreading kept),
//! then the spreading methods with the best fluid setting. The scene is built once; each candidate clones the setup,
//! changes its knobs, opens a backend, runs a few warm-up steps and then `--steps` timed steps
//! (CUDA events where the backend has them, else the wall clock). Candidates that cannot win
//! by a simple cost model are skipped before any run ([`model_prunes`]), and a group stops
//! early when its next candidate would overrun its share of the time cap.

use super::defaults::{Defaults, DeviceClass};
use super::driver::{self, BackendChoice};
use super::ib::plan::RING_STEPS;
use super::ib::spread::IbSpread;
use super::ib::Motion;
use super::run::settings::{Partial, Settings};
use super::scene::{self, SceneFile};
use super::timed::{timed_steps, StepOptions, WARMUP_STEPS};
use super::tuning::{self, spread_name, Cache, Entry, Key, Knobs};
use super::{Block, FluidError, Setup};
use anyhow::{bail, Context, Result};
use murmur_common::lbm::{CollisionModel, Lattice, Layout, StorageKind};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Instant;

/// CSoA granularities tried (0: the structure of arrays).
pub const LAYOUTS: [u32; 6] = [0, 32, 64, 128, 256, 1024];
/// Thread blocks tried (flat first).
pub const BLOCKS: [Block; 8] = [
    Block::Flat,
    Block::ThreeD([32, 2, 2]),
    Block::ThreeD([32, 4, 1]),
    Block::ThreeD([32, 4, 2]),
    Block::ThreeD([64, 2, 1]),
    Block::ThreeD([64, 2, 2]),
    Block::ThreeD([128, 1, 1]),
    Block::ThreeD([32, 8, 1]),
];
/// Spreading methods tried for scenes with solids.
pub const SPREADS: [IbSpread; 6] = [
    IbSpread::Scatter,
    IbSpread::Binned,
    IbSpread::Gather,
    IbSpread::Blocks { l: 2 },
    IbSpread::Blocks { l: 4 },
    IbSpread::Blocks { l: 8 },
];
/// Timed steps per candidate when every solid is fixed (or there are none): the fluid step
/// costs the same every step.
pub const STEPS_FIXED: u64 = 10;
/// Timed steps per candidate with moving solids: the band and the bins change from step to
/// step, so the time is averaged over more of the motion.
pub const STEPS_MOVING: u64 = 500;

#[derive(clap::Args)]
pub struct TuneArgs {
    /// Scene file, e.g. assets/fluid/torus-channel.toml.
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    /// Where to tune: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Wall-clock budget of the search, seconds (candidates that would overrun it are skipped).
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    pub time_cap: f64,
    /// Timed steps per candidate [default: 10, or 500 when a solid moves].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Number format of the populations (not tuned: it changes the results).
    #[arg(long, value_enum, default_value = "fp32")]
    pub storage: StorageKind,
    /// Collision model [default: the scene's].
    #[arg(long, value_enum)]
    pub model: Option<CollisionModel>,
    /// Do not write the result to the tuning cache.
    #[arg(long)]
    pub no_cache: bool,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Which knob group a candidate belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Layout x thread blocks on the fluid step.
    Fluid,
    /// The spreading method, with the best fluid setting.
    Spread,
}

/// What became of one candidate.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Mean ms per step of the timed steps.
    Timed(f64),
    /// Skipped before running: why.
    Pruned(String),
    /// Opening or stepping it failed (e.g. out of memory): the one-line reason.
    Failed(String),
}

/// One row of the table.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub group: Group,
    pub knobs: Knobs,
    pub outcome: Outcome,
}

impl Candidate {
    fn ms(&self) -> Option<f64> {
        match self.outcome {
            Outcome::Timed(ms) => Some(ms),
            _ => None,
        }
    }
}

/// Why the cost model says `knobs` cannot beat the others on `lattice` (`None`: it may).
/// `gpu`: the backend launches thread blocks (the CPU runs every block setting alike).
pub fn model_prunes(knobs: &Knobs, lattice: Lattice, gpu: bool) -> Option<String> {
    let dims = [lattice.nx, lattice.ny, lattice.nz];
    let cells = lattice.cells() as u64;
    if knobs.layout.alpha as u64 > cells {
        return Some(format!(
            "alpha {} > {cells} cells: one padded group",
            knobs.layout.alpha
        ));
    }
    if let Block::ThreeD(b) = knobs.block {
        if !gpu {
            return Some("the CPU has no thread blocks".into());
        }
        // Threads launched over whole blocks per axis; more than half idle cannot win
        // against flat blocks, which launch one thread per cell.
        let launched: u64 = (0..3)
            .map(|a| (dims[a] as u64).div_ceil(b[a] as u64) * b[a] as u64)
            .product();
        if launched > 2 * cells {
            return Some(format!(
                "{:.0} % idle threads on {} x {} x {}",
                100.0 * (1.0 - cells as f64 / launched as f64),
                dims[0],
                dims[1],
                dims[2]
            ));
        }
    }
    if let Some(IbSpread::Blocks { l }) = knobs.spread {
        if dims.iter().all(|&n| n <= l) {
            return Some(format!("one block of {l}^3 holds the whole lattice"));
        }
    }
    None
}

/// The fluid group's candidates: every layout x block, `start` (the device defaults) first,
/// then the flat blocks of every layout, then the 3D blocks (so a group cut short by the time
/// cap has tried each knob alone first).
pub fn fluid_candidates(start: Knobs) -> Vec<Knobs> {
    let layouts: Vec<Layout> = LAYOUTS
        .iter()
        .map(|&a| Layout::csoa(a).unwrap_or(Layout::SOA))
        .collect();
    let mut out = vec![start];
    for &block in &BLOCKS {
        for &layout in &layouts {
            let k = Knobs {
                layout,
                block,
                ..start
            };
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
}

/// Seconds a group may spend: its share of what is left of the cap, by candidate counts.
pub fn group_budget(left_s: f64, this_group: usize, later_groups: usize) -> f64 {
    let total = (this_group + later_groups).max(1);
    left_s.max(0.0) * this_group as f64 / total as f64
}

/// Times one candidate: opens a backend for `setup` with `knobs`, runs `warmup` then `steps`
/// steps (inlets ramped as in a run over `ramp` steps); ms per step from CUDA events when the
/// backend has them, else the wall clock of the timed steps.
fn time_one(
    open: &mut super::validate::Opener,
    setup: &Setup,
    knobs: Knobs,
    warmup: u64,
    steps: u64,
    ramp: f64,
) -> Result<f64, FluidError> {
    let mut setup = setup.clone();
    knobs.apply(&mut setup);
    let mut b = open(&setup)?;
    let options = StepOptions {
        ramp,
        // The force records' ring must be read before it fills.
        drain_every: RING_STEPS as u64 / 2,
    };
    Ok(timed_steps(b.as_mut(), warmup, steps, options)?.ms_per_step())
}

/// The markdown table: every candidate, timed or pruned, in search order. Consecutive
/// candidates pruned for the same reason that differ only in their layout share a row.
pub fn table(rows: &[Candidate], cells: usize) -> String {
    let best = rows
        .iter()
        .filter_map(Candidate::ms)
        .fold(f64::INFINITY, f64::min);
    let mut s = String::from(
        "| group | layout | block | spread | ms/step | MLUPs/s | vs best |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let mut i = 0;
    while i < rows.len() {
        let r = &rows[i];
        let mut layouts = vec![r.knobs.layout.describe().to_string()];
        i += 1;
        if matches!(r.outcome, Outcome::Pruned(_)) {
            while i < rows.len()
                && rows[i].group == r.group
                && rows[i].outcome == r.outcome
                && rows[i].knobs.block == r.knobs.block
                && rows[i].knobs.spread == r.knobs.spread
            {
                layouts.push(rows[i].knobs.layout.describe().to_string());
                i += 1;
            }
        }
        let (ms, mlups, rel) = match &r.outcome {
            Outcome::Timed(ms) => (
                format!("{ms:.3}"),
                format!("{:.1}", cells as f64 / ms / 1e3),
                if *ms == best {
                    "1.00 (best)".to_string()
                } else {
                    format!("{:.2}", ms / best)
                },
            ),
            Outcome::Pruned(why) => ("-".into(), "-".into(), format!("pruned: {why}")),
            Outcome::Failed(why) => ("-".into(), "-".into(), format!("failed: {why}")),
        };
        s += &format!(
            "| {} | {} | {} | {} | {ms} | {mlups} | {rel} |\n",
            match r.group {
                Group::Fluid => "fluid",
                Group::Spread => "spread",
            },
            layouts.join(", "),
            r.knobs.block,
            r.knobs.spread.map_or("-".to_string(), spread_name),
        );
    }
    s
}

/// `murmur fluid tune`.
pub fn tune_cmd(a: &TuneArgs) -> Result<()> {
    if !(a.time_cap > 0.0 && a.time_cap.is_finite()) {
        bail!("--time-cap must be a positive number of seconds");
    }
    if a.steps.is_some_and(|s| !(1..=1_000_000).contains(&s)) {
        bail!("--steps must be within 1..=1000000");
    }
    let mut file = SceneFile::load(&a.scene)?;
    let bytes = std::fs::read(&a.scene)
        .with_context(|| format!("cannot read scene {}", a.scene.display()))?;
    if let Some(m) = a.model {
        file.collision = m;
    }
    let in_scene = scene::in_scene(&a.scene);
    if a.backend == BackendChoice::Cpu {
        scene::check_cpu_memory(&file, &a.scene, a.storage.bytes())?;
    }
    let cache_path = if a.no_cache {
        None
    } else {
        let p = tuning::cache_path().context(
            "no place for the tuning cache: set MURMUR_TUNING_CACHE, XDG_CACHE_HOME or HOME \
             (or pass --no-cache)",
        )?;
        if let Some(dir) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| {
                format!("cannot create the tuning cache's folder {}", dir.display())
            })?;
        }
        Some(p)
    };

    let mut scene = file.build().map_err(in_scene)?;
    for w in &scene.warnings {
        eprintln!("murmur: warning: {w}");
    }
    scene.setup.storage = a.storage;
    // The search starts from the device defaults of the device `--backend` opens (a spreading
    // the scene names kept), as `fluid run` without a cache entry.
    let defaults = Defaults::of(DeviceClass::expected(a.backend));
    let solids = !scene.setup.immersed.is_empty();
    let device = Partial::device(&defaults, solids);
    let layered = Settings::layered(
        Some(&device),
        None,
        &Partial::scene(&scene),
        &Partial::default(),
    );
    layered.knobs(solids).apply(&mut scene.setup);
    let setup = &scene.setup;
    let moving = setup
        .immersed
        .solids
        .iter()
        .any(|s| !s.is_empty() && !matches!(s.motion, Motion::Fixed));
    let steps = a
        .steps
        .unwrap_or(if moving { STEPS_MOVING } else { STEPS_FIXED });
    let ramp = scene.inlet.ramp_steps;
    let lattice = setup.lattice();
    let cells = lattice.cells();
    let start = Knobs::of(setup);

    let t_search = Instant::now();
    // The device defaults first: their time is the reference, their cost the estimate of every other
    // candidate's, and their open resolves `auto` (every later candidate opens that backend).
    let mut resolved: Option<(BackendChoice, String)> = None;
    let t0 = Instant::now();
    let default_ms = time_one(
        &mut |s: &Setup| {
            let (b, note) = driver::open_backend(a.backend, s)?;
            if let Some(n) = note {
                eprintln!("murmur: {n}");
            }
            let device = b.describe();
            let choice = if device.starts_with("cuda") {
                BackendChoice::Cuda
            } else {
                BackendChoice::Cpu
            };
            resolved = Some((choice, device));
            Ok(b)
        },
        setup,
        start,
        WARMUP_STEPS,
        steps,
        ramp,
    )?;
    let first_cost = t0.elapsed().as_secs_f64();
    let (choice, device) = resolved.expect("the defaults' backend was opened");
    let mut open = |s: &Setup| driver::open_backend(choice, s).map(|(b, _)| b);
    let gpu = device.starts_with("cuda");
    println!(
        "tuning {} on {device}: {} x {} x {} cells, {}, {}, {} solid samples{}; {} warm-up + \
         {steps} timed steps per candidate ({}), time cap {} s",
        scene.file.name,
        lattice.nx,
        lattice.ny,
        lattice.nz,
        setup.storage.name(),
        setup.model.name(),
        setup.immersed.samples(),
        if moving { " (moving)" } else { "" },
        WARMUP_STEPS,
        if gpu { "CUDA events" } else { "wall clock" },
        a.time_cap
    );

    let fluid: Vec<Knobs> = fluid_candidates(start);
    let spreads: Vec<IbSpread> = if solids { SPREADS.to_vec() } else { Vec::new() };
    let viable = |k: &Knobs| model_prunes(k, lattice, gpu).is_none();
    let n_fluid = fluid.iter().skip(1).filter(|k| viable(k)).count();
    // The spreading candidates' lattice-side prunes do not depend on the fluid knobs.
    let n_spread = spreads
        .iter()
        .filter(|&&s| {
            Some(s) != start.spread
                && viable(&Knobs {
                    spread: Some(s),
                    ..start
                })
        })
        .count();
    let bar = crate::backend::progress_bar(
        (1 + n_fluid + n_spread) as u64,
        "candidate",
        !a.quiet && std::io::stderr().is_terminal(),
    );
    bar.inc(1);

    let mut rows = vec![Candidate {
        group: Group::Fluid,
        knobs: start,
        outcome: Outcome::Timed(default_ms),
    }];
    let cap = a.time_cap;
    let mut run_group =
        |group: Group, list: Vec<Knobs>, later: usize, rows: &mut Vec<Candidate>| -> Result<()> {
            let budget = group_budget(
                cap - t_search.elapsed().as_secs_f64(),
                list.iter().filter(|k| viable(k)).count(),
                later,
            );
            let t_group = Instant::now();
            let mut estimate = first_cost;
            let mut first_in_group = true;
            for knobs in list {
                if let Some(why) = model_prunes(&knobs, lattice, gpu) {
                    rows.push(Candidate {
                        group,
                        knobs,
                        outcome: Outcome::Pruned(why),
                    });
                    continue;
                }
                let spent = t_group.elapsed().as_secs_f64();
                if spent + estimate > budget {
                    rows.push(Candidate {
                        group,
                        knobs,
                        outcome: Outcome::Pruned(format!(
                            "time cap (about {estimate:.2} s each, group budget {budget:.2} s)"
                        )),
                    });
                    bar.inc(1);
                    continue;
                }
                bar.set_message(knobs.describe());
                let t = Instant::now();
                let outcome = match time_one(&mut open, setup, knobs, WARMUP_STEPS, steps, ramp) {
                    Ok(ms) => Outcome::Timed(ms),
                    Err(e) => Outcome::Failed(e.to_string()),
                };
                if first_in_group {
                    estimate = t.elapsed().as_secs_f64();
                    first_in_group = false;
                }
                rows.push(Candidate {
                    group,
                    knobs,
                    outcome,
                });
                bar.inc(1);
            }
            Ok(())
        };
    run_group(
        Group::Fluid,
        fluid.into_iter().skip(1).collect(),
        n_spread,
        &mut rows,
    )?;
    let best_fluid = best(&rows).expect("the defaults were timed");
    if solids {
        let list = spreads
            .into_iter()
            .filter(|&s| Some(s) != best_fluid.knobs.spread)
            .map(|s| Knobs {
                spread: Some(s),
                ..best_fluid.knobs
            })
            .collect();
        run_group(Group::Spread, list, 0, &mut rows)?;
    }
    bar.finish_and_clear();
    let searched = t_search.elapsed().as_secs_f64();

    print!("{}", table(&rows, cells));
    let winner = best(&rows).expect("the defaults were timed");
    let best_ms = winner.ms().unwrap_or(default_ms);
    let worst = rows
        .iter()
        .filter_map(Candidate::ms)
        .fold(best_ms, f64::max);
    let timed = rows.iter().filter(|r| r.ms().is_some()).count();
    let pruned = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Pruned(_)))
        .count();
    println!(
        "best: {}: {best_ms:.3} ms/step ({:.1} MLUPs/s), {:.2}x the defaults ({}: {}), {:.2}x \
         the slowest timed; {timed} timed, {pruned} pruned, search {searched:.1} s",
        winner.knobs.describe(),
        cells as f64 / best_ms / 1e3,
        default_ms / best_ms,
        defaults.name(),
        start.describe(),
        worst / best_ms,
    );
    if let Some(path) = cache_path {
        let key = Key::new(&device, &bytes, setup.storage, setup.model);
        let mut cache = Cache::load_or_warn(&path);
        cache.insert(Entry::new(&key, &a.scene, winner.knobs, best_ms));
        cache
            .store(&path)
            .with_context(|| format!("cannot write the tuning cache {}", path.display()))?;
        println!("wrote the tuning cache {}", path.display());
    }
    Ok(())
}

/// The fastest timed candidate.
fn best(rows: &[Candidate]) -> Option<Candidate> {
    rows.iter()
        .filter(|r| r.ms().is_some())
        .min_by(|a, b| {
            a.ms()
                .partial_cmp(&b.ms())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
        .cloned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(alpha: u32, block: Block, spread: Option<IbSpread>) -> Knobs {
        Knobs {
            layout: Layout::csoa(alpha).unwrap_or(Layout::SOA),
            block,
            spread,
        }
    }

    #[test]
    fn the_cost_model_prunes_idle_threads_padding_and_cpu_blocks() {
        let l = Lattice::new(16, 16, 16);
        let wide = Block::ThreeD([128, 1, 1]);
        assert!(model_prunes(&knobs(0, Block::Flat, None), l, true).is_none());
        assert!(model_prunes(&knobs(0, Block::ThreeD([32, 4, 2]), None), l, true).is_none());
        // 128 threads over 16 cells along x: 87.5 % idle.
        assert!(model_prunes(&knobs(0, wide, None), l, true)
            .unwrap()
            .contains("idle threads"));
        assert!(
            model_prunes(&knobs(0, Block::ThreeD([32, 4, 2]), None), l, false)
                .unwrap()
                .contains("CPU")
        );
        let tiny = Lattice::new(8, 8, 8);
        assert!(model_prunes(&knobs(1024, Block::Flat, None), tiny, true)
            .unwrap()
            .contains("padded"));
        assert!(model_prunes(
            &knobs(0, Block::Flat, Some(IbSpread::Blocks { l: 8 })),
            tiny,
            true
        )
        .is_some());
        assert!(model_prunes(
            &knobs(0, Block::Flat, Some(IbSpread::Blocks { l: 4 })),
            tiny,
            true
        )
        .is_none());
    }

    #[test]
    fn the_fluid_group_starts_at_the_defaults_and_has_every_pair_once() {
        let start = knobs(128, Block::Flat, Some(IbSpread::Gather));
        let c = fluid_candidates(start);
        assert_eq!(c.len(), LAYOUTS.len() * BLOCKS.len());
        assert_eq!(c[0], start);
        assert!(c[1..LAYOUTS.len()].iter().all(|k| k.block == Block::Flat));
        assert!(c[1..].iter().all(|k| *k != start));
        assert!(c.iter().all(|k| k.spread == Some(IbSpread::Gather)));
    }

    #[test]
    fn budgets_split_the_time_left_by_candidates() {
        assert_eq!(group_budget(120.0, 30, 10), 90.0);
        assert_eq!(group_budget(40.0, 4, 0), 40.0);
        assert_eq!(group_budget(-1.0, 4, 0), 0.0);
    }
}
