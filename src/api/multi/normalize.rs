//! Batched normalise over several GPUs, in chunks of arrays.
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{
    get, per_gpu, put, put_offsets, ChunkJob, Exec, GpuPlan, GpuProfile, MultiGpu, Regions,
};
use crate::api::check_host_room;
use crate::api::exec::{Operation, NOTHING_TO_LAUNCH};
use crate::api::reduce_batched::{
    check_offsets, BatchNormalized, NormalizeBatched, NormalizeBatchedOnDevice, BATCH_OK,
};
use crate::cpu::{copy_parallel, copy_threads};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::reduce::batched_scratch_len;
use crate::gpu::Gpu;

/// A chunk's batch on the device and its scratch (the plan and the partial
/// sums, [`batched_scratch_len`]).
type NormalizeLayout<T> = (NormalizeBatchedOnDevice<T>, (CUdeviceptr, CUdeviceptr));

/// A validated batch, as the chunks see it: chunks of arrays.
impl<T: Float> ChunkJob for NormalizeBatched<'_, T> {
    type Layout = NormalizeLayout<T>;
    const WHAT: &'static str = "array";

    fn layout(&self, r: Range<usize>, base: CUdeviceptr) -> (NormalizeLayout<T>, Regions) {
        let narrays = r.len();
        let n = self.offsets[r.end] - self.offsets[r.start];
        let mut a = Arena::at(base);
        // Copied in: offsets, x. Copied out: x, sums, status. Scratch last.
        let offsets = a.take::<i64>(narrays + 1);
        let x = a.take::<T>(n);
        let h2d = 0..a.end;
        let sums = a.take::<f64>(narrays);
        let status = a.take::<i32>(narrays);
        let d2h = a.offset(x)..a.end;
        let (plan_len, partials_len) = batched_scratch_len(n, narrays.max(1));
        let scratch = (a.take::<i64>(plan_len), a.take::<f64>(partials_len));
        let dtype = PhantomData;
        #[rustfmt::skip]
        let op = NormalizeBatchedOnDevice { x, n, offsets, narrays, sums, status, dtype };
        let total = a.bytes;
        ((op, scratch), Regions { total, h2d, d2h })
    }

    fn pack(&self, r: &Range<usize>, (op, _): &NormalizeLayout<T>, host: &mut [u8]) {
        let (lo, hi) = (self.offsets[r.start], self.offsets[r.end]);
        put_offsets(host, op.offsets, &self.offsets[r.start..=r.end]);
        put(host, op.x, &self.x[lo..hi]);
    }

    unsafe fn launch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        _: &Range<usize>,
        (op, scratch): &NormalizeLayout<T>,
    ) -> Result<()> {
        // SAFETY: the caller's arena holds this layout (scratch of
        // batched_scratch_len included), inputs copied in; chunks are never empty.
        unsafe { op.launch_with_scratch(gpu, stream, *scratch) }
    }

    #[cfg(test)]
    fn emulate(&self, r: &Range<usize>, (op, _): &NormalizeLayout<T>, arena: &mut [u8]) {
        let na = r.len();
        let offsets: Vec<usize> = get::<i64>(arena, op.offsets, na + 1)
            .iter()
            .map(|&o| o as usize)
            .collect();
        let mut x = get::<T>(arena, op.x, offsets[na]).to_vec();
        let done = crate::reference::reduce::normalize_batched(&mut x, &offsets);
        let status: Vec<i32> = (0..na)
            .map(|a| i32::from(done.failed.contains(&a)))
            .collect();
        put(arena, op.x, &x);
        put(arena, op.sums, &done.sums);
        put(arena, op.status, &status);
    }
}

impl MultiGpu {
    facade! {
        /// Normalises every array `x[offsets[a] .. offsets[a+1]]` in place on
        /// every GPU of this handle, arrays split by their lengths: bitwise what
        /// [`Kernpack::normalize_batched`](crate::Kernpack::normalize_batched)
        /// gives on one GPU of the same model. `x` is written only when every
        /// GPU has succeeded (the results are gathered in a scratch copy of `x`
        /// first). Bad offsets are an error before any GPU work.
        fn normalize_batched / normalize_batched_profiled(x: &mut [T], offsets: &[usize])
            -> BatchNormalized = NormalizeBatched { x, offsets };
    }

    /// The plan [`MultiGpu::normalize_batched`] would follow for arrays of
    /// `T` at `offsets` now.
    pub fn plan_normalize_batched<T: Float>(&self, offsets: &[usize]) -> Result<Vec<GpuPlan>> {
        let n = offsets.last().copied().unwrap_or(0);
        check_offsets(offsets, n)?;
        let job = NormalizeBatched::<T> {
            x: &mut [],
            offsets,
        };
        Exec::Gpus(self).plan(&job, split_by_work(&work(offsets), self.len()))
    }
}

/// The pipeline's batched normalise, after validation.
pub(crate) fn normalize_batched<T: Float>(
    exec: &Exec<'_>,
    job: NormalizeBatched<'_, T>,
) -> Result<(BatchNormalized, Vec<GpuProfile>)> {
    let (len, offsets) = (job.x.len(), job.offsets);
    let narrays = offsets.len() - 1;
    if narrays == 0 || len == 0 {
        // What the one-GPU call does: nothing for the GPU to do.
        return Ok((job.on_cpu(&NOTHING_TO_LAUNCH)?, Vec::new()));
    }
    check_host_room::<T>("the normalised copy", len)?;
    let plans = exec.plan(&job, split_by_work(&work(offsets), exec.parts()))?;

    let mut result = vec![T::default(); len];
    let mut sums = vec![0.0f64; narrays];
    let mut status = vec![0i32; narrays];
    let values = |items: &Range<usize>| offsets[items.end] - offsets[items.start];
    let outs = per_gpu(&mut result, &plans, values)
        .into_iter()
        .zip(per_gpu(&mut sums, &plans, Range::len))
        .zip(per_gpu(&mut status, &plans, Range::len));
    let outs: Vec<_> = outs.map(|((x, sums), status)| (x, sums, status)).collect();
    let profiles = exec.run(&job, &plans, outs, |out, r, local, (op, _), host| {
        // The chunk's values, counted from the GPU's first.
        let (lo, hi) = (offsets[r.start], offsets[r.end]);
        let at = lo - offsets[r.start - local.start];
        let x = &mut out.0[at..at + hi - lo];
        copy_parallel(copy_threads(), x, get::<T>(host, op.x, hi - lo));
        out.1[local.clone()].copy_from_slice(get::<f64>(host, op.sums, r.len()));
        out.2[local].copy_from_slice(get::<i32>(host, op.status, r.len()));
        Ok(())
    })?;
    copy_parallel(copy_threads(), job.x, &result);
    let failed = (0..narrays).filter(|&a| status[a] != BATCH_OK).collect();
    Ok((BatchNormalized { sums, failed }, profiles))
}

/// Work of each array for the split: its values, plus one for the per-array
/// work (so runs of empty arrays spread too).
fn work(offsets: &[usize]) -> Vec<u64> {
    offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as u64 + 1)
        .collect()
}
