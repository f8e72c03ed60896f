//! The periodic weighted window sum on the CPU:
//! `out[r * pitch + i] = sum_{m=0}^{L-1} w[m] x[r * pitch + idx(i + J - m)]`,
//! summed in m order in f64 from 0 and rounded to `T` once, exactly as
//! `reference::lorenz::window_sum` (so bitwise equal to it), vectorised over
//! i: each piece of a row is first copied, widened to f64, with its periodic
//! halo, so the sum reads contiguous values. The output is cut into pieces
//! (whole rows, or parts of one long row) handed to threads; each value is
//! computed alone, so the result does not depend on the cut.

use super::parallel::for_each_chunk;
use crate::float::Float;

/// Outputs per vectorised chunk: two 512-bit vectors of f64 accumulators.
const C: usize = 16;
/// Outputs per piece handed to a thread, at least.
const MIN_PIECE: usize = 4096;

/// As `reference::lorenz::window_sum` (shape validated by the caller), on
/// `threads` threads. Elements of `out` between n and pitch are left as they are.
pub(crate) fn window_sum<T: Float>(
    x: &[T],
    w: &[T],
    rows: usize,
    n: usize,
    pitch: usize,
    out: &mut [T],
    threads: usize,
) {
    let weights: Vec<f64> = w.iter().map(|v| v.to_f64()).collect();
    let span = (rows - 1) * pitch + n;
    let out = &mut out[..span];
    let piece = MIN_PIECE.max(span.div_ceil(4 * threads.max(1)));
    for_each_chunk(threads, out, piece, None, |first, part| {
        let end = first + part.len();
        for r in first / pitch..=(end - 1) / pitch {
            let start = r * pitch;
            let lo = first.max(start) - start;
            let hi = end.min(start + n).saturating_sub(start);
            if lo < hi {
                let row = &x[start..start + n];
                let dst = &mut part[start + lo - first..start + hi - first];
                segment(row, &weights, lo, dst);
            }
        }
    });
}

/// `dst[t]` = the sum at site `lo + t` of `row`.
#[macro_rules_attribute::apply(simd_targets!)]
fn segment<T: Float>(row: &[T], w: &[f64], lo: usize, dst: &mut [T]) {
    let (n, half) = (row.len(), w.len() / 2);
    let len = dst.len().div_ceil(C) * C;
    // xp[q] = x[idx(lo + q - J)], so site lo + t, weight m reads xp[t + 2J - m].
    let xp: Vec<f64> = (0..len + 2 * half)
        .map(|q| row[((lo + q) as i64 - half as i64).rem_euclid(n as i64) as usize].to_f64())
        .collect();
    for (c, out) in dst.chunks_mut(C).enumerate() {
        let base = c * C + 2 * half;
        let mut acc = [0.0f64; C];
        for (m, &wm) in w.iter().enumerate() {
            let v: &[f64; C] = xp[base - m..base - m + C].try_into().expect("C values");
            for l in 0..C {
                acc[l] += wm * v[l];
            }
        }
        for (o, a) in out.iter_mut().zip(acc) {
            *o = T::from_f64(a);
        }
    }
}
