//! Deterministic sums and normalisation, of one array or of a batch.
use pyo3::prelude::*;

use crate::{by_dtype, host, host_mut, to_py, Context, Dtype};

/// The sum of `n` values, accumulated in f64 (the same bits on every run).
#[pyfunction]
fn sum(py: Python<'_>, ctx: &Context, dtype: &str, x: usize, n: usize) -> PyResult<f64> {
    let dtype = Dtype::parse(dtype)?;
    let kp = &ctx.kp;
    // SAFETY: a live contiguous array of n values (the Python layer).
    py.detach(|| by_dtype!(dtype, T => kp.sum(unsafe { host::<T>(x, n) })))
        .map_err(to_py)
}

/// `x <- x / sum(x)` in place; returns the sum. A zero or non-finite sum is
/// a ValueError and leaves `x` unchanged.
#[pyfunction]
fn normalize(py: Python<'_>, ctx: &Context, dtype: &str, x: usize, n: usize) -> PyResult<f64> {
    let dtype = Dtype::parse(dtype)?;
    let kp = &ctx.kp;
    // SAFETY: a live contiguous array of n values that only this call touches.
    py.detach(|| by_dtype!(dtype, T => kp.normalize(unsafe { host_mut::<T>(x, n) })))
        .map_err(to_py)
}

/// Normalises array a = x[offsets[a]..offsets[a+1]] for every a in place;
/// `sums` receives narrays f64. Returns the indices of the arrays left
/// unchanged (zero or non-finite sum).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn normalize_batched(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    n: usize,
    offsets: usize,
    narrays: usize,
    sums: usize,
) -> PyResult<Vec<usize>> {
    let dtype = Dtype::parse(dtype)?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: live contiguous arrays of these lengths (the Python layer).
            let (x, offsets) = unsafe { (host_mut::<T>(x, n), host::<usize>(offsets, narrays + 1)) };
            let result = kp.normalize_batched(x, offsets)?;
            unsafe { host_mut::<f64>(sums, narrays) }.copy_from_slice(&result.sums);
            Ok(result.failed)
        })
    })
    .map_err(to_py)
}

/// Device sum of `n` values into the f64 at `sum`, enqueued on `stream`.
#[pyfunction]
fn sum_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    n: usize,
    sum: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    // SAFETY: checked device allocations of the stated lengths.
    py.detach(
        || by_dtype!(dtype, T => unsafe { gpu.sum_raw::<T>(&stream, x as u64, n, sum as u64) }),
    )
    .map_err(to_py)
}

/// Device normalisation in place: the f64 `sum` and the int32 `status` (0 ok,
/// 1 zero or non-finite sum: x untouched) are written on the device.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn normalize_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    n: usize,
    sum: usize,
    status: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: checked device allocations of the stated lengths.
            unsafe { gpu.normalize_raw::<T>(&stream, x as u64, n, sum as u64, status as u64) }
        })
    })
    .map_err(to_py)
}

/// Device batch: `offsets` narrays + 1 int64, `sums` f64 and `status` int32
/// narrays each (status 0 ok, 1 bad sum: array untouched, 2 bad offsets).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn normalize_batched_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    n: usize,
    offsets: usize,
    narrays: usize,
    sums: usize,
    status: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: checked device allocations; offsets are checked on the device.
            unsafe {
                gpu.normalize_batched_raw::<T>(
                    &stream, x as u64, n, offsets as u64, narrays, sums as u64, status as u64,
                )
            }
        })
    })
    .map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sum, m)?)?;
    m.add_function(wrap_pyfunction!(normalize, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_batched, m)?)?;
    m.add_function(wrap_pyfunction!(sum_device, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_device, m)?)?;
    m.add_function(wrap_pyfunction!(normalize_batched_device, m)?)?;
    Ok(())
}
