//! Lomb-Scargle periodogram with `scipy.signal.lombscargle` (SciPy >= 1.15)
//! semantics, on angular frequencies, in f32 or f64.
pub mod batch;
pub mod bootstrap;
pub mod chi2;
pub mod multiband;
pub mod peak_search;
pub mod peaks;
use std::sync::Arc;

pub use crate::gpu::lombscargle::LombScargleOnDevice;
pub use crate::params::lombscargle::{
    output_len, values_per_frequency, DeviceFreqs, LombScargleOptions, LsDeviceBuffers, Normalize,
    Periodogram, Series, UniformGrid,
};

use super::exec::{CpuRun, Operation};
use super::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::{first_non_finite, Float};
use crate::gpu::lombscargle::check_call;
use crate::gpu::Gpu;

/// An error naming the first non-finite value of `values`, if any.
pub(crate) fn check_finite<T: Float>(name: &str, values: &[T]) -> Result<()> {
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
    let (series, freqs, opts) = (*series, Freqs::Array(freqs), *opts);
    LombScargle {
        series,
        freqs,
        opts,
    }
    .validate()
}

/// As [`validate`], for a uniform frequency grid.
pub fn validate_uniform<T: Float>(
    series: &Series<'_, T>,
    grid: &UniformGrid,
    opts: &LombScargleOptions,
) -> Result<()> {
    let (series, freqs, opts) = (*series, Freqs::Uniform(*grid), *opts);
    LombScargle {
        series,
        freqs,
        opts,
    }
    .validate()
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

impl<T> Freqs<'_, T> {
    /// The number of frequencies.
    pub(crate) fn len(&self) -> usize {
        match self {
            Freqs::Array(freqs) => freqs.len(),
            Freqs::Uniform(grid) => grid.nf,
        }
    }
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

    /// [`validate`]: `check_call`, a grid validated here for `T` (rather
    /// than by `check_call`), the values, and the result's host memory.
    fn validate(&self) -> Result<()> {
        let (series, opts) = (&self.series, &self.opts);
        let (nf, nw) = (self.freqs.len(), series.weights.map(<[T]>::len));
        check_call(series.t.len(), series.y.len(), nw, nf, None, None, opts)?;
        let freqs = match self.freqs {
            Freqs::Array(freqs) => Some(freqs),
            Freqs::Uniform(grid) => grid.validate_for::<T>().map(|()| None)?,
        };
        check_values(series, freqs, opts)?;
        check_host_room::<T>("the periodogram", output_len(nf, opts))
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
        let (series, opts, stream) = (&self.series, &self.opts, gpu.stream());
        let (t, y) = (gpu.upload(series.t)?, gpu.upload(series.y)?);
        let w = series.weights.map(|w| gpu.upload(w)).transpose()?;
        // SAFETY: the launch writes every value.
        let mut out = unsafe { gpu.uninit::<T>(output_len(self.freqs.len(), opts)) }?;
        let d_freqs;
        let call = match self.freqs {
            Freqs::Array(freqs) => {
                d_freqs = gpu.upload(freqs)?;
                LombScargleOnDevice::buffers(stream, &t, &y, w.as_ref(), &d_freqs, &mut out, opts)
            }
            Freqs::Uniform(grid) => LombScargleOnDevice::uniform_buffers(
                stream,
                &t,
                &y,
                w.as_ref(),
                &grid,
                &mut out,
                opts,
            ),
        }?;
        // SAFETY: buffers just allocated on this GPU.
        unsafe { gpu.launch_fresh(call, ()) }?;
        Ok(Periodogram::from_interleaved(
            gpu.download(&out)?,
            opts.normalize,
        ))
    }
}

impl Kernpack {
    facade! {
        /// The periodogram of `series` at the angular frequencies `freqs`, on this
        /// handle's backend. Inputs are validated first; nothing runs on bad input.
        fn lombscargle(series: &Series<'_, T>, freqs: &[T], opts: &LombScargleOptions)
            -> Periodogram<T>
            = LombScargle { series: *series, freqs: Freqs::Array(freqs), opts: *opts };

        /// The periodogram of `series` on the uniform grid `grid` (angular
        /// frequencies `f0 + k df`): the recurrence kernels on the GPU and on the CPU.
        fn lombscargle_uniform(
            series: &Series<'_, T>,
            grid: &UniformGrid,
            opts: &LombScargleOptions,
        ) -> Periodogram<T>
            = LombScargle { series: *series, freqs: Freqs::Uniform(*grid), opts: *opts };
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
