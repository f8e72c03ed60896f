//! The multi-term periodogram as a literal least-squares fit, in f64: per
//! frequency the design matrix X (columns 1 with `fit_mean`, then
//! sin(2 pi k f t), cos(2 pi k f t) for k = 1..=K, each row divided by dy),
//! the normal equations X^T X theta = X^T (yhat / dy) solved by Gaussian
//! elimination with partial pivoting, and p = (X^T yhat/dy) . theta. Kept
//! independent of the backends' sums of harmonics and their Cholesky form.
//! Inputs are assumed validated (see `api::lombscargle::chi2`).
use crate::float::Float;
use crate::params::lombscargle_chi2::{Chi2Normalization, Chi2Options};

/// The power at each frequency (cycles per unit time), in f64.
pub fn lombscargle_chi2<T: Float>(
    t: &[T],
    y: &[T],
    dy: Option<&[T]>,
    freqs: &[f64],
    opts: &Chi2Options,
) -> Vec<f64> {
    let n = t.len();
    let t: Vec<f64> = t.iter().map(|v| v.to_f64()).collect();
    let y: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
    let dy: Vec<f64> = match dy {
        Some(dy) => dy.iter().map(|v| v.to_f64()).collect(),
        None => vec![1.0; n],
    };
    let w: Vec<f64> = dy.iter().map(|d| 1.0 / (d * d)).collect();
    let wsum: f64 = w.iter().sum();
    let mean = if opts.center_data || opts.fit_mean {
        (0..n).map(|i| w[i] * y[i]).sum::<f64>() / wsum
    } else {
        0.0
    };
    let yw: Vec<f64> = (0..n).map(|i| (y[i] - mean) / dy[i]).collect();
    let chi2_ref: f64 = yw.iter().map(|v| v * v).sum();
    let m = opts.unknowns();
    freqs
        .iter()
        .map(|&f| {
            let row = |i: usize| -> Vec<f64> {
                let mut r = Vec::with_capacity(m);
                if opts.fit_mean {
                    r.push(1.0 / dy[i]);
                }
                for k in 1..=opts.nterms {
                    let phase = 2.0 * std::f64::consts::PI * k as f64 * f * t[i];
                    r.push(phase.sin() / dy[i]);
                    r.push(phase.cos() / dy[i]);
                }
                r
            };
            let mut a = vec![vec![0.0; m]; m];
            let mut b = vec![0.0; m];
            for (i, yw_i) in yw.iter().enumerate() {
                let r = row(i);
                for j in 0..m {
                    b[j] += r[j] * yw_i;
                    for k in 0..m {
                        a[j][k] += r[j] * r[k];
                    }
                }
            }
            let theta = solve(a, b.clone());
            let p: f64 = b.iter().zip(&theta).map(|(b, x)| b * x).sum();
            match opts.normalization {
                Chi2Normalization::Psd => 0.5 * p,
                norm => norm.apply(p, chi2_ref),
            }
        })
        .collect()
}

/// Solves `a x = b` by Gaussian elimination with partial pivoting (a is
/// small: at most 17 x 17). A singular matrix gives non-finite values.
pub fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let m = b.len();
    for col in 0..m {
        let pivot = (col..m)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .unwrap_or(col);
        a.swap(col, pivot);
        b.swap(col, pivot);
        for r in col + 1..m {
            let factor = a[r][col] / a[col][col];
            let pivot_row = a[col].clone();
            for (x, p) in a[r][col..].iter_mut().zip(&pivot_row[col..]) {
                *x -= factor * p;
            }
            b[r] -= factor * b[col];
        }
    }
    let mut x = vec![0.0; m];
    for r in (0..m).rev() {
        let s: f64 = (r + 1..m).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x
}
