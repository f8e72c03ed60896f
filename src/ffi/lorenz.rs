//! C ABI of the ODE ensembles (Lorenz 96, Lorenz 2005 Model II / III) and
//! of the periodic window sum: host-pointer and device-pointer entry points
//! per dtype, declared once each (the per-dtype functions are in
//! `entry_points.rs`).
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::lorenz::{
    EnsembleDeviceBuffers, EnsembleParams, EnsembleRun, Lorenz96Tangent, MemberParams,
    WindowSumOnDevice,
};
use crate::api::Kernpack;
use crate::float::Float;
use crate::gpu::lorenz::EnsembleModel;
use crate::raw::{self, check_apart, Span};
use crate::{Lorenz05Model, Lorenz05Params, Lorenz96Params};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

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
    /// Nonzero: the forcing is part of each member's state, which then holds
    /// 2N values, X_0..X_{N-1} then F_0..F_{N-1} (F_k forces site k and does
    /// not change); `forcing` is unused (default 0).
    pub forcing_in_state: u32,
    /// Standard deviation s of the additive noise, finite and >= 0 (default
    /// 0: none): each step adds W = s sqrt(dt) N(0, 1), drawn per member,
    /// step and site, to every RK4 stage's increment.
    pub noise: f64,
    /// The noise's seed: the same seed draws the same noise on every backend
    /// and GPU count (default 0).
    pub seed: u64,
    /// The member index of this call's first member in the noise draws
    /// (default 0): pieces of one ensemble run by separate calls draw the
    /// whole run's noise when each passes the index of its first member.
    pub member_offset: u64,
    /// The step index of this call's first step in the noise draws (default
    /// 0), at most 2^62: a run continued over several calls draws one whole
    /// run's noise when each passes the steps run before it.
    pub step_offset: u64,
}

/// Lorenz (2005) Model II / III parameters (NCAR DART's "Lorenz 04"); start
/// from `kp_lorenz05_default_params()`. F, b and c are every member's,
/// unless a call gives them per member.
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

/// N = 40, F = 8, dt = 0.05, no forcing in the state, no noise.
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
                forcing_in_state: p.forcing_in_state.into(),
                noise: p.noise,
                seed: p.seed,
                member_offset: p.member_offset,
                step_offset: p.step_offset,
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
            // The exact count, or 0: frame_count saturates, so it cannot
            // tell a count of usize::MAX from an overflow.
            let Some(frames) = steps.checked_div(every) else {
                return 0;
            };
            usize::try_from(frames)
                .ok()
                .and_then(|f| f.checked_add(1))
                .and_then(|f| f.checked_mul(members))
                .and_then(|v| v.checked_mul(n))
                .unwrap_or(0)
        },
    )
}

/// What the ensemble entry points need of their C parameter struct
/// (kp_lorenz96_params, kp_lorenz05_params).
trait CParams: Copy {
    /// The model's parameters.
    type Params: EnsembleParams + Copy;

    /// The parameters at `p` (NULL: the defaults).
    ///
    /// # Safety
    /// `p` is NULL or valid for reads.
    unsafe fn read(p: *const Self) -> Result<Self::Params, RawError>;
}

impl CParams for kp_lorenz96_params {
    type Params = Lorenz96Params;

    unsafe fn read(p: *const Self) -> Result<Lorenz96Params, RawError> {
        let c = unsafe { or_default(p, kp_lorenz96_default_params) };
        Ok(Lorenz96Params {
            n: c.n,
            forcing: c.forcing,
            dt: c.dt,
            forcing_in_state: c.forcing_in_state != 0,
            noise: c.noise,
            seed: c.seed,
            member_offset: c.member_offset,
            step_offset: c.step_offset,
        })
    }
}

impl CParams for kp_lorenz05_params {
    type Params = Lorenz05Params;

    unsafe fn read(p: *const Self) -> Result<Lorenz05Params, RawError> {
        let c = unsafe { or_default(p, kp_lorenz05_default_params) };
        Ok(Lorenz05Params {
            n: c.n,
            forcing: c.forcing,
            k: c.k,
            j: c.j,
            b: c.b,
            c: c.c,
            dt: c.dt,
            model: Lorenz05Model::from_number(c.model as i64)?,
        })
    }
}

/// A C pointer argument, a host pointer or a device address: NULL / 0
/// when not given.
trait Pointer: Copy {
    fn given(self) -> Option<Self>;
}

impl<T> Pointer for *const T {
    fn given(self) -> Option<Self> {
        (!self.is_null()).then_some(self)
    }
}

impl Pointer for u64 {
    fn given(self) -> Option<Self> {
        (self != 0).then_some(self)
    }
}

/// The per-member C arguments of a model that takes none (Lorenz 96): every
/// member runs with the parameters' values.
struct Scalars {}

impl<A> From<Scalars> for MemberParams<A> {
    fn from(_: Scalars) -> Self {
        MemberParams::default()
    }
}

/// Lorenz 2005's per-member C arguments: F, b, c, `members` values each at
/// host pointers or device addresses `A`, NULL / 0 for the parameters' value.
struct PerMember<A> {
    forcing: A,
    b: A,
    c: A,
}

impl<A: Pointer> From<PerMember<A>> for MemberParams<A> {
    fn from(p: PerMember<A>) -> Self {
        MemberParams {
            forcing: p.forcing.given(),
            b: p.b.given(),
            c: p.c.given(),
        }
    }
}

/// The output C arguments of a run with a frame every `every` steps: the
/// final states to `out`, the frames to `trajectory`, `trajectory_len`
/// values by the caller's count (NULL / 0 allowed when `every` is 0).
struct Every<B> {
    every: u64,
    out: B,
    trajectory: B,
    trajectory_len: usize,
}

/// The output C arguments of a run that keeps the states after the
/// `save_len` steps at host `save_at`: the final states to `out`, the
/// frames to `saved` (NULL / 0 allowed when `save_len` is 0).
struct SaveAt<B> {
    save_at: *const u64,
    save_len: usize,
    out: B,
    saved: B,
}

/// What a run writes, from its output C arguments ([`Every`], [`SaveAt`]):
/// the final states to `out`, the frames that `frames` describes to
/// `frames_buffer`.
struct Outputs<B> {
    out: B,
    frames_buffer: B,
    frames: Frames,
}

/// The frames a run keeps.
#[derive(Clone, Copy)]
enum Frames {
    /// One every `every` steps (none when 0), into a buffer the caller
    /// says holds `len` values.
    Every { every: u64, len: usize },
    /// The states after the `save_len` steps at host `save_at`.
    SaveAt {
        save_at: *const u64,
        save_len: usize,
    },
}

impl<B> From<Every<B>> for Outputs<B> {
    fn from(a: Every<B>) -> Self {
        Outputs {
            out: a.out,
            frames_buffer: a.trajectory,
            frames: Frames::Every {
                every: a.every,
                len: a.trajectory_len,
            },
        }
    }
}

impl<B> From<SaveAt<B>> for Outputs<B> {
    fn from(a: SaveAt<B>) -> Self {
        Outputs {
            out: a.out,
            frames_buffer: a.saved,
            frames: Frames::SaveAt {
                save_at: a.save_at,
                save_len: a.save_len,
            },
        }
    }
}

impl Frames {
    /// The trajectory interval, as the run takes it (0 for saved steps).
    fn every(self) -> u64 {
        match self {
            Frames::Every { every, .. } => every,
            Frames::SaveAt { .. } => 0,
        }
    }

    /// The frame buffer's name in a NULL error, or None when no frame is
    /// wanted (the buffer may then be NULL / 0).
    fn wanted(self) -> Option<&'static str> {
        match self {
            Frames::Every { every: 0, .. } | Frames::SaveAt { save_len: 0, .. } => None,
            Frames::Every { .. } => Some("trajectory (every > 0)"),
            Frames::SaveAt { .. } => Some("saved (save_len > 0)"),
        }
    }

    /// The frame buffer's name and the values a host run writes to it (the
    /// caller's count for a trajectory), `len` values per frame.
    fn host_span(self, len: usize) -> Result<(&'static str, usize), RawError> {
        Ok(match self {
            Frames::Every { every: 0, .. } => ("trajectory", 0),
            Frames::Every { len: given, .. } => ("trajectory", given),
            Frames::SaveAt { save_len, .. } => (
                "saved",
                raw::product("save_len", save_len, "members x N", len)?,
            ),
        })
    }

    /// The saved steps, read from the caller's list (empty for a trajectory).
    ///
    /// # Safety
    /// `save_at` NULL or valid for `save_len` values.
    unsafe fn save_at<'a>(self) -> Result<&'a [u64], RawError> {
        match self {
            Frames::SaveAt { save_at, save_len } if save_len > 0 => unsafe {
                raw::host("save_at", save_at, save_len)
            },
            _ => Ok(&[]),
        }
    }
}

/// An ensemble run on host buffers: the C arguments of the host ensemble
/// entry points, in their order. `P` is the C parameter struct, `E` the
/// per-member arguments ([`Scalars`], [`PerMember`]), `F` the outputs and
/// frames ([`Every`], [`SaveAt`]). Each entry point is an alias that names
/// its parts; the generator flattens `each` and `outputs` into their
/// fields, so one run serves every argument list.
struct HostRun<T, P, E, F> {
    params: *const P,
    initial: *const T,
    members: usize,
    each: E,
    steps: u64,
    outputs: F,
}

impl<T, P, E, F> Entry for HostRun<T, P, E, F>
where
    T: Float,
    P: CParams,
    E: Into<MemberParams<*const T>>,
    F: Into<Outputs<*mut T>>,
{
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let params = unsafe { P::read(self.params) }?;
        let (members, steps) = (self.members, self.steps);
        let len = raw::product("members", members, "N", params.values_per_member())?;
        let each: MemberParams<*const T> = self.each.into();
        let Outputs {
            out,
            frames_buffer,
            frames,
        } = self.outputs.into();
        let (frames_name, frames_len) = frames.host_span(len)?;
        let mut inputs = vec![Span::of("initial", self.initial, len)];
        for (name, ptr) in each.named() {
            inputs.push(Span::of(
                name,
                ptr.map_or(std::ptr::null(), |p| *p),
                members,
            ));
        }
        // The list is viewed beside the mutable outputs: apart from them too.
        if let Frames::SaveAt { save_at, save_len } = frames {
            inputs.push(Span::of("save_at", save_at, save_len));
        }
        check_apart(
            &[
                Span::of("out", out, len),
                Span::of(frames_name, frames_buffer, frames_len),
            ],
            &inputs,
        )?;
        let initial = unsafe { raw::host("initial", self.initial, len) }?;
        let host = |name, ptr: Option<*const T>| match ptr {
            Some(ptr) => unsafe { raw::host(name, ptr, members) }.map(Some),
            None => Ok(None),
        };
        let each = MemberParams {
            forcing: host("forcing", each.forcing)?,
            b: host("b", each.b)?,
            c: host("c", each.c)?,
        };
        let save_at = unsafe { frames.save_at() }?;
        let out = unsafe { raw::host_mut("out", out, len) }?;
        let frames_out = match frames.wanted() {
            Some(name) => Some(unsafe { raw::host_mut(name, frames_buffer, frames_len) }?),
            None => None,
        };
        if let Frames::Every { every, len: given } = frames {
            raw::check_trajectory_len(given, len, steps, every)?;
        }
        // Computed in full before anything is written to the outputs.
        let run = kp.run(EnsembleRun {
            params: &params,
            each,
            initial,
            steps,
            every: frames.every(),
            save_at,
        })?;
        out.copy_from_slice(&run.final_state);
        if let (Some(dst), Some(src)) = (frames_out, run.trajectory) {
            dst.copy_from_slice(&src);
        }
        Ok(())
    }
}

/// An ensemble run on device buffers: the C arguments of the device
/// ensemble entry points, in their order (`stream` aside); `P`, `E`, `F`
/// as in [`HostRun`].
struct DeviceRun<T, P, E, F> {
    params: *const P,
    initial: u64,
    members: usize,
    each: E,
    steps: u64,
    outputs: F,
    _dtype: PhantomData<T>,
}

impl<T, P, E, F> DeviceEntry for DeviceRun<T, P, E, F>
where
    T: Float,
    P: CParams,
    E: Into<MemberParams<u64>>,
    F: Into<Outputs<u64>>,
{
    type Op = <P::Params as EnsembleModel>::OnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let params = unsafe { P::read(self.params) }?;
        let (members, steps) = (self.members, self.steps);
        let Outputs {
            out,
            frames_buffer,
            frames,
        } = self.outputs.into();
        let save_at = unsafe { frames.save_at() }?;
        let buffers = EnsembleDeviceBuffers {
            initial: raw::device("initial", self.initial)?,
            out: raw::device("out", out)?,
            trajectory: match frames.wanted() {
                Some(name) => Some(raw::device(name, frames_buffer)?),
                None => None,
            },
        };
        // The caller's count of trajectory values (saved steps have none).
        if let Frames::Every { every, len: given } = frames {
            let len = raw::product("members", members, "N", params.values_per_member())?;
            raw::check_trajectory_len(given, len, steps, every)?;
        }
        // The description checks the rest (the list, the counts) before any launch.
        let (each, every) = (self.each.into(), frames.every());
        Ok(params.on_device(buffers, each, (0, members), steps, (every, save_at)))
    }
}

/// Integrates a Lorenz 96 ensemble of host arrays in {precision}: `initial`
/// and `out` hold `members` x `params->n` values (member m at m * n; with
/// `params->forcing_in_state`, members x 2n: X then F per member),
/// `steps` RK4 steps of `params->dt`, all members in one launch on a GPU
/// context. With `every` > 0, `trajectory` receives
/// `kp_lorenz_trajectory_len(members, n, steps, every)` values (= `trajectory_len`):
/// frames of members x n, frame f after f * every steps (frame 0: `initial`);
/// with `every` = 0 it may be NULL. `params` NULL means the defaults.
/// Returns when the results are in `out` / `trajectory`, untouched on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
type kp_lorenz96<T> = HostRun<T, kp_lorenz96_params, Scalars, Every<*mut T>>;

/// As `kp_lorenz96_{dtype}`, for Lorenz (2005) Model II / III
/// (`params->model`), in {precision}. `forcing`, `b`, `c`: `members` values
/// each (finite), member m running with its F, b, c as it would alone, or
/// NULL for the value in `params` (NULL `params`: the defaults).
///
/// # Safety
/// As `kp_lorenz96_{dtype}`; `forcing`, `b`, `c` NULL or valid for `members` values.
type kp_lorenz05<T> = HostRun<T, kp_lorenz05_params, PerMember<*const T>, Every<*mut T>>;

/// Lorenz 96's tangent linear model on host arrays in {precision}:
/// integrates `initial` (`members` x `params->n` values) for `steps` RK4
/// steps into `out` (as many values) and propagates `perturbations`
/// (`members` x `k` x n values: k vectors per member, member m's at
/// m * k * n) by the exact derivative of the run into `perturbations_out`
/// (as many values). With k = n and identity perturbations, each member's
/// Jacobian of the run, row-major by perturbation. `params->forcing_in_state`
/// must be 0; noise moves the states only. On a GPU context, n must be a
/// power of two (up to 32) times 2..10, 12 or 16. `params` NULL means the
/// defaults. Outputs untouched on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
struct kp_lorenz96_tangent<T> {
    params: *const kp_lorenz96_params,
    initial: *const T,
    members: usize,
    perturbations: *const T,
    k: usize,
    steps: u64,
    out: *mut T,
    perturbations_out: *mut T,
}

impl<T: Float> Entry for kp_lorenz96_tangent<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let params = unsafe { <kp_lorenz96_params as CParams>::read(self.params) }?;
        let len = raw::product("members", self.members, "N", params.n)?;
        let vlen = raw::product("members x N", len, "k", self.k)?;
        check_apart(
            &[
                Span::of("out", self.out, len),
                Span::of("perturbations_out", self.perturbations_out, vlen),
            ],
            &[
                Span::of("initial", self.initial, len),
                Span::of("perturbations", self.perturbations, vlen),
            ],
        )?;
        let initial = unsafe { raw::host("initial", self.initial, len) }?;
        let perturbations = unsafe { raw::host("perturbations", self.perturbations, vlen) }?;
        let out = unsafe { raw::host_mut("out", self.out, len) }?;
        let v = unsafe { raw::host_mut("perturbations_out", self.perturbations_out, vlen) }?;
        // Computed in full before anything is written to the outputs.
        let run = kp.run(Lorenz96Tangent {
            params: &params,
            initial,
            perturbations,
            steps: self.steps,
        })?;
        out.copy_from_slice(&run.final_state);
        v.copy_from_slice(&run.perturbations);
        Ok(())
    }
}

/// Lorenz 96 ensemble on device arrays (CUdeviceptr values) in {precision},
/// enqueued on `stream` (0: the default stream) with no synchronisation.
/// Shapes as `kp_lorenz96_{dtype}`; `trajectory` 0 when `every` is 0. Needs a
/// GPU context. Only shapes and pointers are checked (device data cannot be
/// inspected without a synchronisation).
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
type kp_lorenz96_device<T> = DeviceRun<T, kp_lorenz96_params, Scalars, Every<u64>>;

/// As `kp_lorenz96_device_{dtype}`, for Lorenz (2005) Model II / III, in
/// {precision}. `forcing`, `b`, `c`: device arrays of `members` values each,
/// or 0 for the value in `params` (their values are not inspected).
///
/// # Safety
/// As `kp_lorenz96_device_{dtype}`; non-zero `forcing`, `b`, `c` device
/// allocations of `members` values.
type kp_lorenz05_device<T> = DeviceRun<T, kp_lorenz05_params, PerMember<u64>, Every<u64>>;

/// Integrates a Lorenz 96 ensemble of host arrays in {precision} and keeps
/// its states after chosen steps: `initial` and `out` as in
/// `kp_lorenz96_{dtype}`, `steps` RK4 steps; `save_at`: `save_len` step
/// indices (sorted, unique, each in 0..=steps; NULL when `save_len` is 0)
/// whose states go to `saved`, `save_len` x members x n values (frame k
/// after `save_at[k]` steps, 0: `initial`; NULL when `save_len` is 0), as
/// `kp_lorenz63_{dtype}`'s. The run is cut into segments at the saved steps;
/// the noise is drawn for each step's index in the whole run, so `out` is
/// bitwise that of `kp_lorenz96_{dtype}`. `params` NULL means the defaults.
/// Returns when the results are written, nothing written on failure
/// (KP_ERROR_INVALID_ARGUMENT for an unsorted or repeated list or a step
/// past `steps`, KP_ERROR_NULL_POINTER for a NULL `save_at` or `saved` with
/// `save_len` > 0).
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
type kp_lorenz96_save_at<T> = HostRun<T, kp_lorenz96_params, Scalars, SaveAt<*mut T>>;

/// As `kp_lorenz96_save_at_{dtype}`, for Lorenz (2005) Model II / III
/// (`params->model`), in {precision}. `forcing`, `b`, `c`: `members` values
/// each (finite), member m running with its F, b, c as it would alone, or
/// NULL for the value in `params` (NULL `params`: the defaults), as in
/// `kp_lorenz05_{dtype}`.
///
/// # Safety
/// As `kp_lorenz96_save_at_{dtype}`; `forcing`, `b`, `c` NULL or valid for
/// `members` values.
type kp_lorenz05_save_at<T> = HostRun<T, kp_lorenz05_params, PerMember<*const T>, SaveAt<*mut T>>;

/// As `kp_lorenz96_save_at_{dtype}` on device arrays (CUdeviceptr values)
/// in {precision}, enqueued on `stream` (0: the default stream) with no
/// synchronisation: one launch per segment between saved steps. `save_at`
/// is host memory (`save_len` values), `saved` 0 when `save_len` is 0 and
/// apart from `initial` and `out`. Needs a GPU context. Only shapes and
/// pointers are checked (device data cannot be inspected without a
/// synchronisation).
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `save_at` valid for `save_len`
/// values; `stream` 0 or a CUstream of the GPU's primary context.
type kp_lorenz96_save_at_device<T> = DeviceRun<T, kp_lorenz96_params, Scalars, SaveAt<u64>>;

/// As `kp_lorenz96_save_at_device_{dtype}`, for Lorenz (2005) Model II /
/// III, in {precision}. `forcing`, `b`, `c`: device arrays of `members`
/// values each, or 0 for the value in `params` (their values are not
/// inspected), as in `kp_lorenz05_device_{dtype}`.
///
/// # Safety
/// As `kp_lorenz96_save_at_device_{dtype}`; non-zero `forcing`, `b`, `c`
/// device allocations of `members` values.
type kp_lorenz05_save_at_device<T> = DeviceRun<T, kp_lorenz05_params, PerMember<u64>, SaveAt<u64>>;

/// Periodic weighted window sum of `rows` contiguous rows of `n` host
/// values, in {precision}:
/// `out[r*n + i] = sum_{m=0}^{w_len-1} w[m] x[r*n + (i + J - m) mod n]`
/// with `w_len = 2J + 1` odd, summed in m order. With the Model III weights
/// (end weights halved) this is the smoothing X of Lorenz (2005) Model III.
/// `out` (rows x n values) is untouched on failure.
///
/// # Safety
/// `x` and `out` valid for rows x n values, `w` for `w_len`.
struct kp_window_sum<T> {
    x: *const T,
    w: *const T,
    w_len: usize,
    rows: usize,
    n: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_window_sum<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let len = raw::product("rows", self.rows, "n", self.n)?;
        check_apart(
            &[Span::of("out", self.out, len)],
            &[
                Span::of("x", self.x, len),
                Span::of("w", self.w, self.w_len),
            ],
        )?;
        let x = unsafe { raw::host("x", self.x, len) }?;
        let w = unsafe { raw::host("w", self.w, self.w_len) }?;
        let out = unsafe { raw::host_mut("out", self.out, len) }?;
        let result = kp.window_sum(x, w, self.rows, self.n)?;
        out.copy_from_slice(&result);
        Ok(())
    }
}

/// Window sums of device arrays in {precision}, enqueued on `stream` with no
/// synchronisation: row r of `x` and `out` starts at r * `pitch` (>= n);
/// values between n and pitch are not written. Needs a GPU context.
///
/// # Safety
/// `x` and `out` device allocations of (rows - 1) * pitch + n values, `w` of
/// `w_len`, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
struct kp_window_sum_device<T> {
    x: u64,
    w: u64,
    w_len: usize,
    rows: usize,
    n: usize,
    pitch: usize,
    out: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_window_sum_device<T> {
    type Op = WindowSumOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let (x, w) = (raw::device("x", self.x)?, raw::device("w", self.w)?);
        let out = raw::device("out", self.out)?;
        let (w_len, rows, n, pitch) = (self.w_len, self.rows, self.n, self.pitch);
        let dtype = PhantomData;
        #[rustfmt::skip]
        let op = WindowSumOnDevice { x, w, w_len, out, rows, n, pitch, dtype };
        Ok(op)
    }
}
