//! Batched Lomb-Scargle over several GPUs, in chunks of series.
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::Arena;
use super::rows::{gather_peaks, plan_series};
use super::Regions;
use super::{get, per_gpu, put, put_offsets, ChunkJob, Exec, GpuPlan, GpuProfile, MultiGpu};
use crate::api::lombscargle::batch::{
    validate_batch, Batch, BatchDeviceBuffers, BatchGrid, LombScargleBatch,
    LombScargleBatchOnDevice,
};
use crate::api::lombscargle::peaks::{
    LombScargleBatchPeaks, LombScargleBatchTopPeaks, Peak, PeakBuffers,
};
use crate::api::lombscargle::{output_len, LombScargleOptions, Periodogram};
use crate::cpu::parallel::{map_ranges, threads_for};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::lombscargle::STATS_LEN;
use crate::gpu::peaks::PeaksOnDevice;
use crate::gpu::Gpu;
use crate::params::peaks::{Better, PeakOptions};

/// A validated batch, as the chunks see it.
pub(crate) struct LsJob<'a, T> {
    pub batch: &'a Batch<'a, T>,
    pub grids: &'a BatchGrid<'a>,
    pub opts: &'a LombScargleOptions,
    /// Values per series in the output.
    pub out_len: usize,
    pub keep: Keep,
}

/// What of each series comes back from a chunk.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Keep {
    /// Its periodogram.
    Periodograms,
    /// Only its highest peak: the periodograms stay in the arena's scratch
    /// and are reduced there.
    HighestPeak,
    /// Likewise only its best peaks ([`crate::params::peaks`]).
    BestPeaks(PeakOptions),
}

impl Keep {
    /// Peaks (index and value) per series; 0 when the periodograms come back.
    fn peaks_per_series(&self) -> usize {
        match self {
            Keep::Periodograms => 0,
            Keep::HighestPeak => 1,
            Keep::BestPeaks(top) => top.k,
        }
    }
}

/// A chunk's batch on the device, its statistics' scratch and (peaks mode)
/// its peaks.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LsLayout<T> {
    batch: LombScargleBatchOnDevice<T>,
    stats: CUdeviceptr,
    peaks: PeakBuffers,
}

impl<'a, T: Float> LsJob<'a, T> {
    pub(crate) fn new(
        batch: &'a Batch<'a, T>,
        grids: &'a BatchGrid<'a>,
        opts: &'a LombScargleOptions,
        keep: Keep,
    ) -> Self {
        LsJob {
            batch,
            grids,
            opts,
            out_len: output_len(grids.nf(), opts),
            keep,
        }
    }

    fn per_series_grid(&self) -> bool {
        matches!(self.grids, BatchGrid::PerSeries { .. })
    }
}

impl<T: Float> ChunkJob for LsJob<'_, T> {
    type Layout = LsLayout<T>;
    const WHAT: &'static str = "series";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (LsLayout<T>, Regions) {
        let nseries = r.len();
        let samples = self.batch.offsets[r.end] - self.batch.offsets[r.start];
        let ngrids = if self.per_series_grid() { nseries } else { 1 };
        let mut a = Arena::at(base);
        let t = a.take::<T>(samples);
        let y = a.take::<T>(samples);
        let weights = self.batch.weights.map(|_| a.take::<T>(samples));
        let offsets = a.take::<i64>(nseries + 1);
        let f0 = a.take::<f64>(ngrids);
        let df = a.take::<f64>(ngrids);
        let h2d = 0..a.bytes;
        // Peaks: nothing but them comes back. Zero-length when not asked
        // for. Before the periodograms, so that the pinned mirror (which
        // ends with the last byte copied) leaves that scratch out.
        let peaks = nseries * self.keep.peaks_per_series();
        let index = a.take::<i64>(peaks);
        let value = a.take::<f64>(peaks);
        let peaks_end = a.end;
        let out = a.take::<T>(nseries * self.out_len);
        let d2h = if peaks > 0 {
            a.offset(index)..peaks_end
        } else {
            a.offset(out)..a.end
        };
        let stats = a.take::<f64>(nseries * STATS_LEN);
        let per_series_grid = self.per_series_grid();
        #[rustfmt::skip]
        let buffers = BatchDeviceBuffers { t, y, weights, offsets, f0, df, per_series_grid, out };
        let (nf, opts, dtype) = (self.grids.nf(), *self.opts, PhantomData);
        #[rustfmt::skip]
        let batch = LombScargleBatchOnDevice { buffers, nseries, nf, opts, dtype };
        let peaks = PeakBuffers { index, value };
        let total = a.bytes;
        (
            LsLayout {
                batch,
                stats,
                peaks,
            },
            Regions { total, h2d, d2h },
        )
    }

    fn pack(&self, r: &Range<usize>, lay: &LsLayout<T>, host: &mut [u8]) {
        let (b, at) = (self.batch, &lay.batch.buffers);
        let (lo, hi) = (b.offsets[r.start], b.offsets[r.end]);
        put(host, at.t, &b.t[lo..hi]);
        put(host, at.y, &b.y[lo..hi]);
        if let (Some(at), Some(w)) = (at.weights, b.weights) {
            put(host, at, &w[lo..hi]);
        }
        put_offsets(host, at.offsets, &b.offsets[r.start..=r.end]);
        match self.grids {
            BatchGrid::Shared(grid) => {
                put(host, at.f0, &[grid.f0]);
                put(host, at.df, &[grid.df]);
            }
            BatchGrid::PerSeries { f0, df, .. } => {
                put(host, at.f0, &f0[r.clone()]);
                put(host, at.df, &df[r.clone()]);
            }
        }
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        r: &Range<usize>,
        lay: &LsLayout<T>,
    ) -> Result<()> {
        let (nf, out) = (self.grids.nf(), lay.batch.buffers.out);
        let samples = self.batch.offsets[r.end] - self.batch.offsets[r.start];
        // SAFETY: the caller's arena holds this layout, inputs copied in.
        unsafe {
            lay.batch
                .launch_with_stats(gpu, stream, samples, lay.stats)?;
            if self.keep == Keep::HighestPeak {
                gpu.launch_peaks::<T>(stream, out, r.len(), nf, self.opts, &lay.peaks)?;
            }
            if let Keep::BestPeaks(top) = self.keep {
                let b = &lay.batch.buffers;
                let at = PeaksOnDevice {
                    values: out,
                    nseries: r.len(),
                    nf,
                    axis: 0,
                    f0: b.f0,
                    df: b.df,
                    per_series_grid: b.per_series_grid,
                    index: lay.peaks.index,
                    value: lay.peaks.value,
                    payload_bytes: 0,
                    payload: 0,
                    payload_out: 0,
                };
                gpu.launch_best_peaks::<T>(stream, &at, &top, Better::Higher)?;
            }
        }
        Ok(())
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &LsLayout<T>, arena: &mut [u8]) {
        self.emulate_chunk(r, lay, arena);
    }
}

#[cfg(test)]
impl<T: Float> LsJob<'_, T> {
    /// The CPU backend on one chunk, on its arena (see [`ChunkJob::emulate`]).
    fn emulate_chunk(&self, r: &Range<usize>, lay: &LsLayout<T>, arena: &mut [u8]) {
        use crate::api::lombscargle::{Series, UniformGrid};
        use crate::cpu;
        let (ns, b) = (r.len(), &lay.batch.buffers);
        let offsets = get::<i64>(arena, b.offsets, ns + 1).to_vec();
        let samples = offsets[ns] as usize;
        let t = get::<T>(arena, b.t, samples).to_vec();
        let y = get::<T>(arena, b.y, samples).to_vec();
        let w = b.weights.map(|at| get::<T>(arena, at, samples).to_vec());
        let ngrids = if self.per_series_grid() { ns } else { 1 };
        let f0 = get::<f64>(arena, b.f0, ngrids).to_vec();
        let df = get::<f64>(arena, b.df, ngrids).to_vec();
        for s in 0..ns {
            let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
            let g = if self.per_series_grid() { s } else { 0 };
            // The CPU backend on the chunk's series: the bits
            // `Kernpack::lombscargle_batch` gives on the CPU, which the
            // emulated split is compared with.
            let series = Series {
                t: &t[lo..hi],
                y: &y[lo..hi],
                weights: w.as_ref().map(|w| &w[lo..hi]),
            };
            let grid = UniformGrid::new(f0[g], df[g], self.grids.nf());
            let p: Periodogram<T> =
                cpu::lombscargle::lombscargle_uniform(1, None, &series, &grid, self.opts);
            if self.keep == Keep::HighestPeak {
                let (index, value) =
                    Peak::of(&p).map_or((-1, f64::NAN), |k| (k.index as i64, k.value));
                put(arena, lay.peaks.index + s as u64 * 8, &[index]);
                put(arena, lay.peaks.value + s as u64 * 8, &[value]);
            }
            if let (Keep::BestPeaks(top), Periodogram::Real(v)) = (self.keep, &p) {
                use crate::params::peaks::{select_peaks, write_peaks};
                let v: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
                let found = select_peaks(&v, &grid.frequencies(), &top, Better::Higher);
                let (mut index, mut value) = (vec![0i64; top.k], vec![0.0; top.k]);
                write_peaks(&[found], top.k, &mut index, &mut value);
                put(arena, lay.peaks.index + (s * top.k) as u64 * 8, &index);
                put(arena, lay.peaks.value + (s * top.k) as u64 * 8, &value);
            }
            let values: Vec<T> = match p {
                Periodogram::Real(v) => v,
                Periodogram::Complex(v) => v.iter().flat_map(|c| [c.re, c.im]).collect(),
            };
            let at = s * self.out_len * std::mem::size_of::<T>();
            put(arena, b.out + at as u64, &values);
        }
    }
}

impl MultiGpu {
    facade! {
        /// One periodogram per series of `batch`, in input order, on every GPU of
        /// this handle: bitwise what
        /// [`Kernpack::lombscargle_batch`](crate::Kernpack::lombscargle_batch)
        /// gives on one GPU of the same model (see the module documentation).
        /// Validated as the one-GPU call validates, before any GPU work.
        fn lombscargle_batch / lombscargle_batch_profiled(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
        ) -> Vec<Periodogram<T>>
            = LombScargleBatch { batch: *batch, grids: *grids, opts: *opts };

        /// The highest peak of each series' periodogram, in input order
        /// ([`Peak::of`] of what [`MultiGpu::lombscargle_batch`] gives, the same
        /// index and, but for 'amplitude', the same bits): each chunk's
        /// periodograms are reduced on its GPU, and only the peaks come back.
        fn lombscargle_batch_peaks / lombscargle_batch_peaks_profiled(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
        ) -> Vec<Option<Peak>>
            = LombScargleBatchPeaks { batch: *batch, grids: *grids, opts: *opts };

        /// Each series' best `peaks.k` peaks on every GPU of this handle:
        /// what [`Kernpack::lombscargle_batch_top_peaks`](crate::Kernpack::lombscargle_batch_top_peaks)
        /// gives, each chunk's periodograms reduced on its GPU.
        fn lombscargle_batch_top_peaks / lombscargle_batch_top_peaks_profiled(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleBatchTopPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };
    }

    /// The plan [`MultiGpu::lombscargle_batch`] would follow for `batch` now
    /// (free memory changes): validated, split by work, chunked.
    pub fn plan_lombscargle_batch<T: Float>(
        &self,
        batch: &Batch<'_, T>,
        grids: &BatchGrid<'_>,
        opts: &LombScargleOptions,
    ) -> Result<Vec<GpuPlan>> {
        validate_batch(batch, grids, opts)?;
        plan(
            &Exec::Gpus(self),
            &LsJob::new(batch, grids, opts, Keep::Periodograms),
        )
    }
}

/// Bytes of results one unpacking thread takes at least (small in unit
/// tests, so that their batches take the threaded path too).
const UNPACK_BYTES_PER_THREAD: usize = if cfg!(test) { 4096 } else { 8 << 20 };

/// Threads that may unpack one GPU's chunk: the host's cores shared by the
/// GPUs' threads, at most 8 each.
fn unpack_threads(gpus: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / gpus.max(1)).clamp(1, 8)
}

/// The plan of `job`: its series split by work (samples x frequencies), chunked.
fn plan<T: Float>(exec: &Exec<'_>, job: &LsJob<'_, T>) -> Result<Vec<GpuPlan>> {
    plan_series(exec, job, job.batch.offsets, job.grids.nf())
}

/// The pipeline's batch periodograms, after validation.
pub(crate) fn lombscargle_batch<T: Float>(
    exec: &Exec<'_>,
    op: LombScargleBatch<'_, T>,
) -> Result<(Vec<Periodogram<T>>, Vec<GpuProfile>)> {
    let job = LsJob::new(&op.batch, &op.grids, &op.opts, Keep::Periodograms);
    let plans = plan(exec, &job)?;
    let (normalize, out_len) = (op.opts.normalize, job.out_len);
    // Each GPU's results accumulate in order, chunk after chunk.
    let mut outs: Vec<Vec<Periodogram<T>>> = plans
        .iter()
        .map(|p| Vec::with_capacity(p.items.len()))
        .collect();
    let slots: Vec<&mut Vec<Periodogram<T>>> = outs.iter_mut().collect();
    let helpers = unpack_threads(plans.len());
    let profiles = exec.run(&job, &plans, slots, |out, r, _, lay, host| {
        let values = get::<T>(host, lay.batch.buffers.out, r.len() * out_len);
        let periodograms = |values: &[T]| Periodogram::split(values, out_len, normalize);
        // One vector per series: for large chunks this host copy (into
        // fresh, not yet faulted-in memory) outlasts the GPU's work on the
        // next chunk, so it is spread over a few threads.
        let bytes = std::mem::size_of_val(values);
        let threads = threads_for(helpers, bytes, UNPACK_BYTES_PER_THREAD);
        let parts = map_ranges(threads, r.len(), 1, |series| {
            periodograms(&values[series.start * out_len..series.end * out_len])
        });
        out.extend(parts.into_iter().flatten());
        Ok(())
    })?;
    Ok((outs.into_iter().flatten().collect(), profiles))
}

/// The pipeline's batch peaks, after validation.
pub(crate) fn lombscargle_batch_peaks<T: Float>(
    exec: &Exec<'_>,
    op: LombScargleBatchPeaks<'_, T>,
) -> Result<(Vec<Option<Peak>>, Vec<GpuProfile>)> {
    let job = LsJob::new(&op.batch, &op.grids, &op.opts, Keep::HighestPeak);
    let plans = plan(exec, &job)?;
    // Each GPU writes its own slice of the result, in place: no gather of
    // per-GPU vectors afterwards (10^6 peaks and more).
    let mut peaks: Vec<Option<Peak>> = vec![None; op.batch.len()];
    let slots = per_gpu(&mut peaks, &plans, Range::len);
    let profiles = exec.run(&job, &plans, slots, |out, r, local, lay, host| {
        let index = get::<i64>(host, lay.peaks.index, r.len());
        let value = get::<f64>(host, lay.peaks.value, r.len());
        for (slot, (&i, &v)) in out[local].iter_mut().zip(index.iter().zip(value)) {
            *slot = Peak::from_raw(i, v);
        }
        Ok(())
    })?;
    Ok((peaks, profiles))
}

/// The pipeline's best peaks of each series, after validation.
pub(crate) fn lombscargle_batch_top_peaks<T: Float>(
    exec: &Exec<'_>,
    op: LombScargleBatchTopPeaks<'_, T>,
) -> Result<(Vec<Vec<Peak>>, Vec<GpuProfile>)> {
    let job = LsJob::new(&op.batch, &op.grids, &op.opts, Keep::BestPeaks(op.peaks));
    let plans = plan(exec, &job)?;
    let at = |lay: &LsLayout<T>| (lay.peaks.index, lay.peaks.value);
    gather_peaks(exec, &job, &plans, (op.batch.len(), op.peaks.k), at)
}
