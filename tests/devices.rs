//! Choosing the GPU by ordinal, and listing the devices. Without a GPU:
//! `devices()` is empty and every GPU choice is `Error::NoGpu`. With one
//! (KERNPACK_REQUIRE_GPU=1 makes a missing GPU a failure): sane fields, a bad
//! ordinal is `Error::InvalidInput` naming the count, the caller's current
//! context survives the query, and with two GPUs or more (KERNPACK_REQUIRE_GPUS=2
//! makes fewer a failure) handles on GPU 0 and GPU 1 driven from two threads
//! at once give the same batched periodograms as each other and as one GPU alone.
mod common;

use std::sync::Barrier;

use common::{flat, scaled_max_error};
use cudarc::driver::result as cu;
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    device_info, devices, Backend, Error, Float, Gpu, Kernpack, LombScargleOptions, Normalize,
};

fn require_gpus() -> usize {
    let env = |name: &str| std::env::var(name).ok();
    let required = env("KERNPACK_REQUIRE_GPUS").and_then(|v| v.parse().ok());
    let one = env("KERNPACK_REQUIRE_GPU").is_some_and(|v| v == "1") as usize;
    required.unwrap_or(0).max(one)
}

/// The number of devices, or None (with a SKIPPED line) when fewer than
/// `need` are present; fails instead when the environment requires them.
fn at_least(test: &str, need: usize) -> Option<usize> {
    let n = Gpu::device_count();
    if n >= need {
        return Some(n);
    }
    let required = require_gpus();
    assert!(
        n >= required.min(need),
        "{test}: {required} GPU(s) required (KERNPACK_REQUIRE_GPU/S), {n} present"
    );
    println!("SKIPPED {test}: {n} GPU(s), {need} needed");
    None
}

#[test]
fn devices_list_every_device_with_sane_fields() {
    let list = devices().expect("devices() fails only on a broken driver");
    assert_eq!(list.len(), Gpu::device_count());
    if at_least("devices_list_every_device_with_sane_fields", 1).is_none() {
        return;
    }
    for (i, d) in list.iter().enumerate() {
        assert_eq!(d.ordinal, i);
        assert!(!d.name.trim().is_empty(), "GPU {i}: empty name");
        let (major, minor) = d.compute_capability;
        assert!(
            (3..=20).contains(&major) && (0..10).contains(&minor),
            "{d:?}"
        );
        assert!(d.multiprocessors > 0, "{d:?}");
        assert!(d.total_memory >= 1 << 30, "{d:?}: under 1 GiB");
        assert!(
            d.free_memory > 0 && d.free_memory <= d.total_memory,
            "{d:?}"
        );
        // One device alone says the same (free memory moves with other work).
        let one = device_info(i).unwrap();
        assert_eq!(
            (&one.name, one.compute_capability),
            (&d.name, d.compute_capability)
        );
        assert_eq!(
            (one.multiprocessors, one.total_memory),
            (d.multiprocessors, d.total_memory)
        );
        // The loaded GPU agrees.
        let gpu = Gpu::get(i).unwrap();
        assert_eq!(gpu.ordinal(), i);
        assert_eq!(
            (gpu.name(), gpu.compute_capability()),
            (d.name.as_str(), d.compute_capability)
        );
        assert_eq!(gpu.sm_count(), d.multiprocessors);
    }
    println!("{list:#?}");
}

#[test]
fn without_a_gpu_the_list_is_empty_and_every_gpu_choice_is_no_gpu() {
    if Gpu::device_count() > 0 {
        println!("SKIPPED without_a_gpu...: this machine has a GPU");
        return;
    }
    assert!(
        require_gpus() == 0,
        "KERNPACK_REQUIRE_GPU(S) set but there is no GPU"
    );
    assert_eq!(devices(), Ok(vec![]));
    for ordinal in [0, 1, 7] {
        assert!(matches!(Kernpack::with_gpu(ordinal), Err(Error::NoGpu(_))));
        assert!(matches!(Gpu::get(ordinal), Err(Error::NoGpu(_))));
        assert!(matches!(device_info(ordinal), Err(Error::NoGpu(_))));
    }
    assert!(matches!(Kernpack::new(Backend::Gpu), Err(Error::NoGpu(_))));
    assert_eq!(Kernpack::new(Backend::Auto).unwrap().backend_name(), "cpu");
}

#[test]
fn a_bad_ordinal_is_invalid_input_naming_the_count() {
    let Some(n) = at_least("a_bad_ordinal_is_invalid_input_naming_the_count", 1) else {
        return;
    };
    for bad in [n, n + 1, 1000, usize::MAX] {
        let errors = [
            Kernpack::with_gpu(bad).err(),
            Gpu::get(bad).err(),
            device_info(bad).err(),
        ];
        for e in errors {
            let Some(Error::InvalidInput(msg)) = e else {
                panic!("ordinal {bad} of {n}: {e:?}, not InvalidInput");
            };
            let count = if n == 1 {
                "1 device ".to_string()
            } else {
                format!("{n} devices")
            };
            assert!(
                msg.contains(&format!("GPU {bad}")) && msg.contains(&count),
                "{msg:?} does not name ordinal {bad} and the count {n}"
            );
        }
    }
    // The good ones still load (a failed ordinal leaves nothing behind).
    for ordinal in 0..n {
        assert_eq!(
            Kernpack::with_gpu(ordinal)
                .unwrap()
                .gpu()
                .unwrap()
                .ordinal(),
            ordinal
        );
    }
}

#[test]
fn listing_leaves_the_callers_current_context_as_it_was() {
    if at_least("listing_leaves_the_callers_current_context_as_it_was", 1).is_none() {
        return;
    }
    // On a fresh thread with no current context, before and after GPU 0 loads.
    std::thread::spawn(|| {
        assert_eq!(cu::ctx::get_current().unwrap(), None);
        devices().unwrap();
        assert_eq!(cu::ctx::get_current().unwrap(), None);
    })
    .join()
    .unwrap();
    let gpu = Gpu::get(0).unwrap();
    std::thread::spawn(move || {
        devices().unwrap();
        assert_eq!(cu::ctx::get_current().unwrap(), None);
        gpu.context().bind_to_thread().unwrap();
        let mine = gpu.context().cu_ctx();
        devices().unwrap();
        device_info(Gpu::device_count() - 1).unwrap();
        assert_eq!(cu::ctx::get_current().unwrap(), Some(mine));
    })
    .join()
    .unwrap();
}

/// `nseries` noisy sinusoids of 200-900 samples each, flat with offsets.
struct Data<T> {
    t: Vec<T>,
    y: Vec<T>,
    offsets: Vec<usize>,
}

fn ragged<T: Float>(nseries: usize) -> Data<T> {
    let mut rng = common::Rng(7);
    let mut d = Data {
        t: vec![],
        y: vec![],
        offsets: vec![0],
    };
    for _ in 0..nseries {
        let n = rng.range(200.0, 900.0) as usize;
        let (period, phase) = (rng.range(0.5, 5.0), rng.range(0.0, 6.3));
        let mut t = 0.0;
        for _ in 0..n {
            t += rng.range(0.01, 0.5);
            let y = (std::f64::consts::TAU * t / period + phase).sin() + rng.range(-0.5, 0.5);
            d.t.push(T::from_f64(t));
            d.y.push(T::from_f64(y));
        }
        d.offsets.push(d.t.len());
    }
    d
}

/// Batched periodograms, flattened: `runs` times on one handle.
fn batches<T: Float>(kp: &Kernpack, data: &Data<T>, runs: usize) -> Vec<Vec<f64>> {
    let batch = Batch {
        t: &data.t,
        y: &data.y,
        weights: None,
        offsets: &data.offsets,
    };
    let grid = BatchGrid::Shared(UniformGrid::new(0.05, 2e-3, 3000));
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    (0..runs)
        .map(|_| {
            kp.lombscargle_batch(&batch, &grid, &opts)
                .unwrap()
                .iter()
                .flat_map(flat)
                .collect()
        })
        .collect()
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// `across`: the tolerance between two GPUs of different models (the same
/// model must agree bitwise); `cpu`: against the CPU reference, if checked.
fn two_gpus_side_by_side<T: Float>(across: f64, cpu: Option<f64>) {
    let data = ragged::<T>(48);
    let list = devices().unwrap();
    let same_model =
        list[0].name == list[1].name && list[0].compute_capability == list[1].compute_capability;
    let handles = [
        Kernpack::with_gpu(0).unwrap(),
        Kernpack::with_gpu(1).unwrap(),
    ];
    for (k, kp) in handles.iter().enumerate() {
        assert_eq!(kp.gpu().unwrap().ordinal(), k);
    }
    // One GPU alone first, then both at once from two threads.
    let alone: Vec<Vec<f64>> = handles
        .iter()
        .map(|kp| batches(kp, &data, 1).remove(0))
        .collect();
    let start = Barrier::new(2);
    let together: Vec<Vec<Vec<f64>>> = std::thread::scope(|s| {
        let runs: Vec<_> = handles
            .iter()
            .map(|kp| {
                let (start, data) = (&start, &data);
                s.spawn(move || {
                    start.wait();
                    batches(kp, data, 4)
                })
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    for k in 0..2 {
        for run in &together[k] {
            assert_eq!(
                bits(run),
                bits(&alone[k]),
                "GPU {k}: a run beside the other GPU differs from the run alone"
            );
        }
    }
    if same_model {
        assert_eq!(
            bits(&together[0][0]),
            bits(&together[1][0]),
            "GPU 0 and GPU 1 ({}) differ",
            list[0].name
        );
    } else {
        let e = scaled_max_error(&together[0][0], &together[1][0]);
        assert!(e <= across, "{} vs {}: {e:e}", list[0].name, list[1].name);
    }
    if let Some(tolerance) = cpu {
        let reference = batches(&Kernpack::new(Backend::Cpu).unwrap(), &data, 1).remove(0);
        let e = scaled_max_error(&together[0][0], &reference);
        assert!(e <= tolerance, "GPU vs CPU: {e:e}");
    }
}

#[test]
fn contexts_on_two_gpus_run_side_by_side_from_two_threads() {
    if at_least("contexts_on_two_gpus_run_side_by_side_from_two_threads", 2).is_none() {
        return;
    }
    two_gpus_side_by_side::<f64>(1e-9, Some(1e-8));
    two_gpus_side_by_side::<f32>(1e-2, None);
}
