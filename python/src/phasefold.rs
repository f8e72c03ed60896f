//! The phase-folding period searches, phase dispersion minimisation (PDM)
//! and conditional entropy (CE): one series or a ragged batch, on a
//! frequency array or a uniform grid, host arrays; of a batch also only the
//! best peaks of each series. One entry point serves both statistics and
//! every shape of call, so every call's arrays are converted by the same
//! code.
use numpy::{IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kernpack::api::phasefold::{
    CeOptions, FoldBatch, FoldSeries, PdmOptions, Peak, PeakOptions, PhaseFold, PhaseFoldBatch,
    PhaseFoldBatchPeaks, Statistic,
};
use kernpack::params::peaks::write_peaks;

use crate::arrays::{by_dtype, Dtype, In};
use crate::lombscargle_chi2::Freqs;
use crate::{to_py, Context};

/// The statistic of a call: `("pdm", (bins,))` or `("ce", (phase_bins,
/// mag_bins, phase_overlap, mag_overlap))`; the operation checks the ranges.
pub(crate) struct Stat(Statistic);

impl<'a, 'py> FromPyObject<'a, 'py> for Stat {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let (name, args): (String, Vec<usize>) = obj.extract()?;
        let statistic = match (name.as_str(), args.as_slice()) {
            ("pdm", &[bins]) => Statistic::Pdm(PdmOptions { bins }),
            ("ce", &[phase_bins, mag_bins, phase_overlap, mag_overlap]) => {
                Statistic::ConditionalEntropy(CeOptions {
                    phase_bins,
                    mag_bins,
                    phase_overlap,
                    mag_overlap,
                })
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "statistic {name:?} with {} options: expected ('pdm', (bins,)) or \
                     ('ce', (phase_bins, mag_bins, phase_overlap, mag_overlap))",
                    args.len()
                )))
            }
        };
        Ok(Stat(statistic))
    }
}

/// The statistic of the samples `(t, y, dy or None)` (float arrays of one
/// dtype) at each of `freqs` (an array of that dtype, or the uniform grid
/// `(f0, df, nf)`). Without `offsets`, one series: a new 1-D array of `nf`
/// values of that dtype. With `offsets` (uintp, nseries + 1, at least one
/// series), a ragged batch: a new (nseries, nf) array; or with `peaks = (k,
/// separation)` too, only each series' best `k` peaks, the lowest distinct
/// minima of its statistic, each at least `separation` (in the
/// frequencies' unit) from those before it (`kernpack::params::peaks`), as
/// `(index, value)`: new (nseries, k) int64 and float64 arrays, -1 and NaN
/// past a series' last peak (on a GPU only the peaks leave the device).
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, offsets, freqs, statistic, peaks = None))]
pub(crate) fn phase_fold<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    offsets: Option<Bound<'py, PyUntypedArray>>,
    freqs: Freqs<'py>,
    statistic: Stat,
    peaks: Option<(usize, f64)>,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, statistic) = (t.py(), &ctx.kp, statistic.0);
    let peaks = peaks.map(|(k, separation)| PeakOptions { k, separation });
    let offsets = offsets
        .as_ref()
        .map(|o| In::<usize>::new("offsets", o))
        .transpose()?;
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let (t, y, dy) = (t.values(), y.values(), dy.as_ref().map(In::values));
        let freqs = freqs.read::<T>()?;
        let (nf, freqs) = (freqs.len(), freqs.get());
        let Some(offsets) = offsets else {
            if peaks.is_some() {
                return Err(PyValueError::new_err("peaks are taken of a batch: pass offsets"));
            }
            let op = PhaseFold { series: FoldSeries { t, y, dy }, freqs, statistic };
            let values = py.detach(|| kp.run(op)).map_err(to_py)?;
            return Ok(values.into_pyarray(py).into_any());
        };
        let batch = FoldBatch { t, y, dy, offsets: offsets.values() };
        if let Some(peaks) = peaks {
            let op = PhaseFoldBatchPeaks { batch, freqs, statistic, peaks };
            let rows = py.detach(|| kp.run(op)).map_err(to_py)?;
            return peak_arrays(py, &rows, peaks.k);
        }
        let op = PhaseFoldBatch { batch, freqs, statistic };
        let rows = py.detach(|| kp.run(op)).map_err(to_py)?;
        let nseries = rows.len();
        let flat: Vec<T> = rows.into_iter().flatten().collect();
        Ok(flat.into_pyarray(py).reshape([nseries, nf])?.into_any())
    })
}

/// Rows of at most `k` peaks as `(index, value)`, (nseries, k) int64 and
/// float64 arrays padded with -1 and NaN (also the Lomb-Scargle batch's).
pub(crate) fn peak_arrays<'py>(
    py: Python<'py>,
    rows: &[Vec<Peak>],
    k: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let (mut index, mut value) = (vec![0i64; rows.len() * k], vec![0.0; rows.len() * k]);
    write_peaks(rows, k, &mut index, &mut value);
    let shape = [rows.len(), k];
    let index = index.into_pyarray(py).reshape(shape)?;
    let value = value.into_pyarray(py).reshape(shape)?;
    Ok((index, value).into_pyobject(py)?.into_any())
}
