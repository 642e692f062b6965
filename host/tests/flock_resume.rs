//! A flock captured after N steps and restored on a new backend steps on bit for bit: run N + M
//! equals run N, capture, restore, run M, for every method on the CPU backend, and (`#[ignore]`d,
//! `cargo xtask gpu-test`) on CUDA with the radix sort. A state set by id instead does not.

use murmur::internals::flock::capture::FlockCapture;
use murmur::internals::flock::cpu::CpuFlock;
use murmur::internals::flock::{
    CellOrder, FlockBackend, FlockSettings, FlockState, Method, SortArg, WithinCell,
};
use murmur_common::flock::FlockParams;

fn settings(method: Method) -> FlockSettings {
    FlockSettings {
        params: FlockParams {
            scale: 20.0,
            ..FlockParams::CIS565
        },
        method,
        cell_width_factor: 1.0,
        x_split: 2,
        block_size: 128,
        cell_order: CellOrder::Morton,
        sort: SortArg::Radix,
        cuda_graph: true,
        pdl: false,
        gpu_timer: false,
    }
}

/// 3,000 boids in a box of half-width 20 (dense enough for every boid to have neighbours),
/// moving: one step of a fresh start has zero velocities only.
fn start() -> FlockState {
    let mut s = FlockState::random(3_000, 20.0, 7);
    for (k, v) in s.vel.iter_mut().enumerate() {
        let t = k as f32 * 0.37;
        *v = murmur_common::Vec3::new(t.sin(), t.cos(), (2.0 * t).sin()) * 0.5;
    }
    s
}

/// Positions, velocities and ids as bits, in the backend's order.
fn bits(c: &FlockCapture) -> (Vec<[u32; 3]>, Vec<[u32; 3]>, Vec<u32>) {
    let b = |v: &murmur_common::Vec3| [v.x.to_bits(), v.y.to_bits(), v.z.to_bits()];
    let s = &c.state;
    (
        s.pos.iter().map(b).collect(),
        s.vel.iter().map(b).collect(),
        s.id.clone(),
    )
}

fn steps(f: &mut dyn FlockBackend, k: usize) {
    for _ in 0..k {
        f.step().unwrap();
    }
}

/// Run N + M straight and N, capture, restore into `fresh` (opened on another flock), M:
/// the captures must match bit for bit.
fn resume_matches(open: impl Fn(&FlockState) -> Box<dyn FlockBackend>, what: &str) {
    let (n, m) = (6, 5);
    let straight = {
        let mut f = open(&start());
        steps(f.as_mut(), n + m);
        f.capture().unwrap()
    };
    let mut first = open(&start());
    steps(first.as_mut(), n);
    let mid = first.capture().unwrap();
    drop(first);
    if matches!(
        mid.settings.method,
        Method::Coherent | Method::CoherentShared
    ) {
        // The case that matters: the internal order is not the id order.
        assert!(
            mid.state.id.windows(2).any(|w| w[0] > w[1]),
            "{what}: in id order"
        );
    }
    let mut fresh = open(&FlockState::random(10, 20.0, 99));
    fresh.restore(&mid).unwrap();
    assert_eq!(
        fresh.capture().unwrap(),
        mid,
        "{what}: restore then capture"
    );
    steps(fresh.as_mut(), m);
    let resumed = fresh.capture().unwrap();
    assert_eq!(resumed.buffer, straight.buffer, "{what}: buffer");
    assert!(
        bits(&resumed) == bits(&straight),
        "{what}: resumed bits differ"
    );
}

fn cpu(method: Method) -> impl Fn(&FlockState) -> Box<dyn FlockBackend> {
    move |s| Box::new(CpuFlock::new(&settings(method), s)) as Box<dyn FlockBackend>
}

#[test]
fn every_cpu_method_resumes_bit_for_bit() {
    for method in Method::ALL {
        resume_matches(cpu(method), method.name());
    }
}

#[test]
fn cells_ordered_by_id_resume_bit_for_bit() {
    let s = settings(Method::Coherent);
    let open = |st: &FlockState| {
        let mut f = CpuFlock::new(&s, st);
        f.set_within_cell(WithinCell::ById);
        Box::new(f) as Box<dyn FlockBackend>
    };
    resume_matches(open, "coherent, cells by id");
    // The order inside cells travels with the capture: a backend left in the binned order
    // takes it over.
    let mut f = open(&start());
    steps(f.as_mut(), 2);
    let c = f.capture().unwrap();
    assert_eq!(c.within, WithinCell::ById);
    let mut plain = CpuFlock::new(&s, &start());
    plain.restore(&c).unwrap();
    assert_eq!(plain.capture().unwrap().within, WithinCell::ById);
}

#[test]
fn a_state_set_by_id_is_not_the_same_flock() {
    // What `state()` + `set_state` gives (the boids by id): where the internal order is not the
    // id order (the coherent methods keep the boids in cell order; naive and scattered never
    // move them), the next steps add the neighbour sums in another order, so the bits differ;
    // the capture is what a checkpoint needs.
    for method in [Method::Coherent, Method::CoherentShared] {
        let s = settings(method);
        let mut f = CpuFlock::new(&s, &start());
        steps(&mut f, 6);
        let by_id = f.state().unwrap();
        steps(&mut f, 5);
        let straight = f.state().unwrap();
        let mut g = CpuFlock::new(&s, &by_id);
        steps(&mut g, 5);
        let d = straight.difference(&g.state().unwrap(), 20.0, 1e-3);
        assert!(d.differ > 0, "{}: the reload by id matched", method.name());
        assert_eq!(d.beyond, 0, "{}: {d:?}", method.name());
    }
}

#[test]
fn restore_refuses_other_settings_and_malformed_captures() {
    let mut f = CpuFlock::new(&settings(Method::Coherent), &start());
    steps(&mut f, 1);
    let c = f.capture().unwrap();
    let refused = |s: FlockSettings, c: &FlockCapture| {
        CpuFlock::new(&s, &start())
            .restore(c)
            .unwrap_err()
            .to_string()
    };
    let e = refused(settings(Method::Naive), &c);
    assert_eq!(
        e,
        "the captured flock was stepped with method coherent, this one steps with naive"
    );
    let mut wider = settings(Method::Coherent);
    wider.cell_width_factor = 2.0;
    assert!(refused(wider, &c).contains("cell width factor 1"), "wider");
    let mut rules = settings(Method::Coherent);
    rules.params.rule2_distance = 4.0;
    assert!(refused(rules, &c).contains("rule2_distance 3"), "rules");
    let mut short = c.clone();
    short.state.vel.pop();
    assert!(refused(settings(Method::Coherent), &short).contains("2999 velocities"));
    let mut twice = c.clone();
    twice.state.id[1] = twice.state.id[0];
    assert!(refused(settings(Method::Coherent), &twice).contains("not a permutation"));
    let mut buffer = c.clone();
    buffer.buffer = 2;
    assert!(refused(settings(Method::Coherent), &buffer).contains("buffer index is 2"));
}

#[test]
#[ignore = "needs a CUDA GPU: cargo xtask gpu-test"]
fn every_cuda_method_resumes_bit_for_bit_with_the_radix_sort() {
    use murmur::internals::flock::cuda;
    for method in Method::ALL {
        for graph in [true, false] {
            let mut s = settings(method);
            s.cuda_graph = graph;
            let open = |st: &FlockState| cuda::open(&s, st, 0).unwrap();
            resume_matches(open, &format!("cuda {} graph {graph}", method.name()));
        }
    }
    // By-id cells on CUDA too (the ranks' order).
    let s = settings(Method::Coherent);
    let open = |st: &FlockState| {
        let mut f = cuda::CudaFlock::new(&s, st.len() as u32).unwrap();
        f.set_state(st).unwrap();
        f.set_within_cell(WithinCell::ById);
        Box::new(f) as Box<dyn FlockBackend>
    };
    resume_matches(open, "cuda coherent, cells by id");
}
