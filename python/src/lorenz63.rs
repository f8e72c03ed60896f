//! Lorenz 63 ensembles, fixed-step and adaptive: host arrays through the safe API, device arrays
//! through the device description.
use std::marker::PhantomData;

use numpy::{Element, IntoPyArray, Ix2, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kernpack::api::exec::Operation;
use kernpack::api::lorenz63::{
    check_save_at as check_steps, Lorenz63AdaptiveDeviceBuffers, Lorenz63AdaptiveRun,
    Lorenz63DeviceBuffers,
};
use kernpack::{
    AdaptiveControl, Lorenz63AdaptiveEnsemble, Lorenz63AdaptiveOnDevice, Lorenz63AdaptiveParams,
    Lorenz63Ensemble, Lorenz63OnDevice, Lorenz63Params, PerMember,
};

use crate::arrays::{by_dtype, Dtype, In};
use crate::{to_py, Context};

/// sigma, rho, beta: the shared values, used where no array is given.
type Shared = (f64, f64, f64);

/// A parameter's array, if given, as a view of `T` values.
fn each<'py, T: Element>(
    name: &str,
    array: Option<&Bound<'py, PyUntypedArray>>,
) -> PyResult<Option<In<'py, T>>> {
    array.map(|a| In::<T>::new(name, a)).transpose()
}

fn pick<'a, T: Element>(given: &'a Option<In<'_, T>>, all: f64) -> PerMember<&'a [T]> {
    match given {
        Some(values) => PerMember::Each(values.values()),
        None => PerMember::All(all),
    }
}

/// Checks `save_at` (sorted, unique, each in 0..=steps) as a run would,
/// without running anything: ValueError with the run's message otherwise
/// (for kernpack.dask, which checks before it builds the graph).
#[pyfunction]
pub(crate) fn check_save_at(save_at: Vec<u64>, steps: u64) -> PyResult<()> {
    check_steps(&save_at, steps).map_err(to_py)
}

/// A run on the host array `initial` (members x 3, float32 or float64);
/// `sigma`, `rho`, `beta` arrays of `members` values of that dtype, or None
/// for the `shared` value. Returns the final states (members x 3) and, with
/// a non-empty `save_at`, the saved states (len(save_at) x members x 3).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lorenz63<'py>(
    ctx: &Context,
    initial: &Bound<'py, PyUntypedArray>,
    shared: Shared,
    sigma: Option<&Bound<'py, PyUntypedArray>>,
    rho: Option<&Bound<'py, PyUntypedArray>>,
    beta: Option<&Bound<'py, PyUntypedArray>>,
    dt: f64,
    steps: u64,
    save_at: Vec<u64>,
) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
    let (py, kp) = (initial.py(), &ctx.kp);
    by_dtype!(Dtype::of("initial", initial)?, T => {
        let initial = In::<T, Ix2>::new("initial", initial)?;
        if initial.shape()[1] != 3 {
            return Err(PyValueError::new_err(format!(
                "initial must be (members, 3) states, got shape {:?}", initial.shape()
            )));
        }
        let (sigma, rho, beta) = (each::<T>("sigma", sigma)?, each::<T>("rho", rho)?, each::<T>("beta", beta)?);
        let p = Lorenz63Params {
            sigma: pick(&sigma, shared.0),
            rho: pick(&rho, shared.1),
            beta: pick(&beta, shared.2),
            dt,
        };
        let initial = initial.values();
        let run: Lorenz63Ensemble<T> = py
            .detach(|| kp.lorenz63(&p, initial, steps, &save_at))
            .map_err(to_py)?;
        let members = run.members;
        let frames = run.save_at.len();
        // The run's vectors become the arrays (no copy).
        let last = run.final_state.into_pyarray(py).reshape([members, 3])?;
        let saved = match frames {
            0 => None,
            _ => Some(run.saved.into_pyarray(py).reshape([frames, members, 3])?.into_any()),
        };
        Ok((last.into_any(), saved))
    })
}

/// As [`lorenz63`], on device buffers (addresses; a parameter's None: the
/// shared value), enqueued on `stream`; `saved` given with a non-empty
/// `save_at`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lorenz63_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    initial: u64,
    members: usize,
    shared: Shared,
    sigma: Option<u64>,
    rho: Option<u64>,
    beta: Option<u64>,
    dt: f64,
    steps: u64,
    save_at: Vec<u64>,
    out: u64,
    saved: Option<u64>,
    stream: usize,
) -> PyResult<()> {
    let pick = |v: Option<u64>, all| v.map_or(PerMember::All(all), PerMember::Each);
    let p = Lorenz63Params {
        sigma: pick(sigma, shared.0),
        rho: pick(rho, shared.1),
        beta: pick(beta, shared.2),
        dt,
    };
    let buffers = Lorenz63DeviceBuffers {
        initial,
        out,
        saved: saved.filter(|_| !save_at.is_empty()),
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        by_dtype!(dtype, T => {
            let op = Lorenz63OnDevice::<T> {
                p,
                buffers,
                members,
                steps,
                save_at,
                dtype: PhantomData,
            };
            // SAFETY: the addresses are the caller's device arrays, checked
            // against the driver's record before the launch.
            unsafe { gpu.enqueue(stream, &op) }
        })
    })
}

/// (rtol, atol, first_step (None: chosen per member), max_step, max_steps).
type Control = (f64, f64, Option<f64>, f64, u32);

fn adaptive_params<V>(
    shared: Shared,
    each: [Option<V>; 3],
    t_span: (f64, f64),
    control: Control,
) -> Lorenz63AdaptiveParams<V> {
    let [sigma, rho, beta] = each;
    let pick = |v: Option<V>, all| v.map_or(PerMember::All(all), PerMember::Each);
    Lorenz63AdaptiveParams {
        sigma: pick(sigma, shared.0),
        rho: pick(rho, shared.1),
        beta: pick(beta, shared.2),
        t0: t_span.0,
        t_end: t_span.1,
        control: AdaptiveControl {
            rtol: control.0,
            atol: control.1,
            first_step: control.2,
            max_step: control.3,
            max_steps: control.4,
        },
    }
}

/// Checks an adaptive run's shared values, time span, step control and
/// save times as a run would, without running anything: ValueError with the
/// run's message otherwise (for kernpack.dask, which checks before it
/// builds the graph; the states and per-member values come with the blocks).
#[pyfunction]
pub(crate) fn check_lorenz63_adaptive(
    shared: Shared,
    t_span: (f64, f64),
    control: Control,
    save_times: Vec<f64>,
) -> PyResult<()> {
    let run = Lorenz63AdaptiveRun {
        params: adaptive_params::<&[f64]>(shared, [None, None, None], t_span, control),
        initial: &[0.0; 3],
        save_times: &save_times,
    };
    run.validate().map_err(to_py)
}

/// The final states, the saved states (if any) and the stats.
type AdaptiveArrays<'py> = (
    Bound<'py, PyAny>,
    Option<Bound<'py, PyAny>>,
    Bound<'py, PyAny>,
);

/// An adaptive run on the host array `initial` (members x 3, float32 or
/// float64), parameters as [`lorenz63`]. Returns the states at t_end, the
/// saved states (len(save_times) x members x 3) with save times, and the
/// members x 3 int32 stats (accepted, rejected, status).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lorenz63_adaptive<'py>(
    ctx: &Context,
    initial: &Bound<'py, PyUntypedArray>,
    shared: Shared,
    sigma: Option<&Bound<'py, PyUntypedArray>>,
    rho: Option<&Bound<'py, PyUntypedArray>>,
    beta: Option<&Bound<'py, PyUntypedArray>>,
    t_span: (f64, f64),
    control: Control,
    save_times: Vec<f64>,
) -> PyResult<AdaptiveArrays<'py>> {
    let (py, kp) = (initial.py(), &ctx.kp);
    by_dtype!(Dtype::of("initial", initial)?, T => {
        let initial = In::<T, Ix2>::new("initial", initial)?;
        if initial.shape()[1] != 3 {
            return Err(PyValueError::new_err(format!(
                "initial must be (members, 3) states, got shape {:?}", initial.shape()
            )));
        }
        let (sigma, rho, beta) = (each::<T>("sigma", sigma)?, each::<T>("rho", rho)?, each::<T>("beta", beta)?);
        let each = [&sigma, &rho, &beta].map(|v| v.as_ref().map(|v| v.values()));
        let p = adaptive_params(shared, each, t_span, control);
        let initial = initial.values();
        let run: Lorenz63AdaptiveEnsemble<T> = py
            .detach(|| kp.lorenz63_adaptive(&p, initial, &save_times))
            .map_err(to_py)?;
        let members = run.members;
        let frames = run.save_times.len();
        // Counts are at most max_steps, which the Python layer keeps below 2^31.
        let stats: Vec<i32> = (0..members)
            .flat_map(|m| [run.accepted[m] as i32, run.rejected[m] as i32, run.status[m] as i32])
            .collect();
        let last = run.final_state.into_pyarray(py).reshape([members, 3])?;
        let saved = match frames {
            0 => None,
            _ => Some(run.saved.into_pyarray(py).reshape([frames, members, 3])?.into_any()),
        };
        let stats = stats.into_pyarray(py).reshape([members, 3])?;
        Ok((last.into_any(), saved, stats.into_any()))
    })
}

/// As [`lorenz63_adaptive`], on device buffers (addresses; a parameter's
/// None: the shared value), enqueued on `stream`; `saved` given with
/// non-empty `save_times`, `stats` members x 3 int32 (or None).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lorenz63_adaptive_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    initial: u64,
    members: usize,
    shared: Shared,
    sigma: Option<u64>,
    rho: Option<u64>,
    beta: Option<u64>,
    t_span: (f64, f64),
    control: Control,
    save_times: Vec<f64>,
    out: u64,
    saved: Option<u64>,
    stats: Option<u64>,
    stream: usize,
) -> PyResult<()> {
    let p = adaptive_params(shared, [sigma, rho, beta], t_span, control);
    let buffers = Lorenz63AdaptiveDeviceBuffers {
        initial,
        out,
        saved: saved.filter(|_| !save_times.is_empty()),
        stats,
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        by_dtype!(dtype, T => {
            let op = Lorenz63AdaptiveOnDevice::<T> {
                p,
                buffers,
                members,
                save_times,
                dtype: PhantomData,
            };
            // SAFETY: the addresses are the caller's device arrays, checked
            // against the driver's record before the launch.
            unsafe { gpu.enqueue(stream, &op) }
        })
    })
}
