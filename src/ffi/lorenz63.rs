//! C ABI of the Lorenz 63 ensembles, the fixed-step (RK4) run and the
//! adaptive one (Dormand-Prince 5(4)): host-pointer and device-pointer entry
//! points per dtype, declared once each (the per-dtype functions are in
//! `entry_points.rs`).
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::lorenz63::{
    Lorenz63AdaptiveOnDevice, Lorenz63AdaptiveRun, Lorenz63DeviceBuffers, Lorenz63OnDevice,
    Lorenz63Run, PerMember,
};
use crate::api::Kernpack;
use crate::float::Float;
use crate::params::lorenz63::{
    AdaptiveControl, AdaptiveStatus, Lorenz63AdaptiveDeviceBuffers, Lorenz63AdaptiveParams,
    Lorenz63Params,
};
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// Lorenz 63 parameters shared by every member (a per-member array given to
/// a call replaces its value); start from `kp_lorenz63_default_params()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_lorenz63_params {
    /// sigma, finite (default 10).
    pub sigma: f64,
    /// rho, finite (default 28).
    pub rho: f64,
    /// beta, finite (default 8/3).
    pub beta: f64,
    /// Time step, finite and > 0 (default 0.01).
    pub dt: f64,
}

/// sigma = 10, rho = 28, beta = 8/3, dt = 0.01.
#[no_mangle]
pub extern "C" fn kp_lorenz63_default_params() -> kp_lorenz63_params {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (and an invalid dt, which every call rejects).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let p = Lorenz63Params::<()>::default();
            kp_lorenz63_params {
                sigma: p.sigma.all(),
                rho: p.rho.all(),
                beta: p.beta.all(),
                dt: p.dt,
            }
        },
    )
}

/// The parameters at `p` (NULL: the defaults) with the per-member values
/// `each` (sigma, rho, beta; None: the shared value).
///
/// # Safety
/// `p` NULL or valid for reads.
unsafe fn params<V>(p: *const kp_lorenz63_params, each: [Option<V>; 3]) -> Lorenz63Params<V> {
    let c = unsafe { or_default(p, kp_lorenz63_default_params) };
    let [sigma, rho, beta] = each;
    let pick = |v: Option<V>, all: f64| v.map_or(PerMember::All(all), PerMember::Each);
    Lorenz63Params {
        sigma: pick(sigma, c.sigma),
        rho: pick(rho, c.rho),
        beta: pick(beta, c.beta),
        dt: c.dt,
    }
}

/// Integrates a Lorenz 63 ensemble of host arrays in {precision}: `initial`
/// and `out` hold `members` x 3 values (x, y, z of member m at 3 m);
/// `steps` classical RK4 steps of `params->dt`. `sigma`, `rho`, `beta`:
/// `members` values each, or NULL for the value in `params` (NULL `params`:
/// the defaults). `save_at`: `save_len` step indices (sorted, unique, each
/// in 0..=steps; NULL when `save_len` is 0) whose states go to `saved`,
/// `save_len` x members x 3 values (frame k after `save_at[k]` steps; NULL
/// when `save_len` is 0). Runs on the context's backend; returns when the
/// results are written, nothing written on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
struct kp_lorenz63<T> {
    params: *const kp_lorenz63_params,
    initial: *const T,
    members: usize,
    sigma: *const T,
    rho: *const T,
    beta: *const T,
    steps: u64,
    save_at: *const u64,
    save_len: usize,
    out: *mut T,
    saved: *mut T,
}

impl<T: Float> Entry for kp_lorenz63<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (members, save_len) = (self.members, self.save_len);
        let len = raw::product("members", members, "3", 3)?;
        let saved_len = raw::product("save_len", save_len, "members x 3", len)?;
        let mut inputs = vec![Span::of("initial", self.initial, len)];
        for (name, ptr) in [
            ("sigma", self.sigma),
            ("rho", self.rho),
            ("beta", self.beta),
        ] {
            inputs.push(Span::of(name, ptr, members));
        }
        check_apart(
            &[
                Span::of("out", self.out, len),
                Span::of("saved", self.saved, saved_len),
            ],
            &inputs,
        )?;
        let initial = unsafe { raw::host("initial", self.initial, len) }?;
        let each = |name, ptr| unsafe { raw::optional_host(name, ptr, members) };
        let each = [
            each("sigma", self.sigma)?,
            each("rho", self.rho)?,
            each("beta", self.beta)?,
        ];
        let p = unsafe { params(self.params, each) };
        let save_at: &[u64] = match save_len {
            0 => &[],
            _ => unsafe { raw::host("save_at", self.save_at, save_len) }?,
        };
        let out = unsafe { raw::host_mut("out", self.out, len) }?;
        let saved = match save_len {
            0 => None,
            _ => Some(unsafe { raw::host_mut("saved", self.saved, saved_len) }?),
        };
        // Computed in full before anything is written to the outputs.
        let run = kp.run(Lorenz63Run {
            params: p,
            initial,
            steps: self.steps,
            save_at,
        })?;
        out.copy_from_slice(&run.final_state);
        if let Some(saved) = saved {
            saved.copy_from_slice(&run.saved);
        }
        Ok(())
    }
}

/// Lorenz 63 ensemble on device arrays (CUdeviceptr values) in {precision},
/// enqueued on `stream` (0: the default stream) with no synchronisation.
/// Shapes as `kp_lorenz63_{dtype}`; `sigma`, `rho`, `beta` 0 for the value in
/// `params`; `save_at` is host memory (`save_len` values), `saved` 0 when
/// `save_len` is 0. Needs a GPU context. Only shapes and pointers are checked
/// (device data cannot be inspected without a synchronisation).
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `save_at` valid for `save_len`
/// values; `stream` 0 or a CUstream of the GPU's primary context.
struct kp_lorenz63_device<T> {
    params: *const kp_lorenz63_params,
    initial: u64,
    members: usize,
    sigma: u64,
    rho: u64,
    beta: u64,
    steps: u64,
    save_at: *const u64,
    save_len: usize,
    out: u64,
    saved: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_lorenz63_device<T> {
    type Op = Lorenz63OnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let given = |ptr: u64| (ptr != 0).then_some(ptr);
        let p = unsafe { params(self.params, [self.sigma, self.rho, self.beta].map(given)) };
        let save_at: &[u64] = match self.save_len {
            0 => &[],
            n => unsafe { raw::host("save_at", self.save_at, n) }?,
        };
        let buffers = Lorenz63DeviceBuffers {
            initial: raw::device("initial", self.initial)?,
            out: raw::device("out", self.out)?,
            saved: match self.save_len {
                0 => None,
                _ => Some(raw::device("saved (save_len > 0)", self.saved)?),
            },
        };
        Ok(Lorenz63OnDevice {
            p,
            buffers,
            members: self.members,
            steps: self.steps,
            save_at: save_at.to_vec(),
            dtype: PhantomData,
        })
    }
}

/// The time span, step control and shared parameters of an adaptive Lorenz
/// 63 run (SciPy `solve_ivp(method='RK45')`'s meaning); a per-member array
/// given to a call replaces `sigma_all`, `rho_all` or `beta_all`. Start from
/// `kp_lorenz63_adaptive_default_params()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_lorenz63_adaptive_params {
    /// sigma of every member, finite (default 10).
    pub sigma_all: f64,
    /// rho of every member, finite (default 28).
    pub rho_all: f64,
    /// beta of every member, finite (default 8/3).
    pub beta_all: f64,
    /// The initial states' time, finite (default 0).
    pub t0: f64,
    /// The time every member is integrated to, finite and >= t0 (default 1).
    pub t_end: f64,
    /// Relative tolerance, finite and >= 0 (default 1e-3); values below 100
    /// double epsilons run as that, as SciPy does.
    pub rtol: f64,
    /// Absolute tolerance, finite and >= 0, not 0 with rtol (default 1e-6).
    pub atol: f64,
    /// The first step, in (0, t_end - t0]; 0: chosen per member from its
    /// initial state, as SciPy (default 0).
    pub first_step: f64,
    /// The largest step, > 0; INFINITY for none (default).
    pub max_step: f64,
    /// Steps attempted per member (accepted and rejected), at least 1,
    /// before it stops with KP_LORENZ63_MAX_STEPS (default 100000).
    pub max_steps: u32,
}

/// How a member's adaptive run ended (the `status` values of
/// `kp_lorenz63_adaptive_f32` / `_f64`, the third of each member's `stats`
/// of `kp_lorenz63_adaptive_device_f32` / `_f64`): it reached t_end.
pub const KP_LORENZ63_REACHED: u32 = 0;
/// It stopped after `max_steps` attempted steps (its last state is in
/// `out`, NaN at the later save times).
pub const KP_LORENZ63_MAX_STEPS: u32 = 1;
/// It stopped where its step fell below ten times the spacing of the
/// doubles at its time, or its state stopped being finite (as SciPy's
/// "required step size is less than spacing between numbers"; last state
/// in `out`, NaN at the later save times).
pub const KP_LORENZ63_STEP_TOO_SMALL: u32 = 2;
const _: () = assert!(
    KP_LORENZ63_REACHED == AdaptiveStatus::Reached as u32
        && KP_LORENZ63_MAX_STEPS == AdaptiveStatus::MaxSteps as u32
        && KP_LORENZ63_STEP_TOO_SMALL == AdaptiveStatus::StepTooSmall as u32
);

/// sigma = 10, rho = 28, beta = 8/3, t from 0 to 1, rtol = 1e-3, atol =
/// 1e-6, first step chosen per member (0), no largest step (INFINITY),
/// 100000 attempted steps per member.
#[no_mangle]
pub extern "C" fn kp_lorenz63_adaptive_default_params() -> kp_lorenz63_adaptive_params {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (and invalid tolerances, which every call rejects).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let p = Lorenz63AdaptiveParams::<()>::default();
            let c = p.control;
            kp_lorenz63_adaptive_params {
                sigma_all: p.sigma.all(),
                rho_all: p.rho.all(),
                beta_all: p.beta.all(),
                t0: p.t0,
                t_end: p.t_end,
                rtol: c.rtol,
                atol: c.atol,
                first_step: c.first_step.unwrap_or(0.0),
                max_step: c.max_step,
                max_steps: c.max_steps,
            }
        },
    )
}

/// The adaptive parameters at `p` (NULL: the defaults) with the per-member
/// values `each` (sigma, rho, beta; None: the shared value).
///
/// # Safety
/// `p` NULL or valid for reads.
unsafe fn adaptive_params<V>(
    p: *const kp_lorenz63_adaptive_params,
    each: [Option<V>; 3],
) -> Lorenz63AdaptiveParams<V> {
    let c = unsafe { or_default(p, kp_lorenz63_adaptive_default_params) };
    let [sigma, rho, beta] = each;
    let pick = |v: Option<V>, all: f64| v.map_or(PerMember::All(all), PerMember::Each);
    Lorenz63AdaptiveParams {
        sigma: pick(sigma, c.sigma_all),
        rho: pick(rho, c.rho_all),
        beta: pick(beta, c.beta_all),
        t0: c.t0,
        t_end: c.t_end,
        control: AdaptiveControl {
            rtol: c.rtol,
            atol: c.atol,
            first_step: (c.first_step != 0.0).then_some(c.first_step),
            max_step: c.max_step,
            max_steps: c.max_steps,
        },
    }
}

/// Integrates a Lorenz 63 ensemble of host arrays in {precision} from
/// `params->t0` to `params->t_end` with SciPy RK45's method (Dormand-Prince
/// 5(4), each member's step size controlled on its own; time and step in
/// double): `initial` and `out` hold `members` x 3 values (x, y, z of member
/// m at 3 m). `sigma`, `rho`, `beta`: `members` values each, or NULL for the
/// value in `params` (NULL `params`: the defaults). `save_times`: `save_len`
/// times (sorted, unique, each in [t0, t_end]; NULL when `save_len` is 0)
/// whose states, from the steps' dense output, go to `saved`, `save_len` x
/// members x 3 values (NULL when `save_len` is 0). Per member, `accepted`
/// and `rejected` receive its accepted and rejected steps and `status` how
/// its run ended (KP_LORENZ63_REACHED, KP_LORENZ63_MAX_STEPS or
/// KP_LORENZ63_STEP_TOO_SMALL: a member that stops early keeps its last
/// state in `out` and has NaN at the later save times); `members` values
/// each, or NULL when not wanted. Runs on the context's backend; returns
/// when the results are written, nothing written on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
struct kp_lorenz63_adaptive<T> {
    params: *const kp_lorenz63_adaptive_params,
    initial: *const T,
    members: usize,
    sigma: *const T,
    rho: *const T,
    beta: *const T,
    save_times: *const f64,
    save_len: usize,
    out: *mut T,
    saved: *mut T,
    accepted: *mut u32,
    rejected: *mut u32,
    status: *mut u32,
}

impl<T: Float> Entry for kp_lorenz63_adaptive<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (members, save_len) = (self.members, self.save_len);
        let len = raw::product("members", members, "3", 3)?;
        let saved_len = raw::product("save_len", save_len, "members x 3", len)?;
        let mut inputs = vec![
            Span::of("initial", self.initial, len),
            Span::of("save_times", self.save_times, save_len),
        ];
        for (name, ptr) in [
            ("sigma", self.sigma),
            ("rho", self.rho),
            ("beta", self.beta),
        ] {
            inputs.push(Span::of(name, ptr, members));
        }
        check_apart(
            &[
                Span::of("out", self.out, len),
                Span::of("saved", self.saved, saved_len),
                Span::of("accepted", self.accepted, members),
                Span::of("rejected", self.rejected, members),
                Span::of("status", self.status, members),
            ],
            &inputs,
        )?;
        let initial = unsafe { raw::host("initial", self.initial, len) }?;
        let each = |name, ptr| unsafe { raw::optional_host(name, ptr, members) };
        let each = [
            each("sigma", self.sigma)?,
            each("rho", self.rho)?,
            each("beta", self.beta)?,
        ];
        let p = unsafe { adaptive_params(self.params, each) };
        let save_times: &[f64] = match save_len {
            0 => &[],
            _ => unsafe { raw::host("save_times", self.save_times, save_len) }?,
        };
        let out = unsafe { raw::host_mut("out", self.out, len) }?;
        let saved = match save_len {
            0 => None,
            _ => Some(unsafe { raw::host_mut("saved", self.saved, saved_len) }?),
        };
        let counts = |name, ptr| unsafe { raw::optional_host_mut(name, ptr, members) };
        let accepted = counts("accepted", self.accepted)?;
        let rejected = counts("rejected", self.rejected)?;
        let status = counts("status", self.status)?;
        // Computed in full before anything is written to the outputs.
        let run = kp.run(Lorenz63AdaptiveRun {
            params: p,
            initial,
            save_times,
        })?;
        out.copy_from_slice(&run.final_state);
        if let Some(saved) = saved {
            saved.copy_from_slice(&run.saved);
        }
        if let Some(accepted) = accepted {
            accepted.copy_from_slice(&run.accepted);
        }
        if let Some(rejected) = rejected {
            rejected.copy_from_slice(&run.rejected);
        }
        if let Some(status) = status {
            for (to, from) in status.iter_mut().zip(&run.status) {
                *to = *from as u32;
            }
        }
        Ok(())
    }
}

/// Adaptive Lorenz 63 ensemble on device arrays (CUdeviceptr values) in
/// {precision}, enqueued on `stream` (0: the default stream) with no
/// synchronisation. Shapes as `kp_lorenz63_adaptive_{dtype}`; `sigma`,
/// `rho`, `beta` 0 for the value in `params`; `save_times` is host memory
/// (`save_len` values, copied to the stream before the call returns),
/// `saved` 0 when `save_len` is 0; `stats`: `members` x 3 uint32_t
/// (accepted steps, rejected steps, status of member m at 3 m; status one of
/// the KP_LORENZ63_* codes), or 0 when not wanted. Needs a GPU context. Only
/// shapes and pointers are checked (device data cannot be inspected without
/// a synchronisation).
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `save_times` valid for `save_len`
/// values; `stream` 0 or a CUstream of the GPU's primary context.
struct kp_lorenz63_adaptive_device<T> {
    params: *const kp_lorenz63_adaptive_params,
    initial: u64,
    members: usize,
    sigma: u64,
    rho: u64,
    beta: u64,
    save_times: *const f64,
    save_len: usize,
    out: u64,
    saved: u64,
    stats: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_lorenz63_adaptive_device<T> {
    type Op = Lorenz63AdaptiveOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let given = |ptr: u64| (ptr != 0).then_some(ptr);
        let each = [self.sigma, self.rho, self.beta].map(given);
        let p = unsafe { adaptive_params(self.params, each) };
        let save_times: &[f64] = match self.save_len {
            0 => &[],
            n => unsafe { raw::host("save_times", self.save_times, n) }?,
        };
        let buffers = Lorenz63AdaptiveDeviceBuffers {
            initial: raw::device("initial", self.initial)?,
            out: raw::device("out", self.out)?,
            saved: match self.save_len {
                0 => None,
                _ => Some(raw::device("saved (save_len > 0)", self.saved)?),
            },
            stats: given(self.stats),
        };
        Ok(Lorenz63AdaptiveOnDevice {
            p,
            buffers,
            members: self.members,
            save_times: save_times.to_vec(),
            dtype: PhantomData,
        })
    }
}
