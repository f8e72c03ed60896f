//! Batched PDM and conditional entropy over several GPUs (and large batches
//! on one), in chunks of series. A chunk's arena holds its series prepared
//! ([`FoldPrepared`]), the frequencies, CE's `k ln k` table, and the
//! statistic of each (series, frequency); the kernel is the one-piece call's,
//! so the values are the same bits. A kernel whose accumulators exceed
//! shared memory also takes global scratch of its own (up to 1 GiB, outside
//! the arena).
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{get, put, put_offsets, ChunkJob, Exec, GpuProfile, Regions};
use crate::api::phasefold::{rows, PhaseFoldBatch};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::device::DeviceOperation;
use crate::gpu::phasefold::FoldOnDevice;
use crate::gpu::Gpu;
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
}

impl FoldJob<'_> {
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
        let d2h = a.offset(out)..a.end;
        #[rustfmt::skip]
        let lay = FoldLayout { nseries, samples, dt, wy, w, mag, offsets, scale, freqs, nlogn, out };
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
        unsafe { self.on_device(lay).launch(gpu, stream, ()) }
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
        let values = crate::cpu::phasefold::fold(1, None, &preps, &freqs, &self.statistic);
        if self.out_f32 {
            let values: Vec<f32> = values.iter().map(|&v| v as f32).collect();
            put(arena, lay.out, &values);
        } else {
            put(arena, lay.out, &values);
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
    let job = FoldJob {
        offsets: op.batch.offsets,
        preps: &preps,
        freqs: &freqs,
        statistic: op.statistic,
        nlogn: &nlogn,
        out_f32: T::NAME == "f32",
    };
    // Work of a series: its samples at every frequency.
    let nf = freqs.len();
    let work: Vec<u64> = op
        .batch
        .offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as u64 * nf as u64)
        .collect();
    let plans = exec.plan(&job, split_by_work(&work, exec.parts()))?;
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
