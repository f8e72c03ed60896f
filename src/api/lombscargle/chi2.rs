//! Multi-term generalised Lomb-Scargle with astropy's `chi2` semantics
//! (`LombScargle(t, y, dy, nterms=K, fit_mean=, center_data=,
//! normalization=).power(frequency, method='chi2')`): frequencies in cycles
//! per unit time, weights 1 / dy^2, for one series on a frequency array or a
//! uniform grid, or for a ragged batch of series.
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::gpu::lombscargle_chi2::LombScargleChi2OnDevice;
pub use crate::params::lombscargle::{BatchGrid, UniformGrid};
pub use crate::params::lombscargle_chi2::{
    Chi2Normalization, Chi2Options, Chi2Prepared, Chi2Series, MAX_NTERMS,
};

pub use super::peak_search::RefinedPeaks;
pub use crate::params::peaks::{Peak, PeakOptions, Refine, RefinedPeak, RefinedPeakOptions};
pub use crate::params::significance::FapMethod;

use super::batch::check_series_offsets;
use super::check_finite;
use super::peak_search::{check_peaks_room, peaks_in_groups, Gathered, On, Searched};
use crate::api::exec::{CpuRun, Operation};
use crate::api::multi::{self, Exec, GpuProfile, MultiGpu};
use crate::api::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::device::Guards;
use crate::gpu::lombscargle_chi2::check_call;
use crate::gpu::Gpu;
use crate::params::significance::NullDistribution;

/// The values of one series: lengths, finite values, dy > 0 with a usable
/// sum of dy^-2, and (except for 'psd', which does not divide by it) a
/// reference chi^2 that is not zero. Returns the series prepared in f64.
pub fn check_series<T: Float>(
    series: &Chi2Series<'_, T>,
    opts: &Chi2Options,
) -> Result<Chi2Prepared> {
    let (y, dy) = measured_f64(series)?;
    let prep = Chi2Prepared::of(&y, dy.as_deref(), opts);
    if opts.normalization != Chi2Normalization::Psd {
        let mean_square: f64 = prep.w.iter().zip(&y).map(|(w, y)| w * y * y).sum();
        check_reference_chi2(prep.chi2_ref, mean_square, || {
            format!(
                "normalization '{}' divides by the reference chi^2, which is zero: y does not vary",
                normalization_name(opts.normalization)
            )
        })?;
    }
    Ok(prep)
}

/// [`check_measured`], then y and dy in f64 with the weights 1 / dy^2
/// summing within the range of f64.
pub(crate) fn measured_f64<T: Float>(
    series: &Chi2Series<'_, T>,
) -> Result<(Vec<f64>, Option<Vec<f64>>)> {
    check_measured(series)?;
    let y: Vec<f64> = series.y.iter().map(|v| v.to_f64()).collect();
    let dy: Option<Vec<f64>> = series.dy.map(|d| d.iter().map(|v| v.to_f64()).collect());
    if let Some(dy) = &dy {
        let sum: f64 = dy.iter().map(|d| d.powi(-2)).sum();
        if !(sum.is_finite() && (1.0 / sum).is_finite()) {
            return Err(Error::invalid(format!(
                "the weights 1 / dy^2 sum to {sum:e}, outside the range of f64: scale dy"
            )));
        }
    }
    Ok((y, dy))
}

/// A reference chi^2 (normalised weights) a power may divide by, given the
/// weighted mean square of y: not zero, and not the rounding that a constant
/// series leaves of its mean (~(eps y)^2, which must not pass for a signal);
/// `zero` says why it is needed when it is.
pub(crate) fn check_reference_chi2(
    chi2_ref: f64,
    mean_square: f64,
    zero: impl FnOnce() -> String,
) -> Result<()> {
    if !mean_square.is_finite() {
        return Err(Error::invalid("y^2 / dy^2 overflows f64: scale y down"));
    }
    if chi2_ref <= (64.0 * f64::EPSILON).powi(2) * mean_square {
        return Err(Error::invalid(zero()));
    }
    Ok(())
}

/// The checks every series with uncertainties takes: at least one sample,
/// t, y and dy of one length, finite values, dy > 0.
pub(crate) fn check_measured<T: Float>(series: &Chi2Series<'_, T>) -> Result<()> {
    let n = series.t.len();
    if n == 0 {
        return Err(Error::invalid(
            "t is empty: a series needs at least one sample",
        ));
    }
    if series.y.len() != n || series.dy.is_some_and(|dy| dy.len() != n) {
        return Err(Error::invalid(format!(
            "t, y and dy differ in length: {n}, {} and {}",
            series.y.len(),
            series.dy.map_or(n, <[T]>::len)
        )));
    }
    check_finite("t", series.t)?;
    check_finite("y", series.y)?;
    if let Some(dy) = series.dy {
        check_finite("dy", dy)?;
        if let Some(i) = dy.iter().position(|v| v.to_f64() <= 0.0) {
            return Err(Error::invalid(format!(
                "dy[{i}] = {} is not positive",
                dy[i]
            )));
        }
    }
    Ok(())
}

fn normalization_name(n: Chi2Normalization) -> &'static str {
    match n {
        Chi2Normalization::Standard => "standard",
        Chi2Normalization::Model => "model",
        Chi2Normalization::Log => "log",
        Chi2Normalization::Psd => "psd",
    }
}

/// The frequencies of a single-series periodogram (cycles per unit time).
#[derive(Debug, Clone, Copy)]
pub enum Chi2Freqs<'a, T> {
    Array(&'a [T]),
    /// `f0 + k df`, `k = 0..nf`.
    Uniform(UniformGrid),
}

impl<T: Float> Chi2Freqs<'_, T> {
    /// The number of frequencies.
    #[allow(clippy::len_without_is_empty)]
    pub fn len(&self) -> usize {
        match self {
            Chi2Freqs::Array(f) => f.len(),
            Chi2Freqs::Uniform(g) => g.nf,
        }
    }
    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            Chi2Freqs::Array(f) => check_finite("frequency", f),
            Chi2Freqs::Uniform(g) => g.validate_for::<T>(),
        }
    }
    /// Frequency `k` in f64 (a peak's index to its frequency).
    pub fn at(&self, k: usize) -> f64 {
        match self {
            Chi2Freqs::Array(f) => f[k].to_f64(),
            Chi2Freqs::Uniform(g) => g.frequency(k),
        }
    }
}

/// The operation: the periodogram of one series
/// ([`Kernpack::lombscargle_chi2`], [`Kernpack::lombscargle_chi2_uniform`]).
#[derive(Debug, Clone, Copy)]
pub struct LombScargleChi2<'a, T> {
    pub series: Chi2Series<'a, T>,
    pub freqs: Chi2Freqs<'a, T>,
    pub opts: Chi2Options,
}

impl<T: Float> Operation for LombScargleChi2<'_, T> {
    type Output = Vec<T>;

    fn validate(&self) -> Result<()> {
        check_call(1, self.freqs.len(), &self.opts)?;
        self.freqs.validate()?;
        check_series(&self.series, &self.opts)?;
        check_host_room::<T>("the periodogram", self.freqs.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<T>> {
        let prep = check_series(&self.series, &self.opts)?;
        let freqs = self.freqs;
        Ok(cpu::lombscargle_chi2::lombscargle_chi2(
            cpu.threads,
            cpu.progress,
            self.series.t,
            &prep,
            freqs.len(),
            |k| freqs.at(k),
            match freqs {
                Chi2Freqs::Uniform(grid) => Some(grid.df),
                Chi2Freqs::Array(_) => None,
            },
            &self.opts,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<T>> {
        let prep = check_series(&self.series, &self.opts)?;
        let offsets = [0, self.series.t.len()];
        let (array, grid) = match self.freqs {
            Chi2Freqs::Array(f) => (
                Some(f),
                BatchGrid::Shared(UniformGrid::new(0.0, 0.0, f.len())),
            ),
            Chi2Freqs::Uniform(g) => (None, BatchGrid::Shared(g)),
        };
        run_on_gpu(
            gpu,
            self.series.t,
            &offsets,
            &[prep],
            array,
            &grid,
            &self.opts,
        )
    }
}

/// A ragged batch: series s holds samples `offsets[s]..offsets[s + 1]` of
/// `t`, `y` and `dy`.
#[derive(Debug, Clone, Copy)]
pub struct Chi2Batch<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub dy: Option<&'a [T]>,
    pub offsets: &'a [usize],
}

/// Samples per thread below which a batch's series are prepared on one
/// thread (a survey's 10^7 samples take a serial pass longer than their
/// kernels).
const PARALLEL_PREPARE_SAMPLES: usize = 1 << 16;

impl<'a, T: Float> Chi2Batch<'a, T> {
    /// `t`, `y`, `dy` of one length and the offsets within it.
    pub(crate) fn check_shape(&self) -> Result<()> {
        let n = self.t.len();
        if self.y.len() != n || self.dy.is_some_and(|d| d.len() != n) {
            return Err(Error::invalid(format!(
                "t, y and dy of the batch differ in length: {n}, {} and {}",
                self.y.len(),
                self.dy.map_or(n, <[T]>::len)
            )));
        }
        check_series_offsets(self.offsets, n)
    }

    /// The shape checked, then `prepare(s, series s)` of every series, on
    /// threads for large batches; the error of the first bad series either
    /// way, naming it.
    pub(crate) fn prepare_each<P: Send>(
        &self,
        prepare: impl Fn(usize, &Chi2Series<'a, T>) -> Result<P> + Sync,
    ) -> Result<Vec<P>> {
        self.check_shape()?;
        let threads = crate::cpu::parallel::threads_for(
            crate::cpu::threads(),
            self.t.len(),
            PARALLEL_PREPARE_SAMPLES,
        );
        crate::cpu::parallel::try_map_indexed(threads, self.len(), |s| {
            prepare(s, &self.series(s)).map_err(|e| match e {
                Error::InvalidInput(msg) => Error::invalid(format!("series {s}: {msg}")),
                other => other,
            })
        })
    }
}

impl<'a, T> Chi2Batch<'a, T> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Series `s`.
    pub fn series(&self, s: usize) -> Chi2Series<'a, T> {
        let r = self.offsets[s]..self.offsets[s + 1];
        Chi2Series {
            t: &self.t[r.clone()],
            y: &self.y[r.clone()],
            dy: self.dy.map(|dy| &dy[r]),
        }
    }
}

/// The operation: one periodogram per series of a batch
/// ([`Kernpack::lombscargle_chi2_batch`]), on one uniform grid shared by
/// every series or one grid per series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleChi2Batch<'a, T> {
    pub batch: Chi2Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: Chi2Options,
}

impl<T: Float> LombScargleChi2Batch<'_, T> {
    /// The call's counts and options, the batch's shape, and a grid for
    /// each series.
    fn check_shapes(&self) -> Result<()> {
        let nseries = self.batch.len();
        check_call(nseries.max(1), self.grids.nf(), &self.opts)?;
        self.batch.check_shape()?;
        self.grids.check_len(nseries)
    }

    /// Every series checked and prepared, errors naming the series.
    pub(crate) fn prepare(&self) -> Result<Vec<Chi2Prepared>> {
        self.batch.prepare_each(|s, series| {
            self.grids.grid(s).validate_for::<T>()?;
            check_series(series, &self.opts)
        })
    }
}

impl<T: Float> Operation for LombScargleChi2Batch<'_, T> {
    type Output = Vec<Vec<T>>;

    fn validate(&self) -> Result<()> {
        let nseries = self.batch.len();
        self.check_shapes()?;
        self.prepare()?;
        let total = self
            .grids
            .nf()
            .checked_mul(nseries)
            .ok_or_else(|| Error::invalid("nf x nseries overflows"))?;
        check_host_room::<T>("the periodograms", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<Vec<T>>> {
        let preps = self.prepare()?;
        // Threads over frequencies within each series: short series and long
        // grids (the survey case) keep every thread busy either way.
        Ok((0..self.batch.len())
            .map(|s| {
                let grid = self.grids.grid(s);
                cpu::lombscargle_chi2::lombscargle_chi2(
                    cpu.threads,
                    None,
                    self.batch.series(s).t,
                    &preps[s],
                    grid.nf,
                    |k| grid.frequency(k),
                    Some(grid.df),
                    &self.opts,
                )
            })
            .collect())
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<Vec<T>>> {
        let preps = self.prepare()?;
        let nf = self.grids.nf();
        let values = run_on_gpu(
            gpu,
            self.batch.t,
            self.batch.offsets,
            &preps,
            None,
            &self.grids,
            &self.opts,
        )?;
        Ok(values.chunks_exact(nf).map(<[T]>::to_vec).collect())
    }
}

/// Uploads prepared series and runs the kernel: frequencies from `array`
/// (shared by every series) or else from `grids`.
fn run_on_gpu<T: Float>(
    gpu: &Arc<Gpu>,
    t: &[T],
    offsets: &[usize],
    preps: &[Chi2Prepared],
    array: Option<&[T]>,
    grids: &BatchGrid<'_>,
    opts: &Chi2Options,
) -> Result<Vec<T>> {
    let cast = |v: &[f64]| v.iter().map(|&x| T::from_f64(x)).collect::<Vec<T>>();
    let w: Vec<T> = preps.iter().flat_map(|p| cast(&p.w)).collect();
    let wy: Vec<T> = preps.iter().flat_map(|p| cast(&p.wy)).collect();
    let stats: Vec<f64> = preps
        .iter()
        .flat_map(|p| [p.chi2_ref, p.weight_sum])
        .collect();
    let offsets: Vec<i64> = offsets.iter().map(|&o| o as i64).collect();
    let (f0, df) = grids.starts_and_steps();
    let nf = grids.nf();
    let (d_t, d_w, d_wy) = (gpu.upload(t)?, gpu.upload(&w)?, gpu.upload(&wy)?);
    let (d_offsets, d_stats) = (gpu.upload(&offsets)?, gpu.upload(&stats)?);
    let (d_f0, d_df) = (gpu.upload(&f0)?, gpu.upload(&df)?);
    let d_freqs = array.map(|f| gpu.upload(f)).transpose()?;
    // SAFETY: the launch writes every value.
    let mut out = unsafe { gpu.uninit::<T>(preps.len() * nf) }?;
    let mut g = Guards::new(gpu.stream());
    let call = LombScargleChi2OnDevice::<T> {
        nseries: preps.len(),
        n: t.len(),
        offsets: g.read(&d_offsets),
        t: g.read(&d_t),
        w: g.read(&d_w),
        wy: g.read(&d_wy),
        stats: g.read(&d_stats),
        freqs: d_freqs.as_ref().map_or(0, |f| g.read(f)),
        f0: g.read(&d_f0),
        df: g.read(&d_df),
        per_series_grid: matches!(grids, BatchGrid::PerSeries { .. }),
        nf,
        opts: *opts,
        out: g.write(&mut out),
        dtype: PhantomData,
    };
    // SAFETY: buffers just allocated on this GPU, of the lengths the call names.
    unsafe { gpu.launch_fresh(g.with(call), ()) }?;
    gpu.download(&out)
}

/// The operation: the best peaks of every series' multi-term periodogram
/// ([`Kernpack::lombscargle_chi2_batch_peaks`]): the `k` highest distinct
/// maxima ([`crate::params::peaks`], along frequency) of what
/// [`Kernpack::lombscargle_chi2_batch`] gives, without keeping the
/// periodograms. On a GPU the batch runs in chunks of series through the
/// pipeline (also on a one-GPU handle) and each chunk's periodograms are
/// reduced on its GPU, so only the peaks cross the bus; on the CPU, in
/// groups of series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleChi2BatchPeaks<'a, T> {
    pub batch: Chi2Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: Chi2Options,
    pub peaks: PeakOptions,
}

impl<'a, T: Float> LombScargleChi2BatchPeaks<'a, T> {
    /// The same call keeping every periodogram.
    fn periodograms(&self) -> LombScargleChi2Batch<'a, T> {
        LombScargleChi2Batch {
            batch: self.batch,
            grids: self.grids,
            opts: self.opts,
        }
    }
}

impl<T: Float> Operation for LombScargleChi2BatchPeaks<'_, T> {
    type Output = Vec<Vec<Peak>>;

    fn validate(&self) -> Result<()> {
        self.peaks.validate()?;
        let batch = self.periodograms();
        batch.check_shapes()?;
        batch.prepare()?;
        check_peaks_room::<Peak>(self.peaks.k, self.batch.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<Vec<Peak>>> {
        let b = self.batch;
        peaks_in_groups(b.offsets, &self.grids, &self.peaks, |r, offsets, grids| {
            let batch = Chi2Batch {
                t: &b.t[r.clone()],
                y: &b.y[r.clone()],
                dy: b.dy.map(|d| &d[r]),
                offsets,
            };
            let op = LombScargleChi2Batch {
                batch,
                grids,
                opts: self.opts,
            };
            Ok(op.on_cpu(cpu)?.concat())
        })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<Vec<Peak>>> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        let preps = self.periodograms().prepare()?;
        multi::chi2::chi2_batch_peaks(&Exec::Gpus(gpus), &self, &preps)
    }
}

impl<T: Float> Searched for LombScargleChi2BatchPeaks<'_, T> {
    type Value = T;

    fn peak_options(&self) -> PeakOptions {
        self.peaks
    }

    fn offsets(&self) -> &[usize] {
        self.batch.offsets
    }

    fn grids(&self) -> BatchGrid<'_> {
        self.grids
    }

    fn rows(&self, picks: &[usize], grids: BatchGrid<'_>, on: On<'_>) -> Result<Vec<f64>> {
        let b = &self.batch;
        let g = Gathered::of(b.t, b.y, b.dy, b.offsets, picks);
        let batch = Chi2Batch {
            t: &g.t,
            y: &g.y,
            dy: g.dy.as_deref(),
            offsets: &g.offsets,
        };
        let op = LombScargleChi2Batch {
            batch,
            grids,
            opts: self.opts,
        };
        let rows = on.run(op)?;
        Ok(rows.iter().flatten().map(|v| v.to_f64()).collect())
    }

    /// astropy's `false_alarm_probability` refuses multi-term periodograms
    /// and uncentred data.
    fn check_fap(&self) -> Result<()> {
        if self.opts.nterms != 1 {
            return Err(Error::invalid(format!(
                "false-alarm probabilities are for single-term periodograms: astropy has no \
                 analytic false-alarm probability for multi-term ones (nterms = {})",
                self.opts.nterms
            )));
        }
        if !(self.opts.fit_mean || self.opts.center_data) {
            return Err(Error::invalid(
                "false-alarm probabilities are for periodograms of centred data, as astropy's: \
                 set fit_mean or center_data",
            ));
        }
        Ok(())
    }

    fn null_distribution(&self, s: usize) -> Result<NullDistribution> {
        let series = self.batch.series(s);
        let grid = self.grids.grid(s);
        let t: Vec<f64> = series.t.iter().map(|v| v.to_f64()).collect();
        let dy: Option<Vec<f64>> = series.dy.map(|d| d.iter().map(|v| v.to_f64()).collect());
        NullDistribution::new(
            grid.frequency(grid.nf - 1),
            &t,
            dy.as_deref(),
            self.opts.normalization.into(),
        )
    }
}

impl Kernpack {
    facade! {
        /// The multi-term periodogram of `series` at `freqs` (cycles per unit
        /// time), astropy's `LombScargle(...).power(method='chi2')`.
        fn lombscargle_chi2(series: &Chi2Series<'_, T>, freqs: &[T], opts: &Chi2Options) -> Vec<T>
            = LombScargleChi2 { series: *series, freqs: Chi2Freqs::Array(freqs), opts: *opts };

        /// As [`Kernpack::lombscargle_chi2`], on the uniform grid `f0 + k df`
        /// (cycles per unit time).
        fn lombscargle_chi2_uniform(
            series: &Chi2Series<'_, T>,
            grid: &UniformGrid,
            opts: &Chi2Options,
        ) -> Vec<T>
            = LombScargleChi2 { series: *series, freqs: Chi2Freqs::Uniform(*grid), opts: *opts };

        /// One multi-term periodogram per series of `batch`, on the GPU in one
        /// launch or on the CPU.
        fn lombscargle_chi2_batch(
            batch: &Chi2Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &Chi2Options,
        ) -> Vec<Vec<T>>
            = LombScargleChi2Batch { batch: *batch, grids: *grids, opts: *opts };

        /// The best `peaks.k` distinct maxima of each series' multi-term
        /// periodogram, highest first (only they leave the GPU).
        fn lombscargle_chi2_batch_peaks(
            batch: &Chi2Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &Chi2Options,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleChi2BatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };

        /// As [`Kernpack::lombscargle_chi2_batch_peaks`], each peak with its
        /// frequency, refined on a finer local grid when `search.refine`
        /// asks, and its false-alarm probability when `search.fap` names a
        /// method (nterms = 1 with `fit_mean` or `center_data`, as astropy):
        /// see [`RefinedPeaks`].
        fn lombscargle_chi2_batch_refined_peaks(
            batch: &Chi2Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &Chi2Options,
            search: &RefinedPeakOptions,
        ) -> Vec<Vec<RefinedPeak>>
            = RefinedPeaks::of(
                LombScargleChi2BatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: search.peaks },
                search,
            );
    }
}

impl MultiGpu {
    facade! {
        /// [`Kernpack::lombscargle_chi2_batch_peaks`] over every GPU of this
        /// handle, in chunks of series.
        fn lombscargle_chi2_batch_peaks / lombscargle_chi2_batch_peaks_profiled(
            batch: &Chi2Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &Chi2Options,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleChi2BatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };

        /// As [`Kernpack::lombscargle_chi2_batch_refined_peaks`], with the
        /// coarse search over every GPU of this handle and the refinement on
        /// the first.
        fn lombscargle_chi2_batch_refined_peaks / lombscargle_chi2_batch_refined_peaks_profiled(
            batch: &Chi2Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &Chi2Options,
            search: &RefinedPeakOptions,
        ) -> Vec<Vec<RefinedPeak>>
            = RefinedPeaks::of(
                LombScargleChi2BatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: search.peaks },
                search,
            );
    }
}
