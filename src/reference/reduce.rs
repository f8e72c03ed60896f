//! Sums in f64 (pairwise over fixed chunks, so the result does not depend on
//! the thread count), and normalisation.
use crate::float::Float;
use crate::params::reduce::BatchNormalized;

/// Sum of `x` in f64: chunks of 4096 summed in order, chunk sums pairwise.
pub fn sum<T: Float>(x: &[T]) -> f64 {
    fn pairwise(v: &[f64]) -> f64 {
        match v.len() {
            0 => 0.0,
            1 => v[0],
            n => pairwise(&v[..n / 2]) + pairwise(&v[n / 2..]),
        }
    }
    let mut chunks = vec![0.0; x.len().div_ceil(4096)];
    super::fill_parallel(&mut chunks, 64, None, |c| {
        x[c * 4096..((c + 1) * 4096).min(x.len())]
            .iter()
            .map(|v| v.to_f64())
            .sum()
    });
    pairwise(&chunks)
}

/// `x <- x / sum(x)`, or Err(sum) with `x` untouched when the sum is zero, not finite or too small to invert.
pub fn normalize<T: Float>(x: &mut [T]) -> Result<f64, f64> {
    let total = sum(x);
    // Zero, non-finite, and sums whose reciprocal overflows (below 2^-1024).
    if !(total.is_finite() && (1.0 / total).is_finite()) {
        return Err(total);
    }
    let inv = 1.0 / total;
    x.iter_mut()
        .for_each(|v| *v = T::from_f64(v.to_f64() * inv));
    Ok(total)
}

/// Each array normalised alone by [`normalize`].
pub fn normalize_batched<T: Float>(x: &mut [T], offsets: &[usize]) -> BatchNormalized {
    let mut out = BatchNormalized {
        sums: Vec::with_capacity(offsets.len().saturating_sub(1)),
        failed: Vec::new(),
    };
    for (a, w) in offsets.windows(2).enumerate() {
        match normalize(&mut x[w[0]..w[1]]) {
            Ok(sum) => out.sums.push(sum),
            Err(sum) => {
                out.sums.push(sum);
                out.failed.push(a);
            }
        }
    }
    out
}
