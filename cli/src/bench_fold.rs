//! `kernpack bench pdm` and `kernpack bench ce`: phase dispersion
//! minimisation or conditional entropy of a batch of synthetic light curves
//! (a sinusoid in noise; the sample count of each drawn from `--samples
//! lo,hi`) at `--freqs` trial frequencies, uniform from `--fmin` to
//! `--fmax`. On the GPU, CUDA events around each whole call (inputs prepared
//! and uploaded, the fold, the statistic down) and around the kernel alone;
//! on the CPU backend, wall-clock medians. Reports light curves per second.
//! With `--peaks k` the call keeps only each series' k best peaks (reduced
//! on the GPU: only those cross the bus).
use kernpack::api::phasefold::{
    CeOptions, FoldBatch, FoldFreqs, FoldOnDevice, PdmOptions, PeakOptions, Statistic, UniformGrid,
};
use kernpack::params::phasefold::{nlogn_table_for, FoldPrepared};
use kernpack::{Backend, Float, Gpu, Kernpack};

use crate::options::{cast, Dtype};
use crate::synthetic::Uniform;
use crate::timing::{event_median, wall_median, BenchResult, Timing};

#[derive(clap::Args, Debug)]
pub struct BenchFoldArgs {
    /// Light curves in the batch.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub series: u64,
    /// Samples per light curve: the least and the most (drawn uniformly).
    #[arg(long, value_delimiter = ',', default_values_t = [100u64, 300])]
    pub samples: Vec<u64>,
    /// Time span of each light curve.
    #[arg(long, default_value_t = 1000.0)]
    pub baseline: f64,
    /// Trial frequencies, uniform from --fmin to --fmax.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub freqs: u64,
    #[arg(long, default_value_t = 0.05)]
    pub fmin: f64,
    #[arg(long, default_value_t = 10.0)]
    pub fmax: f64,
    /// PDM: phase bins. CE: phase bins (magnitude bins: --mag-bins).
    #[arg(long, default_value_t = 10)]
    pub bins: usize,
    /// CE: magnitude bins.
    #[arg(long, default_value_t = 5)]
    pub mag_bins: usize,
    /// CE: overlapping phase and magnitude bins.
    #[arg(long, default_value_t = 0)]
    pub phase_overlap: usize,
    #[arg(long, default_value_t = 0)]
    pub mag_overlap: usize,
    /// Precision of the inputs and results.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    /// Keep only each series' best k peaks (0: every value comes back).
    #[arg(long, default_value_t = 0)]
    pub peaks: usize,
    /// With --peaks: the least frequency distance between two peaks.
    #[arg(long, default_value_t = 0.0)]
    pub separation: f64,
    #[command(flatten)]
    pub timing: Timing<5>,
}

/// `ce`: conditional entropy, else PDM.
pub fn run(args: &BenchFoldArgs, ce: bool) -> BenchResult {
    let statistic = if ce {
        Statistic::ConditionalEntropy(CeOptions {
            phase_bins: args.bins,
            mag_bins: args.mag_bins,
            phase_overlap: args.phase_overlap,
            mag_overlap: args.mag_overlap,
        })
    } else {
        Statistic::Pdm(PdmOptions { bins: args.bins })
    };
    by_dtype!(args.dtype, bench(args, statistic))
}

fn bench<T: Float>(args: &BenchFoldArgs, statistic: Statistic) -> BenchResult {
    let [lo, hi] = args.samples[..] else {
        return Err("--samples takes two values: the least and the most, e.g. 100,300".into());
    };
    let (lo, hi) = (lo as usize, hi as usize);
    if lo == 0 || hi < lo {
        return Err(format!("--samples {lo},{hi}: need 1 <= least <= most").into());
    }
    let mut rng = Uniform::new(0x0f01_d5ee);
    let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0usize]);
    for _ in 0..args.series {
        let n = (lo + (rng.next() * (hi - lo + 1) as f64) as usize).min(hi);
        let f = args.fmin + rng.next() * (args.fmax - args.fmin);
        for _ in 0..n {
            let ti = 58000.0 + rng.next() * args.baseline;
            t.push(ti);
            y.push(15.0 + 0.3 * (std::f64::consts::TAU * f * ti).sin() + 0.05 * rng.normal());
            dy.push(0.05);
        }
        offsets.push(t.len());
    }
    let nf = args.freqs as usize;
    let df = (args.fmax - args.fmin) / (nf.max(2) - 1) as f64;
    let grid = FoldFreqs::<T>::Uniform(UniformGrid::new(args.fmin, df, nf));
    let (t, y, dy) = (cast::<T>(&t), cast::<T>(&y), cast::<T>(&dy));
    let batch = FoldBatch {
        t: &t,
        y: &y,
        dy: Some(&dy),
        offsets: &offsets,
    };
    let reps = args.timing.reps();
    let peaks = PeakOptions {
        k: args.peaks,
        separation: args.separation,
    };
    let call = |kp: &Kernpack| {
        if args.peaks > 0 {
            kp.phase_fold_batch_peaks(&batch, &grid, &statistic, &peaks)
                .map(drop)
        } else {
            kp.phase_fold_batch(&batch, &grid, &statistic).map(drop)
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
        format!("{:.3}", kernel_median(&batch, &grid, &statistic, reps)?)
    } else {
        "-".into()
    };
    let name = match statistic {
        Statistic::Pdm(_) => "pdm",
        Statistic::ConditionalEntropy(_) => "ce",
    };
    say!(
        "RESULT kernpack {name} backend={backend} threads={} dtype={} series={} samples={lo}..{hi} freqs={nf} cells={} peaks={} median_ms={median:.3} kernel_ms={kernel} lc_per_s={:.0} pairs_per_s={:.3e}",
        kp.cpu_threads(),
        T::NAME,
        args.series,
        statistic.cells(),
        args.peaks,
        args.series as f64 / (median * 1e-3),
        t.len() as f64 * nf as f64 / (median * 1e-3)
    );
    Ok(())
}

/// The fold kernel alone on device memory (series prepared and uploaded
/// beforehand): CUDA-event median.
fn kernel_median<T: Float>(
    batch: &FoldBatch<'_, T>,
    freqs: &FoldFreqs<'_, T>,
    statistic: &Statistic,
    reps: usize,
) -> BenchResult<f64> {
    use cudarc::driver::DevicePtr;
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let preps: Vec<FoldPrepared> = (0..batch.len())
        .map(|s| {
            let r = batch.offsets[s]..batch.offsets[s + 1];
            FoldPrepared::of(
                &f64s(&batch.t[r.clone()]),
                &f64s(&batch.y[r.clone()]),
                batch.dy.map(|d| f64s(&d[r])).as_deref(),
                statistic,
            )
        })
        .collect::<kernpack::Result<_>>()?;
    let FoldFreqs::Uniform(grid) = freqs else {
        return Err("the kernel timing takes a uniform grid".into());
    };
    let freqs = grid.frequencies();
    let offsets: Vec<i64> = batch.offsets.iter().map(|&o| o as i64).collect();
    let cat = |f: &dyn Fn(&FoldPrepared) -> &[f64]| -> Vec<f64> {
        preps.iter().flat_map(|p| f(p).iter().copied()).collect()
    };
    // Unused columns get one value, so that every buffer is a real allocation.
    let or_one = |v: Vec<f64>| if v.is_empty() { vec![0.0] } else { v };
    let mag: Vec<i32> = preps.iter().flat_map(|p| p.mag.iter().copied()).collect();
    let mag = if mag.is_empty() { vec![0] } else { mag };
    let nlogn = or_one(nlogn_table_for(&preps, statistic));
    let scale: Vec<f64> = preps.iter().map(|p| p.scale).collect();
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let d = (
        stream.clone_htod(&offsets)?,
        stream.clone_htod(&cat(&|p| &p.dt))?,
        stream.clone_htod(&or_one(cat(&|p| &p.wy)))?,
        stream.clone_htod(&or_one(cat(&|p| &p.w)))?,
        stream.clone_htod(&mag)?,
        stream.clone_htod(&scale)?,
        stream.clone_htod(&freqs)?,
        stream.clone_htod(&nlogn)?,
        stream.alloc_zeros::<T>(preps.len() * freqs.len())?,
    );
    let ptr = |p: (u64, _)| p.0;
    let op = FoldOnDevice {
        statistic: *statistic,
        nseries: preps.len(),
        n: batch.t.len(),
        offsets: ptr(d.0.device_ptr(stream)),
        dt: ptr(d.1.device_ptr(stream)),
        wy: ptr(d.2.device_ptr(stream)),
        w: ptr(d.3.device_ptr(stream)),
        mag: ptr(d.4.device_ptr(stream)),
        scale: ptr(d.5.device_ptr(stream)),
        nf: freqs.len(),
        freqs: ptr(d.6.device_ptr(stream)),
        nlogn: ptr(d.7.device_ptr(stream)),
        nlogn_len: nlogn.len(),
        out: ptr(d.8.device_ptr(stream)),
        out_f32: T::NAME == "f32",
    };
    // SAFETY: the buffers above live until the timing has synchronised.
    let median = event_median(stream, reps, || unsafe { gpu.enqueue(stream, &op) })?;
    stream.synchronize()?;
    Ok(median)
}
