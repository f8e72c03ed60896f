//! The Lomb-Scargle family: one series on a frequency array or a uniform
//! grid, and ragged batches; host buffers and device buffers.
use std::marker::PhantomData;

use numpy::{Element, IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kernpack::api::lombscargle::batch::{Batch, BatchDeviceBuffers};
use kernpack::api::lombscargle::peaks::{PeakBuffers, PeakOptions};
use kernpack::api::lombscargle::{output_len, DeviceFreqs, LsDeviceBuffers, UniformGrid};
use kernpack::raw::{
    batch_grid, per_series_grid, write_peaks, write_periodogram, write_periodograms,
};
use kernpack::{
    LombScargleBatchOnDevice, LombScargleOnDevice, LombScargleOptions, LombScarglePeaksOnDevice,
    Series,
};

use crate::arrays::{by_dtype, Dtype, In};
use crate::phasefold::peak_arrays;
use crate::{to_py, Context};

/// The options of a call, as one tuple `(normalize, floating_mean,
/// precenter)`: every entry point takes the same.
pub(crate) struct Options(LombScargleOptions);

impl<'a, 'py> FromPyObject<'a, 'py> for Options {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (normalize, floating_mean, precenter): (String, bool, bool) = obj.extract()?;
        Ok(Options(LombScargleOptions {
            normalize: normalize.parse().map_err(to_py)?,
            floating_mean,
            precenter,
        }))
    }
}

/// The samples of one series or of a batch's series back to back: `(t, y,
/// weights)`, float arrays of one dtype (weights optional).
#[derive(FromPyObject)]
pub(crate) struct Samples<'py>(
    Bound<'py, PyUntypedArray>,
    Bound<'py, PyUntypedArray>,
    Option<Bound<'py, PyUntypedArray>>,
);

/// [`Samples`] checked and borrowed as arrays of `T`.
type SampleArrays<'py, T> = (In<'py, T>, In<'py, T>, Option<In<'py, T>>);

impl<'py> Samples<'py> {
    fn read<T: Element>(&self) -> PyResult<SampleArrays<'py, T>> {
        let Samples(t, y, weights) = self;
        Ok((
            In::new("t", t)?,
            In::new("y", y)?,
            weights
                .as_ref()
                .map(|w| In::new("weights", w))
                .transpose()?,
        ))
    }
}

/// The frequencies of a single series: an array, or the uniform grid
/// `(f0, df, nf)`.
#[derive(FromPyObject)]
pub(crate) enum Freqs<'py> {
    Array(Bound<'py, PyUntypedArray>),
    Uniform(f64, f64, usize),
}

/// One series on host arrays. Returns its periodogram as a new 1-D array
/// of their dtype, re and im interleaved for 'amplitude'.
#[pyfunction]
pub(crate) fn lombscargle<'py>(
    ctx: &Context,
    samples: Samples<'py>,
    freqs: Freqs<'py>,
    opts: Options,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (samples.0.py(), &ctx.kp, opts.0);
    by_dtype!(Dtype::of("t", &samples.0)?, T => {
        let (t, y, weights) = samples.read::<T>()?;
        let series = Series { t: t.values(), y: y.values(), weights: weights.as_ref().map(In::values) };
        let p = match freqs {
            Freqs::Array(f) => {
                let f = In::<T>::new("freqs", &f)?;
                let f = f.values();
                py.detach(|| kp.lombscargle(&series, f, &opts))
            }
            Freqs::Uniform(f0, df, nf) => {
                let grid = UniformGrid::new(f0, df, nf);
                py.detach(|| kp.lombscargle_uniform(&series, &grid, &opts))
            }
        }
        .map_err(to_py)?;
        // Amplitudes as re and im interleaved: the Python layer views them as complex.
        let mut out = vec![T::default(); output_len(p.len(), &opts)];
        write_periodogram(&p, &mut out);
        Ok(out.into_pyarray(py).into_any())
    })
}

/// The uniform grid of every series of a batch: `(f0, df, nf)`, `f0` and
/// `df` float64 arrays of one value (one grid for all) or one per series.
type Grids<'py> = (
    Bound<'py, PyUntypedArray>,
    Bound<'py, PyUntypedArray>,
    usize,
);

/// A ragged batch on host arrays: `offsets` (uintp) holds nseries + 1
/// indices into the samples. Returns the periodograms as a new (nseries,
/// output_len(nf)) array of the samples' dtype; with `best`, only each
/// series' peak instead: its index (int64 array, -1 where every value was
/// NaN) and value (float64 array, NaN there), the periodograms never all
/// held (`Kernpack::lombscargle_batch_peaks`); with `peaks = (k,
/// separation)` (not with `best`), only each series' best `k` peaks: the
/// highest distinct local maxima of its periodogram, each at least
/// `separation` (in the grid's frequency unit) from those before it
/// (`kernpack::params::peaks`; real normalisations only), as `(index,
/// value)`: new (nseries, k) int64 and float64 arrays, -1 and NaN past a
/// series' last peak (`Kernpack::lombscargle_batch_top_peaks`: on a GPU
/// only the peaks leave the device).
#[pyfunction]
#[pyo3(signature = (ctx, samples, offsets, grids, opts, best, peaks = None))]
pub(crate) fn lombscargle_batch<'py>(
    ctx: &Context,
    samples: Samples<'py>,
    offsets: &Bound<'py, PyUntypedArray>,
    grids: Grids<'py>,
    opts: Options,
    best: bool,
    peaks: Option<(usize, f64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (samples.0.py(), &ctx.kp, opts.0);
    let peaks = peaks.map(|(k, separation)| PeakOptions { k, separation });
    if best && peaks.is_some() {
        return Err(PyValueError::new_err(
            "best and peaks are exclusive: best is the highest peak, peaks = (k, separation) the best k",
        ));
    }
    let (f0, df, nf) = grids;
    let (f0, df) = (In::<f64>::new("f0", &f0)?, In::<f64>::new("df", &df)?);
    let grids = batch_grid(f0.values(), df.values(), nf);
    let offsets = In::<usize>::new("offsets", offsets)?;
    by_dtype!(Dtype::of("t", &samples.0)?, T => {
        let (t, y, weights) = samples.read::<T>()?;
        let batch = Batch {
            t: t.values(),
            y: y.values(),
            weights: weights.as_ref().map(In::values),
            offsets: offsets.values(),
        };
        if best {
            let peaks = py.detach(|| kp.lombscargle_batch_peaks(&batch, &grids, &opts)).map_err(to_py)?;
            let (mut index, mut value) = (vec![0; peaks.len()], vec![0.0; peaks.len()]);
            write_peaks(&peaks, &mut index, &mut value);
            return Ok((index.into_pyarray(py), value.into_pyarray(py)).into_pyobject(py)?.into_any());
        }
        if let Some(peaks) = peaks {
            let rows = py
                .detach(|| kp.lombscargle_batch_top_peaks(&batch, &grids, &opts, &peaks))
                .map_err(to_py)?;
            return peak_arrays(py, &rows, peaks.k);
        }
        let (nseries, per) = (batch.offsets.len().saturating_sub(1), output_len(nf, &opts));
        let out = py
            .detach(|| {
                let periodograms = kp.lombscargle_batch(&batch, &grids, &opts)?;
                let mut out = vec![T::default(); nseries * per];
                write_periodograms(&periodograms, &mut out, per);
                Ok(out)
            })
            .map_err(to_py)?;
        Ok(out.into_pyarray(py).reshape([nseries, per])?.into_any())
    })
}

/// Device buffers of samples: `(t, y, weights)` addresses (weights optional).
type DeviceSamples = (u64, u64, Option<u64>);

/// The frequencies of a series on the device: `(freqs, nf)`, an array of
/// `nf` values, or the uniform grid `(f0, df, nf)`.
#[derive(FromPyObject)]
pub(crate) enum DeviceGrid {
    Array(u64, usize),
    Uniform(f64, f64, usize),
}

/// One series, device buffers, enqueued on `stream` with no synchronisation.
#[pyfunction]
pub(crate) fn lombscargle_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    samples: DeviceSamples,
    nx: usize,
    freqs: DeviceGrid,
    opts: Options,
    out: u64,
    stream: usize,
) -> PyResult<()> {
    let ((t, y, weights), opts) = (samples, opts.0);
    let buffers = LsDeviceBuffers { t, y, weights, out };
    let freqs = match freqs {
        DeviceGrid::Array(ptr, len) => DeviceFreqs::Array { ptr, len },
        DeviceGrid::Uniform(f0, df, nf) => DeviceFreqs::Uniform(UniformGrid::new(f0, df, nf)),
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: every buffer was checked to be a device allocation of this
        // GPU holding the stated length; the caller keeps them alive.
        by_dtype!(dtype, T => unsafe { gpu.enqueue(stream, &LombScargleOnDevice::<T> { buffers, nx, freqs, opts, dtype: PhantomData }) })
    })
}

/// Where a device batch writes: `out` (nseries x output_len(nf) values), or
/// `(best_index, best_value)` (nseries int64 and f64) for the peak of each
/// series, the periodograms computed in chunks of series into scratch and
/// reduced there.
#[derive(FromPyObject)]
pub(crate) enum BatchOut {
    Periodograms(u64),
    Peaks(u64, u64),
}

/// A ragged batch on device buffers: `offsets` nseries + 1 int64, and the
/// grids `(f0, df, ngrids, nf)`: `f0`/`df` 1 (shared grid) or nseries f64 each.
#[pyfunction]
pub(crate) fn lombscargle_batch_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    samples: DeviceSamples,
    offsets: u64,
    nseries: usize,
    grids: (u64, u64, usize, usize),
    opts: Options,
    out: BatchOut,
    stream: usize,
) -> PyResult<()> {
    let ((t, y, weights), (f0, df, ngrids, nf), opts) = (samples, grids, opts.0);
    let per_series_grid = per_series_grid(ngrids, nseries).map_err(to_py)?;
    let (out, peaks) = match out {
        BatchOut::Periodograms(out) => (out, None),
        BatchOut::Peaks(index, value) => (0, Some(PeakBuffers { index, value })),
    };
    let buffers = BatchDeviceBuffers {
        t,
        y,
        weights,
        offsets,
        f0,
        df,
        per_series_grid,
        out,
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: checked device allocations of the stated lengths; the
        // offsets were validated on the host by the Python layer.
        by_dtype!(dtype, T => unsafe {
            let batch = LombScargleBatchOnDevice::<T> { buffers, nseries, nf, opts, dtype: PhantomData };
            match peaks {
                None => gpu.enqueue(stream, &batch),
                Some(peaks) => gpu.enqueue(stream, &LombScarglePeaksOnDevice { batch, peaks, max_scratch_bytes: None }),
            }
        })
    })
}
