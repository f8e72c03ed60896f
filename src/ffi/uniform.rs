//! C ABI of the N-D box (uniform) filter of row-major arrays
//! (`scipy.ndimage.uniform_filter` with a size, origin and mode per axis):
//! host pointers (any context; the CPU backend runs the same filter) and
//! device pointers enqueued on a stream (GPU contexts). As the rank filters
//! (`rank.rs`), the element type is an argument (`kp_dtype`: integers of 8
//! to 64 bits, float, double) rather than a suffix, the values behind
//! `void` pointers; the boundary modes are the `KP_BOX_*` values but
//! `KP_BOX_INTERIOR`. (The 2-D float filter of any window is
//! kp_uniform_filter_{f32,f64}, in `stencil.rs`.)
//!
//! The entry points are written here rather than generated (see the module
//! doc of [`crate::ffi`]): one function per call, which dispatches on the
//! dtype to the `Entry` / `DeviceEntry` of that element type. This layer
//! only turns the C arguments into the API's values (NULL pointers, counts
//! through [`crate::raw`], mode codes); the API checks the call.
use std::ffi::c_void;
use std::marker::PhantomData;

use super::correlate::{copied, values_of};
use super::rank::filled;
use super::{
    boundary, by_dtype, context, kp_context, kp_dtype, kp_status, null_pointer, unknown_dtype,
    value_boundary, DeviceEntry, Entry, RawError,
};
use crate::api::stencil::BoundaryMode;
use crate::api::uniform::{BoxValue, UniformNdOnDevice, UniformNdOptions};
use crate::api::Kernpack;
use crate::error::Error;
use crate::raw::{self, check_apart, Span};

/// The window and boundary of an N-D box filter, as SciPy's
/// uniform_filter(size, origin=origin, mode=mode, cval=cval) with one value
/// per axis of the array in each array it points to; start from
/// kp_uniform_nd_options_default() and set `size`. The arrays are host
/// memory, read before the call returns.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_uniform_nd_options {
    /// The window's size along each axis, each at least 1 (1: the axis is
    /// not filtered); required: NULL is KP_ERROR_NULL_POINTER (the default
    /// is NULL, so set it).
    pub size: *const usize,
    /// SciPy's origin per axis, each in -(size / 2) .. (size - 1) / 2 for
    /// the window's size along it; NULL: 0 along every axis (default).
    pub origin: *const i64,
    /// The boundary mode per axis, each one of KP_BOX_* but
    /// KP_BOX_INTERIOR; NULL: KP_BOX_REFLECT along every axis (default).
    pub mode: *const u32,
    /// The value outside the array along the axes of KP_BOX_CONSTANT
    /// (default 0). For an integer dtype it must be an integer the type
    /// holds, whatever the modes.
    pub cval: f64,
}

/// No size (set it: the filter needs one per axis), origins 0, KP_BOX_REFLECT
/// along every axis, cval 0.
#[no_mangle]
pub extern "C" fn kp_uniform_nd_options_default() -> kp_uniform_nd_options {
    let defaults = || kp_uniform_nd_options {
        size: std::ptr::null(),
        origin: std::ptr::null(),
        mode: std::ptr::null(),
        cval: 0.0,
    };
    value_boundary(defaults, defaults)
}

impl kp_uniform_nd_options {
    /// The API's options over an array of `ndim` axes (validated by the API
    /// when the call runs), and the host arrays they were read from (for the
    /// overlap check).
    ///
    /// # Safety
    /// Each non-NULL pointer holds `ndim` values.
    unsafe fn to_options(
        self,
        ndim: usize,
    ) -> Result<(UniformNdOptions, [Span<'static>; 3]), RawError> {
        let size = copied("size", unsafe { raw::host("size", self.size, ndim) }?)?;
        let origin = match unsafe { raw::optional_host("origin", self.origin, ndim) }? {
            Some(origin) => copied("origin", origin)?,
            None => filled("origin", 0, ndim)?,
        };
        let mode = match unsafe { raw::optional_host("mode", self.mode, ndim) }? {
            Some(codes) => {
                let mut mode = Vec::new();
                mode.try_reserve_exact(ndim)
                    .map_err(|_| Error::OutOfMemory(format!("copying {ndim} values of mode")))?;
                for (axis, &code) in codes.iter().enumerate() {
                    mode.push(BoundaryMode::from_code(code).map_err(|_| {
                        Error::invalid(format!(
                            "unknown boundary mode {code} along axis {axis}: expected one of \
                             KP_BOX_* (0 (reflect) .. 4 (wrap))"
                        ))
                    })?);
                }
                mode
            }
            None => filled("mode", BoundaryMode::default(), ndim)?,
        };
        let opts = UniformNdOptions {
            size,
            origin,
            mode,
            cval: self.cval,
        };
        let read = [
            Span::of("size", self.size, ndim),
            Span::of("origin", self.origin, ndim),
            Span::of("mode", self.mode, ndim),
        ];
        Ok((opts, read))
    }
}

/// A box filter's C arguments but the dtype, `I` and `O` the input and
/// output pointers (host or device): the arguments of kp_uniform_filter_nd
/// and kp_uniform_filter_nd_device for element type `T`.
struct UniformFilterNd<T, I, O> {
    input: I,
    output: O,
    shape: *const usize,
    ndim: usize,
    options: *const kp_uniform_nd_options,
    _dtype: PhantomData<T>,
}

impl<T, I, O> UniformFilterNd<T, I, O> {
    /// The sizes (NULL refused).
    ///
    /// # Safety
    /// A non-NULL `shape` holds `ndim` values.
    unsafe fn shape<'a>(&self) -> Result<&'a [usize], RawError> {
        unsafe { raw::host("shape", self.shape, self.ndim) }
    }

    /// The options (NULL refused: they hold the size) over the array's
    /// axes, and the host memory they were read from.
    ///
    /// # Safety
    /// `options` is NULL or valid for reads, its pointers as its docs state.
    unsafe fn options(&self) -> Result<(UniformNdOptions, [Span<'static>; 4]), RawError> {
        let opts = unsafe { self.options.as_ref() }.ok_or_else(|| null_pointer("options"))?;
        let (api, [size, origin, mode]) = unsafe { opts.to_options(self.ndim) }?;
        let struct_span = Span::of("options", self.options, 1);
        Ok((api, [struct_span, size, origin, mode]))
    }
}

impl<T: BoxValue> Entry for UniformFilterNd<T, *const T, *mut T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let shape = unsafe { self.shape() }?;
        let (opts, read) = unsafe { self.options() }?;
        let n = values_of(shape)?;
        let output = Span::of("output", self.output, n);
        let mut inputs = vec![
            Span::of("input", self.input, n),
            Span::slice("shape", shape),
        ];
        inputs.extend_from_slice(&read);
        check_apart(&[output], &inputs)?;
        let input = unsafe { raw::host("input", self.input, n) }?;
        let output = unsafe { raw::host_mut("output", self.output, n) }?;
        kp.uniform_filter_nd_into(input, output, shape, &opts)?;
        Ok(())
    }
}

impl<T: BoxValue> DeviceEntry for UniformFilterNd<T, u64, u64> {
    type Op = UniformNdOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let shape = unsafe { self.shape() }?;
        let (opts, _) = unsafe { self.options() }?;
        Ok(UniformNdOnDevice {
            input: raw::device("input", self.input)?,
            output: raw::device("output", self.output)?,
            shape: copied("shape", shape)?,
            opts,
            dtype: PhantomData,
        })
    }
}

/// SciPy's uniform_filter of the row-major array of the `ndim` sizes at
/// `shape` (the last axis varies fastest), with a window size, origin and
/// boundary mode per axis (`options`, required: its `size` has no default):
/// `input` and `output`, which must not overlap, each hold the product of
/// the sizes of `dtype` values (one of KP_DTYPE_*, aligned for it). One
/// pass per axis whose size exceeds 1, in axis order, each reading the
/// previous pass's output as stored in the element type: along an axis of
/// size s and origin o, output i is the mean of the s inputs from
/// i - (s / 2 + o) on of the line extended by that axis's mode. Floats sum
/// in double and round the mean once to their type; integers sum exactly
/// and truncate the mean toward zero (SciPy's cast). The cost of a pass
/// does not grow with its window. Runs on the context's backend and waits
/// for the result; nothing is written on failure.
///
/// # Safety
/// `ctx` is a live context; `shape` holds `ndim` values, `input` and
/// `output` the product of the sizes of `dtype` values; `options` is valid
/// for reads, its non-NULL pointers holding `ndim` values each.
#[no_mangle]
pub unsafe extern "C" fn kp_uniform_filter_nd(
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: *const c_void,
    output: *mut c_void,
    shape: *const usize,
    ndim: usize,
    options: *const kp_uniform_nd_options,
) -> kp_status {
    by_dtype!(dtype,
        T => unsafe {
            UniformFilterNd::<T, *const T, *mut T> {
                input: input.cast(),
                output: output.cast(),
                shape,
                ndim,
                options,
                _dtype: PhantomData,
            }
            .run(ctx)
        },
        other => boundary(|| {
            unsafe { context(ctx) }?;
            Err(unknown_dtype(other))
        })
    )
}

/// kp_uniform_filter_nd on device buffers: `input` and `output` are device
/// pointers of the context's GPU, each holding the array, apart; `shape`
/// and `options` (and the arrays it points to) are host memory, read before
/// the call returns. Enqueued on `stream` (0: the default stream) with no
/// synchronisation; with two passes or more it uses device scratch of the
/// array's size, stream-ordered. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `shape` holds `ndim` values; `options` as
/// for kp_uniform_filter_nd; `input` and `output` are device pointers of its
/// GPU holding the array, alive until the stream's work completes; `stream`
/// is 0 or a live stream of that GPU.
#[no_mangle]
pub unsafe extern "C" fn kp_uniform_filter_nd_device(
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: u64,
    output: u64,
    shape: *const usize,
    ndim: usize,
    options: *const kp_uniform_nd_options,
    stream: u64,
) -> kp_status {
    by_dtype!(dtype,
        T => unsafe {
            UniformFilterNd::<T, u64, u64> {
                input,
                output,
                shape,
                ndim,
                options,
                _dtype: PhantomData,
            }
            .enqueue(ctx, stream)
        },
        other => boundary(|| {
            unsafe { context(ctx) }?.gpu()?;
            Err(unknown_dtype(other))
        })
    )
}
