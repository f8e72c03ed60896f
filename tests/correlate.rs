//! 1-D correlations and Gaussian filters: the CPU backend and the GPU kernels
//! against the reference on random shapes (1-D to 3-D), axes, weights,
//! origins and modes; bad calls refused with the output untouched.
//!
//! Tolerances: the reference sums each output in f64 in tap order; the CPU
//! backend sums in `T` in the same order (so in f64 it is the reference,
//! bitwise), the GPU fuses each product into its sum. A sum of L products
//! in `T` is off by at most about L eps_T sum_j |w_j x_j| (each addition
//! rounds once, on partial sums below that total), plus the final rounding
//! to `T`; each later pass adds its own such error on top of the previous
//! pass's, scaled by its weights' sum of magnitudes.
mod common;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::reference::correlate::correlate_passes;
use kernpack::{
    Backend, BoundaryMode, CorrelatePass, Float, GaussianFilterOptions, GaussianOptions, Kernpack,
};
use proptest::prelude::*;

const MODES: [BoundaryMode; 5] = [
    BoundaryMode::Reflect,
    BoundaryMode::Constant,
    BoundaryMode::Nearest,
    BoundaryMode::Mirror,
    BoundaryMode::Wrap,
];

/// A random array of `shape` in [-1, 1), never all zero.
fn random_array<T: Float>(shape: &[usize], rng: &mut Rng) -> Vec<T> {
    let n: usize = shape.iter().product();
    (0..n).map(|_| T::from_f64(rng.range(-1.0, 1.0))).collect()
}

fn random_pass(ndim: usize, max_taps: usize, rng: &mut Rng) -> CorrelatePass {
    let taps = 1 + (rng.next() * max_taps as f64) as usize;
    let n = taps as i64;
    let origin = -(n / 2) + (rng.next() * n as f64) as i64;
    CorrelatePass {
        axis: (rng.next() * ndim as f64) as usize,
        weights: (0..taps).map(|_| rng.range(-1.0, 1.0)).collect(),
        origin: origin.min((n - 1) / 2),
        mode: MODES[(rng.next() * 5.0) as usize],
        cval: rng.range(-2.0, 2.0),
    }
}

fn random_shape(rng: &mut Rng) -> Vec<usize> {
    let ndim = 1 + (rng.next() * 3.0) as usize;
    let max = [300.0, 40.0, 14.0][ndim - 1];
    (0..ndim).map(|_| 1 + (rng.next() * max) as usize).collect()
}

/// The error bound of the passes over `input` in `T` against the f64
/// reference (see the module docs), as one number for the whole array:
/// `scale` carries the largest |value| through each pass.
fn bound<T: Float>(input: &[T], passes: &[CorrelatePass]) -> f64 {
    let eps = if T::NAME == "f32" {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let mut scale = input.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs()));
    let mut err = 0.0;
    for p in passes {
        let norm: f64 = p.weights.iter().map(|w| w.abs()).sum();
        scale = scale.max(p.cval.abs()) * norm;
        err = err * norm + (p.weights.len() as f64 + 2.0) * eps * scale;
    }
    err + f64::MIN_POSITIVE
}

/// `got` against the reference of `passes` over `input`.
fn check<T: Float>(got: &[T], input: &[T], shape: &[usize], passes: &[CorrelatePass], what: &str) {
    let want = correlate_passes(input, shape, passes);
    let tol = bound(input, passes);
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let (g, w) = (g.to_f64(), w.to_f64());
        assert!(
            (g - w).abs() <= tol,
            "{what}: {} shape {shape:?} passes {passes:?}: [{i}] {g} vs {w} (tol {tol:e})",
            T::NAME
        );
    }
}

/// Random passes through the API into a poisoned output, against the reference.
fn check_random<T: Float>(kp: &Kernpack, seed: u64, max_taps: usize, what: &str) {
    let mut rng = Rng(seed);
    let shape = random_shape(&mut rng);
    let input = random_array::<T>(&shape, &mut rng);
    let npasses = 1 + (rng.next() * 3.0) as usize;
    let passes: Vec<CorrelatePass> = (0..npasses)
        .map(|_| random_pass(shape.len(), max_taps, &mut rng))
        .collect();
    let mut out = vec![T::from_f64(f64::NAN); input.len()];
    kp.correlate_passes_into(&input, &mut out, &shape, &passes)
        .unwrap();
    check(&out, &input, &shape, &passes, what);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn cpu_backend_matches_the_reference(seed in any::<u64>()) {
        let kp = Kernpack::new(Backend::Cpu).unwrap();
        check_random::<f32>(&kp, seed, 40, "cpu");
        check_random::<f64>(&kp, seed, 40, "cpu");
    }
}

/// In f64 the CPU backend sums in the reference's order: the same bits.
#[test]
fn cpu_backend_in_f64_is_the_reference() {
    let kp = Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(3)
        .unwrap();
    for seed in 0..40 {
        let mut rng = Rng(seed);
        let shape = random_shape(&mut rng);
        let input = random_array::<f64>(&shape, &mut rng);
        let passes: Vec<_> = (0..2)
            .map(|_| random_pass(shape.len(), 30, &mut rng))
            .collect();
        let got = kp.correlate_passes(&input, &shape, &passes).unwrap();
        assert_eq!(
            got,
            correlate_passes(&input, &shape, &passes),
            "seed {seed}"
        );
    }
}

#[test]
fn gpu_kernels_match_the_reference() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_the_reference") else {
        return;
    };
    let kp = Kernpack::from(gpu);
    for seed in 0..u64::from(proptest_cases(64)) {
        check_random::<f32>(&kp, seed, 40, "gpu");
        check_random::<f64>(&kp, seed, 40, "gpu");
    }
    // Longer than one launch's 256 taps: slices added to the output.
    for seed in 0..6 {
        check_random::<f32>(&kp, 1000 + seed, 700, "gpu, long filters");
        check_random::<f64>(&kp, 1000 + seed, 700, "gpu, long filters");
    }
}

/// Lines longer than one warp's span and many columns: every kernel path
/// (chunks, spans, edges) on images of a realistic size.
#[test]
fn gpu_large_images_match_the_cpu_backend() {
    let Some(gpu) = gpu_or_skip("gpu_large_images_match_the_cpu_backend") else {
        return;
    };
    let (kp, cpu) = (Kernpack::from(gpu), Kernpack::new(Backend::Cpu).unwrap());
    let mut rng = Rng(7);
    for shape in [vec![517, 1031], vec![3, 2050, 9], vec![70_001]] {
        let input = random_array::<f32>(&shape, &mut rng);
        for sigma in [0.8, 4.0, 13.0] {
            let opts = GaussianFilterOptions::isotropic(
                shape.len(),
                GaussianOptions {
                    sigma,
                    mode: MODES[(rng.next() * 5.0) as usize],
                    ..Default::default()
                },
            );
            let passes = opts.passes().unwrap();
            let got = kp.gaussian_filter(&input, &shape, &opts).unwrap();
            let want = cpu.gaussian_filter(&input, &shape, &opts).unwrap();
            let tol = 2.0 * bound(&input, &passes);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() as f64 <= tol,
                    "{shape:?} sigma {sigma} [{i}]: {g} vs {w}"
                );
            }
        }
    }
}

/// The Gaussian filter is its passes: one per axis with sigma above 1e-15,
/// in order; none left copies the input.
#[test]
fn gaussian_filter_is_its_passes() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let mut rng = Rng(3);
    let shape = [9, 31, 4];
    let input = random_array::<f64>(&shape, &mut rng);
    let per_axis = |sigma: f64, order: u32| GaussianOptions {
        sigma,
        order,
        mode: BoundaryMode::Mirror,
        ..Default::default()
    };
    let opts = GaussianFilterOptions {
        axes: vec![
            (2, per_axis(0.7, 1)),
            (0, per_axis(0.0, 0)),
            (1, per_axis(2.5, 2)),
        ],
    };
    let passes = vec![
        per_axis(0.7, 1).pass(2).unwrap(),
        per_axis(2.5, 2).pass(1).unwrap(),
    ];
    assert_eq!(opts.passes().unwrap(), passes);
    let got = kp.gaussian_filter(&input, &shape, &opts).unwrap();
    assert_eq!(got, correlate_passes(&input, &shape, &passes));
    let none = GaussianFilterOptions {
        axes: vec![(0, per_axis(0.0, 0))],
    };
    assert_eq!(kp.gaussian_filter(&input, &shape, &none).unwrap(), input);
}

/// Bad calls: an error naming the problem, the output untouched.
#[test]
fn bad_calls_are_refused_and_write_nothing() {
    let mut backends = vec![Kernpack::new(Backend::Cpu).unwrap()];
    if let Some(gpu) = gpu_or_skip("bad_calls_are_refused_and_write_nothing") {
        backends.push(Kernpack::from(gpu));
    }
    let shape = [4usize, 5];
    let input: Vec<f64> = (0..20).map(|i| i as f64 * 0.5 - 3.0).collect();
    let good = CorrelatePass {
        axis: 1,
        weights: vec![0.25, 0.5, 0.25],
        origin: 0,
        mode: BoundaryMode::Reflect,
        cval: 0.0,
    };
    let bad = [
        (
            CorrelatePass {
                axis: 2,
                ..good.clone()
            },
            "axis 2",
        ),
        (
            CorrelatePass {
                weights: vec![],
                ..good.clone()
            },
            "0 weights",
        ),
        (
            CorrelatePass {
                weights: vec![1.0, f64::NAN],
                ..good.clone()
            },
            "NaN",
        ),
        (
            CorrelatePass {
                origin: 2,
                ..good.clone()
            },
            "origin 2",
        ),
        (
            CorrelatePass {
                origin: -2,
                ..good.clone()
            },
            "origin -2",
        ),
        (
            CorrelatePass {
                mode: BoundaryMode::Interior,
                ..good.clone()
            },
            "interior",
        ),
    ];
    for kp in &backends {
        for (pass, needle) in &bad {
            let mut out = vec![7.0; 20];
            let err = kp
                .correlate_passes_into(&input, &mut out, &shape, &[good.clone(), pass.clone()])
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
            assert!(out.iter().all(|&v| v == 7.0), "{needle}: output written");
        }
        let mut short = vec![7.0; 19];
        let err = kp
            .correlate_passes_into(&input, &mut short, &shape, std::slice::from_ref(&good))
            .unwrap_err()
            .to_string();
        assert!(err.contains("19 values"), "{err}");
        assert!(short.iter().all(|&v| v == 7.0));
        for (opts, needle) in [
            (
                GaussianOptions {
                    sigma: -1.0,
                    ..Default::default()
                },
                "sigma",
            ),
            (
                GaussianOptions {
                    sigma: f64::NAN,
                    ..Default::default()
                },
                "sigma",
            ),
            (
                GaussianOptions {
                    order: 11,
                    ..Default::default()
                },
                "order",
            ),
            (
                GaussianOptions {
                    truncate: f64::INFINITY,
                    ..Default::default()
                },
                "truncate",
            ),
            (
                GaussianOptions {
                    radius: Some(1 << 40),
                    ..Default::default()
                },
                "radius",
            ),
        ] {
            let err = kp
                .gaussian_filter1d(&input, &shape, 0, &opts)
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{needle:?} not in {err:?}");
        }
    }
}

/// Empty arrays (a zero-length axis) filter to empty arrays on every backend.
#[test]
fn empty_arrays_are_valid() {
    let mut backends = vec![Kernpack::new(Backend::Cpu).unwrap()];
    if let Some(gpu) = gpu_or_skip("empty_arrays_are_valid") {
        backends.push(Kernpack::from(gpu));
    }
    for kp in &backends {
        let opts = GaussianFilterOptions::isotropic(2, GaussianOptions::default());
        let out = kp.gaussian_filter::<f32>(&[], &[0, 5], &opts).unwrap();
        assert!(out.is_empty());
    }
}
