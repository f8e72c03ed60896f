//! The C ABI given impossible sizes and wrong pointers, as a careless caller
//! would: every case is a non-OK status with a message, outputs untouched,
//! never a crash, an abort, a wrapped count or a poisoned context. Each case
//! runs on a CPU context, and on a GPU context when there is a GPU (with
//! KERNPACK_REQUIRE_GPU=1, a missing GPU fails the GPU test).
mod common;

use std::ptr::{null, null_mut};

use common::{gpu_or_skip, last_error, Ctx};
use kernpack::ffi::fg::kp_fg_integrate_c128;
use kernpack::ffi::lombscargle::{
    kp_lombscargle_batch_f32, kp_lombscargle_batch_f64, kp_lombscargle_f32, kp_lombscargle_f64,
    kp_lombscargle_options, kp_lombscargle_output_len, kp_lombscargle_uniform_f32,
    kp_lombscargle_uniform_f64, KP_NORMALIZE_AMPLITUDE, KP_NORMALIZE_POWER,
};
use kernpack::ffi::lorenz::{
    kp_lorenz05_default_params, kp_lorenz05_f32, kp_lorenz05_f64, kp_lorenz_trajectory_len,
    kp_window_sum_f32, kp_window_sum_f64,
};
use kernpack::ffi::lorenz63::{kp_lorenz63_adaptive_f32, kp_lorenz63_adaptive_f64};
use kernpack::ffi::reduce::{
    kp_normalize_batched_f32, kp_normalize_batched_f64, kp_normalize_f32, kp_normalize_f64,
    kp_sum_f32, kp_sum_f64,
};
use kernpack::ffi::stencil::{kp_box_filter_f32, kp_box_filter_options_default};
use kernpack::ffi::{kp_context, kp_last_cuda_error, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};

use kp_status::*;

/// Counts no array can have: their byte size exceeds `isize::MAX` for 4- and
/// 8-byte elements (and `usize::MAX` itself).
const HUGE: [usize; 4] = [usize::MAX / 4, 1 << 61, 1 << 63, usize::MAX];
const POISON: f64 = -4242.0;

/// A failed call with a message (never KP_ERROR_INTERNAL: that is a panic).
#[track_caller]
fn expect_failure(status: kp_status, what: &str) {
    let msg = last_error();
    assert_ne!(status, KP_OK, "{what}: accepted");
    assert_ne!(status, KP_ERROR_INTERNAL, "{what}: panicked: {msg}");
    assert!(!msg.is_empty(), "{what}: {status:?} without a message");
}

/// Real buffers of modest size, random-ish finite values; outputs poisoned.
struct Buffers {
    t32: Vec<f32>,
    y32: Vec<f32>,
    t64: Vec<f64>,
    y64: Vec<f64>,
    out32: Vec<f32>,
    out64: Vec<f64>,
    offsets: Vec<i64>,
    grid: Vec<f64>,
}

impl Buffers {
    fn new() -> Buffers {
        let n = 64;
        let t64: Vec<f64> = (0..n)
            .map(|i| i as f64 * 0.37 + (i % 7) as f64 * 0.01)
            .collect();
        let y64: Vec<f64> = t64.iter().map(|t| (1.3 * t).sin() + 0.2).collect();
        Buffers {
            t32: t64.iter().map(|v| *v as f32).collect(),
            y32: y64.iter().map(|v| *v as f32).collect(),
            t64,
            y64,
            out32: vec![POISON as f32; n],
            out64: vec![POISON; n],
            offsets: vec![0, 32, 64],
            grid: vec![0.1, 0.2],
        }
    }

    #[track_caller]
    fn untouched(&self, what: &str) {
        assert!(
            self.out32.iter().all(|v| *v == POISON as f32)
                && self.out64.iter().all(|v| *v == POISON),
            "{what}: an output was written"
        );
        assert_eq!(self.offsets, [0, 32, 64], "{what}: offsets changed");
    }
}

/// Every impossible size of the C ABI's host entry points, on `ctx`.
fn impossible_sizes(ctx: *const kp_context) {
    let mut b = Buffers::new();
    let opts = kp_lombscargle_options {
        normalize: KP_NORMALIZE_POWER,
        floating_mean: 1,
        precenter: 0,
    };
    let freqs32 = [0.5f32, 1.0, 1.5];
    let freqs64 = [0.5f64, 1.0, 1.5];
    for huge in HUGE {
        let what = format!("nx = {huge:#x}");
        unsafe {
            let s = kp_lombscargle_f32(
                ctx,
                b.t32.as_ptr(),
                b.y32.as_ptr(),
                std::ptr::null(),
                huge,
                freqs32.as_ptr(),
                3,
                &opts,
                b.out32.as_mut_ptr(),
                3,
            );
            expect_failure(s, &format!("kp_lombscargle_f32 {what}"));
            let s = kp_lombscargle_f64(
                ctx,
                b.t64.as_ptr(),
                b.y64.as_ptr(),
                std::ptr::null(),
                huge,
                freqs64.as_ptr(),
                3,
                &opts,
                b.out64.as_mut_ptr(),
                3,
            );
            expect_failure(s, &format!("kp_lombscargle_f64 {what}"));
            let s = kp_lombscargle_uniform_f32(
                ctx,
                b.t32.as_ptr(),
                b.y32.as_ptr(),
                std::ptr::null(),
                huge,
                0.1,
                0.1,
                3,
                &opts,
                b.out32.as_mut_ptr(),
                3,
            );
            expect_failure(s, &format!("kp_lombscargle_uniform_f32 {what}"));
            let s = kp_lombscargle_uniform_f64(
                ctx,
                b.t64.as_ptr(),
                b.y64.as_ptr(),
                std::ptr::null(),
                huge,
                0.1,
                0.1,
                3,
                &opts,
                b.out64.as_mut_ptr(),
                3,
            );
            expect_failure(s, &format!("kp_lombscargle_uniform_f64 {what}"));
            // A huge frequency count with the output length it implies.
            let s = kp_lombscargle_uniform_f64(
                ctx,
                b.t64.as_ptr(),
                b.y64.as_ptr(),
                std::ptr::null(),
                64,
                0.1,
                0.1,
                huge,
                &opts,
                b.out64.as_mut_ptr(),
                huge,
            );
            expect_failure(s, &format!("kp_lombscargle_uniform_f64 nf {what}"));
        }
        b.untouched(&what);

        let what = format!("nseries = {huge:#x}");
        unsafe {
            let s = kp_lombscargle_batch_f32(
                ctx,
                b.t32.as_ptr(),
                b.y32.as_ptr(),
                std::ptr::null(),
                b.offsets.as_ptr(),
                huge / 4,
                b.grid.as_ptr(),
                b.grid.as_ptr(),
                1,
                3,
                &opts,
                b.out32.as_mut_ptr(),
                6,
            );
            expect_failure(s, &format!("kp_lombscargle_batch_f32 {what}"));
            let s = kp_lombscargle_batch_f64(
                ctx,
                b.t64.as_ptr(),
                b.y64.as_ptr(),
                std::ptr::null(),
                b.offsets.as_ptr(),
                huge,
                b.grid.as_ptr(),
                b.grid.as_ptr(),
                1,
                3,
                &opts,
                b.out64.as_mut_ptr(),
                6,
            );
            expect_failure(s, &format!("kp_lombscargle_batch_f64 {what}"));
        }
        b.untouched(&what);

        let what = format!("n = {huge:#x}");
        let mut sum = POISON;
        unsafe {
            expect_failure(
                kp_sum_f32(ctx, b.out32.as_ptr(), huge, &mut sum),
                &format!("kp_sum_f32 {what}"),
            );
            expect_failure(
                kp_sum_f64(ctx, b.out64.as_ptr(), huge, &mut sum),
                &format!("kp_sum_f64 {what}"),
            );
            expect_failure(
                kp_normalize_f32(ctx, b.out32.as_mut_ptr(), huge, &mut sum),
                &format!("kp_normalize_f32 {what}"),
            );
            expect_failure(
                kp_normalize_f64(ctx, b.out64.as_mut_ptr(), huge, &mut sum),
                &format!("kp_normalize_f64 {what}"),
            );
        }
        assert_eq!(sum, POISON, "{what}: the sum was written");
        b.untouched(&what);

        // A last offset far past x, and an impossible number of arrays.
        let (mut sums, mut status) = ([POISON; 2], [-9i32; 2]);
        let bad = [0i64, 32, (huge / 2) as i64];
        let what = format!("batched normalise, {huge:#x}");
        unsafe {
            let s = kp_normalize_batched_f32(
                ctx,
                b.out32.as_mut_ptr(),
                bad.as_ptr(),
                2,
                sums.as_mut_ptr(),
                status.as_mut_ptr(),
            );
            expect_failure(s, &format!("kp_normalize_batched_f32 last offset {what}"));
            let s = kp_normalize_batched_f64(
                ctx,
                b.out64.as_mut_ptr(),
                b.offsets.as_ptr(),
                huge,
                sums.as_mut_ptr(),
                status.as_mut_ptr(),
            );
            expect_failure(s, &format!("kp_normalize_batched_f64 narrays {what}"));
        }
        assert!(sums == [POISON; 2] && status == [-9; 2], "{what}: written");
        b.untouched(&what);

        // Lorenz 2005 with K or J whose double wraps; window sums of huge rows.
        let what = format!("Lorenz 05, {huge:#x}");
        for (k, j) in [(1usize << 63, 12usize), (32, 1 << 63), (huge & !1, 12)] {
            let mut p = kp_lorenz05_default_params();
            p.n = 64;
            p.k = k;
            p.j = j;
            unsafe {
                let s = kp_lorenz05_f64(
                    ctx,
                    &p,
                    b.t64.as_ptr(),
                    1,
                    null(),
                    null(),
                    null(),
                    2,
                    0,
                    b.out64.as_mut_ptr(),
                    null_mut(),
                    0,
                );
                expect_failure(s, &format!("kp_lorenz05_f64 K {k:#x} J {j:#x}"));
                let s = kp_lorenz05_f32(
                    ctx,
                    &p,
                    b.t32.as_ptr(),
                    1,
                    null(),
                    null(),
                    null(),
                    2,
                    0,
                    b.out32.as_mut_ptr(),
                    null_mut(),
                    0,
                );
                expect_failure(s, &format!("kp_lorenz05_f32 K {k:#x} J {j:#x}"));
            }
        }
        unsafe {
            let w = [0.25f64, 0.5, 0.25];
            let w32 = [0.25f32, 0.5, 0.25];
            let s = kp_window_sum_f64(
                ctx,
                b.t64.as_ptr(),
                w.as_ptr(),
                3,
                huge,
                1,
                b.out64.as_mut_ptr(),
            );
            expect_failure(s, &format!("kp_window_sum_f64 rows {huge:#x}"));
            let s = kp_window_sum_f32(
                ctx,
                b.t32.as_ptr(),
                w32.as_ptr(),
                3,
                1 << 61,
                8,
                b.out32.as_mut_ptr(),
            );
            expect_failure(s, "kp_window_sum_f32 rows 2^61");
        }
        b.untouched(&what);

        // Adaptive Lorenz 63: an impossible ensemble, or number of save
        // times (with a valid ensemble of 2 members).
        let mut counts = [9u32; 6];
        let c = counts.as_mut_ptr();
        let (accepted, rejected, status) = (c, c.wrapping_add(2), c.wrapping_add(4));
        for (members, save_len) in [(huge, 0), (2, huge)] {
            let what = format!("adaptive Lorenz 63, members {members:#x}, save_len {save_len:#x}");
            unsafe {
                let s = kp_lorenz63_adaptive_f64(
                    ctx,
                    std::ptr::null(),
                    b.t64.as_ptr(),
                    members,
                    std::ptr::null(),
                    std::ptr::null(),
                    std::ptr::null(),
                    b.grid.as_ptr(),
                    save_len,
                    b.out64.as_mut_ptr(),
                    b.out64.as_mut_ptr().wrapping_add(6),
                    accepted,
                    rejected,
                    status,
                );
                expect_failure(s, &format!("kp_lorenz63_adaptive_f64 {what}"));
                let s = kp_lorenz63_adaptive_f32(
                    ctx,
                    std::ptr::null(),
                    b.t32.as_ptr(),
                    members,
                    b.y32.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null(),
                    b.grid.as_ptr(),
                    save_len,
                    b.out32.as_mut_ptr(),
                    b.out32.as_mut_ptr().wrapping_add(6),
                    accepted,
                    rejected,
                    status,
                );
                expect_failure(s, &format!("kp_lorenz63_adaptive_f32 {what}"));
            }
            assert_eq!(counts, [9; 6], "{what}: counts or statuses written");
            b.untouched(&what);
        }

        // F/G: an N whose N*N overflows.
        let (mut f, mut g, mut d) = (b.out64.clone(), b.out64.clone(), b.out64.clone());
        let s = unsafe {
            kp_fg_integrate_c128(
                ctx,
                huge >> 1,
                f.as_mut_ptr(),
                g.as_mut_ptr(),
                0.1,
                0.0,
                1e-3,
                1,
                d.as_mut_ptr(),
                2,
            )
        };
        expect_failure(s, &format!("kp_fg_integrate_c128 N {huge:#x}"));
        assert!(
            f == b.out64 && g == b.out64 && d == b.out64,
            "F/G outputs written"
        );
    }

    // The output length of an impossible count is 0, not a wrapped value.
    let amplitude = kp_lombscargle_options {
        normalize: KP_NORMALIZE_AMPLITUDE,
        floating_mean: 0,
        precenter: 0,
    };
    assert_eq!(
        unsafe { kp_lombscargle_output_len(usize::MAX, &amplitude) },
        0
    );
    assert_eq!(unsafe { kp_lombscargle_output_len(5, &amplitude) }, 10);
    // So is a trajectory's: 0 for every product past size_t, not SIZE_MAX.
    for (members, n, steps, every) in [
        (usize::MAX, usize::MAX, u64::MAX, 1),
        (1, 1, u64::MAX, 1),
        (1 << 40, 1 << 30, 1, 1),
    ] {
        assert_eq!(kp_lorenz_trajectory_len(members, n, steps, every), 0);
    }
    assert_eq!(kp_lorenz_trajectory_len(3, 40, 10, 5), 3 * 3 * 40);
    // A count of exactly SIZE_MAX fits (one frame of SIZE_MAX members): the
    // fuzzer's oracle found it once reported as 0.
    assert_eq!(kp_lorenz_trajectory_len(usize::MAX, 1, 16, 197), usize::MAX);
    assert_eq!(kp_lorenz_trajectory_len(3, 40, 10, 0), 0);

    // Empty images of any shape: nothing to do, nothing written, KP_OK.
    let opts = kp_box_filter_options_default();
    for (rows, cols, pitch) in [(17usize, 0usize, 0usize), (0, 9, 9), (5, 0, 3)] {
        let s = unsafe {
            kp_box_filter_f32(
                ctx,
                b.t32.as_ptr(),
                pitch,
                b.out32.as_mut_ptr(),
                pitch,
                rows,
                cols,
                &opts,
            )
        };
        assert_eq!(s, KP_OK, "{rows} x {cols}: {}", last_error());
        b.untouched("an empty image");
    }
}

#[test]
fn a_wrong_out_len_is_named_before_the_overlap_it_makes() {
    // out_len 3 where 2 values come out: out, sized by it, runs into freqs,
    // laid out right after it. The length is the mistake, so the message
    // says that rather than "out and freqs overlap".
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let t = [0.0f32, 1.0, 2.5];
    let y = [1.0f32, -1.0, 0.5];
    let mut buf = [f32::NAN, f32::NAN, 0.5, 1.0];
    let opts = kp_lombscargle_options {
        normalize: KP_NORMALIZE_POWER,
        floating_mean: 0,
        precenter: 0,
    };
    let freqs = unsafe { buf.as_ptr().add(2) };
    let s = unsafe {
        kp_lombscargle_f32(
            cpu.0,
            t.as_ptr(),
            y.as_ptr(),
            std::ptr::null(),
            3,
            freqs,
            2,
            &opts,
            buf.as_mut_ptr(),
            3,
        )
    };
    assert_eq!(s, KP_ERROR_INVALID_ARGUMENT);
    let msg = last_error();
    assert!(msg.contains("out_len is 3, 2 values"), "{msg}");
    assert!(buf[0].is_nan() && buf[1].is_nan() && buf[2..] == [0.5, 1.0]);
}

#[test]
fn cpu_context_refuses_impossible_sizes() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    impossible_sizes(cpu.0);
}

#[test]
fn gpu_context_refuses_impossible_sizes_and_wrong_pointers() {
    if gpu_or_skip("gpu_context_refuses_impossible_sizes_and_wrong_pointers").is_none() {
        return;
    }
    let gpu = Ctx::new(KP_BACKEND_GPU);
    impossible_sizes(gpu.0);
    device_pointers(gpu.0);
    handles_belong_to_their_context();
}

/// A stream or event made by one context is refused by another (which could
/// otherwise destroy it behind its owner's back).
fn handles_belong_to_their_context() {
    use kernpack::ffi::reduce::kp_sum_device_f32;
    use kernpack::ffi::streams::{
        kp_event_create, kp_event_destroy, kp_event_record, kp_stream_create, kp_stream_destroy,
    };
    use kernpack::ffi::{kp_device_alloc, kp_device_free};
    let (a, b) = (Ctx::new(KP_BACKEND_GPU), Ctx::new(KP_BACKEND_GPU));
    let (mut stream, mut event, mut x, mut sum) = (0u64, 0u64, 0u64, 0u64);
    unsafe {
        assert_eq!(kp_stream_create(a.0, &mut stream), KP_OK);
        assert_eq!(kp_event_create(a.0, &mut event), KP_OK);
        assert_eq!(kp_device_alloc(b.0, 64, &mut x), KP_OK);
        assert_eq!(kp_device_alloc(b.0, 8, &mut sum), KP_OK);
        expect_failure(
            kp_sum_device_f32(b.0, x, 16, sum, stream),
            "a stream of another context",
        );
        expect_failure(
            kp_stream_destroy(b.0, stream),
            "destroying another context's stream",
        );
        expect_failure(
            kp_event_record(b.0, event, 0),
            "recording another context's event",
        );
        expect_failure(
            kp_event_destroy(b.0, event),
            "destroying another context's event",
        );
        expect_failure(
            kp_device_free(a.0, x),
            "freeing another context's allocation",
        );
        assert_eq!(
            kp_sum_device_f32(b.0, x, 16, sum, 0),
            KP_OK,
            "{}",
            last_error()
        );
        assert_eq!(kp_event_record(a.0, event, stream), KP_OK);
        assert_eq!(kp_stream_destroy(a.0, stream), KP_OK);
        // The event and b's allocations are released with their contexts.
    }
}

/// Device entry points with pointers that are not device allocations, too
/// short, or of another context: refused before any launch, and the same
/// context runs a valid call afterwards (it was not poisoned).
fn device_pointers(ctx: *const kp_context) {
    use kernpack::ffi::lombscargle::kp_lombscargle_device_f64;
    use kernpack::ffi::reduce::{kp_normalize_device_f32, kp_sum_device_f64};
    use kernpack::ffi::stencil::kp_box_filter_device_f32;
    use kernpack::ffi::{kp_device_alloc, kp_device_free, kp_memcpy_dtoh, kp_memcpy_htod};

    let n = 1000usize;
    let (mut dx, mut dsum, mut dout) = (0u64, 0u64, 0u64);
    unsafe {
        assert_eq!(kp_device_alloc(ctx, n * 8, &mut dx), KP_OK);
        assert_eq!(kp_device_alloc(ctx, 8, &mut dsum), KP_OK);
        assert_eq!(kp_device_alloc(ctx, n * 8, &mut dout), KP_OK);
    }
    let x: Vec<f64> = (0..n).map(|i| (i as f64 * 0.01).sin() + 1.5).collect();
    assert_eq!(
        unsafe { kp_memcpy_htod(ctx, dx, x.as_ptr().cast(), n * 8) },
        KP_OK
    );
    let fake = 0x1234u64;
    unsafe {
        expect_failure(kp_sum_device_f64(ctx, fake, n, dsum, 0), "sum of 0x1234");
        expect_failure(
            kp_sum_device_f64(ctx, dx, n + 1, dsum, 0),
            "sum past the allocation",
        );
        expect_failure(
            kp_sum_device_f64(ctx, dx + 8, n, dsum, 0),
            "sum of a shifted pointer",
        );
        expect_failure(kp_sum_device_f64(ctx, dx, n, fake, 0), "sum into 0x1234");
        for huge in HUGE {
            expect_failure(
                kp_sum_device_f64(ctx, dx, huge, dsum, 0),
                "sum of a huge count",
            );
        }
        let mut dstatus = 0u64;
        assert_eq!(kp_device_alloc(ctx, 4, &mut dstatus), KP_OK);
        expect_failure(
            kp_normalize_device_f32(ctx, dx, 2 * n + 1, dsum, dstatus, 0),
            "normalise past the allocation",
        );
        let opts = kp_box_filter_options_default();
        expect_failure(
            kp_box_filter_device_f32(ctx, dx, 10, dx + 40, 10, 10, 10, &opts, 0),
            "overlapping box filter",
        );
        expect_failure(
            kp_box_filter_device_f32(ctx, fake, 10, dout, 10, 10, 10, &opts, 0),
            "box filter of 0x1234",
        );
        expect_failure(
            kp_lombscargle_device_f64(ctx, dx, dx, 0, n, fake, 3, std::ptr::null(), dout, 3, 0),
            "periodogram at frequencies 0x1234",
        );
        assert_eq!(kp_last_cuda_error(), 0, "refused before any driver failure");
        // A real driver failure: its CUresult reaches C (2: CUDA_ERROR_OUT_OF_MEMORY).
        let mut huge = 0u64;
        assert_eq!(kp_device_alloc(ctx, 1 << 60, &mut huge), KP_ERROR_CUDA);
        assert_eq!(kp_last_cuda_error(), 2, "{}", last_error());
        assert_eq!(huge, 0, "the out-parameter was written on failure");
        // The context still works: a valid sum equals the host's.
        assert_eq!(
            kp_sum_device_f64(ctx, dx, n, dsum, 0),
            KP_OK,
            "{}",
            last_error()
        );
        let mut sum = 0.0f64;
        assert_eq!(
            kp_memcpy_dtoh(ctx, (&mut sum as *mut f64).cast(), dsum, 8),
            KP_OK
        );
        let want: f64 = x.iter().sum();
        assert!((sum - want).abs() <= 1e-12 * want.abs(), "{sum} vs {want}");
        // Freed twice, or freeing what another caller allocated: refused.
        assert_eq!(kp_device_free(ctx, dstatus), KP_OK);
        expect_failure(kp_device_free(ctx, dstatus), "double free");
        expect_failure(kp_device_free(ctx, dx + 8), "free of an unknown address");
        for p in [dx, dsum, dout] {
            assert_eq!(kp_device_free(ctx, p), KP_OK);
        }
    }
}
