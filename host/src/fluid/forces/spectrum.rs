//! The dominant frequency of a sampled signal (the lift, for the Strouhal number): the mean
//! period between upward zero crossings when the signal is regular, else the peak of its
//! spectrum (Hann window, radix-2 FFT, parabolic refinement of the peak).

use std::f64::consts::PI;
use std::fmt;

/// Fewest regular lift periods between zero crossings for a zero-crossing Strouhal number.
pub const MIN_CROSSING_PERIODS: usize = 10;

/// Fewest periods of the spectral peak in the window for a spectral Strouhal number.
pub const MIN_SPECTRAL_PERIODS: f64 = 30.0;

/// Largest spread (standard deviation over mean) of the zero-crossing periods that still counts
/// as regular; beyond it the spectral peak is used.
pub const MAX_PERIOD_SPREAD: f64 = 0.1;

/// How a lift frequency was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrequencyMethod {
    /// Mean period between upward zero crossings of the mean-removed lift.
    ZeroCrossings,
    /// Peak of the lift's spectrum (Hann window, DFT, parabolic refinement).
    Spectrum,
}

impl fmt::Display for FrequencyMethod {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(match self {
            FrequencyMethod::ZeroCrossings => "zero crossings",
            FrequencyMethod::Spectrum => "spectral peak",
        })
    }
}

/// A measured frequency of a signal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frequency {
    /// Hz (1/time unit of the sample times).
    pub frequency_hz: f64,
    /// Periods measured: between the first and last zero crossing, or in the whole window.
    pub periods: f64,
    pub method: FrequencyMethod,
}

/// The dominant frequency of `signal` sampled at increasing `times` (see the module docs):
/// zero crossings of the mean-removed signal when they give at least [`MIN_CROSSING_PERIODS`]
/// regular periods, else the spectral peak when the window holds at least
/// [`MIN_SPECTRAL_PERIODS`] of its periods; else the reason there is none.
pub fn lift_frequency(times: &[f64], signal: &[f64]) -> Result<Frequency, String> {
    let n = times.len().min(signal.len());
    if n < 4 {
        return Err(format!("only {n} lift values in the window"));
    }
    let (times, signal) = (&times[..n], &signal[..n]);
    if signal.iter().chain(times).any(|v| !v.is_finite()) {
        return Err("the lift or its times are not finite".into());
    }
    if times.windows(2).any(|w| w[1] <= w[0]) {
        return Err("the sample times do not increase".into());
    }
    let mean = signal.iter().sum::<f64>() / n as f64;
    let x: Vec<f64> = signal.iter().map(|s| s - mean).collect();
    let rms = (x.iter().map(|v| v * v).sum::<f64>() / n as f64).sqrt();
    if rms <= 1e-12 * mean.abs().max(f64::MIN_POSITIVE) {
        return Err("the lift does not oscillate".into());
    }
    let crossings = upward_crossings(times, &x, 0.25 * rms);
    let crossing_periods = crossings.len().saturating_sub(1);
    let mut irregular = None;
    if crossing_periods >= MIN_CROSSING_PERIODS {
        let periods: Vec<f64> = crossings.windows(2).map(|w| w[1] - w[0]).collect();
        let m = periods.len() as f64;
        let mean_period = (crossings[crossings.len() - 1] - crossings[0]) / m;
        let var = periods
            .iter()
            .map(|p| (p - mean_period).powi(2))
            .sum::<f64>()
            / m;
        let spread = var.sqrt() / mean_period;
        if spread <= MAX_PERIOD_SPREAD {
            return Ok(Frequency {
                frequency_hz: 1.0 / mean_period,
                periods: m,
                method: FrequencyMethod::ZeroCrossings,
            });
        }
        irregular = Some(spread);
    }
    let duration = times[n - 1] - times[0];
    let spectral = spectral_peak(times, &x);
    match spectral {
        Some(f) if f * duration >= MIN_SPECTRAL_PERIODS => Ok(Frequency {
            frequency_hz: f,
            periods: f * duration,
            method: FrequencyMethod::Spectrum,
        }),
        _ => {
            let crossing_part = match irregular {
                Some(spread) => format!(
                    "the {crossing_periods} zero-crossing periods vary by {:.0} %",
                    100.0 * spread
                ),
                None => format!(
                    "{crossing_periods} lift periods between zero crossings ({MIN_CROSSING_PERIODS} \
                     needed)"
                ),
            };
            let spectral_part = match spectral {
                Some(f) => format!(
                    "{:.1} periods of the spectral peak ({MIN_SPECTRAL_PERIODS} needed)",
                    f * duration
                ),
                None => "no spectral peak".into(),
            };
            Err(format!("{crossing_part} and {spectral_part}; run longer"))
        }
    }
}

/// Times of the upward zero crossings of `x` (linear interpolation), each counted only after
/// `x` fell below `-hysteresis` since the previous one, so that noise around zero does not add
/// crossings.
fn upward_crossings(t: &[f64], x: &[f64], hysteresis: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let mut armed = false;
    for i in 0..x.len() - 1 {
        if x[i] < -hysteresis {
            armed = true;
        }
        if armed && x[i] < 0.0 && x[i + 1] >= 0.0 {
            let frac = -x[i] / (x[i + 1] - x[i]);
            out.push(t[i] + frac * (t[i + 1] - t[i]));
            armed = false;
        }
    }
    out
}

/// The frequency of the largest spectral peak of `x` (mean removed) at `times`: resampled
/// evenly (linear interpolation, as many points), Hann window, zero-padded to four times the
/// length (a power of two) and transformed; the largest bin above two periods per window is
/// refined by a parabola through the log magnitudes of it and its neighbours.
fn spectral_peak(times: &[f64], x: &[f64]) -> Option<f64> {
    let n = x.len();
    let (t0, duration) = (times[0], times[n - 1] - times[0]);
    let h = duration / (n - 1) as f64;
    let mut even = Vec::with_capacity(n);
    let mut j = 0;
    for k in 0..n {
        let t = t0 + k as f64 * h;
        while j + 2 < n && times[j + 1] < t {
            j += 1;
        }
        let frac = ((t - times[j]) / (times[j + 1] - times[j])).clamp(0.0, 1.0);
        even.push(x[j] + frac * (x[j + 1] - x[j]));
    }
    let mean = even.iter().sum::<f64>() / n as f64;
    let m = (4 * n).next_power_of_two();
    let mut re = vec![0.0; m];
    let mut im = vec![0.0; m];
    for (k, v) in even.iter().enumerate() {
        let w = 0.5 * (1.0 - (2.0 * PI * k as f64 / (n - 1) as f64).cos());
        re[k] = (v - mean) * w;
    }
    fft(&mut re, &mut im);
    let mag = |k: usize| (re[k] * re[k] + im[k] * im[k]).sqrt();
    // Bin k is k / (m h) Hz; skip the window's own low-frequency lobe (below 2 periods).
    let lowest = ((2.0 * m as f64 / (n - 1) as f64).ceil() as usize).max(1);
    let peak = (lowest..m / 2).max_by(|&a, &b| mag(a).total_cmp(&mag(b)))?;
    if mag(peak) <= 0.0 {
        return None;
    }
    let (a, b, c) = (mag(peak - 1), mag(peak), mag(peak + 1));
    let shift = if a > 0.0 && c > 0.0 {
        let (la, lb, lc) = (a.ln(), b.ln(), c.ln());
        let den = la - 2.0 * lb + lc;
        if den < 0.0 {
            (0.5 * (la - lc) / den).clamp(-0.5, 0.5)
        } else {
            0.0
        }
    } else {
        0.0
    };
    Some((peak as f64 + shift) / (m as f64 * h))
}

/// In-place radix-2 FFT (`X_k = sum_j x_j e^{-2 pi i j k / m}`), `re.len()` a power of two:
/// bit-reversal permutation, then butterflies with twiddles from one table of `e^{-2 pi i k/m}`.
fn fft(re: &mut [f64], im: &mut [f64]) {
    let m = re.len();
    if m < 2 {
        return;
    }
    let mut j = 0;
    for i in 1..m {
        let mut bit = m >> 1;
        while j & bit != 0 {
            j ^= bit;
            bit >>= 1;
        }
        j |= bit;
        if i < j {
            re.swap(i, j);
            im.swap(i, j);
        }
    }
    let twiddle: Vec<(f64, f64)> = (0..m / 2)
        .map(|k| {
            let (s, c) = (-2.0 * PI * k as f64 / m as f64).sin_cos();
            (c, s)
        })
        .collect();
    let mut len = 2;
    while len <= m {
        let half = len / 2;
        let stride = m / len;
        for start in (0..m).step_by(len) {
            for k in 0..half {
                let (wr, wi) = twiddle[k * stride];
                let (a, b) = (start + k, start + k + half);
                let tr = re[b] * wr - im[b] * wi;
                let ti = re[b] * wi + im[b] * wr;
                re[b] = re[a] - tr;
                im[b] = im[a] - ti;
                re[a] += tr;
                im[a] += ti;
            }
        }
        len *= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::config;
    use super::super::ForceSeries;
    use super::*;

    #[test]
    fn too_short_a_signal_gives_no_strouhal_number_and_says_why() {
        // 6 periods in the window: neither 10 crossing periods nor 30 spectral ones.
        let period = 100.0;
        let t: Vec<f64> = (0..600).map(|i| i as f64).collect();
        let x: Vec<f64> = t.iter().map(|t| (2.0 * PI * t / period).sin()).collect();
        let e = lift_frequency(&t, &x).unwrap_err();
        assert!(e.contains("lift periods") && e.contains("spectral"), "{e}");
        assert!(!e.contains('\n'));
        assert!(lift_frequency(&t[..3], &x[..3]).is_err());
        // Non-increasing times are refused, not divided by.
        let mut bad = t.clone();
        bad[10] = bad[9];
        assert!(lift_frequency(&bad, &x).unwrap_err().contains("increase"));
        // Nothing recorded at all.
        let s = ForceSeries::new(config(1), None).unwrap().summary();
        assert_eq!(s[0].samples, 0);
        assert!(s[0].to_string().contains("no force rows"));
    }

    /// A reproducible pseudo-random sequence in [-1, 1) (SplitMix64).
    fn noise(n: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
                let mut z = s;
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
            })
            .collect()
    }

    #[test]
    fn irregular_lift_falls_back_to_the_spectral_peak() {
        // A strong second tone at 2.37 f makes the zero-crossing periods irregular; the
        // spectrum still peaks at f. Irregular sampling too (every 1 or 2 units of time).
        let f = 1.0 / 57.3;
        let mut t = Vec::new();
        let mut time = 0.0;
        for (i, r) in noise(4000, 3).iter().enumerate() {
            t.push(time);
            time += if i % 3 == 0 { 2.0 } else { 1.0 } + 0.1 * r;
        }
        let wobble = noise(t.len(), 9);
        let x: Vec<f64> = t
            .iter()
            .zip(&wobble)
            .map(|(&t, w)| {
                (2.0 * PI * f * t).sin() + 0.8 * (2.0 * PI * 2.37 * f * t + 0.3).sin() + 0.2 * w
            })
            .collect();
        let got = lift_frequency(&t, &x).unwrap();
        assert_eq!(got.method, FrequencyMethod::Spectrum);
        assert!((got.frequency_hz - f).abs() / f < 5e-3, "{got:?} vs {f}");
        assert!(got.periods > 30.0);
        // Noise alone on a clean sine does not fool the zero crossings (hysteresis).
        let t: Vec<f64> = (0..3000).map(|i| i as f64).collect();
        let n = noise(t.len(), 5);
        let x: Vec<f64> = t
            .iter()
            .zip(&n)
            .map(|(&t, w)| (2.0 * PI * f * t).sin() + 0.05 * w)
            .collect();
        let got = lift_frequency(&t, &x).unwrap();
        assert_eq!(got.method, FrequencyMethod::ZeroCrossings);
        assert!((got.frequency_hz - f).abs() / f < 5e-3, "{got:?}");
    }

    #[test]
    fn fft_matches_the_direct_sum() {
        let x = noise(64, 1);
        let (mut re, mut im) = (x.clone(), vec![0.0; 64]);
        fft(&mut re, &mut im);
        for k in [0usize, 1, 5, 31, 32, 63] {
            let (mut sr, mut si) = (0.0, 0.0);
            for (j, v) in x.iter().enumerate() {
                let a = -2.0 * PI * (j * k) as f64 / 64.0;
                sr += v * a.cos();
                si += v * a.sin();
            }
            assert!(
                (re[k] - sr).abs() < 1e-9 && (im[k] - si).abs() < 1e-9,
                "bin {k}"
            );
        }
    }
}
