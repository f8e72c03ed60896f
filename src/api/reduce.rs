//! Deterministic sums and normalisation in place, `a <- a / sum(a)`: f64
//! accumulation for every input type, the same bits on every run (no atomics;
//! the split into blocks depends on the length only).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::exec::{CpuRun, Operation, NOTHING_TO_LAUNCH};
use super::Kernpack;
use crate::cpu;
use crate::error::{readable, Error, Result};
use crate::float::Float;
use crate::gpu::kernels;
use crate::gpu::launch::{In, LaunchConfig, Out};
use crate::gpu::Gpu;

/// Threads per block of the reduction kernels (their launch bounds).
const BLOCK: u64 = 256;
/// Most blocks of the first pass; each sums one contiguous chunk.
pub(super) const MAX_BLOCKS: u64 = 2048;
/// Elements per first-pass block below MAX_BLOCKS blocks.
pub(super) const PER_BLOCK: u64 = BLOCK * 16;

/// Blocks and chunk length for `n` elements: a function of `n` alone, so the
/// summation order (and the result's bits) is the same on every run. The
/// batched kernels (csrc/reduce_batched.cu) split each array the same way.
fn split(n: u64) -> (u64, u64) {
    let blocks = n.div_ceil(PER_BLOCK).clamp(1, MAX_BLOCKS);
    (blocks, n.div_ceil(blocks).max(1))
}

/// The one validation of a sum or normalise call: a count the kernels'
/// 64-bit indexing can hold, and one value each in the sum (and status) buffers.
fn check_reduce(n: usize, sum_len: usize, status_len: Option<usize>) -> Result<()> {
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

fn not_normalizable(sum: f64) -> Error {
    Error::invalid(format!(
        "cannot normalise: the sum is {}, it must be finite, non-zero and at least \
         2^-1024 in size (its reciprocal finite)",
        readable(sum)
    ))
}

/// The operation: the sum of `x` in f64 ([`Kernpack::sum`]).
#[derive(Debug, Clone, Copy)]
pub struct Sum<'a, T> {
    pub x: &'a [T],
}

impl<T: Float> Operation for Sum<'_, T> {
    type Output = f64;

    fn validate(&self) -> Result<()> {
        check_reduce(self.x.len(), 1, None)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<f64> {
        Ok(cpu::reduce::sum(self.x, cpu.threads))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<f64> {
        if self.x.is_empty() {
            return self.on_cpu(&NOTHING_TO_LAUNCH); // 0, with no launch
        }
        let stream = gpu.stream();
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        let dx = stream
            .clone_htod(self.x)
            .map_err(cuda("copying to the GPU"))?;
        let mut sum = stream
            .alloc_zeros::<f64>(1)
            .map_err(cuda("allocating the sum"))?;
        {
            let (x, _x) = dx.device_ptr(stream);
            let (sum, _s) = sum.device_ptr_mut(stream);
            let (n, dtype) = (self.x.len(), PhantomData::<T>);
            // SAFETY: buffers just allocated with the checked lengths.
            unsafe { SumOnDevice { x, n, sum, dtype }.launch(gpu, stream, ()) }?;
        }
        Ok(stream
            .clone_dtoh(&sum)
            .map_err(cuda("copying the sum back"))?[0])
    }
}

/// The operation: `x <- x / sum(x)` in place, returning the sum
/// ([`Kernpack::normalize`]); `x` is written only on success.
#[derive(Debug)]
pub struct NormalizeInPlace<'a, T> {
    pub x: &'a mut [T],
}

impl<T: Float> Operation for NormalizeInPlace<'_, T> {
    type Output = f64;

    fn validate(&self) -> Result<()> {
        check_reduce(self.x.len(), 1, Some(1))
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<f64> {
        cpu::reduce::normalize(self.x, cpu.threads).map_err(not_normalizable)
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<f64> {
        if self.x.is_empty() {
            return self.on_cpu(&NOTHING_TO_LAUNCH); // a zero sum, with no launch
        }
        let x = self.x;
        let stream = gpu.stream();
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        let mut dx = stream.clone_htod(x).map_err(cuda("copying to the GPU"))?;
        let mut sum = stream
            .alloc_zeros::<f64>(1)
            .map_err(cuda("allocating the sum"))?;
        let mut status = stream
            .alloc_zeros::<i32>(1)
            .map_err(cuda("allocating the status"))?;
        {
            let (x_ptr, _x) = dx.device_ptr_mut(stream);
            let (sum, _s) = sum.device_ptr_mut(stream);
            let (status, _t) = status.device_ptr_mut(stream);
            let (n, dtype) = (x.len(), PhantomData::<T>);
            #[rustfmt::skip]
            let op = NormalizeOnDevice { x: x_ptr, n, sum, status, dtype };
            // SAFETY: buffers just allocated with the checked lengths.
            unsafe { op.launch(gpu, stream, ()) }?;
        }
        let total = stream
            .clone_dtoh(&sum)
            .map_err(cuda("copying the sum back"))?[0];
        if stream
            .clone_dtoh(&status)
            .map_err(cuda("copying the status back"))?[0]
            != 0
        {
            return Err(not_normalizable(total));
        }
        stream
            .memcpy_dtoh(&dx, x)
            .map_err(cuda("copying the result back"))?;
        Ok(total)
    }
}

impl Kernpack {
    /// Sum of `x`, accumulated in f64 (0 for an empty slice).
    pub fn sum<T: Float>(&self, x: &[T]) -> Result<f64> {
        self.run(Sum { x })
    }

    /// `x <- x / sum(x)`; returns the sum. A sum that is zero, not finite or
    /// too small to invert (below 2^-1024) is an error and leaves `x` unchanged.
    pub fn normalize<T: Float>(&self, x: &mut [T]) -> Result<f64> {
        self.run(NormalizeInPlace { x })
    }
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
        let mut partials = stream
            .alloc::<f64>(blocks as usize)
            .map_err(|e| Error::cuda("allocating scratch", e))?;
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
            let mut partials = unsafe { stream.alloc::<f64>(kernel.full_grid as usize) }
                .map_err(|e| Error::cuda("allocating scratch", e))?;
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
