//! Deterministic sums and normalisation: GPU against the f64 reference.
mod common;

use common::{gpu_or_skip, Rng};
use kernpack::reference::reduce;
use kernpack::{Backend, Error, Float, Kernpack, NormalizeOnDevice};
use proptest::prelude::*;

fn data<T: Float>(seed: u64, n: usize, offset: f64) -> Vec<T> {
    let mut rng = Rng(seed);
    (0..n)
        .map(|_| T::from_f64(offset + rng.range(-1.0, 1.0)))
        .collect()
}

/// sum |x|: the scale of the rounding any f64 summation order leaves.
fn magnitude<T: Float>(x: &[T]) -> f64 {
    x.iter().map(|v| v.to_f64().abs()).sum()
}

#[test]
fn cpu_normalize_sums_to_one_and_rejects_zero_and_nan_sums() {
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let mut x: Vec<f64> = data(1, 1001, 0.5);
    let total = kp.normalize(&mut x).unwrap();
    assert!(
        (kp.sum(&x).unwrap() - 1.0).abs() < 1e-13,
        "total was {total}"
    );
    for bad in [
        vec![1.0f32, -1.0, 0.0],
        vec![1.0f32, f32::NAN, 2.0],
        vec![f32::INFINITY, 1.0],
    ] {
        let mut y = bad.clone();
        let err = kp.normalize(&mut y).unwrap_err();
        assert!(
            matches!(err, Error::InvalidInput(_)) && err.to_string().contains("cannot normalise"),
            "{err}"
        );
        assert!(
            y.iter().zip(&bad).all(|(a, b)| a.to_bits() == b.to_bits()),
            "changed on failure"
        );
    }
    // A positive sum too small to invert (1 / sum overflows) would give inf.
    let least = f64::from_bits(1);
    for tiny in [vec![least], vec![least, 0.0], vec![1e-310; 3]] {
        let mut y = tiny.clone();
        let err = kp.normalize(&mut y).unwrap_err();
        assert!(err.to_string().contains("2^-1024"), "{err}");
        assert_eq!(y, tiny, "changed on failure");
        assert!(
            reduce::normalize(&mut y).is_err(),
            "the reference normalises {tiny:?}"
        );
    }
    // Just above the limit it normalises: the reciprocal (2^1020) is finite.
    let p = 2f64.powi(-1022);
    let mut small = vec![p, 3.0 * p];
    kp.normalize(&mut small).unwrap();
    assert_eq!(small, [0.25, 0.75]);
}

fn gpu_sum_matches<T: Float>(seed: u64, n: usize, offset: f64) -> Result<(), TestCaseError> {
    let Some(gpu) = gpu_or_skip("gpu_sum_matches") else {
        return Ok(());
    };
    let x: Vec<T> = data(seed, n, offset);
    let want = reduce::sum(&x);
    let got = Kernpack::from(gpu.clone()).sum(&x).unwrap();
    // Both accumulate in f64 in different orders: n eps sum|x| bounds either error.
    let tol = (n as f64) * f64::EPSILON * magnitude(&x) + f64::MIN_POSITIVE;
    prop_assert!((got - want).abs() <= tol, "n {n}: gpu {got} cpu {want}");
    // The same bits on every run.
    prop_assert_eq!(
        Kernpack::from(gpu.clone()).sum(&x).unwrap().to_bits(),
        got.to_bits()
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(common::proptest_cases(48)))]
    #[test]
    fn gpu_sum_f32(seed in any::<u64>(), n in 1usize..300_000, offset in -2.0f64..2.0) {
        gpu_sum_matches::<f32>(seed, n, offset)?;
    }
    #[test]
    fn gpu_sum_f64(seed in any::<u64>(), n in 1usize..300_000, offset in -2.0f64..2.0) {
        gpu_sum_matches::<f64>(seed, n, offset)?;
    }
}

#[test]
fn gpu_sum_of_2_pow_26_f32_loses_nothing_to_f32() {
    let Some(gpu) = gpu_or_skip("gpu_sum_of_2_pow_26_f32_loses_nothing_to_f32") else {
        return;
    };
    let x: Vec<f32> = data(3, 1 << 26, 0.25);
    let want = reduce::sum(&x);
    let got = Kernpack::from(gpu.clone()).sum(&x).unwrap();
    // f64 accumulation: far inside the 1e-7 relative an f32 result can hold.
    assert!(((got - want) / want).abs() < 1e-12, "gpu {got} cpu {want}");
}

#[test]
fn gpu_normalize_matches_the_reference_and_rejects_bad_sums() {
    let Some(gpu) = gpu_or_skip("gpu_normalize_matches_the_reference_and_rejects_bad_sums") else {
        return;
    };
    let x: Vec<f32> = data(5, 123_457, 1.0);
    let (mut on_gpu, mut on_cpu) = (x.clone(), x.clone());
    Kernpack::from(gpu.clone()).normalize(&mut on_gpu).unwrap();
    reduce::normalize(&mut on_cpu).unwrap();
    for (a, b) in on_gpu.iter().zip(&on_cpu) {
        // The two sums differ in their last bits only: one f32 rounding apart at most.
        assert!((a - b).abs() <= f32::EPSILON * b.abs(), "{a} vs {b}");
    }
    for bad in [vec![1.0f64, -1.0, 2.0, -2.0], vec![f64::from_bits(3), 0.0]] {
        let mut y = bad.clone();
        assert!(
            Kernpack::from(gpu.clone()).normalize(&mut y).is_err(),
            "{bad:?}"
        );
        assert_eq!(y, bad);
    }
    // The device path reports through its status flag and leaves x alone.
    let stream = gpu.stream();
    let mut dx = stream.clone_htod(&[3.0f32, f32::NAN, 1.0]).unwrap();
    let mut sum = stream.alloc_zeros::<f64>(1).unwrap();
    let mut status = stream.alloc_zeros::<i32>(1).unwrap();
    gpu.enqueue_buffers(
        NormalizeOnDevice::buffers(stream, &mut dx, &mut sum, &mut status).unwrap(),
    )
    .unwrap();
    assert_eq!(stream.clone_dtoh(&status).unwrap(), vec![1]);
    let back = stream.clone_dtoh(&dx).unwrap();
    assert!(back[0] == 3.0 && back[1].is_nan() && back[2] == 1.0);
}

#[test]
fn gpu_normalize_of_an_unaligned_view_matches_the_reference() {
    let Some(gpu) = gpu_or_skip("gpu_normalize_of_an_unaligned_view_matches_the_reference") else {
        return;
    };
    let x: Vec<f32> = data(9, 10_003, 1.0);
    let stream = gpu.stream();
    let mut dx = stream.clone_htod(&x).unwrap();
    let mut sum = stream.alloc_zeros::<f64>(1).unwrap();
    let mut status = stream.alloc_zeros::<i32>(1).unwrap();
    // Elements 1.. start 4 bytes into the allocation: the scalar path.
    let mut view = dx.slice_mut(1..);
    gpu.enqueue_buffers(
        NormalizeOnDevice::buffers(stream, &mut view, &mut sum, &mut status).unwrap(),
    )
    .unwrap();
    assert_eq!(stream.clone_dtoh(&status).unwrap(), vec![0]);
    let got = stream.clone_dtoh(&dx).unwrap();
    let mut want = x.clone();
    reduce::normalize(&mut want[1..]).unwrap();
    assert_eq!(got[0], x[0], "the element before the view is untouched");
    for (a, b) in got[1..].iter().zip(&want[1..]) {
        assert!((a - b).abs() <= f32::EPSILON * b.abs(), "{a} vs {b}");
    }
}

#[test]
fn gpu_normalize_is_bitwise_deterministic() {
    let Some(gpu) = gpu_or_skip("gpu_normalize_is_bitwise_deterministic") else {
        return;
    };
    let x: Vec<f32> = data(13, 10_000_000, 0.5);
    let mut first = x.clone();
    let total = Kernpack::from(gpu.clone()).normalize(&mut first).unwrap();
    assert!(((total - reduce::sum(&x)) / total).abs() < 1e-12);
    for _ in 0..2 {
        let mut again = x.clone();
        assert_eq!(
            Kernpack::from(gpu.clone())
                .normalize(&mut again)
                .unwrap()
                .to_bits(),
            total.to_bits()
        );
        assert!(again
            .iter()
            .zip(&first)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}
