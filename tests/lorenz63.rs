//! Lorenz 63 ensembles: the reference's order of accuracy, the CPU backend
//! and the GPU against the reference, saved steps, and the errors.
mod common;

use common::{gpu_or_skip, proptest_cases, scaled_max_error, Rng};
use cudarc::driver::CudaSlice;
use kernpack::reference::lorenz63 as reference;
use kernpack::{
    Backend, Error, Float, Gpu, Kernpack, Lorenz63Ensemble, Lorenz63OnDevice, Lorenz63Params,
    PerMember,
};
use proptest::prelude::*;

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}
fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// States in the attractor's box: x, y in [-20, 20], z in [0, 50].
fn states(members: usize, rng: &mut Rng) -> Vec<f64> {
    (0..members)
        .flat_map(|_| {
            [
                rng.range(-20.0, 20.0),
                rng.range(-20.0, 20.0),
                rng.range(0.0, 50.0),
            ]
        })
        .collect()
}

/// One case: states, per-member (or shared) parameters near the classic
/// ones, steps and saved steps.
struct Case {
    initial: Vec<f64>,
    sigma: Option<Vec<f64>>,
    rho: Option<Vec<f64>>,
    beta: Option<Vec<f64>>,
    dt: f64,
    steps: u64,
    save_at: Vec<u64>,
}

impl Case {
    fn random(seed: u64, members: usize, horizon: f64) -> Case {
        let mut rng = Rng(seed);
        let per_member = |lo: f64, hi: f64, rng: &mut Rng| {
            (rng.next() < 0.5).then(|| (0..members).map(|_| rng.range(lo, hi)).collect())
        };
        let sigma = per_member(8.0, 12.0, &mut rng);
        let rho = per_member(20.0, 35.0, &mut rng);
        let beta = per_member(2.0, 3.0, &mut rng);
        let dt = rng.range(0.001, 0.01);
        let steps = (rng.next() * horizon / dt) as u64;
        let save_at = (0..=steps).filter(|_| rng.next() < 0.05).collect();
        Case {
            initial: states(members, &mut rng),
            sigma,
            rho,
            beta,
            dt,
            steps,
            save_at,
        }
    }

    fn in_type<T: Float>(&self) -> TypedCase<T> {
        let each = |v: &Option<Vec<f64>>| v.as_ref().map(|v| cast::<T>(v));
        TypedCase {
            initial: cast(&self.initial),
            sigma: each(&self.sigma),
            rho: each(&self.rho),
            beta: each(&self.beta),
            dt: self.dt,
        }
    }
}

struct TypedCase<T> {
    initial: Vec<T>,
    sigma: Option<Vec<T>>,
    rho: Option<Vec<T>>,
    beta: Option<Vec<T>>,
    dt: f64,
}

impl<T: Float> TypedCase<T> {
    fn params(&self) -> Lorenz63Params<&[T]> {
        fn pick<T>(v: &Option<Vec<T>>, all: f64) -> PerMember<&[T]> {
            match v {
                Some(v) => PerMember::Each(v.as_slice()),
                None => PerMember::All(all),
            }
        }
        Lorenz63Params {
            sigma: pick(&self.sigma, 10.0),
            rho: pick(&self.rho, 28.0),
            beta: pick(&self.beta, 8.0 / 3.0),
            dt: self.dt,
        }
    }
}

/// The reference run of a case, in f64 from the values of `T` (so that the
/// comparison measures the integration, not the rounding of the inputs).
fn want<T: Float>(case: &Case) -> (Vec<f64>, Vec<f64>) {
    let typed = case.in_type::<T>();
    let widened = TypedCase::<f64> {
        initial: f64s(&typed.initial),
        sigma: typed.sigma.as_ref().map(|v| f64s(v)),
        rho: typed.rho.as_ref().map(|v| f64s(v)),
        beta: typed.beta.as_ref().map(|v| f64s(v)),
        dt: case.dt,
    };
    reference::lorenz63(
        &widened.params(),
        &widened.initial,
        case.steps,
        &case.save_at,
    )
}

/// Error allowed against the reference, relative to the largest |state|,
/// over a horizon of at most 1 time unit (the tests keep steps x dt <= 1).
/// The backends differ from the reference by rounding only (dt folded into
/// the parameters, the increment summed as (k1 + 2 k2 + 2 k3 + k4) / 6, FMAs
/// on the GPU): a few ulp per step, up to 1000 steps, amplified by the
/// flow's stretching over one time unit (leading Lyapunov exponent 0.9;
/// finite-time stretching from some starts is larger). Measured over 300
/// random cases on the CPU: f64 <= 5e-14, f32 <= 9e-5; the bounds leave ~10x.
fn tolerance<T: Float>() -> f64 {
    if T::NAME == "f64" {
        1e-12
    } else {
        1e-3
    }
}

fn check_run<T: Float>(case: &Case, got: &Lorenz63Ensemble<T>) -> Result<(), TestCaseError> {
    let (final_state, saved) = want::<T>(case);
    let err = scaled_max_error(&f64s(&got.final_state), &final_state);
    prop_assert!(err <= tolerance::<T>(), "{}: final error {err}", T::NAME);
    prop_assert_eq!(got.saved.len(), saved.len());
    let err = scaled_max_error(&f64s(&got.saved), &saved);
    prop_assert!(err <= tolerance::<T>(), "{}: saved error {err}", T::NAME);
    prop_assert_eq!(&got.save_at, &case.save_at);
    Ok(())
}

fn run<T: Float>(kp: &Kernpack, case: &Case) -> kernpack::Result<Lorenz63Ensemble<T>> {
    let typed = case.in_type::<T>();
    kp.lorenz63(&typed.params(), &typed.initial, case.steps, &case.save_at)
}

// ---------------------------------------------------------------------------
// The reference.

/// Classical RK4 is fourth order: halving dt divides the error at a fixed
/// time by ~16 (against a run at dt / 64 as the exact solution).
#[test]
fn reference_is_fourth_order() {
    let z0 = [1.0, 1.0, 20.0];
    let solve = |dt: f64| {
        let mut z = z0;
        for _ in 0..(0.5 / dt).round() as usize {
            z = reference::rk4_step(z, 10.0, 28.0, 8.0 / 3.0, dt);
        }
        z
    };
    let exact = solve(0.01 / 64.0);
    let error = |dt: f64| {
        let z = solve(dt);
        (0..3).map(|i| (z[i] - exact[i]).abs()).fold(0.0, f64::max)
    };
    for dt in [0.01, 0.005] {
        let ratio = error(dt) / error(dt / 2.0);
        assert!(
            (12.0..20.0).contains(&ratio),
            "dt {dt}: error ratio {ratio}"
        );
    }
}

// ---------------------------------------------------------------------------
// The CPU backend.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn cpu_matches_reference(seed in any::<u64>(), members in 1usize..80, threads in 1usize..5) {
        let case = Case::random(seed, members, 1.0);
        let kp = Kernpack::new(Backend::Cpu).unwrap().with_cpu_threads(threads).unwrap();
        check_run(&case, &run::<f64>(&kp, &case).unwrap())?;
        check_run(&case, &run::<f32>(&kp, &case).unwrap())?;
    }
}

/// A saved frame is bitwise the final state of a run that stops there, and
/// the thread count changes nothing (members are independent).
#[test]
fn cpu_saved_frames_are_shorter_runs() {
    let case = Case {
        save_at: vec![0, 7, 100, 250],
        steps: 250,
        ..Case::random(7, 300, 1.0)
    };
    let one = Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(1)
        .unwrap();
    let four = Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(4)
        .unwrap();
    let full = run::<f32>(&four, &case).unwrap();
    assert_eq!(full, run::<f32>(&one, &case).unwrap());
    let frame = case.initial.len();
    for (k, &s) in case.save_at.iter().enumerate() {
        let short = Case {
            steps: s,
            save_at: vec![],
            initial: case.initial.clone(),
            sigma: case.sigma.clone(),
            rho: case.rho.clone(),
            beta: case.beta.clone(),
            ..case
        };
        let part = run::<f32>(&four, &short).unwrap();
        assert_eq!(
            part.final_state,
            full.saved[k * frame..(k + 1) * frame],
            "step {s}"
        );
        assert!(part.saved.is_empty());
    }
}

// ---------------------------------------------------------------------------
// Errors: typed, naming the argument, before any work.

#[test]
fn bad_calls_are_refused_naming_the_argument() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let z = vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0];
    let p = Lorenz63Params::<&[f64]>::default();
    let expect = |r: kernpack::Result<Lorenz63Ensemble<f64>>, words: &[&str]| {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{err:?}");
        let msg = err.to_string();
        for w in words {
            assert!(msg.contains(w), "{msg:?} lacks {w:?}");
        }
    };
    expect(kp.lorenz63(&p, &[], 10, &[]), &["initial", "0 values"]);
    expect(kp.lorenz63(&p, &z[..5], 10, &[]), &["initial", "5 values"]);
    for dt in [0.0, -0.1, f64::NAN, f64::INFINITY] {
        expect(
            kp.lorenz63(&Lorenz63Params { dt, ..p }, &z, 10, &[]),
            &["dt"],
        );
    }
    let three = [10.0, 10.0, 10.0];
    let wrong = Lorenz63Params {
        rho: PerMember::Each(&three[..]),
        ..p
    };
    expect(
        kp.lorenz63(&wrong, &z, 10, &[]),
        &["rho", "3 values", "(2)"],
    );
    let nan_beta = Lorenz63Params {
        beta: PerMember::All(f64::NAN),
        ..p
    };
    expect(kp.lorenz63(&nan_beta, &z, 10, &[]), &["beta", "finite"]);
    let bad_sigma = [10.0, f64::INFINITY];
    let inf_sigma = Lorenz63Params {
        sigma: PerMember::Each(&bad_sigma[..]),
        ..p
    };
    expect(kp.lorenz63(&inf_sigma, &z, 10, &[]), &["sigma[1]", "inf"]);
    let mut nan_z = z.clone();
    nan_z[4] = f64::NAN;
    expect(
        kp.lorenz63(&p, &nan_z, 10, &[]),
        &["initial value 4", "NaN"],
    );
    expect(kp.lorenz63(&p, &z, 10, &[11]), &["save_at[0] = 11"]);
    expect(
        kp.lorenz63(&p, &z, 10, &[4, 4]),
        &["save_at", "sorted and unique"],
    );
    expect(kp.lorenz63(&p, &z, 10, &[5, 2]), &["save_at[1] = 2"]);
    expect(kp.lorenz63(&p, &z, u64::MAX, &[]), &["steps"]);
    // No steps: the initial states back, saved at 0 too.
    let same = kp.lorenz63(&p, &z, 0, &[0]).unwrap();
    assert_eq!(
        (same.final_state.as_slice(), same.saved.as_slice()),
        (&z[..], &z[..])
    );
}

// ---------------------------------------------------------------------------
// The GPU.

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(24)))]

    /// The host path (upload, one launch per segment, download).
    #[test]
    fn gpu_matches_reference(seed in any::<u64>(), members in 1usize..3000) {
        let Some(gpu) = gpu_or_skip("gpu_matches_reference") else { return Ok(()) };
        let kp = Kernpack::from(gpu);
        let case = Case::random(seed, members, 1.0);
        check_run(&case, &run::<f64>(&kp, &case).unwrap())?;
        check_run(&case, &run::<f32>(&kp, &case).unwrap())?;
    }
}

fn poisoned<T: Float>(gpu: &Gpu, len: usize) -> CudaSlice<T> {
    gpu.stream()
        .clone_htod(&vec![T::from_f64(f64::NAN); len.max(1)])
        .unwrap()
}

/// The device path on NaN-poisoned outputs, per-member parameters on the
/// device, against the reference.
fn check_device<T: Float>(gpu: &Gpu, case: &Case) {
    let typed = case.in_type::<T>();
    let stream = gpu.stream();
    let upload = |v: &Option<Vec<T>>| v.as_ref().map(|v| stream.clone_htod(v).unwrap());
    let (sigma, rho, beta) = (
        upload(&typed.sigma),
        upload(&typed.rho),
        upload(&typed.beta),
    );
    fn pick<T>(v: &Option<CudaSlice<T>>, all: f64) -> PerMember<&CudaSlice<T>> {
        match v {
            Some(v) => PerMember::Each(v),
            None => PerMember::All(all),
        }
    }
    let p = Lorenz63Params {
        sigma: pick(&sigma, 10.0),
        rho: pick(&rho, 28.0),
        beta: pick(&beta, 8.0 / 3.0),
        dt: case.dt,
    };
    let d_in = stream.clone_htod(&typed.initial).unwrap();
    let len = typed.initial.len();
    let mut out = poisoned::<T>(gpu, len);
    let mut saved =
        (!case.save_at.is_empty()).then(|| poisoned::<T>(gpu, case.save_at.len() * len));
    let call = Lorenz63OnDevice::buffers(
        stream,
        &p,
        &d_in,
        &mut out,
        saved.as_mut(),
        case.steps,
        &case.save_at,
    )
    .unwrap();
    gpu.enqueue_buffers(call).unwrap();
    let got = Lorenz63Ensemble {
        members: len / 3,
        final_state: stream.clone_dtoh(&out).unwrap(),
        saved: saved
            .map(|s| stream.clone_dtoh(&s).unwrap())
            .unwrap_or_default(),
        save_at: case.save_at.clone(),
    };
    check_run(case, &got).unwrap();
}

#[test]
fn gpu_device_path_matches_reference() {
    let Some(gpu) = gpu_or_skip("gpu_device_path_matches_reference") else {
        return;
    };
    for seed in 0..8 {
        // Not a multiple of the block: the last block's idle threads.
        let case = Case::random(seed, 1000 + 37 * seed as usize, 1.0);
        check_device::<f64>(&gpu, &case);
        check_device::<f32>(&gpu, &case);
    }
}

/// A large f32 run: the GPU within a few ulp-growth of the CPU backend
/// (the same operations but FMAs), and every member finite.
#[test]
fn gpu_large_ensemble_matches_cpu() {
    let Some(gpu) = gpu_or_skip("gpu_large_ensemble_matches_cpu") else {
        return;
    };
    let case = Case {
        dt: 0.01,
        steps: 100,
        save_at: vec![50],
        ..Case::random(99, 1 << 16, 1.0)
    };
    let on_gpu = run::<f32>(&Kernpack::from(gpu), &case).unwrap();
    let on_cpu = run::<f32>(&Kernpack::new(Backend::Cpu).unwrap(), &case).unwrap();
    assert!(on_gpu.final_state.iter().all(|v| v.is_finite()));
    let err = scaled_max_error(&f64s(&on_gpu.final_state), &f64s(&on_cpu.final_state));
    assert!(err <= tolerance::<f32>(), "GPU vs CPU: {err}");
}

#[test]
fn gpu_device_errors_name_the_buffer() {
    let Some(gpu) = gpu_or_skip("gpu_device_errors_name_the_buffer") else {
        return;
    };
    let stream = gpu.stream();
    let p = Lorenz63Params::<&CudaSlice<f32>>::default();
    let d_in = stream.clone_htod(&[1.0f32; 30]).unwrap();
    let mut out = poisoned::<f32>(&gpu, 30);
    let mut short = poisoned::<f32>(&gpu, 29);
    fn msg<O>(r: kernpack::Result<O>) -> String {
        match r {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }
    assert!(msg(Lorenz63OnDevice::buffers(
        stream,
        &p,
        &d_in,
        &mut short,
        None,
        5,
        &[]
    ))
    .contains("out holds 29"));
    assert!(msg(Lorenz63OnDevice::buffers(
        stream,
        &p,
        &d_in,
        &mut out,
        None,
        5,
        &[2]
    ))
    .contains("save_at needs"));
    let mut saved = poisoned::<f32>(&gpu, 31);
    assert!(msg(Lorenz63OnDevice::buffers(
        stream,
        &p,
        &d_in,
        &mut out,
        Some(&mut saved),
        5,
        &[2]
    ))
    .contains("saved holds 31"));
    let sigma = stream.clone_htod(&[10.0f32; 9]).unwrap();
    let wrong = Lorenz63Params {
        sigma: PerMember::Each(&sigma),
        ..p
    };
    assert!(msg(Lorenz63OnDevice::buffers(
        stream,
        &wrong,
        &d_in,
        &mut out,
        None,
        5,
        &[]
    ))
    .contains("sigma holds 9"));
    // The raw path: out overlapping initial is refused before a launch.
    let call = Lorenz63OnDevice::<f32> {
        p: Lorenz63Params::default(),
        buffers: kernpack::api::lorenz63::Lorenz63DeviceBuffers {
            initial: d_in_ptr(&d_in, &gpu),
            out: d_in_ptr(&d_in, &gpu),
            saved: None,
        },
        members: 10,
        steps: 5,
        save_at: Vec::new(),
        dtype: std::marker::PhantomData,
    };
    // SAFETY: refused before any launch.
    let err = unsafe { gpu.enqueue(stream, &call) }
        .unwrap_err()
        .to_string();
    assert!(err.contains("overlap"), "{err}");
}

fn d_in_ptr(buffer: &CudaSlice<f32>, gpu: &Gpu) -> u64 {
    use cudarc::driver::DevicePtr;
    let (ptr, _guard) = buffer.device_ptr(gpu.stream());
    ptr
}
