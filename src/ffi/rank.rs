//! C ABI of the rank filters of N-D row-major arrays
//! (`scipy.ndimage.median_filter`, `rank_filter`, `percentile_filter`): host
//! pointers (any context; the CPU backend runs the same filter) and device
//! pointers enqueued on a stream (GPU contexts). The element type is an
//! argument (`kp_dtype`: integers of 8 to 64 bits, float, double) rather
//! than a suffix, the values behind `void` pointers. The boundary modes are
//! the box filter's `KP_BOX_*` values, but `KP_BOX_INTERIOR`.
//!
//! The entry points are written here rather than generated (see the module
//! doc of [`crate::ffi`]): one function per call, which dispatches on the
//! dtype to the `Entry` / `DeviceEntry` of that element type.
use std::ffi::c_void;
use std::marker::PhantomData;

use super::correlate::{copied, values_of};
use super::{
    boundary, by_dtype, context, kp_context, kp_dtype, kp_status, or_default, unknown_dtype,
    value_boundary, DeviceEntry, Entry, RawError,
};
use crate::api::rank::{Footprint, Rank, RankFilterOnDevice, RankFilterOptions, RankValue};
use crate::api::stencil::BoundaryMode;
use crate::api::Kernpack;
use crate::error::Error;
use crate::raw::{self, check_apart, Span};

/// The middle value of the window: rank count / 2 (the upper middle of an
/// even count, as SciPy's median_filter).
pub const KP_RANK_BY_MEDIAN: u32 = 0;
/// The value of rank `rank` (SciPy's rank_filter): 0 the smallest, -1 the
/// largest.
pub const KP_RANK_BY_INDEX: u32 = 1;
/// SciPy's percentile_filter: `percentile` in -100 .. 100 (negative counts
/// from 100) selects rank floor(count * p / 100), count - 1 at 100.
pub const KP_RANK_BY_PERCENTILE: u32 = 2;

/// The window, the value taken from it and the boundary of a rank filter;
/// start from kp_rank_options_default(). The arrays it points to are host
/// memory (`size` and `origin`: one value per axis of the array), read
/// before the call returns.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_rank_options {
    /// The footprint's box, one size per axis, each at least 1 (SciPy's
    /// `size`); NULL: 3 along every axis (default).
    pub size: *const usize,
    /// NULL: every point of the box (default); else the product of the box's
    /// sizes of bytes, row-major (the last axis fastest), non-zero where the
    /// point is in the window (SciPy's `footprint`); at least one is set.
    pub footprint: *const u8,
    /// SciPy's origin per axis, each in -(size / 2) .. (size - 1) / 2 for
    /// the box's size along it; NULL: 0 along every axis (default).
    pub origin: *const i64,
    /// One of KP_RANK_BY_* (default KP_RANK_BY_MEDIAN).
    pub rank_by: u32,
    /// One of KP_BOX_* but KP_BOX_INTERIOR (default KP_BOX_REFLECT), along
    /// every axis.
    pub mode: u32,
    /// With KP_RANK_BY_INDEX: the rank among the window's points, 0 the
    /// smallest, negative from the largest (-1); default 0.
    pub rank: i64,
    /// With KP_RANK_BY_PERCENTILE: -100 .. 100 (default 50).
    pub percentile: f64,
    /// The value outside the array with KP_BOX_CONSTANT (default 0),
    /// converted to the element type: integers truncated toward zero, and
    /// it must fit the type.
    pub cval: f64,
}

/// The median over a centred 3 x 3 x ... box, KP_BOX_REFLECT, cval 0
/// (SciPy's median_filter(size=3)); rank 0, percentile 50.
#[no_mangle]
pub extern "C" fn kp_rank_options_default() -> kp_rank_options {
    let defaults = || kp_rank_options {
        size: std::ptr::null(),
        footprint: std::ptr::null(),
        origin: std::ptr::null(),
        rank_by: KP_RANK_BY_MEDIAN,
        mode: BoundaryMode::default().code(),
        rank: 0,
        percentile: 50.0,
        cval: 0.0,
    };
    value_boundary(defaults, defaults)
}

/// A vector of `len` copies of `value`, allocated fallibly. (Also the N-D
/// box filter's.)
pub(super) fn filled<T: Copy>(what: &str, value: T, len: usize) -> Result<Vec<T>, Error> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| Error::OutOfMemory(format!("allocating {len} values of {what}")))?;
    v.resize(len, value);
    Ok(v)
}

impl kp_rank_options {
    /// The API's options over an array of `ndim` axes (validated by the API
    /// when the call runs), and the host arrays they were read from (for the
    /// overlap check).
    ///
    /// # Safety
    /// Each non-NULL pointer holds what the struct's docs state.
    unsafe fn to_options(
        self,
        ndim: usize,
    ) -> Result<(RankFilterOptions, [Span<'static>; 3]), RawError> {
        let size = match unsafe { raw::optional_host("size", self.size, ndim) }? {
            Some(size) => copied("size", size)?,
            None => filled("size", 3, ndim)?,
        };
        let points = crate::params::array_size(&size).ok_or_else(|| {
            Error::invalid(format!(
                "a footprint of size {size:?} holds more points than a size_t counts"
            ))
        })?;
        // The mask is made even when the footprint is NULL: a box no array
        // could hold is refused before anything is allocated for it.
        crate::api::check_array_size::<u8>("footprint", points)?;
        let mask = match unsafe { raw::optional_host("footprint", self.footprint, points) }? {
            Some(given) => {
                let mut mask = Vec::new();
                mask.try_reserve_exact(points).map_err(|_| {
                    Error::OutOfMemory(format!("copying a footprint of {points} points"))
                })?;
                mask.extend(given.iter().map(|&b| b != 0));
                mask
            }
            None => filled("footprint", true, points)?,
        };
        let origin = match unsafe { raw::optional_host("origin", self.origin, ndim) }? {
            Some(origin) => copied("origin", origin)?,
            None => Vec::new(),
        };
        let rank = match self.rank_by {
            KP_RANK_BY_MEDIAN => Rank::Median,
            KP_RANK_BY_INDEX => Rank::Index(self.rank),
            KP_RANK_BY_PERCENTILE => Rank::Percentile(self.percentile),
            other => {
                return Err(Error::invalid(format!(
                    "unknown rank_by {other}: expected 0 (KP_RANK_BY_MEDIAN), 1 \
                     (KP_RANK_BY_INDEX) or 2 (KP_RANK_BY_PERCENTILE)"
                ))
                .into())
            }
        };
        let opts = RankFilterOptions {
            footprint: Footprint { shape: size, mask },
            rank,
            origin,
            mode: BoundaryMode::from_code(self.mode)?,
            cval: self.cval,
        };
        let read = [
            Span::of("size", self.size, ndim),
            Span::of("footprint", self.footprint, points),
            Span::of("origin", self.origin, ndim),
        ];
        Ok((opts, read))
    }
}

/// A rank filter's C arguments but the dtype, `I` and `O` the input and
/// output pointers (host or device): the arguments of kp_rank_filter and
/// kp_rank_filter_device for element type `T`.
struct RankFilter<T, I, O> {
    input: I,
    output: O,
    shape: *const usize,
    ndim: usize,
    options: *const kp_rank_options,
    _dtype: PhantomData<T>,
}

impl<T, I, O> RankFilter<T, I, O> {
    /// The sizes (NULL refused).
    ///
    /// # Safety
    /// A non-NULL `shape` holds `ndim` values.
    unsafe fn shape<'a>(&self) -> Result<&'a [usize], RawError> {
        unsafe { raw::host("shape", self.shape, self.ndim) }
    }

    /// The options (NULL: the defaults) over the array's axes, and the host
    /// arrays they were read from.
    ///
    /// # Safety
    /// `options` is NULL or valid for reads, its pointers as its docs state.
    unsafe fn options(&self) -> Result<(RankFilterOptions, [Span<'static>; 4]), RawError> {
        let opts = unsafe { or_default(self.options, kp_rank_options_default) };
        let (api, [size, footprint, origin]) = unsafe { opts.to_options(self.ndim) }?;
        let struct_span = Span::of("options", self.options, 1);
        Ok((api, [struct_span, size, footprint, origin]))
    }
}

impl<T: RankValue> Entry for RankFilter<T, *const T, *mut T> {
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
        kp.rank_filter_into(input, output, shape, &opts)?;
        Ok(())
    }
}

impl<T: RankValue> DeviceEntry for RankFilter<T, u64, u64> {
    type Op = RankFilterOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let shape = unsafe { self.shape() }?;
        let (opts, _) = unsafe { self.options() }?;
        Ok(RankFilterOnDevice {
            input: raw::device("input", self.input)?,
            output: raw::device("output", self.output)?,
            shape: copied("shape", shape)?,
            opts,
            dtype: PhantomData,
        })
    }
}

/// SciPy's rank_filter / median_filter / percentile_filter of the row-major
/// array of the `ndim` sizes at `shape` (the last axis varies fastest):
/// `input` and `output`, which must not overlap, each hold the product of
/// the sizes of `dtype` values (one of KP_DTYPE_*, aligned for it). Output
/// i (a multi-index) is the value of the selected rank among the inputs at
/// i + j - (size / 2 + origin), per axis, for every point j of the
/// footprint, past the array's edges by the options' mode (one mode for all
/// axes). Values are ordered as numbers; NaNs sort above +inf (as NumPy),
/// -0.0 below +0.0. NULL options: the median over a centred box of 3 along
/// every axis, reflect. Runs on the context's backend and waits for the
/// result; nothing is written on failure.
///
/// # Safety
/// `ctx` is a live context; `shape` holds `ndim` values, `input` and
/// `output` the product of the sizes of `dtype` values; `options` is NULL
/// or valid for reads, its non-NULL pointers holding what its docs state.
#[no_mangle]
pub unsafe extern "C" fn kp_rank_filter(
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: *const c_void,
    output: *mut c_void,
    shape: *const usize,
    ndim: usize,
    options: *const kp_rank_options,
) -> kp_status {
    by_dtype!(dtype,
        T => unsafe {
            RankFilter::<T, *const T, *mut T> {
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

/// kp_rank_filter on device buffers: `input` and `output` are device
/// pointers of the context's GPU, each holding the array, apart; `shape`
/// and `options` (and the arrays it points to) are host memory, read before
/// the call returns. Enqueued on `stream` (0: the default stream) with no
/// synchronisation. GPU contexts only; the GPU takes up to four axes once
/// neighbouring axes the footprint does not extend along are merged.
///
/// # Safety
/// `ctx` is a live GPU context; `shape` holds `ndim` values; `options` as
/// for kp_rank_filter; `input` and `output` are device pointers of its GPU
/// holding the array, alive until the stream's work completes; `stream` is
/// 0 or a live stream of that GPU.
#[no_mangle]
pub unsafe extern "C" fn kp_rank_filter_device(
    ctx: *const kp_context,
    dtype: kp_dtype,
    input: u64,
    output: u64,
    shape: *const usize,
    ndim: usize,
    options: *const kp_rank_options,
    stream: u64,
) -> kp_status {
    by_dtype!(dtype,
        T => unsafe {
            RankFilter::<T, u64, u64> {
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
