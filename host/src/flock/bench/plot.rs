//! PNG plots of the bench rows (plotters into an RGB buffer, encoded by `image`).

use super::{BenchRow, Scales, PEER_H200, TARGETS_SCALE100, TARGET_DENSITY};
use crate::atomic_file::write_atomic;
use plotters::prelude::*;
use std::path::Path;

const W: u32 = 1000;
const H: u32 = 650;
static FONT: &[u8] = include_bytes!("../../../../assets/fonts/DejaVuSans.ttf");

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

pub(crate) fn register_font() {
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
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())))
            .map_err(err)?;
    }
    Ok(())
}

/// Rows grouped into labelled series of `(x, mean ms)` points, in first-seen order.
fn series(
    rows: &[BenchRow],
    label: impl Fn(&BenchRow) -> String,
    x: impl Fn(&BenchRow) -> f64,
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows {
        let (l, p) = (label(r), (x(r), r.stats.mean_ms));
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
        let ys: Vec<f64> = rows.iter().map(|r| r.stats.mean_ms).collect();
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
        let ymax = rows.iter().map(|r| r.stats.mean_ms).fold(0.0, f64::max);
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
