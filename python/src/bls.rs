//! The Box Least Squares transit search (astropy's `BoxLeastSquares`
//! semantics): one series, and ragged batches over shared periods and
//! durations, host arrays; of a batch also only the best periods of each
//! series.
use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use kernpack::api::bls::{
    Bls, BlsBatch, BlsObjective, BlsOptions, BlsPeaks, BlsResults, BlsSearchBatch,
    BlsSearchBatchPeaks, BlsSeries, PeakOptions,
};
use kernpack::float::Float;

use crate::arrays::{by_dtype, Dtype, In};
use crate::{to_py, Context};

/// `(objective, oversample)`: "likelihood" or "snr", and phase bins per
/// shortest duration (at least 1; the operation checks it).
type Options = (String, u32);

fn options((objective, oversample): Options) -> PyResult<BlsOptions> {
    let objective = match objective.as_str() {
        "likelihood" => BlsObjective::Likelihood,
        "snr" => BlsObjective::Snr,
        other => {
            return Err(PyValueError::new_err(format!(
                "objective {other:?}: expected 'likelihood' or 'snr'"
            )))
        }
    };
    Ok(BlsOptions {
        objective,
        oversample,
    })
}

/// The 7 fields of `results` (power, depth, depth_err, duration,
/// transit_time, depth_snr, log_likelihood) as new NumPy arrays, each of
/// `shape` (the values of every series back to back, C order).
fn fields<'py, T: numpy::Element>(
    py: Python<'py>,
    results: Vec<BlsResults<T>>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyTuple>> {
    let mut columns: [Vec<T>; 7] = Default::default();
    for r in results {
        let BlsResults {
            power,
            depth,
            depth_err,
            duration,
            transit_time,
            depth_snr,
            log_likelihood,
        } = r;
        let parts = [
            power,
            depth,
            depth_err,
            duration,
            transit_time,
            depth_snr,
            log_likelihood,
        ];
        for (column, part) in columns.iter_mut().zip(parts) {
            column.extend(part);
        }
    }
    let arrays = columns
        .into_iter()
        .map(|c| Ok(c.into_pyarray(py).reshape(shape)?.into_any()))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(py, arrays)
}

/// One series `(t, y, dy or None)` of one float dtype, at `periods` over
/// `durations` (of that dtype). Returns the 7 result fields, each a new 1-D
/// array of that dtype with one value per period.
#[pyfunction]
pub(crate) fn bls<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    periods: Bound<'py, PyUntypedArray>,
    durations: Bound<'py, PyUntypedArray>,
    opts: Options,
) -> PyResult<Bound<'py, PyTuple>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let periods = In::<T>::new("period", &periods)?;
        let durations = In::<T>::new("duration", &durations)?;
        let op = Bls {
            series: BlsSeries { t: t.values(), y: y.values(), dy: dy.as_ref().map(In::values) },
            periods: periods.values(),
            durations: durations.values(),
            opts,
        };
        let n = op.periods.len();
        let r = py.detach(|| kp.run(op)).map_err(to_py)?;
        fields(py, vec![r], &[n])
    })
}

/// A ragged batch `(t, y, dy or None)` with `offsets` (uintp, nseries + 1,
/// at least one series) at the same `periods` over the same `durations`.
/// Returns the 7 result fields, each a new (nseries, nperiods) array. With
/// `peaks = (k, separation)`, only each series' best `k` periods, the
/// highest distinct peaks of its power, each at least `separation` (in units
/// of the periods) from those before it (`kernpack::params::peaks`), as
/// `(index, fields)`: a new (nseries, k) int64 array of period indices (-1
/// past a series' last peak) and the 7 fields at them, each a new (nseries,
/// k) array (NaN past the last peak); on a GPU only the peaks' boxes leave
/// the device.
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, offsets, periods, durations, opts, peaks = None))]
pub(crate) fn bls_batch<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    offsets: Bound<'py, PyUntypedArray>,
    periods: Bound<'py, PyUntypedArray>,
    durations: Bound<'py, PyUntypedArray>,
    opts: Options,
    peaks: Option<(usize, f64)>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    let peaks = peaks.map(|(k, separation)| PeakOptions { k, separation });
    let offsets = In::<usize>::new("offsets", &offsets)?;
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let periods = In::<T>::new("period", &periods)?;
        let durations = In::<T>::new("duration", &durations)?;
        let batch = BlsBatch {
            t: t.values(),
            y: y.values(),
            dy: dy.as_ref().map(In::values),
            offsets: offsets.values(),
        };
        let (periods, durations) = (periods.values(), durations.values());
        if let Some(peaks) = peaks {
            let op = BlsSearchBatchPeaks { batch, periods, durations, opts, peaks };
            let rows = py.detach(|| kp.run(op)).map_err(to_py)?;
            return peak_arrays(py, rows, peaks.k);
        }
        let op = BlsSearchBatch { batch, periods, durations, opts };
        let r = py.detach(|| kp.run(op)).map_err(to_py)?;
        let nseries = r.len();
        fields(py, r, &[nseries, periods.len()])
    })
}

/// Each series' best periods (at most `k`) as `(index, fields)`: (nseries,
/// k) int64 period indices padded with -1, and the 7 result fields of
/// [`fields`], each (nseries, k), padded with NaN.
fn peak_arrays<'py, T: Float + numpy::Element>(
    py: Python<'py>,
    rows: Vec<BlsPeaks<T>>,
    k: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let nseries = rows.len();
    let mut index = vec![-1i64; nseries * k];
    let mut results = Vec::with_capacity(nseries);
    for (s, row) in rows.into_iter().enumerate() {
        for (j, &p) in row.period_index.iter().enumerate() {
            index[s * k + j] = p as i64;
        }
        let mut r = row.results;
        for column in r.columns_mut() {
            column.resize(k, T::from_f64(f64::NAN));
        }
        results.push(r);
    }
    let index = index.into_pyarray(py).reshape([nseries, k])?;
    let fields = fields(py, results, &[nseries, k])?;
    (index, fields).into_pyobject(py)
}
