//! C ABI of the Lomb-Scargle family: host-pointer and device-pointer entry
//! points, declared once each (the per-dtype functions are in
//! `entry_points.rs`).
use std::marker::PhantomData;

use super::{context, kp_context, kp_status, value_boundary, Entry, Failure};
use crate::api::lombscargle::batch::{
    check_series_offsets, Batch, BatchDeviceBuffers, LombScargleBatchOnDevice,
};
use crate::api::lombscargle::peaks::{LombScarglePeaksOnDevice, PeakBuffers};
use crate::api::lombscargle::{
    output_len, values_per_frequency, DeviceFreqs, LombScargleOnDevice, LsDeviceBuffers,
    UniformGrid,
};
use crate::error::Error;
use crate::float::Float;
use crate::raw::{self, check_apart, Span};
use crate::{LombScargleOptions, Normalize, Series};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// `normalize` value: power, (A^2) N / 4 (SciPy's default).
pub const KP_NORMALIZE_POWER: u32 = 0;
/// `normalize` value: power relative to the residuals of a constant model, in [0, 1].
pub const KP_NORMALIZE_NORMALIZE: u32 = 1;
/// `normalize` value: complex amplitude, written as interleaved (re, im) pairs.
pub const KP_NORMALIZE_AMPLITUDE: u32 = 2;

/// Options of `scipy.signal.lombscargle`. Start from
/// `kp_lombscargle_options_default()`; non-zero flags mean true.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_lombscargle_options {
    /// One of KP_NORMALIZE_*.
    pub normalize: u32,
    /// Fit an offset per frequency (recommended when y may have a mean).
    pub floating_mean: u32,
    /// Subtract mean(y) first (SciPy's legacy option).
    pub precenter: u32,
}

impl kp_lombscargle_options {
    fn to_options(self) -> Result<LombScargleOptions, Failure> {
        let normalize = match self.normalize {
            KP_NORMALIZE_POWER => Normalize::Power,
            KP_NORMALIZE_NORMALIZE => Normalize::Normalize,
            KP_NORMALIZE_AMPLITUDE => Normalize::Amplitude,
            other => return Err(Error::invalid(format!("unknown normalize value {other}")).into()),
        };
        Ok(LombScargleOptions {
            normalize,
            floating_mean: self.floating_mean != 0,
            precenter: self.precenter != 0,
        })
    }
}

/// Power mode, no floating mean, no precentering.
#[no_mangle]
pub extern "C" fn kp_lombscargle_options_default() -> kp_lombscargle_options {
    let defaults = || kp_lombscargle_options {
        normalize: KP_NORMALIZE_POWER,
        floating_mean: 0,
        precenter: 0,
    };
    value_boundary(defaults, defaults)
}

/// Values the output of `nf` frequencies holds: nf, or 2 nf for
/// KP_NORMALIZE_AMPLITUDE. NULL options mean the defaults. 0 for an invalid
/// mode, or when the count does not fit in a `size_t`.
///
/// # Safety
/// `options` is NULL or valid for reads.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_output_len(
    nf: usize,
    options: *const kp_lombscargle_options,
) -> usize {
    // A value, not a status: the thread's last error message is left alone.
    value_boundary(
        || 0,
        || {
            unsafe { options_from(options) }
                .ok()
                .and_then(|opts| nf.checked_mul(values_per_frequency(&opts)))
                .unwrap_or(0)
        },
    )
}

/// NULL means the defaults.
unsafe fn options_from(
    options: *const kp_lombscargle_options,
) -> Result<LombScargleOptions, Failure> {
    let options = unsafe { options.as_ref() }.copied();
    options
        .unwrap_or_else(|| kp_lombscargle_options_default())
        .to_options()
}

/// A call's frequencies, as the C caller gave them.
enum Freqs<P> {
    /// `nf` angular frequencies at `P` (a host pointer or a device address).
    Array(P, usize),
    Uniform(UniformGrid),
}

impl<P> Freqs<P> {
    fn len(&self) -> usize {
        match self {
            Freqs::Array(_, nf) => *nf,
            Freqs::Uniform(grid) => grid.nf,
        }
    }
}

/// One series on host buffers (either kind of frequencies).
struct HostSeries<T> {
    t: *const T,
    y: *const T,
    weights: *const T,
    nx: usize,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
}

impl<T: Float> HostSeries<T> {
    unsafe fn call(self, ctx: *const kp_context, freqs: Freqs<*const T>) -> Result<(), Failure> {
        let ctx = unsafe { context(ctx) }?;
        let opts = unsafe { options_from(self.options) }?;
        // A wrong length first: buffers sized by it may well touch others.
        raw::check_periodogram_len(self.out_len, 1, freqs.len(), &opts)?;
        let (nx, out_len) = (self.nx, self.out_len);
        let freq_span = match freqs {
            Freqs::Array(ptr, nf) => Span::of("freqs", ptr, nf),
            Freqs::Uniform(_) => Span::at::<T>("freqs", 0, 0),
        };
        check_apart(
            &[Span::of("out", self.out, out_len)],
            &[
                Span::of("t", self.t, nx),
                Span::of("y", self.y, nx),
                Span::of("weights", self.weights, nx),
                freq_span,
            ],
        )?;
        let series = Series {
            t: unsafe { raw::host("t", self.t, nx) }?,
            y: unsafe { raw::host("y", self.y, nx) }?,
            weights: unsafe { raw::optional_host("weights", self.weights, nx) }?,
        };
        let out = unsafe { raw::host_mut("out", self.out, out_len) }?;
        // Computed in full before a single value is written to `out`.
        let result = match freqs {
            Freqs::Array(ptr, nf) => {
                let freqs = unsafe { raw::host("freqs", ptr, nf) }?;
                ctx.kernpack.lombscargle(&series, freqs, &opts)
            }
            Freqs::Uniform(grid) => ctx.kernpack.lombscargle_uniform(&series, &grid, &opts),
        }?;
        raw::write_periodogram(&result, out);
        Ok(())
    }
}

/// One series on device buffers (either kind of frequencies).
struct DeviceSeries {
    t: u64,
    y: u64,
    weights: u64,
    nx: usize,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    stream: u64,
}

impl DeviceSeries {
    unsafe fn call<T: Float>(
        self,
        ctx: *const kp_context,
        freqs: Freqs<u64>,
    ) -> Result<(), Failure> {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(self.options) }?;
        let buffers = LsDeviceBuffers {
            t: raw::device("t", self.t)?,
            y: raw::device("y", self.y)?,
            weights: (self.weights != 0).then_some(self.weights),
            out: raw::device("out", self.out)?,
        };
        let freqs = match freqs {
            Freqs::Array(ptr, len) => DeviceFreqs::Array {
                ptr: raw::device("freqs", ptr)?,
                len,
            },
            Freqs::Uniform(grid) => DeviceFreqs::Uniform(grid),
        };
        raw::check_periodogram_len(self.out_len, 1, freqs.len(), &opts)?;
        let stream = unsafe { ctx.stream(self.stream) }?;
        let (nx, dtype) = (self.nx, PhantomData::<T>);
        #[rustfmt::skip]
        let op = LombScargleOnDevice { buffers, nx, freqs, opts, dtype };
        unsafe { gpu.enqueue(&stream, &op) }?;
        Ok(())
    }
}

/// Lomb-Scargle periodogram of host arrays in {precision}.
///
/// `t`, `y`: `nx` samples; `weights`: `nx` non-negative weights or NULL (all 1);
/// `freqs`: `nf` angular frequencies (rad per time unit, >= 0); `options`: NULL
/// for the defaults; `out`: `out_len` values, which must equal
/// `kp_lombscargle_output_len(nf, options)`. Runs on the context's backend and
/// returns when the result is in `out`, which is untouched on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
pub(crate) struct kp_lombscargle<T> {
    ctx: *const kp_context,
    t: *const T,
    y: *const T,
    weights: *const T,
    nx: usize,
    freqs: *const T,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
}

impl<T: Float> Entry for kp_lombscargle<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle { ctx, t, y, weights, nx, freqs, nf, options, out, out_len } = self;
        let series = HostSeries {
            t,
            y,
            weights,
            nx,
            options,
            out,
            out_len,
        };
        unsafe { series.call(ctx, Freqs::Array(freqs, nf)) }
    }
}

/// As `kp_lombscargle_{dtype}`, on the uniform grid of angular frequencies
/// `f0 + k df`, `k = 0 .. nf-1` (f0 >= 0, df > 0 when nf > 1), in
/// {precision}: the recurrence kernel, much faster than an explicit frequency
/// array on the GPU.
///
/// # Safety
/// As `kp_lombscargle_{dtype}`.
pub(crate) struct kp_lombscargle_uniform<T> {
    ctx: *const kp_context,
    t: *const T,
    y: *const T,
    weights: *const T,
    nx: usize,
    f0: f64,
    df: f64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
}

impl<T: Float> Entry for kp_lombscargle_uniform<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_uniform { ctx, t, y, weights, nx, f0, df, nf, options, out, out_len } = self;
        let series = HostSeries {
            t,
            y,
            weights,
            nx,
            options,
            out,
            out_len,
        };
        unsafe { series.call(ctx, Freqs::Uniform(UniformGrid::new(f0, df, nf))) }
    }
}

/// Lomb-Scargle periodogram of device arrays (CUdeviceptr values, e.g. from
/// CuPy's `.data.ptr` or PyTorch's `.data_ptr()`), in {precision},
/// enqueued on `stream` (0: the default stream) with no synchronisation: wait
/// on the stream before reading `out`. `weights` may be 0 (all 1). `out` holds
/// `out_len` values, which must equal `kp_lombscargle_output_len(nf, options)`.
/// Needs a GPU context.
/// Only shapes and pointers are checked: device data cannot be inspected
/// without a synchronisation, so NaN/Inf or negative weights give NaN or
/// meaningless values rather than an error.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
pub(crate) struct kp_lombscargle_device<T> {
    ctx: *const kp_context,
    t: u64,
    y: u64,
    weights: u64,
    nx: usize,
    freqs: u64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    stream: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> Entry for kp_lombscargle_device<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_device { ctx, t, y, weights, nx, freqs, nf, options, out, out_len, stream, .. } = self;
        let series = DeviceSeries {
            t,
            y,
            weights,
            nx,
            options,
            out,
            out_len,
            stream,
        };
        unsafe { series.call::<T>(ctx, Freqs::Array(freqs, nf)) }
    }
}

/// As `kp_lombscargle_device_{dtype}`, on the uniform grid `f0 + k df`, in
/// {precision}.
///
/// # Safety
/// As `kp_lombscargle_device_{dtype}`.
pub(crate) struct kp_lombscargle_uniform_device<T> {
    ctx: *const kp_context,
    t: u64,
    y: u64,
    weights: u64,
    nx: usize,
    f0: f64,
    df: f64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    stream: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> Entry for kp_lombscargle_uniform_device<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_uniform_device { ctx, t, y, weights, nx, f0, df, nf, options, out, out_len, stream, .. } = self;
        let series = DeviceSeries {
            t,
            y,
            weights,
            nx,
            options,
            out,
            out_len,
            stream,
        };
        unsafe { series.call::<T>(ctx, Freqs::Uniform(UniformGrid::new(f0, df, nf))) }
    }
}

/// The inputs of a batched call, as the entry points give them: host
/// pointers to samples `S`, offsets `O` and grids `G`, or device addresses.
struct BatchInputs<S, O, G> {
    t: S,
    y: S,
    weights: S,
    offsets: O,
    nseries: usize,
    f0: G,
    df: G,
    ngrids: usize,
    options: *const kp_lombscargle_options,
}

/// The host inputs of a batched call as checked views: what [`Batch`] and
/// the batch's grids borrow.
struct HostBatch<'a, T> {
    /// The caller's offsets, as indices.
    offsets: Vec<usize>,
    /// The caller's buffers, for the overlap check.
    spans: [Span<'static>; 6],
    t: &'a [T],
    y: &'a [T],
    weights: Option<&'a [T]>,
    f0: &'a [f64],
    df: &'a [f64],
    opts: LombScargleOptions,
}

impl<T: Float> BatchInputs<*const T, *const i64, *const f64> {
    /// # Safety
    /// Every pointer valid for its stated count (the samples' count is the
    /// last offset).
    unsafe fn view<'a>(self) -> Result<HostBatch<'a, T>, Failure> {
        let opts = unsafe { options_from(self.options) }?;
        let (given, offsets) = unsafe { raw::host_offsets("offsets", self.offsets, self.nseries) }?;
        let nx = *offsets.last().unwrap_or(&0);
        // The API's check, before t, y and weights are sized by the last
        // offset (and checked for overlap by that size).
        check_series_offsets(&offsets, nx)?;
        let ngrids = self.ngrids;
        Ok(HostBatch {
            spans: [
                Span::of("offsets", given.as_ptr(), given.len()),
                Span::of("t", self.t, nx),
                Span::of("y", self.y, nx),
                Span::of("weights", self.weights, nx),
                Span::of("f0", self.f0, ngrids),
                Span::of("df", self.df, ngrids),
            ],
            t: unsafe { raw::host("t", self.t, nx) }?,
            y: unsafe { raw::host("y", self.y, nx) }?,
            weights: unsafe { raw::optional_host("weights", self.weights, nx) }?,
            offsets,
            f0: unsafe { raw::host("f0", self.f0, ngrids) }?,
            df: unsafe { raw::host("df", self.df, ngrids) }?,
            opts,
        })
    }
}

impl<T> HostBatch<'_, T> {
    fn batch(&self) -> Batch<'_, T> {
        Batch {
            t: self.t,
            y: self.y,
            weights: self.weights,
            offsets: &self.offsets,
        }
    }
}

impl BatchInputs<u64, u64, u64> {
    /// The device buffers (`out`: 0 for the peaks).
    fn buffers(&self, out: u64) -> Result<BatchDeviceBuffers, Failure> {
        Ok(BatchDeviceBuffers {
            t: raw::device("t", self.t)?,
            y: raw::device("y", self.y)?,
            weights: (self.weights != 0).then_some(self.weights),
            offsets: raw::device("offsets", self.offsets)?,
            f0: raw::device("f0", self.f0)?,
            df: raw::device("df", self.df)?,
            per_series_grid: raw::per_series_grid(self.ngrids, self.nseries)?,
            out,
        })
    }
}

/// Periodograms of `nseries` series in one call, on the context's backend,
/// in {precision}. Series `s` is samples `offsets[s] .. offsets[s+1]-1` of
/// the concatenated `t`, `y` and `weights` (NULL: all 1); `offsets` has
/// `nseries + 1` entries, from 0 to the total sample count, increasing
/// (every series has at least one sample: an empty one is
/// KP_ERROR_INVALID_ARGUMENT naming it). Its grid is `f0[s] + k df[s]`
/// (angular, `k < nf`), or `f0[0] + k df[0]` for all when `ngrids` is 1.
/// `out` receives `nseries` periodograms one after another:
/// `out_len = nseries * kp_lombscargle_output_len(nf, options)`; untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
pub(crate) struct kp_lombscargle_batch<T> {
    ctx: *const kp_context,
    t: *const T,
    y: *const T,
    weights: *const T,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
}

impl<T: Float> Entry for kp_lombscargle_batch<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_batch { ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len } = self;
        let ctx = unsafe { context(ctx) }?;
        #[rustfmt::skip]
        let inputs = unsafe { BatchInputs { t, y, weights, offsets, nseries, f0, df, ngrids, options }.view() }?;
        check_apart(&[Span::of("out", out, out_len)], &inputs.spans)?;
        let out = unsafe { raw::host_mut("out", out, out_len) }?;
        raw::check_periodogram_len(out_len, nseries, nf, &inputs.opts)?;
        // Computed in full before a single value is written to `out`.
        let grid = raw::batch_grid(inputs.f0, inputs.df, nf);
        let result = ctx
            .kernpack
            .lombscargle_batch(&inputs.batch(), &grid, &inputs.opts)?;
        raw::write_periodograms(&result, out, output_len(nf, &inputs.opts));
        Ok(())
    }
}

/// As `kp_lombscargle_batch_{dtype}`, on device arrays (`offsets`: `int64_t`,
/// `f0`/`df`: `double`, all in device memory), in {precision}, enqueued on
/// `stream` with no synchronisation. Counts and pointers are checked here;
/// the device offsets by the kernels: a series whose offsets decrease or
/// pass the end of the samples' allocations reads nothing, and its
/// periodogram is NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
pub(crate) struct kp_lombscargle_batch_device<T> {
    ctx: *const kp_context,
    t: u64,
    y: u64,
    weights: u64,
    offsets: u64,
    nseries: usize,
    f0: u64,
    df: u64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    stream: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> Entry for kp_lombscargle_batch_device<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_batch_device { ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len, stream, .. } = self;
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(options) }?;
        raw::check_periodogram_len(out_len, nseries, nf, &opts)?;
        let stream = unsafe { ctx.stream(stream) }?;
        let out = raw::device("out", out)?;
        #[rustfmt::skip]
        let buffers = BatchInputs { t, y, weights, offsets, nseries, f0, df, ngrids, options }.buffers(out)?;
        let dtype = PhantomData::<T>;
        #[rustfmt::skip]
        let op = LombScargleBatchOnDevice { buffers, nseries, nf, opts, dtype };
        unsafe { gpu.enqueue(&stream, &op) }?;
        Ok(())
    }
}

/// The highest peak of each of `nseries` periodograms, on the context's
/// backend, in {precision}, without keeping the periodograms (a batch of any
/// size runs in bounded memory): inputs as `kp_lombscargle_batch_{dtype}`.
/// `index[s]` receives the index in series `s`'s grid of its highest non-NaN
/// value (the modulus for KP_NORMALIZE_AMPLITUDE; the first of equal ones),
/// -1 when every value is NaN; `value[s]` that value (NaN then). Each holds
/// `nseries` values; both untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
pub(crate) struct kp_lombscargle_batch_peaks<T> {
    ctx: *const kp_context,
    t: *const T,
    y: *const T,
    weights: *const T,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    index: *mut i64,
    value: *mut f64,
}

impl<T: Float> Entry for kp_lombscargle_batch_peaks<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_batch_peaks { ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value } = self;
        let ctx = unsafe { context(ctx) }?;
        #[rustfmt::skip]
        let inputs = unsafe { BatchInputs { t, y, weights, offsets, nseries, f0, df, ngrids, options }.view() }?;
        let outputs = [
            Span::of("index", index, nseries),
            Span::of("value", value, nseries),
        ];
        check_apart(&outputs, &inputs.spans)?;
        let index = unsafe { raw::host_mut("index", index, nseries) }?;
        let value = unsafe { raw::host_mut("value", value, nseries) }?;
        // Computed in full before a single value is written.
        let grid = raw::batch_grid(inputs.f0, inputs.df, nf);
        let peaks = ctx
            .kernpack
            .lombscargle_batch_peaks(&inputs.batch(), &grid, &inputs.opts)?;
        raw::write_peaks(&peaks, index, value);
        Ok(())
    }
}

/// As `kp_lombscargle_batch_peaks_{dtype}`, on device arrays (inputs as
/// `kp_lombscargle_batch_device_{dtype}`; `index`: `nseries` `int64_t`,
/// `value`: `nseries` `double`, in device memory, apart from each other and
/// the inputs), in {precision}, enqueued on `stream` with no
/// synchronisation. The periodograms are computed in chunks of series into
/// scratch of at most 256 MiB. A series whose device offsets decrease or
/// pass the end of the samples' allocations reads nothing: index -1, value
/// NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
pub(crate) struct kp_lombscargle_batch_peaks_device<T> {
    ctx: *const kp_context,
    t: u64,
    y: u64,
    weights: u64,
    offsets: u64,
    nseries: usize,
    f0: u64,
    df: u64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    index: u64,
    value: u64,
    stream: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> Entry for kp_lombscargle_batch_peaks_device<T> {
    unsafe fn call(self) -> Result<(), Failure> {
        #[rustfmt::skip]
        let kp_lombscargle_batch_peaks_device { ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value, stream, .. } = self;
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(options) }?;
        let stream = unsafe { ctx.stream(stream) }?;
        #[rustfmt::skip]
        let buffers = BatchInputs { t, y, weights, offsets, nseries, f0, df, ngrids, options }.buffers(0)?;
        let peaks = PeakBuffers {
            index: raw::device("index", index)?,
            value: raw::device("value", value)?,
        };
        let dtype = PhantomData::<T>;
        #[rustfmt::skip]
        let batch = LombScargleBatchOnDevice { buffers, nseries, nf, opts, dtype };
        let op = LombScarglePeaksOnDevice {
            batch,
            peaks,
            max_scratch_bytes: None,
        };
        unsafe { gpu.enqueue(&stream, &op) }?;
        Ok(())
    }
}
