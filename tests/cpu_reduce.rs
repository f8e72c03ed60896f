//! The fast CPU sums and normalisation (src/cpu/reduce.rs, what
//! `Backend::Cpu` runs) against the reference: f32 and f64, lengths around
//! the 4096-value chunks, 1-3 threads (the same bits on each), the error
//! rules (zero or non-finite sums leave the data untouched), and batches
//! whose sums are bitwise the single-array sums.
mod common;

use common::{proptest_cases, Rng};
use kernpack::api::reduce_batched::BatchNormalized;
use kernpack::reference::reduce;
use kernpack::reference::reduce::normalize_batched as reference_batched;
use kernpack::{Backend, Error, Float, Kernpack};
use proptest::prelude::*;

fn kp(threads: usize) -> Kernpack {
    Kernpack::new(Backend::Cpu)
        .unwrap()
        .with_cpu_threads(threads)
        .unwrap()
}

fn data<T: Float>(seed: u64, n: usize, offset: f64) -> Vec<T> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| T::from_f64(offset + rng.range(-1.0, 1.0)))
        .collect()
}

fn eps<T: Float>() -> f64 {
    if T::NAME == "f32" {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    }
}

/// |fast - reference| of a sum: both add in f64, the reference a chunk's
/// 4096 values one after another, the fast path 128 per lane; with the
/// pairwise levels above either is within (4096 + 64) eps64 sum|x|.
fn sum_tolerance<T: Float>(x: &[T]) -> f64 {
    let m: f64 = x.iter().map(|v| v.to_f64().abs()).sum();
    2.0 * 4160.0 * f64::EPSILON * m + f64::MIN_POSITIVE
}

fn check_sum_and_normalize<T: Float>(
    seed: u64,
    n: usize,
    offset: f64,
) -> Result<(), TestCaseError> {
    let x: Vec<T> = data(seed, n, offset);
    let want = reduce::sum(&x);
    let tol = sum_tolerance(&x);
    let one = kp(1).sum(&x).unwrap();
    prop_assert!(
        (one - want).abs() <= tol,
        "n {n}: fast {one} reference {want}"
    );
    for threads in [2, 3] {
        prop_assert_eq!(kp(threads).sum(&x).unwrap().to_bits(), one.to_bits());
    }
    // Normalise: the same sum, then each value times 1/sum in f64, rounded
    // once. Against the reference (whose sum differs by <= tol): one
    // rounding of T apart, plus the sums' relative difference.
    let mut wanted = x.clone();
    let want_total = reduce::normalize(&mut wanted);
    let mut first: Option<Vec<T>> = None;
    for threads in [1, 2, 3] {
        let mut got = x.clone();
        let total = kp(threads).normalize(&mut got);
        match (&total, want_total) {
            (Ok(t), Ok(_)) => {
                let t = *t;
                prop_assert_eq!(t.to_bits(), one.to_bits());
                let rel = 2.0 * tol / t.abs();
                for (g, w) in got.iter().zip(&wanted) {
                    let (g, w) = (g.to_f64(), w.to_f64());
                    prop_assert!(
                        (g - w).abs() <= (eps::<T>() + rel) * w.abs() * 1.01,
                        "n {n}: fast {g} reference {w}"
                    );
                }
            }
            // A sum at 0 within rounding may fail on one side only; then the
            // failing side left x untouched.
            (Err(_), _) | (_, Err(_)) => {
                prop_assert!(want.abs() <= tol, "only one side failed with sum {want}");
                if total.is_err() {
                    prop_assert!(got
                        .iter()
                        .zip(&x)
                        .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits()));
                }
            }
        }
        match &first {
            None => first = Some(got),
            Some(one) => prop_assert!(one
                .iter()
                .zip(&got)
                .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits())),
        }
    }
    Ok(())
}

/// Lengths around the chunk (4096) and the per-thread minimum (65536).
fn len() -> impl Strategy<Value = usize> {
    prop_oneof![0usize..40, 4000usize..8300, 60_000usize..300_000]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(32)))]
    #[test]
    fn fast_sum_f32(seed in any::<u64>(), n in len(), offset in -2.0f64..2.0) {
        check_sum_and_normalize::<f32>(seed, n, offset)?;
    }

    #[test]
    fn fast_sum_f64(seed in any::<u64>(), n in len(), offset in -2.0f64..2.0) {
        check_sum_and_normalize::<f64>(seed, n, offset)?;
    }

    /// Random batches, some arrays empty, some summing to exactly 0, some
    /// with a NaN or an infinity: each sum is the single-array sum's bits,
    /// each normalised array the single-array normalise's bits, the failed
    /// arrays are the reference's and are untouched; on 1-3 threads alike.
    #[test]
    fn fast_batched_is_each_array_alone(
        seed in any::<u64>(),
        lens in prop::collection::vec((prop_oneof![0usize..10, 10usize..5000, 5000usize..70_000], 0u8..8), 0..12),
        f32 in any::<bool>(),
    ) {
        if f32 {
            check_batched::<f32>(seed, &lens)?;
        } else {
            check_batched::<f64>(seed, &lens)?;
        }
    }
}

fn check_batched<T: Float>(seed: u64, lens: &[(usize, u8)]) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let (mut x, mut offsets) = (Vec::<T>::new(), vec![0]);
    for &(n, kind) in lens {
        let start = x.len();
        match kind {
            // Pairs v, -v of multiples of 1/1024: exactly 0 in any order.
            0 => {
                for i in 0..n {
                    let v = if i % 2 == 0 {
                        rng.range(1.0, 1000.0).floor() / 1024.0
                    } else {
                        -x[x.len() - 1].to_f64()
                    };
                    x.push(T::from_f64(v));
                }
                if n % 2 == 1 {
                    *x.last_mut().unwrap() = T::from_f64(0.0);
                }
            }
            1 if n > 0 => {
                x.extend(data::<T>(rng.0, n, 0.5));
                let at = start + (rng.next() * n as f64) as usize % n;
                x[at] =
                    T::from_f64([f64::NAN, f64::INFINITY, f64::NEG_INFINITY][kind as usize % 3]);
            }
            _ => x.extend(data::<T>(rng.0 ^ kind as u64, n, rng.range(-0.5, 2.0))),
        }
        offsets.push(x.len());
    }
    let mut want = x.clone();
    let reference: BatchNormalized = reference_batched(&mut want, &offsets);
    for threads in [1, 2, 3] {
        let k = kp(threads);
        let mut got = x.clone();
        let done = k.normalize_batched(&mut got, &offsets).unwrap();
        prop_assert_eq!(&done.failed, &reference.failed);
        for (a, w) in offsets.windows(2).enumerate() {
            let alone = &x[w[0]..w[1]];
            prop_assert_eq!(done.sums[a].to_bits(), k.sum(alone).unwrap().to_bits());
            let mut single = alone.to_vec();
            let ok = k.normalize(&mut single).is_ok();
            prop_assert_eq!(ok, !done.failed.contains(&a));
            let same = got[w[0]..w[1]]
                .iter()
                .zip(&single)
                .all(|(g, s)| g.to_f64().to_bits() == s.to_f64().to_bits());
            prop_assert!(same, "array {a} differs from its single normalise");
        }
    }
    Ok(())
}

#[test]
fn fast_errors_leave_the_data_untouched() {
    for threads in [1, 2] {
        let k = kp(threads);
        // Large enough for several threads: the zero, NaN and infinity are
        // found whichever thread's range holds them.
        let n = 300_000;
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0] {
            let mut x: Vec<f32> = (0..n)
                .map(|i| if i % 2 == 0 { 0.5 } else { -0.5 })
                .collect();
            if bad != 0.0 {
                x[n - 3] = bad as f32;
            }
            let before = x.clone();
            let err = k.normalize(&mut x).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidInput(m) if m.contains("cannot normalise")),
                "{err}"
            );
            assert!(x
                .iter()
                .zip(&before)
                .all(|(a, b)| a.to_bits() == b.to_bits()));
        }
        // Bad offsets: an error, nothing changed.
        let mut x = vec![1.0f64; 10];
        for offsets in [vec![], vec![1, 10], vec![0, 5, 4, 10], vec![0, 11]] {
            assert!(k.normalize_batched(&mut x, &offsets).is_err());
            assert!(x.iter().all(|v| *v == 1.0));
        }
        assert_eq!(k.sum::<f64>(&[]).unwrap(), 0.0);
    }
}

/// 2^26 f32 values: f64 accumulation keeps the sum far inside what f32 could hold.
#[test]
fn fast_sum_of_2_pow_26_f32() {
    let x: Vec<f32> = data(3, 1 << 26, 0.25);
    let want = reduce::sum(&x);
    let got = kp(2).sum(&x).unwrap();
    assert!(
        ((got - want) / want).abs() < 1e-12,
        "fast {got} reference {want}"
    );
}
