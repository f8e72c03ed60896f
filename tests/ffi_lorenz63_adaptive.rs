//! The adaptive Lorenz 63 C entry points: a call gives what the safe API
//! gives on the same backend (bit for bit), NULL parameters are the
//! defaults and NULL optional outputs are skipped, and every bad call is a
//! non-OK status with a message naming the argument, every output
//! untouched. On a CPU context, and on a GPU context when there is one.
mod common;

use std::ptr::{null, null_mut, NonNull};

use common::{gpu_or_skip, last_error, Ctx, DeviceBuf};
use kernpack::ffi::lorenz63::{
    kp_lorenz63_adaptive_default_params, kp_lorenz63_adaptive_device_f32,
    kp_lorenz63_adaptive_device_f64, kp_lorenz63_adaptive_f32, kp_lorenz63_adaptive_f64,
    kp_lorenz63_adaptive_params, KP_LORENZ63_MAX_STEPS, KP_LORENZ63_REACHED,
    KP_LORENZ63_STEP_TOO_SMALL,
};
use kernpack::ffi::{kp_backend, kp_context, kp_status, kp_stream_synchronize};
use kernpack::ffi::{KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{
    AdaptiveControl, AdaptiveStatus, Backend, Float, Kernpack, Lorenz63AdaptiveEnsemble,
    Lorenz63AdaptiveParams, PerMember,
};

use kp_status::*;

const POISON: f64 = -4242.0;
const POISON_COUNT: u32 = 0xdead_beef;

/// The entry points of one dtype.
trait Ffi: Float {
    #[allow(clippy::too_many_arguments)]
    unsafe fn host(
        ctx: *const kp_context,
        params: *const kp_lorenz63_adaptive_params,
        initial: *const Self,
        members: usize,
        each: [*const Self; 3],
        save_times: *const f64,
        save_len: usize,
        out: *mut Self,
        saved: *mut Self,
        counts: [*mut u32; 3],
    ) -> kp_status;
    #[allow(clippy::too_many_arguments)]
    unsafe fn device(
        ctx: *const kp_context,
        params: *const kp_lorenz63_adaptive_params,
        initial: u64,
        members: usize,
        each: [u64; 3],
        save_times: *const f64,
        save_len: usize,
        out: u64,
        saved: u64,
        stats: u64,
    ) -> kp_status;
}

macro_rules! impl_ffi {
    ($t:ty, $host:ident, $device:ident) => {
        impl Ffi for $t {
            unsafe fn host(
                ctx: *const kp_context,
                params: *const kp_lorenz63_adaptive_params,
                initial: *const Self,
                members: usize,
                [sigma, rho, beta]: [*const Self; 3],
                save_times: *const f64,
                save_len: usize,
                out: *mut Self,
                saved: *mut Self,
                [accepted, rejected, status]: [*mut u32; 3],
            ) -> kp_status {
                unsafe {
                    $host(
                        ctx, params, initial, members, sigma, rho, beta, save_times, save_len, out,
                        saved, accepted, rejected, status,
                    )
                }
            }
            unsafe fn device(
                ctx: *const kp_context,
                params: *const kp_lorenz63_adaptive_params,
                initial: u64,
                members: usize,
                [sigma, rho, beta]: [u64; 3],
                save_times: *const f64,
                save_len: usize,
                out: u64,
                saved: u64,
                stats: u64,
            ) -> kp_status {
                unsafe {
                    $device(
                        ctx, params, initial, members, sigma, rho, beta, save_times, save_len, out,
                        saved, stats, 0,
                    )
                }
            }
        }
    };
}
impl_ffi!(
    f32,
    kp_lorenz63_adaptive_f32,
    kp_lorenz63_adaptive_device_f32
);
impl_ffi!(
    f64,
    kp_lorenz63_adaptive_f64,
    kp_lorenz63_adaptive_device_f64
);

/// The outputs of a host call, poisoned until it writes them.
struct Outputs<T> {
    out: Vec<T>,
    saved: Vec<T>,
    accepted: Vec<u32>,
    rejected: Vec<u32>,
    status: Vec<u32>,
}

impl<T: Ffi> Outputs<T> {
    fn poisoned(members: usize, frames: usize) -> Self {
        Outputs {
            out: vec![T::from_f64(POISON); 3 * members],
            saved: vec![T::from_f64(POISON); 3 * members * frames],
            accepted: vec![POISON_COUNT; members],
            rejected: vec![POISON_COUNT; members],
            status: vec![POISON_COUNT; members],
        }
    }

    #[track_caller]
    fn untouched(&self, what: &str) {
        let poison = |v: &[T]| v.iter().all(|x| x.to_f64() == POISON);
        let counts = |v: &[u32]| v.iter().all(|n| *n == POISON_COUNT);
        assert!(
            poison(&self.out) && poison(&self.saved),
            "{what}: a state was written"
        );
        assert!(
            counts(&self.accepted) && counts(&self.rejected) && counts(&self.status),
            "{what}: a count or status was written"
        );
    }

    /// The call with every output given.
    #[allow(clippy::too_many_arguments)]
    fn call(
        &mut self,
        ctx: &Ctx,
        params: *const kp_lorenz63_adaptive_params,
        initial: &[T],
        each: [Option<&[T]>; 3],
        save_times: &[f64],
    ) -> kp_status {
        let each = each.map(|v| v.map_or(null(), <[T]>::as_ptr));
        unsafe {
            T::host(
                ctx.ptr(),
                params,
                initial.as_ptr(),
                initial.len() / 3,
                each,
                save_times.as_ptr(),
                save_times.len(),
                self.out.as_mut_ptr(),
                self.saved.as_mut_ptr(),
                [
                    self.accepted.as_mut_ptr(),
                    self.rejected.as_mut_ptr(),
                    self.status.as_mut_ptr(),
                ],
            )
        }
    }
}

/// Values' bits, so that NaN (a stopped member's later frames) compares.
fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}

/// The C call's outputs are the safe API's result, bit for bit.
#[track_caller]
fn assert_same<T: Ffi>(got: &Outputs<T>, want: &Lorenz63AdaptiveEnsemble<T>, what: &str) {
    assert_eq!(bits(&got.out), bits(&want.final_state), "{what}: out");
    assert_eq!(bits(&got.saved), bits(&want.saved), "{what}: saved");
    assert_eq!(got.accepted, want.accepted, "{what}: accepted");
    assert_eq!(got.rejected, want.rejected, "{what}: rejected");
    let status: Vec<u32> = want.status.iter().map(|s| *s as u32).collect();
    assert_eq!(got.status, status, "{what}: status");
}

const INITIAL: [f64; 12] = [
    1.0, 1.0, 20.0, -5.0, 3.0, 30.0, 0.5, -0.5, 10.0, 8.0, -9.0, 25.0,
];

/// Four members, per-member rho and beta, three save times: two step
/// controls (a tight one with a largest step; a given first step and too
/// few attempts, so that members stop early), against the safe API.
fn agrees_with_the_api<T: Ffi>(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    let initial = cast::<T>(&INITIAL);
    let rho = cast::<T>(&[28.0, 24.0, 35.0, 15.0]);
    let beta = cast::<T>(&[8.0 / 3.0, 2.5, 3.0, 2.0]);
    let save_times = [0.5, 1.0, 1.75];
    let tight = kp_lorenz63_adaptive_params {
        sigma_all: 9.5,
        t0: 0.5,
        t_end: 1.75,
        rtol: if T::NAME == "f64" { 1e-9 } else { 1e-5 },
        atol: 1e-7,
        max_step: 0.05,
        ..kp_lorenz63_adaptive_default_params()
    };
    let short = kp_lorenz63_adaptive_params {
        first_step: 1e-3,
        max_steps: 25,
        ..tight
    };
    for (name, c) in [("tight", tight), ("early stops", short)] {
        let mut got = Outputs::<T>::poisoned(4, 3);
        let status = got.call(
            &ctx,
            &c,
            &initial,
            [None, Some(&rho), Some(&beta)],
            &save_times,
        );
        assert_eq!(status, KP_OK, "{name}: {}", last_error());
        assert_eq!(last_error(), "", "{name}: a message after a success");
        let p = Lorenz63AdaptiveParams {
            sigma: PerMember::All(c.sigma_all),
            rho: PerMember::Each(&rho[..]),
            beta: PerMember::Each(&beta[..]),
            t0: c.t0,
            t_end: c.t_end,
            control: AdaptiveControl {
                rtol: c.rtol,
                atol: c.atol,
                first_step: (c.first_step != 0.0).then_some(c.first_step),
                max_step: c.max_step,
                max_steps: c.max_steps,
            },
        };
        let want = kp.lorenz63_adaptive(&p, &initial, &save_times).unwrap();
        assert_same(&got, &want, &format!("{} {name}", T::NAME));
        assert_eq!(bits(&got.saved[..12]), bits(&initial), "frame 0 at t0");
        if name == "tight" {
            assert!(got.status.iter().all(|s| *s == KP_LORENZ63_REACHED));
            assert_eq!(
                bits(&got.saved[24..]),
                bits(&got.out),
                "last frame at t_end"
            );
        } else {
            assert!(got.status.contains(&KP_LORENZ63_MAX_STEPS));
            for m in 0..4 {
                if got.status[m] == KP_LORENZ63_MAX_STEPS {
                    assert_eq!(got.accepted[m] + got.rejected[m], 25);
                    let last = &got.saved[24 + 3 * m..27 + 3 * m];
                    assert!(last.iter().all(|v| v.to_f64().is_nan()));
                }
            }
        }
    }
}

#[test]
fn c_call_agrees_with_the_api_on_cpu() {
    agrees_with_the_api::<f64>(KP_BACKEND_CPU, Backend::Cpu);
    agrees_with_the_api::<f32>(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn c_call_agrees_with_the_api_on_gpu() {
    if gpu_or_skip("c_call_agrees_with_the_api_on_gpu").is_some() {
        agrees_with_the_api::<f64>(KP_BACKEND_GPU, Backend::Gpu);
        agrees_with_the_api::<f32>(KP_BACKEND_GPU, Backend::Gpu);
    }
}

#[test]
fn default_params_are_the_rust_defaults() {
    let c = kp_lorenz63_adaptive_default_params();
    let p = Lorenz63AdaptiveParams::<&[f64]>::default();
    assert_eq!(
        (c.sigma_all, c.rho_all, c.beta_all),
        (10.0, 28.0, 8.0 / 3.0)
    );
    assert_eq!(
        (c.sigma_all, c.rho_all, c.beta_all),
        (p.sigma.all(), p.rho.all(), p.beta.all())
    );
    assert_eq!((c.t0, c.t_end), (0.0, 1.0));
    assert_eq!((c.rtol, c.atol), (1e-3, 1e-6));
    assert_eq!(c.first_step, 0.0, "0: chosen per member");
    assert_eq!(c.max_step, f64::INFINITY);
    assert_eq!(c.max_steps, 100_000);
    let d = AdaptiveControl::default();
    assert_eq!(
        (c.rtol, c.atol, d.first_step, c.max_step, c.max_steps),
        (d.rtol, d.atol, None, d.max_step, d.max_steps)
    );
    assert_eq!(KP_LORENZ63_REACHED, AdaptiveStatus::Reached as u32);
    assert_eq!(KP_LORENZ63_MAX_STEPS, AdaptiveStatus::MaxSteps as u32);
    assert_eq!(
        KP_LORENZ63_STEP_TOO_SMALL,
        AdaptiveStatus::StepTooSmall as u32
    );
}

/// NULL `params` runs the defaults; NULL save times (with save_len 0) and
/// NULL counts and statuses are not written, the rest is.
fn nulls<T: Ffi>(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let initial = cast::<T>(&INITIAL);
    let p = Lorenz63AdaptiveParams::<&[T]>::default();
    let want = Kernpack::new(api)
        .unwrap()
        .lorenz63_adaptive(&p, &initial, &[])
        .unwrap();
    let mut out = vec![T::from_f64(POISON); 12];
    let call = |params: *const kp_lorenz63_adaptive_params, out: &mut [T], counts| unsafe {
        T::host(
            ctx.ptr(),
            params,
            initial.as_ptr(),
            4,
            [null(); 3],
            null(),
            0,
            out.as_mut_ptr(),
            null_mut(),
            counts,
        )
    };
    let status = call(null(), &mut out, [null_mut(); 3]);
    assert_eq!(status, KP_OK, "{}", last_error());
    assert_eq!(bits(&out), bits(&want.final_state));
    // The default struct is the NULL pointer; counts alone, statuses alone.
    let defaults = kp_lorenz63_adaptive_default_params();
    let (mut again, mut accepted, mut status) = (out.clone(), [POISON_COUNT; 4], [7u32; 4]);
    let s = call(
        &defaults,
        &mut again,
        [accepted.as_mut_ptr(), null_mut(), null_mut()],
    );
    assert_eq!(s, KP_OK, "{}", last_error());
    assert_eq!(bits(&again), bits(&out));
    assert_eq!(accepted[..], want.accepted[..]);
    let s = call(
        &defaults,
        &mut again,
        [null_mut(), null_mut(), status.as_mut_ptr()],
    );
    assert_eq!(s, KP_OK, "{}", last_error());
    assert_eq!(status, [KP_LORENZ63_REACHED; 4]);
    // A saved-states pointer and save times with save_len 0 are not read.
    let bogus = NonNull::<T>::dangling().as_ptr(); // never dereferenced
    let s = unsafe {
        T::host(
            ctx.ptr(),
            null(),
            initial.as_ptr(),
            4,
            [null(); 3],
            NonNull::<f64>::dangling().as_ptr(),
            0,
            again.as_mut_ptr(),
            bogus,
            [null_mut(); 3],
        )
    };
    assert_eq!(s, KP_OK, "{}", last_error());
    assert_eq!(bits(&again), bits(&out));
}

#[test]
fn nulls_on_cpu() {
    nulls::<f64>(KP_BACKEND_CPU, Backend::Cpu);
    nulls::<f32>(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn nulls_on_gpu() {
    if gpu_or_skip("nulls_on_gpu").is_some() {
        nulls::<f64>(KP_BACKEND_GPU, Backend::Gpu);
        nulls::<f32>(KP_BACKEND_GPU, Backend::Gpu);
    }
}

/// A failed call: `want`, a message holding each of `words`.
#[track_caller]
fn expect_failure(status: kp_status, want: kp_status, words: &[&str]) {
    let msg = last_error();
    assert_eq!(status, want, "{words:?}: message {msg:?}");
    for w in words {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
}

fn error_paths<T: Ffi>(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let initial = cast::<T>(&INITIAL[..6]);
    let ok = kp_lorenz63_adaptive_default_params();
    let with = |f: fn(&mut kp_lorenz63_adaptive_params)| {
        let mut p = ok;
        f(&mut p);
        p
    };
    let mut o = Outputs::<T>::poisoned(2, 2);
    let none = [None; 3];
    // Bad parameters, one at a time.
    let cases: Vec<(kp_lorenz63_adaptive_params, &[&str])> = vec![
        (with(|p| p.t_end = -1.0), &["t_end >= t0", "-1"]),
        (with(|p| p.t0 = f64::NAN), &["time span", "NaN"]),
        (with(|p| p.t_end = f64::INFINITY), &["time span"]),
        (with(|p| p.rtol = f64::NAN), &["rtol", "NaN"]),
        (with(|p| p.atol = -1e-6), &["atol"]),
        (with(|p| (p.rtol, p.atol) = (0.0, 0.0)), &["both be 0"]),
        (with(|p| p.first_step = -1e-3), &["first_step", "-0.001"]),
        (
            with(|p| p.first_step = 2.0),
            &["first_step", "t_end - t0 = 1"],
        ),
        (with(|p| p.first_step = f64::NAN), &["first_step", "NaN"]),
        (with(|p| p.max_step = 0.0), &["max_step"]),
        (with(|p| p.max_step = f64::NAN), &["max_step", "NaN"]),
        (with(|p| p.max_steps = 0), &["max_steps"]),
        (
            with(|p| p.sigma_all = f64::INFINITY),
            &["sigma must be finite"],
        ),
        (with(|p| p.beta_all = f64::NAN), &["beta must be finite"]),
    ];
    for (p, words) in cases {
        let status = o.call(&ctx, &p, &initial, none, &[0.5, 0.75]);
        expect_failure(status, KP_ERROR_INVALID_ARGUMENT, words);
        o.untouched(words[0]);
    }
    // Bad arrays.
    let nan_sigma = cast::<T>(&[10.0, f64::NAN]);
    let status = o.call(&ctx, &ok, &initial, [Some(&nan_sigma), None, None], &[]);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["sigma[1]", "NaN"]);
    let bad_initial = cast::<T>(&[1.0, 2.0, 3.0, 4.0, f64::INFINITY, 6.0]);
    let status = o.call(&ctx, &ok, &bad_initial, none, &[]);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["initial value 4", "inf"],
    );
    let status = o.call(&ctx, &ok, &initial, none, &[0.5, 0.25]);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["sorted and unique"]);
    let status = o.call(&ctx, &ok, &initial, none, &[0.5, 1.5]);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["save_times[1] = 1.5"]);
    let status = o.call(&ctx, &ok, &initial, none, &[f64::NAN, 0.5]);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["save_times[0] = NaN"]);
    o.untouched("bad arrays");

    // Pointers and counts.
    let i = initial.as_ptr();
    let (out, saved) = (o.out.as_mut_ptr(), o.saved.as_mut_ptr());
    let counts = [
        o.accepted.as_mut_ptr(),
        o.rejected.as_mut_ptr(),
        o.status.as_mut_ptr(),
    ];
    let times = [0.25, 0.5];
    let t = times.as_ptr();
    let call = |ctx: *const kp_context,
                initial: *const T,
                members: usize,
                save_times: *const f64,
                save_len: usize,
                out: *mut T,
                saved: *mut T,
                counts: [*mut u32; 3]| unsafe {
        T::host(
            ctx,
            &ok,
            initial,
            members,
            [null(); 3],
            save_times,
            save_len,
            out,
            saved,
            counts,
        )
    };
    let status = call(null(), i, 2, t, 2, out, saved, counts);
    expect_failure(status, KP_ERROR_NULL_POINTER, &["ctx"]);
    let status = call(ctx.ptr(), null(), 2, t, 2, out, saved, counts);
    expect_failure(status, KP_ERROR_NULL_POINTER, &["initial"]);
    let status = call(ctx.ptr(), i, 2, t, 2, null_mut(), saved, counts);
    expect_failure(status, KP_ERROR_NULL_POINTER, &["out"]);
    let status = call(ctx.ptr(), i, 2, t, 2, out, null_mut(), counts);
    expect_failure(status, KP_ERROR_NULL_POINTER, &["saved"]);
    let status = call(ctx.ptr(), i, 2, null(), 2, out, saved, counts);
    expect_failure(status, KP_ERROR_NULL_POINTER, &["save_times"]);
    let status = call(ctx.ptr(), i, 0, t, 0, out, saved, counts);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["initial holds 0"]);
    let status = call(ctx.ptr(), i, usize::MAX, t, 0, out, saved, counts);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["members"]);
    let status = call(ctx.ptr(), i, 2, t, usize::MAX, out, saved, counts);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["save_len"]);
    // A misaligned optional output is refused, not skipped.
    let odd = counts[1].cast::<u8>().wrapping_add(1).cast::<u32>();
    let status = call(
        ctx.ptr(),
        i,
        2,
        t,
        2,
        out,
        saved,
        [counts[0], odd, counts[2]],
    );
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["rejected", "aligned"]);
    // Overlaps: outputs with each other and with the inputs.
    let shared = [counts[0], counts[0], counts[2]];
    let status = call(ctx.ptr(), i, 2, t, 2, out, saved, shared);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["accepted and rejected overlap"],
    );
    let status = call(ctx.ptr(), i, 2, t, 2, out, out, counts);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["out and saved overlap"],
    );
    let into_out = [counts[0], counts[1], out.cast::<u32>()];
    let status = call(ctx.ptr(), i, 2, t, 2, out, saved, into_out);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["out and status overlap"],
    );
    let mut state = initial.clone();
    let sp = state.as_mut_ptr();
    let status = call(ctx.ptr(), sp, 2, t, 2, sp, saved, counts);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["out and initial overlap"],
    );
    assert_eq!(bits(&state), bits(&initial));
    let mut times_in_saved = vec![0.0f64; 12];
    times_in_saved[..2].copy_from_slice(&times);
    let tp = times_in_saved.as_ptr();
    let status = call(
        ctx.ptr(),
        i,
        2,
        tp,
        2,
        out,
        times_in_saved.as_mut_ptr().cast(),
        counts,
    );
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["saved and save_times overlap"],
    );
    o.untouched("pointers and counts");
}

#[test]
fn c_errors_on_cpu() {
    error_paths::<f64>(KP_BACKEND_CPU);
    error_paths::<f32>(KP_BACKEND_CPU);
}

#[test]
fn c_errors_on_gpu() {
    if gpu_or_skip("c_errors_on_gpu").is_some() {
        error_paths::<f64>(KP_BACKEND_GPU);
        error_paths::<f32>(KP_BACKEND_GPU);
    }
}

/// The device entry points need a GPU context, and check their pointers.
#[test]
fn c_device_entry_refuses_a_cpu_context_and_bad_pointers() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    for status in [
        unsafe { f32::device(ctx.ptr(), null(), 8, 1, [0; 3], null(), 0, 16, 0, 0) },
        unsafe { f64::device(ctx.ptr(), null(), 8, 1, [0; 3], null(), 0, 16, 0, 24) },
    ] {
        assert_eq!(status, KP_ERROR_NO_GPU, "{}", last_error());
    }
    if gpu_or_skip("c_device_entry_refuses_bad_pointers").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let initial = DeviceBuf::new(&ctx, &INITIAL[..6]);
    let out = DeviceBuf::new(&ctx, &[POISON; 6]);
    let stats = DeviceBuf::new(&ctx, &[POISON_COUNT; 6]);
    let short_stats = DeviceBuf::new(&ctx, &[POISON_COUNT; 5]);
    let times = [0.5];
    let call = |initial: u64, save_len: usize, out: u64, saved: u64, stats: u64| unsafe {
        f64::device(
            ctx.ptr(),
            null(),
            initial,
            2,
            [0; 3],
            times.as_ptr(),
            save_len,
            out,
            saved,
            stats,
        )
    };
    let (i, o, s) = (initial.ptr, out.ptr, stats.ptr);
    expect_failure(call(0, 0, o, 0, s), KP_ERROR_NULL_POINTER, &["initial"]);
    expect_failure(call(i, 0, 0, 0, s), KP_ERROR_NULL_POINTER, &["out"]);
    expect_failure(call(i, 1, o, 0, s), KP_ERROR_NULL_POINTER, &["saved"]);
    let bad = unsafe { f64::device(ctx.ptr(), null(), i, 2, [0; 3], null(), 1, o, o, 0) };
    expect_failure(bad, KP_ERROR_NULL_POINTER, &["save_times"]);
    // Host memory as device memory, a short stats buffer, stats over out.
    let host = [0.0f64; 6];
    let addr = host.as_ptr() as u64;
    expect_failure(
        call(addr, 0, o, 0, 0),
        KP_ERROR_INVALID_ARGUMENT,
        &["initial"],
    );
    expect_failure(
        call(i, 0, o, 0, short_stats.ptr),
        KP_ERROR_INVALID_ARGUMENT,
        &["stats"],
    );
    expect_failure(call(i, 0, o, 0, o), KP_ERROR_INVALID_ARGUMENT, &["overlap"]);
    let bad = kp_lorenz63_adaptive_params {
        max_steps: 0,
        ..kp_lorenz63_adaptive_default_params()
    };
    let status = unsafe { f64::device(ctx.ptr(), &bad, i, 2, [0; 3], null(), 0, o, 0, s) };
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["max_steps"]);
    assert_eq!(unsafe { kp_stream_synchronize(ctx.ptr(), 0) }, KP_OK);
    assert!(out.read::<f64>().iter().all(|v| *v == POISON));
    assert!(stats.read::<u32>().iter().all(|v| *v == POISON_COUNT));
}

/// The device entry point gives what the host one gives on the same GPU.
fn device_matches_host<T: Ffi>(ctx: &Ctx) {
    let initial = cast::<T>(&INITIAL);
    let sigma = cast::<T>(&[10.0, 9.0, 11.0, 10.5]);
    let times = [0.0, 0.3, 0.6];
    let p = kp_lorenz63_adaptive_params {
        t_end: 0.6,
        rtol: 1e-6,
        atol: 1e-8,
        ..kp_lorenz63_adaptive_default_params()
    };
    let mut host = Outputs::<T>::poisoned(4, 3);
    let status = host.call(ctx, &p, &initial, [Some(&sigma), None, None], &times);
    assert_eq!(status, KP_OK, "{}", last_error());
    let d_initial = DeviceBuf::new(ctx, &initial);
    let d_sigma = DeviceBuf::new(ctx, &sigma);
    let d_out = DeviceBuf::new(ctx, &[T::from_f64(POISON); 12]);
    let d_saved = DeviceBuf::new(ctx, &[T::from_f64(POISON); 36]);
    let d_stats = DeviceBuf::new(ctx, &[POISON_COUNT; 12]);
    let status = unsafe {
        T::device(
            ctx.ptr(),
            &p,
            d_initial.ptr,
            4,
            [d_sigma.ptr, 0, 0],
            times.as_ptr(),
            3,
            d_out.ptr,
            d_saved.ptr,
            d_stats.ptr,
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    assert_eq!(unsafe { kp_stream_synchronize(ctx.ptr(), 0) }, KP_OK);
    assert_eq!(bits(&d_out.read::<T>()), bits(&host.out));
    assert_eq!(bits(&d_saved.read::<T>()), bits(&host.saved));
    let stats = d_stats.read::<u32>();
    let column = |k: usize| stats.iter().skip(k).step_by(3).copied().collect::<Vec<_>>();
    assert_eq!(column(0), host.accepted);
    assert_eq!(column(1), host.rejected);
    assert_eq!(column(2), host.status);
    assert_eq!(host.status, [KP_LORENZ63_REACHED; 4]);
}

#[test]
fn c_device_entry_matches_the_host_entry_on_gpu() {
    if gpu_or_skip("c_device_entry_matches_the_host_entry_on_gpu").is_some() {
        let ctx = Ctx::new(KP_BACKEND_GPU);
        device_matches_host::<f64>(&ctx);
        device_matches_host::<f32>(&ctx);
    }
}

/// A context over every GPU (`kp_context_create_on_devices`) and one over
/// GPU 0 with a small memory limit (many chunks): bitwise the plain GPU
/// context's outputs, counts and statuses (some members stop early).
#[test]
fn c_contexts_over_several_gpus_or_in_chunks_equal_one_gpu() {
    use kernpack::ffi::devices::{kp_context_create_on_devices, kp_device_count};
    if gpu_or_skip("c_contexts_over_several_gpus_or_in_chunks_equal_one_gpu").is_none() {
        return;
    }
    let mut n = 0;
    assert_eq!(unsafe { kp_device_count(&mut n) }, KP_OK);
    let members = 2500;
    let mut state = 0x6a_u64;
    let mut next = |lo: f64, hi: f64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
    };
    let initial: Vec<f64> = (0..3 * members).map(|_| next(-15.0, 15.0)).collect();
    let rho: Vec<f64> = (0..members).map(|_| next(10.0, 35.0)).collect();
    let params = kp_lorenz63_adaptive_params {
        rtol: 1e-9,
        atol: 1e-9,
        max_steps: 120,
        ..kp_lorenz63_adaptive_default_params()
    };
    let times = [0.25, 0.5];
    let run = |ctx: &Ctx| {
        let mut got = Outputs::<f64>::poisoned(members, times.len());
        let status = got.call(ctx, &params, &initial, [None, Some(&rho), None], &times);
        assert_eq!(status, KP_OK, "{}", last_error());
        got
    };
    let want = run(&Ctx::new(KP_BACKEND_GPU));
    assert!(
        want.status.contains(&KP_LORENZ63_MAX_STEPS) && want.status.contains(&KP_LORENZ63_REACHED)
    );
    let all: Vec<i32> = (0..n).collect();
    for (ordinals, limit) in [(&all[..], 0), (&[0][..], 32 << 10)] {
        let mut ctx = null_mut();
        let status = unsafe {
            kp_context_create_on_devices(ordinals.as_ptr(), ordinals.len(), limit, &mut ctx)
        };
        assert_eq!(status, KP_OK, "{}", last_error());
        let got = run(&Ctx(ctx));
        let what = format!("{ordinals:?}, limit {limit}");
        assert_eq!(bits(&got.out), bits(&want.out), "{what}: out");
        assert_eq!(bits(&got.saved), bits(&want.saved), "{what}: saved");
        assert_eq!(
            (&got.accepted, &got.rejected, &got.status),
            (&want.accepted, &want.rejected, &want.status),
            "{what}: counts and statuses"
        );
    }
}
