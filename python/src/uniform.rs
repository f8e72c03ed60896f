//! The N-D box filter (`uniform_filter` of any rank and element type) over
//! C-contiguous host and device buffers: (u)int8 to (u)int64, float32 and
//! float64 (the Python layer passes bool arrays as uint8). The Python layer
//! resolves SciPy's arguments into one size, origin and mode per axis and
//! casts the arrays to the type the passes are stored in; the API checks
//! them again (an integer type's `cval` must be an integer in its range).
use numpy::{IxDyn, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use std::marker::PhantomData;

use kernpack::{BoundaryMode, UniformNdOnDevice, UniformNdOptions};

use crate::arrays::{In, Out};
use crate::rank::{by_rank_dtype, RankDtype};
use crate::{to_py, Context};

/// The options of a call: one size, origin and mode per axis of the array,
/// and `cval`.
fn options(
    size: Vec<usize>,
    origin: Vec<i64>,
    mode: Vec<String>,
    cval: f64,
) -> PyResult<UniformNdOptions> {
    let mode = mode
        .iter()
        .map(|m| m.parse::<BoundaryMode>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(to_py)?;
    Ok(UniformNdOptions {
        size,
        origin,
        mode,
        cval,
    })
}

/// The box filter from the C-contiguous array `input` into `output` (its
/// shape and dtype, any number of dimensions); nothing is written on error.
/// `output` sharing memory with `input` is refused (the Python layer
/// filters from a copy then).
#[pyfunction]
pub(crate) fn uniform_filter_nd(
    ctx: &Context,
    input: &Bound<'_, PyUntypedArray>,
    output: &Bound<'_, PyUntypedArray>,
    size: Vec<usize>,
    origin: Vec<i64>,
    mode: Vec<String>,
    cval: f64,
) -> PyResult<()> {
    let (py, kp) = (input.py(), &ctx.kp);
    let opts = options(size, origin, mode, cval)?;
    by_rank_dtype!(RankDtype::of("input", input)?, T => {
        let src = In::<T, IxDyn>::new("input", input)?;
        let mut dst = Out::<T, IxDyn>::new("output", output)?;
        if dst.shape() != src.shape() {
            return Err(PyValueError::new_err(format!(
                "output has shape {:?} but input {:?}: they must be equal",
                dst.shape(),
                src.shape()
            )));
        }
        let shape = src.shape().to_vec();
        let (i, o) = (src.values(), dst.values());
        py.detach(|| kp.uniform_filter_nd_into(i, o, &shape, &opts)).map_err(to_py)
    })
}

/// As [`uniform_filter_nd`], on C-contiguous device buffers of `shape` and
/// `dtype`, enqueued on `stream`.
#[pyfunction]
pub(crate) fn uniform_filter_nd_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: RankDtype,
    input: u64,
    output: u64,
    shape: Vec<usize>,
    size: Vec<usize>,
    origin: Vec<i64>,
    mode: Vec<String>,
    cval: f64,
    stream: usize,
) -> PyResult<()> {
    let opts = options(size, origin, mode, cval)?;
    ctx.enqueue(py, stream, move |gpu, stream| {
        // SAFETY: both buffers are checked device allocations of the shape's size, apart.
        by_rank_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &UniformNdOnDevice::<T> { input, output, shape, opts, dtype: PhantomData })
        })
    })
}
