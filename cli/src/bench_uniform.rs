//! `kernpack bench uniform`: the N-D box filter of any element type (one
//! running-sum pass per axis) against a device-to-device copy of the same
//! array timed in the same process: each pass reads and writes the array
//! once, so `per_pass_of_copy_bw` (copy time x passes / filter time) is the
//! fraction of the memory roofline each pass reaches. With `--backend cpu`:
//! the CPU backend, wall clock.
use kernpack::{Backend, BoxValue, Gpu, Kernpack, UniformNdOnDevice, UniformNdOptions};

use crate::bench_box::BoxModeArg;
use crate::bench_median::{random_array, RankDtype};
use crate::timing::{event_median, host_copy_median, wall_median, BenchResult, Timing};

/// A random array, box-filtered with CUDA-event timing.
#[derive(clap::Args, Debug)]
pub struct BenchUniformArgs {
    /// Array shape, comma-separated (any number of axes).
    #[arg(long, value_delimiter = ',', default_value = "512,512,512")]
    pub shape: Vec<usize>,
    /// Window size, the same along every axis.
    #[arg(long, default_value_t = 3)]
    pub size: usize,
    /// Window size per axis, comma-separated (overrides --size; 1 leaves an axis unfiltered).
    #[arg(long, value_delimiter = ',')]
    pub sizes: Option<Vec<usize>>,
    /// Boundary mode (every axis).
    #[arg(long, value_enum, default_value_t = BoxModeArg::Reflect)]
    pub mode: BoxModeArg,
    /// Element type.
    #[arg(long, value_enum, default_value_t = RankDtype::F32)]
    pub dtype: RankDtype,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn run(args: &BenchUniformArgs) -> BenchResult {
    let mut dims = args.shape.clone();
    dims.push(3); // input, output and the passes' scratch
    crate::memory::check_room::<f64>("the array, its output and scratch (--shape)", &dims)?;
    let ndim = args.shape.len();
    let opts = UniformNdOptions {
        mode: vec![args.mode.into(); ndim],
        ..UniformNdOptions::new(args.sizes.as_deref().unwrap_or(&vec![args.size; ndim]))
    };
    let t = &args.timing;
    match args.dtype {
        RankDtype::U8 => bench::<u8>(&args.shape, &opts, t),
        RankDtype::I8 => bench::<i8>(&args.shape, &opts, t),
        RankDtype::U16 => bench::<u16>(&args.shape, &opts, t),
        RankDtype::I16 => bench::<i16>(&args.shape, &opts, t),
        RankDtype::U32 => bench::<u32>(&args.shape, &opts, t),
        RankDtype::I32 => bench::<i32>(&args.shape, &opts, t),
        RankDtype::U64 => bench::<u64>(&args.shape, &opts, t),
        RankDtype::I64 => bench::<i64>(&args.shape, &opts, t),
        RankDtype::F32 => bench::<f32>(&args.shape, &opts, t),
        RankDtype::F64 => bench::<f64>(&args.shape, &opts, t),
    }
}

fn bench<T: BoxValue>(shape: &[usize], opts: &UniformNdOptions, timing: &Timing) -> BenchResult {
    let reps = timing.reps();
    let n: usize = shape.iter().product();
    let host: Vec<T> = random_array(n);
    let shape_text = shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join("x");
    let size = opts
        .size
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let passes = opts.passes::<T>(shape.len())?.len().max(1) as f64;
    let bytes = 2.0 * passes * (n * std::mem::size_of::<T>()) as f64;
    if timing.on_cpu() {
        let kp = Kernpack::new(Backend::Cpu)?;
        let mut out = vec![T::default(); n];
        let copy = host_copy_median(&host, &mut out, reps)?;
        let filter = wall_median(reps, || {
            kp.uniform_filter_nd_into(&host, &mut out, shape, opts)
        })?;
        say!(
            "RESULT kernpack uniform backend=cpu threads={} dtype={} shape={shape_text} size={size} passes={passes} copy_ms={copy:.3} filter_ms={filter:.3} filter_gb_s={:.2} per_pass_of_copy_bw={:.4}",
            kp.cpu_threads(),
            T::NAME,
            bytes / filter / 1e6,
            copy * passes / filter
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
        let call = UniformNdOnDevice::buffers(stream, &input, &mut output, shape, opts);
        gpu.enqueue_buffers(call?)
    })?;
    say!(
        "RESULT kernpack uniform dtype={} shape={shape_text} size={size} passes={passes} copy_ms={copy_ms:.4} filter_ms={filter_ms:.4} filter_tb_s={:.3} per_pass_of_copy_bw={:.4}",
        T::NAME,
        bytes / (filter_ms * 1e-3) / 1e12,
        copy_ms * passes / filter_ms
    );
    Ok(())
}
