//! C ABI of the coupled F/G system: host-pointer and device-pointer
//! entry points for complex64 and complex128, declared once each (the
//! per-dtype functions are in `entry_points.rs`). Complex arrays are interleaved (re, im) pairs, the
//! layout of C99 `float _Complex` / `double _Complex` and `std::complex<T>`.
use super::{kp_context, kp_status, DeviceEntry, Entry, RawError};
use crate::api::fg::{complexes, interleaved, FgOnDevice, FgOptions};
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::{Complex, Float};
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

// dtypes: c64 = f32, c128 = f64
/// Integrates the coupled F/G system in {precision} (`kp_fg_integrate_{dtype}`:
/// complex64 on floats, complex128 on doubles): `nsteps` classic RK4 steps of
/// step `dt` of
/// `dF/dt = -2i F - i delta (2G - 1)`, `dG/dt = -i (conj(delta) F - delta conj(F))`
/// (elementwise, delta held constant within a step), with `delta = sum(F)`
/// after every step.
///
/// `f`, `g`: N x N complex values each, as 2 N*N interleaved (re, im) reals
/// (`float _Complex` / `double _Complex` layout): the initial state on entry,
/// the final state on return. `delta`: `delta_len` = `nsteps + 1` complex
/// values (2 reals each) receiving `delta[0] = (delta0_re, delta0_im)`,
/// `delta[1]`, ..., `delta[nsteps]`. `nsteps` = 0 is valid (`delta[0]` only,
/// state unchanged). N >= 1; `dt`, delta0 and every input value must be
/// finite. Runs on the context's backend; returns when done. Nothing is
/// written on failure. The sum is deterministic: the same inputs give the
/// same bits on every run.
///
/// # Safety
/// `f` and `g` valid for reading and writing 2 N*N reals, `delta` for
/// writing 2 `delta_len` reals (or NULL, which is an error).
struct kp_fg_integrate<T> {
    n: usize,
    f: *mut T,
    g: *mut T,
    delta0_re: T,
    delta0_im: T,
    dt: T,
    nsteps: usize,
    delta: *mut T,
    delta_len: usize,
}

/// `delta_len` must be what the run writes: nsteps + 1 complex values.
fn check_delta_len(delta_len: usize, nsteps: usize) -> Result<(), Error> {
    let unit = "complex values (nsteps + 1)";
    raw::check_len("delta_len", delta_len, nsteps.checked_add(1), unit)
}

impl<T: Float> Entry for kp_fg_integrate<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        // Reals of an N x N complex state.
        let values = raw::product("N", self.n, "N", self.n)?;
        let state_len = raw::product("N x N", values, "2 reals", 2)?;
        check_delta_len(self.delta_len, self.nsteps)?;
        let delta_len = raw::product("delta_len", self.delta_len, "2 reals", 2)?;
        check_apart(
            &[
                Span::of("f", self.f, state_len),
                Span::of("g", self.g, state_len),
                Span::of("delta", self.delta, delta_len),
            ],
            &[],
        )?;
        let f = unsafe { raw::host_mut("f", self.f, state_len) }?;
        let g = unsafe { raw::host_mut("g", self.g, state_len) }?;
        let delta = unsafe { raw::host_mut("delta", self.delta, delta_len) }?;
        let delta0 = Complex {
            re: self.delta0_re,
            im: self.delta0_im,
        };
        // Computed in full before anything is written back.
        let run = kp.fg_integrate(
            self.n,
            &complexes(f),
            &complexes(g),
            delta0,
            self.dt,
            self.nsteps,
            &FgOptions::default(),
        )?;
        f.copy_from_slice(interleaved(&run.f));
        g.copy_from_slice(interleaved(&run.g));
        delta.copy_from_slice(interleaved(&run.delta));
        Ok(())
    }
}

// dtypes: c64 = f32, c128 = f64
/// As `kp_fg_integrate_{dtype}` on device arrays (CUdeviceptr values, e.g.
/// CuPy's `.data.ptr`), in {precision}: `f`, `g` (2 N*N reals each) are
/// integrated in place and `delta` (2 `delta_len` reals, `delta_len` =
/// `nsteps + 1`) receives the history, enqueued on `stream` (0: the default
/// stream) with no synchronisation: wait on the stream before reading. Needs
/// a GPU context. Only N, dt, delta0, lengths and pointers are checked:
/// device data is not inspected, so non-finite values give non-finite
/// results, not an error.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
struct kp_fg_integrate_device<T> {
    n: usize,
    f: u64,
    g: u64,
    delta0_re: T,
    delta0_im: T,
    dt: T,
    nsteps: usize,
    delta: u64,
    delta_len: usize,
}

impl<T: Float> DeviceEntry for kp_fg_integrate_device<T> {
    type Op = FgOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let (f, g) = (raw::device("f", self.f)?, raw::device("g", self.g)?);
        let delta = raw::device("delta", self.delta)?;
        check_delta_len(self.delta_len, self.nsteps)?;
        let delta0 = Complex {
            re: self.delta0_re,
            im: self.delta0_im,
        };
        let (n, dt, nsteps, opts) = (self.n, self.dt, self.nsteps, FgOptions::default());
        #[rustfmt::skip]
        let op = FgOnDevice { n, f, g, delta0, dt, nsteps, delta, opts };
        Ok(op)
    }
}
