//! The Lorenz 96 / Lorenz 2005 save_at C entry points: a call agrees with
//! the safe API bitwise (fresh random states, NaN-poisoned outputs), its
//! frames are those of the every-step trajectory, and every bad list is a
//! non-OK status with a message naming the reason, outputs untouched. On a
//! CPU context, and on a GPU context when there is one (the device entry
//! points there too).
mod common;

use std::ptr::{null, null_mut};

use common::{contexts, expect_err, expect_ok, gpu_or_skip, Ctx, DeviceBuf, Rng};
use kernpack::ffi::lorenz::{
    kp_lorenz05_default_params, kp_lorenz05_save_at_device_f64, kp_lorenz05_save_at_f32,
    kp_lorenz96_default_params, kp_lorenz96_f64, kp_lorenz96_save_at_device_f32,
    kp_lorenz96_save_at_device_f64, kp_lorenz96_save_at_f64,
};
use kernpack::ffi::{kp_status::*, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Kernpack, Lorenz05Params, Lorenz96Params};

fn bits<T: Copy + Into<f64>>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| (*x).into().to_bits()).collect()
}

/// A random sorted, unique list of steps of 0..=steps (never empty).
fn random_save_at(rng: &mut Rng, steps: u64) -> Vec<u64> {
    let mut at: Vec<u64> = (0..=steps).filter(|_| rng.next() < 0.3).collect();
    if at.is_empty() {
        at.push(rng.below(steps + 1));
    }
    at
}

/// Noisy Lorenz 96, fresh random states and lists: the C call against the
/// safe API on the same backend, and its frames against the every-step run.
#[test]
fn c_calls_agree_with_the_api_and_the_every_step_run() {
    for ctx in contexts("c_calls_agree_with_the_api_and_the_every_step_run") {
        let kp = match ctx_is_gpu(&ctx) {
            true => Kernpack::with_gpu(0).unwrap(),
            false => Kernpack::new(kernpack::Backend::Cpu).unwrap(),
        };
        let mut rng = Rng(0x5a7e ^ ctx_is_gpu(&ctx) as u64);
        for case in 0..6 {
            let members = 1 + rng.below(40) as usize;
            let steps = 1 + rng.below(30);
            let c = kernpack::ffi::lorenz::kp_lorenz96_params {
                n: [40, 36, 13][case % 3],
                noise: 0.5,
                seed: rng.next_u64(),
                member_offset: rng.below(100),
                ..kp_lorenz96_default_params()
            };
            let len = members * c.n;
            let initial: Vec<f64> = (0..len).map(|_| rng.range(-5.0, 10.0)).collect();
            let save_at = random_save_at(&mut rng, steps);
            let (mut out, mut saved) = (vec![f64::NAN; len], vec![f64::NAN; save_at.len() * len]);
            expect_ok(unsafe {
                kp_lorenz96_save_at_f64(
                    ctx.ptr(),
                    &c,
                    initial.as_ptr(),
                    members,
                    steps,
                    save_at.as_ptr(),
                    save_at.len(),
                    out.as_mut_ptr(),
                    saved.as_mut_ptr(),
                )
            });
            let p = Lorenz96Params {
                n: c.n,
                noise: c.noise,
                seed: c.seed,
                member_offset: c.member_offset,
                ..Default::default()
            };
            let want = kp.lorenz96_save_at(&p, &initial, steps, &save_at).unwrap();
            assert_eq!(bits(&out), bits(&want.final_state), "case {case}");
            assert_eq!(bits(&saved), bits(want.trajectory.as_ref().unwrap()));
            // The every-step trajectory through the plain entry point.
            let frames = steps as usize + 1;
            let (mut plain, mut traj) = (vec![f64::NAN; len], vec![f64::NAN; frames * len]);
            expect_ok(unsafe {
                kp_lorenz96_f64(
                    ctx.ptr(),
                    &c,
                    initial.as_ptr(),
                    members,
                    steps,
                    1,
                    plain.as_mut_ptr(),
                    traj.as_mut_ptr(),
                    traj.len(),
                )
            });
            assert_eq!(bits(&out), bits(&plain), "case {case}: final states");
            for (k, &s) in save_at.iter().enumerate() {
                let frame = &traj[s as usize * len..][..len];
                assert_eq!(bits(&saved[k * len..][..len]), bits(frame), "step {s}");
            }
        }
    }
}

fn ctx_is_gpu(ctx: &Ctx) -> bool {
    let mut gpu = 0;
    expect_ok(unsafe { kernpack::ffi::kp_context_is_gpu(ctx.ptr(), &mut gpu) });
    gpu != 0
}

/// Lorenz 2005 in f32 (NULL params: DART's defaults) against the API.
#[test]
fn c_lorenz05_f32_agrees_with_the_api() {
    for ctx in contexts("c_lorenz05_f32_agrees_with_the_api") {
        let kp = match ctx_is_gpu(&ctx) {
            true => Kernpack::with_gpu(0).unwrap(),
            false => Kernpack::new(kernpack::Backend::Cpu).unwrap(),
        };
        let mut rng = Rng(505);
        let p = Lorenz05Params::default();
        let initial: Vec<f32> = (0..2 * p.n).map(|_| rng.range(12.0, 18.0) as f32).collect();
        let save_at = [0u64, 3, 7];
        let (mut out, mut saved) = (vec![f32::NAN; 2 * p.n], vec![f32::NAN; 3 * 2 * p.n]);
        expect_ok(unsafe {
            kp_lorenz05_save_at_f32(
                ctx.ptr(),
                null(),
                initial.as_ptr(),
                2,
                7,
                save_at.as_ptr(),
                3,
                out.as_mut_ptr(),
                saved.as_mut_ptr(),
            )
        });
        let want = kp.lorenz05_save_at(&p, &initial, 7, &save_at).unwrap();
        assert_eq!(bits(&out), bits(&want.final_state));
        assert_eq!(bits(&saved), bits(want.trajectory.as_ref().unwrap()));
        assert_eq!(bits(&saved[..2 * p.n]), bits(&initial), "frame 0");
    }
}

/// Unsorted, repeated and late steps, NULL lists and buffers with a
/// nonzero length: refused, outputs untouched.
#[test]
fn c_bad_lists_are_refused_with_outputs_untouched() {
    for ctx in contexts("c_bad_lists_are_refused_with_outputs_untouched") {
        let c = kp_lorenz96_default_params();
        let initial = vec![1.0f64; 2 * c.n];
        let (mut out, mut saved) = (vec![-7.0; 2 * c.n], vec![-7.0; 4 * c.n]);
        let call = |at: *const u64, len: usize, saved: *mut f64, out: *mut f64| unsafe {
            kp_lorenz96_save_at_f64(ctx.ptr(), &c, initial.as_ptr(), 2, 10, at, len, out, saved)
        };
        let (o, s) = (out.as_mut_ptr(), saved.as_mut_ptr());
        expect_err(
            call([3, 1].as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "sorted",
        );
        expect_err(
            call([2, 2].as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "unique",
        );
        let late = [4, 11];
        expect_err(
            call(late.as_ptr(), 2, s, o),
            KP_ERROR_INVALID_ARGUMENT,
            "past the last step",
        );
        expect_err(call(null(), 2, s, o), KP_ERROR_NULL_POINTER, "save_at");
        expect_err(
            call([1, 2].as_ptr(), 2, null_mut(), o),
            KP_ERROR_NULL_POINTER,
            "saved",
        );
        // A saved-states buffer over `initial` (its length is save_len x
        // members x N, as the caller states).
        let overlap = initial.as_ptr() as *mut f64;
        expect_err(
            call([1, 2].as_ptr(), 2, overlap, o),
            KP_ERROR_INVALID_ARGUMENT,
            "overlap",
        );
        assert!(
            out.iter().chain(&saved).all(|v| *v == -7.0),
            "written on failure"
        );
    }
}

/// The device entry points: NO_GPU on a CPU context; on a GPU, bitwise the
/// host entry point's result, bad lists refused before any launch.
#[test]
fn c_device_entries_agree_with_the_host_ones() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let status =
        unsafe { kp_lorenz96_save_at_device_f32(cpu.ptr(), null(), 8, 1, 10, null(), 0, 16, 0, 0) };
    assert_eq!(status, KP_ERROR_NO_GPU);
    if gpu_or_skip("c_device_entries_agree_with_the_host_ones").is_none() {
        return;
    }
    let ctx = Ctx::new(KP_BACKEND_GPU);
    let mut rng = Rng(96);
    let c = kernpack::ffi::lorenz::kp_lorenz96_params {
        noise: 0.4,
        seed: 17,
        ..kp_lorenz96_default_params()
    };
    let (members, steps) = (300, 25);
    let len = members * c.n;
    let initial: Vec<f64> = (0..len).map(|_| rng.range(-5.0, 10.0)).collect();
    for save_at in [vec![0u64, 5, 25], vec![3, 4], vec![25]] {
        let d_initial = DeviceBuf::new(&ctx, &initial);
        let d_out = DeviceBuf::new(&ctx, &vec![f64::NAN; len]);
        let d_saved = DeviceBuf::new(&ctx, &vec![f64::NAN; save_at.len() * len]);
        expect_ok(unsafe {
            kp_lorenz96_save_at_device_f64(
                ctx.ptr(),
                &c,
                d_initial.ptr,
                members,
                steps,
                save_at.as_ptr(),
                save_at.len(),
                d_out.ptr,
                d_saved.ptr,
                0,
            )
        });
        let (mut out, mut saved) = (vec![0.0; len], vec![0.0; save_at.len() * len]);
        expect_ok(unsafe {
            kp_lorenz96_save_at_f64(
                ctx.ptr(),
                &c,
                initial.as_ptr(),
                members,
                steps,
                save_at.as_ptr(),
                save_at.len(),
                out.as_mut_ptr(),
                saved.as_mut_ptr(),
            )
        });
        assert_eq!(bits(&d_out.read::<f64>()), bits(&out), "{save_at:?}");
        assert_eq!(bits(&d_saved.read::<f64>()), bits(&saved), "{save_at:?}");
        // Bad lists, a missing saved buffer, saved overlapping out.
        let call = |at: &[u64], saved: u64| unsafe {
            kp_lorenz96_save_at_device_f64(
                ctx.ptr(),
                &c,
                d_initial.ptr,
                members,
                steps,
                at.as_ptr(),
                at.len(),
                d_out.ptr,
                saved,
                0,
            )
        };
        let unsorted = [*save_at.last().unwrap(), 0];
        expect_err(
            call(&unsorted, d_saved.ptr),
            KP_ERROR_INVALID_ARGUMENT,
            "save_at",
        );
        expect_err(
            call(&[steps + 1], d_saved.ptr),
            KP_ERROR_INVALID_ARGUMENT,
            "past",
        );
        expect_err(call(&save_at, 0), KP_ERROR_NULL_POINTER, "saved");
    }
    // Lorenz 2005 on device memory, against its host entry point (via the API).
    let p = Lorenz05Params::default();
    let c5 = kp_lorenz05_default_params();
    let initial: Vec<f64> = (0..3 * p.n).map(|_| rng.range(12.0, 18.0)).collect();
    let d_initial = DeviceBuf::new(&ctx, &initial);
    let d_out = DeviceBuf::new(&ctx, &vec![f64::NAN; initial.len()]);
    let d_saved = DeviceBuf::new(&ctx, &vec![f64::NAN; 2 * initial.len()]);
    let save_at = [2u64, 6];
    expect_ok(unsafe {
        kp_lorenz05_save_at_device_f64(
            ctx.ptr(),
            &c5,
            d_initial.ptr,
            3,
            6,
            save_at.as_ptr(),
            2,
            d_out.ptr,
            d_saved.ptr,
            0,
        )
    });
    let want = Kernpack::with_gpu(0)
        .unwrap()
        .lorenz05_save_at(&p, &initial, 6, &save_at)
        .unwrap();
    assert_eq!(bits(&d_out.read::<f64>()), bits(&want.final_state));
    assert_eq!(
        bits(&d_saved.read::<f64>()),
        bits(want.trajectory.as_ref().unwrap())
    );
}
