//! The multi-term periodogram's CPU backend against the f64 least-squares
//! reference (src/reference/lombscargle_chi2.rs): every option, f32 and
//! f64, frequency arrays, uniform grids and batches, plus the errors.
//!
//! Tolerances (max error relative to the periodogram's largest value): f64
//! 1e-9. Both sides sum in f64 (~1e-15 relative); they differ in how the
//! sums are formed (recurrence and product-to-sum identities vs direct sin
//! and cos per harmonic, ~1e-14) and in the solve (Cholesky vs pivoted
//! elimination), each amplified by the normal matrix's condition number,
//! which stays under ~1e4 for random times and at least 3 samples per
//! unknown at frequencies above one cycle over the span; 'model' adds up
//! to 1 / (1 - p / chi2_ref) ~ 10. f32: 1e-5, the CPU path computing in f64
//! from the same f32 inputs the reference sees and rounding the result to
//! f32 (6e-8), with room for the f32 frequencies' rounding of the phases.
mod chi2_cases;

use chi2_cases::{case, freqs, opts, scaled_error, Case};
use kernpack::api::lombscargle::batch::BatchGrid;
use kernpack::api::lombscargle::chi2::{
    Chi2Batch, Chi2Normalization, Chi2Options, Chi2Series, UniformGrid,
};
use kernpack::reference::lombscargle_chi2::lombscargle_chi2 as reference;
use kernpack::{Backend, Float, Kernpack};
use proptest::prelude::*;

fn cpu(threads: usize) -> Kernpack {
    Kernpack::new(Backend::Cpu)
        .and_then(|k| k.with_cpu_threads(threads))
        .expect("the CPU backend is always there")
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

fn to_f64<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// The CPU backend against the reference on `c` at `f`, in `T`.
fn check<T: Float>(c: &Case, f: &[f64], uniform: Option<UniformGrid>, tol: f64) {
    let (t, y) = (cast::<T>(&c.t), cast::<T>(&c.y));
    let dy = c.dy.as_ref().map(|d| cast::<T>(d));
    let mut series = Chi2Series::new(&t, &y);
    if let Some(dy) = &dy {
        series = series.with_dy(dy);
    }
    let kp = cpu(3);
    let (got, f_used) = match uniform {
        Some(grid) => (
            kp.lombscargle_chi2_uniform(&series, &grid, &c.opts)
                .unwrap(),
            grid.frequencies(),
        ),
        None => {
            let fa = cast::<T>(f);
            let got = kp.lombscargle_chi2(&series, &fa, &c.opts).unwrap();
            (got, to_f64(&fa))
        }
    };
    let want = reference(&t, &y, dy.as_deref(), &f_used, &c.opts);
    let err = scaled_error(&to_f64(&got), &want);
    assert!(
        err <= tol,
        "{} error {err:e} > {tol:e}: {:?}",
        T::NAME,
        c.opts
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(chi2_cases_count()))]

    #[test]
    fn cpu_matches_the_reference(
        seed in any::<u64>(),
        n in 1usize..200,
        nterms in 1usize..=6,
        fit_mean in any::<bool>(),
        center in any::<bool>(),
        norm in 0usize..4,
        with_dy in any::<bool>(),
        nf in 1usize..40,
        uniform in any::<bool>(),
    ) {
        let c = case(seed, n, opts(nterms, fit_mean, center, norm), with_dy);
        let f = freqs(seed, &c, nf);
        let grid = uniform.then(|| UniformGrid::spanning(c.lo, c.hi, nf));
        check::<f64>(&c, &f, grid, 1e-9);
        check::<f32>(&c, &f, grid, 1e-5);
    }
}

fn chi2_cases_count() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

/// The largest harmonic count, on a long series.
#[test]
fn eight_terms_and_many_samples() {
    let c = case(7, 2000, opts(8, true, true, 0), true);
    check::<f64>(&c, &freqs(7, &c, 25), None, 1e-9);
}

/// A sampled harmonic signal peaks at its frequency with power near 1.
#[test]
fn a_two_harmonic_signal_is_found() {
    let n = 400;
    let t: Vec<f64> = (0..n)
        .map(|i| i as f64 * 0.37 + (i as f64 * 1.3).sin())
        .collect();
    let f_true = 0.21;
    let y: Vec<f64> = t
        .iter()
        .map(|t| {
            let p = std::f64::consts::TAU * f_true * t;
            1.5 + p.sin() + 0.5 * (2.0 * p).cos()
        })
        .collect();
    let grid = UniformGrid::new(0.01, 0.001, 400);
    let o = Chi2Options {
        nterms: 2,
        ..Chi2Options::default()
    };
    let p = cpu(2)
        .lombscargle_chi2_uniform(&Chi2Series::new(&t, &y), &grid, &o)
        .unwrap();
    let best = (0..p.len()).max_by(|&a, &b| p[a].total_cmp(&p[b])).unwrap();
    assert!(
        (grid.frequency(best) - f_true).abs() < 1e-9,
        "{}",
        grid.frequency(best)
    );
    assert!(p[best] > 1.0 - 1e-9, "{}", p[best]);
}

/// Results do not depend on the thread count (each frequency is one thread's).
#[test]
fn bitwise_equal_over_thread_counts() {
    let c = case(11, 150, opts(3, true, false, 1), true);
    let f = freqs(11, &c, 333);
    let series = Chi2Series::new(&c.t, &c.y).with_dy(c.dy.as_ref().unwrap());
    let one = cpu(1).lombscargle_chi2(&series, &f, &c.opts).unwrap();
    for threads in [2, 3, 8] {
        assert_eq!(
            cpu(threads).lombscargle_chi2(&series, &f, &c.opts).unwrap(),
            one
        );
    }
}

/// A batch is its series run one by one, with shared and per-series grids.
#[test]
fn batches_are_their_series() {
    let o = opts(2, true, true, 2);
    let cases: Vec<Case> = (0..5)
        .map(|s| case(100 + s, 20 + 13 * s as usize, o, s % 2 == 0))
        .collect();
    let mut offsets = vec![0];
    let (mut t, mut y, mut dy) = (Vec::new(), Vec::new(), Vec::new());
    for c in &cases {
        t.extend(&c.t);
        y.extend(&c.y);
        dy.extend(c.dy.clone().unwrap_or_else(|| vec![1.0; c.t.len()]));
        offsets.push(t.len());
    }
    let batch = Chi2Batch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets,
    };
    let f0: Vec<f64> = cases.iter().map(|c| c.lo).collect();
    let df: Vec<f64> = cases.iter().map(|c| (c.hi - c.lo) / 50.0).collect();
    let kp = cpu(2);
    for grids in [
        BatchGrid::Shared(UniformGrid::new(0.05, 0.01, 51)),
        BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf: 51,
        },
    ] {
        let all = kp.lombscargle_chi2_batch(&batch, &grids, &o).unwrap();
        assert_eq!(all.len(), cases.len());
        for (s, got) in all.iter().enumerate() {
            let one = kp
                .lombscargle_chi2_uniform(&batch.series(s), &grids.grid(s), &o)
                .unwrap();
            assert_eq!(got, &one, "series {s}");
        }
    }
}

/// Bad input is an error naming the argument and value.
#[test]
fn bad_input_is_rejected() {
    let c = case(3, 30, opts(1, true, true, 0), true);
    let dy = c.dy.clone().unwrap();
    let kp = cpu(1);
    let f = [0.1, 0.2];
    let err = |series: Chi2Series<'_, f64>, f: &[f64], o: Chi2Options| {
        kp.lombscargle_chi2(&series, f, &o).unwrap_err().to_string()
    };
    let s = Chi2Series::new(&c.t, &c.y).with_dy(&dy);
    let o = c.opts;
    assert!(err(s, &f, Chi2Options { nterms: 0, ..o }).contains("nterms = 0"));
    assert!(err(s, &f, Chi2Options { nterms: 9, ..o }).contains("nterms = 9"));
    assert!(err(s, &[], o).contains("no frequencies"));
    assert!(err(s, &[0.1, f64::NAN], o).contains("frequency[1]"));
    let mut bad = dy.clone();
    bad[4] = 0.0;
    assert!(err(Chi2Series::new(&c.t, &c.y).with_dy(&bad), &f, o).contains("dy[4] = 0"));
    let mut bad = c.y.clone();
    bad[2] = f64::INFINITY;
    assert!(err(Chi2Series::new(&c.t, &bad), &f, o).contains("y[2] = inf"));
    assert!(err(Chi2Series::new(&c.t, &c.y[1..]), &f, o).contains("differ in length"));
    assert!(err(Chi2Series::new(&[], &[]), &f, o).contains("empty"));
    let flat = vec![2.5; c.t.len()];
    assert!(err(Chi2Series::new(&c.t, &flat), &f, o).contains("does not vary"));
    // 'psd' does not divide by chi2_ref: a constant series is a zero periodogram.
    let psd = Chi2Options {
        normalization: Chi2Normalization::Psd,
        ..o
    };
    let p = kp
        .lombscargle_chi2(&Chi2Series::new(&c.t, &flat), &f, &psd)
        .unwrap();
    assert!(p.iter().all(|v| v.abs() < 1e-20), "{p:?}");
    let grid = UniformGrid::new(0.1, -0.01, 10);
    let e = kp
        .lombscargle_chi2_uniform(&s, &grid, &o)
        .unwrap_err()
        .to_string();
    assert!(e.contains("df"), "{e}");
    "standard".parse::<Chi2Normalization>().unwrap();
    let e = "psd2".parse::<Chi2Normalization>().unwrap_err().to_string();
    assert!(e.contains("normalization='psd2' not recognized"), "{e}");
}

/// At f = 0 every sine column vanishes: the dropped unknowns leave the fit
/// of the remaining columns (finite), not a singular solve.
#[test]
fn zero_frequency_is_finite() {
    let c = case(5, 50, opts(2, true, false, 0), false);
    let p = cpu(1)
        .lombscargle_chi2(&Chi2Series::new(&c.t, &c.y), &[0.0], &c.opts)
        .unwrap();
    assert!(p[0].is_finite() && p[0].abs() < 1e-9, "{p:?}");
}
