//! The fluid's state captured after N steps and restored into a new backend gives, after M
//! more steps, the populations, fields, samples and forces of N + M steps run straight, bit for
//! bit: a periodic box and a channel with an inlet, an outlet and a turning immersed solid,
//! FP32 and FP16S, pull and in place, captured under one layout and restored under another.

use murmur::internals::fluid::forces::ForceSample;
use murmur::internals::fluid::state::{self, FluidState};
use murmur::internals::fluid::{scene, FluidBackend, Setup};
use murmur_common::lbm::boundary::inlet_scale;
use murmur_common::lbm::{CollisionModel, Layout, StorageKind, Streaming};

/// Everything compared after a run: the populations, the fields, the samples, the forces.
#[derive(Debug, PartialEq)]
struct Outcome {
    populations: Vec<u32>,
    fields: Vec<u32>,
    samples: Option<Vec<[u32; 3]>>,
    forces: Vec<ForceSample>,
}

/// `steps` steps with the inlet ramped over `ramp` steps, as the driver ramps it.
fn run(b: &mut dyn FluidBackend, steps: u64, ramp: f64, forces: &mut Vec<ForceSample>) {
    for _ in 0..steps {
        b.set_inlet_scale(inlet_scale(b.step_count() + 1, ramp));
        b.step().unwrap();
        // Take the forces now and then, as a run's output cadence does.
        if b.step_count().is_multiple_of(3) {
            forces.extend(b.take_forces().unwrap());
        }
    }
}

fn outcome(b: &mut dyn FluidBackend, mut forces: Vec<ForceSample>) -> Outcome {
    forces.extend(b.take_forces().unwrap());
    let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect();
    Outcome {
        populations: bits(b.populations().unwrap()),
        fields: bits(b.fields().unwrap().data),
        samples: b
            .samples()
            .unwrap()
            .map(|s| s.force.iter().map(|f| f.map(f32::to_bits)).collect()),
        forces,
    }
}

fn with(setup: &Setup, storage: StorageKind, streaming: Streaming, layout: Layout) -> Setup {
    let mut s = setup.clone();
    s.storage = storage;
    s.streaming = Some(streaming);
    s.layout = layout;
    s
}

/// N + M steps straight against N, capture (in pieces of `piece` cells), restore into a new
/// backend of `layout_b`, M steps.
fn resumes_bit_for_bit(setup: &Setup, n: u64, m: u64, ramp: f64, layout_b: Layout, piece: usize) {
    let open = |s: &Setup| murmur::internals::fluid::cpu::open(s).unwrap();
    let mut straight = open(setup);
    let mut forces = Vec::new();
    run(straight.as_mut(), n + m, ramp, &mut forces);
    let want = outcome(straight.as_mut(), forces);

    let mut first = open(setup);
    let mut forces = Vec::new();
    run(first.as_mut(), n, ramp, &mut forces);
    let captured: FluidState = state::capture(first.as_mut(), piece).unwrap();
    assert_eq!(captured.small.step, n);
    // Capturing took the pending forces into the state; the backend still reports them.
    let pending = captured
        .small
        .immersed
        .as_ref()
        .map_or(0, |i| i.pending.len());
    assert_eq!(first.take_forces().unwrap().len(), pending);
    drop(first);

    let mut second_setup = setup.clone();
    second_setup.layout = layout_b;
    let mut second = open(&second_setup);
    state::restore(second.as_mut(), &captured, piece).unwrap();
    assert_eq!(second.step_count(), n);
    // What the restored backend captures is what was restored.
    assert_eq!(
        state::capture(second.as_mut(), piece + 5).unwrap(),
        captured
    );
    run(second.as_mut(), m, ramp, &mut forces);
    let got = outcome(second.as_mut(), forces);
    assert_eq!(got.populations.len(), want.populations.len());
    assert!(got.populations == want.populations, "populations differ");
    assert!(got.fields == want.fields, "fields differ");
    assert_eq!(got.samples, want.samples);
    assert_eq!(got.forces, want.forces);
}

/// A Taylor-Green vortex in a periodic box.
fn periodic_box() -> Setup {
    scene::taylor_green(16, 8, 0.05, 0.02, CollisionModel::Bgk).unwrap()
}

/// The shipped rotating torus at a quarter of its resolution (64 x 32 x 32 cells): an inlet
/// ramped over its first steps, an outlet and its layer, free-slip sides, a turning solid.
fn rotating_torus() -> (Setup, f64) {
    let path = format!(
        "{}/../assets/fluid/rotating-torus.toml",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut file = scene::SceneFile::load(std::path::Path::new(&path)).unwrap();
    scene::overrides::coarsen(&mut file, 4).unwrap();
    let s = file.build().unwrap();
    assert!(!s.setup.immersed.is_empty());
    (s.setup, s.inlet.ramp_steps)
}

#[test]
fn a_periodic_box_resumes_bit_for_bit() {
    let b = periodic_box();
    for (storage, streaming) in [
        (StorageKind::Fp32, Streaming::Pull),
        (StorageKind::Fp16s, Streaming::InPlace),
        (StorageKind::Fp16s, Streaming::Pull),
        (StorageKind::Fp32, Streaming::InPlace),
    ] {
        let setup = with(&b, storage, streaming, Layout::csoa(32).unwrap());
        // An odd and an even step at the capture (in place, the parity moves the slots).
        resumes_bit_for_bit(&setup, 7, 5, 0.0, Layout::csoa(8).unwrap(), 300);
        resumes_bit_for_bit(&setup, 6, 5, 0.0, Layout::SOA, 1000);
    }
}

#[test]
fn a_turning_solid_in_a_channel_resumes_bit_for_bit() {
    let (torus, ramp) = rotating_torus();
    assert!(ramp > 20.0, "the inlet still ramps at the capture");
    for (storage, streaming, n) in [
        (StorageKind::Fp16s, Streaming::Pull, 11),
        (StorageKind::Fp32, Streaming::InPlace, 10),
    ] {
        let setup = with(&torus, storage, streaming, Layout::csoa(32).unwrap());
        resumes_bit_for_bit(&setup, n, 6, ramp, Layout::csoa(128).unwrap(), 7000);
    }
}

/// A state is refused by a backend of another storage, streaming or lattice, and a piece of
/// the wrong size, each with one line naming what differs.
#[test]
fn a_state_of_another_lattice_is_refused() {
    let b = periodic_box();
    let open = |s: &Setup| murmur::internals::fluid::cpu::open(s).unwrap();
    let mut src = open(&b);
    src.step().unwrap();
    let st = state::capture(src.as_mut(), 512).unwrap();
    let cases = [
        (
            with(&b, StorageKind::Fp16s, Streaming::Pull, b.layout),
            "storage",
        ),
        (
            with(&b, StorageKind::Fp32, Streaming::InPlace, b.layout),
            "streaming",
        ),
        (
            scene::taylor_green(16, 4, 0.05, 0.02, CollisionModel::Bgk).unwrap(),
            "lattice size",
        ),
    ];
    for (setup, what) in cases {
        let err = state::restore(open(&setup).as_mut(), &st, 512).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains(what) && !msg.contains('\n'), "{msg}");
    }
    let mut dst = open(&b);
    dst.restore_small_state(&st.small).unwrap();
    let err = dst
        .write_state_piece(0..10, &st.populations[..100])
        .unwrap_err();
    assert!(err.to_string().contains("wrong size"), "{err}");
    let err = dst.read_state_piece(0..5000, &mut [0u8; 8]).unwrap_err();
    assert!(err.to_string().contains("outside the lattice"), "{err}");
}

/// The CUDA backend's state resumes on the CPU reference and the CPU's on CUDA, bit for bit
/// (FP16S, pull and in place, the channel with its turning solid).
#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn cuda_and_cpu_states_resume_on_each_other() {
    let (torus, ramp) = rotating_torus();
    let cpu = |s: &Setup| murmur::internals::fluid::cpu::open(s).unwrap();
    let cuda = |s: &Setup| murmur::internals::fluid::cuda::open(s).unwrap();
    for streaming in [Streaming::Pull, Streaming::InPlace] {
        let setup = with(
            &torus,
            StorageKind::Fp16s,
            streaming,
            Layout::csoa(32).unwrap(),
        );
        let (n, m) = (9, 6);
        let mut straight = cpu(&setup);
        let mut forces = Vec::new();
        run(straight.as_mut(), n + m, ramp, &mut forces);
        let want = outcome(straight.as_mut(), forces);
        type Open<'a> = &'a dyn Fn(&Setup) -> Box<dyn FluidBackend>;
        let pairs: [(Open, Open, &str); 2] =
            [(&cuda, &cpu, "cuda -> cpu"), (&cpu, &cuda, "cpu -> cuda")];
        for (first, second, name) in pairs {
            let mut a = first(&setup);
            let mut forces = Vec::new();
            run(a.as_mut(), n, ramp, &mut forces);
            let st = state::capture(a.as_mut(), 20_000).unwrap();
            a.take_forces().unwrap();
            drop(a);
            let mut other = setup.clone();
            other.layout = Layout::csoa(128).unwrap();
            let mut b = second(&other);
            state::restore(b.as_mut(), &st, 20_000).unwrap();
            run(b.as_mut(), m, ramp, &mut forces);
            let got = outcome(b.as_mut(), forces);
            assert!(
                got.populations == want.populations,
                "{name} {streaming:?}: populations"
            );
            assert!(got.fields == want.fields, "{name} {streaming:?}: fields");
            assert_eq!(got.samples, want.samples, "{name} {streaming:?}");
            assert_eq!(got.forces, want.forces, "{name} {streaming:?}");
        }
    }
}
