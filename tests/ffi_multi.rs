//! The C ABI of batches beyond one GPU: `kp_context_create_on_devices` (bad
//! lists refused with a status and a message, `*out` untouched) and the peaks
//! of a batch (`kp_lombscargle_batch_peaks_*`: each series' highest value,
//! outputs untouched on failure). With GPUs: a context over every GPU, and one
//! over GPU 0 with a tiny memory limit (many chunks), give bitwise what a
//! plain context on GPU 0 gives.
mod common;

use std::ptr::{null, null_mut};

use common::{last_error, Ctx};
use kernpack::ffi::devices::{
    kp_context_create_on_device, kp_context_create_on_devices, kp_device_count,
};
use kernpack::ffi::lombscargle::{
    kp_lombscargle_batch_f32, kp_lombscargle_batch_f64, kp_lombscargle_batch_peaks_f32,
    kp_lombscargle_batch_peaks_f64, kp_lombscargle_options, kp_lombscargle_options_default,
    KP_NORMALIZE_AMPLITUDE, KP_NORMALIZE_NORMALIZE,
};
use kernpack::ffi::{kp_context, kp_status, KP_BACKEND_CPU};

use kp_status::*;

#[track_caller]
fn expect_err(got: kp_status, want: kp_status, mentions: &[&str]) {
    let msg = last_error();
    assert_eq!(got, want, "message: {msg:?}");
    for m in mentions {
        assert!(msg.contains(m), "{msg:?} does not mention {m:?}");
    }
}

#[track_caller]
fn expect_ok(got: kp_status) {
    assert_eq!(got, KP_OK, "message: {:?}", last_error());
}

fn device_count() -> i32 {
    let mut n = -1;
    expect_ok(unsafe { kp_device_count(&mut n) });
    n
}

/// `nseries` series of 5-150 samples, fresh from `seed` (xorshift).
struct Batch {
    t: Vec<f64>,
    y: Vec<f64>,
    offsets: Vec<i64>,
    f0: Vec<f64>,
    df: Vec<f64>,
}

fn batch(nseries: usize, seed: u64) -> Batch {
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut b = Batch {
        t: vec![],
        y: vec![],
        offsets: vec![0],
        f0: vec![],
        df: vec![],
    };
    for _ in 0..nseries {
        let n = 5 + (next() * 145.0) as usize;
        let (span, period) = (30.0 + 100.0 * next(), 0.5 + 5.0 * next());
        for _ in 0..n {
            let t = 5.9e4 + span * next();
            b.t.push(t);
            b.y.push(2.0 + (std::f64::consts::TAU * t / period).sin() + next() - 0.5);
        }
        b.offsets.push(b.t.len() as i64);
        b.f0.push(0.01 + 0.01 * next());
        b.df.push(0.002 + 0.001 * next());
    }
    b
}

fn seed() -> u64 {
    let s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    println!("seed {s}");
    s
}

/// The test's own reduction: the first of the highest non-NaN values
/// (moduli of interleaved pairs for amplitude), (-1, NaN) when none.
fn argmax(values: &[f64], amplitude: bool) -> (i64, f64) {
    let magnitudes: Vec<f64> = if amplitude {
        values.chunks(2).map(|p| p[0].hypot(p[1])).collect()
    } else {
        values.to_vec()
    };
    let mut best = (-1i64, f64::NAN);
    for (k, &v) in magnitudes.iter().enumerate() {
        if !v.is_nan() && (best.0 < 0 || v > best.1) {
            best = (k as i64, v);
        }
    }
    best
}

fn options(normalize: u32) -> kp_lombscargle_options {
    kp_lombscargle_options {
        normalize,
        floating_mean: 1,
        ..kp_lombscargle_options_default()
    }
}

/// Peaks (index, value) of `b` on `ctx`, f64 or (from rounded inputs) f32.
fn peaks(
    ctx: *const kp_context,
    b: &Batch,
    nf: usize,
    o: &kp_lombscargle_options,
    f32: bool,
) -> (Vec<i64>, Vec<f64>) {
    let ns = b.offsets.len() - 1;
    let (mut index, mut value) = (vec![-9i64; ns], vec![-9.0f64; ns]);
    let status = unsafe {
        if f32 {
            let (t, y): (Vec<f32>, Vec<f32>) = (
                b.t.iter().map(|&v| v as f32).collect(),
                b.y.iter().map(|&v| v as f32).collect(),
            );
            kp_lombscargle_batch_peaks_f32(
                ctx,
                t.as_ptr(),
                y.as_ptr(),
                null(),
                b.offsets.as_ptr(),
                ns,
                b.f0.as_ptr(),
                b.df.as_ptr(),
                ns,
                nf,
                o,
                index.as_mut_ptr(),
                value.as_mut_ptr(),
            )
        } else {
            kp_lombscargle_batch_peaks_f64(
                ctx,
                b.t.as_ptr(),
                b.y.as_ptr(),
                null(),
                b.offsets.as_ptr(),
                ns,
                b.f0.as_ptr(),
                b.df.as_ptr(),
                ns,
                nf,
                o,
                index.as_mut_ptr(),
                value.as_mut_ptr(),
            )
        }
    };
    expect_ok(status);
    (index, value)
}

/// The whole periodograms of `b` on `ctx`, as f64.
fn periodograms(
    ctx: *const kp_context,
    b: &Batch,
    nf: usize,
    o: &kp_lombscargle_options,
    f32: bool,
) -> Vec<f64> {
    let ns = b.offsets.len() - 1;
    let per = if o.normalize == KP_NORMALIZE_AMPLITUDE {
        2 * nf
    } else {
        nf
    };
    unsafe {
        if f32 {
            let (t, y): (Vec<f32>, Vec<f32>) = (
                b.t.iter().map(|&v| v as f32).collect(),
                b.y.iter().map(|&v| v as f32).collect(),
            );
            let mut out = vec![f32::NAN; ns * per];
            expect_ok(kp_lombscargle_batch_f32(
                ctx,
                t.as_ptr(),
                y.as_ptr(),
                null(),
                b.offsets.as_ptr(),
                ns,
                b.f0.as_ptr(),
                b.df.as_ptr(),
                ns,
                nf,
                o,
                out.as_mut_ptr(),
                out.len(),
            ));
            out.iter().map(|&v| v as f64).collect()
        } else {
            let mut out = vec![f64::NAN; ns * per];
            expect_ok(kp_lombscargle_batch_f64(
                ctx,
                b.t.as_ptr(),
                b.y.as_ptr(),
                null(),
                b.offsets.as_ptr(),
                ns,
                b.f0.as_ptr(),
                b.df.as_ptr(),
                ns,
                nf,
                o,
                out.as_mut_ptr(),
                out.len(),
            ));
            out
        }
    }
}

/// Peaks equal the test's argmax of the periodograms the same context makes
/// (indices equal; values bitwise, amplitude within 4 ulp of the hypot).
fn check_peaks_against_periodograms(ctx: *const kp_context, b: &Batch, nf: usize, f32: bool) {
    for normalize in [KP_NORMALIZE_NORMALIZE, KP_NORMALIZE_AMPLITUDE] {
        let o = options(normalize);
        let amplitude = normalize == KP_NORMALIZE_AMPLITUDE;
        let (index, value) = peaks(ctx, b, nf, &o, f32);
        let all = periodograms(ctx, b, nf, &o, f32);
        let per = all.len() / index.len();
        for (s, p) in all.chunks(per).enumerate() {
            let (i, v) = argmax(p, amplitude);
            assert_eq!(index[s], i, "series {s}");
            assert!(i >= 0);
            if amplitude {
                assert!(
                    (value[s] - v).abs() <= 4.0 * f64::EPSILON * v.abs(),
                    "series {s}"
                );
            } else {
                assert_eq!(value[s].to_bits(), v.to_bits(), "series {s}");
            }
        }
    }
}

#[test]
fn peaks_on_the_cpu_are_those_of_the_periodograms() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let b = batch(30, seed());
    check_peaks_against_periodograms(ctx.ptr(), &b, 400, false);
    check_peaks_against_periodograms(ctx.ptr(), &b, 400, true);
}

#[test]
fn bad_peak_calls_fail_and_write_nothing() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let b = batch(3, seed());
    let o = options(KP_NORMALIZE_NORMALIZE);
    let (mut index, mut value) = (vec![-9i64; 3], vec![-9.0f64; 3]);
    let call = |offsets: &[i64], index: *mut i64, value: *mut f64, nf: usize| unsafe {
        kp_lombscargle_batch_peaks_f64(
            ctx.ptr(),
            b.t.as_ptr(),
            b.y.as_ptr(),
            null(),
            offsets.as_ptr(),
            3,
            b.f0.as_ptr(),
            b.df.as_ptr(),
            3,
            nf,
            &o,
            index,
            value,
        )
    };
    // Offsets that decrease; no frequencies; NULL outputs.
    let mut bad = b.offsets.clone();
    bad.swap(1, 2);
    expect_err(
        call(&bad, index.as_mut_ptr(), value.as_mut_ptr(), 50),
        KP_ERROR_INVALID_ARGUMENT,
        &["offsets"],
    );
    expect_err(
        call(&b.offsets, index.as_mut_ptr(), value.as_mut_ptr(), 0),
        KP_ERROR_INVALID_ARGUMENT,
        &["frequency"],
    );
    expect_err(
        call(&b.offsets, null_mut(), value.as_mut_ptr(), 50),
        KP_ERROR_NULL_POINTER,
        &["index"],
    );
    expect_err(
        call(&b.offsets, index.as_mut_ptr(), null_mut(), 50),
        KP_ERROR_NULL_POINTER,
        &["value"],
    );
    assert!(
        index.iter().all(|&i| i == -9) && value.iter().all(|&v| v == -9.0),
        "a failed call wrote its outputs"
    );
}

#[test]
fn bad_device_lists_are_refused_and_out_untouched() {
    let n = device_count();
    let sentinel = 0x5a5a_5a50usize as *mut kp_context;
    let create = |ordinals: &[i32], count: usize, out: *mut *mut kp_context| unsafe {
        kp_context_create_on_devices(
            if count == 0 && ordinals.is_empty() {
                null()
            } else {
                ordinals.as_ptr()
            },
            count,
            0,
            out,
        )
    };
    let mut out = sentinel;
    expect_err(create(&[0], 1, null_mut()), KP_ERROR_NULL_POINTER, &["out"]);
    expect_err(
        create(&[], 0, &mut out),
        KP_ERROR_INVALID_ARGUMENT,
        &["at least one"],
    );
    expect_err(
        unsafe { kp_context_create_on_devices(null(), 2, 0, &mut out) },
        KP_ERROR_NULL_POINTER,
        &["ordinals"],
    );
    expect_err(
        create(&[-1], 1, &mut out),
        KP_ERROR_INVALID_ARGUMENT,
        &["-1"],
    );
    let past = if n == 0 {
        KP_ERROR_NO_GPU
    } else {
        KP_ERROR_INVALID_ARGUMENT
    };
    expect_err(create(&[0, n], 2, &mut out), past, &[&format!("GPU {n}")]);
    if n > 0 {
        expect_err(
            create(&[0, 0], 2, &mut out),
            KP_ERROR_INVALID_ARGUMENT,
            &["twice"],
        );
    }
    assert_eq!(
        out, sentinel,
        "a failed kp_context_create_on_devices wrote *out"
    );
}

#[test]
fn contexts_over_several_gpus_or_in_chunks_equal_one_gpu() {
    let n = device_count();
    if n == 0 {
        println!("SKIPPED contexts_over_several_gpus_or_in_chunks_equal_one_gpu: no GPU");
        assert!(
            std::env::var("KERNPACK_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "KERNPACK_REQUIRE_GPU=1 but no GPU"
        );
        return;
    }
    let b = batch(500, seed());
    let nf = 1500;
    let mut one = null_mut();
    expect_ok(unsafe { kp_context_create_on_device(0, &mut one) });
    let one = Ctx(one);
    let all: Vec<i32> = (0..n).collect();
    let mut spread = null_mut();
    expect_ok(unsafe { kp_context_create_on_devices(all.as_ptr(), all.len(), 0, &mut spread) });
    let spread = Ctx(spread);
    let mut chunked = null_mut();
    expect_ok(unsafe { kp_context_create_on_devices([0].as_ptr(), 1, 2 << 20, &mut chunked) });
    let chunked = Ctx(chunked);
    for f32 in [true, false] {
        check_peaks_against_periodograms(one.ptr(), &b, nf, f32);
        for normalize in [KP_NORMALIZE_NORMALIZE, KP_NORMALIZE_AMPLITUDE] {
            let o = options(normalize);
            let want = periodograms(one.ptr(), &b, nf, &o, f32);
            let want_peaks = peaks(one.ptr(), &b, nf, &o, f32);
            for (what, ctx) in [("every GPU", &spread), ("GPU 0 in chunks", &chunked)] {
                let got = periodograms(ctx.ptr(), &b, nf, &o, f32);
                assert!(
                    got.iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{what}: periodograms differ"
                );
                assert_eq!(
                    peaks(ctx.ptr(), &b, nf, &o, f32),
                    want_peaks,
                    "{what}: peaks differ"
                );
            }
        }
    }
}

#[test]
fn releasing_the_staging_is_always_ok() {
    // Nothing kept yet, or whatever other tests left: both are fine, twice.
    assert_eq!(kernpack::ffi::threads::kp_release_staging(), KP_OK);
    assert_eq!(kernpack::ffi::threads::kp_release_staging(), KP_OK);
}
