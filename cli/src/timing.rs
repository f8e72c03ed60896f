//! How `kernpack bench` times work, shared by every benchmark (bench.rs,
//! bench_box.rs, bench_streams.rs, fg_cmd.rs): GPU work with CUDA events on
//! the GPU's stream after 3 warm-up runs, CPU-backend work by the wall clock
//! after one, and the median of the timed runs reported.
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;
use cudarc::driver::CudaStream;

use crate::options::BenchBackend;

/// What a benchmark returns: any error, reported by its message.
pub type BenchResult<T = ()> = Result<T, Box<dyn std::error::Error>>;

/// Timed runs after 3 warm-up runs (`DEFAULT` unless given); the median is reported.
#[derive(clap::Args, Debug)]
pub struct Reps<const DEFAULT: u32 = 20> {
    /// Timed runs (after warm-up); the median is reported.
    // Not default_value_t: clap keeps its text in a static, which every
    // `DEFAULT` would share.
    #[arg(long, default_value = DEFAULT.to_string(), value_parser = clap::value_parser!(u32).range(1..))]
    pub reps: u32,
}

/// What a benchmark times, and how many runs (`REPS` unless given).
#[derive(clap::Args, Debug)]
pub struct Timing<const REPS: u32 = 20> {
    /// What to time.
    #[arg(long, value_enum, default_value_t = BenchBackend::Gpu)]
    pub backend: BenchBackend,
    #[command(flatten)]
    pub reps: Reps<REPS>,
}

impl<const REPS: u32> Timing<REPS> {
    pub fn on_cpu(&self) -> bool {
        self.backend == BenchBackend::Cpu
    }

    pub fn reps(&self) -> usize {
        self.reps.reps as usize
    }
}

/// The median of `times` (the upper one of an even count); `times` is not empty.
pub fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// CUDA-event times of `work` on `stream`, in ms, sorted, after 3 warm-up
/// runs; `before` runs ahead of each, outside the timed interval (to restore
/// a `state` that the work changes, for instance).
pub fn event_times<S>(
    stream: &Arc<CudaStream>,
    reps: usize,
    state: &mut S,
    mut before: impl FnMut(&mut S) -> BenchResult,
    mut work: impl FnMut(&mut S) -> kernpack::Result<()>,
) -> BenchResult<Vec<f64>> {
    let ctx = stream.context();
    let start = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let stop = ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT))?;
    let mut times = Vec::with_capacity(reps);
    for rep in 0..reps.max(1) + 3 {
        before(state)?;
        start.record(stream)?;
        work(state)?;
        stop.record(stream)?;
        stop.synchronize()?;
        if rep >= 3 {
            times.push(start.elapsed_ms(&stop)? as f64);
        }
    }
    times.sort_by(f64::total_cmp);
    Ok(times)
}

/// Median CUDA-event time of `work` on `stream`, after 3 warm-up runs.
pub fn event_median(
    stream: &Arc<CudaStream>,
    reps: usize,
    mut work: impl FnMut() -> kernpack::Result<()>,
) -> BenchResult<f64> {
    let times = event_times(stream, reps, &mut (), |_| Ok(()), |_| work())?;
    Ok(median(times))
}

/// Median wall-clock time of `work` on the host (the CPU backend), after one
/// warm-up run.
pub fn wall_median(
    reps: usize,
    mut work: impl FnMut() -> kernpack::Result<()>,
) -> BenchResult<f64> {
    work()?;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps.max(1) {
        let started = Instant::now();
        work()?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

/// Median time of copying `src` into `dst` on the CPU backend's thread count,
/// in contiguous pieces (one read and one write of every byte): the host's
/// memory roofline, which the CPU side of a memory-bound benchmark is
/// measured against.
pub fn host_copy_median<T: Copy + Send + Sync>(
    src: &[T],
    dst: &mut [T],
    reps: usize,
) -> BenchResult<f64> {
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
