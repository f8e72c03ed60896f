//! Batched multi-term periodograms in chunks of series over one GPU or
//! several, for their best peaks: each chunk's arena holds its series
//! prepared ([`Chi2Prepared`]: weights and weighted values, as the kernel
//! takes them, in `T`), their grids and the periodograms, which the
//! best-peaks kernel reduces there, so only the peaks come back. The kernel
//! is the one-piece call's, with the same inputs, so the periodograms are
//! the same bits.
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::Arena;
use super::rows::{gather_peaks, plan_series, GridsAt, Rows};
use super::{put, put_offsets, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::lombscargle::chi2::LombScargleChi2BatchPeaks;
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::lombscargle_chi2::LombScargleChi2OnDevice;
use crate::gpu::Gpu;
use crate::params::lombscargle::BatchGrid;
use crate::params::lombscargle_chi2::{Chi2Options, Chi2Prepared};
use crate::params::peaks::{Peak, PeakOptions};

/// A validated batch, as the chunks see it.
pub(crate) struct Chi2Job<'a, T> {
    t: &'a [T],
    offsets: &'a [usize],
    preps: &'a [Chi2Prepared],
    grids: BatchGrid<'a>,
    opts: Chi2Options,
    /// Only each series' best peaks come back, not its periodogram.
    peaks: Option<PeakOptions>,
}

/// A chunk's buffers in its arena.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Chi2Layout {
    nseries: usize,
    samples: usize,
    t: CUdeviceptr,
    w: CUdeviceptr,
    wy: CUdeviceptr,
    offsets: CUdeviceptr,
    stats: CUdeviceptr,
    grids: GridsAt,
    rows: Rows,
}

impl<T: Float> Chi2Job<'_, T> {
    fn per_series_grid(&self) -> bool {
        matches!(self.grids, BatchGrid::PerSeries { .. })
    }
}

impl<T: Float> ChunkJob for Chi2Job<'_, T> {
    type Layout = Chi2Layout;
    const WHAT: &'static str = "series";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (Chi2Layout, Regions) {
        let nseries = r.len();
        let samples = self.offsets[r.end] - self.offsets[r.start];
        let per_series_grid = self.per_series_grid();
        let ngrids = if per_series_grid { nseries } else { 1 };
        let mut a = Arena::at(base);
        let t = a.take::<T>(samples);
        let w = a.take::<T>(samples);
        let wy = a.take::<T>(samples);
        let offsets = a.take::<i64>(nseries + 1);
        let stats = a.take::<f64>(2 * nseries);
        let f0 = a.take::<f64>(ngrids);
        let df = a.take::<f64>(ngrids);
        let h2d = 0..a.bytes;
        let (rows, d2h) = Rows::take::<T>(&mut a, nseries, self.grids.nf(), self.peaks);
        let grids = GridsAt {
            f0,
            df,
            per_series_grid,
        };
        #[rustfmt::skip]
        let lay = Chi2Layout { nseries, samples, t, w, wy, offsets, stats, grids, rows };
        let total = a.bytes;
        (lay, Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, lay: &Chi2Layout, host: &mut [u8]) {
        let (lo, hi) = (self.offsets[r.start], self.offsets[r.end]);
        let preps = &self.preps[r.clone()];
        let cast = |of: fn(&Chi2Prepared) -> &[f64]| -> Vec<T> {
            preps
                .iter()
                .flat_map(|p| of(p).iter().map(|&v| T::from_f64(v)))
                .collect()
        };
        put(host, lay.t, &self.t[lo..hi]);
        put(host, lay.w, &cast(|p| &p.w));
        put(host, lay.wy, &cast(|p| &p.wy));
        put_offsets(host, lay.offsets, &self.offsets[r.start..=r.end]);
        let stats: Vec<f64> = preps
            .iter()
            .flat_map(|p| [p.chi2_ref, p.weight_sum])
            .collect();
        put(host, lay.stats, &stats);
        let (f0, df) = match self.grids {
            BatchGrid::Shared(g) => (vec![g.f0], vec![g.df]),
            BatchGrid::PerSeries { f0, df, .. } => (f0[r.clone()].to_vec(), df[r.clone()].to_vec()),
        };
        put(host, lay.grids.f0, &f0);
        put(host, lay.grids.df, &df);
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        _: &Range<usize>,
        lay: &Chi2Layout,
    ) -> Result<()> {
        let nf = self.grids.nf();
        let call = LombScargleChi2OnDevice::<T> {
            nseries: lay.nseries,
            n: lay.samples,
            offsets: lay.offsets,
            t: lay.t,
            w: lay.w,
            wy: lay.wy,
            stats: lay.stats,
            freqs: 0,
            f0: lay.grids.f0,
            df: lay.grids.df,
            per_series_grid: lay.grids.per_series_grid,
            nf,
            opts: self.opts,
            out: lay.rows.values,
            dtype: PhantomData,
        };
        // SAFETY: the caller's arena holds this layout, inputs copied in;
        // the reduction follows the periodograms in stream order.
        unsafe {
            call.launch(gpu, stream, ())?;
            lay.rows
                .reduce::<T>(gpu, stream, lay.nseries, nf, lay.grids, self.peaks)
        }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &Chi2Layout, arena: &mut [u8]) {
        use super::get;
        let (ns, n, nf) = (lay.nseries, lay.samples, self.grids.nf());
        let t = get::<T>(arena, lay.t, n).to_vec();
        let widen =
            |at| -> Vec<f64> { get::<T>(arena, at, n).iter().map(|v| v.to_f64()).collect() };
        let (w, wy) = (widen(lay.w), widen(lay.wy));
        let offsets = get::<i64>(arena, lay.offsets, ns + 1).to_vec();
        let stats = get::<f64>(arena, lay.stats, 2 * ns).to_vec();
        let ngrids = if lay.grids.per_series_grid { ns } else { 1 };
        let f0 = get::<f64>(arena, lay.grids.f0, ngrids).to_vec();
        let df = get::<f64>(arena, lay.grids.df, ngrids).to_vec();
        let mut out = Vec::with_capacity(ns * nf);
        for s in 0..ns {
            let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
            let prep = Chi2Prepared {
                w: w[lo..hi].to_vec(),
                wy: wy[lo..hi].to_vec(),
                chi2_ref: stats[2 * s],
                weight_sum: stats[2 * s + 1],
            };
            // The CPU backend on the arena's series: for f64 the bits of
            // `Kernpack::lombscargle_chi2_batch` on the CPU.
            let g = if ngrids == 1 { 0 } else { s };
            debug_assert_eq!(self.grids.grid(r.start + s).f0, f0[g]);
            out.extend(crate::cpu::lombscargle_chi2::lombscargle_chi2::<T>(
                1,
                None,
                &t[lo..hi],
                &prep,
                nf,
                |k| f0[g] + k as f64 * df[g],
                Some(df[g]),
                &self.opts,
            ));
        }
        lay.rows.emulate(arena, &out, nf, (&f0, &df), self.peaks);
    }
}

/// The pipeline's best peaks of each series of a validated call, `preps`
/// its series prepared.
pub(crate) fn chi2_batch_peaks<T: Float>(
    exec: &Exec<'_>,
    op: &LombScargleChi2BatchPeaks<'_, T>,
    preps: &[Chi2Prepared],
) -> Result<(Vec<Vec<Peak>>, Vec<GpuProfile>)> {
    let job = Chi2Job {
        t: op.batch.t,
        offsets: op.batch.offsets,
        preps,
        grids: op.grids,
        opts: op.opts,
        peaks: Some(op.peaks),
    };
    let plans = plan_series(exec, &job, job.offsets, job.grids.nf())?;
    let at = |lay: &Chi2Layout| (lay.rows.index, lay.rows.value);
    gather_peaks(exec, &job, &plans, (preps.len(), op.peaks.k), at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::exec::{CpuRun, Operation};
    use crate::api::lombscargle::chi2::{Chi2Batch, LombScargleChi2Batch};
    use crate::params::lombscargle::UniformGrid;
    use crate::params::peaks::{select_peaks, Better};
    use crate::test_rng::Rng;

    #[test]
    fn chunked_peaks_are_those_of_the_cpu_periodograms() {
        let mut rng = Rng(57);
        let (mut t, mut y, mut dy, mut offsets) = (vec![], vec![], vec![], vec![0]);
        for _ in 0..30 {
            let n = 10 + rng.below(70) as usize;
            let omega = 0.3 + rng.next();
            for _ in 0..n {
                let ti = 80.0 * rng.next();
                t.push(ti);
                y.push((omega * ti).sin() + 0.3 * rng.next());
                dy.push(0.5 + rng.next());
            }
            offsets.push(t.len());
        }
        let f0: Vec<f64> = (0..30).map(|_| 0.01 + 0.02 * rng.next()).collect();
        let df = vec![0.002; 30];
        let batch = Chi2Batch {
            t: &t,
            y: &y,
            dy: Some(&dy),
            offsets: &offsets,
        };
        let opts = Chi2Options {
            nterms: 2,
            ..Chi2Options::default()
        };
        let peaks = PeakOptions {
            k: 4,
            separation: 0.005,
        };
        for grids in [
            BatchGrid::Shared(UniformGrid::new(0.01, 0.003, 53)),
            BatchGrid::PerSeries {
                f0: &f0,
                df: &df,
                nf: 53,
            },
        ] {
            let op = LombScargleChi2BatchPeaks {
                batch,
                grids,
                opts,
                peaks,
            };
            op.validate().unwrap();
            let whole = LombScargleChi2Batch { batch, grids, opts };
            // One thread, as the emulated kernels: the same bits.
            let cpu = CpuRun {
                threads: 1,
                progress: None,
            };
            let rows = whole.on_cpu(&cpu).unwrap();
            let preps = whole.prepare().unwrap();
            for (parts, limit, chunk) in [(1, 1 << 30, 1 << 30), (3, 40_000, 6_000)] {
                let exec = Exec::Emulated {
                    parts,
                    max_device_bytes: limit,
                    chunk_bytes: chunk,
                };
                let (got, profiles) = chi2_batch_peaks(&exec, &op, &preps).unwrap();
                if limit == 40_000 {
                    assert!(profiles.iter().all(|p| p.plan.chunks.len() > 1));
                }
                for (s, row) in rows.iter().enumerate() {
                    let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
                    let axis = grids.grid(s).frequencies();
                    let want = select_peaks(&row, &axis, &peaks, Better::Higher);
                    assert_eq!(got[s], want, "{parts} parts: series {s}");
                }
            }
        }
    }
}
