//! Multiband Lomb-Scargle with astropy's `LombScargleMultiband` semantics
//! (`power(frequency, method='flexible' | 'fast')`): one period shared by
//! every band of a series, frequencies in cycles per unit time, weights
//! 1 / dy^2, for one series on a frequency array or a uniform grid, or for a
//! ragged batch of series. The methods and options are described in
//! [`crate::params::lombscargle_multiband`].
use std::marker::PhantomData;
use std::sync::Arc;

pub use super::peak_search::RefinedPeaks;
use super::peak_search::{
    check_peaks_room, gather, peaks_in_groups, select_rows, Gathered, On, Searched,
};
pub use crate::gpu::lombscargle_multiband::LombScargleMultibandOnDevice;
pub use crate::params::lombscargle::{BatchGrid, UniformGrid};
pub use crate::params::lombscargle_multiband::{
    MultibandFlat, MultibandMethod, MultibandOptions, MultibandPrepared, MultibandSeries,
    MAX_MULTIBAND_NTERMS,
};
pub use crate::params::peaks::{Peak, PeakOptions, Refine, RefinedPeak, RefinedPeakOptions};
use crate::params::significance::NullDistribution;

use super::chi2::{
    check_reference_chi2, check_series as check_chi2_series, measured_f64, Chi2Batch, Chi2Freqs,
    Chi2Options, Chi2Series, LombScargleChi2, LombScargleChi2Batch,
};
use crate::api::exec::{CpuRun, Operation, Split};
use crate::api::multi::{self, Exec, GpuProfile, MultiGpu};
use crate::api::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::device::Guards;
use crate::gpu::lombscargle_multiband::check_call;
use crate::gpu::Gpu;

/// The single-band options the fast method runs each band with.
fn band_options(opts: &MultibandOptions) -> Chi2Options {
    Chi2Options {
        nterms: opts.nterms_base,
        fit_mean: opts.fit_mean,
        center_data: opts.center_data,
        normalization: opts.normalization,
    }
}

/// One band of a series, gathered: `(label, t, y, dy)`.
type Band<T> = (u32, Vec<T>, Vec<T>, Option<Vec<T>>);

/// The bands of `series` in label order, each its samples in series order.
fn split_bands<T: Float>(
    series: &MultibandSeries<'_, T>,
    prep: &MultibandPrepared,
) -> Vec<Band<T>> {
    (0..prep.nbands())
        .map(|k| {
            let idx = &prep.order[prep.band_starts[k]..prep.band_starts[k + 1]];
            let pick = |v: &[T]| idx.iter().map(|&i| v[i]).collect::<Vec<T>>();
            (
                prep.labels[k],
                pick(series.t),
                pick(series.y),
                series.dy.map(pick),
            )
        })
        .collect()
}

/// The values of one series: what the multi-term periodogram checks
/// (lengths, finite values, dy > 0, usable weights), a band per sample, and
/// a reference chi^2 that is not zero (y varies about its band means) for
/// the flexible method, or each band usable on its own for the fast one.
/// Returns the series prepared in f64.
pub fn check_series<T: Float>(
    series: &MultibandSeries<'_, T>,
    opts: &MultibandOptions,
) -> Result<MultibandPrepared> {
    let (y, dy) = measured_f64(&Chi2Series {
        t: series.t,
        y: series.y,
        dy: series.dy,
    })?;
    if series.bands.len() != series.t.len() {
        return Err(Error::invalid(format!(
            "t and bands differ in length: {} and {}",
            series.t.len(),
            series.bands.len()
        )));
    }
    let prep = MultibandPrepared::of(&y, dy.as_deref(), series.bands, opts);
    match opts.method {
        MultibandMethod::Flexible => {
            let mean_square: f64 = prep
                .order
                .iter()
                .zip(&prep.w)
                .map(|(&i, w)| w * y[i] * y[i])
                .sum();
            check_reference_chi2(prep.chi2_ref, mean_square, || {
                "the power divides by the reference chi^2, which is zero: \
                 y does not vary about its band means"
                    .to_owned()
            })?;
        }
        MultibandMethod::Fast => {
            let band_opts = band_options(opts);
            for (label, t, y, dy) in split_bands(series, &prep) {
                let band = Chi2Series {
                    t: &t,
                    y: &y,
                    dy: dy.as_deref(),
                };
                check_chi2_series(&band, &band_opts)
                    .map_err(|e| in_context(e, format!("band {label}")))?;
            }
        }
    }
    Ok(prep)
}

/// `e` with `what` in front of its message (input errors only).
fn in_context(e: Error, what: String) -> Error {
    match e {
        Error::InvalidInput(msg) => Error::invalid(format!("{what}: {msg}")),
        other => other,
    }
}

/// astropy's combination of the bands' periodograms: weights proportional to
/// each band's sum of squared powers over the frequencies.
fn combine<T: Float>(powers: &[Vec<T>]) -> Vec<T> {
    let weights: Vec<f64> = powers
        .iter()
        .map(|p| p.iter().map(|v| v.to_f64() * v.to_f64()).sum())
        .collect();
    let total: f64 = weights.iter().sum();
    let nf = powers.first().map_or(0, Vec::len);
    (0..nf)
        .map(|k| {
            let v: f64 = powers
                .iter()
                .zip(&weights)
                .map(|(p, w)| w / total * p[k].to_f64())
                .sum();
            T::from_f64(v)
        })
        .collect()
}

/// The operation: the periodogram of one series
/// ([`Kernpack::lombscargle_multiband`], [`Kernpack::lombscargle_multiband_uniform`]).
#[derive(Debug, Clone, Copy)]
pub struct LombScargleMultiband<'a, T> {
    pub series: MultibandSeries<'a, T>,
    pub freqs: Chi2Freqs<'a, T>,
    pub opts: MultibandOptions,
}

impl<'a, T: Float> LombScargleMultiband<'a, T> {
    /// The fast method: each band's periodogram by `run`, combined.
    fn fast(
        &self,
        prep: &MultibandPrepared,
        run: impl Fn(LombScargleChi2<'_, T>) -> Result<Vec<T>>,
    ) -> Result<Vec<T>> {
        let opts = band_options(&self.opts);
        let powers = split_bands(&self.series, prep)
            .iter()
            .map(|(_, t, y, dy)| {
                let series = Chi2Series {
                    t,
                    y,
                    dy: dy.as_deref(),
                };
                run(LombScargleChi2 {
                    series,
                    freqs: self.freqs,
                    opts,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(combine(&powers))
    }
}

impl<T: Float> Operation for LombScargleMultiband<'_, T> {
    type Output = Vec<T>;

    fn validate(&self) -> Result<()> {
        check_call(1, self.freqs.len(), &self.opts)?;
        self.freqs.validate()?;
        check_series(&self.series, &self.opts)?;
        check_host_room::<T>("the periodogram", self.freqs.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<T>> {
        let prep = check_series(&self.series, &self.opts)?;
        match self.opts.method {
            MultibandMethod::Fast => self.fast(&prep, |op| op.on_cpu(cpu)),
            MultibandMethod::Flexible => {
                let freqs = self.freqs;
                Ok(cpu::lombscargle_multiband::flexible(
                    cpu.threads,
                    cpu.progress,
                    self.series.t,
                    &prep,
                    freqs.len(),
                    |k| freqs.at(k),
                    &self.opts,
                ))
            }
        }
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<T>> {
        let prep = check_series(&self.series, &self.opts)?;
        match self.opts.method {
            MultibandMethod::Fast => self.fast(&prep, |op| op.on_gpu(gpu)),
            MultibandMethod::Flexible => {
                let (array, grid) = match self.freqs {
                    Chi2Freqs::Array(f) => (
                        Some(f),
                        BatchGrid::Shared(UniformGrid::new(0.0, 0.0, f.len())),
                    ),
                    Chi2Freqs::Uniform(g) => (None, BatchGrid::Shared(g)),
                };
                flexible_on_gpu(gpu, &[(self.series.t, prep)], array, &grid, &self.opts)
            }
        }
    }
}

/// A ragged batch of multiband series: series s holds samples
/// `offsets[s]..offsets[s + 1]` of `t`, `y`, `dy` and `bands`.
#[derive(Debug, Clone, Copy)]
pub struct MultibandBatch<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub dy: Option<&'a [T]>,
    pub bands: &'a [u32],
    pub offsets: &'a [usize],
}

impl<'a, T: Float> MultibandBatch<'a, T> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Series `s`.
    pub fn series(&self, s: usize) -> MultibandSeries<'a, T> {
        let r = self.offsets[s]..self.offsets[s + 1];
        MultibandSeries {
            t: &self.t[r.clone()],
            y: &self.y[r.clone()],
            dy: self.dy.map(|dy| &dy[r.clone()]),
            bands: &self.bands[r],
        }
    }

    /// Shapes checked, then every series checked and prepared (on threads
    /// for large batches), errors naming the first bad series.
    fn prepare(
        &self,
        grids: &BatchGrid<'_>,
        opts: &MultibandOptions,
    ) -> Result<Vec<MultibandPrepared>> {
        let n = self.t.len();
        if self.bands.len() != n {
            return Err(Error::invalid(format!(
                "t and bands of the batch differ in length: {n} and {}",
                self.bands.len()
            )));
        }
        let samples = Chi2Batch {
            t: self.t,
            y: self.y,
            dy: self.dy,
            offsets: self.offsets,
        };
        samples.prepare_each(|s, _| {
            grids.grid(s).validate_for::<T>()?;
            check_series(&self.series(s), opts)
        })
    }
}

/// The operation: one periodogram per series of a batch
/// ([`Kernpack::lombscargle_multiband_batch`]), on one uniform grid shared
/// by every series or one grid per series. The output is flat, series after
/// series (`nseries x nf`, row-major): a survey's periodograms are one
/// allocation, as the GPU writes them.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleMultibandBatch<'a, T> {
    pub batch: MultibandBatch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: MultibandOptions,
}

impl<T: Float> LombScargleMultibandBatch<'_, T> {
    /// The call's counts and options, and a grid for each series.
    fn check_shapes(&self) -> Result<()> {
        check_call(self.batch.len().max(1), self.grids.nf(), &self.opts)?;
        self.grids.check_len(self.batch.len())
    }

    /// Every series checked and prepared, errors naming the series.
    pub(crate) fn prepared(&self) -> Result<Vec<MultibandPrepared>> {
        self.batch.prepare(&self.grids, &self.opts)
    }

    /// The fast method: every band of every series one series of a
    /// multi-term batch run by `run` (on its series' grid), then each
    /// series' bands combined.
    fn fast(
        &self,
        preps: &[MultibandPrepared],
        run: impl Fn(LombScargleChi2Batch<'_, T>) -> Result<Vec<Vec<T>>>,
    ) -> Result<Vec<T>> {
        let (mut t, mut y, mut dy) = (Vec::new(), Vec::new(), Vec::new());
        let (mut offsets, mut f0, mut df) = (vec![0], Vec::new(), Vec::new());
        for (s, prep) in preps.iter().enumerate() {
            let grid = self.grids.grid(s);
            for (_, bt, by, bdy) in split_bands(&self.batch.series(s), prep) {
                t.extend(bt);
                y.extend(by);
                dy.extend(bdy.unwrap_or_default());
                offsets.push(t.len());
                f0.push(grid.f0);
                df.push(grid.df);
            }
        }
        let batch = Chi2Batch {
            t: &t,
            y: &y,
            dy: self.batch.dy.map(|_| dy.as_slice()),
            offsets: &offsets,
        };
        let grids = BatchGrid::PerSeries {
            f0: &f0,
            df: &df,
            nf: self.grids.nf(),
        };
        let mut powers = run(LombScargleChi2Batch {
            batch,
            grids,
            opts: band_options(&self.opts),
        })?
        .into_iter();
        Ok(preps
            .iter()
            .flat_map(|prep| combine(&powers.by_ref().take(prep.nbands()).collect::<Vec<_>>()))
            .collect())
    }
}

impl<T: Float> Operation for LombScargleMultibandBatch<'_, T> {
    type Output = Vec<T>;

    fn validate(&self) -> Result<()> {
        let nseries = self.batch.len();
        self.check_shapes()?;
        self.prepared()?;
        let total = self
            .grids
            .nf()
            .checked_mul(nseries)
            .ok_or_else(|| Error::invalid("nf x nseries overflows"))?;
        check_host_room::<T>("the periodograms", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<T>> {
        let preps = self.prepared()?;
        match self.opts.method {
            MultibandMethod::Fast => self.fast(&preps, |op| op.on_cpu(cpu)),
            // Threads over frequencies within each series, as the
            // multi-term batch.
            MultibandMethod::Flexible => Ok(preps
                .iter()
                .enumerate()
                .flat_map(|(s, prep)| {
                    let grid = self.grids.grid(s);
                    cpu::lombscargle_multiband::flexible(
                        cpu.threads,
                        None,
                        self.batch.series(s).t,
                        prep,
                        grid.nf,
                        |k| grid.frequency(k),
                        &self.opts,
                    )
                })
                .collect()),
        }
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<T>> {
        let preps = self.prepared()?;
        match self.opts.method {
            MultibandMethod::Fast => self.fast(&preps, |op| op.on_gpu(gpu)),
            MultibandMethod::Flexible => {
                let series: Vec<(&[T], MultibandPrepared)> = preps
                    .into_iter()
                    .enumerate()
                    .map(|(s, p)| (self.batch.series(s).t, p))
                    .collect();
                flexible_on_gpu(gpu, &series, None, &self.grids, &self.opts)
            }
        }
    }

    /// The flexible method splits into chunks of series (the fast one runs
    /// its bands' multi-term batch in one piece).
    fn split(&self) -> Option<Split> {
        if self.opts.method == MultibandMethod::Fast {
            return None;
        }
        let job = multi::multiband::sizing_job(self);
        multi::split_of(&job, self.batch.len(), multi::longest(self.batch.offsets))
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Vec<T>, Vec<GpuProfile>)> {
        match self.opts.method {
            MultibandMethod::Fast => Ok((self.on_gpu(&gpus.gpus()[0])?, Vec::new())),
            MultibandMethod::Flexible => {
                let preps = self.prepared()?;
                multi::multiband::multiband_batch(&Exec::Gpus(gpus), &self, &preps)
            }
        }
    }
}

/// Uploads prepared series (each `(t, prepared)`, `t` in the series' own
/// order) in f64, as the kernel takes them, and runs the flexible kernel:
/// frequencies from `array` (shared by every series) or else from `grids`.
fn flexible_on_gpu<T: Float>(
    gpu: &Arc<Gpu>,
    series: &[(&[T], MultibandPrepared)],
    array: Option<&[T]>,
    grids: &BatchGrid<'_>,
    opts: &MultibandOptions,
) -> Result<Vec<T>> {
    let flat = MultibandFlat::of(series.iter().map(|(t, p)| (*t, p)));
    let (f0, df) = grids.starts_and_steps();
    let nf = grids.nf();
    let (d_t, d_w, d_wy) = (
        gpu.upload(&flat.t)?,
        gpu.upload(&flat.w)?,
        gpu.upload(&flat.wy)?,
    );
    let d_series = gpu.upload(&flat.series_bands)?;
    let d_bands = gpu.upload(&flat.band_starts)?;
    let d_stats = gpu.upload(&flat.stats)?;
    let (d_f0, d_df) = (gpu.upload(&f0)?, gpu.upload(&df)?);
    let freqs: Option<Vec<f64>> = array.map(|f| f.iter().map(|v| v.to_f64()).collect());
    let d_freqs = freqs.as_deref().map(|f| gpu.upload(f)).transpose()?;
    // SAFETY: the launch writes every value.
    let mut out = unsafe { gpu.uninit::<T>(series.len() * nf) }?;
    let mut g = Guards::new(gpu.stream());
    let call = LombScargleMultibandOnDevice::<T> {
        nseries: series.len(),
        n: flat.t.len(),
        nsegments: flat.segments(),
        series_bands: g.read(&d_series),
        band_starts: g.read(&d_bands),
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

/// The operation: the best peaks of every series' multiband periodogram
/// ([`Kernpack::lombscargle_multiband_batch_peaks`]): the `k` highest
/// distinct maxima ([`crate::params::peaks`], along frequency) of what
/// [`Kernpack::lombscargle_multiband_batch`] gives, without keeping the
/// periodograms. On a GPU the flexible method runs in chunks through the
/// pipeline (also on a one-GPU handle) and each chunk's periodograms are
/// reduced on its GPU, so only the peaks cross the bus; the fast method's
/// periodograms are reduced on the host.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleMultibandBatchPeaks<'a, T> {
    pub batch: MultibandBatch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: MultibandOptions,
    pub peaks: PeakOptions,
}

impl<'a, T: Float> LombScargleMultibandBatchPeaks<'a, T> {
    /// The same call keeping every periodogram.
    pub(crate) fn periodograms(&self) -> LombScargleMultibandBatch<'a, T> {
        LombScargleMultibandBatch {
            batch: self.batch,
            grids: self.grids,
            opts: self.opts,
        }
    }
}

impl<T: Float> Operation for LombScargleMultibandBatchPeaks<'_, T> {
    type Output = Vec<Vec<Peak>>;

    fn validate(&self) -> Result<()> {
        self.peaks.validate()?;
        let batch = self.periodograms();
        batch.check_shapes()?;
        // The CPU path and the fast method hold a series' periodogram and
        // its frequencies (f64) on the host to select its peaks. No buffer
        // of the caller's bounds `nf` (the outputs are k per series), so it
        // is sized here: an impossible count would abort the process at the
        // allocation.
        check_host_room::<f64>("a periodogram's frequencies", self.grids.nf())?;
        batch.prepared()?;
        check_peaks_room::<Peak>(self.peaks.k, self.batch.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<Vec<Peak>>> {
        let b = self.batch;
        peaks_in_groups(b.offsets, &self.grids, &self.peaks, |r, offsets, grids| {
            let batch = MultibandBatch {
                t: &b.t[r.clone()],
                y: &b.y[r.clone()],
                dy: b.dy.map(|d| &d[r.clone()]),
                bands: &b.bands[r],
                offsets,
            };
            let op = LombScargleMultibandBatch {
                batch,
                grids,
                opts: self.opts,
            };
            op.on_cpu(cpu)
        })
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<Vec<Peak>>> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        let batch = self.periodograms();
        match self.opts.method {
            MultibandMethod::Fast => {
                let values = batch.on_gpu(&gpus.gpus()[0])?;
                Ok((
                    select_rows(&values, &self.grids, 0, &self.peaks),
                    Vec::new(),
                ))
            }
            MultibandMethod::Flexible => {
                let preps = batch.prepared()?;
                multi::multiband::multiband_batch_peaks(
                    &Exec::Gpus(gpus),
                    &batch,
                    &preps,
                    self.peaks,
                )
            }
        }
    }
}

impl Kernpack {
    facade! {
        /// The multiband periodogram of `series` at `freqs` (cycles per unit
        /// time), astropy's `LombScargleMultiband(...).power(frequency,
        /// method=...)`.
        fn lombscargle_multiband(
            series: &MultibandSeries<'_, T>,
            freqs: &[T],
            opts: &MultibandOptions,
        ) -> Vec<T>
            = LombScargleMultiband { series: *series, freqs: Chi2Freqs::Array(freqs), opts: *opts };

        /// As [`Kernpack::lombscargle_multiband`], on the uniform grid
        /// `f0 + k df` (cycles per unit time).
        fn lombscargle_multiband_uniform(
            series: &MultibandSeries<'_, T>,
            grid: &UniformGrid,
            opts: &MultibandOptions,
        ) -> Vec<T>
            = LombScargleMultiband { series: *series, freqs: Chi2Freqs::Uniform(*grid), opts: *opts };

        /// One multiband periodogram per series of `batch`, on the GPU in one
        /// launch (the flexible method) or on the CPU: `nseries x nf` values,
        /// series after series.
        fn lombscargle_multiband_batch(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
        ) -> Vec<T>
            = LombScargleMultibandBatch { batch: *batch, grids: *grids, opts: *opts };

        /// The best `peaks.k` distinct maxima of each series' multiband
        /// periodogram, highest first (only they leave the GPU).
        fn lombscargle_multiband_batch_peaks(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleMultibandBatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };

        /// As [`Kernpack::lombscargle_multiband_batch_peaks`], each peak with
        /// its frequency, refined on a finer local grid when
        /// `search.refine` asks (see [`RefinedPeaks`]; the flexible method
        /// only: the fast one's power depends on the whole grid). astropy
        /// has no false-alarm probability for multiband periodograms:
        /// `search.fap` must be None.
        fn lombscargle_multiband_batch_refined_peaks(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
            search: &RefinedPeakOptions,
        ) -> Vec<Vec<RefinedPeak>>
            = RefinedPeaks::of(
                LombScargleMultibandBatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: search.peaks },
                search,
            );
    }
}

impl<T: Float> Searched for LombScargleMultibandBatchPeaks<'_, T> {
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
        let bands = gather(b.bands, b.offsets, picks);
        let batch = MultibandBatch {
            t: &g.t,
            y: &g.y,
            dy: g.dy.as_deref(),
            bands: &bands,
            offsets: &g.offsets,
        };
        let op = LombScargleMultibandBatch {
            batch,
            grids,
            opts: self.opts,
        };
        Ok(on.run(op)?.iter().map(|v| v.to_f64()).collect())
    }

    /// The fast method weighs each band by its sum of squared powers over
    /// the call's frequencies, so its power at a frequency depends on the
    /// grid: a local grid's values are not the coarse periodogram's.
    fn check_refine(&self) -> Result<()> {
        if self.opts.method == MultibandMethod::Fast {
            return Err(Error::invalid(
                "peaks of the fast method cannot be refined: its bands are weighed by their \
                 powers over the whole grid, so a finer local grid gives other values; \
                 refine with the flexible method, or use a finer grid",
            ));
        }
        Ok(())
    }

    fn check_fap(&self) -> Result<()> {
        Err(Error::invalid(
            "astropy has no false-alarm probability for multiband periodograms: \
             leave fap unset",
        ))
    }

    fn null_distribution(&self, _: usize) -> Result<NullDistribution> {
        self.check_fap()
            .map(|()| unreachable!("refused by check_fap"))
    }
}

impl MultiGpu {
    facade! {
        /// [`Kernpack::lombscargle_multiband_batch`] over every GPU of this
        /// handle, in chunks of series (the flexible method; the fast one
        /// runs on the first GPU).
        fn lombscargle_multiband_batch / lombscargle_multiband_batch_profiled(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
        ) -> Vec<T>
            = LombScargleMultibandBatch { batch: *batch, grids: *grids, opts: *opts };

        /// [`Kernpack::lombscargle_multiband_batch_peaks`] over every GPU of
        /// this handle.
        fn lombscargle_multiband_batch_peaks / lombscargle_multiband_batch_peaks_profiled(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleMultibandBatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };

        /// As [`Kernpack::lombscargle_multiband_batch_refined_peaks`], with
        /// the coarse search over every GPU of this handle and the
        /// refinement on the first.
        fn lombscargle_multiband_batch_refined_peaks
            / lombscargle_multiband_batch_refined_peaks_profiled(
            batch: &MultibandBatch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &MultibandOptions,
            search: &RefinedPeakOptions,
        ) -> Vec<Vec<RefinedPeak>>
            = RefinedPeaks::of(
                LombScargleMultibandBatchPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: search.peaks },
                search,
            );
    }
}
