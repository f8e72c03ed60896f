//! The fast CPU Lomb-Scargle: SciPy's periodogram (as [`crate::reference::lombscargle`]
//! defines it) in one pass over the data per frequency.
//!
//! Every method reduces a series to six weighted trigonometric sums per
//! angular frequency w ([`TrigSums`]), with times shifted by their mean (the
//! periodogram is shift-invariant, and small |t| keeps the phases w t
//! accurate), weights normalised to sum 1 and y precentered when asked:
//!
//! `[C, S, YC, YS, C2, S2]` = sum w_i (cos, sin, y_i cos, y_i sin) (w t_i),
//! sum w_i (cos, sin) (2 w t_i).
//!
//! [`finish`] turns them into SciPy's values as the GPU kernels do (tau, then
//! the second-pass sums by rotation). The sums come from [`direct`] (every
//! pair; vectorised sincos for arbitrary frequencies, a phasor recurrence on
//! a uniform grid) or, on large uniform grids, from the NUFFT (see
//! [`choose_uniform_method`]).
mod direct;
mod sincos;

use crate::api::lombscargle::batch::{Batch, BatchGrid};
use crate::api::lombscargle::UniformGrid;
use crate::cpu::parallel::for_each_chunk;
use crate::float::{Complex, Float};
use crate::params::lombscargle::{LombScargleOptions, Normalize, Periodogram, Series};
use crate::reference::lombscargle::degenerate_below;

/// `[C, S, YC, YS, C2, S2]` at one angular frequency (see the module documentation).
pub(crate) type TrigSums = [f64; 6];

/// A series as the sums want it: shifted times, normalised weights, y less
/// its precentering, and the statistics the finish needs.
pub(crate) struct Prepared {
    /// t - mean(t).
    pub t: Vec<f64>,
    /// Weights over their sum.
    pub w: Vec<f64>,
    /// y - y_center (the plain mean of y with `precenter`, else 0).
    pub y: Vec<f64>,
    /// w * y of the two above: the `wy` of the NUFFT's interface.
    #[allow(dead_code)] // read once the NUFFT is wired in
    pub wy: Vec<f64>,
    pub stats: Stats,
}

/// Per-series constants of the finish (the GPU's `kp_ls_stats`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stats {
    pub nx: usize,
    pub t_shift: f64,
    /// Y = sum w (y - y_center).
    pub y_mean: f64,
    /// sum w (y - y_center)^2 and the same about Y: the `Normalize` denominators.
    pub yy: f64,
    pub yy_about_mean: f64,
}

/// The GPU's `prepare`: two passes, so that the moments about the mean do
/// not come from a cancelling sum(w y^2) - Y^2 (y = 1e6 + noise).
pub(crate) fn prepare<T: Float>(series: &Series<'_, T>, opts: &LombScargleOptions) -> Prepared {
    let n = series.t.len();
    let t: Vec<f64> = series.t.iter().map(|v| v.to_f64()).collect();
    let t_shift = t.iter().sum::<f64>() / n as f64;
    let t: Vec<f64> = t.iter().map(|v| v - t_shift).collect();
    let w: Vec<f64> = match series.weights {
        Some(w) => w.iter().map(|v| v.to_f64()).collect(),
        None => vec![1.0; n],
    };
    let wsum: f64 = w.iter().sum();
    // As the reference: multiply by the reciprocal.
    let inv = 1.0 / wsum;
    let w: Vec<f64> = w.iter().map(|v| v * inv).collect();
    let y: Vec<f64> = series.y.iter().map(|v| v.to_f64()).collect();
    let y_center = if opts.precenter {
        y.iter().sum::<f64>() / n as f64
    } else {
        0.0
    };
    let y: Vec<f64> = y.iter().map(|v| v - y_center).collect();
    let wy: Vec<f64> = w.iter().zip(&y).map(|(w, y)| w * y).collect();
    let first: f64 = wy.iter().sum();
    let (mut dev, mut dev2, mut yy) = (0.0, 0.0, 0.0);
    for (w, y) in w.iter().zip(&y) {
        let d = y - first;
        dev += w * d;
        dev2 += w * d * d;
        yy += w * y * y;
    }
    Prepared {
        t,
        w,
        y,
        wy,
        stats: Stats {
            nx: n,
            t_shift,
            y_mean: first + dev,
            yy,
            yy_about_mean: dev2 - dev * dev,
        },
    }
}

/// SciPy's value at angular frequency `omega` from its sums: the power
/// (`Power`, `Normalize`) in `.0`, or the complex amplitude. `eps` is the
/// unit roundoff the sums were taken with (the degenerate-denominator rule).
#[inline]
pub(crate) fn finish(
    stats: &Stats,
    opts: &LombScargleOptions,
    omega: f64,
    sums: &TrigSums,
    eps: f64,
) -> (f64, f64) {
    let [c, s, yc_r, ys_r, c2, s2] = *sums;
    let fm = opts.floating_mean;
    let cc_r = 0.5 * (1.0 + c2);
    let cs_r = 0.5 * s2;
    let (mut cc, mut ss, mut cs) = (cc_r, 1.0 - cc_r, cs_r);
    if fm {
        cc -= c * c;
        ss -= s * s;
        cs -= c * s;
    }
    let tau = 0.5 * (2.0 * cs).atan2(cc - ss);
    let (st, ct) = tau.sin_cos();
    // Sums at phase w t - tau, by rotation.
    let mut yc = ct * yc_r + st * ys_r;
    let mut ys = ct * ys_r - st * yc_r;
    let mut cct = ct * ct * cc_r + 2.0 * ct * st * cs_r + st * st * (1.0 - cc_r);
    let mut sst = 1.0 - cct;
    if fm {
        let c_t = ct * c + st * s;
        let s_t = ct * s - st * c;
        yc -= stats.y_mean * c_t;
        ys -= stats.y_mean * s_t;
        cct -= c_t * c_t;
        sst -= s_t * s_t;
    }
    let tol = degenerate_below(stats.nx, eps);
    let a = if cct > tol { yc / cct } else { 0.0 };
    let b = if sst > tol { ys / sst } else { 0.0 };
    match opts.normalize {
        Normalize::Amplitude => {
            // (a + ib) e^{i tau}, moved from the shifted time origin back to
            // t = 0: times e^{i omega t_shift}, as a product of rotations
            // (adding the angles would round their sum, ~1e-7 rad at
            // omega t_shift ~ 1e9).
            let (s1, c1) = (omega * stats.t_shift).sin_cos();
            let (sp, cp) = (st * c1 + ct * s1, ct * c1 - st * s1);
            (a * cp - b * sp, a * sp + b * cp)
        }
        Normalize::Power => (2.0 * (a * yc + b * ys) * (stats.nx as f64 * 0.25), 0.0),
        Normalize::Normalize => {
            let yy = if fm { stats.yy_about_mean } else { stats.yy };
            (2.0 * (a * yc + b * ys) * (0.5 / yy), 0.0)
        }
    }
}

/// How the sums of a uniform grid are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Every (sample, frequency) pair ([`direct::uniform_sums`]).
    Direct,
    /// The non-uniform FFT (`nufft::uniform_sums_nufft`, another branch).
    #[allow(dead_code)] // constructed once the NUFFT is wired in
    Nufft,
}

/// SELECTION POINT for the lead: which method computes the sums of a uniform
/// grid of `nf` frequencies over `nx` samples. Direct for now: it costs
/// ~nx nf pair updates (~10 flops each), the NUFFT ~(nx + nf) log nf with a
/// large constant, so the NUFFT should win once nx is beyond a few hundred
/// and nf large; the crossover is to be measured when both exist.
pub(crate) fn choose_uniform_method(_nx: usize, _nf: usize) -> Method {
    Method::Direct
}

/// Frequencies per work item of the direct uniform kernel: a whole number of
/// blocks, at most one reseed interval, and a function of `nf` only (never
/// of the thread count: the reseeds, and so the rounding, stay put), small
/// enough that a short grid still gives each thread several items.
fn uniform_piece(nf: usize) -> usize {
    let blocks = nf.div_ceil(direct::BLOCK);
    (blocks / 16).clamp(4, direct::MAX_BLOCKS) * direct::BLOCK
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
) -> Periodogram<T> {
    // The sums are f64 on every path.
    let eps = f64::EPSILON;
    let with_sums = |first: usize, len: usize, put: &mut dyn FnMut(usize, (f64, f64))| {
        // Poisoned: a sum the kernel fails to write shows as NaN.
        let mut buf = vec![[f64::NAN; 6]; len];
        sums(first, &mut buf);
        for (k, s) in buf.iter().enumerate() {
            put(k, finish(stats, opts, omega(first + k), s, eps));
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
    let p = prepare(series, opts);
    match choose_uniform_method(p.t.len(), grid.nf) {
        // The lead wires `nufft::uniform_sums_nufft(&p.t, &p.w, &p.wy,
        // grid.f0, grid.df, grid.nf, threads)` here, then [`from_sums`].
        Method::Direct | Method::Nufft => {
            let input = direct::KernelInput::new(&p, opts.floating_mean);
            let steps = direct::Steps::new(&input, grid.df);
            periodogram(
                threads,
                progress,
                grid.nf,
                uniform_piece(grid.nf),
                &p.stats,
                opts,
                |k| grid.frequency(k),
                |first, out| direct::uniform_sums(&input, &steps, grid.f0, grid.df, first, out),
            )
        }
    }
}

/// The periodogram from sums already taken on the whole grid (the NUFFT's
/// output): only the finish, over `threads`.
#[allow(dead_code)] // used once the NUFFT is wired in
pub(crate) fn from_sums<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    stats: &Stats,
    grid: &UniformGrid,
    sums: &[TrigSums],
    opts: &LombScargleOptions,
) -> Periodogram<T> {
    periodogram(
        threads,
        progress,
        grid.nf,
        4096,
        stats,
        opts,
        |k| grid.frequency(k),
        |first, out| out.copy_from_slice(&sums[first..first + out.len()]),
    )
}

/// One periodogram per series (validated input). Many series: one thread
/// per series at a time (each series' work is small); few: the threads go
/// into each series. Either way a series gives the bits it gives alone.
pub(crate) fn lombscargle_batch<T: Float>(
    threads: usize,
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
) -> Vec<Periodogram<T>> {
    let one = |s: usize, threads: usize| {
        lombscargle_uniform(threads, None, &batch.series(s), &grids.grid(s), opts)
    };
    if batch.len() < 4 * threads {
        return (0..batch.len()).map(|s| one(s, threads)).collect();
    }
    let mut out: Vec<Periodogram<T>> = (0..batch.len())
        .map(|_| Periodogram::Real(Vec::new()))
        .collect();
    for_each_chunk(threads, &mut out, 1, None, |s, part| {
        for (j, o) in part.iter_mut().enumerate() {
            *o = one(s + j, 1);
        }
    });
    out
}
