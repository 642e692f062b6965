//! A fluid scene built in code (no TOML): 2D flow past a circular cylinder at Re 100 in a
//! free-slip channel, the cylinder an immersed open tube through the one-cell periodic depth. It
//! prints the drag and lift coefficients every `--every` steps (the fluid records them every
//! step) and the mean drag coefficient over the second half of the run.
//!
//! ```text
//! cargo run --release --example fluid_in_code                     # 16 cells across, CPU
//! cargo run --release --example fluid_in_code -- --resolution 40 --steps 40000 --backend cuda
//! ```
//!
//! The short default run (6.25 s, about 6 diameters of inflow, the flow started at the inflow's
//! velocity) shows the start-up: the pressure waves of the impulsive start make the drag swing
//! before it settles, and no wake sheds yet. Run longer for the vortex street.

use clap::Parser;
use murmur::scene::{
    CollisionModel, DomainConfig, FaceConfig, Faces, LatticeConfig, Physical, SceneFile,
    ShapeConfig, SolidConfig,
};
use murmur::{Backend, Fluid};

#[derive(Parser)]
struct Args {
    /// Lattice cells across the cylinder's diameter.
    #[arg(long, default_value_t = 16)]
    resolution: u32,
    /// Steps to run.
    #[arg(long, default_value_t = 2_000)]
    steps: u64,
    /// Steps between two printed force rows.
    #[arg(long, default_value_t = 100)]
    every: u64,
    /// `auto`, `cpu`, `cuda` or `cuda:N`.
    #[arg(long, default_value = "cpu")]
    backend: Backend,
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
    // Diameter 1 m, inflow 1 m/s, nu 0.01 m^2/s: Re 100. A 12 m x 5 m channel, one cell deep.
    let dx = 1.0 / a.resolution as f64;
    let mut scene = SceneFile::new(
        "cylinder-in-code",
        Physical::new(1.0, 1.0, 0.01),
        LatticeConfig::new(a.resolution).with_velocity(0.05),
        DomainConfig::size([12.0, 5.0, dx]),
    )
    .with_collision(CollisionModel::AcmMrt)
    .with_faces(Faces::channel_x(
        FaceConfig::FreeSlip {},
        FaceConfig::Periodic {},
    ))
    // 0.1 m off the centreline, so that the wake, once it sheds, is not symmetric.
    .with_solid(
        SolidConfig::new(ShapeConfig::tube(0.5, dx), [3.0, 2.6, dx / 2.0]).named("cylinder"),
    );
    scene.initial.velocity = [1.0, 0.0, 0.0];
    println!("Re {:.0}", scene.physical.reynolds());

    let mut fluid = Fluid::from_scene(scene, a.backend)?;
    for w in fluid.warnings() {
        eprintln!("warning: {w}");
    }
    let [nx, ny, nz] = fluid.shape();
    println!(
        "{nx} x {ny} x {nz} cells on {}, dt {:.3e} s",
        fluid.describe(),
        fluid.units().dt
    );

    let t = std::time::Instant::now();
    fluid.step(a.steps)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{} steps in {secs:.2} s ({:.1} million cell updates per second)",
        a.steps,
        (nx * ny * nz) as f64 * a.steps as f64 / secs / 1e6
    );

    let f = &fluid.forces()[0];
    println!("{:>8} {:>9} {:>9} {:>9}", "step", "time s", "cd", "cl");
    for i in (0..f.step.len()).filter(|&i| f.step[i] % a.every.max(1) == 0) {
        println!(
            "{:>8} {:>9.4} {:>9.4} {:>9.4}",
            f.step[i], f.time_s[i], f.cd[i], f.cl[i]
        );
    }
    let half = &f.cd[f.cd.len() / 2..];
    let mean = half.iter().sum::<f64>() / half.len() as f64;
    println!(
        "mean cd over the last {} steps (t >= {:.2} s): {mean:.4}",
        half.len(),
        f.time_s[f.cd.len() / 2]
    );
    if !mean.is_finite() {
        return Err("the drag is not finite".into());
    }
    Ok(())
}
