//! Batched normalise: the one-call batch against each array normalised alone
//! (the CPU backend's single-array path, and the single-array GPU sum bit
//! for bit).
mod common;

use common::{gpu_or_skip, Rng};
use kernpack::api::reduce_batched::{
    check_offsets, BatchNormalized, BATCH_BAD_OFFSETS, BATCH_BAD_SUM, BATCH_OK,
};
use kernpack::reference::reduce;
use kernpack::reference::reduce::normalize_batched as reference_batched;
use kernpack::{Backend, Error, Float, Kernpack, NormalizeBatchedOnDevice};
use proptest::prelude::*;

/// What kind of array a case draws.
#[derive(Debug, Clone, Copy)]
enum Fill {
    /// Random values around an offset: a good sum.
    Random,
    /// Pairs v, -v of multiples of 1/1024: every partial sum is exact in f64,
    /// so the sum is exactly 0 in any order, on any backend.
    ZeroSum,
    /// Random values and one NaN or infinity.
    NotFinite,
    /// Subnormal multiples of 2^-1074: a positive sum whose reciprocal
    /// overflows (0 in f32), so it cannot normalise.
    Tiny,
}

fn fill_strategy() -> impl Strategy<Value = Fill> {
    prop_oneof![
        6 => Just(Fill::Random),
        1 => Just(Fill::ZeroSum),
        1 => Just(Fill::NotFinite),
        1 => Just(Fill::Tiny)
    ]
}

/// A flat buffer and offsets for arrays of the given lengths and fills.
fn batch<T: Float>(seed: u64, arrays: &[(usize, Fill)]) -> (Vec<T>, Vec<usize>) {
    let mut rng = Rng(seed);
    let (mut x, mut offsets) = (Vec::new(), vec![0]);
    for &(len, fill) in arrays {
        let start = x.len();
        match fill {
            Fill::Random => {
                let offset = rng.range(-0.5, 2.0);
                x.extend((0..len).map(|_| T::from_f64(offset + rng.range(-1.0, 1.0))));
            }
            Fill::ZeroSum => {
                for i in 0..len {
                    let v = if i % 2 == 0 {
                        (rng.range(1.0, 1000.0).floor()) / 1024.0
                    } else {
                        -x[x.len() - 1].to_f64()
                    };
                    x.push(T::from_f64(v));
                }
                if len % 2 == 1 {
                    *x.last_mut().unwrap() = T::from_f64(0.0); // odd length: end on a 0
                }
            }
            Fill::Tiny => {
                let least = f64::from_bits(1); // 2^-1074
                x.extend((0..len).map(|_| T::from_f64(least * rng.range(1.0, 9.0).floor())));
            }
            Fill::NotFinite => {
                x.extend((0..len).map(|_| T::from_f64(rng.range(-1.0, 2.0))));
                if len > 0 {
                    let at = start + (rng.next() * len as f64) as usize % len;
                    let bad = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
                        [(rng.next() * 3.0) as usize % 3];
                    x[at] = T::from_f64(bad);
                }
            }
        }
        offsets.push(x.len());
    }
    (x, offsets)
}

fn same_bits<T: Float>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(p, q)| p.to_f64().to_bits() == q.to_f64().to_bits())
}

/// Which arrays the reference rejects.
fn expected_failures<T: Float>(x: &[T], offsets: &[usize]) -> Vec<usize> {
    let mut copy = x.to_vec();
    reference_batched(&mut copy, offsets).failed
}

#[test]
fn offsets_are_checked_and_nothing_changes_on_error() {
    let kp = Kernpack::new(Backend::Auto).unwrap();
    let original: Vec<f32> = (0..10).map(|i| 1.0 + i as f32).collect();
    for bad in [
        vec![],
        vec![1, 10],
        vec![0, 9],
        vec![0, 11],
        vec![0, 6, 4, 10],
    ] {
        let mut x = original.clone();
        let err = kp.normalize_batched(&mut x, &bad).unwrap_err();
        assert!(matches!(err, Error::InvalidInput(_)), "{bad:?}: {err}");
        assert!(check_offsets(&bad, 10).is_err());
        assert_eq!(x, original, "{bad:?} changed x");
    }
    // No arrays at all is a valid, empty batch.
    let mut empty: Vec<f64> = vec![];
    let done = kp.normalize_batched(&mut empty, &[0]).unwrap();
    assert_eq!(
        done,
        BatchNormalized {
            sums: vec![],
            failed: vec![]
        }
    );
}

fn cpu_case<T: Float>(seed: u64, arrays: &[(usize, Fill)]) -> Result<(), TestCaseError> {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let (x, offsets) = batch::<T>(seed, arrays);
    let mut got = x.clone();
    let done = kp.normalize_batched(&mut got, &offsets).unwrap();
    prop_assert_eq!(done.sums.len(), arrays.len());
    for (a, w) in offsets.windows(2).enumerate() {
        // The CPU backend's own single-array normalise (tests/cpu_reduce.rs
        // holds it to the reference): the batch must give its bits.
        let mut alone = x[w[0]..w[1]].to_vec();
        let single = kp
            .normalize(&mut alone)
            .map_err(|_| kp.sum(&x[w[0]..w[1]]).unwrap());
        let failed = done.failed.contains(&a);
        prop_assert_eq!(failed, single.is_err(), "array {}", a);
        let sum = single.unwrap_or_else(|s| s);
        prop_assert_eq!(done.sums[a].to_bits(), sum.to_bits(), "array {}", a);
        prop_assert!(
            same_bits(&got[w[0]..w[1]], &alone),
            "array {} differs from alone",
            a
        );
        match arrays[a].1 {
            Fill::ZeroSum | Fill::NotFinite if w[1] > w[0] => prop_assert!(failed),
            _ if w[1] == w[0] => prop_assert!(failed, "empty array {} must fail", a),
            _ => {}
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(64)))]
    #[test]
    fn cpu_batched_is_each_array_alone_f32(
        seed in any::<u64>(),
        arrays in prop::collection::vec((prop_oneof![Just(0usize), Just(1usize), 0usize..3000], fill_strategy()), 0..24),
    ) {
        cpu_case::<f32>(seed, &arrays)?;
    }
    #[test]
    fn cpu_batched_is_each_array_alone_f64(
        seed in any::<u64>(),
        arrays in prop::collection::vec((prop_oneof![Just(0usize), Just(1usize), 0usize..3000], fill_strategy()), 0..24),
    ) {
        cpu_case::<f64>(seed, &arrays)?;
    }
}

/// The GPU batch: failures as the reference, sums within rounding of it and
/// bit for bit the single-array GPU sum, values exactly x * (1 / sum) rounded
/// once, failed arrays untouched, and the same bits on a second run.
fn gpu_case<T: Float>(seed: u64, arrays: &[(usize, Fill)]) -> Result<(), TestCaseError> {
    let Some(gpu) = gpu_or_skip("gpu_batched") else {
        return Ok(());
    };
    let (x, offsets) = batch::<T>(seed, arrays);
    let mut got = x.clone();
    let done = if x.is_empty() {
        Kernpack::new(Backend::Gpu)
            .unwrap()
            .normalize_batched(&mut got, &offsets)
            .unwrap()
    } else {
        Kernpack::from(gpu.clone())
            .normalize_batched(&mut got, &offsets)
            .unwrap()
    };
    prop_assert_eq!(&done.failed, &expected_failures(&x, &offsets));
    for (a, w) in offsets.windows(2).enumerate() {
        let (input, output) = (&x[w[0]..w[1]], &got[w[0]..w[1]]);
        if input.is_empty() {
            continue;
        }
        prop_assert_eq!(
            done.sums[a].to_bits(),
            Kernpack::from(gpu.clone()).sum(input).unwrap().to_bits(),
            "array {} sum",
            a
        );
        if done.failed.contains(&a) {
            prop_assert!(same_bits(output, input), "failed array {} changed", a);
            continue;
        }
        // Both sums accumulate in f64 in different orders: n eps sum|x| bounds the gap.
        let magnitude: f64 = input.iter().map(|v| v.to_f64().abs()).sum();
        let reference = reduce::sum(input);
        let tol = input.len() as f64 * f64::EPSILON * magnitude;
        prop_assert!(
            (done.sums[a] - reference).abs() <= tol,
            "array {}: {} vs {}",
            a,
            done.sums[a],
            reference
        );
        let inv = 1.0 / done.sums[a];
        let want: Vec<T> = input
            .iter()
            .map(|v| T::from_f64(v.to_f64() * inv))
            .collect();
        prop_assert!(same_bits(output, &want), "array {} values", a);
    }
    let mut again = x.clone();
    let second = if x.is_empty() {
        done.clone()
    } else {
        Kernpack::from(gpu.clone())
            .normalize_batched(&mut again, &offsets)
            .unwrap()
    };
    if !x.is_empty() {
        prop_assert!(same_bits(&again, &got), "second run differs");
    }
    prop_assert!(second
        .sums
        .iter()
        .zip(&done.sums)
        .all(|(p, q)| p.to_bits() == q.to_bits()));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(32)))]
    #[test]
    fn gpu_batched_f32(
        seed in any::<u64>(),
        arrays in prop::collection::vec((prop_oneof![Just(0usize), Just(1usize), 0usize..20_000], fill_strategy()), 0..40),
    ) {
        gpu_case::<f32>(seed, &arrays)?;
    }
    #[test]
    fn gpu_batched_f64(
        seed in any::<u64>(),
        arrays in prop::collection::vec((prop_oneof![Just(0usize), Just(1usize), 0usize..20_000], fill_strategy()), 0..40),
    ) {
        gpu_case::<f64>(seed, &arrays)?;
    }
}

/// Lengths around the chunk boundaries of the split (4096 per block, at most
/// 2048 blocks: 9e6 elements take the clamped chunk length).
#[test]
fn gpu_batched_sums_are_the_single_sums_at_split_boundaries() {
    let Some(_) = gpu_or_skip("gpu_batched_sums_are_the_single_sums_at_split_boundaries") else {
        return;
    };
    let lengths = [
        1usize,
        4095,
        4096,
        4097,
        8191,
        65_537,
        1 << 20,
        4096 * 2048 + 3,
        9_000_000,
        0,
        2,
    ];
    let arrays: Vec<(usize, Fill)> = lengths.iter().map(|&n| (n, Fill::Random)).collect();
    gpu_case::<f32>(0x5eed, &arrays).unwrap();
}

/// The device entry point: statuses on the device, offsets that do not fit
/// `x` detected there (status 2, nothing touched), and a thousand tiny arrays.
#[test]
fn gpu_batched_device_statuses_and_bad_offsets() {
    let Some(gpu) = gpu_or_skip("gpu_batched_device_statuses_and_bad_offsets") else {
        return;
    };
    let stream = gpu.new_stream().unwrap();
    let arrays: Vec<(usize, Fill)> = (0..1000)
        .map(|a| {
            (
                a % 7,
                if a % 13 == 0 {
                    Fill::ZeroSum
                } else {
                    Fill::Random
                },
            )
        })
        .collect();
    let (x, offsets) = batch::<f64>(77, &arrays);
    let offsets64: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
    let mut dx = stream.clone_htod(&x).unwrap();
    let doff = stream.clone_htod(&offsets64).unwrap();
    let mut sums = stream.clone_htod(&vec![f64::NAN; 1000]).unwrap();
    let mut status = stream.clone_htod(&vec![-7i32; 1000]).unwrap();
    let call = NormalizeBatchedOnDevice::buffers(&stream, &mut dx, &doff, &mut sums, &mut status);
    gpu.enqueue_buffers(call.unwrap()).unwrap();
    let (got, got_status) = (
        stream.clone_dtoh(&dx).unwrap(),
        stream.clone_dtoh(&status).unwrap(),
    );
    let mut want = x.clone();
    let reference = reference_batched(&mut want, &offsets);
    for (a, got) in got_status.iter().enumerate() {
        let expect = if reference.failed.contains(&a) {
            BATCH_BAD_SUM
        } else {
            BATCH_OK
        };
        assert_eq!(*got, expect, "array {a}");
    }
    // The two sums add in different orders: each is within len eps sum|x| of
    // the exact one, which relative to the sum is amplified by the
    // cancellation sum|x| / |sum x| (random signs make it large at times).
    for a in 0..offsets.len() - 1 {
        let (lo, hi) = (offsets[a], offsets[a + 1]);
        let (abs_sum, sum): (f64, f64) = (
            x[lo..hi].iter().map(|v| v.abs()).sum(),
            x[lo..hi].iter().sum(),
        );
        if sum == 0.0 {
            assert_eq!(got[lo..hi], x[lo..hi], "array {a} (zero sum) changed");
            continue;
        }
        let rel = (4.0 + (hi - lo) as f64 * abs_sum / sum.abs()) * f64::EPSILON;
        for (g, w) in got[lo..hi].iter().zip(&want[lo..hi]) {
            assert!((g - w).abs() <= rel * w.abs(), "array {a}: {g} vs {w}");
        }
    }

    // Offsets past the end of x: nothing changes, every status says so.
    let mut bad = offsets64.clone();
    bad[500] = x.len() as i64 + 5;
    let dbad = stream.clone_htod(&bad).unwrap();
    let mut dx = stream.clone_htod(&x).unwrap();
    let call = NormalizeBatchedOnDevice::buffers(&stream, &mut dx, &dbad, &mut sums, &mut status);
    gpu.enqueue_buffers(call.unwrap()).unwrap();
    assert!(same_bits(&stream.clone_dtoh(&dx).unwrap(), &x));
    assert!(stream
        .clone_dtoh(&status)
        .unwrap()
        .iter()
        .all(|&s| s == BATCH_BAD_OFFSETS));
    assert!(stream.clone_dtoh(&sums).unwrap().iter().all(|s| s.is_nan()));

    // Too few sums for the arrays: an error before any launch.
    let mut short = stream.alloc_zeros::<f64>(10).unwrap();
    let err = NormalizeBatchedOnDevice::buffers(&stream, &mut dx, &doff, &mut short, &mut status)
        .and_then(|call| gpu.enqueue_buffers(call))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidInput(_)), "{err}");
}
