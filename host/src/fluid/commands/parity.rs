//! CPU against CUDA: the parity scenes, the tolerances and `murmur fluid parity`.

use super::{models, opener};
use crate::fluid::cli::ParityArgs;
use crate::fluid::driver::BackendChoice;
use crate::fluid::forces::ForceSample;
use crate::fluid::validate::Opener;
use crate::fluid::{scene, FluidError, Setup};
use anyhow::{bail, Result};
use murmur_common::lbm::{CollisionModel, Rates, StorageKind, Streaming};

/// Largest relative field difference accepted between the CPU and CUDA backends.
pub const PARITY_TOLERANCE: f64 = 1e-5;
/// Largest relative difference of the solids' forces accepted between the backends.
pub const FORCE_PARITY_TOLERANCE: f64 = 1e-4;

/// `murmur fluid parity`.
pub fn parity(a: &ParityArgs) -> Result<()> {
    let mut cpu = opener(BackendChoice::Cpu, None);
    let mut cuda = opener(BackendChoice::Cuda, None);
    println!(
        "CPU vs CUDA after {} steps: max |a - b| / max |b| of (rho - 1), u and the solids' \
         forces",
        a.steps
    );
    println!("| scene | model | storage | rho | u | force | pass |\n|---|---|---|---|---|---|---|");
    let mut failed = 0;
    let mut worst = (0.0f64, 0.0f64);
    let storages = if a.storage.is_empty() {
        StorageKind::ALL.to_vec()
    } else {
        a.storage.clone()
    };
    let mut rows = Vec::new();
    for &storage in &storages {
        for streaming in [Streaming::Pull, Streaming::InPlace] {
            for model in models(&a.models) {
                for (name, mut setup) in parity_setups(model)? {
                    setup.storage = storage;
                    setup.streaming = Some(streaming);
                    rows.push((name, model, setup));
                }
            }
        }
    }
    {
        for (name, model, setup) in rows {
            let mut fields = Vec::new();
            let mut forces = Vec::new();
            for open in [&mut cpu as &mut Opener, &mut cuda as &mut Opener] {
                let mut b = open(&setup)?;
                for _ in 0..a.steps {
                    b.step()?;
                }
                fields.push(b.fields()?);
                forces.push(b.take_forces()?);
            }
            let (drho, du) = fields[1].max_relative_difference(&fields[0]);
            let df = force_difference(&forces[1], &forces[0]);
            let ok = drho <= PARITY_TOLERANCE
                && du <= PARITY_TOLERANCE
                && df.is_none_or(|d| d <= FORCE_PARITY_TOLERANCE);
            worst.0 = worst.0.max(drho).max(du);
            worst.1 = worst.1.max(df.unwrap_or(0.0));
            failed += !ok as usize;
            println!(
                "| {name} | {} | {} | {} | {drho:.2e} | {du:.2e} | {} | {} |",
                model.name(),
                setup.storage.name(),
                setup.streaming.unwrap_or_default().name(),
                df.map_or("-".to_string(), |d| format!("{d:.2e}")),
                if ok { "yes" } else { "NO" }
            );
        }
    }
    if failed > 0 {
        bail!(
            "CPU and CUDA differ in {failed} rows (fields up to {:.2e}, tolerance \
             {PARITY_TOLERANCE:.0e}; forces up to {:.2e}, tolerance \
             {FORCE_PARITY_TOLERANCE:.0e})",
            worst.0,
            worst.1
        );
    }
    println!(
        "parity ok: fields worst {:.2e} <= {PARITY_TOLERANCE:.0e}, forces worst {:.2e} <= \
         {FORCE_PARITY_TOLERANCE:.0e}",
        worst.0, worst.1
    );
    Ok(())
}

/// Largest relative difference between two force series of the same steps and solids:
/// `max |a - b| / max |b|` over every step, solid and component (force and torque apart);
/// `None` without forces.
pub fn force_difference(a: &[ForceSample], b: &[ForceSample]) -> Option<f64> {
    if b.is_empty() {
        return None;
    }
    if a.len() != b.len() {
        return Some(f64::INFINITY);
    }
    let mut worst = 0.0f64;
    for pick in [|r: &ForceSample| r.force, |r: &ForceSample| r.torque] {
        let scale = b.iter().flat_map(&pick).fold(0.0f64, |m, v| m.max(v.abs()));
        let diff = a
            .iter()
            .zip(b)
            .flat_map(|(x, y)| {
                let (x, y) = (pick(x), pick(y));
                [0, 1, 2].map(|i| (x[i] - y[i]).abs())
            })
            .fold(0.0f64, f64::max);
        if scale > 0.0 {
            worst = worst.max(diff / scale);
        }
    }
    Some(worst)
}

/// Small scenes that exercise every boundary type and the forcing.
pub fn parity_setups(model: CollisionModel) -> Result<Vec<(&'static str, Setup)>, FluidError> {
    let mut duct =
        scene::Geometry::duct([40, 16, 16], 0b100).setup(Rates::from_viscosity(0.02), model)?;
    duct.params.inlet_scale = 0.7;
    // An outlet layer of 8 cells before the outlet (face x+), listed on the GPU.
    duct.mark_outlet_layer(1, 8);
    // Along z the layer's cells away from the walls run in the interior kernel (or their own).
    let mut duct_z =
        scene::Geometry::duct_z([16, 16, 40]).setup(Rates::from_viscosity(0.02), model)?;
    duct_z.mark_outlet_layer(5, 8);
    // The subgrid model where the force's correction matters: a body-force channel.
    let mut les = scene::poiseuille(32, 0.05, 0.1, model)?;
    les.params.smagorinsky = murmur_common::lbm::les::factor(0.16);
    // WALE reads its neighbours' velocities: past a solid between an inlet and an outlet (the
    // boundaries' velocities at non-fluid neighbours), and under a moving lid.
    let wale = murmur_common::lbm::wale::factor(0.5);
    let mut wale_obstacle =
        scene::obstacle([48, 24, 24], [12.0, 12.0, 12.0], 4.0, 0.05, 0.01, model)?;
    wale_obstacle.params.wale = wale;
    let mut wale_cavity = scene::cavity(32, 2, 0.1, 0.032, model)?;
    wale_cavity.params.wale = wale;
    Ok(vec![
        (
            "taylor-green 32x32x8",
            scene::taylor_green(32, 8, 0.05, 0.02, model)?,
        ),
        ("cavity 32 (lid)", scene::cavity(32, 2, 0.1, 0.032, model)?),
        (
            "poiseuille 32 (force)",
            scene::poiseuille(32, 0.05, 0.1, model)?,
        ),
        (
            "obstacle 48x24x24 (inlet/outlet)",
            scene::obstacle([48, 24, 24], [12.0, 12.0, 12.0], 4.0, 0.05, 0.01, model)?,
        ),
        (
            "duct 42x18x18 (parabolic inlet at 0.7, free-slip, outlet layer)",
            duct,
        ),
        ("duct 18x18x42 along z (outlet layer)", duct_z),
        ("poiseuille 32 (force, Smagorinsky C_s 0.16)", les),
        (
            "obstacle 48x24x24 (inlet/outlet, WALE C_w 0.5)",
            wale_obstacle,
        ),
        ("cavity 32 (lid, WALE C_w 0.5)", wale_cavity),
        (
            "sphere moving through a periodic 32^3 box (IB)",
            moving_sphere(model)?,
        ),
        (
            "duct 42x18x18 past a sphere and a mesh box (interpolated bounce-back)",
            cut_solids(model)?,
        ),
    ])
}

/// The duct with two fixed solids of cut links: a sphere (its exact surface) and a tilted box
/// from its triangle mesh, gaps under two cells between them and the walls.
pub fn cut_solids(model: CollisionModel) -> Result<Setup, FluidError> {
    use crate::fluid::ib::shapes::cuboid;
    use crate::fluid::ib::solid::quat_from_axis_angle;
    use crate::fluid::ib::{Motion, Primitive, Solid};
    let mut setup =
        scene::Geometry::duct([40, 16, 16], 0b100).setup(Rates::from_viscosity(0.02), model)?;
    setup.params.inlet_scale = 0.7;
    let invalid = |e: String| FluidError::Invalid(e);
    // A fixed solid sampled from `mesh` at `center`, turned by `q`.
    let fixed = |name: &str, mesh: &crate::fluid::ib::TriangleMesh, center, q| {
        Solid::sampled(
            name,
            mesh,
            center,
            q,
            Motion::Fixed,
            0.5,
            1,
            [0.0; 3],
            1 << 20,
            0.0,
        )
        .map(|(solid, _)| solid)
        .map_err(|e| invalid(e.to_string()))
    };
    let sphere = Primitive::Sphere { radius: 3.3 };
    let ball_mesh = sphere.mesh(0.5).map_err(|e| invalid(e.to_string()))?;
    let mut ball = fixed("sphere", &ball_mesh, [12.3, 8.2, 7.9], [1.0, 0.0, 0.0, 0.0])?;
    ball.shape = Some(sphere);
    let mesh = cuboid([2.6, 1.7, 6.9]).map_err(|e| invalid(e.to_string()))?;
    let q = quat_from_axis_angle([0.3, 0.2, 1.0], 0.4);
    let mut block = fixed("box", &mesh, [25.4, 7.1, 8.6], q)?;
    block.surface = Some(std::sync::Arc::new(mesh));
    let lattice = setup.lattice();
    let periodic = setup.immersed.periodic;
    setup.walls =
        crate::fluid::walls::Walls::build(vec![ball, block], lattice, periodic, &mut setup.flags)
            .map_err(|(k, e)| invalid(format!("cut solid {k}: {e}")))?;
    Ok(setup)
}

/// A sphere of radius 5 crossing a periodic 32^3 box of fluid at rest along a diagonal (ramped
/// over 20 steps, 0.05 cells per step), spinning about z: both motions and the periodic wrap of
/// the samples' stencils.
fn moving_sphere(model: CollisionModel) -> Result<Setup, FluidError> {
    use crate::fluid::ib::{Immersed, Motion, Primitive, Solid};
    let n = 32;
    let mut setup = scene::taylor_green(n, n, 0.0, 0.02, model)?;
    let mesh = Primitive::Sphere { radius: 5.0 }
        .mesh(0.25)
        .map_err(|e| FluidError::Invalid(e.to_string()))?;
    let motion = Motion::Translate {
        velocity: [0.04, 0.025, 0.015],
        ramp: 20.0,
    };
    let (mut solid, _) = Solid::sampled(
        "sphere",
        &mesh,
        [29.0, 15.5, 3.25],
        [1.0, 0.0, 0.0, 0.0],
        motion,
        0.5,
        1,
        [n as f64; 3],
        1 << 20,
        crate::fluid::ib::plan::RETRACTION,
    )
    .map_err(|e| FluidError::Invalid(e.to_string()))?;
    solid.reference_area = std::f64::consts::PI * 25.0;
    let spin = Solid {
        motion: Motion::Rotate {
            axis: [0.0, 0.0, 1.0],
            rate: 0.004,
            ramp: 10.0,
        },
        center: [8.0, 24.0, 16.0],
        name: "spinning sphere".into(),
        ..solid.clone()
    };
    setup.immersed = Immersed {
        solids: vec![solid, spin],
        periodic: [true; 3],
        passes: 0,
        ..Immersed::default()
    };
    Ok(setup)
}
