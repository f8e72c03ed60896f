//! Adaptive Lorenz 63 ensembles (Dormand-Prince 5(4), SciPy RK45's step
//! control): the reference against a fine fixed-step run, the CPU backend
//! and the GPU against the reference (states, save times, step counts),
//! early stops, and the errors. SciPy itself is compared in
//! python/tests/test_lorenz63_adaptive.py.
mod common;

use common::{gpu_or_skip, proptest_cases, scaled_max_error, Rng};
use cudarc::driver::CudaSlice;
use kernpack::reference::lorenz63 as reference;
use kernpack::{
    AdaptiveControl, AdaptiveStatus, Backend, Error, Float, Gpu, Kernpack,
    Lorenz63AdaptiveEnsemble, Lorenz63AdaptiveOnDevice, Lorenz63AdaptiveParams, Lorenz63Params,
    PerMember,
};
use proptest::prelude::*;

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}
fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// One case: states in the attractor's box, per-member (or shared)
/// parameters near the classic ones, a time span, tolerances and save times.
#[derive(Debug, Clone)]
struct Case {
    initial: Vec<f64>,
    sigma: Option<Vec<f64>>,
    rho: Option<Vec<f64>>,
    beta: Option<Vec<f64>>,
    t0: f64,
    t_end: f64,
    control: AdaptiveControl,
    save_times: Vec<f64>,
}

impl Case {
    /// Tolerances log-uniform in [`lo`, `hi`]: f64 cases tight, f32 ones
    /// where f32 can meet them.
    fn random(seed: u64, members: usize, lo: f64, hi: f64) -> Case {
        let mut rng = Rng(seed);
        let per_member = |a: f64, b: f64, rng: &mut Rng| {
            (rng.next() < 0.5).then(|| (0..members).map(|_| rng.range(a, b)).collect())
        };
        let sigma = per_member(8.0, 12.0, &mut rng);
        let rho = per_member(10.0, 35.0, &mut rng);
        let beta = per_member(2.0, 3.0, &mut rng);
        let t0 = rng.range(-1.0, 1.0);
        let t_end = t0 + rng.range(0.0, 1.0);
        let rtol = 10f64.powf(rng.range(lo.log10(), hi.log10()));
        let control = AdaptiveControl {
            rtol,
            atol: rtol * rng.range(0.01, 1.0),
            first_step: (rng.next() < 0.3).then(|| (t_end - t0) * rng.range(1e-4, 1e-2)),
            ..AdaptiveControl::default()
        };
        let mut save_times: Vec<f64> = (0..(rng.next() * 6.0) as usize)
            .map(|_| rng.range(t0, t_end))
            .collect();
        if rng.next() < 0.3 {
            save_times.extend([t0, t_end]);
        }
        save_times.sort_by(f64::total_cmp);
        save_times.dedup();
        let initial = (0..members)
            .flat_map(|_| {
                [
                    rng.range(-20.0, 20.0),
                    rng.range(-20.0, 20.0),
                    rng.range(0.0, 50.0),
                ]
            })
            .collect();
        Case {
            initial,
            sigma,
            rho,
            beta,
            t0,
            t_end,
            control,
            save_times,
        }
    }

    fn typed<T: Float>(&self) -> Typed<'_, T> {
        let opt = |v: &Option<Vec<f64>>| v.as_ref().map(|v| cast::<T>(v));
        Typed {
            initial: cast(&self.initial),
            sigma: opt(&self.sigma),
            rho: opt(&self.rho),
            beta: opt(&self.beta),
            case: self,
        }
    }
}

/// A case's values in T (what the backends are given).
struct Typed<'a, T> {
    initial: Vec<T>,
    sigma: Option<Vec<T>>,
    rho: Option<Vec<T>>,
    beta: Option<Vec<T>>,
    case: &'a Case,
}

impl<T: Float> Typed<'_, T> {
    fn params(&self) -> Lorenz63AdaptiveParams<&[T]> {
        fn pick<T>(v: &Option<Vec<T>>, all: f64) -> PerMember<&[T]> {
            v.as_ref()
                .map_or(PerMember::All(all), |v| PerMember::Each(v))
        }
        Lorenz63AdaptiveParams {
            sigma: pick(&self.sigma, 10.0),
            rho: pick(&self.rho, 28.0),
            beta: pick(&self.beta, 8.0 / 3.0),
            t0: self.case.t0,
            t_end: self.case.t_end,
            control: self.case.control,
        }
    }
}

/// The reference run of the case's values in T, widened to f64.
fn want<T: Float>(case: &Case) -> Vec<reference::AdaptiveMember> {
    let typed = case.typed::<T>();
    let wide = |v: &Option<Vec<T>>| v.as_ref().map(|v| f64s(v));
    let (sigma, rho, beta) = (wide(&typed.sigma), wide(&typed.rho), wide(&typed.beta));
    let initial = f64s(&typed.initial);
    fn pick(v: &Option<Vec<f64>>, all: f64) -> PerMember<&[f64]> {
        v.as_ref()
            .map_or(PerMember::All(all), |v| PerMember::Each(&v[..]))
    }
    let p = Lorenz63AdaptiveParams {
        sigma: pick(&sigma, 10.0),
        rho: pick(&rho, 28.0),
        beta: pick(&beta, 8.0 / 3.0),
        t0: case.t0,
        t_end: case.t_end,
        control: case.control,
    };
    reference::lorenz63_adaptive(&p, &initial, &case.save_times)
}

/// Error allowed against the reference, relative to the largest |state|.
/// The backends take the reference's steps with other roundings (FMAs on
/// the GPU, f32 in f32 runs); where a rounding tips one step's accept or
/// reject the step sequences part, each run then within its own error
/// control of the true solution, so they differ by up to about the
/// tolerance times the flow's growth over at most one time unit (Lyapunov
/// exponent 0.9, larger over short stretches). f32 adds its rounding, about
/// 1e-7 per step. Measured over 400 random cases on the CPU: f64 equal to
/// the reference bit for bit (the same operations in the same order), f32
/// at most 0.23 of this bound, step counts at most one apart.
fn tolerance_for<T: Float>(c: &AdaptiveControl) -> f64 {
    let rounding = if T::NAME == "f64" { 1e-12 } else { 2e-5 };
    rounding + 200.0 * c.rtol.max(c.atol)
}

fn check<T: Float>(case: &Case, got: &Lorenz63AdaptiveEnsemble<T>) -> Result<(), TestCaseError> {
    let want = want::<T>(case);
    let members = want.len();
    let tol = tolerance_for::<T>(&case.control);
    prop_assert_eq!(got.members, members);
    prop_assert!(got.all_reached());
    let final_want: Vec<f64> = want.iter().flat_map(|m| m.final_state).collect();
    let err = scaled_max_error(&f64s(&got.final_state), &final_want);
    prop_assert!(err <= tol, "{}: final error {err} > {tol}", T::NAME);
    let frames = case.save_times.len();
    prop_assert_eq!(got.saved.len(), frames * members * 3);
    for k in 0..frames {
        let saved_want: Vec<f64> = want.iter().flat_map(|m| m.saved[k]).collect();
        let got_k = f64s(&got.saved[k * members * 3..(k + 1) * members * 3]);
        let err = scaled_max_error(&got_k, &saved_want);
        prop_assert!(err <= tol, "{}: frame {k} error {err} > {tol}", T::NAME);
    }
    // Step counts: the reference's, but where a rounding tips a decision
    // (then a step or two apart); f32's error estimate carries its own
    // rounding at tight tolerances, so only a loose bound there.
    for (m, w) in want.iter().enumerate() {
        let (a, r) = (got.accepted[m] as i64, got.rejected[m] as i64);
        let slack = if T::NAME == "f64" {
            2 + w.accepted as i64 / 20
        } else {
            2 + w.accepted as i64 / 4
        };
        prop_assert!(
            (a - w.accepted as i64).abs() <= slack && (r - w.rejected as i64).abs() <= slack,
            "{} member {m}: {a} accepted / {r} rejected, reference {} / {}",
            T::NAME,
            w.accepted,
            w.rejected
        );
    }
    Ok(())
}

fn run<T: Float>(kp: &Kernpack, case: &Case) -> kernpack::Result<Lorenz63AdaptiveEnsemble<T>> {
    let typed = case.typed::<T>();
    kp.lorenz63_adaptive(&typed.params(), &typed.initial, &case.save_times)
}

// ---------------------------------------------------------------------------
// The reference.

/// At tight tolerances the adaptive reference (final state and dense
/// output) agrees with a fixed-step RK4 run at dt = 1e-4 (global error of
/// order 1e-12 over one time unit); looser tolerances are further off.
#[test]
fn reference_matches_a_fine_fixed_step_run() {
    let mut rng = Rng(5);
    let y0 = [
        rng.range(-10.0, 10.0),
        rng.range(-10.0, 10.0),
        rng.range(10.0, 40.0),
    ];
    let dt = 1e-4;
    let save_steps = [2_500u64, 5_000, 7_321];
    let p = Lorenz63Params::<&[f64]> {
        dt,
        ..Lorenz63Params::default()
    };
    let (fine, fine_saved) = reference::lorenz63(&p, &y0, 10_000, &save_steps);
    let times: Vec<f64> = save_steps.iter().map(|s| *s as f64 * dt).collect();
    let error_at = |rtol: f64| {
        let c = AdaptiveControl {
            rtol,
            atol: rtol,
            ..AdaptiveControl::default()
        };
        let m = reference::dopri5_member(y0, 10.0, 28.0, 8.0 / 3.0, 0.0, 1.0, &c, &times);
        assert_eq!(m.status, AdaptiveStatus::Reached);
        let saved: Vec<f64> = m.saved.iter().flatten().copied().collect();
        scaled_max_error(&m.final_state, &fine).max(scaled_max_error(&saved, &fine_saved))
    };
    let (tight, loose) = (error_at(1e-12), error_at(1e-6));
    assert!(tight < 1e-9, "tight {tight}");
    assert!(
        loose > 10.0 * tight && loose < 1e-3,
        "loose {loose}, tight {tight}"
    );
}

// ---------------------------------------------------------------------------
// The CPU backend.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn cpu_matches_reference(seed in any::<u64>(), members in 1usize..40, threads in 1usize..4) {
        let kp = Kernpack::new(Backend::Cpu).unwrap().with_cpu_threads(threads).unwrap();
        let case = Case::random(seed, members, 1e-10, 1e-4);
        check(&case, &run::<f64>(&kp, &case).unwrap())?;
        let case = Case::random(seed, members, 1e-6, 1e-3);
        check(&case, &run::<f32>(&kp, &case).unwrap())?;
    }
}

/// Save times at the ends are the initial and the final states exactly; a
/// run of no length (t_end = t0) takes no step and returns the initial state.
#[test]
fn save_times_at_the_ends_are_exact() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let case = Case {
        save_times: vec![0.25, 0.5, 1.25],
        t0: 0.25,
        t_end: 1.25,
        ..Case::random(3, 50, 1e-8, 1e-8)
    };
    let got = run::<f64>(&kp, &case).unwrap();
    let len = case.initial.len();
    assert_eq!(&got.saved[..len], &case.initial[..]);
    assert_eq!(&got.saved[2 * len..], &got.final_state[..]);
    assert!(got.accepted.iter().all(|a| *a > 10));
    let none = Case {
        t_end: 0.25,
        save_times: vec![0.25],
        ..case
    };
    let got = run::<f32>(&kp, &none).unwrap();
    let initial = cast::<f32>(&none.initial);
    assert_eq!((&got.final_state, &got.saved), (&initial, &initial));
    assert!(got.accepted.iter().chain(&got.rejected).all(|n| *n == 0));
    assert!(got.all_reached());
}

/// A member out of attempts keeps its last state (the reference's) and NaN
/// at the later save times; one whose state overflows (f32) shrinks its
/// step until it is too small.
#[test]
fn early_stops_are_reported() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let case = Case {
        control: AdaptiveControl {
            rtol: 1e-10,
            atol: 1e-10,
            max_steps: 7,
            ..AdaptiveControl::default()
        },
        save_times: vec![0.001, 0.9],
        t0: 0.0,
        t_end: 1.0,
        ..Case::random(11, 20, 1e-3, 1e-3)
    };
    let got = run::<f64>(&kp, &case).unwrap();
    let want = want::<f64>(&case);
    for (m, w) in want.iter().enumerate() {
        assert_eq!(got.status[m], AdaptiveStatus::MaxSteps);
        assert_eq!(w.status, AdaptiveStatus::MaxSteps);
        assert_eq!(got.accepted[m] + got.rejected[m], 7);
        let err = scaled_max_error(&got.final_state[3 * m..3 * m + 3], &w.final_state);
        assert!(err < 1e-12, "member {m}: {err}");
        assert!(got.saved[(20 + m) * 3..(20 + m) * 3 + 3]
            .iter()
            .all(|v| v.is_nan()));
    }
    let huge = Case {
        initial: vec![1e30, -1e30, 1e30],
        sigma: None,
        rho: None,
        beta: None,
        control: AdaptiveControl::default(),
        save_times: vec![],
        ..case
    };
    let got = run::<f32>(&kp, &huge).unwrap();
    assert_eq!(got.status, vec![AdaptiveStatus::StepTooSmall]);
    assert_eq!(got.accepted, vec![0]);
}

#[test]
fn bad_calls_are_refused_naming_the_argument() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let initial = [1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
    let msg = |p: Lorenz63AdaptiveParams<&[f64]>, initial: &[f64], times: &[f64]| match kp
        .lorenz63_adaptive(&p, initial, times)
    {
        Err(Error::InvalidInput(m)) => m,
        other => panic!("expected an invalid-input error, got {other:?}"),
    };
    let ok = Lorenz63AdaptiveParams::<&[f64]>::default();
    let with = |f: fn(&mut AdaptiveControl)| {
        let mut p = ok;
        f(&mut p.control);
        p
    };
    assert!(kp
        .lorenz63_adaptive(&ok, &initial, &[0.0, 0.5, 1.0])
        .is_ok());
    assert!(msg(ok, &initial[..4], &[]).contains("members x 3"));
    assert!(
        msg(Lorenz63AdaptiveParams { t_end: -1.0, ..ok }, &initial, &[]).contains("t_end >= t0")
    );
    assert!(
        msg(Lorenz63AdaptiveParams { t0: f64::NAN, ..ok }, &initial, &[]).contains("time span")
    );
    assert!(msg(with(|c| c.rtol = -1.0), &initial, &[]).contains("rtol"));
    assert!(msg(with(|c| c.atol = f64::INFINITY), &initial, &[]).contains("atol"));
    assert!(msg(with(|c| (c.rtol, c.atol) = (0.0, 0.0)), &initial, &[]).contains("both be 0"));
    assert!(msg(with(|c| c.first_step = Some(2.0)), &initial, &[]).contains("first_step"));
    assert!(msg(with(|c| c.first_step = Some(0.0)), &initial, &[]).contains("first_step"));
    assert!(msg(with(|c| c.max_step = 0.0), &initial, &[]).contains("max_step"));
    assert!(msg(with(|c| c.max_steps = 0), &initial, &[]).contains("max_steps"));
    assert!(msg(ok, &initial, &[0.5, 0.5]).contains("sorted and unique"));
    assert!(msg(ok, &initial, &[1.5]).contains("save_times[0] = 1.5"));
    assert!(msg(ok, &initial, &[f64::NAN]).contains("outside"));
    let two = [10.0, f64::NAN];
    let p = Lorenz63AdaptiveParams {
        sigma: PerMember::Each(&two[..]),
        ..ok
    };
    assert!(msg(p, &initial, &[]).contains("sigma[1] is NaN"));
    let p = Lorenz63AdaptiveParams {
        rho: PerMember::Each(&two[..1]),
        ..ok
    };
    assert!(msg(p, &initial, &[]).contains("rho holds 1 values"));
    assert!(msg(ok, &[1.0, f64::INFINITY, 0.0], &[]).contains("initial value 1"));
}

// ---------------------------------------------------------------------------
// The GPU.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

    /// The host path (upload, one launch, download).
    #[test]
    fn gpu_matches_reference(seed in any::<u64>(), members in 1usize..3000) {
        let Some(gpu) = gpu_or_skip("gpu_matches_reference") else { return Ok(()) };
        let kp = Kernpack::from(gpu);
        let case = Case::random(seed, members, 1e-10, 1e-4);
        check(&case, &run::<f64>(&kp, &case).unwrap())?;
        let case = Case::random(seed, members, 1e-6, 1e-3);
        check(&case, &run::<f32>(&kp, &case).unwrap())?;
    }
}

fn poisoned<T: cudarc::driver::DeviceRepr + Copy>(gpu: &Gpu, len: usize, v: T) -> CudaSlice<T> {
    gpu.stream().clone_htod(&vec![v; len.max(1)]).unwrap()
}

/// The device path on poisoned outputs, with and without the stats buffer,
/// per-member parameters on the device, against the reference.
fn check_device<T: Float>(gpu: &Gpu, case: &Case, with_stats: bool) {
    let typed = case.typed::<T>();
    let stream = gpu.stream();
    let upload = |v: &Option<Vec<T>>| v.as_ref().map(|v| stream.clone_htod(v).unwrap());
    let (sigma, rho, beta) = (
        upload(&typed.sigma),
        upload(&typed.rho),
        upload(&typed.beta),
    );
    fn pick<T>(v: &Option<CudaSlice<T>>, all: f64) -> PerMember<&CudaSlice<T>> {
        v.as_ref().map_or(PerMember::All(all), PerMember::Each)
    }
    let p = Lorenz63AdaptiveParams {
        sigma: pick(&sigma, 10.0),
        rho: pick(&rho, 28.0),
        beta: pick(&beta, 8.0 / 3.0),
        t0: case.t0,
        t_end: case.t_end,
        control: case.control,
    };
    let d_in = stream.clone_htod(&typed.initial).unwrap();
    let len = typed.initial.len();
    let nan = T::from_f64(f64::NAN);
    let mut out = poisoned(gpu, len, nan);
    let mut saved =
        (!case.save_times.is_empty()).then(|| poisoned(gpu, case.save_times.len() * len, nan));
    let mut stats = with_stats.then(|| poisoned(gpu, len, u32::MAX));
    let call = Lorenz63AdaptiveOnDevice::buffers(
        stream,
        &p,
        &d_in,
        &mut out,
        saved.as_mut(),
        stats.as_mut(),
        &case.save_times,
    )
    .unwrap();
    gpu.enqueue_buffers(call).unwrap();
    let members = len / 3;
    let stats = match stats {
        Some(s) => stream.clone_dtoh(&s).unwrap(),
        // Without the buffer the counts are the reference's (not checked).
        None => want::<T>(case)
            .iter()
            .flat_map(|m| [m.accepted, m.rejected, 0])
            .collect(),
    };
    let got = Lorenz63AdaptiveEnsemble {
        members,
        final_state: stream.clone_dtoh(&out).unwrap(),
        saved: saved
            .map(|s| stream.clone_dtoh(&s).unwrap())
            .unwrap_or_default(),
        save_times: case.save_times.clone(),
        accepted: stats.chunks(3).map(|s| s[0]).collect(),
        rejected: stats.chunks(3).map(|s| s[1]).collect(),
        status: stats
            .chunks(3)
            .map(|s| AdaptiveStatus::from_code(s[2]))
            .collect(),
    };
    check(case, &got).unwrap();
}

#[test]
fn gpu_device_path_matches_reference() {
    let Some(gpu) = gpu_or_skip("gpu_device_path_matches_reference") else {
        return;
    };
    for seed in 0..6 {
        // Not a multiple of the block: the last block's idle threads.
        let members = 700 + 37 * seed as usize;
        check_device::<f64>(
            &gpu,
            &Case::random(seed, members, 1e-10, 1e-4),
            seed % 2 == 0,
        );
        check_device::<f32>(
            &gpu,
            &Case::random(seed, members, 1e-6, 1e-3),
            seed % 2 == 1,
        );
    }
}

/// Early stops on the GPU: the same counts, states and NaN frames as the
/// CPU backend's.
#[test]
fn gpu_early_stops_match_the_cpu() {
    let Some(gpu) = gpu_or_skip("gpu_early_stops_match_the_cpu") else {
        return;
    };
    let mut case = Case {
        control: AdaptiveControl {
            rtol: 1e-9,
            atol: 1e-9,
            max_steps: 9,
            ..AdaptiveControl::default()
        },
        save_times: vec![0.0005, 0.9],
        t0: 0.0,
        t_end: 1.0,
        ..Case::random(12, 300, 1e-3, 1e-3)
    };
    case.initial[..3].copy_from_slice(&[1e30, -1e30, 1e30]);
    let on_gpu = run::<f32>(&Kernpack::from(gpu), &case).unwrap();
    let on_cpu = run::<f32>(&Kernpack::new(Backend::Cpu).unwrap(), &case).unwrap();
    assert_eq!(on_gpu.status, on_cpu.status);
    assert_eq!(on_gpu.status[0], AdaptiveStatus::StepTooSmall);
    assert_eq!(on_gpu.status[1], AdaptiveStatus::MaxSteps);
    let nan_at =
        |r: &Lorenz63AdaptiveEnsemble<f32>| r.saved.iter().map(|v| v.is_nan()).collect::<Vec<_>>();
    assert_eq!(nan_at(&on_gpu), nan_at(&on_cpu));
}

#[test]
fn gpu_device_errors_name_the_buffer() {
    let Some(gpu) = gpu_or_skip("gpu_device_errors_name_the_buffer") else {
        return;
    };
    let stream = gpu.stream();
    let p = Lorenz63AdaptiveParams::<&CudaSlice<f32>>::default();
    let d_in = stream.clone_htod(&[1.0f32; 30]).unwrap();
    let msg = |r: kernpack::Result<()>| match r {
        Err(Error::InvalidInput(m)) => m,
        other => panic!("expected an invalid-input error, got {other:?}"),
    };
    let mut out = poisoned(&gpu, 30, f32::NAN);
    let mut short = poisoned(&gpu, 29, f32::NAN);
    let mut stats = poisoned(&gpu, 27, 0u32);
    let mut saved = poisoned(&gpu, 30, f32::NAN);
    let try_call = |out: &mut CudaSlice<f32>,
                    saved: Option<&mut CudaSlice<f32>>,
                    stats: Option<&mut CudaSlice<u32>>,
                    times: &[f64]| {
        Lorenz63AdaptiveOnDevice::buffers(stream, &p, &d_in, out, saved, stats, times)
            .and_then(|c| gpu.enqueue_buffers(c))
    };
    assert!(msg(try_call(&mut short, None, None, &[])).contains("out holds 29"));
    assert!(msg(try_call(&mut out, None, Some(&mut stats), &[])).contains("stats holds 27"));
    assert!(msg(try_call(&mut out, None, None, &[0.5])).contains("needs a saved-states buffer"));
    assert!(msg(try_call(&mut out, Some(&mut saved), None, &[])).contains("save_times is empty"));
    let untouched = stream.clone_dtoh(&out).unwrap();
    assert!(untouched.iter().all(|v| v.is_nan()));
    try_call(&mut out, Some(&mut saved), None, &[0.5]).unwrap();
    let done = stream.clone_dtoh(&out).unwrap();
    assert!(done.iter().all(|v| v.is_finite()));
}

/// A large f32 run: every member reaches t_end, within the tolerance of
/// the CPU backend.
#[test]
fn gpu_large_ensemble_matches_cpu() {
    let Some(gpu) = gpu_or_skip("gpu_large_ensemble_matches_cpu") else {
        return;
    };
    let case = Case {
        save_times: vec![],
        ..Case::random(99, 1 << 15, 1e-5, 1e-5)
    };
    let on_gpu = run::<f32>(&Kernpack::from(gpu), &case).unwrap();
    let on_cpu = run::<f32>(&Kernpack::new(Backend::Cpu).unwrap(), &case).unwrap();
    assert!(on_gpu.all_reached());
    let err = scaled_max_error(&f64s(&on_gpu.final_state), &f64s(&on_cpu.final_state));
    assert!(
        err <= tolerance_for::<f32>(&case.control),
        "GPU vs CPU: {err}"
    );
}
