//! The part the periodogram batches' chunk jobs share (the multi-term and
//! multiband ones; the single-term job has its own layout): a chunk's rows
//! of `nf` values per series on uniform grids, laid out after its inputs,
//! and how the pipeline brings back either the rows or only each row's best
//! peaks ([`crate::params::peaks`]), reduced on the chunk's GPU.
use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::plan::{split_by_work, Arena};
use super::{get, per_gpu, ChunkJob, Exec, GpuPlan, GpuProfile};
use crate::error::Result;
use crate::float::Float;
use crate::gpu::peaks::PeaksOnDevice;
use crate::gpu::Gpu;
use crate::params::peaks::{read_peaks, Better, Peak, PeakOptions};

/// A chunk's rows (`T`) and, in peaks mode, `k` peaks per row: i64 indices
/// and f64 values (0 addresses otherwise).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rows {
    pub values: CUdeviceptr,
    pub index: CUdeviceptr,
    pub value: CUdeviceptr,
}

/// Where a chunk's grids are on the device: `f0` and `df` (f64), one per
/// series or one for all.
#[derive(Debug, Clone, Copy)]
pub(crate) struct GridsAt {
    pub f0: CUdeviceptr,
    pub df: CUdeviceptr,
    pub per_series_grid: bool,
}

impl Rows {
    /// The rows of `nseries` series after the inputs `a` holds so far (all
    /// copied in), and the bytes copied back. In peaks mode the peaks come
    /// first and only they are copied back: the rows after them are device
    /// scratch, outside the pinned mirror (which ends with the last byte
    /// copied either way).
    pub fn take<T>(
        a: &mut Arena,
        nseries: usize,
        nf: usize,
        peaks: Option<PeakOptions>,
    ) -> (Rows, Range<usize>) {
        let k = peaks.map_or(0, |p| p.k);
        let index = a.take::<i64>(nseries * k);
        let value = a.take::<f64>(nseries * k);
        let peaks_end = a.end;
        let values = a.take::<T>(nseries * nf);
        let d2h = if k > 0 {
            a.offset(index)..peaks_end
        } else {
            a.offset(values)..a.end
        };
        let (index, value) = if k > 0 { (index, value) } else { (0, 0) };
        (
            Rows {
                values,
                index,
                value,
            },
            d2h,
        )
    }

    /// Enqueues the reduction of the `nseries` rows just computed on
    /// `stream` to their best peaks, in peaks mode.
    ///
    /// # Safety
    /// The rows were laid out by [`Rows::take`] in a live arena of this GPU
    /// holding the grids `at`, and are written in stream order before.
    pub unsafe fn reduce<T: Float>(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        nseries: usize,
        nf: usize,
        at: GridsAt,
        peaks: Option<PeakOptions>,
    ) -> Result<()> {
        let Some(opts) = peaks else {
            return Ok(());
        };
        let call = PeaksOnDevice {
            values: self.values,
            nseries,
            nf,
            axis: 0,
            f0: at.f0,
            df: at.df,
            per_series_grid: at.per_series_grid,
            index: self.index,
            value: self.value,
            payload_bytes: 0,
            payload: 0,
            payload_out: 0,
        };
        // SAFETY: as the caller vouches.
        unsafe { gpu.launch_best_peaks::<T>(stream, &call, &opts, Better::Higher) }
    }

    /// What the kernels leave for `values` (the chunk's rows, computed by
    /// the CPU): the rows and, in peaks mode, their peaks on the grids
    /// `f0`, `df` (one per row, or one for all).
    #[cfg(test)]
    pub fn emulate<T: Float>(
        &self,
        arena: &mut [u8],
        values: &[T],
        nf: usize,
        (f0, df): (&[f64], &[f64]),
        peaks: Option<PeakOptions>,
    ) {
        use crate::params::peaks::{select_peaks, write_peaks};
        super::put(arena, self.values, values);
        let Some(opts) = peaks else {
            return;
        };
        let best: Vec<Vec<Peak>> = values
            .chunks(nf)
            .enumerate()
            .map(|(s, row)| {
                let g = if f0.len() == 1 { 0 } else { s };
                let axis: Vec<f64> = (0..nf).map(|i| f0[g] + i as f64 * df[g]).collect();
                let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
                select_peaks(&row, &axis, &opts, Better::Higher)
            })
            .collect();
        let len = best.len() * opts.k;
        let (mut index, mut value) = (vec![0i64; len], vec![0.0; len]);
        write_peaks(&best, opts.k, &mut index, &mut value);
        super::put(arena, self.index, &index);
        super::put(arena, self.value, &value);
    }
}

/// The plan of a job over the series of CSR `offsets`, each computed at
/// `nf` frequencies: split by work (samples x frequencies), chunked.
pub(crate) fn plan_series<J: ChunkJob>(
    exec: &Exec<'_>,
    job: &J,
    offsets: &[usize],
    nf: usize,
) -> Result<Vec<GpuPlan>> {
    let nf = nf as u64;
    let work: Vec<u64> = offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as u64 * nf)
        .collect();
    exec.plan(job, split_by_work(&work, exec.parts()))
}

/// The rows of `nseries` series (`nf` values each, in input order) that
/// `plans` of `job` compute, read back from `at(layout)`.
pub(crate) fn gather_rows<J: ChunkJob, T: Float>(
    exec: &Exec<'_>,
    job: &J,
    plans: &[GpuPlan],
    (nseries, nf): (usize, usize),
    at: impl Fn(&J::Layout) -> CUdeviceptr + Sync,
) -> Result<(Vec<T>, Vec<GpuProfile>)> {
    // Each GPU writes its own rows of the result, in place.
    let mut values = vec![T::from_f64(0.0); nseries * nf];
    let slots = per_gpu(&mut values, plans, |r| r.len() * nf);
    let profiles = exec.run(job, plans, slots, |out, r, local, lay, host| {
        let rows = &mut out[local.start * nf..local.end * nf];
        crate::cpu::copy_parallel(
            crate::cpu::copy_threads(),
            rows,
            get::<T>(host, at(lay), r.len() * nf),
        );
        Ok(())
    })?;
    Ok((values, profiles))
}

/// The best `k` peaks of each of `nseries` series that `plans` of `job`
/// reduce on the GPUs, read back from `at(layout)` (indices, values).
pub(crate) fn gather_peaks<J: ChunkJob>(
    exec: &Exec<'_>,
    job: &J,
    plans: &[GpuPlan],
    (nseries, k): (usize, usize),
    at: impl Fn(&J::Layout) -> (CUdeviceptr, CUdeviceptr) + Sync,
) -> Result<(Vec<Vec<Peak>>, Vec<GpuProfile>)> {
    // Each GPU writes its own slice of the result, in place.
    let mut peaks: Vec<Vec<Peak>> = vec![Vec::new(); nseries];
    let slots = per_gpu(&mut peaks, plans, Range::len);
    let profiles = exec.run(job, plans, slots, |out, r, local, lay, host| {
        let (index, value) = at(lay);
        let index = get::<i64>(host, index, r.len() * k);
        let value = get::<f64>(host, value, r.len() * k);
        for (slot, found) in out[local].iter_mut().zip(read_peaks(k, index, value)) {
            *slot = found;
        }
        Ok(())
    })?;
    Ok((peaks, profiles))
}
