//! The fast CPU Lomb-Scargle (`Backend::Cpu`) against the f64 reference:
//! arbitrary and uniform grids, batches, every option, f32 and f64, times
//! near 0 or at MJD-like offsets, and bitwise equality over thread counts.
//!
//! The reference gets the times shifted by their mean (computed here as the
//! CPU path computes it), so both see the same phases: unshifted, the
//! reference's own phase error eps |w t| at t ~ 6e4 would exceed what is
//! tested. Its complex amplitude is then moved back to t = 0 by e^{i w
//! t_shift}, as the CPU path does. Tolerances (relative L2 over the
//! periodogram): f64 1e-10; the CPU path's error is ~1e-14 (direct sums: a
//! few hundred terms, phasors rotated <= 96 times between exact seeds; the
//! NUFFT, which large uniform grids take: ~1e-14 of the sums), the margin
//! covers ill-conditioned frequencies (small CC or SS denominators amplify
//! both sides' rounding). f32 1e-4 at the frequencies whose fit f32 sums
//! resolve (see [`check_f32`]): the direct uniform kernel runs in f32
//! (~1e-5), the NUFFT and the arbitrary-frequency kernel in f64, the output
//! is rounded to f32, and the reference sees the same f32 inputs.
mod common;

use std::f64::consts::TAU;

use common::{flat, options, proptest_cases, Rng};
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::reference::lombscargle::{degenerate_below, lombscargle as reference};
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Periodogram, Series};
use proptest::prelude::*;

fn cpu(threads: usize) -> Kernpack {
    Kernpack::new(Backend::Cpu)
        .and_then(|k| k.with_cpu_threads(threads))
        .expect("the CPU backend is always there")
}

struct Data {
    t: Vec<f64>,
    y: Vec<f64>,
    w: Option<Vec<f64>>,
    /// Angular frequency range that resolves the span: [lo, hi].
    lo: f64,
    hi: f64,
}

/// A sinusoid plus a harmonic, offset and noise at `nx` random times over
/// `span` from `origin`.
fn data(seed: u64, nx: usize, origin: f64, span: f64, weighted: bool) -> Data {
    let mut rng = Rng(seed);
    let t: Vec<f64> = (0..nx).map(|_| origin + rng.range(0.0, span)).collect();
    let offset = rng.range(-3.0, 3.0);
    let period = span / rng.range(2.0, 30.0);
    let y = t
        .iter()
        .map(|t| {
            let p = TAU * (t - origin) / period;
            offset + p.sin() + 0.3 * (2.0 * p + 0.4).cos() + rng.range(-1.0, 1.0)
        })
        .collect();
    let w = weighted.then(|| (0..nx).map(|_| rng.range(0.1, 3.0)).collect());
    // From about one cycle per span (well-conditioned denominators) to ~50
    // cycles per period.
    Data {
        t,
        y,
        w,
        lo: TAU / span,
        hi: 50.0 * TAU / period,
    }
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// Times less their mean, in f64 as the CPU path forms them, and the mean.
fn shifted<T: Float>(t: &[T]) -> (Vec<f64>, f64) {
    let t64: Vec<f64> = t.iter().map(|v| v.to_f64()).collect();
    let shift = t64.iter().sum::<f64>() / t64.len() as f64;
    (t64.iter().map(|v| v - shift).collect(), shift)
}

/// The reference on mean-shifted times, amplitude moved back to t = 0.
fn oracle<T: Float>(
    t: &[T],
    y: &[T],
    w: Option<&[T]>,
    freqs: &[f64],
    opts: &LombScargleOptions,
) -> Vec<f64> {
    let (ts, shift) = shifted(t);
    let y64: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
    let w64: Option<Vec<f64>> = w.map(|w| w.iter().map(|v| v.to_f64()).collect());
    let p = reference(&ts, &y64, w64.as_deref(), freqs, opts, None);
    match p {
        Periodogram::Real(v) => v,
        Periodogram::Complex(v) => v
            .iter()
            .zip(freqs)
            .flat_map(|(c, f)| {
                let (s, co) = (f * shift).sin_cos();
                [c.re * co - c.im * s, c.re * s + c.im * co]
            })
            .collect(),
    }
}

fn rel_l2(got: &[f64], want: &[f64]) -> f64 {
    assert_eq!(got.len(), want.len());
    assert!(got.iter().all(|v| v.is_finite()), "non-finite output");
    let num: f64 = got.iter().zip(want).map(|(a, b)| (a - b).powi(2)).sum();
    let den: f64 = want.iter().map(|b| b * b).sum();
    (num / den.max(f64::MIN_POSITIVE)).sqrt()
}

/// Per angular frequency, the smaller eigenvalue lambda of the weighted
/// second-moment matrix of (cos w t, sin w t) on the shifted times (centred
/// with a floating mean): after the rotation by tau it is the smaller of
/// SciPy's denominators CC and SS, so an error delta in the sums (weights
/// summing to 1) moves that frequency's value by ~delta / lambda of itself.
fn fit_eigenvalues<T: Float>(
    t: &[T],
    w: Option<&[T]>,
    freqs: &[f64],
    floating_mean: bool,
) -> Vec<f64> {
    let (ts, _) = shifted(t);
    let w: Vec<f64> = match w {
        Some(w) => w.iter().map(|v| v.to_f64()).collect(),
        None => vec![1.0; t.len()],
    };
    let total: f64 = w.iter().sum();
    freqs
        .iter()
        .map(|omega| {
            let (mut c, mut s, mut cc, mut cs, mut ss) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (t, w) in ts.iter().zip(&w) {
                let (sn, cn) = (omega * t).sin_cos();
                let w = w / total;
                c += w * cn;
                s += w * sn;
                cc += w * cn * cn;
                cs += w * cn * sn;
                ss += w * sn * sn;
            }
            if floating_mean {
                cc -= c * c;
                ss -= s * s;
                cs -= c * s;
            }
            (cc + ss) / 2.0 - (((cc - ss) / 2.0).powi(2) + cs * cs).sqrt()
        })
        .collect()
}

/// f32 output against the reference, frequency by frequency as far as its
/// fit is conditioned (lambda: [`fit_eigenvalues`]). The direct uniform
/// kernel takes the sums of f32 input in f32 (the GPU's f32 kernels do too):
/// they carry an error delta of about an f32 eps, which the denominators
/// (CC - C^2 and the like, cancelling down to lambda) pass on as ~delta /
/// lambda of the frequency's value. A handful of samples (a fit of 3
/// parameters to 5 points) has frequencies with lambda at 1e-6 and below,
/// where no f32 sums resolve the fit to 1e-4: SciPy's own two-pass formula
/// with its sums in f32 is 4e-3 off at the lambda = 2.2e-6 frequency of
/// [`tiny_series_with_a_near_singular_fit`]. Over 95,000 random series of 5
/// to 155 samples (every option, both kernels) the error of a value was at
/// most 4.6 eps32 / lambda of the periodogram's peak; with a margin, `K` =
/// 16. So:
/// - lambda >= K eps32 / 1e-4 (~2e-2; the peak itself may sit at lambda
///   ~1e-3 in a tiny series): rel L2 <= 1e-4 over these frequencies, the
///   bound of the whole periodogram elsewhere;
/// - below, each value within K eps32 / lambda of the peak;
/// - under twice the degenerate level (`degenerate_below` with f32's eps)
///   the f32 kernel, as the GPU's, may find its denominator (lambda within
///   delta) under the rule and drop the term, and the fit is not resolved
///   in f32 at all: finite only.
fn check_f32(got: &[f64], want: &[f64], lambdas: &[f64], nx: usize) -> Result<(), String> {
    const K: f64 = 16.0;
    let eps = f32::EPSILON as f64;
    let resolved = K * eps / 1e-4;
    // 2 values a frequency for amplitudes (re, im).
    let per = got.len() / lambdas.len();
    let lambda = |i: usize| lambdas[i / per];
    if let Some(i) = got.iter().position(|v| !v.is_finite()) {
        return Err(format!("output {i} not finite: {}", got[i]));
    }
    let (well_got, well_want): (Vec<f64>, Vec<f64>) = (0..got.len())
        .filter(|&i| lambda(i) >= resolved)
        .map(|i| (got[i], want[i]))
        .unzip();
    let err = rel_l2(&well_got, &well_want);
    if err > 1e-4 {
        return Err(format!(
            "rel L2 {err:e} over the {} of {} values with lambda >= {resolved:e}",
            well_got.len(),
            got.len()
        ));
    }
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let unresolved = 2.0 * degenerate_below(nx, eps);
    for i in (0..got.len()).filter(|&i| (unresolved..resolved).contains(&lambda(i))) {
        let (e, tol) = ((got[i] - want[i]).abs(), K * eps / lambda(i) * peak);
        if e > tol {
            return Err(format!(
                "output {i}: error {e:e} > {tol:e} at lambda {:e} (peak {peak:e})",
                lambda(i)
            ));
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn check_single<T: Float>(
    seed: u64,
    nx: usize,
    nf: usize,
    origin: f64,
    opts: LombScargleOptions,
    weighted: bool,
    uniform: bool,
) -> Result<(), TestCaseError> {
    let d = data(seed, nx, origin, 10.0 + seed as f64 % 1000.0, weighted);
    let (t, y) = (cast::<T>(&d.t), cast::<T>(&d.y));
    let w = d.w.as_ref().map(|w| cast::<T>(w));
    let mut series = Series::new(&t, &y);
    if let Some(w) = &w {
        series = series.with_weights(w);
    }
    let mut rng = Rng(seed ^ 0x5eed);
    let (got1, got3, freqs) = if uniform {
        let f0 = rng.range(d.lo, 2.0 * d.lo);
        let grid = UniformGrid::spanning(f0, d.hi.max(f0 * 1.5), nf);
        let run = |k: &Kernpack| k.lombscargle_uniform(&series, &grid, &opts).unwrap();
        (run(&cpu(1)), run(&cpu(3)), grid.frequencies())
    } else {
        let freqs: Vec<T> = (0..nf)
            .map(|_| T::from_f64(rng.range(d.lo, d.hi)))
            .collect();
        let run = |k: &Kernpack| k.lombscargle(&series, &freqs, &opts).unwrap();
        let f64s = freqs.iter().map(|f| f.to_f64()).collect();
        (run(&cpu(1)), run(&cpu(3)), f64s)
    };
    prop_assert_eq!(&got1, &got3, "thread counts 1 and 3 differ");
    let want = oracle(&t, &y, w.as_deref(), &freqs, &opts);
    let got = flat(&got1);
    let verdict = if T::NAME == "f32" {
        let lambdas = fit_eigenvalues(&t, w.as_deref(), &freqs, opts.floating_mean);
        check_f32(&got, &want, &lambdas, nx)
    } else {
        let err = rel_l2(&got, &want);
        (err <= 1e-10)
            .then_some(())
            .ok_or(format!("rel L2 {err:e}"))
    };
    if let Err(why) = verdict {
        return Err(TestCaseError::fail(format!(
            "{why} ({} nx {nx} nf {nf} origin {origin} {opts:?} w {weighted} uniform {uniform})",
            T::NAME
        )));
    }
    Ok(())
}

/// [`check_single`] in f64 when `double`, else in f32 (f32 times at 6e4
/// resolve ~4e-3: fine, both sides see the same).
#[allow(clippy::too_many_arguments)]
fn check_single_in(
    double: bool,
    seed: u64,
    nx: usize,
    nf: usize,
    origin: f64,
    opts: LombScargleOptions,
    weighted: bool,
    uniform: bool,
) -> Result<(), TestCaseError> {
    if double {
        check_single::<f64>(seed, nx, nf, origin, opts, weighted, uniform)
    } else {
        check_single::<f32>(seed, nx, nf, origin, opts, weighted, uniform)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn single_series_match_the_reference(
        seed in any::<u64>(),
        nx in 5usize..400,
        nf in 1usize..700,
        origin in prop::sample::select(vec![0.0, -37.5, 6.0e4, 2.4e6]),
        mode in 0u8..3,
        fm in any::<bool>(),
        precenter in any::<bool>(),
        weighted in any::<bool>(),
        uniform in any::<bool>(),
        double in any::<bool>(),
    ) {
        let opts = options(mode, fm, precenter);
        check_single_in(double, seed, nx, nf, origin, opts, weighted, uniform)?;
    }

    #[test]
    fn batches_match_the_reference_and_single_calls(
        seed in any::<u64>(),
        sizes in prop::collection::vec(5usize..300, 1..12),
        nf in 1usize..400,
        mode in 0u8..3,
        fm in any::<bool>(),
        precenter in any::<bool>(),
        weighted in any::<bool>(),
        shared in any::<bool>(),
    ) {
        check_batch(seed, &sizes, nf, mode, fm, precenter, weighted, shared)?;
    }
}

proptest! {
    // Fewer cases: the reference costs ~1e7 pairs a case here.
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(8)))]

    /// Sizes where `choose_uniform_method` takes the NUFFT (its unit test
    /// `the_cost_model_takes_the_nufft_where_it_wins` holds the corners):
    /// one series, every option, f32 and f64.
    #[test]
    fn large_uniform_grids_match_the_reference(
        seed in any::<u64>(),
        nx in 300usize..600,
        nf in 2000usize..10_000,
        origin in prop::sample::select(vec![0.0, -37.5, 6.0e4, 2.4e6]),
        mode in 0u8..3,
        fm in any::<bool>(),
        precenter in any::<bool>(),
        weighted in any::<bool>(),
        double in any::<bool>(),
    ) {
        let opts = options(mode, fm, precenter);
        check_single_in(double, seed, nx, nf, origin, opts, weighted, true)?;
    }

    /// Batches of series that each take the NUFFT on one thread.
    #[test]
    fn batches_on_large_grids_match_the_reference_and_single_calls(
        seed in any::<u64>(),
        sizes in prop::collection::vec(300usize..500, 1..4),
        nf in 2000usize..8000,
        mode in 0u8..3,
        fm in any::<bool>(),
        precenter in any::<bool>(),
        weighted in any::<bool>(),
        shared in any::<bool>(),
    ) {
        check_batch(seed, &sizes, nf, mode, fm, precenter, weighted, shared)?;
    }
}

/// The case behind an intermittent failure of
/// `single_series_match_the_reference` (its proptest input): 5 f32 samples at
/// 2.4e6 with a floating mean. At angular frequency 452.4 (k = 119) lambda is
/// 2.2e-6, under twice f32's degenerate level (8.5e-6 for 5 samples): the
/// kernel drops the sine term, as the GPU's f32 kernel would, and the power
/// there is 0.049 against the reference's 0.149 (rel L2 over the periodogram
/// 1.04e-2). The f64 path on the same f32 data agrees to 7e-13, SciPy's
/// formula with f32 sums is 4e-3 off at k = 119 and at k = 172 (lambda
/// 1.6e-5, where the kernel is 3e-3 off) 3.5e-3: the sums of f32 do not resolve
/// these fits, which [`check_f32`] takes into account.
#[test]
fn tiny_series_with_a_near_singular_fit() {
    let opts = options(0, true, false);
    check_single::<f32>(4684370781797887488, 5, 225, 2.4e6, opts, false, true).unwrap();
}

/// A batch on 1 and 3 threads: the same bits, each series the bits it gives
/// alone (on 2 threads), and within 1e-10 of the reference.
#[allow(clippy::too_many_arguments)]
fn check_batch(
    seed: u64,
    sizes: &[usize],
    nf: usize,
    mode: u8,
    fm: bool,
    precenter: bool,
    weighted: bool,
    shared: bool,
) -> Result<(), TestCaseError> {
    let opts = options(
        if mode == 1 && sizes.iter().any(|&n| n < 3) {
            0
        } else {
            mode
        },
        fm,
        precenter,
    );
    let mut rng = Rng(seed);
    let (mut t, mut y, mut w, mut offsets, mut f0, mut df) =
        (vec![], vec![], vec![], vec![0], vec![], vec![]);
    for (s, &n) in sizes.iter().enumerate() {
        let d = data(
            seed.wrapping_add(s as u64),
            n,
            rng.range(-100.0, 6e4),
            rng.range(5.0, 500.0),
            true,
        );
        t.extend(&d.t);
        y.extend(&d.y);
        w.extend(d.w.unwrap_or_default());
        offsets.push(t.len());
        f0.push(rng.range(d.lo, 2.0 * d.lo));
        df.push((d.hi - d.lo) / nf as f64);
    }
    let batch = Batch {
        t: &t,
        y: &y,
        weights: weighted.then_some(&w[..]),
        offsets: &offsets,
    };
    let grids = if shared {
        // From the highest series' lowest frequency: below a cycle per
        // span the denominators are ill-conditioned (see the header).
        BatchGrid::Shared(UniformGrid::new(
            f0.iter().copied().fold(0.0, f64::max),
            df[0],
            nf,
        ))
    } else {
        BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf,
        }
    };
    let one = cpu(1).lombscargle_batch(&batch, &grids, &opts).unwrap();
    let three = cpu(3).lombscargle_batch(&batch, &grids, &opts).unwrap();
    prop_assert_eq!(&one, &three);
    prop_assert_eq!(one.len(), sizes.len());
    for (s, p) in one.iter().enumerate() {
        let series = batch.series(s);
        let alone = cpu(2)
            .lombscargle_uniform(&series, &grids.grid(s), &opts)
            .unwrap();
        prop_assert_eq!(p, &alone, "series {} differs alone", s);
        let want = oracle(
            series.t,
            series.y,
            series.weights,
            &grids.grid(s).frequencies(),
            &opts,
        );
        let err = rel_l2(&flat(p), &want);
        prop_assert!(err <= 1e-10, "series {s}: rel L2 {err:e}");
    }
    Ok(())
}

/// Long series (several sample tiles, many reseed intervals) and a grid
/// reaching high phases: the recurrence's worst case in this suite.
#[test]
fn long_series_on_a_long_grid() {
    for (seed, fm, mode) in [(1u64, true, 0u8), (2, false, 2), (3, true, 1)] {
        let d = data(seed, 3000, 5.5e4, 3000.0, true);
        let w = d.w.clone().unwrap();
        let series = Series::new(&d.t, &d.y).with_weights(&w);
        let opts = options(mode, fm, false);
        let grid = UniformGrid::spanning(d.lo, 2.0 * d.hi, 20_000);
        let got = cpu(2).lombscargle_uniform(&series, &grid, &opts).unwrap();
        let want = oracle(&d.t, &d.y, Some(&w), &grid.frequencies(), &opts);
        let err = rel_l2(&flat(&got), &want);
        assert!(err <= 1e-10, "rel L2 {err:e}");
    }
}

/// Throughput of the CPU path (no assertion): `cargo test --release --test
/// cpu_lombscargle -- --ignored --nocapture timing`.
#[test]
#[ignore]
fn timing() {
    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    }
    fn time(reps: usize, mut f: impl FnMut()) -> f64 {
        f();
        median(
            (0..reps)
                .map(|_| {
                    let start = std::time::Instant::now();
                    f();
                    start.elapsed().as_secs_f64()
                })
                .collect(),
        )
    }
    fn run<T: Float>(kp: &Kernpack) {
        let opts = LombScargleOptions {
            floating_mean: true,
            ..Default::default()
        };
        let d = data(7, 150, 5.9e4, 1000.0, false);
        let (t, y) = (cast::<T>(&d.t), cast::<T>(&d.y));
        let series = Series::new(&t, &y);
        let grid = UniformGrid::new(d.lo, 0.01, 10_000);
        let s = time(30, || {
            kp.lombscargle_uniform(&series, &grid, &opts).unwrap();
        });
        println!(
            "{} uniform 150 x 1e4: {:.3} ms, {:.2e} pairs/s",
            T::NAME,
            s * 1e3,
            1.5e6 / s
        );
        let freqs: Vec<T> = cast(&grid.frequencies());
        let s = time(10, || {
            kp.lombscargle(&series, &freqs, &opts).unwrap();
        });
        println!(
            "{} arbitrary 150 x 1e4: {:.3} ms, {:.2e} pairs/s",
            T::NAME,
            s * 1e3,
            1.5e6 / s
        );
        let nseries = 1000;
        let (mut bt, mut by, mut offsets) = (vec![], vec![], vec![0]);
        for s in 0..nseries {
            let d = data(s, 100 + (s as usize * 37) % 101, 5.9e4, 1000.0, false);
            bt.extend(cast::<T>(&d.t));
            by.extend(cast::<T>(&d.y));
            offsets.push(bt.len());
        }
        let batch = Batch {
            t: &bt,
            y: &by,
            weights: None,
            offsets: &offsets,
        };
        let grids = BatchGrid::Shared(grid);
        let pairs = bt.len() as f64 * 1e4;
        let s = time(3, || {
            kp.lombscargle_batch(&batch, &grids, &opts).unwrap();
        });
        println!(
            "{} batch {nseries} x 100-200 x 1e4: {:.3} s, {:.2e} pairs/s",
            T::NAME,
            s,
            pairs / s
        );
    }
    let kp = cpu(0);
    println!("threads {}", kp.cpu_threads());
    run::<f64>(&kp);
    run::<f32>(&kp);
}
