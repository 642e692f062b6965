//! The sampler's random draws: the SplitMix64 stream, Walker's alias tables, and uniform points
//! on a whole mesh or on one tile's pieces.

use crate::fluid::ib::shapes::{sub, TriangleMesh};
use murmur_common::rng::mix64;

/// SplitMix64 (Steele, Lea, Flood 2014): a sequential stream over murmur's `mix64`.
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A stream for `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64(mix64(seed ^ 0x6a09_e667_f3bc_c909))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    /// A uniform `f64` in `[0, 1)` (53 random bits).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Uniform points on a mesh: a triangle picked with probability proportional to its area by
/// Walker's alias method (Vose's construction: O(1) per draw, one random table access instead of
/// a binary search through the cumulative areas), then a uniform point in it. The sampler draws
/// per tile instead (module docs); this whole-surface draw serves coverage probes.
pub struct SurfaceDraw {
    /// Per triangle: the chance of keeping it when its column is drawn, and the alias taken
    /// otherwise.
    alias: Vec<(f32, u32)>,
    /// Per triangle: its first corner and the two edges from it (cells).
    corners: Vec<[[f64; 3]; 3]>,
    area: f64,
}

impl SurfaceDraw {
    /// The sampler of a validated mesh.
    pub fn new(mesh: &TriangleMesh) -> Self {
        let n = mesh.triangles.len();
        let areas: Vec<f64> = (0..n).map(|t| mesh.triangle_area(t)).collect();
        let area: f64 = areas.iter().sum();
        let mut alias = vec![(1.0, 0); n];
        alias_table(&areas, &mut alias);
        let corners = (0..n)
            .map(|t| {
                let [a, b, c] = mesh.corners(t);
                [a, sub(b, a), sub(c, a)]
            })
            .collect();
        SurfaceDraw {
            alias,
            corners,
            area,
        }
    }

    /// Total area (cells^2).
    pub fn area(&self) -> f64 {
        self.area
    }

    /// One uniform point of the surface (cells).
    pub fn draw(&self, rng: &mut SplitMix64) -> [f64; 3] {
        let x = rng.next_f64() * self.alias.len() as f64;
        let column = (x as usize).min(self.alias.len() - 1);
        let (keep, other) = self.alias[column];
        let t = if x - (column as f64) < keep as f64 {
            column
        } else {
            other as usize
        };
        let [a, e1, e2] = self.corners[t];
        let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
        if u + v > 1.0 {
            (u, v) = (1.0 - u, 1.0 - v);
        }
        [0, 1, 2].map(|k| a[k] + u * e1[k] + v * e2[k])
    }
}

/// Walker's alias table of `weights` (Vose's construction, "A linear algorithm for generating
/// random numbers with a given distribution", IEEE TSE 17(9), 1991) into `out`: per column, the
/// chance of keeping it and the column taken otherwise.
pub(super) fn alias_table(weights: &[f64], out: &mut [(f32, u32)]) {
    let n = weights.len();
    let total: f64 = weights.iter().sum();
    let mut scaled: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
    for (t, slot) in out.iter_mut().enumerate() {
        *slot = (1.0, t as u32);
    }
    let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&t| scaled[t] < 1.0);
    while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
        small.pop();
        out[s] = (scaled[s] as f32, l as u32);
        scaled[l] -= 1.0 - scaled[s];
        if scaled[l] < 1.0 {
            large.pop();
            small.push(l);
        }
    }
    // Leftovers are 1 up to rounding: always kept.
}

/// A uniform point on `pieces` (corner and edges), picked by their alias table.
#[inline(always)]
pub(super) fn dart(
    pieces: &[[[f64; 3]; 3]],
    alias: &[(f32, u32)],
    rng: &mut SplitMix64,
) -> [f64; 3] {
    let x = rng.next_f64() * pieces.len() as f64;
    let column = (x as usize).min(pieces.len() - 1);
    let (keep, other) = alias[column];
    let i = if x - (column as f64) < keep as f64 {
        column
    } else {
        other as usize
    };
    let (mut u, mut v) = (rng.next_f64(), rng.next_f64());
    if u + v > 1.0 {
        (u, v) = (1.0 - u, 1.0 - v);
    }
    let [a, e1, e2] = pieces[i];
    [0, 1, 2].map(|k| a[k] + u * e1[k] + v * e2[k])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triangles_are_drawn_in_proportion_to_their_area() {
        // Two triangles of areas 1 and 3: a quarter of the draws land on the first (x < 1).
        let mesh = TriangleMesh {
            vertices: vec![
                [0.0; 3],
                [1.0, 0.0, 0.0],
                [0.0, 2.0, 0.0],
                [1.0, 2.0, 0.0],
                [4.0, 0.0, 0.0],
            ],
            triangles: vec![[0, 1, 2], [1, 4, 3]],
        };
        let draw = SurfaceDraw::new(&mesh);
        assert!((draw.area() - 4.0).abs() < 1e-12);
        let mut rng = SplitMix64::new(1);
        let n = 100_000;
        let first = (0..n)
            .filter(|_| draw.draw(&mut rng)[0] < 1.0 - 1e-12)
            .count();
        let expected = n as f64 / 4.0;
        assert!(
            (first as f64 - expected).abs() < 4.0 * (expected * 3.0 / 4.0).sqrt(),
            "{first}"
        );
    }

    #[test]
    fn splitmix_is_uniform_enough() {
        let mut rng = SplitMix64::new(3);
        let n = 100_000;
        let mean = (0..n).map(|_| rng.next_f64()).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.005, "{mean}");
    }
}
