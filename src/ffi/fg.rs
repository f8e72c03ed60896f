//! C ABI of the coupled F/G system: host-pointer and device-pointer
//! entry points for complex64 and complex128, one-line wrappers around one
//! generic body each. Complex arrays are interleaved (re, im) pairs, the
//! layout of C99 `float _Complex` / `double _Complex` and `std::complex<T>`.
use super::{
    boundary, check_apart, context, device_address, host_slice_mut, kp_context, kp_status, Failure,
    Span,
};
use crate::api::fg::{complexes, interleaved, FgOptions};
use crate::error::Error;
use crate::float::{Complex, Float};

/// T values of an N x N complex state (interleaved re, im): the C side's
/// buffer length, with checked arithmetic.
fn state_values(n: usize) -> Result<usize, Failure> {
    n.checked_mul(n)
        .and_then(|e| e.checked_mul(2))
        .ok_or_else(|| Error::invalid(format!("N = {n} is impossible")).into())
}

/// `delta_len` (complex values) must be what the run writes: nsteps + 1.
fn check_delta_len(delta_len: usize, nsteps: usize) -> Result<(), Failure> {
    if delta_len != nsteps.saturating_add(1) {
        return Err(Error::invalid(format!(
            "delta_len is {delta_len}: nsteps + 1 = {} complex values expected",
            nsteps.saturating_add(1)
        ))
        .into());
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
unsafe fn integrate_host<T: Float>(
    ctx: *const kp_context,
    n: usize,
    f: *mut T,
    g: *mut T,
    delta0_re: T,
    delta0_im: T,
    dt: T,
    nsteps: usize,
    delta: *mut T,
    delta_len: usize,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let state_len = state_values(n)?;
        check_delta_len(delta_len, nsteps)?;
        let delta_values = delta_len.saturating_mul(2); // impossible counts are refused by the slice
        check_apart(
            &[
                Span::of("f", f, state_len),
                Span::of("g", g, state_len),
                Span::of("delta", delta, delta_values),
            ],
            &[],
        )?;
        let f = unsafe { host_slice_mut("f", f, state_len) }?;
        let g = unsafe { host_slice_mut("g", g, state_len) }?;
        let delta = unsafe { host_slice_mut("delta", delta, delta_values) }?;
        let delta0 = Complex {
            re: delta0_re,
            im: delta0_im,
        };
        // Computed in full before anything is written back.
        let run = ctx.kernpack.fg_integrate(
            n,
            &complexes(f),
            &complexes(g),
            delta0,
            dt,
            nsteps,
            &FgOptions::default(),
        )?;
        f.copy_from_slice(interleaved(&run.f));
        g.copy_from_slice(interleaved(&run.g));
        delta.copy_from_slice(interleaved(&run.delta));
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn integrate_device<T: Float>(
    ctx: *const kp_context,
    n: usize,
    f: u64,
    g: u64,
    delta0_re: T,
    delta0_im: T,
    dt: T,
    nsteps: usize,
    delta: u64,
    delta_len: usize,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (f, g) = (device_address("f", f)?, device_address("g", g)?);
        let delta = device_address("delta", delta)?;
        check_delta_len(delta_len, nsteps)?;
        let delta0 = Complex {
            re: delta0_re,
            im: delta0_im,
        };
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe {
            gpu.fg_integrate_raw(
                &stream,
                n,
                f,
                g,
                delta0,
                dt,
                nsteps,
                delta,
                &FgOptions::default(),
            )
        }?;
        Ok(())
    })
}

/// Integrates the coupled F/G system in single precision (complex64):
/// `nsteps` classic RK4 steps of step `dt` of
/// `dF/dt = -2i F - i delta (2G - 1)`, `dG/dt = -i (conj(delta) F - delta conj(F))`
/// (elementwise, delta held constant within a step), with `delta = sum(F)`
/// after every step.
///
/// `f`, `g`: N x N complex values each, as 2 N*N interleaved (re, im) floats
/// (`float _Complex` layout): the initial state on entry, the final state on
/// return. `delta`: `delta_len` = `nsteps + 1` complex values (2 floats each)
/// receiving `delta[0] = (delta0_re, delta0_im)`, `delta[1]`, ..., `delta[nsteps]`.
/// `nsteps` = 0 is valid (`delta[0]` only, state unchanged). N >= 1; `dt`,
/// delta0 and every input value must be finite. Runs on the context's backend;
/// returns when done. Nothing is written on failure. The sum is
/// deterministic: the same inputs give the same bits on every run.
///
/// # Safety
/// `f` and `g` valid for reading and writing 2 N*N floats, `delta` for
/// writing 2 `delta_len` floats (or NULL, which is an error).
#[no_mangle]
pub unsafe extern "C" fn kp_fg_integrate_c64(
    ctx: *const kp_context,
    n: usize,
    f: *mut f32,
    g: *mut f32,
    delta0_re: f32,
    delta0_im: f32,
    dt: f32,
    nsteps: usize,
    delta: *mut f32,
    delta_len: usize,
) -> kp_status {
    unsafe {
        integrate_host(
            ctx, n, f, g, delta0_re, delta0_im, dt, nsteps, delta, delta_len,
        )
    }
}

/// As `kp_fg_integrate_c64`, in double precision (complex128: interleaved doubles).
///
/// # Safety
/// As `kp_fg_integrate_c64`, with doubles.
#[no_mangle]
pub unsafe extern "C" fn kp_fg_integrate_c128(
    ctx: *const kp_context,
    n: usize,
    f: *mut f64,
    g: *mut f64,
    delta0_re: f64,
    delta0_im: f64,
    dt: f64,
    nsteps: usize,
    delta: *mut f64,
    delta_len: usize,
) -> kp_status {
    unsafe {
        integrate_host(
            ctx, n, f, g, delta0_re, delta0_im, dt, nsteps, delta, delta_len,
        )
    }
}

/// As `kp_fg_integrate_c64` on device arrays (CUdeviceptr values, e.g. CuPy's
/// `.data.ptr`): `f`, `g` (2 N*N floats each) are integrated in place and
/// `delta` (2 `delta_len` floats, `delta_len` = `nsteps + 1`) receives the
/// history, enqueued on `stream` (0: the default stream) with no
/// synchronisation: wait on the stream before reading. Needs a GPU context.
/// Only N, dt, delta0, lengths and pointers are checked: device data is not
/// inspected, so non-finite values give non-finite results, not an error.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_fg_integrate_device_c64(
    ctx: *const kp_context,
    n: usize,
    f: u64,
    g: u64,
    delta0_re: f32,
    delta0_im: f32,
    dt: f32,
    nsteps: usize,
    delta: u64,
    delta_len: usize,
    stream: u64,
) -> kp_status {
    unsafe {
        integrate_device(
            ctx, n, f, g, delta0_re, delta0_im, dt, nsteps, delta, delta_len, stream,
        )
    }
}

/// As `kp_fg_integrate_device_c64`, in double precision (interleaved doubles).
///
/// # Safety
/// As `kp_fg_integrate_device_c64`.
#[no_mangle]
pub unsafe extern "C" fn kp_fg_integrate_device_c128(
    ctx: *const kp_context,
    n: usize,
    f: u64,
    g: u64,
    delta0_re: f64,
    delta0_im: f64,
    dt: f64,
    nsteps: usize,
    delta: u64,
    delta_len: usize,
    stream: u64,
) -> kp_status {
    unsafe {
        integrate_device(
            ctx, n, f, g, delta0_re, delta0_im, dt, nsteps, delta, delta_len, stream,
        )
    }
}
