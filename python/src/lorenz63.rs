//! Lorenz 63 ensembles: host arrays through the safe API, device arrays
//! through the device description.
use std::marker::PhantomData;

use numpy::{Element, IntoPyArray, Ix2, PyArrayMethods, PyUntypedArray};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kernpack::api::lorenz63::{check_save_at as check_steps, Lorenz63DeviceBuffers};
use kernpack::{Lorenz63Ensemble, Lorenz63OnDevice, Lorenz63Params, PerMember};

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
