//! The device functions of the C ABI, called as C calls them: NULL outputs,
//! negative and out-of-range ordinals (status, a message naming the ordinal
//! and the count, outputs untouched), no GPU at all; with GPUs, each device's
//! description against the safe API and a context on each that computes what
//! the safe API computes there; with two, a device pointer of one GPU refused
//! by a context on the other.
mod common;

use std::mem::MaybeUninit;
use std::ptr::null_mut;

use common::{last_error, Ctx};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::ffi::devices::{
    kp_context_create_on_device, kp_device_count, kp_device_get_info, kp_device_info,
    KP_DEVICE_NAME_LEN,
};
use kernpack::ffi::lombscargle::kp_lombscargle_uniform_f64;
use kernpack::ffi::{
    kp_context, kp_context_create, kp_context_is_gpu, kp_device_alloc, kp_device_free,
    kp_memcpy_htod, kp_status, KP_BACKEND_GPU,
};
use kernpack::{Gpu, Kernpack, LombScargleOptions, Periodogram, Series};

use kp_status::*;

#[track_caller]
fn expect_err(got: kp_status, want: kp_status, mentions: &[&str]) -> String {
    let msg = last_error();
    assert_eq!(got, want, "message: {msg:?}");
    assert!(!msg.is_empty(), "{got:?} with an empty message");
    for m in mentions {
        assert!(msg.contains(m), "{msg:?} does not mention {m:?}");
    }
    msg
}

#[track_caller]
fn expect_ok(got: kp_status) {
    let msg = last_error();
    assert_eq!(got, KP_OK, "message: {msg:?}");
    assert_eq!(msg, "");
}

fn device_count() -> i32 {
    let mut n = -1;
    expect_ok(unsafe { kp_device_count(&mut n) });
    n
}

/// A kp_device_info filled with a pattern, to see whether a call wrote it.
fn poisoned() -> kp_device_info {
    let mut info = MaybeUninit::<kp_device_info>::uninit();
    unsafe {
        info.as_mut_ptr().write_bytes(0xa5, 1);
        info.assume_init()
    }
}

fn bytes_of(info: &kp_device_info) -> Vec<u8> {
    let p = (info as *const kp_device_info).cast::<u8>();
    unsafe { std::slice::from_raw_parts(p, std::mem::size_of::<kp_device_info>()) }.to_vec()
}

fn name_of(info: &kp_device_info) -> String {
    let end = info
        .name
        .iter()
        .position(|&c| c == 0)
        .expect("the name is NUL-terminated");
    let bytes: Vec<u8> = info.name[..end].iter().map(|&c| c as u8).collect();
    String::from_utf8(bytes).unwrap()
}

#[test]
fn null_outputs() {
    expect_err(
        unsafe { kp_device_count(null_mut()) },
        KP_ERROR_NULL_POINTER,
        &["count"],
    );
    expect_err(
        unsafe { kp_device_get_info(0, null_mut()) },
        KP_ERROR_NULL_POINTER,
        &["out"],
    );
    expect_err(
        unsafe { kp_context_create_on_device(0, null_mut()) },
        KP_ERROR_NULL_POINTER,
        &["out"],
    );
}

#[test]
fn the_count_is_the_drivers() {
    assert_eq!(device_count() as usize, Gpu::device_count());
    assert_eq!(device_count() as usize, kernpack::devices().unwrap().len());
}

#[test]
fn bad_ordinals_are_refused_naming_the_ordinal_and_the_count() {
    let n = device_count();
    let sentinel = 0x5a5a_5a50usize as *mut kp_context;
    // Negative: never an ordinal, whatever is present.
    for bad in [-1, -2, i32::MIN] {
        let mut info = poisoned();
        let before = bytes_of(&info);
        let s = unsafe { kp_device_get_info(bad, &mut info) };
        expect_err(
            s,
            KP_ERROR_INVALID_ARGUMENT,
            &[&bad.to_string(), &format!("{n} CUDA")],
        );
        assert_eq!(
            bytes_of(&info),
            before,
            "a failed kp_device_get_info wrote *out"
        );
        let mut out = sentinel;
        let s = unsafe { kp_context_create_on_device(bad, &mut out) };
        expect_err(
            s,
            KP_ERROR_INVALID_ARGUMENT,
            &[&bad.to_string(), &format!("{n} CUDA")],
        );
        assert_eq!(
            out, sentinel,
            "a failed kp_context_create_on_device wrote *out"
        );
    }
    // At or past the count: an invalid argument when there are devices, and
    // KP_ERROR_NO_GPU (as kp_context_create(KP_BACKEND_GPU)) when there are none.
    // (Without a driver the message says so instead of naming a count.)
    let (want, count_named) = if n == 0 {
        (KP_ERROR_NO_GPU, String::new())
    } else {
        (KP_ERROR_INVALID_ARGUMENT, format!("reports {n} device"))
    };
    for bad in [n, n + 1, i32::MAX] {
        let ordinal = format!("GPU {bad}");
        let mut info = poisoned();
        let before = bytes_of(&info);
        let s = unsafe { kp_device_get_info(bad, &mut info) };
        expect_err(s, want, &[&ordinal, &count_named]);
        assert_eq!(
            bytes_of(&info),
            before,
            "a failed kp_device_get_info wrote *out"
        );
        let mut out = sentinel;
        let s = unsafe { kp_context_create_on_device(bad, &mut out) };
        expect_err(s, want, &[&ordinal, &count_named]);
        assert_eq!(
            out, sentinel,
            "a failed kp_context_create_on_device wrote *out"
        );
    }
    if n == 0 {
        // The same status as asking for the GPU backend.
        let mut out = sentinel;
        let s = unsafe { kp_context_create(KP_BACKEND_GPU, &mut out) };
        expect_err(s, KP_ERROR_NO_GPU, &[]);
        assert_eq!(out, sentinel);
    }
}

#[test]
fn each_device_described_and_usable_by_ordinal() {
    let n = device_count();
    if n == 0 {
        assert!(
            std::env::var("KERNPACK_REQUIRE_GPU").map_or(true, |v| v != "1"),
            "KERNPACK_REQUIRE_GPU=1 but kp_device_count says 0"
        );
        println!("SKIPPED each_device_described_and_usable_by_ordinal: no GPU");
        return;
    }
    let listed = kernpack::devices().unwrap();
    let t: Vec<f64> = (0..500)
        .map(|i| i as f64 * 0.37 + (i as f64).sin())
        .collect();
    let y: Vec<f64> = t.iter().map(|t| (1.3 * t).sin()).collect();
    let grid = UniformGrid::new(0.1, 1e-3, 2000);
    let opts = LombScargleOptions::default();
    for d in 0..n {
        let mut info = poisoned();
        expect_ok(unsafe { kp_device_get_info(d, &mut info) });
        let want = &listed[d as usize];
        assert_eq!(info.ordinal, d);
        assert_eq!(name_of(&info), want.name);
        assert!(info.name[..KP_DEVICE_NAME_LEN].contains(&0));
        assert_eq!(
            (info.compute_capability_major, info.compute_capability_minor),
            want.compute_capability
        );
        assert_eq!(info.multiprocessors as u32, want.multiprocessors);
        assert_eq!(info.total_bytes, want.total_memory as u64);
        assert!(info.free_bytes > 0 && info.free_bytes <= info.total_bytes);

        let mut raw = null_mut();
        expect_ok(unsafe { kp_context_create_on_device(d, &mut raw) });
        let ctx = Ctx(raw);
        let mut is_gpu = -1;
        expect_ok(unsafe { kp_context_is_gpu(ctx.ptr(), &mut is_gpu) });
        assert_eq!(is_gpu, 1);
        let mut out = vec![0.0f64; grid.nf];
        expect_ok(unsafe {
            kp_lombscargle_uniform_f64(
                ctx.ptr(),
                t.as_ptr(),
                y.as_ptr(),
                std::ptr::null(),
                t.len(),
                grid.f0,
                grid.df,
                grid.nf,
                std::ptr::null(),
                out.as_mut_ptr(),
                out.len(),
            )
        });
        let kp = Kernpack::with_gpu(d as usize).unwrap();
        let Periodogram::Real(safe) = kp
            .lombscargle_uniform(&Series::new(&t, &y), &grid, &opts)
            .unwrap()
        else {
            unreachable!()
        };
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&out), bits(&safe), "GPU {d}: C ABI vs safe API");
    }
}

#[test]
fn a_device_pointer_of_one_gpu_is_refused_by_a_context_on_another() {
    if device_count() < 2 {
        println!("SKIPPED a_device_pointer_of_one_gpu...: fewer than 2 GPUs");
        return;
    }
    let mut raw = [null_mut(), null_mut()];
    for (d, r) in raw.iter_mut().enumerate() {
        expect_ok(unsafe { kp_context_create_on_device(d as i32, r) });
    }
    let (gpu0, gpu1) = (Ctx(raw[0]), Ctx(raw[1]));
    let mut dptr = 0u64;
    expect_ok(unsafe { kp_device_alloc(gpu0.ptr(), 1024, &mut dptr) });
    let host = [0u8; 1024];
    let s = unsafe { kp_memcpy_htod(gpu1.ptr(), dptr, host.as_ptr().cast(), host.len()) };
    expect_err(s, KP_ERROR_INVALID_ARGUMENT, &["dst", "GPU 0", "GPU 1"]);
    expect_ok(unsafe { kp_memcpy_htod(gpu0.ptr(), dptr, host.as_ptr().cast(), host.len()) });
    expect_ok(unsafe { kp_device_free(gpu0.ptr(), dptr) });
    // Destroying one context leaves the other usable.
    drop(gpu1);
    let mut again = 0u64;
    expect_ok(unsafe { kp_device_alloc(gpu0.ptr(), 64, &mut again) });
    expect_ok(unsafe { kp_device_free(gpu0.ptr(), again) });
}
