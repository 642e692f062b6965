//! The coupled flock's validation cases (`fluid validate`'s last rows) on the CPU fluid,
//! one-way, each against its analytic motion: an inertial boid released at rest in a uniform
//! flow relaxes as `U (1 - exp(-t / tau_p))`, tracers in a steady Poiseuille channel travel at
//! the parabola's `u(y)`, tracers in a decaying Taylor-Green vortex keep `psi / A`, boids that
//! avoid a torus tumbling through them never end a step inside it. Sizes and
//! targets: `murmur::internals::coupling::validate`.

use murmur::internals::coupling::validate::{
    inertial_case, poiseuille_case, taylor_green_case, torus_case,
};
use murmur::internals::fluid::cpu::CpuFluid;
use murmur::internals::fluid::validate::{CaseResult, Opener};
use murmur::internals::fluid::{FluidBackend, FluidError, Setup};
use murmur_common::lbm::Fp32;

fn cpu(setup: &Setup) -> Result<Box<dyn FluidBackend>, FluidError> {
    Ok(Box::new(CpuFluid::<Fp32>::new(setup)?))
}

fn check(r: CaseResult) {
    assert!(
        r.passed(),
        "{}: {} {:.3e} above its target {}",
        r.case,
        r.metric,
        r.error,
        r.target
    );
}

#[test]
fn an_inertial_boid_released_at_rest_relaxes_to_a_uniform_flow() {
    let mut open = cpu;
    for substeps in [1, 4] {
        check(inertial_case(&mut open as &mut Opener, substeps).unwrap());
    }
}

#[test]
fn tracers_in_a_steady_poiseuille_channel_travel_at_the_parabola() {
    let mut open = cpu;
    check(poiseuille_case(&mut open as &mut Opener, 64).unwrap());
}

#[test]
fn tracers_in_a_decaying_taylor_green_vortex_stay_on_their_streamlines() {
    let mut open = cpu;
    check(taylor_green_case(&mut open as &mut Opener, 64, 4000).unwrap());
}

#[test]
fn avoiding_boids_never_end_a_step_inside_the_rotating_torus() {
    let mut open = cpu;
    check(torus_case(&mut open as &mut Opener, 4, 10_000, 500, false).unwrap());
}
