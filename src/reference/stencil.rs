//! The box filter as SciPy defines it, in plain loops: for each point, the
//! sum over its window (each row's window left to right, then those rows top to bottom; rows `y - before(0) ..= y + after(0)`, columns
//! likewise, see [`UniformFilterOptions`]) of the input extended by the
//! boundary mode, in f64, top to bottom and left to right, times
//! `1 / (sy sx)`, rounded once to `T`. Non-finite values propagate as in
//! that direct sum: exactly the windows that hold them.
use crate::float::Float;
pub use crate::params::stencil::extend;
use crate::params::stencil::{BoundaryMode, BoxFilterOptions, ImageLayout, UniformFilterOptions};

/// Filters `input` into `output` with a square window (layouts and lengths
/// already validated).
pub fn box_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &BoxFilterOptions,
) {
    uniform_filter(input, output, layout, &opts.into())
}

/// Filters `input` into `output`: any window and origin per axis.
pub fn uniform_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
) {
    let (rows, cols) = (layout.rows as i64, layout.cols as i64);
    let (before_y, before_x) = (opts.before(0), opts.before(1));
    let (sy, sx) = (opts.size[0] as i64, opts.size[1] as i64);
    let scale = opts.scale();
    let value = |y: i64, x: i64| -> f64 {
        match (extend(y, rows, opts.mode), extend(x, cols, opts.mode)) {
            (Some(y), Some(x)) => input[y as usize * layout.in_pitch + x as usize].to_f64(),
            _ => opts.cval,
        }
    };
    let filtered = |y: i64, x: i64| -> T {
        if opts.mode == BoundaryMode::Interior && !opts.window_fits(y, x, rows, cols) {
            return input[y as usize * layout.in_pitch + x as usize];
        }
        // The sum of each row's window (left to right), then of those
        // (top to bottom): the order of the small-window kernels, so that for
        // f64 images their result is this one's bit for bit.
        let mut acc = 0.0;
        for wy in y - before_y..y - before_y + sy {
            let first = x - before_x;
            let mut row = value(wy, first);
            for wx in first + 1..first + sx {
                row += value(wy, wx);
            }
            acc = if wy == y - before_y { row } else { acc + row };
        }
        T::from_f64(acc * scale)
    };
    let mut rows_out: Vec<&mut [T]> = output.chunks_mut(layout.out_pitch).collect();
    let mut filtered_rows = vec![Vec::new(); layout.rows];
    super::fill_parallel(&mut filtered_rows, 16, None, |y| {
        (0..cols).map(|x| filtered(y as i64, x)).collect::<Vec<T>>()
    });
    for (row, values) in rows_out.iter_mut().zip(filtered_rows) {
        row[..layout.cols].copy_from_slice(&values);
    }
}
