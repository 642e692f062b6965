//! Velocity inlet and pressure outlet: a duct driven through its inlet reaches a steady state in
//! which the same mass flux crosses every plane and the outlet holds its density.

use murmur::internals::fluid::scene;
use murmur_common::lbm::CollisionModel;

#[test]
fn duct_flux_is_the_same_through_every_plane() {
    for model in [CollisionModel::Bgk, CollisionModel::AcmMrt] {
        let (nx, ny, nz, u_in) = (40u32, 12u32, 12u32, 0.05f32);
        // No sphere: radius 0 puts it nowhere.
        let setup =
            scene::obstacle([nx, ny, nz], [-10.0, -10.0, -10.0], 0.0, u_in, 0.05, model).unwrap();
        let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
        let steps = 3000;
        for _ in 0..steps {
            b.step().unwrap();
        }
        let f = b.fields().unwrap();
        let l = setup.lattice();
        let flux = |x: u32| -> f64 {
            let mut s = 0.0;
            for z in 1..nz - 1 {
                for y in 1..ny - 1 {
                    let c = l.index(x, y, z);
                    s += (f.rho(c) * f.u(c)[0]) as f64;
                }
            }
            s
        };
        let nominal = u_in as f64 * ((ny - 2) * (nz - 2)) as f64;
        let planes: Vec<f64> = [2, 10, 20, 30, nx - 3].iter().map(|&x| flux(x)).collect();
        eprintln!("{model:?}: nominal {nominal:.4}, planes {planes:?}");
        for &p in &planes {
            assert!((p / planes[0] - 1.0).abs() < 1e-3, "{model:?}: {planes:?}");
            assert!(
                (p / nominal - 1.0).abs() < 1e-3,
                "{model:?}: {p} vs {nominal}"
            );
        }
        let mut rho_out = 0.0;
        for z in 1..nz - 1 {
            for y in 1..ny - 1 {
                rho_out += f.rho(l.index(nx - 2, y, z)) as f64;
            }
        }
        rho_out /= ((ny - 2) * (nz - 2)) as f64;
        assert!(
            (rho_out - 1.0).abs() < 0.01,
            "{model:?}: outlet density {rho_out}"
        );
    }
}

/// The DFG-style duct inflow: a parabolic profile across both wall-bounded axes, ramped up by
/// the run driver. At steady state every plane carries the flux the inlet's links impose: the
/// profile at each link's wall point, weighted by the links' lattice weights.
#[test]
fn a_parabolic_ramped_inlet_delivers_its_profiles_flux() {
    use murmur::internals::fluid::driver::{self, RunOptions};
    use murmur::internals::fluid::scene::{Boundary, Geometry};
    use murmur_common::lbm::Rates;

    let (n, h, u_max) = (30u32, 12u32, 0.06f32);
    let setup = Geometry {
        fluid: [n, h, h],
        faces: [
            Boundary::Inlet {
                velocity: [u_max, 0.0, 0.0],
                parabolic: 0b110,
            },
            Boundary::Outlet(1.0),
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Wall,
            Boundary::Wall,
        ],
    }
    .setup(Rates::from_viscosity(0.08), CollisionModel::Bgk)
    .unwrap();
    let mut b = murmur::internals::fluid::cpu::open(&setup).unwrap();
    let opts = RunOptions {
        steps: 3000,
        check_every: 0,
        output_every: 0,
        forces_every: 0,
        health: murmur_common::lbm::health::Bounds::DEFAULT,
        progress: false,
        inlet: murmur::internals::fluid::inlet::InletSchedule::ramp(500.0),
    };
    let mut last = None;
    driver::run(b.as_mut(), opts, &mut last, &mut driver::Discard).unwrap();
    let f = b.fields().unwrap();
    let l = setup.lattice();

    // The walls are at 0.5 and h + 0.5; a link from the inlet reaches (y, z) from its wall point
    // (y - cy / 2, z - cz / 2), with weight w1(cy) w1(cz) among the links of c_x = 1.
    let parabola =
        |s: f64| (1.0 - ((s - (h as f64 + 1.0) / 2.0) / (h as f64 / 2.0)).powi(2)).max(0.0);
    let w1 = [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0];
    let mut expected = 0.0;
    for z in 1..=h {
        for y in 1..=h {
            for cz in -1i32..=1 {
                for cy in -1i32..=1 {
                    expected += w1[(cy + 1) as usize]
                        * w1[(cz + 1) as usize]
                        * u_max as f64
                        * parabola(y as f64 - 0.5 * cy as f64)
                        * parabola(z as f64 - 0.5 * cz as f64);
                }
            }
        }
    }
    let flux = |x: u32| -> f64 {
        let mut s = 0.0;
        for z in 1..=h {
            for y in 1..=h {
                let c = l.index(x, y, z);
                s += (f.rho(c) * f.u(c)[0]) as f64;
            }
        }
        s
    };
    let planes: Vec<f64> = [2, 10, 20, n - 1].iter().map(|&x| flux(x)).collect();
    eprintln!("expected {expected:.5}, planes {planes:?}");
    for &p in &planes {
        assert!((p / expected - 1.0).abs() < 2e-3, "{p} vs {expected}");
    }
    // Next to the inlet the velocity follows the profile: peak on the axis, small at the walls
    // (the duct's own developed profile, not a product of parabolas, takes over downstream).
    let centre = f.u(l.index(1, h / 2, h / 2))[0] / u_max;
    let wall = f.u(l.index(1, 1, h / 2))[0] / u_max;
    assert!((centre - 1.0).abs() < 0.1 && wall < 0.3, "{centre} {wall}");
}
