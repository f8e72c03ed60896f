//! The uniform-grid entry points of the C ABI.
mod common;

use std::ptr::null;

use common::gpu_or_skip;
use kernpack::ffi::lombscargle::{
    kp_lombscargle_f64, kp_lombscargle_options_default, kp_lombscargle_uniform_device_f32,
    kp_lombscargle_uniform_f32, kp_lombscargle_uniform_f64,
};
use kernpack::ffi::{kp_context, kp_context_create, kp_context_destroy, kp_status, KP_BACKEND_CPU};

struct Ctx(*mut kp_context);
impl Ctx {
    fn new(backend: u32) -> Ctx {
        let mut ctx = std::ptr::null_mut();
        assert_eq!(
            unsafe { kp_context_create(backend, &mut ctx) },
            kp_status::KP_OK
        );
        Ctx(ctx)
    }
}
impl Drop for Ctx {
    fn drop(&mut self) {
        unsafe { kp_context_destroy(self.0) };
    }
}

fn series() -> (Vec<f64>, Vec<f64>) {
    let t: Vec<f64> = (0..301)
        .map(|i| i as f64 * 0.37 + (i as f64 * 1.3).sin())
        .collect();
    let y = t
        .iter()
        .map(|t| (2.1 * t).sin() + 0.2 * (0.7 * t).cos())
        .collect();
    (t, y)
}

#[test]
fn uniform_equals_the_explicit_grid_on_the_cpu() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let (t, y) = series();
    let (f0, df, nf) = (0.05, 0.003, 777);
    let freqs: Vec<f64> = (0..nf).map(|k| f0 + k as f64 * df).collect();
    let (mut a, mut b) = (vec![f64::NAN; nf], vec![f64::NAN; nf]);
    let opts = kp_lombscargle_options_default();
    let s = unsafe {
        kp_lombscargle_uniform_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            t.len(),
            f0,
            df,
            nf,
            &opts,
            a.as_mut_ptr(),
            nf,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    let s = unsafe {
        kp_lombscargle_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            t.len(),
            freqs.as_ptr(),
            nf,
            &opts,
            b.as_mut_ptr(),
            nf,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    // The CPU computes a uniform grid by phasor recurrence and explicit
    // frequencies by sincos: equal to rounding (~1e-14 relative), not bitwise.
    let num: f64 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    assert!((num / den).sqrt() <= 1e-12, "{}", (num / den).sqrt());
}

#[test]
fn bad_grids_are_rejected_and_leave_the_output_alone() {
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let (t, y) = series();
    let t32: Vec<f32> = t.iter().map(|v| *v as f32).collect();
    let y32: Vec<f32> = y.iter().map(|v| *v as f32).collect();
    for (f0, df, nf) in [
        (-0.1, 0.01, 10),
        (0.1, 0.0, 10),
        (0.1, -0.01, 10),
        (f64::NAN, 0.01, 10),
        (0.1, 0.01, 0),
    ] {
        let mut out = vec![-5.0f32; 10];
        let s = unsafe {
            kp_lombscargle_uniform_f32(
                ctx.0,
                t32.as_ptr(),
                y32.as_ptr(),
                null(),
                t.len(),
                f0,
                df,
                nf,
                null(),
                out.as_mut_ptr(),
                nf,
            )
        };
        assert_eq!(
            s,
            kp_status::KP_ERROR_INVALID_ARGUMENT,
            "f0 {f0} df {df} nf {nf}"
        );
        assert!(out.iter().all(|v| *v == -5.0));
    }
}

#[test]
fn uniform_device_entry_point_matches_the_host_one() {
    let Some(gpu) = gpu_or_skip("uniform_device_entry_point_matches_the_host_one") else {
        return;
    };
    use cudarc::driver::DevicePtr;
    let ctx = Ctx::new(kernpack::ffi::KP_BACKEND_GPU);
    let (t, y) = series();
    let t32: Vec<f32> = t.iter().map(|v| *v as f32).collect();
    let y32: Vec<f32> = y.iter().map(|v| *v as f32).collect();
    let (f0, df, nf) = (0.05, 0.003, 4099);
    let mut host = vec![f32::NAN; nf];
    let s = unsafe {
        kp_lombscargle_uniform_f32(
            ctx.0,
            t32.as_ptr(),
            y32.as_ptr(),
            null(),
            t.len(),
            f0,
            df,
            nf,
            null(),
            host.as_mut_ptr(),
            nf,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    let stream = gpu.context().new_stream().unwrap();
    let dt = stream.clone_htod(&t32).unwrap();
    let dy = stream.clone_htod(&y32).unwrap();
    let out = stream.clone_htod(&vec![f32::NAN; nf]).unwrap();
    let (pt, pyy, po) = (
        dt.device_ptr(&stream).0,
        dy.device_ptr(&stream).0,
        out.device_ptr(&stream).0,
    );
    let s = unsafe {
        kp_lombscargle_uniform_device_f32(
            ctx.0,
            pt,
            pyy,
            0,
            t.len(),
            f0,
            df,
            nf,
            null(),
            po,
            nf,
            stream.cu_stream() as u64,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    stream.synchronize().unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), host);
}

#[test]
fn batch_entry_point_equals_one_uniform_call_per_series() {
    use kernpack::ffi::lombscargle::kp_lombscargle_batch_f64;
    let ctx = Ctx::new(KP_BACKEND_CPU);
    let (t, y) = series();
    let offsets: Vec<i64> = vec![0, 40, 41 + 60, t.len() as i64];
    let (f0, df, nf) = ([0.05, 0.07, 0.09], [0.003, 0.002, 0.004], 250);
    let mut all = vec![f64::NAN; 3 * nf];
    let s = unsafe {
        kp_lombscargle_batch_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            3,
            f0.as_ptr(),
            df.as_ptr(),
            3,
            nf,
            null(),
            all.as_mut_ptr(),
            3 * nf,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    for k in 0..3 {
        let (a, b) = (offsets[k] as usize, offsets[k + 1] as usize);
        let mut one = vec![f64::NAN; nf];
        let s = unsafe {
            kp_lombscargle_uniform_f64(
                ctx.0,
                t[a..].as_ptr(),
                y[a..].as_ptr(),
                null(),
                b - a,
                f0[k],
                df[k],
                nf,
                null(),
                one.as_mut_ptr(),
                nf,
            )
        };
        assert_eq!(s, kp_status::KP_OK);
        assert_eq!(&all[k * nf..(k + 1) * nf], &one[..], "series {k}");
    }
    // ngrids must be 1 or nseries; the output is left alone on failure.
    let mut untouched = vec![-1.0; 3 * nf];
    let s = unsafe {
        kp_lombscargle_batch_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            3,
            f0.as_ptr(),
            df.as_ptr(),
            2,
            nf,
            null(),
            untouched.as_mut_ptr(),
            3 * nf,
        )
    };
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(untouched.iter().all(|v| *v == -1.0));
}

#[test]
fn batch_device_entry_point_matches_the_host_one() {
    use cudarc::driver::DevicePtr;
    use kernpack::ffi::lombscargle::{kp_lombscargle_batch_device_f32, kp_lombscargle_batch_f32};
    let Some(gpu) = gpu_or_skip("batch_device_entry_point_matches_the_host_one") else {
        return;
    };
    let ctx = Ctx::new(kernpack::ffi::KP_BACKEND_GPU);
    let (t, y) = series();
    let t32: Vec<f32> = t.iter().map(|v| *v as f32).collect();
    let y32: Vec<f32> = y.iter().map(|v| *v as f32).collect();
    let offsets: Vec<i64> = vec![0, 50, 170, t.len() as i64];
    let (f0, df, nf) = ([0.05, 0.07, 0.09], [0.003, 0.002, 0.004], 3001);
    let mut host = vec![f32::NAN; 3 * nf];
    let s = unsafe {
        kp_lombscargle_batch_f32(
            ctx.0,
            t32.as_ptr(),
            y32.as_ptr(),
            null(),
            offsets.as_ptr(),
            3,
            f0.as_ptr(),
            df.as_ptr(),
            3,
            nf,
            null(),
            host.as_mut_ptr(),
            3 * nf,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    let stream = gpu.context().new_stream().unwrap();
    let (dt, dy) = (
        stream.clone_htod(&t32).unwrap(),
        stream.clone_htod(&y32).unwrap(),
    );
    let (doff, df0, ddf) = (
        stream.clone_htod(&offsets).unwrap(),
        stream.clone_htod(&f0).unwrap(),
        stream.clone_htod(&df).unwrap(),
    );
    let out = stream.clone_htod(&vec![f32::NAN; 3 * nf]).unwrap();
    let p = |b: &cudarc::driver::CudaSlice<f32>| b.device_ptr(&stream).0;
    let s = unsafe {
        kp_lombscargle_batch_device_f32(
            ctx.0,
            p(&dt),
            p(&dy),
            0,
            doff.device_ptr(&stream).0,
            3,
            df0.device_ptr(&stream).0,
            ddf.device_ptr(&stream).0,
            3,
            nf,
            null(),
            p(&out),
            3 * nf,
            stream.cu_stream() as u64,
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    stream.synchronize().unwrap();
    assert_eq!(stream.clone_dtoh(&out).unwrap(), host);
}
