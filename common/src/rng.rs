//! Counter-based random numbers: `uniform(seed, i)` is a pure function, so the CPU and a kernel
//! produce the same initial flock for the same seed, in any order and on any number of threads.

/// SplitMix64 finaliser (Steele, Lea, Flood 2014): a bijective 64-bit mix.
#[inline(always)]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A uniform `f32` in `[0, 1)` for counter `i` of stream `seed` (24 random mantissa bits).
#[inline(always)]
pub fn uniform(seed: u64, i: u64) -> f32 {
    let h = mix64(mix64(seed ^ 0x9e37_79b9_7f4a_7c15).wrapping_add(i));
    (h >> 40) as f32 * (1.0 / (1u64 << 24) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_is_in_range_and_spread() {
        let mut sum = 0.0f64;
        let n = 100_000;
        for i in 0..n {
            let u = uniform(7, i);
            assert!((0.0..1.0).contains(&u));
            sum += u as f64;
        }
        let mean = sum / n as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        assert_ne!(uniform(1, 0), uniform(2, 0));
    }
}
