//! The coupled F/G system (MODELS.md section 1): the CPU reference against the
//! seed's printed values and exact invariants, the GPU against the reference,
//! run-to-run and path-to-path determinism, and bad input.
mod common;

use common::{gpu_or_skip, Rng};
use kernpack::api::fg::{complexes, interleaved, FgPlan};
use kernpack::{Backend, Complex, Error, FgOnDevice, FgOptions, FgPath, FgRun, Float, Kernpack};
use proptest::prelude::*;

fn c<T: Float>(re: f64, im: f64) -> Complex<T> {
    Complex {
        re: T::from_f64(re),
        im: T::from_f64(im),
    }
}

/// Random F and G with parts in [-1, 1] (never all-equal, never zero).
fn random_state<T: Float>(seed: u64, elements: usize) -> (Vec<Complex<T>>, Vec<Complex<T>>) {
    let mut rng = Rng(seed);
    let mut draw = |_| c::<T>(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
    let f = (0..elements).map(&mut draw).collect();
    let g = (0..elements).map(&mut draw).collect();
    (f, g)
}

fn cpu() -> Kernpack {
    Kernpack::new(Backend::Cpu).unwrap()
}

fn opts(path: FgPath) -> FgOptions {
    FgOptions { path }
}

fn abs<T: Float>(z: Complex<T>) -> f64 {
    z.norm()
}

fn diff<T: Float>(a: Complex<T>, b: Complex<T>) -> f64 {
    (a.re.to_f64() - b.re.to_f64()).hypot(a.im.to_f64() - b.im.to_f64())
}

fn same_bits<T: Float>(a: &[Complex<T>], b: &[Complex<T>]) -> bool {
    let bits = |v: &[Complex<T>]| -> Vec<u64> {
        interleaved(v)
            .iter()
            .map(|x| x.to_f64().to_bits())
            .collect()
    };
    bits(a) == bits(b)
}

fn same_run<T: Float>(a: &FgRun<T>, b: &FgRun<T>) -> bool {
    same_bits(&a.delta, &b.delta) && same_bits(&a.f, &b.f) && same_bits(&a.g, &b.g)
}

/// Seed 001's printed delta[1], delta[2] (complex64, N = 512, dt = 1e-4,
/// F = G = 1, delta0 = 1). The seed's two Numba variants differ from each
/// other by ~2e-7 relative and from an f64 run by ~4e-7: a smoke value, held
/// to 2e-6 of |delta|.
fn check_seed_values<T: Float>(delta: &[Complex<T>]) {
    let seed = [(262143.98, -78.64321), (1361288.4, 3141394700.0)];
    for (k, &(re, im)) in seed.iter().enumerate() {
        let want = c::<f64>(re, im);
        let got = c::<f64>(delta[k + 1].re.to_f64(), delta[k + 1].im.to_f64());
        let rel = diff(got, want) / abs(want);
        assert!(
            rel < 2e-6,
            "delta[{}] = {got:?}, seed {want:?}: relative {rel:e}",
            k + 1
        );
    }
}

fn seed_case<T: Float>(kp: &Kernpack, path: FgPath) -> FgRun<T> {
    let ones = vec![c::<T>(1.0, 0.0); 512 * 512];
    kp.fg_integrate(
        512,
        &ones,
        &ones,
        c(1.0, 0.0),
        T::from_f64(1e-4),
        2,
        &opts(path),
    )
    .unwrap()
}

#[test]
fn cpu_seed_case_matches_the_seed_printout() {
    check_seed_values(&seed_case::<f32>(&cpu(), FgPath::Auto).delta);
    check_seed_values(&seed_case::<f64>(&cpu(), FgPath::Auto).delta);
}

/// The RK4 amplification factor of dF/dt = -2i F over one step:
/// sum_{j<=4} (-2i dt)^j / j!.
fn rk4_rotation(dt: f64) -> Complex<f64> {
    let (mut term, mut sum) = (c::<f64>(1.0, 0.0), c::<f64>(1.0, 0.0));
    for j in 1..=4 {
        // term *= -2i dt / j
        term = c(
            term.im * 2.0 * dt / j as f64,
            -term.re * 2.0 * dt / j as f64,
        );
        sum = c(sum.re + term.re, sum.im + term.im);
    }
    sum
}

/// With delta = 0 the system decouples: dF/dt = -2i F (F rotates, |F| kept to
/// RK4 accuracy) and dG/dt = 0. delta stays exactly 0 when every warp of 32
/// values holds 16 values and their negatives 16 lanes further on: the
/// summation tree first adds lane i to lane i + 16 (csrc/fg.cu), the update
/// of -F is exactly the negation of the update of F, so every chunk sum is 0.
fn check_rotation<T: Float>(kp: &Kernpack, path: FgPath, seed: u64, eps: f64) {
    let n = 48; // N*N = 2304 = 72 warps of 32
    let (mut f, g) = random_state::<T>(seed, n * n);
    for w in f.chunks_mut(32) {
        for i in 0..16 {
            w[i + 16] = c(-w[i].re.to_f64(), -w[i].im.to_f64());
        }
    }
    let (dt, steps) = (1e-2, 200);
    let run = kp
        .fg_integrate(n, &f, &g, c(0.0, 0.0), T::from_f64(dt), steps, &opts(path))
        .unwrap();
    assert!(run.delta.iter().all(|d| abs(*d) == 0.0), "delta left 0");
    assert!(same_bits(&run.g, &g), "G changed with delta = 0");
    // |R|^2 = 1 - (2 dt)^6 / 72: 200 steps change |F| by 2e-10 relative;
    // rounding adds ~sqrt(steps) * a few eps per element.
    let r = rk4_rotation(dt);
    let (mut rot, mut worst) = (c::<f64>(1.0, 0.0), 0.0f64);
    for _ in 0..steps {
        rot = c(rot.re * r.re - rot.im * r.im, rot.re * r.im + rot.im * r.re);
    }
    for (z0, z) in f.iter().zip(&run.f) {
        let (a, b) = (z0.re.to_f64(), z0.im.to_f64());
        let want = c::<f64>(a * rot.re - b * rot.im, a * rot.im + b * rot.re);
        let got = c::<f64>(z.re.to_f64(), z.im.to_f64());
        worst = worst.max(diff(got, want) / abs(want).max(1e-3));
    }
    assert!(
        worst < 100.0 * eps * (steps as f64).sqrt(),
        "F off the rotation by {worst:e}"
    );
}

#[test]
fn cpu_with_delta_zero_f_rotates_and_g_is_constant() {
    check_rotation::<f64>(&cpu(), FgPath::Auto, 1, f64::EPSILON);
    check_rotation::<f32>(&cpu(), FgPath::Auto, 2, f32::EPSILON as f64);
}

/// dG/dt = 2 (dr Im F - di Re F) is real: Im G never changes, bit for bit.
fn check_im_g_constant<T: Float>(kp: &Kernpack, path: FgPath) {
    let n = 37;
    let (f, g) = random_state::<T>(7, n * n);
    let run = kp
        .fg_integrate(n, &f, &g, c(0.3, -0.2), T::from_f64(1e-3), 4, &opts(path))
        .unwrap();
    assert!(run
        .g
        .iter()
        .zip(&g)
        .all(|(a, b)| a.im.to_f64().to_bits() == b.im.to_f64().to_bits()));
    assert!(
        run.g.iter().zip(&g).any(|(a, b)| a.re != b.re),
        "G did not move"
    );
}

#[test]
fn cpu_im_g_is_constant() {
    check_im_g_constant::<f32>(&cpu(), FgPath::Auto);
    check_im_g_constant::<f64>(&cpu(), FgPath::Auto);
}

#[test]
fn cpu_zero_steps_returns_delta0_and_the_state() {
    let (f, g) = random_state::<f64>(3, 25);
    let run = cpu()
        .fg_integrate(5, &f, &g, c(0.5, 0.25), 1e-3, 0, &FgOptions::default())
        .unwrap();
    assert_eq!(run.delta, vec![c(0.5, 0.25)]);
    assert!(same_bits(&run.f, &f) && same_bits(&run.g, &g));
}

#[test]
fn cpu_reference_does_not_depend_on_chunking_into_threads() {
    // 300 x 300 = 88 chunks: the multi-threaded path; the same run one step at
    // a time (each call starting from the last) must give the same bits.
    let kp = cpu();
    let n = 300;
    let (f, g) = random_state::<f64>(11, n * n);
    let whole = kp
        .fg_integrate(n, &f, &g, c(1.0, 0.5), 1e-5, 3, &FgOptions::default())
        .unwrap();
    let (mut f1, mut g1, mut d) = (f.clone(), g.clone(), c(1.0, 0.5));
    for k in 1..=3 {
        let r = kp
            .fg_integrate(n, &f1, &g1, d, 1e-5, 1, &FgOptions::default())
            .unwrap();
        assert!(same_bits(&r.delta[1..], &whole.delta[k..=k]), "step {k}");
        (f1, g1, d) = (r.f, r.g, r.delta[1]);
    }
    assert!(same_bits(&f1, &whole.f) && same_bits(&g1, &whole.g));
}

fn expect_invalid<T>(result: Result<T, Error>, needle: &str) {
    match result {
        Err(Error::InvalidInput(msg)) => assert!(msg.contains(needle), "{msg:?} lacks {needle:?}"),
        Err(other) => panic!("expected InvalidInput({needle}), got {other}"),
        Ok(_) => panic!("expected InvalidInput({needle}), got Ok"),
    }
}

fn check_bad_input(kp: &Kernpack) {
    let (f, g) = random_state::<f32>(5, 16);
    let d0 = c::<f32>(1.0, 0.0);
    let o = FgOptions::default();
    expect_invalid(
        kp.fg_integrate(0, &f[..0], &g[..0], d0, 1e-3, 1, &o),
        "N is 0",
    );
    expect_invalid(
        kp.fg_integrate(4, &f[..15], &g, d0, 1e-3, 1, &o),
        "F holds 30",
    );
    expect_invalid(
        kp.fg_integrate(4, &f, &g[..9], d0, 1e-3, 1, &o),
        "G holds 18",
    );
    expect_invalid(kp.fg_integrate(4, &f, &g, d0, f32::NAN, 1, &o), "dt");
    expect_invalid(kp.fg_integrate(4, &f, &g, d0, f32::INFINITY, 1, &o), "dt");
    expect_invalid(
        kp.fg_integrate(4, &f, &g, c(f64::NAN, 0.0), 1e-3, 1, &o),
        "delta0",
    );
    let mut bad = f.clone();
    bad[7].im = f32::NAN;
    expect_invalid(kp.fg_integrate(4, &bad, &g, d0, 1e-3, 1, &o), "F[7]");
    let mut bad = g.clone();
    bad[3].re = f32::NEG_INFINITY;
    expect_invalid(kp.fg_integrate(4, &f, &bad, d0, 1e-3, 1, &o), "G[3]");
    expect_invalid(
        kp.fg_integrate(usize::MAX / 2, &f, &g, d0, 1e-3, 1, &o),
        "too large",
    );
}

#[test]
fn cpu_bad_input_is_rejected() {
    check_bad_input(&cpu());
}

// ---- GPU ----

fn gpu_kp(test: &str) -> Option<Kernpack> {
    gpu_or_skip(test).map(|g| Kernpack::with_gpu(g.ordinal()).unwrap())
}

/// Both paths where the GPU can launch cooperatively; else the launches path,
/// after checking that asking for the cooperative one is a clear error
/// (KERNPACK_GPU_NO_COOPERATIVE=1 plans as such a GPU).
fn paths(kp: &Kernpack) -> Vec<FgPath> {
    let gpu = kp.gpu().unwrap();
    if gpu.cooperative_launch() {
        return vec![FgPath::Cooperative, FgPath::Launches];
    }
    expect_invalid(
        gpu.fg_plan::<f32>(64, &opts(FgPath::Cooperative)),
        "does not support cooperative launch",
    );
    vec![FgPath::Launches]
}

#[test]
fn gpu_seed_case_matches_the_seed_printout_on_both_paths() {
    let Some(kp) = gpu_kp("gpu_seed_case_matches_the_seed_printout_on_both_paths") else {
        return;
    };
    for path in paths(&kp) {
        check_seed_values(&seed_case::<f32>(&kp, path).delta);
        check_seed_values(&seed_case::<f64>(&kp, path).delta);
    }
}

#[test]
fn gpu_invariants_hold_on_both_paths() {
    let Some(kp) = gpu_kp("gpu_invariants_hold_on_both_paths") else {
        return;
    };
    for path in paths(&kp) {
        check_rotation::<f64>(&kp, path, 1, f64::EPSILON);
        check_rotation::<f32>(&kp, path, 2, f32::EPSILON as f64);
        check_im_g_constant::<f32>(&kp, path);
        check_im_g_constant::<f64>(&kp, path);
    }
}

#[test]
fn gpu_bad_input_is_rejected() {
    let Some(kp) = gpu_kp("gpu_bad_input_is_rejected") else {
        return;
    };
    check_bad_input(&kp);
    let gpu = kp.gpu().unwrap();
    // Far more than the registers of a full wave hold: no cooperative plan.
    let huge = 1usize << 34;
    expect_invalid(
        gpu.fg_plan::<f32>(huge, &opts(FgPath::Cooperative)),
        if gpu.cooperative_launch() {
            "launches path"
        } else {
            "does not support cooperative launch"
        },
    );
    assert!(matches!(
        gpu.fg_plan::<f32>(huge, &FgOptions::default()).unwrap(),
        FgPlan::Launches { .. }
    ));
}

#[test]
fn gpu_chunk_is_the_kernel_block() {
    let Some(kp) = gpu_kp("gpu_chunk_is_the_kernel_block") else {
        return;
    };
    for info in kp.gpu().unwrap().kernel_infos().unwrap() {
        if info.name.starts_with("fg_cooperative") || info.name.starts_with("fg_step") {
            assert_eq!(
                info.max_threads_per_block as usize,
                kernpack::reference::fg::CHUNK
            );
        }
    }
}

/// Device buffers, poisoned with NaN first, on the GPU's stream.
#[allow(clippy::too_many_arguments)]
fn device_run<T: Float>(
    kp: &Kernpack,
    n: usize,
    f: &[Complex<T>],
    g: &[Complex<T>],
    d0: Complex<T>,
    dt: T,
    steps: usize,
    path: FgPath,
) -> Result<FgRun<T>, Error> {
    let gpu = kp.gpu().unwrap();
    let stream = gpu.stream();
    let mut df = stream.clone_htod(interleaved(f)).unwrap();
    let mut dg = stream.clone_htod(interleaved(g)).unwrap();
    let mut dd = stream
        .clone_htod(&vec![T::from_f64(f64::NAN); 2 * (steps + 1)])
        .unwrap();
    let call = FgOnDevice::new(n, d0, dt, steps, opts(path));
    gpu.enqueue_buffers(FgOnDevice::buffers(
        stream, &call, &mut df, &mut dg, &mut dd,
    )?)?;
    Ok(FgRun {
        delta: complexes(&stream.clone_dtoh(&dd).unwrap()),
        f: complexes(&stream.clone_dtoh(&df).unwrap()),
        g: complexes(&stream.clone_dtoh(&dg).unwrap()),
    })
}

#[test]
fn gpu_runs_are_bitwise_identical_run_to_run_and_path_to_path() {
    let Some(kp) = gpu_kp("gpu_runs_are_bitwise_identical_run_to_run_and_path_to_path") else {
        return;
    };
    // 512: one chunk per block on an H100/H200; 300: a partial last chunk;
    // 1500: the cooperative kernel with several chunks per block, or launches.
    for (n, steps) in [(512usize, 20usize), (300, 7), (1500, 3)] {
        let (f, g) = random_state::<f32>(n as u64, n * n);
        let d0 = c(0.7, -0.4);
        // dt N^2 <= 2.3: delta grows by at most ~3x per step, far from overflow.
        let first = device_run(&kp, n, &f, &g, d0, 1e-6, steps, FgPath::Auto).unwrap();
        assert!(first
            .delta
            .iter()
            .all(|d| d.re.is_finite() && d.im.is_finite()));
        for path in [FgPath::Auto, FgPath::Launches] {
            let again = device_run(&kp, n, &f, &g, d0, 1e-6, steps, path).unwrap();
            assert!(same_run(&first, &again), "N {n}: {path:?} differs");
        }
        let plan = kp
            .gpu()
            .unwrap()
            .fg_plan::<f32>(n * n, &FgOptions::default())
            .unwrap();
        println!("N {n}: {plan:?}");
    }
}

#[test]
fn gpu_zero_steps_writes_delta0_and_keeps_the_state() {
    let Some(kp) = gpu_kp("gpu_zero_steps_writes_delta0_and_keeps_the_state") else {
        return;
    };
    let (f, g) = random_state::<f64>(9, 81);
    for path in paths(&kp) {
        let run = device_run(&kp, 9, &f, &g, c(0.5, 0.25), 1e-3, 0, path).unwrap();
        assert_eq!(run.delta, vec![c(0.5, 0.25)], "{path:?}");
        assert!(same_bits(&run.f, &f) && same_bits(&run.g, &g), "{path:?}");
    }
}

#[test]
fn gpu_device_call_rejects_bad_lengths_and_changes_nothing() {
    let Some(kp) = gpu_kp("gpu_device_call_rejects_bad_lengths_and_changes_nothing") else {
        return;
    };
    let gpu = kp.gpu().unwrap();
    let stream = gpu.stream();
    let (f, g) = random_state::<f32>(4, 16);
    let mut df = stream.clone_htod(interleaved(&f)).unwrap();
    let mut dg = stream.clone_htod(interleaved(&g)).unwrap();
    let poison = vec![f32::NAN; 2 * 4];
    let mut dd = stream.clone_htod(&poison).unwrap();
    let o = FgOptions::default();
    let d0 = c::<f32>(1.0, 0.0);
    let mut run = |n, dt, steps| {
        let call = FgOnDevice::new(n, d0, dt, steps, o);
        gpu.enqueue_buffers(FgOnDevice::buffers(
            stream, &call, &mut df, &mut dg, &mut dd,
        )?)
    };
    // delta holds 4 complex values: 3 steps fit, 4 do not.
    expect_invalid(run(4, 1e-3, 4), "delta holds 8");
    expect_invalid(run(5, 1e-3, 3), "F holds 32");
    expect_invalid(run(4, f32::NAN, 3), "dt");
    assert!(same_bits(&complexes(&stream.clone_dtoh(&df).unwrap()), &f));
    assert!(same_bits(&complexes(&stream.clone_dtoh(&dg).unwrap()), &g));
    assert!(stream.clone_dtoh(&dd).unwrap().iter().all(|v| v.is_nan()));
}

/// Same operations, same order (csrc/fg.cu, src/reference/fg.rs): the GPU
/// reproduces the CPU bit for bit, in both precisions, for data without
/// subnormals (the pack flushes f32 subnormals; inputs in [-1, 1] make none).
fn gpu_matches_cpu_bitwise<T: Float>(
    kp: &Kernpack,
    seed: u64,
    n: usize,
    steps: usize,
    dt: f64,
    path: FgPath,
) {
    let (f, g) = random_state::<T>(seed, n * n);
    let d0 = c::<T>(0.25, 0.5);
    let want = cpu().fg_integrate(n, &f, &g, d0, T::from_f64(dt), steps, &FgOptions::default());
    let got = device_run(kp, n, &f, &g, d0, T::from_f64(dt), steps, path).unwrap();
    assert!(
        same_run(&got, &want.unwrap()),
        "N {n}, {steps} steps, {path:?}, {}",
        T::NAME
    );
}

#[test]
fn gpu_matches_cpu_bitwise_on_fixed_cases() {
    let Some(kp) = gpu_kp("gpu_matches_cpu_bitwise_on_fixed_cases") else {
        return;
    };
    for path in paths(&kp) {
        for (n, steps) in [(1, 3), (31, 4), (100, 5), (512, 3)] {
            gpu_matches_cpu_bitwise::<f64>(&kp, n as u64, n, steps, 1e-4, path);
            gpu_matches_cpu_bitwise::<f32>(&kp, n as u64, n, steps, 1e-4, path);
        }
    }
}

/// GPU against the CPU within a tolerance that does not rely on identical
/// operations (so it also holds if a compiler were to reorder them). A
/// perturbation of delta by e moves each F_j by ~dt |2 G_j - 1| e in the next
/// step, so delta's error can grow by A = 1 + dt sum_j |2 G_j - 1| per step;
/// each step also adds rounding of a few eps of the scale sum |F| per tree
/// level (log2 M <= 14). Tolerance: 1000 eps A^k, relative to sum |F|.
fn gpu_matches_cpu_within_tolerance<T: Float>(
    kp: &Kernpack,
    seed: u64,
    n: usize,
    steps: usize,
    dt: f64,
    d0: (f64, f64),
    eps: f64,
) -> Result<(), TestCaseError> {
    let (f, g) = random_state::<T>(seed, n * n);
    let d0 = c::<T>(d0.0, d0.1);
    let dt_t = T::from_f64(dt);
    let want = cpu()
        .fg_integrate(n, &f, &g, d0, dt_t, steps, &FgOptions::default())
        .unwrap();
    let got = device_run(kp, n, &f, &g, d0, dt_t, steps, FgPath::Auto).unwrap();
    let growth = 1.0
        + dt * g
            .iter()
            .map(|z| (2.0 * z.re.to_f64() - 1.0).hypot(2.0 * z.im.to_f64()))
            .sum::<f64>();
    let scale = f
        .iter()
        .chain(&want.f)
        .map(|z| abs(*z))
        .sum::<f64>()
        .max(1.0);
    for (k, (a, b)) in got.delta.iter().zip(&want.delta).enumerate() {
        let tol = 1000.0 * eps * growth.powi(k as i32) * scale.max(abs(*b));
        prop_assert!(
            diff(*a, *b) <= tol,
            "delta[{k}] gpu {a:?} cpu {b:?} tol {tol:e}"
        );
    }
    let tol = 1000.0 * eps * growth.powi(steps as i32);
    for (j, (a, b)) in got
        .f
        .iter()
        .zip(&want.f)
        .chain(got.g.iter().zip(&want.g))
        .enumerate()
    {
        prop_assert!(
            diff(*a, *b) <= tol * abs(*b).max(1.0),
            "state {j}: gpu {a:?} cpu {b:?}"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(24)))]
    // Sizes across chunk boundaries (1024 elements), dt * sum|2G - 1| <= ~1.
    #[test]
    fn gpu_c128_matches_cpu(seed in any::<u64>(), n in 1usize..=64, steps in 0usize..=5,
                            dt in 1e-5f64..1e-4, re in -2.0f64..2.0, im in -2.0f64..2.0) {
        let Some(kp) = gpu_kp("gpu_c128_matches_cpu") else { return Ok(()); };
        gpu_matches_cpu_within_tolerance::<f64>(&kp, seed, n, steps, dt, (re, im), f64::EPSILON)?;
    }
    #[test]
    fn gpu_c64_matches_cpu(seed in any::<u64>(), n in 1usize..=64, steps in 0usize..=5,
                           dt in 1e-5f64..1e-4, re in -2.0f64..2.0, im in -2.0f64..2.0) {
        let Some(kp) = gpu_kp("gpu_c64_matches_cpu") else { return Ok(()); };
        gpu_matches_cpu_within_tolerance::<f32>(&kp, seed, n, steps, dt, (re, im), f32::EPSILON as f64)?;
    }
}

/// Step counts no delta buffer can hold are errors (no overflow on the way,
/// which a debug build would report as a panic).
#[test]
fn impossible_step_counts_are_errors() {
    let ones = vec![c::<f64>(1.0, 0.0); 9];
    for nsteps in [usize::MAX, usize::MAX / 2 + 1, isize::MAX as usize] {
        let err = cpu()
            .fg_integrate(
                3,
                &ones,
                &ones,
                c(1.0, 0.0),
                0.01,
                nsteps,
                &opts(FgPath::Auto),
            )
            .unwrap_err();
        assert!(
            matches!(err, kernpack::Error::InvalidInput(_)),
            "{nsteps}: {err}"
        );
    }
}
