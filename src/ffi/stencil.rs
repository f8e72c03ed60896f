//! C ABI of the 2D box filter: host pointers (any context; the CPU backend
//! runs the same filter) and device pointers enqueued on a stream (GPU contexts).
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::stencil::{BoundaryMode, BoxFilterOnDevice, BoxFilterOptions, ImageLayout};
use crate::api::Kernpack;
use crate::float::Float;
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

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

/// A box filter's C arguments, `I` and `O` the input and output pointers
/// (host or device): the arguments of kp_box_filter_{dtype} and
/// kp_box_filter_device_{dtype}.
struct BoxFilter<T, I, O> {
    input: I,
    in_pitch: usize,
    output: O,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const kp_box_filter_options,
    _dtype: PhantomData<T>,
}

impl<T, I, O> BoxFilter<T, I, O> {
    /// The layout and options (validated by the API); NULL options mean the
    /// defaults.
    unsafe fn parse(&self) -> Result<(ImageLayout, BoxFilterOptions), RawError> {
        let o = unsafe { or_default(self.options, kp_box_filter_options_default) };
        let opts = BoxFilterOptions {
            size: o.size as usize,
            mode: BoundaryMode::from_code(o.mode)?,
            cval: o.cval,
        };
        let (rows, cols, in_pitch, out_pitch) =
            (self.rows, self.cols, self.in_pitch, self.out_pitch);
        #[rustfmt::skip]
        let layout = ImageLayout { rows, cols, in_pitch, out_pitch };
        Ok((layout, opts))
    }
}

/// Box filter of a `rows` x `cols` row-major image in {precision}: `input`
/// holds `(rows - 1) * in_pitch + cols` values, `output` (which must not
/// overlap it) `(rows - 1) * out_pitch + cols`; pitches are in elements. Only
/// the first `cols` values of each output row are written, and nothing on
/// failure. Waits for the result. NULL options: the defaults.
///
/// # Safety
/// `ctx` is a live context; the pointers hold the spans above.
type kp_box_filter<T> = BoxFilter<T, *const T, *mut T>;

impl<T: Float> Entry for BoxFilter<T, *const T, *mut T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (layout, opts) = unsafe { self.parse() }?;
        let (n_in, n_out) = (layout.input_len(), layout.output_len());
        check_apart(
            &[Span::of("output", self.output, n_out)],
            &[Span::of("input", self.input, n_in)],
        )?;
        let input = unsafe { raw::host("input", self.input, n_in) }?;
        let output = unsafe { raw::host_mut("output", self.output, n_out) }?;
        kp.box_filter_into(input, output, &layout, &opts)?;
        Ok(())
    }
}

/// The box filter of device buffers in {precision} (spans as for
/// kp_box_filter_{dtype}, overlap rejected), enqueued on `stream` (0: the
/// default stream) with no synchronisation. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `input` and `output` are device pointers of its
/// GPU holding the spans, alive until the stream's work completes; `stream` is
/// 0 or a live stream of that GPU.
type kp_box_filter_device<T> = BoxFilter<T, u64, u64>;

impl<T: Float> DeviceEntry for BoxFilter<T, u64, u64> {
    type Op = BoxFilterOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let (layout, opts) = unsafe { self.parse() }?;
        let input = raw::device("input", self.input)?;
        let output = raw::device("output", self.output)?;
        let dtype = PhantomData;
        #[rustfmt::skip]
        let op = BoxFilterOnDevice { input, output, layout, opts, dtype };
        Ok(op)
    }
}
