//! The multi-term periodogram on the CPU: threads over frequencies; per
//! frequency one pass over the samples accumulating the weighted sums of
//! cos and sin of m theta (m = 0..=2K) and of y cos, y sin of k theta
//! (k = 0..=K), from which the normal matrix of the fit follows by the
//! product-to-sum identities, then a small Cholesky solve.
//!
//! Accuracy: theta = 2 pi frac(f t) is reduced to under one turn before the
//! one sin_cos per sample (the phase error is that of the product f t,
//! ~eps |f t| turns, as in any evaluation of the design matrix); the higher
//! harmonics come from z^m = z^(m-1) z, z = e^{i theta} (angle addition),
//! each step adding ~2 eps of relative error to a unit-modulus value, so
//! after 2K <= 16 steps cos and sin of m theta are off by <~ 32 eps ~ 7e-15,
//! far below what the solve amplifies (cond(A) eps). The sums are in f64.
use crate::float::Float;
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

/// Relative pivot below which the Cholesky factorisation drops an unknown
/// (its column lies in the span of the earlier ones to within rounding of
/// the f64 sums, ~1e-15 relative: what is left is noise): the power is then
/// that of the fit on the remaining columns, finite, rather than the
/// arbitrary value a near-singular solve returns (e.g. f = 0, where every
/// sine column vanishes).
pub(crate) const PIVOT_TOLERANCE: f64 = 1e-12;

/// `b^T A^-1 b` of the fit from the sums: A by the product-to-sum
/// identities (unknowns ordered [offset?], sin 1, cos 1, sin 2, cos 2, ...),
/// then A = L L^T and the power is |L^-1 b|^2.
pub(crate) fn power_from_sums(sums: &HarmonicSums, nterms: usize, fit_mean: bool) -> f64 {
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
                if d.partial_cmp(&(PIVOT_TOLERANCE * a.abs())) != Some(std::cmp::Ordering::Greater)
                {
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

/// The sums at frequency `f` (cycles per unit time), for K = `nterms`
/// harmonics: dispatched to a loop compiled for each K (fixed-size arrays,
/// unrolled recurrence), about twice as fast as one loop for any K.
pub(crate) fn harmonic_sums<T: Float>(
    t: &[T],
    prep: &Chi2Prepared,
    f: f64,
    nterms: usize,
) -> HarmonicSums {
    match nterms {
        1 => harmonic_sums_k::<T, 1>(t, prep, f),
        2 => harmonic_sums_k::<T, 2>(t, prep, f),
        3 => harmonic_sums_k::<T, 3>(t, prep, f),
        4 => harmonic_sums_k::<T, 4>(t, prep, f),
        5 => harmonic_sums_k::<T, 5>(t, prep, f),
        6 => harmonic_sums_k::<T, 6>(t, prep, f),
        7 => harmonic_sums_k::<T, 7>(t, prep, f),
        _ => harmonic_sums_k::<T, 8>(t, prep, f),
    }
}

fn harmonic_sums_k<T: Float, const K: usize>(t: &[T], prep: &Chi2Prepared, f: f64) -> HarmonicSums {
    let mut sums = HarmonicSums {
        c: [0.0; MAX_M + 1],
        s: [0.0; MAX_M + 1],
        yc: [0.0; MAX_NTERMS + 1],
        ys: [0.0; MAX_NTERMS + 1],
    };
    // Local accumulators of the exact sizes (2K + 1 and K + 1 used of each).
    let (mut c, mut s) = ([0.0f64; MAX_M + 1], [0.0f64; MAX_M + 1]);
    let (mut yc, mut ys) = ([0.0f64; MAX_NTERMS + 1], [0.0f64; MAX_NTERMS + 1]);
    for ((ti, &w), &wy) in t.iter().zip(&prep.w).zip(&prep.wy) {
        let turns = f * ti.to_f64();
        let (sn, cs) = (std::f64::consts::TAU * (turns - turns.round())).sin_cos();
        c[0] += w;
        yc[0] += wy;
        let (mut cm, mut sm) = (cs, sn);
        for m in 1..=2 * K {
            c[m] += w * cm;
            s[m] += w * sm;
            if m <= K {
                yc[m] += wy * cm;
                ys[m] += wy * sm;
            }
            let next = cm * cs - sm * sn;
            sm = sm * cs + cm * sn;
            cm = next;
        }
    }
    sums.c[..=2 * K].copy_from_slice(&c[..=2 * K]);
    sums.s[..=2 * K].copy_from_slice(&s[..=2 * K]);
    sums.yc[..=K].copy_from_slice(&yc[..=K]);
    sums.ys[..=K].copy_from_slice(&ys[..=K]);
    sums
}

/// Frequencies per piece handed to a thread.
const CHUNK: usize = 16;

/// The periodogram at `nf` frequencies `freq(k)` (cycles per unit time).
pub(crate) fn lombscargle_chi2<T: Float>(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    t: &[T],
    prep: &Chi2Prepared,
    nf: usize,
    freq: impl Fn(usize) -> f64 + Sync,
    opts: &Chi2Options,
) -> Vec<T> {
    let mut out = vec![T::from_f64(0.0); nf];
    super::parallel::for_each_chunk(threads, &mut out, CHUNK, progress, |first, piece| {
        for (j, slot) in piece.iter_mut().enumerate() {
            let sums = harmonic_sums(t, prep, freq(first + j), opts.nterms);
            let p = power_from_sums(&sums, opts.nterms, opts.fit_mean);
            *slot = T::from_f64(prep.finish(p, opts.normalization));
        }
    });
    out
}
