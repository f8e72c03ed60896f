//! ODE integration kept on the device: Lorenz 96 and Lorenz 2005 ensembles,
//! the periodic window sum they use, and the coupled F/G system.
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use kernpack::api::lorenz::{frame_count, EnsembleDeviceBuffers};
use kernpack::cpu::copy_parallel;
use kernpack::{
    Complex, Ensemble, FgOptions, Float, Lorenz05Model, Lorenz05Params, Lorenz96Params,
};

use crate::{by_dtype, host, host_mut, to_py, Context, Dtype};

/// Frames a run of `steps` stores with a trajectory every `every` steps
/// (0 without a trajectory).
#[pyfunction(name = "frame_count")]
fn frames(steps: u64, every: u64) -> usize {
    frame_count(steps, every)
}

/// Lorenz 96 (`model` 96) or Lorenz 2005 (`model` 2 or 3) parameters.
#[derive(Clone, Copy)]
enum Model {
    L96(Lorenz96Params),
    L05(Lorenz05Params),
}

#[allow(clippy::too_many_arguments)]
fn model(
    model: i64,
    n: usize,
    forcing: f64,
    dt: f64,
    k: usize,
    j: usize,
    b: f64,
    c: f64,
) -> PyResult<Model> {
    let m = if model == 96 {
        Model::L96(Lorenz96Params { n, forcing, dt })
    } else {
        let p = Lorenz05Params {
            n,
            forcing,
            k,
            j,
            b,
            c,
            dt,
            model: Lorenz05Model::from_number(model).map_err(to_py)?,
        };
        Model::L05(p)
    };
    Ok(m)
}

/// `members x n` values, after checking members > 0 and the product.
fn state_len(members: usize, n: usize) -> PyResult<usize> {
    members
        .checked_mul(n)
        .filter(|_| members > 0)
        .ok_or_else(|| PyValueError::new_err(format!("members must be > 0, got {members}")))
}

/// An ensemble run on host buffers: `initial` and `out` hold members x n
/// values; `trajectory` (every > 0) frame_count(steps, every) x members x n.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, model_number, n, forcing, dt, k, j, b, c, initial, members, steps, every, out, trajectory))]
#[allow(clippy::too_many_arguments)]
fn ensemble(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    model_number: i64,
    n: usize,
    forcing: f64,
    dt: f64,
    k: usize,
    j: usize,
    b: f64,
    c: f64,
    initial: usize,
    members: usize,
    steps: u64,
    every: u64,
    out: usize,
    trajectory: Option<usize>,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let m = model(model_number, n, forcing, dt, k, j, b, c)?;
    let len = state_len(members, n)?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: live contiguous arrays of these lengths (the Python layer).
            let initial = unsafe { host::<T>(initial, len) };
            let run: Ensemble<T> = match m {
                Model::L96(p) => kp.lorenz96(&p, initial, steps, every),
                Model::L05(p) => kp.lorenz05(&p, initial, steps, every),
            }?;
            // On up to 8 threads: the arrays are fresh (their pages fault on
            // first touch) and may be gigabytes.
            let threads = kernpack::cpu::copy_threads();
            copy_parallel(threads, unsafe { host_mut::<T>(out, len) }, &run.final_state);
            if let (Some(dst), Some(src)) = (trajectory, run.trajectory.as_ref()) {
                copy_parallel(threads, unsafe { host_mut::<T>(dst, src.len()) }, src);
            }
            Ok(())
        })
    })
    .map_err(to_py)
}

/// As [`ensemble`], on device buffers, enqueued on `stream`.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, model_number, n, forcing, dt, k, j, b, c, initial, members, steps, every, out, trajectory, stream))]
#[allow(clippy::too_many_arguments)]
fn ensemble_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    model_number: i64,
    n: usize,
    forcing: f64,
    dt: f64,
    k: usize,
    j: usize,
    b: f64,
    c: f64,
    initial: usize,
    members: usize,
    steps: u64,
    every: u64,
    out: usize,
    trajectory: Option<usize>,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let m = model(model_number, n, forcing, dt, k, j, b, c)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    let buffers = EnsembleDeviceBuffers {
        initial: initial as u64,
        out: out as u64,
        trajectory: trajectory.filter(|_| every > 0).map(|t| t as u64),
    };
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: checked device allocations of the stated lengths.
            match m {
                Model::L96(p) => unsafe {
                    gpu.lorenz96_raw::<T>(&stream, &p, &buffers, members, steps, every, None)
                },
                Model::L05(p) => unsafe {
                    gpu.lorenz05_raw::<T>(&stream, &p, &buffers, members, steps, every, None)
                },
            }
        })
    })
    .map_err(to_py)
}

/// Periodic weighted window sums of `rows` rows of `n` values (host buffers).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn window_sum(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    w: usize,
    w_len: usize,
    rows: usize,
    n: usize,
    out: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let len = rows
        .checked_mul(n)
        .ok_or_else(|| PyValueError::new_err("rows x n overflows"))?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            // SAFETY: live contiguous arrays of these lengths (the Python layer).
            let result = kp.window_sum(unsafe { host::<T>(x, len) }, unsafe { host::<T>(w, w_len) }, rows, n)?;
            unsafe { host_mut::<T>(out, len) }.copy_from_slice(&result);
            Ok(())
        })
    })
    .map_err(to_py)
}

/// As [`window_sum`], on device buffers, enqueued on `stream`.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn window_sum_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    x: usize,
    w: usize,
    w_len: usize,
    rows: usize,
    n: usize,
    out: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    py.detach(|| {
        // SAFETY: checked device allocations of the stated lengths.
        by_dtype!(dtype, T => unsafe {
            gpu.window_sum_raw::<T>(&stream, x as u64, w as u64, w_len, out as u64, rows, n, n)
        })
    })
    .map_err(to_py)
}

fn fg_options(path: &str) -> PyResult<FgOptions> {
    Ok(FgOptions {
        path: path.parse().map_err(to_py)?,
    })
}

/// The coupled F/G system on host buffers: `f`, `g` hold N*N complex values
/// (interleaved re, im); `f_out`, `g_out` receive the final state and `delta`
/// nsteps + 1 complex values.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, n, f, g, delta0_re, delta0_im, dt, nsteps, path, f_out, g_out, delta))]
#[allow(clippy::too_many_arguments)]
fn fg_integrate(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    n: usize,
    f: usize,
    g: usize,
    delta0_re: f64,
    delta0_im: f64,
    dt: f64,
    nsteps: usize,
    path: &str,
    f_out: usize,
    g_out: usize,
    delta: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = fg_options(path)?;
    let elements = n
        .checked_mul(n)
        .ok_or_else(|| PyValueError::new_err("N x N overflows"))?;
    let kp = &ctx.kp;
    py.detach(|| {
        by_dtype!(dtype, T => {
            let delta0 = Complex { re: T::from_f64(delta0_re), im: T::from_f64(delta0_im) };
            // SAFETY: live contiguous complex arrays of these lengths (the Python layer);
            // Complex<T> is #[repr(C)] { re, im }, the layout of NumPy's complex types.
            let run = unsafe {
                kp.fg_integrate(
                    n,
                    host::<Complex<T>>(f, elements),
                    host::<Complex<T>>(g, elements),
                    delta0,
                    T::from_f64(dt),
                    nsteps,
                    &opts,
                )
            }?;
            unsafe {
                host_mut::<Complex<T>>(f_out, elements).copy_from_slice(&run.f);
                host_mut::<Complex<T>>(g_out, elements).copy_from_slice(&run.g);
                host_mut::<Complex<T>>(delta, nsteps + 1).copy_from_slice(&run.delta);
            }
            Ok(())
        })
    })
    .map_err(to_py)
}

/// As [`fg_integrate`], in place on device buffers (`f`, `g` receive the
/// final state), enqueued on `stream`.
#[pyfunction]
#[pyo3(signature = (ctx, dtype, n, f, g, delta0_re, delta0_im, dt, nsteps, path, delta, stream))]
#[allow(clippy::too_many_arguments)]
fn fg_integrate_device(
    py: Python<'_>,
    ctx: &Context,
    dtype: &str,
    n: usize,
    f: usize,
    g: usize,
    delta0_re: f64,
    delta0_im: f64,
    dt: f64,
    nsteps: usize,
    path: &str,
    delta: usize,
    stream: usize,
) -> PyResult<()> {
    let dtype = Dtype::parse(dtype)?;
    let opts = fg_options(path)?;
    let gpu = ctx.gpu()?;
    let stream = ctx.stream(stream)?;
    py.detach(|| {
        by_dtype!(dtype, T => {
            let delta0 = Complex { re: T::from_f64(delta0_re), im: T::from_f64(delta0_im) };
            // SAFETY: checked device allocations of the stated lengths.
            unsafe {
                gpu.fg_integrate_raw::<T>(
                    &stream, n, f as u64, g as u64, delta0, T::from_f64(dt), nsteps, delta as u64, &opts,
                )
            }
        })
    })
    .map_err(to_py)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(frames, m)?)?;
    m.add_function(wrap_pyfunction!(ensemble, m)?)?;
    m.add_function(wrap_pyfunction!(ensemble_device, m)?)?;
    m.add_function(wrap_pyfunction!(window_sum, m)?)?;
    m.add_function(wrap_pyfunction!(window_sum_device, m)?)?;
    m.add_function(wrap_pyfunction!(fg_integrate, m)?)?;
    m.add_function(wrap_pyfunction!(fg_integrate_device, m)?)?;
    Ok(())
}
