//! Lorenz 96 and Lorenz 2005 Model II / III (MODELS.md sections 2, 3): the
//! exact invariants on the CPU reference, the GPU against it, long-run
//! statistics and error growth.
mod common;

use common::{gpu_or_skip, proptest_cases, scaled_max_error, Rng};
use cudarc::driver::CudaSlice;
use kernpack::api::lorenz::{dart_initial_state, frame_count, EnsembleRun};
use kernpack::reference::lorenz::{self as reference, model3_weights, Lorenz05Work};
use kernpack::{
    Backend, Error, Float, Gpu, Kernpack, Lorenz05Model, Lorenz05OnDevice, Lorenz05Params,
    Lorenz96OnDevice, Lorenz96Params, WindowSumOnDevice,
};
use proptest::prelude::*;

/// A state with the character of the attractor: a few large-scale waves
/// around F/5 plus small-scale noise (|Y| ~ 0.3), different per member.
fn l05_states(p: &Lorenz05Params, members: usize, rng: &mut Rng) -> Vec<f64> {
    let mut z = Vec::with_capacity(members * p.n);
    for _ in 0..members {
        let waves: Vec<(f64, f64, f64)> = (0..3)
            .map(|k| (rng.range(1.0, 4.0), (k + 2) as f64, rng.range(0.0, 6.3)))
            .collect();
        for i in 0..p.n {
            let phase = std::f64::consts::TAU * i as f64 / p.n as f64;
            let large: f64 = waves
                .iter()
                .map(|(a, k, ph)| a * (k * phase + ph).sin())
                .sum();
            z.push(p.forcing / 5.0 + large + rng.range(-0.3, 0.3));
        }
    }
    z
}

fn l96_states(n: usize, members: usize, rng: &mut Rng) -> Vec<f64> {
    (0..members * n).map(|_| rng.range(-5.0, 10.0)).collect()
}

fn cast<T: Float>(v: &[f64]) -> Vec<T> {
    v.iter().map(|x| T::from_f64(*x)).collect()
}
fn f64s<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn small_l05(rng: &mut Rng, model: Lorenz05Model) -> Lorenz05Params {
    let k = 2 * (1 + (rng.next() * 8.0) as usize); // 2..16
    let j = 1 + (rng.next() * 8.0) as usize; // 1..8
    let min_n = 2 * k.max(j) + 1;
    Lorenz05Params {
        n: min_n + (rng.next() * 200.0) as usize,
        k,
        j,
        model,
        ..Default::default()
    }
}

// ---------------------------------------------------------------------------
// Invariants (CPU reference), MODELS.md section 3.

#[test]
fn weights_sum_to_one_with_zero_second_moment() {
    for j in 1..40 {
        let (_, _, w) = model3_weights(j);
        let sum: f64 = w.iter().sum();
        let second: f64 = w
            .iter()
            .enumerate()
            .map(|(m, a)| ((m as f64) - j as f64).powi(2) * a)
            .sum();
        assert!((sum - 1.0).abs() < 1e-14, "J {j}: sum' a = {sum}");
        // sum' j^2 a is a difference of terms up to ~J^2: rounding scale J^2 eps.
        assert!(
            second.abs() < 1e-13 * (j * j) as f64,
            "J {j}: sum' j^2 a = {second}"
        );
    }
}

#[test]
fn tendency_vanishes_at_z_equal_to_f() {
    let mut rng = Rng(11);
    for model in [Lorenz05Model::II, Lorenz05Model::III] {
        for case in 0..20 {
            let mut p = if case == 0 {
                Lorenz05Params {
                    model,
                    ..Default::default()
                }
            } else {
                small_l05(&mut rng, model)
            };
            p.forcing = rng.range(-20.0, 20.0);
            let z = vec![p.forcing; p.n];
            let mut dz = vec![f64::NAN; p.n];
            Lorenz05Work::new(&p).tendency(&p, &z, &mut dz);
            // X = F sum' a and W = F to round-off; XX = -F^2 + F^2.
            let tol = 1e-13 * p.forcing.powi(2).max(1.0) * (p.k + p.j) as f64;
            let worst = dz.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            assert!(worst <= tol, "{p:?}: |dZ| up to {worst}");
        }
    }
    let z = vec![8.0; 40];
    let mut dx = vec![f64::NAN; 40];
    reference::lorenz96_tendency(8.0, &z, &mut dx);
    assert!(dx.iter().all(|v| *v == 0.0), "{dx:?}");
}

#[test]
fn x_equals_a_quadratic_z_away_from_the_wrap() {
    let mut rng = Rng(12);
    for _ in 0..30 {
        let p = small_l05(&mut rng, Lorenz05Model::III);
        let (a, b, c) = (
            rng.range(-3.0, 3.0),
            rng.range(-0.5, 0.5),
            rng.range(-0.01, 0.01),
        );
        // Quadratic in the site index; the periodic domain breaks it only where
        // the window [i-J, i+J] crosses site 0 / N-1, so "interior" means
        // J <= i < N - J.
        let z: Vec<f64> = (0..p.n)
            .map(|i| a + b * i as f64 + c * (i * i) as f64)
            .collect();
        let mut work = Lorenz05Work::new(&p);
        work.split(&p, &z);
        let scale = z.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        let interior = p.j..p.n - p.j;
        for (i, (x, zi)) in work.x()[interior.clone()]
            .iter()
            .zip(&z[interior])
            .enumerate()
        {
            assert!(
                (x - zi).abs() < 1e-12 * scale,
                "{p:?} site {}: X {x} Z {zi}",
                i + p.j
            );
        }
        // The window sum API gives the same X.
        let (_, _, w) = model3_weights(p.j);
        let kp = Kernpack::new(Backend::Cpu).unwrap();
        let x = kp.window_sum(&z, &w, 1, p.n).unwrap();
        assert_eq!(x, work.x(), "window_sum differs from phase 1");
    }
}

#[test]
fn spatial_mean_of_y_is_zero() {
    let mut rng = Rng(13);
    for _ in 0..30 {
        let p = small_l05(&mut rng, Lorenz05Model::III);
        let z = l05_states(&p, 1, &mut rng);
        let mut work = Lorenz05Work::new(&p);
        work.split(&p, &z);
        let sum: f64 = work.y().iter().sum();
        let scale: f64 = z.iter().map(|v| v.abs()).sum();
        assert!(sum.abs() < 1e-13 * scale, "{p:?}: sum Y = {sum}");
    }
}

#[test]
fn model2_bracket_conserves_energy() {
    let mut rng = Rng(14);
    for _ in 0..30 {
        let p = small_l05(&mut rng, Lorenz05Model::II);
        let x: Vec<f64> = (0..p.n).map(|_| rng.range(-5.0, 10.0)).collect();
        let mut work = Lorenz05Work::new(&p);
        work.split(&p, &x);
        let mut bracket = vec![0.0; p.n];
        work.bracket(&p, &mut bracket);
        let energy: f64 = x.iter().zip(&bracket).map(|(a, b)| a * b).sum();
        let scale: f64 = x.iter().zip(&bracket).map(|(a, b)| (a * b).abs()).sum();
        assert!(
            energy.abs() < 1e-12 * scale,
            "{p:?}: sum X [X,X] = {energy} (scale {scale})"
        );
    }
}

#[test]
fn invalid_parameters_are_rejected_with_reasons() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let ok = Lorenz05Params::default();
    let z = dart_initial_state(ok.n, ok.forcing);
    let cases: Vec<(Lorenz05Params, &str)> = vec![
        (Lorenz05Params { k: 31, ..ok }, "K must be even"),
        (Lorenz05Params { k: 0, ..ok }, "K must be even"),
        (Lorenz05Params { j: 0, ..ok }, "J must be >= 1"),
        (Lorenz05Params { n: 64, ..ok }, "exceed 2K"),
        (
            Lorenz05Params {
                n: 100,
                k: 8,
                j: 50,
                ..ok
            },
            "exceed 2J",
        ),
        (Lorenz05Params { dt: 0.0, ..ok }, "dt must be"),
        (Lorenz05Params { dt: f64::NAN, ..ok }, "dt must be"),
        (
            Lorenz05Params {
                forcing: f64::INFINITY,
                ..ok
            },
            "forcing",
        ),
        (Lorenz05Params { b: f64::NAN, ..ok }, "b and c"),
    ];
    for (p, want) in cases {
        let zz = dart_initial_state(p.n, 15.0);
        let err = kp.lorenz05(&p, &zz, 1, 0).unwrap_err();
        assert!(
            matches!(&err, Error::InvalidInput(m) if m.contains(want)),
            "{p:?}: {err}"
        );
    }
    // J = 0 is fine for Model II, which does not smooth.
    kp.lorenz05(
        &Lorenz05Params {
            j: 0,
            model: Lorenz05Model::II,
            ..ok
        },
        &z,
        1,
        0,
    )
    .unwrap();
    for (initial, steps, every, want) in [
        (&z[..0], 1, 0, "positive multiple"),
        (&z[..959], 1, 0, "positive multiple"),
        (&z[..], 5, 6, "exceeds steps"),
    ] {
        let err = kp.lorenz05(&ok, initial, steps, every).unwrap_err();
        assert!(err.to_string().contains(want), "{err}");
    }
    let mut bad = z.clone();
    bad[7] = f64::NAN;
    assert!(kp
        .lorenz05(&ok, &bad, 1, 0)
        .unwrap_err()
        .to_string()
        .contains("value 7"));
    let p96 = Lorenz96Params {
        n: 3,
        ..Default::default()
    };
    assert!(kp
        .lorenz96(&p96, &[1.0; 3], 1, 0)
        .unwrap_err()
        .to_string()
        .contains("N >= 4"));
    assert!(kp
        .window_sum(&[1.0; 8], &[1.0; 4], 1, 8)
        .unwrap_err()
        .to_string()
        .contains("odd"));
}

#[test]
fn cpu_trajectory_frames_are_the_states_after_every_k_steps() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let p = Lorenz96Params::default();
    let z = l96_states(p.n, 3, &mut Rng(15));
    let run = kp.lorenz96(&p, &z, 10, 4).unwrap();
    let traj = run.trajectory.as_ref().unwrap();
    assert_eq!(run.frames(), 3);
    assert_eq!(&traj[..z.len()], &z[..]);
    let after8 = kp.lorenz96(&p, &z, 8, 0).unwrap();
    assert_eq!(&traj[2 * z.len()..], &after8.final_state[..]);
    let after10 = kp.lorenz96(&p, &after8.final_state, 2, 0).unwrap();
    assert_eq!(after10.final_state, run.final_state);
}

// ---------------------------------------------------------------------------
// Statistics and error growth.

/// Mean and standard deviation.
fn stats(v: impl Iterator<Item = f64> + Clone) -> (f64, f64) {
    let n = v.clone().count() as f64;
    let mean = v.clone().sum::<f64>() / n;
    let var = v.map(|x| (x - mean).powi(2)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// Doubling time of twin-run separation: trajectories of pairs (member 2q,
/// 2q+1), the RMS difference per frame averaged in log over pairs; the time
/// from `lo` to `hi` RMS error over log2(hi/lo).
fn doubling_time(traj: &[f64], members: usize, n: usize, frame_dt: f64, lo: f64, hi: f64) -> f64 {
    let frames = traj.len() / (members * n);
    let mut log_err = Vec::with_capacity(frames);
    for f in 0..frames {
        let mut acc = 0.0;
        for q in 0..members / 2 {
            let a = &traj[(f * members + 2 * q) * n..][..n];
            let b = &traj[(f * members + 2 * q + 1) * n..][..n];
            let rms =
                (a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum::<f64>() / n as f64).sqrt();
            acc += rms.max(1e-300).ln();
        }
        log_err.push(acc / (members / 2) as f64);
    }
    let first = |level: f64| log_err.iter().position(|e| *e >= level.ln());
    let (Some(t1), Some(t2)) = (first(lo), first(hi)) else {
        panic!("the separation never grew from {lo} to {hi}: {log_err:?}");
    };
    (t2 - t1) as f64 * frame_dt / (hi / lo).log2()
}

/// Pairs of identical states, the second of each pair perturbed by 1e-6 at every site.
fn twins(states: &[f64], n: usize, rng: &mut Rng) -> Vec<f64> {
    let mut out = Vec::with_capacity(2 * states.len());
    for s in states.chunks(n) {
        out.extend_from_slice(s);
        out.extend(s.iter().map(|v| v + 1e-6 * rng.range(-1.0, 1.0)));
    }
    out
}

fn l96_statistics_and_growth(kp: &Kernpack) {
    let p = Lorenz96Params::default();
    let members = 16;
    let spun = kp
        .lorenz96(&p, &l96_states(p.n, members, &mut Rng(21)), 2000, 0)
        .unwrap();
    let run = kp.lorenz96(&p, &spun.final_state, 20_000, 10).unwrap();
    let (mean, std) = stats(run.trajectory.as_ref().unwrap().iter().copied());
    assert!(
        (mean - 2.34).abs() < 0.1 && (std - 3.64).abs() < 0.1,
        "L96 mean {mean} std {std}"
    );
    let pairs = twins(&spun.final_state[..8 * p.n], p.n, &mut Rng(22));
    let twin = kp.lorenz96(&p, &pairs, 400, 1).unwrap();
    let doubling = doubling_time(twin.trajectory.as_ref().unwrap(), 16, p.n, p.dt, 1e-5, 1e-2);
    // Leading exponent ~1.69: doubling ~0.41; a pair average over 0.5 decades
    // of a finite run is looser than the asymptotic value.
    assert!(
        (0.25..0.7).contains(&doubling),
        "L96 doubling time {doubling}"
    );
}

#[test]
fn cpu_lorenz96_statistics_and_error_growth() {
    l96_statistics_and_growth(&Kernpack::new(Backend::Cpu).unwrap());
}

/// Model III with DART defaults: statistics over 40 members x 20 time units
/// after 10 of spin-up, and the doubling time of 16 twin pairs. Minutes on
/// the CPU reference, so it runs there only on request; the GPU test below runs it always.
fn l05_statistics_and_growth(kp: &Kernpack) {
    let p = Lorenz05Params::default();
    let members = 40;
    let spun = kp
        .lorenz05(&p, &l05_states(&p, members, &mut Rng(31)), 10_000, 0)
        .unwrap();
    let run = kp.lorenz05(&p, &spun.final_state, 20_000, 200).unwrap();
    let traj = run.trajectory.unwrap();
    let (zm, zs) = stats(traj.iter().copied());
    let (_, _, w) = model3_weights(p.j);
    let x = kp.window_sum(&traj, &w, traj.len() / p.n, p.n).unwrap();
    let (ym, ys) = stats(traj.iter().zip(&x).map(|(z, x)| z - x));
    assert!(
        (zm - 2.80).abs() < 0.1 && (zs - 4.37).abs() < 0.1,
        "Z mean {zm} std {zs}"
    );
    assert!(
        ym.abs() < 0.1 && (ys - 0.22).abs() < 0.1,
        "Y mean {ym} std {ys}"
    );
    let pairs = twins(&spun.final_state[..16 * p.n], p.n, &mut Rng(32));
    let twin = kp.lorenz05(&p, &pairs, 10_000, 100).unwrap();
    // The RMS separation (pair log-mean) of these twins on the CPU reference:
    // 1e-6 at t = 0, 1e-3 at 0.5, 1e-1 at 0.9 (the small scales, doubling
    // every ~0.06), 0.3 at 1.2, 1.5 at 2.8, 3 at 5, saturating near
    // sqrt(2) std(Z) ~ 6 by t ~ 15. MODELS.md's doubling time of ~0.6-0.7 is
    // that of the large-scale phase between the two: from 0.3 to 1.5 (5% to
    // 25% of saturation) it measured 0.69 there, and 0.65 on 16 other pairs
    // (Rng 41/42); from 0.1 to 2: 0.63 on both. Below 0.1 the small scales,
    // above 2 the saturation bias it. The band allows the
    // frame spacing (0.1 per crossing: +-0.09), the spread between sets of
    // 16 pairs, and the GPU's own realisation (its trajectories part from the
    // CPU's during the spin-up); the small-scale phase (0.06-0.2) fails it.
    let doubling = doubling_time(twin.trajectory.as_ref().unwrap(), 32, p.n, 0.1, 0.3, 1.5);
    assert!(
        (0.4..1.1).contains(&doubling),
        "Model III doubling time {doubling}"
    );
}

#[test]
#[ignore = "minutes on the CPU; the GPU test gpu_lorenz05_statistics_and_error_growth runs it"]
fn cpu_lorenz05_statistics_and_error_growth() {
    l05_statistics_and_growth(&Kernpack::new(Backend::Cpu).unwrap());
}

#[test]
fn gpu_lorenz05_statistics_and_error_growth() {
    if let Some(gpu) = gpu_or_skip("gpu_lorenz05_statistics_and_error_growth") {
        l05_statistics_and_growth(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
    }
}

#[test]
fn gpu_lorenz96_statistics_and_error_growth() {
    if let Some(gpu) = gpu_or_skip("gpu_lorenz96_statistics_and_error_growth") {
        l96_statistics_and_growth(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
    }
}

// ---------------------------------------------------------------------------
// GPU against the CPU reference.

/// f64: the same operations in the same order, the GPU fusing a*b+c: ~1e-16
/// per operation, grown by < 10 steps of chaos: 1e-12 relative to max |Z|.
/// f32 (fast-math, f32 arithmetic vs the f64 reference): each step rounds the
/// state to 2^-24 relative (~6e-8) and the tendency sums ~60 f32 products, so
/// after <= 10 steps the error is < 20 * 6e-8 max|Z| * (1 + growth); 2e-5 leaves margin.
fn tolerance<T: Float>() -> f64 {
    if T::NAME == "f64" {
        1e-12
    } else {
        2e-5
    }
}

/// [`tolerance`] for a run with noise `noise`: the f32 kernels make their
/// normals in single precision from 24-bit uniforms (the reference: 53-bit,
/// f64). A draw whose first uniform u is small moves by about
/// `2^-24 / u / (2 sqrt(-2 ln u))` of a standard normal: ~1e-3 at u = 1e-4,
/// and, for the u ~ 1e-6 that one case in a few of 10^4-10^5 draws meets, a
/// few percent, i.e. ~5e-3 of the state after the noise's scale s sqrt(dt)
/// ~ 0.2 and a few steps of growth. Seen on an H200: 2.7e-5 after 6 steps,
/// 6.2e-4 after 10 (N = 36, 172 members, s = 0.85; 2026-11-29); so 5e-3 for
/// f32. The draws' words are the same; f64 is unchanged.
fn tolerance_with_noise<T: Float>(noise: f64) -> f64 {
    if T::NAME == "f32" && noise > 0.0 {
        5e-3
    } else {
        tolerance::<T>()
    }
}

fn poisoned<T: Float>(gpu: &Gpu, len: usize) -> CudaSlice<T> {
    gpu.stream()
        .clone_htod(&vec![T::from_f64(f64::NAN); len.max(1)])
        .unwrap()
}

/// The steps of 0..=steps whose bit of `mask` is set (bit s % 64): a
/// sorted, unique save_at list (empty for some masks).
fn save_at_from(mask: u64, steps: u64) -> Vec<u64> {
    (0..=steps).filter(|s| mask >> (s % 64) & 1 == 1).collect()
}

/// Frames of a run: every `every` steps, or at the steps of a save_at list.
type Frames<'a> = (u64, &'a [u64]);

/// The device entry point on NaN-poisoned outputs against the reference.
/// One device run on NaN-poisoned outputs (final states and, with every > 0
/// or a save_at list, the trajectory) against the reference run `want`.
fn check_device<T: Float>(
    gpu: &Gpu,
    (what, tol): (&str, f64),
    z: &[f64],
    steps: u64,
    (every, save_at): Frames<'_>,
    want: reference::EnsembleRun,
    launch: impl FnOnce(
        &CudaSlice<T>,
        &mut CudaSlice<T>,
        Option<&mut CudaSlice<T>>,
    ) -> kernpack::Result<()>,
) -> Result<(), TestCaseError> {
    let stream = gpu.stream();
    let d_in = stream.clone_htod(&cast::<T>(z)).unwrap();
    let mut out = poisoned::<T>(gpu, z.len());
    let frames = match save_at.len() {
        0 => frame_count(steps, every),
        listed => listed,
    };
    let mut traj = (frames > 0).then(|| poisoned::<T>(gpu, frames * z.len()));
    launch(&d_in, &mut out, traj.as_mut()).unwrap();
    let got = f64s(&stream.clone_dtoh(&out).unwrap());
    let err = scaled_max_error(&got, &want.final_state);
    prop_assert!(err <= tol, "{what} steps {steps}: final error {err}");
    if let Some(traj) = traj {
        let got = f64s(&stream.clone_dtoh(&traj).unwrap());
        let err = scaled_max_error(&got, want.trajectory.as_ref().unwrap());
        prop_assert!(
            err <= tol,
            "{what} save_at {save_at:?}: trajectory error {err}"
        );
    }
    Ok(())
}

/// `sites_per_thread`: None lets the library pick the kernel, Some(1) forces
/// the generic one, Some(2 | 4) a specialised one (DART's K and J only).
fn check_l05<T: Float>(
    gpu: &Gpu,
    p: &Lorenz05Params,
    z: &[f64],
    steps: u64,
    (every, save_at): Frames<'_>,
    sites_per_thread: Option<usize>,
) -> Result<(), TestCaseError> {
    let want = match save_at.is_empty() {
        true => reference::lorenz05(p, z, steps, every, None),
        false => reference::lorenz05_save_at(p, z, steps, save_at),
    };
    check_device::<T>(
        gpu,
        (
            &format!("{p:?} sites_per_thread {sites_per_thread:?}"),
            tolerance::<T>(),
        ),
        z,
        steps,
        (every, save_at),
        want,
        |d_in, out, traj| {
            let call = Lorenz05OnDevice {
                sites_per_thread,
                save_at: save_at.to_vec(),
                ..Lorenz05OnDevice::new(*p, steps, every)
            };
            gpu.enqueue_buffers(Lorenz05OnDevice::buffers(
                gpu.stream(),
                &call,
                d_in,
                out,
                traj,
            )?)
        },
    )
}

fn check_l96<T: Float>(
    gpu: &Gpu,
    p: &Lorenz96Params,
    z: &[f64],
    steps: u64,
    (every, save_at): Frames<'_>,
    mpb: Option<usize>,
) -> Result<(), TestCaseError> {
    let want = match save_at.is_empty() {
        true => reference::lorenz96(p, z, steps, every, None),
        false => reference::lorenz96_save_at(p, z, (0, steps), save_at),
    };
    check_device::<T>(
        gpu,
        (
            &format!("{p:?} mpb {mpb:?}"),
            tolerance_with_noise::<T>(p.noise),
        ),
        z,
        steps,
        (every, save_at),
        want,
        |d_in, out, traj| {
            let call = Lorenz96OnDevice {
                members_per_block: mpb,
                save_at: save_at.to_vec(),
                ..Lorenz96OnDevice::new(*p, steps, every)
            };
            gpu.enqueue_buffers(Lorenz96OnDevice::buffers(
                gpu.stream(),
                &call,
                d_in,
                out,
                traj,
            )?)
        },
    )
}

/// `mask`: frames at the steps [`save_at_from`] picks instead of every `every`.
fn l05_case<T: Float>(
    seed: u64,
    model3: bool,
    members: usize,
    steps: u64,
    every: u64,
    mask: Option<u64>,
) -> Result<(), TestCaseError> {
    let Some(gpu) = gpu_or_skip("gpu_lorenz05_matches_reference") else {
        return Ok(());
    };
    let mut rng = Rng(seed);
    let model = if model3 {
        Lorenz05Model::III
    } else {
        Lorenz05Model::II
    };
    // One case in 5 has DART's K and J, which the specialised kernels cover
    // (Model III; N drawn around the default, up to their 1024-site limit,
    // also N not a multiple of the sites per thread, to exercise partly
    // filled threads); the others small random K, J, N: the generic kernel.
    let p = if seed % 5 == 0 {
        Lorenz05Params {
            model,
            n: [960, 1024, 65, 66, 301, 999][(seed / 5 % 6) as usize],
            ..Default::default()
        }
    } else {
        small_l05(&mut rng, model)
    };
    let z = l05_states(&p, members, &mut rng);
    let sites = if p.has_fixed_kernel() {
        [None, Some(1), Some(2), Some(4)][(seed / 30 % 4) as usize]
    } else {
        None
    };
    let save_at = mask.map_or_else(Vec::new, |m| save_at_from(m, steps));
    let every = if mask.is_some() { 0 } else { every.min(steps) };
    check_l05::<T>(&gpu, &p, &z, steps, (every, &save_at), sites)
}

/// `mask`: frames at the steps [`save_at_from`] picks instead of every `every`.
fn l96_case<T: Float>(
    seed: u64,
    n: usize,
    members: usize,
    steps: u64,
    (every, mask): (u64, Option<u64>),
    mpb: usize,
) -> Result<(), TestCaseError> {
    let Some(gpu) = gpu_or_skip("gpu_lorenz96_matches_reference") else {
        return Ok(());
    };
    let mut rng = Rng(seed);
    // One case in three carries the forcing in the state (per member and
    // site), one in two adds noise (GPU and reference draw the same normals:
    // f64 to ~1 ulp; f32 from 24-bit uniforms and fast-math log and cos,
    // ~1e-6 of W, inside the f32 tolerance).
    let p = Lorenz96Params {
        n,
        forcing: rng.range(4.0, 12.0),
        forcing_in_state: seed % 3 == 0,
        noise: if seed % 2 == 0 {
            rng.range(0.0, 1.0)
        } else {
            0.0
        },
        seed: seed.rotate_left(9),
        ..Default::default()
    };
    let mut z = Vec::new();
    for member in l96_states(n, members, &mut rng).chunks(n) {
        z.extend_from_slice(member);
        if p.forcing_in_state {
            z.extend((0..n).map(|_| rng.range(4.0, 12.0)));
        }
    }
    // mpb 0: let the library choose; else a valid explicit packing.
    let mpb = (mpb > 0).then(|| mpb.min(kernpack::api::lorenz::L96_CAPACITY / n).max(1));
    let save_at = mask.map_or_else(Vec::new, |m| save_at_from(m, steps));
    let every = if mask.is_some() { 0 } else { every.min(steps) };
    check_l96::<T>(&gpu, &p, &z, steps, (every, &save_at), mpb)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(16)))]
    #[test]
    fn gpu_lorenz05_f64(seed in any::<u64>(), model3 in any::<bool>(), members in 1usize..6, steps in 1u64..11, every in 0u64..4) {
        l05_case::<f64>(seed, model3, members, steps, every, None)?;
    }
    #[test]
    fn gpu_lorenz05_f32(seed in any::<u64>(), model3 in any::<bool>(), members in 1usize..6, steps in 1u64..11, every in 0u64..4) {
        l05_case::<f32>(seed, model3, members, steps, every, None)?;
    }
    #[test]
    fn gpu_lorenz96_f64(seed in any::<u64>(), n in 4usize..300, members in 1usize..200, steps in 1u64..11, every in 0u64..4, mpb in 0usize..60) {
        l96_case::<f64>(seed, n, members, steps, (every, None), mpb)?;
    }
    #[test]
    fn gpu_lorenz96_f32(seed in any::<u64>(), n in 4usize..300, members in 1usize..200, steps in 1u64..11, every in 0u64..4, mpb in 0usize..60) {
        l96_case::<f32>(seed, n, members, steps, (every, None), mpb)?;
    }
    /// N = lanes x sites, the layouts of the lane kernels (csrc/lorenz.cu's
    /// `KP_LORENZ96_LANES_ALL`), library's choice of kernel: members not a
    /// multiple of the members per warp leave lanes idle.
    #[test]
    fn gpu_lorenz96_lanes(seed in any::<u64>(), lanes_log2 in 0u32..6, sites in prop::sample::select(vec![2usize, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16]), members in 1usize..200, steps in 1u64..11, every in 0u64..4, f32_case in any::<bool>()) {
        // N >= 4 (the model's minimum): 2 and 3 sites on one lane are not models.
        let n = ((1usize << lanes_log2) * sites).max(4);
        if f32_case {
            l96_case::<f32>(seed, n, members, steps, (every, None), 0)?;
        } else {
            l96_case::<f64>(seed, n, members, steps, (every, None), 0)?;
        }
    }
    /// States at a list of steps (the run in segments; noisy in one case in
    /// two), on every kernel: NaN-poisoned outputs against the reference.
    #[test]
    fn gpu_lorenz96_save_at(seed in any::<u64>(), n in 4usize..300, members in 1usize..200, steps in 0u64..13, mask in any::<u64>(), mpb in 0usize..60, f32_case in any::<bool>()) {
        // mpb odd: the lane kernel where N fits one, else the block kernel.
        let n = if mpb % 2 == 1 { [40, 8, 64, 36][mpb % 4] } else { n };
        if f32_case {
            l96_case::<f32>(seed, n, members, steps, (0, Some(mask)), mpb)?;
        } else {
            l96_case::<f64>(seed, n, members, steps, (0, Some(mask)), mpb)?;
        }
    }
    #[test]
    fn gpu_lorenz05_save_at(seed in any::<u64>(), model3 in any::<bool>(), members in 1usize..6, steps in 0u64..11, mask in any::<u64>(), f32_case in any::<bool>()) {
        if f32_case {
            l05_case::<f32>(seed, model3, members, steps, 0, Some(mask))?;
        } else {
            l05_case::<f64>(seed, model3, members, steps, 0, Some(mask))?;
        }
    }
    #[test]
    fn gpu_window_sum_matches_reference(seed in any::<u64>(), rows in 1usize..20, n in 1usize..500, half in 0usize..40, pad in 0usize..5, f32_case in any::<bool>()) {
        let Some(gpu) = gpu_or_skip("gpu_window_sum_matches_reference") else { return Ok(()) };
        let mut rng = Rng(seed);
        let pitch = n + pad;
        let x: Vec<f64> = (0..rows * pitch).map(|_| rng.range(-2.0, 2.0)).collect();
        let w: Vec<f64> = (0..2 * half + 1).map(|_| rng.range(-1.0, 1.0)).collect();
        // Sums of 2J+1 products of size <= 2: f64 ~(2J+1) eps, f32 (2J+1) 2^-24 relative to sum |w x|.
        if f32_case { window_case::<f32>(&gpu, &x, &w, rows, n, pitch, 1e-5)?; } else { window_case::<f64>(&gpu, &x, &w, rows, n, pitch, 1e-13)?; }
    }
}

fn window_case<T: Float>(
    gpu: &Gpu,
    x: &[f64],
    w: &[f64],
    rows: usize,
    n: usize,
    pitch: usize,
    tol: f64,
) -> Result<(), TestCaseError> {
    let (x, w): (Vec<T>, Vec<T>) = (cast(x), cast(w));
    let mut want = vec![T::from_f64(f64::NAN); x.len()];
    reference::window_sum(&x, &w, rows, n, pitch, &mut want);
    let stream = gpu.stream();
    let (dx, dw) = (
        stream.clone_htod(&x).unwrap(),
        stream.clone_htod(&w).unwrap(),
    );
    let mut out = poisoned::<T>(gpu, x.len());
    gpu.enqueue_buffers(
        WindowSumOnDevice::buffers(stream, &dx, &dw, &mut out, rows, n, pitch).unwrap(),
    )
    .unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    let wsum: f64 = w.iter().map(|v| v.to_f64().abs()).sum::<f64>() * 2.0;
    for r in 0..rows {
        for i in 0..n {
            let (g, e) = (got[r * pitch + i].to_f64(), want[r * pitch + i].to_f64());
            prop_assert!(
                (g - e).abs() <= tol * wsum.max(1e-30),
                "row {r} site {i}: {g} vs {e}"
            );
        }
        // The padding between rows is not written.
        for i in n..pitch.min(x.len() - r * pitch) {
            prop_assert!(got[r * pitch + i].to_f64().is_nan(), "padding written");
        }
    }
    Ok(())
}

#[test]
fn gpu_rest_state_stays_at_f_and_dart_defaults_match() {
    let Some(gpu) = gpu_or_skip("gpu_rest_state_stays_at_f_and_dart_defaults_match") else {
        return;
    };
    let p = Lorenz05Params::default();
    let rest = vec![p.forcing; 2 * p.n];
    let run = Kernpack::from(gpu.clone())
        .lorenz05(&p, &rest, 10, 0)
        .unwrap();
    let drift = run
        .final_state
        .iter()
        .fold(0.0f64, |m, v| m.max((v - p.forcing).abs()));
    assert!(drift < 1e-10, "dZ = 0 at Z == F, yet Z moved by {drift}");
    // DART's defaults, 40 members x 10 steps, in one launch, f64 and f32,
    // on every kernel: the one picked (specialised), the generic one, and
    // both specialised block shapes. More members than blocks resident at
    // once (1000) on the default kernel: blocks take members in turn.
    let mut rng = Rng(41);
    let z = l05_states(&p, 40, &mut rng);
    for sites in [None, Some(1), Some(2), Some(4)] {
        check_l05::<f64>(&gpu, &p, &z, 10, (5, &[]), sites).unwrap();
        check_l05::<f32>(&gpu, &p, &z, 10, (0, &[]), sites).unwrap();
    }
    let many = l05_states(&p, 1000, &mut rng);
    check_l05::<f64>(&gpu, &p, &many, 3, (0, &[]), None).unwrap();
    // Off the specialisation: Model II, and Model III with J = 10 or K = 30.
    let p2 = Lorenz05Params {
        model: Lorenz05Model::II,
        ..p
    };
    check_l05::<f64>(&gpu, &p2, &z, 10, (0, &[]), None).unwrap();
    for off in [Lorenz05Params { j: 10, ..p }, Lorenz05Params { k: 30, ..p }] {
        assert!(!off.has_fixed_kernel());
        check_l05::<f64>(&gpu, &off, &z, 10, (0, &[]), None).unwrap();
    }
    // N above the specialised kernels' 1024 sites: the generic kernel.
    let wide = Lorenz05Params { n: 1500, ..p };
    assert!(!wide.has_fixed_kernel());
    check_l05::<f64>(
        &gpu,
        &wide,
        &l05_states(&wide, 3, &mut rng),
        10,
        (0, &[]),
        None,
    )
    .unwrap();
    // Lorenz 96, many members packed per block, defaults.
    let p96 = Lorenz96Params::default();
    let z96 = l96_states(p96.n, 1000, &mut rng);
    check_l96::<f64>(&gpu, &p96, &z96, 10, (2, &[]), None).unwrap();
    check_l96::<f64>(&gpu, &p96, &z96, 10, (0, &[]), Some(1)).unwrap();
    check_l96::<f32>(&gpu, &p96, &z96, 10, (0, &[]), None).unwrap();
}

#[test]
fn gpu_rejects_bad_buffers_and_sizes() {
    let Some(gpu) = gpu_or_skip("gpu_rejects_bad_buffers_and_sizes") else {
        return;
    };
    let stream = gpu.stream();
    let p = Lorenz05Params::default();
    let z = stream
        .clone_htod(&dart_initial_state(p.n, p.forcing))
        .unwrap();
    let mut short = poisoned::<f64>(&gpu, p.n - 1);
    // The run of `call` on `z` into `out`, as the device path takes it.
    let l05 = |call: Lorenz05OnDevice<f64>, out: &mut CudaSlice<f64>| {
        gpu.enqueue_buffers(Lorenz05OnDevice::buffers(stream, &call, &z, out, None)?)
    };
    let err = l05(Lorenz05OnDevice::new(p, 1, 0), &mut short).unwrap_err();
    assert!(err.to_string().contains("out holds"), "{err}");
    let mut out = poisoned::<f64>(&gpu, p.n);
    let err = l05(Lorenz05OnDevice::new(p, 4, 2), &mut out).unwrap_err();
    assert!(err.to_string().contains("trajectory buffer"), "{err}");
    // A specialised kernel asked for where none covers the parameters.
    let mut out2 = poisoned::<f64>(&gpu, p.n);
    let off = Lorenz05Params { j: 11, ..p };
    let spt = |p, sites| Lorenz05OnDevice {
        sites_per_thread: Some(sites),
        ..Lorenz05OnDevice::new(p, 1, 0)
    };
    let err = l05(spt(off, 4), &mut out2).unwrap_err();
    assert!(err.to_string().contains("specialised"), "{err}");
    let err = l05(spt(p, 3), &mut out2).unwrap_err();
    assert!(err.to_string().contains("sites_per_thread = 3"), "{err}");
    assert!(
        stream.clone_dtoh(&out2).unwrap().iter().all(|v| v.is_nan()),
        "output written on failure"
    );
    // More shared memory than any GPU has: a clear error, not a launch failure.
    let huge = Lorenz05Params { n: 100_000, ..p };
    let zh = dart_initial_state(huge.n, 15.0);
    let err = Kernpack::from(gpu.clone())
        .lorenz05(&huge, &zh, 1, 0)
        .unwrap_err();
    assert!(err.to_string().contains("shared memory"), "{err}");
    let err = Kernpack::from(gpu.clone())
        .lorenz96(
            &Lorenz96Params {
                n: 5000,
                ..Default::default()
            },
            &vec![1.0; 5000],
            1,
            0,
        )
        .unwrap_err();
    assert!(err.to_string().contains("at most"), "{err}");
    assert!(
        stream.clone_dtoh(&out).unwrap().iter().all(|v| v.is_nan()),
        "output written on failure"
    );
}

// ---- the tangent linear model ----

/// Perturbations: K random unit-scale vectors per member.
fn tangent_case(
    seed: u64,
    n: usize,
    members: usize,
    k: usize,
) -> (Lorenz96Params, Vec<f64>, Vec<f64>) {
    let mut rng = Rng(seed);
    let p = Lorenz96Params {
        n,
        forcing: rng.range(4.0, 12.0),
        noise: if seed % 2 == 0 {
            rng.range(0.0, 0.5)
        } else {
            0.0
        },
        seed: seed.rotate_left(3),
        ..Default::default()
    };
    let z = l96_states(n, members, &mut rng);
    let v = (0..members * k * n).map(|_| rng.range(-1.0, 1.0)).collect();
    (p, z, v)
}

fn check_tangent<T: Float>(
    kp: &Kernpack,
    seed: u64,
    n: usize,
    members: usize,
    k: usize,
    steps: u64,
) -> Result<(), TestCaseError> {
    let (p, z, v) = tangent_case(seed, n, members, k);
    let (want_x, want_v) = reference::lorenz96_tangent(&p, &z, &v, steps);
    let got = kp
        .lorenz96_tangent(&p, &cast::<T>(&z), &cast::<T>(&v), steps)
        .unwrap();
    let ex = scaled_max_error(&f64s(&got.final_state), &want_x);
    let ev = scaled_max_error(&f64s(&got.perturbations), &want_v);
    // As the ensemble runs' tolerance; the perturbations grow like the
    // states' differences (the same Lyapunov growth over < 10 steps).
    prop_assert!(
        ex <= tolerance_with_noise::<T>(p.noise) && ev <= tolerance_with_noise::<T>(p.noise),
        "{p:?} k {k} steps {steps}: state error {ex}, tangent error {ev}"
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(16)))]
    #[test]
    fn cpu_lorenz96_tangent_matches_reference(seed in any::<u64>(), n in 4usize..60, members in 1usize..6, k in 1usize..5, steps in 0u64..11, f32_case in any::<bool>()) {
        let kp = Kernpack::new(Backend::Cpu).unwrap();
        if f32_case {
            check_tangent::<f32>(&kp, seed, n, members, k, steps)?;
        } else {
            check_tangent::<f64>(&kp, seed, n, members, k, steps)?;
        }
    }
    #[test]
    fn gpu_lorenz96_tangent_matches_reference(seed in any::<u64>(), lanes_log2 in 0u32..6, sites in prop::sample::select(vec![2usize, 3, 4, 5, 6, 7, 8, 9, 10, 12, 16]), members in 1usize..40, k in 1usize..5, steps in 0u64..11, f32_case in any::<bool>()) {
        let Some(gpu) = gpu_or_skip("gpu_lorenz96_tangent_matches_reference") else { return Ok(()) };
        let kp = Kernpack::with_gpu(gpu.ordinal()).unwrap();
        let n = ((1usize << lanes_log2) * sites).max(4);
        if f32_case {
            check_tangent::<f32>(&kp, seed, n, members, k, steps)?;
        } else {
            check_tangent::<f64>(&kp, seed, n, members, k, steps)?;
        }
    }
}

/// The tangent is the run's derivative: central differences of the run
/// along each perturbation approach it with error O(eps^2), so halving eps
/// divides the error by ~4 (until rounding, ~1e-16 / eps, takes over: eps
/// stays >= 1e-4 here).
fn tangent_is_the_derivative(kp: &Kernpack) {
    let (p, z, v) = tangent_case(7, 40, 2, 3);
    let p = Lorenz96Params { noise: 0.0, ..p };
    let steps = 20;
    let tangent = kp
        .lorenz96_tangent(&p, &z, &v, steps)
        .unwrap()
        .perturbations;
    let central = |eps: f64| -> Vec<f64> {
        let mut out = Vec::new();
        for m in 0..2 {
            for j in 0..3 {
                let dir = &v[(m * 3 + j) * 40..(m * 3 + j + 1) * 40];
                let x = &z[m * 40..(m + 1) * 40];
                let shift =
                    |s: f64| -> Vec<f64> { x.iter().zip(dir).map(|(a, b)| a + s * b).collect() };
                let plus = kp.lorenz96(&p, &shift(eps), steps, 0).unwrap().final_state;
                let minus = kp.lorenz96(&p, &shift(-eps), steps, 0).unwrap().final_state;
                out.extend(plus.iter().zip(&minus).map(|(a, b)| (a - b) / (2.0 * eps)));
            }
        }
        out
    };
    let errors: Vec<f64> = [4e-3, 2e-3, 1e-3]
        .iter()
        .map(|&eps| scaled_max_error(&central(eps), &tangent))
        .collect();
    assert!(
        errors[2] < 1e-4,
        "central differences far from the tangent: {errors:?}"
    );
    for w in errors.windows(2) {
        let ratio = w[0] / w[1];
        assert!(
            (3.0..5.0).contains(&ratio),
            "not second order: errors {errors:?}"
        );
    }
}

#[test]
fn cpu_lorenz96_tangent_is_the_derivative() {
    tangent_is_the_derivative(&Kernpack::new(Backend::Cpu).unwrap());
}

#[test]
fn gpu_lorenz96_tangent_is_the_derivative() {
    if let Some(gpu) = gpu_or_skip("gpu_lorenz96_tangent_is_the_derivative") {
        tangent_is_the_derivative(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
    }
}

#[test]
fn lorenz96_tangent_refuses_bad_calls() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let p = Lorenz96Params::default();
    let z = vec![1.0; 80];
    let err =
        |v: &[f64], p: &Lorenz96Params| kp.lorenz96_tangent(p, &z, v, 3).unwrap_err().to_string();
    assert!(err(&[], &p).contains("perturbations"), "{}", err(&[], &p));
    assert!(
        err(&[1.0; 81], &p).contains("got 80 and 81"),
        "{}",
        err(&[1.0; 81], &p)
    );
    let forced = Lorenz96Params {
        forcing_in_state: true,
        ..p
    };
    assert!(err(&[1.0; 160], &forced).contains("forcing_in_state"));
    let mut v = vec![1.0; 160];
    v[17] = f64::NAN;
    assert!(
        err(&v, &p).contains("perturbation value 17"),
        "{}",
        err(&v, &p)
    );
}

/// A noisy Lorenz 96 run that saves states at chosen steps (cut into
/// segments, each drawing its noise from its first step's index in the
/// whole run) ends bitwise where the unsegmented run ends, and each frame is
/// bitwise the frame of the `every` run for the same step; Lorenz 2005 the
/// same (no noise, the segments alone).
fn save_at_is_the_run_in_pieces(kp: &Kernpack) {
    let mut rng = Rng(33);
    let p = Lorenz96Params {
        noise: 0.8,
        seed: 0x5eed,
        member_offset: 11,
        ..Default::default()
    };
    let members = 37;
    let z = l96_states(p.n, members, &mut rng);
    let (steps, every) = (60, 4);
    let save_at = [0, 4, 9, 24, 37, 60];
    let whole = kp.lorenz96(&p, &z, steps, every).unwrap();
    let listed = kp.lorenz96_save_at(&p, &z, steps, &save_at).unwrap();
    assert_eq!(listed.save_at, save_at);
    assert_eq!(listed.every, 0);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&listed.final_state),
        bits(&whole.final_state),
        "final states"
    );
    let (frames, regular) = (listed.trajectory.unwrap(), whole.trajectory.unwrap());
    let len = z.len();
    assert_eq!(frames.len(), save_at.len() * len);
    for (k, s) in save_at.iter().enumerate() {
        if s % every == 0 {
            let f = (s / every) as usize;
            assert_eq!(
                bits(&frames[k * len..][..len]),
                bits(&regular[f * len..][..len]),
                "frame of step {s}"
            );
        }
    }
    // Frames 2 and 4 (steps 9, 37) are not on the `every` grid: the
    // reference's run from the saved states before them.
    let want = reference::lorenz96_save_at(&p, &z, (0, steps), &save_at);
    let err = scaled_max_error(&frames, want.trajectory.as_ref().unwrap());
    assert!(err <= 1e-12, "frames against the reference: {err}");
    // A list that ends before the last step: the last segment runs to `out`.
    let early = kp.lorenz96_save_at(&p, &z, steps, &[1, 59]).unwrap();
    assert_eq!(bits(&early.final_state), bits(&whole.final_state));
    // An empty list: the final states only.
    let none = kp.lorenz96_save_at(&p, &z, steps, &[]).unwrap();
    assert_eq!(none.trajectory, None);
    assert_eq!(bits(&none.final_state), bits(&whole.final_state));

    let p = Lorenz05Params {
        n: 240,
        k: 8,
        j: 6,
        ..Default::default()
    };
    let z = l05_states(&p, 3, &mut rng);
    let whole = kp.lorenz05(&p, &z, 12, 3).unwrap();
    let listed = kp.lorenz05_save_at(&p, &z, 12, &[0, 3, 5, 12]).unwrap();
    assert_eq!(bits(&listed.final_state), bits(&whole.final_state));
    let (frames, regular) = (listed.trajectory.unwrap(), whole.trajectory.unwrap());
    let len = z.len();
    for (k, f) in [(0, 0), (1, 1), (3, 4)] {
        assert_eq!(
            bits(&frames[k * len..][..len]),
            bits(&regular[f * len..][..len])
        );
    }
}

#[test]
fn cpu_save_at_is_the_run_in_pieces() {
    save_at_is_the_run_in_pieces(&Kernpack::new(Backend::Cpu).unwrap());
}

#[test]
fn gpu_save_at_is_the_run_in_pieces() {
    if let Some(gpu) = gpu_or_skip("gpu_save_at_is_the_run_in_pieces") {
        save_at_is_the_run_in_pieces(&Kernpack::with_gpu(gpu.ordinal()).unwrap());
    }
}

/// A noisy run continued over calls, each passing the steps before it as
/// `step_offset`, is bitwise the run in one call, f64 and f32 (a random
/// seed and cut); without the offset the continuation draws other noise.
/// The tangent model's states follow the same draws (to rounding: its own
/// code path). An offset past 2^62 is refused.
fn step_offset_continues_the_noise(kp: &Kernpack, seed: u64) {
    let mut rng = Rng(seed);
    let p = Lorenz96Params {
        noise: 0.6,
        seed: seed.rotate_left(17),
        member_offset: seed % 50,
        dt: 0.01,
        ..Default::default()
    };
    let members = 19;
    let z = l96_states(p.n, members, &mut rng);
    let (steps, cut) = (30, 1 + seed % 29);
    let whole = kp.lorenz96(&p, &z, steps, 0).unwrap();
    let head = kp.lorenz96(&p, &z, cut, 0).unwrap();
    let on = Lorenz96Params {
        step_offset: cut,
        ..p
    };
    let tail = kp.lorenz96(&on, &head.final_state, steps - cut, 0).unwrap();
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&tail.final_state),
        bits(&whole.final_state),
        "cut at {cut}"
    );
    let restarted = kp.lorenz96(&p, &head.final_state, steps - cut, 0).unwrap();
    assert_ne!(bits(&restarted.final_state), bits(&whole.final_state));
    let z32: Vec<f32> = z.iter().map(|&v| v as f32).collect();
    let whole32 = kp.lorenz96(&p, &z32, steps, 0).unwrap();
    let head32 = kp.lorenz96(&p, &z32, cut, 0).unwrap();
    let tail32 = kp
        .lorenz96(&on, &head32.final_state, steps - cut, 0)
        .unwrap();
    assert_eq!(tail32.final_state, whole32.final_state, "f32, cut at {cut}");
    // The tangent (any N on the CPU; N = 40 runs on the GPU too).
    let ones = vec![1.0; z.len()];
    let tangent = kp
        .lorenz96_tangent(&on, &head.final_state, &ones, steps - cut)
        .unwrap();
    let err = scaled_max_error(&tangent.final_state, &whole.final_state);
    assert!(err <= 1e-12, "tangent states against the run: {err}");
    let far = Lorenz96Params {
        step_offset: (1 << 62) + 1,
        ..p
    };
    let msg = kp.lorenz96(&far, &z, 1, 0).unwrap_err().to_string();
    assert!(msg.contains("step_offset"), "{msg}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(8)))]

    #[test]
    fn cpu_step_offset_continues_the_noise(seed in any::<u64>()) {
        step_offset_continues_the_noise(&Kernpack::new(Backend::Cpu).unwrap(), seed);
    }

    #[test]
    fn gpu_step_offset_continues_the_noise(seed in any::<u64>()) {
        if let Some(gpu) = gpu_or_skip("gpu_step_offset_continues_the_noise") {
            step_offset_continues_the_noise(&Kernpack::with_gpu(gpu.ordinal()).unwrap(), seed);
        }
    }
}

/// Unsorted, repeated and late steps, and a list with `every`, are refused
/// with their reasons, on every backend alike (the one validation).
#[test]
fn bad_save_at_lists_are_refused() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let p = Lorenz96Params::default();
    let z = vec![1.0f64; p.n * 2];
    let msg =
        |r: kernpack::Result<kernpack::api::lorenz::Ensemble<f64>>| r.unwrap_err().to_string();
    assert!(msg(kp.lorenz96_save_at(&p, &z, 10, &[3, 2])).contains("sorted and unique"));
    assert!(msg(kp.lorenz96_save_at(&p, &z, 10, &[3, 3])).contains("sorted and unique"));
    assert!(msg(kp.lorenz96_save_at(&p, &z, 10, &[11])).contains("past the last step"));
    let p5 = Lorenz05Params::default();
    let z5 = vec![1.0f64; p5.n];
    assert!(msg(kp.lorenz05_save_at(&p5, &z5, 4, &[0, 5])).contains("past the last step"));
    let both = EnsembleRun {
        params: &p,
        each: Default::default(),
        initial: &z,
        steps: 10,
        every: 2,
        save_at: &[4],
    };
    assert!(msg(kp.run(both)).contains("not both"));
}
