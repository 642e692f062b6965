//! A flock rule parameter sweep: the cohesion weight (`rule1_scale`) against how the flock
//! gathers. For each weight a flock of the same random start is stepped, then measured: the mean
//! speed, the mean distance to the nearest neighbour and the mean number of neighbours within the
//! cohesion radius (distances across the periodic cube's faces). Printed as a table.
//!
//! ```text
//! cargo run --release --example rule_sweep                 # 1,500 boids, 200 steps, CPU
//! cargo run --release --example rule_sweep -- --n 20000 --steps 2000 --backend cuda
//! ```

use clap::Parser;
use murmur::{Backend, Flock, FlockSettings, Rules};

#[derive(Parser)]
struct Args {
    /// Number of boids.
    #[arg(long, default_value_t = 1_500)]
    n: usize,
    /// Steps per weight.
    #[arg(long, default_value_t = 200)]
    steps: u64,
    /// Half-width of the cube, scene units (small, so that the boids meet).
    #[arg(long, default_value_t = 25.0)]
    scale: f32,
    /// The cohesion weights to try, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "0,0.002,0.01,0.05,0.2")]
    weights: Vec<f32>,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[arg(long, default_value = "cpu")]
    backend: Backend,
}

/// The mean nearest-neighbour distance and the mean number of neighbours within `radius`, with
/// distances wrapped across the faces of `[-scale, scale]^3` (all pairs: for small flocks).
fn gathering(pos: &[[f32; 3]], scale: f32, radius: f32) -> (f64, f64) {
    let side = 2.0 * scale;
    let mut nearest = 0.0;
    let mut within = 0usize;
    for (i, p) in pos.iter().enumerate() {
        let mut best = f32::INFINITY;
        for (j, q) in pos.iter().enumerate() {
            if i == j {
                continue;
            }
            let mut d2 = 0.0;
            for a in 0..3 {
                let mut d = (p[a] - q[a]).abs();
                d = d.min(side - d);
                d2 += d * d;
            }
            best = best.min(d2);
            within += (d2 < radius * radius) as usize;
        }
        nearest += best.sqrt() as f64;
    }
    (nearest / pos.len() as f64, within as f64 / pos.len() as f64)
}

fn main() {
    // The error's one line, not its `Debug` form.
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let a = Args::parse();
    let base = Rules {
        scale: a.scale,
        ..Rules::CIS565
    };
    println!(
        "{} boids in [-{s}, {s}]^3, {} steps per weight",
        a.n,
        a.steps,
        s = a.scale
    );
    println!(
        "{:>12} {:>12} {:>16} {:>22}",
        "rule1_scale", "mean speed", "nearest (mean)", "within rule1_distance"
    );
    for &w in &a.weights {
        let rules = Rules {
            rule1_scale: w,
            ..base
        };
        let mut flock = Flock::new(FlockSettings {
            n: a.n,
            seed: 1,
            rules,
            backend: a.backend,
            ..FlockSettings::default()
        })?;
        flock.step(a.steps)?;
        let vel = flock.velocities()?;
        let speed = vel
            .iter()
            .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt() as f64)
            .sum::<f64>()
            / vel.len() as f64;
        let (nearest, within) = gathering(&flock.positions()?, a.scale, rules.rule1_distance);
        println!("{w:>12} {speed:>12.4} {nearest:>16.4} {within:>22.2}");
    }
    Ok(())
}
