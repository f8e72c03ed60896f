//! C ABI of the 2D box filter: host pointers (any context; the CPU backend
//! runs the same filter) and device pointers enqueued on a stream (GPU contexts).
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::stencil::{
    BoundaryMode, BoxFilterOnDevice, BoxFilterOptions, ImageLayout, UniformFilterOptions,
};
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
    /// Window size along both axes, at least 1 (default 3); an even size
    /// places its window as SciPy does (see kp_uniform_filter_options).
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

/// Window, origin and boundary of a box filter along each axis, as SciPy's
/// uniform_filter(size=(size_rows, size_cols), origin=(origin_rows,
/// origin_cols)); start from kp_uniform_filter_options_default(). Along an
/// axis of size n and origin o, output i is the mean over inputs
/// i - (n / 2 + o) .. i - (n / 2 + o) + n - 1, o in -(n / 2) .. (n - 1) / 2.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_uniform_filter_options {
    /// Window size along the rows, at least 1, any size (default 3).
    pub size_rows: usize,
    /// Window size along the columns, at least 1, any size (default 3).
    pub size_cols: usize,
    /// SciPy's origin along the rows (default 0).
    pub origin_rows: i64,
    /// SciPy's origin along the columns (default 0).
    pub origin_cols: i64,
    /// The value outside the image with KP_BOX_CONSTANT (default 0).
    pub cval: f64,
    /// One of KP_BOX_* (default KP_BOX_REFLECT).
    pub mode: u32,
}

/// 3 x 3, centred, KP_BOX_REFLECT, cval 0.
#[no_mangle]
pub extern "C" fn kp_uniform_filter_options_default() -> kp_uniform_filter_options {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (sizes 0, which every call rejects).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let d = UniformFilterOptions::default();
            kp_uniform_filter_options {
                size_rows: d.size[0],
                size_cols: d.size[1],
                origin_rows: d.origin[0],
                origin_cols: d.origin[1],
                cval: d.cval,
                mode: d.mode.code(),
            }
        },
    )
}

/// The C options structs of the box filters: their defaults and their
/// meaning as [`UniformFilterOptions`] (validated by the API).
trait BoxOptions: Copy {
    extern "C" fn defaults() -> Self;
    fn options(self) -> Result<UniformFilterOptions, RawError>;
}

impl BoxOptions for kp_box_filter_options {
    extern "C" fn defaults() -> Self {
        kp_box_filter_options_default()
    }
    fn options(self) -> Result<UniformFilterOptions, RawError> {
        let square = BoxFilterOptions {
            size: self.size as usize,
            mode: BoundaryMode::from_code(self.mode)?,
            cval: self.cval,
        };
        Ok(square.into())
    }
}

impl BoxOptions for kp_uniform_filter_options {
    extern "C" fn defaults() -> Self {
        kp_uniform_filter_options_default()
    }
    fn options(self) -> Result<UniformFilterOptions, RawError> {
        Ok(UniformFilterOptions {
            size: [self.size_rows, self.size_cols],
            origin: [self.origin_rows, self.origin_cols],
            mode: BoundaryMode::from_code(self.mode)?,
            cval: self.cval,
        })
    }
}

/// A box filter's C arguments, `I` and `O` the input and output pointers
/// (host or device), `K` the options struct: the arguments of
/// kp_box_filter_{dtype}, kp_box_filter_device_{dtype},
/// kp_uniform_filter_{dtype} and kp_uniform_filter_device_{dtype}.
struct BoxFilter<T, I, O, K> {
    input: I,
    in_pitch: usize,
    output: O,
    out_pitch: usize,
    rows: usize,
    cols: usize,
    options: *const K,
    _dtype: PhantomData<T>,
}

impl<T, I, O, K: BoxOptions> BoxFilter<T, I, O, K> {
    /// The layout and options (validated by the API); NULL options mean the
    /// defaults.
    unsafe fn parse(&self) -> Result<(ImageLayout, UniformFilterOptions), RawError> {
        let opts = unsafe { or_default(self.options, K::defaults) }.options()?;
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
type kp_box_filter<T> = BoxFilter<T, *const T, *mut T, kp_box_filter_options>;

/// Box filter of any window (sizes and origins per axis, see
/// kp_uniform_filter_options) of a `rows` x `cols` row-major image in
/// {precision}; spans, pitches and failures as for kp_box_filter_{dtype}.
/// Waits for the result. NULL options: the defaults.
///
/// # Safety
/// `ctx` is a live context; the pointers hold the spans of kp_box_filter_{dtype}.
type kp_uniform_filter<T> = BoxFilter<T, *const T, *mut T, kp_uniform_filter_options>;

impl<T: Float, K: BoxOptions> Entry for BoxFilter<T, *const T, *mut T, K> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (layout, opts) = unsafe { self.parse() }?;
        let (n_in, n_out) = (layout.input_len(), layout.output_len());
        check_apart(
            &[Span::of("output", self.output, n_out)],
            &[Span::of("input", self.input, n_in)],
        )?;
        let input = unsafe { raw::host("input", self.input, n_in) }?;
        let output = unsafe { raw::host_mut("output", self.output, n_out) }?;
        kp.uniform_filter_into(input, output, &layout, &opts)?;
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
type kp_box_filter_device<T> = BoxFilter<T, u64, u64, kp_box_filter_options>;

/// kp_uniform_filter_{dtype} on device buffers in {precision}, enqueued on
/// `stream` (0: the default stream) with no synchronisation; windows wider
/// than 1025 columns are refused (the host call runs them on the CPU
/// backend). GPU contexts only.
///
/// # Safety
/// As kp_box_filter_device_{dtype}.
type kp_uniform_filter_device<T> = BoxFilter<T, u64, u64, kp_uniform_filter_options>;

impl<T: Float, K: BoxOptions> DeviceEntry for BoxFilter<T, u64, u64, K> {
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
