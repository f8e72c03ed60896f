//! The bootstrap false-alarm probability of a periodogram peak, as astropy's
//! `LombScargle.false_alarm_probability(method='bootstrap')` computes it:
//! the maxima of the periodograms of `B` copies of the series, each with its
//! (value, error) pairs drawn with replacement and the times kept, on the
//! grid `autopower(maximum_frequency=fmax)` takes; the FAP of a power is the
//! fraction of maxima not below it.
//!
//! The copies are one batch for the single-term kernels, reduced to their
//! maxima where they are computed (the peaks mode: on a GPU only B values
//! come back). The draws are a counter-based hash of (seed, copy, position)
//! ([`resample_index`]), computed on the GPU by the GPU path and on the host
//! by the CPU path: the same seed draws the same samples on every backend.
//!
//! The periodogram is the generalised one (a fitted mean, weights `1/dy^2`):
//! astropy's default `fit_mean=True` (whatever `center_data`), in its
//! 'standard' normalisation, mapped to the others per copy. astropy's
//! `autopower` picks its approximate 'fast' method for such grids; this is
//! the exact periodogram (astropy's 'cython' / 'slow' methods).
use std::marker::PhantomData;
use std::sync::Arc;

use super::batch::{Batch, BatchGrid};
use super::chi2::{check_series, Chi2Batch, Chi2Options, Chi2Series, LombScargleChi2BatchPeaks};
use super::{LombScargleOptions, Normalize, UniformGrid};
use crate::api::exec::{CpuRun, Operation};
use crate::api::multi::{GpuProfile, MultiGpu};
use crate::api::Kernpack;
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::bootstrap::ResampleBuffers;
use crate::gpu::device::Guards;
use crate::gpu::lombscargle::{LombScargleBatchOnDevice, LombScarglePeaksOnDevice};
use crate::gpu::lombscargle_chi2::check_call;
use crate::gpu::Gpu;
use crate::params::lombscargle::{BatchDeviceBuffers, Peak, PeakBuffers};
use crate::params::peaks::PeakOptions;
pub use crate::params::significance::{
    autofrequency, bootstrap_false_alarm_level, bootstrap_false_alarm_probability, resample_index,
    BootstrapOptions, PowerNormalization,
};
use crate::params::significance::{half_chi2_ref, standard_to};

/// The operation: the maxima of `opts.resamples` resampled periodograms of
/// one series ([`Kernpack::lombscargle_bootstrap`]), in copy order.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBootstrap<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    /// Errors of y (weights `1 / dy^2`); None: equal weights.
    pub dy: Option<&'a [T]>,
    /// The periodogram's maximum cyclic frequency.
    pub fmax: f64,
    pub normalization: PowerNormalization,
    pub opts: BootstrapOptions,
}

/// At least one copy, and room for `resamples` copies of `n` samples (t, y
/// and the weights or errors) in host memory.
fn check_resamples<T: Float>(n: usize, resamples: usize) -> Result<()> {
    if resamples == 0 {
        return Err(Error::invalid("resamples = 0: at least one copy"));
    }
    let samples = n
        .checked_mul(resamples)
        .filter(|&s| s <= crate::api::MAX_ARRAY_BYTES / (3 * std::mem::size_of::<T>()))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{resamples} resamples of {n} samples do not fit in memory"
            ))
        })?;
    crate::api::check_host_room::<T>("the resampled series", 3 * samples)
}

/// The generalised periodogram in [0, 1]: astropy's 'standard' with a fitted mean.
const STANDARD: LombScargleOptions = LombScargleOptions {
    normalize: Normalize::Normalize,
    floating_mean: true,
    precenter: false,
};

impl<T: Float> LombScargleBootstrap<'_, T> {
    /// astropy's grid, as angular frequencies for the kernels.
    fn grid(&self) -> Result<UniformGrid> {
        let t: Vec<f64> = self.t.iter().map(|v| v.to_f64()).collect();
        let (fmin, df, nf) = autofrequency(&t, self.fmax, self.opts.samples_per_peak)?;
        let tau = std::f64::consts::TAU;
        Ok(UniformGrid::new(tau * fmin, tau * df, nf))
    }

    /// `1 / dy^2` in T.
    fn weights(&self) -> Option<Vec<T>> {
        self.dy.map(|dy| {
            dy.iter()
                .map(|d| T::from_f64(1.0 / (d.to_f64() * d.to_f64())))
                .collect()
        })
    }

    /// The maxima in the 'standard' normalisation (NaN for a copy whose
    /// values do not vary), mapped to the call's.
    fn finish(&self, standard: Vec<f64>) -> Vec<f64> {
        let n = self.t.len();
        let w = self.weights();
        standard
            .into_iter()
            .enumerate()
            .map(|(r, max)| {
                let half = if self.normalization == PowerNormalization::Psd {
                    let draw = |i: usize| {
                        resample_index(self.opts.seed, r as u64, i as u64, n as u64) as usize
                    };
                    let y = (0..n).map(|i| self.y[draw(i)].to_f64());
                    let weight = |i: usize| w.as_ref().map_or(1.0, |w| w[draw(i)].to_f64());
                    half_chi2_ref(y, (0..n).map(weight))
                } else {
                    0.0
                };
                standard_to(self.normalization, max, half)
            })
            .collect()
    }
}

impl<T: Float> Operation for LombScargleBootstrap<'_, T> {
    type Output = Vec<f64>;

    fn validate(&self) -> Result<()> {
        let n = self.t.len();
        if self.y.len() != n || self.dy.is_some_and(|d| d.len() != n) {
            return Err(Error::invalid(format!(
                "t has {n} values, y {}{}",
                self.y.len(),
                self.dy
                    .map_or(String::new(), |d| format!(", dy {}", d.len()))
            )));
        }
        if n < 2 {
            return Err(Error::invalid(format!("t has {n} samples: at least 2")));
        }
        check_resamples::<T>(n, self.opts.resamples)?;
        for (name, v) in [("t", self.t), ("y", self.y)] {
            if let Some(i) = v.iter().position(|x| !x.to_f64().is_finite()) {
                return Err(Error::invalid(format!(
                    "{name}[{i}] = {} is not finite",
                    v[i]
                )));
            }
        }
        if let (Some(dy), Some(w)) = (self.dy, self.weights()) {
            if let Some(i) = (0..n).find(|&i| {
                let d = dy[i].to_f64();
                !(d.is_finite() && d > 0.0 && w[i].to_f64().is_finite())
            }) {
                return Err(Error::invalid(format!(
                    "dy[{i}] = {} must be positive, finite, and 1/dy^2 finite in {}",
                    dy[i],
                    T::NAME
                )));
            }
        }
        self.grid()?.validate_for::<T>()
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        let (n, b, seed) = (self.t.len(), self.opts.resamples, self.opts.seed);
        let w = self.weights();
        let draw =
            |k: usize| resample_index(seed, (k / n) as u64, (k % n) as u64, n as u64) as usize;
        let t: Vec<T> = (0..n * b).map(|k| self.t[k % n]).collect();
        let y: Vec<T> = (0..n * b).map(|k| self.y[draw(k)]).collect();
        let weights: Option<Vec<T>> = w.map(|w| (0..n * b).map(|k| w[draw(k)]).collect());
        let offsets: Vec<usize> = (0..=b).map(|r| r * n).collect();
        let batch = Batch {
            t: &t,
            y: &y,
            weights: weights.as_deref(),
            offsets: &offsets,
        };
        let grids = BatchGrid::Shared(self.grid()?);
        let peak = |_, p| Peak::of(&p).map_or(f64::NAN, |p| p.value);
        let maxima =
            cpu::lombscargle::lombscargle_batch(cpu.threads, &batch, &grids, &STANDARD, peak);
        Ok(self.finish(maxima))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        let (n, b) = (self.t.len(), self.opts.resamples);
        let grid = self.grid()?;
        let (t, y) = (gpu.upload(self.t)?, gpu.upload(self.y)?);
        let w = self.weights().map(|w| gpu.upload(&w)).transpose()?;
        // SAFETY (the uninit buffers): the resampling writes every value,
        // out_w only with weights, when it is read.
        let mut copies_t = unsafe { gpu.uninit::<T>(n * b) }?;
        let mut copies_y = unsafe { gpu.uninit::<T>(n * b) }?;
        let mut copies_w = unsafe { gpu.uninit::<T>(if w.is_some() { n * b } else { 1 }) }?;
        let offsets: Vec<i64> = (0..=b).map(|r| (r * n) as i64).collect();
        let offsets = gpu.upload(&offsets)?;
        let (f0, df) = (gpu.upload(&[grid.f0])?, gpu.upload(&[grid.df])?);
        // SAFETY: the reduction writes every peak.
        let mut index = unsafe { gpu.uninit::<i64>(b) }?;
        let mut value = unsafe { gpu.uninit::<f64>(b) }?;
        let mut g = Guards::new(gpu.stream());
        let resample = ResampleBuffers {
            t: g.read(&t),
            y: g.read(&y),
            weights: w.as_ref().map(|w| g.read(w)),
            out_t: g.write(&mut copies_t),
            out_y: g.write(&mut copies_y),
            out_weights: g.write(&mut copies_w),
        };
        // SAFETY: buffers just allocated on this GPU with the counts above.
        unsafe {
            gpu.launch_bootstrap_resample::<T>(gpu.stream(), n, b, self.opts.seed, &resample)
        }?;
        let buffers = BatchDeviceBuffers {
            t: resample.out_t,
            y: resample.out_y,
            weights: w.is_some().then_some(resample.out_weights),
            offsets: g.read(&offsets),
            f0: g.read(&f0),
            df: g.read(&df),
            per_series_grid: false,
            out: 0,
        };
        let peaks = PeakBuffers {
            index: g.write(&mut index),
            value: g.write(&mut value),
        };
        let batch = LombScargleBatchOnDevice::<T> {
            buffers,
            nseries: b,
            nf: grid.nf,
            opts: STANDARD,
            dtype: PhantomData,
        };
        let call = g.with(LombScarglePeaksOnDevice {
            batch,
            peaks,
            max_scratch_bytes: None,
        });
        // SAFETY: the copies hold n x b samples each, written above on this stream.
        unsafe { gpu.launch_fresh(call, n * b) }?;
        let maxima = gpu.download(&value)?;
        Ok(self.finish(maxima))
    }
}

impl Kernpack {
    facade! {
        /// The maxima of `opts.resamples` periodograms of `(t, y, dy)`
        /// resampled with replacement (astropy's bootstrap: the grid of
        /// `autopower(maximum_frequency=fmax)`, a fitted mean, weights
        /// `1/dy^2`), in `normalization`, in copy order: the same for a seed
        /// on every backend, up to the periodograms' rounding. The FAP and
        /// level follow with [`bootstrap_false_alarm_probability`] and
        /// [`bootstrap_false_alarm_level`].
        fn lombscargle_bootstrap(
            t: &[T],
            y: &[T],
            dy: Option<&[T]>,
            fmax: f64,
            normalization: PowerNormalization,
            opts: &BootstrapOptions,
        ) -> Vec<f64>
            = LombScargleBootstrap { t, y, dy, fmax, normalization, opts: *opts };
    }
}

/// The operation: the maxima of `boot.resamples` resampled multi-term
/// periodograms of one series ([`Kernpack::lombscargle_chi2_bootstrap`]),
/// in copy order.
///
/// astropy has no false-alarm probability for multi-term periodograms (any
/// method); this is the bootstrap of the single-term one carried over: the
/// same resamples (the same [`resample_index`] draws for a seed), each
/// copy's periodogram by the multi-term operation on astropy's
/// `autofrequency` grid for `fmax` (cycles per unit time), as one batch of
/// the copies whose best peak alone is kept ([`LombScargleChi2BatchPeaks`]:
/// on a GPU only the maxima come back). Each copy is normalised by its own
/// reference chi^2, as the single-term bootstrap's are. A copy whose values
/// do not vary (all draws of one value) has no periodogram: NaN.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleChi2Bootstrap<'a, T> {
    pub series: Chi2Series<'a, T>,
    /// The periodogram's maximum cyclic frequency.
    pub fmax: f64,
    pub opts: Chi2Options,
    pub boot: BootstrapOptions,
}

/// The resampled copies that have a periodogram, back to back, and which
/// copy each one is.
struct Copies<T> {
    t: Vec<T>,
    y: Vec<T>,
    dy: Option<Vec<T>>,
    offsets: Vec<usize>,
    copy: Vec<usize>,
}

impl<T: Float> LombScargleChi2Bootstrap<'_, T> {
    /// astropy's grid for `fmax`, in cycles per unit time.
    fn grid(&self) -> Result<UniformGrid> {
        let t: Vec<f64> = self.series.t.iter().map(|v| v.to_f64()).collect();
        let (fmin, df, nf) = autofrequency(&t, self.fmax, self.boot.samples_per_peak)?;
        Ok(UniformGrid::new(fmin, df, nf))
    }

    /// Every copy but those whose values do not vary: copy r takes sample
    /// `resample_index(seed, r, i, n)` at position i (its y and dy; t stays).
    fn copies(&self) -> Copies<T> {
        let (s, n, seed) = (self.series, self.series.t.len(), self.boot.seed);
        let mut c = Copies {
            t: Vec::new(),
            y: Vec::new(),
            dy: s.dy.map(|_| Vec::new()),
            offsets: vec![0],
            copy: Vec::new(),
        };
        for r in 0..self.boot.resamples {
            let draw: Vec<usize> = (0..n)
                .map(|i| resample_index(seed, r as u64, i as u64, n as u64) as usize)
                .collect();
            if draw
                .iter()
                .all(|&d| s.y[d].to_f64() == s.y[draw[0]].to_f64())
            {
                continue;
            }
            c.t.extend_from_slice(s.t);
            c.y.extend(draw.iter().map(|&d| s.y[d]));
            if let (Some(out), Some(dy)) = (c.dy.as_mut(), s.dy) {
                out.extend(draw.iter().map(|&d| dy[d]));
            }
            c.offsets.push(c.t.len());
            c.copy.push(r);
        }
        c
    }

    /// The maxima in copy order from the copies' best peaks.
    fn finish(&self, copies: &Copies<T>, peaks: Vec<Vec<Peak>>) -> Vec<f64> {
        let mut maxima = vec![f64::NAN; self.boot.resamples];
        for (&r, row) in copies.copy.iter().zip(&peaks) {
            maxima[r] = row.first().map_or(f64::NAN, |p| p.value);
        }
        maxima
    }

    /// The copies' best-peak search, on whatever backend `run` takes it to
    /// (which returns the peaks and anything else it measured).
    fn search<X>(
        &self,
        run: impl FnOnce(LombScargleChi2BatchPeaks<'_, T>) -> Result<(Vec<Vec<Peak>>, X)>,
    ) -> Result<(Vec<f64>, X)> {
        let grid = self.grid()?;
        let copies = self.copies();
        let op = LombScargleChi2BatchPeaks {
            batch: Chi2Batch {
                t: &copies.t,
                y: &copies.y,
                dy: copies.dy.as_deref(),
                offsets: &copies.offsets,
            },
            grids: BatchGrid::Shared(grid),
            opts: self.opts,
            peaks: PeakOptions {
                k: 1,
                separation: 0.0,
            },
        };
        let (peaks, extra) = run(op)?;
        Ok((self.finish(&copies, peaks), extra))
    }
}

impl<T: Float> Operation for LombScargleChi2Bootstrap<'_, T> {
    type Output = Vec<f64>;

    fn validate(&self) -> Result<()> {
        check_series(&self.series, &self.opts)?;
        check_call(1, 1, &self.opts)?;
        check_resamples::<T>(self.series.t.len(), self.boot.resamples)?;
        self.grid()?.validate_for::<T>()
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        Ok(self.search(|op| Ok((op.on_cpu(cpu)?, ())))?.0)
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        Ok(self.search(|op| Ok((op.on_gpu(gpu)?, ())))?.0)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        self.search(|op| op.on_pipeline(gpus))
    }
}

impl Kernpack {
    facade! {
        /// The maxima of `boot.resamples` multi-term periodograms of
        /// `series` resampled with replacement, in copy order
        /// ([`LombScargleChi2Bootstrap`]): the bootstrap false-alarm
        /// statistics of a multi-term periodogram up to `fmax`, with
        /// [`bootstrap_false_alarm_probability`] and
        /// [`bootstrap_false_alarm_level`].
        fn lombscargle_chi2_bootstrap(
            series: &Chi2Series<'_, T>,
            fmax: f64,
            opts: &Chi2Options,
            boot: &BootstrapOptions,
        ) -> Vec<f64>
            = LombScargleChi2Bootstrap { series: *series, fmax, opts: *opts, boot: *boot };
    }
}

impl MultiGpu {
    facade! {
        /// [`Kernpack::lombscargle_chi2_bootstrap`] with the copies spread
        /// over every GPU of this handle.
        fn lombscargle_chi2_bootstrap / lombscargle_chi2_bootstrap_profiled(
            series: &Chi2Series<'_, T>,
            fmax: f64,
            opts: &Chi2Options,
            boot: &BootstrapOptions,
        ) -> Vec<f64>
            = LombScargleChi2Bootstrap { series: *series, fmax, opts: *opts, boot: *boot };
    }
}
