//! The channel case's plot: the mean profile in wall units against the DNS and the log law
//! (left, log `y+`), the RMS velocities and the Reynolds shear stress against the DNS (right).

use crate::atomic_file::write_atomic;
use plotters::prelude::*;
use std::path::Path;

const W: u32 = 1400;
const H: u32 = 600;

fn err<E: std::fmt::Display>(e: E) -> std::io::Error {
    std::io::Error::other(e.to_string())
}

/// Profiles across the half channel, wall units, wall first.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Profiles {
    pub y_plus: Vec<f64>,
    pub u: Vec<f64>,
    pub rms: Vec<[f64; 3]>,
    /// `<u'v'>+` (negative near the lower wall).
    pub uv: Vec<f64>,
}

/// Draws `png`: the run's profiles `m` (dots) beside the DNS `d` (lines).
pub fn draw(png: &Path, m: &Profiles, d: &Profiles) -> std::io::Result<()> {
    crate::flock::bench::plot::register_font();
    let mut buf = vec![255u8; (W * H * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (left, right) = root.split_horizontally(W / 2);
        mean_panel(&left, m, d)?;
        stress_panel(&right, m, d)?;
        root.present().map_err(err)?;
    }
    let img = image::RgbImage::from_raw(W, H, buf).ok_or_else(|| err("plot buffer size"))?;
    write_atomic(png, |w| {
        img.write_to(w, image::ImageFormat::Png).map_err(err)?;
        Ok(())
    })
}

fn mean_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    m: &Profiles,
    d: &Profiles,
) -> std::io::Result<()> {
    let mut chart = ChartBuilder::on(area)
        .caption("mean velocity, wall units", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d((0.3f64..200.0).log_scale(), 0.0f64..22.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("y+")
        .y_desc("U+")
        .draw()
        .map_err(err)?;
    let dns: Vec<(f64, f64)> = (1..d.y_plus.len()).map(|i| (d.y_plus[i], d.u[i])).collect();
    chart
        .draw_series(LineSeries::new(dns, BLACK.stroke_width(2)))
        .map_err(err)?
        .label("DNS (Moser, Kim & Mansour 1999)")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.stroke_width(2)));
    let law: Vec<(f64, f64)> = (0..=40)
        .map(|i| 5.0 * (200.0f64 / 5.0).powf(i as f64 / 40.0))
        .map(|y| (y, y.ln() / 0.41 + 5.2))
        .collect();
    let grey = RGBColor(150, 150, 150);
    chart
        .draw_series(LineSeries::new(law, grey.stroke_width(1)))
        .map_err(err)?
        .label("log law ln(y+) / 0.41 + 5.2")
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], grey.stroke_width(1)));
    let ours: Vec<(f64, f64)> = (0..m.y_plus.len()).map(|i| (m.y_plus[i], m.u[i])).collect();
    chart
        .draw_series(ours.into_iter().map(|p| Circle::new(p, 3, RED.filled())))
        .map_err(err)?
        .label("murmur")
        .legend(|(x, y)| Circle::new((x + 10, y), 3, RED.filled()));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// One value of a profile at a row.
type Column = Box<dyn Fn(&Profiles, usize) -> f64>;

fn stress_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    m: &Profiles,
    d: &Profiles,
) -> std::io::Result<()> {
    let top = d.y_plus[d.y_plus.len() - 1];
    let mut chart = ChartBuilder::on(area)
        .caption("RMS velocities and -<u'v'>, wall units", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0f64..top, -0.1f64..3.2)
        .map_err(err)?;
    chart.configure_mesh().x_desc("y+").draw().map_err(err)?;
    let series: [(&str, RGBColor, Column); 4] = [
        ("u_rms+", RED, Box::new(|p, i| p.rms[i][0])),
        ("v_rms+", BLUE, Box::new(|p, i| p.rms[i][1])),
        ("w_rms+", GREEN, Box::new(|p, i| p.rms[i][2])),
        ("-<u'v'>+", MAGENTA, Box::new(|p, i| -p.uv[i])),
    ];
    for (name, colour, f) in series {
        let dns: Vec<(f64, f64)> = (0..d.y_plus.len())
            .map(|i| (d.y_plus[i], f(d, i)))
            .collect();
        chart
            .draw_series(LineSeries::new(dns, colour.stroke_width(2)))
            .map_err(err)?
            .label(format!("{name} DNS (line), murmur (dots)"))
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
            });
        let ours: Vec<(f64, f64)> = (0..m.y_plus.len())
            .map(|i| (m.y_plus[i], f(m, i)))
            .collect();
        chart
            .draw_series(ours.into_iter().map(|p| Circle::new(p, 3, colour.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}
