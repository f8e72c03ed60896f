//! The multiband periodogram as astropy writes it, in f64: for the flexible
//! method, per frequency the whole design matrix X (base columns 1,
//! sin(2 pi k f t), cos(2 pi k f t) for k = 1..=nterms_base; then per band,
//! in label order, the same with nterms_band harmonics, zero outside the
//! band; every row divided by dy), M = X^T X with the ridge on its diagonal,
//! z = X^T (yhat / dy), and p = z^T M^-1 z by a dense Cholesky factorisation
//! in that column order (dropping an unknown whose pivot falls to rounding
//! level, so exactly dependent columns give the least-squares power). For
//! the fast method, each band's multi-term periodogram from the multi-term
//! reference, combined with astropy's weights. Kept independent of the
//! backends' sums of harmonics and their band-by-band elimination. Inputs
//! are assumed validated (see `api::lombscargle::multiband`).
use crate::float::Float;
use crate::params::lombscargle_chi2::Chi2Options;
use crate::params::lombscargle_multiband::{MultibandMethod, MultibandOptions};

/// The power at each frequency (cycles per unit time), in f64.
pub fn lombscargle_multiband<T: Float>(
    t: &[T],
    y: &[T],
    dy: Option<&[T]>,
    bands: &[u32],
    freqs: &[f64],
    opts: &MultibandOptions,
) -> Vec<f64> {
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let (t, y) = (f64s(t), f64s(y));
    let dy = dy.map_or_else(|| vec![1.0; t.len()], f64s);
    let mut labels = bands.to_vec();
    labels.sort_unstable();
    labels.dedup();
    match opts.method {
        MultibandMethod::Flexible => flexible(&t, &y, &dy, bands, &labels, freqs, opts),
        MultibandMethod::Fast => fast(&t, &y, &dy, bands, &labels, freqs, opts),
    }
}

fn flexible(
    t: &[f64],
    y: &[f64],
    dy: &[f64],
    bands: &[u32],
    labels: &[u32],
    freqs: &[f64],
    opts: &MultibandOptions,
) -> Vec<f64> {
    let n = t.len();
    let mut yhat = y.to_vec();
    if opts.center_data {
        for &b in labels {
            let (mut sw, mut swy) = (0.0, 0.0);
            for i in (0..n).filter(|&i| bands[i] == b) {
                sw += dy[i].powi(-2);
                swy += dy[i].powi(-2) * y[i];
            }
            for i in (0..n).filter(|&i| bands[i] == b) {
                yhat[i] -= swy / sw;
            }
        }
    }
    let yw: Vec<f64> = (0..n).map(|i| yhat[i] / dy[i]).collect();
    let chi2_ref: f64 = yw.iter().map(|v| v * v).sum();
    let (nb, nbd) = (opts.nterms_base, opts.nterms_band);
    let base_cols = 1 + 2 * nb;
    let m = opts.unknowns(labels.len());
    let mut ridge = vec![opts.reg_base.unwrap_or(0.0); base_cols];
    ridge.resize(m, opts.reg_band.unwrap_or(0.0));
    freqs
        .iter()
        .map(|&f| {
            let harmonics = |ti: f64, k: usize| {
                (1..=k).flat_map(move |h| {
                    let phase = 2.0 * std::f64::consts::PI * h as f64 * f * ti;
                    [phase.sin(), phase.cos()]
                })
            };
            let row = |i: usize| -> Vec<f64> {
                let mut r = vec![1.0];
                r.extend(harmonics(t[i], nb));
                for &b in labels {
                    let band: Vec<f64> = std::iter::once(1.0).chain(harmonics(t[i], nbd)).collect();
                    let inside = bands[i] == b;
                    r.extend(band.into_iter().map(|v| if inside { v } else { 0.0 }));
                }
                r.iter().map(|v| v / dy[i]).collect()
            };
            let mut a = vec![vec![0.0; m]; m];
            let mut z = vec![0.0; m];
            for (i, yw_i) in yw.iter().enumerate() {
                let r = row(i);
                for j in 0..m {
                    z[j] += r[j] * yw_i;
                    for k in 0..m {
                        a[j][k] += r[j] * r[k];
                    }
                }
            }
            let trace: f64 = (0..m).map(|j| a[j][j]).sum();
            let scale = if opts.regularize_by_trace { trace } else { 1.0 };
            for j in 0..m {
                a[j][j] += scale * ridge[j];
            }
            quadratic_form(&a, &z) / chi2_ref
        })
        .collect()
}

/// z^T A^-1 z for a symmetric positive (semi-)definite A: A = L L^T row by
/// row, an unknown dropped where its pivot is below 1e-12 of its diagonal.
fn quadratic_form(a: &[Vec<f64>], z: &[f64]) -> f64 {
    let m = z.len();
    let mut l = vec![vec![0.0; m]; m];
    let mut u = vec![0.0; m];
    let mut q = 0.0;
    for i in 0..m {
        for j in 0..=i {
            let dot: f64 = (0..j).map(|k| l[i][k] * l[j][k]).sum();
            if i == j {
                let d = a[i][i] - dot;
                l[i][i] = if d > 1e-12 * a[i][i].abs() {
                    d.sqrt()
                } else {
                    0.0
                };
            } else if l[j][j] != 0.0 {
                l[i][j] = (a[i][j] - dot) / l[j][j];
            }
        }
        if l[i][i] != 0.0 {
            let dot: f64 = (0..i).map(|k| l[i][k] * u[k]).sum();
            u[i] = (z[i] - dot) / l[i][i];
            q += u[i] * u[i];
        }
    }
    q
}

fn fast(
    t: &[f64],
    y: &[f64],
    dy: &[f64],
    bands: &[u32],
    labels: &[u32],
    freqs: &[f64],
    opts: &MultibandOptions,
) -> Vec<f64> {
    let chi2 = Chi2Options {
        nterms: opts.nterms_base,
        fit_mean: opts.fit_mean,
        center_data: opts.center_data,
        normalization: opts.normalization,
    };
    let powers: Vec<Vec<f64>> = labels
        .iter()
        .map(|&b| {
            let pick = |v: &[f64]| -> Vec<f64> {
                (0..t.len())
                    .filter(|&i| bands[i] == b)
                    .map(|i| v[i])
                    .collect()
            };
            let (tb, yb, dyb) = (pick(t), pick(y), pick(dy));
            super::lombscargle_chi2::lombscargle_chi2(&tb, &yb, Some(&dyb), freqs, &chi2)
        })
        .collect();
    let weights: Vec<f64> = powers
        .iter()
        .map(|p| p.iter().map(|v| v * v).sum())
        .collect();
    let total: f64 = weights.iter().sum();
    (0..freqs.len())
        .map(|k| {
            powers
                .iter()
                .zip(&weights)
                .map(|(p, w)| w / total * p[k])
                .sum()
        })
        .collect()
}
