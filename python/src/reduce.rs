//! Deterministic sums and normalisation, of one array or of a batch.
use std::marker::PhantomData;

use kernpack::{NormalizeBatchedOnDevice, NormalizeOnDevice, SumOnDevice};
use numpy::{IntoPyArray, Ix1, IxDyn, PyArray1, PyUntypedArray};
use pyo3::prelude::*;

use crate::arrays::{by_dtype, Dtype, In, Out};
use crate::{to_py, Context};

/// The sum of a float array's values, accumulated in f64 (the same bits on
/// every run).
#[pyfunction]
pub(crate) fn sum(ctx: &Context, x: &Bound<'_, PyUntypedArray>) -> PyResult<f64> {
    let (py, kp) = (x.py(), &ctx.kp);
    by_dtype!(Dtype::of("x", x)?, T => {
        let x = In::<T, IxDyn>::new("x", x)?;
        let x = x.values();
        py.detach(|| kp.sum(x)).map_err(to_py)
    })
}

/// `x <- x / sum(x)` in place; returns the sum. A zero or non-finite sum is
/// a ValueError and leaves `x` unchanged.
#[pyfunction]
pub(crate) fn normalize(ctx: &Context, x: &Bound<'_, PyUntypedArray>) -> PyResult<f64> {
    let (py, kp) = (x.py(), &ctx.kp);
    by_dtype!(Dtype::of("x", x)?, T => {
        let mut x = Out::<T, IxDyn>::new("x", x)?;
        let x = x.values();
        py.detach(|| kp.normalize(x)).map_err(to_py)
    })
}

/// Normalises array a = x[offsets[a]..offsets[a+1]] for every a in place
/// (`offsets`: uintp). Returns the sums (float64, one per array) and the
/// indices of the arrays left unchanged (zero or non-finite sum).
#[pyfunction]
pub(crate) fn normalize_batched<'py>(
    ctx: &Context,
    x: &Bound<'py, PyUntypedArray>,
    offsets: &Bound<'py, PyUntypedArray>,
) -> PyResult<(Bound<'py, PyArray1<f64>>, Vec<usize>)> {
    let (py, kp) = (x.py(), &ctx.kp);
    // Copied, so that `x` is the call's only borrow: rust-numpy's overlap
    // check is exact only between arrays of one element type.
    let offsets = In::<usize>::new("offsets", offsets)?.values().to_vec();
    let result = by_dtype!(Dtype::of("x", x)?, T => {
        let mut x = Out::<T, Ix1>::new("x", x)?;
        let x = x.values();
        py.detach(|| kp.normalize_batched(x, &offsets))
    })
    .map_err(to_py)?;
    Ok((result.sums.into_pyarray(py), result.failed))
}

/// Device sum of `n` values into the f64 at `sum`, enqueued on `stream`.
#[pyfunction]
pub(crate) fn sum_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    x: u64,
    n: usize,
    sum: u64,
    stream: usize,
) -> PyResult<()> {
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: checked device allocations of the stated lengths.
        by_dtype!(dtype, T => unsafe { gpu.enqueue(stream, &SumOnDevice::<T> { x, n, sum, dtype: PhantomData }) })
    })
}

/// Device normalisation in place: the f64 `sum` and the int32 `status` (0 ok,
/// 1 zero or non-finite sum: x untouched) are written on the device.
#[pyfunction]
pub(crate) fn normalize_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: usize,
) -> PyResult<()> {
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: checked device allocations of the stated lengths.
        by_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &NormalizeOnDevice::<T> { x, n, sum, status, dtype: PhantomData })
        })
    })
}

/// Device batch: `offsets` narrays + 1 int64, `sums` f64 and `status` int32
/// narrays each (status 0 ok, 1 bad sum: array untouched, 2 bad offsets).
#[pyfunction]
pub(crate) fn normalize_batched_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: usize,
) -> PyResult<()> {
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: checked device allocations; offsets are checked on the device.
        by_dtype!(dtype, T => unsafe {
            let op = NormalizeBatchedOnDevice::<T> { x, n, offsets, narrays, sums, status, dtype: PhantomData };
            gpu.enqueue(stream, &op)
        })
    })
}
