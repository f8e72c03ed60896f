//! The highest peak of each periodogram of a batch, without keeping the
//! periodograms: what a survey wants of a million light curves (their
//! periodograms at 10^4 frequencies would be 40 GB in f32).
//!
//! On a GPU the periodograms of a chunk of series are computed into scratch
//! and reduced there (`lombscargle_peaks_*`), so only an index and a value per
//! series cross the bus, and the device memory a call uses is bounded by the
//! chunk, not by the batch. On the CPU each thread reduces the periodogram it
//! has just computed.
use std::sync::Arc;

use super::batch::{validate_batch, Batch, BatchGrid};
use super::{LombScargleOptions, Normalize, Periodogram};
use crate::api::exec::{CpuRun, Operation};
use crate::api::multi::{self, Exec, GpuProfile, MultiGpu};
use crate::api::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
pub use crate::gpu::lombscargle::LombScarglePeaksOnDevice;
use crate::gpu::Gpu;
pub use crate::params::lombscargle::{Peak, PeakBuffers};
use crate::params::peaks::{select_peaks, Better};
pub use crate::params::peaks::{PeakOptions, MAX_PEAKS};

/// The operation: the highest peak of each series' periodogram
/// ([`Kernpack::lombscargle_batch_peaks`]). It splits by series, and on a GPU
/// it always runs through the chunked pipeline (also on a one-GPU handle,
/// whatever its size, so it needs no [`Operation::split`]): the periodograms
/// live in device scratch that the chunks bound, so a batch of any size fits.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatchPeaks<'a, T> {
    pub batch: Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: LombScargleOptions,
}

impl<T: Float> Operation for LombScargleBatchPeaks<'_, T> {
    type Output = Vec<Option<Peak>>;

    fn validate(&self) -> Result<()> {
        validate_batch(&self.batch, &self.grids, &self.opts)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        check_cpu_workspace(self.grids.nf(), cpu.threads)?;
        let (batch, grids, opts) = (&self.batch, &self.grids, &self.opts);
        let peak = |_, p: Periodogram<T>| Peak::of(&p);
        Ok(cpu::lombscargle::lombscargle_batch(
            cpu.threads,
            batch,
            grids,
            opts,
            peak,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::lombscargle::lombscargle_batch_peaks(&Exec::Gpus(gpus), self)
    }
}

/// The operation: each series' best `peaks.k` peaks
/// ([`Kernpack::lombscargle_batch_top_peaks`]): the highest distinct local
/// maxima of what [`Kernpack::lombscargle_batch`] gives
/// ([`crate::params::peaks`]; the separation in the grid's frequency unit),
/// without keeping the periodograms. Real periodograms only (not
/// [`Normalize::Amplitude`]). On a GPU through the chunked pipeline, each
/// chunk's periodograms reduced on its GPU.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatchTopPeaks<'a, T> {
    pub batch: Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: LombScargleOptions,
    pub peaks: PeakOptions,
}

impl<T: Float> Operation for LombScargleBatchTopPeaks<'_, T> {
    type Output = Vec<Vec<Peak>>;

    fn validate(&self) -> Result<()> {
        validate_batch(&self.batch, &self.grids, &self.opts)?;
        self.peaks.validate()?;
        if self.opts.normalize == Normalize::Amplitude {
            return Err(Error::invalid(
                "peaks of amplitude periodograms (complex values): ask for a real \
                 normalisation, or for the highest peak only (lombscargle_batch_peaks)",
            ));
        }
        let total = self
            .peaks
            .k
            .checked_mul(self.batch.len())
            .ok_or_else(|| Error::invalid("peaks x series overflows"))?;
        check_host_room::<Peak>("the peaks", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        check_cpu_workspace(self.grids.nf(), cpu.threads)?;
        let (batch, grids, opts) = (&self.batch, &self.grids, &self.opts);
        let top = |s: usize, p: Periodogram<T>| match p {
            Periodogram::Real(v) => {
                let v: Vec<f64> = v.iter().map(|x| x.to_f64()).collect();
                let axis = grids.grid(s).frequencies();
                select_peaks(&v, &axis, &self.peaks, Better::Higher)
            }
            Periodogram::Complex(_) => unreachable!("validated: a real normalisation"),
        };
        Ok(cpu::lombscargle::lombscargle_batch(
            cpu.threads,
            batch,
            grids,
            opts,
            top,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::lombscargle::lombscargle_batch_top_peaks(&Exec::Gpus(gpus), self)
    }
}

impl Kernpack {
    facade! {
        /// The highest peak of each series' periodogram ([`Peak::of`] of what
        /// [`Kernpack::lombscargle_batch`] gives), in input order, without
        /// keeping the periodograms. On the GPU the batch runs in chunks of
        /// series through the pipeline ([`crate::api::multi`]: this handle's
        /// GPUs, see [`Kernpack::with_gpus`], or its one GPU), so a batch of any
        /// size runs in bounded device memory; on the CPU, threads over series.
        fn lombscargle_batch_peaks(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
        ) -> Vec<Option<Peak>>
            = LombScargleBatchPeaks { batch: *batch, grids: *grids, opts: *opts };

        /// Each series' best `peaks.k` peaks, highest first: its highest
        /// distinct local maxima ([`crate::params::peaks`]), at least
        /// `peaks.separation` apart in frequency, as indices into its grid
        /// and values, without keeping the periodograms
        /// ([`LombScargleBatchTopPeaks`]).
        fn lombscargle_batch_top_peaks(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
            peaks: &PeakOptions,
        ) -> Vec<Vec<Peak>>
            = LombScargleBatchTopPeaks { batch: *batch, grids: *grids, opts: *opts, peaks: *peaks };
    }
}

/// Bytes per frequency that the CPU backend may hold for the series it is
/// working on: its periodogram (two values for 'amplitude') and, for large
/// series, the NUFFT's oversampled grid; a generous bound.
const CPU_BYTES_PER_FREQUENCY: usize = 64;

/// The peaks mode has no caller's output behind its periodograms, so `nf`
/// is not bounded by memory the caller holds: each thread's workspace for
/// one series must be one this host can allocate. An impossible `nf` is then
/// an error before any work, not an allocation failure (an abort) inside it.
fn check_cpu_workspace(nf: usize, threads: usize) -> Result<()> {
    let bytes = nf
        .checked_mul(CPU_BYTES_PER_FREQUENCY)
        .and_then(|b| b.checked_mul(threads.max(1)))
        .filter(|&b| b <= crate::api::MAX_ARRAY_BYTES)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{nf} frequencies per series: a periodogram that large cannot be held in memory"
            ))
        })?;
    check_host_room::<u8>(
        &format!("{nf} frequencies per series, as working memory of {threads} threads"),
        bytes,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::float::Complex;

    #[test]
    fn the_first_of_the_highest_non_nan_values() {
        let nan = f32::NAN;
        let real = |v: &[f32]| Peak::of(&Periodogram::Real(v.to_vec()));
        let at = |index, value| Some(Peak { index, value });
        assert_eq!(real(&[1.0, 3.0, 2.0, 3.0]), at(1, 3.0));
        assert_eq!(real(&[nan, -1.0, nan, -0.5]), at(3, -0.5));
        assert_eq!(real(&[f32::NEG_INFINITY, nan]), at(0, f64::NEG_INFINITY));
        assert_eq!(real(&[nan, nan]), None);
        assert_eq!(real(&[]), None);
        let complex = Periodogram::Complex(vec![
            Complex {
                re: 3.0f64,
                im: 4.0,
            },
            Complex { re: -5.0, im: 0.0 },
            Complex { re: 1.0, im: 1.0 },
        ]);
        assert_eq!(Peak::of(&complex), at(0, 5.0));
    }

    #[test]
    fn an_impossible_nf_is_an_error_before_any_work() {
        assert!(matches!(
            check_cpu_workspace(usize::MAX / 2, 2),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(
            check_cpu_workspace(1 << 50, 1),
            Err(Error::InvalidInput(_) | Error::OutOfMemory(_))
        ));
        check_cpu_workspace(10_000, 4).unwrap();
    }

    #[test]
    fn raw_peaks_convert() {
        assert_eq!(Peak::from_raw(-1, f64::NAN), None);
        assert_eq!(
            Peak::from_raw(7, 0.25),
            Some(Peak {
                index: 7,
                value: 0.25
            })
        );
    }
}
