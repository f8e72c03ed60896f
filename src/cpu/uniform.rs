//! The box filter of any window: sizes and origins per axis, windows larger
//! than the image. Running sums, so the cost does not grow with the window.
//!
//! Two passes in f64: the vertical window sums of every column (a running
//! sum down each strip of rows, seeded by a direct sum at the strip's first
//! row), then along each row the running sum of `sx` of those column sums
//! over the row extended by the boundary mode (seeded directly at the start
//! of each strip of columns), times `1 / (sy sx)`, rounded once to `T`.
//! A seed costs at most about `min(window, 4 n)` values along a line of `n`
//! ([`line_sum`]) and a strip is at least that long ([`strip_len`]), so the
//! whole filter costs a few passes over the image for any window, however
//! much larger than the image.
//!
//! Error bound (finite data, M the largest |value| in the image or cval): a
//! column sum after k running steps (k below the strip length, at most
//! max(RESEED, sy)) is off by at most (sy + 2k) eps64 sy M (each step rounds
//! twice, on values below sy M; the seed rounds sy times); the horizontal
//! running sum adds (sx + 2k) eps64 sx sy M; so the mean, before its
//! rounding to T, is off by at most (3 sy + 3 sx + 4 RESEED) eps64 M: for
//! windows up to a few hundred points, about 1e-13 M (far below an f32 ulp;
//! a few hundred f64 ulps of M). It grows with the window, not with the
//! image.
//!
//! Non-finite values (or a non-finite cval in constant mode): a running sum
//! that met one stays non-finite after it leaves (inf - inf), so then the
//! passes run four times: on the finite values (non-finite ones as 0) and on
//! the counts of NaNs, +inf and -inf (exact integers in f64). An output is
//! NaN if its window holds a NaN or both infinities, else +-inf if it holds
//! one, else the mean of the finite sum: what the direct sum gives.
use super::parallel::for_each_chunk;
use crate::float::Float;
use crate::params::stencil::{extend, line_sum, BoundaryMode, ImageLayout, UniformFilterOptions};

/// Fewest rows (columns) between direct re-seeds of the running sums.
const RESEED: usize = 128;

/// Rows (columns) between re-seeds for a window of `size` along a line of
/// `n`: at least what one seed costs, so seeds cost at most one pass.
fn strip_len(size: usize, n: usize) -> usize {
    RESEED.max(size.min(4 * n))
}

/// Filters `input` into `output` (validated, not empty) on up to `threads`
/// threads.
pub(crate) fn uniform_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
    threads: usize,
) {
    let (rows, cols) = (layout.rows, layout.cols);
    let at = |y: usize, x: usize| input[y * layout.in_pitch + x];
    let non_finite = (opts.mode == BoundaryMode::Constant && !opts.cval.is_finite())
        || (0..rows).any(|y| (0..cols).any(|x| !at(y, x).to_f64().is_finite()));
    let scale = opts.scale();
    let means: Vec<f64> = if !non_finite {
        let mut sums = window_sums(input, layout, opts, threads, &|v: T| v.to_f64(), opts.cval);
        sums.iter_mut().for_each(|s| *s *= scale);
        sums
    } else {
        let class = |f: fn(f64) -> bool| move |v: T| f64::from(u8::from(f(v.to_f64())));
        let indicator = |f: fn(f64) -> bool| f64::from(u8::from(f(opts.cval)));
        let finite = |v: T| Some(v.to_f64()).filter(|v| v.is_finite()).unwrap_or(0.0);
        let cval = if opts.cval.is_finite() {
            opts.cval
        } else {
            0.0
        };
        let sums = window_sums(input, layout, opts, threads, &finite, cval);
        let nan = window_sums(
            input,
            layout,
            opts,
            threads,
            &class(f64::is_nan),
            indicator(f64::is_nan),
        );
        let is_pos_inf = |v: f64| v == f64::INFINITY;
        let is_neg_inf = |v: f64| v == f64::NEG_INFINITY;
        let pos = window_sums(
            input,
            layout,
            opts,
            threads,
            &class(is_pos_inf),
            indicator(is_pos_inf),
        );
        let neg = window_sums(
            input,
            layout,
            opts,
            threads,
            &class(is_neg_inf),
            indicator(is_neg_inf),
        );
        (0..sums.len())
            .map(|i| match (nan[i] > 0.0, pos[i] > 0.0, neg[i] > 0.0) {
                (true, _, _) | (_, true, true) => f64::NAN,
                (_, true, false) => f64::INFINITY,
                (_, false, true) => f64::NEG_INFINITY,
                _ => sums[i] * scale,
            })
            .collect()
    };
    let (r, c) = (rows as i64, cols as i64);
    for y in 0..rows {
        let row = &mut output[y * layout.out_pitch..y * layout.out_pitch + cols];
        for (x, o) in row.iter_mut().enumerate() {
            *o = if opts.mode == BoundaryMode::Interior
                && !opts.window_fits(y as i64, x as i64, r, c)
            {
                at(y, x)
            } else {
                T::from_f64(means[y * cols + x])
            };
        }
    }
}

/// The window sums (not yet scaled) of `value` of the image, `rows x cols`
/// row-major, with `cval` outside in constant mode.
fn window_sums<T: Float>(
    input: &[T],
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
    threads: usize,
    value: &(dyn Fn(T) -> f64 + Sync),
    cval: f64,
) -> Vec<f64> {
    let (rows, cols) = (layout.rows, layout.cols);
    let [sy, sx] = opts.size;
    let (before_y, before_x) = (opts.before(0), opts.before(1));
    // Row `y` of the image extended by the mode: its values or the constant.
    let row_value = |y: i64, x: usize| -> f64 {
        match extend(y, rows as i64, opts.mode) {
            Some(y) => value(input[y as usize * layout.in_pitch + x]),
            None => cval,
        }
    };
    // Vertical: strips of rows, each seeded directly at its first row.
    let strip_rows = strip_len(sy, rows);
    let mut vertical = vec![0.0f64; rows * cols];
    for_each_chunk(
        threads,
        &mut vertical,
        strip_rows * cols,
        None,
        |first, strip| {
            let y0 = first / cols;
            for k in 0..strip.len() / cols {
                let top = (y0 + k) as i64 - before_y;
                let (done, row) = strip.split_at_mut(k * cols);
                let row = &mut row[..cols];
                if k == 0 || sy == 1 {
                    // Seeded directly (a window of one row is that row, exactly).
                    for (x, v) in row.iter_mut().enumerate() {
                        let at = |y: i64| value(input[y as usize * layout.in_pitch + x]);
                        *v = line_sum(top, sy as i64, rows as i64, opts.mode, cval, at);
                    }
                } else {
                    let above = &done[(k - 1) * cols..];
                    for (x, v) in row.iter_mut().enumerate() {
                        *v = above[x] + row_value(top + sy as i64 - 1, x) - row_value(top - 1, x);
                    }
                }
            }
        },
    );
    // Horizontal: along each row extended by the mode, the running sum of sx
    // column sums, seeded directly at the start of each strip of columns.
    let strip_cols = strip_len(sx, cols);
    let outside = sy as f64 * cval; // a column outside the image holds only cval
    let mut sums = vec![0.0f64; rows * cols];
    let rows_per_piece = (4096 / cols).max(1);
    for_each_chunk(
        threads,
        &mut sums,
        rows_per_piece * cols,
        None,
        |first, part| {
            for (k, out) in part.chunks_mut(cols).enumerate() {
                let y = first / cols + k;
                let v = &vertical[y * cols..(y + 1) * cols];
                let column = |x: i64| -> f64 {
                    match extend(x, cols as i64, opts.mode) {
                        Some(x) => v[x as usize],
                        None => outside,
                    }
                };
                let mut acc = 0.0;
                for (x, o) in out.iter_mut().enumerate() {
                    let left = x as i64 - before_x;
                    acc = if x % strip_cols == 0 || sx == 1 {
                        let at = |x: i64| v[x as usize];
                        line_sum(left, sx as i64, cols as i64, opts.mode, outside, at)
                    } else {
                        acc + column(left + sx as i64 - 1) - column(left - 1)
                    };
                    *o = acc;
                }
            }
        },
    );
    sums
}
