//! Batched flexible multiband periodograms over several GPUs (and survey
//! batches on one), in chunks of series. A chunk's arena holds its series
//! prepared in f64 ([`MultibandPrepared`]: samples grouped by band,
//! weights, each band's segment), their grids and the periodograms (of
//! `T`); the kernel is the one-piece call's, so the values are the same
//! bits.
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

#[cfg(test)]
use super::get;
use super::plan::Arena;
use super::rows::{gather_peaks, gather_rows, plan_series, GridsAt, Rows};
use super::{put, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::lombscargle::multiband::LombScargleMultibandBatch;
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::lombscargle_multiband::LombScargleMultibandOnDevice;
use crate::gpu::Gpu;
use crate::params::lombscargle::BatchGrid;
use crate::params::lombscargle_multiband::{MultibandFlat, MultibandOptions, MultibandPrepared};
use crate::params::peaks::{Peak, PeakOptions};

/// A validated batch, as the chunks see it. `preps` is empty when the job
/// only sizes arenas (the one-GPU rule's split); each series then counts as
/// many band segments as samples, a bound.
pub(crate) struct MultibandJob<'a, T> {
    pub t: &'a [T],
    pub offsets: &'a [usize],
    pub preps: &'a [MultibandPrepared],
    /// Band segments before each series (nseries + 1; empty when sizing).
    pub segments: Vec<usize>,
    pub grids: BatchGrid<'a>,
    pub opts: MultibandOptions,
    /// Only each series' best peaks come back, not its periodogram.
    pub peaks: Option<PeakOptions>,
}

/// A chunk's buffers in its arena.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MultibandLayout {
    nseries: usize,
    samples: usize,
    segments: usize,
    t: CUdeviceptr,
    w: CUdeviceptr,
    wy: CUdeviceptr,
    series_bands: CUdeviceptr,
    band_starts: CUdeviceptr,
    stats: CUdeviceptr,
    f0: CUdeviceptr,
    df: CUdeviceptr,
    rows: Rows,
}

impl<'a, T: Float> MultibandJob<'a, T> {
    fn of(
        op: &LombScargleMultibandBatch<'a, T>,
        preps: &'a [MultibandPrepared],
        peaks: Option<PeakOptions>,
    ) -> Self {
        let mut segments = Vec::with_capacity(preps.len() + 1);
        segments.push(0);
        for p in preps {
            segments.push(segments[segments.len() - 1] + p.nbands());
        }
        MultibandJob {
            t: op.batch.t,
            offsets: op.batch.offsets,
            preps,
            segments,
            grids: op.grids,
            opts: op.opts,
            peaks,
        }
    }

    fn per_series_grid(&self) -> bool {
        matches!(self.grids, BatchGrid::PerSeries { .. })
    }

    fn segments_of(&self, r: &Range<usize>) -> usize {
        if self.segments.is_empty() {
            self.offsets[r.end] - self.offsets[r.start]
        } else {
            self.segments[r.end] - self.segments[r.start]
        }
    }
}

impl<T: Float> ChunkJob for MultibandJob<'_, T> {
    type Layout = MultibandLayout;
    const WHAT: &'static str = "series";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (MultibandLayout, Regions) {
        let nseries = r.len();
        let samples = self.offsets[r.end] - self.offsets[r.start];
        let segments = self.segments_of(&r);
        let grids = if self.per_series_grid() { nseries } else { 1 };
        let mut a = Arena::at(base);
        let t = a.take::<f64>(samples);
        let w = a.take::<f64>(samples);
        let wy = a.take::<f64>(samples);
        let series_bands = a.take::<i64>(nseries + 1);
        let band_starts = a.take::<i64>(segments + 1);
        let stats = a.take::<f64>(3 * nseries);
        let f0 = a.take::<f64>(grids);
        let df = a.take::<f64>(grids);
        let h2d = 0..a.bytes;
        let (rows, d2h) = Rows::take::<T>(&mut a, nseries, self.grids.nf(), self.peaks);
        #[rustfmt::skip]
        let lay = MultibandLayout {
            nseries, samples, segments, t, w, wy, series_bands, band_starts, stats, f0, df, rows,
        };
        (
            lay,
            Regions {
                total: a.bytes,
                h2d,
                d2h,
            },
        )
    }

    fn pack(&self, r: &Range<usize>, lay: &MultibandLayout, host: &mut [u8]) {
        let series = r.clone().map(|s| {
            (
                &self.t[self.offsets[s]..self.offsets[s + 1]],
                &self.preps[s],
            )
        });
        let flat = MultibandFlat::of(series);
        put(host, lay.t, &flat.t);
        put(host, lay.w, &flat.w);
        put(host, lay.wy, &flat.wy);
        put(host, lay.band_starts, &flat.band_starts);
        put(host, lay.series_bands, &flat.series_bands);
        put(host, lay.stats, &flat.stats);
        let (f0, df) = match self.grids {
            BatchGrid::Shared(g) => (vec![g.f0], vec![g.df]),
            BatchGrid::PerSeries { f0, df, .. } => (f0[r.clone()].to_vec(), df[r.clone()].to_vec()),
        };
        put(host, lay.f0, &f0);
        put(host, lay.df, &df);
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        _: &Range<usize>,
        lay: &MultibandLayout,
    ) -> Result<()> {
        let call = LombScargleMultibandOnDevice::<T> {
            nseries: lay.nseries,
            n: lay.samples,
            nsegments: lay.segments,
            series_bands: lay.series_bands,
            band_starts: lay.band_starts,
            t: lay.t,
            w: lay.w,
            wy: lay.wy,
            stats: lay.stats,
            freqs: 0,
            f0: lay.f0,
            df: lay.df,
            per_series_grid: self.per_series_grid(),
            nf: self.grids.nf(),
            opts: self.opts,
            out: lay.rows.values,
            dtype: std::marker::PhantomData,
        };
        let grids = GridsAt {
            f0: lay.f0,
            df: lay.df,
            per_series_grid: self.per_series_grid(),
        };
        // SAFETY: the caller's arena holds this layout, inputs copied in;
        // the reduction follows the periodograms in stream order.
        unsafe {
            call.launch(gpu, stream, ())?;
            lay.rows
                .reduce::<T>(gpu, stream, lay.nseries, self.grids.nf(), grids, self.peaks)
        }
    }

    #[cfg(test)]
    fn emulate(&self, _: &Range<usize>, lay: &MultibandLayout, arena: &mut [u8]) {
        let (ns, n, nf) = (lay.nseries, lay.samples, self.grids.nf());
        let t = get::<f64>(arena, lay.t, n).to_vec();
        let w = get::<f64>(arena, lay.w, n).to_vec();
        let wy = get::<f64>(arena, lay.wy, n).to_vec();
        let series_bands = get::<i64>(arena, lay.series_bands, ns + 1).to_vec();
        let band_starts = get::<i64>(arena, lay.band_starts, lay.segments + 1).to_vec();
        let stats = get::<f64>(arena, lay.stats, 3 * ns).to_vec();
        let grids = if self.per_series_grid() { ns } else { 1 };
        let f0 = get::<f64>(arena, lay.f0, grids).to_vec();
        let df = get::<f64>(arena, lay.df, grids).to_vec();
        let mut out = Vec::with_capacity(ns * nf);
        for s in 0..ns {
            let segs = &band_starts[series_bands[s] as usize..=series_bands[s + 1] as usize];
            let first = segs[0] as usize;
            let r = first..segs[segs.len() - 1] as usize;
            let prep = MultibandPrepared {
                order: (0..r.len()).collect(),
                labels: vec![0; segs.len() - 1],
                band_starts: segs.iter().map(|&j| j as usize - first).collect(),
                w: w[r.clone()].to_vec(),
                wy: wy[r.clone()].to_vec(),
                chi2_ref: stats[3 * s],
                ridge_base: stats[3 * s + 1],
                ridge_band: stats[3 * s + 2],
            };
            let g = if grids == 1 { 0 } else { s };
            for k in 0..nf {
                let f = f0[g] + k as f64 * df[g];
                let p = crate::cpu::lombscargle_multiband::flexible_power(
                    &t[r.clone()],
                    &prep,
                    f,
                    &self.opts,
                );
                out.push(T::from_f64(p));
            }
        }
        lay.rows.emulate(arena, &out, nf, (&f0, &df), self.peaks);
    }
}

/// The sizes of `op`'s arenas, for the one-GPU rule (no values needed).
pub(crate) fn sizing_job<'a, T: Float>(
    op: &LombScargleMultibandBatch<'a, T>,
) -> MultibandJob<'a, T> {
    MultibandJob {
        t: op.batch.t,
        offsets: op.batch.offsets,
        preps: &[],
        segments: Vec::new(),
        grids: op.grids,
        opts: op.opts,
        peaks: None,
    }
}

/// The pipeline's best peaks of each series, after validation.
pub(crate) fn multiband_batch_peaks<T: Float>(
    exec: &Exec<'_>,
    op: &LombScargleMultibandBatch<'_, T>,
    preps: &[MultibandPrepared],
    peaks: PeakOptions,
) -> Result<(Vec<Vec<Peak>>, Vec<GpuProfile>)> {
    let job = MultibandJob::of(op, preps, Some(peaks));
    let plans = plan_series(exec, &job, job.offsets, op.grids.nf())?;
    let at = |lay: &MultibandLayout| (lay.rows.index, lay.rows.value);
    gather_peaks(exec, &job, &plans, (op.batch.len(), peaks.k), at)
}

/// The pipeline's flexible batch, after validation: `nseries x nf` values.
pub(crate) fn multiband_batch<T: Float>(
    exec: &Exec<'_>,
    op: &LombScargleMultibandBatch<'_, T>,
    preps: &[MultibandPrepared],
) -> Result<(Vec<T>, Vec<GpuProfile>)> {
    let job = MultibandJob::of(op, preps, None);
    let nf = op.grids.nf();
    let plans = plan_series(exec, &job, job.offsets, nf)?;
    let at = |lay: &MultibandLayout| lay.rows.values;
    gather_rows(exec, &job, &plans, (op.batch.len(), nf), at)
}

#[cfg(test)]
mod tests {
    use super::super::Exec;
    use super::*;
    use crate::api::exec::{CpuRun, Operation};
    use crate::api::lombscargle::multiband::MultibandBatch;
    use crate::params::lombscargle::UniformGrid;
    use crate::params::peaks::{select_peaks, Better};
    use crate::test_rng::Rng;

    #[test]
    fn split_and_chunked_equals_the_cpu_backend() {
        let mut rng = Rng(31);
        let (mut t, mut y, mut dy, mut bands, mut offsets) =
            (vec![], vec![], vec![], vec![], vec![0]);
        for _ in 0..40 {
            let n = 20 + rng.below(60) as usize;
            let nbands = 1 + rng.below(5) as u32;
            for i in 0..n {
                let ti = 100.0 * rng.next();
                t.push(ti);
                y.push((0.7 * ti).sin() + 0.2 * rng.next() + (i as u32 % nbands) as f64);
                dy.push(0.5 + rng.next());
                bands.push(i as u32 % nbands);
            }
            offsets.push(t.len());
        }
        let f0: Vec<f64> = (0..40).map(|_| 0.02 + 0.05 * rng.next()).collect();
        let df = vec![0.003; 40];
        let batch = MultibandBatch {
            t: &t,
            y: &y,
            dy: Some(&dy),
            bands: &bands,
            offsets: &offsets,
        };
        for grids in [
            BatchGrid::Shared(UniformGrid::new(0.05, 0.004, 37)),
            BatchGrid::PerSeries {
                f0: &f0,
                df: &df,
                nf: 37,
            },
        ] {
            let op = LombScargleMultibandBatch {
                batch,
                grids,
                opts: MultibandOptions::default(),
            };
            op.validate().unwrap();
            let cpu = CpuRun {
                threads: 2,
                progress: None,
            };
            let want = op.on_cpu(&cpu).unwrap();
            let preps = op.prepared().unwrap();
            for (parts, limit, chunk) in [(1, 1 << 30, 1 << 30), (3, 60_000, 9_000)] {
                let exec = Exec::Emulated {
                    parts,
                    max_device_bytes: limit,
                    chunk_bytes: chunk,
                };
                let (got, profiles) = multiband_batch(&exec, &op, &preps).unwrap();
                assert_eq!(got, want, "{parts} parts, limit {limit}");
                if limit == 60_000 {
                    assert!(profiles.iter().all(|p| p.plan.chunks.len() > 1));
                }
                // The peaks reduced per chunk: those of the whole values.
                let peaks = PeakOptions {
                    k: 4,
                    separation: 0.01,
                };
                let (got, _) = multiband_batch_peaks(&exec, &op, &preps, peaks).unwrap();
                for (s, row) in want.chunks(37).enumerate() {
                    let axis = grids.grid(s).frequencies();
                    assert_eq!(
                        got[s],
                        select_peaks(row, &axis, &peaks, Better::Higher),
                        "series {s}"
                    );
                }
            }
        }
    }
}
