//! C ABI of the 1-D correlations along one axis of an N-D row-major array
//! and the Gaussian filters made of them (`scipy.ndimage.correlate1d` and
//! `gaussian_filter`): host pointers (any context; the CPU backend runs the
//! same passes) and device pointers enqueued on a stream (GPU contexts). The
//! boundary modes are the box filter's `KP_BOX_*` values, but
//! `KP_BOX_INTERIOR`, which a correlation refuses.
use std::marker::PhantomData;

use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::correlate::{CorrelateOnDevice, GaussianOptions, Pass};
use crate::api::stencil::BoundaryMode;
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// Origin and boundary of a correlation; start from
/// kp_correlate_options_default().
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_correlate_options {
    /// SciPy's origin, in -(nweights / 2) .. (nweights - 1) / 2 (default 0):
    /// along the axis, output i is the sum over j of
    /// weights at j times the input at i + j - (nweights / 2 + origin).
    pub origin: i64,
    /// The value outside the array with KP_BOX_CONSTANT (default 0).
    pub cval: f64,
    /// One of KP_BOX_* but KP_BOX_INTERIOR (default KP_BOX_REFLECT).
    pub mode: u32,
}

/// Origin 0, KP_BOX_REFLECT, cval 0 (SciPy's defaults).
#[no_mangle]
pub extern "C" fn kp_correlate_options_default() -> kp_correlate_options {
    let defaults = || kp_correlate_options {
        origin: 0,
        cval: 0.0,
        mode: BoundaryMode::default().code(),
    };
    value_boundary(defaults, defaults)
}

/// A Gaussian filter along one axis, as SciPy's `gaussian_filter1d(sigma,
/// order, mode, cval, truncate, radius)`; start from
/// kp_gaussian_options_default().
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_gaussian_options {
    /// Standard deviation in points (default 1): finite and positive, or 0,
    /// which skips the axis.
    pub sigma: f64,
    /// 0 smooths (default); k in 1 .. 10 correlates with the k-th derivative
    /// of the Gaussian.
    pub order: u32,
    /// With a negative `radius`, the kernel's radius is
    /// floor(truncate * sigma + 0.5) (default 4).
    pub truncate: f64,
    /// The kernel's radius (2 radius + 1 weights, at most 524287), or
    /// negative: from `truncate` (default -1).
    pub radius: i64,
    /// One of KP_BOX_* but KP_BOX_INTERIOR (default KP_BOX_REFLECT).
    pub mode: u32,
    /// The value outside the array with KP_BOX_CONSTANT (default 0).
    pub cval: f64,
}

/// Sigma 1, order 0, truncate 4, radius -1 (from truncate), KP_BOX_REFLECT,
/// cval 0 (SciPy's defaults, sigma aside).
#[no_mangle]
pub extern "C" fn kp_gaussian_options_default() -> kp_gaussian_options {
    // SAFETY (fallback): all-zero numbers are a valid value of the struct
    // (sigma 0: the axis is skipped).
    value_boundary(
        || unsafe { std::mem::zeroed() },
        || {
            let d = GaussianOptions::default();
            kp_gaussian_options {
                sigma: d.sigma,
                order: d.order,
                truncate: d.truncate,
                radius: d.radius.map_or(-1, |r| r as i64),
                mode: d.mode.code(),
                cval: d.cval,
            }
        },
    )
}

impl kp_gaussian_options {
    /// The API's options (validated by the API when they become a pass).
    fn to_options(self) -> Result<GaussianOptions, Error> {
        Ok(GaussianOptions {
            sigma: self.sigma,
            order: self.order,
            truncate: self.truncate,
            // Past usize (32-bit targets): the API refuses it as too large.
            radius: (self.radius >= 0).then(|| usize::try_from(self.radius).unwrap_or(usize::MAX)),
            mode: BoundaryMode::from_code(self.mode)?,
            cval: self.cval,
        })
    }
}

/// `values` copied into a vector allocated fallibly (a hostile count is an
/// error, not an abort). (Also the rank filters'.)
pub(super) fn copied<T: Copy>(name: &str, values: &[T]) -> Result<Vec<T>, Error> {
    let mut copy = Vec::new();
    copy.try_reserve_exact(values.len())
        .map_err(|_| Error::OutOfMemory(format!("copying {} values of {name}", values.len())))?;
    copy.extend_from_slice(values);
    Ok(copy)
}

/// The values of an array of `shape`, or an invalid argument when their
/// count overflows. (Also the rank filters'.)
pub(super) fn values_of(shape: &[usize]) -> Result<usize, Error> {
    crate::params::array_size(shape).ok_or_else(|| {
        Error::invalid(format!(
            "an array of shape {shape:?} holds more values than a size_t counts"
        ))
    })
}

/// The array of a call: its `ndim` sizes at `shape` (row-major: the last
/// axis varies fastest), and `input` and `output` (host or device pointers),
/// each holding the product of the sizes.
struct Array<I, O> {
    input: I,
    output: O,
    shape: *const usize,
    ndim: usize,
}

impl<I, O> Array<I, O> {
    /// The sizes (NULL refused).
    ///
    /// # Safety
    /// A non-NULL `shape` holds `ndim` values.
    unsafe fn shape<'a>(&self) -> Result<&'a [usize], RawError> {
        unsafe { raw::host("shape", self.shape, self.ndim) }
    }
}

impl<T: Float> Array<*const T, *mut T> {
    /// `passes` from `input` into `output` through the safe API, the
    /// pointers turned into views by the boundary; `also_read` are the
    /// call's other host inputs, which the output must not overlap either.
    ///
    /// # Safety
    /// As the host entry points'.
    unsafe fn run_passes(
        &self,
        kp: &Kernpack,
        shape: &[usize],
        passes: &[Pass],
        also_read: &[Span],
    ) -> Result<(), RawError> {
        let n = values_of(shape)?;
        let mut inputs = vec![
            Span::of("input", self.input, n),
            Span::slice("shape", shape),
        ];
        inputs.extend_from_slice(also_read);
        check_apart(&[Span::of("output", self.output, n)], &inputs)?;
        let input = unsafe { raw::host("input", self.input, n) }?;
        let output = unsafe { raw::host_mut("output", self.output, n) }?;
        kp.correlate_passes_into(input, output, shape, passes)?;
        Ok(())
    }
}

impl Array<u64, u64> {
    /// The device operation of `passes` (NULL device pointers refused; the
    /// rest is checked by `Gpu::enqueue`).
    fn on_device<T>(
        &self,
        shape: &[usize],
        passes: Vec<Pass>,
    ) -> Result<CorrelateOnDevice<T>, RawError> {
        Ok(CorrelateOnDevice {
            input: raw::device("input", self.input)?,
            output: raw::device("output", self.output)?,
            shape: copied("shape", shape)?,
            passes,
            dtype: PhantomData,
        })
    }
}

/// A correlation's C arguments, `I` and `O` the input and output pointers
/// (host or device): the arguments of kp_correlate1d_{dtype} and
/// kp_correlate1d_device_{dtype}.
struct Correlate1d<T, I, O> {
    array: Array<I, O>,
    axis: usize,
    weights: *const f64,
    nweights: usize,
    options: *const kp_correlate_options,
    _dtype: PhantomData<T>,
}

impl<T, I, O> Correlate1d<T, I, O> {
    /// The pass (validated by the API); NULL options mean the defaults.
    ///
    /// # Safety
    /// A non-NULL `weights` holds `nweights` values; `options` is NULL or
    /// valid for reads.
    unsafe fn pass(&self) -> Result<Pass, RawError> {
        let opts = unsafe { or_default(self.options, kp_correlate_options_default) };
        let weights = unsafe { raw::host("weights", self.weights, self.nweights) }?;
        Ok(Pass {
            axis: self.axis,
            weights: copied("weights", weights)?,
            origin: opts.origin,
            mode: BoundaryMode::from_code(opts.mode)?,
            cval: opts.cval,
        })
    }
}

/// SciPy's correlate1d in {precision} along axis `axis` of the row-major
/// array of the `ndim` sizes at `shape` (the last axis varies fastest):
/// `input` and `output`, which must not overlap, each hold the product of
/// the sizes. Along the axis, output i is the sum over j of
/// `weights[j] * input[i + j - (nweights / 2 + origin)]`, the input extended
/// past its ends by the options' mode; `weights` holds `nweights` finite
/// values (1 to 2^20; doubles whatever the dtype). `axis` counts from 0 (the
/// slowest-varying axis) to `ndim - 1`: a negative, Python-style axis is the
/// caller's to convert. Runs on the context's backend and waits for the
/// result; nothing is written on failure. NULL options: the defaults.
///
/// # Safety
/// `ctx` is a live context; `shape` holds `ndim` values, `weights`
/// `nweights`, `input` and `output` the product of the sizes.
type kp_correlate1d<T> = Correlate1d<T, *const T, *mut T>;

impl<T: Float> Entry for Correlate1d<T, *const T, *mut T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let shape = unsafe { self.array.shape() }?;
        let pass = unsafe { self.pass() }?;
        let weights = Span::of("weights", self.weights, self.nweights);
        unsafe { self.array.run_passes(kp, shape, &[pass], &[weights]) }
    }
}

/// kp_correlate1d_{dtype} on device buffers in {precision}: `input` and
/// `output` are device pointers of the context's GPU, each holding the
/// array, apart; `shape`, `weights` and `options` are host memory, read
/// before the call returns. Enqueued on `stream` (0: the default stream)
/// with no synchronisation. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `shape` holds `ndim` values and `weights`
/// `nweights`; `input` and `output` are device pointers of its GPU holding
/// the array, alive until the stream's work completes; `stream` is 0 or a
/// live stream of that GPU.
type kp_correlate1d_device<T> = Correlate1d<T, u64, u64>;

impl<T: Float> DeviceEntry for Correlate1d<T, u64, u64> {
    type Op = CorrelateOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let shape = unsafe { self.array.shape() }?;
        let pass = unsafe { self.pass() }?;
        self.array.on_device(shape, vec![pass])
    }
}

/// A Gaussian filter's C arguments, `I` and `O` the input and output
/// pointers (host or device): the arguments of kp_gaussian_filter_{dtype}
/// and kp_gaussian_filter_device_{dtype}.
struct GaussianFilter<T, I, O> {
    array: Array<I, O>,
    per_axis: *const kp_gaussian_options,
    _dtype: PhantomData<T>,
}

impl<T, I, O> GaussianFilter<T, I, O> {
    /// One pass per axis in order, but for axes whose sigma is 0 (validated
    /// by the API); NULL `per_axis` means the defaults on every axis.
    ///
    /// # Safety
    /// A non-NULL `per_axis` holds `ndim` structs.
    unsafe fn passes(&self) -> Result<Vec<Pass>, RawError> {
        let ndim = self.array.ndim;
        let given = unsafe { raw::optional_host("per_axis", self.per_axis, ndim) }?;
        let default = kp_gaussian_options_default();
        let mut passes = Vec::new();
        for axis in 0..ndim {
            let opts = given.map_or(default, |g| g[axis]);
            let pass = match opts.to_options() {
                Ok(o) if o.sigma == 0.0 => continue,
                Ok(o) => o.pass(axis),
                Err(e) => Err(e),
            };
            passes.push(pass.map_err(|e| match e {
                Error::InvalidInput(why) => Error::invalid(format!("axis {axis}: {why}")),
                other => other,
            })?);
        }
        Ok(passes)
    }
}

/// SciPy's gaussian_filter in {precision} of the row-major array of the
/// `ndim` sizes at `shape` (`input` and `output` as for
/// kp_correlate1d_{dtype}): one correlation per axis, axis 0 first, with the
/// Gaussian kernel of `per_axis[axis]` (`ndim` structs; NULL: the defaults
/// on every axis), each reading the previous one's output, stored in
/// {precision} as SciPy stores it in the output's type. An axis whose sigma
/// is 0 is skipped (none left, or `ndim` 0: a copy); any other sigma must be
/// finite and positive (SciPy also skips negative ones; kernpack refuses
/// them). Runs on the context's backend and waits for the result; nothing is
/// written on failure.
///
/// # Safety
/// `ctx` is a live context; `shape` holds `ndim` values, a non-NULL
/// `per_axis` `ndim` structs, `input` and `output` the product of the sizes.
type kp_gaussian_filter<T> = GaussianFilter<T, *const T, *mut T>;

impl<T: Float> Entry for GaussianFilter<T, *const T, *mut T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let shape = unsafe { self.array.shape() }?;
        let passes = unsafe { self.passes() }?;
        let per_axis = Span::of("per_axis", self.per_axis, self.array.ndim);
        unsafe { self.array.run_passes(kp, shape, &passes, &[per_axis]) }
    }
}

/// kp_gaussian_filter_{dtype} on device buffers in {precision}: `input` and
/// `output` are device pointers of the context's GPU, each holding the
/// array, apart; `shape` and `per_axis` are host memory, read before the
/// call returns. Enqueued on `stream` (0: the default stream) with no
/// synchronisation; two passes or more go through device scratch of the
/// array's size, allocated on `stream`. GPU contexts only.
///
/// # Safety
/// `ctx` is a live GPU context; `shape` holds `ndim` values and a non-NULL
/// `per_axis` `ndim` structs; `input` and `output` are device pointers of its
/// GPU holding the array, alive until the stream's work completes; `stream`
/// is 0 or a live stream of that GPU.
type kp_gaussian_filter_device<T> = GaussianFilter<T, u64, u64>;

impl<T: Float> DeviceEntry for GaussianFilter<T, u64, u64> {
    type Op = CorrelateOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let shape = unsafe { self.array.shape() }?;
        let passes = unsafe { self.passes() }?;
        self.array.on_device(shape, passes)
    }
}
