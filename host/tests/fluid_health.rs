//! The health check and its corner exemption on the CPU reference: a bad flow is caught inside
//! an exempt box (non-finite values, Mach) and outside it (density), the mean density holds
//! everywhere, and CPU ranks report what the whole lattice reports; the GPU's report against the
//! CPU's (`#[ignore]`d).

use murmur::internals::fluid::driver::check_health;
use murmur::internals::fluid::scene::health::{bounds, corner_boxes, EXEMPT_WIDTH};
use murmur::internals::fluid::scene::{self, Boundary, Geometry, Health};
use murmur::internals::fluid::slab::SlabPlan;
use murmur::internals::fluid::{FluidBackend, FluidError, Setup};
use murmur_common::lbm::boundary::FLUID;
use murmur_common::lbm::health::{Bounds, CellBox, Report};
use murmur_common::lbm::{CollisionModel, Rates};

/// Bounds whose one exempt box holds every cell of `setup`.
fn all_exempt(setup: &Setup, max_density_deviation: f32, max_mach: f32) -> Bounds {
    let l = setup.lattice();
    let mut b = Bounds::new(max_density_deviation, max_mach);
    b.add_exempt(CellBox {
        lo: [0; 3],
        hi: [l.nx, l.ny, l.nz],
    });
    b
}

fn stepped(setup: &Setup, steps: u64) -> Box<dyn FluidBackend> {
    let mut b = murmur::internals::fluid::cpu::open(setup).unwrap();
    for _ in 0..steps {
        b.step().unwrap();
    }
    b
}

fn unhealthy(r: Result<Option<Report>, FluidError>) -> (u64, Option<[u32; 3]>, String) {
    match r {
        Err(FluidError::Unhealthy {
            step, cell, what, ..
        }) => (step, cell, what),
        r => panic!("expected Unhealthy, got {r:?}"),
    }
}

/// A 32^2 cavity at Re 100, 300 steps: the lid's corners past the density of the cells beside
/// them. The largest `|rho - 1|` inside the corner boxes and outside them.
fn cavity_excursions() -> (Setup, Box<dyn FluidBackend>, f32, f32) {
    let setup = scene::cavity(32, 1, 0.1, 0.032, CollisionModel::Bgk).unwrap();
    let mut b = stepped(&setup, 300);
    let f = b.fields().unwrap();
    let l = setup.lattice();
    let corners = bounds(&setup, Health::DEFAULT);
    let (mut inside, mut outside) = (0f32, 0f32);
    for c in (0..l.cells()).filter(|&c| setup.flags[c] == FLUID) {
        let (x, y, z) = l.coords(c);
        let d = (f.rho(c) - 1.0).abs();
        if corners.exempts([x, y, z]) {
            inside = inside.max(d);
        } else {
            outside = outside.max(d);
        }
    }
    assert!(
        inside > 1.5 * outside,
        "corners {inside}, elsewhere {outside}"
    );
    (setup, b, inside, outside)
}

#[test]
fn the_exemption_lets_the_corner_through_and_nothing_else() {
    let (setup, mut b, inside, outside) = cavity_excursions();
    let mut corners = bounds(&setup, Health::DEFAULT);
    assert_eq!(corners.exempt_count, 2);
    // A bound between the two: only the corners exceed it, and they are exempt.
    corners.max_density_deviation = 0.5 * (inside + outside);
    let r = check_health(b.as_mut(), &corners, 100, None)
        .unwrap()
        .unwrap();
    assert!(r.first_bad.is_none(), "{r:?}");
    assert!((r.max_rho - 1.0).max(1.0 - r.min_rho) > corners.max_density_deviation);
    // Without the boxes the same bound fails at a corner cell, by its density.
    let mut bare = corners;
    bare.exempt_count = 0;
    let (step, cell, what) = unhealthy(check_health(b.as_mut(), &bare, 100, None));
    assert_eq!(step, 300);
    let [x, y, z] = cell.unwrap();
    assert!(corners.exempts([x, y, z]), "({x}, {y}, {z})");
    assert!(what.starts_with("density"), "{what}");
    // Below the density outside the boxes, the boxes do not help: a cell outside them fails.
    corners.max_density_deviation = 0.8 * outside;
    let (_, cell, what) = unhealthy(check_health(b.as_mut(), &corners, 100, None));
    let [x, y, z] = cell.unwrap();
    assert!(!corners.exempts([x, y, z]), "({x}, {y}, {z})");
    assert!(what.starts_with("density"), "{what}");
    // The Mach bound holds in exempt cells: with every cell exempt, the lid's neighbours
    // (moving at about its speed, Mach 0.17) fail a bound of 0.05.
    let slow = all_exempt(&setup, 0.1, 0.05);
    let (_, _, what) = unhealthy(check_health(b.as_mut(), &slow, 100, None));
    assert!(what.starts_with("local Mach number"), "{what}");
}

#[test]
fn non_finite_values_and_mach_fail_inside_an_exempt_box() {
    let mut nan = scene::taylor_green(8, 2, 0.05, 0.05, CollisionModel::Bgk).unwrap();
    nan.initial.velocity[0] = f32::NAN;
    let mut b = stepped(&nan, 2);
    let every = all_exempt(&nan, 0.1, 0.5);
    let (step, cell, what) = unhealthy(check_health(b.as_mut(), &every, 1, None));
    assert_eq!((step, cell), (2, Some([0, 0, 0])));
    assert!(what.starts_with("non-finite"), "{what}");
    // Peak speed 0.05: Mach 0.087, beyond a bound of 0.05 in every exempt cell.
    let tg = scene::taylor_green(8, 2, 0.05, 0.05, CollisionModel::Bgk).unwrap();
    let mut b = stepped(&tg, 2);
    let (_, _, what) = unhealthy(check_health(
        b.as_mut(),
        &all_exempt(&tg, 0.1, 0.05),
        1,
        None,
    ));
    assert!(what.starts_with("local Mach number"), "{what}");
    // The density alone is exempt there: a bound of 1e-5 passes.
    let r = check_health(b.as_mut(), &all_exempt(&tg, 1e-5, 0.5), 1, None)
        .unwrap()
        .unwrap();
    assert!(r.first_bad.is_none() && r.max_rho - 1.0 > 1e-5, "{r:?}");
}

#[test]
fn the_mean_density_holds_everywhere() {
    // A closed duct at rest whose outlet holds density 1.3: the density rises towards it.
    let mut g = Geometry::duct([10, 4, 4], 0);
    g.faces[0] = Boundary::Wall;
    g.faces[1] = Boundary::Outlet(1.3);
    let setup = g
        .setup(Rates::from_viscosity(0.1), CollisionModel::Bgk)
        .unwrap();
    let mut b = stepped(&setup, 200);
    let every = all_exempt(&setup, 0.1, 0.5);
    let (_, cell, what) = unhealthy(check_health(b.as_mut(), &every, 1, None));
    assert_eq!(cell, None);
    assert!(
        what.starts_with("mean density 1.") && what.contains("fluid cells"),
        "{what}"
    );
    // The sum is exact: the report's mean is the mean of the fields' densities.
    let r = b.health(&every).unwrap().unwrap();
    let f = b.fields().unwrap();
    let fluid: Vec<usize> = (0..f.n()).filter(|&c| setup.flags[c] == FLUID).collect();
    let mean = fluid.iter().map(|&c| f.rho(c) as f64).sum::<f64>() / fluid.len() as f64;
    assert_eq!(r.fluid, fluid.len() as u64);
    assert!(
        (r.mean_rho() - mean).abs() < 1e-9,
        "{} vs {mean}",
        r.mean_rho()
    );
    assert!(!r.passes(&every) && r.mean_rho() > 1.1);
}

#[test]
fn cpu_ranks_report_what_the_whole_lattice_reports() {
    let (setup, mut whole, inside, outside) = cavity_excursions();
    let mut b = bounds(&setup, Health::DEFAULT);
    b.max_density_deviation = 0.5 * (inside + outside);
    let want = whole.health(&b).unwrap().unwrap();
    assert!(want.first_bad.is_none());
    let mut tight = b;
    tight.max_density_deviation = 0.8 * outside;
    let want_tight = whole.health(&tight).unwrap().unwrap();
    assert!(want_tight.first_bad.is_some());
    for ranks in [2, 3] {
        let plan = SlabPlan::new(&setup, ranks).unwrap();
        let got = murmur::internals::ranks::local::run_ranks(ranks, |comm| {
            let comm: std::sync::Arc<dyn murmur::internals::ranks::Comm> =
                std::sync::Arc::new(comm);
            let mut r = murmur::internals::fluid::slab::open_cpu_rank(&setup, &plan, comm)?;
            for _ in 0..300 {
                r.step()?;
            }
            Ok::<_, FluidError>((r.health(&b)?, r.health(&tight)?))
        })
        .unwrap();
        for (loose, strict) in got {
            assert_eq!(loose, Some(want), "{ranks} ranks along axis {}", plan.axis);
            assert_eq!(strict, Some(want_tight), "{ranks} ranks");
        }
    }
}

#[test]
fn corner_boxes_follow_the_faces() {
    // The DFG channel's inlet against its four no-slip walls; the obstacle's free-slip channel
    // has none.
    for (name, edges) in [
        ("dfg-cylinder-3d", 4),
        ("obstacle", 0),
        ("cavity-re1000", 2),
    ] {
        let path = format!("{}/../assets/fluid/{name}.toml", env!("CARGO_MANIFEST_DIR"));
        let mut file = scene::SceneFile::load(std::path::Path::new(&path)).unwrap();
        scene::overrides::coarsen(&mut file, 2).unwrap();
        let s = file.build().unwrap();
        let boxes = corner_boxes(s.setup.lattice(), &s.setup.flags, EXEMPT_WIDTH);
        assert_eq!(boxes.len(), edges, "{name}");
        assert_eq!(s.bounds().exempt_boxes(), &boxes[..], "{name}");
    }
}

/// The GPU's reduction with exempt boxes and the mean density's integer sum: the same report
/// as the CPU's, bit for bit.
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_health_reports_match_the_cpu() {
    let (setup, _, inside, outside) = cavity_excursions();
    let mut loose = bounds(&setup, Health::DEFAULT);
    loose.max_density_deviation = 0.5 * (inside + outside);
    let mut tight = loose;
    tight.max_density_deviation = 0.8 * outside;
    let mut g = Geometry::duct([10, 4, 4], 0);
    g.faces[1] = Boundary::Outlet(1.3);
    let duct = g
        .setup(Rates::from_viscosity(0.1), CollisionModel::Bgk)
        .unwrap();
    let duct_bounds = bounds(&duct, Health::DEFAULT);
    for (setup, checks) in [(&setup, vec![loose, tight]), (&duct, vec![duct_bounds])] {
        let mut cpu = stepped(setup, 300);
        let mut gpu = murmur::internals::fluid::cuda::open(setup).unwrap();
        for _ in 0..300 {
            gpu.step().unwrap();
        }
        for b in checks {
            assert_eq!(gpu.health(&b).unwrap(), cpu.health(&b).unwrap());
        }
    }
}
