//! The multi-term periodogram on the CPU. Per frequency it needs the
//! weighted sums of cos and sin of m theta (m = 0..=2K) and of y cos, y sin
//! of k theta (k = 0..=K), from which the normal matrix of the fit follows
//! by the product-to-sum identities, then a small Cholesky solve. The sums
//! come from one of two methods:
//! - direct: threads over frequencies, per frequency one pass over the
//!   samples (any frequencies; O(N nf));
//! - on a uniform grid, the non-uniform FFT of the single-term periodogram
//!   ([`crate::cpu::lombscargle::nufft`]) with one transform per sum: w at m
//!   theta for m = 1..=2K and wy at k theta for k = 1..=K, 3K transforms in
//!   O(K (N + nf log nf)), the method of nifty-ls's `finufft_chi2`.
//!
//! Which one runs depends on the sizes only ([`choose_method`]), never on the
//! thread count: a series gives the same bits alone, in a batch, on any
//! number of threads.
//!
//! Accuracy: theta = 2 pi frac(f t) is reduced to under one turn before the
//! one sin_cos per sample (the phase error is that of the product f t,
//! ~eps |f t| turns, as in any evaluation of the design matrix); the higher
//! harmonics come from z^m = z^(m-1) z, z = e^{i theta} (angle addition),
//! each step adding ~2 eps of relative error to a unit-modulus value, so
//! after 2K <= 16 steps cos and sin of m theta are off by <~ 32 eps ~ 7e-15,
//! far below what the solve amplifies (cond(A) eps). The sums are in f64.
use super::lombscargle::nufft::{Harmonics, Transform};
use crate::float::Float;
use crate::params::lombscargle::UniformGrid;
use crate::params::lombscargle_chi2::{Chi2Options, Chi2Prepared, MAX_NTERMS};

/// Highest harmonic of the sums: 2 K.
const MAX_M: usize = 2 * MAX_NTERMS;

/// The weighted sums at one frequency, normalised weights (sum 1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HarmonicSums {
    /// sum w cos(m theta), m = 0..=2K.
    pub c: [f64; MAX_M + 1],
    /// sum w sin(m theta), m = 0..=2K (s[0] = 0).
    pub s: [f64; MAX_M + 1],
    /// sum w yhat cos(k theta), k = 0..=K.
    pub yc: [f64; MAX_NTERMS + 1],
    /// sum w yhat sin(k theta), k = 0..=K (ys[0] = 0).
    pub ys: [f64; MAX_NTERMS + 1],
}

impl HarmonicSums {
    const ZERO: HarmonicSums = HarmonicSums {
        c: [0.0; MAX_M + 1],
        s: [0.0; MAX_M + 1],
        yc: [0.0; MAX_NTERMS + 1],
        ys: [0.0; MAX_NTERMS + 1],
    };
}

/// Relative pivot below which the Cholesky factorisation drops an unknown
/// (its column lies in the span of the earlier ones to within rounding of
/// the f64 sums, ~1e-15 relative: what is left is noise): the power is then
/// that of the fit on the remaining columns, finite, rather than the
/// arbitrary value a near-singular solve returns (e.g. f = 0, where every
/// sine column vanishes).
pub(crate) const PIVOT_TOLERANCE: f64 = 1e-12;

/// `b^T A^-1 b` of the fit from the sums: A by the product-to-sum
/// identities (unknowns ordered [offset?], sin 1, cos 1, sin 2, cos 2, ...),
/// then A = L L^T and the power is |L^-1 b|^2. An unknown is dropped when its
/// pivot is not above [`PIVOT_TOLERANCE`] of its diagonal entry nor above
/// `floor`, the absolute error of the sums (0 for the direct sums, whose
/// error is relative).
pub(crate) fn power_from_sums(
    sums: &HarmonicSums,
    nterms: usize,
    fit_mean: bool,
    floor: f64,
) -> f64 {
    let HarmonicSums { c, s, yc, ys } = sums;
    // S(m) for a signed m: sin(-x) = -sin x.
    let sin_at = |m: isize| {
        if m >= 0 {
            s[m as usize]
        } else {
            -s[(-m) as usize]
        }
    };
    // Column kind: None = offset, Some((k, is_sin)).
    let mut cols: [Option<(usize, bool)>; MAX_M + 1] = [None; MAX_M + 1];
    let mut m = 0;
    if fit_mean {
        cols[m] = None;
        m += 1;
    }
    for k in 1..=nterms {
        cols[m] = Some((k, true));
        cols[m + 1] = Some((k, false));
        m += 2;
    }
    let entry = |a: Option<(usize, bool)>, b: Option<(usize, bool)>| -> f64 {
        match (a, b) {
            (None, None) => c[0],
            (None, Some((k, true))) | (Some((k, true)), None) => s[k],
            (None, Some((k, false))) | (Some((k, false)), None) => c[k],
            (Some((j, sj)), Some((k, sk))) => {
                let (diff, sum) = (j.abs_diff(k), j + k);
                match (sj, sk) {
                    (true, true) => 0.5 * (c[diff] - c[sum]),
                    (false, false) => 0.5 * (c[diff] + c[sum]),
                    // sin j cos k = (sin(j+k) + sin(j-k)) / 2
                    (true, false) => 0.5 * (s[sum] + sin_at(j as isize - k as isize)),
                    (false, true) => 0.5 * (s[sum] + sin_at(k as isize - j as isize)),
                }
            }
        }
    };
    let rhs = |a: Option<(usize, bool)>| match a {
        None => yc[0],
        Some((k, true)) => ys[k],
        Some((k, false)) => yc[k],
    };
    // Lower-triangular L, row by row (Cholesky-Banachiewicz), and z = L^-1 b
    // alongside it.
    let mut l = [[0.0f64; MAX_M + 1]; MAX_M + 1];
    let mut z = [0.0f64; MAX_M + 1];
    let mut power = 0.0;
    for i in 0..m {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            let a = entry(cols[i], cols[j]);
            if i == j {
                let d = a - dot;
                // NaN sums fail the comparison and drop the unknown too.
                let least = (PIVOT_TOLERANCE * a.abs()).max(floor);
                if d.partial_cmp(&least) != Some(std::cmp::Ordering::Greater) {
                    l[i][i] = 0.0; // dropped: column i contributes nothing
                } else {
                    l[i][i] = d.sqrt();
                }
            } else if l[j][j] != 0.0 {
                l[i][j] = (a - dot) / l[j][j];
            }
        }
        if l[i][i] != 0.0 {
            let dot: f64 = (0..i).map(|k| l[i][k] * z[k]).sum();
            z[i] = (rhs(cols[i]) - dot) / l[i][i];
            power += z[i] * z[i];
        }
    }
    power
}

/// Frequencies summed together in one pass over the samples: the samples
/// are loaded once for all of them, and their independent recurrences keep
/// the core's pipelines full.
const LANES: usize = 4;

/// The sums at the frequencies `f` (cycles per unit time), for K = `nterms`
/// harmonics: dispatched to a loop compiled for each K (fixed-size arrays,
/// unrolled recurrence). With `step` (a uniform grid: f[j] = f[0] + j step),
/// one sincos per sample seeds the first frequency and one more gives the
/// rotation e^{2 pi i step t} to the next (3 rotations, ~3 eps each, from an
/// exact seed), instead of one sincos per frequency.
pub(crate) fn harmonic_sums(
    t: &[impl Float],
    prep: &Chi2Prepared,
    f: [f64; LANES],
    step: Option<f64>,
    nterms: usize,
) -> [HarmonicSums; LANES] {
    match nterms {
        1 => harmonic_sums_k::<_, 1>(t, prep, f, step),
        2 => harmonic_sums_k::<_, 2>(t, prep, f, step),
        3 => harmonic_sums_k::<_, 3>(t, prep, f, step),
        4 => harmonic_sums_k::<_, 4>(t, prep, f, step),
        5 => harmonic_sums_k::<_, 5>(t, prep, f, step),
        6 => harmonic_sums_k::<_, 6>(t, prep, f, step),
        7 => harmonic_sums_k::<_, 7>(t, prep, f, step),
        _ => harmonic_sums_k::<_, 8>(t, prep, f, step),
    }
}

/// sin and cos of 2 pi turns, reduced to under half a turn first.
fn sincos_turns(turns: f64) -> (f64, f64) {
    (std::f64::consts::TAU * (turns - turns.round())).sin_cos()
}

fn harmonic_sums_k<T: Float, const K: usize>(
    t: &[T],
    prep: &Chi2Prepared,
    f: [f64; LANES],
    step: Option<f64>,
) -> [HarmonicSums; LANES] {
    let mut sums = [HarmonicSums::ZERO; LANES];
    for ((ti, &w), &wy) in t.iter().zip(&prep.w).zip(&prep.wy) {
        let ti = ti.to_f64();
        let mut z = [(0.0, 0.0); LANES]; // (sin, cos) of theta per lane
        match step {
            Some(df) => {
                z[0] = sincos_turns(f[0] * ti);
                let (rs, rc) = sincos_turns(df * ti);
                for j in 1..LANES {
                    let (ps, pc) = z[j - 1];
                    z[j] = (ps * rc + pc * rs, pc * rc - ps * rs);
                }
            }
            None => {
                for j in 0..LANES {
                    z[j] = sincos_turns(f[j] * ti);
                }
            }
        }
        for (lane, &(sn, cs)) in sums.iter_mut().zip(&z) {
            lane.c[0] += w;
            lane.yc[0] += wy;
            let (mut cm, mut sm) = (cs, sn);
            for m in 1..=2 * K {
                lane.c[m] += w * cm;
                lane.s[m] += w * sm;
                if m <= K {
                    lane.yc[m] += wy * cm;
                    lane.ys[m] += wy * sm;
                }
                let next = cm * cs - sm * sn;
                sm = sm * cs + cm * sn;
                cm = next;
            }
        }
    }
    sums
}

/// Frequencies per piece handed to a thread by the direct method: a
/// multiple of [`LANES`], so that every group of lanes but a piece's last is
/// whole.
const CHUNK: usize = 16;

/// How the sums of a periodogram are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Method {
    /// Every (sample, frequency) pair.
    Direct,
    /// The non-uniform FFT (uniform grids only).
    Nufft,
}

/// Beyond this many frequencies the direct sums run: the NUFFT's grids (3K
/// of ~2 nf complex values) would outweigh the periodogram many times over.
const MAX_NUFFT_NF: usize = 1 << 21;
/// The most memory the NUFFT's grids may take, in bytes.
const MAX_NUFFT_BYTES: usize = 512 << 20;

/// Which method computes the sums of a uniform grid of `nf` frequencies over
/// `nx` samples with `nterms` harmonics: the cheaper one by a cost model of a
/// call on one thread, fitted to timed calls on the 2-core CI machine
/// (`cargo test --release --lib chi2_method_costs -- --ignored --nocapture`
/// prints both times and the choice). A function of the sizes only.
pub(crate) fn choose_method(nx: usize, nf: usize, nterms: usize) -> Method {
    let grid_bytes = 3 * nterms * 2 * nf * std::mem::size_of::<[f64; 2]>();
    if !(64..=MAX_NUFFT_NF).contains(&nf) || grid_bytes > MAX_NUFFT_BYTES {
        return Method::Direct;
    }
    let (nx, nf, k) = (nx as f64, nf as f64, nterms as f64);
    let direct = (DIRECT_PAIR + DIRECT_PAIR_PER_TERM * k) * nx * nf;
    let nufft = k * (NUFFT_SAMPLE * nx + NUFFT_FREQUENCY * nf);
    if nufft < direct {
        Method::Nufft
    } else {
        Method::Direct
    }
}

/// Seconds on one thread beyond the solve (which both methods share): the
/// direct method per (sample, frequency) pair and its growth per harmonic;
/// the NUFFT per sample and harmonic (three spreads of 16 taps) and per
/// frequency and harmonic (three FFTs of ~2 nf points and the per-output
/// pass). Fitted to 60 timed sizes (K 1-8, nx 16-3000, nf 100-10^5) on the
/// 2-core CI machine, where the NUFFT was faster from nf = 100 on but for
/// 16 samples and 4 or 8 harmonics (within 1.5x either way there); at 3000
/// samples and 10^4 frequencies 380x (K = 1) to 63x (K = 8).
const DIRECT_PAIR: f64 = 14e-9;
const DIRECT_PAIR_PER_TERM: f64 = 4.5e-9;
const NUFFT_SAMPLE: f64 = 0.3e-6;
const NUFFT_FREQUENCY: f64 = 110e-9;

/// The periodogram at `nf` frequencies `freq(k)` (cycles per unit time);
/// `step`: the spacing when they form a uniform grid.
// The arguments are the call's: threads, progress, series, grid, options.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lombscargle_chi2<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &Chi2Prepared,
    nf: usize,
    freq: impl Fn(usize) -> f64 + Sync,
    step: Option<f64>,
    opts: &Chi2Options,
) -> Vec<T> {
    let method = match step {
        Some(_) => choose_method(t.len(), nf, opts.nterms),
        None => Method::Direct,
    };
    lombscargle_chi2_by(method, threads, progress, t, prep, nf, freq, step, opts)
}

/// [`lombscargle_chi2`] by the given method (the tests force each; the
/// NUFFT needs `step`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn lombscargle_chi2_by<T: Float>(
    method: Method,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &Chi2Prepared,
    nf: usize,
    freq: impl Fn(usize) -> f64 + Sync,
    step: Option<f64>,
    opts: &Chi2Options,
) -> Vec<T> {
    if let (Method::Nufft, Some(df)) = (method, step) {
        let grid = UniformGrid::new(freq(0), df, nf);
        return nufft_periodogram(threads, progress, t, prep, &grid, opts);
    }
    let mut out = vec![T::from_f64(0.0); nf];
    super::parallel::for_each_chunk(threads, &mut out, CHUNK, progress, |first, piece| {
        direct_piece(t, prep, first, piece, &freq, step, opts)
    });
    out
}

/// The direct method's powers of frequencies `first..first + piece.len()`.
fn direct_piece<T: Float>(
    t: &[T],
    prep: &Chi2Prepared,
    first: usize,
    piece: &mut [T],
    freq: &(impl Fn(usize) -> f64 + Sync),
    step: Option<f64>,
    opts: &Chi2Options,
) {
    for (q, group) in piece.chunks_mut(LANES).enumerate() {
        let k0 = first + q * LANES;
        // A short last group repeats its last frequency (results unused).
        let f: [f64; LANES] = std::array::from_fn(|j| freq(k0 + j.min(group.len() - 1)));
        let step = step.filter(|_| group.len() == LANES);
        let sums = harmonic_sums(t, prep, f, step, opts.nterms);
        for (slot, lane) in group.iter_mut().zip(&sums) {
            let p = power_from_sums(lane, opts.nterms, opts.fit_mean, 0.0);
            *slot = T::from_f64(prep.finish(p, opts.normalization));
        }
    }
}

/// The absolute error of the NUFFT's sums, weights summing to 1: ~1e-14
/// measured (`nufft::tests`), so a pivot under 1e-12 is rounding, not a
/// column of the fit (e.g. the sine columns at f = 0).
const NUFFT_PIVOT_FLOOR: f64 = 1e-12;

/// Frequencies per piece of the NUFFT's per-output pass and solve.
const NUFFT_PIECE: usize = 1024;

/// The periodogram on `grid` from the NUFFT's sums (see the module
/// documentation). The times are shifted to their midpoint first: the
/// power does not depend on the origin of time, and the phases stay small.
///
/// Frequencies under one cycle over the span are taken by the direct sums
/// instead (a few at most grids' start: astropy's grids begin at a tenth of
/// a cycle). There the harmonics' columns are nearly dependent, the normal
/// matrix's condition number passes 1e10 with several harmonics, and the
/// NUFFT's 1e-14 error in the sums became up to 4e-4 of the periodogram's
/// scale, against the direct sums' ~1e-6.
fn nufft_periodogram<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &Chi2Prepared,
    grid: &UniformGrid,
    opts: &Chi2Options,
) -> Vec<T> {
    match opts.nterms {
        1 => nufft_periodogram_k::<T, 1, 6>(threads, progress, t, prep, grid, opts),
        2 => nufft_periodogram_k::<T, 2, 12>(threads, progress, t, prep, grid, opts),
        3 => nufft_periodogram_k::<T, 3, 18>(threads, progress, t, prep, grid, opts),
        4 => nufft_periodogram_k::<T, 4, 24>(threads, progress, t, prep, grid, opts),
        5 => nufft_periodogram_k::<T, 5, 30>(threads, progress, t, prep, grid, opts),
        6 => nufft_periodogram_k::<T, 6, 36>(threads, progress, t, prep, grid, opts),
        7 => nufft_periodogram_k::<T, 7, 42>(threads, progress, t, prep, grid, opts),
        _ => nufft_periodogram_k::<T, 8, 48>(threads, progress, t, prep, grid, opts),
    }
}

/// [`nufft_periodogram`] for K harmonics, S = 6K values of sums a frequency.
fn nufft_periodogram_k<T: Float, const K: usize, const S: usize>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &Chi2Prepared,
    grid: &UniformGrid,
    opts: &Chi2Options,
) -> Vec<T> {
    debug_assert_eq!(S, 6 * K);
    let (lo, hi) = t
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v.to_f64()), hi.max(v.to_f64()))
        });
    let mid = 0.5 * (lo + hi);
    let shifted: Vec<f64> = t.iter().map(|v| v.to_f64() - mid).collect();
    let transform = Transform::of_harmonics(
        &shifted,
        &prep.w,
        &prep.wy,
        grid,
        Harmonics::multi_term(K),
        threads,
    );
    let (c0, yc0) = (prep.w.iter().sum::<f64>(), prep.wy.iter().sum::<f64>());
    let span = hi - lo;
    let unresolved = if grid.f0 * span >= 1.0 {
        0
    } else {
        (((1.0 / span - grid.f0) / grid.df).ceil() as usize).min(grid.nf)
    };
    let freq = |k: usize| grid.frequency(k);
    let mut out = vec![T::from_f64(0.0); grid.nf];
    super::parallel::for_each_chunk(threads, &mut out, NUFFT_PIECE, progress, |first, piece| {
        let direct = unresolved.saturating_sub(first).min(piece.len());
        let (low, rest) = piece.split_at_mut(direct);
        direct_piece(t, prep, first, low, &freq, Some(grid.df), opts);
        let first = first + direct;
        let mut sums = vec![0.0; S * rest.len()];
        transform.sums_of::<S>(first, &mut sums);
        for (slot, at) in rest.iter_mut().zip(sums.chunks_exact(S)) {
            let h = harmonic_sums_of::<K>(at, c0, yc0);
            let p = power_from_sums(&h, K, opts.fit_mean, NUFFT_PIVOT_FLOOR);
            *slot = T::from_f64(prep.finish(p, opts.normalization));
        }
    });
    out
}

/// The sums of one frequency from the transform's values: (re, im) pairs of
/// w at theta, wy at theta, w at 2 theta, wy at 2 theta, ... up to K, then w
/// alone up to 2K.
fn harmonic_sums_of<const K: usize>(at: &[f64], c0: f64, yc0: f64) -> HarmonicSums {
    let mut h = HarmonicSums::ZERO;
    (h.c[0], h.yc[0]) = (c0, yc0);
    for m in 1..=K {
        let i = 4 * (m - 1);
        (h.c[m], h.s[m], h.yc[m], h.ys[m]) = (at[i], at[i + 1], at[i + 2], at[i + 3]);
    }
    for m in K + 1..=2 * K {
        let i = 4 * K + 2 * (m - K - 1);
        (h.c[m], h.s[m]) = (at[i], at[i + 1]);
    }
    h
}

#[cfg(test)]
mod tests;
