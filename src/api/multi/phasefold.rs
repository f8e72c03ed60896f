//! Batched PDM and conditional entropy over several GPUs (and large batches
//! on one), in chunks of series. A chunk's arena holds its series prepared
//! ([`FoldPrepared`]), the frequencies, CE's `k ln k` table, and the
//! statistic of each (series, frequency); the kernel is the one-piece call's,
//! so the values are the same bits. A kernel whose accumulators exceed
//! shared memory also takes global scratch of its own (up to 1 GiB, outside
//! the arena). With [`PeakOptions`] the chunk's values stay on its GPU and
//! only their best peaks (csrc/peaks.cu) come back.
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{get, per_gpu, put, put_offsets, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::phasefold::{rows, PhaseFoldBatch, PhaseFoldBatchPeaks};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::peaks::PeaksOnDevice;
use crate::gpu::phasefold::FoldOnDevice;
use crate::gpu::Gpu;
use crate::params::peaks::{read_peaks, Peak, PeakOptions};
use crate::params::phasefold::{nlogn_table_for, FoldPrepared, Statistic};

/// A validated batch, as the chunks see it. `preps` may be empty when the
/// job only sizes arenas (the one-GPU rule's split).
pub(crate) struct FoldJob<'a> {
    pub offsets: &'a [usize],
    pub preps: &'a [FoldPrepared],
    pub freqs: &'a [f64],
    pub statistic: Statistic,
    /// CE's table for the whole batch (empty for PDM).
    pub nlogn: &'a [f64],
    /// The values come back as f32, else f64.
    pub out_f32: bool,
    /// Only each series' best peaks come back, not its values.
    pub peaks: Option<PeakOptions>,
}

/// A chunk's buffers in its arena (0: not used by the statistic).
#[derive(Debug, Clone, Copy)]
pub(crate) struct FoldLayout {
    nseries: usize,
    samples: usize,
    dt: CUdeviceptr,
    wy: CUdeviceptr,
    w: CUdeviceptr,
    mag: CUdeviceptr,
    offsets: CUdeviceptr,
    scale: CUdeviceptr,
    freqs: CUdeviceptr,
    nlogn: CUdeviceptr,
    out: CUdeviceptr,
    /// With peaks: `k` i64 indices and `k` f64 values per series.
    index: CUdeviceptr,
    value: CUdeviceptr,
}

impl<'a> FoldJob<'a> {
    /// The job of a validated batch: its series prepared, the frequencies,
    /// CE's table, values of `T`, and with `peaks` only those back.
    fn of<T: Float>(
        op: &PhaseFoldBatch<'a, T>,
        preps: &'a [FoldPrepared],
        freqs: &'a [f64],
        nlogn: &'a [f64],
        peaks: Option<PeakOptions>,
    ) -> Self {
        FoldJob {
            offsets: op.batch.offsets,
            preps,
            freqs,
            statistic: op.statistic,
            nlogn,
            out_f32: T::NAME == "f32",
            peaks,
        }
    }

    fn pdm(&self) -> bool {
        matches!(self.statistic, Statistic::Pdm(_))
    }

    fn on_device(&self, lay: &FoldLayout) -> FoldOnDevice {
        FoldOnDevice {
            statistic: self.statistic,
            nseries: lay.nseries,
            n: lay.samples,
            offsets: lay.offsets,
            dt: lay.dt,
            wy: lay.wy,
            w: lay.w,
            mag: lay.mag,
            scale: lay.scale,
            nf: self.freqs.len(),
            freqs: lay.freqs,
            nlogn: lay.nlogn,
            nlogn_len: self.nlogn.len(),
            out: lay.out,
            out_f32: self.out_f32,
        }
    }
}

impl ChunkJob for FoldJob<'_> {
    type Layout = FoldLayout;
    const WHAT: &'static str = "series";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (FoldLayout, Regions) {
        let nseries = r.len();
        let samples = self.offsets[r.end] - self.offsets[r.start];
        let (pdm, ce) = (self.pdm(), !self.pdm());
        let mut a = Arena::at(base);
        let mut take_if = |yes: bool, f: &mut dyn FnMut(&mut Arena) -> u64| {
            if yes {
                f(&mut a)
            } else {
                0
            }
        };
        let dt = take_if(true, &mut |a| a.take::<f64>(samples));
        let wy = take_if(pdm, &mut |a| a.take::<f64>(samples));
        let w = take_if(pdm, &mut |a| a.take::<f64>(samples));
        let mag = take_if(ce, &mut |a| a.take::<i32>(samples));
        let offsets = take_if(true, &mut |a| a.take::<i64>(nseries + 1));
        let scale = take_if(true, &mut |a| a.take::<f64>(nseries));
        let freqs = take_if(true, &mut |a| a.take::<f64>(self.freqs.len()));
        let nlogn = take_if(ce, &mut |a| a.take::<f64>(self.nlogn.len()));
        let h2d = 0..a.bytes;
        let values = nseries * self.freqs.len();
        let out = if self.out_f32 {
            a.take::<f32>(values)
        } else {
            a.take::<f64>(values)
        };
        let k = self.peaks.map_or(0, |p| p.k);
        let (index, value) = if k > 0 {
            (a.take::<i64>(nseries * k), a.take::<f64>(nseries * k))
        } else {
            (0, 0)
        };
        let d2h = a.offset(if k > 0 { index } else { out })..a.end;
        #[rustfmt::skip]
        let lay = FoldLayout { nseries, samples, dt, wy, w, mag, offsets, scale, freqs, nlogn, out, index, value };
        (
            lay,
            Regions {
                total: a.bytes,
                h2d,
                d2h,
            },
        )
    }

    fn pack(&self, r: &Range<usize>, lay: &FoldLayout, host: &mut [u8]) {
        let first = self.offsets[r.start];
        for s in r.clone() {
            let (p, i) = (&self.preps[s], (self.offsets[s] - first) as u64);
            put(host, lay.dt + 8 * i, &p.dt);
            if self.pdm() {
                put(host, lay.wy + 8 * i, &p.wy);
                put(host, lay.w + 8 * i, &p.w);
            } else {
                put(host, lay.mag + 4 * i, &p.mag);
            }
        }
        put_offsets(host, lay.offsets, &self.offsets[r.start..=r.end]);
        let scale: Vec<f64> = self.preps[r.clone()].iter().map(|p| p.scale).collect();
        put(host, lay.scale, &scale);
        put(host, lay.freqs, self.freqs);
        if !self.pdm() {
            put(host, lay.nlogn, self.nlogn);
        }
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        _: &Range<usize>,
        lay: &FoldLayout,
    ) -> Result<()> {
        // SAFETY: the caller's arena holds this layout, inputs copied in.
        unsafe { self.on_device(lay).launch(gpu, stream, ()) }?;
        let Some(opts) = self.peaks else {
            return Ok(());
        };
        let at = PeaksOnDevice {
            values: lay.out,
            nseries: lay.nseries,
            nf: self.freqs.len(),
            axis: lay.freqs,
            f0: 0,
            df: 0,
            per_series_grid: false,
            index: lay.index,
            value: lay.value,
            payload_bytes: 0,
            payload: 0,
            payload_out: 0,
        };
        let better = self.statistic.better();
        // SAFETY: the values were just written in stream order; the arena
        // holds the frequencies and the peaks' room.
        unsafe {
            if self.out_f32 {
                gpu.launch_best_peaks::<f32>(stream, &at, &opts, better)
            } else {
                gpu.launch_best_peaks::<f64>(stream, &at, &opts, better)
            }
        }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, lay: &FoldLayout, arena: &mut [u8]) {
        let ns = r.len();
        let offsets = get::<i64>(arena, lay.offsets, ns + 1).to_vec();
        let n = offsets[ns] as usize;
        let pdm = self.pdm();
        let read = |at: u64, used: bool| {
            if used {
                get::<f64>(arena, at, n).to_vec()
            } else {
                Vec::new()
            }
        };
        let (dt, wy, w) = (read(lay.dt, true), read(lay.wy, pdm), read(lay.w, pdm));
        let mag = if pdm {
            Vec::new()
        } else {
            get::<i32>(arena, lay.mag, n).to_vec()
        };
        let scale = get::<f64>(arena, lay.scale, ns).to_vec();
        let nf = self.freqs.len();
        let freqs = get::<f64>(arena, lay.freqs, nf).to_vec();
        let preps: Vec<FoldPrepared> = (0..ns)
            .map(|s| {
                let (lo, hi) = (offsets[s] as usize, offsets[s + 1] as usize);
                let part = |v: &Vec<f64>| {
                    if v.is_empty() {
                        Vec::new()
                    } else {
                        v[lo..hi].to_vec()
                    }
                };
                FoldPrepared {
                    dt: dt[lo..hi].to_vec(),
                    wy: part(&wy),
                    w: part(&w),
                    mag: if mag.is_empty() {
                        Vec::new()
                    } else {
                        mag[lo..hi].to_vec()
                    },
                    scale: scale[s],
                }
            })
            .collect();
        let mut values = crate::cpu::phasefold::fold(1, None, &preps, &freqs, &self.statistic);
        if self.out_f32 {
            let narrow: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            put(arena, lay.out, &narrow);
            values = narrow.iter().map(|&v| f64::from(v)).collect();
        } else {
            put(arena, lay.out, &values);
        }
        if let Some(opts) = self.peaks {
            use crate::params::peaks::{select_peaks, write_peaks};
            let better = self.statistic.better();
            let best: Vec<Vec<Peak>> = values
                .chunks(nf)
                .map(|row| select_peaks(row, &freqs, &opts, better))
                .collect();
            let (mut index, mut value) = (vec![0i64; ns * opts.k], vec![0.0; ns * opts.k]);
            write_peaks(&best, opts.k, &mut index, &mut value);
            put(arena, lay.index, &index);
            put(arena, lay.value, &value);
        }
    }
}

/// The pipeline's batched fold, after validation.
pub(crate) fn fold_batch<T: Float>(
    exec: &Exec<'_>,
    op: PhaseFoldBatch<'_, T>,
) -> Result<(Vec<Vec<T>>, Vec<GpuProfile>)> {
    let (freqs, preps) = op.prepared()?;
    let nlogn = nlogn_table_for(&preps, &op.statistic);
    let job = FoldJob::of::<T>(&op, &preps, &freqs, &nlogn, None);
    let nf = freqs.len();
    let plans = plan(exec, &job)?;
    let mut outs: Vec<Vec<Vec<T>>> = plans
        .iter()
        .map(|p| Vec::with_capacity(p.items.len()))
        .collect();
    let slots: Vec<&mut Vec<Vec<T>>> = outs.iter_mut().collect();
    let profiles = exec.run(&job, &plans, slots, |out, r, _, lay, host| {
        out.extend(rows(get::<T>(host, lay.out, r.len() * nf), nf));
        Ok(())
    })?;
    Ok((outs.into_iter().flatten().collect(), profiles))
}

/// The plan of `job`: its series split by work (samples at every frequency).
fn plan(exec: &Exec<'_>, job: &FoldJob<'_>) -> Result<Vec<super::GpuPlan>> {
    let nf = job.freqs.len() as u64;
    let offsets = job.offsets.windows(2);
    let work: Vec<u64> = offsets.map(|w| (w[1] - w[0]) as u64 * nf).collect();
    exec.plan(job, split_by_work(&work, exec.parts()))
}

/// The pipeline's best peaks of each series, after validation.
pub(crate) fn fold_batch_peaks<T: Float>(
    exec: &Exec<'_>,
    op: PhaseFoldBatchPeaks<'_, T>,
) -> Result<(Vec<Vec<Peak>>, Vec<GpuProfile>)> {
    let fold = op.fold();
    let (freqs, preps) = fold.prepared()?;
    let nlogn = nlogn_table_for(&preps, &op.statistic);
    let job = FoldJob::of::<T>(&fold, &preps, &freqs, &nlogn, Some(op.peaks));
    let plans = plan(exec, &job)?;
    // Each GPU writes its own slice of the result, in place.
    let mut peaks: Vec<Vec<Peak>> = vec![Vec::new(); op.batch.len()];
    let slots = per_gpu(&mut peaks, &plans, Range::len);
    let k = op.peaks.k;
    let profiles = exec.run(&job, &plans, slots, |out, r, local, lay, host| {
        let index = get::<i64>(host, lay.index, r.len() * k);
        let value = get::<f64>(host, lay.value, r.len() * k);
        for (slot, best) in out[local].iter_mut().zip(read_peaks(k, index, value)) {
            *slot = best;
        }
        Ok(())
    })?;
    Ok((peaks, profiles))
}
