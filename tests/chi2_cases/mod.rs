//! Random cases of the multi-term periodogram shared by its CPU and GPU
//! tests: everything derived from a seed, so a failure reproduces.
#![allow(dead_code)]

use std::f64::consts::TAU;

use kernpack::api::lombscargle::chi2::{Chi2Normalization, Chi2Options};

/// splitmix64 (as tests/common's Rng).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }
    pub fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.next()
    }
}

pub const NORMALIZATIONS: [Chi2Normalization; 4] = [
    Chi2Normalization::Standard,
    Chi2Normalization::Model,
    Chi2Normalization::Log,
    Chi2Normalization::Psd,
];

#[derive(Debug, Clone)]
pub struct Case {
    pub t: Vec<f64>,
    pub y: Vec<f64>,
    pub dy: Option<Vec<f64>>,
    /// Frequencies (cycles per unit time) from one cycle over the span (the
    /// fit is well conditioned there: lower, every sine column tends to 0)
    /// up to a few times the mean Nyquist frequency.
    pub lo: f64,
    pub hi: f64,
    pub opts: Chi2Options,
}

/// A case of `n` samples (at least 3 per unknown, so that the fit never
/// takes up the whole chi^2: 'model' divides by chi2_ref - p).
pub fn case(seed: u64, n: usize, opts: Chi2Options, with_dy: bool) -> Case {
    let mut rng = Rng(seed);
    let n = n.max(3 * opts.unknowns());
    let span = rng.range(1.0, 300.0);
    let origin = rng.range(-100.0, 5e3);
    let t: Vec<f64> = (0..n).map(|_| origin + rng.range(0.0, span)).collect();
    let period = span / rng.range(2.0, 40.0);
    let offset = rng.range(-5.0, 5.0);
    let y: Vec<f64> = t
        .iter()
        .map(|t| {
            let p = TAU * t / period;
            offset + p.sin() + 0.4 * (2.0 * p + 1.0).cos() + rng.range(-0.7, 0.7)
        })
        .collect();
    let dy = with_dy.then(|| (0..n).map(|_| rng.range(0.1, 2.0)).collect());
    Case {
        t,
        y,
        dy,
        lo: 1.0 / span,
        hi: 2.0 * n as f64 / span,
        opts,
    }
}

pub fn opts(nterms: usize, fit_mean: bool, center_data: bool, norm: usize) -> Chi2Options {
    Chi2Options {
        nterms,
        fit_mean,
        center_data,
        normalization: NORMALIZATIONS[norm % 4],
    }
}

/// `nf` random frequencies in [lo, hi].
pub fn freqs(seed: u64, c: &Case, nf: usize) -> Vec<f64> {
    let mut rng = Rng(seed ^ 0x5eed);
    (0..nf).map(|_| rng.range(c.lo, c.hi)).collect()
}

/// max |a - b| / max |b|.
pub fn scaled_error(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let scale = b
        .iter()
        .fold(0.0f64, |m, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    let err = a.iter().zip(b).fold(0.0f64, |m, (x, y)| {
        if x.is_nan() || y.is_nan() {
            f64::INFINITY
        } else {
            m.max((x - y).abs())
        }
    });
    err / scale
}
