//! The C entry points of the significance functions: values as the safe API
//! gives them, and the error paths (a typed status, a message naming the
//! argument, nothing written).
mod common;

use std::ptr::{null, null_mut};

use common::last_error;
use kernpack::ffi::significance::{
    kp_false_alarm_level, kp_false_alarm_probability, kp_lombscargle_bootstrap_f64, KP_FAP_BALUEV,
    KP_FAP_NAIVE, KP_POWER_MODEL, KP_POWER_STANDARD,
};
use kernpack::ffi::{kp_context, kp_context_create, kp_context_destroy, kp_status, KP_BACKEND_CPU};
use kernpack::params::significance::{false_alarm_probability, FapMethod, PowerNormalization};

struct Ctx(*mut kp_context);
impl Ctx {
    fn cpu() -> Ctx {
        let mut ctx = null_mut();
        assert_eq!(
            unsafe { kp_context_create(KP_BACKEND_CPU, &mut ctx) },
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

fn times(n: usize) -> Vec<f64> {
    (0..n)
        .map(|i| (i as f64 * 0.618_033_988_75) % 1.0 * 40.0)
        .collect()
}

#[test]
fn analytic_values_are_the_safe_apis() {
    let t = times(100);
    let z = [0.05, 0.1, 0.2];
    let mut out = [f64::NAN; 3];
    let s = unsafe {
        kp_false_alarm_probability(
            z.as_ptr(),
            3,
            2.0,
            t.as_ptr(),
            null(),
            t.len(),
            KP_POWER_MODEL,
            KP_FAP_BALUEV,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    let want = false_alarm_probability(
        &z,
        2.0,
        &t,
        None,
        PowerNormalization::Model,
        FapMethod::Baluev,
    )
    .unwrap();
    assert_eq!(out.to_vec(), want);
    let mut level = [f64::NAN; 3];
    let s = unsafe {
        kp_false_alarm_level(
            out.as_ptr(),
            3,
            2.0,
            t.as_ptr(),
            null(),
            t.len(),
            KP_POWER_MODEL,
            KP_FAP_BALUEV,
            level.as_mut_ptr(),
        )
    };
    assert_eq!(s, kp_status::KP_OK);
    for (l, z) in level.iter().zip(&z) {
        assert!((l - z).abs() <= 1e-12 * z, "{l} vs {z}");
    }
}

#[test]
fn analytic_errors_write_nothing() {
    let t = times(100);
    let z = [0.1, 0.2];
    let mut out = [-7.0; 2];
    let call = |z: *const f64, t: *const f64, n: usize, norm: u32, method: u32, out: *mut f64| unsafe {
        kp_false_alarm_probability(z, 2, 2.0, t, null(), n, norm, method, out)
    };
    let s = call(
        z.as_ptr(),
        t.as_ptr(),
        t.len(),
        9,
        KP_FAP_BALUEV,
        out.as_mut_ptr(),
    );
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("normalization value 9"),
        "{}",
        last_error()
    );
    let s = call(
        z.as_ptr(),
        t.as_ptr(),
        t.len(),
        KP_POWER_STANDARD,
        17,
        out.as_mut_ptr(),
    );
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("method value 17"));
    let s = call(
        z.as_ptr(),
        t.as_ptr(),
        3,
        KP_POWER_STANDARD,
        KP_FAP_NAIVE,
        out.as_mut_ptr(),
    );
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("3 samples"));
    let s = call(
        null(),
        t.as_ptr(),
        t.len(),
        KP_POWER_STANDARD,
        KP_FAP_NAIVE,
        out.as_mut_ptr(),
    );
    assert_eq!(s, kp_status::KP_ERROR_NULL_POINTER);
    let s = call(
        z.as_ptr(),
        t.as_ptr(),
        t.len(),
        KP_POWER_STANDARD,
        KP_FAP_NAIVE,
        null_mut(),
    );
    assert_eq!(s, kp_status::KP_ERROR_NULL_POINTER);
    // The output over an input.
    let mut both = [0.1, 0.2, 0.3];
    let s = call(
        both.as_ptr(),
        t.as_ptr(),
        t.len(),
        KP_POWER_STANDARD,
        KP_FAP_NAIVE,
        both[1..].as_mut_ptr(),
    );
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("overlap"));
    assert_eq!(both, [0.1, 0.2, 0.3]);
    let p = [0.1, 1.5];
    let s = unsafe {
        kp_false_alarm_level(
            p.as_ptr(),
            2,
            2.0,
            t.as_ptr(),
            null(),
            t.len(),
            KP_POWER_STANDARD,
            KP_FAP_BALUEV,
            out.as_mut_ptr(),
        )
    };
    assert_eq!(s, kp_status::KP_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("false_alarm_probability[1]"));
    assert_eq!(out, [-7.0; 2]);
}

#[test]
fn bootstrap_runs_and_fails_cleanly() {
    let ctx = Ctx::cpu();
    let t = times(50);
    let y: Vec<f64> = t.iter().map(|t| (t * 1.7).sin()).collect();
    let mut maxima = vec![-1.0; 16];
    let run = |y: &[f64], fmax: f64, norm: u32, maxima: &mut [f64]| unsafe {
        kp_lombscargle_bootstrap_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            t.len(),
            fmax,
            norm,
            maxima.len(),
            5,
            5.0,
            maxima.as_mut_ptr(),
        )
    };
    assert_eq!(
        run(&y, 2.0, KP_POWER_STANDARD, &mut maxima),
        kp_status::KP_OK
    );
    assert!(maxima.iter().all(|m| (0.0..=1.0).contains(m)), "{maxima:?}");
    let mut again = vec![-1.0; 16];
    assert_eq!(
        run(&y, 2.0, KP_POWER_STANDARD, &mut again),
        kp_status::KP_OK
    );
    assert_eq!(maxima, again);
    let mut untouched = vec![-1.0; 16];
    assert_eq!(
        run(&y, f64::NAN, KP_POWER_STANDARD, &mut untouched),
        kp_status::KP_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("fmax"), "{}", last_error());
    assert_eq!(
        run(&y, 2.0, 4, &mut untouched),
        kp_status::KP_ERROR_INVALID_ARGUMENT
    );
    let mut bad = y.clone();
    bad[2] = f64::NAN;
    assert_eq!(
        run(&bad, 2.0, KP_POWER_STANDARD, &mut untouched),
        kp_status::KP_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("y[2]"));
    assert_eq!(untouched, vec![-1.0; 16]);
    let s = unsafe {
        kp_lombscargle_bootstrap_f64(
            ctx.0,
            t.as_ptr(),
            y.as_ptr(),
            null(),
            t.len(),
            2.0,
            0,
            4,
            5,
            5.0,
            null_mut(),
        )
    };
    assert_eq!(s, kp_status::KP_ERROR_NULL_POINTER);
}
