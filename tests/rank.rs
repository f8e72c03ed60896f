//! Rank filters (median, percentile, rank): the CPU backend and the GPU
//! kernels (sorting networks, sliding histograms, radix selection) against
//! the reference on random shapes (0-D to 4-D), footprints, origins, modes,
//! ranks and every element type, bit for bit: a rank filter only moves
//! values, so there is no tolerance. Values are drawn as random keys (every
//! bit pattern: NaNs, infinities, -0.0 and subnormals among floats) or from
//! a pool of a few values (ties).
mod common;

use common::{gpu_or_skip, proptest_cases, Rng};
use kernpack::reference::rank::rank_filter;
use kernpack::{Backend, BoundaryMode, Footprint, Kernpack, Rank, RankFilterOptions, RankValue};
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

/// Random values of `T`: any bit pattern, or (half the time) a pool of four.
fn random_values<T: RankValue>(n: usize, rng: &mut Rng) -> Vec<T> {
    let bits = 8 * std::mem::size_of::<T>() as u32;
    let key = |rng: &mut Rng| {
        let hi = (rng.next() * 4294967296.0) as u64;
        let lo = (rng.next() * 4294967296.0) as u64;
        let k = (hi << 32) | lo;
        if bits == 64 {
            k
        } else {
            k & ((1u64 << bits) - 1)
        }
    };
    if rng.next() < 0.5 {
        let pool: Vec<u64> = (0..4).map(|_| key(rng)).collect();
        (0..n).map(|_| T::from_key(pool[pick(rng, 4)])).collect()
    } else {
        (0..n).map(|_| T::from_key(key(rng))).collect()
    }
}

/// A random shape of `ndim` axes, none larger than `max`.
fn random_shape(ndim: usize, max: usize, rng: &mut Rng) -> Vec<usize> {
    (0..ndim).map(|_| 1 + pick(rng, max)).collect()
}

/// Random options over `ndim` axes with footprints of up to `max_size` per
/// axis (full boxes half the time).
fn random_options<T: RankValue>(ndim: usize, max_size: usize, rng: &mut Rng) -> RankFilterOptions {
    let shape: Vec<usize> = (0..ndim).map(|_| 1 + pick(rng, max_size)).collect();
    let points: usize = shape.iter().product();
    let mut footprint = Footprint::full(&shape);
    if rng.next() < 0.5 {
        footprint.mask = (0..points).map(|_| rng.next() < 0.6).collect();
        let k = pick(rng, points);
        footprint.mask[k] = true;
    }
    let count = footprint.count() as i64;
    let rank = match pick(rng, 4) {
        0 => Rank::Median,
        1 => Rank::Percentile(rng.range(-100.0, 100.0)),
        2 => Rank::Index(-1 - pick(rng, count as usize) as i64),
        _ => Rank::Index(pick(rng, count as usize) as i64),
    };
    let origin = shape
        .iter()
        .map(|&f| {
            let f = f as i64;
            -(f / 2) + pick(rng, f as usize) as i64
        })
        .collect();
    let cval_key = random_values::<T>(1, rng)[0];
    RankFilterOptions {
        footprint,
        rank,
        origin,
        mode: MODES[pick(rng, 5)],
        cval: cval_of(cval_key),
    }
}

/// A cval that converts to `v` (for floats: v itself as f64, NaN included).
fn cval_of<T: RankValue>(v: T) -> f64 {
    let k = v.key();
    match T::KIND {
        kernpack::params::rank::KeyKind::Float => {
            if std::mem::size_of::<T>() == 4 {
                f32::from_key(k) as f64
            } else {
                f64::from_key(k)
            }
        }
        // Small integers: exact in f64 and within every type.
        _ => (k % 100) as f64,
    }
}

fn check_random<T: RankValue>(
    kp: &Kernpack,
    seed: u64,
    ndim: usize,
    max: usize,
    fmax: usize,
    what: &str,
) {
    let mut rng = Rng(seed);
    let shape = random_shape(ndim, max, &mut rng);
    let n: usize = shape.iter().product();
    let input = random_values::<T>(n, &mut rng);
    let opts = random_options::<T>(ndim, fmax, &mut rng);
    let mut out = vec![T::from_key(0x5a); n];
    kp.rank_filter_into(&input, &mut out, &shape, &opts)
        .unwrap_or_else(|e| panic!("{what} {} {shape:?} {opts:?}: {e}", T::NAME));
    let want = rank_filter(&input, &shape, &opts);
    for (i, (g, w)) in out.iter().zip(&want).enumerate() {
        assert!(
            g.bits() == w.bits(),
            "{what} {} shape {shape:?} {opts:?}: [{i}] {g:?} vs {w:?}",
            T::NAME
        );
    }
}

fn check_all_types(kp: &Kernpack, seed: u64, ndim: usize, max: usize, fmax: usize, what: &str) {
    check_random::<u8>(kp, seed, ndim, max, fmax, what);
    check_random::<i8>(kp, seed, ndim, max, fmax, what);
    check_random::<u16>(kp, seed, ndim, max, fmax, what);
    check_random::<i16>(kp, seed, ndim, max, fmax, what);
    check_random::<u32>(kp, seed, ndim, max, fmax, what);
    check_random::<i32>(kp, seed, ndim, max, fmax, what);
    check_random::<u64>(kp, seed, ndim, max, fmax, what);
    check_random::<i64>(kp, seed, ndim, max, fmax, what);
    check_random::<f32>(kp, seed, ndim, max, fmax, what);
    check_random::<f64>(kp, seed, ndim, max, fmax, what);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(48)))]

    #[test]
    fn cpu_backend_matches_the_reference(seed in any::<u64>()) {
        let kp = Kernpack::new(Backend::Cpu).unwrap().with_cpu_threads(3).unwrap();
        let ndim = 1 + (seed % 3) as usize;
        let max = [60, 16, 7][ndim - 1];
        check_all_types(&kp, seed, ndim, max, [9, 5, 3][ndim - 1], "cpu");
    }
}

/// Keys order values as numbers: sorted keys are sorted values, NaNs last.
#[test]
fn keys_order_values() {
    let v = [
        f32::NEG_INFINITY,
        -3.5,
        -0.0,
        0.0,
        1e-45,
        2.0,
        f32::INFINITY,
        f32::NAN,
    ];
    for w in v.windows(2) {
        assert!(w[0].key() < w[1].key(), "{} < {}", w[0], w[1]);
        assert_eq!(f32::from_key(w[0].key()).to_bits(), w[0].to_bits());
    }
    assert_eq!((-f32::NAN).key(), f32::NAN.key());
    let i = [i16::MIN, -1, 0, 1, i16::MAX];
    for w in i.windows(2) {
        assert!(w[0].key() < w[1].key());
        assert_eq!(i16::from_key(w[1].key()), w[1]);
    }
    assert_eq!(u8::from_cval(255.9), Some(255));
    assert_eq!(u8::from_cval(256.0), None);
    assert_eq!(i8::from_cval(-128.7), Some(-128));
    assert_eq!(i32::from_cval(f64::NAN), None);
}

/// SciPy's ranks: the median is count / 2, percentiles floor(count p / 100),
/// negative ranks and percentiles count from the top.
#[test]
fn ranks_resolve_as_scipy() {
    let mut opts = RankFilterOptions::median(&[2, 3]);
    assert_eq!(opts.resolved_rank().unwrap(), 3);
    for (rank, want) in [
        (Rank::Index(-1), 5),
        (Rank::Index(0), 0),
        (Rank::Percentile(100.0), 5),
        (Rank::Percentile(50.0), 3),
        (Rank::Percentile(-40.0), 3),
        (Rank::Percentile(17.0), 1),
    ] {
        opts.rank = rank;
        assert_eq!(opts.resolved_rank().unwrap(), want, "{rank:?}");
    }
    for bad in [Rank::Index(6), Rank::Index(-7), Rank::Percentile(100.5)] {
        opts.rank = bad;
        assert!(opts.resolved_rank().is_err(), "{bad:?}");
    }
}

#[test]
fn gpu_kernels_match_the_reference() {
    let Some(gpu) = gpu_or_skip("gpu_kernels_match_the_reference") else {
        return;
    };
    let kp = Kernpack::from(gpu);
    for seed in 0..u64::from(proptest_cases(48)) {
        let ndim = 1 + (seed % 4) as usize;
        // Footprints up to 10^ndim points: every network, the digits and
        // (8-bit boxes) the sliding kernel.
        let (max, fmax) = [(300, 40), (40, 11), (14, 6), (7, 3)][ndim - 1];
        check_all_types(&kp, seed, ndim, max, fmax, "gpu");
    }
}

/// Images of a realistic size through each kernel, against the CPU backend.
#[test]
fn gpu_large_images_match_the_cpu_backend() {
    let Some(gpu) = gpu_or_skip("gpu_large_images_match_the_cpu_backend") else {
        return;
    };
    let (kp, cpu) = (Kernpack::from(gpu), Kernpack::new(Backend::Cpu).unwrap());
    let mut rng = Rng(11);
    let shape = [517usize, 1031];
    fn same<T: RankValue>(
        kp: &Kernpack,
        cpu: &Kernpack,
        input: &[T],
        shape: &[usize],
        opts: &RankFilterOptions,
    ) {
        let got = kp.rank_filter(input, shape, opts).unwrap();
        let want = cpu.rank_filter(input, shape, opts).unwrap();
        let bad = got
            .iter()
            .zip(&want)
            .filter(|(g, w)| g.bits() != w.bits())
            .count();
        assert_eq!(bad, 0, "{} {shape:?} {opts:?}", T::NAME);
    }
    let u8s = random_values::<u8>(shape.iter().product(), &mut rng);
    let f32s = random_values::<f32>(shape.iter().product(), &mut rng);
    let f64s = random_values::<f64>(shape.iter().product(), &mut rng);
    for size in [3usize, 5, 7, 9, 10, 13, 31] {
        for mode in MODES {
            let opts = RankFilterOptions {
                mode,
                cval: 7.0,
                ..RankFilterOptions::median(&[size, size])
            };
            same(&kp, &cpu, &u8s, &shape, &opts);
            if size <= 13 {
                same(&kp, &cpu, &f32s, &shape, &opts);
                same(&kp, &cpu, &f64s, &shape, &opts);
            }
        }
    }
    // 3-D boxes of 8-bit values slide too.
    let shape3 = [9usize, 70, 130];
    let vol = random_values::<i8>(shape3.iter().product(), &mut rng);
    same(
        &kp,
        &cpu,
        &vol,
        &shape3,
        &RankFilterOptions::median(&[3, 5, 7]),
    );
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
    let good = RankFilterOptions::median(&[3, 3]);
    let bad = [
        (RankFilterOptions::median(&[3]), "axes"),
        (
            RankFilterOptions {
                origin: vec![2, 0],
                ..good.clone()
            },
            "origin 2",
        ),
        (
            RankFilterOptions {
                rank: Rank::Index(9),
                ..good.clone()
            },
            "rank",
        ),
        (
            RankFilterOptions {
                rank: Rank::Percentile(101.0),
                ..good.clone()
            },
            "percentile",
        ),
        (
            RankFilterOptions {
                mode: BoundaryMode::Constant,
                cval: 256.0,
                ..good.clone()
            },
            "does not fit",
        ),
        (
            RankFilterOptions {
                mode: BoundaryMode::Interior,
                ..good.clone()
            },
            "interior",
        ),
        (
            RankFilterOptions {
                footprint: Footprint {
                    shape: vec![2, 2],
                    mask: vec![false; 4],
                },
                ..good.clone()
            },
            "no point",
        ),
        (
            RankFilterOptions {
                footprint: Footprint {
                    shape: vec![2, 2],
                    mask: vec![true; 3],
                },
                ..good.clone()
            },
            "mask",
        ),
    ];
    for kp in &backends {
        for (opts, words) in &bad {
            let mut out = vec![99u8; 20];
            let err = kp
                .rank_filter_into(&input, &mut out, &shape, opts)
                .expect_err(words)
                .to_string();
            assert!(err.contains(words), "{err:?} should name {words}");
            assert!(out.iter().all(|&v| v == 99), "{words}: output written");
        }
        let mut short = vec![99u8; 19];
        assert!(kp
            .rank_filter_into(&input, &mut short, &shape, &good)
            .is_err());
        assert!(short.iter().all(|&v| v == 99));
        // Empty arrays and 0-D arrays are fine.
        assert_eq!(
            kp.rank_filter::<u8>(&[], &[0, 5], &good).unwrap(),
            Vec::<u8>::new()
        );
        let scalar = RankFilterOptions::median(&[]);
        assert_eq!(kp.rank_filter(&[3.5f32], &[], &scalar).unwrap(), vec![3.5]);
    }
}
