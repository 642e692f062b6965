//! The bench's text files: `steps.csv` (every measured step; read back by `--replot`),
//! `summary.csv` and the markdown table (`summary.md`, also printed).

use super::stats::StepStats;
use super::{BenchPlan, BenchRow};
use crate::atomic_file::write_atomic;
use crate::flock::Method;
use std::io::Write;

/// Header of `steps.csv`: `ms` is the step's time (CUDA events on the GPU, wall time on the CPU),
/// `wall_ms` the host's time in `step()`. Files of earlier versions lack `x_split` (they ran with
/// 1) and some lack `wall_ms`; `--replot` reads them too.
pub const STEPS_HEADER: &str =
    "n,scale,method,cell_width_factor,x_split,block_size,step,ms,wall_ms";

/// The markdown table of the rows (also printed by the CLI).
pub fn markdown(rows: &[BenchRow], plan: &BenchPlan) -> String {
    let mut s = String::new();
    let timing = if rows.iter().all(|r| r.backend.starts_with("cpu")) {
        "time per step = wall time of the step (CPU backend)"
    } else {
        "time per step = GPU time from the CUDA event that ends the previous step to the one \
         that ends this step (with --stages: events around each stage); wall time on the CPU"
    };
    s += &format!(
        "Warm-up {} steps discarded, {} measured; {timing}.\n\n",
        plan.warmup, plan.steps
    );
    s += "| N | scale | method | cell width | x-split | block | mean ms/step | median | p5 | p95 | wall ms/step | boid-steps/s | bytes/boid | backend |\n";
    s += "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for r in rows {
        s += &format!(
            "| {} | {:.1} | {} | {} | {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} | {} | {} | {} |\n",
            r.n,
            r.scale,
            r.method.name(),
            r.factor,
            r.x_split,
            r.block,
            r.stats.mean_ms,
            r.stats.median_ms,
            r.stats.p5_ms,
            r.stats.p95_ms,
            r.stats.wall_ms,
            crate::flock::driver::si(r.n as f64 / (r.stats.mean_ms / 1e3)),
            r.bytes_per_boid.map(|b| format!("{b:.1}")).unwrap_or_else(|| "-".into()),
            r.backend
        );
    }
    s
}

/// Writes `steps.csv` (every measured step), `summary.csv` and `summary.md` into `plan.out`.
pub fn write_tables(plan: &BenchPlan, rows: &[BenchRow]) -> std::io::Result<()> {
    write_atomic(&plan.out.join("steps.csv"), |w| {
        writeln!(w, "{STEPS_HEADER}")?;
        for r in rows {
            for (i, ms) in r.steps_ms.iter().enumerate() {
                writeln!(
                    w,
                    "{},{},{},{},{},{},{},{:.6},{:.6}",
                    r.n,
                    r.scale,
                    r.method.name(),
                    r.factor,
                    r.x_split,
                    r.block,
                    plan.warmup as usize + i,
                    ms,
                    r.steps_wall_ms.get(i).copied().unwrap_or(f64::NAN)
                )?;
            }
        }
        Ok(())
    })?;
    write_atomic(&plan.out.join("summary.csv"), |w| {
        writeln!(w, "n,scale,method,cell_width_factor,x_split,block_size,mean_ms,median_ms,p5_ms,p95_ms,wall_ms,bytes_per_boid,backend")?;
        for r in rows {
            writeln!(
                w,
                "{},{},{},{},{},{},{:.6},{:.6},{:.6},{:.6},{:.6},{},{}",
                r.n,
                r.scale,
                r.method.name(),
                r.factor,
                r.x_split,
                r.block,
                r.stats.mean_ms,
                r.stats.median_ms,
                r.stats.p5_ms,
                r.stats.p95_ms,
                r.stats.wall_ms,
                r.bytes_per_boid
                    .map(|b| format!("{b:.2}"))
                    .unwrap_or_default(),
                r.backend
            )?;
        }
        Ok(())
    })?;
    let md = markdown(rows, plan);
    write_atomic(&plan.out.join("summary.md"), |w| w.write_all(md.as_bytes()))
}

/// Reads the `steps.csv` of an earlier run back into rows (statistics computed from the steps;
/// device bytes are not in that file), for `flock bench --replot`. Reads the files of
/// earlier versions too (without `x_split`, or without `wall_ms`). Errors name the line.
pub fn rows_from_steps_csv(text: &str) -> Result<Vec<BenchRow>, String> {
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = match lines.next() {
        Some((_, h)) => h.trim().split(',').collect(),
        None => Vec::new(),
    };
    let known = |h: &[&str]| {
        let full: Vec<&str> = STEPS_HEADER.split(',').collect();
        let without =
            |name: &str| -> Vec<&str> { full.iter().copied().filter(|c| *c != name).collect() };
        let older = without("x_split");
        let oldest: Vec<&str> = older.iter().copied().filter(|c| *c != "wall_ms").collect();
        h == full.as_slice() || h == older.as_slice() || h == oldest.as_slice()
    };
    if !known(&header) {
        return Err("not a murmur steps.csv (the header line differs)".into());
    }
    let column = |name: &str| header.iter().position(|c| *c == name);
    let at = |name: &str| column(name).expect("required column of a known header");
    let (c_n, c_scale, c_method, c_factor, c_block, c_ms) = (
        at("n"),
        at("scale"),
        at("method"),
        at("cell_width_factor"),
        at("block_size"),
        at("ms"),
    );
    let (c_x, c_wall) = (column("x_split"), column("wall_ms"));
    let mut rows: Vec<BenchRow> = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |what: &str| format!("line {}: {what}: {line:?}", i + 1);
        let f: Vec<&str> = line.split(',').collect();
        if f.len() != header.len() {
            return Err(bad(&format!("expected {} fields", header.len())));
        }
        let num = |k: usize| f[k].trim().parse::<f64>().map_err(|_| bad("not a number"));
        let method = Method::ALL
            .into_iter()
            .find(|m| m.name() == f[c_method].trim())
            .ok_or_else(|| bad("unknown method"))?;
        let (n, scale, factor, block, ms) = (
            num(c_n)?,
            num(c_scale)?,
            num(c_factor)?,
            num(c_block)?,
            num(c_ms)?,
        );
        let x_split = match c_x {
            Some(k) => num(k)?,
            None => 1.0,
        };
        if !(ms.is_finite() && ms > 0.0 && n >= 1.0 && block >= 1.0 && x_split >= 1.0) {
            return Err(bad("out of range"));
        }
        let (n, scale, factor, x_split, block) = (
            n as usize,
            scale as f32,
            factor as f32,
            x_split as u32,
            block as u32,
        );
        let same = |r: &BenchRow| {
            r.n == n
                && r.scale == scale
                && r.method == method
                && r.factor == factor
                && r.x_split == x_split
                && r.block == block
        };
        let wall = match c_wall {
            Some(k) => num(k)?,
            None => f64::NAN,
        };
        match rows.iter_mut().find(|r| same(r)) {
            Some(r) => {
                r.steps_ms.push(ms);
                r.steps_wall_ms.push(wall);
            }
            None => rows.push(BenchRow {
                n,
                scale,
                method,
                factor,
                x_split,
                block,
                backend: String::new(),
                stats: StepStats::of(&[], f64::NAN),
                bytes_per_boid: None,
                steps_ms: vec![ms],
                steps_wall_ms: vec![wall],
            }),
        }
    }
    if rows.is_empty() {
        return Err("no steps in the file".into());
    }
    for r in &mut rows {
        let wall = r.steps_wall_ms.iter().sum::<f64>() / r.steps_wall_ms.len() as f64;
        r.stats = StepStats::of(&r.steps_ms, wall);
    }
    Ok(rows)
}
