//! The safe API's validation and backend behaviour (CPU backend: runs everywhere).
mod common;

use common::gpu_or_skip;
use kernpack::api::lombscargle::validate;
use kernpack::{Backend, Error, Kernpack, LombScargleOptions, Normalize, Periodogram, Series};

fn opts(normalize: Normalize, floating_mean: bool) -> LombScargleOptions {
    LombScargleOptions {
        normalize,
        floating_mean,
        precenter: false,
    }
}

#[test]
fn bad_inputs_are_rejected_with_a_message_naming_them() {
    let t = [0.0, 1.0, 2.5, 3.1];
    let y = [1.0, -1.0, 0.5, 0.2];
    let f = [0.5, 1.0];
    let p = LombScargleOptions::default();
    let cases: Vec<(Series<f64>, Vec<f64>, &str)> = vec![
        (Series::new(&[], &[]), f.to_vec(), "empty"),
        (Series::new(&t, &y[..3]), f.to_vec(), "y has 3"),
        (
            Series::new(&t, &y).with_weights(&[1.0; 3]),
            f.to_vec(),
            "weights has 3",
        ),
        (Series::new(&t, &y), vec![], "no frequencies"),
        (
            Series::new(&t, &[1.0, f64::NAN, 0.0, 1.0]),
            f.to_vec(),
            "y[1]",
        ),
        (
            Series::new(&[0.0, f64::INFINITY, 1.0, 2.0], &y),
            f.to_vec(),
            "t[1]",
        ),
        (Series::new(&t, &y), vec![0.5, -1.0], "freqs[1]"),
        (
            Series::new(&t, &y).with_weights(&[1.0, -0.1, 1.0, 1.0]),
            f.to_vec(),
            "weights[1]",
        ),
        (
            Series::new(&t, &y).with_weights(&[0.0; 4]),
            f.to_vec(),
            "sum to zero",
        ),
    ];
    for (series, freqs, needle) in cases {
        let err = validate(&series, &freqs, &p).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        assert!(
            err.to_string().contains(needle),
            "{err} should mention {needle:?}"
        );
    }
}

#[test]
fn normalize_needs_variance_but_accepts_a_large_offset() {
    let t: Vec<f64> = (0..50).map(|i| i as f64 * 0.7).collect();
    let constant = vec![5.0; 50];
    let err = validate(
        &Series::new(&t, &constant),
        &[1.0],
        &opts(Normalize::Normalize, true),
    )
    .unwrap_err();
    assert!(err.to_string().contains("vary"), "{err}");
    // y = 1e6 + a 1e-3 signal: tiny next to its mean, still a signal.
    let offset: Vec<f64> = t.iter().map(|t| 1e6 + 1e-3 * (1.3 * t).sin()).collect();
    validate(
        &Series::new(&t, &offset),
        &[1.0],
        &opts(Normalize::Normalize, true),
    )
    .unwrap();
}

/// With a floating mean, YY - Y^2 must not cancel away a small signal riding on
/// a large offset: the normalized peak stays near 1 (a pure sinusoid).
fn large_offset_peak(kp: &Kernpack) -> f64 {
    let t: Vec<f64> = (0..400)
        .map(|i| i as f64 * 0.37 + (i as f64 * 0.61).sin())
        .collect();
    let y: Vec<f64> = t.iter().map(|t| 1e6 + 1e-3 * (1.3 * t).sin()).collect();
    let freqs = [1.3];
    let Periodogram::Real(p) = kp
        .lombscargle(
            &Series::new(&t, &y),
            &freqs,
            &opts(Normalize::Normalize, true),
        )
        .unwrap()
    else {
        unreachable!()
    };
    p[0]
}

#[test]
fn normalized_power_survives_a_large_offset() {
    let cpu = large_offset_peak(&Kernpack::new(Backend::Cpu).unwrap());
    assert!((cpu - 1.0).abs() < 1e-6, "cpu {cpu}");
    if let Some(gpu) = gpu_or_skip("normalized_power_survives_a_large_offset") {
        let on_gpu = large_offset_peak(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
        assert!((on_gpu - 1.0).abs() < 1e-6, "gpu {on_gpu}");
    }
}

#[test]
fn cpu_backend_reports_progress_to_completion() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let seen = Arc::new(AtomicU64::new(0));
    let sink = seen.clone();
    let kp = Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_progress(Arc::new(move |done, total| {
            assert!(done <= total);
            sink.fetch_max(done, Ordering::Relaxed);
        }));
    let t: Vec<f64> = (0..64).map(|i| i as f64).collect();
    let freqs: Vec<f64> = (1..=1000).map(|k| k as f64 * 1e-3).collect();
    kp.lombscargle(&Series::new(&t, &t), &freqs, &LombScargleOptions::default())
        .unwrap();
    assert_eq!(seen.load(Ordering::Relaxed), 1000);
}
