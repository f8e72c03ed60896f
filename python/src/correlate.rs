//! 1-D correlations along any axis of an N-D array and the Gaussian filters
//! made of them (`correlate1d`, `gaussian_filter1d`, `gaussian_filter`), host
//! and device buffers, C-contiguous; plus the Gaussian weights, so that the
//! Python layer never computes a kernel itself.
use numpy::{IxDyn, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use std::marker::PhantomData;

use kernpack::{CorrelateOnDevice, CorrelatePass, GaussianOptions};

use crate::arrays::{by_dtype, Dtype, In, Out};
use crate::{to_py, Context};

/// One pass as Python passes it: (axis, weights, origin, mode, cval), SciPy's
/// `correlate1d` arguments with the axis already in `0..ndim`.
type PassArgs = (usize, Vec<f64>, i64, String, f64);

/// The passes of a call, their modes parsed (the API validates the rest).
fn passes(list: Vec<PassArgs>) -> PyResult<Vec<CorrelatePass>> {
    list.into_iter()
        .map(|(axis, weights, origin, mode, cval)| {
            Ok(CorrelatePass {
                axis,
                weights,
                origin,
                mode: mode.parse().map_err(to_py)?,
                cval,
            })
        })
        .collect()
}

/// The passes, in order, from the C-contiguous float array `input` into
/// `output` (its shape and dtype, any number of dimensions); nothing is
/// written on error. `output` sharing memory with `input` is refused (the
/// Python layer filters from a copy then).
#[pyfunction]
pub(crate) fn correlate(
    ctx: &Context,
    input: &Bound<'_, PyUntypedArray>,
    output: &Bound<'_, PyUntypedArray>,
    passes: Vec<PassArgs>,
) -> PyResult<()> {
    let (py, kp, passes) = (input.py(), &ctx.kp, self::passes(passes)?);
    by_dtype!(Dtype::of("input", input)?, T => {
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
        py.detach(|| kp.correlate_passes_into(i, o, &shape, &passes)).map_err(to_py)
    })
}

/// As [`correlate`], on C-contiguous device buffers of `shape`, enqueued on
/// `stream`.
#[pyfunction]
pub(crate) fn correlate_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    input: u64,
    output: u64,
    shape: Vec<usize>,
    passes: Vec<PassArgs>,
    stream: usize,
) -> PyResult<()> {
    let passes = self::passes(passes)?;
    ctx.enqueue(py, stream, move |gpu, stream| {
        // SAFETY: both buffers are checked device allocations of the shape's size, apart.
        by_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &CorrelateOnDevice::<T> { input, output, shape, passes, dtype: PhantomData })
        })
    })
}

/// The correlation weights of SciPy's `gaussian_filter1d(sigma, order=order,
/// radius=radius)` (the Gaussian kernel of that radius reversed), from
/// kernpack's [`GaussianOptions`]. ValueError for a sigma that is not finite
/// and positive, an order above kernpack's highest or a radius past its
/// largest.
#[pyfunction]
pub(crate) fn gaussian_weights(sigma: f64, order: u32, radius: usize) -> PyResult<Vec<f64>> {
    let opts = GaussianOptions {
        sigma,
        order,
        radius: Some(radius),
        ..Default::default()
    };
    Ok(opts.pass(0).map_err(to_py)?.weights)
}
