//! Grid-scale noise of a flow, the measure behind the section on grid-scale noise of `docs/fluid/validation.md`:
//! `murmur fluid noise` (hidden) prints it every few steps of a scene, and
//! `host/tests/fluid_noise.rs` bounds it.
//!
//! Over the fluid cells of a range along x whose 26 neighbours are fluid too (every axis wraps,
//! as the lattice does), each field minus its average over the 3 x 3 x 3 box around the cell:
//! a smooth field leaves about a third of its Laplacian (`h^2 / 3 lap u`, tiny where the flow
//! is resolved), a checkerboard `a (-1)^(x + y + z)` leaves `28/27 a`. The root mean square of
//! that residual, for the velocity (its magnitude) and the density, is the noise; the mean
//! velocity of the same cells says whether the flow there is what the boundaries impose.

use super::driver::{self, BackendChoice};
use super::scene::SceneFile;
use super::Fields;
use anyhow::{bail, Result};
use murmur_common::lbm::boundary::{FLUID, KIND_MASK};
use murmur_common::lbm::CollisionModel;
use rayon::prelude::*;
use std::ops::Range;
use std::path::PathBuf;

/// The grid-scale noise of one state over a set of cells (lattice units).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridNoise {
    /// RMS over the cells of `|u - <u>|`, `<.>` the 3 x 3 x 3 box average.
    pub velocity: f64,
    /// RMS over the cells of `rho - <rho>`.
    pub density: f64,
    /// Mean velocity of the cells.
    pub mean_velocity: [f64; 3],
    /// Cells measured: fluid cells of the range whose whole box is fluid.
    pub cells: usize,
}

/// The grid-scale noise of `fields` over the cells with `x` in `xs` ([module](self)); `flags`
/// holds one cell byte per cell (its kind bits are read). Deterministic: planes are summed in
/// order.
pub fn grid_noise(fields: &Fields, flags: &[u8], xs: Range<u32>) -> GridNoise {
    let l = fields.lattice;
    let wrap = |v: u32, d: i32, n: u32| (v as i32 + d).rem_euclid(n as i32) as u32;
    // Per z plane: sum |du|^2, sum drho^2, sum u, cells.
    let planes: Vec<(f64, f64, [f64; 3], usize)> = (0..l.nz)
        .into_par_iter()
        .map(|z| {
            let mut s = (0.0, 0.0, [0.0; 3], 0);
            for y in 0..l.ny {
                for x in xs.start.min(l.nx)..xs.end.min(l.nx) {
                    let (mut box_u, mut box_rho, mut fluid) = ([0.0f64; 3], 0.0f64, true);
                    for dz in -1..=1 {
                        for dy in -1..=1 {
                            for dx in -1..=1 {
                                let c = l.index(
                                    wrap(x, dx, l.nx),
                                    wrap(y, dy, l.ny),
                                    wrap(z, dz, l.nz),
                                );
                                fluid &= flags[c] & KIND_MASK == FLUID;
                                let u = fields.u(c);
                                for a in 0..3 {
                                    box_u[a] += u[a] as f64;
                                }
                                box_rho += fields.rho(c) as f64;
                            }
                        }
                    }
                    if !fluid {
                        continue;
                    }
                    let c = l.index(x, y, z);
                    let u = fields.u(c);
                    for a in 0..3 {
                        s.0 += (u[a] as f64 - box_u[a] / 27.0).powi(2);
                        s.2[a] += u[a] as f64;
                    }
                    s.1 += (fields.rho(c) as f64 - box_rho / 27.0).powi(2);
                    s.3 += 1;
                }
            }
            s
        })
        .collect();
    let (mut du, mut drho, mut mean, mut cells) = (0.0, 0.0, [0.0; 3], 0);
    for (a, b, u, n) in planes {
        du += a;
        drho += b;
        for k in 0..3 {
            mean[k] += u[k];
        }
        cells += n;
    }
    let n = cells.max(1) as f64;
    GridNoise {
        velocity: (du / n).sqrt(),
        density: (drho / n).sqrt(),
        mean_velocity: mean.map(|m| m / n),
        cells,
    }
}

/// ACM-MRT's base rate of the higher orders: a number, or `shear` for the shear rate (the
/// unstable choice near `tau = 1/2`, `docs/fluid/validation.md`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HighRate {
    Rate(f32),
    Shear,
}

fn parse_high_rate(s: &str) -> Result<HighRate, String> {
    if s.eq_ignore_ascii_case("shear") {
        return Ok(HighRate::Shear);
    }
    match s.parse::<f32>() {
        Ok(r) if r > 0.0 && r < 2.0 => Ok(HighRate::Rate(r)),
        _ => Err(format!("expected `shear` or a rate in (0, 2), got `{s}`")),
    }
}

fn parse_range(s: &str) -> Result<Range<u32>, String> {
    let bad = || format!("expected A..B (cells along x, A < B), got `{s}`");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let (a, b): (u32, u32) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a < b {
        Ok(a..b)
    } else {
        Err(bad())
    }
}

#[derive(clap::Args)]
pub struct NoiseArgs {
    /// Scene file, e.g. assets/fluid/sphere-re10000.toml.
    #[arg(value_name = "SCENE.toml")]
    pub scene: PathBuf,
    /// Steps to run [default: the scene's run.steps].
    #[arg(long)]
    pub steps: Option<u64>,
    /// Steps between two measurements.
    #[arg(long, default_value_t = 500)]
    pub every: u64,
    /// Where to run: auto picks CUDA when usable, else the CPU.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendChoice,
    /// Collision model [default: the scene's].
    #[arg(long, value_enum)]
    pub model: Option<CollisionModel>,
    /// The rate of orders 3-6 (RM-MRT; ACM-MRT's base rate) instead of the scene's
    /// lattice.high_rate: a rate in (0, 2), or `shear` for the shear rate (which shows
    /// ACM-MRT's grid-scale noise near `tau = 1/2`).
    #[arg(long, value_name = "RATE|shear", value_parser = parse_high_rate)]
    pub high_rate: Option<HighRate>,
    /// Cells along x to measure, A..B [default: all].
    #[arg(long, value_name = "A..B", value_parser = parse_range)]
    pub x_range: Option<Range<u32>>,
}

/// `murmur fluid noise`: runs a scene (inlets ramped as in a run) and prints its grid-scale
/// noise every `every` steps, relative to the scene's velocity.
pub fn noise_cmd(a: &NoiseArgs) -> Result<()> {
    if a.every == 0 {
        bail!("--every must be at least 1");
    }
    let mut file = SceneFile::load(&a.scene)?;
    if let Some(m) = a.model {
        file.collision = m;
    }
    let scene = file.build()?;
    let mut setup = scene.setup.clone();
    let rates = &mut setup.params.rates;
    match a.high_rate {
        Some(HighRate::Rate(r)) => rates.high = r,
        Some(HighRate::Shear) => rates.high = rates.shear,
        None => {}
    }
    let l = setup.lattice();
    let xs = a.x_range.clone().unwrap_or(0..l.nx);
    if xs.end > l.nx {
        bail!("--x-range {xs:?}: the lattice has {} cells along x", l.nx);
    }
    let steps = a.steps.unwrap_or(scene.file.run.steps);
    let u_ref = scene
        .units
        .velocity_to_lattice(scene.file.physical.velocity);
    let (mut backend, note) = driver::open_backend(a.backend, &setup)?;
    if let Some(n) = note {
        eprintln!("murmur: {n}");
    }
    let r = setup.params.rates;
    println!(
        "{} {} x {} x {}, {}, {}: shear {:.6} bulk {} high {:.6} lambda {}; U = {u_ref:.4} \
         (lattice), x in {}..{}",
        scene.file.name,
        l.nx,
        l.ny,
        l.nz,
        setup.model.name(),
        backend.describe(),
        r.shear,
        r.bulk,
        r.high,
        r.lambda,
        xs.start,
        xs.end
    );
    println!("step  inlet  |u - <u>|/U  |rho - <rho>|  mean ux/U  cells");
    let flags = setup.flags.clone();
    for step in 1..=steps {
        let scale = scene.inlet.scale(step);
        backend.set_inlet_scale(scale);
        backend.step()?;
        if step % a.every == 0 || step == steps {
            let g = grid_noise(&backend.fields()?, &flags, xs.clone());
            println!(
                "{step}  {scale:.3}  {:.3e}  {:.3e}  {:.4}  {}",
                g.velocity / u_ref,
                g.density,
                g.mean_velocity[0] / u_ref,
                g.cells
            );
            if !(g.velocity.is_finite() && g.density.is_finite()) {
                bail!("the flow became non-finite by step {step}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use murmur_common::lbm::Lattice;

    #[test]
    fn a_checkerboard_is_noise_and_a_linear_field_is_not() {
        let l = Lattice::new(6, 6, 4);
        let mut f = Fields::rest(l);
        for c in 0..l.cells() {
            let (x, y, z) = l.coords(c);
            let sign = if (x + y + z) % 2 == 0 { 1.0 } else { -1.0 };
            f.set(c, 1.0 + 1e-3 * sign, [0.05, 2e-3 * sign, 0.0]);
        }
        let flags = vec![FLUID; l.cells()];
        let g = grid_noise(&f, &flags, 0..6);
        assert_eq!(g.cells, l.cells());
        assert!((g.velocity - 28.0 / 27.0 * 2e-3).abs() < 1e-9, "{g:?}");
        // 1 +- 1e-3 in FP32 is exact to 6e-8.
        assert!((g.density - 28.0 / 27.0 * 1e-3).abs() < 1e-7, "{g:?}");
        assert!((g.mean_velocity[0] - 0.05).abs() < 1e-9);
        // A field linear along z (periodic wrap aside: measured away from the seam) is smooth.
        let l = Lattice::new(4, 4, 8);
        let mut f = Fields::rest(l);
        for c in 0..l.cells() {
            let z = l.coords(c).2;
            f.set(c, 1.0, [0.01 * z as f32, 0.0, 0.0]);
        }
        let wall = murmur_common::lbm::CellKind::Wall as u8;
        let flags: Vec<u8> = (0..l.cells())
            .map(|c| {
                if matches!(l.coords(c).2, 0 | 7) {
                    wall
                } else {
                    FLUID
                }
            })
            .collect();
        let g = grid_noise(&f, &flags, 0..4);
        assert_eq!(g.cells, 4 * 4 * 4);
        assert!(g.velocity < 1e-7, "{g:?}");
    }
}
