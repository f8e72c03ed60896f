//! Lomb-Scargle periodogram with `scipy.signal.lombscargle` (SciPy >= 1.15)
//! semantics, on angular frequencies, in f32 or f64.
pub mod batch;
pub mod peaks;
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

pub use crate::params::lombscargle::{
    DeviceFreqs, LombScargleOptions, LsDeviceBuffers, Normalize, Periodogram, Series, UniformGrid,
};

use super::device::{DeviceOperation, Guards, OnBuffers};
use super::exec::{CpuRun, Operation};
use super::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::{first_non_finite, Float};
use crate::gpu::c_params::{
    KP_LS_AMPLITUDE, KP_LS_FREQS_PER_THREAD, KP_LS_NORMALIZE, KP_LS_POWER,
    KP_LS_UNIFORM_FREQS_PER_THREAD, KP_LS_UNIFORM_FREQS_PER_THREAD_FM,
};
use crate::gpu::kernels;
use crate::gpu::launch::{In, LaunchConfig, Out};
use crate::gpu::{Gpu, LsGrid, LsParams, LsStats};

/// Number of `T` values the output holds per frequency: 1, or 2 interleaved
/// (re, im) for `Amplitude`.
pub fn values_per_frequency(opts: &LombScargleOptions) -> usize {
    match opts.normalize {
        Normalize::Amplitude => 2,
        _ => 1,
    }
}

/// Number of `T` values the output holds for `nf` frequencies: nf, or 2 nf
/// interleaved (re, im) for `Amplitude`. `nf` is at most `i64::MAX / 2`, as
/// validation requires, so this cannot overflow.
pub fn output_len(nf: usize, opts: &LombScargleOptions) -> usize {
    values_per_frequency(opts) * nf
}

/// Doubles in `kp_ls_stats`: the scratch each series needs.
pub(crate) const STATS_LEN: usize = std::mem::size_of::<LsStats>() / std::mem::size_of::<f64>();

/// Frequencies each thread of the uniform-grid kernel carries.
pub(crate) fn uniform_freqs_per_thread(opts: &LombScargleOptions) -> u64 {
    u64::from(if opts.floating_mean {
        KP_LS_UNIFORM_FREQS_PER_THREAD_FM
    } else {
        KP_LS_UNIFORM_FREQS_PER_THREAD
    })
}

impl LsParams {
    fn new(nx: usize, nf: usize, has_weights: bool, opts: &LombScargleOptions) -> Self {
        LsParams {
            nx: nx as i64,
            nf: nf as i64,
            normalize: match opts.normalize {
                Normalize::Power => KP_LS_POWER,
                Normalize::Normalize => KP_LS_NORMALIZE,
                Normalize::Amplitude => KP_LS_AMPLITUDE,
            },
            floating_mean: opts.floating_mean as i32,
            precenter: opts.precenter as i32,
            has_weights: has_weights as i32,
        }
    }
}

/// The one validation of a periodogram call's shapes: sample counts, the
/// frequencies (their count, and the grid when uniform) and, where the caller
/// supplies the output, its length. Every entry point runs it once; host
/// values are checked by `check_values` (device data cannot be inspected
/// without a synchronisation).
pub(crate) fn check_call(
    nx: usize,
    ny: usize,
    nw: Option<usize>,
    nf: usize,
    grid: Option<&UniformGrid>,
    out_len: Option<usize>,
    opts: &LombScargleOptions,
) -> Result<()> {
    if nx == 0 {
        return Err(Error::invalid("the series is empty (t has no samples)"));
    }
    if ny != nx {
        return Err(Error::invalid(format!("t has {nx} samples but y has {ny}")));
    }
    if let Some(nw) = nw.filter(|&nw| nw != nx) {
        return Err(Error::invalid(format!(
            "t has {nx} samples but weights has {nw}"
        )));
    }
    if nf == 0 {
        return Err(Error::invalid("no frequencies given"));
    }
    if nx > i64::MAX as usize / 2 || nf > i64::MAX as usize / 2 {
        return Err(Error::invalid("too many samples or frequencies"));
    }
    if let Some(grid) = grid {
        grid.validate()?;
    }
    let want = output_len(nf, opts);
    match out_len {
        Some(len) if len != want => Err(Error::invalid(format!(
            "out holds {len} values, {want} needed"
        ))),
        _ => Ok(()),
    }
}

fn check_finite<T: Float>(name: &str, values: &[T]) -> Result<()> {
    match first_non_finite(values) {
        Some(i) => Err(Error::invalid(format!(
            "{name}[{i}] = {} is not finite",
            values[i]
        ))),
        None => Ok(()),
    }
}

/// Everything SciPy rejects, plus what would make the result meaningless:
/// shapes (`check_call`) and values (`check_values`) of a host call.
pub fn validate<T: Float>(
    series: &Series<'_, T>,
    freqs: &[T],
    opts: &LombScargleOptions,
) -> Result<()> {
    let nw = series.weights.map(<[T]>::len);
    check_call(
        series.t.len(),
        series.y.len(),
        nw,
        freqs.len(),
        None,
        None,
        opts,
    )?;
    check_values(series, Some(freqs), opts)?;
    check_host_room::<T>("the periodogram", output_len(freqs.len(), opts))
}

/// As [`validate`], for a uniform frequency grid.
pub fn validate_uniform<T: Float>(
    series: &Series<'_, T>,
    grid: &UniformGrid,
    opts: &LombScargleOptions,
) -> Result<()> {
    let nw = series.weights.map(<[T]>::len);
    // The grid is validated here, for T, rather than by check_call.
    check_call(
        series.t.len(),
        series.y.len(),
        nw,
        grid.nf,
        None,
        None,
        opts,
    )?;
    grid.validate_for::<T>()?;
    check_values(series, None, opts)?;
    check_host_room::<T>("the periodogram", output_len(grid.nf, opts))
}

/// The checks of host values, after `check_call`: non-finite values,
/// negative frequencies or weights, weights summing to zero, and `Normalize`
/// of a series with no variance.
pub(crate) fn check_values<T: Float>(
    series: &Series<'_, T>,
    freqs: Option<&[T]>,
    opts: &LombScargleOptions,
) -> Result<()> {
    if let Some(freqs) = freqs {
        check_finite("freqs", freqs)?;
        if let Some(i) = freqs.iter().position(|f| f.to_f64() < 0.0) {
            return Err(Error::invalid(format!(
                "freqs[{i}] = {} is negative: a peak at -f is the peak at +f, pass |f|",
                freqs[i]
            )));
        }
    }
    check_finite("t", series.t)?;
    check_finite("y", series.y)?;
    let wsum = match series.weights {
        Some(w) => {
            check_finite("weights", w)?;
            if let Some(i) = w.iter().position(|v| v.to_f64() < 0.0) {
                return Err(Error::invalid(format!(
                    "weights[{i}] = {} is negative",
                    w[i]
                )));
            }
            let sum: f64 = w.iter().map(|v| v.to_f64()).sum();
            if sum <= 0.0 {
                return Err(Error::invalid("the weights sum to zero"));
            }
            if !sum.is_finite() {
                // Every weight would normalise to 0: an all-zero periodogram.
                return Err(Error::invalid(
                    "the weights sum past the largest f64: scale them down",
                ));
            }
            if !(1.0 / sum).is_finite() {
                // The kernels scale by 1 / sum: infinite, a NaN periodogram.
                return Err(Error::invalid(format!(
                    "the weights sum to {sum:e}, below 2^-1024: scale them up"
                )));
            }
            sum
        }
        None => series.t.len() as f64,
    };
    if opts.normalize == Normalize::Normalize {
        // The normalisation divides by the weighted variance of y about 0 (or
        // about its weighted mean with floating_mean).
        let weight = |i: usize| series.weights.map_or(1.0, |w| w[i].to_f64()) / wsum;
        let center = if opts.precenter {
            series.y.iter().map(|v| v.to_f64()).sum::<f64>() / series.y.len() as f64
        } else {
            0.0
        };
        let yv = |i: usize| series.y[i].to_f64() - center;
        let n = series.y.len();
        let mean: f64 = (0..n).map(|i| weight(i) * yv(i)).sum();
        let about = if opts.floating_mean { mean } else { 0.0 };
        let var: f64 = (0..n).map(|i| weight(i) * (yv(i) - about).powi(2)).sum();
        // A constant series leaves a variance of (rounding of the mean)^2,
        // ~(eps y)^2, which must not pass for a signal; y = 1e6 + 1e-3 noise must.
        // Measured on y as given: precentering a constant series leaves only
        // the rounding of its mean, which must not pass for a signal either.
        let mean_square: f64 = (0..n)
            .map(|i| weight(i) * series.y[i].to_f64().powi(2))
            .sum();
        if !mean_square.is_finite() {
            return Err(Error::invalid(
                "normalize mode: the variance of y overflows f64 (values near 1e154 or beyond): scale y down",
            ));
        }
        if var <= (64.0 * f64::EPSILON).powi(2) * mean_square {
            return Err(Error::invalid(
                "normalize mode needs y to vary (its weighted variance is zero)",
            ));
        }
    }
    Ok(())
}

/// The frequencies of a single-series periodogram.
#[derive(Debug, Clone, Copy)]
pub enum Freqs<'a, T> {
    /// Angular frequencies, any order (one sincos per pair).
    Array(&'a [T]),
    /// `f0 + k df`: the recurrence kernels, on the GPU and on the CPU.
    Uniform(UniformGrid),
}

/// The operation: the periodogram of one series ([`Kernpack::lombscargle`],
/// [`Kernpack::lombscargle_uniform`]).
#[derive(Debug, Clone, Copy)]
pub struct LombScargle<'a, T> {
    pub series: Series<'a, T>,
    pub freqs: Freqs<'a, T>,
    pub opts: LombScargleOptions,
}

impl<T: Float> Operation for LombScargle<'_, T> {
    type Output = Periodogram<T>;

    fn validate(&self) -> Result<()> {
        match self.freqs {
            Freqs::Array(freqs) => validate(&self.series, freqs, &self.opts),
            Freqs::Uniform(grid) => validate_uniform(&self.series, &grid, &self.opts),
        }
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Periodogram<T>> {
        let (series, opts) = (&self.series, &self.opts);
        Ok(match self.freqs {
            Freqs::Array(freqs) => {
                cpu::lombscargle::lombscargle(cpu.threads, cpu.progress, series, freqs, opts)
            }
            Freqs::Uniform(grid) => cpu::lombscargle::lombscargle_uniform(
                cpu.threads,
                cpu.progress,
                series,
                &grid,
                opts,
            ),
        })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Periodogram<T>> {
        match self.freqs {
            Freqs::Array(freqs) => {
                let f = gpu
                    .stream()
                    .clone_htod(freqs)
                    .map_err(|e| Error::cuda("copying inputs to the GPU", e))?;
                let (ptr, _f) = f.device_ptr(gpu.stream());
                let len = freqs.len();
                gpu.lombscargle_host(&self.series, DeviceFreqs::Array { ptr, len }, &self.opts)
            }
            Freqs::Uniform(grid) => {
                gpu.lombscargle_host(&self.series, DeviceFreqs::Uniform(grid), &self.opts)
            }
        }
    }
}

impl Kernpack {
    /// The periodogram of `series` at the angular frequencies `freqs`, on this
    /// handle's backend. Inputs are validated first; nothing runs on bad input.
    pub fn lombscargle<T: Float>(
        &self,
        series: &Series<'_, T>,
        freqs: &[T],
        opts: &LombScargleOptions,
    ) -> Result<Periodogram<T>> {
        let (series, freqs, opts) = (*series, Freqs::Array(freqs), *opts);
        self.run(LombScargle {
            series,
            freqs,
            opts,
        })
    }

    /// The periodogram of `series` on the uniform grid `grid` (angular
    /// frequencies `f0 + k df`): the recurrence kernels on the GPU and on the CPU.
    pub fn lombscargle_uniform<T: Float>(
        &self,
        series: &Series<'_, T>,
        grid: &UniformGrid,
        opts: &LombScargleOptions,
    ) -> Result<Periodogram<T>> {
        let (series, freqs, opts) = (*series, Freqs::Uniform(*grid), *opts);
        self.run(LombScargle {
            series,
            freqs,
            opts,
        })
    }
}

/// The periodogram of one series on device memory ([`Gpu::enqueue`]):
/// `t`, `y` (and `weights` when given) hold `nx` values of `T`, an array
/// `freqs` its `len`, `out` [`output_len`] values. Only shapes are checked
/// (device data cannot be inspected without a sync): NaN/Inf, negative
/// weights or frequencies give NaN or meaningless output rather than an error.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleOnDevice<T> {
    pub buffers: LsDeviceBuffers,
    pub nx: usize,
    pub freqs: DeviceFreqs,
    pub opts: LombScargleOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleOnDevice<T> {
    /// The periodogram of cudarc buffers at the angular frequencies `freqs`;
    /// their lengths are the call's shapes (`out` holds [`output_len`]).
    pub fn buffers<'a, In: DevicePtr<T>>(
        stream: &'a Arc<CudaStream>,
        t: &'a In,
        y: &'a In,
        weights: Option<&'a In>,
        freqs: &'a In,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let mut g = Guards::new(stream);
        let (ptr, len) = (g.read(freqs), freqs.len());
        Self::on_buffers(
            g,
            (t, y, weights),
            DeviceFreqs::Array { ptr, len },
            out,
            opts,
        )
    }

    /// As [`LombScargleOnDevice::buffers`], on a uniform grid.
    pub fn uniform_buffers<'a, In: DevicePtr<T>>(
        stream: &'a Arc<CudaStream>,
        t: &'a In,
        y: &'a In,
        weights: Option<&'a In>,
        grid: &UniformGrid,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let freqs = DeviceFreqs::Uniform(*grid);
        Self::on_buffers(Guards::new(stream), (t, y, weights), freqs, out, opts)
    }

    fn on_buffers<'a, In: DevicePtr<T>>(
        mut g: Guards<'a>,
        (t, y, weights): (&'a In, &'a In, Option<&'a In>),
        freqs: DeviceFreqs,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let nw = weights.map(|w| w.len());
        let (nf, grid) = freqs.count_and_grid();
        let (nx, ny, out_len) = (t.len(), y.len(), Some(out.len()));
        check_call(nx, ny, nw, nf, grid.as_ref(), out_len, opts)?;
        let buffers = LsDeviceBuffers {
            t: g.read(t),
            y: g.read(y),
            weights: weights.map(|w| g.read(w)),
            out: g.write(out),
        };
        let (opts, dtype) = (*opts, PhantomData);
        Ok(g.with(LombScargleOnDevice {
            buffers,
            nx,
            freqs,
            opts,
            dtype,
        }))
    }
}

impl<T: Float> DeviceOperation for LombScargleOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let (nf, grid) = self.freqs.count_and_grid();
        check_call(self.nx, self.nx, None, nf, grid.as_ref(), None, &self.opts)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (b, nx) = (&self.buffers, self.nx);
        for (name, ptr) in [("t", b.t), ("y", b.y)]
            .into_iter()
            .chain(b.weights.map(|w| ("weights", w)))
        {
            gpu.check_device_array::<T>(name, ptr, nx)?;
        }
        if let DeviceFreqs::Array { ptr, len } = self.freqs {
            gpu.check_device_array::<T>("freqs", ptr, len)?;
        }
        let out_len = output_len(self.freqs.len(), &self.opts);
        gpu.check_device_array::<T>("out", b.out, out_len)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (buffers, nx, freqs, opts) = (&self.buffers, self.nx, self.freqs, &self.opts);
        let nf = freqs.len();
        let params = LsParams::new(nx, nf, buffers.weights.is_some(), opts);
        // Per-series statistics stay on the device: no host round trip. The
        // allocation is stream-ordered, so freeing it on drop waits for the kernels.
        let mut stats = stream
            .alloc::<f64>(STATS_LEN)
            .map_err(|e| Error::cuda("allocating scratch", e))?;
        let (stats_ptr, _s) = stats.device_ptr_mut(stream);
        let (t, y) = (In::new(buffers.t), In::new(buffers.y));
        let w = In::new(buffers.weights.unwrap_or(0));
        let out = Out::new(buffers.out);

        // One series: no offsets (the kernels then take nseries = 1 and p.nx).
        let (nseries, offsets) = (1, In::null());
        let prepare = kernels::lombscargle_prepare::<T>();
        let args = (params, nseries, offsets, t, y, w, Out::new(stats_ptr));
        gpu.launch(&prepare, LaunchConfig::grid(1), stream, args)?;
        let stats = In::new(stats_ptr);

        match freqs {
            DeviceFreqs::Array { ptr, .. } => {
                let direct = kernels::lombscargle_direct::<T>();
                let kernel = gpu.kernel(&direct)?;
                let per_block = kernel.block as u64 * u64::from(KP_LS_FREQS_PER_THREAD);
                let grid = kernel.grid_for(nf as u64, per_block);
                let args = (params, t, y, w, In::new(ptr), stats, out);
                gpu.launch(&direct, LaunchConfig::grid(grid), stream, args)
            }
            DeviceFreqs::Uniform(grid) => {
                let uniform = kernels::lombscargle_uniform::<T>();
                let kernel = gpu.kernel(&uniform)?;
                let per_thread = uniform_freqs_per_thread(opts);
                let blocks = kernel.grid_for(nf as u64, kernel.block as u64 * per_thread);
                let grid = LsGrid {
                    f0: grid.f0,
                    df: grid.df,
                };
                // One grid for the one series: no per-series grids.
                let (f0, df, per_series_grid) = (In::null(), In::null(), 0);
                let args = (
                    params,
                    grid,
                    nseries,
                    offsets,
                    f0,
                    df,
                    per_series_grid,
                    t,
                    y,
                    w,
                    stats,
                    out,
                );
                gpu.launch(&uniform, LaunchConfig::grid(blocks), stream, args)
            }
        }
    }
}

impl Gpu {
    /// Uploads the validated series, runs, downloads.
    fn lombscargle_host<T: Float>(
        &self,
        series: &Series<'_, T>,
        freqs: DeviceFreqs,
        opts: &LombScargleOptions,
    ) -> Result<Periodogram<T>> {
        let stream = self.stream();
        let upload = |v: &[T]| {
            stream
                .clone_htod(v)
                .map_err(|e| Error::cuda("copying inputs to the GPU", e))
        };
        let t = upload(series.t)?;
        let y = upload(series.y)?;
        let w = series.weights.map(upload).transpose()?;
        let mut out = unsafe { stream.alloc::<T>(output_len(freqs.len(), opts)) }
            .map_err(|e| Error::cuda("allocating the output", e))?;
        {
            let (t_ptr, _t) = t.device_ptr(stream);
            let (y_ptr, _y) = y.device_ptr(stream);
            let w = w.as_ref().map(|w| w.device_ptr(stream));
            let (out_ptr, _o) = out.device_ptr_mut(stream);
            let buffers = LsDeviceBuffers {
                t: t_ptr,
                y: y_ptr,
                weights: w.as_ref().map(|(ptr, _)| *ptr),
                out: out_ptr,
            };
            let (nx, opts, dtype) = (series.t.len(), *opts, PhantomData::<T>);
            #[rustfmt::skip]
            let op = LombScargleOnDevice { buffers, nx, freqs, opts, dtype };
            // SAFETY: buffers just allocated with the validated lengths.
            unsafe { op.launch(self, stream, ()) }?;
        }
        let values = stream
            .clone_dtoh(&out)
            .map_err(|e| Error::cuda("copying the periodogram back", e))?;
        Ok(Periodogram::from_interleaved(values, opts.normalize))
    }
}

#[cfg(test)]
mod tests {
    use super::check_finite;

    /// The blocked scan names the first non-finite value wherever it lies:
    /// inside a block, at a block's edges, in the short last block.
    #[test]
    fn check_finite_names_the_first_bad_value() {
        for len in [0usize, 1, 255, 256, 257, 1000] {
            let clean: Vec<f32> = (0..len).map(|i| i as f32 * 0.5 - 7.0).collect();
            assert!(check_finite("t", &clean).is_ok());
            for at in [0, 1, 254, 255, 256, 257, 511, 512, 999] {
                if at >= len {
                    continue;
                }
                for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
                    let mut v = clean.clone();
                    v[at] = bad;
                    if at + 3 < len {
                        v[at + 3] = f32::NAN; // a later bad value is not the one named
                    }
                    let msg = check_finite("t", &v).unwrap_err().to_string();
                    assert!(msg.contains(&format!("t[{at}] = ")), "{len} {at}: {msg}");
                }
            }
        }
        let v = [1.0f64, 2.0, f64::MAX, f64::MIN_POSITIVE, -0.0];
        assert!(check_finite("y", &v).is_ok());
    }
}
