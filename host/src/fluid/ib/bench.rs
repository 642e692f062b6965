//! `murmur fluid ib-bench`: the immersed boundary's spreading methods ([`IbSpread`]) timed on
//! one scene, stage by stage, against the same grid without its solids.

use super::spread::{IbSpread, BLOCK_SIDES, MAX_BLOCK};
use crate::fluid::driver::{self, BackendChoice};
use crate::fluid::plan::FluidStage;
use crate::fluid::scene::{self, SceneFile};
use crate::fluid::{FluidBackend, FluidError, Setup};
use anyhow::{bail, Result};
use std::path::PathBuf;

/// Which methods to time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodChoice {
    All,
    Scatter,
    Binned,
    Gather,
    Blocks,
}

#[derive(clap::Args)]
pub struct IbBenchArgs {
    /// Scene file with immersed solids, e.g. assets/fluid/torus-channel.toml.
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    /// Timed steps per method.
    #[arg(long, default_value_t = 100)]
    pub steps: u64,
    /// Untimed steps before the timed ones.
    #[arg(long, default_value_t = crate::fluid::timed::WARMUP_STEPS)]
    pub warmup: u64,
    /// Methods to time, in this order (space or comma separated; `all`: every method, the
    /// block gather at each `--block` side).
    #[arg(long, value_enum, num_args = 1.., value_delimiter = ',', default_value = "all")]
    pub method: Vec<MethodChoice>,
    /// Block sides of the block gather, cells (space or comma separated).
    #[arg(long, num_args = 1.., value_delimiter = ',', default_values_t = BLOCK_SIDES.to_vec())]
    pub block: Vec<u32>,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
}

/// The figures of one method (or of the grid without solids: `spread` `None`).
#[derive(Clone, Debug)]
pub struct IbBenchRow {
    pub spread: Option<IbSpread>,
    /// `(stage, ms per step)` of the immersed-boundary stages, in step order.
    pub ib_stages: Vec<(&'static str, f64)>,
    pub ib_ms: f64,
    pub step_ms: f64,
    /// The solids' forces of the last step equal the first method's bit for bit.
    pub same_forces: Option<bool>,
    /// How full the band was at the last step (`None` without solids).
    pub band: Option<crate::fluid::ib::plan::BandStats>,
}

/// The methods `args` asks for, each once, in the order asked.
pub fn methods(choices: &[MethodChoice], blocks: &[u32]) -> Result<Vec<IbSpread>> {
    if let Some(&l) = blocks.iter().find(|&&l| !(1..=MAX_BLOCK).contains(&l)) {
        bail!("--block {l}: block sides must be within 1..={MAX_BLOCK}");
    }
    let blocks = blocks.iter().map(|&l| IbSpread::Blocks { l });
    let mut out: Vec<IbSpread> = Vec::new();
    for choice in choices {
        let some: Vec<IbSpread> = match choice {
            MethodChoice::All => [IbSpread::Scatter, IbSpread::Binned, IbSpread::Gather]
                .into_iter()
                .chain(blocks.clone())
                .collect(),
            MethodChoice::Scatter => vec![IbSpread::Scatter],
            MethodChoice::Binned => vec![IbSpread::Binned],
            MethodChoice::Gather => vec![IbSpread::Gather],
            MethodChoice::Blocks => blocks.clone().collect(),
        };
        for m in some {
            if !out.contains(&m) {
                out.push(m);
            }
        }
    }
    Ok(out)
}

/// Runs `warmup` then `steps` timed steps of `setup` with `spread` (`None`: without solids) on
/// a backend `open` builds; the inlets ramp as in a run (`ramp` steps).
pub fn bench_method(
    open: &mut crate::fluid::validate::Opener,
    setup: &Setup,
    spread: Option<IbSpread>,
    warmup: u64,
    steps: u64,
    ramp: f64,
) -> Result<(IbBenchRow, Vec<crate::fluid::forces::ForceSample>), FluidError> {
    let mut setup = setup.clone();
    match spread {
        Some(s) => setup.immersed.spread = s,
        None => setup.immersed.solids.clear(),
    }
    let mut b = open(&setup)?;
    let times = crate::fluid::timed::timed_steps(
        b.as_mut(),
        warmup,
        steps,
        crate::fluid::timed::StepOptions::ramped(ramp),
    )?
    .times;
    let forces = b.take_forces()?;
    let band = b.band()?;
    let last = forces.iter().map(|r| r.step).max();
    let last_forces: Vec<_> = forces
        .into_iter()
        .filter(|r| Some(r.step) == last)
        .collect();
    let ib_stages: Vec<(&'static str, f64)> = times
        .mean_ms()
        .into_iter()
        .filter(|(n, _)| FluidStage::names_immersed(n))
        .collect();
    Ok((
        IbBenchRow {
            spread,
            ib_ms: ib_stages.iter().map(|(_, ms)| ms).sum(),
            ib_stages,
            step_ms: times.total_mean_ms(),
            same_forces: None,
            band,
        },
        last_forces,
    ))
}

/// The markdown table: one row per method, then the grid without solids.
pub fn table(rows: &[IbBenchRow]) -> String {
    let mut stages: Vec<&'static str> = FluidStage::immersed_names().collect();
    for r in rows {
        for (n, _) in &r.ib_stages {
            if !stages.contains(n) {
                stages.push(n);
            }
        }
    }
    stages.retain(|n| rows.iter().any(|r| r.ib_stages.iter().any(|(s, _)| s == n)));
    let without = rows.iter().find(|r| r.spread.is_none()).map(|r| r.step_ms);
    let mut out = format!(
        "| method | l | {} | IB total ms | step ms | IB / step | (step - no solids) / step | \
         forces = first |\n|---|---|{}---|---|---|---|---|\n",
        stages.join(" | "),
        "---|".repeat(stages.len())
    );
    for r in rows {
        let cell = |n: &str| {
            r.ib_stages
                .iter()
                .find(|(s, _)| *s == n)
                .map_or("-".to_string(), |(_, ms)| format!("{ms:.3}"))
        };
        let (name, l) = match r.spread {
            None => ("no solids".to_string(), "-".to_string()),
            Some(IbSpread::Blocks { l }) => ("blocks".to_string(), l.to_string()),
            Some(s) => (s.name().to_string(), "-".to_string()),
        };
        let extra = match (r.spread, without) {
            (Some(_), Some(w)) if r.step_ms > 0.0 => {
                format!("{:.1} %", 100.0 * (r.step_ms - w) / r.step_ms)
            }
            _ => "-".to_string(),
        };
        out += &format!(
            "| {name} | {l} | {} | {} | {:.3} | {} | {extra} | {} |\n",
            stages
                .iter()
                .map(|n| cell(n))
                .collect::<Vec<_>>()
                .join(" | "),
            if r.spread.is_some() {
                format!("{:.3}", r.ib_ms)
            } else {
                "-".to_string()
            },
            r.step_ms,
            if r.step_ms > 0.0 && r.spread.is_some() {
                format!("{:.1} %", 100.0 * r.ib_ms / r.step_ms)
            } else {
                "-".to_string()
            },
            match r.same_forces {
                None => "-",
                Some(true) => "yes",
                Some(false) => "NO",
            }
        );
    }
    out
}

/// `murmur fluid ib-bench`.
pub fn ib_bench_cmd(a: &IbBenchArgs) -> Result<()> {
    if a.steps == 0 {
        bail!("--steps must be at least 1");
    }
    let methods = methods(&a.method, &a.block)?;
    if methods.is_empty() {
        bail!("--method blocks needs at least one --block side");
    }
    let file = SceneFile::load(&a.scene)?;
    let in_scene = scene::in_scene(&a.scene);
    if a.backend == BackendChoice::Cpu {
        scene::check_cpu_memory(&file, &a.scene, 4)?;
    }
    let t0 = std::time::Instant::now();
    let scene = file.build().map_err(in_scene)?;
    for w in &scene.warnings {
        eprintln!("murmur: warning: {w}");
    }
    for line in &scene.info {
        println!("{line}");
    }
    if scene.setup.immersed.is_empty() {
        bail!(
            "scene {}: it has no immersed solids to spread forces for",
            a.scene.display()
        );
    }
    println!(
        "scene built in {:.1} s: {} samples",
        t0.elapsed().as_secs_f64(),
        scene.setup.immersed.samples()
    );
    let mut note = None;
    let choice = a.backend;
    let mut open = |setup: &Setup| -> Result<Box<dyn FluidBackend>, FluidError> {
        let (b, n) = driver::open_backend(choice, setup)?;
        if note.is_none() {
            note = Some(b.describe());
            if let Some(n) = n {
                eprintln!("murmur: {n}");
            }
        }
        Ok(b)
    };
    let l = scene.setup.lattice();
    let mut rows = Vec::new();
    let mut first: Option<Vec<crate::fluid::forces::ForceSample>> = None;
    for spread in methods.into_iter().map(Some).chain([None]) {
        let (mut row, forces) = bench_method(
            &mut open,
            &scene.setup,
            spread,
            a.warmup,
            a.steps,
            scene.inlet.ramp_steps,
        )?;
        if spread.is_some() {
            match &first {
                None => first = Some(forces),
                Some(f) => row.same_forces = Some(*f == forces),
            }
        }
        eprintln!(
            "  {}: {}step {:.3} ms",
            row_name(spread),
            if spread.is_some() {
                format!("IB {:.3} ms, ", row.ib_ms)
            } else {
                String::new()
            },
            row.step_ms
        );
        rows.push(row);
    }
    println!(
        "ib-bench {} on {}: {} x {} x {} cells, {} samples, {} warm-up + {} timed steps, ms per \
         step (stage times{})",
        scene.file.name,
        note.clone().unwrap_or_default(),
        l.nx,
        l.ny,
        l.nz,
        scene.setup.immersed.samples(),
        a.warmup,
        a.steps,
        if note.as_deref().is_some_and(|d| d.starts_with("cpu")) {
            ": CPU wall clock"
        } else {
            ": CUDA events"
        }
    );
    print!("{}", table(&rows));
    for r in &rows {
        if let (Some(_), Some(band)) = (r.spread, r.band) {
            println!("{}, last step: {}", row_name(r.spread), band.line());
        }
    }
    Ok(())
}

/// A method's name in the progress lines: `scatter`, `gather`, `blocks l = 4`, `no solids`.
fn row_name(spread: Option<IbSpread>) -> String {
    match spread {
        Some(IbSpread::Blocks { l }) => format!("blocks l = {l}"),
        Some(s) => s.name().to_string(),
        None => "no solids".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_come_once_each_in_the_order_asked() {
        use MethodChoice::*;
        let b = |l| IbSpread::Blocks { l };
        assert_eq!(
            methods(&[All], &[2, 4]).unwrap(),
            [
                IbSpread::Scatter,
                IbSpread::Binned,
                IbSpread::Gather,
                b(2),
                b(4)
            ]
        );
        assert_eq!(
            methods(&[Binned, Scatter, Binned, Blocks], &[8]).unwrap(),
            [IbSpread::Binned, IbSpread::Scatter, b(8)]
        );
        assert!(methods(&[Scatter], &[0]).is_err());
    }
}
