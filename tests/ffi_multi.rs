//! The C ABI of batches beyond one GPU: `kp_context_create_on_devices` (bad
//! lists refused with a status and a message, `*out` untouched) and the peaks
//! of a batch (`kp_lombscargle_batch_peaks_*`: each series' highest value;
//! `kp_lombscargle_batch_top_peaks_*`: each series' best `k` peaks, equal to
//! the safe API's bit for bit; outputs untouched on failure). With GPUs: a
//! context over every GPU, and one over GPU 0 with a tiny memory limit (many
//! chunks), give bitwise what a plain context on GPU 0 gives.
mod common;

use std::ptr::{null, null_mut};

use common::{bad_peak_options, last_error, Ctx};
use kernpack::api::lombscargle::batch::{Batch as ApiBatch, BatchGrid};
use kernpack::api::lombscargle::peaks::{Peak, PeakOptions, MAX_PEAKS};
use kernpack::ffi::devices::{
    kp_context_create_on_device, kp_context_create_on_devices, kp_device_count,
};
use kernpack::ffi::lombscargle::{
    kp_lombscargle_batch_f32, kp_lombscargle_batch_f64, kp_lombscargle_batch_peaks_f32,
    kp_lombscargle_batch_peaks_f64, kp_lombscargle_batch_top_peaks_f32,
    kp_lombscargle_batch_top_peaks_f64, kp_lombscargle_options, kp_lombscargle_options_default,
    KP_NORMALIZE_AMPLITUDE, KP_NORMALIZE_NORMALIZE, KP_NORMALIZE_POWER,
};
use kernpack::ffi::phasefold::{kp_peak_options, kp_peak_options_default};
use kernpack::ffi::{kp_context, kp_status, KP_BACKEND_CPU};
use kernpack::{Backend, Kernpack, LombScargleOptions, Normalize};

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
        let o = options(KP_NORMALIZE_NORMALIZE);
        let p = kp_peak_options {
            k: 5,
            separation: 0.01,
        };
        let want = top_peaks(one.ptr(), &b, nf, &o, Some(&p), f32);
        for (what, ctx) in [("every GPU", &spread), ("GPU 0 in chunks", &chunked)] {
            let got = top_peaks(ctx.ptr(), &b, nf, &o, Some(&p), f32);
            assert_eq!(
                (got.0, bits(&got.1)),
                (want.0.clone(), bits(&want.1)),
                "{what}: top peaks differ"
            );
        }
    }
}

#[test]
fn releasing_the_staging_is_always_ok() {
    // Nothing kept yet, or whatever other tests left: both are fine, twice.
    assert_eq!(kernpack::ffi::threads::kp_release_staging(), KP_OK);
    assert_eq!(kernpack::ffi::threads::kp_release_staging(), KP_OK);
}

// Each series' best peaks: kp_lombscargle_batch_top_peaks_*.

const POISON_INDEX: i64 = -4242;
const POISON: f64 = -4242.0;

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The top peaks of `b` on `ctx` with the peak options `p` (None: NULL),
/// f64 or (from rounded inputs) f32, through poisoned buffers one value
/// longer than `nseries * k` (that value must stay poisoned): the indices
/// and the values, `k` a series.
fn top_peaks(
    ctx: *const kp_context,
    b: &Batch,
    nf: usize,
    o: &kp_lombscargle_options,
    p: Option<&kp_peak_options>,
    f32: bool,
) -> (Vec<i64>, Vec<f64>) {
    let ns = b.offsets.len() - 1;
    let k = p.map_or(1, |p| p.k);
    let (mut index, mut value) = (vec![POISON_INDEX; ns * k + 1], vec![POISON; ns * k + 1]);
    let pp = p.map_or(null(), |p| p as *const kp_peak_options);
    let (ix, vx) = (index.as_mut_ptr(), value.as_mut_ptr());
    let (off, f0, df) = (b.offsets.as_ptr(), b.f0.as_ptr(), b.df.as_ptr());
    let (t32, y32) = rounded(b);
    #[rustfmt::skip]
    let status = unsafe {
        match f32 {
            true => kp_lombscargle_batch_top_peaks_f32(
                ctx, t32.as_ptr(), y32.as_ptr(), null(), off, ns, f0, df, ns, nf, o, pp, ix, vx),
            false => kp_lombscargle_batch_top_peaks_f64(
                ctx, b.t.as_ptr(), b.y.as_ptr(), null(), off, ns, f0, df, ns, nf, o, pp, ix, vx),
        }
    };
    expect_ok(status);
    assert_eq!(
        (index.pop(), value.pop().map(f64::to_bits)),
        (Some(POISON_INDEX), Some(POISON.to_bits())),
        "wrote past nseries x k"
    );
    (index, value)
}

fn rounded(b: &Batch) -> (Vec<f32>, Vec<f32>) {
    (
        b.t.iter().map(|&v| v as f32).collect(),
        b.y.iter().map(|&v| v as f32).collect(),
    )
}

/// What the safe API finds on the CPU for the same call.
fn api_top_peaks(
    b: &Batch,
    nf: usize,
    normalize: Normalize,
    p: &PeakOptions,
    f32: bool,
) -> Vec<Vec<Peak>> {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let offsets: Vec<usize> = b.offsets.iter().map(|&o| o as usize).collect();
    let grids = BatchGrid::PerSeries {
        f0: &b.f0,
        df: &b.df,
        nf,
    };
    let opts = LombScargleOptions {
        normalize,
        floating_mean: true,
        precenter: false,
    };
    if f32 {
        let (t, y) = rounded(b);
        let batch = ApiBatch {
            t: &t,
            y: &y,
            weights: None,
            offsets: &offsets,
        };
        kp.lombscargle_batch_top_peaks(&batch, &grids, &opts, p)
    } else {
        let batch = ApiBatch {
            t: &b.t,
            y: &b.y,
            weights: None,
            offsets: &offsets,
        };
        kp.lombscargle_batch_top_peaks(&batch, &grids, &opts, p)
    }
    .unwrap()
}

/// On random batches, f32 and f64, both real normalisations, NULL peak
/// options (one peak), a few peaks and as many as allowed with a
/// separation: the C call writes the safe API's peaks (indices equal,
/// values bit for bit), then index -1 and value NaN to `k`; its first peak
/// is `kp_lombscargle_batch_peaks_*`'s highest value.
#[test]
fn top_peaks_on_the_cpu_equal_the_api() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let seed = seed();
    let b = batch(25, seed);
    let nf = 500;
    let mut state = seed | 1;
    let mut next = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    for (normalize, kind) in [
        (KP_NORMALIZE_NORMALIZE, Normalize::Normalize),
        (KP_NORMALIZE_POWER, Normalize::Power),
    ] {
        let o = options(normalize);
        let few = kp_peak_options {
            k: 2 + (next() * 7.0) as usize,
            separation: 0.0,
        };
        let most = kp_peak_options {
            k: MAX_PEAKS,
            separation: 0.05 * next(),
        };
        for p in [None, Some(&few), Some(&most)] {
            for f32 in [false, true] {
                let what = format!("normalize {normalize}, {p:?}, f32 {f32}");
                let c = p.copied().unwrap_or_else(|| kp_peak_options_default());
                let opts = PeakOptions {
                    k: c.k,
                    separation: c.separation,
                };
                let want = api_top_peaks(&b, nf, kind, &opts, f32);
                let (index, value) = top_peaks(ctx.ptr(), &b, nf, &o, p, f32);
                assert_eq!(want.len(), 25, "{what}");
                for (s, row) in want.iter().enumerate() {
                    assert!(!row.is_empty() && row.len() <= c.k, "{what}: series {s}");
                    for j in 0..c.k {
                        let (i, v) = row
                            .get(j)
                            .map_or((-1, f64::NAN), |p| (p.index as i64, p.value));
                        assert_eq!(
                            (index[s * c.k + j], value[s * c.k + j].to_bits()),
                            (i, v.to_bits()),
                            "{what}: series {s}, peak {j}"
                        );
                    }
                }
                // The best peak is the single highest value.
                let (one_index, one_value) = peaks(ctx.ptr(), &b, nf, &o, f32);
                let firsts: Vec<i64> = index.iter().step_by(c.k).copied().collect();
                let first_values: Vec<f64> = value.iter().step_by(c.k).copied().collect();
                assert_eq!(
                    (firsts, bits(&first_values)),
                    (one_index, bits(&one_value)),
                    "{what}: the best peaks are not kp_lombscargle_batch_peaks'"
                );
            }
        }
    }
}

/// Every bad top-peaks call: the status, the message, `index` and `value`
/// untouched.
#[test]
fn bad_top_peak_calls_fail_and_write_nothing() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let b = batch(3, seed());
    let good_o = options(KP_NORMALIZE_NORMALIZE);
    let amplitude = options(KP_NORMALIZE_AMPLITUDE);
    let two = kp_peak_options {
        k: 2,
        separation: 0.0,
    };
    // Room for two peaks of three series, and as many more (so that an
    // output over another has room).
    let mut index = vec![POISON_INDEX; 12];
    let mut value = vec![POISON; 12];
    #[derive(Clone, Copy)]
    struct Call {
        t: *const f64,
        offsets: *const i64,
        f0: *const f64,
        ngrids: usize,
        nf: usize,
        options: *const kp_lombscargle_options,
        peaks: *const kp_peak_options,
        index: *mut i64,
        value: *mut f64,
    }
    let good = Call {
        t: b.t.as_ptr(),
        offsets: b.offsets.as_ptr(),
        f0: b.f0.as_ptr(),
        ngrids: 3,
        nf: 50,
        options: &good_o,
        peaks: &two,
        index: index.as_mut_ptr(),
        value: value.as_mut_ptr(),
    };
    let run = |c: Call| unsafe {
        kp_lombscargle_batch_top_peaks_f64(
            ctx.ptr(),
            c.t,
            b.y.as_ptr(),
            null(),
            c.offsets,
            3,
            c.f0,
            b.df.as_ptr(),
            c.ngrids,
            c.nf,
            c.options,
            c.peaks,
            c.index,
            c.value,
        )
    };
    let mut decreasing = b.offsets.clone();
    decreasing.swap(1, 2);
    let bad_peaks = bad_peak_options();
    let misaligned = (good.index as *mut u8).wrapping_add(1) as *mut i64;
    let invalid = KP_ERROR_INVALID_ARGUMENT;
    #[rustfmt::skip]
    let mut cases: Vec<(Call, kp_status, Vec<String>)> = vec![
        (Call { options: &amplitude, ..good }, invalid, vec!["amplitude".into()]),
        (Call { index: null_mut(), ..good }, KP_ERROR_NULL_POINTER, vec!["index is NULL".into()]),
        (Call { value: null_mut(), ..good }, KP_ERROR_NULL_POINTER, vec!["value is NULL".into()]),
        (Call { index: misaligned, ..good }, invalid, vec!["is not aligned to 8 bytes".into()]),
        (Call { value: good.index as *mut f64, ..good }, invalid, vec!["index and value overlap".into()]),
        (Call { index: good.offsets as *mut i64, ..good }, invalid, vec!["index and offsets overlap".into()]),
        (Call { value: good.t as *mut f64, ..good }, invalid, vec!["value and t overlap".into()]),
        // `value` (six values) is longer than `f0` (three) and may run on into
        // the next allocation: the refusal names `value` and what it overlaps.
        (Call { value: good.f0 as *mut f64, ..good }, invalid, vec!["value".into(), "overlap".into()]),
        (Call { offsets: decreasing.as_ptr(), ..good }, invalid, vec!["offsets".into()]),
        (Call { offsets: null(), ..good }, KP_ERROR_NULL_POINTER, vec!["offsets is NULL".into()]),
        (Call { t: null(), ..good }, KP_ERROR_NULL_POINTER, vec!["t is NULL".into()]),
        (Call { f0: null(), ..good }, KP_ERROR_NULL_POINTER, vec!["f0 is NULL".into()]),
        (Call { nf: 0, ..good }, invalid, vec!["frequency".into()]),
        (Call { nf: usize::MAX / 2, ..good }, invalid, vec!["frequencies is too many".into()]),
        // Periodograms no host holds (the peaks keep none, so no output
        // bounds nf): refused before any work.
        (Call { nf: 1 << 40, ..good }, KP_ERROR_OUT_OF_MEMORY, vec!["frequencies per series".into()]),
        (Call { ngrids: 2, ..good }, invalid, vec!["3 series but 2 f0 and 2 df values".into()]),
    ];
    for (p, needle) in &bad_peaks {
        cases.push((Call { peaks: p, ..good }, invalid, vec![needle.clone()]));
    }
    for (call, want, needles) in &cases {
        let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
        expect_err(run(*call), *want, &needles);
        assert!(
            index.iter().all(|&i| i == POISON_INDEX) && value.iter().all(|&v| v == POISON),
            "a failed call wrote its outputs: {needles:?}"
        );
    }
    // The good call, and NULL peak options: one peak a series.
    expect_ok(run(good));
    // (A series' second peak may be padding: 50 frequencies hold few.)
    assert!(
        index[..6].iter().all(|&i| (-1..50).contains(&i)),
        "{index:?}"
    );
    assert!(
        [index[0], index[2], index[4]].iter().all(|&i| i >= 0),
        "{index:?}"
    );
    assert!(index[6..].iter().all(|&i| i == POISON_INDEX), "{index:?}");
    expect_ok(run(Call {
        peaks: null(),
        index: index[6..].as_mut_ptr(),
        value: value[6..].as_mut_ptr(),
        ..good
    }));
    assert_eq!(index[6..9], [index[0], index[2], index[4]]);
    assert!(index[9..].iter().all(|&i| i == POISON_INDEX));
}
