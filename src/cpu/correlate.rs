//! 1-D correlation passes along any axis of an N-D array (Gaussian filters
//! are made of them), in `T`: each output sums `w[j] x[i + first + j]` over
//! the taps in index order, as the GPU kernels do (which fuse each product
//! into the sum; the reference sums in f64).
//!
//! The loops run over the contiguous direction so that they vectorise:
//! along a contiguous axis (`inner == 1`) each line is extended by the
//! boundary mode into a buffer, then every tap adds `w[j]` times a shifted
//! view of it to a row of sums; along a strided axis every tap adds `w[j]`
//! times one input row (of `inner` values, in strips that stay in L1) to the
//! output row's sums.
use super::parallel::{chain_passes, for_each_chunk};
use crate::float::Float;
use crate::params::correlate::{Lines, Pass};
use crate::params::stencil::extend;

/// Values per piece of work handed to a thread.
const PIECE_VALUES: usize = 1 << 16;

/// Values of a strip of an output row's sums (16 KB of f64).
const STRIP: usize = 2048;

/// The passes over an array of `shape` (validated, not empty), from `input`
/// into `output`, on up to `threads` threads; no pass: a copy.
pub(crate) fn correlate_passes<T: Float>(
    input: &[T],
    output: &mut [T],
    shape: &[usize],
    passes: &[Pass],
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    chain_passes(input, output, passes, |from, to, pass, last| {
        let lines = Lines::along(shape, pass.axis).expect("a validated shape");
        correlate_pass(from, to, lines, pass, threads, progress.filter(|_| last));
    });
}

/// One pass from `input` into `output` (both `lines.size()` values).
fn correlate_pass<T: Float>(
    input: &[T],
    output: &mut [T],
    lines: Lines,
    pass: &Pass,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let weights: Vec<T> = pass.weights.iter().map(|&w| T::from_f64(w)).collect();
    let (n, first, cval) = (lines.len, pass.first(), T::from_f64(pass.cval));
    // Where input line point `i` (any i) is read from, None: cval.
    let source = |i: i64| extend(i, n as i64, pass.mode).map(|at| at as usize);
    if lines.inner == 1 {
        let per_piece = (PIECE_VALUES / n.max(1)).max(1) * n;
        for_each_chunk(threads, output, per_piece, progress, |start, piece| {
            let taps = weights.len();
            let mut extended = vec![T::default(); n + taps - 1];
            let mut sums = vec![T::default(); n];
            for (l, out) in piece.chunks_mut(n).enumerate() {
                let line = &input[start + l * n..][..n];
                for (t, slot) in extended.iter_mut().enumerate() {
                    *slot = source(t as i64 + first).map_or(cval, |at| line[at]);
                }
                sums.fill(T::default());
                for (j, &w) in weights.iter().enumerate() {
                    for (s, &x) in sums.iter_mut().zip(&extended[j..j + n]) {
                        *s += w * x;
                    }
                }
                out.copy_from_slice(&sums);
            }
        });
        return;
    }
    let inner = lines.inner;
    let per_piece = (PIECE_VALUES / inner).max(1) * inner;
    for_each_chunk(threads, output, per_piece, progress, |start, piece| {
        let mut sums = vec![T::default(); STRIP.min(inner)];
        for (r, out_row) in piece.chunks_mut(inner).enumerate() {
            let row = start / inner + r; // (o, i) of the output row
            let (o, i) = (row / n, (row % n) as i64);
            for (s0, out) in (0..inner).step_by(STRIP).zip(out_row.chunks_mut(STRIP)) {
                let sums = &mut sums[..out.len()];
                sums.fill(T::default());
                for (j, &w) in weights.iter().enumerate() {
                    match source(i + first + j as i64) {
                        Some(at) => {
                            let x = &input[(o * n + at) * inner + s0..][..out.len()];
                            for (s, &x) in sums.iter_mut().zip(x) {
                                *s += w * x;
                            }
                        }
                        None => sums.iter_mut().for_each(|s| *s += w * cval),
                    }
                }
                out.copy_from_slice(sums);
            }
        }
    });
}
