//! The fast CPU Lomb-Scargle: SciPy's periodogram (as `crate::reference::lombscargle`
//! defines it) in one pass over the data per frequency.
//!
//! Every method reduces a series to six weighted trigonometric sums per
//! angular frequency w ([`TrigSums`]), with times shifted by their mean (the
//! periodogram is shift-invariant, and small |t| keeps the phases w t
//! accurate), weights normalised to sum 1 and y precentered when asked (and
//! taken about its weighted mean with a floating mean, see [`prepare`]):
//!
//! `[C, S, YC, YS, C2, S2]` = sum w_i (cos, sin, y_i cos, y_i sin) (w t_i),
//! sum w_i (cos, sin) (2 w t_i).
//!
//! [`finish_all`] turns them into SciPy's values as the GPU kernels do (tau, then
//! the second-pass sums by rotation). The sums come from [`direct`] (every
//! pair; vectorised sincos for arbitrary frequencies, a phasor recurrence on
//! a uniform grid) or, on large uniform grids, from the NUFFT (see
//! [`choose_uniform_method`]).
mod direct;
pub(crate) mod nufft;
mod sincos;
#[cfg(test)]
mod tests;

use crate::cpu::parallel::for_each_chunk;
use crate::float::{Complex, Float};
use crate::params::lombscargle::degenerate_below;
use crate::params::lombscargle::{Batch, BatchGrid, UniformGrid};
use crate::params::lombscargle::{LombScargleOptions, Normalize, Periodogram, Series};

/// `[C, S, YC, YS, C2, S2]` at one angular frequency (see the module documentation).
pub(crate) type TrigSums = [f64; 6];

/// A series as the sums want it: shifted times, normalised weights, y less
/// its precentering, and the statistics the finish needs.
pub(crate) struct Prepared {
    /// t - mean(t).
    pub t: Vec<f64>,
    /// Weights over their sum.
    pub w: Vec<f64>,
    /// y - y_center (the plain mean of y with `precenter`, else 0), and
    /// with a floating mean also less Y, its weighted mean (see `prepare`).
    pub y: Vec<f64>,
    pub stats: Stats,
}

/// Per-series constants of the finish (the GPU's `kp_ls_stats`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stats {
    pub nx: usize,
    pub t_shift: f64,
    /// Y = sum w y of the prepared y: with a floating mean, the rounding
    /// left in the centring (see `prepare`).
    pub y_mean: f64,
    /// sum w (y - y_center)^2 and the same about Y: the `Normalize` denominators.
    pub yy: f64,
    pub yy_about_mean: f64,
}

/// The GPU's `prepare`: two passes, so that the moments about the mean do
/// not come from a cancelling sum(w y^2) - Y^2 (y = 1e6 + noise).
///
/// With a floating mean y is then taken about its weighted mean Y (exact
/// differences), so the sums are of the centred data: the finish's YC - Y C
/// would otherwise cancel the sums' error relative to Σ|w y| (~1e6 times
/// the signal's scale at y = 1e6 + signal) into the result. The finish's Y
/// becomes the weighted mean of the centred y, the rounding left in the
/// first Y. (Only `yy`, used without a floating mean, stays about y_center.)
pub(crate) fn prepare<T: Float>(series: &Series<'_, T>, opts: &LombScargleOptions) -> Prepared {
    let n = series.t.len();
    let mean = |v: &[T]| v.iter().map(|v| v.to_f64()).sum::<f64>() / n as f64;
    let t_shift = mean(series.t);
    let t: Vec<f64> = series.t.iter().map(|v| v.to_f64() - t_shift).collect();
    // As the reference: weights times the reciprocal of their sum (of n
    // ones: exactly n).
    let w: Vec<f64> = match series.weights {
        Some(w) => {
            let inv = 1.0 / w.iter().map(|v| v.to_f64()).sum::<f64>();
            w.iter().map(|v| v.to_f64() * inv).collect()
        }
        None => vec![1.0 / n as f64; n],
    };
    let y_center = if opts.precenter { mean(series.y) } else { 0.0 };
    let mut y: Vec<f64> = series.y.iter().map(|v| v.to_f64() - y_center).collect();
    let first: f64 = w.iter().zip(&y).map(|(w, y)| w * y).sum();
    let (mut dev, mut dev2, mut yy) = (0.0, 0.0, 0.0);
    for (w, y) in w.iter().zip(&y) {
        let d = y - first;
        dev += w * d;
        dev2 += w * d * d;
        yy += w * y * y;
    }
    let mut y_mean = first + dev;
    if opts.floating_mean {
        y.iter_mut().for_each(|v| *v -= y_mean);
        y_mean = w.iter().zip(&y).map(|(w, y)| w * y).sum();
    }
    Prepared {
        t,
        w,
        y,
        stats: Stats {
            nx: n,
            t_shift,
            y_mean,
            yy,
            yy_about_mean: dev2 - dev * dev,
        },
    }
}

/// (sin tau, cos tau) for tau = atan2(y, x) / 2 in (-pi/2, pi/2], without
/// atan2 and sincos: those two libm calls cost more per frequency than a
/// few hundred (sample, frequency) pairs of the recurrence. The half-angle
/// formulas are taken on the side without cancellation: cos tau from r + x
/// when x >= 0, sin tau from r - x when x < 0 (r = hypot(x, y)).
#[inline(always)]
fn half_angle(y: f64, x: f64) -> (f64, f64) {
    // Not hypot: its care for overflow costs ~10 ns, and |x|, |y| <= 2 here.
    let r = (x * x + y * y).sqrt();
    let inv_2r = 0.5 / r;
    // cos tau when x >= 0, |sin tau| when x < 0; q the other one.
    let big = ((r + x.abs()) * inv_2r).sqrt();
    let q = y * inv_2r / big;
    // Selects rather than branches, so that a loop over frequencies
    // vectorises; r = 0 is atan2(0, 0) = 0.
    let (s, c) = if x >= 0.0 {
        (q, big)
    } else {
        (big.copysign(y), q.abs())
    };
    if r > 0.0 {
        (s, c)
    } else {
        (0.0, 1.0)
    }
}

/// SciPy's values from the sums of the angular frequencies `omega`: the
/// power (`Power`, `Normalize`) in `re`, or the complex amplitude in
/// (`re`, `im`). `eps` is the unit roundoff the sums were taken with (the
/// degenerate-denominator rule, as the reference's). As the GPU kernels: tau
/// from C2, S2, C, S, then the second-pass sums by rotation; the amplitude
/// referred back from the shifted time origin to t = 0. Vectorised over
/// frequencies (see [`finish_lanes`]): with libm's atan2 and sincos, the
/// finish cost more than the sums of a 150-sample series.
#[macro_rules_attribute::apply(simd_targets!)]
fn finish_all(
    stats: &Stats,
    opts: &LombScargleOptions,
    eps: f64,
    omega: &[f64],
    sums: &[TrigSums],
    re: &mut [f64],
    im: &mut [f64],
) {
    use sincos::LANES;
    for (k0, (o, s)) in omega.chunks(LANES).zip(sums.chunks(LANES)).enumerate() {
        // Sums transposed to one lane array each (plain vector loads below);
        // a short last chunk is padded with zeros, its extra lanes dropped.
        let mut t = [[0.0; LANES]; 6];
        let mut om = [0.0; LANES];
        for (j, (sj, oj)) in s.iter().zip(o).enumerate() {
            om[j] = *oj;
            for q in 0..6 {
                t[q][j] = sj[q];
            }
        }
        let (r, i) = finish_lanes(stats, opts, eps, &om, &t);
        let range = k0 * LANES..k0 * LANES + s.len();
        re[range.clone()].copy_from_slice(&r[..s.len()]);
        im[range].copy_from_slice(&i[..s.len()]);
    }
}

/// Lane array `f(j)` for every lane `j`: one step of [`finish_lanes`].
#[inline(always)]
fn lanes(f: impl Fn(usize) -> f64) -> sincos::Lanes {
    let mut out = [0.0; sincos::LANES];
    for (j, o) in out.iter_mut().enumerate() {
        *o = f(j);
    }
    out
}

/// The finish of a lane array of frequencies, written as one lane loop per
/// step: the whole body in one loop does not vectorise.
#[inline(always)]
fn finish_lanes(
    stats: &Stats,
    opts: &LombScargleOptions,
    eps: f64,
    omega: &sincos::Lanes,
    s: &[sincos::Lanes; 6],
) -> (sincos::Lanes, sincos::Lanes) {
    let [c, sn, yc_r, ys_r, c2, s2] = s;
    let fm = opts.floating_mean;
    let cc_r = lanes(|j| 0.5 * (1.0 + c2[j]));
    let cs_r = lanes(|j| 0.5 * s2[j]);
    let mut cc = cc_r;
    let mut ss = lanes(|j| 1.0 - cc_r[j]);
    let mut cs = cs_r;
    if fm {
        cc = lanes(|j| cc[j] - c[j] * c[j]);
        ss = lanes(|j| ss[j] - sn[j] * sn[j]);
        cs = lanes(|j| cs[j] - c[j] * sn[j]);
    }
    let mut st = [0.0; sincos::LANES];
    let mut ct = [0.0; sincos::LANES];
    for j in 0..sincos::LANES {
        (st[j], ct[j]) = half_angle(2.0 * cs[j], cc[j] - ss[j]);
    }
    let mut yc = lanes(|j| ct[j] * yc_r[j] + st[j] * ys_r[j]);
    let mut ys = lanes(|j| ct[j] * ys_r[j] - st[j] * yc_r[j]);
    let mut cct = lanes(|j| {
        ct[j] * ct[j] * cc_r[j] + 2.0 * ct[j] * st[j] * cs_r[j] + st[j] * st[j] * (1.0 - cc_r[j])
    });
    let mut sst = lanes(|j| 1.0 - cct[j]);
    if fm {
        let c_t = lanes(|j| ct[j] * c[j] + st[j] * sn[j]);
        let s_t = lanes(|j| ct[j] * sn[j] - st[j] * c[j]);
        yc = lanes(|j| yc[j] - stats.y_mean * c_t[j]);
        ys = lanes(|j| ys[j] - stats.y_mean * s_t[j]);
        cct = lanes(|j| cct[j] - c_t[j] * c_t[j]);
        sst = lanes(|j| sst[j] - s_t[j] * s_t[j]);
    }
    let tol = degenerate_below(stats.nx, eps);
    let a = lanes(|j| if cct[j] > tol { yc[j] / cct[j] } else { 0.0 });
    let b = lanes(|j| if sst[j] > tol { ys[j] / sst[j] } else { 0.0 });
    match opts.normalize {
        Normalize::Amplitude => {
            let phase = lanes(|j| omega[j] * stats.t_shift);
            let (s1, c1) = sincos::sincos(&phase);
            let sp = lanes(|j| st[j] * c1[j] + ct[j] * s1[j]);
            let cp = lanes(|j| ct[j] * c1[j] - st[j] * s1[j]);
            (
                lanes(|j| a[j] * cp[j] - b[j] * sp[j]),
                lanes(|j| a[j] * sp[j] + b[j] * cp[j]),
            )
        }
        mode => {
            let scale = match mode {
                Normalize::Power => stats.nx as f64 * 0.25,
                _ => 0.5 / if fm { stats.yy_about_mean } else { stats.yy },
            };
            (
                lanes(|j| 2.0 * (a[j] * yc[j] + b[j] * ys[j]) * scale),
                [0.0; sincos::LANES],
            )
        }
    }
}

/// How the sums of a uniform grid are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Every (sample, frequency) pair ([`direct::Uniform`]).
    Direct,
    /// The non-uniform FFT ([`nufft::Transform`]).
    Nufft,
}

/// Which method computes the sums of a uniform grid of `nf` frequencies
/// over `nx` samples (`single`: f32 input, whose direct kernel runs in f32
/// at twice the pairs per instruction; the NUFFT runs in f64 either way).
///
/// The cheaper one by a cost model of a whole call on one thread, fitted
/// to 176 timed calls of each method (nx 8-3000, nf 100-2x10^5, f32 and
/// f64) on the 2-core Xeon: `cargo test --release --lib probe_method_costs
/// -- --ignored --nocapture` prints both times and the model's choice. It
/// chose the faster method in all but 3 near-ties (at most 5% slower).
/// One thread because a batch runs each series on one, and both methods
/// divide over two threads about alike. The choice depends on the sizes
/// only, never on the thread count, so the output is the same bits on any
/// count and a series in a batch gives the bits it gives alone.
pub(crate) fn choose_uniform_method(nx: usize, nf: usize, single: bool) -> Method {
    // Beyond this the NUFFT's grids (96 bytes a frequency) outweigh the
    // periodogram many times over; the direct sums need no memory.
    const MAX_NUFFT_NF: usize = 1 << 21;
    if !(64..=MAX_NUFFT_NF).contains(&nf) {
        return Method::Direct;
    }
    let (cost, block) = if single {
        (&DIRECT_F32, direct::Uniform::<f32, 16>::BLOCK)
    } else {
        (&DIRECT_F64, direct::Uniform::<f64, 8>::BLOCK)
    };
    let reseeds = nf.div_ceil(uniform_piece(nf, block)) as f64;
    let (nx, nf) = (nx as f64, nf as f64);
    let direct =
        cost.frequency * nf + cost.sample * nx + cost.pair * nx * nf + cost.reseed * nx * reseeds;
    // The FFTs' share per frequency grows once the grids outgrow the cache.
    let per_frequency = NUFFT_FREQUENCY + NUFFT_FREQUENCY_PER_DOUBLING * (nf / 1e4).log2().max(0.0);
    let nufft = NUFFT_SAMPLE * nx + per_frequency * nf;
    if nufft < direct {
        Method::Nufft
    } else {
        Method::Direct
    }
}

/// Seconds on one thread of the direct uniform path: per frequency (the
/// finish and the output), per sample (its phasor tables), per (sample,
/// frequency) pair, per sample and exact reseed (one per work item).
struct DirectCost {
    frequency: f64,
    sample: f64,
    pair: f64,
    reseed: f64,
}

const DIRECT_F64: DirectCost = DirectCost {
    frequency: 13.9e-9,
    sample: 0.10e-6,
    pair: 0.198e-9,
    reseed: 9.9e-9,
};
const DIRECT_F32: DirectCost = DirectCost {
    frequency: 13.2e-9,
    sample: 0.21e-6,
    pair: 0.100e-9,
    reseed: 12.3e-9,
};
/// NUFFT seconds on one thread: per sample (its phases and three spreads of
/// 16 taps), per frequency (three FFTs of ~2 nf points, the per-output pass,
/// the finish), and the growth per doubling of nf beyond 10^4.
const NUFFT_SAMPLE: f64 = 0.29e-6;
const NUFFT_FREQUENCY: f64 = 29.5e-9;
const NUFFT_FREQUENCY_PER_DOUBLING: f64 = 8.5e-9;

/// Frequencies per work item of the direct uniform kernel with blocks of
/// `block`: a whole number of blocks, at most one reseed interval, and a
/// function of `nf` only (never of the thread count: the reseeds, and so
/// the rounding, stay put), small enough that a short grid still gives each
/// thread several items.
fn uniform_piece(nf: usize, block: usize) -> usize {
    (nf.div_ceil(block) / 8).clamp(4, direct::MAX_BLOCKS) * block
}

/// Frequencies per work item of the arbitrary-frequency kernel.
const ARBITRARY_PIECE: usize = 256;

/// The periodogram from a function that fills the sums of frequencies
/// `first .. first + sums.len()`, in pieces of `piece` over `threads`.
#[allow(clippy::too_many_arguments)]
fn periodogram<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    nf: usize,
    piece: usize,
    stats: &Stats,
    opts: &LombScargleOptions,
    omega: impl Fn(usize) -> f64 + Sync,
    sums: impl Fn(usize, &mut [TrigSums]) + Sync,
    eps: f64,
) -> Periodogram<T> {
    let with_sums = |first: usize, len: usize, put: &mut dyn FnMut(usize, (f64, f64))| {
        // Poisoned: a sum the kernel fails to write shows as NaN.
        let mut buf = vec![[f64::NAN; 6]; len];
        sums(first, &mut buf);
        let omegas: Vec<f64> = (first..first + len).map(&omega).collect();
        let (mut re, mut im) = (vec![f64::NAN; len], vec![f64::NAN; len]);
        finish_all(stats, opts, eps, &omegas, &buf, &mut re, &mut im);
        for (k, v) in re.into_iter().zip(im).enumerate() {
            put(k, v);
        }
    };
    match opts.normalize {
        Normalize::Amplitude => {
            // Poisoned (NaN) until written: the tests see any value left out.
            let nan = T::from_f64(f64::NAN);
            let mut out = vec![Complex { re: nan, im: nan }; nf];
            for_each_chunk(threads, &mut out, piece, progress, |first, part| {
                with_sums(first, part.len(), &mut |k, (re, im)| {
                    part[k] = Complex {
                        re: T::from_f64(re),
                        im: T::from_f64(im),
                    }
                })
            });
            Periodogram::Complex(out)
        }
        _ => {
            let mut out = vec![T::from_f64(f64::NAN); nf];
            for_each_chunk(threads, &mut out, piece, progress, |first, part| {
                with_sums(first, part.len(), &mut |k, (p, _)| part[k] = T::from_f64(p))
            });
            Periodogram::Real(out)
        }
    }
}

/// The periodogram at arbitrary angular frequencies (validated input).
pub(crate) fn lombscargle<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    series: &Series<'_, T>,
    freqs: &[T],
    opts: &LombScargleOptions,
) -> Periodogram<T> {
    let p = prepare(series, opts);
    let input = direct::KernelInput::new(&p, opts.floating_mean);
    let freqs: Vec<f64> = freqs.iter().map(|f| f.to_f64()).collect();
    periodogram(
        threads,
        progress,
        freqs.len(),
        ARBITRARY_PIECE,
        &p.stats,
        opts,
        |k| freqs[k],
        |first, out| direct::arbitrary_sums(&input, &freqs[first..first + out.len()], out),
        f64::EPSILON,
    )
}

/// The periodogram on a uniform grid (validated input).
pub(crate) fn lombscargle_uniform<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    series: &Series<'_, T>,
    grid: &UniformGrid,
    opts: &LombScargleOptions,
) -> Periodogram<T> {
    let single = std::mem::size_of::<T>() == 4;
    let method = choose_uniform_method(series.t.len(), grid.nf, single);
    uniform_by(method, threads, progress, series, grid, opts)
}

/// Frequencies per work item of the NUFFT's per-output pass and finish.
const NUFFT_PIECE: usize = 4096;

/// Below this many frequencies the NUFFT runs on one thread: its grids
/// (96 bytes a frequency) then fit a core's L2, and moving them between
/// cores from phase to phase cost more than the second thread saved (on the
/// 2-core Xeon, 150 x 10^4: 0.24 ms on one thread, 0.39 on two; at 3 x
/// 10^4 about even; 3000 x 10^5: 6.2 ms against 4.0). The output does not
/// depend on it.
const NUFFT_THREADED_NF: usize = 32_768;

/// [`lombscargle_uniform`] by the given method (the tests force each).
pub(crate) fn uniform_by<T: Float>(
    method: Method,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    series: &Series<'_, T>,
    grid: &UniformGrid,
    opts: &LombScargleOptions,
) -> Periodogram<T> {
    let p = prepare(series, opts);
    // The periodogram on `threads` from `sums` in pieces of `piece`, the sums
    // taken with unit roundoff `eps`.
    let run = |threads, piece, eps, sums: &(dyn Fn(usize, &mut [TrigSums]) + Sync)| {
        let omega = |k| grid.frequency(k);
        periodogram(
            threads, progress, grid.nf, piece, &p.stats, opts, omega, sums, eps,
        )
    };
    match method {
        // The NUFFT's sums are in f64 whatever `T` (its error, ~1e-14 of
        // Σ|w y|, is far under f32's bound).
        Method::Nufft => {
            let threads = if grid.nf < NUFFT_THREADED_NF {
                1
            } else {
                threads
            };
            let wy: Vec<f64> = p.w.iter().zip(&p.y).map(|(w, y)| w * y).collect();
            let transform = nufft::Transform::new(&p.t, &p.w, &wy, grid, threads);
            run(threads, NUFFT_PIECE, f64::EPSILON, &|first, out| {
                transform.sums(first, out)
            })
        }
        // f32 input: the kernel in f32, 16 lanes (see `direct::Uniform`).
        Method::Direct if std::mem::size_of::<T>() == 4 => {
            let input = direct::KernelInput::new(&p, opts.floating_mean);
            let u = direct::Uniform::<f32, 16>::new(&input, grid);
            let piece = uniform_piece(grid.nf, direct::Uniform::<f32, 16>::BLOCK);
            run(threads, piece, f32::EPSILON.into(), &|first, out| {
                u.sums(first, out)
            })
        }
        Method::Direct => {
            let input = direct::KernelInput::new(&p, opts.floating_mean);
            let u = direct::Uniform::<f64, 8>::new(&input, grid);
            let piece = uniform_piece(grid.nf, direct::Uniform::<f64, 8>::BLOCK);
            run(threads, piece, f64::EPSILON, &|first, out| {
                u.sums(first, out)
            })
        }
    }
}

/// `reduce` of each series' periodogram (validated input): many series
/// run one thread per series at a time (each series' work is small), few
/// get all the threads each; either way a series gives the bits it gives
/// alone. Only one periodogram per thread is alive at a time, so a batch's
/// reductions (e.g. its peaks) need no memory for all its periodograms.
pub(crate) fn lombscargle_batch<T: Float, R: Send>(
    threads: usize,
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
    reduce: impl Fn(usize, Periodogram<T>) -> R + Sync,
) -> Vec<R> {
    let one = |s: usize, threads: usize| {
        reduce(
            s,
            lombscargle_uniform(threads, None, &batch.series(s), &grids.grid(s), opts),
        )
    };
    if batch.len() < 4 * threads {
        return (0..batch.len()).map(|s| one(s, threads)).collect();
    }
    let mut out: Vec<Option<R>> = (0..batch.len()).map(|_| None).collect();
    for_each_chunk(threads, &mut out, 1, None, |s, part| {
        for (j, o) in part.iter_mut().enumerate() {
            *o = Some(one(s + j, 1));
        }
    });
    out.into_iter()
        .map(|r| r.expect("every series is computed"))
        .collect()
}

/// Cost of each part on one thread (kernel sums f64 and f32, finish,
/// arbitrary-frequency sums), min of repeats, to steer tuning on a shared
/// machine: `cargo test --release --lib probe_costs -- --ignored --nocapture`.
#[cfg(test)]
mod probe {
    use super::*;

    /// The (nx, nf) sizes a timing probe runs, from the environment
    /// variable `name` as "nx x nf" pairs ("150x10000,3000x100000"); None
    /// when it is unset.
    pub(super) fn sizes_from_env(name: &str) -> Option<Vec<(usize, usize)>> {
        let v = std::env::var(name).ok()?;
        let pair = |p: &str| {
            let (a, b) = p.split_once('x').expect("sizes as nx x nf");
            (a.parse().unwrap(), b.parse().unwrap())
        };
        Some(v.split(',').map(pair).collect())
    }

    fn min_time(reps: usize, mut f: impl FnMut()) -> f64 {
        (0..reps)
            .map(|_| {
                let s = std::time::Instant::now();
                f();
                s.elapsed().as_secs_f64()
            })
            .fold(f64::INFINITY, f64::min)
    }
    #[test]
    #[ignore]
    fn probe_costs() {
        let n = 150;
        let t: Vec<f64> = (0..n)
            .map(|i| 5.9e4 + i as f64 * 6.7 + (i as f64).sin())
            .collect();
        let y: Vec<f64> = t.iter().map(|t| (t * 0.3).sin() + 0.5).collect();
        let opts = LombScargleOptions {
            floating_mean: true,
            ..Default::default()
        };
        let series = Series::new(&t, &y);
        let p = prepare(&series, &opts);
        let input = direct::KernelInput::new(&p, true);
        let grid = UniformGrid::new(0.001, 0.01, 10_000);
        let u = direct::Uniform::<f64, 8>::new(&input, &grid);
        let mut sums = vec![[0.0; 6]; grid.nf];
        let piece = uniform_piece(grid.nf, 24);
        let k = min_time(50, || {
            for (i, part) in sums.chunks_mut(piece).enumerate() {
                u.sums(i * piece, part);
            }
        });
        let u32 = direct::Uniform::<f32, 16>::new(&input, &grid);
        let piece = uniform_piece(grid.nf, 48);
        let k32 = min_time(50, || {
            for (i, part) in sums.chunks_mut(piece).enumerate() {
                u32.sums(i * piece, part);
            }
        });
        println!("1 thread: f32 uniform sums {:.3} ms", k32 * 1e3);
        let omegas = grid.frequencies();
        let (mut re, mut im) = (vec![0.0; grid.nf], vec![0.0; grid.nf]);
        let f = min_time(50, || {
            finish_all(
                &p.stats,
                &opts,
                f64::EPSILON,
                &omegas,
                &sums,
                &mut re,
                &mut im,
            );
        });
        let acc: f64 = re.iter().sum();
        let freqs = grid.frequencies();
        let a = min_time(20, || direct::arbitrary_sums(&input, &freqs, &mut sums));
        let pairs = (n * grid.nf) as f64;
        println!("1 thread: uniform sums {:.3} ms ({:.2e} pairs/s), finish {:.3} ms, arbitrary sums {:.3} ms ({:.2e} pairs/s) {acc}", k * 1e3, pairs / k, f * 1e3, a * 1e3, pairs / a);
    }

    /// Whole single-thread calls by each uniform method over sizes around
    /// the crossover, f64 and f32, medians of repeats: the data behind
    /// `choose_uniform_method`'s constants. Prints a line per size with
    /// both times, the model's figures and what it chooses.
    #[test]
    #[ignore]
    fn probe_method_costs() {
        fn median_time(reps: usize, mut f: impl FnMut()) -> f64 {
            f();
            let mut v: Vec<f64> = (0..reps)
                .map(|_| {
                    let s = std::time::Instant::now();
                    f();
                    s.elapsed().as_secs_f64()
                })
                .collect();
            v.sort_by(f64::total_cmp);
            v[reps / 2]
        }
        fn run<T: Float>(nx: usize, nf: usize) {
            let t: Vec<T> = (0..nx)
                .map(|i| T::from_f64(5.9e4 + i as f64 * 1000.0 / nx as f64 + (i as f64).sin()))
                .collect();
            let y: Vec<T> = t
                .iter()
                .map(|t| T::from_f64((t.to_f64() * 0.3).sin() + 0.5))
                .collect();
            let opts = LombScargleOptions {
                floating_mean: true,
                normalize: Normalize::Normalize,
                ..Default::default()
            };
            let series = Series::new(&t, &y);
            let grid = UniformGrid::new(0.01, 5.0 / nf as f64, nf);
            let work = (nx * nf) as f64;
            let reps = ((3e7 / work) as usize).clamp(5, 201);
            let time = |m, threads| {
                median_time(reps, || {
                    std::hint::black_box(uniform_by::<T>(m, threads, None, &series, &grid, &opts));
                })
            };
            let (d, n) = (time(Method::Direct, 1), time(Method::Nufft, 1));
            // PROBE_THREADS=n: the same on n threads (the model is of one).
            if let Some(threads) = std::env::var("PROBE_THREADS")
                .ok()
                .and_then(|v| v.parse().ok())
            {
                println!(
                    "{} nx {nx:5} nf {nf:7}: {threads} threads: direct {:9.4} ms nufft {:9.4} ms",
                    T::NAME,
                    time(Method::Direct, threads) * 1e3,
                    time(Method::Nufft, threads) * 1e3,
                );
            }
            let single = T::NAME == "f32";
            let chosen = choose_uniform_method(nx, nf, single);
            println!(
                "{} nx {nx:5} nf {nf:7}: direct {:9.4} ms nufft {:9.4} ms -> {chosen:?}{}",
                T::NAME,
                d * 1e3,
                n * 1e3,
                if (d < n) != (chosen == Method::Direct) {
                    "  (not the faster)"
                } else {
                    ""
                }
            );
        }
        let sizes = sizes_from_env("PROBE_SIZES").unwrap_or_else(|| {
            let mut v = vec![];
            for nf in [100, 300, 1000, 2000, 5000, 10_000, 30_000, 100_000, 200_000] {
                for nx in [8, 32, 64, 100, 150, 200, 300, 500, 1000, 3000] {
                    if nx * nf <= 200_000_000 {
                        v.push((nx, nf));
                    }
                }
            }
            v
        });
        for (nx, nf) in sizes {
            run::<f64>(nx, nf);
            run::<f32>(nx, nf);
        }
    }
}
