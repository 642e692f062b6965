//! Velocity inlet and pressure outlet: a duct driven through its inlet reaches a steady state in
//! which the same mass flux crosses every plane and the outlet holds its density.

use murmur::fluid::cpu::CpuFluid;
use murmur::fluid::scene;
use murmur::fluid::FluidBackend;
use murmur_common::lbm::CollisionModel;

#[test]
fn duct_flux_is_the_same_through_every_plane() {
    for model in [CollisionModel::Bgk, CollisionModel::AcmMrt] {
        let (nx, ny, nz, u_in) = (40u32, 12u32, 12u32, 0.05f32);
        // No sphere: radius 0 puts it nowhere.
        let setup =
            scene::obstacle([nx, ny, nz], [-10.0, -10.0, -10.0], 0.0, u_in, 0.05, model).unwrap();
        let mut b = CpuFluid::new(&setup).unwrap();
        let steps = 3000;
        for s in 1..=steps {
            b.step(s == steps).unwrap();
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
