//! The box filter's device description (csrc/stencil.cu).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{
    KP_BOX_BAND_COLS, KP_BOX_BAND_ROWS, KP_BOX_BAND_THREADS, KP_BOX_CONSTANT, KP_BOX_INTERIOR,
    KP_BOX_MIRROR, KP_BOX_NEAREST, KP_BOX_REFLECT, KP_BOX_RUN_K_NARROW, KP_BOX_RUN_K_WIDE,
    KP_BOX_RUN_WARPS, KP_BOX_STRIP_ROWS, KP_BOX_WRAP,
};
use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{BoxParams, BoxRunParams, Gpu};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::stencil::{BoundaryMode, ImageLayout, UniformFilterOptions};

/// Largest window size along an axis (a bound that keeps every index
/// arithmetic far from overflow; windows that large are all boundary).
pub const MAX_WINDOW: usize = i32::MAX as usize;

/// Widest window along the columns the GPU filters: a warp of the
/// running-sum kernel holds a segment of 32 KP_BOX_RUN_K_WIDE columns, its
/// outputs (at least 32) plus `size - 1` halo columns (wider windows run on
/// the CPU backend in host calls, and are an error on device memory).
pub const MAX_GPU_WINDOW_COLS: usize = (32 * KP_BOX_RUN_K_WIDE - 31) as usize;

/// Fewest output columns per warp of the narrow running-sum kernel: wider
/// windows take the wide one.
const RUN_MIN_NARROW_WIDTH: usize = 128;

/// Columns of the band kernel's band (`box_filter_band`): its outputs plus
/// the `size_x - 1` halo.
const BAND_COLUMNS: usize = (KP_BOX_BAND_COLS * KP_BOX_BAND_THREADS) as usize;

/// Fewest output columns per band: wider windows take the warp-per-segment
/// kernel (a band of 256 columns would be mostly halo).
const BAND_MIN_WIDTH: usize = 64;

/// Warps per streaming multiprocessor the running-sum kernel's chunks aim
/// at (each keeps a row of loads in flight; fewer when the chunks must be
/// long to amortise their seeds).
const RUN_WARPS_PER_SM: u64 = 16;

/// The one validation of a box filter call: the window, the layout, and the
/// buffers' lengths against it. Any `cval` is accepted: constant mode pads
/// with it, the other modes ignore it. An empty image (no rows or no
/// columns) is valid, and filtering it does nothing.
pub(crate) fn validate(
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
    input_len: usize,
    output_len: usize,
) -> Result<()> {
    for (axis, name) in [(0, "rows"), (1, "columns")] {
        let (size, origin) = (opts.size[axis], opts.origin[axis]);
        if !(1..=MAX_WINDOW).contains(&size) {
            return Err(Error::invalid(format!(
                "box filter size {size} along the {name} is not from 1 to {MAX_WINDOW}"
            )));
        }
        if !opts.origin_valid(axis) {
            let n = size as i64;
            return Err(Error::invalid(format!(
                "box filter origin {origin} along the {name} is outside {} ..= {} for size {size}",
                -(n / 2),
                (n - 1) / 2
            )));
        }
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

/// The kernels' `KP_BOX_*` code of a boundary mode (the box filter's and
/// the correlation's, which refuses interior before any launch).
pub(super) fn kernel_mode(mode: BoundaryMode) -> i32 {
    match mode {
        BoundaryMode::Reflect => KP_BOX_REFLECT,
        BoundaryMode::Constant => KP_BOX_CONSTANT,
        BoundaryMode::Nearest => KP_BOX_NEAREST,
        BoundaryMode::Mirror => KP_BOX_MIRROR,
        BoundaryMode::Wrap => KP_BOX_WRAP,
        BoundaryMode::Interior => KP_BOX_INTERIOR,
    }
}

/// The windows of the unrolled small-window kernels (`box_filter_r{radius}`,
/// measured at 96% of a copy for 3 x 3 on an H200): square, odd, centred,
/// 3 to 9 in f32 and 3 to 5 in f64 (the band kernel is faster for f64 7 x 7
/// and 9 x 9: 88% and 81-84% of a copy against 74% for 9 x 9 unrolled,
/// PERF.md). Every other window takes a running-sum kernel.
fn unrolled_window<T: Float>(opts: &UniformFilterOptions) -> Option<usize> {
    let [sy, sx] = opts.size;
    let largest = if std::mem::size_of::<T>() == 8 { 5 } else { 9 };
    (sy == sx && matches!(sy, 3 | 5 | 7 | 9) && sy <= largest && opts.origin == [0, 0])
        .then_some(sy)
}

/// The output tile (columns, rows) of one block of the unrolled kernels,
/// `block` threads: a warp owns 32 lanes of 16 bytes of a row, of which the
/// `ceil(radius / lane values)` at each end only load the halo.
fn box_tile<T: Float>(size: usize, block: u32) -> (u64, u64) {
    let lane_values = (16 / std::mem::size_of::<T>()) as u64;
    let halo_lanes = ((size / 2) as u64).div_ceil(lane_values);
    // Each warp walks down KP_BOX_STRIP_ROWS output rows; the warps of
    // a block stack their strips.
    let warps = u64::from(block / 32);
    let rows = warps * u64::from(KP_BOX_STRIP_ROWS);
    ((32 - 2 * halo_lanes) * lane_values, rows)
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
    pub opts: UniformFilterOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> BoxFilterOnDevice<T> {
    /// The box filter of cudarc buffers that hold at least the layout's spans.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        input: &'a impl DevicePtr<T>,
        output: &'a mut impl DevicePtrMut<T>,
        layout: &ImageLayout,
        opts: impl Into<UniformFilterOptions>,
    ) -> Result<OnBuffers<'a, Self>> {
        let opts = opts.into();
        validate(layout, &opts, input.len(), output.len())?;
        let mut g = Guards::new(stream);
        let op = BoxFilterOnDevice {
            input: g.read(input),
            output: g.write(output),
            layout: *layout,
            opts,
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }
}

impl<T: Float> DeviceOperation for BoxFilterOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let layout = &self.layout;
        validate(layout, &self.opts, layout.input_len(), layout.output_len())?;
        // The running-sum kernel maps columns in 32 bits.
        if layout.cols > i32::MAX as usize && unrolled_window::<T>(&self.opts).is_none() {
            return Err(Error::invalid(format!(
                "an image of {} columns is wider than the {} the GPU filters with this window",
                layout.cols,
                i32::MAX
            )));
        }
        if self.opts.size[1] > MAX_GPU_WINDOW_COLS {
            return Err(Error::invalid(format!(
                "box filter size {} along the columns is wider than the {MAX_GPU_WINDOW_COLS} \
                 the GPU filters (the host call runs it on the CPU backend)",
                self.opts.size[1]
            )));
        }
        Ok(())
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
        let Some(size) = unrolled_window::<T>(opts) else {
            return unsafe { launch_running::<T>(gpu, stream, input, output, layout, opts) };
        };
        let box_filter = kernels::box_filter_unrolled::<T>(size / 2);
        let kernel = gpu.kernel(&box_filter)?;
        let (tw, th) = box_tile::<T>(size, kernel.block);
        let tiles_x = (layout.cols as u64).div_ceil(tw);
        let blocks = tiles_x * (layout.rows as u64).div_ceil(th);
        if blocks > i32::MAX as u64 {
            return Err(Error::invalid("the image is too large for one launch"));
        }
        let params = BoxParams {
            rows: layout.rows as i64,
            cols: layout.cols as i64,
            in_pitch: layout.in_pitch as i64,
            out_pitch: layout.out_pitch as i64,
            tiles_x: tiles_x as i64,
            cval: opts.cval,
            scale: opts.scale(),
            radius: (size / 2) as i32,
            mode: kernel_mode(opts.mode),
        };
        let args = (In::new(input), Out::new(output), params);
        unsafe { gpu.launch(&box_filter, LaunchConfig::grid(blocks as u32), stream, args) }
    }
}

/// The running-sum kernels (any window up to [`MAX_GPU_WINDOW_COLS`] columns
/// wide, checked before). The band kernel where its ring of `size_y` rows
/// fits in a block's shared memory and the window leaves a band at least
/// [`BAND_MIN_WIDTH`] outputs (2.0-3.5x faster, PERF.md); otherwise one warp
/// per segment of 32 K columns (its `32 K - size_x + 1` outputs and the
/// halo) and chunk of rows, which re-reads the leaving rows from L2.
///
/// A chunk starts with a direct sum over the window of its first row, which
/// reads `min(size_y, 4 rows)` rows ([`line_sum`](crate::params::stencil::line_sum)'s
/// bound); chunks are at least 4 times that long (the seeds cost at most a
/// quarter of the image's reads), and otherwise as short as gives
/// [`RUN_WARPS_PER_SM`] warps per multiprocessor.
///
/// # Safety
/// As [`DeviceOperation::launch`]: the buffers hold the layout's spans.
unsafe fn launch_running<T: Float>(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    input: CUdeviceptr,
    output: CUdeviceptr,
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
) -> Result<()> {
    if let Some(shared) = band_shared_bytes::<T>(opts) {
        let band = kernels::box_filter_band::<T>();
        let kernel = gpu.kernel(&band)?;
        if shared <= kernel.max_dynamic_shared {
            let resident =
                u64::from(kernel.resident_blocks(shared)?) * u64::from(gpu.sm_count().max(1));
            let params = band_params(layout, opts, resident);
            let blocks =
                params.tiles_x as u64 * (layout.rows as u64).div_ceil(params.chunk_rows as u64);
            if blocks > i32::MAX as u64 {
                return Err(Error::invalid("the image is too large for one launch"));
            }
            let config = LaunchConfig::grid(blocks as u32).shared(shared);
            let args = (In::new(input), Out::new(output), params);
            return unsafe { gpu.launch(&band, config, stream, args) };
        }
    }
    let narrow = 32 * KP_BOX_RUN_K_NARROW as usize;
    let wide = opts.size[1] + RUN_MIN_NARROW_WIDTH > narrow + 1;
    let segment = 32
        * if wide {
            KP_BOX_RUN_K_WIDE
        } else {
            KP_BOX_RUN_K_NARROW
        } as u64;
    let box_filter = kernels::box_filter_running::<T>(wide);
    let width = segment + 1 - opts.size[1] as u64;
    let rows = layout.rows as u64;
    let tiles_x = (layout.cols as u64).div_ceil(width);
    let seed_rows = (opts.size[0] as u64).min(4 * rows);
    let for_warps = (rows * tiles_x).div_ceil(RUN_WARPS_PER_SM * u64::from(gpu.sm_count().max(1)));
    let chunk_rows = for_warps.max(4 * seed_rows).max(32).min(rows);
    let warps = tiles_x * rows.div_ceil(chunk_rows);
    let blocks = warps.div_ceil(u64::from(KP_BOX_RUN_WARPS));
    if blocks > i32::MAX as u64 {
        return Err(Error::invalid("the image is too large for one launch"));
    }
    let params = run_params(layout, opts, tiles_x, chunk_rows);
    let args = (In::new(input), Out::new(output), params);
    unsafe { gpu.launch(&box_filter, LaunchConfig::grid(blocks as u32), stream, args) }
}

/// The band kernel's shared memory for this window (`Band<T, C, R>::bytes`
/// in csrc/stencil.cu: R rows of padded double sums, then a ring of `size_y`
/// rows of T), or None when the window is too wide for a band (fewer than
/// [`BAND_MIN_WIDTH`] outputs) or the ring too large to count in 32 bits.
fn band_shared_bytes<T: Float>(opts: &UniformFilterOptions) -> Option<u32> {
    if opts.size[1] + BAND_MIN_WIDTH > BAND_COLUMNS + 1 {
        return None;
    }
    let stride = BAND_COLUMNS + BAND_COLUMNS / 16 + 1;
    let sums = std::mem::size_of::<f64>() * KP_BOX_BAND_ROWS as usize * stride;
    let ring = opts.size[0].checked_mul(BAND_COLUMNS * std::mem::size_of::<T>())?;
    u32::try_from(sums.checked_add(ring)?).ok()
}

/// The band kernel's parameters: bands across the image, and chunks of rows
/// as long as fill `resident` blocks in one wave (each walks its chunk; one
/// wave measured best on an H200, PERF.md), at least 4 windows long (each
/// chunk first reads `size_y - 1` rows to seed its sums).
fn band_params(layout: &ImageLayout, opts: &UniformFilterOptions, resident: u64) -> BoxRunParams {
    let width = (BAND_COLUMNS + 1 - opts.size[1]) as u64;
    let rows = layout.rows as u64;
    let tiles_x = (layout.cols as u64).div_ceil(width);
    let chunks = (resident / tiles_x).clamp(1, rows.max(1));
    let chunk_rows = rows
        .div_ceil(chunks)
        .max(4 * opts.size[0] as u64)
        .min(rows)
        .max(1);
    run_params(layout, opts, tiles_x, chunk_rows)
}

/// The running-sum kernels' parameters (both take `kp_box_run_params`).
fn run_params(
    layout: &ImageLayout,
    opts: &UniformFilterOptions,
    tiles_x: u64,
    chunk_rows: u64,
) -> BoxRunParams {
    // A non-finite cval would spoil the running sums (inf - inf): they pad
    // with 0, and the kernel adds cval to the outputs whose window reaches
    // past the edge.
    let pad_outside = opts.mode == BoundaryMode::Constant && !opts.cval.is_finite();
    BoxRunParams {
        rows: layout.rows as i64,
        cols: layout.cols as i64,
        in_pitch: layout.in_pitch as i64,
        out_pitch: layout.out_pitch as i64,
        tiles_x: tiles_x as i64,
        chunk_rows: chunk_rows as i64,
        size_y: opts.size[0] as i64,
        size_x: opts.size[1] as i64,
        before_y: opts.before(0),
        before_x: opts.before(1),
        cval: if pad_outside { 0.0 } else { opts.cval },
        pad_cval: opts.cval,
        scale: opts.scale(),
        mode: kernel_mode(opts.mode),
        pad_outside: i32::from(pad_outside),
    }
}
