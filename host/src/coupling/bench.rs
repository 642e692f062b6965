//! `murmur fluid coupling-bench`: what a coupled flock costs a fluid step. A periodic box of
//! `size^3` cells (a Taylor-Green flow, BGK) and `boids` boids spread through it (rules on,
//! two-way by default, one substep per step), timed three ways on one backend: the fluid's
//! steps alone (no band), the flock's substeps alone (in the air of the first step, held), and
//! the coupled steps (the fluid's step with the boids' pushes, its fields to the flock's air,
//! the substep, the pushes to the fluid). The ratio is the coupled step over the sum of the two
//! alone (1 when coupling costs nothing beyond its parts).

use super::gpu_ride::GpuRide;
use super::riding::{Riding, RidingFlock};
use super::CpuBoids;
use crate::backend::BackendChoice;
use crate::fluid::{scene, FluidError};
use anyhow::Result;
use murmur_common::coupling::{BoidBox, Rates};
use murmur_common::lbm::CollisionModel;
use murmur_common::Vec3;
use std::time::Instant;

/// `murmur fluid coupling-bench`.
#[derive(clap::Args, Clone, Debug)]
pub struct CouplingBenchArgs {
    /// Cells along each axis of the periodic box.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(16..=1024))]
    pub size: u32,
    /// Boids, spread uniformly through the box.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub boids: u64,
    /// Timed steps of each of the three.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: u64,
    /// Untimed steps before each.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// Where the fluid and the flock run (the flock on the fluid's GPU with CUDA).
    #[arg(long, default_value = "cuda")]
    pub backend: BackendChoice,
    /// Whether the boids push back on the air (two-way: mass 0.2 of a cell's air, response
    /// time 4 steps) or only ride it (one-way: tracers that obey the rules).
    #[arg(long, value_enum, default_value = "two-way")]
    pub coupling: super::spec::Way,
}

/// The bench's figures (ms per step, wall clock with the device idle at both ends).
#[derive(Clone, Debug)]
pub struct CouplingFigures {
    pub fluid_ms: f64,
    pub flock_ms: f64,
    pub coupled_ms: f64,
    /// The fluid's steps each followed by the flock's air (its fields computed into the
    /// flock's buffer): what the air alone costs beside `fluid_ms` (`None` on the CPU).
    pub fluid_air_ms: Option<f64>,
    /// The fluid's own stages in the coupled steps (mean ms per step; their events, on the GPU).
    pub fluid_stages: Vec<(&'static str, f64)>,
}

impl CouplingFigures {
    /// The coupled step over the fluid's and the flock's steps alone.
    pub fn ratio(&self) -> f64 {
        self.coupled_ms / (self.fluid_ms + self.flock_ms)
    }
}

/// The flock of the bench: `n` boids in the box of `size` cells, positions from a fixed
/// sequence, rules with radii of a few cells; two-way, boids of mass 0.2 (a cell's air is 1)
/// with a response time of 4 steps.
fn flock(size: u32, n: u64, way: super::spec::Way) -> Result<CpuBoids, FluidError> {
    let s = size as f32;
    let at = |i: u64, k: u32| murmur_common::rng::uniform(0x5eed + k as u64, i) * s;
    let pos: Vec<Vec3> = (0..n)
        .map(|i| Vec3::new(at(i, 0), at(i, 1), at(i, 2)))
        .collect();
    let rates = Rates {
        rule: [0.01, 0.1, 0.05],
        distance: [2.0, 1.0, 2.0],
        max_speed: 0.02,
    };
    let b = BoidBox {
        lo: [-0.5; 3],
        hi: [s - 0.5; 3],
        periodic: 0b111,
        through: 0,
    };
    let pos = pos
        .into_iter()
        .map(|p| p - Vec3::splat(0.5))
        .collect::<Vec<_>>();
    let err = |e: super::BoidsError| FluidError::Invalid(e.to_string());
    match way {
        super::spec::Way::OneWay => {
            CpuBoids::new(pos, vec![Vec3::ZERO; n as usize], rates, 1.0, 0.0, b).map_err(err)
        }
        super::spec::Way::TwoWay => {
            CpuBoids::new(pos, vec![Vec3::ZERO; n as usize], rates, 1.0, 4.0, b)
                .and_then(|f| f.two_way(0.2))
                .map_err(err)
        }
    }
}

/// What [`timed`] asks of its step function.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Do {
    /// One step.
    Step,
    /// Wait for the device.
    Wait,
    /// The warm-up is done (and waited for): reset any timers.
    Warmed,
}

/// Milliseconds per step of `go` (`go(Do::Step)` one step): `a.warmup` steps, then `a.steps`
/// timed.
fn timed(
    a: &CouplingBenchArgs,
    go: &mut dyn FnMut(Do) -> Result<(), FluidError>,
) -> Result<f64, FluidError> {
    for _ in 0..a.warmup {
        go(Do::Step)?;
    }
    go(Do::Wait)?;
    go(Do::Warmed)?;
    let t0 = Instant::now();
    for _ in 0..a.steps {
        go(Do::Step)?;
    }
    go(Do::Wait)?;
    Ok(t0.elapsed().as_secs_f64() * 1e3 / a.steps as f64)
}

/// Runs the bench (the module docs).
pub fn bench(a: &CouplingBenchArgs) -> Result<CouplingFigures, FluidError> {
    let setup = scene::taylor_green(a.size, a.size, 0.05, 0.01, CollisionModel::Bgk)?;
    let (mut fluid, note) = crate::fluid::driver::open_backend(a.backend, &setup)?;
    if let Some(n) = note {
        eprintln!("murmur: {n}");
    }
    println!(
        "coupling bench: {0}^3 cells (BGK, periodic), {1} boids, {2}, 1 substep, {3}, {4} \
         timed steps",
        a.size,
        a.boids,
        match a.coupling {
            super::spec::Way::OneWay => "one-way",
            super::spec::Way::TwoWay => "two-way",
        },
        fluid.describe(),
        a.steps
    );
    // The fluid alone first, before the flock's pushes give it a band.
    let fluid_ms = timed(a, &mut |d| match d {
        Do::Step => fluid.step(),
        Do::Wait => fluid.synchronize(),
        Do::Warmed => Ok(()),
    })?;
    let boids = flock(a.size, a.boids, a.coupling)?;
    let mut ride = Riding::of(
        &setup,
        fluid.as_mut(),
        vec![RidingFlock { boids, substeps: 1 }],
    )?;
    let mut gpu = GpuRide::open(&setup, fluid.as_mut(), &ride.flocks, ride.before())?;
    let none = |_: f64| Vec::new();
    // The flock alone first, in the air of the fluid's state now (the same fields twice).
    let held = ride.before().clone();
    let flock_ms = match gpu.as_mut() {
        Some(g) => {
            g.hold(&held)?;
            timed(a, &mut |d| match d {
                Do::Step => g.substeps(&none),
                Do::Wait => g.synchronize(),
                Do::Warmed => Ok(()),
            })?
        }
        None => timed(a, &mut |d| {
            if d == Do::Step {
                ride.substeps_in(&held, &none)?;
            }
            Ok(())
        })?,
    };
    // The fluid with the air fetched after each step (no flock moves, no pushes).
    let fluid_air_ms = match gpu.as_mut() {
        Some(g) => Some(timed(a, &mut |d| match d {
            Do::Step => {
                fluid.step()?;
                g.fetch_air(fluid.as_mut()).map(|_| ())
            }
            Do::Wait => fluid.synchronize().and_then(|_| g.synchronize()),
            Do::Warmed => Ok(()),
        })?),
        None => None,
    };
    let coupled_ms = match gpu.as_mut() {
        Some(g) => {
            g.restart(&fluid.fields()?)?;
            timed(a, &mut |d| match d {
                Do::Step => {
                    fluid.step()?;
                    g.ride(fluid.as_mut(), &none)
                }
                Do::Wait => fluid.synchronize().and_then(|_| g.synchronize()),
                Do::Warmed => {
                    fluid.reset_times();
                    Ok(())
                }
            })?
        }
        None => timed(a, &mut |d| match d {
            Do::Step => {
                fluid.step()?;
                ride.ride(fluid.as_mut(), &none)
            }
            Do::Wait => fluid.synchronize(),
            Do::Warmed => {
                fluid.reset_times();
                Ok(())
            }
        })?,
    };
    Ok(CouplingFigures {
        fluid_ms,
        flock_ms,
        coupled_ms,
        fluid_air_ms,
        fluid_stages: fluid.times()?.mean_ms(),
    })
}

/// `murmur fluid coupling-bench`: the three figures and the ratio.
pub fn bench_cmd(a: &CouplingBenchArgs) -> Result<()> {
    let f = bench(a)?;
    let cells = (a.size as f64).powi(3);
    println!(
        "fluid step alone:  {:.4} ms ({:.0} MLUPs/s)",
        f.fluid_ms,
        cells / f.fluid_ms / 1e3
    );
    println!(
        "flock step alone:  {:.4} ms ({:.1} ns per boid)",
        f.flock_ms,
        f.flock_ms * 1e6 / a.boids as f64
    );
    if let Some(air) = f.fluid_air_ms {
        println!(
            "fluid step + air:  {:.4} ms (the air: {:.4} ms, the fields of every cell computed \
             into the flock's air)",
            air,
            air - f.fluid_ms
        );
    }
    println!("coupled step:      {:.4} ms", f.coupled_ms);
    let stages: Vec<String> = f
        .fluid_stages
        .iter()
        .map(|(n, ms)| format!("{n} {ms:.4}"))
        .collect();
    println!("  its fluid stages (ms): {}", stages.join(", "));
    println!(
        "ratio coupled / (fluid + flock): {:.3} (target <= 1.25)",
        f.ratio()
    );
    println!(
        "memory: {} B per boid on the GPU (the flock; {} more two-way, its impulse sums), {} B \
         per cell for its air (two fields and the fluid mask); two-way, the fluid's pushes {} B \
         per boid and its band {} B per cell it covers (up to every cell) plus {:.2} B per cell \
         for the band's table",
        super::cuda::BYTES_PER_BOID,
        super::cuda::PUSH_BYTES_PER_BOID,
        super::cuda::AirFields::bytes(1),
        12 + 24,
        murmur_common::lbm::ib::band::slot::FLOATS * 4
            + murmur_common::lbm::ib::band::slot::PASS_VALUES * 8,
        (4.0 + 8.0) / murmur_common::lbm::ib::band::BRICK_CELLS as f64
    );
    Ok(())
}
