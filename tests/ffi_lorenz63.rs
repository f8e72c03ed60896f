//! The Lorenz 63 C entry points: a call agrees with the safe API, and every
//! bad call is a non-OK status with a message naming the argument, outputs
//! untouched. On a CPU context, and on a GPU context when there is one; on a
//! context over every GPU (`kp_context_create_on_devices`) and one over GPU 0
//! with a small memory limit (many chunks), bitwise the plain GPU context's.
mod common;

use std::ptr::{null, null_mut};

use common::{gpu_or_skip, last_error, Ctx};
use kernpack::ffi::devices::{kp_context_create_on_devices, kp_device_count};
use kernpack::ffi::lorenz63::{
    kp_lorenz63_default_params, kp_lorenz63_device_f32, kp_lorenz63_f32, kp_lorenz63_f64,
    kp_lorenz63_params,
};
use kernpack::ffi::{kp_backend, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Backend, Kernpack, Lorenz63Params, PerMember};

use kp_status::*;

const POISON: f64 = -4242.0;

/// Three members, per-member rho, two saved steps: the C call against the
/// safe API (the same backend, so bitwise).
fn agrees_with_the_api(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let initial = [1.0, 1.0, 20.0, -5.0, 3.0, 30.0, 0.5, -0.5, 10.0];
    let rho = [28.0, 24.0, 35.0];
    let save_at = [0u64, 40];
    let params = kp_lorenz63_params {
        dt: 0.005,
        ..kp_lorenz63_default_params()
    };
    let (mut out, mut saved) = ([POISON; 9], [POISON; 18]);
    let status = unsafe {
        kp_lorenz63_f64(
            ctx.ptr(),
            &params,
            initial.as_ptr(),
            3,
            null(),
            rho.as_ptr(),
            null(),
            100,
            save_at.as_ptr(),
            2,
            out.as_mut_ptr(),
            saved.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let p = Lorenz63Params {
        rho: PerMember::Each(&rho[..]),
        dt: 0.005,
        ..Default::default()
    };
    let want = Kernpack::new(api)
        .unwrap()
        .lorenz63(&p, &initial, 100, &save_at)
        .unwrap();
    assert_eq!(&out[..], &want.final_state[..]);
    assert_eq!(&saved[..], &want.saved[..]);
    assert_eq!(&saved[..9], &initial[..], "frame 0 is the initial state");
}

#[test]
fn c_call_agrees_with_the_api_on_cpu() {
    agrees_with_the_api(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn c_call_agrees_with_the_api_on_gpu() {
    if gpu_or_skip("c_call_agrees_with_the_api_on_gpu").is_some() {
        agrees_with_the_api(KP_BACKEND_GPU, Backend::Gpu);
    }
}

/// `kp_lorenz63_f64` of `members` members with per-member sigma and beta
/// and three saved steps on `ctx`: (final states, saved states).
fn run_f64(ctx: &Ctx, initial: &[f64], sigma: &[f64], beta: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let members = initial.len() / 3;
    let save_at = [0u64, 25, 120];
    let (mut out, mut saved) = (vec![POISON; 3 * members], vec![POISON; 9 * members]);
    let params = kp_lorenz63_default_params();
    let status = unsafe {
        kp_lorenz63_f64(
            ctx.ptr(),
            &params,
            initial.as_ptr(),
            members,
            sigma.as_ptr(),
            null(),
            beta.as_ptr(),
            120,
            save_at.as_ptr(),
            save_at.len(),
            out.as_mut_ptr(),
            saved.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    (out, saved)
}

#[test]
fn c_contexts_over_several_gpus_or_in_chunks_equal_one_gpu() {
    if gpu_or_skip("c_contexts_over_several_gpus_or_in_chunks_equal_one_gpu").is_none() {
        return;
    }
    let mut n = 0;
    assert_eq!(unsafe { kp_device_count(&mut n) }, KP_OK);
    let members = 2500;
    let mut state = 0x63_u64;
    let mut next = |lo: f64, hi: f64| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lo + (hi - lo) * ((state >> 11) as f64 / (1u64 << 53) as f64)
    };
    let initial: Vec<f64> = (0..3 * members).map(|_| next(-15.0, 15.0)).collect();
    let sigma: Vec<f64> = (0..members).map(|_| next(8.0, 12.0)).collect();
    let beta: Vec<f64> = (0..members).map(|_| next(2.0, 3.0)).collect();
    let want = run_f64(&Ctx::new(KP_BACKEND_GPU), &initial, &sigma, &beta);
    let all: Vec<i32> = (0..n).collect();
    for (ordinals, limit) in [(&all[..], 0), (&[0][..], 32 << 10)] {
        let mut ctx = null_mut();
        let status = unsafe {
            kp_context_create_on_devices(ordinals.as_ptr(), ordinals.len(), limit, &mut ctx)
        };
        assert_eq!(status, KP_OK, "{}", last_error());
        let got = run_f64(&Ctx(ctx), &initial, &sigma, &beta);
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got.0),
            bits(&want.0),
            "{ordinals:?}, limit {limit}: final states"
        );
        assert_eq!(
            bits(&got.1),
            bits(&want.1),
            "{ordinals:?}, limit {limit}: saved states"
        );
    }
}

/// A failed call with a message containing `words`, outputs untouched.
#[track_caller]
fn expect_failure(status: kp_status, want: kp_status, words: &[&str], outputs: &[&[f32]]) {
    let msg = last_error();
    assert_eq!(status, want, "message {msg:?}");
    for w in words {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
    for out in outputs {
        assert!(out.iter().all(|v| *v == POISON as f32), "output written");
    }
}

fn error_paths(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let initial = [1.0f32, 1.0, 20.0, -5.0, 3.0, 30.0];
    let sigma = [10.0f32, f32::NAN];
    let (mut out, mut saved) = ([POISON as f32; 6], [POISON as f32; 12]);
    let call = |params: *const kp_lorenz63_params,
                initial: *const f32,
                members: usize,
                sigma: *const f32,
                steps: u64,
                save_at: &[u64],
                out: *mut f32,
                saved: *mut f32| unsafe {
        kp_lorenz63_f32(
            ctx.ptr(),
            params,
            initial,
            members,
            sigma,
            null(),
            null(),
            steps,
            save_at.as_ptr(),
            save_at.len(),
            out,
            saved,
        )
    };
    let (o, s) = (out.as_mut_ptr(), saved.as_mut_ptr());
    let i = initial.as_ptr();
    let bad_dt = kp_lorenz63_params {
        dt: -1.0,
        ..kp_lorenz63_default_params()
    };
    let status = call(null(), null(), 2, null(), 10, &[], o, null_mut());
    expect_failure(status, KP_ERROR_NULL_POINTER, &["initial"], &[&out]);
    let status = call(null(), i, 0, null(), 10, &[], o, null_mut());
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["initial holds 0"],
        &[&out],
    );
    let status = call(&bad_dt, i, 2, null(), 10, &[], o, null_mut());
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["dt", "-1"], &[&out]);
    let status = call(null(), i, 2, sigma.as_ptr(), 10, &[], o, null_mut());
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["sigma[1]", "NaN"],
        &[&out],
    );
    let status = call(null(), i, 2, null(), 10, &[3, 2], o, s);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["save_at[1] = 2"],
        &[&out, &saved],
    );
    let status = call(null(), i, 2, null(), 10, &[11], o, s);
    expect_failure(
        status,
        KP_ERROR_INVALID_ARGUMENT,
        &["save_at[0] = 11"],
        &[&out],
    );
    let status = call(null(), i, 2, null(), 10, &[5], o, null_mut());
    expect_failure(status, KP_ERROR_NULL_POINTER, &["saved"], &[&out]);
    let status = call(null(), i, usize::MAX, null(), 10, &[], o, null_mut());
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["members"], &[&out]);
    // out over initial (in place) and saved over out are refused.
    let mut state = initial;
    let sp = state.as_mut_ptr();
    let status = call(null(), sp, 2, null(), 10, &[], sp, null_mut());
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["overlap"], &[]);
    assert_eq!(state, initial);
    let status = call(null(), i, 2, null(), 10, &[4], o, o);
    expect_failure(status, KP_ERROR_INVALID_ARGUMENT, &["overlap"], &[&out]);
}

#[test]
fn c_errors_on_cpu() {
    error_paths(KP_BACKEND_CPU);
}

#[test]
fn c_errors_on_gpu() {
    if gpu_or_skip("c_errors_on_gpu").is_some() {
        error_paths(KP_BACKEND_GPU);
    }
}

/// The device entry point needs a GPU context, and checks its pointers.
#[test]
fn c_device_entry_refuses_a_cpu_context_and_null_pointers() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let status = unsafe {
        kp_lorenz63_device_f32(ctx.ptr(), null(), 8, 1, 0, 0, 0, 10, null(), 0, 16, 0, 0)
    };
    assert_eq!(status, KP_ERROR_NO_GPU, "{}", last_error());
    if gpu_or_skip("c_device_entry_refuses_null_pointers").is_some() {
        let ctx = Ctx::new(KP_BACKEND_GPU);
        let status = unsafe {
            kp_lorenz63_device_f32(ctx.ptr(), null(), 0, 1, 0, 0, 0, 10, null(), 0, 16, 0, 0)
        };
        assert_eq!(status, KP_ERROR_NULL_POINTER, "{}", last_error());
        assert!(last_error().contains("initial"));
        // Host memory passed as device memory: refused by the driver's record.
        let host = [0.0f32; 3];
        let addr = host.as_ptr() as u64;
        let status = unsafe {
            kp_lorenz63_device_f32(
                ctx.ptr(),
                null(),
                addr,
                1,
                0,
                0,
                0,
                10,
                null(),
                0,
                addr,
                0,
                0,
            )
        };
        assert_eq!(status, KP_ERROR_INVALID_ARGUMENT, "{}", last_error());
    }
}
