//! C ABI of the Lomb-Scargle family: host-pointer and device-pointer entry
//! points, declared once each (the per-dtype functions are in
//! `entry_points.rs`).
use std::marker::PhantomData;

use super::args::{FreqArray, Grid, PeakArgs};
use super::phasefold::kp_peak_options;
use super::{kp_context, kp_status, or_default, value_boundary, DeviceEntry, Entry, RawError};
use crate::api::lombscargle::batch::{
    check_series_offsets, Batch, BatchDeviceBuffers, BatchGrid, LombScargleBatchOnDevice,
};
use crate::api::lombscargle::peaks::{LombScarglePeaksOnDevice, PeakBuffers};
use crate::api::lombscargle::{
    output_len, values_per_frequency, DeviceFreqs, LombScargleOnDevice, LsDeviceBuffers,
    UniformGrid,
};
use crate::api::Kernpack;
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
    fn to_options(self) -> Result<LombScargleOptions, RawError> {
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
) -> Result<LombScargleOptions, RawError> {
    unsafe { or_default(options, kp_lombscargle_options_default) }.to_options()
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

impl<P> From<FreqArray<P>> for Freqs<P> {
    fn from(a: FreqArray<P>) -> Self {
        Freqs::Array(a.freqs, a.nf)
    }
}

impl<P> From<Grid> for Freqs<P> {
    fn from(g: Grid) -> Self {
        Freqs::Uniform(UniformGrid::new(g.f0, g.df, g.nf))
    }
}

/// One series on host buffers, `F` its frequencies ([`FreqArray`] or
/// [`Grid`]): the C arguments of kp_lombscargle_{dtype} and
/// kp_lombscargle_uniform_{dtype}.
struct HostSeries<T, F> {
    t: *const T,
    y: *const T,
    weights: *const T,
    nx: usize,
    freqs: F,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
}

impl<T: Float, F: Into<Freqs<*const T>>> Entry for HostSeries<T, F> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let freqs: Freqs<*const T> = self.freqs.into();
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
                kp.lombscargle(&series, freqs, &opts)
            }
            Freqs::Uniform(grid) => kp.lombscargle_uniform(&series, &grid, &opts),
        }?;
        raw::write_periodogram(&result, out);
        Ok(())
    }
}

/// One series on device buffers, `F` its frequencies: the C arguments of
/// kp_lombscargle_device_{dtype} and kp_lombscargle_uniform_device_{dtype}.
struct DeviceSeries<T, F> {
    t: u64,
    y: u64,
    weights: u64,
    nx: usize,
    freqs: F,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    _dtype: PhantomData<T>,
}

impl<T: Float, F: Into<Freqs<u64>>> DeviceEntry for DeviceSeries<T, F> {
    type Op = LombScargleOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let opts = unsafe { options_from(self.options) }?;
        let buffers = LsDeviceBuffers {
            t: raw::device("t", self.t)?,
            y: raw::device("y", self.y)?,
            weights: (self.weights != 0).then_some(self.weights),
            out: raw::device("out", self.out)?,
        };
        let freqs = match self.freqs.into() {
            Freqs::Array(ptr, len) => DeviceFreqs::Array {
                ptr: raw::device("freqs", ptr)?,
                len,
            },
            Freqs::Uniform(grid) => DeviceFreqs::Uniform(grid),
        };
        raw::check_periodogram_len(self.out_len, 1, freqs.len(), &opts)?;
        let (nx, dtype) = (self.nx, PhantomData);
        #[rustfmt::skip]
        let op = LombScargleOnDevice { buffers, nx, freqs, opts, dtype };
        Ok(op)
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
type kp_lombscargle<T> = HostSeries<T, FreqArray<*const T>>;

/// As `kp_lombscargle_{dtype}`, on the uniform grid of angular frequencies
/// `f0 + k df`, `k = 0 .. nf-1` (f0 >= 0, df > 0 when nf > 1), in
/// {precision}: the recurrence kernel, much faster than an explicit frequency
/// array on the GPU.
///
/// # Safety
/// As `kp_lombscargle_{dtype}`.
type kp_lombscargle_uniform<T> = HostSeries<T, Grid>;

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
type kp_lombscargle_device<T> = DeviceSeries<T, FreqArray<u64>>;

/// As `kp_lombscargle_device_{dtype}`, on the uniform grid `f0 + k df`, in
/// {precision}.
///
/// # Safety
/// As `kp_lombscargle_device_{dtype}`.
type kp_lombscargle_uniform_device<T> = DeviceSeries<T, Grid>;

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
    nf: usize,
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
    unsafe fn view<'a>(&self) -> Result<HostBatch<'a, T>, RawError> {
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
    fn grid(&self, nf: usize) -> BatchGrid<'_> {
        raw::batch_grid(self.f0, self.df, nf)
    }

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
    /// The device operation (`out`: 0 for the peaks).
    fn op<T>(
        &self,
        opts: LombScargleOptions,
        out: u64,
    ) -> Result<LombScargleBatchOnDevice<T>, RawError> {
        let buffers = BatchDeviceBuffers {
            t: raw::device("t", self.t)?,
            y: raw::device("y", self.y)?,
            weights: (self.weights != 0).then_some(self.weights),
            offsets: raw::device("offsets", self.offsets)?,
            f0: raw::device("f0", self.f0)?,
            df: raw::device("df", self.df)?,
            per_series_grid: raw::per_series_grid(self.ngrids, self.nseries)?,
            out,
        };
        let (nseries, nf, dtype) = (self.nseries, self.nf, PhantomData);
        #[rustfmt::skip]
        let op = LombScargleBatchOnDevice { buffers, nseries, nf, opts, dtype };
        Ok(op)
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
struct kp_lombscargle_batch<T> {
    inputs: BatchInputs<*const T, *const i64, *const f64>,
    out: *mut T,
    out_len: usize,
}

impl<T: Float> Entry for kp_lombscargle_batch<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (nseries, nf, out_len) = (self.inputs.nseries, self.inputs.nf, self.out_len);
        let inputs = unsafe { self.inputs.view() }?;
        check_apart(&[Span::of("out", self.out, out_len)], &inputs.spans)?;
        let out = unsafe { raw::host_mut("out", self.out, out_len) }?;
        raw::check_periodogram_len(out_len, nseries, nf, &inputs.opts)?;
        // Computed in full before a single value is written to `out`.
        let grid = inputs.grid(nf);
        let result = kp.lombscargle_batch(&inputs.batch(), &grid, &inputs.opts)?;
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
struct kp_lombscargle_batch_device<T> {
    inputs: BatchInputs<u64, u64, u64>,
    out: u64,
    out_len: usize,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_lombscargle_batch_device<T> {
    type Op = LombScargleBatchOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let opts = unsafe { options_from(self.inputs.options) }?;
        let (nseries, nf) = (self.inputs.nseries, self.inputs.nf);
        raw::check_periodogram_len(self.out_len, nseries, nf, &opts)?;
        self.inputs.op(opts, raw::device("out", self.out)?)
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
struct kp_lombscargle_batch_peaks<T> {
    inputs: BatchInputs<*const T, *const i64, *const f64>,
    index: *mut i64,
    value: *mut f64,
}

impl<T: Float> Entry for kp_lombscargle_batch_peaks<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (nseries, nf) = (self.inputs.nseries, self.inputs.nf);
        let inputs = unsafe { self.inputs.view() }?;
        let outputs = [
            Span::of("index", self.index, nseries),
            Span::of("value", self.value, nseries),
        ];
        check_apart(&outputs, &inputs.spans)?;
        let index = unsafe { raw::host_mut("index", self.index, nseries) }?;
        let value = unsafe { raw::host_mut("value", self.value, nseries) }?;
        // Computed in full before a single value is written.
        let grid = inputs.grid(nf);
        let peaks = kp.lombscargle_batch_peaks(&inputs.batch(), &grid, &inputs.opts)?;
        raw::write_peaks(&peaks, index, value);
        Ok(())
    }
}

/// Each series' best `peaks.k` peaks, on the context's backend, in
/// {precision}, without keeping the periodograms (a batch of any size runs
/// in bounded memory): inputs as `kp_lombscargle_batch_{dtype}`, and
/// `peaks` (NULL: the defaults, one peak). A series' peaks are the
/// `peaks.k` highest distinct local maxima of its periodogram (as
/// `kp_lombscargle_batch_{dtype}` gives it; NaN is never one), best first,
/// each at least `peaks.separation` away from those before it in angular
/// frequency (the grid's unit). A maximum is the first of equal values, and
/// the best peak the first highest value, the one
/// `kp_lombscargle_batch_peaks_{dtype}` finds. Real periodograms only:
/// KP_NORMALIZE_AMPLITUDE is KP_ERROR_INVALID_ARGUMENT (its single highest
/// modulus is `kp_lombscargle_batch_peaks_{dtype}`'s). `index` and `value`
/// each get `nseries * peaks.k` values, series by series (series `s` from
/// `index + s * peaks.k`): each peak's index into the series' grid and the
/// periodogram there (widened to double); a series with fewer peaks gets
/// index -1 and value NaN after its last. Both untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values; `index`
/// and `value` apart from each other and from the inputs; `options` and
/// `peaks` NULL or one struct.
struct kp_lombscargle_batch_top_peaks<T> {
    inputs: BatchInputs<*const T, *const i64, *const f64>,
    peaks: PeakArgs,
}

impl<T: Float> Entry for kp_lombscargle_batch_top_peaks<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let (nseries, nf) = (self.inputs.nseries, self.inputs.nf);
        let inputs = unsafe { self.inputs.view() }?;
        let (peaks, len) = unsafe { self.peaks.check(nseries, &inputs.spans) }?;
        let out = unsafe { self.peaks.outputs(len) }?;
        // Found in full before a single index or value is written.
        let grid = inputs.grid(nf);
        let rows = kp.lombscargle_batch_top_peaks(&inputs.batch(), &grid, &inputs.opts, &peaks)?;
        out.write(&rows, peaks.k);
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
struct kp_lombscargle_batch_peaks_device<T> {
    inputs: BatchInputs<u64, u64, u64>,
    index: u64,
    value: u64,
    _dtype: PhantomData<T>,
}

impl<T: Float> DeviceEntry for kp_lombscargle_batch_peaks_device<T> {
    type Op = LombScarglePeaksOnDevice<T>;

    unsafe fn op(self) -> Result<Self::Op, RawError> {
        let opts = unsafe { options_from(self.inputs.options) }?;
        let batch = self.inputs.op(opts, 0)?;
        let peaks = PeakBuffers {
            index: raw::device("index", self.index)?,
            value: raw::device("value", self.value)?,
        };
        #[rustfmt::skip]
        let op = LombScarglePeaksOnDevice { batch, peaks, max_scratch_bytes: None };
        Ok(op)
    }
}
