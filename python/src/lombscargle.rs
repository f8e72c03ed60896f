//! The Lomb-Scargle family: one series on a frequency array or a uniform
//! grid, and ragged batches; host buffers and device buffers.
use pyo3::prelude::*;

use kernpack::api::lombscargle::batch::{Batch, BatchDeviceBuffers, BatchGrid};
use kernpack::api::lombscargle::peaks::PeakBuffers;
use kernpack::api::lombscargle::{output_len, DeviceFreqs, LsDeviceBuffers, UniformGrid};
use kernpack::{Float, LombScargleOptions, Periodogram, Series};

use crate::{by_dtype, host, host_mut, to_py, Context, Dtype};

fn options(normalize: &str, floating_mean: bool, precenter: bool) -> PyResult<LombScargleOptions> {
    Ok(LombScargleOptions {
        normalize: normalize.parse().map_err(to_py)?,
        floating_mean,
        precenter,
    })
}

/// Values of one periodogram of `nf` frequencies (2 nf for amplitude: re, im).
#[pyfunction]
#[pyo3(signature = (nf, normalize))]
fn lombscargle_output_len(nf: usize, normalize: &str) -> PyResult<usize> {
    Ok(output_len(nf, &options(normalize, false, false)?))
}

/// Writes `p` as interleaved values into `out` (exactly `output_len` values).
fn write_periodogram<T: Float>(p: &Periodogram<T>, out: &mut [T]) {
    match p {
        Periodogram::Real(v) => out.copy_from_slice(v),
        Periodogram::Complex(v) => {
            for (pair, c) in out.chunks_exact_mut(2).zip(v) {
                pair[0] = c.re;
                pair[1] = c.im;
            }
        }
    }
}

/// One series, host buffers: `freqs` (nf values) or, without it, the uniform
/// grid `f0 + k df`. `out` receives `output_len(nf)` values.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, t, y, weights, nx, freqs, f0, df, nf, normalize, floating_mean, precenter, out))]
#[allow(clippy::too_many_arguments)]
fn lombscargle(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    t: usize,
    y: usize,
    weights: Option<usize>,
    nx: usize,
    freqs: Option<usize>,
    f0: f64,
    df: f64,
    nf: usize,
    normalize: &str,
    floating_mean: bool,
    precenter: bool,
    out: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = options(normalize, floating_mean, precenter)?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: the Python layer passes live, contiguous arrays of these lengths.
            let series = unsafe {
                Series { t: host::<T>(t, nx), y: host::<T>(y, nx), weights: weights.map(|w| host::<T>(w, nx)) }
            };
            let p = match freqs {
                Some(f) => kp.lombscargle(&series, unsafe { host::<T>(f, nf) }, &opts),
                None => kp.lombscargle_uniform(&series, &UniformGrid::new(f0, df, nf), &opts),
            }?;
            write_periodogram(&p, unsafe { host_mut::<T>(out, output_len(nf, &opts)) });
            Ok(())
        })
    })
    .map_err(to_py)
}

/// A ragged batch, host buffers. `offsets` holds nseries + 1 intp values;
/// `f0`, `df` hold `ngrids` (1: shared, or nseries) f64. Either `out` receives
/// nseries x output_len(nf) values, or `best_index` (int64) and `best_value`
/// (f64) receive the peak of each series (the periodograms are never all
/// held: `Kernpack::lombscargle_batch_peaks`).
#[pyfunction]
#[pyo3(signature = (ctx, dtype, t, y, weights, n, offsets, nseries, f0, df, ngrids, nf, normalize, floating_mean, precenter, out, best_index, best_value))]
#[allow(clippy::too_many_arguments)]
fn lombscargle_batch(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    t: usize,
    y: usize,
    weights: Option<usize>,
    n: usize,
    offsets: usize,
    nseries: usize,
    f0: usize,
    df: usize,
    ngrids: usize,
    nf: usize,
    normalize: &str,
    floating_mean: bool,
    precenter: bool,
    out: Option<usize>,
    best_index: Option<usize>,
    best_value: Option<usize>,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = options(normalize, floating_mean, precenter)?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: the Python layer passes live, contiguous arrays of these lengths.
            let (f0, df) = unsafe { (host::<f64>(f0, ngrids), host::<f64>(df, ngrids)) };
            let grids = if ngrids == 1 {
                BatchGrid::Shared(UniformGrid::new(f0[0], df[0], nf))
            } else {
                BatchGrid::PerSeries { f0, df, nf }
            };
            let batch = unsafe {
                Batch {
                    t: host::<T>(t, n),
                    y: host::<T>(y, n),
                    weights: weights.map(|w| host::<T>(w, n)),
                    offsets: host::<usize>(offsets, nseries + 1),
                }
            };
            if let (Some(bi), Some(bv)) = (best_index, best_value) {
                // Only the peaks: the periodograms are never all held (bounded memory).
                let peaks = kp.lombscargle_batch_peaks(&batch, &grids, &opts)?;
                let (bi, bv) = unsafe { (host_mut::<i64>(bi, nseries), host_mut::<f64>(bv, nseries)) };
                for (s, peak) in peaks.into_iter().enumerate() {
                    (bi[s], bv[s]) = peak.map_or((-1, f64::NAN), |p| (p.index as i64, p.value));
                }
            }
            if let Some(out) = out {
                let periodograms = kp.lombscargle_batch(&batch, &grids, &opts)?;
                let per = output_len(nf, &opts);
                let out = unsafe { host_mut::<T>(out, nseries * per) };
                for (p, o) in periodograms.iter().zip(out.chunks_exact_mut(per)) {
                    write_periodogram(p, o);
                }
            }
            Ok(())
        })
    })
    .map_err(to_py)
}

/// One series, device buffers, enqueued on `stream` with no synchronisation.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, t, y, weights, nx, freqs, f0, df, nf, normalize, floating_mean, precenter, out, stream))]
#[allow(clippy::too_many_arguments)]
fn lombscargle_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    t: usize,
    y: usize,
    weights: Option<usize>,
    nx: usize,
    freqs: Option<usize>,
    f0: f64,
    df: f64,
    nf: usize,
    normalize: &str,
    floating_mean: bool,
    precenter: bool,
    out: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = options(normalize, floating_mean, precenter)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    let buffers = LsDeviceBuffers {
        t: t as u64,
        y: y as u64,
        weights: weights.map(|w| w as u64),
        out: out as u64,
    };
    let freqs = match freqs {
        Some(ptr) => DeviceFreqs::Array {
            ptr: ptr as u64,
            len: nf,
        },
        None => DeviceFreqs::Uniform(UniformGrid::new(f0, df, nf)),
    };
    py.detach(|| {
        // SAFETY: every buffer was checked to be a device allocation of this
        // GPU holding the stated length; the caller keeps them alive.
        by_dtype!(dtype, T => unsafe { gpu.lombscargle_raw::<T>(&stream, &buffers, nx, freqs, &opts) })
    })
    .map_err(to_py)
}

/// A ragged batch on device buffers: `offsets` nseries + 1 int64, `f0`/`df`
/// 1 (shared grid) or nseries f64 each. Either `out` receives nseries x
/// output_len(nf) values, or `best_index` (nseries int64) and `best_value`
/// (nseries f64) the peak of each series, the periodograms computed in
/// chunks of series into scratch and reduced there.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, t, y, weights, offsets, nseries, f0, df, ngrids, nf, normalize, floating_mean, precenter, out, best_index, best_value, stream))]
#[allow(clippy::too_many_arguments)]
fn lombscargle_batch_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    t: usize,
    y: usize,
    weights: Option<usize>,
    offsets: usize,
    nseries: usize,
    f0: usize,
    df: usize,
    ngrids: usize,
    nf: usize,
    normalize: &str,
    floating_mean: bool,
    precenter: bool,
    out: Option<usize>,
    best_index: Option<usize>,
    best_value: Option<usize>,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = options(normalize, floating_mean, precenter)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    let buffers = BatchDeviceBuffers {
        t: t as u64,
        y: y as u64,
        weights: weights.map(|w| w as u64),
        offsets: offsets as u64,
        f0: f0 as u64,
        df: df as u64,
        per_series_grid: ngrids != 1,
        out: out.unwrap_or(0) as u64,
    };
    let peaks = match (out, best_index, best_value) {
        (Some(_), None, None) => None,
        (None, Some(index), Some(value)) => Some(PeakBuffers {
            index: index as u64,
            value: value as u64,
        }),
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "pass either out or both best_index and best_value",
            ))
        }
    };
    py.detach(|| {
        // SAFETY: checked device allocations of the stated lengths; the
        // offsets were validated on the host by the Python layer.
        by_dtype!(dtype, T => unsafe {
            match &peaks {
                None => gpu.lombscargle_batch_raw::<T>(&stream, &buffers, nseries, nf, &opts),
                Some(peaks) => gpu.lombscargle_batch_peaks_raw::<T>(&stream, &buffers, nseries, nf, &opts, peaks, None),
            }
        })
    })
    .map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(lombscargle_output_len, m)?)?;
    m.add_function(wrap_pyfunction!(lombscargle, m)?)?;
    m.add_function(wrap_pyfunction!(lombscargle_batch, m)?)?;
    m.add_function(wrap_pyfunction!(lombscargle_device, m)?)?;
    m.add_function(wrap_pyfunction!(lombscargle_batch_device, m)?)?;
    Ok(())
}
