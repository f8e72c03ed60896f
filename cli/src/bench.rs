//! `kernpack bench lombscargle`: times the kernels with CUDA events (warm-up,
//! then the median of many runs) on given or synthetic inputs, and reports the
//! cold start. benches/compare_lombscargle.py runs it beside cupyx and Numba.
//! Also `lombscargle-batch`, `reduce`, `lorenz96` and `lorenz05`. With
//! `--backend cpu`, each times the CPU backend instead: wall-clock medians on
//! host slices, against a threaded host copy of the same bytes (the memory
//! roofline) where the work is memory-bound; same inputs and RESULT lines.
use std::marker::PhantomData;
use std::path::PathBuf;
use std::time::Instant;

use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::{output_len, UniformGrid};
use kernpack::{
    Backend, Float, Gpu, Kernpack, LombScargleBatchOnDevice, LombScargleOnDevice,
    LombScargleOptions, Lorenz05OnDevice, Lorenz05Params, Lorenz96OnDevice, Lorenz96Params,
    NormalizeOnDevice, Periodogram, Series, SumOnDevice,
};

use crate::io::{check_output, read_raw_f64, write_raw_f64};
use crate::lorenz_cmd::perturbed_states;
use crate::memory::check_room;
use crate::options::{cast, Dtype, ModelArg, NormalizeArg};
use crate::synthetic::Uniform;
use crate::timing::{
    event_median, event_times, host_copy_median, wall_median, BenchResult, Timing,
};

/// One periodogram on given (raw little-endian f64 files) or synthetic inputs.
#[derive(clap::Args, Debug)]
pub struct BenchLombScargleArgs {
    /// Times, raw little-endian f64 (with --y and --freqs).
    #[arg(long, value_name = "FILE", requires_all = ["y", "freqs"])]
    pub t: Option<PathBuf>,
    /// Values, raw little-endian f64.
    #[arg(long, value_name = "FILE", requires_all = ["t", "freqs"])]
    pub y: Option<PathBuf>,
    /// Angular frequencies, raw little-endian f64.
    #[arg(long, value_name = "FILE", requires_all = ["t", "y"])]
    pub freqs: Option<PathBuf>,
    /// Samples of the synthetic series.
    #[arg(long, default_value_t = 1024, conflicts_with = "t")]
    pub nx: usize,
    /// Frequencies of the synthetic grid.
    #[arg(long, default_value_t = 1 << 20, conflicts_with = "t", value_parser = clap::value_parser!(u64).range(1..))]
    pub nf: u64,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    /// What each frequency's value is.
    #[arg(long, value_enum, default_value_t = NormalizeArg::Power)]
    pub normalize: NormalizeArg,
    /// Fit an offset per frequency.
    #[arg(long)]
    pub floating_mean: bool,
    /// The recurrence kernel on the uniform grid from the first to the last frequency.
    #[arg(long)]
    pub uniform: bool,
    /// Write the result (raw little-endian f64) here, for comparison with other tools.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn lombscargle(args: &BenchLombScargleArgs) -> BenchResult {
    if let Some(path) = &args.out {
        check_output(path)?;
    }
    let (t, y, f) = match (&args.t, &args.y, &args.freqs) {
        (Some(t), Some(y), Some(f)) => (read_raw_f64(t)?, read_raw_f64(y)?, read_raw_f64(f)?),
        _ => {
            check_room::<f64>("--nx", &[args.nx, 2])?;
            check_room::<f64>("--nf", &[args.nf as usize, 2])?;
            synthetic(args.nx, args.nf as usize)
        }
    };
    if f.is_empty() {
        return Err("no frequencies".into());
    }
    let opts = LombScargleOptions {
        normalize: args.normalize.into(),
        floating_mean: args.floating_mean,
        precenter: false,
    };
    let reps = args.timing.reps();
    // --uniform: the recurrence kernel on the grid from f[0] to f[nf-1].
    let grid = args
        .uniform
        .then(|| UniformGrid::spanning(f[0], f[f.len() - 1], f.len()));
    let values = match args.timing.on_cpu() {
        true => by_dtype!(args.dtype, lombscargle_cpu(&t, &y, &f, grid, &opts, reps)),
        false => by_dtype!(args.dtype, bench(&t, &y, &f, grid, &opts, reps)),
    }?;
    if let Some(path) = &args.out {
        write_raw_f64(path, &values)?;
    }
    Ok(())
}

/// An irregular light curve over 100 time units and a uniform grid up to ~60 rad/unit.
fn synthetic(nx: usize, nf: usize) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let mut rng = Uniform::new(0x2545_f491_4f6c_dd1d);
    let mut t: Vec<f64> = (0..nx).map(|_| 100.0 * rng.next()).collect();
    t.sort_by(f64::total_cmp);
    let y = t
        .iter()
        .map(|t| (1.7 * t).sin() + 0.5 * (rng.next() - 0.5))
        .collect();
    let f = (0..nf)
        .map(|k| 0.01 + 60.0 * k as f64 / nf as f64)
        .collect();
    (t, y, f)
}

fn bench<T: Float>(
    t: &[f64],
    y: &[f64],
    f: &[f64],
    grid: Option<UniformGrid>,
    opts: &LombScargleOptions,
    reps: usize,
) -> BenchResult<Vec<f64>> {
    let (t, y, f) = (cast::<T>(t), cast::<T>(y), cast::<T>(f));

    // Cold start: context creation, then the first result of a device-buffer
    // call (inputs already on the GPU, as cupyx and Numba are timed), which
    // loads the Lomb-Scargle family and resolves its kernels on the way, then
    // a host-slice call with its copies.
    let started = Instant::now();
    let gpu = Gpu::get(0)?;
    type Buf<T> = cudarc::driver::CudaSlice<T>;
    let run = |out: &mut Buf<T>, dt: &Buf<T>, dy: &Buf<T>, df: &Buf<T>| {
        let stream = gpu.stream();
        gpu.enqueue_buffers(match &grid {
            Some(grid) => {
                LombScargleOnDevice::uniform_buffers(stream, dt, dy, None, grid, out, opts)
            }
            None => LombScargleOnDevice::buffers(stream, dt, dy, None, df, out, opts),
        }?)
    };
    let context = started.elapsed().as_secs_f64() * 1e3;
    let stream = gpu.stream();
    let (dt, dy, df) = (
        stream.clone_htod(&t)?,
        stream.clone_htod(&y)?,
        stream.clone_htod(&f)?,
    );
    let mut out = stream.clone_htod(&vec![T::from_f64(f64::NAN); output_len(f.len(), opts)])?;
    stream.synchronize()?;
    let first_started = Instant::now();
    run(&mut out, &dt, &dy, &df)?;
    stream.synchronize()?;
    let first_call = first_started.elapsed().as_secs_f64() * 1e3;
    let image = gpu.image_time().as_secs_f64() * 1e3;
    let load = gpu.module_load_time().as_secs_f64() * 1e3;
    let resolve = gpu.kernel_resolve_time().as_secs_f64() * 1e3;
    let second_started = Instant::now();
    run(&mut out, &dt, &dy, &df)?;
    stream.synchronize()?;
    let second_call = second_started.elapsed().as_secs_f64() * 1e3;
    let host_started = Instant::now();
    let series = Series::new(&t, &y);
    let kp = Kernpack::from(gpu.clone());
    let first = match &grid {
        Some(grid) => kp.lombscargle_uniform(&series, grid, opts),
        None => kp.lombscargle(&series, &f, opts),
    }?;
    let host_call = host_started.elapsed().as_secs_f64() * 1e3;
    say!(
        "cold start: context {context:.2} ms; module load + first result {first_call:.3} ms \
         (image chosen and decompressed {image:.3}, cuModuleLoadData {load:.3}, kernels resolved {resolve:.3}, \
         launches and wait {:.3}; {}); \
         second call {second_call:.3} ms; then a host-slice call with copies {host_call:.3} ms",
        first_call - image - load - resolve,
        gpu.images()
            .iter()
            .map(|(family, image)| format!("{family}: {image}"))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let times = event_times(
        stream,
        reps,
        &mut out,
        |_| Ok(()),
        |out| run(out, &dt, &dy, &df),
    )?;
    let median = times[times.len() / 2];
    let pairs = t.len() as f64 * f.len() as f64;
    say!(
        "RESULT kernpack lombscargle mode={} dtype={} nx={} nf={} median_ms={median:.4} min_ms={:.4} gpairs_per_s={:.1} first_call_ms={first_call:.3} module_load_ms={:.3}",
        if grid.is_some() { "uniform" } else { "direct" },
        T::NAME,
        t.len(),
        f.len(),
        times[0],
        pairs / median / 1e6,
        image + load
    );
    let values: Vec<f64> = stream
        .clone_dtoh(&out)?
        .iter()
        .map(|v| v.to_f64())
        .collect();
    debug_assert_eq!(values.len(), output_len(first.len(), opts));
    Ok(values)
}

/// One periodogram on the CPU: `grid` for the uniform-grid path, else `f`.
fn lombscargle_cpu<T: Float>(
    t: &[f64],
    y: &[f64],
    f: &[f64],
    grid: Option<UniformGrid>,
    opts: &LombScargleOptions,
    reps: usize,
) -> BenchResult<Vec<f64>> {
    let kp = Kernpack::new(Backend::Cpu)?;
    let (t, y, f) = (cast::<T>(t), cast::<T>(y), cast::<T>(f));
    let series = Series::new(&t, &y);
    let mut last = None;
    let median = wall_median(reps, || {
        last = Some(match &grid {
            Some(grid) => kp.lombscargle_uniform(&series, grid, opts)?,
            None => kp.lombscargle(&series, &f, opts)?,
        });
        Ok(())
    })?;
    let pairs = t.len() as f64 * f.len() as f64;
    say!(
        "RESULT kernpack lombscargle backend=cpu threads={} mode={} dtype={} nx={} nf={} median_ms={median:.4} gpairs_per_s={:.3}",
        kp.cpu_threads(),
        if grid.is_some() { "uniform" } else { "direct" },
        T::NAME,
        t.len(),
        f.len(),
        pairs / median / 1e6
    );
    // Raw values as the GPU side writes them: complex amplitudes interleaved.
    Ok(match last {
        Some(Periodogram::Real(v)) => v.iter().map(|x| x.to_f64()).collect(),
        Some(Periodogram::Complex(v)) => v
            .iter()
            .flat_map(|z| [z.re.to_f64(), z.im.to_f64()])
            .collect(),
        None => Vec::new(),
    })
}

/// `kernpack bench lombscargle-batch`: many short series in one launch against
/// the same kernel on one long series, in pairs per second.
/// Synthetic series of random lengths, each with its own grid.
#[derive(clap::Args, Debug)]
pub struct BenchBatchArgs {
    /// Series in the batch.
    #[arg(long, default_value_t = 10_000)]
    pub nseries: usize,
    /// Fewest samples per series.
    #[arg(long, default_value_t = 100)]
    pub min: usize,
    /// Most samples per series.
    #[arg(long, default_value_t = 200)]
    pub max: usize,
    /// Frequencies per series.
    #[arg(long, default_value_t = 10_000)]
    pub nf: usize,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    /// Fit an offset per frequency.
    #[arg(long)]
    pub floating_mean: bool,
    /// Also time whole calls from host memory: every periodogram back, the
    /// highest peak of each series, and its K best peaks (GPU only).
    #[arg(long, value_name = "K")]
    pub top: Option<usize>,
    #[command(flatten)]
    pub timing: Timing<10>,
}

pub fn batch(args: &BenchBatchArgs) -> BenchResult {
    let opts = LombScargleOptions {
        floating_mean: args.floating_mean,
        ..Default::default()
    };
    if args.min == 0 || args.min > args.max {
        let (min, max) = (args.min, args.max);
        return Err(format!("need 1 <= --min <= --max, got --min {min} --max {max}").into());
    }
    check_room::<f64>(
        "the samples (--nseries x --max)",
        &[args.nseries, args.max, 2],
    )?;
    by_dtype!(args.dtype, bench_batch(args, &opts))
}

/// Synthetic batch: series of random lengths in [lo, hi] over random spans,
/// each with its own grid; (t, y, offsets, f0, df).
type SyntheticBatch<T> = (Vec<T>, Vec<T>, Vec<usize>, Vec<f64>, Vec<f64>);

fn synthetic_batch<T: Float>(nseries: usize, lo: usize, hi: usize) -> SyntheticBatch<T> {
    let mut rng = Uniform::new(0x51ed_2701);
    let (mut t, mut y, mut offsets, mut f0, mut df) =
        (vec![], vec![], vec![0usize], vec![], vec![]);
    for _ in 0..nseries {
        let n = lo + (rng.next() * (hi - lo + 1) as f64) as usize;
        let span = 50.0 + 300.0 * rng.next();
        for _ in 0..n {
            let ti = span * rng.next();
            t.push(T::from_f64(ti));
            y.push(T::from_f64(
                (std::f64::consts::TAU * ti / 3.3).sin() + 0.3 * rng.normal(),
            ));
        }
        offsets.push(t.len());
        f0.push(std::f64::consts::TAU / span);
        df.push(std::f64::consts::TAU / (10.0 * span));
    }
    (t, y, offsets, f0, df)
}

fn bench_batch<T: Float>(args: &BenchBatchArgs, opts: &LombScargleOptions) -> BenchResult {
    use cudarc::driver::{DevicePtr, DevicePtrMut};
    use kernpack::api::lombscargle::batch::BatchDeviceBuffers;
    let (nseries, nf, reps) = (args.nseries, args.nf, args.timing.reps());
    let (t, y, offsets, f0, df) = synthetic_batch::<T>(nseries, args.min, args.max);
    if args.timing.on_cpu() {
        let batch = Batch {
            t: &t,
            y: &y,
            weights: None,
            offsets: &offsets,
        };
        let (f0, df) = (&f0, &df);
        return batch_cpu(&batch, &BatchGrid::PerSeries { f0, df, nf }, opts, reps);
    }
    let offsets: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let (dt, dy) = (stream.clone_htod(&t)?, stream.clone_htod(&y)?);
    let doff = stream.clone_htod(&offsets)?;
    let (df0, ddf) = (stream.clone_htod(&f0)?, stream.clone_htod(&df)?);
    let mut out = stream.alloc_zeros::<T>(nseries * output_len(nf, opts))?;
    let (o, _o) = out.device_ptr_mut(stream);
    let buffers = BatchDeviceBuffers {
        t: dt.device_ptr(stream).0,
        y: dy.device_ptr(stream).0,
        weights: None,
        offsets: doff.device_ptr(stream).0,
        f0: df0.device_ptr(stream).0,
        df: ddf.device_ptr(stream).0,
        per_series_grid: true,
        out: o,
    };
    // SAFETY: every buffer above is live for the whole measurement.
    #[rustfmt::skip]
    let op = LombScargleBatchOnDevice::<T> { buffers, nseries, nf, opts: *opts, dtype: PhantomData };
    let batch_ms = event_median(stream, reps, || unsafe { gpu.enqueue(stream, &op) })?;
    let batch_rate = t.len() as f64 * nf as f64 / (batch_ms * 1e-3);

    // The same kernel on one long series: nx = 1024, nf = 2^20.
    let (st, sy, sf) = synthetic(1024, 1 << 20);
    let (st, sy) = (
        stream.clone_htod(&cast::<T>(&st))?,
        stream.clone_htod(&cast::<T>(&sy))?,
    );
    let grid = UniformGrid::spanning(sf[0], sf[sf.len() - 1], sf.len());
    let mut sout = stream.alloc_zeros::<T>(output_len(grid.nf, opts))?;
    let single_ms = event_median(stream, reps, || {
        let call =
            LombScargleOnDevice::uniform_buffers(stream, &st, &sy, None, &grid, &mut sout, opts);
        gpu.enqueue_buffers(call?)
    })?;
    let single_rate = 1024.0 * grid.nf as f64 / (single_ms * 1e-3);
    say!(
        "RESULT kernpack lombscargle-batch dtype={} nseries={nseries} samples={} nf={nf} median_ms={batch_ms:.3} gpairs_per_s={:.1} single_series_gpairs_per_s={:.1} fraction={:.3}",
        T::NAME,
        t.len(),
        batch_rate / 1e9,
        single_rate / 1e9,
        batch_rate / single_rate
    );
    if let Some(k) = args.top {
        let offsets: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
        let batch = Batch {
            t: &t,
            y: &y,
            weights: None,
            offsets: &offsets,
        };
        let grids = BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf,
        };
        whole_calls(&gpu, &batch, &grids, opts, k, reps)?;
    }
    Ok(())
}

/// CUDA-event medians of whole batch calls from host memory: every
/// periodogram copied back, only the highest peak, only the `k` best peaks.
fn whole_calls<T: Float>(
    gpu: &std::sync::Arc<Gpu>,
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
    k: usize,
    reps: usize,
) -> BenchResult {
    use kernpack::api::lombscargle::peaks::PeakOptions;
    let kp = Kernpack::from(gpu.clone());
    let top = PeakOptions { k, separation: 0.0 };
    let stream = gpu.stream();
    let all_ms = event_median(stream, reps, || {
        kp.lombscargle_batch(batch, grids, opts).map(drop)
    })?;
    let best_ms = event_median(stream, reps, || {
        kp.lombscargle_batch_peaks(batch, grids, opts).map(drop)
    })?;
    let top_ms = event_median(stream, reps, || {
        kp.lombscargle_batch_top_peaks(batch, grids, opts, &top)
            .map(drop)
    })?;
    let rate = |ms: f64| batch.len() as f64 / (ms * 1e-3);
    say!(
        "RESULT kernpack lombscargle-batch whole calls dtype={} nseries={} nf={} every_periodogram_ms={all_ms:.3} ({:.0}/s) highest_peak_ms={best_ms:.3} ({:.0}/s) top{k}_ms={top_ms:.3} ({:.0}/s)",
        T::NAME,
        batch.len(),
        grids.nf(),
        rate(all_ms),
        rate(best_ms),
        rate(top_ms)
    );
    Ok(())
}

/// Many series, each with its own grid, in one call on the CPU.
fn batch_cpu<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
    reps: usize,
) -> BenchResult {
    let kp = Kernpack::new(Backend::Cpu)?;
    let (t, nf) = (batch.t, grids.nf());
    let median = wall_median(reps, || kp.lombscargle_batch(batch, grids, opts).map(drop))?;
    say!(
        "RESULT kernpack lombscargle-batch backend=cpu threads={} dtype={} nseries={} samples={} nf={nf} median_ms={median:.3} gpairs_per_s={:.3}",
        kp.cpu_threads(),
        T::NAME,
        batch.len(),
        t.len(),
        t.len() as f64 * nf as f64 / median / 1e6
    );
    Ok(())
}

/// `kernpack bench reduce`: sum and normalise in place, against a device-to-
/// device copy of the same bytes (the memory roofline) in the same process.
/// One array of random values.
#[derive(clap::Args, Debug)]
pub struct BenchReduceArgs {
    /// Elements.
    #[arg(long, default_value_t = 1 << 28)]
    pub n: usize,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn reduce(args: &BenchReduceArgs) -> BenchResult {
    check_room::<f64>("--n", &[args.n])?;
    by_dtype!(args.dtype, bench_reduce(args.n, &args.timing))
}

fn bench_reduce<T: Float>(n: usize, timing: &Timing) -> BenchResult {
    let reps = timing.reps();
    let mut rng = Uniform::new(0x0dd5_eed5);
    let host: Vec<T> = (0..n).map(|_| T::from_f64(0.5 + rng.next())).collect();
    if timing.on_cpu() {
        return reduce_cpu(&host, reps);
    }
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let x = stream.clone_htod(&host)?;
    let mut y = stream.clone_htod(&host)?;
    let mut copy = stream.clone_htod(&host)?;
    let mut sum = stream.alloc_zeros::<f64>(1)?;
    let mut status = stream.alloc_zeros::<i32>(1)?;
    let bytes = (n * std::mem::size_of::<T>()) as f64;
    let copy_ms = event_median(stream, reps, || {
        stream
            .memcpy_dtod(&x, &mut copy)
            .map_err(|e| kernpack::Error::cuda("copying", e))
    })?;
    let sum_ms = event_median(stream, reps, || {
        gpu.enqueue_buffers(SumOnDevice::buffers(stream, &x, &mut sum)?)
    })?;
    // Normalising repeatedly keeps the data valid (the sum stays 1 after the first).
    let norm_ms = event_median(stream, reps, || {
        gpu.enqueue_buffers(NormalizeOnDevice::buffers(
            stream,
            &mut y,
            &mut sum,
            &mut status,
        )?)
    })?;
    let copy_bw = 2.0 * bytes / (copy_ms * 1e-3);
    say!(
        "RESULT kernpack reduce dtype={} n={n} copy_ms={copy_ms:.4} copy_tb_s={:.3} sum_ms={sum_ms:.4} sum_of_copy_bw={:.3} normalize_ms={norm_ms:.4} normalize_of_three_pass_bound={:.3}",
        T::NAME,
        copy_bw / 1e12,
        (bytes / (sum_ms * 1e-3)) / copy_bw,
        (3.0 * bytes / copy_bw) / (norm_ms * 1e-3)
    );
    // The host cost of the device path's pointer checks: enqueueing the same
    // sum through cudarc buffers (guards, then the two pointers checked
    // against the driver) and through raw pointers (the C ABI's and Python's
    // path: the checks alone), wall clock per call, median of 7 rounds of
    // 2000 calls each.
    let (x_ptr, sum_ptr) = {
        use cudarc::driver::{DevicePtr, DevicePtrMut};
        (x.device_ptr(stream).0, sum.device_ptr_mut(stream).0)
    };
    let per_call_us = |f: &mut dyn FnMut() -> kernpack::Result<()>| -> BenchResult<f64> {
        let mut rounds = Vec::new();
        for _ in 0..7 {
            stream.synchronize()?;
            let start = std::time::Instant::now();
            for _ in 0..2000 {
                f()?;
            }
            rounds.push(start.elapsed().as_secs_f64() * 1e6 / 2000.0);
            stream.synchronize()?;
        }
        rounds.sort_by(f64::total_cmp);
        Ok(rounds[3])
    };
    let buffers_us =
        per_call_us(&mut || gpu.enqueue_buffers(SumOnDevice::buffers(stream, &x, &mut sum)?))?;
    #[rustfmt::skip]
    let op = SumOnDevice::<T> { x: x_ptr, n, sum: sum_ptr, dtype: PhantomData };
    // SAFETY: x and sum are live allocations of this GPU holding n and 1 values.
    let raw_us = per_call_us(&mut || unsafe { gpu.enqueue(stream, &op) })?;
    // One pointer check alone (cuPointerGetAttributes and the range test).
    let check_us = per_call_us(&mut || gpu.check_device_array::<T>("x", x_ptr, n))?;
    say!(
        "RESULT kernpack enqueue dtype={} n={n} sum_device_us={buffers_us:.2} sum_raw_us={raw_us:.2} one_pointer_check_us={check_us:.3}",
        T::NAME,
    );
    Ok(())
}
/// Sum and normalise against a copy of the same bytes.
fn reduce_cpu<T: Float>(host: &[T], reps: usize) -> BenchResult {
    let kp = Kernpack::new(Backend::Cpu)?;
    let mut scratch = host.to_vec();
    let copy = host_copy_median(host, &mut scratch, reps)?;
    let sum = wall_median(reps, || kp.sum(host).map(drop))?;
    // Normalising repeatedly keeps the data valid (the sum stays 1 after the first).
    let norm = wall_median(reps, || kp.normalize(&mut scratch).map(drop))?;
    let bytes = std::mem::size_of_val(host) as f64;
    let copy_bw = 2.0 * bytes / copy;
    say!(
        "RESULT kernpack reduce backend=cpu threads={} dtype={} n={} copy_ms={copy:.3} copy_gb_s={:.2} sum_ms={sum:.3} sum_of_copy_bw={:.3} normalize_ms={norm:.3} normalize_of_three_pass_bound={:.3}",
        kp.cpu_threads(),
        T::NAME,
        host.len(),
        copy_bw / 1e6,
        (bytes / sum) / copy_bw,
        (3.0 * bytes / copy_bw) / norm
    );
    Ok(())
}

/// Whole ensemble runs from DART's initial state plus 1e-3 noise.
#[derive(clap::Args, Debug)]
pub struct BenchLorenzArgs {
    /// Ensemble size [default: 100000 for Lorenz 96, 40 for Lorenz 2005].
    #[arg(long)]
    pub members: Option<usize>,
    /// RK4 steps per run.
    #[arg(long, default_value_t = 1000)]
    pub steps: u64,
    /// Sites [default: the model's].
    #[arg(long)]
    pub n: Option<usize>,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    /// Lorenz 2005 model number.
    #[arg(long, value_enum, default_value_t = ModelArg::Three)]
    pub model: ModelArg,
    /// Lorenz 2005 smoothing half-width K [default: DART's].
    #[arg(long)]
    pub k: Option<usize>,
    /// Lorenz 2005 filter half-width J [default: DART's].
    #[arg(long)]
    pub j: Option<usize>,
    /// Lorenz 96 kernel: members per block (1: a block per member) [default: automatic].
    #[arg(long)]
    pub members_per_block: Option<usize>,
    /// Lorenz 2005 kernel: 1 the generic one, 2 or 4 a specialised one [default: automatic].
    #[arg(long)]
    pub sites_per_thread: Option<usize>,
    #[command(flatten)]
    pub timing: Timing<10>,
}

/// `kernpack bench lorenz96|lorenz05`: one whole ensemble run (all members,
/// all steps, one launch) on device buffers, CUDA-event median after warm-up.
/// `--members-per-block B` (Lorenz 96) overrides the packing, to measure
/// alternatives (1: a block per member); `--sites-per-thread P` (Lorenz 2005)
/// picks the kernel: 1 the generic one, 2 or 4 a specialised one (DART's K and J).
pub fn lorenz(family: &str, args: &BenchLorenzArgs) -> BenchResult {
    by_dtype!(args.dtype, bench_lorenz(family, args))
}

fn bench_lorenz<T: Float>(family: &str, args: &BenchLorenzArgs) -> BenchResult {
    let l96 = family == "lorenz96";
    let d05 = Lorenz05Params::default();
    let p05 = Lorenz05Params {
        n: args.n.unwrap_or(d05.n),
        k: args.k.unwrap_or(d05.k),
        j: args.j.unwrap_or(d05.j),
        model: args.model.into(),
        ..d05
    };
    let p96 = Lorenz96Params {
        n: args.n.unwrap_or(Lorenz96Params::default().n),
        ..Default::default()
    };
    let (n, forcing) = if l96 {
        (p96.n, p96.forcing)
    } else {
        (p05.n, p05.forcing)
    };
    let members = args.members.unwrap_or(if l96 { 100_000 } else { 40 });
    let steps = args.steps;
    check_room::<f64>("the initial states (--members x --n)", &[members, n, 2])?;
    let initial = cast::<T>(&perturbed_states(members, n, forcing, 1e-3, 1));
    let median = lorenz_median(args, l96, &p96, &p05, &initial)?;
    let site_steps = members as f64 * n as f64 * steps as f64;
    let model = if l96 {
        "96".to_owned()
    } else {
        p05.model.number().to_string()
    };
    say!(
        "RESULT kernpack {family} backend={} model={model} dtype={} n={n} members={members} steps={steps} members_per_block={} sites_per_thread={} median_ms={median:.4} ns_per_site_step={:.4}",
        if args.timing.on_cpu() { "cpu" } else { "gpu" },
        T::NAME,
        args.members_per_block.map_or("auto".to_owned(), |m| m.to_string()),
        args.sites_per_thread.map_or("auto".to_owned(), |m| m.to_string()),
        median * 1e6 / site_steps
    );
    Ok(())
}

/// The median time of one whole run of Lorenz 96 (`l96`) or 2005 from `initial`.
fn lorenz_median<T: Float>(
    args: &BenchLorenzArgs,
    l96: bool,
    p96: &Lorenz96Params,
    p05: &Lorenz05Params,
    host: &[T],
) -> BenchResult<f64> {
    let (steps, reps) = (args.steps, args.timing.reps());
    if args.timing.on_cpu() {
        // The CPU backend (members in blocks over threads): wall clock.
        let kp = Kernpack::new(Backend::Cpu)?;
        return wall_median(reps, || match l96 {
            true => kp.lorenz96(p96, host, steps, 0).map(drop),
            false => kp.lorenz05(p05, host, steps, 0).map(drop),
        });
    }
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let d_in = stream.clone_htod(host)?;
    let mut out = stream.alloc_zeros::<T>(host.len())?;
    let started = Instant::now();
    let mut run = || {
        let out = &mut out;
        if l96 {
            let call = Lorenz96OnDevice {
                members_per_block: args.members_per_block,
                ..Lorenz96OnDevice::new(*p96, steps, 0)
            };
            gpu.enqueue_buffers(Lorenz96OnDevice::buffers(stream, &call, &d_in, out, None)?)
        } else {
            let call = Lorenz05OnDevice {
                sites_per_thread: args.sites_per_thread,
                ..Lorenz05OnDevice::new(*p05, steps, 0)
            };
            gpu.enqueue_buffers(Lorenz05OnDevice::buffers(stream, &call, &d_in, out, None)?)
        }
    };
    run()?;
    stream.synchronize()?;
    let first = started.elapsed().as_secs_f64() * 1e3;
    eprintln!("first run {first:.3} ms (wall clock)");
    event_median(stream, reps, run)
}
