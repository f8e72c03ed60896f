//! The bootstrap maxima: the counter-based draws, the CPU backend against the
//! reference periodograms of the same draws, reproducibility across runs and
//! thread counts, and (with a GPU) the GPU against the CPU.
mod common;

use common::{gpu_or_skip, Rng};
use kernpack::api::lombscargle::bootstrap::{
    autofrequency, bootstrap_false_alarm_level, bootstrap_false_alarm_probability, resample_index,
    BootstrapOptions,
};
use kernpack::reference::lombscargle::lombscargle as reference;
use kernpack::{Backend, Kernpack, LombScargleOptions, Normalize, PowerNormalization};

/// A noisy sinusoid of `n` irregular samples over 100 days, with errors.
fn series(n: usize, seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Rng(seed);
    let t: Vec<f64> = (0..n).map(|_| rng.range(0.0, 100.0)).collect();
    let y = t
        .iter()
        .map(|&t| 0.3 * (2.0 * std::f64::consts::PI * t / 3.7).sin() + rng.range(-1.0, 1.0))
        .collect();
    let dy = (0..n).map(|_| rng.range(0.5, 1.5)).collect();
    (t, y, dy)
}

#[test]
fn draws_are_pinned_and_uniform() {
    // The generator is part of the results' contract (csrc/bootstrap.cu
    // computes the same): these values must not change.
    let pinned: Vec<u64> = (0..6).map(|i| resample_index(42, 7, i, 300)).collect();
    assert_eq!(pinned, PINNED);
    // 300 bins, 600,000 draws: each count is 2000 +- 45 (1 sigma); 6 sigma bounds.
    let mut counts = vec![0u32; 300];
    for r in 0..2000 {
        for i in 0..300 {
            counts[resample_index(1, r, i, 300) as usize] += 1;
        }
    }
    assert!(
        counts.iter().all(|&c| (1730..=2270).contains(&c)),
        "{counts:?}"
    );
    // Different seeds, copies and positions draw differently.
    assert_ne!(
        resample_index(1, 0, 0, 1 << 40),
        resample_index(2, 0, 0, 1 << 40)
    );
    assert_ne!(
        resample_index(1, 0, 1, 1 << 40),
        resample_index(1, 1, 0, 1 << 40)
    );
}
// Also computed by an independent Python transcription of Philox-4x32-10
// (python/tests/test_significance.py's, which reproduces the published
// known answers).
const PINNED: [u64; 6] = [86, 230, 208, 191, 289, 109];

/// The maxima of the reference periodograms of the same draws, in 'standard'.
fn reference_maxima(
    t: &[f64],
    y: &[f64],
    dy: &[f64],
    fmax: f64,
    opts: &BootstrapOptions,
) -> Vec<f64> {
    let n = t.len();
    let (fmin, df, nf) = autofrequency(t, fmax, opts.samples_per_peak).unwrap();
    let freqs: Vec<f64> = (0..nf)
        .map(|k| std::f64::consts::TAU * (fmin + k as f64 * df))
        .collect();
    let ls = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    (0..opts.resamples)
        .map(|r| {
            let s: Vec<usize> = (0..n)
                .map(|i| resample_index(opts.seed, r as u64, i as u64, n as u64) as usize)
                .collect();
            let ys: Vec<f64> = s.iter().map(|&k| y[k]).collect();
            let ws: Vec<f64> = s.iter().map(|&k| 1.0 / (dy[k] * dy[k])).collect();
            let p = reference(t, &ys, Some(&ws), &freqs, &ls, None).magnitudes();
            p.into_iter().fold(f64::NEG_INFINITY, f64::max)
        })
        .collect()
}

#[test]
fn cpu_maxima_are_the_reference_periodograms_of_the_same_draws() {
    let (t, y, dy) = series(60, 3);
    let opts = BootstrapOptions {
        resamples: 24,
        seed: 99,
        samples_per_peak: 5.0,
    };
    let fmax = 2.0;
    let want = reference_maxima(&t, &y, &dy, fmax, &opts);
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let got = kp
        .lombscargle_bootstrap(&t, &y, Some(&dy), fmax, PowerNormalization::Standard, &opts)
        .unwrap();
    // Powers in [0, 1]: the CPU backend's recurrence grid and the reference's
    // direct sincos agree to ~1e-12 per value (tests/cpu_lombscargle.rs).
    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!((g - w).abs() < 1e-10, "copy {r}: {g} vs reference {w}");
    }
    // The other normalisations are maps of these.
    let model = kp
        .lombscargle_bootstrap(&t, &y, Some(&dy), fmax, PowerNormalization::Model, &opts)
        .unwrap();
    for (m, s) in model.iter().zip(&got) {
        assert!((m - s / (1.0 - s)).abs() <= 1e-12 * m.abs());
    }
}

#[test]
fn the_same_seed_gives_the_same_maxima_on_any_thread_count() {
    let (t, y, dy) = series(300, 5);
    let opts = BootstrapOptions {
        resamples: 64,
        seed: 7,
        samples_per_peak: 5.0,
    };
    let run = |threads: usize| {
        Kernpack::new(Backend::Cpu)
            .unwrap()
            .with_cpu_threads(threads)
            .unwrap()
            .lombscargle_bootstrap(&t, &y, Some(&dy), 3.0, PowerNormalization::Psd, &opts)
            .unwrap()
    };
    let one = run(1);
    assert_eq!(one, run(1));
    assert_eq!(one, run(2));
    assert_eq!(one, run(5));
    let other = Kernpack::new(Backend::Cpu)
        .unwrap()
        .lombscargle_bootstrap(
            &t,
            &y,
            Some(&dy),
            3.0,
            PowerNormalization::Psd,
            &BootstrapOptions { seed: 8, ..opts },
        )
        .unwrap();
    assert_ne!(one, other);
}

#[test]
fn fap_and_level_follow_astropys_formulas() {
    let maxima = [0.3, 0.1, f64::NAN, 0.2, 0.4];
    // 1 - searchsorted(sorted, z) / B (NaN sorts last, never below z).
    assert_eq!(
        bootstrap_false_alarm_probability(&maxima, 0.25),
        1.0 - 2.0 / 5.0
    );
    assert_eq!(
        bootstrap_false_alarm_probability(&maxima, 0.2),
        1.0 - 1.0 / 5.0
    );
    assert_eq!(bootstrap_false_alarm_probability(&maxima, 0.0), 1.0);
    // sorted[clip(floor((1 - p) B), 0, B - 1)] of [0.1, 0.2, 0.3, 0.4, NaN].
    assert_eq!(bootstrap_false_alarm_level(&maxima, 0.5), 0.3);
    assert_eq!(bootstrap_false_alarm_level(&maxima, 0.99), 0.1);
    assert_eq!(bootstrap_false_alarm_level(&maxima, 0.21), 0.4);
}

#[test]
fn bad_inputs_are_errors() {
    let (t, y, dy) = series(20, 1);
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let std = PowerNormalization::Standard;
    let opts = BootstrapOptions::default();
    let err = |r: kernpack::Result<Vec<f64>>| r.unwrap_err().to_string();
    assert!(err(kp.lombscargle_bootstrap(&t, &y[..19], None, 1.0, std, &opts)).contains("y 19"));
    let mut bad = dy.clone();
    bad[3] = 0.0;
    assert!(err(kp.lombscargle_bootstrap(&t, &y, Some(&bad), 1.0, std, &opts)).contains("dy[3]"));
    let zero = BootstrapOptions {
        resamples: 0,
        ..opts
    };
    assert!(err(kp.lombscargle_bootstrap(&t, &y, None, 1.0, std, &zero)).contains("resamples"));
    assert!(err(kp.lombscargle_bootstrap(&t, &y, None, f64::NAN, std, &opts)).contains("fmax"));
    let mut bad = y.clone();
    bad[0] = f64::INFINITY;
    assert!(err(kp.lombscargle_bootstrap(&t, &bad, None, 1.0, std, &opts)).contains("y[0]"));
}

/// The GPU draws on the device what the CPU draws on the host: the maxima
/// agree to the periodograms' rounding (f64: 1e-10 in [0, 1]; f32: both
/// pick a maximum of powers carrying ~1e-4 of rounding at N = 300).
#[test]
fn gpu_maxima_are_the_cpus() {
    let Some(gpu) = gpu_or_skip("gpu_maxima_are_the_cpus") else {
        return;
    };
    let (t, y, dy) = series(300, 11);
    let opts = BootstrapOptions {
        resamples: 200,
        seed: 2026,
        samples_per_peak: 5.0,
    };
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    let kp = Kernpack::from(gpu);
    for norm in [PowerNormalization::Standard, PowerNormalization::Psd] {
        let want = cpu
            .lombscargle_bootstrap(&t, &y, Some(&dy), 5.0, norm, &opts)
            .unwrap();
        let got = kp
            .lombscargle_bootstrap(&t, &y, Some(&dy), 5.0, norm, &opts)
            .unwrap();
        let scale = want.iter().cloned().fold(0.0, f64::max);
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-10 * scale,
                "{norm:?} copy {r}: GPU {g} vs CPU {w}"
            );
        }
        let cast = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
        let got32 = kp
            .lombscargle_bootstrap(&cast(&t), &cast(&y), Some(&cast(&dy)), 5.0, norm, &opts)
            .unwrap();
        for (r, (g, w)) in got32.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 2e-3 * scale,
                "{norm:?} f32 copy {r}: GPU {g} vs CPU {w}"
            );
        }
    }
    // Without errors too (the kernel's NULL-weights path).
    let want = cpu
        .lombscargle_bootstrap(&t, &y, None, 5.0, PowerNormalization::Log, &opts)
        .unwrap();
    let got = kp
        .lombscargle_bootstrap(&t, &y, None, 5.0, PowerNormalization::Log, &opts)
        .unwrap();
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-10 * w.abs().max(1.0));
    }
}

// -- The multi-term bootstrap -------------------------------------------------

use kernpack::api::lombscargle::chi2::{Chi2Normalization, Chi2Options, Chi2Series};
use kernpack::reference::lombscargle_chi2::lombscargle_chi2 as chi2_reference;

fn chi2_opts(nterms: usize, normalization: Chi2Normalization) -> Chi2Options {
    Chi2Options {
        nterms,
        normalization,
        ..Chi2Options::default()
    }
}

/// Copy r's maximum over astropy's grid by the least-squares reference on
/// the same draws (NaN where the copy's values do not vary).
fn chi2_reference_maxima(
    t: &[f64],
    y: &[f64],
    dy: &[f64],
    fmax: f64,
    opts: &Chi2Options,
    boot: &BootstrapOptions,
) -> Vec<f64> {
    let (fmin, df, nf) = autofrequency(t, fmax, boot.samples_per_peak).unwrap();
    let freqs: Vec<f64> = (0..nf).map(|k| fmin + k as f64 * df).collect();
    let n = t.len();
    (0..boot.resamples)
        .map(|r| {
            let draw: Vec<usize> = (0..n)
                .map(|i| resample_index(boot.seed, r as u64, i as u64, n as u64) as usize)
                .collect();
            let yr: Vec<f64> = draw.iter().map(|&d| y[d]).collect();
            if yr.iter().all(|&v| v == yr[0]) {
                return f64::NAN;
            }
            let dyr: Vec<f64> = draw.iter().map(|&d| dy[d]).collect();
            chi2_reference(t, &yr, Some(&dyr), &freqs, opts)
                .into_iter()
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect()
}

/// The CPU's multi-term maxima are the reference periodograms' maxima of the
/// same draws (1e-9 of the scale: the reference's solve against the
/// backend's), in copy order, for several harmonics and normalisations; a
/// copy of one repeated value is NaN; a repeated call gives the same bits.
#[test]
fn chi2_bootstrap_maxima_are_the_reference_periodograms_of_the_same_draws() {
    let (t, y, dy) = series(60, 5);
    let boot = BootstrapOptions {
        resamples: 24,
        seed: 99,
        samples_per_peak: 3.0,
    };
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    for (nterms, norm) in [
        (1, Chi2Normalization::Standard),
        (2, Chi2Normalization::Standard),
        (3, Chi2Normalization::Psd),
    ] {
        let opts = chi2_opts(nterms, norm);
        let series = Chi2Series {
            t: &t,
            y: &y,
            dy: Some(&dy),
        };
        let got = cpu
            .lombscargle_chi2_bootstrap(&series, 1.5, &opts, &boot)
            .unwrap();
        let want = chi2_reference_maxima(&t, &y, &dy, 1.5, &opts, &boot);
        let scale = want.iter().cloned().fold(0.0, f64::max);
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-9 * scale,
                "nterms {nterms} copy {r}: {g} vs {w}"
            );
        }
        let again = cpu
            .lombscargle_chi2_bootstrap(&series, 1.5, &opts, &boot)
            .unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
        let p = bootstrap_false_alarm_probability(&got, 0.2);
        assert!((0.0..=1.0).contains(&p), "{p}");
    }
    // Two values, four samples: a third of the copies draw one value only.
    let (t4, y4, dy4) = (
        vec![0.0, 1.3, 2.1, 3.7],
        vec![1.0, 1.0, 1.0, 2.0],
        vec![1.0; 4],
    );
    let opts = chi2_opts(1, Chi2Normalization::Standard);
    let boot = BootstrapOptions {
        resamples: 40,
        ..boot
    };
    let series = Chi2Series {
        t: &t4,
        y: &y4,
        dy: Some(&dy4),
    };
    let got = cpu
        .lombscargle_chi2_bootstrap(&series, 1.0, &opts, &boot)
        .unwrap();
    let want = chi2_reference_maxima(&t4, &y4, &dy4, 1.0, &opts, &boot);
    assert!(want.iter().any(|v| v.is_nan()) && want.iter().any(|v| !v.is_nan()));
    for (r, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g.is_nan(), w.is_nan(), "copy {r}: {g} vs {w}");
        assert!(w.is_nan() || (g - w).abs() <= 1e-9, "copy {r}: {g} vs {w}");
    }
    // Bad input: errors naming the problem.
    let err = |series: &Chi2Series<'_, f64>, opts: &Chi2Options, boot: &BootstrapOptions| {
        cpu.lombscargle_chi2_bootstrap(series, 1.5, opts, boot)
            .unwrap_err()
            .to_string()
    };
    let full = Chi2Series {
        t: &t,
        y: &y,
        dy: Some(&dy),
    };
    let none = BootstrapOptions {
        resamples: 0,
        ..boot
    };
    assert!(err(&full, &opts, &none).contains("resamples"));
    assert!(err(&full, &chi2_opts(9, Chi2Normalization::Standard), &boot).contains("nterms"));
    let short = Chi2Series {
        t: &t[..3],
        y: &y,
        dy: None,
    };
    assert!(!err(&short, &opts, &boot).is_empty());
}

/// The GPU runs the same copies: its maxima are the CPU's to the
/// periodograms' rounding (f64, 1e-9 of the scale), NaN where the CPU's are.
#[test]
fn gpu_chi2_bootstrap_maxima_are_the_cpus() {
    let Some(gpu) = gpu_or_skip("gpu_chi2_bootstrap_maxima_are_the_cpus") else {
        return;
    };
    let (t, y, dy) = series(300, 12);
    let boot = BootstrapOptions {
        resamples: 300,
        seed: 7,
        samples_per_peak: 5.0,
    };
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    let kp = Kernpack::from(gpu);
    let series = Chi2Series {
        t: &t,
        y: &y,
        dy: Some(&dy),
    };
    for nterms in [1, 2, 4] {
        let opts = chi2_opts(nterms, Chi2Normalization::Standard);
        let want = cpu
            .lombscargle_chi2_bootstrap(&series, 5.0, &opts, &boot)
            .unwrap();
        let got = kp
            .lombscargle_chi2_bootstrap(&series, 5.0, &opts, &boot)
            .unwrap();
        for (r, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-9,
                "nterms {nterms} copy {r}: GPU {g} vs CPU {w}"
            );
        }
    }
}
