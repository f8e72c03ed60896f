//! Timings of the CPU box filter and sums (ignored: run by hand with
//! `cargo test --release --test cpu_timing -- --ignored --nocapture`).
//! Every figure sits beside a plain copy of the same array on the same thread
//! count, measured in the same run, since the machine's bandwidth varies.
use std::time::Instant;

use kernpack::{Backend, BoundaryMode, BoxFilterOptions, Kernpack};

fn median(mut t: Vec<f64>) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}

/// CPU seconds (user + system) this process has used: the work's cost on a
/// machine shared with other jobs, where wall times mostly measure the others.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command's closing parenthesis; utime and stime are
    // the 12th and 13th of them, in clock ticks (100 per second on Linux).
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|w| w.parse::<f64>().ok()).unwrap_or(0.0);
    (tick(11) + tick(12)) / 100.0
}

/// Median wall seconds and mean CPU seconds per call.
fn time_cpu(reps: usize, mut f: impl FnMut()) -> (f64, f64) {
    f();
    let c0 = cpu_seconds();
    let wall = median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    );
    (wall, (cpu_seconds() - c0) / reps as f64)
}

fn time(reps: usize, mut f: impl FnMut()) -> f64 {
    f(); // warm up (page faults of fresh buffers)
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// A copy of `src` into `dst` split over `threads` threads, as the filter splits rows.
fn copy(src: &[f32], dst: &mut [f32], threads: usize) {
    let n = src.len().div_ceil(threads);
    std::thread::scope(|s| {
        for (d, c) in dst.chunks_mut(n).zip(src.chunks(n)) {
            s.spawn(move || d.copy_from_slice(c));
        }
    });
}

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|v| v.split(',').map(|x| x.trim().parse().unwrap()).collect())
        .unwrap_or_else(|| default.to_vec())
}

#[test]
#[ignore]
fn box_filter_8192_f32() {
    let n = env_list("KP_TIMING_N", &[8192])[0];
    let reps = env_list("KP_TIMING_REPS", &[5])[0];
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let threads = kp.cpu_threads();
    let image: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 / 997.0)
        .collect();
    let mut out = vec![0.0f32; n * n];
    let gb = (2 * n * n * 4) as f64 / 1e9;
    println!("{n}x{n} f32, {threads} threads, medians of {reps}");
    for size in env_list("KP_TIMING_SIZES", &[3, 5, 7, 9, 15, 31, 33]) {
        let opts = BoxFilterOptions {
            size,
            mode: BoundaryMode::Reflect,
            cval: 0.0,
        };
        // KP_TIMING_NO_COPY=1: the filter alone (for perf stat).
        let (tc, cc) = if std::env::var_os("KP_TIMING_NO_COPY").is_some() {
            (f64::NAN, f64::NAN)
        } else {
            time_cpu(reps, || copy(&image, &mut out, threads))
        };
        let (tf, cf) = time_cpu(reps, || {
            kp.box_filter_into(
                &image,
                &mut out,
                &kernpack::ImageLayout::contiguous(n, n),
                &opts,
            )
            .unwrap()
        });
        println!(
            "size {size:2}: box {:7.1} ms ({:5.1} GB/s, cpu {:6.1} ms)  copy {:6.1} ms ({:5.1} GB/s, cpu {:5.1} ms)  box/copy bandwidth {:4.0}%",
            tf * 1e3,
            gb / tf,
            cf * 1e3,
            tc * 1e3,
            gb / tc,
            cc * 1e3,
            100.0 * tc / tf
        );
        let _ = (gb / tf, tc * 1e3, gb / tc, 100.0 * tc / tf);
    }
}

#[test]
#[ignore]
fn sum_and_normalize_f32_f64() {
    let n = env_list("KP_TIMING_N", &[8192])[0];
    let reps = env_list("KP_TIMING_REPS", &[5])[0];
    let kp = Kernpack::new(Backend::Cpu).unwrap();
    let threads = kp.cpu_threads();
    let x: Vec<f32> = (0..n * n)
        .map(|i| 1.0 + ((i * 7919) % 1000) as f32 / 997.0)
        .collect();
    let mut y = x.clone();
    let gb = (n * n * 4) as f64 / 1e9;
    let tc = time(reps, || copy(&x, &mut y, threads));
    let ts = time(reps, || {
        std::hint::black_box(kp.sum(&x).unwrap());
    });
    let tn = time(reps, || {
        kp.normalize(&mut y).unwrap();
    });
    println!("{} f32 values, {threads} threads, medians of {reps}", n * n);
    println!(
        "copy {:6.1} ms ({:5.1} GB/s read+write)  sum {:6.1} ms ({:5.1} GB/s read)  normalize {:6.1} ms ({:5.1} GB/s: read, read+write)",
        tc * 1e3,
        2.0 * gb / tc,
        ts * 1e3,
        gb / ts,
        tn * 1e3,
        3.0 * gb / tn
    );
    let x64: Vec<f64> = x.iter().map(|v| *v as f64).collect();
    let ts = time(reps, || {
        std::hint::black_box(kp.sum(&x64).unwrap());
    });
    println!(
        "sum f64 {:6.1} ms ({:5.1} GB/s read)",
        ts * 1e3,
        2.0 * gb / ts
    );
}
