//! Phase-folding period searches ([`crate::params::phasefold`]): phase
//! dispersion minimisation (PDM) and conditional entropy (CE) of one series
//! or of every series of a ragged batch at each trial frequency, f32 and
//! f64, on a frequency array or a uniform grid. One operation serves both
//! statistics ([`Statistic`]); every backend bins each sample alike and adds
//! in the same order, so the GPU gives the CPU backend's bits.
use std::sync::Arc;

pub use crate::api::lombscargle::chi2::{Chi2Batch as FoldBatch, Chi2Freqs as FoldFreqs};
pub use crate::gpu::phasefold::FoldOnDevice;
pub use crate::params::lombscargle::UniformGrid;
/// One series: times, values and optional uncertainties `dy` (PDM's weights
/// 1 / dy^2; CE does not use them).
pub use crate::params::lombscargle_chi2::Chi2Series as FoldSeries;
pub use crate::params::peaks::{Peak, PeakOptions, MAX_PEAKS};
pub use crate::params::phasefold::{CeOptions, PdmOptions, Statistic, MAX_CE_CELLS, MAX_PDM_BINS};

use super::exec::{CpuRun, Operation, Split};
use super::lombscargle::chi2::check_measured;
use super::multi::{self, phasefold::FoldJob, Exec, GpuProfile, MultiGpu};
use super::{check_host_room, Kernpack};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::Gpu;
use crate::params::peaks::select_peaks;
use crate::params::phasefold::{ce_max_count, FoldPrepared};

/// The values of one series checked (lengths, at least one sample, finite
/// values, dy > 0, sums within f64's range, CE counts within u32) and
/// prepared for `statistic`.
fn prepare<T: Float>(series: &FoldSeries<'_, T>, statistic: &Statistic) -> Result<FoldPrepared> {
    check_measured(series)?;
    if let Statistic::ConditionalEntropy(o) = statistic {
        let counts = ce_max_count(series.t.len(), o).saturating_mul(o.phase_overlap + 1);
        if counts > u32::MAX as usize {
            return Err(Error::invalid(format!(
                "{} samples with these overlaps exceed the u32 counts of a cell",
                series.t.len()
            )));
        }
    }
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let dy = series.dy.map(f64s);
    FoldPrepared::of(&f64s(series.t), &f64s(series.y), dy.as_deref(), statistic)
}

/// The frequencies of a call in f64: finite, non-negative, at least one.
fn frequencies<T: Float>(freqs: &FoldFreqs<'_, T>) -> Result<Vec<f64>> {
    freqs.validate()?;
    // A grid's count is bounded by no buffer of the caller's (the peaks
    // write k per series, not nf), so it is sized here before the f64 copy
    // is formed: an impossible count would otherwise abort the process.
    check_host_room::<f64>("the frequencies", freqs.len())?;
    let f: Vec<f64> = (0..freqs.len()).map(|k| freqs.at(k)).collect();
    if f.is_empty() {
        return Err(Error::invalid("no frequencies: at least one is needed"));
    }
    if let Some(k) = f.iter().position(|&v| v < 0.0) {
        return Err(Error::invalid(format!(
            "frequency[{k}] = {} is negative",
            f[k]
        )));
    }
    Ok(f)
}

/// The operation: the statistic of one series at each frequency
/// ([`Kernpack::pdm`], [`Kernpack::conditional_entropy`] and their uniform-
/// grid forms).
#[derive(Debug, Clone, Copy)]
pub struct PhaseFold<'a, T> {
    pub series: FoldSeries<'a, T>,
    pub freqs: FoldFreqs<'a, T>,
    pub statistic: Statistic,
}

impl<'a, T: Float> PhaseFold<'a, T> {
    /// The same call as a batch of one series.
    fn as_batch(&self, offsets: &'a [usize; 2]) -> PhaseFoldBatch<'a, T> {
        PhaseFoldBatch {
            batch: FoldBatch {
                t: self.series.t,
                y: self.series.y,
                dy: self.series.dy,
                offsets,
            },
            freqs: self.freqs,
            statistic: self.statistic,
        }
    }
}

impl<T: Float> Operation for PhaseFold<'_, T> {
    type Output = Vec<T>;

    fn validate(&self) -> Result<()> {
        self.statistic.validate()?;
        frequencies(&self.freqs)?;
        prepare(&self.series, &self.statistic)?;
        check_host_room::<T>("the statistic", self.freqs.len())
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<T>> {
        let offsets = [0, self.series.t.len()];
        Ok(self.as_batch(&offsets).on_cpu(cpu)?.remove(0))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<T>> {
        let offsets = [0, self.series.t.len()];
        Ok(self.as_batch(&offsets).on_gpu(gpu)?.remove(0))
    }
}

/// The operation: the statistic of every series of a ragged batch at the
/// same frequencies ([`Kernpack::pdm_batch`],
/// [`Kernpack::conditional_entropy_batch`]).
#[derive(Debug, Clone, Copy)]
pub struct PhaseFoldBatch<'a, T> {
    pub batch: FoldBatch<'a, T>,
    pub freqs: FoldFreqs<'a, T>,
    pub statistic: Statistic,
}

impl<T: Float> PhaseFoldBatch<'_, T> {
    /// The frequencies and every series, checked and prepared.
    pub(crate) fn prepared(&self) -> Result<(Vec<f64>, Vec<FoldPrepared>)> {
        self.statistic.validate()?;
        let freqs = frequencies(&self.freqs)?;
        Ok((freqs, self.prepare()?))
    }

    /// Every series checked and prepared, errors naming the series.
    fn prepare(&self) -> Result<Vec<FoldPrepared>> {
        self.batch
            .prepare_each(|_, series| prepare(series, &self.statistic))
    }
}

/// Rows of `nf` values, series after series.
pub(crate) fn rows<T: Copy>(values: &[T], nf: usize) -> Vec<Vec<T>> {
    values.chunks(nf.max(1)).map(<[T]>::to_vec).collect()
}

impl<T: Float> Operation for PhaseFoldBatch<'_, T> {
    type Output = Vec<Vec<T>>;

    fn validate(&self) -> Result<()> {
        self.prepared()?;
        let total = self
            .freqs
            .len()
            .checked_mul(self.batch.len())
            .ok_or_else(|| Error::invalid("frequencies x series overflows"))?;
        check_host_room::<T>("the statistic", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<Vec<T>>> {
        let (freqs, preps) = self.prepared()?;
        let values =
            crate::cpu::phasefold::fold(cpu.threads, cpu.progress, &preps, &freqs, &self.statistic);
        let values: Vec<T> = values.iter().map(|&v| T::from_f64(v)).collect();
        Ok(rows(&values, freqs.len()))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<Vec<T>>> {
        let (freqs, preps) = self.prepared()?;
        let values = crate::gpu::phasefold::fold::<T>(gpu, &preps, &freqs, &self.statistic)?;
        Ok(rows(&values, freqs.len()))
    }

    fn split(&self) -> Option<Split> {
        // Sizes only: the arenas do not depend on the values.
        let longest = multi::longest(self.batch.offsets);
        let table_len = match self.statistic {
            Statistic::ConditionalEntropy(o) => {
                let n = self
                    .batch
                    .offsets
                    .get(longest + 1)
                    .map_or(0, |e| e - self.batch.offsets[longest]);
                ce_max_count(n, &o) + 1
            }
            Statistic::Pdm(_) => 0,
        };
        let job = FoldJob {
            offsets: self.batch.offsets,
            preps: &[],
            freqs: &vec![0.0; self.freqs.len()],
            statistic: self.statistic,
            nlogn: &vec![0.0; table_len],
            out_f32: T::NAME == "f32",
            peaks: None,
        };
        multi::split_of(&job, self.batch.len(), longest)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::phasefold::fold_batch(&Exec::Gpus(gpus), self)
    }
}

/// The operation: the best peaks of every series' statistic
/// ([`Kernpack::phase_fold_batch_peaks`]): the `k` lowest distinct minima
/// ([`crate::params::peaks`]) of what [`Kernpack::phase_fold_batch`] gives,
/// without keeping the statistic. On a GPU the batch runs in chunks through
/// the pipeline (also on a one-GPU handle) and each chunk's values are
/// reduced on its GPU, so only the peaks cross the bus and a batch of any
/// size runs in bounded device memory.
#[derive(Debug, Clone, Copy)]
pub struct PhaseFoldBatchPeaks<'a, T> {
    pub batch: FoldBatch<'a, T>,
    pub freqs: FoldFreqs<'a, T>,
    pub statistic: Statistic,
    pub peaks: PeakOptions,
}

/// Values the CPU backend holds at once for the peaks: series are folded
/// in groups of about this many values, then reduced.
const CPU_PEAK_VALUES: usize = 1 << 22;

impl<'a, T: Float> PhaseFoldBatchPeaks<'a, T> {
    /// The same call keeping every value.
    pub(crate) fn fold(&self) -> PhaseFoldBatch<'a, T> {
        PhaseFoldBatch {
            batch: self.batch,
            freqs: self.freqs,
            statistic: self.statistic,
        }
    }
}

impl<T: Float> Operation for PhaseFoldBatchPeaks<'_, T> {
    type Output = Vec<Vec<Peak>>;

    fn validate(&self) -> Result<()> {
        self.peaks.validate()?;
        self.fold().prepared()?;
        let total = self
            .peaks
            .k
            .checked_mul(self.batch.len())
            .ok_or_else(|| Error::invalid("peaks x series overflows"))?;
        check_host_room::<Peak>("the peaks", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<Vec<Peak>>> {
        let (freqs, preps) = self.fold().prepared()?;
        let (nf, better) = (freqs.len(), self.statistic.better());
        let total = (preps.len() * nf) as u64;
        let group = (CPU_PEAK_VALUES / nf).max(1);
        let mut peaks: Vec<Vec<Peak>> = vec![Vec::new(); preps.len()];
        for (g, part) in preps.chunks(group).enumerate() {
            let first = g * group;
            let progress = cpu
                .progress
                .map(|report| move |done: u64, _: u64| report((first * nf) as u64 + done, total));
            let progress = progress.as_ref().map(|p| p as &(dyn Fn(u64, u64) + Sync));
            let values =
                crate::cpu::phasefold::fold(cpu.threads, progress, part, &freqs, &self.statistic);
            // The values as T gives them, then their peaks, rows on the threads.
            let values: Vec<f64> = values.iter().map(|&v| T::from_f64(v).to_f64()).collect();
            let out = &mut peaks[first..first + part.len()];
            crate::cpu::parallel::for_each_chunk(cpu.threads, out, 16, None, |at, rows| {
                for (r, slot) in rows.iter_mut().enumerate() {
                    let row = &values[(at + r) * nf..(at + r + 1) * nf];
                    *slot = select_peaks(row, &freqs, &self.peaks, better);
                }
            });
        }
        Ok(peaks)
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<Vec<Peak>>> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::phasefold::fold_batch_peaks(&Exec::Gpus(gpus), self)
    }
}

impl Kernpack {
    facade! {
        /// Phase dispersion minimisation: PDM's theta of `series` at each of
        /// `freqs` (cycles per unit of `t`), in [0, 1], lower at a better
        /// period.
        fn pdm(series: &FoldSeries<'_, T>, freqs: &[T], opts: &PdmOptions) -> Vec<T>
            = PhaseFold { series: *series, freqs: FoldFreqs::Array(freqs), statistic: Statistic::Pdm(*opts) };

        /// As [`Kernpack::pdm`], on the uniform grid `f0 + k df`.
        fn pdm_uniform(series: &FoldSeries<'_, T>, grid: &UniformGrid, opts: &PdmOptions) -> Vec<T>
            = PhaseFold { series: *series, freqs: FoldFreqs::Uniform(*grid), statistic: Statistic::Pdm(*opts) };

        /// PDM's theta of every series of `batch` at the same frequencies, on
        /// the GPU in one launch or on the CPU: one row per series.
        fn pdm_batch(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &PdmOptions) -> Vec<Vec<T>>
            = PhaseFoldBatch { batch: *batch, freqs: *freqs, statistic: Statistic::Pdm(*opts) };

        /// The conditional entropy of `series` at each of `freqs` (cycles per
        /// unit of `t`), lower at a better period.
        fn conditional_entropy(series: &FoldSeries<'_, T>, freqs: &[T], opts: &CeOptions) -> Vec<T>
            = PhaseFold { series: *series, freqs: FoldFreqs::Array(freqs), statistic: Statistic::ConditionalEntropy(*opts) };

        /// As [`Kernpack::conditional_entropy`], on the uniform grid `f0 + k df`.
        fn conditional_entropy_uniform(series: &FoldSeries<'_, T>, grid: &UniformGrid, opts: &CeOptions) -> Vec<T>
            = PhaseFold { series: *series, freqs: FoldFreqs::Uniform(*grid), statistic: Statistic::ConditionalEntropy(*opts) };

        /// The conditional entropy of every series of `batch` at the same
        /// frequencies: one row per series.
        fn conditional_entropy_batch(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &CeOptions) -> Vec<Vec<T>>
            = PhaseFoldBatch { batch: *batch, freqs: *freqs, statistic: Statistic::ConditionalEntropy(*opts) };

        /// Either statistic of every series of `batch`: the one dispatch
        /// behind [`Kernpack::pdm_batch`] and
        /// [`Kernpack::conditional_entropy_batch`].
        fn phase_fold_batch(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, statistic: &Statistic) -> Vec<Vec<T>>
            = PhaseFoldBatch { batch: *batch, freqs: *freqs, statistic: *statistic };

        /// The best `peaks.k` periods of every series of `batch` by PDM's
        /// theta: its lowest distinct minima over `freqs`, best first (fewer
        /// where a series has fewer), as indices into `freqs` and values,
        /// without keeping the statistic ([`PhaseFoldBatchPeaks`]).
        fn pdm_batch_peaks(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &PdmOptions, peaks: &PeakOptions) -> Vec<Vec<Peak>>
            = PhaseFoldBatchPeaks { batch: *batch, freqs: *freqs, statistic: Statistic::Pdm(*opts), peaks: *peaks };

        /// As [`Kernpack::pdm_batch_peaks`], by the conditional entropy.
        fn conditional_entropy_batch_peaks(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &CeOptions, peaks: &PeakOptions) -> Vec<Vec<Peak>>
            = PhaseFoldBatchPeaks { batch: *batch, freqs: *freqs, statistic: Statistic::ConditionalEntropy(*opts), peaks: *peaks };

        /// Either statistic's best peaks: the one dispatch behind
        /// [`Kernpack::pdm_batch_peaks`] and
        /// [`Kernpack::conditional_entropy_batch_peaks`].
        fn phase_fold_batch_peaks(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, statistic: &Statistic, peaks: &PeakOptions) -> Vec<Vec<Peak>>
            = PhaseFoldBatchPeaks { batch: *batch, freqs: *freqs, statistic: *statistic, peaks: *peaks };
    }
}

impl MultiGpu {
    facade! {
        /// PDM of every series of `batch` on every GPU of this handle, in
        /// chunks of series: bitwise what [`Kernpack::pdm_batch`] gives.
        fn pdm_batch / pdm_batch_profiled(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &PdmOptions) -> Vec<Vec<T>>
            = PhaseFoldBatch { batch: *batch, freqs: *freqs, statistic: Statistic::Pdm(*opts) };

        /// Conditional entropy of every series of `batch` on every GPU of
        /// this handle, in chunks of series.
        fn conditional_entropy_batch / conditional_entropy_batch_profiled(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, opts: &CeOptions) -> Vec<Vec<T>>
            = PhaseFoldBatch { batch: *batch, freqs: *freqs, statistic: Statistic::ConditionalEntropy(*opts) };

        /// Either statistic's best peaks of every series of `batch` on every
        /// GPU of this handle: what [`Kernpack::phase_fold_batch_peaks`]
        /// gives, each chunk reduced on its GPU.
        fn phase_fold_batch_peaks / phase_fold_batch_peaks_profiled(batch: &FoldBatch<'_, T>, freqs: &FoldFreqs<'_, T>, statistic: &Statistic, peaks: &PeakOptions) -> Vec<Vec<Peak>>
            = PhaseFoldBatchPeaks { batch: *batch, freqs: *freqs, statistic: *statistic, peaks: *peaks };
    }
}
