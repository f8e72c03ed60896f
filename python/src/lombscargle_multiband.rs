//! The multiband periodogram (astropy's `LombScargleMultiband`): one series
//! on a frequency array or a uniform grid, and ragged batches, host arrays.
//! Band labels arrive as uint32 codes (Python maps its labels through
//! `np.unique`, so code order is astropy's column order).
use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::prelude::*;

use kernpack::api::lombscargle::multiband::{
    LombScargleMultiband, MultibandBatch, MultibandOptions, MultibandSeries,
};

use crate::arrays::{by_dtype, Dtype, In};
use crate::lombscargle_chi2::{batch_grid, refined_peak_arrays, search_options, Freqs, Search};
use crate::{to_py, Context};

/// `(method, nterms_base, nterms_band, reg_base, reg_band,
/// regularize_by_trace, center_data, fit_mean, normalization)`.
type Options = (
    String,
    usize,
    usize,
    Option<f64>,
    Option<f64>,
    bool,
    bool,
    bool,
    String,
);

fn options(o: Options) -> PyResult<MultibandOptions> {
    let (method, nterms_base, nterms_band, reg_base, reg_band, by_trace, center, fit_mean, norm) =
        o;
    Ok(MultibandOptions {
        method: method.parse().map_err(to_py)?,
        nterms_base,
        nterms_band,
        reg_base,
        reg_band,
        regularize_by_trace: by_trace,
        center_data: center,
        fit_mean,
        normalization: norm.parse().map_err(to_py)?,
    })
}

/// One series `(t, y, dy or None, bands)` of one float dtype (bands
/// uint32). Returns the power at each frequency as a new 1-D array of that
/// dtype.
#[pyfunction]
pub(crate) fn lombscargle_multiband<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    bands: Bound<'py, PyUntypedArray>,
    freqs: Freqs<'py>,
    opts: Options,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    let bands = In::<u32>::new("bands", &bands)?;
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let series = MultibandSeries {
            t: t.values(),
            y: y.values(),
            dy: dy.as_ref().map(In::values),
            bands: bands.values(),
        };
        let freqs = freqs.read::<T>()?;
        let op = LombScargleMultiband { series, freqs: freqs.get(), opts };
        let p = py.detach(|| kp.run(op)).map_err(to_py)?;
        Ok(p.into_pyarray(py).into_any())
    })
}

/// A ragged batch `(t, y, dy or None, bands)` with `offsets` (uintp,
/// nseries + 1) on uniform grids `(f0, df, nf)` (float64 arrays of one
/// value, shared, or one per series). Returns a new (nseries, nf) array; or
/// with `search` only each series' best peaks, the highest distinct maxima
/// (`kernpack::params::peaks`), refined as it asks (on a GPU only the peaks
/// leave the device), as `lombscargle_chi2_batch`'s.
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, bands, offsets, grids, opts, search = None))]
#[allow(clippy::too_many_arguments)] // the batch's arrays, its grids and options
pub(crate) fn lombscargle_multiband_batch<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    bands: Bound<'py, PyUntypedArray>,
    offsets: Bound<'py, PyUntypedArray>,
    grids: (
        Bound<'py, PyUntypedArray>,
        Bound<'py, PyUntypedArray>,
        usize,
    ),
    opts: Options,
    search: Option<Search>,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    let search = search.map(search_options).transpose()?;
    let offsets = In::<usize>::new("offsets", &offsets)?;
    let bands = In::<u32>::new("bands", &bands)?;
    let (f0, df, nf) = grids;
    let (f0, df) = (In::<f64>::new("f0", &f0)?, In::<f64>::new("df", &df)?);
    let grids = batch_grid(&f0, &df, nf);
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let batch = MultibandBatch {
            t: t.values(),
            y: y.values(),
            dy: dy.as_ref().map(In::values),
            bands: bands.values(),
            offsets: offsets.values(),
        };
        if let Some(search) = search {
            let rows = py
                .detach(|| {
                    kp.lombscargle_multiband_batch_refined_peaks(&batch, &grids, &opts, &search)
                })
                .map_err(to_py)?;
            return refined_peak_arrays(py, &rows, search.peaks.k);
        }
        let p = py
            .detach(|| kp.lombscargle_multiband_batch(&batch, &grids, &opts))
            .map_err(to_py)?;
        let nseries = p.len() / nf;
        let array = p.into_pyarray(py).reshape([nseries, nf])?;
        Ok(array.into_any())
    })
}
