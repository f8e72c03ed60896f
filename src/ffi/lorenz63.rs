//! C ABI of the Lorenz 63 ensembles: host-pointer and device-pointer entry
//! points per dtype, declared once each (the per-dtype functions are in
//! `entry_points.rs`).
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::lorenz63::{Lorenz63DeviceBuffers, Lorenz63OnDevice, Lorenz63Run, PerMember};
use crate::api::Kernpack;
use crate::float::Float;
use crate::params::lorenz63::Lorenz63Params;
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
