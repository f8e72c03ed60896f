//! GPU kernels against the CPU reference on random valid inputs of random sizes
//! (mostly not multiples of the 128-thread block), both dtypes, all options.
//! Without a GPU each test prints SKIPPED; with KERNPACK_REQUIRE_GPU=1 it fails.
mod common;

use std::sync::Arc;

use common::{flat, gpu_or_skip, options, Rng};
use kernpack::api::lombscargle::{output_len, validate};
use kernpack::reference::lombscargle::lombscargle as reference;
use kernpack::{Float, Gpu, Kernpack, LombScargleOnDevice, LombScargleOptions, Normalize, Series};
use proptest::prelude::*;

/// A random case: everything derived from `seed`, so a failure reproduces.
#[derive(Debug, Clone)]
struct Case {
    t: Vec<f64>,
    y: Vec<f64>,
    w: Option<Vec<f64>>,
    f: Vec<f64>,
    opts: LombScargleOptions,
}

/// `min_cycles`: lowest frequency as cycles over the span. f32 cases start at one
/// cycle: below it the fit is ill-conditioned (CC or SS -> 0) and single
/// precision cannot resolve it; f64 cases include f = 0.
fn make_case(
    seed: u64,
    nx: usize,
    nf: usize,
    opts: LombScargleOptions,
    weighted: bool,
    min_cycles: f64,
) -> Case {
    let mut rng = Rng(seed);
    let span = rng.range(0.5, 200.0);
    let origin = rng.range(-1e4, 1e4);
    let t: Vec<f64> = (0..nx).map(|_| origin + rng.range(0.0, span)).collect();
    let period = rng.range(span / 50.0, span / 2.0);
    let offset = rng.range(-3.0, 3.0);
    let y: Vec<f64> = t
        .iter()
        .map(|t| offset + 2.0 * (std::f64::consts::TAU * t / period).sin() + rng.range(-1.0, 1.0))
        .collect();
    let w = weighted.then(|| (0..nx).map(|_| rng.range(0.05, 4.0)).collect());
    // Phases up to ~2000 rad over the span.
    let (lo, hi) = (min_cycles * std::f64::consts::TAU / span, 2000.0 / span);
    let mut f: Vec<f64> = (0..nf).map(|_| rng.range(lo, hi)).collect();
    if min_cycles == 0.0 {
        f[0] = 0.0;
    }
    Case { t, y, w, f, opts }
}

/// The size a periodogram of this series has when it has a peak: power up to
/// ~N mean(y^2) / 2, normalized power up to 1, amplitudes up to ~rms(y). Errors
/// are measured against the larger of this and the actual maximum, so a
/// periodogram that is 0 everywhere (f = 0 alone, with a floating mean) is
/// compared at the scale of the data rather than of its rounding noise.
fn natural_scale(case: &Case) -> f64 {
    let n = case.y.len() as f64;
    let mean_square = case.y.iter().map(|v| v * v).sum::<f64>() / n;
    match case.opts.normalize {
        Normalize::Power => n * mean_square / 2.0,
        Normalize::Normalize => 1.0,
        Normalize::Amplitude => mean_square.sqrt(),
    }
}

/// The scale errors are measured against: the periodogram's peak, or a
/// millionth of its natural size when it is flat.
fn error_scale(case: &Case, want: &[f64]) -> f64 {
    let peak = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    peak.max(1e-6 * natural_scale(case))
}

/// The first output whose error, relative to the periodogram's scale, exceeds
/// `tolerance(lambda)` for its frequency's fit eigenvalue (None: skip it):
/// (output index, error, tolerance, lambda).
fn first_violation(
    case: &Case,
    got: &[f64],
    want: &[f64],
    tolerance: impl Fn(f64) -> Option<f64>,
) -> Option<(usize, f64, f64, f64)> {
    let lambdas = fit_eigenvalues(case);
    let per_freq = got.len() / case.f.len(); // 2 for amplitude (re, im)
    let scale = error_scale(case, want);
    got.iter().zip(want).enumerate().find_map(|(i, (g, w))| {
        let lambda = lambdas[i / per_freq];
        let tol = tolerance(lambda)?;
        let e = (g - w).abs() / scale;
        (e > tol).then_some((i, e, tol, lambda))
    })
}

/// Runs the case on the GPU through the device-buffer API into a NaN-poisoned
/// output, checks every value was written, and returns (gpu, reference) as f64.
/// The reference sees the same T-rounded inputs.
fn run<T: Float>(gpu: &Arc<Gpu>, case: &Case) -> (Vec<f64>, Vec<f64>) {
    let cast = |v: &[f64]| v.iter().map(|x| T::from_f64(*x)).collect::<Vec<T>>();
    let (t, y, f) = (cast(&case.t), cast(&case.y), cast(&case.f));
    let w = case.w.as_deref().map(cast);
    let stream = gpu.stream();
    let (dt, dy, df) = (
        stream.clone_htod(&t).unwrap(),
        stream.clone_htod(&y).unwrap(),
        stream.clone_htod(&f).unwrap(),
    );
    let dw = w.as_ref().map(|w| stream.clone_htod(w).unwrap());
    let n_out = output_len(f.len(), &case.opts);
    let mut out = stream
        .clone_htod(&vec![T::from_f64(f64::NAN); n_out])
        .unwrap();
    let call =
        LombScargleOnDevice::buffers(stream, &dt, &dy, dw.as_ref(), &df, &mut out, &case.opts);
    gpu.enqueue_buffers(call.unwrap()).unwrap();
    let got: Vec<f64> = stream
        .clone_dtoh(&out)
        .unwrap()
        .iter()
        .map(|v| v.to_f64())
        .collect();
    let unwritten = got.iter().filter(|v| !v.is_finite()).count();
    assert_eq!(
        unwritten, 0,
        "{unwritten} of {n_out} outputs not finite (unwritten or NaN)"
    );
    let want = flat(&reference(&t, &y, w.as_deref(), &f, &case.opts, None));
    (got, want)
}

/// Largest |phase| each side forms: the reference at the raw times, the GPU at
/// times shifted by their mean.
fn phase_extents(case: &Case) -> (f64, f64) {
    let max_f = case.f.iter().fold(0.0f64, |m, f| m.max(*f));
    let mean = case.t.iter().sum::<f64>() / case.t.len() as f64;
    let raw = case.t.iter().fold(0.0f64, |m, t| m.max(t.abs()));
    let shifted = case.t.iter().fold(0.0f64, |m, t| m.max((t - mean).abs()));
    (max_f * raw, max_f * shifted)
}

/// Per frequency, the smaller eigenvalue of the weighted second-moment matrix
/// of (cos w t, sin w t), centred with a floating mean. After the rotation by
/// tau these eigenvalues are SciPy's CC and SS, the denominators of the fit:
/// rounding in them is amplified by 1/lambda, so near-degenerate frequencies
/// (w span << 1 with a floating mean) are ill-conditioned on any
/// implementation. f = 0 is handled exactly by both sides: infinity there.
fn fit_eigenvalues(case: &Case) -> Vec<f64> {
    let n = case.t.len();
    let weights: Vec<f64> = case.w.clone().unwrap_or_else(|| vec![1.0; n]);
    let total: f64 = weights.iter().sum();
    let mean_t = case.t.iter().sum::<f64>() / n as f64;
    let mut lambdas = Vec::with_capacity(case.f.len());
    for &omega in &case.f {
        if omega == 0.0 {
            lambdas.push(f64::INFINITY);
            continue;
        }
        let (mut c, mut s, mut cc, mut cs, mut ss) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for (t, w) in case.t.iter().zip(&weights) {
            let (sn, cn) = (omega * (t - mean_t)).sin_cos();
            let w = w / total;
            c += w * cn;
            s += w * sn;
            cc += w * cn * cn;
            cs += w * cn * sn;
            ss += w * sn * sn;
        }
        if case.opts.floating_mean {
            cc -= c * c;
            ss -= s * s;
            cs -= c * s;
        }
        let lambda = (cc + ss) / 2.0 - (((cc - ss) / 2.0).powi(2) + cs * cs).sqrt();
        lambdas.push(lambda.max(f64::EPSILON));
    }
    lambdas
}

fn case_strategy(min_cycles: f64) -> impl Strategy<Value = Case> {
    (
        any::<u64>(),
        1usize..1500,
        1usize..1200,
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(move |(seed, nx, nf, mode, weighted, fm, pre)| {
            make_case(seed, nx, nf, options(mode, fm, pre), weighted, min_cycles)
        })
        // Valid inputs only, as the host API accepts them: e.g. one sample in
        // normalize mode with a floating mean has no variance to normalise by
        // (the host API rejects it; the device API, which cannot inspect data,
        // returns non-finite values, as SciPy does).
        .prop_filter("input the host API accepts", |case| {
            let series = Series {
                t: &case.t,
                y: &case.y,
                weights: case.w.as_deref(),
            };
            validate(&series, &case.f, &case.opts).is_ok()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(64)))]

    /// f64: both sides are f64; the reference's phases carry ~eps * |w t| of
    /// rounding (it does not shift times), the GPU's much less, and both fits
    /// amplify rounding by 1/lambda_min (see `min_fit_eigenvalue`).
    #[test]
    fn gpu_f64_matches_reference(case in case_strategy(0.0)) {
        let Some(gpu) = gpu_or_skip("gpu_f64_matches_reference") else { return Ok(()) };
        let (got, want) = run::<f64>(&gpu, &case);
        let (raw_phase, _) = phase_extents(&case);
        let tolerance = |lambda: f64| Some(64.0 * f64::EPSILON * (raw_phase + 1.0 / lambda) + 1e-11);
        let violation = first_violation(&case, &got, &want, tolerance);
        prop_assert!(violation.is_none(), "f64 (output, error, tolerance, lambda) {violation:?}; nx {}, nf {}, {:?}", case.t.len(), case.f.len(), case.opts);
    }

    /// f32 with fast-math sincos: each phase carries ~2^-23 |w (t - mean)| from
    /// rounding the shifted time and the product, plus the SFU's ~2^-21
    /// absolute error, and f32 sums add ~(256 + nx/256) eps of their own. Sums
    /// of such terms (weights sum to 1) move by that much (delta), and the fit
    /// amplifies it by 1/lambda per frequency (see `fit_eigenvalues`): hence
    /// 50 delta / lambda, plus 1e-5. Where lambda is itself at the f32 rounding
    /// level (e.g. two samples with a floating mean: three parameters, two
    /// points) the fit is undefined in f32 and the kernel may return 0 for it:
    /// only finiteness is checked there.
    #[test]
    fn gpu_f32_matches_reference(case in case_strategy(1.0)) {
        let Some(gpu) = gpu_or_skip("gpu_f32_matches_reference") else { return Ok(()) };
        let (got, want) = run::<f32>(&gpu, &case);
        let (_, phase) = phase_extents(&case);
        let nx = case.t.len() as f64;
        let eps = f32::EPSILON as f64;
        let delta = phase * 2f64.powi(-23) + 2f64.powi(-21) + (256.0 + nx / 256.0) * eps;
        let degenerate = 4.0 * 32.0 * eps * nx.sqrt() + 10.0 * delta;
        let tolerance = |lambda: f64| (lambda >= degenerate).then_some(50.0 * delta / lambda + 1e-5);
        let violation = first_violation(&case, &got, &want, tolerance);
        prop_assert!(violation.is_none(), "f32 (output, error, tolerance, lambda) {violation:?}; nx {}, nf {}, {:?}", case.t.len(), case.f.len(), case.opts);
    }
}

#[test]
fn gpu_results_are_bitwise_deterministic() {
    let Some(gpu) = gpu_or_skip("gpu_results_are_bitwise_deterministic") else {
        return;
    };
    let case = make_case(7, 3001, 2049, options(1, true, false), true, 0.0);
    let first = run::<f32>(&gpu, &case).0;
    for _ in 0..3 {
        assert!(run::<f32>(&gpu, &case)
            .0
            .iter()
            .zip(&first)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn gpu_host_api_agrees_with_device_api_and_reports_sass() {
    let Some(gpu) = gpu_or_skip("gpu_host_api_agrees_with_device_api_and_reports_sass") else {
        return;
    };
    let case = make_case(11, 777, 333, options(2, true, true), true, 0.0);
    let series = Series::new(&case.t, &case.y).with_weights(case.w.as_deref().unwrap());
    let host = flat(
        &Kernpack::from(gpu.clone())
            .lombscargle(&series, &case.f, &case.opts)
            .unwrap(),
    );
    let (device, _) = run::<f64>(&gpu, &case);
    assert_eq!(host, device);
    let infos = gpu.kernel_infos().unwrap();
    if std::env::var_os("CUDA_FORCE_PTX_JIT").is_some_and(|v| v == "1") {
        // Forced JIT: the driver compiled the lowest PTX (CUDA 11.8's
        // compute_35) for this GPU, so the old-arch code is what ran above.
        for k in &infos {
            assert_eq!(k.image, kernpack::gpu::Image::Container, "{k:?}");
            assert_eq!(k.ptx_version, 35, "{k:?}");
        }
    } else {
        // The loader handed the driver SASS built for this GPU: no JIT.
        assert!(gpu.all_sass().unwrap(), "JIT-compiled kernels: {infos:?}");
    }
}

#[test]
fn gpu_device_api_rejects_bad_shapes_and_leaves_output_alone() {
    let Some(gpu) = gpu_or_skip("gpu_device_api_rejects_bad_shapes_and_leaves_output_alone") else {
        return;
    };
    let stream = gpu.stream();
    let t = stream.clone_htod(&[0.0f32, 1.0, 2.5]).unwrap();
    let y = stream.clone_htod(&[1.0f32, -1.0]).unwrap();
    let f = stream.clone_htod(&[0.5f32, 1.0]).unwrap();
    let poison = vec![-7.0f32; 2];
    let mut out = stream.clone_htod(&poison).unwrap();
    let opts = LombScargleOptions::default();
    let err = LombScargleOnDevice::buffers(stream, &t, &y, None, &f, &mut out, &opts)
        .and_then(|call| gpu.enqueue_buffers(call))
        .unwrap_err();
    assert!(err.to_string().contains("y has 2"), "{err}");
    let y3 = stream.clone_htod(&[1.0f32, -1.0, 0.5]).unwrap();
    let mut short = stream.clone_htod(&[-7.0f32; 1]).unwrap();
    assert!(
        LombScargleOnDevice::buffers(stream, &t, &y3, None, &f, &mut short, &opts)
            .and_then(|call| gpu.enqueue_buffers(call))
            .is_err()
    );
    assert_eq!(stream.clone_dtoh(&out).unwrap(), poison);
    assert_eq!(stream.clone_dtoh(&short).unwrap(), vec![-7.0f32]);
}
