//! Box Least Squares: the CPU backend against the reference (the search by
//! its definition, in plain f64 with astropy's median centring), and the
//! GPU against the CPU bit for bit (both sum in fixed point, so both pick
//! the same box and compute its fields with the same code). Without a GPU
//! the GPU tests print SKIPPED; with KERNPACK_REQUIRE_GPU=1 they fail.
//!
//! Tolerance against the reference: each field's error relative to the
//! field's largest magnitude over the periods, 1e-9. The backend's sums are
//! exact integers of 2^-60 of the series' total (relative quantisation of
//! a box's sums ~ N 2^-60 / share of the box), the reference's are f64 sums
//! (~N eps); depths are differences of two means of such sums, so both are
//! off by ~1e-14 of the values' scale for the N <= 80 of these cases.
mod common;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::api::bls::{BlsBatch, BlsObjective, BlsOptions, BlsResults, BlsSeries};
use kernpack::params::bls::{BlsGrid, BLS_FIELDS};
use kernpack::reference::bls::bls as reference;
use kernpack::{Backend, Error, Float, Kernpack};
use proptest::prelude::*;

/// A random light curve: `n` samples over a baseline, values with noise and
/// (often) a box-shaped dip, optional uncertainties; periods and durations
/// to search, options.
#[derive(Debug, Clone)]
struct Case {
    t: Vec<f64>,
    y: Vec<f64>,
    dy: Option<Vec<f64>>,
    periods: Vec<f64>,
    durations: Vec<f64>,
    opts: BlsOptions,
}

fn case(seed: u64, max_n: usize) -> Case {
    let mut rng = Rng(seed);
    let n = 1 + (rng.next() * max_n as f64) as usize;
    let baseline = rng.range(2.0, 30.0);
    let t0 = rng.range(-100.0, 1000.0);
    let t: Vec<f64> = (0..n).map(|_| t0 + rng.range(0.0, baseline)).collect();
    let min_duration = rng.range(0.02, 0.3);
    let ndur = 1 + (rng.next() * 3.0) as usize;
    let durations: Vec<f64> = (0..ndur)
        .map(|_| min_duration * rng.range(1.0, 2.5))
        .collect();
    let longest = durations.iter().copied().fold(0.0, f64::max);
    let nper = 1 + (rng.next() * 6.0) as usize;
    let periods: Vec<f64> = (0..nper)
        .map(|_| longest * rng.range(1.05, 1.1) + rng.range(0.0, baseline / 2.0))
        .collect();
    let (true_period, depth, width) = (periods[0], rng.range(0.0, 1.0), durations[0]);
    let phase = rng.range(0.0, true_period);
    let level = rng.range(-5.0, 5.0);
    let y: Vec<f64> = t
        .iter()
        .map(|&ti| {
            let x = (ti - t0 - phase).rem_euclid(true_period);
            level + rng.range(-0.3, 0.3) - if x < width { depth } else { 0.0 }
        })
        .collect();
    let dy = (rng.next() < 0.5).then(|| (0..n).map(|_| rng.range(0.05, 0.5)).collect());
    let opts = BlsOptions {
        objective: if rng.next() < 0.5 {
            BlsObjective::Likelihood
        } else {
            BlsObjective::Snr
        },
        oversample: 1 + (rng.next() * 12.0) as u32,
    };
    Case {
        t,
        y,
        dy,
        periods,
        durations,
        opts,
    }
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

fn run<T: Float>(kp: &Kernpack, c: &Case) -> kernpack::Result<BlsResults<T>> {
    let (t, y) = (cast::<T>(&c.t), cast::<T>(&c.y));
    let dy = c.dy.as_ref().map(|d| cast::<T>(d));
    let mut series = BlsSeries::new(&t, &y);
    if let Some(dy) = &dy {
        series = series.with_dy(dy);
    }
    kp.bls(
        &series,
        &cast::<T>(&c.periods),
        &cast::<T>(&c.durations),
        &c.opts,
    )
}

/// The reference's fields of `c` as the element type rounds its inputs.
fn reference_of<T: Float>(c: &Case) -> Vec<[f64; BLS_FIELDS]> {
    let round = |v: &[f64]| {
        v.iter()
            .map(|&x| T::from_f64(x).to_f64())
            .collect::<Vec<f64>>()
    };
    let (periods, durations) = (round(&c.periods), round(&c.durations));
    let grid = BlsGrid::new(&periods, &durations, &c.opts).unwrap();
    reference(
        &round(&c.t),
        &round(&c.y),
        c.dy.as_ref().map(|d| round(d)).as_deref(),
        &periods,
        &grid,
        c.opts.objective,
    )
}

const NAMES: [&str; BLS_FIELDS] = [
    "power",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
];

fn assert_close<T: Float>(got: &BlsResults<T>, want: &[[f64; BLS_FIELDS]], tol: f64, c: &Case) {
    for (f, column) in got.columns().into_iter().enumerate() {
        let scale = want
            .iter()
            .map(|w| w[f].abs())
            .filter(|v| v.is_finite())
            .fold(1e-300f64, f64::max);
        for (p, w) in want.iter().enumerate() {
            let (g, w) = (column[p].to_f64(), w[f]);
            let same = (g.is_nan() && w.is_nan()) || g == w || (g - w).abs() <= tol * scale;
            assert!(
                same,
                "{} at period {p} ({}): got {g}, want {w} (tolerance {tol} x {scale:e}); case {c:?}",
                NAMES[f], c.periods[p]
            );
        }
    }
}

/// The fields' bits: NaN (the fields of a period without a box) equals NaN.
fn bits<T: Float>(r: &BlsResults<T>) -> Vec<Vec<u64>> {
    r.columns()
        .iter()
        .map(|c| c.iter().map(|v| v.to_f64().to_bits()).collect())
        .collect()
}

fn same<T: Float>(a: &[BlsResults<T>], b: &[BlsResults<T>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(a, b)| bits(a) == bits(b))
}

fn cpu() -> Kernpack {
    Kernpack::new(Backend::Cpu).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(300)))]

    /// Both CPU layouts (histogram and events: the cases span bins per
    /// sample from ~0.1 to ~1000) against the reference.
    #[test]
    fn cpu_matches_the_reference(seed in any::<u64>()) {
        let c = case(seed, 80);
        let got = run::<f64>(&cpu(), &c).unwrap();
        assert_close(&got, &reference_of::<f64>(&c), 1e-9, &c);
    }

    /// f32 inputs: the same search on the inputs as f32 rounds them, the
    /// fields rounded once to f32 at the end.
    #[test]
    fn cpu_f32_matches_the_reference(seed in any::<u64>()) {
        let c = case(seed, 40);
        let got = run::<f32>(&cpu(), &c).unwrap();
        assert_close(&got, &reference_of::<f32>(&c), 1e-6, &c);
    }
}

/// The planted transit is found: its period has the highest power, with the
/// planted duration and mid-transit time.
#[test]
fn finds_a_planted_transit() {
    let mut rng = Rng(0x5eed);
    let (period, duration, mid) = (2.7, 0.12, 1.3);
    let t: Vec<f64> = (0..3000).map(|_| rng.range(0.0, 40.0)).collect();
    let y: Vec<f64> = t
        .iter()
        .map(|&ti| {
            let x = (ti - mid + 0.5 * period).rem_euclid(period) - 0.5 * period;
            1.0 + 0.002 * (rng.next() - 0.5) - if x.abs() < 0.5 * duration { 0.01 } else { 0.0 }
        })
        .collect();
    let periods: Vec<f64> = (0..400).map(|k| 2.0 + k as f64 * 0.004).collect();
    let res = cpu()
        .bls(
            &BlsSeries::new(&t, &y),
            &periods,
            &[0.08, 0.12, 0.16],
            &BlsOptions::default(),
        )
        .unwrap();
    let best = (0..periods.len())
        .max_by(|&a, &b| res.power[a].total_cmp(&res.power[b]))
        .unwrap();
    assert!((periods[best] - period).abs() < 0.006, "{}", periods[best]);
    assert_eq!(res.duration[best], 0.12);
    let off = (res.transit_time[best] - mid + 0.5 * period).rem_euclid(period) - 0.5 * period;
    assert!(off.abs() < 0.02, "transit time {}", res.transit_time[best]);
    assert!(
        (res.depth[best] - 0.01).abs() < 5e-4,
        "depth {}",
        res.depth[best]
    );
}

/// With every weight out of reach of a box (one sample), no box counts:
/// power -inf, the other fields NaN (astropy leaves them undefined).
#[test]
fn no_box_gives_minus_infinity() {
    let res = cpu()
        .bls(
            &BlsSeries::new(&[1.0], &[2.0]),
            &[1.0, 2.0],
            &[0.1],
            &BlsOptions::default(),
        )
        .unwrap();
    assert_eq!(res.power, vec![f64::NEG_INFINITY; 2]);
    assert!(res
        .depth
        .iter()
        .chain(&res.transit_time)
        .all(|v| v.is_nan()));
}

fn invalid<R: std::fmt::Debug>(r: kernpack::Result<R>, needle: &str) {
    match r {
        Err(Error::InvalidInput(msg)) => assert!(msg.contains(needle), "{msg:?} lacks {needle:?}"),
        other => panic!("expected an invalid-input error containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let kp = cpu();
    let (t, y) = ([0.0, 1.0, 2.0], [1.0, 2.0, 3.0]);
    let s = BlsSeries::new(&t, &y);
    let o = BlsOptions::default();
    invalid(kp.bls(&s, &[1.0], &[], &o), "no durations");
    invalid(kp.bls(&s, &[], &[0.1], &o), "no periods");
    invalid(
        kp.bls(&s, &[1.0], &[1.0], &o),
        "shorter than the shortest period",
    );
    invalid(kp.bls(&s, &[1.0, -2.0], &[0.1], &o), "period[1]");
    invalid(kp.bls(&s, &[1.0], &[f64::NAN], &o), "duration[0]");
    invalid(
        kp.bls(&s, &[1.0], &[0.1], &BlsOptions { oversample: 0, ..o }),
        "oversample",
    );
    invalid(kp.bls(&s, &[1e12], &[1e-3], &o), "phase bins");
    invalid(
        kp.bls(&BlsSeries::new(&t, &y[..2]), &[1.0], &[0.1], &o),
        "differ in length",
    );
    invalid(
        kp.bls(&BlsSeries::new(&[], &[]), &[1.0], &[0.1], &o),
        "at least one sample",
    );
    invalid(
        kp.bls(
            &BlsSeries::new(&[0.0, f64::INFINITY, 1.0], &y),
            &[1.0],
            &[0.1],
            &o,
        ),
        "t[1]",
    );
    invalid(
        kp.bls(&s.with_dy(&[1.0, 0.0, 1.0]), &[1.0], &[0.1], &o),
        "dy[1]",
    );
    // A time span whose phases f64 cannot resolve to a bin.
    let wide = BlsSeries::new(&[0.0, 1e300], &[1.0, 2.0]);
    invalid(kp.bls(&wide, &[1.0], &[0.1], &o), "phase bins");
    // Weighted values past f64's range: every sum would be lost.
    let times: Vec<f64> = (0..1000).map(|i| i as f64 * 0.01).collect();
    let mut huge = vec![0.0; 1000];
    huge[0] = 1.5e308;
    let huge = BlsSeries::new(&times, &huge);
    invalid(kp.bls(&huge, &[1.0], &[0.1], &o), "past f64's range");
    // Subnormal values (a fuzzer's case): searched, not a panic.
    let tiny: Vec<f64> = (0..1000).map(|i| (i % 7) as f64 * 1e-310).collect();
    let tiny = BlsSeries::new(&times, &tiny);
    let res = kp.bls(&tiny, &[1.0, 1.3], &[0.1], &o).unwrap();
    assert!(res.power.iter().all(|p| *p >= 0.0), "{:?}", res.power);
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: None,
        offsets: &[0, 2, 2, 3],
    };
    assert!(matches!(
        kp.bls_batch(&batch, &[1.0], &[0.1], &o),
        Err(Error::InvalidInput(_))
    ));
    let batch = BlsBatch {
        offsets: &[0, 1, 3],
        dy: Some(&[1.0, -1.0, 1.0]),
        ..batch
    };
    invalid(kp.bls_batch(&batch, &[1.0], &[0.1], &o), "series 1: dy[0]");
}

/// A batch equals its series searched one by one.
#[test]
fn a_batch_is_its_series() {
    let cases: Vec<Case> = (0..6).map(|s| case(1000 + s, 50)).collect();
    let (periods, durations, opts) = (&cases[0].periods, &cases[0].durations, cases[0].opts);
    let mut offsets = vec![0];
    let (mut t, mut y) = (vec![], vec![]);
    for c in &cases {
        t.extend(&c.t);
        y.extend(&c.y);
        offsets.push(t.len());
    }
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: None,
        offsets: &offsets,
    };
    let kp = cpu();
    let all = kp.bls_batch(&batch, periods, durations, &opts).unwrap();
    for (s, c) in cases.iter().enumerate() {
        let one = kp
            .bls(&BlsSeries::new(&c.t, &c.y), periods, durations, &opts)
            .unwrap();
        assert!(same(&all[s..=s], &[one]), "series {s}");
    }
}

/// The GPU equals the CPU bit for bit: random cases (histograms in shared
/// memory), long periods over short durations (histograms in global
/// scratch), f32 and f64, single series and a batch.
#[test]
fn gpu_equals_cpu() {
    let Some(_gpu) = gpu_or_skip("gpu_equals_cpu") else {
        return;
    };
    let gpu = Kernpack::with_gpu(0).unwrap();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {seed}");
    for i in 0..proptest_cases(200) as u64 {
        let mut c = case(seed.wrapping_add(i), 400);
        if i % 10 == 0 {
            // ~10^5 bins: past any GPU's shared memory.
            c.durations = vec![0.01, 0.02];
            c.opts.oversample = 20;
            c.periods = vec![40.0, 45.5, 50.0];
        }
        let (g, h) = (
            run::<f64>(&gpu, &c).unwrap(),
            run::<f64>(&cpu(), &c).unwrap(),
        );
        assert!(bits(&g) == bits(&h), "{c:?}\n{g:?}\n{h:?}");
        let (g, h) = (
            run::<f32>(&gpu, &c).unwrap(),
            run::<f32>(&cpu(), &c).unwrap(),
        );
        assert!(bits(&g) == bits(&h), "{c:?}\n{g:?}\n{h:?}");
    }
    let cases: Vec<Case> = (0..40).map(|s| case(seed ^ (s + 77), 300)).collect();
    let mut offsets = vec![0];
    let (mut t, mut y, mut dy) = (vec![], vec![], vec![]);
    for c in &cases {
        t.extend(&c.t);
        y.extend(&c.y);
        dy.extend((0..c.t.len()).map(|k| 0.1 + 0.01 * (k % 7) as f64));
        offsets.push(t.len());
    }
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets,
    };
    let (p, d, o) = (&cases[0].periods, &cases[0].durations, cases[0].opts);
    assert!(same(
        &gpu.bls_batch(&batch, p, d, &o).unwrap(),
        &cpu().bls_batch(&batch, p, d, &o).unwrap()
    ));
}

/// A batch of random cases searched over one shared grid of many periods
/// (so that each series' power has many peaks), as `T`.
struct PeakCase<T> {
    t: Vec<T>,
    y: Vec<T>,
    dy: Vec<T>,
    offsets: Vec<usize>,
    periods: Vec<T>,
    durations: Vec<T>,
    opts: BlsOptions,
    peaks: kernpack::api::bls::PeakOptions,
}

fn peak_case<T: Float>(seed: u64, nseries: u64) -> PeakCase<T> {
    let cases: Vec<Case> = (0..nseries).map(|s| case(seed ^ (s << 40), 200)).collect();
    let mut rng = Rng(seed);
    let longest = cases[0].durations.iter().copied().fold(0.0, f64::max);
    let np = 1 + (rng.next() * 300.0) as usize;
    let (lo, hi) = (longest * 1.1, longest * 1.1 + rng.range(0.5, 10.0));
    let periods: Vec<f64> = (0..np)
        .map(|k| lo + (hi - lo) * k as f64 / np as f64)
        .collect();
    let series = cases.iter().map(|c| (&c.t[..], &c.y[..], c.dy.as_deref()));
    let (t, y, dy, offsets) = common::concat_series(series);
    PeakCase {
        t,
        y,
        dy,
        offsets,
        periods: cast(&periods),
        durations: cast(&cases[0].durations),
        opts: cases[0].opts,
        peaks: kernpack::api::bls::PeakOptions {
            k: 1 + (rng.next() * 6.0) as usize,
            separation: if rng.next() < 0.3 {
                0.0
            } else {
                rng.range(0.0, 0.5)
            },
        },
    }
}

impl<T: Float> PeakCase<T> {
    fn batch(&self) -> BlsBatch<'_, T> {
        BlsBatch {
            t: &self.t,
            y: &self.y,
            dy: Some(&self.dy),
            offsets: &self.offsets,
        }
    }

    fn peaks(&self, kp: &Kernpack) -> Vec<kernpack::api::bls::BlsPeaks<T>> {
        let (p, d) = (&self.periods, &self.durations);
        kp.bls_batch_peaks(&self.batch(), p, d, &self.opts, &self.peaks)
            .unwrap()
    }

    /// Each series' peaks carry the full search's results at their periods;
    /// in f64 (where `power` holds the ranked objective exactly) the periods
    /// are the reference's peaks of `power`.
    fn check(&self, kp: &Kernpack) {
        use kernpack::params::peaks::Better;
        use kernpack::reference::peaks::best_peaks;
        let (p, d) = (&self.periods, &self.durations);
        let all = kp.bls_batch(&self.batch(), p, d, &self.opts).unwrap();
        let got = self.peaks(kp);
        let axis: Vec<f64> = p.iter().map(|v| v.to_f64()).collect();
        for (s, (full, peaks)) in all.iter().zip(&got).enumerate() {
            let rows = bits(&peaks.results);
            for (j, &i) in peaks.period_index.iter().enumerate() {
                let want: Vec<u64> = bits(full).iter().map(|c| c[i]).collect();
                let have: Vec<u64> = rows.iter().map(|c| c[j]).collect();
                assert_eq!(have, want, "series {s}, peak {j} at period {i}");
            }
            if T::NAME == "f64" {
                let power: Vec<f64> = full.power.iter().map(|v| v.to_f64()).collect();
                let want = best_peaks(&power, &axis, &self.peaks, Better::Higher);
                let want: Vec<usize> = want.iter().map(|p| p.index).collect();
                assert_eq!(peaks.period_index, want, "series {s}, {:?}", self.peaks);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(40)))]

    #[test]
    fn cpu_peaks_are_the_best_periods_of_the_search(seed in any::<u64>()) {
        peak_case::<f64>(seed, 5).check(&cpu());
        peak_case::<f32>(seed, 5).check(&cpu());
    }
}

#[test]
fn bad_peak_options_are_clear_errors() {
    let mut c = peak_case::<f64>(3, 2);
    for (k, separation, needle) in [(0, 0.0, "k = 0"), (1, f64::NAN, "separation")] {
        c.peaks = kernpack::api::bls::PeakOptions { k, separation };
        let (p, d) = (&c.periods, &c.durations);
        invalid(
            cpu().bls_batch_peaks(&c.batch(), p, d, &c.opts, &c.peaks),
            needle,
        );
    }
}

/// The GPU's best periods (powers reduced on the device, the boxes of the
/// peaks copied out) equal the CPU backend's, f32 and f64.
#[test]
fn gpu_peaks_equal_cpu() {
    let Some(_gpu) = gpu_or_skip("gpu_peaks_equal_cpu") else {
        return;
    };
    let gpu = Kernpack::with_gpu(0).unwrap();
    for seed in 0..60 {
        let c = peak_case::<f64>(0xb15 + seed, 12);
        c.check(&gpu);
        let bits_of =
            |v: Vec<kernpack::api::bls::BlsPeaks<f64>>| -> Vec<(Vec<usize>, Vec<Vec<u64>>)> {
                v.iter()
                    .map(|p| (p.period_index.clone(), bits(&p.results)))
                    .collect()
            };
        assert_eq!(
            bits_of(c.peaks(&gpu)),
            bits_of(c.peaks(&cpu())),
            "seed {seed}"
        );
        let c = peak_case::<f32>(0xb15 + seed, 12);
        c.check(&gpu);
        let (g, h) = (c.peaks(&gpu), c.peaks(&cpu()));
        for (a, b) in g.iter().zip(&h) {
            assert_eq!(a.period_index, b.period_index, "seed {seed} f32");
            assert_eq!(bits(&a.results), bits(&b.results), "seed {seed} f32");
        }
    }
}
