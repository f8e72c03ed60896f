//! C ABI of the ODE ensembles (Lorenz 96, Lorenz 2005 Model II / III) and
//! of the periodic window sum: host-pointer and device-pointer entry points
//! per dtype, thin wrappers over one generic body each.
use super::{
    boundary, check_apart, context, device_address, host_slice, host_slice_mut, kp_context,
    kp_status, value_boundary, Failure, Span,
};
use crate::api::lorenz::{frame_count, EnsembleDeviceBuffers};
use crate::error::Error;
use crate::float::Float;
use crate::{Lorenz05Model, Lorenz05Params, Lorenz96Params};

/// Lorenz 96 parameters; start from `kp_lorenz96_default_params()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_lorenz96_params {
    /// Sites, >= 4 (default 40).
    pub n: usize,
    /// F, finite (default 8).
    pub forcing: f64,
    /// Time step, finite and > 0 (default 0.05).
    pub dt: f64,
}

/// Lorenz (2005) Model II / III parameters (NCAR DART's "Lorenz 04"); start
/// from `kp_lorenz05_default_params()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_lorenz05_params {
    /// Sites (default 960); N > 2K, and N > 2J for Model III.
    pub n: usize,
    /// F (default 15).
    pub forcing: f64,
    /// K, even and > 0 (default 32).
    pub k: usize,
    /// J, the smoothing half-width, >= 1 for Model III (default 12).
    pub j: usize,
    /// b, the space-time scale (default 10).
    pub b: f64,
    /// c, the coupling (default 3.0; the 2005 paper uses 2.5).
    pub c: f64,
    /// Time step, finite and > 0 (default 0.001).
    pub dt: f64,
    /// 2 (Model II) or 3 (Model III, default).
    pub model: i32,
}

/// N = 40, F = 8, dt = 0.05.
#[no_mangle]
pub extern "C" fn kp_lorenz96_default_params() -> kp_lorenz96_params {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (and invalid parameters, which every call rejects).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let p = Lorenz96Params::default();
            kp_lorenz96_params {
                n: p.n,
                forcing: p.forcing,
                dt: p.dt,
            }
        },
    )
}

/// DART's defaults: N = 960, F = 15, K = 32, J = 12, b = 10, c = 3, dt = 0.001, Model III.
#[no_mangle]
pub extern "C" fn kp_lorenz05_default_params() -> kp_lorenz05_params {
    // SAFETY (fallback): as in kp_lorenz96_default_params.
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let p = Lorenz05Params::default();
            kp_lorenz05_params {
                n: p.n,
                forcing: p.forcing,
                k: p.k,
                j: p.j,
                b: p.b,
                c: p.c,
                dt: p.dt,
                model: p.model.number(),
            }
        },
    )
}

/// Values a trajectory of `members` x `n` sites holds: (steps / every + 1)
/// frames of members x n (frame f after f * every steps); 0 when every is 0,
/// and 0 when the count does not fit in size_t (no run can have it).
#[no_mangle]
pub extern "C" fn kp_lorenz_trajectory_len(
    members: usize,
    n: usize,
    steps: u64,
    every: u64,
) -> usize {
    value_boundary(
        || 0,
        || {
            // frame_count saturates at usize::MAX: no run has that many values either.
            frame_count(steps, every)
                .checked_mul(members)
                .and_then(|v| v.checked_mul(n))
                .filter(|&v| v != usize::MAX)
                .unwrap_or(0)
        },
    )
}

/// Which model a call integrates, from the C parameters (NULL: defaults).
#[derive(Clone, Copy)]
enum Model {
    L96(Lorenz96Params),
    L05(Lorenz05Params),
}

impl Model {
    unsafe fn l96(params: *const kp_lorenz96_params) -> Model {
        let c = unsafe { params.as_ref() }
            .copied()
            .unwrap_or_else(|| kp_lorenz96_default_params());
        Model::L96(Lorenz96Params {
            n: c.n,
            forcing: c.forcing,
            dt: c.dt,
        })
    }

    unsafe fn l05(params: *const kp_lorenz05_params) -> Result<Model, Failure> {
        let c = unsafe { params.as_ref() }
            .copied()
            .unwrap_or_else(|| kp_lorenz05_default_params());
        Ok(Model::L05(Lorenz05Params {
            n: c.n,
            forcing: c.forcing,
            k: c.k,
            j: c.j,
            b: c.b,
            c: c.c,
            dt: c.dt,
            model: Lorenz05Model::from_number(c.model as i64)?,
        }))
    }

    fn n(&self) -> usize {
        match self {
            Model::L96(p) => p.n,
            Model::L05(p) => p.n,
        }
    }
}

/// Values of members x n (the states) and of the trajectory the call writes:
/// the C side's buffer lengths, computed with checked arithmetic (the API
/// validates the run itself).
fn run_lengths(
    model: &Model,
    members: usize,
    steps: u64,
    every: u64,
) -> Result<(usize, usize), Failure> {
    let impossible = || {
        Failure::from(Error::invalid(format!(
            "{members} members of N = {} is impossible",
            model.n()
        )))
    };
    let len = members.checked_mul(model.n()).ok_or_else(impossible)?;
    let frames = frame_count(steps, every);
    let traj = frames.checked_mul(len).ok_or_else(|| {
        Failure::from(Error::invalid(format!(
            "a trajectory of {frames} frames (steps {steps}, every {every}) of {len} values \
             does not fit in memory"
        )))
    })?;
    Ok((len, traj))
}

/// `trajectory_len` must be what the run writes (the C side's length of `trajectory`).
fn check_trajectory_len(expected: usize, every: u64, len: usize) -> Result<(), Failure> {
    if every > 0 && len != expected {
        return Err(Error::invalid(format!(
            "trajectory_len is {len}, {expected} values are written (kp_lorenz_trajectory_len)"
        ))
        .into());
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn ensemble_host<T: Float>(
    ctx: *const kp_context,
    model: Result<Model, Failure>,
    initial: *const T,
    members: usize,
    steps: u64,
    every: u64,
    out: *mut T,
    trajectory: *mut T,
    trajectory_len: usize,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let model = model?;
        let (len, traj_len) = run_lengths(&model, members, steps, every)?;
        let traj_span = Span::of(
            "trajectory",
            trajectory,
            if every > 0 { trajectory_len } else { 0 },
        );
        check_apart(
            &[Span::of("out", out, len), traj_span],
            &[Span::of("initial", initial, len)],
        )?;
        let initial = unsafe { host_slice("initial", initial, len) }?;
        let out = unsafe { host_slice_mut("out", out, len) }?;
        let trajectory = match every {
            0 => None,
            _ => Some(unsafe {
                host_slice_mut("trajectory (every > 0)", trajectory, trajectory_len)
            }?),
        };
        check_trajectory_len(traj_len, every, trajectory_len)?;
        // Computed in full before anything is written to the outputs.
        let run = match model {
            Model::L96(p) => ctx.kernpack.lorenz96(&p, initial, steps, every),
            Model::L05(p) => ctx.kernpack.lorenz05(&p, initial, steps, every),
        }?;
        out.copy_from_slice(&run.final_state);
        if let (Some(dst), Some(src)) = (trajectory, run.trajectory) {
            dst.copy_from_slice(&src);
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn ensemble_device<T: Float>(
    ctx: *const kp_context,
    model: Result<Model, Failure>,
    initial: u64,
    members: usize,
    steps: u64,
    every: u64,
    out: u64,
    trajectory: u64,
    trajectory_len: usize,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let model = model?;
        let (_, traj_len) = run_lengths(&model, members, steps, every)?;
        let buffers = EnsembleDeviceBuffers {
            initial: device_address("initial", initial)?,
            out: device_address("out", out)?,
            trajectory: match every {
                0 => None,
                _ => Some(device_address("trajectory (every > 0)", trajectory)?),
            },
        };
        check_trajectory_len(traj_len, every, trajectory_len)?;
        let stream = unsafe { ctx.stream(stream) }?;
        match model {
            Model::L96(p) => unsafe {
                gpu.lorenz96_raw::<T>(&stream, &p, &buffers, members, steps, every, None)
            },
            Model::L05(p) => unsafe {
                gpu.lorenz05_raw::<T>(&stream, &p, &buffers, members, steps, every, None)
            },
        }?;
        Ok(())
    })
}

/// Integrates a Lorenz 96 ensemble of host arrays in double precision:
/// `initial` and `out` hold `members` x `params->n` values (member m at
/// m * n), `steps` RK4 steps of `params->dt`, all members in one launch on a
/// GPU context. With `every` > 0, `trajectory` receives
/// `kp_lorenz_trajectory_len(members, n, steps, every)` values (= `trajectory_len`):
/// frames of members x n, frame f after f * every steps (frame 0: `initial`);
/// with `every` = 0 it may be NULL. `params` NULL means the defaults.
/// Returns when the results are in `out` / `trajectory`, untouched on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz96_f64(
    ctx: *const kp_context,
    params: *const kp_lorenz96_params,
    initial: *const f64,
    members: usize,
    steps: u64,
    every: u64,
    out: *mut f64,
    trajectory: *mut f64,
    trajectory_len: usize,
) -> kp_status {
    let model = Ok(unsafe { Model::l96(params) });
    unsafe {
        ensemble_host(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
        )
    }
}

/// As `kp_lorenz96_f64`, in single precision.
///
/// # Safety
/// As `kp_lorenz96_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz96_f32(
    ctx: *const kp_context,
    params: *const kp_lorenz96_params,
    initial: *const f32,
    members: usize,
    steps: u64,
    every: u64,
    out: *mut f32,
    trajectory: *mut f32,
    trajectory_len: usize,
) -> kp_status {
    let model = Ok(unsafe { Model::l96(params) });
    unsafe {
        ensemble_host(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
        )
    }
}

/// As `kp_lorenz96_f64`, for Lorenz (2005) Model II / III (`params->model`).
///
/// # Safety
/// As `kp_lorenz96_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz05_f64(
    ctx: *const kp_context,
    params: *const kp_lorenz05_params,
    initial: *const f64,
    members: usize,
    steps: u64,
    every: u64,
    out: *mut f64,
    trajectory: *mut f64,
    trajectory_len: usize,
) -> kp_status {
    let model = unsafe { Model::l05(params) };
    unsafe {
        ensemble_host(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
        )
    }
}

/// As `kp_lorenz05_f64`, in single precision.
///
/// # Safety
/// As `kp_lorenz96_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz05_f32(
    ctx: *const kp_context,
    params: *const kp_lorenz05_params,
    initial: *const f32,
    members: usize,
    steps: u64,
    every: u64,
    out: *mut f32,
    trajectory: *mut f32,
    trajectory_len: usize,
) -> kp_status {
    let model = unsafe { Model::l05(params) };
    unsafe {
        ensemble_host(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
        )
    }
}

/// Lorenz 96 ensemble on device arrays (CUdeviceptr values), double
/// precision, enqueued on `stream` (0: the default stream) with no
/// synchronisation. Shapes as `kp_lorenz96_f64`; `trajectory` 0 when `every`
/// is 0. Needs a GPU context. Only shapes and pointers are checked (device
/// data cannot be inspected without a synchronisation).
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz96_device_f64(
    ctx: *const kp_context,
    params: *const kp_lorenz96_params,
    initial: u64,
    members: usize,
    steps: u64,
    every: u64,
    out: u64,
    trajectory: u64,
    trajectory_len: usize,
    stream: u64,
) -> kp_status {
    let model = Ok(unsafe { Model::l96(params) });
    unsafe {
        ensemble_device::<f64>(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
            stream,
        )
    }
}

/// As `kp_lorenz96_device_f64`, in single precision.
///
/// # Safety
/// As `kp_lorenz96_device_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz96_device_f32(
    ctx: *const kp_context,
    params: *const kp_lorenz96_params,
    initial: u64,
    members: usize,
    steps: u64,
    every: u64,
    out: u64,
    trajectory: u64,
    trajectory_len: usize,
    stream: u64,
) -> kp_status {
    let model = Ok(unsafe { Model::l96(params) });
    unsafe {
        ensemble_device::<f32>(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
            stream,
        )
    }
}

/// As `kp_lorenz96_device_f64`, for Lorenz (2005) Model II / III.
///
/// # Safety
/// As `kp_lorenz96_device_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz05_device_f64(
    ctx: *const kp_context,
    params: *const kp_lorenz05_params,
    initial: u64,
    members: usize,
    steps: u64,
    every: u64,
    out: u64,
    trajectory: u64,
    trajectory_len: usize,
    stream: u64,
) -> kp_status {
    let model = unsafe { Model::l05(params) };
    unsafe {
        ensemble_device::<f64>(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
            stream,
        )
    }
}

/// As `kp_lorenz05_device_f64`, in single precision.
///
/// # Safety
/// As `kp_lorenz96_device_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lorenz05_device_f32(
    ctx: *const kp_context,
    params: *const kp_lorenz05_params,
    initial: u64,
    members: usize,
    steps: u64,
    every: u64,
    out: u64,
    trajectory: u64,
    trajectory_len: usize,
    stream: u64,
) -> kp_status {
    let model = unsafe { Model::l05(params) };
    unsafe {
        ensemble_device::<f32>(
            ctx,
            model,
            initial,
            members,
            steps,
            every,
            out,
            trajectory,
            trajectory_len,
            stream,
        )
    }
}

unsafe fn window_sum_host<T: Float>(
    ctx: *const kp_context,
    x: *const T,
    w: *const T,
    w_len: usize,
    rows: usize,
    n: usize,
    out: *mut T,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let len = rows
            .checked_mul(n)
            .ok_or_else(|| Error::invalid("rows x n overflows"))?;
        check_apart(
            &[Span::of("out", out, len)],
            &[Span::of("x", x, len), Span::of("w", w, w_len)],
        )?;
        let x = unsafe { host_slice("x", x, len) }?;
        let w = unsafe { host_slice("w", w, w_len) }?;
        let out = unsafe { host_slice_mut("out", out, len) }?;
        let result = ctx.kernpack.window_sum(x, w, rows, n)?;
        out.copy_from_slice(&result);
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn window_sum_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    w: u64,
    w_len: usize,
    rows: usize,
    n: usize,
    pitch: usize,
    out: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (x, w) = (device_address("x", x)?, device_address("w", w)?);
        let out = device_address("out", out)?;
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.window_sum_raw::<T>(&stream, x, w, w_len, out, rows, n, pitch) }?;
        Ok(())
    })
}

/// Periodic weighted window sum of `rows` contiguous rows of `n` host values,
/// double precision: `out[r*n + i] = sum_{m=0}^{w_len-1} w[m] x[r*n + (i + J - m) mod n]`
/// with `w_len = 2J + 1` odd, summed in m order. With the Model III weights
/// (end weights halved) this is the smoothing X of Lorenz (2005) Model III.
/// `out` (rows x n values) is untouched on failure.
///
/// # Safety
/// `x` and `out` valid for rows x n values, `w` for `w_len`.
#[no_mangle]
pub unsafe extern "C" fn kp_window_sum_f64(
    ctx: *const kp_context,
    x: *const f64,
    w: *const f64,
    w_len: usize,
    rows: usize,
    n: usize,
    out: *mut f64,
) -> kp_status {
    unsafe { window_sum_host(ctx, x, w, w_len, rows, n, out) }
}

/// As `kp_window_sum_f64`, in single precision.
///
/// # Safety
/// As `kp_window_sum_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_window_sum_f32(
    ctx: *const kp_context,
    x: *const f32,
    w: *const f32,
    w_len: usize,
    rows: usize,
    n: usize,
    out: *mut f32,
) -> kp_status {
    unsafe { window_sum_host(ctx, x, w, w_len, rows, n, out) }
}

/// Window sums of device arrays, double precision, enqueued on `stream` with
/// no synchronisation: row r of `x` and `out` starts at r * `pitch` (>= n);
/// values between n and pitch are not written. Needs a GPU context.
///
/// # Safety
/// `x` and `out` device allocations of (rows - 1) * pitch + n values, `w` of
/// `w_len`, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_window_sum_device_f64(
    ctx: *const kp_context,
    x: u64,
    w: u64,
    w_len: usize,
    rows: usize,
    n: usize,
    pitch: usize,
    out: u64,
    stream: u64,
) -> kp_status {
    unsafe { window_sum_device::<f64>(ctx, x, w, w_len, rows, n, pitch, out, stream) }
}

/// As `kp_window_sum_device_f64`, in single precision.
///
/// # Safety
/// As `kp_window_sum_device_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_window_sum_device_f32(
    ctx: *const kp_context,
    x: u64,
    w: u64,
    w_len: usize,
    rows: usize,
    n: usize,
    pitch: usize,
    out: u64,
    stream: u64,
) -> kp_status {
    unsafe { window_sum_device::<f32>(ctx, x, w, w_len, rows, n, pitch, out, stream) }
}
