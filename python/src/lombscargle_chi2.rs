//! The multi-term periodogram (astropy's `chi2` semantics): one series on
//! a frequency array or a uniform grid, and ragged batches, host arrays.
use numpy::{Element, IntoPyArray, PyArrayMethods, PyUntypedArray};
use pyo3::prelude::*;

use kernpack::api::lombscargle::batch::BatchGrid;
use kernpack::api::lombscargle::bootstrap::BootstrapOptions;
use kernpack::api::lombscargle::chi2::{
    Chi2Batch, Chi2Freqs, Chi2Options, Chi2Series, LombScargleChi2, PeakOptions, Refine,
    RefinedPeak, RefinedPeakOptions, UniformGrid,
};
use kernpack::params::peaks::write_padded;

use crate::arrays::{by_dtype, Dtype, In};
use crate::{to_py, Context};

/// `(nterms, fit_mean, center_data, normalization)`.
type Options = (usize, bool, bool, String);

fn options((nterms, fit_mean, center_data, normalization): Options) -> PyResult<Chi2Options> {
    Ok(Chi2Options {
        nterms,
        fit_mean,
        center_data,
        normalization: normalization.parse().map_err(to_py)?,
    })
}

/// Frequencies: an array, or the uniform grid `(f0, df, nf)`.
#[derive(FromPyObject)]
pub(crate) enum Freqs<'py> {
    Array(Bound<'py, PyUntypedArray>),
    Uniform(f64, f64, usize),
}

/// [`Freqs`] checked: an array of `T` borrowed from NumPy, or the grid.
pub(crate) enum FreqsIn<'py, T: Element> {
    Array(In<'py, T>),
    Uniform(UniformGrid),
}

impl<'py> Freqs<'py> {
    /// The array checked as an array of `T` (named "frequency" in errors).
    pub(crate) fn read<T: Element>(&self) -> PyResult<FreqsIn<'py, T>> {
        Ok(match self {
            Freqs::Array(f) => FreqsIn::Array(In::new("frequency", f)?),
            Freqs::Uniform(f0, df, nf) => FreqsIn::Uniform(UniformGrid::new(*f0, *df, *nf)),
        })
    }
}

impl<T: Element> FreqsIn<'_, T> {
    /// The frequencies as the API takes them, borrowed from `self`.
    pub(crate) fn get(&self) -> Chi2Freqs<'_, T> {
        match self {
            FreqsIn::Array(f) => Chi2Freqs::Array(f.values()),
            FreqsIn::Uniform(grid) => Chi2Freqs::Uniform(*grid),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            FreqsIn::Array(f) => f.values().len(),
            FreqsIn::Uniform(grid) => grid.nf,
        }
    }
}

/// A batch's grids from float64 arrays of `f0` and `df`: one value each is
/// the grid every series shares, else one per series.
pub(crate) fn batch_grid<'a>(f0: &'a In<'_, f64>, df: &'a In<'_, f64>, nf: usize) -> BatchGrid<'a> {
    if f0.values().len() == 1 && df.values().len() == 1 {
        BatchGrid::Shared(UniformGrid::new(f0.values()[0], df.values()[0], nf))
    } else {
        BatchGrid::PerSeries {
            f0: f0.values(),
            df: df.values(),
            nf,
        }
    }
}

/// A batch's peak search: `(k, separation, refine or None, fap method or
/// None)`, `refine` as `(points, steps)`.
pub(crate) type Search = (usize, f64, Option<(usize, usize)>, Option<String>);

pub(crate) fn search_options((k, separation, refine, fap): Search) -> PyResult<RefinedPeakOptions> {
    Ok(RefinedPeakOptions {
        peaks: PeakOptions { k, separation },
        refine: refine.map(|(points, steps)| Refine { points, steps }),
        fap: fap.map(|m| m.parse()).transpose().map_err(to_py)?,
    })
}

/// Each series' peaks as `(index, frequency, power, fap)`, (nseries, k)
/// int64 and float64 arrays: -1 and NaN past a series' last peak, NaN FAPs
/// where none was asked for.
pub(crate) fn refined_peak_arrays<'py>(
    py: Python<'py>,
    rows: &[Vec<RefinedPeak>],
    k: usize,
) -> PyResult<Bound<'py, PyAny>> {
    let len = rows.len() * k;
    let column = |of: fn(&RefinedPeak) -> f64| -> PyResult<Bound<'py, PyAny>> {
        let mut out = vec![0.0; len];
        write_padded(&mut out, k, rows.iter().map(|r| r.iter().map(of)), f64::NAN);
        Ok(out.into_pyarray(py).reshape([rows.len(), k])?.into_any())
    };
    let mut index = vec![0i64; len];
    let indices = rows.iter().map(|r| r.iter().map(|p| p.index as i64));
    write_padded(&mut index, k, indices, -1);
    let index = index.into_pyarray(py).reshape([rows.len(), k])?.into_any();
    let arrays = (
        index,
        column(|p| p.frequency)?,
        column(|p| p.power)?,
        column(|p| p.fap.unwrap_or(f64::NAN))?,
    );
    Ok(arrays.into_pyobject(py)?.into_any())
}

/// One series `(t, y, dy or None)` of one float dtype. Returns the power at
/// each frequency as a new 1-D array of that dtype.
#[pyfunction]
pub(crate) fn lombscargle_chi2<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
    freqs: Freqs<'py>,
    opts: Options,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let series = Chi2Series { t: t.values(), y: y.values(), dy: dy.as_ref().map(In::values) };
        let freqs = freqs.read::<T>()?;
        let op = LombScargleChi2 { series, freqs: freqs.get(), opts };
        let p = py.detach(|| kp.run(op)).map_err(to_py)?;
        Ok(p.into_pyarray(py).into_any())
    })
}

/// A ragged batch `(t, y, dy or None)` with `offsets` (uintp, nseries + 1)
/// on uniform grids `(f0, df, nf)` (float64 arrays of one value, shared, or
/// one per series). Returns a new (nseries, nf) array; or with `search`
/// only each series' best peaks, refined and with FAPs as it asks (on a GPU
/// only the peaks leave the device), as [`refined_peak_arrays`].
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, offsets, grids, opts, search = None))]
#[allow(clippy::too_many_arguments)] // the batch's arrays, its grids and options
pub(crate) fn lombscargle_chi2_batch<'py>(
    ctx: &Context,
    t: Bound<'py, PyUntypedArray>,
    y: Bound<'py, PyUntypedArray>,
    dy: Option<Bound<'py, PyUntypedArray>>,
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
    let (f0, df, nf) = grids;
    let (f0, df) = (In::<f64>::new("f0", &f0)?, In::<f64>::new("df", &df)?);
    let grids = batch_grid(&f0, &df, nf);
    by_dtype!(Dtype::of("t", &t)?, T => {
        let (t, y) = (In::<T>::new("t", &t)?, In::<T>::new("y", &y)?);
        let dy = dy.as_ref().map(|d| In::<T>::new("dy", d)).transpose()?;
        let batch = Chi2Batch {
            t: t.values(),
            y: y.values(),
            dy: dy.as_ref().map(In::values),
            offsets: offsets.values(),
        };
        if let Some(search) = search {
            let rows = py
                .detach(|| kp.lombscargle_chi2_batch_refined_peaks(&batch, &grids, &opts, &search))
                .map_err(to_py)?;
            return refined_peak_arrays(py, &rows, search.peaks.k);
        }
        let p = py.detach(|| kp.lombscargle_chi2_batch(&batch, &grids, &opts)).map_err(to_py)?;
        let nseries = p.len();
        let flat: Vec<T> = p.into_iter().flatten().collect();
        let array = flat.into_pyarray(py).reshape([nseries, nf])?;
        Ok(array.into_any())
    })
}

/// The maxima of `resamples` resampled multi-term periodograms of `(t, y,
/// dy)` up to `fmax`, in copy order (`Kernpack::lombscargle_chi2_bootstrap`),
/// as a new float64 array.
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, fmax, opts, resamples, seed, samples_per_peak))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lombscargle_chi2_bootstrap<'py>(
    ctx: &Context,
    t: &Bound<'py, PyUntypedArray>,
    y: &Bound<'py, PyUntypedArray>,
    dy: Option<&Bound<'py, PyUntypedArray>>,
    fmax: f64,
    opts: Options,
    resamples: usize,
    seed: u64,
    samples_per_peak: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp, opts) = (t.py(), &ctx.kp, options(opts)?);
    let boot = BootstrapOptions {
        resamples,
        seed,
        samples_per_peak,
    };
    let maxima = by_dtype!(Dtype::of("t", t)?, T => {
        let (t, y) = (In::<T>::new("t", t)?, In::<T>::new("y", y)?);
        let dy = dy.map(|d| In::<T>::new("dy", d)).transpose()?;
        let series = Chi2Series { t: t.values(), y: y.values(), dy: dy.as_ref().map(In::values) };
        py.detach(|| kp.lombscargle_chi2_bootstrap(&series, fmax, &opts, &boot))
    })
    .map_err(to_py)?;
    Ok(maxima.into_pyarray(py).into_any())
}
