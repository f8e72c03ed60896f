//! C ABI of the Lomb-Scargle family: host-pointer and device-pointer entry
//! points per dtype, thin wrappers over one generic body each.
use super::{
    boundary, check_apart, context, count_plus_one, device_address, host_slice, host_slice_mut,
    kp_context, kp_status, offsets_from, optional_host_slice, value_boundary, Failure, Span,
};
use crate::api::lombscargle::batch::{check_series_offsets, Batch, BatchDeviceBuffers, BatchGrid};
use crate::api::lombscargle::peaks::PeakBuffers;
use crate::api::lombscargle::{
    output_len, values_per_frequency, DeviceFreqs, LsDeviceBuffers, UniformGrid,
};
use crate::error::Error;
use crate::float::Float;
use crate::{LombScargleOptions, Normalize, Periodogram, Series};

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

/// `out_len` must be what `nf` frequencies produce (the C side's length of `out`).
fn check_out_len(out_len: usize, nf: usize, opts: &LombScargleOptions) -> Result<(), Failure> {
    let want = nf
        .checked_mul(values_per_frequency(opts))
        .ok_or_else(|| Failure::from(Error::invalid(format!("nf = {nf} is impossible"))))?;
    if out_len != want {
        return Err(
            Error::invalid(format!("out_len is {out_len}, {want} values are produced")).into(),
        );
    }
    Ok(())
}

/// A periodogram into the caller's `out` (interleaved re, im for amplitudes),
/// whose length was checked against the options.
fn write_periodogram<T: Float>(result: Periodogram<T>, out: &mut [T]) {
    match result {
        Periodogram::Real(v) => out.copy_from_slice(&v),
        Periodogram::Complex(v) => {
            for (pair, c) in out.chunks_exact_mut(2).zip(v) {
                pair[0] = c.re;
                pair[1] = c.im;
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
unsafe fn lombscargle_host<T: Float>(
    ctx: *const kp_context,
    t: *const T,
    y: *const T,
    weights: *const T,
    nx: usize,
    freqs: Freqs<*const T>,
    options: *const kp_lombscargle_options,
    out: *mut T,
    out_len: usize,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let opts = unsafe { options_from(options) }?;
        // A wrong length first: buffers sized by it may well touch others.
        check_out_len(out_len, freqs.len(), &opts)?;
        let freq_span = match freqs {
            Freqs::Array(ptr, nf) => Span::of("freqs", ptr, nf),
            Freqs::Uniform(_) => Span::of("freqs", std::ptr::null::<T>(), 0),
        };
        check_apart(
            &[Span::of("out", out, out_len)],
            &[
                Span::of("t", t, nx),
                Span::of("y", y, nx),
                Span::of("weights", weights, nx),
                freq_span,
            ],
        )?;
        let series = Series {
            t: unsafe { host_slice("t", t, nx) }?,
            y: unsafe { host_slice("y", y, nx) }?,
            weights: unsafe { optional_host_slice("weights", weights, nx) }?,
        };
        let out = unsafe { host_slice_mut("out", out, out_len) }?;
        // Computed in full before a single value is written to `out`.
        let result = match freqs {
            Freqs::Array(ptr, nf) => {
                ctx.kernpack
                    .lombscargle(&series, unsafe { host_slice("freqs", ptr, nf) }?, &opts)
            }
            Freqs::Uniform(grid) => ctx.kernpack.lombscargle_uniform(&series, &grid, &opts),
        }?;
        write_periodogram(result, out);
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn lombscargle_device<T: Float>(
    ctx: *const kp_context,
    t: u64,
    y: u64,
    weights: u64,
    nx: usize,
    freqs: Freqs<u64>,
    options: *const kp_lombscargle_options,
    out: u64,
    out_len: usize,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(options) }?;
        let buffers = LsDeviceBuffers {
            t: device_address("t", t)?,
            y: device_address("y", y)?,
            weights: (weights != 0).then_some(weights),
            out: device_address("out", out)?,
        };
        let freqs = match freqs {
            Freqs::Array(ptr, len) => DeviceFreqs::Array {
                ptr: device_address("freqs", ptr)?,
                len,
            },
            Freqs::Uniform(grid) => DeviceFreqs::Uniform(grid),
        };
        check_out_len(out_len, freqs.len(), &opts)?;
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.lombscargle_raw::<T>(&stream, &buffers, nx, freqs, &opts) }?;
        Ok(())
    })
}

/// Lomb-Scargle periodogram of host arrays in single precision.
///
/// `t`, `y`: `nx` samples; `weights`: `nx` non-negative weights or NULL (all 1);
/// `freqs`: `nf` angular frequencies (rad per time unit, >= 0); `options`: NULL
/// for the defaults; `out`: `out_len` values, which must equal
/// `kp_lombscargle_output_len(nf, options)`. Runs on the context's backend and
/// returns when the result is in `out`, which is untouched on failure.
///
/// # Safety
/// Every non-NULL pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_f32(
    ctx: *const kp_context,
    t: *const f32,
    y: *const f32,
    weights: *const f32,
    nx: usize,
    freqs: *const f32,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f32,
    out_len: usize,
) -> kp_status {
    unsafe {
        lombscargle_host(
            ctx,
            t,
            y,
            weights,
            nx,
            Freqs::Array(freqs, nf),
            options,
            out,
            out_len,
        )
    }
}

/// As `kp_lombscargle_f32`, in double precision.
///
/// # Safety
/// As `kp_lombscargle_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_f64(
    ctx: *const kp_context,
    t: *const f64,
    y: *const f64,
    weights: *const f64,
    nx: usize,
    freqs: *const f64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f64,
    out_len: usize,
) -> kp_status {
    unsafe {
        lombscargle_host(
            ctx,
            t,
            y,
            weights,
            nx,
            Freqs::Array(freqs, nf),
            options,
            out,
            out_len,
        )
    }
}

/// Lomb-Scargle periodogram of device arrays (CUdeviceptr values, e.g. from
/// CuPy's `.data.ptr` or PyTorch's `.data_ptr()`), in single precision,
/// enqueued on `stream` (0: the default stream) with no synchronisation: wait
/// on the stream before reading `out`. `weights` may be 0 (all 1). `out` holds
/// `out_len` floats, which must equal `kp_lombscargle_output_len(nf, options)`.
/// Needs a GPU context.
/// Only shapes and pointers are checked: device data cannot be inspected
/// without a synchronisation, so NaN/Inf or negative weights give NaN or
/// meaningless values rather than an error.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes; `stream` 0 or a CUstream of the
/// GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_device_f32(
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
) -> kp_status {
    unsafe {
        lombscargle_device::<f32>(
            ctx,
            t,
            y,
            weights,
            nx,
            Freqs::Array(freqs, nf),
            options,
            out,
            out_len,
            stream,
        )
    }
}

/// As `kp_lombscargle_device_f32`, in double precision.
///
/// # Safety
/// As `kp_lombscargle_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_device_f64(
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
) -> kp_status {
    unsafe {
        lombscargle_device::<f64>(
            ctx,
            t,
            y,
            weights,
            nx,
            Freqs::Array(freqs, nf),
            options,
            out,
            out_len,
            stream,
        )
    }
}

/// As `kp_lombscargle_f32`, on the uniform grid of angular frequencies
/// `f0 + k df`, `k = 0 .. nf-1` (f0 >= 0, df > 0 when nf > 1): the recurrence kernel, much
/// faster than an explicit frequency array on the GPU.
///
/// # Safety
/// As `kp_lombscargle_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_uniform_f32(
    ctx: *const kp_context,
    t: *const f32,
    y: *const f32,
    weights: *const f32,
    nx: usize,
    f0: f64,
    df: f64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f32,
    out_len: usize,
) -> kp_status {
    let grid = Freqs::Uniform(UniformGrid::new(f0, df, nf));
    unsafe { lombscargle_host(ctx, t, y, weights, nx, grid, options, out, out_len) }
}

/// As `kp_lombscargle_device_f32`, on the uniform grid `f0 + k df`.
///
/// # Safety
/// As `kp_lombscargle_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_uniform_device_f32(
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
) -> kp_status {
    let grid = Freqs::Uniform(UniformGrid::new(f0, df, nf));
    unsafe {
        lombscargle_device::<f32>(ctx, t, y, weights, nx, grid, options, out, out_len, stream)
    }
}

/// As `kp_lombscargle_f64`, on the uniform grid of angular frequencies
/// `f0 + k df`, `k = 0 .. nf-1` (f0 >= 0, df > 0 when nf > 1): the recurrence kernel, much
/// faster than an explicit frequency array on the GPU.
///
/// # Safety
/// As `kp_lombscargle_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_uniform_f64(
    ctx: *const kp_context,
    t: *const f64,
    y: *const f64,
    weights: *const f64,
    nx: usize,
    f0: f64,
    df: f64,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f64,
    out_len: usize,
) -> kp_status {
    let grid = Freqs::Uniform(UniformGrid::new(f0, df, nf));
    unsafe { lombscargle_host(ctx, t, y, weights, nx, grid, options, out, out_len) }
}

/// As `kp_lombscargle_device_f64`, on the uniform grid `f0 + k df`.
///
/// # Safety
/// As `kp_lombscargle_device_f64`.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_uniform_device_f64(
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
) -> kp_status {
    let grid = Freqs::Uniform(UniformGrid::new(f0, df, nf));
    unsafe {
        lombscargle_device::<f64>(ctx, t, y, weights, nx, grid, options, out, out_len, stream)
    }
}

/// The host inputs of a batched call, checked and converted: what
/// [`Batch`] and [`BatchGrid`] borrow.
struct HostBatch<'a, T> {
    offsets: Vec<usize>,
    /// The caller's offsets (copied into `offsets`), for the overlap check.
    offsets_in: &'a [i64],
    t: &'a [T],
    y: &'a [T],
    weights: Option<&'a [T]>,
    f0: &'a [f64],
    df: &'a [f64],
    nf: usize,
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
    /// The caller's buffers this batch reads.
    fn spans(&self) -> [Span<'static>; 6] {
        let of = |name, s: &[T]| Span::of(name, s.as_ptr(), s.len());
        [
            Span::of("offsets", self.offsets_in.as_ptr(), self.offsets_in.len()),
            of("t", self.t),
            of("y", self.y),
            self.weights
                .map_or(Span::of("weights", std::ptr::null::<T>(), 0), |w| {
                    of("weights", w)
                }),
            Span::of("f0", self.f0.as_ptr(), self.f0.len()),
            Span::of("df", self.df.as_ptr(), self.df.len()),
        ]
    }
    fn grids(&self) -> BatchGrid<'_> {
        match self.f0.len() {
            1 => BatchGrid::Shared(UniformGrid::new(self.f0[0], self.df[0], self.nf)),
            _ => BatchGrid::PerSeries {
                f0: self.f0,
                df: self.df,
                nf: self.nf,
            },
        }
    }
}

/// # Safety
/// As the host batch entry points: every pointer valid for its stated count
/// (the samples' count is the last offset).
#[allow(clippy::too_many_arguments)]
unsafe fn host_batch<'a, T>(
    t: *const T,
    y: *const T,
    weights: *const T,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
) -> Result<HostBatch<'a, T>, Failure> {
    let offsets_in = unsafe { host_slice("offsets", offsets, count_plus_one(nseries)?) }?;
    let offsets = offsets_from(offsets_in)?;
    let nx = *offsets.last().unwrap_or(&0);
    // Before t, y and weights are sized by the last offset (and checked for
    // overlap by that size).
    check_series_offsets(&offsets, nx)?;
    Ok(HostBatch {
        t: unsafe { host_slice("t", t, nx) }?,
        y: unsafe { host_slice("y", y, nx) }?,
        weights: unsafe { optional_host_slice("weights", weights, nx) }?,
        offsets,
        offsets_in,
        f0: unsafe { host_slice("f0", f0, ngrids) }?,
        df: unsafe { host_slice("df", df, ngrids) }?,
        nf,
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batch_host<T: Float>(
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
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let opts = unsafe { options_from(options) }?;
        let inputs = unsafe { host_batch(t, y, weights, offsets, nseries, f0, df, ngrids, nf) }?;
        check_apart(&[Span::of("out", out, out_len)], &inputs.spans())?;
        let out = unsafe { host_slice_mut("out", out, out_len) }?;
        let total = nf
            .checked_mul(nseries)
            .ok_or_else(|| Failure::from(Error::invalid("nf * nseries overflows")))?;
        check_out_len(out_len, total, &opts)?;
        // Computed in full before a single value is written to `out`.
        let result = ctx
            .kernpack
            .lombscargle_batch(&inputs.batch(), &inputs.grids(), &opts)?;
        let per_series = output_len(nf, &opts);
        for (slot, periodogram) in out.chunks_exact_mut(per_series).zip(result) {
            write_periodogram(periodogram, slot);
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batch_peaks_host<T: Float>(
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
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let opts = unsafe { options_from(options) }?;
        let inputs = unsafe { host_batch(t, y, weights, offsets, nseries, f0, df, ngrids, nf) }?;
        check_apart(
            &[
                Span::of("index", index, nseries),
                Span::of("value", value, nseries),
            ],
            &inputs.spans(),
        )?;
        let index = unsafe { host_slice_mut("index", index, nseries) }?;
        let value = unsafe { host_slice_mut("value", value, nseries) }?;
        // Computed in full before a single value is written.
        let peaks =
            ctx.kernpack
                .lombscargle_batch_peaks(&inputs.batch(), &inputs.grids(), &opts)?;
        for ((i, v), peak) in index.iter_mut().zip(value.iter_mut()).zip(peaks) {
            (*i, *v) = peak.map_or((-1, f64::NAN), |p| (p.index as i64, p.value));
        }
        Ok(())
    })
}

/// The device inputs of a batched call (`out`: 0 for the peaks).
#[allow(clippy::too_many_arguments)]
fn device_batch(
    t: u64,
    y: u64,
    weights: u64,
    offsets: u64,
    nseries: usize,
    f0: u64,
    df: u64,
    ngrids: usize,
    out: u64,
) -> Result<BatchDeviceBuffers, Failure> {
    Ok(BatchDeviceBuffers {
        t: device_address("t", t)?,
        y: device_address("y", y)?,
        weights: (weights != 0).then_some(weights),
        offsets: device_address("offsets", offsets)?,
        f0: device_address("f0", f0)?,
        df: device_address("df", df)?,
        // The device entry names grids by a flag: one shared, or one per series.
        per_series_grid: match ngrids {
            1 => false,
            n if n == nseries => true,
            n => {
                return Err(Error::invalid(format!(
                    "ngrids is {n}: 1 (shared) or nseries ({nseries})"
                ))
                .into())
            }
        },
        out,
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batch_device<T: Float>(
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
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(options) }?;
        let total = nf
            .checked_mul(nseries)
            .ok_or_else(|| Failure::from(Error::invalid("nf * nseries overflows")))?;
        check_out_len(out_len, total, &opts)?;
        let stream = unsafe { ctx.stream(stream) }?;
        let out = device_address("out", out)?;
        let buffers = device_batch(t, y, weights, offsets, nseries, f0, df, ngrids, out)?;
        unsafe { gpu.lombscargle_batch_raw::<T>(&stream, &buffers, nseries, nf, &opts) }?;
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batch_peaks_device<T: Float>(
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
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        let opts = unsafe { options_from(options) }?;
        let stream = unsafe { ctx.stream(stream) }?;
        let buffers = device_batch(t, y, weights, offsets, nseries, f0, df, ngrids, 0)?;
        let peaks = PeakBuffers {
            index: device_address("index", index)?,
            value: device_address("value", value)?,
        };
        unsafe {
            gpu.lombscargle_batch_peaks_raw::<T>(
                &stream, &buffers, nseries, nf, &opts, &peaks, None,
            )
        }?;
        Ok(())
    })
}

/// Periodograms of `nseries` series in one call, on the context's backend.
/// Series `s` is samples `offsets[s] .. offsets[s+1]-1` of the concatenated
/// `t`, `y` and `weights` (NULL: all 1); `offsets` has `nseries + 1`
/// entries, from 0 to the total sample count, increasing (every series has
/// at least one sample: an empty one is KP_ERROR_INVALID_ARGUMENT naming it).
/// Its grid is `f0[s] + k df[s]`
/// (angular, `k < nf`), or `f0[0] + k df[0]` for all when `ngrids` is 1.
/// `out` receives `nseries` periodograms one after another:
/// `out_len = nseries * kp_lombscargle_output_len(nf, options)`; untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_f32(
    ctx: *const kp_context,
    t: *const f32,
    y: *const f32,
    weights: *const f32,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f32,
    out_len: usize,
) -> kp_status {
    unsafe {
        batch_host(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len,
        )
    }
}

/// As `kp_lombscargle_batch_f32`, on device arrays (`offsets`: `int64_t`,
/// `f0`/`df`: `double`, all in device memory), enqueued on `stream` with no
/// synchronisation. Counts and pointers are checked here; the device offsets
/// by the kernels: a series whose offsets decrease or pass the end of the
/// samples' allocations reads nothing, and its periodogram is NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_device_f32(
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
) -> kp_status {
    unsafe {
        batch_device::<f32>(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len, stream,
        )
    }
}

/// Periodograms of `nseries` series in one call, on the context's backend.
/// Series `s` is samples `offsets[s] .. offsets[s+1]-1` of the concatenated
/// `t`, `y` and `weights` (NULL: all 1); `offsets` has `nseries + 1`
/// entries, from 0 to the total sample count, increasing (every series has
/// at least one sample: an empty one is KP_ERROR_INVALID_ARGUMENT naming it).
/// Its grid is `f0[s] + k df[s]`
/// (angular, `k < nf`), or `f0[0] + k df[0]` for all when `ngrids` is 1.
/// `out` receives `nseries` periodograms one after another:
/// `out_len = nseries * kp_lombscargle_output_len(nf, options)`; untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_f64(
    ctx: *const kp_context,
    t: *const f64,
    y: *const f64,
    weights: *const f64,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    out: *mut f64,
    out_len: usize,
) -> kp_status {
    unsafe {
        batch_host(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len,
        )
    }
}

/// As `kp_lombscargle_batch_f64`, on device arrays (`offsets`: `int64_t`,
/// `f0`/`df`: `double`, all in device memory), enqueued on `stream` with no
/// synchronisation. Counts and pointers are checked here; the device offsets
/// by the kernels: a series whose offsets decrease or pass the end of the
/// samples' allocations reads nothing, and its periodogram is NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_device_f64(
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
) -> kp_status {
    unsafe {
        batch_device::<f64>(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, out, out_len, stream,
        )
    }
}

/// The highest peak of each of `nseries` periodograms, on the context's
/// backend, without keeping the periodograms (a batch of any size runs in
/// bounded memory): inputs as `kp_lombscargle_batch_f32`. `index[s]`
/// receives the index in series `s`'s grid of its highest non-NaN value (the
/// modulus for KP_NORMALIZE_AMPLITUDE; the first of equal ones), -1 when
/// every value is NaN; `value[s]` that value (NaN then). Each holds
/// `nseries` values; both untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_peaks_f32(
    ctx: *const kp_context,
    t: *const f32,
    y: *const f32,
    weights: *const f32,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    index: *mut i64,
    value: *mut f64,
) -> kp_status {
    unsafe {
        batch_peaks_host(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value,
        )
    }
}

/// As `kp_lombscargle_batch_peaks_f32`, on device arrays (inputs as
/// `kp_lombscargle_batch_device_f32`; `index`: `nseries` `int64_t`, `value`:
/// `nseries` `double`, in device memory, apart from each other and the
/// inputs), enqueued on `stream` with no synchronisation. The periodograms
/// are computed in chunks of series into scratch of at most 256 MiB. A
/// series whose device offsets decrease or pass the end of the samples'
/// allocations reads nothing: index -1, value NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_peaks_device_f32(
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
) -> kp_status {
    unsafe {
        batch_peaks_device::<f32>(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value, stream,
        )
    }
}

/// The highest peak of each of `nseries` periodograms, on the context's
/// backend, without keeping the periodograms (a batch of any size runs in
/// bounded memory): inputs as `kp_lombscargle_batch_f64`. `index[s]`
/// receives the index in series `s`'s grid of its highest non-NaN value (the
/// modulus for KP_NORMALIZE_AMPLITUDE; the first of equal ones), -1 when
/// every value is NaN; `value[s]` that value (NaN then). Each holds
/// `nseries` values; both untouched on failure.
///
/// # Safety
/// Every pointer must be valid for the stated number of values.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_peaks_f64(
    ctx: *const kp_context,
    t: *const f64,
    y: *const f64,
    weights: *const f64,
    offsets: *const i64,
    nseries: usize,
    f0: *const f64,
    df: *const f64,
    ngrids: usize,
    nf: usize,
    options: *const kp_lombscargle_options,
    index: *mut i64,
    value: *mut f64,
) -> kp_status {
    unsafe {
        batch_peaks_host(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value,
        )
    }
}

/// As `kp_lombscargle_batch_peaks_f64`, on device arrays (inputs as
/// `kp_lombscargle_batch_device_f64`; `index`: `nseries` `int64_t`, `value`:
/// `nseries` `double`, in device memory, apart from each other and the
/// inputs), enqueued on `stream` with no synchronisation. The periodograms
/// are computed in chunks of series into scratch of at most 256 MiB. A
/// series whose device offsets decrease or pass the end of the samples'
/// allocations reads nothing: index -1, value NaN.
///
/// # Safety
/// Non-zero pointers must be device allocations of this GPU with the stated
/// sizes, alive until the work completes.
#[no_mangle]
pub unsafe extern "C" fn kp_lombscargle_batch_peaks_device_f64(
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
) -> kp_status {
    unsafe {
        batch_peaks_device::<f64>(
            ctx, t, y, weights, offsets, nseries, f0, df, ngrids, nf, options, index, value, stream,
        )
    }
}
