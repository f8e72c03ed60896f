//! The reductions' device descriptions: the sum, normalisation in place,
//! and the batched normalise (csrc/reduce.cu, csrc/reduce_batched.cu).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{scratch, Gpu};
use crate::error::{Error, Result};
use crate::float::Float;

/// Threads per block of the reduction kernels (their launch bounds).
const BLOCK: u64 = 256;
/// Most blocks of the first pass; each sums one contiguous chunk.
pub(crate) const MAX_BLOCKS: u64 = 2048;
/// Elements per first-pass block below MAX_BLOCKS blocks.
pub(crate) const PER_BLOCK: u64 = BLOCK * 16;

/// Blocks and chunk length for `n` elements: a function of `n` alone, so the
/// summation order (and the result's bits) is the same on every run. The
/// batched kernels (csrc/reduce_batched.cu) split each array the same way.
fn split(n: u64) -> (u64, u64) {
    let blocks = n.div_ceil(PER_BLOCK).clamp(1, MAX_BLOCKS);
    (blocks, n.div_ceil(blocks).max(1))
}

/// The one validation of a sum or normalise call: a count the kernels'
/// 64-bit indexing can hold, and one value each in the sum (and status) buffers.
pub(crate) fn check_reduce(n: usize, sum_len: usize, status_len: Option<usize>) -> Result<()> {
    if n > i64::MAX as usize / 2 {
        return Err(Error::invalid(format!("{n} values are too many")));
    }
    if sum_len == 0 || status_len == Some(0) {
        return Err(Error::invalid(
            "the sum (and status) buffers need one value each",
        ));
    }
    Ok(())
}

/// The sum on device memory: `sum[0] = sum(x)` in f64, `x` holding `n`
/// values of `T` ([`Gpu::enqueue`]).
#[derive(Debug, Clone, Copy)]
pub struct SumOnDevice<T> {
    pub x: CUdeviceptr,
    pub n: usize,
    pub sum: CUdeviceptr,
    pub dtype: PhantomData<T>,
}

impl<T: Float> SumOnDevice<T> {
    /// The sum of a cudarc buffer into `sum` (at least one value).
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        x: &'a impl DevicePtr<T>,
        sum: &'a mut impl DevicePtrMut<f64>,
    ) -> Result<OnBuffers<'a, Self>> {
        check_reduce(x.len(), sum.len(), None)?;
        let mut g = Guards::new(stream);
        let (x, n, sum) = (g.read(x), x.len(), g.write(sum));
        let dtype = PhantomData;
        Ok(g.with(SumOnDevice { x, n, sum, dtype }))
    }
}

impl<T: Float> DeviceOperation for SumOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_reduce(self.n, 1, None)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        gpu.check_device_array::<T>("x", self.x, self.n)?;
        gpu.check_device_array::<f64>("sum", self.sum, 1)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (x, n, sum) = (self.x, self.n, self.sum);
        let (blocks, chunk) = split(n as u64);
        let mut partials = unsafe { scratch::<f64>(stream, blocks as usize) }?;
        let (partials_ptr, _p) = partials.device_ptr_mut(stream);
        let partial = kernels::reduce_partial::<T>();
        let args = (In::new(x), n as i64, chunk as i64, Out::new(partials_ptr));
        unsafe { gpu.launch(&partial, LaunchConfig::grid(blocks as u32), stream, args) }?;
        let last = kernels::reduce_final();
        let args = (In::new(partials_ptr), blocks as i64, Out::new(sum));
        unsafe { gpu.launch(&last, LaunchConfig::grid(1), stream, args) }
    }
}

/// Normalisation in place on device memory ([`Gpu::enqueue`]):
/// `x <- x / sum(x)` for the `n` values of `T` at `x`, `sum[0]` = the sum,
/// `status[0]` = 0, or 1 with `x` untouched when the sum is zero, not
/// finite or too small to invert: read `status` before trusting `x`.
#[derive(Debug, Clone, Copy)]
pub struct NormalizeOnDevice<T> {
    pub x: CUdeviceptr,
    pub n: usize,
    pub sum: CUdeviceptr,
    pub status: CUdeviceptr,
    pub dtype: PhantomData<T>,
}

impl<T: Float> NormalizeOnDevice<T> {
    /// The normalisation of a cudarc buffer; `sum` and `status` hold at
    /// least one value each.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        x: &'a mut impl DevicePtrMut<T>,
        sum: &'a mut impl DevicePtrMut<f64>,
        status: &'a mut impl DevicePtrMut<i32>,
    ) -> Result<OnBuffers<'a, Self>> {
        check_reduce(x.len(), sum.len(), Some(status.len()))?;
        let n = x.len();
        let mut g = Guards::new(stream);
        let (x, sum, status) = (g.write(x), g.write(sum), g.write(status));
        let dtype = PhantomData;
        Ok(g.with(NormalizeOnDevice {
            x,
            n,
            sum,
            status,
            dtype,
        }))
    }
}

impl<T: Float> DeviceOperation for NormalizeOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_reduce(self.n, 1, Some(1))
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        gpu.check_device_array::<T>("x", self.x, self.n)?;
        gpu.check_device_array::<f64>("sum", self.sum, 1)?;
        gpu.check_device_array::<i32>("status", self.status, 1)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (x_ptr, n, sum_ptr, status_ptr) = (self.x, self.n, self.sum, self.status);
        let (x, n_arg, status) = (Out::new(x_ptr), n as i64, Out::new(status_ptr));
        // Arrays that fit in L2: one cooperative launch
        // whose second pass reads from L2 (normalize_fused in csrc/reduce.cu).
        // Larger ones: two reduction passes and a wide scaling pass, which
        // stream from DRAM at the copy rate.
        if gpu.cooperative_launch() && n * std::mem::size_of::<T>() <= gpu.l2_bytes() {
            let fused = kernels::normalize_fused::<T>();
            let kernel = gpu.kernel(&fused)?;
            // Uninitialised: every block writes its partial before the grid
            // sync that precedes any read (a memset would cost a launch).
            // SAFETY: f64 has no invalid bit patterns and is written before it is read.
            let mut partials = unsafe { scratch::<f64>(stream, kernel.full_grid as usize) }?;
            let (partials_ptr, _p) = partials.device_ptr_mut(stream);
            let args = (x, n_arg, Out::new(partials_ptr), Out::new(sum_ptr), status);
            let config = LaunchConfig::cooperative(kernel.full_grid);
            // SAFETY: all pointers come from live buffers of the checked lengths.
            return unsafe { gpu.launch(&fused, config, stream, args) };
        }
        // SAFETY: all pointers come from live buffers of the checked lengths.
        unsafe {
            let sum = SumOnDevice::<T> {
                x: x_ptr,
                n,
                sum: sum_ptr,
                dtype: PhantomData,
            };
            sum.launch(gpu, stream, ())?;
            let normalize = kernels::normalize::<T>();
            let args = (x, n_arg, In::new(sum_ptr), status);
            // One 16-byte vector per thread and pass (the kernel grid-strides).
            let vectors = (n.max(1) as u64).div_ceil((16 / std::mem::size_of::<T>()) as u64);
            let grid = gpu.kernel(&normalize)?.grid_for(vectors, BLOCK);
            gpu.launch(&normalize, LaunchConfig::grid(grid), stream, args)
        }
    }
}

/// The one validation of a batched normalise's counts: what the kernels'
/// 64-bit indexing holds, and sums and statuses for every array.
pub(crate) fn check_batched_call(
    n: usize,
    narrays: usize,
    sums_len: usize,
    status_len: usize,
) -> Result<()> {
    let limit = i64::MAX as usize / 4;
    if n > limit || narrays > limit / MAX_BLOCKS as usize {
        return Err(Error::invalid(format!(
            "{narrays} arrays of {n} values in all are too many"
        )));
    }
    if sums_len < narrays || status_len < narrays {
        return Err(Error::invalid(format!(
            "{narrays} arrays need {narrays} sums and statuses; the buffers hold {sums_len} and {status_len}"
        )));
    }
    Ok(())
}

/// Scratch of a batch of `narrays` (> 0) arrays of `n` values in all: the
/// plan's `i64` values and the partial sums' `f64` values.
pub(crate) fn batched_scratch_len(n: usize, narrays: usize) -> (usize, usize) {
    // Pieces per array: at most ceil(len / PER_BLOCK), and 1 for an empty
    // one, so n / PER_BLOCK + narrays bounds them all.
    let capacity = (n as u64).div_ceil(PER_BLOCK) + narrays as u64;
    (
        narrays + 2,
        capacity.min(narrays as u64 * MAX_BLOCKS) as usize,
    )
}

/// The batch on device memory ([`Gpu::enqueue`]): `x` holds `n` values of
/// `T`, `offsets` narrays + 1 `i64` (from 0 to at most `n`, non-decreasing),
/// `sums` and `status` narrays f64 and i32. `status[a]` is [`BATCH_OK`](crate::params::reduce::BATCH_OK),
/// [`BATCH_BAD_SUM`](crate::params::reduce::BATCH_BAD_SUM) (array a untouched) or [`BATCH_BAD_OFFSETS`](crate::params::reduce::BATCH_BAD_OFFSETS) (offsets
/// that do not fit `x`: nothing touched, sums NaN). The offsets live on the
/// device, so they are checked there, never followed.
#[derive(Debug, Clone, Copy)]
pub struct NormalizeBatchedOnDevice<T> {
    pub x: CUdeviceptr,
    pub n: usize,
    pub offsets: CUdeviceptr,
    pub narrays: usize,
    pub sums: CUdeviceptr,
    pub status: CUdeviceptr,
    pub dtype: PhantomData<T>,
}

impl<T: Float> NormalizeBatchedOnDevice<T> {
    /// The batch on cudarc buffers: `offsets` holds narrays + 1 entries,
    /// `sums` and `status` at least narrays.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        x: &'a mut impl DevicePtrMut<T>,
        offsets: &'a impl DevicePtr<i64>,
        sums: &'a mut impl DevicePtrMut<f64>,
        status: &'a mut impl DevicePtrMut<i32>,
    ) -> Result<OnBuffers<'a, Self>> {
        let Some(narrays) = offsets.len().checked_sub(1) else {
            return Err(Error::invalid("offsets needs narrays + 1 entries"));
        };
        check_batched_call(x.len(), narrays, sums.len(), status.len())?;
        let n = x.len();
        let mut g = Guards::new(stream);
        let op = NormalizeBatchedOnDevice {
            x: g.write(x),
            n,
            offsets: g.read(offsets),
            narrays,
            sums: g.write(sums),
            status: g.write(status),
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }
}

impl<T: Float> DeviceOperation for NormalizeBatchedOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_batched_call(self.n, self.narrays, self.narrays, self.narrays)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let narrays = self.narrays;
        gpu.check_device_array::<T>("x", self.x, self.n)?;
        gpu.check_device_array::<i64>("offsets", self.offsets, narrays + 1)?;
        gpu.check_device_array::<f64>("sums", self.sums, narrays)?;
        gpu.check_device_array::<i32>("status", self.status, narrays)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (n, narrays) = (self.n, self.narrays);
        if narrays == 0 {
            return Ok(());
        }
        let (plan_len, capacity) = batched_scratch_len(n, narrays);
        let mut plan = unsafe { scratch::<i64>(stream, plan_len) }?;
        let mut partials = unsafe { scratch::<f64>(stream, capacity) }?;
        let (plan_ptr, _p) = plan.device_ptr_mut(stream);
        let (partials_ptr, _q) = partials.device_ptr_mut(stream);
        unsafe { self.launch_with_scratch(gpu, stream, (plan_ptr, partials_ptr)) }
    }
}

impl<T: Float> NormalizeBatchedOnDevice<T> {
    /// The four launches with the caller's scratch: `scratch.0` holds the
    /// plan's and `scratch.1` the partials' [`batched_scratch_len`] values
    /// (the multi-GPU pipeline carves them out of its own arena).
    ///
    /// # Safety
    /// As [`DeviceOperation::launch`], `narrays > 0`, and the scratch as
    /// above on `gpu`.
    pub(crate) unsafe fn launch_with_scratch(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        (plan_ptr, partials_ptr): (CUdeviceptr, CUdeviceptr),
    ) -> Result<()> {
        let (x, n, offsets, narrays) = (self.x, self.n, self.offsets, self.narrays);
        let (sums, status) = (self.sums, self.status);
        let capacity = batched_scratch_len(n, narrays).1 as u64;
        let (n, narrays_arg) = (n as i64, narrays as i64);
        let (per_block, max_blocks) = (PER_BLOCK as i64, MAX_BLOCKS as i64);
        let offsets = In::new(offsets);

        let plan_kernel = kernels::reduce_batched_plan();
        let args = (
            offsets,
            narrays_arg,
            n,
            per_block,
            max_blocks,
            Out::new(plan_ptr),
        );
        unsafe { gpu.launch(&plan_kernel, LaunchConfig::grid(1), stream, args) }?;

        let partial = kernels::reduce_batched_partial::<T>();
        let piece_grid = gpu.kernel(&partial)?.grid_for(capacity, 1);
        let args = (
            In::new(x),
            offsets,
            narrays_arg,
            per_block,
            max_blocks,
            In::new(plan_ptr),
            Out::new(partials_ptr),
        );
        unsafe { gpu.launch(&partial, LaunchConfig::grid(piece_grid), stream, args) }?;

        let last = kernels::reduce_batched_final();
        let grid = gpu.kernel(&last)?.grid_for(narrays as u64, 1);
        let args = (
            In::new(plan_ptr),
            narrays_arg,
            In::new(partials_ptr),
            Out::new(sums),
            Out::new(status),
        );
        unsafe { gpu.launch(&last, LaunchConfig::grid(grid), stream, args) }?;

        let scale = kernels::normalize_batched::<T>();
        let args = (
            Out::new(x),
            offsets,
            narrays_arg,
            per_block,
            max_blocks,
            In::new(plan_ptr),
            In::new(sums),
            In::new(status),
        );
        unsafe { gpu.launch(&scale, LaunchConfig::grid(piece_grid), stream, args) }
    }
}
