//! ODE integration kept on the device: Lorenz 96 and Lorenz 2005 ensembles,
//! the periodic window sum they use, and the coupled F/G system.
use std::marker::PhantomData;

use numpy::{IntoPyArray, Ix2, Ix3, PyArrayMethods, PyUntypedArray};
use pyo3::prelude::*;
use pyo3::types::PyComplex;

use kernpack::api::fg::{complexes, interleaved};
use kernpack::api::lorenz::{frame_count, EnsembleDeviceBuffers, EnsembleRun};
use kernpack::{
    Complex, Ensemble, FgOnDevice, FgOptions, Float, Lorenz05Model, Lorenz05OnDevice,
    Lorenz05Params, Lorenz96OnDevice, Lorenz96Params, MemberParams, WindowSumOnDevice,
};

use crate::arrays::{by_dtype, Dtype, In};
use crate::{to_py, Context};

/// Frames a run of `steps` stores with a trajectory every `every` steps
/// (0 without a trajectory).
#[pyfunction(name = "frame_count")]
pub(crate) fn frames(steps: u64, every: u64) -> usize {
    frame_count(steps, every)
}

/// Lorenz 96 (`model` 96) or Lorenz 2005 (`model` 2 or 3) parameters.
#[derive(Clone, Copy)]
enum Model {
    L96(Lorenz96Params),
    L05(Lorenz05Params),
}

/// A model as a call names it: a dict of `model` (96, 2 or 3), `forcing`,
/// `dt`, Lorenz 2005's `k`, `j`, `b`, `c` (ignored by 96) and Lorenz 96's
/// `forcing_in_state`, `noise`, `seed`, `member_offset`, `step_offset`
/// (ignored by 2005).
#[derive(FromPyObject, Clone, Copy)]
#[pyo3(from_item_all)]
pub(crate) struct ModelArgs {
    model: i64,
    forcing: f64,
    dt: f64,
    k: usize,
    j: usize,
    b: f64,
    c: f64,
    forcing_in_state: bool,
    noise: f64,
    seed: u64,
    member_offset: u64,
    step_offset: u64,
}

impl ModelArgs {
    /// The model of states of `n` values per member.
    fn of_size(self, n: usize) -> PyResult<Model> {
        let (forcing, dt) = (self.forcing, self.dt);
        if self.model == 96 {
            let in_state = self.forcing_in_state;
            if in_state && n % 2 != 0 {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "with the forcing in the state a member holds 2N values (X, then F), got {n}"
                )));
            }
            return Ok(Model::L96(Lorenz96Params {
                n: if in_state { n / 2 } else { n },
                forcing,
                dt,
                forcing_in_state: in_state,
                noise: self.noise,
                seed: self.seed,
                member_offset: self.member_offset,
                step_offset: self.step_offset,
            }));
        }
        Ok(Model::L05(Lorenz05Params {
            model: Lorenz05Model::from_number(self.model).map_err(to_py)?,
            n,
            forcing,
            dt,
            k: self.k,
            j: self.j,
            b: self.b,
            c: self.c,
        }))
    }
}

/// Lorenz 2005's per-member F, b, c of a host call: arrays of `members`
/// values of the states' dtype, or None for the value in the model.
type HostEach<'py> = (
    Option<Bound<'py, PyUntypedArray>>,
    Option<Bound<'py, PyUntypedArray>>,
    Option<Bound<'py, PyUntypedArray>>,
);

/// An ensemble run on the host array `initial` (members x n, float32 or
/// float64); `each`: Lorenz 2005's F, b, c per member (see [`HostEach`];
/// Lorenz 96 takes none). Returns the final states (members x n) and, with
/// every > 0, the trajectory (frame_count(steps, every) x members x n), with
/// a non-empty `save_at` the states after those steps (len(save_at) x
/// members x n; not with every > 0), as new arrays of that dtype.
#[pyfunction]
#[pyo3(signature = (ctx, model_args, initial, steps, every, save_at, each = (None, None, None)))]
pub(crate) fn ensemble<'py>(
    ctx: &Context,
    model_args: ModelArgs,
    initial: &Bound<'py, PyUntypedArray>,
    steps: u64,
    every: u64,
    save_at: Vec<u64>,
    each: HostEach<'py>,
) -> PyResult<(Bound<'py, PyAny>, Option<Bound<'py, PyAny>>)> {
    let (py, kp) = (initial.py(), &ctx.kp);
    by_dtype!(Dtype::of("initial", initial)?, T => {
        let initial = In::<T, Ix2>::new("initial", initial)?;
        let m = model_args.of_size(initial.shape()[1])?;
        let view = |name, a: &Option<Bound<'py, PyUntypedArray>>| a.as_ref().map(|a| In::<T>::new(name, a)).transpose();
        let views = MemberParams { forcing: view("forcing", &each.0)?, b: view("b", &each.1)?, c: view("c", &each.2)? };
        let given = views.as_ref().map(|v| v.values());
        let initial = initial.values();
        let save_at = &save_at[..];
        let run: Ensemble<T> = py
            .detach(|| match m {
                // Lorenz 96 refuses per-member values (the run's check says why).
                Model::L96(p) => kp.run(EnsembleRun { params: &p, each: given, initial, steps, every, save_at }),
                Model::L05(p) => kp.run(EnsembleRun { params: &p, each: given, initial, steps, every, save_at }),
            })
            .map_err(to_py)?;
        let [members, n, frames] = [run.members, run.n, run.frames()];
        // The run's vectors become the arrays (no copy).
        let last = run.final_state.into_pyarray(py).reshape([members, n])?;
        let trajectory = run
            .trajectory
            .map(|t| t.into_pyarray(py).reshape([frames, members, n]))
            .transpose()?;
        Ok((last.into_any(), trajectory.map(Bound::into_any)))
    })
}

/// Lorenz 96's tangent linear model on host arrays: `initial` (members x n)
/// and `perturbations` (members x k x n) of one dtype. Returns the final
/// states and the propagated perturbations, as new arrays of that shape.
#[pyfunction]
pub(crate) fn lorenz96_tangent<'py>(
    ctx: &Context,
    model_args: ModelArgs,
    initial: &Bound<'py, PyUntypedArray>,
    perturbations: &Bound<'py, PyUntypedArray>,
    steps: u64,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (py, kp) = (initial.py(), &ctx.kp);
    by_dtype!(Dtype::of("initial", initial)?, T => {
        let initial = In::<T, Ix2>::new("initial", initial)?;
        let perturbations = In::<T, Ix3>::new("perturbations", perturbations)?;
        let (shape, vshape) = (initial.shape(), perturbations.shape());
        let (members, n, vm, k, vn) = (shape[0], shape[1], vshape[0], vshape[1], vshape[2]);
        if (vm, vn) != (members, n) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "perturbations must be (members, k, N) = ({members}, k, {n}), got ({vm}, {k}, {vn})"
            )));
        }
        let Model::L96(p) = model_args.of_size(n)? else {
            unreachable!("the Python side asks for model 96")
        };
        let (initial, perturbations) = (initial.values(), perturbations.values());
        let run = py
            .detach(|| kp.lorenz96_tangent(&p, initial, perturbations, steps))
            .map_err(to_py)?;
        let states = run.final_state.into_pyarray(py).reshape([members, n])?;
        let vectors = run.perturbations.into_pyarray(py).reshape([members, k, n])?;
        Ok((states.into_any(), vectors.into_any()))
    })
}

/// As [`ensemble`], on device buffers, enqueued on `stream`: `shape` is
/// `(members, n)`, `trajectory` given with every > 0 or a non-empty
/// `save_at`; `each`: Lorenz 2005's F, b, c per member as device addresses
/// of `members` values of `dtype` (None: the model's value).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (ctx, dtype, model_args, initial, shape, steps, every, save_at, out, trajectory, stream, each = (None, None, None)))]
pub(crate) fn ensemble_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    model_args: ModelArgs,
    initial: u64,
    shape: (usize, usize),
    steps: u64,
    every: u64,
    save_at: Vec<u64>,
    out: u64,
    trajectory: Option<u64>,
    stream: usize,
    each: (Option<u64>, Option<u64>, Option<u64>),
) -> PyResult<()> {
    let each = MemberParams {
        forcing: each.0,
        b: each.1,
        c: each.2,
    };
    let (members, n) = shape;
    let m = model_args.of_size(n)?;
    let trajectory = trajectory.filter(|_| every > 0 || !save_at.is_empty());
    let buffers = EnsembleDeviceBuffers {
        initial,
        out,
        trajectory,
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        by_dtype!(dtype, T => {
            // SAFETY: checked device allocations of the stated lengths.
            match m {
                Model::L96(p) => unsafe {
                    let save_at = save_at.clone();
                    let op = Lorenz96OnDevice::<T> { buffers, each, members, save_at, ..Lorenz96OnDevice::new(p, steps, every) };
                    gpu.enqueue(stream, &op)
                },
                Model::L05(p) => unsafe {
                    let save_at = save_at.clone();
                    let op = Lorenz05OnDevice::<T> { buffers, each, members, save_at, ..Lorenz05OnDevice::new(p, steps, every) };
                    gpu.enqueue(stream, &op)
                },
            }
        })
    })
}

/// Periodic weighted window sums of each row of the host array `x` (rows x
/// n, float32 or float64) with the weights `w` (its dtype). Returns a new
/// rows x n array.
#[pyfunction]
pub(crate) fn window_sum<'py>(
    ctx: &Context,
    x: &Bound<'py, PyUntypedArray>,
    w: &Bound<'py, PyUntypedArray>,
) -> PyResult<Bound<'py, PyAny>> {
    let (py, kp) = (x.py(), &ctx.kp);
    by_dtype!(Dtype::of("x", x)?, T => {
        let (x, w) = (In::<T, Ix2>::new("x", x)?, In::<T>::new("w", w)?);
        let [rows, n] = [x.shape()[0], x.shape()[1]];
        let (x, w) = (x.values(), w.values());
        let out = py.detach(|| kp.window_sum(x, w, rows, n)).map_err(to_py)?;
        Ok(out.into_pyarray(py).reshape([rows, n])?.into_any())
    })
}

/// As [`window_sum`], on device buffers, enqueued on `stream`.
#[pyfunction]
pub(crate) fn window_sum_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    x: u64,
    w: u64,
    w_len: usize,
    rows: usize,
    n: usize,
    out: u64,
    stream: usize,
) -> PyResult<()> {
    ctx.enqueue(py, stream, |gpu, stream| {
        // SAFETY: checked device allocations of the stated lengths.
        by_dtype!(dtype, T => unsafe {
            gpu.enqueue(stream, &WindowSumOnDevice::<T> { x, w, w_len, out, rows, n, pitch: n, dtype: PhantomData })
        })
    })
}

/// The coupled F/G system on the host arrays `f`, `g`: N x N complex
/// values as N x 2N floats (re and im interleaved, float32 or float64).
/// Returns the final F and G and delta (nsteps + 1 values), as new arrays
/// of interleaved values of that dtype (the Python layer views them as
/// complex).
#[pyfunction]
pub(crate) fn fg_integrate<'py>(
    ctx: &Context,
    f: &Bound<'py, PyUntypedArray>,
    g: &Bound<'py, PyUntypedArray>,
    delta0: &Bound<'py, PyComplex>,
    dt: f64,
    nsteps: usize,
    path: &str,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    let (py, kp) = (f.py(), &ctx.kp);
    let opts = FgOptions {
        path: path.parse().map_err(to_py)?,
    };
    by_dtype!(Dtype::of("f", f)?, T => {
        let (f, g) = (In::<T, Ix2>::new("f", f)?, In::<T, Ix2>::new("g", g)?);
        let n = f.shape()[0];
        let (f, g) = (complexes(f.values()), complexes(g.values()));
        let delta0 = Complex { re: T::from_f64(delta0.real()), im: T::from_f64(delta0.imag()) };
        let run = py
            .detach(|| kp.fg_integrate(n, &f, &g, delta0, T::from_f64(dt), nsteps, &opts))
            .map_err(to_py)?;
        let to_numpy = |values: &[Complex<T>]| interleaved(values).to_vec().into_pyarray(py).into_any();
        Ok((to_numpy(&run.f), to_numpy(&run.g), to_numpy(&run.delta)))
    })
}

/// As [`fg_integrate`], in place on device buffers (`f`, `g` receive the
/// final state), enqueued on `stream`.
#[pyfunction]
pub(crate) fn fg_integrate_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: Dtype,
    n: usize,
    f: u64,
    g: u64,
    delta0: (f64, f64),
    dt: f64,
    nsteps: usize,
    path: &str,
    delta: u64,
    stream: usize,
) -> PyResult<()> {
    let opts = FgOptions {
        path: path.parse().map_err(to_py)?,
    };
    ctx.enqueue(py, stream, |gpu, stream| {
        by_dtype!(dtype, T => {
            let delta0 = Complex { re: T::from_f64(delta0.0), im: T::from_f64(delta0.1) };
            let dt = T::from_f64(dt);
            // SAFETY: checked device allocations of the stated lengths.
            unsafe { gpu.enqueue(stream, &FgOnDevice { n, f, g, delta0, dt, nsteps, delta, opts }) }
        })
    })
}
