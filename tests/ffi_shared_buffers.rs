//! The C ABI given buffers that overlap, NULL for empty images, and values
//! past what a result can hold: each is a clear non-OK status, with every
//! output left as it was, on a CPU context (these checks come before the
//! backend is chosen).
mod common;

use std::ptr::{null, null_mut};

use common::{last_error, Ctx};
use kernpack::ffi::fg::kp_fg_integrate_c128;
use kernpack::ffi::lombscargle::{
    kp_lombscargle_batch_f64, kp_lombscargle_batch_peaks_f64, kp_lombscargle_f64,
    kp_lombscargle_output_len, kp_lombscargle_uniform_f32,
};
use kernpack::ffi::lorenz::{kp_lorenz96_default_params, kp_lorenz96_f64, kp_window_sum_f64};
use kernpack::ffi::reduce::kp_normalize_batched_f64;
use kernpack::ffi::stencil::{kp_box_filter_f32, kp_box_filter_f64};
use kernpack::ffi::{kp_status, KP_BACKEND_CPU};

use kp_status::*;

const POISON: f64 = -4242.0;

#[track_caller]
fn expect(status: kp_status, want: kp_status, message: &str) {
    let msg = last_error();
    assert_eq!(status, want, "{msg}");
    assert!(msg.contains(message), "message {msg:?} lacks {message:?}");
}

fn series(n: usize) -> (Vec<f64>, Vec<f64>) {
    let t: Vec<f64> = (0..n)
        .map(|i| i as f64 * 0.37 + 0.01 * (i % 7) as f64)
        .collect();
    let y = t.iter().map(|v| (1.3 * v).sin() + 0.1 * v.cos()).collect();
    (t, y)
}

#[test]
fn outputs_that_overlap_another_buffer_are_refused() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    // F/G: F and G the same matrix, delta inside F. (n = 2: 4 complex values each.)
    let mut fg = vec![0.25; 16];
    let before = fg.clone();
    let mut delta = vec![POISON; 6];
    let (f, g) = (fg.as_mut_ptr(), unsafe { fg.as_mut_ptr().add(8) });
    let s =
        unsafe { kp_fg_integrate_c128(ctx.0, 2, f, f, 1.0, 0.0, 1e-3, 2, delta.as_mut_ptr(), 3) };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "f and g overlap");
    let s = unsafe { kp_fg_integrate_c128(ctx.0, 2, f, g, 1.0, 0.0, 1e-3, 1, f, 2) };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "f and delta overlap");
    assert_eq!(fg, before);
    assert!(delta.iter().all(|&d| d == POISON));
    // Separate buffers run.
    let (mut f2, mut g2) = (vec![0.25; 8], vec![0.5; 8]);
    let s = unsafe {
        kp_fg_integrate_c128(
            ctx.0,
            2,
            f2.as_mut_ptr(),
            g2.as_mut_ptr(),
            1.0,
            0.0,
            1e-3,
            2,
            delta.as_mut_ptr(),
            3,
        )
    };
    assert_eq!(s, KP_OK, "{}", last_error());

    // Window sums written over x, or over w.
    let mut x: Vec<f64> = (0..24).map(|i| (i as f64).sin()).collect();
    let x_before = x.clone();
    let w = [0.25, 0.5, 0.25];
    let s = unsafe { kp_window_sum_f64(ctx.0, x.as_ptr(), w.as_ptr(), 3, 2, 12, x.as_mut_ptr()) };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and x overlap");
    assert_eq!(x, x_before);
    let mut out = vec![POISON; 24];
    let s =
        unsafe { kp_window_sum_f64(ctx.0, x.as_ptr(), out.as_ptr(), 3, 2, 12, out.as_mut_ptr()) };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and w overlap");
    assert!(out.iter().all(|&v| v == POISON));

    // Lorenz 96: the final states over the initial ones, the trajectory over the final states.
    let p = kp_lorenz96_default_params();
    let mut states: Vec<f64> = (0..p.n).map(|i| 8.0 + (i as f64).cos()).collect();
    let states_before = states.clone();
    let s = unsafe {
        kp_lorenz96_f64(
            ctx.0,
            &p,
            states.as_ptr(),
            1,
            3,
            0,
            states.as_mut_ptr(),
            null_mut(),
            0,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and initial overlap");
    let mut both = vec![POISON; 5 * p.n];
    let s = unsafe {
        kp_lorenz96_f64(
            ctx.0,
            &p,
            states.as_ptr(),
            1,
            3,
            1,
            both.as_mut_ptr(),
            both.as_mut_ptr(),
            4 * p.n,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and trajectory overlap");
    assert_eq!(states, states_before);
    assert!(both.iter().all(|&v| v == POISON));

    // One periodogram written over t; batch peaks with index over value.
    let (t, y) = series(64);
    let mut ty = [t.clone(), y.clone()].concat();
    let freqs = [0.5, 1.0, 1.3];
    let s = unsafe {
        kp_lombscargle_f64(
            ctx.0,
            ty.as_ptr(),
            ty.as_ptr().add(64),
            null(),
            64,
            freqs.as_ptr(),
            3,
            null(),
            ty.as_mut_ptr(),
            3,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and t overlap");
    assert_eq!(ty, [t.clone(), y.clone()].concat());
    let offsets = [0i64, 32, 64];
    let (f0, df) = ([0.1], [0.01]);
    let mut peaks = vec![POISON; 2];
    let index = peaks.as_mut_ptr().cast::<i64>();
    let s = unsafe {
        kp_lombscargle_batch_peaks_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            2,
            f0.as_ptr(),
            df.as_ptr(),
            1,
            200,
            null(),
            index,
            peaks.as_mut_ptr(),
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "index and value overlap");
    assert!(peaks.iter().all(|&v| v == POISON));

    // Batched normalise: the sums written over the arrays.
    let mut arrays: Vec<f64> = (1..=8).map(f64::from).collect();
    let arrays_before = arrays.clone();
    let mut status = [7i32; 2];
    let s = unsafe {
        kp_normalize_batched_f64(
            ctx.0,
            arrays.as_mut_ptr(),
            [0i64, 4, 8].as_ptr(),
            2,
            arrays.as_mut_ptr(),
            status.as_mut_ptr(),
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "x and sums overlap");
    assert_eq!(arrays, arrays_before);
    assert_eq!(status, [7, 7]);
}

/// The offsets are a `const` input like the samples: an output over them is
/// refused, not written over the caller's offsets after they were copied.
#[test]
fn outputs_over_the_offsets_are_refused() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let (t, y) = series(64);
    let (f0, df) = ([0.1], [0.01]);
    // Offsets in a buffer of doubles' size, so an output of 2 doubles fits over them.
    let mut offsets = [0i64, 32, 64, 0];
    let before = offsets;
    let over = offsets.as_mut_ptr().cast::<f64>();
    let s = unsafe {
        kp_lombscargle_batch_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            2,
            f0.as_ptr(),
            df.as_ptr(),
            1,
            2,
            null(),
            over,
            4,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "out and offsets overlap");
    assert_eq!(offsets, before);
    let mut index = [-9i64; 2];
    let s = unsafe {
        kp_lombscargle_batch_peaks_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            2,
            f0.as_ptr(),
            df.as_ptr(),
            1,
            50,
            null(),
            index.as_mut_ptr(),
            over,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "value and offsets overlap");
    assert_eq!((offsets, index), (before, [-9, -9]));
    let mut x: Vec<f64> = (1..=8).map(f64::from).collect();
    let mut status = [7i32; 2];
    let norm_offsets = [0i64, 4, 8];
    let s = unsafe {
        kp_normalize_batched_f64(
            ctx.0,
            x.as_mut_ptr(),
            norm_offsets.as_ptr(),
            2,
            norm_offsets.as_ptr().cast_mut().cast::<f64>(),
            status.as_mut_ptr(),
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "sums and offsets overlap");
    assert_eq!((norm_offsets, status), ([0, 4, 8], [7, 7]));
    // Bad offsets are named as such, not as an overlap of buffers sized by them.
    let bad = [0i64, 100, 16, 1 << 50];
    let mut out = vec![POISON; 3 * 4];
    let s = unsafe {
        kp_lombscargle_batch_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            bad.as_ptr(),
            3,
            f0.as_ptr(),
            df.as_ptr(),
            1,
            4,
            null(),
            out.as_mut_ptr(),
            12,
        )
    };
    expect(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "series 1 is empty or offsets decrease there",
    );
    assert!(out.iter().all(|&v| v == POISON));
}

/// Messages name the real fault, in numbers a reader can take in.
#[test]
fn messages_name_the_fault() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let p = kp_lorenz96_default_params();
    let initial = vec![8.0; 2 * p.n];
    let mut out = vec![POISON; 2 * p.n];
    let mut traj = vec![POISON; 4];
    let s = unsafe {
        kp_lorenz96_f64(
            ctx.0,
            &p,
            initial.as_ptr(),
            2,
            u64::MAX,
            1,
            out.as_mut_ptr(),
            traj.as_mut_ptr(),
            4,
        )
    };
    expect(s, KP_ERROR_INVALID_ARGUMENT, "frames");
    assert!(!last_error().contains("members"), "{}", last_error());
    assert!(out.iter().chain(&traj).all(|&v| v == POISON));
    let (t, y) = series(16);
    let (t, y): (Vec<f32>, Vec<f32>) = (
        t.iter().map(|&v| v as f32).collect(),
        y.iter().map(|&v| v as f32).collect(),
    );
    let mut pgram = vec![-1.0f32; 5];
    let s = unsafe {
        kp_lombscargle_uniform_f32(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            16,
            0.1,
            1e308,
            5,
            null(),
            pgram.as_mut_ptr(),
            5,
        )
    };
    expect(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "df 1e308 nf 5: the last frequency overflows",
    );
    assert!(pgram.iter().all(|&v| v == -1.0));
}

/// kp_lombscargle_output_len returns a value: a failing call's message stays.
#[test]
fn a_length_query_leaves_the_last_error_alone() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let s = unsafe {
        kp_lombscargle_f64(
            ctx.0,
            null(),
            null(),
            null(),
            4,
            null(),
            1,
            null(),
            null_mut(),
            1,
        )
    };
    assert_ne!(s, KP_OK);
    let message = last_error();
    assert!(!message.is_empty());
    assert_eq!(unsafe { kp_lombscargle_output_len(10, null()) }, 10);
    assert_eq!(last_error(), message);
}

#[test]
fn box_filter_checks_pointers_and_sizes_before_overlap() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    // NULL is refused for an empty image too, as by every other entry point.
    let s = unsafe { kp_box_filter_f64(ctx.0, null(), 0, null_mut(), 0, 0, 0, null()) };
    expect(s, KP_ERROR_NULL_POINTER, "input is NULL");
    let s = unsafe { kp_box_filter_f64(ctx.0, null(), 5, null_mut(), 5, 4, 0, null()) };
    expect(s, KP_ERROR_NULL_POINTER, "input is NULL");
    // An impossible size is named as such, not as an overlap.
    let (input, mut output) = ([1.0f32; 16], [POISON as f32; 16]);
    let s = unsafe {
        kp_box_filter_f32(
            ctx.0,
            input.as_ptr(),
            usize::MAX,
            output.as_mut_ptr(),
            usize::MAX,
            2,
            usize::MAX,
            null(),
        )
    };
    assert_eq!(s, KP_ERROR_INVALID_ARGUMENT);
    assert!(!last_error().contains("overlap"), "{}", last_error());
    assert!(output.iter().all(|&v| v == POISON as f32));
    // Empty images with real pointers still succeed and write nothing.
    let s = unsafe {
        kp_box_filter_f32(
            ctx.0,
            input.as_ptr(),
            4,
            output.as_mut_ptr(),
            4,
            0,
            4,
            null(),
        )
    };
    assert_eq!(s, KP_OK, "{}", last_error());
    assert!(output.iter().all(|&v| v == POISON as f32));
}

#[test]
fn values_past_what_the_result_can_hold_are_refused() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let t: Vec<f32> = (0..64).map(|i| i as f32 * 0.37).collect();
    let y: Vec<f32> = t.iter().map(|v| v.sin()).collect();
    // An f32 grid that f32 cannot hold: f0, or the last frequency (6e38,
    // past f32's 3.4e38).
    let mut out = [POISON as f32; 4];
    for (f0, df) in [(1e39, 1e30), (0.1, 2e38)] {
        let s = unsafe {
            kp_lombscargle_uniform_f32(
                ctx.0,
                t.as_ptr(),
                y.as_ptr(),
                null(),
                64,
                f0,
                df,
                4,
                null(),
                out.as_mut_ptr(),
                4,
            )
        };
        expect(s, KP_ERROR_INVALID_ARGUMENT, "exceeds the range of f32");
    }
    assert!(out.iter().all(|&v| v == POISON as f32));
    // Weights whose sum overflows f64 would all normalise to zero.
    let (t, y) = series(3);
    let weighted = |w: f64, out: &mut [f64; 2]| unsafe {
        let w = [w; 3];
        let freqs = [0.5, 1.0];
        kp_lombscargle_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            w.as_ptr(),
            3,
            freqs.as_ptr(),
            2,
            null(),
            out.as_mut_ptr(),
            2,
        )
    };
    let mut out = [POISON; 2];
    let s = weighted(1e308, &mut out);
    expect(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        "weights sum past the largest f64",
    );
    assert!(out.iter().all(|&v| v == POISON));
    // Weights so small that 1 / their sum overflows: NaN unless refused.
    let s = weighted(5e-324, &mut out);
    expect(s, KP_ERROR_INVALID_ARGUMENT, "below 2^-1024: scale them up");
    assert!(out.iter().all(|&v| v == POISON));
    // Still fine in range, at both ends.
    for w in [1e300, 1e-300] {
        let s = weighted(w, &mut out);
        assert_eq!(s, KP_OK, "{}", last_error());
        assert!(out.iter().all(|v| v.is_finite()), "weights {w}: {out:?}");
    }
}
