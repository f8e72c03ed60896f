//! Sums and normalisation at memory bandwidth.
//!
//! Arithmetic: f64 accumulation for every input type, as the reference and the
//! kernels. An array is cut into fixed chunks of [`CHUNK`] values (counted
//! from the array's start); each chunk is summed in [`ACCS`] x [`LANES`] f64
//! lane accumulators (value `i` of the chunk goes to lane `i % 32`), the lanes
//! are combined in a fixed tree, and the chunk sums pairwise, exactly as
//! the reference's `reduce::sum` combines its chunk sums. Every step is
//! fixed by the length alone, so the result has the same bits on any thread
//! count and any SIMD target (only IEEE adds, never fused or reordered), and
//! a batched array gets the bits the single-array sum gives it.
//!
//! Accuracy: each lane sums at most CHUNK / 32 = 128 values, then 5 + log2(n
//! / CHUNK) levels of tree adds: the error is below (128 + 5 + log2 n) eps64
//! sum|x|, less than the reference's own bound (4096 + log2 n) eps64 sum|x|
//! (it adds a chunk's 4096 values one after another).
use std::ops::Range;

use super::parallel::{for_each_range_mut, threads_for};
use crate::float::Float;

/// Values per chunk: the reference's chunk, so both add the same pieces.
pub(crate) const CHUNK: usize = 4096;
/// f64 lanes per accumulator (one AVX-512 register).
const LANES: usize = 8;
/// Independent accumulators, to hide the add latency.
const ACCS: usize = 4;
const BLOCK: usize = LANES * ACCS;
/// Fewer values than this per thread are not worth a thread's start (tens of µs).
const MIN_PER_THREAD: usize = 1 << 16;

/// The same pairwise tree as the reference's.
fn pairwise(v: &[f64]) -> f64 {
    match v.len() {
        0 => 0.0,
        1 => v[0],
        n => pairwise(&v[..n / 2]) + pairwise(&v[n / 2..]),
    }
}

/// Sum of one chunk (at most [`CHUNK`] values) in lane accumulators.
#[inline(always)]
fn chunk_sum<T: Float>(x: &[T]) -> f64 {
    let mut acc = [0.0f64; BLOCK];
    let mut blocks = x.chunks_exact(BLOCK);
    for b in &mut blocks {
        for (a, v) in acc.iter_mut().zip(b) {
            *a += v.to_f64();
        }
    }
    for (a, v) in acc.iter_mut().zip(blocks.remainder()) {
        *a += v.to_f64();
    }
    lane_tree(acc)
}

/// The fixed tree of 32 values (the kernels' warp tree): at each level value
/// i adds value i + off, off = 16 .. 1.
#[inline(always)]
pub(crate) fn lane_tree(mut v: [f64; BLOCK]) -> f64 {
    let mut off = BLOCK / 2;
    while off > 0 {
        for i in 0..off {
            v[i] += v[i + off];
        }
        off /= 2;
    }
    v[0]
}

/// `sums[k]` = the sum of chunk `k` of `x`.
#[macro_rules_attribute::apply(simd_targets!)]
fn chunk_sums<T: Float>(x: &[T], sums: &mut [f64]) {
    for (s, c) in sums.iter_mut().zip(x.chunks(CHUNK)) {
        *s = chunk_sum(c);
    }
}

/// `x[i] <- x[i] * inv`, computed in f64 and rounded once (the reference's arithmetic).
#[macro_rules_attribute::apply(simd_targets!)]
fn scale<T: Float>(x: &mut [T], inv: f64) {
    for v in x.iter_mut() {
        *v = T::from_f64(v.to_f64() * inv);
    }
}

/// Chunk sums of `x` on up to `threads` threads (static ranges of chunks).
fn all_chunk_sums<T: Float>(x: &[T], threads: usize) -> Vec<f64> {
    let mut sums = vec![0.0; x.len().div_ceil(CHUNK)];
    let per_chunk = MIN_PER_THREAD / CHUNK;
    let threads = threads_for(threads, x.len(), MIN_PER_THREAD);
    for_each_range_mut(threads, &mut sums, per_chunk, |first, piece| {
        let start = first * CHUNK;
        let end = ((first + piece.len()) * CHUNK).min(x.len());
        chunk_sums(&x[start..end], piece);
    });
    sums
}

/// Sum of `x` in f64 (0 for an empty slice); the same bits on any thread count.
pub fn sum<T: Float>(x: &[T], threads: usize) -> f64 {
    pairwise(&all_chunk_sums(x, threads))
}

/// `x <- x / sum(x)`, or `Err(sum)` with `x` untouched when the sum is zero,
/// not finite or too small to invert (the reference's rule and arithmetic: one f64 reciprocal,
/// each value multiplied by it in f64 and rounded once).
pub fn normalize<T: Float>(x: &mut [T], threads: usize) -> Result<f64, f64> {
    let total = sum(x, threads);
    if !normalizable(total) {
        return Err(total);
    }
    let inv = 1.0 / total;
    let threads = threads_for(threads, x.len(), MIN_PER_THREAD);
    for_each_range_mut(threads, x, CHUNK, |_, piece| scale(piece, inv));
    Ok(total)
}

/// Whether `x * (1 / sum)` can normalise: the sum finite and its reciprocal
/// too (zero and sums below 2^-1024 are not), as the kernels' rule.
fn normalizable(sum: f64) -> bool {
    sum.is_finite() && (1.0 / sum).is_finite()
}

/// Per array `x[offsets[a] .. offsets[a+1]]` (offsets already validated):
/// its sum, and whether it was normalised (a zero or non-finite sum leaves
/// the array unchanged, empty arrays included). Each sum has the bits
/// [`sum`] gives for that array alone.
pub fn normalize_batched<T: Float>(
    x: &mut [T],
    offsets: &[usize],
    threads: usize,
) -> (Vec<f64>, Vec<bool>) {
    // The pieces: every array cut into chunks counted from its own start.
    let pieces: Vec<Range<usize>> = offsets
        .windows(2)
        .flat_map(|w| {
            (w[0]..w[1])
                .step_by(CHUNK)
                .map(move |s| s..(s + CHUNK).min(w[1]))
        })
        .collect();
    let threads = threads_for(threads, x.len(), MIN_PER_THREAD);
    let mut piece_sums = vec![0.0; pieces.len()];
    for_each_range_mut(threads, &mut piece_sums, 1, |first, sums| {
        for (s, p) in sums.iter_mut().zip(&pieces[first..]) {
            // One chunk each: chunk_sums dispatches once per piece, which is
            // an atomic load, negligible against a chunk (or a tiny array).
            chunk_sums(&x[p.clone()], std::slice::from_mut(s));
        }
    });
    let mut sums = Vec::with_capacity(offsets.len().saturating_sub(1));
    let mut next = 0;
    for w in offsets.windows(2) {
        let count = (w[1] - w[0]).div_ceil(CHUNK);
        sums.push(pairwise(&piece_sums[next..next + count]));
        next += count;
    }
    let ok: Vec<bool> = sums.iter().map(|&s| normalizable(s)).collect();
    // The scaling: static ranges of x; each range scales its parts of the
    // arrays it meets (found by binary search in the offsets).
    for_each_range_mut(threads, x, CHUNK, |first, piece| {
        let end = first + piece.len();
        // The last array starting at or before `first`.
        let mut a = offsets.partition_point(|&o| o <= first).saturating_sub(1);
        let mut at = first;
        while at < end && a + 1 < offsets.len() {
            let stop = offsets[a + 1].min(end);
            if stop > at && ok[a] {
                scale(&mut piece[at - first..stop - first], 1.0 / sums[a]);
            }
            at = at.max(stop);
            a += 1;
        }
    });
    (sums, ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_and_empty_inputs() {
        assert_eq!(sum::<f32>(&[], 2), 0.0);
        assert_eq!(sum(&[1.5f64], 3), 1.5);
        let mut z = [0.0f32; 3];
        assert_eq!(normalize(&mut z, 2), Err(0.0));
        let (sums, ok) = normalize_batched::<f64>(&mut [], &[0, 0, 0], 2);
        assert_eq!((sums, ok), (vec![0.0, 0.0], vec![false, false]));
    }
}
