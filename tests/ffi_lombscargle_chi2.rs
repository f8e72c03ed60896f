//! The multi-term (chi2) Lomb-Scargle C entry points: each call agrees with
//! the safe API on the same backend (bitwise), NULL options are the
//! defaults, and every bad call is a non-OK status with a message naming
//! the argument, its output untouched. On a CPU context, and on a GPU
//! context when there is one.
mod common;

use std::ptr::{null, null_mut};

use common::{gpu_or_skip, last_error, Ctx, Rng};
use kernpack::api::lombscargle::batch::BatchGrid;
use kernpack::api::lombscargle::chi2::{
    Chi2Batch, Chi2Normalization, Chi2Options, Chi2Series, UniformGrid,
};
use kernpack::ffi::lombscargle_chi2::{
    kp_chi2_options, kp_chi2_options_default, kp_lombscargle_chi2_batch_f32,
    kp_lombscargle_chi2_batch_f64, kp_lombscargle_chi2_f32, kp_lombscargle_chi2_f64,
    kp_lombscargle_chi2_uniform_f64, KP_CHI2_LOG, KP_CHI2_PSD,
};
use kernpack::ffi::{kp_backend, kp_status, KP_BACKEND_CPU, KP_BACKEND_GPU};
use kernpack::{Backend, Kernpack};

use kp_status::*;

const POISON: f64 = -4242.0;

/// Three series of 40-90 irregular samples (a sinusoid and two harmonics
/// plus noise) with errors, drawn afresh from `seed`.
fn batch(seed: u64) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<i64>) {
    let mut rng = Rng(seed);
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0i64]);
    for _ in 0..3 {
        let n = 40 + (rng.range(0.0, 50.0) as usize);
        let f = rng.range(0.2, 2.0);
        for _ in 0..n {
            let ti = rng.range(0.0, 30.0);
            let phase = std::f64::consts::TAU * f * ti;
            t.push(ti);
            y.push(1.5 + phase.sin() + 0.4 * (2.0 * phase).cos() + rng.range(-0.3, 0.3));
            dy.push(rng.range(0.1, 0.4));
        }
        offsets.push(t.len() as i64);
    }
    (t, y, dy, offsets)
}

fn agrees_with_the_api(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    let (t, y, dy, offsets) = batch(0xc412);
    let freqs: Vec<f64> = (0..200).map(|k| 0.05 + 0.01 * k as f64).collect();
    let options = kp_chi2_options {
        nterms: 3,
        normalization: KP_CHI2_LOG,
        ..kp_chi2_options_default()
    };
    let opts = Chi2Options {
        nterms: 3,
        normalization: Chi2Normalization::Log,
        ..Default::default()
    };
    let n0 = offsets[1] as usize;
    let series = Chi2Series::new(&t[..n0], &y[..n0]).with_dy(&dy[..n0]);

    let mut out = vec![POISON; freqs.len()];
    let status = unsafe {
        kp_lombscargle_chi2_f64(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            n0,
            freqs.as_ptr(),
            freqs.len(),
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    assert_eq!(out, kp.lombscargle_chi2(&series, &freqs, &opts).unwrap());

    // NULL options: astropy's defaults (one term, standard).
    let status = unsafe {
        kp_lombscargle_chi2_uniform_f64(
            ctx.ptr(),
            null(),
            t.as_ptr(),
            y.as_ptr(),
            null(),
            n0,
            0.05,
            0.01,
            freqs.len(),
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let plain = Chi2Series::new(&t[..n0], &y[..n0]);
    let grid = UniformGrid::new(0.05, 0.01, freqs.len());
    let want = kp
        .lombscargle_chi2_uniform(&plain, &grid, &Chi2Options::default())
        .unwrap();
    assert_eq!(out, want);
    assert!(
        out.iter().all(|p| (0.0..=1.0).contains(p)),
        "standard power in [0, 1]"
    );

    // The batch, in f32 and f64, on one grid.
    let nseries = offsets.len() - 1;
    let mut out = vec![POISON; nseries * freqs.len()];
    let status = unsafe {
        kp_lombscargle_chi2_batch_f64(
            ctx.ptr(),
            &options,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            offsets.as_ptr(),
            nseries,
            0.05,
            0.01,
            freqs.len(),
            out.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let offsets_usize: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
    let batch = Chi2Batch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets_usize,
    };
    let want = kp
        .lombscargle_chi2_batch(&batch, &BatchGrid::Shared(grid), &opts)
        .unwrap();
    assert_eq!(out, want.concat());

    let (t32, y32, dy32): (Vec<f32>, Vec<f32>, Vec<f32>) = (
        t.iter().map(|&v| v as f32).collect(),
        y.iter().map(|&v| v as f32).collect(),
        dy.iter().map(|&v| v as f32).collect(),
    );
    let mut out32 = vec![POISON as f32; nseries * freqs.len()];
    let status = unsafe {
        kp_lombscargle_chi2_batch_f32(
            ctx.ptr(),
            &options,
            t32.as_ptr(),
            y32.as_ptr(),
            dy32.as_ptr(),
            offsets.as_ptr(),
            nseries,
            0.05,
            0.01,
            freqs.len(),
            out32.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let batch32 = Chi2Batch {
        t: &t32,
        y: &y32,
        dy: Some(&dy32),
        offsets: &offsets_usize,
    };
    let want32 = kp
        .lombscargle_chi2_batch(&batch32, &BatchGrid::Shared(grid), &opts)
        .unwrap();
    assert_eq!(out32, want32.concat());
}

#[test]
fn c_calls_agree_with_the_api_on_cpu() {
    agrees_with_the_api(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn c_calls_agree_with_the_api_on_gpu() {
    if gpu_or_skip("c_calls_agree_with_the_api_on_gpu").is_some() {
        agrees_with_the_api(KP_BACKEND_GPU, Backend::Gpu);
    }
}

#[test]
fn default_options_are_astropys() {
    let d = kp_chi2_options_default();
    assert_eq!(
        (d.nterms, d.fit_mean, d.center_data, d.normalization),
        (1, 1, 1, 0)
    );
}

/// A failed call with a message containing `words`, the output untouched.
#[track_caller]
fn expect_failure(status: kp_status, want: kp_status, words: &[&str], out: &[f32]) {
    let msg = last_error();
    assert_eq!(status, want, "message {msg:?}");
    for w in words {
        assert!(msg.contains(w), "{msg:?} lacks {w:?}");
    }
    assert!(out.iter().all(|v| *v == POISON as f32), "output written");
}

fn error_paths(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let t = [0.0f32, 0.7, 1.9, 3.2, 4.1, 5.5, 6.0, 7.7];
    let y = [1.0f32, 0.2, -0.8, 0.1, 0.9, -0.4, -1.0, 0.6];
    let freqs = [0.1f32, 0.2, 0.3];
    let mut out = [POISON as f32; 3];
    let single = |options: *const kp_chi2_options,
                  t: *const f32,
                  dy: *const f32,
                  n: usize,
                  freqs: *const f32,
                  out: *mut f32| unsafe {
        kp_lombscargle_chi2_f32(ctx.ptr(), options, t, y.as_ptr(), dy, n, freqs, 3, out)
    };
    let opt = |nterms: u32, normalization: u32| kp_chi2_options {
        nterms,
        normalization,
        ..kp_chi2_options_default()
    };
    let o = out.as_mut_ptr();
    let s = single(null(), null(), null(), 8, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_NULL_POINTER, &["t"], &out);
    let s = single(null(), t.as_ptr(), null(), 8, freqs.as_ptr(), null_mut());
    expect_failure(s, KP_ERROR_NULL_POINTER, &["out"], &out);
    let s = single(&opt(0, 0), t.as_ptr(), null(), 8, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["nterms"], &out);
    let s = single(&opt(9, 0), t.as_ptr(), null(), 8, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["nterms"], &out);
    let s = single(&opt(1, 7), t.as_ptr(), null(), 8, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["normalization"], &out);
    let s = single(null(), t.as_ptr(), null(), 0, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["empty"], &out);
    let bad_dy = [0.1f32, 0.1, 0.1, -0.1, 0.1, 0.1, 0.1, 0.1];
    let s = single(null(), t.as_ptr(), bad_dy.as_ptr(), 8, freqs.as_ptr(), o);
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["dy"], &out);
    let nan_f = [0.1f32, f32::NAN, 0.3];
    let s = single(
        &opt(2, KP_CHI2_PSD),
        t.as_ptr(),
        null(),
        8,
        nan_f.as_ptr(),
        o,
    );
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["frequency"], &out);
    // The output over an input.
    let mut t_out = t;
    let s = unsafe {
        kp_lombscargle_chi2_f32(
            ctx.ptr(),
            null(),
            t_out.as_ptr(),
            y.as_ptr(),
            null(),
            8,
            freqs.as_ptr(),
            3,
            t_out.as_mut_ptr(),
        )
    };
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["out", "t"], &out);
    assert_eq!(t_out, t, "an input was written");

    // Batches: decreasing offsets, a series with too few samples named.
    let batch = |offsets: &[i64], nseries: usize, out: *mut f32| unsafe {
        kp_lombscargle_chi2_batch_f32(
            ctx.ptr(),
            &opt(2, 0),
            t.as_ptr(),
            y.as_ptr(),
            null(),
            offsets.as_ptr(),
            nseries,
            0.1,
            0.1,
            3,
            out,
        )
    };
    let mut out2 = [POISON as f32; 6];
    let s = batch(&[0, 5, 3], 2, out2.as_mut_ptr());
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["offsets"], &out2);
    let s = batch(&[0, 0, 8], 2, out2.as_mut_ptr());
    expect_failure(s, KP_ERROR_INVALID_ARGUMENT, &["series 0"], &out2);
    let s = batch(&[0, 4, 8], 2, null_mut());
    expect_failure(s, KP_ERROR_NULL_POINTER, &["out"], &out2);
}

#[test]
fn bad_calls_fail_cleanly_on_cpu() {
    error_paths(KP_BACKEND_CPU);
}

#[test]
fn bad_calls_fail_cleanly_on_gpu() {
    if gpu_or_skip("bad_calls_fail_cleanly_on_gpu").is_some() {
        error_paths(KP_BACKEND_GPU);
    }
}

// -- The batch's best peaks, refined, with FAPs --------------------------------

use kernpack::api::lombscargle::chi2::{FapMethod, PeakOptions, Refine, RefinedPeakOptions};
use kernpack::ffi::lombscargle_chi2::{
    kp_lombscargle_chi2_batch_peaks_f32, kp_lombscargle_chi2_batch_peaks_f64,
    kp_refined_peak_options, kp_refined_peak_options_default,
};
use kernpack::ffi::phasefold::{kp_peak_options, kp_peak_options_default};
use kernpack::ffi::significance::KP_FAP_DAVIES;

/// The four outputs of a peaks call, poisoned one past `len`.
struct PeakOuts {
    index: Vec<i64>,
    frequency: Vec<f64>,
    power: Vec<f64>,
    fap: Vec<f64>,
}

impl PeakOuts {
    fn new(len: usize) -> Self {
        PeakOuts {
            index: vec![-4242; len + 1],
            frequency: vec![POISON; len + 1],
            power: vec![POISON; len + 1],
            fap: vec![POISON; len + 1],
        }
    }
    fn untouched(&self) -> bool {
        self.index.iter().all(|&i| i == -4242)
            && [&self.frequency, &self.power, &self.fap]
                .iter()
                .all(|v| v.iter().all(|&x| x == POISON))
    }
}

fn peaks_agree_with_the_api(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    let (t, y, dy, offsets) = batch(0x9ea5);
    let nseries = offsets.len() - 1;
    let offsets_usize: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
    let b = Chi2Batch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets_usize,
    };
    let (f0, df, nf) = (0.05, 0.01, 300);
    let grid = BatchGrid::Shared(UniformGrid::new(f0, df, nf));
    let peaks = kp_peak_options {
        k: 4,
        separation: 0.05,
    };
    let search = kp_refined_peak_options {
        refine_points: 5,
        refine_steps: 2,
        fap: 1,
        fap_method: KP_FAP_DAVIES,
    };
    let want_search = RefinedPeakOptions {
        peaks: PeakOptions {
            k: 4,
            separation: 0.05,
        },
        refine: Some(Refine {
            points: 5,
            steps: 2,
        }),
        fap: Some(FapMethod::Davies),
    };
    let opts = Chi2Options::default();
    let want = kp
        .lombscargle_chi2_batch_refined_peaks(&b, &grid, &opts, &want_search)
        .unwrap();
    let len = nseries * 4;
    let mut out = PeakOuts::new(len);
    let status = unsafe {
        kp_lombscargle_chi2_batch_peaks_f64(
            ctx.ptr(),
            null(),
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            offsets.as_ptr(),
            nseries,
            f0,
            df,
            nf,
            &peaks,
            &search,
            out.index.as_mut_ptr(),
            out.frequency.as_mut_ptr(),
            out.power.as_mut_ptr(),
            out.fap.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    for (s, row) in want.iter().enumerate() {
        for j in 0..4 {
            let at = s * 4 + j;
            match row.get(j) {
                Some(p) => {
                    assert_eq!(out.index[at], p.index as i64);
                    assert_eq!(out.frequency[at], p.frequency);
                    assert_eq!(out.power[at], p.power);
                    assert_eq!(Some(out.fap[at]), p.fap);
                }
                None => {
                    assert_eq!(out.index[at], -1);
                    assert!(out.power[at].is_nan() && out.fap[at].is_nan());
                }
            }
        }
    }
    assert!(
        out.index[len] == -4242 && out.fap[len] == POISON,
        "written past nseries x k"
    );

    // f32, NULL peaks and search: one coarse peak a series, `fap` NULL.
    let (t32, y32): (Vec<f32>, Vec<f32>) = (
        t.iter().map(|&v| v as f32).collect(),
        y.iter().map(|&v| v as f32).collect(),
    );
    let mut out = PeakOuts::new(nseries);
    let status = unsafe {
        kp_lombscargle_chi2_batch_peaks_f32(
            ctx.ptr(),
            null(),
            t32.as_ptr(),
            y32.as_ptr(),
            null(),
            offsets.as_ptr(),
            nseries,
            f0,
            df,
            nf,
            null(),
            null(),
            out.index.as_mut_ptr(),
            out.frequency.as_mut_ptr(),
            out.power.as_mut_ptr(),
            null_mut(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    let b32 = Chi2Batch {
        t: &t32,
        y: &y32,
        dy: None,
        offsets: &offsets_usize,
    };
    let want = kp
        .lombscargle_chi2_batch_peaks(&b32, &grid, &opts, &PeakOptions::default())
        .unwrap();
    for (s, row) in want.iter().enumerate() {
        assert_eq!(out.index[s], row[0].index as i64);
        assert_eq!(out.power[s], row[0].value);
        assert_eq!(out.frequency[s], f0 + row[0].index as f64 * df);
    }
    assert!(
        out.fap.iter().all(|&v| v == POISON),
        "a NULL fap was written"
    );
}

#[test]
fn peaks_agree_with_the_api_on_cpu() {
    peaks_agree_with_the_api(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn peaks_agree_with_the_api_on_gpu() {
    if gpu_or_skip("peaks_agree_with_the_api_on_gpu").is_some() {
        peaks_agree_with_the_api(KP_BACKEND_GPU, Backend::Gpu);
    }
}

#[test]
fn default_search_options_are_none() {
    let d = kp_refined_peak_options_default();
    assert_eq!(
        (d.refine_points, d.refine_steps, d.fap, d.fap_method),
        (0, 1, 0, 0)
    );
}

fn peak_error_paths(backend: kp_backend) {
    let ctx = Ctx::new(backend);
    let (t, y, dy, offsets) = batch(0x5eed);
    let nseries = offsets.len() - 1;
    let call = |options: *const kp_chi2_options,
                offsets: &[i64],
                peaks: *const kp_peak_options,
                search: *const kp_refined_peak_options,
                out: &mut PeakOuts,
                fap: bool| unsafe {
        kp_lombscargle_chi2_batch_peaks_f64(
            ctx.ptr(),
            options,
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            offsets.as_ptr(),
            offsets.len() - 1,
            0.05,
            0.01,
            200,
            peaks,
            search,
            out.index.as_mut_ptr(),
            out.frequency.as_mut_ptr(),
            out.power.as_mut_ptr(),
            if fap {
                out.fap.as_mut_ptr()
            } else {
                null_mut()
            },
        )
    };
    let expect = |status: kp_status, want: kp_status, words: &[&str], out: &PeakOuts| {
        let msg = last_error();
        assert_eq!(status, want, "message {msg:?}");
        for w in words {
            assert!(msg.contains(w), "{msg:?} lacks {w:?}");
        }
        assert!(out.untouched(), "an output was written: {msg}");
    };
    let mut out = PeakOuts::new(nseries * 3);
    let peaks = kp_peak_options {
        k: 3,
        ..kp_peak_options_default()
    };
    let with_fap = kp_refined_peak_options {
        fap: 1,
        ..kp_refined_peak_options_default()
    };
    let two_terms = kp_chi2_options {
        nterms: 2,
        ..kp_chi2_options_default()
    };
    let s = call(&two_terms, &offsets, &peaks, &with_fap, &mut out, true);
    expect(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        &["multi-term", "nterms = 2"],
        &out,
    );
    let s = call(null(), &offsets, &peaks, &with_fap, &mut out, false);
    expect(s, KP_ERROR_NULL_POINTER, &["fap"], &out);
    let bad_method = kp_refined_peak_options {
        fap_method: 9,
        ..with_fap
    };
    let s = call(null(), &offsets, &peaks, &bad_method, &mut out, true);
    expect(s, KP_ERROR_INVALID_ARGUMENT, &["method"], &out);
    for (points, steps, word) in [(1, 1, "points"), (3, 0, "steps")] {
        let refine = kp_refined_peak_options {
            refine_points: points,
            refine_steps: steps,
            ..kp_refined_peak_options_default()
        };
        let s = call(null(), &offsets, &peaks, &refine, &mut out, true);
        expect(s, KP_ERROR_INVALID_ARGUMENT, &[word], &out);
    }
    let no_peaks = kp_peak_options {
        k: 0,
        ..kp_peak_options_default()
    };
    let s = call(null(), &offsets, &no_peaks, null(), &mut out, true);
    expect(s, KP_ERROR_INVALID_ARGUMENT, &["k"], &out);
    // A series of three samples has no FAP: named.
    let short = [0, offsets[1] - 3, offsets[1], offsets[2], offsets[3]];
    let mut out = PeakOuts::new(4 * 3);
    let s = call(null(), &short, &peaks, &with_fap, &mut out, true);
    expect(
        s,
        KP_ERROR_INVALID_ARGUMENT,
        &["series 1", "false-alarm"],
        &out,
    );
    // An output over an input.
    let mut out = PeakOuts::new(nseries * 3);
    let status = unsafe {
        kp_lombscargle_chi2_batch_peaks_f64(
            ctx.ptr(),
            null(),
            t.as_ptr(),
            y.as_ptr(),
            dy.as_ptr(),
            offsets.as_ptr(),
            nseries,
            0.05,
            0.01,
            200,
            &peaks,
            null(),
            out.index.as_mut_ptr(),
            out.frequency.as_mut_ptr(),
            y.as_ptr() as *mut f64,
            null_mut(),
        )
    };
    expect(status, KP_ERROR_INVALID_ARGUMENT, &["power"], &out);
}

#[test]
fn bad_peak_calls_fail_cleanly_on_cpu() {
    peak_error_paths(KP_BACKEND_CPU);
}

#[test]
fn bad_peak_calls_fail_cleanly_on_gpu() {
    if gpu_or_skip("bad_peak_calls_fail_cleanly_on_gpu").is_some() {
        peak_error_paths(KP_BACKEND_GPU);
    }
}

// -- The multi-term bootstrap --------------------------------------------------

use kernpack::api::lombscargle::bootstrap::BootstrapOptions;
use kernpack::ffi::lombscargle_chi2::{
    kp_lombscargle_chi2_bootstrap_f32, kp_lombscargle_chi2_bootstrap_f64,
};

/// `kp_lombscargle_chi2_bootstrap_*` gives the safe API's maxima bit for bit
/// (f64 and f32, NULL options: the defaults); bad calls name the argument and
/// leave `maxima` alone.
fn bootstrap_agrees_with_the_api(backend: kp_backend, api: Backend) {
    let ctx = Ctx::new(backend);
    let kp = Kernpack::new(api).unwrap();
    let (t, y, dy, offsets) = batch(0xb007);
    let n = offsets[1] as usize;
    let (t, y, dy) = (&t[..n], &y[..n], &dy[..n]);
    let options = kp_chi2_options {
        nterms: 2,
        ..kp_chi2_options_default()
    };
    let opts = Chi2Options {
        nterms: 2,
        ..Default::default()
    };
    let boot = BootstrapOptions {
        resamples: 30,
        seed: 5,
        samples_per_peak: 4.0,
    };
    let series = Chi2Series::new(t, y).with_dy(dy);
    let want = kp
        .lombscargle_chi2_bootstrap(&series, 2.0, &opts, &boot)
        .unwrap();
    let call = |options: *const kp_chi2_options, t: *const f64, resamples: usize, out: *mut f64| unsafe {
        kp_lombscargle_chi2_bootstrap_f64(
            ctx.ptr(),
            options,
            t,
            y.as_ptr(),
            dy.as_ptr(),
            n,
            2.0,
            resamples,
            5,
            4.0,
            out,
        )
    };
    let mut maxima = vec![POISON; 30];
    assert_eq!(
        call(&options, t.as_ptr(), 30, maxima.as_mut_ptr()),
        KP_OK,
        "{}",
        last_error()
    );
    assert_eq!(
        maxima.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        want.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    // f32 and NULL options (one term).
    let cast = |v: &[f64]| v.iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let (t32, y32, dy32) = (cast(t), cast(y), cast(dy));
    let series32 = Chi2Series::new(&t32[..], &y32[..]).with_dy(&dy32[..]);
    let want32 = kp
        .lombscargle_chi2_bootstrap(&series32, 2.0, &Chi2Options::default(), &boot)
        .unwrap();
    let mut maxima32 = vec![POISON; 30];
    let status = unsafe {
        kp_lombscargle_chi2_bootstrap_f32(
            ctx.ptr(),
            null(),
            t32.as_ptr(),
            y32.as_ptr(),
            dy32.as_ptr(),
            n,
            2.0,
            30,
            5,
            4.0,
            maxima32.as_mut_ptr(),
        )
    };
    assert_eq!(status, KP_OK, "{}", last_error());
    assert_eq!(maxima32, want32);
    // Bad calls: a status, a message naming the problem, maxima untouched.
    let bad = kp_chi2_options {
        nterms: 9,
        ..kp_chi2_options_default()
    };
    let mut out = vec![POISON; 30];
    let alias = t.as_ptr() as *mut f64;
    // Each call's status and message, in turn (the message is the last call's).
    let outcome = |status: kp_status| (status, last_error());
    for ((status, message), needle) in [
        (outcome(call(&options, null(), 30, out.as_mut_ptr())), "t"),
        (
            outcome(call(&options, t.as_ptr(), 30, null_mut())),
            "maxima",
        ),
        (
            outcome(call(&options, t.as_ptr(), 0, out.as_mut_ptr())),
            "resamples",
        ),
        (
            outcome(call(&bad, t.as_ptr(), 30, out.as_mut_ptr())),
            "nterms",
        ),
        (outcome(call(&options, t.as_ptr(), 30, alias)), "maxima"),
    ] {
        assert_ne!(status, KP_OK);
        assert!(message.contains(needle), "{needle}: {message}");
        assert!(out.iter().all(|&v| v == POISON), "{needle}: maxima written");
    }
}

#[test]
fn bootstrap_agrees_with_the_api_on_cpu() {
    bootstrap_agrees_with_the_api(KP_BACKEND_CPU, Backend::Cpu);
}

#[test]
fn bootstrap_agrees_with_the_api_on_gpu() {
    if gpu_or_skip("bootstrap_agrees_with_the_api_on_gpu").is_none() {
        return;
    }
    bootstrap_agrees_with_the_api(KP_BACKEND_GPU, Backend::Gpu);
}
