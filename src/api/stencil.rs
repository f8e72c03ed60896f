//! 2D box filter (smoothing stencil) with the semantics of
//! `scipy.ndimage.uniform_filter`, plus an interior-only mode.
use std::sync::Arc;

pub use crate::gpu::stencil::BoxFilterOnDevice;
pub use crate::gpu::stencil::{MAX_GPU_WINDOW_COLS, MAX_WINDOW};
pub use crate::params::stencil::{
    BoundaryMode, BoxFilterOptions, ImageLayout, UniformFilterOptions, MAX_BOX_SIZE,
};

use super::exec::{CpuRun, Operation};
use super::Kernpack;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::stencil::validate;
use crate::gpu::Gpu;

impl Kernpack {
    /// Box filter of a row-major `rows x cols` image into a new image.
    pub fn box_filter<T: Float>(
        &self,
        image: &[T],
        rows: usize,
        cols: usize,
        opts: &BoxFilterOptions,
    ) -> Result<Vec<T>> {
        let layout = ImageLayout::contiguous(rows, cols);
        if rows.checked_mul(cols) != Some(image.len()) {
            return Err(Error::invalid(format!(
                "the image holds {} values, not {rows} x {cols}",
                image.len()
            )));
        }
        let mut out = vec![T::default(); image.len()];
        self.box_filter_into(image, &mut out, &layout, opts)?;
        Ok(out)
    }

    /// Box filter of any window (`scipy.ndimage.uniform_filter` with a size
    /// and origin per axis) of a row-major `rows x cols` image into a new image.
    pub fn uniform_filter<T: Float>(
        &self,
        image: &[T],
        rows: usize,
        cols: usize,
        opts: &UniformFilterOptions,
    ) -> Result<Vec<T>> {
        let layout = ImageLayout::contiguous(rows, cols);
        if rows.checked_mul(cols) != Some(image.len()) {
            return Err(Error::invalid(format!(
                "the image holds {} values, not {rows} x {cols}",
                image.len()
            )));
        }
        let mut out = vec![T::default(); image.len()];
        self.uniform_filter_into(image, &mut out, &layout, opts)?;
        Ok(out)
    }

    facade! {
        /// Box filter with explicit pitches; only the `cols` first values of each
        /// output row are written, and nothing on error.
        fn box_filter_into(
            input: &[T],
            output: &mut [T],
            layout: &ImageLayout,
            opts: &BoxFilterOptions,
        ) -> () = BoxFilter { input, output, layout: *layout, opts: opts.into() };
    }

    facade! {
        /// [`Kernpack::uniform_filter`] with explicit pitches; only the `cols`
        /// first values of each output row are written, and nothing on error.
        fn uniform_filter_into(
            input: &[T],
            output: &mut [T],
            layout: &ImageLayout,
            opts: &UniformFilterOptions,
        ) -> () = BoxFilter { input, output, layout: *layout, opts: *opts };
    }
}

/// The operation: a box filter from `input` into `output`
/// ([`Kernpack::box_filter_into`]).
#[derive(Debug)]
pub struct BoxFilter<'a, T> {
    pub input: &'a [T],
    pub output: &'a mut [T],
    pub layout: ImageLayout,
    pub opts: UniformFilterOptions,
}

impl<T: Float> Operation for BoxFilter<'_, T> {
    type Output = ();

    fn validate(&self) -> Result<()> {
        validate(
            &self.layout,
            &self.opts,
            self.input.len(),
            self.output.len(),
        )
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<()> {
        if !self.layout.is_empty() {
            crate::cpu::stencil::uniform_filter(
                self.input,
                self.output,
                &self.layout,
                &self.opts,
                cpu.threads,
                cpu.progress,
            );
        }
        Ok(())
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<()> {
        let layout = &self.layout;
        if layout.is_empty() {
            return Ok(());
        }
        if self.opts.size[1] > MAX_GPU_WINDOW_COLS {
            // Wider than the kernels' shared-memory segment: the CPU
            // backend's running sums (the same result, within its bound).
            let threads = crate::cpu::threads::threads();
            return self.on_cpu(&CpuRun {
                threads,
                progress: None,
            });
        }
        // The output's gaps between rows must survive: start from its contents.
        let out = &mut self.output[..layout.output_len()];
        let (input, mut output) = (
            gpu.upload(&self.input[..layout.input_len()])?,
            gpu.upload(out)?,
        );
        let call =
            BoxFilterOnDevice::buffers(gpu.stream(), &input, &mut output, layout, self.opts)?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        gpu.download_into(&output, out)
    }
}
