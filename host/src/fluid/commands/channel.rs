//! `murmur fluid case channel-180`: the turbulent channel at Re_tau 180 against the direct
//! simulation of Moser, Kim & Mansour (1999). It runs the channel scene through `fluid run`
//! (chained through checkpoints: `--checkpoint-every`, `--resume`), or reads the statistics of
//! a run already made (`--profile`), folds the two halves of the profiles, and prints the
//! centre and bulk velocities, the peak of `u_rms` and the mean profile's largest deviation
//! from the DNS in wall units; `--plot` draws them beside the DNS.

use super::channel_plot::{self, Profiles};
use crate::fluid::cli::CaseArgs;
use crate::fluid::scene::SceneFile;
use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};

/// The DNS profiles (wall to centre), wall units.
static DNS_CSV: &str = include_str!("../../../../assets/fluid/reference/chan180-mkm.csv");

/// The DNS's figures the case is judged by, and their tolerances.
pub const DNS_CENTRE: f64 = 18.30;
pub const DNS_BULK: f64 = 15.68;
const CENTRE_TOLERANCE: f64 = 0.03;
const BULK_TOLERANCE: f64 = 0.02;
const PEAK_TOLERANCE: f64 = 0.05;
const PROFILE_TOLERANCE: f64 = 0.02;

/// The DNS's profiles (Moser, Kim & Mansour 1999, Re_tau 178.12).
pub fn dns() -> Profiles {
    let mut p = Profiles::default();
    for line in DNS_CSV.lines() {
        if line.starts_with('#') || line.starts_with("y_over_h") || line.trim().is_empty() {
            continue;
        }
        let v: Vec<f64> = line
            .split(',')
            .map(|x| x.trim().parse().unwrap_or(f64::NAN))
            .collect();
        p.y_plus.push(v[1]);
        p.u.push(v[2]);
        p.rms.push([v[3], v[4], v[5]]);
        p.uv.push(v[6]);
    }
    p
}

/// Linear interpolation of `ys` over increasing `xs` at `x` (clamped at the ends).
fn interpolate(xs: &[f64], ys: &[f64], x: f64) -> f64 {
    let i = xs.partition_point(|&v| v < x);
    if i == 0 {
        return ys[0];
    }
    if i >= xs.len() {
        return ys[xs.len() - 1];
    }
    let t = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
    ys[i - 1] + t * (ys[i] - ys[i - 1])
}

/// What the channel's scene sets: the friction velocity (from the body force, `sqrt(g h)`),
/// the viscosity, the half height and the cell size (m), and the lower wall's plane.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub u_tau: f64,
    pub nu: f64,
    pub half: f64,
    pub dx: f64,
    /// Fluid cells across the channel.
    pub cells: u32,
}

impl Frame {
    /// The frame of the channel scene at `path` (one line on error).
    pub fn of(path: &Path) -> Result<Frame> {
        let file = SceneFile::load(path)?;
        let g = file.body_force.acceleration[0];
        let cells = match (file.domain.cells, file.domain.size) {
            (Some(c), _) => c[1],
            (None, Some(s)) => {
                (s[1] / (file.physical.length / file.lattice.resolution as f64)).round() as u32
            }
            (None, None) => bail!("scene {}: no domain size", path.display()),
        };
        let dx = file.physical.length / file.lattice.resolution as f64;
        let half = cells as f64 * dx / 2.0;
        if g.is_nan() || g <= 0.0 || file.initial.channel.is_none() {
            bail!(
                "scene {}: not a channel scene (it needs initial.channel and a body force along \
                 +x)",
                path.display()
            );
        }
        Ok(Frame {
            u_tau: (g * half).sqrt(),
            nu: file.physical.viscosity,
            half,
            dx,
            cells,
        })
    }
}

/// The run's profiles from its statistics CSV (`y_cell` rows), the two halves folded onto one
/// (the lower's `y` from its wall, the upper's from its own), in wall units.
pub fn measured(csv: &Path, frame: &Frame) -> Result<Profiles> {
    let text = std::fs::read_to_string(csv)
        .with_context(|| format!("cannot read the statistics {}", csv.display()))?;
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let head: Vec<&str> = lines
        .next()
        .ok_or_else(|| anyhow!("{}: empty", csv.display()))?
        .split(',')
        .collect();
    let col = |name: &str| {
        head.iter().position(|h| *h == name).ok_or_else(|| {
            anyhow!(
                "{}: no column {name}: not the profiles across y of a channel (statistics.average \
                 = [\"x\", \"z\"])",
                csv.display()
            )
        })
    };
    let (y, u, ru, rv, rw, uv) = (
        col("y_cell")?,
        col("mean_ux")?,
        col("rms_ux")?,
        col("rms_uy")?,
        col("rms_uz")?,
        col("uv")?,
    );
    if head.contains(&"x_cell") || head.contains(&"z_cell") {
        bail!("{}: profiles must average over x and z", csv.display());
    }
    let n = frame.cells as usize;
    // Sums of the two halves per distance from the wall (cell k: 0 nearest the wall).
    let mut sum = vec![[0.0f64; 6]; n / 2];
    let mut count = vec![0u32; n / 2];
    let (ut, ut2) = (frame.u_tau, frame.u_tau * frame.u_tau);
    for line in lines {
        let v: Vec<f64> = line
            .split(',')
            .map(|x| x.parse().unwrap_or(f64::NAN))
            .collect();
        let j = v[y] as usize;
        if j == 0 || j > n {
            continue;
        }
        // Fluid cells 1..=n; the lower wall at 0.5, the upper at n + 0.5.
        let (k, sign) = if j <= n / 2 {
            (j - 1, 1.0)
        } else {
            (n - j, -1.0)
        };
        if k >= n / 2 {
            continue;
        }
        let row = [
            v[u] / ut,
            v[ru] / ut,
            v[rv] / ut,
            v[rw] / ut,
            sign * v[uv] / ut2,
            1.0,
        ];
        for (s, r) in sum[k].iter_mut().zip(row) {
            *s += r;
        }
        count[k] += 1;
    }
    let mut p = Profiles::default();
    for k in 0..n / 2 {
        if count[k] == 0 {
            continue;
        }
        let c = count[k] as f64;
        let s = sum[k];
        p.y_plus
            .push((k as f64 + 0.5) * frame.dx * frame.u_tau / frame.nu);
        p.u.push(s[0] / c);
        p.rms.push([s[1] / c, s[2] / c, s[3] / c]);
        p.uv.push(s[4] / c);
    }
    if p.y_plus.len() < 4 {
        bail!("{}: too few rows for a channel profile", csv.display());
    }
    Ok(p)
}

/// The case's figures against the DNS.
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    /// `U_c+`: the mean velocity at the centre plane (the cells beside it).
    pub centre: f64,
    /// `U_b+`: the mean over the channel.
    pub bulk: f64,
    /// The peak of `u_rms+` and its `y+`.
    pub peak: (f64, f64),
    /// The DNS's peak of `u_rms+` and its `y+`.
    pub dns_peak: (f64, f64),
    /// The largest `|U+ - U+_DNS| / U+_DNS` for `y+ > 1`, and its `y+`.
    pub profile: (f64, f64),
}

impl Comparison {
    pub fn of(m: &Profiles, d: &Profiles) -> Comparison {
        let last = m.u.len() - 1;
        let bulk = m.u.iter().sum::<f64>() / m.u.len() as f64;
        let peak_of = |p: &Profiles| {
            (0..p.y_plus.len())
                .map(|i| (p.rms[i][0], p.y_plus[i]))
                .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
        };
        let mut profile = (0.0, 0.0);
        for i in 0..m.y_plus.len() {
            if m.y_plus[i] <= 1.0 {
                continue;
            }
            let dns = interpolate(&d.y_plus, &d.u, m.y_plus[i]);
            let e = (m.u[i] - dns).abs() / dns;
            if e > profile.0 {
                profile = (e, m.y_plus[i]);
            }
        }
        Comparison {
            centre: m.u[last],
            bulk,
            peak: peak_of(m),
            dns_peak: peak_of(d),
            profile,
        }
    }

    /// The lines of the table, each with its target and whether it is met.
    pub fn lines(&self) -> Vec<(String, bool)> {
        let rel = |a: f64, b: f64| (a - b) / b;
        let pass = |ok: bool| if ok { "pass" } else { "FAIL" };
        let c = rel(self.centre, DNS_CENTRE);
        let b = rel(self.bulk, DNS_BULK);
        let p = rel(self.peak.0, self.dns_peak.0);
        let rows = [
            (
                format!(
                    "U_c+ {:.3} (DNS {DNS_CENTRE:.2}): {:+.2} %, target within {:.0} %",
                    self.centre,
                    100.0 * c,
                    100.0 * CENTRE_TOLERANCE
                ),
                c.abs() <= CENTRE_TOLERANCE,
            ),
            (
                format!(
                    "U_b+ {:.3} (DNS {DNS_BULK:.2}): {:+.2} %, target within {:.0} %",
                    self.bulk,
                    100.0 * b,
                    100.0 * BULK_TOLERANCE
                ),
                b.abs() <= BULK_TOLERANCE,
            ),
            (
                format!(
                    "peak u_rms+ {:.3} at y+ {:.1} (DNS {:.3} at y+ {:.1}): {:+.2} %, target \
                     within {:.0} %",
                    self.peak.0,
                    self.peak.1,
                    self.dns_peak.0,
                    self.dns_peak.1,
                    100.0 * p,
                    100.0 * PEAK_TOLERANCE
                ),
                p.abs() <= PEAK_TOLERANCE,
            ),
            (
                format!(
                    "mean profile for y+ > 1: largest deviation {:.2} % at y+ {:.1}, target \
                     within {:.0} %",
                    100.0 * self.profile.0,
                    self.profile.1,
                    100.0 * PROFILE_TOLERANCE
                ),
                self.profile.0 <= PROFILE_TOLERANCE,
            ),
        ];
        rows.into_iter()
            .map(|(l, ok)| (format!("{l}: {}", pass(ok)), ok))
            .collect()
    }
}

/// A `fluid run` of the channel scene with the case's flags.
#[derive(clap::Parser)]
struct RunCommand {
    #[command(flatten)]
    run: crate::fluid::cli::RunArgs,
}

/// `murmur fluid case channel-180`.
pub fn channel_case(a: &CaseArgs) -> Result<()> {
    let scene = a
        .scene
        .clone()
        .unwrap_or_else(|| PathBuf::from("assets/fluid/channel-180.toml"));
    let frame = Frame::of(&scene)?;
    let profile = match &a.profile {
        Some(p) => p.clone(),
        None => run(a, &scene)?,
    };
    let m = measured(&profile, &frame)?;
    let d = dns();
    let cmp = Comparison::of(&m, &d);
    println!(
        "channel Re_tau 180 ({}): u_tau {:.4e} m/s (sqrt(g h)), h {:.4e} m = {:.1} cells, {:.2} \
         wall units per cell; statistics {}",
        scene.display(),
        frame.u_tau,
        frame.half,
        frame.half / frame.dx,
        frame.dx * frame.u_tau / frame.nu,
        profile.display()
    );
    for (line, _) in cmp.lines() {
        println!("  {line}");
    }
    println!(
        "reference: Moser, Kim & Mansour (1999), Re_tau 178.12 (assets/fluid/reference/chan180-mkm.csv)"
    );
    if let Some(png) = &a.plot {
        crate::preflight::check_output_file(png)?;
        channel_plot::draw(png, &m, &d)
            .map_err(|e| anyhow!("cannot write {}: {e}", png.display()))?;
        println!("wrote {}", png.display());
    }
    Ok(())
}

/// Runs the channel scene as `fluid run` does; returns its statistics CSV.
fn run(a: &CaseArgs, scene: &Path) -> Result<PathBuf> {
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("channel-180-run"));
    let mut argv: Vec<String> = vec![
        "run".into(),
        scene.display().to_string(),
        "--out".into(),
        out.display().to_string(),
        "--backend".into(),
        clap::ValueEnum::to_possible_value(&a.backend)
            .map_or("auto".into(), |v| v.get_name().to_string()),
        "--storage".into(),
        a.storage.storage.name().into(),
        "--checkpoint-every".into(),
        a.checkpoint_every.to_string(),
    ];
    if let Some(s) = a.steps {
        argv.extend(["--steps".into(), s.to_string()]);
    }
    if let Some(r) = &a.resume {
        argv.extend(["--resume".into(), r.display().to_string()]);
    }
    let cmd = <RunCommand as clap::Parser>::try_parse_from(&argv)?;
    crate::fluid::run::run(&cmd.run, crate::fluid::riders::none)?;
    let name = SceneFile::load(scene)?.name;
    let csv = out.join(format!("{name}_statistics.csv"));
    if !csv.exists() {
        bail!(
            "the run wrote no statistics ({}): its steps ended before statistics.start",
            csv.display()
        );
    }
    Ok(csv)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dns_holds_its_published_figures() {
        let d = dns();
        assert_eq!(d.y_plus.len(), 65);
        let cmp = Comparison::of(&d, &d);
        assert!((cmp.centre - DNS_CENTRE).abs() < 0.01, "{}", cmp.centre);
        assert!((cmp.dns_peak.0 - 2.658).abs() < 0.001 && (cmp.dns_peak.1 - 15.28).abs() < 0.01);
        assert_eq!(cmp.profile.0, 0.0);
        // The trapezoid over y / h (the DNS's Chebyshev points are not uniform in y+).
        let mut bulk = 0.0;
        for i in 1..d.y_plus.len() {
            bulk += 0.5 * (d.u[i] + d.u[i - 1]) * (d.y_plus[i] - d.y_plus[i - 1]);
        }
        bulk /= d.y_plus[d.y_plus.len() - 1];
        assert!((bulk - DNS_BULK).abs() < 0.01, "{bulk}");
    }

    #[test]
    fn interpolation_clamps_and_is_linear() {
        let (x, y) = ([1.0, 2.0, 4.0], [10.0, 20.0, 0.0]);
        assert_eq!(interpolate(&x, &y, 0.0), 10.0);
        assert_eq!(interpolate(&x, &y, 1.5), 15.0);
        assert_eq!(interpolate(&x, &y, 3.0), 10.0);
        assert_eq!(interpolate(&x, &y, 9.0), 0.0);
    }
}
