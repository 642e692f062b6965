//! `murmur flock bench`: sweeps over N, scale, method, cell-width factor, x-split and block size; discards
//! warm-up steps; records every measured step's time (CUDA events on the GPU, wall time on the
//! CPU) to CSV; writes a markdown summary and PNG plots.

use super::driver::{open_backend, BackendChoice, Start};
use super::{FlockSettings, Method, SimError};
use crate::atomic_file::write_atomic;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Per-step times of the best published CIS 565 implementation (CUDA C++, Thrust sort, coherent
/// grid, scale 100), measured on the same H200: `(N, ms with 27 cells, ms with 8 cells)`
/// (`shared/notes/reference.md`, 2026-11-29).
pub const PEER_H200: [(usize, f64, f64); 3] = [
    (100_000, 0.160, 0.175),
    (1_000_000, 1.02, 2.05),
    (5_000_000, 14.5, 40.1),
];

/// Header of `steps.csv`: `ms` is the step's time (CUDA events on the GPU, wall time on the CPU),
/// `wall_ms` the host's time in `step()`. Files of earlier versions lack `x_split` (they ran with
/// 1) and some lack `wall_ms`; `--replot` reads them too.
pub const STEPS_HEADER: &str =
    "n,scale,method,cell_width_factor,x_split,block_size,step,ms,wall_ms";

/// The per-step targets at scale 100 this project set itself (H200): `(N, ms)`.
pub const TARGETS_SCALE100: [(usize, f64); 3] =
    [(100_000, 0.030), (1_000_000, 0.25), (5_000_000, 3.5)];

/// The constant-density target (density of 1M boids at scale 100): `(N, ms)`.
pub const TARGET_DENSITY: (usize, f64) = (100_000_000, 30.0);

/// What to sweep.
#[derive(Clone, Debug)]
pub struct BenchPlan {
    pub base: FlockSettings,
    pub ns: Vec<usize>,
    /// Scales to sweep for every N, or `None` for constant density (that of 1M boids at scale
    /// 100, one scale per N).
    pub scales: Option<Vec<f32>>,
    pub methods: Vec<Method>,
    pub factors: Vec<f32>,
    pub x_splits: Vec<u32>,
    pub block_sizes: Vec<u32>,
    pub warmup: u64,
    pub steps: u64,
    pub backend: BackendChoice,
    pub seed: u64,
    pub out: PathBuf,
}

/// One configuration's figures.
#[derive(Clone, Debug)]
pub struct BenchRow {
    pub n: usize,
    pub scale: f32,
    pub method: Method,
    pub factor: f32,
    pub x_split: u32,
    pub block: u32,
    pub backend: String,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub p5_ms: f64,
    pub p95_ms: f64,
    pub wall_ms: f64,
    pub bytes_per_boid: Option<f64>,
    /// Per-step times of the measured steps (CUDA events on the GPU, wall time on the CPU).
    pub steps_ms: Vec<f64>,
    /// Host wall time of each measured `step()` call (the step itself on the CPU; on the GPU the
    /// time to enqueue it, which follows the GPU's pace once the launch queue is full).
    pub steps_wall_ms: Vec<f64>,
}

/// Which scales a set of rows covers (titles, labels and the peer's figures depend on it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scales {
    /// Every row at this scale.
    Fixed(f32),
    /// Rows at several fixed scales.
    Several,
    /// Each N at the density of 1M boids at scale 100.
    ConstantDensity,
}

impl Scales {
    /// What `rows` cover: one scale, the constant-density scale of each row's N, or several.
    pub fn of(rows: &[BenchRow]) -> Scales {
        let first = rows.first().map_or(100.0, |r| r.scale);
        if rows.iter().all(|r| r.scale == first) {
            Scales::Fixed(first)
        } else if rows.iter().all(|r| r.scale == constant_density_scale(r.n)) {
            Scales::ConstantDensity
        } else {
            Scales::Several
        }
    }
}

/// The scale of `n` boids at the density of 1M boids at scale 100.
pub fn constant_density_scale(n: usize) -> f32 {
    (100.0 * (n as f64 / 1e6).cbrt()) as f32
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// Runs the plan, writing `steps.csv`, `summary.csv`, `summary.md` and `ms_per_step.png` into
/// `plan.out`. Returns the rows.
pub fn run(plan: &BenchPlan) -> Result<Vec<BenchRow>, SimError> {
    let mut configs = Vec::new();
    for &n in &plan.ns {
        let scales = match &plan.scales {
            Some(list) => list.clone(),
            None => vec![constant_density_scale(n)],
        };
        for scale in scales {
            for &m in &plan.methods {
                for &f in &plan.factors {
                    for &x in &plan.x_splits {
                        for &b in &plan.block_sizes {
                            configs.push((n, scale, m, f, x, b));
                        }
                    }
                }
            }
        }
    }
    let total = configs.len() as u64 * (plan.warmup + plan.steps);
    let bar = indicatif::ProgressBar::new(total);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{spinner} {msg} [{bar:30}] {pos}/{len} steps, eta {eta}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    let mut rows = Vec::new();
    for (n, scale, method, factor, x_split, block) in configs {
        let mut s = plan.base.clone();
        s.params.scale = scale;
        s.method = method;
        s.cell_width_factor = factor;
        s.x_split = x_split;
        s.block_size = block;
        bar.set_message(format!(
            "{} N={n} scale={scale} f={factor} x={x_split} b={block}",
            method.name()
        ));
        let start = Start::Random { n, seed: plan.seed };
        let (mut sim, _) = open_backend(plan.backend, &s, &start)?;
        for _ in 0..plan.warmup {
            sim.step()?;
            bar.inc(1);
        }
        sim.reset_times();
        let t0 = std::time::Instant::now();
        let mut steps_wall_ms = Vec::with_capacity(plan.steps as usize);
        for _ in 0..plan.steps {
            let t = std::time::Instant::now();
            sim.step()?;
            steps_wall_ms.push(t.elapsed().as_secs_f64() * 1e3);
            bar.inc(1);
        }
        sim.synchronize()?;
        let steps_ms = sim.step_ms()?;
        let wall_ms = t0.elapsed().as_secs_f64() * 1e3 / plan.steps.max(1) as f64;
        let mut sorted = steps_ms.clone();
        sorted.sort_by(f64::total_cmp);
        let mean = sorted.iter().sum::<f64>() / sorted.len().max(1) as f64;
        rows.push(BenchRow {
            n,
            scale: s.params.scale,
            method,
            factor,
            x_split,
            block,
            backend: sim.describe(),
            mean_ms: mean,
            median_ms: percentile(&sorted, 0.5),
            p5_ms: percentile(&sorted, 0.05),
            p95_ms: percentile(&sorted, 0.95),
            wall_ms,
            bytes_per_boid: sim.device_bytes_per_boid(),
            steps_ms,
            steps_wall_ms,
        });
    }
    bar.finish_and_clear();
    write_outputs(plan, &rows).map_err(|e| {
        SimError::Invalid(format!(
            "cannot write results to {}: {e}",
            plan.out.display()
        ))
    })?;
    Ok(rows)
}

/// The markdown table of the rows (also printed by the CLI).
pub fn markdown(rows: &[BenchRow], plan: &BenchPlan) -> String {
    let mut s = String::new();
    s += &format!(
        "Warm-up {} steps discarded, {} measured; time per step = GPU time from the CUDA event \
         that ends the previous step to the one that ends this step (with --stages: events \
         around each stage); wall time on the CPU.\n\n",
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
            r.mean_ms,
            r.median_ms,
            r.p5_ms,
            r.p95_ms,
            r.wall_ms,
            super::driver::si(r.n as f64 / (r.mean_ms / 1e3)),
            r.bytes_per_boid.map(|b| format!("{b:.1}")).unwrap_or_else(|| "-".into()),
            r.backend
        );
    }
    s
}

fn write_outputs(plan: &BenchPlan, rows: &[BenchRow]) -> std::io::Result<()> {
    std::fs::create_dir_all(&plan.out)?;
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
                r.mean_ms,
                r.median_ms,
                r.p5_ms,
                r.p95_ms,
                r.wall_ms,
                r.bytes_per_boid
                    .map(|b| format!("{b:.2}"))
                    .unwrap_or_default(),
                r.backend
            )?;
        }
        Ok(())
    })?;
    let md = markdown(rows, plan);
    write_atomic(&plan.out.join("summary.md"), |w| w.write_all(md.as_bytes()))?;
    // Log-scale plots need positive, finite times.
    if rows
        .iter()
        .any(|r| !(r.mean_ms.is_finite() && r.mean_ms > 0.0))
    {
        return Err(std::io::Error::other(
            "a configuration recorded no step times",
        ));
    }
    plot::ms_per_step(&plan.out.join("ms_per_step.png"), rows, Scales::of(rows))?;
    if plan.block_sizes.len() > 1 {
        plot::block_sizes(&plan.out.join("block_size.png"), rows)?;
    }
    Ok(())
}

/// Reads the `steps.csv` of an earlier run back into rows (means and percentiles recomputed; wall
/// times and device bytes are not in that file), for `flock bench --replot`. Reads the files of
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
                mean_ms: f64::NAN,
                median_ms: f64::NAN,
                p5_ms: f64::NAN,
                p95_ms: f64::NAN,
                wall_ms: f64::NAN,
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
        r.wall_ms = r.steps_wall_ms.iter().sum::<f64>() / r.steps_wall_ms.len() as f64;
        let mut sorted = r.steps_ms.clone();
        sorted.sort_by(f64::total_cmp);
        r.mean_ms = sorted.iter().sum::<f64>() / sorted.len() as f64;
        r.median_ms = percentile(&sorted, 0.5);
        r.p5_ms = percentile(&sorted, 0.05);
        r.p95_ms = percentile(&sorted, 0.95);
    }
    Ok(rows)
}

/// Redraws the plots of an earlier run from its `steps.csv` into `out` (`ms_per_step.png`, and
/// `block_size.png` when it swept several block sizes). Returns the files written.
pub fn replot(steps_csv: &Path, out: &Path) -> Result<Vec<PathBuf>, String> {
    let text = std::fs::read_to_string(steps_csv)
        .map_err(|e| format!("cannot read {}: {e}", steps_csv.display()))?;
    let rows = rows_from_steps_csv(&text).map_err(|e| format!("{}: {e}", steps_csv.display()))?;
    check_out(out).map_err(|e| format!("cannot write to {}: {e}", out.display()))?;
    let mut written = vec![out.join("ms_per_step.png")];
    plot::ms_per_step(&written[0], &rows, Scales::of(&rows)).map_err(|e| e.to_string())?;
    let mut blocks: Vec<u32> = rows.iter().map(|r| r.block).collect();
    blocks.sort();
    blocks.dedup();
    if blocks.len() > 1 {
        written.push(out.join("block_size.png"));
        plot::block_sizes(&written[1], &rows).map_err(|e| e.to_string())?;
    }
    Ok(written)
}

/// PNG plots (plotters into an RGB buffer, encoded by `image`).
pub mod plot {
    use super::{BenchRow, Scales, PEER_H200, TARGETS_SCALE100, TARGET_DENSITY};
    use crate::atomic_file::write_atomic;
    use plotters::prelude::*;
    use std::path::Path;

    const W: u32 = 1000;
    const H: u32 = 650;
    static FONT: &[u8] = include_bytes!("../../../assets/fonts/DejaVuSans.ttf");

    /// ` x4` for a row with x-split 4; nothing for 1 (the grids of earlier versions).
    fn x_label(r: &BenchRow) -> String {
        if r.x_split == 1 {
            String::new()
        } else {
            format!(" x{}", r.x_split)
        }
    }

    /// `100k`, `2M`, `1G` for counts.
    fn count(x: f64) -> String {
        let (v, unit) = crate::flock::driver::si_parts(x);
        format!("{}{unit}", (v * 100.0).round() / 100.0)
    }

    /// Tick values of a log axis over `lo..hi`: 1, 2 and 5 times the powers of ten in range, or,
    /// on an axis spanning less than a decade, every 1 to 9 (and 1.5) times them, so that some
    /// ticks always show.
    fn log_key_points(lo: f64, hi: f64) -> Vec<f64> {
        let mantissas: &[f64] = if hi / lo >= 10.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
        };
        let mut points = Vec::new();
        let mut e = lo.log10().floor() as i32;
        while 10f64.powi(e) <= hi {
            for m in mantissas {
                // Rounded so that labels read 0.3, not 0.30000000000000004.
                let v = (m * 10f64.powi(e) * 1e9).round() / 1e9;
                if lo <= v && v <= hi {
                    points.push(v);
                }
            }
            e += 1;
        }
        points
    }

    fn register_font() {
        // Registering twice is harmless; the first call wins.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    }

    fn err<E: std::fmt::Display>(e: E) -> std::io::Error {
        std::io::Error::other(e.to_string())
    }

    fn save(path: &Path, buf: Vec<u8>) -> std::io::Result<()> {
        let img = image::RgbImage::from_raw(W, H, buf).ok_or_else(|| err("plot buffer size"))?;
        write_atomic(path, |w| {
            img.write_to(w, image::ImageFormat::Png).map_err(err)?;
            Ok(())
        })
    }

    /// Series of rows grouped by (method, cell width, block).
    /// Rows grouped into labelled series of `(x, mean ms)` points, in first-seen order.
    /// One coloured line with dots and a legend entry per group of points.
    fn draw_groups<DB, CT>(
        chart: &mut ChartContext<'_, DB, CT>,
        groups: Vec<(String, Vec<(f64, f64)>)>,
    ) -> std::io::Result<()>
    where
        DB: DrawingBackend,
        CT: CoordTranslate<From = (f64, f64)>,
    {
        for (i, (label, pts)) in groups.into_iter().enumerate() {
            let c = Palette99::pick(i).to_rgba();
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))
                .map_err(err)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            chart
                .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
                .map_err(err)?;
        }
        Ok(())
    }

    fn series(
        rows: &[BenchRow],
        label: impl Fn(&BenchRow) -> String,
        x: impl Fn(&BenchRow) -> f64,
    ) -> Vec<(String, Vec<(f64, f64)>)> {
        let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for r in rows {
            let (l, p) = (label(r), (x(r), r.mean_ms));
            match out.iter_mut().find(|(name, _)| *name == l) {
                Some((_, pts)) => pts.push(p),
                None => out.push((l, vec![p])),
            }
        }
        out
    }

    /// Milliseconds per step against N (log-log), with the CIS 565 peer's H200 figures.
    pub fn ms_per_step(path: &Path, rows: &[BenchRow], scales: Scales) -> std::io::Result<()> {
        register_font();
        let mut buf = vec![255u8; (W * H * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            let xs: Vec<f64> = rows.iter().map(|r| r.n as f64).collect();
            let ys: Vec<f64> = rows.iter().map(|r| r.mean_ms).collect();
            let peer = scales == Scales::Fixed(100.0);
            let (mut x0, mut x1) = (
                xs.iter().cloned().fold(f64::MAX, f64::min),
                xs.iter().cloned().fold(0.0, f64::max),
            );
            let (mut y0, mut y1) = (
                ys.iter().cloned().fold(f64::MAX, f64::min),
                ys.iter().cloned().fold(0.0, f64::max),
            );
            if peer {
                for &(n, a, b) in &PEER_H200 {
                    x0 = x0.min(n as f64);
                    x1 = x1.max(n as f64);
                    y0 = y0.min(a.min(b));
                    y1 = y1.max(a.max(b));
                }
                for &(_, t) in &TARGETS_SCALE100 {
                    y0 = y0.min(t);
                }
            }
            let targets: Vec<(usize, f64)> = if peer {
                TARGETS_SCALE100.to_vec()
            } else if scales == Scales::ConstantDensity
                && x0 <= TARGET_DENSITY.0 as f64
                && TARGET_DENSITY.0 as f64 <= x1
            {
                y0 = y0.min(TARGET_DENSITY.1);
                vec![TARGET_DENSITY]
            } else {
                Vec::new()
            };
            let title = match scales {
                Scales::Fixed(s) => format!("flock step time, scale {s}"),
                Scales::Several => "flock step time".to_string(),
                Scales::ConstantDensity => {
                    "flock step time, constant density (1M boids at scale 100)".to_string()
                }
            };
            let mut chart = ChartBuilder::on(&root)
                .caption(title, ("sans-serif", 24))
                .margin(15)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(
                    (x0 * 0.8..x1 * 1.25)
                        .log_scale()
                        .with_key_points(log_key_points(x0 * 0.8, x1 * 1.25)),
                    (y0 * 0.7..y1 * 1.4)
                        .log_scale()
                        .with_key_points(log_key_points(y0 * 0.7, y1 * 1.4)),
                )
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("boids")
                .y_desc("ms per step")
                .x_label_formatter(&|v| count(*v))
                .y_label_formatter(&|v| format!("{v}"))
                .label_style(("sans-serif", 15))
                .draw()
                .map_err(err)?;
            let by_config = series(
                rows,
                |r| {
                    let scale = if scales == Scales::Several {
                        format!(" scale={}", r.scale)
                    } else {
                        String::new()
                    };
                    format!(
                        "{}{scale} f={}{} b={}",
                        r.method.name(),
                        r.factor,
                        x_label(r),
                        r.block
                    )
                },
                |r| r.n as f64,
            );
            draw_groups(&mut chart, by_config)?;
            if peer {
                for (k, name) in [
                    (1usize, "CIS 565 peer, 27 cells (H200)"),
                    (2, "CIS 565 peer, 8 cells (H200)"),
                ] {
                    let pts: Vec<(f64, f64)> = PEER_H200
                        .iter()
                        .map(|&(n, a, b)| (n as f64, if k == 1 { a } else { b }))
                        .collect();
                    let c = if k == 1 {
                        BLACK
                    } else {
                        RGBColor(120, 120, 120)
                    };
                    chart
                        .draw_series(LineSeries::new(pts.clone(), c.stroke_width(1)))
                        .map_err(err)?
                        .label(name)
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
                    chart
                        .draw_series(pts.into_iter().map(|p| Cross::new(p, 5, c)))
                        .map_err(err)?;
                }
            }
            if !targets.is_empty() {
                let red = RGBColor(200, 30, 30);
                chart
                    .draw_series(
                        targets
                            .iter()
                            .map(|&(n, t)| TriangleMarker::new((n as f64, t), 6, red.filled())),
                    )
                    .map_err(err)?
                    .label("targets")
                    .legend(move |(x, y)| TriangleMarker::new((x + 10, y), 6, red.filled()));
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(err)?;
            root.present().map_err(err)?;
        }
        save(path, buf)
    }

    /// Milliseconds per step against block size, one line per N.
    pub fn block_sizes(path: &Path, rows: &[BenchRow]) -> std::io::Result<()> {
        register_font();
        let mut buf = vec![255u8; (W * H * 3) as usize];
        {
            let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
            root.fill(&WHITE).map_err(err)?;
            let bmax = rows.iter().map(|r| r.block).max().unwrap_or(1024) as f64;
            let ymax = rows.iter().map(|r| r.mean_ms).fold(0.0, f64::max);
            let mut chart = ChartBuilder::on(&root)
                .caption("step time against block size", ("sans-serif", 24))
                .margin(15)
                .x_label_area_size(45)
                .y_label_area_size(70)
                .build_cartesian_2d(0.0..bmax * 1.05, 0.0..ymax * 1.15)
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("threads per block")
                .y_desc("ms per step")
                .label_style(("sans-serif", 15))
                .draw()
                .map_err(err)?;
            let groups = series(
                rows,
                |r| {
                    format!(
                        "N={} scale={} {} f={}{}",
                        r.n,
                        r.scale,
                        r.method.name(),
                        r.factor,
                        x_label(r)
                    )
                },
                |r| r.block as f64,
            );
            draw_groups(&mut chart, groups)?;
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .label_font(("sans-serif", 14))
                .draw()
                .map_err(err)?;
            root.present().map_err(err)?;
        }
        save(path, buf)
    }
}

/// Checks the output folder up front (a sweep can take minutes).
pub fn check_out(out: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(out)?;
    let probe = out.join(".murmur-write-test");
    std::fs::write(&probe, b"")?;
    std::fs::remove_file(&probe)
}
