//! `kernpack bench`: which benchmark a subcommand runs. Each benchmark module
//! (bench.rs, bench_box.rs, bench_streams.rs, fg_cmd.rs) times both backends
//! of its own work with the helpers of timing.rs, and none calls another.
use crate::{
    bench, bench_bls, bench_box, bench_fap, bench_fold, bench_gaussian, bench_median,
    bench_streams, bench_uniform, fg_cmd, lorenz63_cmd,
};

/// What `kernpack bench` times.
#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// One periodogram: cold start, then CUDA-event medians.
    Lombscargle(bench::BenchLombScargleArgs),
    /// Many short series in one launch against one long series, in pairs per second.
    LombscargleBatch(bench::BenchBatchArgs),
    /// Sum and normalise in place against a device-to-device copy of the same bytes.
    Reduce(bench::BenchReduceArgs),
    /// The 2D box filter against a device-to-device copy of the same image.
    BoxFilter(bench_box::BenchBoxArgs),
    /// The Gaussian filter (a pass per axis) against a device-to-device copy per pass.
    Gaussian(bench_gaussian::BenchGaussianArgs),
    /// The median (rank) filter against a device-to-device copy of the same array.
    Median(bench_median::BenchMedianArgs),
    /// The N-D box filter of any element type, per pass against a device-to-device copy.
    Uniform(bench_uniform::BenchUniformArgs),
    /// Normalising arrays on several streams: copy in, normalise, copy out, with a timeline.
    NormalizeStreams(bench_streams::BenchStreamsArgs),
    /// One batched normalise call against a loop of single calls.
    NormalizeBatched(bench_streams::BenchBatchedArgs),
    /// Whole Lorenz 96 ensemble runs.
    Lorenz96(bench::BenchLorenzArgs),
    /// Whole Lorenz 2005 ensemble runs.
    Lorenz05(bench::BenchLorenzArgs),
    /// Whole Lorenz 63 ensemble runs (default: 8,388,608 members x 1000 RK4 steps, f32).
    Lorenz63(lorenz63_cmd::BenchLorenz63Args),
    /// Adaptive Lorenz 63 ensemble (Dormand-Prince 5(4)), the published GPU ODE benchmark's problem.
    Lorenz63Adaptive(lorenz63_cmd::BenchLorenz63AdaptiveArgs),
    /// Whole runs of the coupled F/G system, per RK4 step.
    Fg(fg_cmd::BenchFgArgs),
    /// The bootstrap false-alarm probability: resampled periodograms reduced to their maxima.
    FapBootstrap(bench_fap::BenchFapArgs),
    /// The Box Least Squares transit search of a batch of light curves, in light curves per second.
    Bls(bench_bls::BenchBlsArgs),
    /// Phase dispersion minimisation of a batch of light curves, in light curves per second.
    Pdm(bench_fold::BenchFoldArgs),
    /// Conditional entropy of a batch of light curves (--bins phase bins x --mag-bins), in light curves per second.
    Ce(bench_fold::BenchFoldArgs),
}

pub fn run(command: BenchCommand) -> Result<(), String> {
    // A benchmark times the backend it is given, never a fallback: without a
    // GPU, say what can be timed instead.
    let streams = matches!(
        command,
        BenchCommand::NormalizeStreams(_) | BenchCommand::NormalizeBatched(_)
    );
    timed(command).map_err(|e| {
        let e = e.to_string();
        match (e.contains("no usable GPU"), streams) {
            (false, _) => e,
            (true, false) => format!("{e} (benchmarks time the GPU unless given --backend cpu)"),
            (true, true) => format!("{e} (this benchmark times GPU streams only)"),
        }
    })
}

fn timed(command: BenchCommand) -> crate::timing::BenchResult {
    match command {
        BenchCommand::Lombscargle(args) => bench::lombscargle(&args),
        BenchCommand::LombscargleBatch(args) => bench::batch(&args),
        BenchCommand::Reduce(args) => bench::reduce(&args),
        BenchCommand::BoxFilter(args) => bench_box::run(&args),
        BenchCommand::Gaussian(args) => bench_gaussian::run(&args),
        BenchCommand::Median(args) => bench_median::run(&args),
        BenchCommand::Uniform(args) => bench_uniform::run(&args),
        BenchCommand::NormalizeStreams(args) => bench_streams::normalize_streams(&args),
        BenchCommand::NormalizeBatched(args) => bench_streams::normalize_batched(&args),
        BenchCommand::Lorenz96(args) => bench::lorenz("lorenz96", &args),
        BenchCommand::Lorenz05(args) => bench::lorenz("lorenz05", &args),
        BenchCommand::Lorenz63(args) => lorenz63_cmd::bench(&args),
        BenchCommand::Lorenz63Adaptive(args) => lorenz63_cmd::bench_adaptive(&args),
        BenchCommand::Fg(args) => fg_cmd::bench(&args),
        BenchCommand::FapBootstrap(args) => bench_fap::run(&args),
        BenchCommand::Bls(args) => bench_bls::run(&args),
        BenchCommand::Pdm(args) => bench_fold::run(&args, false),
        BenchCommand::Ce(args) => bench_fold::run(&args, true),
    }
}
