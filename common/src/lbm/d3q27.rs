//! The D3Q27 velocity set: velocities, weights, opposite directions (Krüger et al., "The Lattice
//! Boltzmann Method", Springer 2017, Sec. 3.4.7, Table 3.3).
//!
//! Directions are numbered as a 3x3x3 tensor, `q = 9 (cz + 1) + 3 (cy + 1) + (cx + 1)`, so that
//! the central-moment transform works on the same index (one axis per stride 1, 3, 9), the rest
//! population is `q = 13` and the opposite of `q` is `26 - q`.

/// Number of discrete velocities.
pub const Q: usize = 27;

/// The rest population (`c = 0`).
pub const REST: usize = 13;

/// Lattice speed of sound squared, `c_s^2 = 1/3` (lattice units).
pub const CS2: f32 = 1.0 / 3.0;

/// One-dimensional weights of velocity components -1, 0, +1: `w = w1(cx) w1(cy) w1(cz)`.
pub const W1: [f32; 3] = [1.0 / 6.0, 2.0 / 3.0, 1.0 / 6.0];

/// Velocity of direction `q` as integers `(cx, cy, cz)`, each in {-1, 0, 1}.
#[inline(always)]
pub const fn velocity(q: usize) -> [i32; 3] {
    [
        (q % 3) as i32 - 1,
        ((q / 3) % 3) as i32 - 1,
        (q / 9) as i32 - 1,
    ]
}

/// Velocity of direction `q` as floats.
#[inline(always)]
pub const fn velocity_f32(q: usize) -> [f32; 3] {
    let c = velocity(q);
    [c[0] as f32, c[1] as f32, c[2] as f32]
}

/// Lattice weight of direction `q`: 8/27 (rest), 2/27 (faces), 1/54 (edges), 1/216 (corners).
#[inline(always)]
pub const fn weight(q: usize) -> f32 {
    W1[q % 3] * W1[(q / 3) % 3] * W1[q / 9]
}

/// The direction opposite to `q` (`c_opp = -c_q`).
#[inline(always)]
pub const fn opposite(q: usize) -> usize {
    Q - 1 - q
}

/// All weights, in direction order.
pub const WEIGHTS: [f32; Q] = {
    let mut w = [0.0f32; Q];
    let mut q = 0;
    while q < Q {
        w[q] = weight(q);
        q += 1;
    }
    w
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_isotropy() {
        let sum: f64 = WEIGHTS.iter().map(|&w| w as f64).sum();
        assert!((sum - 1.0).abs() < 1e-6);
        assert_eq!(velocity(REST), [0, 0, 0]);
        assert!((weight(REST) - 8.0 / 27.0).abs() < 1e-7);
        for q in 0..Q {
            let c = velocity(q);
            let o = velocity(opposite(q));
            assert_eq!([c[0] + o[0], c[1] + o[1], c[2] + o[2]], [0, 0, 0]);
        }
        // Second moment: sum w c_a c_b = cs^2 delta_ab; fourth: sum w cx^2 cy^2 = cs^4.
        for a in 0..3 {
            for b in 0..3 {
                let m: f64 = (0..Q)
                    .map(|q| weight(q) as f64 * (velocity(q)[a] * velocity(q)[b]) as f64)
                    .sum();
                let want = if a == b { 1.0 / 3.0 } else { 0.0 };
                assert!((m - want).abs() < 1e-6, "second moment {a}{b}: {m}");
            }
        }
        let m4: f64 = (0..Q)
            .map(|q| {
                let c = velocity(q);
                weight(q) as f64 * (c[0] * c[0] * c[1] * c[1]) as f64
            })
            .sum();
        assert!((m4 - 1.0 / 9.0).abs() < 1e-6);
    }
}
