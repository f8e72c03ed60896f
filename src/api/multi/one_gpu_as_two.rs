//! The multi-GPU path on one real GPU listed twice: two parts, two host
//! threads, two buffer sets and streams, the gather in input order, all as
//! on two GPUs but on the one this machine has. Results must equal the
//! one-GPU calls bit for bit, as `two_gpus_*` in tests/multi_gpu.rs demand
//! of real pairs. Without a GPU these return early, unless
//! KERNPACK_REQUIRE_GPU=1 makes that a failure.
use super::test_data::ragged;
use super::MultiGpu;
use crate::api::lombscargle::batch::{Batch, BatchGrid};
use crate::api::lombscargle::{LombScargleOptions, Normalize, Periodogram};
use crate::gpu::Gpu;
use crate::test_rng::Rng;
use crate::{
    AdaptiveControl, AdaptiveStatus, Float, Kernpack, Lorenz63AdaptiveParams, Lorenz63Params,
    Lorenz96Params, PerMember,
};

/// GPU 0 as two parts of a MultiGpu, and GPU 0 alone; None without a GPU.
fn gpu0_twice(test: &str) -> Option<(MultiGpu, Kernpack)> {
    if Gpu::device_count() == 0 {
        let required = std::env::var("KERNPACK_REQUIRE_GPU").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "{test}: KERNPACK_REQUIRE_GPU=1 but there is no GPU"
        );
        println!("SKIPPED {test}: no GPU");
        return None;
    }
    let gpu = Gpu::get(0).expect("GPU 0 loads");
    Some((
        MultiGpu::of(vec![gpu.clone(), gpu]),
        Kernpack::with_gpu(0).unwrap(),
    ))
}

fn bits<T: Float>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

fn pbits<T: Float>(ps: &[Periodogram<T>]) -> Vec<Vec<u64>> {
    ps.iter()
        .map(|p| match p {
            Periodogram::Real(v) => bits(v),
            Periodogram::Complex(v) => v
                .iter()
                .flat_map(|c| [c.re.to_f64().to_bits(), c.im.to_f64().to_bits()])
                .collect(),
        })
        .collect()
}

#[test]
fn lombscargle_batch_in_two_parts_on_one_gpu_equals_one_piece() {
    let Some((two, one)) = gpu0_twice("lombscargle_batch_in_two_parts_on_one_gpu_equals_one_piece")
    else {
        return;
    };
    let c = ragged(900, 20..300, 0x51ed_2701 ^ std::process::id() as u64);
    let batch = Batch {
        t: &c.t,
        y: &c.y,
        weights: Some(&c.w),
        offsets: &c.offsets,
    };
    let grids = BatchGrid::PerSeries {
        f0: &c.f0,
        df: &c.df,
        nf: 1500,
    };
    for normalize in [Normalize::Normalize, Normalize::Amplitude] {
        let opts = LombScargleOptions {
            normalize,
            floating_mean: true,
            precenter: false,
        };
        let want = one.lombscargle_batch(&batch, &grids, &opts).unwrap();
        // Whole, then in chunks of at most 1 MiB of device memory per part.
        for multi in [two.clone(), two.clone().with_max_device_bytes(1 << 20)] {
            let (got, profiles) = multi
                .lombscargle_batch_profiled(&batch, &grids, &opts)
                .unwrap();
            assert!(
                profiles.len() == 2 && profiles.iter().all(|p| !p.plan.items.is_empty()),
                "both parts take series: {:?}",
                profiles.iter().map(|p| &p.plan.items).collect::<Vec<_>>()
            );
            assert!(
                pbits(&got) == pbits(&want),
                "{normalize:?}: periodograms differ from one piece"
            );
            let peaks = multi
                .lombscargle_batch_peaks(&batch, &grids, &opts)
                .unwrap();
            let want_peaks = one.lombscargle_batch_peaks(&batch, &grids, &opts).unwrap();
            assert_eq!(peaks, want_peaks, "{normalize:?}: peaks");
        }
    }
}

#[test]
fn ensembles_and_normalise_in_two_parts_on_one_gpu_equal_one_piece() {
    let Some((two, one)) =
        gpu0_twice("ensembles_and_normalise_in_two_parts_on_one_gpu_equal_one_piece")
    else {
        return;
    };
    let mut rng = Rng(0x3e11_9a0c ^ std::process::id() as u64);
    let p = Lorenz96Params::default();
    let members = 777;
    let initial: Vec<f64> = (0..members * p.n)
        .map(|_| p.forcing + rng.range(-1.0, 1.0))
        .collect();
    let want = one.lorenz96(&p, &initial, 200, 50).unwrap();
    for multi in [two.clone(), two.clone().with_max_device_bytes(256 << 10)] {
        let got = multi.lorenz96(&p, &initial, 200, 50).unwrap();
        assert_eq!(
            bits(&got.final_state),
            bits(&want.final_state),
            "final states"
        );
        assert_eq!(
            bits(got.trajectory.as_deref().unwrap()),
            bits(want.trajectory.as_deref().unwrap()),
            "trajectories"
        );
    }
    // Noisy, at chosen steps: each part's segments draw the noise of its
    // members and of the steps in the whole run.
    let noisy = Lorenz96Params {
        noise: 0.5,
        seed: 31,
        ..p
    };
    let save_at = [0, 33, 150, 200];
    let want = one
        .lorenz96_save_at(&noisy, &initial, 200, &save_at)
        .unwrap();
    for multi in [two.clone(), two.clone().with_max_device_bytes(256 << 10)] {
        let got = multi
            .lorenz96_save_at(&noisy, &initial, 200, &save_at)
            .unwrap();
        assert_eq!(
            bits(&got.final_state),
            bits(&want.final_state),
            "save_at final states"
        );
        assert_eq!(
            bits(got.trajectory.as_deref().unwrap()),
            bits(want.trajectory.as_deref().unwrap()),
            "save_at frames"
        );
    }

    // Lorenz 63 with per-member rho and beta and saved steps.
    let members = 1001;
    let initial: Vec<f64> = (0..3 * members).map(|_| rng.range(-15.0, 15.0)).collect();
    let rho: Vec<f64> = (0..members).map(|_| rng.range(20.0, 35.0)).collect();
    let beta: Vec<f64> = (0..members).map(|_| rng.range(2.0, 3.0)).collect();
    let p = Lorenz63Params {
        rho: PerMember::Each(rho.as_slice()),
        beta: PerMember::Each(beta.as_slice()),
        ..Lorenz63Params::default()
    };
    let save_at = [0, 17, 150];
    let want = one.lorenz63(&p, &initial, 150, &save_at).unwrap();
    for multi in [two.clone(), two.clone().with_max_device_bytes(64 << 10)] {
        let got = multi.lorenz63(&p, &initial, 150, &save_at).unwrap();
        assert_eq!(
            bits(&got.final_state),
            bits(&want.final_state),
            "L63 final states"
        );
        assert_eq!(bits(&got.saved), bits(&want.saved), "L63 saved states");
    }

    // Adaptive Lorenz 63 likewise, with save times and few steps allowed
    // (the median of the members' attempts in a full run): about half the
    // members stop early, their steps and statuses gathered too.
    let mut p = Lorenz63AdaptiveParams {
        rho: PerMember::Each(rho.as_slice()),
        beta: PerMember::Each(beta.as_slice()),
        t_end: 2.0,
        control: AdaptiveControl {
            rtol: 1e-5,
            atol: 1e-6,
            ..AdaptiveControl::default()
        },
        ..Lorenz63AdaptiveParams::default()
    };
    let full = one.lorenz63_adaptive(&p, &initial, &[]).unwrap();
    let mut attempts: Vec<u32> = (full.accepted.iter().zip(&full.rejected))
        .map(|(a, r)| a + r)
        .collect();
    attempts.sort_unstable();
    p.control.max_steps = attempts[members / 2];
    let save_times = [0.0, 0.5, 2.0];
    let want = one.lorenz63_adaptive(&p, &initial, &save_times).unwrap();
    for status in [AdaptiveStatus::Reached, AdaptiveStatus::MaxSteps] {
        assert!(want.status.contains(&status), "{status:?}");
    }
    for multi in [two.clone(), two.clone().with_max_device_bytes(64 << 10)] {
        let got = multi.lorenz63_adaptive(&p, &initial, &save_times).unwrap();
        assert_eq!(
            bits(&got.final_state),
            bits(&want.final_state),
            "adaptive L63 final states"
        );
        assert_eq!(bits(&got.saved), bits(&want.saved), "adaptive L63 saved");
        assert_eq!(got.accepted, want.accepted, "adaptive L63 accepted");
        assert_eq!(got.rejected, want.rejected, "adaptive L63 rejected");
        assert_eq!(got.status, want.status, "adaptive L63 status");
    }

    let mut offsets = vec![0usize];
    for _ in 0..600 {
        offsets.push(offsets.last().unwrap() + rng.below(900) as usize + 1);
    }
    let x: Vec<f32> = (0..*offsets.last().unwrap())
        .map(|_| rng.range(-1.0, 3.0) as f32)
        .collect();
    let mut want_x = x.clone();
    let want = one.normalize_batched(&mut want_x, &offsets).unwrap();
    for multi in [two.clone(), two.with_max_device_bytes(512 << 10)] {
        let mut got_x = x.clone();
        let got = multi.normalize_batched(&mut got_x, &offsets).unwrap();
        assert_eq!(bits(&got.sums), bits(&want.sums), "sums");
        assert_eq!(got.failed, want.failed);
        assert_eq!(bits(&got_x), bits(&want_x), "normalised arrays");
    }
}
