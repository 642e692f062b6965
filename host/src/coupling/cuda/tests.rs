use super::*;

#[test]
fn the_sort_is_as_wide_as_the_largest_key() {
    for (cells, bits) in [
        (1, 1),
        (2, 1),
        (3, 2),
        (256, 8),
        (257, 9),
        (70_000, 17),
        (u32::MAX, 32),
    ] {
        assert_eq!(key_bits(cells), bits, "{cells} cells");
        assert!(cells as u64 - 1 < 1u64 << bits, "{cells} cells");
    }
}

#[test]
fn device_memory_is_88_bytes_per_boid_besides_the_sort_and_a_word_per_cell() {
    assert_eq!(BYTES_PER_BOID, 88);
    let (n, cells) = (10_000, 999);
    assert_eq!(
        device_bytes(n, cells),
        88 * n as u64 + RadixSort::bytes_needed(n) + 4 * 1000
    );
    // The sort's spare keys and values: 8 more bytes per boid (its status words are few).
    let per_boid = device_bytes(1 << 20, 1) as f64 / (1u64 << 20) as f64;
    assert!((96.0..97.0).contains(&per_boid), "{per_boid}");
    assert_eq!(AirFields::bytes(1000), 33_000);
}

#[test]
fn a_flock_is_refused_before_it_reaches_the_gpu() {
    let rates = Rates {
        rule: [0.01, 0.1, 0.1],
        distance: [5.0, 3.0, 5.0],
        max_speed: 0.5,
    };
    let bounds = BoidBox {
        lo: [0.0; 3],
        hi: [40.0, 30.0, 24.0],
        periodic: 0b101,
        through: 0,
    };
    let one = vec![Vec3::new(1.0, 2.0, 3.0)];
    match checked_cpu(one.clone(), vec![], rates, 1.0, 0.0, bounds) {
        Err(CudaBoidsError::Boids(BoidsError::Lengths(1, 0))) => {}
        other => panic!("{:?}", other.err()),
    }
    match checked_cpu(one.clone(), one.clone(), rates, -1.0, 0.0, bounds) {
        Err(e @ CudaBoidsError::Boids(BoidsError::Times { .. })) => {
            assert!(e.to_string().contains("dt = -1"), "{e}")
        }
        other => panic!("{:?}", other.err()),
    }
    let tiny = Rates {
        distance: [1e-4; 3],
        ..rates
    };
    let huge = BoidBox {
        hi: [1e3; 3],
        periodic: 0,
        through: 0,
        ..bounds
    };
    match checked_cpu(one.clone(), one.clone(), tiny, 1.0, 0.0, huge) {
        Err(e @ CudaBoidsError::TooManyCells(cells)) => {
            assert!(cells >= 1 << 32, "{cells}");
            assert!(!e.to_string().contains('\n'), "{e}");
        }
        other => panic!("{:?}", other.err()),
    }
    let cpu = checked_cpu(one.clone(), one, rates, 0.5, 2.0, bounds).unwrap();
    assert_eq!(cpu.params.rule2_scale, 0.05);
    assert_eq!(cpu.id, vec![0]);
}

#[test]
fn air_time_and_fields_are_refused_in_one_line() {
    for e in [
        CudaBoidsError::Time { k: 4, n: 4 },
        CudaBoidsError::FieldsSize {
            got: 8,
            want: 16,
            cells: 1,
        },
        CudaBoidsError::MaskSize { got: 2, cells: 1 },
        CudaBoidsError::Device {
            fields: 1,
            boids: 0,
        },
        CudaBoidsError::NoFields,
    ] {
        let line = e.to_string();
        assert!(!line.is_empty() && !line.contains('\n'), "{line}");
    }
    assert!(CudaBoidsError::Time { k: 4, n: 4 }
        .to_string()
        .starts_with("substep 4 of 4"));
}
