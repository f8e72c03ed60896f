//! 1-D correlations along any axis of an N-D array and the Gaussian filters
//! made of them, with the semantics of `scipy.ndimage.correlate1d`,
//! `gaussian_filter1d` and `gaussian_filter` (see [`crate::params::correlate`]).
//!
//! One operation, [`Correlate`]: a list of passes over one array, each
//! reading the previous one's output. The GPU runs them on device memory with
//! one upload and one download; the CPU backend in `T`, tap by tap.
use std::sync::Arc;

pub use crate::gpu::correlate::CorrelateOnDevice;
pub use crate::params::correlate::{
    gaussian_kernel, GaussianFilterOptions, GaussianOptions, Lines, Pass, MAX_GAUSSIAN_ORDER,
    MAX_TAPS,
};

use super::exec::{CpuRun, Operation};
use super::Kernpack;
use crate::error::Result;
use crate::float::Float;
use crate::gpu::correlate::validate;
use crate::gpu::Gpu;

impl Kernpack {
    /// `pass` (SciPy's `correlate1d`) over the row-major array of `shape`,
    /// into a new array.
    pub fn correlate1d<T: Float>(
        &self,
        input: &[T],
        shape: &[usize],
        pass: &Pass,
    ) -> Result<Vec<T>> {
        self.correlate_passes(input, shape, std::slice::from_ref(pass))
    }

    /// A Gaussian filter along one axis (SciPy's `gaussian_filter1d`) into a
    /// new array.
    pub fn gaussian_filter1d<T: Float>(
        &self,
        input: &[T],
        shape: &[usize],
        axis: usize,
        opts: &GaussianOptions,
    ) -> Result<Vec<T>> {
        self.correlate_passes(input, shape, &[opts.pass(axis)?])
    }

    /// A Gaussian filter along several axes (SciPy's `gaussian_filter`):
    /// one pass per axis whose sigma is above 1e-15, in order, into a new
    /// array (a copy when no axis is left).
    pub fn gaussian_filter<T: Float>(
        &self,
        input: &[T],
        shape: &[usize],
        opts: &GaussianFilterOptions,
    ) -> Result<Vec<T>> {
        self.correlate_passes(input, shape, &opts.passes()?)
    }

    /// The passes, in order, over the row-major array of `shape` into a new array.
    pub fn correlate_passes<T: Float>(
        &self,
        input: &[T],
        shape: &[usize],
        passes: &[Pass],
    ) -> Result<Vec<T>> {
        let mut out = vec![T::default(); input.len()];
        self.correlate_passes_into(input, &mut out, shape, passes)?;
        Ok(out)
    }

    facade! {
        /// The passes, in order, from `input` into `output` (each the
        /// array's size; nothing is written on error).
        fn correlate_passes_into(
            input: &[T],
            output: &mut [T],
            shape: &[usize],
            passes: &[Pass],
        ) -> () = Correlate { input, output, shape, passes };
    }
}

/// The operation: correlation passes from `input` into `output`
/// ([`Kernpack::correlate_passes_into`]).
#[derive(Debug)]
pub struct Correlate<'a, T> {
    pub input: &'a [T],
    pub output: &'a mut [T],
    pub shape: &'a [usize],
    pub passes: &'a [Pass],
}

impl<T: Float> Operation for Correlate<'_, T> {
    type Output = ();

    fn validate(&self) -> Result<()> {
        validate(self.shape, self.passes, self.input.len(), self.output.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<()> {
        if !self.input.is_empty() {
            crate::cpu::correlate::correlate_passes(
                self.input,
                self.output,
                self.shape,
                self.passes,
                cpu.threads,
                cpu.progress,
            );
        }
        Ok(())
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<()> {
        if self.input.is_empty() {
            return Ok(());
        }
        let input = gpu.upload(self.input)?;
        // SAFETY: the last pass (or the copy) writes every value.
        let mut output = unsafe { gpu.uninit::<T>(self.output.len()) }?;
        let call =
            CorrelateOnDevice::buffers(gpu.stream(), &input, &mut output, self.shape, self.passes)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        gpu.download_into(&output, self.output)
    }
}
