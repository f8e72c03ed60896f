//! `kernpack bench normalize-streams`: many arrays copied in,
//! normalised and copied out on 1 vs k streams, timed with events, with the
//! per-stream timeline that shows the overlap; `kernpack bench
//! normalize-batched`: one batched call against a loop of single calls.
use kernpack::api::reduce_batched::{ArrayTimeline, StreamedNormalize};
use kernpack::{Float, Gpu, NormalizeBatchedOnDevice, NormalizeOnDevice};

use crate::options::Dtype;
use crate::synthetic::Uniform;
use crate::timing::{event_median, median, BenchResult, Reps};

/// Arrays of random values, normalised on 1 vs k streams.
#[derive(clap::Args, Debug)]
pub struct BenchStreamsArgs {
    /// Arrays.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub arrays: u32,
    /// Elements per array.
    #[arg(long, default_value_t = 10_000_000)]
    pub n: usize,
    /// Stream counts to compare, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,10", value_parser = clap::value_parser!(u32).range(1..))]
    pub streams: Vec<u32>,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub reps: Reps<10>,
}

pub fn normalize_streams(args: &BenchStreamsArgs) -> BenchResult {
    let (arrays, n, reps) = (args.arrays as usize, args.n, args.reps.reps as usize);
    crate::memory::check_room::<f64>("the arrays (--arrays x --n)", &[arrays, n])?;
    let streams: Vec<usize> = args.streams.iter().map(|&s| s as usize).collect();
    by_dtype!(args.dtype, bench_streams(arrays, n, &streams, reps))
}

fn bench_streams<T: Float>(arrays: usize, n: usize, streams: &[usize], reps: usize) -> BenchResult {
    let gpu = Gpu::get(0)?;
    let mut rng = Uniform::new(0x0004_5eed);
    let mut host = Vec::with_capacity(arrays);
    for a in 0..arrays {
        let values: Vec<T> = (0..n)
            .map(|_| T::from_f64((a + 1) as f64 * (0.5 + rng.next())))
            .collect();
        host.push(gpu.pinned_from(&values)?);
    }
    let mb = (arrays * n * std::mem::size_of::<T>()) as f64 / 1e6;
    say!(
        "{arrays} arrays x {n} {} ({mb:.0} MB each way), pinned host memory; copy in, normalise, copy out per array",
        T::NAME
    );
    for &k in streams {
        let mut work = StreamedNormalize::<T>::new(gpu.clone(), k)?;
        let (mut totals, mut walls, mut runs) = (Vec::new(), Vec::new(), Vec::new());
        for rep in 0..reps + 2 {
            let started = std::time::Instant::now();
            // Values stay valid: after the first run every array sums to 1.
            let (results, timeline) = work.run_traced(&mut host)?;
            let wall = started.elapsed().as_secs_f64() * 1e3;
            if let Some(bad) = results.iter().position(|r| r.is_err()) {
                return Err(format!("array {bad} could not be normalised").into());
            }
            if rep >= 2 {
                let total = timeline.iter().map(|t| t.d2h.1 as f64).fold(0.0, f64::max);
                totals.push(total);
                walls.push(wall);
                runs.push(timeline);
            }
        }
        let median_total = median(totals.clone());
        let pick = totals.iter().position(|t| *t == median_total).unwrap_or(0);
        print_timeline(&runs[pick], k);
        say!(
            "RESULT kernpack normalize-streams dtype={} arrays={arrays} n={n} streams={k} median_ms={median_total:.3} min_ms={:.3} wall_median_ms={:.3} gb_per_s={:.1}",
            T::NAME,
            totals.iter().cloned().fold(f64::INFINITY, f64::min),
            median(walls),
            2.0 * mb / 1e3 / (median_total * 1e-3)
        );
    }
    Ok(())
}

/// The event table of one run, and per stream a bar of 72 columns over the
/// whole run: H copy in, K kernel, D copy out (the last phase drawn wins a column).
fn print_timeline(timeline: &[ArrayTimeline], nstreams: usize) {
    let end = timeline
        .iter()
        .map(|t| t.d2h.1)
        .fold(0.0f32, f32::max)
        .max(1e-6);
    say!("  array stream   h2d start..end    kernel start..end   d2h start..end   (ms from the first event)");
    for t in timeline {
        say!(
            "  {:5} {:6}  {:7.3}..{:<7.3}  {:7.3}..{:<7.3}  {:7.3}..{:<7.3}",
            t.array,
            t.stream,
            t.h2d.0,
            t.h2d.1,
            t.kernel.0,
            t.kernel.1,
            t.d2h.0,
            t.d2h.1
        );
    }
    const WIDTH: usize = 72;
    let col = |ms: f32| ((ms / end) * WIDTH as f32).clamp(0.0, WIDTH as f32 - 1.0) as usize;
    for s in 0..nstreams {
        let mut bar = vec![b'.'; WIDTH];
        for t in timeline.iter().filter(|t| t.stream == s) {
            for (phase, mark) in [(t.h2d, b'H'), (t.kernel, b'K'), (t.d2h, b'D')] {
                for c in bar.iter_mut().take(col(phase.1) + 1).skip(col(phase.0)) {
                    *c = mark;
                }
            }
        }
        say!(
            "  stream {s:2} |{}| {end:.2} ms",
            String::from_utf8_lossy(&bar)
        );
    }
}

/// Arrays of random lengths in [n/2, 3n/2] in one device buffer.
#[derive(clap::Args, Debug)]
pub struct BenchBatchedArgs {
    /// Arrays.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub arrays: u32,
    /// Typical elements per array.
    #[arg(long, default_value_t = 10_000)]
    pub n: usize,
    /// Precision.
    #[arg(long, value_enum, default_value_t = Dtype::F32)]
    pub dtype: Dtype,
    #[command(flatten)]
    pub reps: Reps,
}

pub fn normalize_batched(args: &BenchBatchedArgs) -> BenchResult {
    let (arrays, n, reps) = (args.arrays as usize, args.n, args.reps.reps as usize);
    // Lengths up to 3n/2 each: at most 2n.
    crate::memory::check_room::<f64>("the arrays (--arrays x --n)", &[arrays, n, 2])?;
    by_dtype!(args.dtype, bench_batched(arrays, n, reps))
}

/// Arrays of random lengths in [n/2, 3n/2] in one flat device buffer:
/// the batched call against one normalize_device per array on a view.
fn bench_batched<T: Float>(arrays: usize, n: usize, reps: usize) -> BenchResult {
    let gpu = Gpu::get(0)?;
    let stream = gpu.new_stream()?;
    let mut rng = Uniform::new(0x0ba7_c4ed);
    let mut offsets = vec![0usize];
    for _ in 0..arrays {
        let len = n / 2 + (rng.next() * (n + 1) as f64) as usize;
        offsets.push(offsets.last().unwrap() + len);
    }
    let total = *offsets.last().unwrap();
    let host: Vec<T> = (0..total).map(|_| T::from_f64(0.5 + rng.next())).collect();
    let mut x = stream.clone_htod(&host)?;
    let off64: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
    let doff = stream.clone_htod(&off64)?;
    let mut sums = stream.alloc_zeros::<f64>(arrays)?;
    let mut status = stream.alloc_zeros::<i32>(arrays)?;
    let mut one_sum = Vec::new();
    let mut one_status = Vec::new();
    for _ in 0..arrays {
        one_sum.push(stream.alloc_zeros::<f64>(1)?);
        one_status.push(stream.alloc_zeros::<i32>(1)?);
    }
    // Normalising again keeps the data valid (every array then sums to 1).
    let batched_ms = event_median(&stream, reps, || {
        let call =
            NormalizeBatchedOnDevice::buffers(&stream, &mut x, &doff, &mut sums, &mut status);
        gpu.enqueue_buffers(call?)
    })?;
    let loop_ms = event_median(&stream, reps, || {
        for a in 0..arrays {
            let mut view = x.slice_mut(offsets[a]..offsets[a + 1]);
            let (sum, status) = (&mut one_sum[a], &mut one_status[a]);
            gpu.enqueue_buffers(NormalizeOnDevice::buffers(&stream, &mut view, sum, status)?)?;
        }
        Ok(())
    })?;
    let bytes = (total * std::mem::size_of::<T>()) as f64;
    say!(
        "RESULT kernpack normalize-batched dtype={} arrays={arrays} elements={total} batched_ms={batched_ms:.4} loop_ms={loop_ms:.4} speedup={:.1} batched_gb_per_s={:.1}",
        T::NAME,
        loop_ms / batched_ms,
        3.0 * bytes / 1e9 / (batched_ms * 1e-3)
    );
    Ok(())
}
