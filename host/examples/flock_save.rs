//! A flock stepped and saved as a `.npz` snapshot, then loaded back and checked.
//!
//! ```text
//! cargo run --release --example flock_save                       # 2,000 boids, CPU, 100 steps
//! cargo run --release --example flock_save -- --n 1000000 --steps 1000 --backend cuda
//! ```
//!
//! The snapshot holds `pos` (N, 3) f32, `vel` (N, 3) f32 and `id` (N,) u32, ordered by id: NumPy
//! reads it (`np.load`), and `murmur flock run --init` continues from it.

use clap::Parser;
use murmur::{Backend, Flock, FlockSettings};
use std::path::PathBuf;

#[derive(Parser)]
struct Args {
    /// Number of boids.
    #[arg(long, default_value_t = 2_000)]
    n: usize,
    /// Steps before the snapshot.
    #[arg(long, default_value_t = 100)]
    steps: u64,
    /// Seed of the random start.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[arg(long, default_value = "cpu")]
    backend: Backend,
    /// The snapshot to write (default: `murmur-flock.npz` in the system's temporary folder).
    #[arg(long)]
    out: Option<PathBuf>,
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
    let settings = FlockSettings {
        n: a.n,
        seed: a.seed,
        backend: a.backend,
        ..FlockSettings::default()
    };
    let mut flock = Flock::new(settings.clone())?;
    if let Some(why) = flock.fallback() {
        eprintln!("note: {why}");
    }
    println!("{} boids on {}", flock.len(), flock.describe());
    let t = std::time::Instant::now();
    flock.step(a.steps)?;
    flock.synchronize()?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} steps in {secs:.3} s ({:.1} steps/s)",
        a.steps,
        a.steps as f64 / secs
    );

    let vel = flock.velocities()?;
    let mean_speed = vel
        .iter()
        .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt() as f64)
        .sum::<f64>()
        / vel.len() as f64;
    println!("mean speed {mean_speed:.4} scene units per time unit");

    let out = a
        .out
        .unwrap_or_else(|| std::env::temp_dir().join("murmur-flock.npz"));
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    flock.save(&out)?;
    println!("saved {}", out.display());

    // Loaded back, the snapshot is the same flock, and steps on as it would have, up to the last
    // bits: the neighbour sums follow the boids' order in memory (cell order after a step, id
    // order after a load), and float sums in another order round differently.
    let mut back = Flock::load(&out, settings)?;
    assert_eq!(back.positions()?, flock.positions()?);
    flock.step(1)?;
    back.step(1)?;
    let (dp, dv) = back.state()?.max_difference(&flock.state()?);
    println!(
        "loaded it back: the same state; one more step on each differs by at most {dp:.1e} in \
         position and {dv:.1e} in velocity"
    );
    Ok(())
}
