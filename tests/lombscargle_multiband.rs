//! The multiband periodogram (flexible and fast methods) against the f64
//! reference (src/reference/lombscargle_multiband.rs, astropy's formulation
//! with the whole design matrix): the CPU backend on random cases of every
//! option, f32 and f64, frequency arrays, uniform grids and ragged batches;
//! the GPU against the CPU backend (without a GPU those tests print SKIPPED,
//! with KERNPACK_REQUIRE_GPU=1 they fail); and the errors.
//!
//! Tolerances (max error relative to the periodogram's largest value):
//! - f64 1e-8. Both sides sum in f64; they differ in how the sums are formed
//!   (recurrence and product-to-sum identities against sin and cos per
//!   harmonic, ~1e-14) and in the solve (band-by-band elimination against a
//!   dense factorisation in astropy's column order), amplified by the normal
//!   matrix's condition number. The default ridge (1e-6 of the trace) bounds
//!   that near 1e6 for the band offsets it separates from the base offset,
//!   giving <~ 1e-9.
//! - f32 1e-6 (CPU and GPU): both backends compute in f64 from the f32
//!   values the reference also sees (the frequencies of array calls rounded
//!   to f32 on both sides), so only the result's rounding to f32 (6e-8)
//!   adds to the f64 error.
mod common;

use common::{event_median_ms, gpu_or_skip, proptest_cases, scaled_max_error, Rng};
use kernpack::api::lombscargle::batch::BatchGrid;
use kernpack::api::lombscargle::chi2::{Chi2Normalization, Chi2Options, Chi2Series};
use kernpack::api::lombscargle::multiband::{
    LombScargleMultibandOnDevice, MultibandBatch, MultibandMethod, MultibandOptions,
    MultibandPrepared, MultibandSeries, PeakOptions, Refine, RefinedPeakOptions, UniformGrid,
};
use kernpack::params::lombscargle_multiband::MultibandFlat;
use kernpack::params::peaks::{select_peaks, Better};
use kernpack::reference::lombscargle_multiband::lombscargle_multiband as reference;
use kernpack::{Backend, Error, Float, Kernpack};
use proptest::prelude::*;

fn cpu() -> Kernpack {
    Kernpack::new(Backend::Cpu)
        .and_then(|k| k.with_cpu_threads(3))
        .expect("the CPU backend is always there")
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

fn to_f64<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// f32 on the GPU: the flexible kernel computes in f64 as the CPU does; the
/// fast method runs the multi-term kernel, which sums single-precision
/// harmonics (its own tolerance, tests/lombscargle_chi2.rs).
fn gpu_f32_tolerance(opts: &MultibandOptions) -> f64 {
    match opts.method {
        MultibandMethod::Flexible => 1e-6,
        MultibandMethod::Fast => 2e-3,
    }
}

fn tolerance<T: Float>() -> f64 {
    if T::NAME == "f32" {
        1e-6
    } else {
        1e-8
    }
}

/// A random multiband series: 1 to 6 bands with labels scattered over
/// u32, each band its own offset and amplitude of one shared period, the
/// samples of the bands interleaved in time.
#[derive(Debug, Clone)]
struct Case {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Option<Vec<f64>>,
    bands: Vec<u32>,
    lo: f64,
    hi: f64,
    opts: MultibandOptions,
}

fn random_opts(rng: &mut Rng) -> MultibandOptions {
    let method = if rng.below(3) == 0 {
        MultibandMethod::Fast
    } else {
        MultibandMethod::Flexible
    };
    let (nb, nbd) = loop {
        let (a, b) = (rng.below(4) as usize, rng.below(4) as usize);
        if (a, b) != (0, 0) && (method == MultibandMethod::Flexible || a > 0) {
            break (a, b);
        }
    };
    let reg = |rng: &mut Rng, default: Option<f64>| match rng.below(3) {
        0 => None,
        1 => default,
        _ => Some(10f64.powf(rng.range(-7.0, -3.0))),
    };
    MultibandOptions {
        method,
        nterms_base: nb,
        nterms_band: nbd,
        reg_base: reg(rng, None),
        reg_band: reg(rng, Some(1e-6)),
        regularize_by_trace: rng.below(4) != 0,
        center_data: rng.below(3) != 0,
        fit_mean: rng.below(3) != 0,
        normalization: [
            Chi2Normalization::Standard,
            Chi2Normalization::Model,
            Chi2Normalization::Log,
            Chi2Normalization::Psd,
        ][rng.below(4) as usize],
    }
}

fn case(seed: u64, opts: MultibandOptions) -> Case {
    let mut rng = Rng(seed);
    let nbands = 1 + rng.below(6) as usize;
    let labels: Vec<u32> = (0..nbands).map(|_| rng.below(1 << 20) as u32).collect();
    // Enough samples per band for its own model and the fast method's fit.
    let per_band = 3 * (1 + 2 * opts.nterms_base.max(opts.nterms_band)) + rng.below(40) as usize;
    let n = nbands * per_band;
    let span = rng.range(5.0, 300.0);
    let origin = rng.range(-100.0, 5e3);
    let period = span / rng.range(2.0, 30.0);
    let level: Vec<(f64, f64)> = (0..nbands)
        .map(|_| (rng.range(-5.0, 5.0), rng.range(0.3, 2.0)))
        .collect();
    let (mut t, mut y, mut bands) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        // Each band per_band samples (enough for its own fits); the times
        // are random, so the bands interleave.
        let b = i % nbands;
        let ti = origin + rng.range(0.0, span);
        let p = std::f64::consts::TAU * ti / period;
        t.push(ti);
        y.push(level[b].0 + level[b].1 * (p.sin() + 0.3 * (2.0 * p).cos()) + rng.range(-0.6, 0.6));
        bands.push(labels[b]);
    }
    let dy = (rng.below(2) == 0).then(|| (0..n).map(|_| rng.range(0.1, 2.0)).collect());
    Case {
        t,
        y,
        dy,
        bands,
        lo: 1.0 / span,
        hi: n as f64 / span,
        opts,
    }
}

fn freqs(rng: &mut Rng, c: &Case, nf: usize) -> Vec<f64> {
    (0..nf).map(|_| rng.range(c.lo, c.hi)).collect()
}

/// The periodogram of `c` at `f` (or on `grid`) by `kp`, in `T`, with the
/// frequencies it used in f64.
fn run<T: Float>(
    kp: &Kernpack,
    c: &Case,
    f: &[f64],
    grid: Option<UniformGrid>,
) -> (Vec<f64>, Vec<f64>) {
    let (t, y) = (cast::<T>(&c.t), cast::<T>(&c.y));
    let dy = c.dy.as_ref().map(|d| cast::<T>(d));
    let series = MultibandSeries {
        t: &t,
        y: &y,
        dy: dy.as_deref(),
        bands: &c.bands,
    };
    match grid {
        Some(g) => (
            to_f64(
                &kp.lombscargle_multiband_uniform(&series, &g, &c.opts)
                    .unwrap(),
            ),
            g.frequencies(),
        ),
        None => {
            let fa = cast::<T>(f);
            (
                to_f64(&kp.lombscargle_multiband(&series, &fa, &c.opts).unwrap()),
                to_f64(&fa),
            )
        }
    }
}

fn want<T: Float>(c: &Case, f: &[f64]) -> Vec<f64> {
    let (t, y) = (cast::<T>(&c.t), cast::<T>(&c.y));
    let dy = c.dy.as_ref().map(|d| cast::<T>(d));
    reference(&t, &y, dy.as_deref(), &c.bands, f, &c.opts)
}

/// Every value finite (the error metric would pass NaN by).
fn finite(v: &[f64]) -> bool {
    v.iter().all(|x| x.is_finite())
}

fn check_cpu<T: Float>(seed: u64) {
    let mut rng = Rng(seed);
    let c = case(rng.next_u64(), random_opts(&mut rng));
    let nf = 1 + rng.below(60) as usize;
    let f = freqs(&mut rng, &c, nf);
    let grid = UniformGrid::new(c.lo, (c.hi - c.lo) / 50.0, 1 + rng.below(60) as usize);
    for g in [None, Some(grid)] {
        let (got, used) = run::<T>(&cpu(), &c, &f, g);
        assert!(finite(&got), "seed {seed}: {got:?}");
        let err = scaled_max_error(&got, &want::<T>(&c, &used));
        assert!(
            err <= tolerance::<T>(),
            "{} seed {seed}: error {err:e} ({:?}, {} bands, grid {})",
            T::NAME,
            c.opts,
            c.bands
                .iter()
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            g.is_some()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(150)))]

    #[test]
    fn cpu_matches_the_reference(seed in any::<u64>()) {
        check_cpu::<f64>(seed);
        check_cpu::<f32>(seed);
    }
}

/// With one band, no band harmonics and no ridge, the flexible fit is the
/// multi-term fit of the base model (the band offset repeats the base one).
#[test]
fn one_band_is_the_multiterm_periodogram() {
    let mut rng = Rng(0x5eed_0001 ^ std::process::id() as u64);
    for _ in 0..20 {
        let nterms = 1 + rng.below(3) as usize;
        let opts = MultibandOptions {
            nterms_base: nterms,
            nterms_band: 0,
            reg_band: None,
            ..MultibandOptions::default()
        };
        let mut c = case(rng.next_u64(), opts);
        c.bands.iter_mut().for_each(|b| *b = 7);
        let f = freqs(&mut rng, &c, 40);
        let (got, _) = run::<f64>(&cpu(), &c, &f, None);
        let series = Chi2Series {
            t: &c.t,
            y: &c.y,
            dy: c.dy.as_deref(),
        };
        let chi2 = Chi2Options {
            nterms,
            ..Chi2Options::default()
        };
        let single = cpu().lombscargle_chi2(&series, &f, &chi2).unwrap();
        let err = scaled_max_error(&got, &single);
        assert!(err <= 1e-9, "nterms {nterms}: {err:e}");
    }
}

/// A batch gives each series' single-series periodogram bit for bit (CPU),
/// on a shared and on per-series grids.
fn batch_case<T: Float>(kp: &Kernpack, seed: u64, tol: Option<&Kernpack>) {
    let mut rng = Rng(seed);
    let opts = random_opts(&mut rng);
    let cases: Vec<Case> = (0..1 + rng.below(7))
        .map(|_| case(rng.next_u64(), opts))
        .collect();
    let (mut t, mut y, mut dy, mut bands, mut offsets) = (vec![], vec![], vec![], vec![], vec![0]);
    let with_dy = cases.iter().all(|c| c.dy.is_some());
    for c in &cases {
        t.extend(cast::<T>(&c.t));
        y.extend(cast::<T>(&c.y));
        if with_dy {
            dy.extend(cast::<T>(c.dy.as_ref().unwrap()));
        }
        bands.extend(&c.bands);
        offsets.push(t.len());
    }
    let batch = MultibandBatch {
        t: &t,
        y: &y,
        dy: with_dy.then_some(dy.as_slice()),
        bands: &bands,
        offsets: &offsets,
    };
    let nf = 1 + rng.below(300) as usize;
    let f0: Vec<f64> = cases.iter().map(|c| c.lo).collect();
    let df: Vec<f64> = cases.iter().map(|c| (c.hi - c.lo) / nf as f64).collect();
    // One grid for all: from the highest series' lowest frequency (below one
    // cycle over a series' span its fit is ill-conditioned).
    let shared = UniformGrid::new(f0.iter().fold(0.0, |m: f64, &v| m.max(v)), df[0], nf);
    for grids in [
        BatchGrid::Shared(shared),
        BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf,
        },
    ] {
        let got = kp
            .lombscargle_multiband_batch(&batch, &grids, &opts)
            .unwrap();
        // The best peaks: those of the values this backend gives.
        let peaks = PeakOptions {
            k: 1 + rng.below(6) as usize,
            separation: if rng.below(2) == 0 { 0.0 } else { df[0] * 3.0 },
        };
        let best = kp
            .lombscargle_multiband_batch_peaks(&batch, &grids, &opts, &peaks)
            .unwrap();
        for (s, row) in got.chunks(nf).enumerate() {
            let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
            let axis = grids.grid(s).frequencies();
            let want = select_peaks(&row, &axis, &peaks, Better::Higher);
            assert_eq!(best[s], want, "seed {seed} series {s}: peaks {peaks:?}");
        }
        // Refined: the same coarse peaks, never lower, within a step, and
        // (f64) the periodogram of the series at the refined frequency.
        let search = RefinedPeakOptions {
            peaks,
            refine: Some(Refine {
                points: 4,
                steps: 1,
            }),
            fap: None,
        };
        let refined = kp.lombscargle_multiband_batch_refined_peaks(&batch, &grids, &opts, &search);
        let refined = match opts.method {
            MultibandMethod::Fast => {
                let m = message(refined);
                assert!(m.contains("fast method cannot be refined"), "{m}");
                Vec::new()
            }
            MultibandMethod::Flexible => refined.unwrap(),
        };
        for (s, row) in refined.iter().enumerate() {
            let grid = grids.grid(s);
            assert_eq!(row.len(), best[s].len());
            for (r, c) in row.iter().zip(&best[s]) {
                let what = format!("seed {seed} series {s}: refined {r:?} of {c:?}");
                assert!(
                    r.index == c.index && r.power >= c.value && r.fap.is_none(),
                    "{what}"
                );
                assert!(
                    (r.frequency - grid.frequency(c.index)).abs() <= grid.df * (1.0 + 1e-12),
                    "{what}"
                );
                if T::NAME == "f64" {
                    let f = [T::from_f64(r.frequency)];
                    let at = kp
                        .lombscargle_multiband(&batch.series(s), &f, &opts)
                        .unwrap();
                    let at = at[0].to_f64();
                    assert!(
                        (at - r.power).abs() <= 1e-8 * at.abs().max(1.0),
                        "{what}: {at}"
                    );
                }
            }
        }
        assert_eq!(got.len(), cases.len() * nf);
        for (s, row) in got.chunks(nf).enumerate() {
            let series = batch.series(s);
            let one = match tol {
                None => kp
                    .lombscargle_multiband_uniform(&series, &grids.grid(s), &opts)
                    .unwrap(),
                Some(cpu) => cpu
                    .lombscargle_multiband_uniform(&series, &grids.grid(s), &opts)
                    .unwrap(),
            };
            match tol {
                None => assert_eq!(
                    row.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>(),
                    one.iter().map(|v| v.to_f64().to_bits()).collect::<Vec<_>>(),
                    "seed {seed} series {s}"
                ),
                Some(_) => {
                    let err = scaled_max_error(&to_f64(row), &to_f64(&one));
                    let tol = if T::NAME == "f32" {
                        gpu_f32_tolerance(&opts)
                    } else {
                        1e-8
                    };
                    assert!(err <= tol, "seed {seed} series {s}: {err:e} {opts:?}");
                }
            }
        }
    }
}

#[test]
fn cpu_batch_is_each_series() {
    let mut rng = Rng(0xba7c_4000 ^ std::process::id() as u64);
    for _ in 0..12 {
        batch_case::<f64>(&cpu(), rng.next_u64(), None);
        batch_case::<f32>(&cpu(), rng.next_u64(), None);
    }
}

#[test]
fn gpu_matches_the_cpu_backend() {
    let Some(gpu) = gpu_or_skip("gpu_matches_the_cpu_backend") else {
        return;
    };
    let kg = Kernpack::from(gpu);
    let mut rng = Rng(0x6b0_0001 ^ std::process::id() as u64);
    for _ in 0..150 {
        let seed = rng.next_u64();
        let mut r = Rng(seed);
        let c = case(r.next_u64(), random_opts(&mut r));
        let nf = 1 + r.below(400) as usize;
        let f = freqs(&mut r, &c, nf);
        let grid = UniformGrid::new(c.lo, (c.hi - c.lo) / 300.0, 1 + r.below(400) as usize);
        for g in [None, Some(grid)] {
            let (g64, used) = run::<f64>(&kg, &c, &f, g);
            assert!(finite(&g64), "seed {seed}");
            let err = scaled_max_error(&g64, &want::<f64>(&c, &used));
            assert!(err <= 1e-8, "f64 seed {seed}: {err:e} {:?}", c.opts);
            let (g32, used) = run::<f32>(&kg, &c, &f, g);
            let err = scaled_max_error(&g32, &want::<f32>(&c, &used));
            let tol = gpu_f32_tolerance(&c.opts);
            assert!(err <= tol, "f32 seed {seed}: {err:e} {:?}", c.opts);
        }
    }
    for _ in 0..10 {
        batch_case::<f64>(&kg, rng.next_u64(), Some(&cpu()));
        batch_case::<f32>(&kg, rng.next_u64(), Some(&cpu()));
    }
}

fn message<T: std::fmt::Debug>(r: Result<T, Error>) -> String {
    match r {
        Err(Error::InvalidInput(m)) => m,
        other => panic!("expected an input error, got {other:?}"),
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let kp = cpu();
    let t = [0.0, 1.0, 2.5, 3.0, 4.2, 5.0];
    let y = [1.0, 2.0, 0.5, 1.5, 3.0, 2.0];
    let bands = [0, 1, 0, 1, 0, 1];
    let f = [0.1, 0.2];
    let series = MultibandSeries {
        t: &t,
        y: &y,
        dy: None,
        bands: &bands,
    };
    let opts = MultibandOptions::default();
    let call =
        |s: &MultibandSeries<'_, f64>, o: &MultibandOptions| kp.lombscargle_multiband(s, &f, o);
    assert!(call(&series, &opts).is_ok());
    let short = MultibandSeries {
        bands: &bands[..5],
        ..series
    };
    assert!(message(call(&short, &opts)).contains("bands"));
    let none = MultibandOptions {
        nterms_base: 0,
        nterms_band: 0,
        ..opts
    };
    assert!(message(call(&series, &none)).contains("nterms_base"));
    let many = MultibandOptions {
        nterms_band: 4,
        ..opts
    };
    assert!(message(call(&series, &many)).contains("nterms"));
    let negative = MultibandOptions {
        reg_band: Some(-1.0),
        ..opts
    };
    assert!(message(call(&series, &negative)).contains("reg_band"));
    let fast0 = MultibandOptions {
        method: MultibandMethod::Fast,
        nterms_base: 0,
        ..opts
    };
    assert!(message(call(&series, &fast0)).contains("nterms_base"));
    // Constant within each band: nothing to fit.
    let flat = [1.0, 2.0, 1.0, 2.0, 1.0, 2.0];
    let flat_series = MultibandSeries { y: &flat, ..series };
    assert!(message(call(&flat_series, &opts)).contains("band means"));
    // The fast method names the band that cannot stand alone.
    let y1 = [1.0, 2.0, 1.0, 0.5, 1.0, 1.5];
    let fast = MultibandOptions {
        method: MultibandMethod::Fast,
        ..opts
    };
    let m = message(call(&MultibandSeries { y: &y1, ..series }, &fast));
    assert!(m.contains("band 0"), "{m}");
    let nan = [0.0, 1.0, f64::NAN, 3.0, 4.2, 5.0];
    assert!(message(call(&MultibandSeries { t: &nan, ..series }, &opts)).contains("t[2]"));
    assert!(
        message(kp.lombscargle_multiband(&series, &[] as &[f64], &opts)).contains("frequencies")
    );
    // A batch names its bad series.
    let (t2, y2, b2) = ([t, t].concat(), [y, flat].concat(), [bands, bands].concat());
    let batch = MultibandBatch {
        t: &t2,
        y: &y2,
        dy: None,
        bands: &b2,
        offsets: &[0, 6, 12],
    };
    let grid = BatchGrid::Shared(UniformGrid::new(0.1, 0.1, 4));
    let m = message(kp.lombscargle_multiband_batch(&batch, &grid, &opts));
    assert!(m.starts_with("series 1"), "{m}");
    // Per-series grids of the wrong count: an error, also for the peaks.
    let grids = BatchGrid::PerSeries {
        f0: &[0.1],
        df: &[0.1],
        nf: 4,
    };
    let ok_batch = MultibandBatch {
        y: &[y, y].concat(),
        ..batch
    };
    let peaks = PeakOptions {
        k: 2,
        separation: 0.0,
    };
    let m = message(kp.lombscargle_multiband_batch(&ok_batch, &grids, &opts));
    assert!(m.contains("2 series but 1 f0"), "{m}");
    let m = message(kp.lombscargle_multiband_batch_peaks(&ok_batch, &grids, &opts, &peaks));
    assert!(m.contains("2 series but 1 f0"), "{m}");
    // astropy has no FAP for multiband periodograms; a refinement needs 2 points.
    let search = |refine, fap| RefinedPeakOptions { peaks, refine, fap };
    let fap = search(None, Some(kernpack::FapMethod::Baluev));
    let m = message(kp.lombscargle_multiband_batch_refined_peaks(&ok_batch, &grid, &opts, &fap));
    assert!(
        m.contains("no false-alarm probability for multiband"),
        "{m}"
    );
    let one = search(
        Some(Refine {
            points: 1,
            steps: 1,
        }),
        None,
    );
    let m = message(kp.lombscargle_multiband_batch_refined_peaks(&ok_batch, &grid, &opts, &one));
    assert!(m.contains("points"), "{m}");
}

/// The speed target, timed with CUDA events (kernel alone, the
/// series prepared and on the device): 10^4 LSST-like series (150-250
/// samples in 6 bands), nterms_base = nterms_band = 1, 10^4 frequencies,
/// f32 and f64; the whole survey (10^5 series) takes ten times as long.
/// `cargo test --release --test lombscargle_multiband -- --ignored --nocapture bench_`
#[test]
#[ignore = "benchmark: run on the GPU machine"]
fn bench_multiband_kernel() {
    let Some(gpu) = gpu_or_skip("bench_multiband_kernel") else {
        return;
    };
    fn run<T: Float>(gpu: &std::sync::Arc<kernpack::Gpu>, nseries: usize, nf: usize) {
        let opts = MultibandOptions::default();
        let mut rng = Rng(7);
        let (mut times, mut preps) = (Vec::new(), Vec::new());
        for _ in 0..nseries {
            let n = 150 + rng.below(101) as usize;
            let ts: Vec<f64> = (0..n).map(|_| rng.range(0.0, 1096.0)).collect();
            let bands: Vec<u32> = (0..n).map(|_| rng.below(6) as u32).collect();
            let period = rng.range(0.2, 50.0);
            let y: Vec<f64> = (0..n)
                .map(|i| {
                    18.0 + bands[i] as f64 * 0.3
                        + (std::f64::consts::TAU * ts[i] / period).sin()
                        + rng.range(-0.2, 0.2)
                })
                .collect();
            let dy: Vec<f64> = (0..n).map(|_| rng.range(0.01, 0.2)).collect();
            preps.push(MultibandPrepared::of(&y, Some(&dy), &bands, &opts));
            // f64 inputs for both types (the kernel's), f32 series rounded first.
            times.push(cast::<T>(&ts));
        }
        let flat = MultibandFlat::of(times.iter().map(Vec::as_slice).zip(&preps));
        let MultibandFlat {
            t,
            w,
            wy,
            band_starts,
            series_bands,
            stats,
        } = flat;
        let stream = gpu.stream();
        let up_t = |v: &[f64]| stream.clone_htod(v).unwrap();
        let (d_t, d_w, d_wy) = (up_t(&t), up_t(&w), up_t(&wy));
        let d_series = stream.clone_htod(&series_bands).unwrap();
        let d_bands = stream.clone_htod(&band_starts).unwrap();
        let d_stats = stream.clone_htod(&stats).unwrap();
        let (d_f0, d_df) = (
            stream.clone_htod(&[1.0 / 365.25]).unwrap(),
            stream.clone_htod(&[0.5 / 365.25]).unwrap(),
        );
        let mut out = stream.alloc_zeros::<T>(nseries * nf).unwrap();
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        let call = LombScargleMultibandOnDevice::<T> {
            nseries,
            n: t.len(),
            nsegments: band_starts.len() - 1,
            series_bands: d_series.device_ptr(stream).0,
            band_starts: d_bands.device_ptr(stream).0,
            t: d_t.device_ptr(stream).0,
            w: d_w.device_ptr(stream).0,
            wy: d_wy.device_ptr(stream).0,
            stats: d_stats.device_ptr(stream).0,
            freqs: 0,
            f0: d_f0.device_ptr(stream).0,
            df: d_df.device_ptr(stream).0,
            per_series_grid: false,
            nf,
            opts,
            out: out.device_ptr_mut(stream).0,
            dtype: std::marker::PhantomData,
        };
        // SAFETY: live buffers of this GPU, of the lengths the call names,
        // alive until the stream is synchronised below.
        let ms = event_median_ms(gpu, 5, || unsafe { gpu.enqueue(stream, &call) }.unwrap());
        stream.synchronize().unwrap();
        println!(
            "BENCH multiband {} {nseries} series x {nf} freqs ({} samples, 6 bands, 1 + 1 terms) on {}: \
             kernel {ms:.2} ms (median of 5, CUDA events), {:.0} series/s, {:.3e} pairs/s",
            T::NAME,
            t.len(),
            gpu.name(),
            nseries as f64 / (ms * 1e-3),
            (t.len() * nf) as f64 / (ms * 1e-3)
        );
    }
    run::<f32>(&gpu, 10_000, 10_000);
    run::<f64>(&gpu, 10_000, 10_000);
}
