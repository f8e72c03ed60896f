//! The C ABI called from Rust, as C would call it: every error path (status,
//! message naming the argument, outputs untouched), the per-thread last error,
//! agreement with the safe API, and (with a GPU) the device-pointer entry
//! points on a stream the caller created. Without a GPU the GPU test prints
//! SKIPPED; with KERNPACK_REQUIRE_GPU=1 it fails.
//!
//! (That a panic never unwinds into C is not tested: no input reaches one.)
mod common;

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use common::{gpu_or_skip, last_error, scaled_max_error, Ctx};
use cudarc::driver::{DevicePtr, DevicePtrMut};
use kernpack::ffi::lombscargle::{
    kp_lombscargle_device_f32, kp_lombscargle_device_f64, kp_lombscargle_f32, kp_lombscargle_f64,
    kp_lombscargle_options, kp_lombscargle_options_default, kp_lombscargle_output_len,
    KP_NORMALIZE_AMPLITUDE, KP_NORMALIZE_NORMALIZE, KP_NORMALIZE_POWER,
};
use kernpack::ffi::{
    kp_backend, kp_context, kp_context_create, kp_context_destroy, kp_context_is_gpu,
    kp_device_alloc, kp_device_free, kp_memcpy_dtoh, kp_memcpy_htod, kp_status, kp_status_string,
    kp_stream_synchronize, KP_BACKEND_AUTO, KP_BACKEND_CPU, KP_BACKEND_GPU,
};
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Normalize, Periodogram, Series};

use kp_status::*;

const POISON: f64 = -12345.0;

/// `name` occurs in `msg` as a whole word.
fn names(msg: &str, name: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    msg.match_indices(name).any(|(i, _)| {
        !msg[..i].chars().next_back().is_some_and(word)
            && !msg[i + name.len()..].chars().next().is_some_and(word)
    })
}

/// A failed call: `want`, a message, naming `arg` when given.
#[track_caller]
fn expect_err(got: kp_status, want: kp_status, arg: Option<&str>) {
    let msg = last_error();
    assert_eq!(got, want, "message: {msg:?}");
    assert!(
        !msg.is_empty(),
        "{got:?} with an empty kp_last_error_message()"
    );
    if let Some(arg) = arg {
        assert!(names(&msg, arg), "{msg:?} does not name `{arg}`");
    }
}

#[track_caller]
fn expect_ok(got: kp_status) {
    let msg = last_error();
    assert_eq!(got, KP_OK, "message: {msg:?}");
    assert_eq!(msg, "", "kp_last_error_message() after a success");
}

/// Whether a context runs on a GPU (`kp_context_is_gpu`, which must succeed).
fn is_gpu(ctx: &Ctx) -> bool {
    let mut flag = -1;
    expect_ok(unsafe { kp_context_is_gpu(ctx.ptr(), &mut flag) });
    assert!(flag == 0 || flag == 1, "is_gpu = {flag}");
    flag == 1
}

/// The host and device entry points of one dtype.
trait Ffi: Float + PartialEq {
    #[allow(clippy::too_many_arguments)]
    unsafe fn host(
        ctx: *const kp_context,
        t: *const Self,
        y: *const Self,
        w: *const Self,
        nx: usize,
        f: *const Self,
        nf: usize,
        o: *const kp_lombscargle_options,
        out: *mut Self,
        out_len: usize,
    ) -> kp_status;
    #[allow(clippy::too_many_arguments)]
    unsafe fn device(
        ctx: *const kp_context,
        t: u64,
        y: u64,
        w: u64,
        nx: usize,
        f: u64,
        nf: usize,
        o: *const kp_lombscargle_options,
        out: u64,
        stream: u64,
    ) -> kp_status;
}

macro_rules! impl_ffi {
    ($t:ty, $host:ident, $device:ident) => {
        impl Ffi for $t {
            unsafe fn host(
                ctx: *const kp_context,
                t: *const Self,
                y: *const Self,
                w: *const Self,
                nx: usize,
                f: *const Self,
                nf: usize,
                o: *const kp_lombscargle_options,
                out: *mut Self,
                out_len: usize,
            ) -> kp_status {
                unsafe { $host(ctx, t, y, w, nx, f, nf, o, out, out_len) }
            }
            unsafe fn device(
                ctx: *const kp_context,
                t: u64,
                y: u64,
                w: u64,
                nx: usize,
                f: u64,
                nf: usize,
                o: *const kp_lombscargle_options,
                out: u64,
                stream: u64,
            ) -> kp_status {
                // The output length the options imply, as a C caller would pass it.
                let out_len =
                    unsafe { kernpack::ffi::lombscargle::kp_lombscargle_output_len(nf, o) };
                unsafe { $device(ctx, t, y, w, nx, f, nf, o, out, out_len, stream) }
            }
        }
    };
}
impl_ffi!(f32, kp_lombscargle_f32, kp_lombscargle_device_f32);
impl_ffi!(f64, kp_lombscargle_f64, kp_lombscargle_device_f64);

const NX: usize = 211;
const NF: usize = 300;
const PEAK: usize = 97;

/// Irregular samples of a sinusoid at angular frequency f[PEAK] plus noise.
struct Data<T> {
    t: Vec<T>,
    y: Vec<T>,
    w: Vec<T>,
    f: Vec<T>,
}

fn data<T: Ffi>() -> Data<T> {
    let mut state = 0x853c_49e6_748f_ea9bu64;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let f: Vec<f64> = (0..NF).map(|k| 0.03 + 0.011 * k as f64).collect();
    let t: Vec<f64> = (0..NX)
        .map(|i| 40.0 * (i as f64 + 0.85 * uniform()) / NX as f64)
        .collect();
    let y: Vec<f64> = t
        .iter()
        .map(|t| 1.7 * (f[PEAK] * t + 0.3).sin() + 0.5 * (uniform() - 0.5))
        .collect();
    let w: Vec<f64> = (0..NX).map(|_| 0.2 + uniform()).collect();
    let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect();
    Data {
        t: cast(t),
        y: cast(y),
        w: cast(w),
        f: cast(f),
    }
}

fn options(normalize: u32, floating_mean: bool, precenter: bool) -> kp_lombscargle_options {
    kp_lombscargle_options {
        normalize,
        floating_mean: floating_mean as u32,
        precenter: precenter as u32,
    }
}

fn all_modes() -> Vec<kp_lombscargle_options> {
    let mut modes = Vec::new();
    for normalize in [
        KP_NORMALIZE_POWER,
        KP_NORMALIZE_NORMALIZE,
        KP_NORMALIZE_AMPLITUDE,
    ] {
        for (fm, pc) in [(false, false), (true, false), (false, true), (true, true)] {
            modes.push(options(normalize, fm, pc));
        }
    }
    modes
}

/// The host-pointer periodogram (one value of slack at the end must stay poison).
fn host_periodogram<T: Ffi>(
    ctx: &Ctx,
    d: &Data<T>,
    o: &kp_lombscargle_options,
    weighted: bool,
) -> Vec<T> {
    let len = unsafe { kp_lombscargle_output_len(NF, o) };
    assert_ne!(len, 0);
    let mut out = vec![T::from_f64(POISON); len + 1];
    let w = if weighted { d.w.as_ptr() } else { null() };
    expect_ok(unsafe {
        T::host(
            ctx.ptr(),
            d.t.as_ptr(),
            d.y.as_ptr(),
            w,
            NX,
            d.f.as_ptr(),
            NF,
            o,
            out.as_mut_ptr(),
            len,
        )
    });
    assert_eq!(out.pop(), Some(T::from_f64(POISON)), "wrote past out_len");
    out
}

fn to_f64<T: Ffi>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

#[test]
fn status_strings() {
    let all = [
        KP_OK,
        KP_ERROR_INVALID_ARGUMENT,
        KP_ERROR_NULL_POINTER,
        KP_ERROR_NO_GPU,
        KP_ERROR_CUDA,
        KP_ERROR_INTERNAL,
    ];
    let mut seen = Vec::new();
    for (code, status) in all.into_iter().enumerate() {
        assert_eq!(status as i32, code as i32, "{status:?}");
        let s = kp_status_string(status as i32);
        assert!(!s.is_null(), "{status:?}");
        let s = unsafe { CStr::from_ptr(s) }.to_str().unwrap();
        assert!(!s.is_empty() && !seen.contains(&s), "{status:?}: {s:?}");
        seen.push(s);
    }
    assert_eq!(std::mem::size_of::<kp_status>(), 4, "a C enum is an int");
}

#[test]
fn contexts() {
    unsafe { kp_context_destroy(null_mut()) };

    let cpu = Ctx::new(KP_BACKEND_CPU);
    assert!(!is_gpu(&cpu));
    let auto = Ctx::new(KP_BACKEND_AUTO);
    let has_gpu = kernpack::Gpu::get(0).is_ok();
    assert_eq!(is_gpu(&auto), has_gpu);

    let sentinel = 0x5EED as *mut kp_context;
    let mut out = sentinel;
    expect_err(
        unsafe { kp_context_create(99, &mut out) },
        KP_ERROR_INVALID_ARGUMENT,
        None,
    );
    assert!(last_error().contains("99"), "{}", last_error());
    assert_eq!(out, sentinel, "a failed create wrote *out");
    expect_err(
        unsafe { kp_context_create(KP_BACKEND_CPU, null_mut()) },
        KP_ERROR_NULL_POINTER,
        Some("out"),
    );
    if has_gpu {
        assert!(is_gpu(&Ctx::new(KP_BACKEND_GPU)));
    } else {
        expect_err(
            unsafe { kp_context_create(KP_BACKEND_GPU, &mut out) },
            KP_ERROR_NO_GPU,
            None,
        );
        assert_eq!(out, sentinel, "a failed create wrote *out");
    }

    let mut flag = -7;
    expect_err(
        unsafe { kp_context_is_gpu(null(), &mut flag) },
        KP_ERROR_NULL_POINTER,
        Some("ctx"),
    );
    assert_eq!(flag, -7);
    expect_err(
        unsafe { kp_context_is_gpu(cpu.ptr(), null_mut()) },
        KP_ERROR_NULL_POINTER,
        Some("is_gpu"),
    );
    // A success clears the message.
    is_gpu(&cpu);
}

#[test]
fn output_len_and_default_options() {
    let d = kp_lombscargle_options_default();
    assert_eq!(
        (d.normalize, d.floating_mean, d.precenter),
        (KP_NORMALIZE_POWER, 0, 0)
    );
    unsafe {
        assert_eq!(kp_lombscargle_output_len(NF, null()), NF);
        assert_eq!(kp_lombscargle_output_len(NF, &d), NF);
        let norm = options(KP_NORMALIZE_NORMALIZE, true, false);
        assert_eq!(kp_lombscargle_output_len(NF, &norm), NF);
        let amp = options(KP_NORMALIZE_AMPLITUDE, false, true);
        assert_eq!(kp_lombscargle_output_len(NF, &amp), 2 * NF);
        assert_eq!(kp_lombscargle_output_len(0, &amp), 0);
        let seven = options(7, false, false);
        assert_eq!(kp_lombscargle_output_len(NF, &seven), 0);
    }
}

/// A rejected call: what it is, the call, the status and the argument the message names.
type Case<'a> = (
    &'static str,
    Box<dyn Fn() -> kp_status + 'a>,
    kp_status,
    Option<&'static str>,
);

/// Every rejected host call: right status, a message (naming the argument
/// where one is to blame), and `out` exactly as it was.
fn host_errors<T: Ffi>(ctx: &Ctx) {
    let d = data::<T>();
    let (t, y, w, f) = (d.t.as_ptr(), d.y.as_ptr(), d.w.as_ptr(), d.f.as_ptr());
    let poison = T::from_f64(POISON);
    let mut out = vec![poison; 2 * NF + 1];
    let o = out.as_mut_ptr();
    let c = ctx.ptr();
    let amp = options(KP_NORMALIZE_AMPLITUDE, false, false);
    let seven = options(7, false, false);
    let with = |v: &[T], i: usize, x: f64| {
        let mut v = v.to_vec();
        v[i] = T::from_f64(x);
        v
    };
    let neg_f = with(&d.f, NF / 2, -0.5);
    let nan_y = with(&d.y, 3, f64::NAN);
    let inf_t = with(&d.t, NX - 1, f64::INFINITY);
    let nan_f = with(&d.f, 0, f64::NAN);
    let neg_w = with(&d.w, 0, -1.0);
    let inf_w = with(&d.w, 9, f64::INFINITY);
    let zero_w = [T::from_f64(0.0); NX];
    let zero_y = [T::from_f64(0.0); NX];
    let norm = options(KP_NORMALIZE_NORMALIZE, true, false);

    #[rustfmt::skip]
    let cases: Vec<Case> = unsafe { vec![
        ("NULL ctx", Box::new(|| T::host(null(), t, y, null(), NX, f, NF, null(), o, NF)), KP_ERROR_NULL_POINTER, Some("ctx")),
        ("NULL t", Box::new(|| T::host(c, null(), y, null(), NX, f, NF, null(), o, NF)), KP_ERROR_NULL_POINTER, Some("t")),
        ("NULL y", Box::new(|| T::host(c, t, null(), null(), NX, f, NF, null(), o, NF)), KP_ERROR_NULL_POINTER, Some("y")),
        ("NULL freqs", Box::new(|| T::host(c, t, y, null(), NX, null(), NF, null(), o, NF)), KP_ERROR_NULL_POINTER, Some("freqs")),
        ("NULL out", Box::new(|| T::host(c, t, y, null(), NX, f, NF, null(), null_mut(), NF)), KP_ERROR_NULL_POINTER, Some("out")),
        ("out_len nf - 1", Box::new(|| T::host(c, t, y, null(), NX, f, NF, null(), o, NF - 1)), KP_ERROR_INVALID_ARGUMENT, Some("out_len")),
        ("out_len nf + 1", Box::new(|| T::host(c, t, y, null(), NX, f, NF, null(), o, NF + 1)), KP_ERROR_INVALID_ARGUMENT, Some("out_len")),
        ("out_len 0", Box::new(|| T::host(c, t, y, null(), NX, f, NF, null(), o, 0)), KP_ERROR_INVALID_ARGUMENT, Some("out_len")),
        ("amplitude, out_len nf", Box::new(|| T::host(c, t, y, null(), NX, f, NF, &amp, o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("out_len")),
        ("negative frequency", Box::new(|| T::host(c, t, y, null(), NX, neg_f.as_ptr(), NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("freqs")),
        ("NaN frequency", Box::new(|| T::host(c, t, y, null(), NX, nan_f.as_ptr(), NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("freqs")),
        ("NaN in y", Box::new(|| T::host(c, t, nan_y.as_ptr(), null(), NX, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("y")),
        ("Inf in t", Box::new(|| T::host(c, inf_t.as_ptr(), y, null(), NX, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("t")),
        ("negative weight", Box::new(|| T::host(c, t, y, neg_w.as_ptr(), NX, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("weights")),
        ("infinite weight", Box::new(|| T::host(c, t, y, inf_w.as_ptr(), NX, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("weights")),
        ("weights sum to 0", Box::new(|| T::host(c, t, y, zero_w.as_ptr(), NX, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("weights")),
        ("normalize 7", Box::new(|| T::host(c, t, y, w, NX, f, NF, &seven, o, NF)), KP_ERROR_INVALID_ARGUMENT, Some("normalize")),
        ("nx 0", Box::new(|| T::host(c, t, y, null(), 0, f, NF, null(), o, NF)), KP_ERROR_INVALID_ARGUMENT, None),
        ("nf 0", Box::new(|| T::host(c, t, y, null(), NX, f, 0, null(), o, 0)), KP_ERROR_INVALID_ARGUMENT, None),
        ("normalize, y all 0", Box::new(|| T::host(c, t, zero_y.as_ptr(), null(), NX, f, NF, &norm, o, NF)), KP_ERROR_INVALID_ARGUMENT, None),
    ] };
    for (what, call, want, arg) in &cases {
        let got = call();
        let msg = last_error();
        assert_eq!(got, *want, "{what}: message {msg:?}");
        assert!(!msg.is_empty(), "{what}: empty message");
        if let Some(arg) = arg {
            assert!(names(&msg, arg), "{what}: {msg:?} does not name `{arg}`");
        }
        assert!(
            out.iter().all(|v| *v == poison),
            "{what}: out was written by a failing call"
        );
    }
    // A success after all that clears the message and writes exactly nf values.
    expect_ok(unsafe { T::host(c, t, y, w, NX, f, NF, null(), o, NF) });
    assert!(out[..NF]
        .iter()
        .all(|v| *v != poison && v.to_f64().is_finite()));
    assert!(out[NF..].iter().all(|v| *v == poison));
}

#[test]
fn host_errors_cpu() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    host_errors::<f64>(&cpu);
    host_errors::<f32>(&cpu);
}

#[test]
fn host_errors_auto() {
    let auto = Ctx::new(KP_BACKEND_AUTO);
    host_errors::<f64>(&auto);
    host_errors::<f32>(&auto);
}

/// The C entry points give exactly what the safe API gives on the same backend.
fn matches_safe_api<T: Ffi>(backend: Backend, kp_backend: kp_backend) {
    let ctx = Ctx::new(kp_backend);
    let kp = Kernpack::new(backend).unwrap();
    let d = data::<T>();
    for o in all_modes() {
        for weighted in [false, true] {
            let ours = host_periodogram(&ctx, &d, &o, weighted);
            let mut series = Series::new(&d.t[..], &d.y[..]);
            if weighted {
                series = series.with_weights(&d.w);
            }
            let opts = LombScargleOptions {
                normalize: match o.normalize {
                    KP_NORMALIZE_POWER => Normalize::Power,
                    KP_NORMALIZE_NORMALIZE => Normalize::Normalize,
                    _ => Normalize::Amplitude,
                },
                floating_mean: o.floating_mean != 0,
                precenter: o.precenter != 0,
            };
            let theirs: Vec<T> = match kp.lombscargle(&series, &d.f, &opts).unwrap() {
                Periodogram::Real(v) => v,
                Periodogram::Complex(v) => v.iter().flat_map(|c| [c.re, c.im]).collect(),
            };
            assert_eq!(ours, theirs, "{o:?} weighted {weighted}");
        }
    }
}

#[test]
fn host_path_matches_safe_api() {
    matches_safe_api::<f64>(Backend::Cpu, KP_BACKEND_CPU);
    matches_safe_api::<f32>(Backend::Cpu, KP_BACKEND_CPU);
    matches_safe_api::<f64>(Backend::Auto, KP_BACKEND_AUTO);
    matches_safe_api::<f32>(Backend::Auto, KP_BACKEND_AUTO);
}

#[test]
fn peak_and_cpu_auto_agreement() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let auto = Ctx::new(KP_BACKEND_AUTO);
    let d = data::<f64>();
    let power = host_periodogram(&cpu, &d, &kp_lombscargle_options_default(), false);
    let argmax = (0..NF).max_by(|&a, &b| power[a].total_cmp(&power[b]));
    assert!(argmax.unwrap().abs_diff(PEAK) <= 1, "peak at {argmax:?}");
    for o in all_modes() {
        for weighted in [false, true] {
            let a = host_periodogram(&cpu, &d, &o, weighted);
            let b = host_periodogram(&auto, &d, &o, weighted);
            let e = scaled_max_error(&b, &a);
            assert!(e <= 1e-9, "{o:?} weighted {weighted}: scaled error {e:e}");
        }
    }
}

#[test]
fn last_error_is_per_thread() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    expect_err(
        unsafe { kp_context_is_gpu(cpu.ptr(), null_mut()) },
        KP_ERROR_NULL_POINTER,
        Some("is_gpu"),
    );
    let here = last_error();
    let ctx_addr = cpu.ptr() as usize;
    let there = std::thread::spawn(move || {
        let fresh = last_error();
        // A failure of a different kind on this thread...
        let mut out = null_mut();
        let status = unsafe { kp_context_create(42, &mut out) };
        let own = last_error();
        // ...and a success, which clears only this thread's message.
        let mut flag = 0;
        let ok = unsafe { kp_context_is_gpu(ctx_addr as *const kp_context, &mut flag) };
        (fresh, status, own, ok, last_error())
    })
    .join()
    .unwrap();
    assert_eq!(there.0, "", "a new thread sees another thread's message");
    assert_eq!(there.1, KP_ERROR_INVALID_ARGUMENT);
    assert!(there.2.contains("42"), "{:?}", there.2);
    assert_eq!(there.3, KP_OK);
    assert_eq!(there.4, "");
    assert_eq!(
        last_error(),
        here,
        "another thread changed this thread's message"
    );
}

#[test]
fn one_context_from_many_threads() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let d = data::<f64>();
    let want = host_periodogram(&cpu, &d, &kp_lombscargle_options_default(), true);
    let ctx_addr = cpu.ptr() as usize;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut out = vec![0.0f64; NF];
                    let status = unsafe {
                        kp_lombscargle_f64(
                            ctx_addr as *const kp_context,
                            d.t.as_ptr(),
                            d.y.as_ptr(),
                            d.w.as_ptr(),
                            NX,
                            d.f.as_ptr(),
                            NF,
                            null(),
                            out.as_mut_ptr(),
                            NF,
                        )
                    };
                    (status, out)
                })
            })
            .collect();
        for h in handles {
            let (status, out) = h.join().unwrap();
            assert_eq!(status, KP_OK);
            assert_eq!(out, want);
        }
    });
}

/// GPU-only functions on a CPU context: KP_ERROR_NO_GPU, nothing written.
#[test]
fn device_functions_on_a_cpu_context() {
    let cpu = Ctx::new(KP_BACKEND_CPU);
    let c = cpu.ptr();
    let fake = 0x10_0000u64; // never dereferenced: the context is checked first
    unsafe {
        expect_err(
            kp_lombscargle_device_f64(c, fake, fake, 0, NX, fake, NF, null(), fake, NF, 0),
            KP_ERROR_NO_GPU,
            None,
        );
        expect_err(
            kp_lombscargle_device_f32(c, fake, fake, fake, NX, fake, NF, null(), fake, NF, 0),
            KP_ERROR_NO_GPU,
            None,
        );
        let mut dptr = 99u64;
        expect_err(kp_device_alloc(c, 64, &mut dptr), KP_ERROR_NO_GPU, None);
        assert_eq!(dptr, 99);
        expect_err(kp_device_free(c, fake), KP_ERROR_NO_GPU, None);
        let mut host = [1u8, 2, 3, 4];
        expect_err(
            kp_memcpy_htod(c, fake, host.as_ptr().cast(), 4),
            KP_ERROR_NO_GPU,
            None,
        );
        expect_err(
            kp_memcpy_dtoh(c, host.as_mut_ptr().cast(), fake, 4),
            KP_ERROR_NO_GPU,
            None,
        );
        assert_eq!(host, [1, 2, 3, 4]);
        expect_err(kp_stream_synchronize(c, 0), KP_ERROR_NO_GPU, None);
        // The context's lack of a GPU comes before any argument's fault, in
        // every device entry point: a wrong out_len, an impossible count.
        expect_err(
            kp_lombscargle_device_f64(c, fake, fake, 0, NX, fake, NF, null(), fake, NF + 1, 0),
            KP_ERROR_NO_GPU,
            None,
        );
        expect_err(
            kernpack::ffi::lombscargle::kp_lombscargle_batch_device_f64(
                c,
                fake,
                fake,
                0,
                fake,
                3,
                fake,
                fake,
                3,
                5,
                null(),
                fake,
                7,
                0,
            ),
            KP_ERROR_NO_GPU,
            None,
        );
        let p = kernpack::ffi::lorenz::kp_lorenz96_default_params();
        expect_err(
            kernpack::ffi::lorenz::kp_lorenz96_device_f64(
                c,
                &p,
                fake,
                usize::MAX,
                1,
                0,
                fake,
                0,
                0,
                0,
            ),
            KP_ERROR_NO_GPU,
            None,
        );
        let times = [0.5f64];
        expect_err(
            kernpack::ffi::lorenz63::kp_lorenz63_adaptive_device_f32(
                c,
                null(),
                fake,
                usize::MAX,
                0,
                0,
                0,
                times.as_ptr(),
                1,
                fake,
                0,
                fake,
                0,
            ),
            KP_ERROR_NO_GPU,
            None,
        );
        assert_eq!(kp_device_free(c, 0), KP_OK); // as free(NULL), on any context
        expect_err(
            kp_lombscargle_device_f64(null(), fake, fake, 0, NX, fake, NF, null(), fake, NF, 0),
            KP_ERROR_NULL_POINTER,
            Some("ctx"),
        );
    }
}

/// Device pointers from cudarc on a stream the caller created, against the
/// host-pointer path of the same context, every mode, both dtypes.
fn device_on_user_stream<T: Ffi>(gpu: &kernpack::Gpu, ctx: &Ctx) {
    let stream = gpu.context().new_stream().expect("a new stream");
    let raw_stream = stream.cu_stream() as u64;
    assert_ne!(raw_stream, 0, "new_stream gave the default stream");
    let d = data::<T>();
    let t = stream.clone_htod(&d.t).unwrap();
    let y = stream.clone_htod(&d.y).unwrap();
    let w = stream.clone_htod(&d.w).unwrap();
    let f = stream.clone_htod(&d.f).unwrap();
    let tol = if T::NAME == "f32" { 1e-6 } else { 1e-12 };
    for o in all_modes() {
        for weighted in [false, true] {
            let len = unsafe { kp_lombscargle_output_len(NF, &o) };
            let mut out = stream.alloc_zeros::<T>(len).unwrap();
            {
                let (t_ptr, _t) = t.device_ptr(&stream);
                let (y_ptr, _y) = y.device_ptr(&stream);
                let (w_ptr, _w) = w.device_ptr(&stream);
                let (f_ptr, _f) = f.device_ptr(&stream);
                let (out_ptr, _o) = out.device_ptr_mut(&stream);
                let w_ptr = if weighted { w_ptr } else { 0 };
                expect_ok(unsafe {
                    T::device(
                        ctx.ptr(),
                        t_ptr,
                        y_ptr,
                        w_ptr,
                        NX,
                        f_ptr,
                        NF,
                        &o,
                        out_ptr,
                        raw_stream,
                    )
                });
            }
            expect_ok(unsafe { kp_stream_synchronize(ctx.ptr(), raw_stream) });
            let dev = stream.clone_dtoh(&out).unwrap();
            let host = host_periodogram(ctx, &d, &o, weighted);
            let e = scaled_max_error(&to_f64(&dev), &to_f64(&host));
            assert!(
                e <= tol,
                "{} {o:?} weighted {weighted}: device vs host scaled error {e:e}",
                T::NAME
            );
        }
    }
    // Shape and pointer errors of the device path.
    let (t_ptr, _t) = t.device_ptr(&stream);
    let (y_ptr, _y) = y.device_ptr(&stream);
    let (f_ptr, _f) = f.device_ptr(&stream);
    let out = stream.alloc_zeros::<T>(NF).unwrap();
    let (out_ptr, _o) = out.device_ptr(&stream);
    let c = ctx.ptr();
    let seven = options(7, false, false);
    let none = null();
    let launch =
        |t, y, nx, f, nf, o, out| unsafe { T::device(c, t, y, 0, nx, f, nf, o, out, raw_stream) };
    let (t, y, f, out) = (t_ptr, y_ptr, f_ptr, out_ptr);
    let null_t = launch(0, y, NX, f, NF, none, out);
    expect_err(null_t, KP_ERROR_NULL_POINTER, Some("t"));
    let null_y = launch(t, 0, NX, f, NF, none, out);
    expect_err(null_y, KP_ERROR_NULL_POINTER, Some("y"));
    let null_f = launch(t, y, NX, 0, NF, none, out);
    expect_err(null_f, KP_ERROR_NULL_POINTER, Some("freqs"));
    let null_out = launch(t, y, NX, f, NF, none, 0);
    expect_err(null_out, KP_ERROR_NULL_POINTER, Some("out"));
    let bad_mode = launch(t, y, NX, f, NF, &seven, out);
    expect_err(bad_mode, KP_ERROR_INVALID_ARGUMENT, Some("normalize"));
    let no_samples = launch(t, y, 0, f, NF, none, out);
    expect_err(no_samples, KP_ERROR_INVALID_ARGUMENT, None);
    let no_freqs = launch(t, y, NX, f, 0, none, out);
    expect_err(no_freqs, KP_ERROR_INVALID_ARGUMENT, None);
    stream.synchronize().unwrap();
}

#[test]
fn device_pointers_on_a_user_stream() {
    let Some(gpu) = gpu_or_skip("device_pointers_on_a_user_stream") else {
        return;
    };
    let ctx = Ctx::new(KP_BACKEND_GPU);
    assert!(is_gpu(&ctx));
    device_on_user_stream::<f64>(&gpu, &ctx);
    device_on_user_stream::<f32>(&gpu, &ctx);

    // kernpack's own device memory helpers round-trip bytes (default stream).
    let c = ctx.ptr();
    let bytes: Vec<u8> = (0..=255).collect();
    let mut dptr = 0u64;
    unsafe {
        expect_ok(kp_device_alloc(c, bytes.len(), &mut dptr));
        assert_ne!(dptr, 0);
        expect_ok(kp_memcpy_htod(c, dptr, bytes.as_ptr().cast(), bytes.len()));
        let mut back = vec![0u8; bytes.len()];
        expect_ok(kp_memcpy_dtoh(
            c,
            back.as_mut_ptr().cast(),
            dptr,
            back.len(),
        ));
        assert_eq!(back, bytes);
        expect_err(
            kp_device_alloc(c, 0, &mut dptr),
            KP_ERROR_INVALID_ARGUMENT,
            None,
        );
        expect_err(
            kp_device_alloc(c, 8, null_mut()),
            KP_ERROR_NULL_POINTER,
            Some("dptr"),
        );
        expect_err(
            kp_memcpy_htod(c, 0, bytes.as_ptr().cast(), 8),
            KP_ERROR_NULL_POINTER,
            Some("dst"),
        );
        expect_err(
            kp_memcpy_htod(c, dptr, null(), 8),
            KP_ERROR_NULL_POINTER,
            Some("src"),
        );
        expect_err(
            kp_memcpy_dtoh(c, null_mut(), dptr, 8),
            KP_ERROR_NULL_POINTER,
            Some("dst"),
        );
        expect_err(
            kp_memcpy_dtoh(c, back.as_mut_ptr().cast(), 0, 8),
            KP_ERROR_NULL_POINTER,
            Some("src"),
        );
        expect_ok(kp_device_free(c, dptr));
        expect_ok(kp_device_free(c, 0));
        expect_ok(kp_stream_synchronize(c, 0));
    }
}
