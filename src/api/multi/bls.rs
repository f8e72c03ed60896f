//! Batched BLS searches over several GPUs (and large batches on one), in
//! chunks of series. A chunk's arena holds its series prepared in fixed point
//! ([`BlsPrepared`]), the periods and durations, and the best box of each
//! (series, period), which is all that comes back; the host turns the boxes
//! into fields as the one-piece call does, so the results are the same bits.
//! A kernel whose histograms exceed shared memory also takes global scratch
//! of its own (up to 1 GiB, outside the arena). With [`PeakOptions`] the
//! boxes stay on the GPU with their powers, and only the boxes of each
//! series' best periods come back (csrc/peaks.cu, the box as payload).
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{get, per_gpu, put, put_offsets, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::bls::{
    peaks_of_boxes, results_of_boxes, BlsResults, BlsSearchBatch, BlsSearchBatchPeaks,
};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::bls::BlsOnDevice;
use crate::gpu::device::DeviceOperation;
use crate::gpu::peaks::PeaksOnDevice;
use crate::gpu::Gpu;
use crate::params::bls::{BlsGrid, BlsObjective, BlsPeaks, BlsPrepared, BoxCounts};
use crate::params::peaks::{read_peaks, Better, PeakOptions};

/// Bytes of one [`BoxCounts`] on the device (four i64).
const BOX_BYTES: usize = 32;

/// A validated batch, as the chunks see it. `preps` may be empty when the
/// job only sizes arenas (the one-GPU rule's split).
pub(crate) struct BlsJob<'a> {
    pub offsets: &'a [usize],
    pub preps: &'a [BlsPrepared],
    pub periods: &'a [f64],
    pub grid: &'a BlsGrid,
    pub objective: BlsObjective,
    /// Only the boxes of each series' best periods come back.
    pub peaks: Option<PeakOptions>,
}

/// A chunk's buffers in its arena.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BlsLayout {
    nseries: usize,
    samples: usize,
    dt: CUdeviceptr,
    wy: CUdeviceptr,
    w: CUdeviceptr,
    offsets: CUdeviceptr,
    totals: CUdeviceptr,
    units: CUdeviceptr,
    periods: CUdeviceptr,
    duration_bins: CUdeviceptr,
    out: CUdeviceptr,
    /// With peaks: each box's power, then `k` indices, values and boxes
    /// per series.
    power: CUdeviceptr,
    index: CUdeviceptr,
    value: CUdeviceptr,
    peak_boxes: CUdeviceptr,
}

impl<'a> BlsJob<'a> {
    /// The job of a validated batch: its series prepared, the periods (f64)
    /// and grid, and with `peaks` only the boxes of those back.
    fn of<T: Float>(
        op: &BlsSearchBatch<'a, T>,
        preps: &'a [BlsPrepared],
        periods: &'a [f64],
        grid: &'a BlsGrid,
        peaks: Option<PeakOptions>,
    ) -> Self {
        BlsJob {
            offsets: op.batch.offsets,
            preps,
            periods,
            grid,
            objective: op.opts.objective,
            peaks,
        }
    }

    fn on_device(&self, lay: &BlsLayout) -> BlsOnDevice {
        BlsOnDevice {
            nseries: lay.nseries,
            n: lay.samples,
            offsets: lay.offsets,
            dt: lay.dt,
            wy: lay.wy,
            w: lay.w,
            totals: lay.totals,
            units: lay.units,
            nperiods: self.periods.len(),
            periods: lay.periods,
            duration_bins: lay.duration_bins,
            grid: self.grid.clone(),
            objective: self.objective,
            out: lay.out,
            power: lay.power,
        }
    }
}

impl ChunkJob for BlsJob<'_> {
    type Layout = BlsLayout;
    const WHAT: &'static str = "series";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (BlsLayout, Regions) {
        let nseries = r.len();
        let samples = self.offsets[r.end] - self.offsets[r.start];
        let mut a = Arena::at(base);
        let dt = a.take::<f64>(samples);
        let wy = a.take::<i64>(samples);
        let w = a.take::<i64>(samples);
        let offsets = a.take::<i64>(nseries + 1);
        let totals = a.take::<i64>(2 * nseries);
        let units = a.take::<f64>(2 * nseries);
        let periods = a.take::<f64>(self.periods.len());
        let duration_bins = a.take::<i64>(self.grid.duration_bins.len());
        let h2d = 0..a.bytes;
        let items = nseries * self.periods.len();
        let out = a.take::<i64>(4 * items);
        let k = self.peaks.map_or(0, |p| p.k);
        let [power, index, value, peak_boxes] = if k > 0 {
            [
                a.take::<f64>(items),
                a.take::<i64>(nseries * k),
                a.take::<f64>(nseries * k),
                a.take::<i64>(4 * nseries * k),
            ]
        } else {
            [0; 4]
        };
        let d2h = a.offset(if k > 0 { index } else { out })..a.end;
        #[rustfmt::skip]
        let lay = BlsLayout { nseries, samples, dt, wy, w, offsets, totals, units, periods, duration_bins, out, power, index, value, peak_boxes };
        (
            lay,
            Regions {
                total: a.bytes,
                h2d,
                d2h,
            },
        )
    }

    fn pack(&self, r: &Range<usize>, lay: &BlsLayout, host: &mut [u8]) {
        let first = self.offsets[r.start];
        for s in r.clone() {
            let (p, at) = (&self.preps[s], (self.offsets[s] - first) as u64 * 8);
            put(host, lay.dt + at, &p.dt);
            put(host, lay.wy + at, &p.wy);
            put(host, lay.w + at, &p.w);
        }
        put_offsets(host, lay.offsets, &self.offsets[r.start..=r.end]);
        let preps = &self.preps[r.clone()];
        let (totals, units) = BlsPrepared::series_stats(preps);
        put(host, lay.totals, &totals);
        put(host, lay.units, &units);
        put(host, lay.periods, self.periods);
        put(host, lay.duration_bins, &self.grid.duration_bins);
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        _: &Range<usize>,
        lay: &BlsLayout,
    ) -> Result<()> {
        // SAFETY: the caller's arena holds this layout, inputs copied in.
        unsafe { self.on_device(lay).launch(gpu, stream, ()) }?;
        let Some(opts) = self.peaks else {
            return Ok(());
        };
        let at = PeaksOnDevice {
            values: lay.power,
            nseries: lay.nseries,
            nf: self.periods.len(),
            axis: lay.periods,
            f0: 0,
            df: 0,
            per_series_grid: false,
            index: lay.index,
            value: lay.value,
            payload_bytes: BOX_BYTES,
            payload: lay.out,
            payload_out: lay.peak_boxes,
        };
        // SAFETY: the powers and boxes were just written in stream order;
        // the arena holds the periods and the peaks' room.
        unsafe { gpu.launch_best_peaks::<f64>(stream, &at, &opts, Better::Higher) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &BlsLayout, arena: &mut [u8]) {
        use crate::params::bls::FixedPoint;
        let ns = r.len();
        let offsets = get::<i64>(arena, lay.offsets, ns + 1).to_vec();
        let n = offsets[ns] as usize;
        let dt = get::<f64>(arena, lay.dt, n).to_vec();
        let wy = get::<i64>(arena, lay.wy, n).to_vec();
        let w = get::<i64>(arena, lay.w, n).to_vec();
        let totals = get::<i64>(arena, lay.totals, 2 * ns).to_vec();
        let units = get::<f64>(arena, lay.units, 2 * ns).to_vec();
        let np = self.periods.len();
        let periods = get::<f64>(arena, lay.periods, np).to_vec();
        for s in 0..ns {
            let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
            // The chunk's series as the kernel reads them (no time origin:
            // the boxes do not depend on it).
            let prep = BlsPrepared {
                t_ref: 0.0,
                dt: dt[lo..hi].to_vec(),
                wy: wy[lo..hi].to_vec(),
                w: w[lo..hi].to_vec(),
                wy_all: totals[2 * s],
                w_all: totals[2 * s + 1],
                wy_unit: FixedPoint { unit: units[2 * s] },
                w_unit: FixedPoint {
                    unit: units[2 * s + 1],
                },
            };
            let boxes =
                crate::cpu::bls::best_boxes(1, None, &prep, &periods, self.grid, self.objective);
            let raw: Vec<i64> = boxes.iter().flat_map(box_raw).collect();
            put(arena, lay.out + (s * np * BOX_BYTES) as u64, &raw);
            if let Some(opts) = self.peaks {
                use crate::params::peaks::select_peaks;
                let power: Vec<f64> = boxes
                    .iter()
                    .map(|b| b.power(&prep, self.objective))
                    .collect();
                let found = select_peaks(&power, &periods, &opts, Better::Higher);
                for j in 0..opts.k {
                    let p = found.get(j);
                    let at = (s * opts.k + j) as u64;
                    put(
                        arena,
                        lay.index + 8 * at,
                        &[p.map_or(-1, |p| p.index as i64)],
                    );
                    put(
                        arena,
                        lay.value + 8 * at,
                        &[p.map_or(f64::NAN, |p| p.value)],
                    );
                    let b = p.map_or(BoxCounts::default(), |p| boxes[p.index]);
                    put(arena, lay.peak_boxes + BOX_BYTES as u64 * at, &box_raw(&b));
                }
            }
        }
    }
}

/// A box as the kernel writes it.
#[cfg(test)]
fn box_raw(b: &BoxCounts) -> [i64; 4] {
    [b.duration, b.start, b.wy_in, b.w_in]
}

/// The plan of `job`: its series split by work (samples and bins, at every
/// period).
fn plan(exec: &Exec<'_>, job: &BlsJob<'_>) -> Result<Vec<super::GpuPlan>> {
    let (np, bins) = (job.periods.len() as u64, job.grid.max_bins as u64);
    let offsets = job.offsets.windows(2);
    let work: Vec<u64> = offsets
        .map(|w| (w[1] - w[0]) as u64 + bins)
        .map(|n| n * np)
        .collect();
    exec.plan(job, split_by_work(&work, exec.parts()))
}

/// The pipeline's batched search, after validation.
pub(crate) fn bls_batch<T: Float>(
    exec: &Exec<'_>,
    op: BlsSearchBatch<'_, T>,
) -> Result<(Vec<BlsResults<T>>, Vec<GpuProfile>)> {
    let (grid, preps) = op.prepared()?;
    let periods: Vec<f64> = op.periods.iter().map(|p| p.to_f64()).collect();
    let job = BlsJob::of(&op, &preps, &periods, &grid, None);
    let plans = plan(exec, &job)?;
    let np = periods.len();
    let mut outs: Vec<Vec<BlsResults<T>>> = plans
        .iter()
        .map(|p| Vec::with_capacity(p.items.len()))
        .collect();
    let slots: Vec<&mut Vec<BlsResults<T>>> = outs.iter_mut().collect();
    let threads = (crate::cpu::threads() / plans.len().max(1)).max(1);
    let profiles = exec.run(&job, &plans, slots, |out, r, _, lay, host| {
        let raw = get::<i64>(host, lay.out, 4 * r.len() * np);
        let boxes = BoxCounts::from_raw(raw);
        out.extend(results_of_boxes(
            threads,
            &preps[r.clone()],
            &periods,
            &boxes,
            &grid,
            op.opts.objective,
        ));
        Ok(())
    })?;
    Ok((outs.into_iter().flatten().collect(), profiles))
}

/// The pipeline's best periods of each series, after validation.
pub(crate) fn bls_batch_peaks<T: Float>(
    exec: &Exec<'_>,
    op: BlsSearchBatchPeaks<'_, T>,
) -> Result<(Vec<BlsPeaks<T>>, Vec<GpuProfile>)> {
    let search = op.search();
    let (grid, preps) = search.prepared()?;
    let periods: Vec<f64> = op.periods.iter().map(|p| p.to_f64()).collect();
    let job = BlsJob::of(&search, &preps, &periods, &grid, Some(op.peaks));
    let plans = plan(exec, &job)?;
    let k = op.peaks.k;
    // Each GPU writes its own slice of the result, in place.
    let mut found: Vec<BlsPeaks<T>> = vec![BlsPeaks::default(); op.batch.len()];
    let slots = per_gpu(&mut found, &plans, Range::len);
    let profiles = exec.run(&job, &plans, slots, |out, r, local, lay, host| {
        let index = get::<i64>(host, lay.index, r.len() * k);
        let value = get::<f64>(host, lay.value, r.len() * k);
        let boxes = BoxCounts::from_raw(get::<i64>(host, lay.peak_boxes, 4 * r.len() * k));
        let rows = read_peaks(k, index, value);
        for (j, slot) in out[local].iter_mut().enumerate() {
            let s = r.start + j;
            let chosen: Vec<(usize, BoxCounts)> = rows[j]
                .iter()
                .enumerate()
                .map(|(rank, p)| (p.index, boxes[j * k + rank]))
                .collect();
            *slot = peaks_of_boxes(&preps[s], &periods, &chosen, &grid, op.opts.objective);
        }
        Ok(())
    })?;
    Ok((found, profiles))
}
