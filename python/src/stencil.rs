//! The box filter (`uniform_filter` on 2-D images), host and device buffers,
//! with row pitches so that row-strided views need no copy.
use numpy::{Ix2, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use std::marker::PhantomData;

use kernpack::{BoxFilterOnDevice, ImageLayout, UniformFilterOptions};

use crate::arrays::{by_dtype, Dtype, In, Out};
use crate::{to_py, Context};

/// The filter's options, as both entry points take them: the window size
/// and SciPy's origin along (rows, columns).
fn options(
    size: (usize, usize),
    origin: (i64, i64),
    mode: &str,
    cval: f64,
) -> PyResult<UniformFilterOptions> {
    Ok(UniformFilterOptions {
        size: [size.0, size.1],
        origin: [origin.0, origin.1],
        mode: mode.parse().map_err(to_py)?,
        cval,
    })
}

/// Filters the 2-D float image `input` into `output` (its shape and
/// dtype), both read or written in place with their row pitch; nothing is
/// written on error. `output` sharing memory with `input` is refused (the
/// Python layer filters from a copy then).
#[pyfunction]
pub(crate) fn box_filter(
    ctx: &Context,
    input: &Bound<'_, PyUntypedArray>,
    output: &Bound<'_, PyUntypedArray>,
    size: (usize, usize),
    origin: (i64, i64),
    mode: &str,
    cval: f64,
) -> PyResult<()> {
    let (py, kp, opts) = (input.py(), &ctx.kp, options(size, origin, mode, cval)?);
    by_dtype!(Dtype::of("input", input)?, T => {
        let (src, in_pitch) = In::<T, Ix2>::image("input", input)?;
        let (mut dst, out_pitch) = Out::<T, Ix2>::image("output", output)?;
        let [rows, cols] = [src.shape()[0], src.shape()[1]];
        if dst.shape() != src.shape() {
            return Err(PyValueError::new_err(format!(
                "output has shape {:?} but input {:?}: they must be equal",
                dst.shape(),
                src.shape()
            )));
        }
        let layout = ImageLayout { rows, cols, in_pitch, out_pitch };
        let (i, o) = (src.values(), dst.values());
        py.detach(|| kp.uniform_filter_into(i, o, &layout, &opts)).map_err(to_py)
    })
}

/// As [`box_filter`], on device buffers, enqueued on `stream`.
#[pyfunction]
pub(crate) fn box_filter_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    input: u64,
    output: u64,
    layout: (usize, usize, usize, usize),
    size: (usize, usize),
    origin: (i64, i64),
    mode: &str,
    cval: f64,
    stream: usize,
) -> PyResult<()> {
    let opts = options(size, origin, mode, cval)?;
    let (rows, cols, in_pitch, out_pitch) = layout;
    let layout = ImageLayout {
        rows,
        cols,
        in_pitch,
        out_pitch,
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: both buffers are checked device allocations spanning the layout.
        by_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &BoxFilterOnDevice::<T> { input, output, layout, opts, dtype: PhantomData })
        })
    })
}
