//! The N-D box filter of any element type: one pass per filtered axis, each
//! a running window sum ([`crate::params::uniform::WindowSum`]) so that its
//! cost does not grow with the window.
//!
//! A pass sees the array as rows of `inner` values (`outer * n` of them,
//! the axis being `n`); output row `i` of a line is the mean of the window
//! of rows around it. Threads take pieces of whole rows; a piece seeds one
//! sum per column at its first row ([`window_sum`]: at most about
//! `min(window, 4 n)` rows read), then each step adds the entering row and
//! takes the leaving one away, walking the rows in memory order. Float sums
//! are re-seeded every [`strip_len`] rows, which bounds how far rounding
//! drifts (integer sums are exact).
use super::parallel::{chain_passes, for_each_chunk};
use crate::params::correlate::Lines;
use crate::params::stencil::extend;
use crate::params::uniform::{window_sum, BoxPass, BoxValue, WindowSum};

/// Values per piece of work handed to a thread, at least.
const PIECE_VALUES: usize = 1 << 16;
/// Fewest rows between re-seeds of the running sums.
const RESEED: usize = 128;

/// Rows between re-seeds for a window of `size` along a line of `n`: at
/// least what one seed costs, so seeds cost at most about one more read.
fn strip_len(size: usize, n: usize) -> usize {
    RESEED.max(size.min(4 * n))
}

/// The passes over the row-major array of `shape` (validated, not empty),
/// from `input` into `output`, on up to `threads` threads.
pub(crate) fn uniform_filter_nd<T: BoxValue>(
    input: &[T],
    output: &mut [T],
    shape: &[usize],
    passes: &[BoxPass<T>],
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    chain_passes(input, output, passes, |from, to, pass, last| {
        let lines = Lines::along(shape, pass.axis).expect("a validated shape");
        uniform_pass(from, to, lines, pass, threads, progress.filter(|_| last));
    });
}

/// One pass from `input` into `output` (both `lines.size()` values).
fn uniform_pass<T: BoxValue>(
    input: &[T],
    output: &mut [T],
    lines: Lines,
    pass: &BoxPass<T>,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let (n, inner) = (lines.len, lines.inner);
    let (size, first) = (pass.size as i64, pass.first);
    let strip = strip_len(pass.size, n);
    if inner == 1 {
        return contiguous_pass(input, output, n, pass, threads, progress);
    }
    // Pieces of whole rows, long enough to amortise their seeds.
    let piece_rows = (PIECE_VALUES / inner).max(strip.min(n)).max(1);
    for_each_chunk(
        threads,
        output,
        piece_rows * inner,
        progress,
        |start, piece| {
            let mut sums = vec![T::Sum::default(); inner];
            let first_row = start / inner;
            let rows = piece.len() / inner;
            for (k, out_row) in piece.chunks_exact_mut(inner).enumerate() {
                let (o, i) = ((first_row + k) / n, ((first_row + k) % n) as i64);
                let line = o * n * inner;
                // Row j of this line (any j), as the boundary mode extends it.
                let row =
                    |j: i64| extend(j, n as i64, pass.mode).map(|at| line + at as usize * inner);
                if k == 0 || (i as usize) % strip == 0 {
                    for (c, sum) in sums.iter_mut().enumerate() {
                        *sum = window_sum(i + first, size, n as i64, pass.mode, pass.cval, |j| {
                            input[line + j as usize * inner + c]
                        });
                    }
                }
                for (out, sum) in out_row.iter_mut().zip(&sums) {
                    *out = sum.mean(pass.size);
                }
                if k + 1 == rows {
                    break;
                }
                // The rows entering and leaving the window (None: the constant).
                let values = |at: Option<usize>| at.map(|at| &input[at..at + inner]);
                match (values(row(i + first + size)), values(row(i + first))) {
                    (Some(enter), Some(leave)) => {
                        for ((sum, &e), &l) in sums.iter_mut().zip(enter).zip(leave) {
                            sum.add(e);
                            sum.sub(l);
                        }
                    }
                    (enter, leave) => {
                        for (c, sum) in sums.iter_mut().enumerate() {
                            sum.add(enter.map_or(pass.cval, |v| v[c]));
                            sum.sub(leave.map_or(pass.cval, |v| v[c]));
                        }
                    }
                }
            }
        },
    );
}

/// One pass along contiguous lines (`inner == 1`): the same sums, seeds and
/// re-seeds as [`uniform_pass`] (so the same bits), but walked along each
/// line with the boundary mapping only where the window crosses an edge.
/// The row-wise walk would pay its per-row set-up for every single value.
fn contiguous_pass<T: BoxValue>(
    input: &[T],
    output: &mut [T],
    n: usize,
    pass: &BoxPass<T>,
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) {
    let (size, first) = (pass.size as i64, pass.first);
    let strip = strip_len(pass.size, n);
    let piece_len = PIECE_VALUES.max(strip.min(n)).max(1);
    for_each_chunk(threads, output, piece_len, progress, |start, piece| {
        let mut at = 0;
        while at < piece.len() {
            let (line, i0) = ((start + at) / n, (start + at) % n);
            let x = &input[line * n..(line + 1) * n];
            // Value j of this line as the boundary mode extends it.
            let value =
                |j: i64| extend(j, n as i64, pass.mode).map_or(pass.cval, |j| x[j as usize]);
            // This piece's part of the line, cut at the re-seed points.
            let end = (n - i0).min(piece.len() - at) + i0;
            let mut seg = i0;
            while seg < end {
                let seg_end = end.min((seg / strip + 1) * strip);
                let out = &mut piece[at + seg - i0..at + seg_end - i0];
                let mut sum = window_sum(
                    seg as i64 + first,
                    size,
                    n as i64,
                    pass.mode,
                    pass.cval,
                    value,
                );
                // The sum moves on after every output but the segment's last;
                // between `lo` and `hi` its entering and leaving values lie
                // inside the line and are read directly.
                let last = seg_end - 1;
                let lo = (-first).clamp(seg as i64, last as i64) as usize;
                let hi = (n as i64 - first - size).clamp(lo as i64, last as i64) as usize;
                let edge = |i: usize, sum: &mut T::Sum| {
                    sum.add(value(i as i64 + first + size));
                    sum.sub(value(i as i64 + first));
                };
                for i in seg..lo {
                    out[i - seg] = sum.mean(pass.size);
                    edge(i, &mut sum);
                }
                if hi > lo {
                    // lo >= -first and hi <= n - first - size here.
                    let l = (lo as i64 + first) as usize;
                    let leaving = &x[l..l + (hi - lo)];
                    let entering = &x[l + pass.size..l + pass.size + (hi - lo)];
                    for ((o, &e), &v) in out[lo - seg..hi - seg]
                        .iter_mut()
                        .zip(entering)
                        .zip(leaving)
                    {
                        *o = sum.mean(pass.size);
                        sum.add(e);
                        sum.sub(v);
                    }
                }
                for i in hi..last {
                    out[i - seg] = sum.mean(pass.size);
                    edge(i, &mut sum);
                }
                out[last - seg] = sum.mean(pass.size);
                seg = seg_end;
            }
            at += end - i0;
        }
    });
}
