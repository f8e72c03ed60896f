//! C ABI of the 2D box filter: host pointers (any context; the CPU backend
//! runs the reference) and device pointers enqueued on a stream (GPU contexts).
use super::{
    boundary, check_apart, check_host_pointer, context, device_address, host_slice, host_slice_mut,
    kp_context, kp_status, value_boundary, Failure, Span,
};
use crate::api::stencil::{BoundaryMode, BoxFilterOptions, ImageLayout};
use crate::error::Error;
use crate::float::Float;

/// `d c b a | a b c d | d c b a` (SciPy's default).
pub const KP_BOX_REFLECT: u32 = 0;
/// `k k k k | a b c d | k k k k` with k = cval.
pub const KP_BOX_CONSTANT: u32 = 1;
/// `a a a a | a b c d | d d d d`.
pub const KP_BOX_NEAREST: u32 = 2;
/// `d c b | a b c d | c b a`.
pub const KP_BOX_MIRROR: u32 = 3;
/// `a b c d | a b c d | a b c d`.
pub const KP_BOX_WRAP: u32 = 4;
/// Points whose window does not fit inside keep their input value (interior-only stencil).
pub const KP_BOX_INTERIOR: u32 = 5;

/// Window and boundary of a box filter; start from kp_box_filter_options_default().
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_box_filter_options {
    /// Odd window size, 1 to 33, along both axes (default 3).
    pub size: u32,
    /// One of KP_BOX_* (default KP_BOX_REFLECT).
    pub mode: u32,
    /// The value outside the image with KP_BOX_CONSTANT (default 0).
    pub cval: f64,
}

/// 3 x 3, KP_BOX_REFLECT, cval 0.
#[no_mangle]
pub extern "C" fn kp_box_filter_options_default() -> kp_box_filter_options {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (size 0, which every call rejects).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let d = BoxFilterOptions::default();
            kp_box_filter_options {
                size: d.size as u32,
                mode: d.mode.code(),
                cval: d.cval,
            }
        },
    )
}

/// The options and layout (validated by the API); NULL options mean the defaults.
unsafe fn parse(
    options: *const kp_box_filter_options,
    rows: usize,
    cols: usize,
    in_pitch: usize,
    out_pitch: usize,
) -> Result<(ImageLayout, BoxFilterOptions), Failure> {
    let o = unsafe { options.as_ref() }
        .copied()
        .unwrap_or_else(|| kp_box_filter_options_default());
    let opts = BoxFilterOptions {
        size: o.size as usize,
        mode: BoundaryMode::from_code(o.mode)?,
        cval: o.cval,
    };
    let layout = ImageLayout {
        rows,
        cols,
        in_pitch,
        out_pitch,
    };
    Ok((layout, opts))
}

#[allow(clippy::too_many_arguments)]
unsafe fn box_filter_host<T: Float>(
    ctx: *const kp_context,
    input: *const T,
    in_pitch: usize,
    output: *mut T,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let (layout, opts) = unsafe { parse(options, rows, cols, in_pitch, out_pitch) }?;
        let span = |pitch| {
            layout
                .span(pitch)
                .ok_or_else(|| Failure::from(Error::invalid("the image is too large")))
        };
        let (n_in, n_out) = (span(in_pitch)?, span(out_pitch)?);
        // NULL and impossible sizes first (as every entry point, an empty
        // image included), so that the overlap check sees real spans.
        check_host_pointer("input", input, n_in)?;
        check_host_pointer("output", output, n_out)?;
        check_apart(
            &[Span::of("output", output, n_out)],
            &[Span::of("input", input, n_in)],
        )?;
        // SAFETY: the caller provides these spans (documented); they do not overlap.
        let (input, output) = unsafe {
            (
                host_slice("input", input, n_in)?,
                host_slice_mut("output", output, n_out)?,
            )
        };
        ctx.kernpack
            .box_filter_into(input, output, &layout, &opts)?;
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn box_filter_device<T: Float>(
    ctx: *const kp_context,
    input: u64,
    in_pitch: usize,
    output: u64,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let (layout, opts) = unsafe { parse(options, rows, cols, in_pitch, out_pitch) }?;
        let (input, output) = (
            device_address("input", input)?,
            device_address("output", output)?,
        );
        let stream = unsafe { ctx.stream(stream) }?;
        // SAFETY: the caller provides device spans of the layout's lengths.
        unsafe { gpu.box_filter_raw::<T>(&stream, input, output, &layout, &opts) }?;
        Ok(())
    })
}

/// Box filter of a `rows` x `cols` row-major image: `input` holds
/// `(rows - 1) * in_pitch + cols` values, `output` (which must not overlap it)
/// `(rows - 1) * out_pitch + cols`; pitches are in elements. Only the first
/// `cols` values of each output row are written, and nothing on failure.
/// Waits for the result. NULL options: the defaults.
///
/// # Safety
/// `ctx` is a live context; the pointers hold the spans above.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kp_box_filter_f32(
    ctx: *const kp_context,
    input: *const f32,
    in_pitch: usize,
    output: *mut f32,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
) -> kp_status {
    unsafe { box_filter_host(ctx, input, in_pitch, output, out_pitch, rows, cols, options) }
}

/// The box filter of device buffers (spans as for kp_box_filter_f32, overlap
/// rejected), enqueued on `stream` (0: the default stream) with no
/// synchronisation. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `input` and `output` are device pointers of its
/// GPU holding the spans, alive until the stream's work completes; `stream` is
/// 0 or a live stream of that GPU.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kp_box_filter_device_f32(
    ctx: *const kp_context,
    input: u64,
    in_pitch: usize,
    output: u64,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
    stream: u64,
) -> kp_status {
    unsafe {
        box_filter_device::<f32>(
            ctx, input, in_pitch, output, out_pitch, rows, cols, options, stream,
        )
    }
}

/// Box filter of a `rows` x `cols` row-major image: `input` holds
/// `(rows - 1) * in_pitch + cols` values, `output` (which must not overlap it)
/// `(rows - 1) * out_pitch + cols`; pitches are in elements. Only the first
/// `cols` values of each output row are written, and nothing on failure.
/// Waits for the result. NULL options: the defaults.
///
/// # Safety
/// `ctx` is a live context; the pointers hold the spans above.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kp_box_filter_f64(
    ctx: *const kp_context,
    input: *const f64,
    in_pitch: usize,
    output: *mut f64,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
) -> kp_status {
    unsafe { box_filter_host(ctx, input, in_pitch, output, out_pitch, rows, cols, options) }
}

/// The box filter of device buffers (spans as for kp_box_filter_f32, overlap
/// rejected), enqueued on `stream` (0: the default stream) with no
/// synchronisation. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `input` and `output` are device pointers of its
/// GPU holding the spans, alive until the stream's work completes; `stream` is
/// 0 or a live stream of that GPU.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn kp_box_filter_device_f64(
    ctx: *const kp_context,
    input: u64,
    in_pitch: usize,
    output: u64,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
    stream: u64,
) -> kp_status {
    unsafe {
        box_filter_device::<f64>(
            ctx, input, in_pitch, output, out_pitch, rows, cols, options, stream,
        )
    }
}
