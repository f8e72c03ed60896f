//! The box filter (`uniform_filter` on 2-D images), host and device buffers,
//! with row pitches so that row-strided views need no copy.
use pyo3::prelude::*;

use kernpack::{BoxFilterOptions, ImageLayout};

use crate::{by_dtype, host, host_mut, to_py, Context, Dtype};

/// The filter's options and the image's layout, as both entry points take them.
#[allow(clippy::too_many_arguments)]
fn plan(
    size: usize,
    mode: &str,
    cval: f64,
    rows: usize,
    cols: usize,
    in_pitch: usize,
    out_pitch: usize,
) -> PyResult<(BoxFilterOptions, ImageLayout)> {
    let opts = BoxFilterOptions {
        size,
        mode: mode.parse().map_err(to_py)?,
        cval,
    };
    let layout = ImageLayout {
        rows,
        cols,
        in_pitch,
        out_pitch,
    };
    Ok((opts, layout))
}

/// Filters `rows x cols` values read with row pitch `in_pitch` (elements)
/// into `output` written with `out_pitch`; nothing is written on error.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, input, output, rows, cols, in_pitch, out_pitch, size, mode, cval))]
#[allow(clippy::too_many_arguments)]
fn box_filter(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    input: usize,
    output: usize,
    rows: usize,
    cols: usize,
    in_pitch: usize,
    out_pitch: usize,
    size: usize,
    mode: &str,
    cval: f64,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let (opts, layout) = plan(size, mode, cval, rows, cols, in_pitch, out_pitch)?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: the Python layer passes live arrays spanning the layout,
            // and output never overlaps input (it copies the input if they share memory).
            let (i, o) = unsafe {
                (host::<T>(input, layout.input_len()), host_mut::<T>(output, layout.output_len()))
            };
            kp.box_filter_into(i, o, &layout, &opts)
        })
    })
    .map_err(to_py)
}

/// As [`box_filter`], on device buffers, enqueued on `stream`.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, input, output, rows, cols, in_pitch, out_pitch, size, mode, cval, stream))]
#[allow(clippy::too_many_arguments)]
fn box_filter_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    input: usize,
    output: usize,
    rows: usize,
    cols: usize,
    in_pitch: usize,
    out_pitch: usize,
    size: usize,
    mode: &str,
    cval: f64,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let (opts, layout) = plan(size, mode, cval, rows, cols, in_pitch, out_pitch)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    py.detach(|| {
        // SAFETY: both buffers are checked device allocations spanning the layout.
        by_dtype!(dtype, T => unsafe {
            gpu.box_filter_raw::<T>(&stream, input as u64, output as u64, &layout, &opts)
        })
    })
    .map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(box_filter, m)?)?;
    m.add_function(wrap_pyfunction!(box_filter_device, m)?)?;
    Ok(())
}
