//! Batched BLS searches over several GPUs (and large batches on one), in
//! chunks of series. A chunk's arena holds its series prepared in fixed point
//! ([`BlsPrepared`]), the periods and durations, and the best box of each
//! (series, period), which is all that comes back; the host turns the boxes
//! into fields as the one-piece call does, so the results are the same bits.
//! A kernel whose histograms exceed shared memory also takes global scratch
//! of its own (up to 1 GiB, outside the arena).
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{get, put, put_offsets, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::bls::{results_of_boxes, BlsResults, BlsSearchBatch};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::bls::BlsOnDevice;
use crate::gpu::device::DeviceOperation;
use crate::gpu::Gpu;
use crate::params::bls::{BlsGrid, BlsObjective, BlsPrepared, BoxCounts};

/// A validated batch, as the chunks see it. `preps` may be empty when the
/// job only sizes arenas (the one-GPU rule's split).
pub(crate) struct BlsJob<'a> {
    pub offsets: &'a [usize],
    pub preps: &'a [BlsPrepared],
    pub periods: &'a [f64],
    pub grid: &'a BlsGrid,
    pub objective: BlsObjective,
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
}

impl BlsJob<'_> {
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
        let out = a.take::<i64>(4 * nseries * self.periods.len());
        let d2h = a.offset(out)..a.end;
        #[rustfmt::skip]
        let lay = BlsLayout { nseries, samples, dt, wy, w, offsets, totals, units, periods, duration_bins, out };
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
        unsafe { self.on_device(lay).launch(gpu, stream, ()) }
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
            let raw: Vec<i64> = boxes
                .iter()
                .flat_map(|b| [b.duration, b.start, b.wy_in, b.w_in])
                .collect();
            put(arena, lay.out + (s * np * 32) as u64, &raw);
        }
    }
}

/// The pipeline's batched search, after validation.
pub(crate) fn bls_batch<T: Float>(
    exec: &Exec<'_>,
    op: BlsSearchBatch<'_, T>,
) -> Result<(Vec<BlsResults<T>>, Vec<GpuProfile>)> {
    let (grid, preps) = op.prepared()?;
    let periods: Vec<f64> = op.periods.iter().map(|p| p.to_f64()).collect();
    let job = BlsJob {
        offsets: op.batch.offsets,
        preps: &preps,
        periods: &periods,
        grid: &grid,
        objective: op.opts.objective,
    };
    // Work of a series: its samples and bins, at every period.
    let work: Vec<u64> = op
        .batch
        .offsets
        .windows(2)
        .map(|w| (w[1] - w[0] + grid.max_bins as usize) as u64 * periods.len() as u64)
        .collect();
    let plans = exec.plan(&job, split_by_work(&work, exec.parts()))?;
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
