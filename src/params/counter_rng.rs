//! Counter-based random numbers: Philox-4x32-10 (Salmon et al., SC'11), the
//! generator of cuRAND's and JAX's counter-based streams. A draw is a pure
//! function of (key, counter), so every backend, thread count and GPU count
//! draws the same numbers for the same seed: the stochastic forcing of the
//! Lorenz 96 ensembles is keyed by (seed, member, step, site).
//! csrc/counter_rng.cuh is the same generator on the device.

const MULTIPLIERS: [u32; 2] = [0xD251_1F53, 0xCD9E_8D57];
const KEY_STEPS: [u32; 2] = [0x9E37_79B9, 0xBB67_AE85];

/// Philox-4x32 with 10 rounds of `counter` under `key`.
pub fn philox4x32_10(counter: [u32; 4], key: [u32; 2]) -> [u32; 4] {
    let (mut c, mut k) = (counter, key);
    for round in 0..10 {
        if round > 0 {
            k = [
                k[0].wrapping_add(KEY_STEPS[0]),
                k[1].wrapping_add(KEY_STEPS[1]),
            ];
        }
        let p0 = u64::from(MULTIPLIERS[0]) * u64::from(c[0]);
        let p1 = u64::from(MULTIPLIERS[1]) * u64::from(c[2]);
        let (hi0, lo0) = ((p0 >> 32) as u32, p0 as u32);
        let (hi1, lo1) = ((p1 >> 32) as u32, p1 as u32);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// The four words of the draw for (seed, stream, index, lane): the counter is
/// (lane, index low, index high, stream), the key the seed's two halves.
pub fn draw(seed: u64, stream: u64, index: u64, lane: u32) -> [u32; 4] {
    let counter = [lane, index as u32, (index >> 32) as u32, stream as u32];
    philox4x32_10(counter, [seed as u32, (seed >> 32) as u32])
}

/// A standard normal value from a draw (Box-Muller, cosine branch): two
/// uniforms of 53 bits, the first in (0, 1] so that its logarithm is finite
/// (|value| <= 8.6).
pub fn standard_normal(words: [u32; 4]) -> f64 {
    let a = (u64::from(words[0]) << 32 | u64::from(words[1])) >> 11;
    let b = (u64::from(words[2]) << 32 | u64::from(words[3])) >> 11;
    let scale = 1.0 / (1u64 << 53) as f64;
    let (u1, u2) = ((a + 1) as f64 * scale, b as f64 * scale);
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// A standard normal value in single precision from a draw, as the f32
/// kernels compute it (24-bit uniforms, float logarithm and cosine): the
/// f32 runs' noise, to within the float functions' few ulps.
pub fn standard_normal_f32(words: [u32; 4]) -> f32 {
    let scale = 1.0 / (1u32 << 24) as f32;
    let (u1, u2) = (
        ((words[0] >> 8) + 1) as f32 * scale,
        (words[2] >> 8) as f32 * scale,
    );
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Random123's known-answer vectors for philox4x32_10.
    #[test]
    fn philox_known_answers() {
        assert_eq!(
            philox4x32_10([0, 0, 0, 0], [0, 0]),
            [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
                [0xa409_3822, 0x299f_31d0]
            ),
            [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
        );
    }

    /// Mean, variance and the tails of 2^18 draws: N(0, 1) within sampling
    /// error (standard errors 0.002 and 0.003; 5 of them allowed).
    #[test]
    fn normals_are_standard() {
        let n = 1 << 18;
        for f32_case in [false, true] {
            let v: Vec<f64> = (0..n)
                .map(|i| {
                    let w = draw(42, 7, i, 3);
                    match f32_case {
                        true => f64::from(standard_normal_f32(w)),
                        false => standard_normal(w),
                    }
                })
                .collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            assert!(mean.abs() < 0.01, "mean {mean}");
            assert!((var - 1.0).abs() < 0.015, "variance {var}");
            let beyond2 = v.iter().filter(|x| x.abs() > 2.0).count() as f64 / n as f64;
            assert!((beyond2 - 0.0455).abs() < 0.003, "P(|z| > 2) = {beyond2}");
        }
    }

    #[test]
    fn draws_differ_by_every_coordinate() {
        let base = draw(1, 2, 3, 4);
        for other in [
            draw(2, 2, 3, 4),
            draw(1, 3, 3, 4),
            draw(1, 2, 4, 4),
            draw(1, 2, 3, 5),
        ] {
            assert_ne!(base, other);
        }
        assert_eq!(base, draw(1, 2, 3, 4));
        // The index's high word counts too.
        assert_ne!(draw(1, 2, 3, 4), draw(1, 2, 3 + (1 << 32), 4));
    }
}
