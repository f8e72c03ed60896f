//! One GPU context shared by 16 threads, each running calls of every family
//! with its own sizes (Lorenz 2005 with different N, so different dynamic
//! shared memory on the same kernel): every result must be bitwise equal to
//! the same call made alone. Without a GPU the test prints SKIPPED; with
//! KERNPACK_REQUIRE_GPU=1 it fails.
mod common;

use std::sync::Arc;

use common::{gpu_or_skip, ragged, Rng};
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    Backend, BoxFilterOptions, Complex, FgOptions, Kernpack, LombScargleOptions, Lorenz05Model,
    Lorenz05Params, Lorenz96Params, MultiGpu, MultiGpuOptions, Normalize, Series,
};

/// Everything one thread computes, as bits.
fn run_all(kp: &Kernpack, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let mut bits = Vec::new();
    let mut keep = |v: &[f64]| bits.extend(v.iter().map(|x| x.to_bits()));

    // Lomb-Scargle: array frequencies, a uniform grid, a batch.
    let nx = 100 + (seed % 7) as usize * 37;
    let t: Vec<f64> = (0..nx)
        .map(|i| i as f64 * 0.3 + rng.range(0.0, 0.2))
        .collect();
    let y: Vec<f64> = t
        .iter()
        .map(|t| (0.9 * t).sin() + rng.range(-0.3, 0.3))
        .collect();
    let freqs: Vec<f64> = (1..=500).map(|k| k as f64 * 0.01).collect();
    let opts = LombScargleOptions {
        normalize: Normalize::Normalize,
        floating_mean: true,
        precenter: false,
    };
    let series = Series::new(&t, &y);
    keep(&kp.lombscargle(&series, &freqs, &opts).unwrap().magnitudes());
    let grid = UniformGrid::new(0.01, 0.003, 2000 + seed as usize);
    keep(
        &kp.lombscargle_uniform(&series, &grid, &opts)
            .unwrap()
            .magnitudes(),
    );
    let offsets = [0, nx / 3, nx];
    let batch = Batch {
        t: &t,
        y: &y,
        weights: None,
        offsets: &offsets,
    };
    for p in kp
        .lombscargle_batch(&batch, &BatchGrid::Shared(grid), &opts)
        .unwrap()
    {
        keep(&p.magnitudes());
    }

    // Sum, normalise, batched normalise.
    let mut x: Vec<f32> = (0..50_000 + seed as usize * 1000)
        .map(|_| rng.range(0.5, 1.5) as f32)
        .collect();
    keep(&[kp.sum(&x).unwrap()]);
    keep(&[kp.normalize(&mut x).unwrap()]);
    keep(&x.iter().map(|v| *v as f64).collect::<Vec<_>>());
    let cut = [0, 1000, 1000, x.len()];
    let done = kp.normalize_batched(&mut x, &cut).unwrap();
    keep(&done.sums);

    // Box filter: a small and a large window.
    let (rows, cols) = (64 + seed as usize, 80);
    let image: Vec<f64> = (0..rows * cols).map(|_| rng.range(-1.0, 1.0)).collect();
    for size in [5, 21] {
        let o = BoxFilterOptions {
            size,
            ..Default::default()
        };
        keep(&kp.box_filter(&image, rows, cols, &o).unwrap());
    }

    // Lorenz 96, Lorenz 2005 on the generic kernel (its dynamic shared
    // memory depends on N, and goes past 48 KB for the larger N), a window sum.
    let p96 = Lorenz96Params::default();
    let z96: Vec<f64> = (0..8 * p96.n).map(|_| rng.range(-1.0, 8.0)).collect();
    keep(&kp.lorenz96(&p96, &z96, 50, 0).unwrap().final_state);
    let p05 = Lorenz05Params {
        n: [300, 1200, 2000][(seed % 3) as usize],
        k: 16,
        j: 6,
        model: Lorenz05Model::III,
        ..Default::default()
    };
    let z05: Vec<f64> = (0..2 * p05.n).map(|_| rng.range(-1.0, 8.0)).collect();
    keep(&kp.lorenz05(&p05, &z05, 20, 0).unwrap().final_state);
    let w = [0.25, 0.5, 0.25];
    keep(&kp.window_sum(&z05, &w, 2, p05.n).unwrap());

    // The coupled F/G system.
    let n = 24;
    let f: Vec<Complex<f64>> = (0..n * n)
        .map(|_| Complex {
            re: rng.range(-1.0, 1.0),
            im: rng.range(-1.0, 1.0),
        })
        .collect();
    let run = kp
        .fg_integrate(
            n,
            &f,
            &f,
            Complex { re: 0.1, im: 0.0 },
            1e-3,
            10,
            &FgOptions::default(),
        )
        .unwrap();
    keep(
        &run.delta
            .iter()
            .flat_map(|c| [c.re, c.im])
            .collect::<Vec<_>>(),
    );
    bits
}

#[test]
fn sixteen_threads_share_one_gpu_context() {
    if gpu_or_skip("sixteen_threads_share_one_gpu_context").is_none() {
        return;
    }
    let kp = Arc::new(Kernpack::new(Backend::Gpu).unwrap());
    same_together_as_alone(&kp, 16, run_all);
}

/// `threads` threads run `work(kp, seed)` (seed = the thread's number) at
/// once, three rounds: each result must be bitwise the one of the same call
/// made alone.
fn same_together_as_alone(kp: &Arc<Kernpack>, threads: u64, work: fn(&Kernpack, u64) -> Vec<u64>) {
    let alone: Vec<Vec<u64>> = (0..threads).map(|s| work(kp, s)).collect();
    for round in 0..3 {
        let handles: Vec<_> = (0..threads)
            .map(|s| {
                let kp = kp.clone();
                std::thread::spawn(move || work(&kp, s))
            })
            .collect();
        for (s, h) in handles.into_iter().enumerate() {
            let together = h.join().expect("a thread panicked");
            assert!(
                together == alone[s],
                "round {round}, thread {s}: results differ from the call made alone"
            );
        }
    }
}

/// Batched peaks of `seed`'s survey-like batch (hundreds of series) through
/// the chunk pipeline of `kp`, as bits of (index, value) per series.
fn batch_peaks(kp: &Kernpack, seed: u64) -> Vec<u64> {
    let d = ragged(300 + (seed % 5) as usize * 40, 40, 200, seed);
    let batch = Batch {
        t: &d.t,
        y: &d.y,
        weights: None,
        offsets: &d.offsets,
    };
    let grid = UniformGrid::new(0.01, 0.002, 3000);
    let opts = LombScargleOptions::default();
    kp.lombscargle_batch_peaks(&batch, &BatchGrid::Shared(grid), &opts)
        .unwrap()
        .iter()
        .flat_map(|p| {
            let p = p.expect("every series has a peak");
            [p.index as u64, p.value.to_bits()]
        })
        .collect()
}

/// Eight threads run chunked batched peaks on one GPU at once (many chunks
/// per call): their chunks' kernels take turns on the GPU and their staging
/// comes from one shared pool, and each result is bitwise the one of the
/// same call made alone.
#[test]
fn threads_share_one_gpus_chunk_pipeline() {
    let Some(gpu) = gpu_or_skip("threads_share_one_gpus_chunk_pipeline") else {
        return;
    };
    let chunked = MultiGpu::new(&[gpu.ordinal()])
        .unwrap()
        .with_options(MultiGpuOptions {
            max_device_bytes: Some(16 << 20),
            chunk_bytes: 1 << 20,
        });
    let kp = Arc::new(Kernpack::from(chunked));
    same_together_as_alone(&kp, 8, batch_peaks);
}
