//! The box filter as the kernel defines it: for each point, the sums of the
//! rows of its window (left to right), summed top to bottom, times 1/size^2,
//! with SciPy's boundary extension. Accumulates in f64, so for f64 images it
//! is the kernel's arithmetic exactly.
use crate::float::Float;
pub use crate::params::stencil::extend;
use crate::params::stencil::{BoundaryMode, BoxFilterOptions, ImageLayout};

/// Filters `input` into `output` (layouts and lengths already validated).
pub fn box_filter<T: Float>(
    input: &[T],
    output: &mut [T],
    layout: &ImageLayout,
    opts: &BoxFilterOptions,
) {
    let (rows, cols) = (layout.rows as i64, layout.cols as i64);
    let r = (opts.size / 2) as i64;
    let scale = 1.0 / (opts.size * opts.size) as f64;
    let value = |y: i64, x: i64| -> f64 {
        match (extend(y, rows, opts.mode), extend(x, cols, opts.mode)) {
            (Some(y), Some(x)) => input[y as usize * layout.in_pitch + x as usize].to_f64(),
            _ => opts.cval,
        }
    };
    let filtered = |y: i64, x: i64| -> T {
        let fits = y >= r && y < rows - r && x >= r && x < cols - r;
        if opts.mode == BoundaryMode::Interior && !fits {
            return input[y as usize * layout.in_pitch + x as usize];
        }
        let mut acc = 0.0;
        for dy in -r..=r {
            let mut row = value(y + dy, x - r);
            for dx in -r + 1..=r {
                row += value(y + dy, x + dx);
            }
            acc = if dy == -r { row } else { acc + row };
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
