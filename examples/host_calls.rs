//! Wall-clock medians of the safe API's host-memory calls, the path every
//! binding takes: copies in and out included. Written against the facade
//! methods only (`Kernpack::lombscargle`, ...), so the same file builds
//! against an older kernpack for a before/after comparison in one run.
//!
//! ```sh
//! cargo run --release --example host_calls -- [gpu|cpu] [reps]
//! ```
use std::time::Instant;

use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    Backend, BoxFilterOptions, Complex, FgOptions, Kernpack, LombScargleOptions, Lorenz96Params,
    Series,
};

/// Uniform values in [lo, hi) from a fixed-seed generator (no all-zero data).
fn values(n: usize, seed: u64, lo: f64, hi: f64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            lo + (hi - lo) * ((s >> 11) as f64 / (1u64 << 53) as f64)
        })
        .collect()
}

fn f32s(v: &[f64]) -> Vec<f32> {
    v.iter().map(|&x| x as f32).collect()
}

/// Median milliseconds of `reps` calls after two warm-ups.
fn time(reps: usize, mut call: impl FnMut()) -> f64 {
    call();
    call();
    let mut ms: Vec<f64> = (0..reps)
        .map(|_| {
            let started = Instant::now();
            call();
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[reps / 2]
}

fn main() -> kernpack::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let backend = match args.get(1).map(String::as_str) {
        Some("cpu") => Backend::Cpu,
        _ => Backend::Gpu,
    };
    let reps: usize = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(11);
    let kp = Kernpack::new(backend)?;
    let opts = LombScargleOptions::default();
    let row = |what: &str, ms: f64| println!("| {what} | {ms:.3} |");
    println!(
        "| host call ({}) | median ms |\n|---|---|",
        kp.backend_name()
    );

    for (nx, nf) in [(150usize, 10_000usize), (1024, 1 << 20)] {
        let t = f32s(&values(nx, 1, 0.0, 100.0));
        let y = f32s(&values(nx, 2, -1.0, 1.0));
        let grid = UniformGrid::new(0.01, 60.0 / nf as f64, nf);
        let freqs = f32s(&grid.frequencies());
        let series = Series::new(&t, &y);
        row(
            &format!("Lomb-Scargle {nx} x {nf} f32, frequency array"),
            time(reps, || {
                kp.lombscargle(&series, &freqs, &opts).unwrap();
            }),
        );
        row(
            &format!("Lomb-Scargle {nx} x {nf} f32, uniform grid"),
            time(reps, || {
                kp.lombscargle_uniform(&series, &grid, &opts).unwrap();
            }),
        );
    }

    // 10^4 series of 100-200 samples, 10^4 frequencies each.
    let lengths: Vec<usize> = values(10_000, 3, 100.0, 201.0)
        .iter()
        .map(|&v| v as usize)
        .collect();
    let mut offsets = vec![0usize];
    for len in &lengths {
        offsets.push(offsets.last().unwrap() + len);
    }
    let samples = *offsets.last().unwrap();
    let t = f32s(&values(samples, 4, 0.0, 100.0));
    let y = f32s(&values(samples, 5, -1.0, 1.0));
    let batch = Batch {
        t: &t,
        y: &y,
        weights: None,
        offsets: &offsets,
    };
    let grids = BatchGrid::Shared(UniformGrid::new(0.01, 0.006, 10_000));
    let reps_batch = reps.min(7);
    row(
        "Lomb-Scargle batch 10^4 x ~150 x 10^4 f32, periodograms",
        time(reps_batch, || {
            kp.lombscargle_batch(&batch, &grids, &opts).unwrap();
        }),
    );
    row(
        "Lomb-Scargle batch 10^4 x ~150 x 10^4 f32, peaks",
        time(reps, || {
            kp.lombscargle_batch_peaks(&batch, &grids, &opts).unwrap();
        }),
    );

    let side = 8192;
    let image = f32s(&values(side * side, 6, 0.0, 1.0));
    for size in [3, 31] {
        let opts = BoxFilterOptions {
            size,
            ..Default::default()
        };
        row(
            &format!("box filter {side}^2 f32 {size}x{size}"),
            time(reps, || {
                kp.box_filter(&image, side, side, &opts).unwrap();
            }),
        );
    }

    let x = f32s(&values(10_000_000, 7, 0.5, 1.5));
    let mut work = x.clone();
    row(
        "normalise 10^7 f32",
        time(reps, || {
            work.copy_from_slice(&x);
            kp.normalize(&mut work).unwrap();
        }),
    );

    let p = Lorenz96Params::default();
    let members = 100_000;
    let initial = values(members * p.n, 8, -2.0, 10.0);
    row(
        "Lorenz 96 10^5 members x 1000 steps f64",
        time(reps.min(5), || {
            kp.lorenz96(&p, &initial, 1000, 0).unwrap();
        }),
    );

    let n = 512;
    let re = values(n * n, 9, -1.0, 1.0);
    let im = values(n * n, 10, -1.0, 1.0);
    let f: Vec<Complex<f32>> = re
        .iter()
        .zip(&im)
        .map(|(&a, &b)| Complex {
            re: a as f32 / 512.0,
            im: b as f32 / 512.0,
        })
        .collect();
    let g = f.clone();
    let delta0 = Complex {
        re: 1.0f32,
        im: 0.0,
    };
    row(
        "F/G N = 512 x 100 steps complex64",
        time(reps, || {
            kp.fg_integrate(n, &f, &g, delta0, 1e-3, 100, &FgOptions::default())
                .unwrap();
        }),
    );
    Ok(())
}
