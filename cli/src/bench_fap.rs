//! `kernpack bench fap-bootstrap`: the bootstrap false-alarm probability of
//! one series (astropy's `method='bootstrap'`): `--resamples` resampled
//! periodograms of `--nx` samples over `--nf` frequencies, reduced to their
//! maxima. On the GPU, CUDA events around each whole call (inputs up, the
//! resampling and periodograms on the device, the maxima down); on the CPU
//! backend, wall-clock medians. benches/compare_fap.py runs it through Python
//! beside astropy.
use kernpack::api::lombscargle::bootstrap::BootstrapOptions;
use kernpack::{Backend, Float, Gpu, Kernpack, PowerNormalization};

use crate::options::{cast, Dtype};
use crate::synthetic::Uniform;
use crate::timing::{event_median, wall_median, BenchResult, Timing};

#[derive(clap::Args, Debug)]
pub struct BenchFapArgs {
    /// Resampled periodograms.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    pub resamples: u64,
    /// Samples of the synthetic series (irregular, over 100 time units, with errors).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(2..))]
    pub nx: u64,
    /// Frequencies of astropy's autopower grid (5 per peak width; fmax follows).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub nf: u64,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F64)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing<20>,
}

pub fn run(args: &BenchFapArgs) -> BenchResult {
    by_dtype!(args.dtype, bench(args))
}

fn bench<T: Float>(args: &BenchFapArgs) -> BenchResult {
    let (nx, nf, resamples) = (args.nx as usize, args.nf as usize, args.resamples as usize);
    let mut rng = Uniform::new(0x5eed_fa95);
    let baseline = 100.0;
    let mut t: Vec<f64> = (0..nx).map(|_| baseline * rng.next()).collect();
    t.sort_by(f64::total_cmp);
    (t[0], t[nx - 1]) = (0.0, baseline);
    let y: Vec<f64> = t
        .iter()
        .map(|t| 0.2 * (1.9 * t).sin() + (rng.next() - 0.5))
        .collect();
    let dy: Vec<f64> = (0..nx).map(|_| 0.5 + rng.next()).collect();
    // autopower's grid: df = 1 / (5 baseline) from df / 2, nf points.
    let df = 1.0 / (5.0 * baseline);
    let fmax = 0.5 * df + (nf - 1) as f64 * df;
    let (t, y, dy) = (cast::<T>(&t), cast::<T>(&y), cast::<T>(&dy));
    let opts = BootstrapOptions {
        resamples,
        seed: 7,
        samples_per_peak: 5.0,
    };
    let norm = PowerNormalization::Standard;
    let reps = args.timing.reps();
    let (kp, backend, median) = if args.timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let call = || {
            kp.lombscargle_bootstrap(&t, &y, Some(&dy), fmax, norm, &opts)
                .map(drop)
        };
        let median = wall_median(reps, call)?;
        (kp, "cpu", median)
    } else {
        let gpu = Gpu::get(0)?;
        let kp = Kernpack::from(gpu.clone());
        let call = || {
            kp.lombscargle_bootstrap(&t, &y, Some(&dy), fmax, norm, &opts)
                .map(drop)
        };
        let median = event_median(gpu.stream(), reps, call)?;
        (kp, "gpu", median)
    };
    let pairs = (resamples * nx * nf) as f64;
    say!(
        "RESULT kernpack fap-bootstrap backend={backend} threads={} dtype={} resamples={resamples} nx={nx} nf={nf} median_ms={median:.3} gpairs_per_s={:.1}",
        kp.cpu_threads(),
        T::NAME,
        pairs / (median * 1e-3) / 1e9
    );
    Ok(())
}
