//! `murmur fluid flock-case`: one of the coupled flock's validation cases at a size of the
//! user's choosing (the rows of `fluid validate`, which runs them at fixed sizes).

use super::validate::{
    inertial_case, momentum_case, poiseuille_case, taylor_green_case, torus_case,
};
use crate::backend::BackendChoice;
use crate::fluid::validate::{table, Opener};
use crate::fluid::FluidError;
use anyhow::{bail, Result};

/// A validation case of the coupled flock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum FlockCase {
    /// An inertial particle released at rest in a uniform flow (one-way): its velocity against
    /// `U (1 - exp(-t / tau_p))`. `--substeps`: substeps per fluid step [default 1].
    Inertial,
    /// Tracers in a steady Poiseuille channel against the analytic profile, over 5 channel
    /// heights. `--size`: the channel's height in cells [default 64].
    Poiseuille,
    /// Tracers in the decaying Taylor-Green vortex on their streamlines. `--size`: cells along
    /// each axis [default 64]; `--steps` [default 4000].
    TaylorGreen,
    /// Two-way coupling's momentum budget in a periodic box with a mean flow. `--size` [default
    /// 16], `--boids` [default 1000], `--steps` [default 1000].
    Momentum,
    /// Boids avoiding the rotating torus: boids inside it at any step. `--coarsen` [default 4],
    /// `--boids` [default 10000], `--steps` [default 500].
    Torus,
    /// A scene's flocks on N CPU ranks against one lattice (boids by id, the air cell by
    /// cell). `--scene` [default: the shipped flock-tower with its flock spread through the
    /// channel], `--ranks` [default 3],
    /// `--coarsen` [default 4], `--boids` per flock [default 5000], `--steps` [default 20].
    Ranks,
}

/// `murmur fluid flock-case`.
#[derive(clap::Args, Clone, Debug)]
pub struct FlockCaseArgs {
    #[arg(value_enum)]
    pub case: FlockCase,
    /// Cells: the channel's height (poiseuille) or the box's side (taylor-green, momentum).
    #[arg(long, value_parser = clap::value_parser!(u32).range(8..=1024))]
    pub size: Option<u32>,
    /// Boids (momentum, torus; ranks: per flock).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    pub boids: Option<u64>,
    /// Fluid steps (taylor-green, momentum, torus, ranks).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub steps: Option<u64>,
    /// The scene at 1/N of its resolution (torus: 1 is its 256 x 128 x 128 cells; ranks).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=8))]
    pub coarsen: Option<u32>,
    /// Substeps per fluid step (inertial).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub substeps: Option<u32>,
    /// CPU ranks (ranks).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub ranks: Option<u32>,
    /// A scene file with [[flocks]] (ranks).
    #[arg(long, value_name = "SCENE.toml")]
    pub scene: Option<std::path::PathBuf>,
    /// Where the fluid and the flock run (the ranks case runs on the CPU).
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
}

impl FlockCaseArgs {
    /// The options `case` takes; any other given is refused.
    fn check(&self) -> Result<()> {
        let takes: &[&str] = match self.case {
            FlockCase::Inertial => &["substeps"],
            FlockCase::Poiseuille => &["size"],
            FlockCase::TaylorGreen => &["size", "steps"],
            FlockCase::Momentum => &["size", "boids", "steps"],
            FlockCase::Torus => &["coarsen", "boids", "steps"],
            FlockCase::Ranks => &["scene", "ranks", "coarsen", "boids", "steps"],
        };
        let given = [
            ("size", self.size.is_some()),
            ("boids", self.boids.is_some()),
            ("steps", self.steps.is_some()),
            ("coarsen", self.coarsen.is_some()),
            ("substeps", self.substeps.is_some()),
            ("ranks", self.ranks.is_some()),
            ("scene", self.scene.is_some()),
        ];
        for (name, on) in given {
            if on && !takes.contains(&name) {
                bail!(
                    "--{name} does not apply to the {} case (it takes {})",
                    self.case_name(),
                    takes
                        .iter()
                        .map(|t| format!("--{t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
            }
        }
        Ok(())
    }

    fn case_name(&self) -> &'static str {
        match self.case {
            FlockCase::Inertial => "inertial",
            FlockCase::Poiseuille => "poiseuille",
            FlockCase::TaylorGreen => "taylor-green",
            FlockCase::Momentum => "momentum",
            FlockCase::Torus => "torus",
            FlockCase::Ranks => "ranks",
        }
    }
}

/// Runs `a`'s case and prints its row; fails when it misses its target.
pub fn flock_case(a: &FlockCaseArgs) -> Result<()> {
    a.check()?;
    if a.case == FlockCase::Ranks && a.backend == BackendChoice::Cuda {
        bail!("the ranks case runs CPU ranks: leave out --backend cuda");
    }
    let choice = a.backend;
    let mut notes = Vec::new();
    let mut open = |setup: &crate::fluid::Setup| -> Result<_, FluidError> {
        let (b, note) = crate::fluid::driver::open_backend(choice, setup)?;
        if let Some(n) = note {
            notes.push(n);
        }
        Ok(b)
    };
    let open = &mut open as &mut Opener;
    let r = match a.case {
        FlockCase::Inertial => inertial_case(open, a.substeps.unwrap_or(1))?,
        FlockCase::Poiseuille => poiseuille_case(open, a.size.unwrap_or(64))?,
        FlockCase::TaylorGreen => {
            taylor_green_case(open, a.size.unwrap_or(64), a.steps.unwrap_or(4000))?
        }
        FlockCase::Momentum => momentum_case(
            open,
            a.size.unwrap_or(16),
            a.boids.unwrap_or(1000) as usize,
            a.steps.unwrap_or(1000),
        )?,
        FlockCase::Torus => torus_case(
            open,
            a.coarsen.unwrap_or(4),
            a.boids.unwrap_or(10_000),
            a.steps.unwrap_or(500),
            true,
        )?,
        FlockCase::Ranks => {
            let text = match &a.scene {
                Some(p) => std::fs::read_to_string(p)
                    .map_err(|e| anyhow::anyhow!("cannot read scene {}: {e}", p.display()))?,
                None => super::ranks_case::tower(false),
            };
            super::ranks_case::ranks_case(
                &text,
                a.ranks.unwrap_or(3) as usize,
                a.coarsen.unwrap_or(4),
                Some(a.boids.unwrap_or(5000)),
                a.steps.unwrap_or(20),
            )?
        }
    };
    for n in notes.iter().take(1) {
        eprintln!("murmur: {n}");
    }
    print!("{}", table(std::slice::from_ref(&r)));
    if !r.passed() {
        bail!("the {} case missed its target", a.case_name());
    }
    Ok(())
}
