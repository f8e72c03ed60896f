//! The significance of periodogram peaks: the analytic false-alarm
//! probabilities and levels (pure functions of the times and errors), and
//! the bootstrap's maxima (an operation on the context's backend).
use numpy::{IntoPyArray, PyUntypedArray};
use pyo3::prelude::*;

use kernpack::api::lombscargle::bootstrap::BootstrapOptions;
use kernpack::params::significance::{false_alarm_level, false_alarm_probability};
use kernpack::{FapMethod, PowerNormalization};

use crate::arrays::{by_dtype, Dtype, In};
use crate::{to_py, Context};

/// The analytic FAP of each power in `values` (`inverse` false), or the
/// level of each probability (`inverse` true); float64 arrays in and out.
#[pyfunction]
#[pyo3(signature = (values, fmax, t, dy, normalization, method, inverse))]
pub(crate) fn false_alarm<'py>(
    values: &Bound<'py, PyUntypedArray>,
    fmax: f64,
    t: &Bound<'py, PyUntypedArray>,
    dy: Option<&Bound<'py, PyUntypedArray>>,
    normalization: &str,
    method: &str,
    inverse: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let py = values.py();
    let normalization: PowerNormalization = normalization.parse().map_err(to_py)?;
    let method: FapMethod = method.parse().map_err(to_py)?;
    let name = if inverse {
        "false_alarm_probability"
    } else {
        "Z"
    };
    let values = In::<f64>::new(name, values)?;
    let t = In::<f64>::new("t", t)?;
    let dy = dy.map(|d| In::<f64>::new("dy", d)).transpose()?;
    let dy = dy.as_ref().map(In::values);
    let out = if inverse {
        false_alarm_level(values.values(), fmax, t.values(), dy, normalization, method)
    } else {
        false_alarm_probability(values.values(), fmax, t.values(), dy, normalization, method)
    }
    .map_err(to_py)?;
    Ok(out.into_pyarray(py).into_any())
}

/// The maxima of `resamples` bootstrap periodograms of `(t, y, dy)`, in copy
/// order (`Kernpack::lombscargle_bootstrap`), as a new float64 array.
#[pyfunction]
#[pyo3(signature = (ctx, t, y, dy, fmax, normalization, resamples, seed, samples_per_peak))]
pub(crate) fn lombscargle_bootstrap<'py>(
    ctx: &Context,
    t: &Bound<'py, PyUntypedArray>,
    y: &Bound<'py, PyUntypedArray>,
    dy: Option<&Bound<'py, PyUntypedArray>>,
    fmax: f64,
    normalization: &str,
    resamples: usize,
    seed: u64,
    samples_per_peak: f64,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp) = (t.py(), &ctx.kp);
    let normalization: PowerNormalization = normalization.parse().map_err(to_py)?;
    let opts = BootstrapOptions {
        resamples,
        seed,
        samples_per_peak,
    };
    let maxima = by_dtype!(Dtype::of("t", t)?, T => {
        let (t, y) = (In::<T>::new("t", t)?, In::<T>::new("y", y)?);
        let dy = dy.map(|d| In::<T>::new("dy", d)).transpose()?;
        let (t, y, dy) = (t.values(), y.values(), dy.as_ref().map(In::values));
        py.detach(|| kp.lombscargle_bootstrap(t, y, dy, fmax, normalization, &opts))
    })
    .map_err(to_py)?;
    Ok(maxima.into_pyarray(py).into_any())
}
