//! `kernpack bench bls`: the Box Least Squares search of a batch of
//! synthetic light curves (a planted transit in noise; the sample count of
//! each drawn from `--samples lo,hi`) at `--periods` trial periods, uniform in
//! frequency from `--pmin` to `--pmax`, over `--durations`. On the GPU, CUDA
//! events around each whole call (inputs prepared and uploaded, the search,
//! the best boxes down and turned into fields); on the CPU backend,
//! wall-clock medians. Reports light curves per second. With `--peaks k`
//! the call keeps only each series' k best periods (reduced on the GPU).
use kernpack::api::bls::{BlsBatch, BlsObjective, BlsOptions, PeakOptions};
use kernpack::{Backend, Float, Gpu, Kernpack};

use crate::options::{cast, Dtype};
use crate::synthetic::Uniform;
use crate::timing::{event_median, wall_median, BenchResult, Timing};

#[derive(clap::Args, Debug)]
pub struct BenchBlsArgs {
    /// Light curves in the batch.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub series: u64,
    /// Samples per light curve: the least and the most (drawn uniformly).
    #[arg(long, value_delimiter = ',', default_values_t = [100u64, 300])]
    pub samples: Vec<u64>,
    /// Time span of each light curve.
    #[arg(long, default_value_t = 1000.0)]
    pub baseline: f64,
    /// Trial periods, uniform in frequency.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub periods: u64,
    /// Shortest trial period.
    #[arg(long, default_value_t = 0.5)]
    pub pmin: f64,
    /// Longest trial period.
    #[arg(long, default_value_t = 10.0)]
    pub pmax: f64,
    /// Transit durations.
    #[arg(long, value_delimiter = ',', default_values_t = [0.04, 0.06, 0.08, 0.1, 0.12])]
    pub durations: Vec<f64>,
    /// Phase bins per shortest duration.
    #[arg(long, default_value_t = 10)]
    pub oversample: u32,
    /// Maximise the signal-to-noise ratio instead of the log likelihood.
    #[arg(long)]
    pub snr: bool,
    /// Precision of the inputs and results.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    /// Keep only each series' best k periods (0: every period's results).
    #[arg(long, default_value_t = 0)]
    pub peaks: usize,
    #[command(flatten)]
    pub timing: Timing<5>,
}

pub fn run(args: &BenchBlsArgs) -> BenchResult {
    by_dtype!(args.dtype, bench(args))
}

fn bench<T: Float>(args: &BenchBlsArgs) -> BenchResult {
    let [lo, hi] = args.samples[..] else {
        return Err("--samples takes two values: the least and the most, e.g. 100,300".into());
    };
    let (lo, hi) = (lo as usize, hi as usize);
    if lo == 0 || hi < lo {
        return Err(format!("--samples {lo},{hi}: need 1 <= least <= most").into());
    }
    let mut rng = Uniform::new(0x0b15_5eed);
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0usize]);
    for _ in 0..args.series {
        let n = lo + (rng.next() * (hi - lo + 1) as f64) as usize;
        let period = args.pmin + rng.next() * (args.pmax - args.pmin);
        let phase = rng.next() * period;
        for _ in 0..n.min(hi) {
            let ti = rng.next() * args.baseline;
            let x = (ti - phase).rem_euclid(period);
            t.push(ti);
            y.push(1.0 + 0.01 * rng.normal() - if x < args.durations[0] { 0.02 } else { 0.0 });
            dy.push(0.01);
        }
        offsets.push(t.len());
    }
    let (fmin, fmax) = (1.0 / args.pmax, 1.0 / args.pmin);
    let np = args.periods as usize;
    let periods: Vec<f64> = (0..np)
        .map(|k| 1.0 / (fmax - (fmax - fmin) * k as f64 / (np.max(2) - 1) as f64))
        .collect();
    let (t, y, dy) = (cast::<T>(&t), cast::<T>(&y), cast::<T>(&dy));
    let (periods, durations) = (cast::<T>(&periods), cast::<T>(&args.durations));
    let batch = BlsBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets,
    };
    let opts = BlsOptions {
        objective: if args.snr {
            BlsObjective::Snr
        } else {
            BlsObjective::Likelihood
        },
        oversample: args.oversample,
    };
    let reps = args.timing.reps();
    let peaks = PeakOptions {
        k: args.peaks,
        separation: 0.0,
    };
    let call = |kp: &Kernpack| {
        if args.peaks > 0 {
            kp.bls_batch_peaks(&batch, &periods, &durations, &opts, &peaks)
                .map(drop)
        } else {
            kp.bls_batch(&batch, &periods, &durations, &opts).map(drop)
        }
    };
    let (kp, backend, median) = if args.timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let median = wall_median(reps, || call(&kp))?;
        (kp, "cpu", median)
    } else {
        let gpu = Gpu::get(0)?;
        let kp = Kernpack::from(gpu.clone());
        let median = event_median(gpu.stream(), reps, || call(&kp))?;
        (kp, "gpu", median)
    };
    let kernel = if backend == "gpu" {
        format!(
            "{:.3}",
            kernel_median(&batch, &periods, &durations, &opts, reps)?
        )
    } else {
        "-".into()
    };
    let max_duration = args.durations.iter().copied().fold(0.0, f64::max);
    let min_duration = args.durations.iter().copied().fold(f64::INFINITY, f64::min);
    say!(
        "RESULT kernpack bls backend={backend} threads={} dtype={} series={} samples={lo}..{hi} periods={np} pmin={} pmax={} durations={} max_duration={max_duration} bins_of_longest={} peaks={} median_ms={median:.3} kernel_ms={kernel} lc_per_s={:.0}",
        kp.cpu_threads(),
        T::NAME,
        args.series,
        args.pmin,
        args.pmax,
        args.durations.len(),
        (args.pmax / (min_duration / args.oversample as f64)).ceil() as u64 + args.oversample as u64,
        args.peaks,
        args.series as f64 / (median * 1e-3)
    );
    Ok(())
}

/// The search kernel alone on device memory (series prepared and uploaded
/// beforehand): CUDA-event median.
fn kernel_median<T: Float>(
    batch: &BlsBatch<'_, T>,
    periods: &[T],
    durations: &[T],
    opts: &BlsOptions,
    reps: usize,
) -> BenchResult<f64> {
    use cudarc::driver::DevicePtr;
    use kernpack::api::bls::BlsOnDevice;
    use kernpack::params::bls::{BlsGrid, BlsPrepared};
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let grid = BlsGrid::new(&f64s(periods), &f64s(durations), opts)?;
    let preps: Vec<BlsPrepared> = (0..batch.len())
        .map(|s| {
            let r = batch.offsets[s]..batch.offsets[s + 1];
            BlsPrepared::of(
                &f64s(&batch.t[r.clone()]),
                &f64s(&batch.y[r.clone()]),
                batch.dy.map(|d| f64s(&d[r])).as_deref(),
                &grid,
            )
        })
        .collect::<kernpack::Result<_>>()?;
    let periods = f64s(periods);
    let offsets: Vec<i64> = batch.offsets.iter().map(|&o| o as i64).collect();
    let dt: Vec<f64> = preps.iter().flat_map(|p| p.dt.clone()).collect();
    let wy: Vec<i64> = preps.iter().flat_map(|p| p.wy.clone()).collect();
    let w: Vec<i64> = preps.iter().flat_map(|p| p.w.clone()).collect();
    let (totals, units) = BlsPrepared::series_stats(&preps);
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let d = (
        stream.clone_htod(&offsets)?,
        stream.clone_htod(&dt)?,
        stream.clone_htod(&wy)?,
        stream.clone_htod(&w)?,
        stream.clone_htod(&totals)?,
        stream.clone_htod(&units)?,
        stream.clone_htod(&periods)?,
        stream.clone_htod(&grid.duration_bins)?,
        stream.alloc_zeros::<i64>(4 * preps.len() * periods.len())?,
    );
    let ptr = |p: (u64, _)| p.0;
    let op = BlsOnDevice {
        nseries: preps.len(),
        n: dt.len(),
        offsets: ptr(d.0.device_ptr(stream)),
        dt: ptr(d.1.device_ptr(stream)),
        wy: ptr(d.2.device_ptr(stream)),
        w: ptr(d.3.device_ptr(stream)),
        totals: ptr(d.4.device_ptr(stream)),
        units: ptr(d.5.device_ptr(stream)),
        nperiods: periods.len(),
        periods: ptr(d.6.device_ptr(stream)),
        duration_bins: ptr(d.7.device_ptr(stream)),
        grid,
        objective: opts.objective,
        out: ptr(d.8.device_ptr(stream)),
        power: 0,
    };
    // SAFETY: the buffers above live until the timing has synchronised.
    let median = event_median(stream, reps, || unsafe { gpu.enqueue(stream, &op) })?;
    stream.synchronize()?;
    Ok(median)
}
