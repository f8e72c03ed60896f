//! The N-D box (uniform) filter of any element type, with the semantics of
//! `scipy.ndimage.uniform_filter` (see [`crate::params::uniform`]): a size,
//! origin and boundary mode per axis, integers of 8 to 64 bits (exact sums,
//! means truncated as SciPy casts them), f32 and f64; the cost of each pass
//! does not grow with its window. The 2-D float filter of
//! [`Kernpack::uniform_filter`] is the same filter fused into one pass over
//! the image, rounding once.
use std::sync::Arc;

pub use crate::gpu::uniform::UniformNdOnDevice;
pub use crate::params::uniform::{BoxValue, UniformNdOptions, MAX_AXIS_WINDOW};

use super::exec::{CpuRun, Operation};
use super::Kernpack;
use crate::error::Result;
use crate::gpu::uniform::validate;
use crate::gpu::Gpu;

impl Kernpack {
    /// The box filter of `opts` over the row-major array of `shape`, into a
    /// new array.
    pub fn uniform_filter_nd<T: BoxValue>(
        &self,
        input: &[T],
        shape: &[usize],
        opts: &UniformNdOptions,
    ) -> Result<Vec<T>> {
        let mut out = vec![T::default(); input.len()];
        self.uniform_filter_nd_into(input, &mut out, shape, opts)?;
        Ok(out)
    }

    /// The box filter of `opts` from `input` into `output` (each the array's
    /// size; nothing is written on error).
    pub fn uniform_filter_nd_into<T: BoxValue>(
        &self,
        input: &[T],
        output: &mut [T],
        shape: &[usize],
        opts: &UniformNdOptions,
    ) -> Result<()> {
        self.run(UniformFilterNd {
            input,
            output,
            shape,
            opts,
        })
    }
}

/// The operation: an N-D box filter from `input` into `output`
/// ([`Kernpack::uniform_filter_nd_into`]).
#[derive(Debug)]
pub struct UniformFilterNd<'a, T> {
    pub input: &'a [T],
    pub output: &'a mut [T],
    pub shape: &'a [usize],
    pub opts: &'a UniformNdOptions,
}

impl<T: BoxValue> Operation for UniformFilterNd<'_, T> {
    type Output = ();

    fn validate(&self) -> Result<()> {
        validate::<T>(self.shape, self.opts, self.input.len(), self.output.len()).map(|_| ())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<()> {
        let passes = validate::<T>(self.shape, self.opts, self.input.len(), self.output.len())?;
        if !self.input.is_empty() {
            crate::cpu::uniform_nd::uniform_filter_nd(
                self.input,
                self.output,
                self.shape,
                &passes,
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
        // SAFETY: the passes write every value.
        let mut output = unsafe { gpu.uninit::<T>(self.output.len()) }?;
        let call =
            UniformNdOnDevice::buffers(gpu.stream(), &input, &mut output, self.shape, self.opts)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        gpu.download_into(&output, self.output)
    }
}
