//! `kernpack bench box-filter`: the 2D box filter against a device-to-device
//! copy of the same image (one read, one write: the memory roofline) timed in
//! the same process. benches/compare_stencil.py runs it beside cupyx and Numba.
//! With `--backend cpu`: the CPU backend, wall clock, against a threaded host
//! copy of the same image.
use kernpack::{
    Backend, BoundaryMode, BoxFilterOnDevice, BoxFilterOptions, Float, Gpu, ImageLayout, Kernpack,
};

use crate::options::Dtype;
use crate::synthetic::Uniform;
use crate::timing::{event_median, host_copy_median, wall_median, BenchResult, Timing};

value_enum! {
    /// Boundary handling of the box filter (scipy.ndimage's modes, plus interior-only).
    BoxModeArg => BoundaryMode {
        /// d c b a | a b c d | d c b a
        Reflect => Reflect,
        /// k k k k | a b c d | k k k k (k = 0 here)
        Constant => Constant,
        /// a a a a | a b c d | d d d d
        Nearest => Nearest,
        /// d c b | a b c d | c b a
        Mirror => Mirror,
        /// a b c d | a b c d | a b c d
        Wrap => Wrap,
        /// Only points whose whole window lies inside; the others keep their value.
        Interior => Interior,
    }
}

/// A random image, filtered with CUDA-event timing.
#[derive(clap::Args, Debug)]
pub struct BenchBoxArgs {
    /// Image rows.
    #[arg(long, default_value_t = 8192)]
    pub rows: usize,
    /// Image columns [default: --rows].
    #[arg(long)]
    pub cols: Option<usize>,
    /// Window size along both axes (any size from 1; square centred 3 to 9
    /// take the unrolled kernels, the others the running sums).
    #[arg(long, default_value_t = 3)]
    pub size: usize,
    /// Boundary mode.
    #[arg(long, value_enum, default_value_t = BoxModeArg::Reflect)]
    pub mode: BoxModeArg,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub timing: Timing,
}

pub fn run(args: &BenchBoxArgs) -> BenchResult {
    let (rows, cols) = (args.rows, args.cols.unwrap_or(args.rows));
    crate::memory::check_room::<f64>(
        "the image and its output (--rows x --cols)",
        &[rows, cols, 2],
    )?;
    let opts = BoxFilterOptions {
        size: args.size,
        mode: args.mode.into(),
        cval: 0.0,
    };
    by_dtype!(args.dtype, bench(rows, cols, &opts, &args.timing))
}

fn bench<T: Float>(
    rows: usize,
    cols: usize,
    opts: &BoxFilterOptions,
    timing: &Timing,
) -> BenchResult {
    let reps = timing.reps();
    let mut rng = Uniform::new(0x5eed_b0c5);
    let host: Vec<T> = (0..rows * cols).map(|_| T::from_f64(rng.next())).collect();
    if timing.on_cpu() {
        return bench_cpu(&host, rows, cols, opts, reps);
    }
    let gpu = Gpu::get(0)?;
    let stream = gpu.stream();
    let input = stream.clone_htod(&host)?;
    let mut output = stream.alloc_zeros::<T>(host.len())?;
    let layout = ImageLayout::contiguous(rows, cols);
    let copy_ms = event_median(stream, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(|e| kernpack::Error::cuda("copying", e))
    })?;
    let filter_ms = event_median(stream, reps, || {
        let call = BoxFilterOnDevice::buffers(stream, &input, &mut output, &layout, opts);
        gpu.enqueue_buffers(call?)
    })?;
    let bytes = 2.0 * (host.len() * std::mem::size_of::<T>()) as f64;
    say!(
        "RESULT kernpack box_filter dtype={} rows={rows} cols={cols} size={} mode={:?} copy_ms={copy_ms:.4} copy_tb_s={:.3} filter_ms={filter_ms:.4} filter_tb_s={:.3} of_copy_bw={:.3}",
        T::NAME,
        opts.size,
        opts.mode,
        bytes / (copy_ms * 1e-3) / 1e12,
        bytes / (filter_ms * 1e-3) / 1e12,
        copy_ms / filter_ms
    );
    Ok(())
}

/// The box filter against a copy of the same image.
fn bench_cpu<T: Float>(
    image: &[T],
    rows: usize,
    cols: usize,
    opts: &BoxFilterOptions,
    reps: usize,
) -> BenchResult {
    let kp = Kernpack::new(Backend::Cpu)?;
    let mut out = vec![T::default(); image.len()];
    let copy = host_copy_median(image, &mut out, reps)?;
    let layout = ImageLayout::contiguous(rows, cols);
    let filter = wall_median(reps, || kp.box_filter_into(image, &mut out, &layout, opts))?;
    let bytes = 2.0 * std::mem::size_of_val(image) as f64;
    say!(
        "RESULT kernpack box_filter backend=cpu threads={} dtype={} rows={rows} cols={cols} size={} mode={:?} copy_ms={copy:.3} copy_gb_s={:.2} filter_ms={filter:.3} filter_gb_s={:.2} of_copy_bw={:.3}",
        kp.cpu_threads(),
        T::NAME,
        opts.size,
        opts.mode,
        bytes / copy / 1e6,
        bytes / filter / 1e6,
        copy / filter
    );
    Ok(())
}
