//! The CPU backend's side of `kernpack bench lombscargle | lombscargle-batch |
//! reduce | box-filter` (`--backend cpu`): wall-clock medians on host slices,
//! against a threaded host copy of the same bytes (the memory roofline) where
//! the work is memory-bound. Same inputs and RESULT lines as the GPU side.
use kernpack::api::lombscargle::batch::{Batch, BatchGrid};
use kernpack::api::lombscargle::UniformGrid;
use kernpack::{
    Backend, BoxFilterOptions, Float, Kernpack, LombScargleOptions, Periodogram, Series,
};

use crate::bench::wall_median;

fn cpu() -> Result<Kernpack, String> {
    Kernpack::new(Backend::Cpu).map_err(|e| e.to_string())
}

/// Median time of copying `src` into `dst` on the backend's thread count,
/// in contiguous pieces (one read and one write of every byte).
fn copy_ms<T: Float>(src: &[T], dst: &mut [T], reps: usize) -> Result<f64, String> {
    let threads = kernpack::cpu::threads();
    let piece = src.len().div_ceil(threads).max(1);
    wall_median(reps, || {
        std::thread::scope(|scope| {
            for (d, s) in dst.chunks_mut(piece).zip(src.chunks(piece)) {
                scope.spawn(move || d.copy_from_slice(s));
            }
        });
        Ok(())
    })
}

/// One periodogram on the CPU: `grid` for the uniform-grid path, else `f`.
pub fn lombscargle<T: Float>(
    t: &[T],
    y: &[T],
    f: &[T],
    grid: Option<UniformGrid>,
    opts: &LombScargleOptions,
    reps: usize,
) -> Result<Vec<f64>, String> {
    let kp = cpu()?;
    let series = Series::new(t, y);
    let mut last = None;
    let median = wall_median(reps, || {
        last = Some(match &grid {
            Some(grid) => kp.lombscargle_uniform(&series, grid, opts)?,
            None => kp.lombscargle(&series, f, opts)?,
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

/// Many series, each with its own grid, in one call on the CPU.
pub fn batch<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
    reps: usize,
) -> Result<(), String> {
    let kp = cpu()?;
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

/// Sum and normalise against a copy of the same bytes.
pub fn reduce<T: Float>(host: &[T], reps: usize) -> Result<(), String> {
    let kp = cpu()?;
    let mut scratch = host.to_vec();
    let copy = copy_ms(host, &mut scratch, reps)?;
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

/// The box filter against a copy of the same image.
pub fn box_filter<T: Float>(
    image: &[T],
    rows: usize,
    cols: usize,
    opts: &BoxFilterOptions,
    reps: usize,
) -> Result<(), String> {
    let kp = cpu()?;
    let mut out = vec![T::default(); image.len()];
    let copy = copy_ms(image, &mut out, reps)?;
    let layout = kernpack::ImageLayout::contiguous(rows, cols);
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
