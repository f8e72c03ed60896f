//! Ragged light curves for the multi-GPU unit tests (emulated and on a real GPU).
use std::ops::Range;

use crate::test_rng::Rng;

/// Series with weights and a grid (angular f0, df) per series.
pub(super) struct Ragged {
    pub t: Vec<f32>,
    pub y: Vec<f32>,
    pub w: Vec<f32>,
    pub offsets: Vec<usize>,
    pub f0: Vec<f64>,
    pub df: Vec<f64>,
}

/// `nseries` series of a sample count drawn from `samples`, each a sinusoid
/// plus noise over its own time span, from `seed`.
pub(super) fn ragged(nseries: usize, samples: Range<u64>, seed: u64) -> Ragged {
    let mut rng = Rng(seed);
    let mut d = Ragged {
        t: vec![],
        y: vec![],
        w: vec![],
        offsets: vec![0],
        f0: vec![],
        df: vec![],
    };
    for _ in 0..nseries {
        let n = samples.start + rng.below(samples.end - samples.start);
        let span = 10.0 + 50.0 * rng.next();
        for _ in 0..n {
            let t = span * rng.next();
            d.t.push(t as f32);
            d.y.push((1.0 + (1.3 * t).sin() + 0.3 * rng.next()) as f32);
            d.w.push((0.5 + rng.next()) as f32);
        }
        d.offsets.push(d.t.len());
        d.f0.push(0.05 + 0.1 * rng.next());
        d.df.push(0.01 + 0.01 * rng.next());
    }
    d
}
