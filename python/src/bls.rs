//! The Box Least Squares transit search (astropy's `BoxLeastSquares`
//! semantics): one series, and ragged batches over shared periods and
//! durations, host arrays.
use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

use kernpack::api::bls::{
    Bls, BlsBatch, BlsObjective, BlsOptions, BlsResults, BlsSearchBatch, BlsSeries,
};

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
/// Returns the 7 result fields, each a new (nseries, nperiods) array.
#[pyfunction]
pub(crate) fn bls_batch<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    offsets: Bound<'py, PyUntypedArray>,
    periods: Bound<'py, PyUntypedArray>,
    durations: Bound<'py, PyUntypedArray>,
    opts: Options,
) -> PyResult<Bound<'py, PyTuple>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    let offsets = In::<usize>::new("offsets", &offsets)?;
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let periods = In::<T>::new("period", &periods)?;
        let durations = In::<T>::new("duration", &durations)?;
        let op = BlsSearchBatch {
            batch: BlsBatch {
                t: t.values(),
                y: y.values(),
                dy: dy.as_ref().map(In::values),
                offsets: offsets.values(),
            },
            periods: periods.values(),
            durations: durations.values(),
            opts,
        };
        let n = op.periods.len();
        let r = py.detach(|| kp.run(op)).map_err(to_py)?;
        let nseries = r.len();
        fields(py, r, &[nseries, n])
    })
}
