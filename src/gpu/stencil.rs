//! The box filter's device description (csrc/stencil.cu).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{
    KP_BOX_CONSTANT, KP_BOX_INTERIOR, KP_BOX_MIRROR, KP_BOX_NEAREST, KP_BOX_REFLECT,
    KP_BOX_STRIP_ROWS, KP_BOX_WRAP,
};
use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{BoxParams, Gpu};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::stencil::{BoundaryMode, BoxFilterOptions, ImageLayout, MAX_BOX_SIZE};

/// The one validation of a box filter call: the window, the layout, and the
/// buffers' lengths against it. Any `cval` is accepted: constant mode pads
/// with it, the other modes ignore it. An empty image (no rows or no
/// columns) is valid, and filtering it does nothing.
pub(crate) fn validate(
    layout: &ImageLayout,
    opts: &BoxFilterOptions,
    input_len: usize,
    output_len: usize,
) -> Result<()> {
    if opts.size % 2 == 0 || opts.size > MAX_BOX_SIZE {
        return Err(Error::invalid(format!(
            "box filter size {} is not an odd number from 1 to {MAX_BOX_SIZE}",
            opts.size
        )));
    }
    if layout.in_pitch < layout.cols || layout.out_pitch < layout.cols {
        return Err(Error::invalid(format!(
            "row pitches ({} in, {} out) must be at least the {} columns",
            layout.in_pitch, layout.out_pitch, layout.cols
        )));
    }
    if layout
        .rows
        .checked_mul(layout.in_pitch.max(layout.out_pitch))
        .map_or(true, |n| n > i64::MAX as usize / 8)
    {
        return Err(Error::invalid("the image is too large"));
    }
    for (what, len, needed) in [
        ("input", input_len, layout.input_len()),
        ("output", output_len, layout.output_len()),
    ] {
        if len < needed {
            return Err(Error::invalid(format!(
                "the {what} holds {len} values, the layout needs {needed}"
            )));
        }
    }
    Ok(())
}

/// The kernels' `KP_BOX_*` code of a boundary mode.
fn kernel_mode(mode: BoundaryMode) -> i32 {
    match mode {
        BoundaryMode::Reflect => KP_BOX_REFLECT,
        BoundaryMode::Constant => KP_BOX_CONSTANT,
        BoundaryMode::Nearest => KP_BOX_NEAREST,
        BoundaryMode::Mirror => KP_BOX_MIRROR,
        BoundaryMode::Wrap => KP_BOX_WRAP,
        BoundaryMode::Interior => KP_BOX_INTERIOR,
    }
}

/// The kernel for a window size, as csrc/stencil.cu names them: windows 3 to
/// 9 have unrolled kernels (`box_filter_r{radius}`), the others the run-time
/// radius one.
fn box_kernel<T: Float>(size: usize) -> kernels::BoxFilter<T> {
    match size {
        3..=9 => kernels::box_filter_unrolled::<T>(size / 2),
        _ => kernels::box_filter_large::<T>(),
    }
}

/// The output tile (columns, rows) of one block of that kernel, `block`
/// threads. Windows 3 to 9: a warp owns 32 lanes of 16 bytes of a row, of
/// which the `ceil(radius / lane values)` at each end only load the halo.
fn box_tile<T: Float>(size: usize, block: u32) -> (u64, u64) {
    let lane_values = (16 / std::mem::size_of::<T>()) as u64;
    match size {
        3..=9 => {
            let halo_lanes = ((size / 2) as u64).div_ceil(lane_values);
            // Each warp walks down KP_BOX_STRIP_ROWS output rows; the warps of
            // a block stack their strips.
            let warps = u64::from(block / 32);
            let rows = warps * u64::from(KP_BOX_STRIP_ROWS);
            ((32 - 2 * halo_lanes) * lane_values, rows)
        }
        _ if T::NAME == "f32" => (64, 32),
        _ => (32, 16),
    }
}

/// The box filter on device memory ([`Gpu::enqueue`]): `input` and
/// `output` hold `layout.input_len()` and `layout.output_len()` values of
/// `T`, apart (the kernels read `input` and write `output` through
/// `__restrict__` pointers).
#[derive(Debug, Clone, Copy)]
pub struct BoxFilterOnDevice<T> {
    pub input: CUdeviceptr,
    pub output: CUdeviceptr,
    pub layout: ImageLayout,
    pub opts: BoxFilterOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> BoxFilterOnDevice<T> {
    /// The box filter of cudarc buffers that hold at least the layout's spans.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        input: &'a impl DevicePtr<T>,
        output: &'a mut impl DevicePtrMut<T>,
        layout: &ImageLayout,
        opts: &BoxFilterOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        validate(layout, opts, input.len(), output.len())?;
        let mut g = Guards::new(stream);
        let op = BoxFilterOnDevice {
            input: g.read(input),
            output: g.write(output),
            layout: *layout,
            opts: *opts,
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }
}

impl<T: Float> DeviceOperation for BoxFilterOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let layout = &self.layout;
        validate(layout, &self.opts, layout.input_len(), layout.output_len())
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (n_in, n_out) = (self.layout.input_len(), self.layout.output_len());
        if self.layout.is_empty() {
            return Ok(());
        }
        check_disjoint::<T>(self.input, n_in, self.output, n_out)?;
        gpu.check_device_array::<T>("input", self.input, n_in)?;
        gpu.check_device_array::<T>("output", self.output, n_out)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (input, output, layout, opts) = (self.input, self.output, &self.layout, &self.opts);
        if layout.is_empty() {
            return Ok(());
        }
        let box_filter = box_kernel::<T>(opts.size);
        let kernel = gpu.kernel(&box_filter)?;
        let (tw, th) = box_tile::<T>(opts.size, kernel.block);
        let tiles_x = (layout.cols as u64).div_ceil(tw);
        let blocks = tiles_x * (layout.rows as u64).div_ceil(th);
        if blocks > i32::MAX as u64 {
            return Err(Error::invalid("the image is too large for one launch"));
        }
        let mut params = BoxParams {
            rows: layout.rows as i64,
            cols: layout.cols as i64,
            in_pitch: layout.in_pitch as i64,
            out_pitch: layout.out_pitch as i64,
            tiles_x: tiles_x as i64,
            cval: opts.cval,
            scale: 1.0 / (opts.size * opts.size) as f64,
            radius: (opts.size / 2) as i32,
            mode: kernel_mode(opts.mode),
        };
        // The large windows slide their sums, which must never subtract a
        // non-finite value: they pad with 0, then a second pass adds the
        // non-finite cval to the outputs whose window reaches past the edge.
        let pad_after =
            opts.size > 9 && opts.mode == BoundaryMode::Constant && !opts.cval.is_finite();
        if pad_after {
            params.cval = 0.0;
        }
        let args = (In::new(input), Out::new(output), params);
        unsafe { gpu.launch(&box_filter, LaunchConfig::grid(blocks as u32), stream, args) }?;
        if pad_after {
            let pad = kernels::box_filter_pad::<T>();
            let kernel = gpu.kernel(&pad)?;
            let grid = kernel.grid_for((layout.rows * layout.cols) as u64, kernel.block as u64);
            params.cval = opts.cval;
            let args = (Out::new(output), params);
            unsafe { gpu.launch(&pad, LaunchConfig::grid(grid), stream, args) }?;
        }
        Ok(())
    }
}
