//! Property tests: the CPU methods (naive, scattered, coherent) agree up to float summation
//! order on random small flocks and grids (cell width, x-split, key order), including boids
//! exactly on cell borders and at the wrap.

use murmur::internals::flock::cpu::CpuFlock;
use murmur::internals::flock::{
    CellOrder, FlockBackend, FlockSettings, FlockState, Method, SortArg,
};
use murmur_common::flock::FlockParams;
use murmur_common::Vec3;
use proptest::prelude::*;

fn settings(method: Method, factor: f32, order: CellOrder, scale: f32) -> FlockSettings {
    with_radii(method, factor, order, scale, [5.0, 3.0, 5.0])
}

/// As `settings`, with the cohesion, separation and alignment radii `r`.
fn with_radii(
    method: Method,
    factor: f32,
    order: CellOrder,
    scale: f32,
    r: [f32; 3],
) -> FlockSettings {
    FlockSettings {
        params: FlockParams {
            scale,
            rule1_distance: r[0],
            rule2_distance: r[1],
            rule3_distance: r[2],
            ..FlockParams::CIS565
        },
        method,
        cell_width_factor: factor,
        x_split: 1,
        block_size: 128,
        cell_order: order,
        sort: SortArg::Radix,
        cuda_graph: false,
        pdl: false,
        gpu_timer: true,
    }
}

fn run(s: &FlockSettings, start: &FlockState, steps: usize) -> FlockState {
    let mut f = CpuFlock::new(s, start);
    for _ in 0..steps {
        f.step().unwrap();
    }
    f.state().unwrap()
}

/// A coordinate drawn from the interior, a cell border of a 5-wide grid, or exactly ±scale.
fn coord(scale: f32) -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => -scale..=scale,
        2 => (-4i32..=4).prop_map(move |k| (k as f32 * 5.0).clamp(-scale, scale)),
        1 => Just(scale),
        1 => Just(-scale),
    ]
}

fn flock(max_n: usize, scale: f32) -> impl Strategy<Value = FlockState> {
    prop::collection::vec(
        (
            (coord(scale), coord(scale), coord(scale)),
            (-1.0f32..1.0, -1.0f32..1.0, -1.0f32..1.0),
        ),
        2..max_n,
    )
    .prop_map(|boids| FlockState {
        pos: boids
            .iter()
            .map(|b| Vec3::new(b.0 .0, b.0 .1, b.0 .2))
            .collect(),
        vel: boids
            .iter()
            .map(|b| Vec3::new(b.1 .0, b.1 .1, b.1 .2))
            .collect(),
        id: (0..boids.len() as u32).collect(),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn grid_methods_agree_with_naive(
        start in flock(300, 20.0),
        factor in prop_oneof![Just(1.0f32), Just(2.0), 0.4f32..3.0],
        x_split in prop_oneof![Just(1u32), Just(2), Just(4), 1u32..=16],
        morton in any::<bool>(),
    ) {
        let order = if morton { CellOrder::Morton } else { CellOrder::Linear };
        let naive = run(&settings(Method::Naive, 1.0, order, 20.0), &start, 3);
        for m in [Method::Scattered, Method::Coherent, Method::CoherentShared] {
            let s = FlockSettings { x_split, ..settings(m, factor, order, 20.0) };
            let other = run(&s, &start, 3);
            let (dp, dv) = naive.max_difference(&other);
            prop_assert!(
                dp <= 1e-4 && dv <= 1e-5,
                "{m:?} factor {factor} x-split {x_split}: pos {dp}, vel {dv}"
            );
        }
    }
}

/// Rule radii where the nested shortcut does not apply (alignment radius other than cohesion's,
/// or separation past cohesion), and the CIS 565 nesting.
fn radii() -> impl Strategy<Value = [f32; 3]> {
    prop_oneof![
        Just([5.0f32, 3.0, 5.0]),
        (1.0f32..8.0, 0.5f32..8.0, 1.0f32..8.0).prop_map(|(a, b, c)| [a, b, c]),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn grid_methods_agree_with_naive_for_any_radii(
        start in flock(200, 20.0),
        r in radii(),
        factor in prop_oneof![Just(1.0f32), 0.5f32..2.0],
        x_split in 1u32..=8,
    ) {
        let order = CellOrder::Linear;
        let naive = run(&with_radii(Method::Naive, 1.0, order, 20.0, r), &start, 3);
        for m in [Method::Scattered, Method::Coherent] {
            let s = FlockSettings { x_split, ..with_radii(m, factor, order, 20.0, r) };
            let other = run(&s, &start, 3);
            let (dp, dv) = naive.max_difference(&other);
            prop_assert!(
                dp <= 1e-4 && dv <= 1e-5,
                "{m:?} radii {r:?} factor {factor} x-split {x_split}: pos {dp}, vel {dv}"
            );
        }
    }
}

#[test]
fn non_nested_radii_take_the_three_test_path() {
    let nested = with_radii(
        Method::Coherent,
        1.0,
        CellOrder::Linear,
        20.0,
        [5.0, 3.0, 5.0],
    );
    assert!(nested.params.radii_nested());
    for r in [[5.0, 3.0, 4.0], [3.0, 5.0, 3.0], [2.0, 1.0, 6.0]] {
        let s = with_radii(Method::Coherent, 1.0, CellOrder::Linear, 20.0, r);
        assert!(!s.params.radii_nested(), "{r:?}");
    }
}

#[test]
fn dense_flock_agrees_over_many_steps() {
    // 4000 boids in a 30-wide box: ~30 neighbours each, wraps happen every step.
    let start = FlockState::random(4000, 15.0, 3);
    let naive = run(
        &settings(Method::Naive, 1.0, CellOrder::Linear, 15.0),
        &start,
        5,
    );
    for (m, f, x_split) in [
        (Method::Scattered, 2.0, 1),
        (Method::Coherent, 1.0, 1),
        (Method::Coherent, 0.5, 1),
        (Method::Coherent, 1.0, 4),
        (Method::Coherent, 0.5, 8),
    ] {
        let s = FlockSettings {
            x_split,
            ..settings(m, f, CellOrder::Linear, 15.0)
        };
        let other = run(&s, &start, 5);
        let (dp, dv) = naive.max_difference(&other);
        assert!(
            dp <= 1e-3 && dv <= 1e-4,
            "{m:?} {f} x-split {x_split}: pos {dp}, vel {dv}"
        );
    }
}

#[test]
fn same_seed_same_result_and_ids_follow_boids() {
    let s = settings(Method::Coherent, 1.0, CellOrder::Linear, 30.0);
    let a = run(&s, &FlockState::random(2000, 30.0, 9), 4);
    let b = run(&s, &FlockState::random(2000, 30.0, 9), 4);
    assert_eq!(a, b);
    // `coherent` reorders its state every step; the ids it returns are back in order.
    assert_eq!(a.id, (0..2000).collect::<Vec<u32>>());
    let c = run(&s, &FlockState::random(2000, 30.0, 10), 4);
    assert_ne!(a, c);
}

#[test]
fn a_lone_pair_moves_as_computed_by_hand() {
    // Two boids 2 apart on x, at rest: each is a cohesion, separation and alignment neighbour.
    let start = FlockState {
        pos: vec![Vec3::new(0.0, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0)],
        vel: vec![Vec3::ZERO, Vec3::ZERO],
        id: vec![0, 1],
    };
    for m in [Method::Naive, Method::Scattered, Method::Coherent] {
        let s = run(&settings(m, 1.0, CellOrder::Linear, 100.0), &start, 1);
        // Boid 0: rule1 = (2 - 0) * 0.01 = 0.02; rule2 = -(2) * 0.1 = -0.2; rule3 = 0.
        let v0 = 0.02f32 - 0.2;
        assert_eq!(s.vel[0], Vec3::new(v0, 0.0, 0.0), "{m:?}");
        assert_eq!(s.pos[0], Vec3::new(v0 * 0.2, 0.0, 0.0), "{m:?}");
        assert_eq!(s.vel[1], Vec3::new(-v0, 0.0, 0.0), "{m:?}");
    }
}
