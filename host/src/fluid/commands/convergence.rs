//! `murmur fluid convergence`: the drag of a DFG cylinder case over a ladder of resolutions,
//! averaged over sub-cell positions of the cylinder, against the reference value, and the
//! observed order of convergence by least squares over every resolution.

use super::opener;
use crate::fluid::cli::StorageArgs;
use crate::fluid::driver::BackendChoice;
use crate::fluid::ib::validate::{dfg, Dfg, DfgRun};
use crate::fluid::scene::file::SolidBoundary;
use crate::fluid::validate::Opener;
use anyhow::{bail, Result};
use murmur_common::lbm::CollisionModel;
use std::io::Write;
use std::path::PathBuf;

pub use crate::fluid::ib::validate::{REFERENCE_2D_1, REFERENCE_3D_1Z};

/// A case of the ladder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LadderCase {
    /// DFG 2D-1: Re 20, steady, one periodic cell deep (C_D 5.57954).
    #[value(name = "dfg-2d-1")]
    Dfg2d1,
    /// DFG 3D-1Z: Re 20 in a square channel (C_D 6.18533).
    #[value(name = "dfg-3d-1z")]
    Dfg3d1z,
}

impl LadderCase {
    fn dfg(self) -> Dfg {
        match self {
            LadderCase::Dfg2d1 => Dfg::TwoD1,
            LadderCase::Dfg3d1z => Dfg::ThreeD1Z,
        }
    }

    pub fn reference(self) -> f64 {
        match self {
            LadderCase::Dfg2d1 => REFERENCE_2D_1,
            LadderCase::Dfg3d1z => REFERENCE_3D_1Z,
        }
    }
}

/// How the lattice velocity follows the resolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Scaling {
    /// Diffusive: the lattice velocity falls as 1 / D (the Mach error vanishes with the grid;
    /// the steps grow as D^2).
    Diffusive,
    /// The same lattice velocity at every D (a Mach floor: the error stops falling where the
    /// compressibility error dominates).
    Acoustic,
}

/// `murmur fluid convergence`.
#[derive(clap::Args)]
pub struct ConvergenceArgs {
    #[arg(value_enum)]
    pub case: LadderCase,
    /// Cells per diameter, the ladder's rungs (the channel is 4.1 D high: a whole number of
    /// cells for D a multiple of 10).
    #[arg(long, value_delimiter = ',', default_value = "10,20,30,40")]
    pub cells_per_d: Vec<u32>,
    /// Sub-cell positions of the cylinder per rung: its centre moved by k / N of a cell along
    /// x and y, k = 0 .. N - 1; the rung's drag is their mean.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub offsets: u32,
    /// Lattice velocity of the peak inflow at the first rung.
    #[arg(long, default_value_t = 0.05)]
    pub u_lb: f64,
    /// How the lattice velocity follows D.
    #[arg(long, value_enum, default_value = "diffusive")]
    pub scaling: Scaling,
    /// Physical time simulated per run, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub seconds: f64,
    /// Collision model.
    #[arg(long, value_enum, default_value = "acm-mrt")]
    pub model: CollisionModel,
    /// How the cylinder meets the fluid.
    #[arg(long, value_enum, default_value = "immersed")]
    pub boundary: SolidBoundary,
    #[command(flatten)]
    pub immersed: crate::fluid::cli::ImmersedArgs,
    /// Where to run.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    #[command(flatten)]
    pub storage: StorageArgs,
    /// Also write the table as CSV (one row per run, then one per rung).
    #[arg(long, value_name = "FILE.csv")]
    pub csv: Option<PathBuf>,
}

/// The observed order of convergence of `errors` (relative, any sign) over `d` (cells per
/// diameter): minus the slope of `ln |e|` against `ln D` by least squares. `None` with fewer
/// than two rungs or a zero error.
pub fn observed_order(d: &[f64], errors: &[f64]) -> Option<f64> {
    if d.len() < 2 || d.len() != errors.len() || errors.contains(&0.0) {
        return None;
    }
    let x: Vec<f64> = d.iter().map(|v| v.ln()).collect();
    let y: Vec<f64> = errors.iter().map(|e| e.abs().ln()).collect();
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxy: f64 = x.iter().zip(&y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let sxx: f64 = x.iter().map(|a| (a - mx).powi(2)).sum();
    (sxx > 0.0).then(|| -sxy / sxx)
}

pub fn convergence(a: &ConvergenceArgs) -> Result<()> {
    if a.cells_per_d.is_empty() || a.cells_per_d.iter().any(|&d| d < 4) {
        bail!("--cells-per-d needs at least one resolution of 4 or more cells");
    }
    if !(a.u_lb > 0.0 && a.u_lb < 0.3) {
        bail!("--u-lb must be within (0, 0.3)");
    }
    if !(a.seconds > 0.0 && a.seconds.is_finite()) {
        bail!("--seconds must be a positive number");
    }
    if let Some(p) = &a.csv {
        crate::preflight::check_output_file(p)?;
    }
    let tuning = a.immersed.tuning(a.boundary)?;
    let case = a.case.dfg();
    let reference = a.case.reference();
    let d0 = a.cells_per_d[0] as f64;
    let mut open = opener(a.backend, Some(a.storage));
    let mut csv = String::from("cells_per_d,u_lb,offset,c_d,error,steps,seconds\n");
    let mut rungs = Vec::new();
    println!(
        "{}, {}, {}{}, {} scaling, {} sub-cell position(s) per rung, {} s simulated per run; \
         reference C_D {reference} (Bayraktar, Mierka & Turek 2012)",
        case.name(),
        a.model.name(),
        a.boundary.name(),
        if a.boundary == SolidBoundary::Immersed {
            format!(" ({})", tuning.describe())
        } else {
            String::new()
        },
        match a.scaling {
            Scaling::Diffusive => "diffusive",
            Scaling::Acoustic => "acoustic",
        },
        a.offsets,
        a.seconds
    );
    println!("| D | u_lb | C_D (mean) | spread | error | steps per run | time |");
    println!("|---|---|---|---|---|---|---|");
    for &d in &a.cells_per_d {
        let u_lb = match a.scaling {
            Scaling::Diffusive => a.u_lb * d0 / d as f64,
            Scaling::Acoustic => a.u_lb,
        };
        let mut cds = Vec::new();
        let (mut steps, mut wall) = (0, 0.0);
        for k in 0..a.offsets {
            let o = k as f64 / a.offsets as f64;
            let run = DfgRun {
                case,
                cells_per_d: d,
                u_lb,
                seconds: a.seconds,
                model: a.model,
                offset: [o, o],
                boundary: a.boundary,
                tuning,
            };
            let r = dfg(run, &mut open as &mut Opener)?;
            csv.push_str(&format!(
                "{d},{u_lb},{o},{},{},{},{:.2}\n",
                r.cd,
                r.cd / reference - 1.0,
                r.steps,
                r.wall_s
            ));
            cds.push(r.cd);
            steps = r.steps;
            wall += r.wall_s;
        }
        let mean = cds.iter().sum::<f64>() / cds.len() as f64;
        let spread = cds.iter().cloned().fold(f64::NEG_INFINITY, f64::max)
            - cds.iter().cloned().fold(f64::INFINITY, f64::min);
        let error = mean / reference - 1.0;
        println!(
            "| {d} | {u_lb:.5} | {mean:.5} | {spread:.5} | {:+.3} % | {steps} | {wall:.1} s |",
            100.0 * error
        );
        rungs.push((d as f64, error));
    }
    let (d, e): (Vec<f64>, Vec<f64>) = rungs.iter().cloned().unzip();
    match observed_order(&d, &e) {
        Some(p) => println!(
            "observed order (least squares of ln |error| on ln D over {} rungs): {p:.2}",
            d.len()
        ),
        None => println!("observed order: needs two or more rungs with a non-zero error"),
    }
    if let Some(p) = &a.csv {
        crate::atomic_file::write_atomic(p, |w| w.write_all(csv.as_bytes()))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_of_a_power_law_is_its_exponent() {
        let d = [10.0, 20.0, 30.0, 40.0];
        let e: Vec<f64> = d.iter().map(|x: &f64| -0.3 * x.powf(-1.7)).collect();
        let p = observed_order(&d, &e).unwrap();
        assert!((p - 1.7).abs() < 1e-12, "{p}");
        // A single rung, or an exact rung, has no order.
        assert!(observed_order(&d[..1], &e[..1]).is_none());
        assert!(observed_order(&[10.0, 20.0], &[0.1, 0.0]).is_none());
    }
}
