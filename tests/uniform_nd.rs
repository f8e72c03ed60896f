//! The N-D box filter: the CPU backend and the GPU kernels (strided and
//! lines layouts) against the reference on random shapes (1-D to 4-D),
//! windows (past the array too), origins, a mode per axis, constants and
//! every element type. Integers exactly: their sums are exact and their
//! means truncate the same way everywhere. Floats within a bound on the
//! running sums' rounding (below), NaNs and infinities exactly where the
//! direct sum puts them.
mod common;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::params::rank::KeyKind;
use kernpack::params::uniform::BoxPass;
use kernpack::reference::uniform::uniform_filter_nd;
use kernpack::{Backend, BoundaryMode, BoxValue, Kernpack, RankValue, UniformNdOptions};
use proptest::prelude::*;

const MODES: [BoundaryMode; 5] = [
    BoundaryMode::Reflect,
    BoundaryMode::Constant,
    BoundaryMode::Nearest,
    BoundaryMode::Mirror,
    BoundaryMode::Wrap,
];

fn pick(rng: &mut Rng, n: usize) -> usize {
    ((rng.next() * n as f64) as usize).min(n - 1)
}

/// A random value of `T`: integers any bit pattern (the sums reach the
/// types' limits), floats in +-1000, a few of them NaN or infinite when
/// `special`.
fn random_value<T: BoxValue>(rng: &mut Rng, special: bool) -> T {
    let bits = 8 * std::mem::size_of::<T>() as u32;
    match T::KIND {
        KeyKind::Float => {
            let r = rng.next();
            let v = if special && r < 0.02 {
                [f64::NAN, f64::INFINITY, f64::NEG_INFINITY][pick(rng, 3)]
            } else {
                rng.range(-1000.0, 1000.0)
            };
            T::box_cval(v).expect("any float")
        }
        _ => {
            let hi = (rng.next() * 4294967296.0) as u64;
            let lo = (rng.next() * 4294967296.0) as u64;
            let k = (hi << 32) | lo;
            T::from_key(if bits == 64 {
                k
            } else {
                k & ((1u64 << bits) - 1)
            })
        }
    }
}

/// The largest |value| of the input and the constant, as f64.
fn magnitude<T: BoxValue>(input: &[T], cval: f64) -> f64 {
    input
        .iter()
        .map(|v| v.to_f64_lossy().abs())
        .filter(|v| v.is_finite())
        .fold(cval.abs(), f64::max)
}

trait Lossy {
    fn to_f64_lossy(self) -> f64;
}
impl<T: BoxValue> Lossy for T {
    fn to_f64_lossy(self) -> f64 {
        match (T::KIND, std::mem::size_of::<T>()) {
            (KeyKind::Float, 4) => f32::from_key(self.key()) as f64,
            (KeyKind::Float, _) => f64::from_key(self.key()),
            _ => 0.0,
        }
    }
}

/// How far a float output may be from the reference's: each pass rounds a
/// mean whose running sum is off by at most (3 size + 4 strip) eps64 M
/// (strip: the rows between re-seeds, at most max(512, 4 n)), then to `T`
/// (half an ulp of M, either way); later passes average the differences,
/// so they add up over the passes.
fn tolerance<T: BoxValue>(passes: &[BoxPass<T>], shape: &[usize], m: f64) -> f64 {
    let ulp = if std::mem::size_of::<T>() == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    passes
        .iter()
        .map(|p| {
            let strip = (4 * shape[p.axis]).max(512) as f64;
            (3.0 * p.size as f64 + 4.0 * strip) * f64::EPSILON * m + ulp * m
        })
        .sum()
}

fn check_same<T: BoxValue>(got: &[T], want: &[T], tol: f64, what: &str) {
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let ok = match T::KIND {
            KeyKind::Float => {
                let (g, w) = (g.to_f64_lossy(), w.to_f64_lossy());
                if w.is_finite() {
                    (g - w).abs() <= tol
                } else {
                    g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan())
                }
            }
            _ => g.bits() == w.bits(),
        };
        assert!(ok, "{what}: [{i}] {g:?} vs {w:?} (tolerance {tol:e})");
    }
}

fn check_random<T: BoxValue>(
    kp: &Kernpack,
    seed: u64,
    ndim: usize,
    max: usize,
    wmax: usize,
    what: &str,
) {
    let mut rng = Rng(seed);
    let shape: Vec<usize> = (0..ndim).map(|_| 1 + pick(&mut rng, max)).collect();
    check_shape::<T>(kp, &mut rng, &shape, wmax, what);
}

/// One random case of `shape`: values, windows up to `wmax`, origins,
/// modes and constant drawn from `rng`.
fn check_shape<T: BoxValue>(
    kp: &Kernpack,
    rng: &mut Rng,
    shape: &[usize],
    wmax: usize,
    what: &str,
) {
    let ndim = shape.len();
    let n: usize = shape.iter().product();
    let special = rng.next() < 0.3;
    let input: Vec<T> = (0..n).map(|_| random_value(rng, special)).collect();
    let size: Vec<usize> = (0..ndim).map(|_| 1 + pick(rng, wmax)).collect();
    let origin = size
        .iter()
        .map(|&s| -(s as i64 / 2) + pick(rng, s) as i64)
        .collect();
    let mode = (0..ndim).map(|_| MODES[pick(rng, 5)]).collect();
    let cval = match T::KIND {
        KeyKind::Float => rng.range(-50.0, 50.0),
        // An integer within every type's range.
        _ => pick(rng, 120) as f64,
    };
    let opts = UniformNdOptions {
        size,
        origin,
        mode,
        cval,
    };
    let what = format!("{what} {} shape {shape:?} {opts:?}", T::NAME);
    let mut out = vec![random_value::<T>(rng, false); n];
    kp.uniform_filter_nd_into(&input, &mut out, shape, &opts)
        .unwrap_or_else(|e| panic!("{what}: {e}"));
    let passes = opts.passes::<T>(ndim).unwrap();
    let want = uniform_filter_nd(&input, shape, &passes);
    let tol = tolerance(&passes, shape, magnitude(&input, cval));
    check_same(&out, &want, tol, &what);
}

fn check_all_types(kp: &Kernpack, seed: u64, ndim: usize, max: usize, wmax: usize, what: &str) {
    check_random::<u8>(kp, seed, ndim, max, wmax, what);
    check_random::<i8>(kp, seed, ndim, max, wmax, what);
    check_random::<u16>(kp, seed, ndim, max, wmax, what);
    check_random::<i16>(kp, seed, ndim, max, wmax, what);
    check_random::<u32>(kp, seed, ndim, max, wmax, what);
    check_random::<i32>(kp, seed, ndim, max, wmax, what);
    check_random::<u64>(kp, seed, ndim, max, wmax, what);
    check_random::<i64>(kp, seed, ndim, max, wmax, what);
    check_random::<f32>(kp, seed, ndim, max, wmax, what);
    check_random::<f64>(kp, seed, ndim, max, wmax, what);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn cpu_backend_matches_the_reference(seed in any::<u64>()) {
        let kp = Kernpack::new(Backend::Cpu).unwrap().with_cpu_threads(3).unwrap();
        let ndim = 1 + (seed % 4) as usize;
        let (max, wmax) = [(400, 60), (40, 25), (14, 9), (6, 5)][ndim - 1];
        check_all_types(&kp, seed, ndim, max, wmax, "cpu");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(6)))]

    /// Long contiguous lines: the CPU backend's pieces of work start inside
    /// lines and re-seed their sums along them, which the small shapes above
    /// never reach.
    #[test]
    fn cpu_backend_long_lines_match_the_reference(seed in any::<u64>()) {
        let kp = Kernpack::new(Backend::Cpu).unwrap().with_cpu_threads(3).unwrap();
        let mut rng = Rng(seed);
        let shape: &[usize] = [&[150_001][..], &[3, 70_001], &[2, 3, 30_011]][(seed % 3) as usize];
        check_shape::<u8>(&kp, &mut rng, shape, 90, "cpu long lines");
        check_shape::<i32>(&kp, &mut rng, shape, 90, "cpu long lines");
        check_shape::<f32>(&kp, &mut rng, shape, 90, "cpu long lines");
        check_shape::<f64>(&kp, &mut rng, shape, 90, "cpu long lines");
    }
}

#[test]
fn gpu_kernels_match_the_reference() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_the_reference") else {
        return;
    };
    let kp = Kernpack::from(gpu);
    for seed in 0..u64::from(proptest_cases(64)) {
        let ndim = 1 + (seed % 4) as usize;
        // 1-D windows past the lines kernel's limit and past the line too.
        let (max, wmax) = [(3000, 1500), (90, 40), (20, 9), (8, 5)][ndim - 1];
        check_all_types(&kp, seed, ndim, max, wmax, "gpu");
    }
}

/// Large arrays through both kernels, against the CPU backend, integers
/// bit for bit.
#[test]
fn gpu_large_arrays_match_the_cpu_backend() {
    let Some(gpu) = gpu_or_skip("gpu_large_arrays_match_the_cpu_backend") else {
        return;
    };
    let (kp, cpu) = (Kernpack::from(gpu), Kernpack::new(Backend::Cpu).unwrap());
    let mut rng = Rng(5);
    fn same<T: BoxValue>(
        kp: &Kernpack,
        cpu: &Kernpack,
        input: &[T],
        shape: &[usize],
        opts: &UniformNdOptions,
    ) {
        let got = kp.uniform_filter_nd(input, shape, opts).unwrap();
        let want = cpu.uniform_filter_nd(input, shape, opts).unwrap();
        let passes = opts.passes::<T>(shape.len()).unwrap();
        let tol = tolerance(&passes, shape, magnitude(input, opts.cval));
        check_same(
            &got,
            &want,
            2.0 * tol,
            &format!("{} {shape:?} {opts:?}", T::NAME),
        );
    }
    let shape3 = [37usize, 61, 131];
    let n3: usize = shape3.iter().product();
    let u8s: Vec<u8> = (0..n3).map(|_| random_value(&mut rng, false)).collect();
    let i64s: Vec<i64> = (0..n3).map(|_| random_value(&mut rng, false)).collect();
    let f32s: Vec<f32> = (0..n3).map(|_| random_value(&mut rng, true)).collect();
    for size in [3usize, 4, 11, 63] {
        for mode in MODES {
            let opts = UniformNdOptions {
                mode: vec![mode; 3],
                cval: 3.0,
                ..UniformNdOptions::new(&[size, size, size])
            };
            same(&kp, &cpu, &u8s, &shape3, &opts);
            same(&kp, &cpu, &i64s, &shape3, &opts);
            same(&kp, &cpu, &f32s, &shape3, &opts);
        }
    }
    let shape2 = [700usize, 1100];
    let f64s: Vec<f64> = (0..700 * 1100)
        .map(|_| random_value(&mut rng, false))
        .collect();
    let i16s: Vec<i16> = (0..700 * 1100)
        .map(|_| random_value(&mut rng, false))
        .collect();
    for size in [2usize, 9, 31, 2000] {
        let opts = UniformNdOptions::new(&[size, size + 1]);
        same(&kp, &cpu, &f64s, &shape2, &opts);
        same(&kp, &cpu, &i16s, &shape2, &opts);
    }
}

/// SciPy's integer results, worked by hand: per-axis means truncated toward
/// zero, the second pass reading the first's truncated values.
#[test]
fn integer_images_truncate_each_pass_as_scipy() {
    let mut backends = vec![Kernpack::new(Backend::Cpu).unwrap()];
    if let Some(gpu) = gpu_or_skip("integer_images_truncate_each_pass_as_scipy") {
        backends.push(Kernpack::from(gpu));
    }
    for kp in &backends {
        // 1-D, window 3, reflect: [5 5 5 5 5 5 5 5 5 5 1 2 3] as SciPy gives it.
        let x: [u8; 13] = [5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1, 2, 3];
        let got = kp
            .uniform_filter_nd(&x, &[13], &UniformNdOptions::new(&[3]))
            .unwrap();
        assert_eq!(got, [5, 5, 5, 5, 5, 5, 5, 5, 5, 3, 2, 2, 2]);
        // Negative means truncate toward zero; an even window reaches back.
        let y: [i16; 4] = [-5, 2, 3, -7];
        let got = kp
            .uniform_filter_nd(&y, &[4], &UniformNdOptions::new(&[2]))
            .unwrap();
        assert_eq!(got, [-5, -1, 2, -2]);
        // 2 x 3, sizes (2, 3), nearest: rows first, then columns of the
        // truncated row means.
        let z: [i32; 6] = [1, 2, 4, 8, 16, 33];
        let opts = UniformNdOptions {
            mode: vec![BoundaryMode::Nearest; 2],
            ..UniformNdOptions::new(&[2, 3])
        };
        let got = kp.uniform_filter_nd(&z, &[2, 3], &opts).unwrap();
        // Axis 0 (window rows i-1, i): [1 2 4; 4 9 18]; axis 1 over those.
        assert_eq!(got, [1, 2, 3, 5, 10, 15]);
        // 64-bit sums do not overflow.
        let w = [i64::MAX, i64::MAX, i64::MAX - 2];
        let got = kp
            .uniform_filter_nd(&w, &[3], &UniformNdOptions::new(&[3]))
            .unwrap();
        assert_eq!(got, [i64::MAX, i64::MAX - 1, i64::MAX - 2]);
        let u = [u64::MAX, 1, u64::MAX];
        let got = kp
            .uniform_filter_nd(&u, &[3], &UniformNdOptions::new(&[3]))
            .unwrap();
        assert_eq!(got, [u64::MAX / 3 * 2; 3]);
    }
}

/// Bad calls: an error naming the problem, the output untouched.
#[test]
fn bad_calls_are_refused_and_write_nothing() {
    let mut backends = vec![Kernpack::new(Backend::Cpu).unwrap()];
    if let Some(gpu) = gpu_or_skip("bad_calls_are_refused_and_write_nothing") {
        backends.push(Kernpack::from(gpu));
    }
    let shape = [4usize, 5];
    let input: Vec<u8> = (0..20).map(|i| (i * 7 % 20) as u8).collect();
    let good = UniformNdOptions::new(&[3, 3]);
    let bad = [
        (UniformNdOptions::new(&[3]), "give one per axis"),
        (
            UniformNdOptions {
                origin: vec![2, 0],
                ..good.clone()
            },
            "origin 2",
        ),
        (UniformNdOptions::new(&[3, 0]), "size 0"),
        (
            UniformNdOptions {
                mode: vec![BoundaryMode::Reflect, BoundaryMode::Interior],
                ..good.clone()
            },
            "interior",
        ),
        (
            UniformNdOptions {
                cval: 0.5,
                ..good.clone()
            },
            "cval",
        ),
        (
            UniformNdOptions {
                cval: 256.0,
                ..good.clone()
            },
            "cval",
        ),
    ];
    for kp in &backends {
        for (opts, words) in &bad {
            let mut out = vec![99u8; 20];
            let err = kp
                .uniform_filter_nd_into(&input, &mut out, &shape, opts)
                .expect_err(words)
                .to_string();
            assert!(err.contains(words), "{err:?} should name {words}");
            assert!(out.iter().all(|&v| v == 99), "{words}: output written");
        }
        let mut short = vec![99u8; 19];
        assert!(kp
            .uniform_filter_nd_into(&input, &mut short, &shape, &good)
            .is_err());
        assert!(short.iter().all(|&v| v == 99));
        // Empty arrays, 0-D arrays and windows of 1 everywhere are fine.
        assert_eq!(
            kp.uniform_filter_nd::<u8>(&[], &[0, 5], &good).unwrap(),
            Vec::<u8>::new()
        );
        let none = UniformNdOptions::new(&[]);
        assert_eq!(
            kp.uniform_filter_nd(&[3.5f32], &[], &none).unwrap(),
            vec![3.5]
        );
        let ones = UniformNdOptions::new(&[1, 1]);
        assert_eq!(kp.uniform_filter_nd(&input, &shape, &ones).unwrap(), input);
    }
}
