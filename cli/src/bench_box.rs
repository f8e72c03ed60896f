//! `kernpack bench box-filter`: the 2D box filter against a device-to-device
//! copy of the same image (one read, one write: the memory roofline) timed in
//! the same process. benches/compare_stencil.py runs it beside cupyx and Numba.
use kernpack::{BoundaryMode, BoxFilterOptions, Float, Gpu, ImageLayout};

use crate::args::Args;
use crate::bench::event_median;
use crate::synthetic::Uniform;

pub fn run(raw: &[String]) -> Result<(), String> {
    let args = Args::parse(raw, &["rows", "cols", "size", "mode", "dtype", "reps"], &[])?;
    let rows: usize = args.get_or("rows", 8192)?;
    let cols: usize = args.get_or("cols", rows)?;
    let opts = BoxFilterOptions {
        size: args.get_or("size", 3)?,
        mode: args
            .get_or("mode", BoundaryMode::Reflect)
            .map_err(|e| e.to_string())?,
        cval: 0.0,
    };
    let reps = args.get_or("reps", 20)?;
    match args.str("dtype").unwrap_or("f32") {
        "f32" => bench::<f32>(rows, cols, &opts, reps),
        "f64" => bench::<f64>(rows, cols, &opts, reps),
        other => Err(format!("--dtype {other:?}: expected f32 or f64")),
    }
}

fn bench<T: Float>(
    rows: usize,
    cols: usize,
    opts: &BoxFilterOptions,
    reps: usize,
) -> Result<(), String> {
    let cuda = |e: cudarc::driver::DriverError| e.to_string();
    let gpu = Gpu::get(0).map_err(|e| e.to_string())?;
    let stream = gpu.stream();
    let mut rng = Uniform::new(0x5eed_b0c5);
    let host: Vec<T> = (0..rows * cols).map(|_| T::from_f64(rng.next())).collect();
    let input = stream.clone_htod(&host).map_err(cuda)?;
    let mut output = stream.alloc_zeros::<T>(host.len()).map_err(cuda)?;
    let layout = ImageLayout::contiguous(rows, cols);
    let copy_ms = event_median(&gpu, reps, || {
        stream
            .memcpy_dtod(&input, &mut output)
            .map_err(|e| kernpack::Error::cuda("copying", e))
    })?;
    let filter_ms = event_median(&gpu, reps, || {
        gpu.box_filter_device(stream, &input, &mut output, &layout, opts)
    })?;
    let bytes = 2.0 * (host.len() * std::mem::size_of::<T>()) as f64;
    println!(
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
