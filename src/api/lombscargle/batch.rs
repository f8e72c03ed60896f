//! Many short series in one launch: the survey workload (millions of light
//! curves of a few hundred samples), each with its own uniform grid or one
//! shared grid, all periodograms out of one call.
use std::marker::PhantomData;
use std::sync::Arc;

pub use crate::gpu::lombscargle::LombScargleBatchOnDevice;
pub use crate::params::lombscargle::{Batch, BatchDeviceBuffers, BatchGrid};

use super::{check_values, output_len, LombScargleOptions, Periodogram};
use crate::api::exec::{CpuRun, Operation, Split};
use crate::api::multi::lombscargle::{Keep, LsJob};
use crate::api::multi::{self, Exec, GpuProfile, MultiGpu};
use crate::api::{check_host_room, Kernpack};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::device::Guards;
use crate::gpu::lombscargle::check_batch_call;
use crate::gpu::Gpu;

/// `offsets` of a batch of `n` samples: from 0 to `n`, at least one series,
/// every series at least one sample.
pub fn check_series_offsets(offsets: &[usize], n: usize) -> Result<()> {
    if offsets.len() < 2 || offsets[0] != 0 || offsets[offsets.len() - 1] != n {
        return Err(Error::invalid(format!(
            "offsets must start at 0, end at the sample count {n}, and hold at least one series"
        )));
    }
    if let Some(s) = offsets.windows(2).position(|w| w[1] <= w[0]) {
        return Err(Error::invalid(format!(
            "series {s} is empty or offsets decrease there"
        )));
    }
    Ok(())
}

/// Every check of a host batch: counts (`check_batch_call`), lengths and
/// offsets, and each series' grid and values as the single-series API checks them.
pub fn validate_batch<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
) -> Result<()> {
    grids.check_len(batch.len())?;
    let ngrids = match grids {
        BatchGrid::Shared(_) => 1,
        BatchGrid::PerSeries { f0, .. } => f0.len(),
    };
    check_batch_call(batch.len(), grids.nf(), ngrids, None, opts)?;
    let n = batch.t.len();
    if batch.y.len() != n || batch.weights.is_some_and(|w| w.len() != n) {
        return Err(Error::invalid(
            "t, y and weights of the batch differ in length",
        ));
    }
    check_series_offsets(batch.offsets, n)?;
    // Each series as the single-series API checks it; threads over ranges of
    // series for large batches (a survey's 10^8 samples take a serial pass
    // longer than their kernels), the error of the first bad series either way.
    let check = |range: std::ops::Range<usize>| -> Result<()> {
        for s in range {
            let in_series = |e: Error| match e {
                Error::InvalidInput(msg) => Error::invalid(format!("series {s}: {msg}")),
                other => other,
            };
            grids.grid(s).validate_for::<T>().map_err(in_series)?;
            check_values(&batch.series(s), None, opts).map_err(in_series)?;
        }
        Ok(())
    };
    let threads = cpu::threads()
        .min(batch.t.len() / PARALLEL_CHECK_SAMPLES)
        .max(1);
    // Ranges in order, each checked in order: the first error is the first bad series.
    cpu::parallel::map_ranges(threads, batch.len(), 1, check)
        .into_iter()
        .collect()
}

/// Samples per thread below which a batch is checked on one thread.
const PARALLEL_CHECK_SAMPLES: usize = 1 << 20;

/// The operation: one periodogram per series of a batch
/// ([`Kernpack::lombscargle_batch`]). It splits by series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatch<'a, T> {
    pub batch: Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: LombScargleOptions,
}

impl<T: Float> Operation for LombScargleBatch<'_, T> {
    type Output = Vec<Periodogram<T>>;

    fn validate(&self) -> Result<()> {
        validate_batch(&self.batch, &self.grids, &self.opts)?;
        // The host memory for every periodogram.
        let total = output_len(self.grids.nf(), &self.opts)
            .checked_mul(self.batch.len())
            .ok_or_else(|| Error::invalid("nf x nseries overflows"))?;
        check_host_room::<T>("the periodograms", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        let (batch, grids, opts) = (&self.batch, &self.grids, &self.opts);
        Ok(cpu::lombscargle::lombscargle_batch(
            cpu.threads,
            batch,
            grids,
            opts,
            |_, p| p,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        let (batch, grids, opts) = (&self.batch, &self.grids, self.opts);
        let (t, y) = (gpu.upload(batch.t)?, gpu.upload(batch.y)?);
        let w = batch.weights.map(|w| gpu.upload(w)).transpose()?;
        let offsets: Vec<i64> = batch.offsets.iter().map(|&o| o as i64).collect();
        let offsets = gpu.upload(&offsets)?;
        let (f0, df) = grids.starts_and_steps();
        let (f0, df) = (gpu.upload(&f0)?, gpu.upload(&df)?);
        let per_series = output_len(grids.nf(), &opts);
        // SAFETY: the launch writes every value.
        let mut out = unsafe { gpu.uninit::<T>(per_series * batch.len()) }?;
        let mut g = Guards::new(gpu.stream());
        let buffers = BatchDeviceBuffers {
            t: g.read(&t),
            y: g.read(&y),
            weights: w.as_ref().map(|w| g.read(w)),
            offsets: g.read(&offsets),
            f0: g.read(&f0),
            df: g.read(&df),
            per_series_grid: matches!(grids, BatchGrid::PerSeries { .. }),
            out: g.write(&mut out),
        };
        let (nseries, nf, dtype) = (batch.len(), grids.nf(), PhantomData);
        #[rustfmt::skip]
        let call = g.with(LombScargleBatchOnDevice::<T> { buffers, nseries, nf, opts, dtype });
        // SAFETY: buffers just allocated on this GPU, t, y and weights with every sample.
        unsafe { gpu.launch_fresh(call, batch.t.len()) }?;
        let values = gpu.download(&out)?;
        Ok(Periodogram::split(&values, per_series, opts.normalize))
    }

    fn split(&self) -> Option<Split> {
        let job = LsJob::new(&self.batch, &self.grids, &self.opts, Keep::Periodograms);
        multi::split_of(&job, self.batch.len(), multi::longest(self.batch.offsets))
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::lombscargle::lombscargle_batch(&Exec::Gpus(gpus), self)
    }
}

impl Kernpack {
    facade! {
        /// One periodogram per series of `batch`, on the GPU in one launch (load
        /// balanced over (series, frequency chunk) units) or on the CPU (threads
        /// over series).
        fn lombscargle_batch(
            batch: &Batch<'_, T>,
            grids: &BatchGrid<'_>,
            opts: &LombScargleOptions,
        ) -> Vec<Periodogram<T>>
            = LombScargleBatch { batch: *batch, grids: *grids, opts: *opts };
    }
}
