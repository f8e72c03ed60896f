//! Batched ragged series: one launch gives what one call per series gives.
mod common;

use std::f64::consts::TAU;

use common::{flat, gpu_or_skip};
use kernpack::api::lombscargle::batch::{validate_batch, Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Normalize};

struct Data {
    t: Vec<f64>,
    y: Vec<f64>,
    w: Vec<f64>,
    offsets: Vec<usize>,
    f0: Vec<f64>,
    df: Vec<f64>,
}

/// `nseries` light curves of `lo..hi` samples each, periods 0.5-5, each with a
/// grid from one cycle over its span, oversampled 5x.
fn ragged(nseries: usize, lo: usize, hi: usize, seed: u64) -> Data {
    let mut state = seed.max(1);
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut d = Data {
        t: vec![],
        y: vec![],
        w: vec![],
        offsets: vec![0],
        f0: vec![],
        df: vec![],
    };
    for _ in 0..nseries {
        let n = lo + (next() * (hi - lo) as f64) as usize;
        let (origin, span, period) = (next() * 1e4, 20.0 + next() * 200.0, 0.5 + 4.5 * next());
        for _ in 0..n {
            let t = origin + span * next();
            d.t.push(t);
            d.y.push(3.0 + (TAU * t / period).sin() + 0.5 * (next() - 0.5));
            d.w.push(0.2 + next());
        }
        d.offsets.push(d.t.len());
        d.f0.push(TAU / span);
        d.df.push(TAU / (5.0 * span));
    }
    d
}

fn batch<'a, T>(t: &'a [T], y: &'a [T], w: &'a [T], offsets: &'a [usize]) -> Batch<'a, T> {
    Batch {
        t,
        y,
        weights: Some(w),
        offsets,
    }
}

#[test]
fn cpu_batch_equals_one_call_per_series() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let d = ragged(7, 16, 90, 3);
    let grids = BatchGrid::PerSeries {
        f0: &d.f0,
        df: &d.df,
        nf: 333,
    };
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    let b = batch(&d.t, &d.y, &d.w, &d.offsets);
    let all = kp.lombscargle_batch(&b, &grids, &opts).unwrap();
    assert_eq!(all.len(), 7);
    for (s, got) in all.iter().enumerate() {
        let one = kp
            .lombscargle_uniform(&b.series(s), &grids.grid(s), &opts)
            .unwrap();
        assert_eq!(got, &one, "series {s}");
    }
}

#[test]
fn bad_batches_are_rejected() {
    let d = ragged(3, 16, 40, 5);
    let opts = LombScargleOptions::default();
    let shared = BatchGrid::Shared(UniformGrid::new(0.1, 0.01, 100));
    let check = |offsets: &[usize], grids: &BatchGrid, needle: &str| {
        let b = batch(&d.t, &d.y, &d.w, offsets);
        let err = validate_batch(&b, grids, &opts).unwrap_err().to_string();
        assert!(err.contains(needle), "{err} should mention {needle:?}");
    };
    let n = d.t.len();
    check(&[0, n - 1], &shared, "end at");
    check(&[1, n], &shared, "start at");
    check(&[0, 5, 5, n], &shared, "series 1 is empty");
    check(
        &d.offsets,
        &BatchGrid::PerSeries {
            f0: &d.f0[..2],
            df: &d.df,
            nf: 10,
        },
        "3 series but 2 f0",
    );
    check(
        &d.offsets,
        &BatchGrid::Shared(UniformGrid::new(0.1, -0.01, 100)),
        "series 0: grid df",
    );
    let mut y = d.y.clone();
    y[d.offsets[2] + 1] = f64::NAN;
    let b = batch(&d.t, &y, &d.w, &d.offsets);
    let err = validate_batch(&b, &shared, &opts).unwrap_err().to_string();
    assert!(err.contains("series 2") && err.contains("y[1]"), "{err}");
}

/// The batched kernel runs the same chunks as the single-series one, so each
/// periodogram must be bitwise the one a separate call gives.
fn gpu_batch_is_bitwise_per_series<T: Float>(normalize: Normalize, floating_mean: bool) {
    let Some(gpu) = gpu_or_skip("gpu_batch_is_bitwise_per_series") else {
        return;
    };
    let d = ragged(300, 20, 400, 11);
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y, w) = (cast(&d.t), cast(&d.y), cast(&d.w));
    let b = batch(&t, &y, &w, &d.offsets);
    let opts = LombScargleOptions {
        normalize,
        floating_mean,
        precenter: false,
    };
    for grids in [
        BatchGrid::PerSeries {
            f0: &d.f0,
            df: &d.df,
            nf: 2500,
        },
        BatchGrid::Shared(UniformGrid::new(0.02, 0.005, 700)),
    ] {
        let all = gpu.lombscargle_batch(&b, &grids, &opts).unwrap();
        for (s, got) in all.iter().enumerate() {
            let one = gpu
                .lombscargle_uniform(&b.series(s), &grids.grid(s), &opts)
                .unwrap();
            let (g, o) = (flat(got), flat(&one));
            assert!(
                g.iter().all(|v| v.is_finite()),
                "series {s}: non-finite output"
            );
            assert!(
                g.iter().zip(&o).all(|(a, b)| a.to_bits() == b.to_bits()),
                "series {s} differs"
            );
        }
    }
}

#[test]
fn gpu_batch_f32_power() {
    gpu_batch_is_bitwise_per_series::<f32>(Normalize::Power, false);
}

#[test]
fn gpu_batch_f32_normalize_floating_mean() {
    gpu_batch_is_bitwise_per_series::<f32>(Normalize::Normalize, true);
}

#[test]
fn gpu_batch_f64_amplitude_floating_mean() {
    gpu_batch_is_bitwise_per_series::<f64>(Normalize::Amplitude, true);
}
