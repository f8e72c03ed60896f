//! Criterion benches of the Lomb-Scargle host API on each backend present.
//! Wall-clock per call, copies included; the kernel-only CUDA-event timings
//! and the side-by-side comparison are `kernpack bench lombscargle` and
//! benches/compare_lombscargle.py (see PERF.md).
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{Backend, Float, Kernpack, LombScargleOptions, Series};

fn inputs<T: Float>(nx: usize, nf: usize) -> (Vec<T>, Vec<T>, Vec<T>) {
    let t: Vec<f64> = (0..nx)
        .map(|i| i as f64 * 0.37 + (i as f64 * 0.61).sin())
        .collect();
    let y = t
        .iter()
        .map(|t| (1.3 * t).sin() + 0.1 * (7.1 * t).cos())
        .collect::<Vec<f64>>();
    let f = (0..nf)
        .map(|k| 0.01 + 20.0 * k as f64 / nf as f64)
        .collect::<Vec<f64>>();
    let cast = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect();
    (cast(t), cast(y), cast(f))
}

fn bench_backend<T: Float>(c: &mut Criterion, kp: &Kernpack, sizes: &[(usize, usize)]) {
    let mut group = c.benchmark_group(format!("lombscargle_{}_{}", kp.backend_name(), T::NAME));
    group.sample_size(10);
    for &(nx, nf) in sizes {
        let (t, y, f) = inputs::<T>(nx, nf);
        group.throughput(Throughput::Elements((nx * nf) as u64));
        group.bench_function(BenchmarkId::from_parameter(format!("{nx}x{nf}")), |b| {
            b.iter(|| {
                kp.lombscargle(&Series::new(&t, &y), &f, &LombScargleOptions::default())
                    .unwrap()
            })
        });
    }
    group.finish();
}

/// The uniform-grid kernel and the batched one (100 series of 100-200 samples).
fn bench_uniform<T: Float>(c: &mut Criterion, kp: &Kernpack) {
    let mut group = c.benchmark_group(format!(
        "lombscargle_uniform_{}_{}",
        kp.backend_name(),
        T::NAME
    ));
    group.sample_size(10);
    let (t, y, _) = inputs::<T>(1024, 1);
    let grid = UniformGrid::new(0.01, 20.0 / (1 << 20) as f64, 1 << 20);
    group.throughput(Throughput::Elements((1024 * grid.nf) as u64));
    group.bench_function("1024x1048576", |b| {
        b.iter(|| {
            kp.lombscargle_uniform(&Series::new(&t, &y), &grid, &LombScargleOptions::default())
                .unwrap()
        })
    });
    let (bt, by, _) = inputs::<T>(15_000, 1);
    let offsets: Vec<usize> = (0..=100).map(|s| s * 150).collect();
    let batch = Batch {
        t: &bt,
        y: &by,
        weights: None,
        offsets: &offsets,
    };
    let grids = BatchGrid::Shared(UniformGrid::new(0.01, 0.002, 10_000));
    group.throughput(Throughput::Elements((15_000 * 10_000) as u64));
    group.bench_function("batch_100x150x10000", |b| {
        b.iter(|| {
            kp.lombscargle_batch(&batch, &grids, &LombScargleOptions::default())
                .unwrap()
        })
    });
    group.finish();
}

fn lombscargle(c: &mut Criterion) {
    let cpu = Kernpack::new(Backend::Cpu).unwrap();
    bench_backend::<f64>(c, &cpu, &[(256, 4096)]);
    match Kernpack::new(Backend::Gpu) {
        Ok(gpu) => {
            bench_backend::<f32>(c, &gpu, &[(1024, 1 << 16), (1024, 1 << 20)]);
            bench_backend::<f64>(c, &gpu, &[(1024, 1 << 16), (1024, 1 << 20)]);
            bench_uniform::<f32>(c, &gpu);
            bench_uniform::<f64>(c, &gpu);
        }
        Err(e) => println!("GPU benches skipped: {e}"),
    }
}

criterion_group!(benches, lombscargle);
criterion_main!(benches);
