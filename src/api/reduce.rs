//! Deterministic sums and normalisation in place, `a <- a / sum(a)`: f64
//! accumulation for every input type, the same bits on every run (no atomics;
//! the split into blocks depends on the length only).
use std::sync::Arc;

use super::exec::{CpuRun, Operation, NOTHING_TO_LAUNCH};
use super::Kernpack;
use crate::cpu;
use crate::error::{readable, Error, Result};
use crate::float::Float;
use crate::gpu::reduce::check_reduce;
pub use crate::gpu::reduce::{NormalizeOnDevice, SumOnDevice};
use crate::gpu::Gpu;

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
        let (x, mut sum) = (gpu.upload(self.x)?, gpu.zeros::<f64>(1)?);
        let call = SumOnDevice::buffers(gpu.stream(), &x, &mut sum)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        Ok(gpu.download(&sum)?[0])
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
        let mut x = gpu.upload(self.x)?;
        let (mut sum, mut status) = (gpu.zeros::<f64>(1)?, gpu.zeros::<i32>(1)?);
        let call = NormalizeOnDevice::buffers(gpu.stream(), &mut x, &mut sum, &mut status)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        let total = gpu.download(&sum)?[0];
        if gpu.download(&status)?[0] != 0 {
            return Err(not_normalizable(total));
        }
        gpu.download_into(&x, self.x)?;
        Ok(total)
    }
}

impl Kernpack {
    facade! {
        /// Sum of `x`, accumulated in f64 (0 for an empty slice).
        fn sum(x: &[T]) -> f64 = Sum { x };

        /// `x <- x / sum(x)`; returns the sum. A sum that is zero, not finite or
        /// too small to invert (below 2^-1024) is an error and leaves `x` unchanged.
        fn normalize(x: &mut [T]) -> f64 = NormalizeInPlace { x };
    }
}
