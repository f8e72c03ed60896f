//! `kernpack bench gaussian`: the Gaussian filter (one correlation pass per
//! axis) of an N-D array against a device-to-device copy of the same array
//! timed in the same process: each pass reads and writes the array once, so
//! `passes x copy` is its memory roofline. `--axis` times one pass alone.
//! benches/compare_stencil.py runs it beside cupyx. With `--backend cpu`: the
//! CPU backend, wall clock, against a threaded host copy.
use kernpack::{
    Backend, CorrelateOnDevice, Float, GaussianFilterOptions, GaussianOptions, Gpu, Kernpack,
};

use crate::bench_box::BoxModeArg;
use crate::options::Dtype;
use crate::synthetic::Uniform;
use crate::timing::{event_median, host_copy_median, wall_median, BenchResult, Timing};

/// A random array, Gaussian-filtered with CUDA-event timing.
#[derive(clap::Args, Debug)]
pub struct BenchGaussianArgs {
    /// Array shape, comma-separated (1 to 3 axes and more).
    #[arg(long, value_delimiter = ',', default_value = "8192,8192")]
    pub shape: Vec<usize>,
    /// Standard deviation in points, the same along every axis.
    #[arg(long, default_value_t = 4.0)]
    pub sigma: f64,
    /// Only this axis (one pass) [default: every axis].
    #[arg(long)]
    pub axis: Option<usize>,
    /// Boundary mode (interior is the box filter's only).
    #[arg(long, value_enum, default_value_t = BoxModeArg::Reflect)]
    pub mode: BoxModeArg,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn run(args: &BenchGaussianArgs) -> BenchResult {
    let mut dims = args.shape.clone();
    dims.push(3); // input, output and the passes' scratch
    crate::memory::check_room::<f64>("the array, its output and scratch (--shape)", &dims)?;
    let per_axis = GaussianOptions {
        sigma: args.sigma,
        mode: args.mode.into(),
        ..Default::default()
    };
    let opts = GaussianFilterOptions {
        axes: match args.axis {
            Some(axis) => vec![(axis, per_axis)],
            None => (0..args.shape.len()).map(|a| (a, per_axis)).collect(),
        },
    };
    by_dtype!(args.dtype, bench(&args.shape, &opts, &args.timing))
}

fn bench<T: Float>(shape: &[usize], opts: &GaussianFilterOptions, timing: &Timing) -> BenchResult {
    let reps = timing.reps();
    let n: usize = shape.iter().product();
    let mut rng = Uniform::new(0x5eed_6a55);
    let host: Vec<T> = (0..n).map(|_| T::from_f64(rng.next())).collect();
    let passes = opts.passes()?;
    let shape_text = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x");
    let axes = opts
        .axes
        .iter()
        .map(|(a, _)| a.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let sigma = opts.axes.first().map_or(0.0, |(_, o)| o.sigma);
    let taps = passes.first().map_or(0, |p| p.weights.len());
    let bytes = 2.0 * (n * std::mem::size_of::<T>()) as f64 * passes.len() as f64;
    if timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let mut out = vec![T::default(); n];
        let copy = host_copy_median(&host, &mut out, reps)?;
        let filter = wall_median(reps, || {
            kp.correlate_passes_into(&host, &mut out, shape, &passes)
        })?;
        say!(
            "RESULT kernpack gaussian backend=cpu threads={} dtype={} shape={shape_text} axes={axes} sigma={sigma} taps={taps} passes={} copy_ms={copy:.3} filter_ms={filter:.3} filter_gb_s={:.2} of_copy_bw={:.3}",
            kp.cpu_threads(),
            T::NAME,
            passes.len(),
            bytes / filter / 1e6,
            copy * passes.len() as f64 / filter
        );
        return Ok(());
    }
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let input = stream.clone_htod(&host)?;
    let mut output = stream.alloc_zeros::<T>(n)?;
    let copy_ms = event_median(stream, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(|e| kernpack::Error::cuda("copying", e))
    })?;
    let filter_ms = event_median(stream, reps, || {
        let call = CorrelateOnDevice::buffers(stream, &input, &mut output, shape, &passes);
        gpu.enqueue_buffers(call?)
    })?;
    say!(
        "RESULT kernpack gaussian dtype={} shape={shape_text} axes={axes} sigma={sigma} taps={taps} passes={} copy_ms={copy_ms:.4} copy_tb_s={:.3} filter_ms={filter_ms:.4} filter_tb_s={:.3} of_copy_bw={:.3}",
        T::NAME,
        passes.len(),
        2.0 * (n * std::mem::size_of::<T>()) as f64 / (copy_ms * 1e-3) / 1e12,
        bytes / (filter_ms * 1e-3) / 1e12,
        copy_ms * passes.len() as f64 / filter_ms
    );
    Ok(())
}
