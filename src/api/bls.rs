//! Box Least Squares transit search with astropy's `BoxLeastSquares`
//! semantics ([`crate::params::bls`]): the best box (depth, duration, mid-
//! transit time and their statistics) at each trial period, for one series
//! or a ragged batch, f32 and f64. Every backend picks the same box: the sums
//! are in fixed point, exact in any order.
use std::sync::Arc;

pub use crate::api::lombscargle::chi2::Chi2Batch as BlsBatch;
pub use crate::gpu::bls::BlsOnDevice;
pub use crate::params::bls::{
    BlsObjective, BlsOptions, BlsPeaks, BlsResults, BLS_FIELDS, MAX_PHASE_BINS,
};
/// One series: times, values and optional uncertainties `dy` (weights
/// 1 / dy^2; without them every weight is 1).
pub use crate::params::lombscargle_chi2::Chi2Series as BlsSeries;
pub use crate::params::peaks::{PeakOptions, MAX_PEAKS};

use super::exec::{CpuRun, Operation, Split};
use super::lombscargle::chi2::check_measured;
use super::multi::{self, bls::BlsJob, Exec, GpuProfile, MultiGpu};
use super::{check_host_room, Kernpack};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::Gpu;
use crate::params::bls::{result_fields, BlsGrid, BlsPrepared, BoxCounts};
use crate::params::peaks::{select_peaks, Better};

/// The values of one series checked (lengths, at least one sample, finite
/// values, dy > 0, weighted sums within f64's range, a time span of at most
/// [`crate::params::bls::MAX_SPAN_BINS`] phase bins of `grid`) and prepared.
fn prepare<T: Float>(series: &BlsSeries<'_, T>, grid: &BlsGrid) -> Result<BlsPrepared> {
    check_measured(series)?;
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    let dy = series.dy.map(f64s);
    BlsPrepared::of(&f64s(series.t), &f64s(series.y), dy.as_deref(), grid)
}

/// The grid of a call from `T` periods and durations.
fn grid<T: Float>(periods: &[T], durations: &[T], opts: &BlsOptions) -> Result<BlsGrid> {
    let f64s = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<f64>>();
    BlsGrid::new(&f64s(periods), &f64s(durations), opts)
}

/// The operation: the search of one series ([`Kernpack::bls`]).
#[derive(Debug, Clone, Copy)]
pub struct Bls<'a, T> {
    pub series: BlsSeries<'a, T>,
    pub periods: &'a [T],
    pub durations: &'a [T],
    pub opts: BlsOptions,
}

impl<T: Float> Operation for Bls<'_, T> {
    type Output = BlsResults<T>;

    fn validate(&self) -> Result<()> {
        let grid = grid(self.periods, self.durations, &self.opts)?;
        prepare(&self.series, &grid)?;
        check_host_room::<T>("the results", self.periods.len() * BLS_FIELDS)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<BlsResults<T>> {
        let batch = BlsBatch {
            t: self.series.t,
            y: self.series.y,
            dy: self.series.dy,
            offsets: &[0, self.series.t.len()],
        };
        let op = BlsSearchBatch {
            batch,
            periods: self.periods,
            durations: self.durations,
            opts: self.opts,
        };
        Ok(op.on_cpu(cpu)?.remove(0))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<BlsResults<T>> {
        let grid = grid(self.periods, self.durations, &self.opts)?;
        let prep = prepare(&self.series, &grid)?;
        Ok(run_on_gpu(gpu, &[prep], self.periods, &grid, &self.opts)?.remove(0))
    }
}

/// The operation: the search of every series of a ragged batch over the
/// same periods and durations ([`Kernpack::bls_batch`]).
#[derive(Debug, Clone, Copy)]
pub struct BlsSearchBatch<'a, T> {
    pub batch: BlsBatch<'a, T>,
    pub periods: &'a [T],
    pub durations: &'a [T],
    pub opts: BlsOptions,
}

impl<T: Float> BlsSearchBatch<'_, T> {
    /// The grid and every series, checked and prepared.
    pub(crate) fn prepared(&self) -> Result<(BlsGrid, Vec<BlsPrepared>)> {
        let grid = grid(self.periods, self.durations, &self.opts)?;
        let preps = self.prepare(&grid)?;
        Ok((grid, preps))
    }

    /// Every series checked and prepared, errors naming the series.
    fn prepare(&self, grid: &BlsGrid) -> Result<Vec<BlsPrepared>> {
        self.batch.prepare_each(|_, series| prepare(series, grid))
    }
}

impl<T: Float> Operation for BlsSearchBatch<'_, T> {
    type Output = Vec<BlsResults<T>>;

    fn validate(&self) -> Result<()> {
        let grid = grid(self.periods, self.durations, &self.opts)?;
        self.prepare(&grid)?;
        let total = self
            .periods
            .len()
            .checked_mul(self.batch.len() * BLS_FIELDS)
            .ok_or_else(|| Error::invalid("periods x series overflows"))?;
        check_host_room::<T>("the results", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<BlsResults<T>>> {
        let grid = grid(self.periods, self.durations, &self.opts)?;
        let periods: Vec<f64> = self.periods.iter().map(|p| p.to_f64()).collect();
        let preps = self.prepare(&grid)?;
        let boxes: Vec<BoxCounts> = preps
            .iter()
            .flat_map(|prep| {
                crate::cpu::bls::best_boxes(
                    cpu.threads,
                    cpu.progress,
                    prep,
                    &periods,
                    &grid,
                    self.opts.objective,
                )
            })
            .collect();
        Ok(results_of_boxes(
            cpu.threads,
            &preps,
            &periods,
            &boxes,
            &grid,
            self.opts.objective,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<BlsResults<T>>> {
        let (grid, preps) = self.prepared()?;
        run_on_gpu(gpu, &preps, self.periods, &grid, &self.opts)
    }

    fn split(&self) -> Option<Split> {
        // Sizes only: the arenas do not depend on the values.
        let grid = grid(self.periods, self.durations, &self.opts).ok()?;
        let periods: Vec<f64> = self.periods.iter().map(|p| p.to_f64()).collect();
        let job = BlsJob {
            offsets: self.batch.offsets,
            preps: &[],
            periods: &periods,
            grid: &grid,
            objective: self.opts.objective,
            peaks: None,
        };
        multi::split_of(&job, self.batch.len(), multi::longest(self.batch.offsets))
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::bls::bls_batch(&Exec::Gpus(gpus), self)
    }
}

/// Uploads the prepared series, runs the search kernel, and turns each
/// period's best box into its result fields on the host.
fn run_on_gpu<T: Float>(
    gpu: &Arc<Gpu>,
    preps: &[BlsPrepared],
    periods: &[T],
    grid: &BlsGrid,
    opts: &BlsOptions,
) -> Result<Vec<BlsResults<T>>> {
    let periods: Vec<f64> = periods.iter().map(|p| p.to_f64()).collect();
    let boxes = crate::gpu::bls::search(gpu, preps, &periods, grid, opts)?;
    Ok(results_of_boxes(
        crate::cpu::threads(),
        preps,
        &periods,
        &boxes,
        grid,
        opts.objective,
    ))
}

/// The results of each series from the best box at each (series, period),
/// series after series: one path for every backend.
pub(crate) fn results_of_boxes<T: Float>(
    threads: usize,
    preps: &[BlsPrepared],
    periods: &[f64],
    boxes: &[BoxCounts],
    grid: &BlsGrid,
    objective: BlsObjective,
) -> Vec<BlsResults<T>> {
    let np = periods.len();
    results(threads, preps.len(), np, |s, p| {
        let best = boxes[s * np + p].best(&preps[s], objective);
        result_fields(best.as_ref(), preps[s].t_ref, grid, periods[p], objective)
    })
}

/// The best periods of one series from the boxes of its peaks (period
/// index, box), best first: one path for every backend.
pub(crate) fn peaks_of_boxes<T: Float>(
    prep: &BlsPrepared,
    periods: &[f64],
    chosen: &[(usize, BoxCounts)],
    grid: &BlsGrid,
    objective: BlsObjective,
) -> BlsPeaks<T> {
    let mut results = BlsResults::with_len(chosen.len());
    for (j, (p, counts)) in chosen.iter().enumerate() {
        let best = counts.best(prep, objective);
        let fields = result_fields(best.as_ref(), prep.t_ref, grid, periods[*p], objective);
        results.set(j, &fields);
    }
    BlsPeaks {
        period_index: chosen.iter().map(|c| c.0).collect(),
        results,
    }
}

/// The operation: the best periods of every series of a batch
/// ([`Kernpack::bls_batch_peaks`]): the `k` highest distinct peaks of each
/// series' power over the trial periods ([`crate::params::peaks`]; the
/// separation is in units of the periods), with their results, without
/// keeping the results at every period. On a GPU the batch runs in chunks
/// through the pipeline (also on a one-GPU handle) and each chunk's powers
/// are reduced on its GPU, so only the boxes of the peaks cross the bus.
#[derive(Debug, Clone, Copy)]
pub struct BlsSearchBatchPeaks<'a, T> {
    pub batch: BlsBatch<'a, T>,
    pub periods: &'a [T],
    pub durations: &'a [T],
    pub opts: BlsOptions,
    pub peaks: PeakOptions,
}

impl<'a, T: Float> BlsSearchBatchPeaks<'a, T> {
    /// The same search keeping every period's results.
    pub(crate) fn search(&self) -> BlsSearchBatch<'a, T> {
        BlsSearchBatch {
            batch: self.batch,
            periods: self.periods,
            durations: self.durations,
            opts: self.opts,
        }
    }
}

impl<T: Float> Operation for BlsSearchBatchPeaks<'_, T> {
    type Output = Vec<BlsPeaks<T>>;

    fn validate(&self) -> Result<()> {
        self.peaks.validate()?;
        self.search().prepared()?;
        let total = self
            .peaks
            .k
            .checked_mul(self.batch.len() * BLS_FIELDS)
            .ok_or_else(|| Error::invalid("peaks x series overflows"))?;
        check_host_room::<T>("the peaks' results", total)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Vec<BlsPeaks<T>>> {
        let (grid, preps) = self.search().prepared()?;
        let periods: Vec<f64> = self.periods.iter().map(|p| p.to_f64()).collect();
        let objective = self.opts.objective;
        Ok(preps
            .iter()
            .map(|prep| {
                let boxes = crate::cpu::bls::best_boxes(
                    cpu.threads,
                    cpu.progress,
                    prep,
                    &periods,
                    &grid,
                    objective,
                );
                let power: Vec<f64> = boxes.iter().map(|b| b.power(prep, objective)).collect();
                let found = select_peaks(&power, &periods, &self.peaks, Better::Higher);
                let chosen: Vec<(usize, BoxCounts)> =
                    found.iter().map(|p| (p.index, boxes[p.index])).collect();
                peaks_of_boxes(prep, &periods, &chosen, &grid, objective)
            })
            .collect())
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Vec<BlsPeaks<T>>> {
        let one = MultiGpu::of(vec![gpu.clone()]);
        self.on_pipeline(&one).map(|(peaks, _)| peaks)
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        multi::bls::bls_batch_peaks(&Exec::Gpus(gpus), self)
    }
}

/// The results of `nseries` series at `np` periods from each period's
/// fields, on `threads` threads (one series: over its periods).
fn results<T: Float>(
    threads: usize,
    nseries: usize,
    np: usize,
    fields: impl Fn(usize, usize) -> [f64; BLS_FIELDS] + Sync,
) -> Vec<BlsResults<T>> {
    use crate::cpu::parallel::for_each_chunk;
    if nseries == 1 {
        let mut rows = vec![[0.0; BLS_FIELDS]; np];
        for_each_chunk(threads, &mut rows, 4096, None, |first, piece| {
            for (j, row) in piece.iter_mut().enumerate() {
                *row = fields(0, first + j);
            }
        });
        let mut out = BlsResults::with_len(np);
        for (p, row) in rows.iter().enumerate() {
            out.set(p, row);
        }
        return vec![out];
    }
    let mut out: Vec<BlsResults<T>> = (0..nseries).map(|_| BlsResults::default()).collect();
    for_each_chunk(threads, &mut out, 1, None, |first, piece| {
        for (j, series) in piece.iter_mut().enumerate() {
            let mut r = BlsResults::with_len(np);
            for p in 0..np {
                r.set(p, &fields(first + j, p));
            }
            *series = r;
        }
    });
    out
}

impl Kernpack {
    facade! {
        /// The BLS search of `series` at `periods` over `durations` (both in
        /// units of `t`): astropy's `BoxLeastSquares(t, y, dy).power(periods,
        /// durations, objective, oversample=...)`.
        fn bls(series: &BlsSeries<'_, T>, periods: &[T], durations: &[T], opts: &BlsOptions) -> BlsResults<T>
            = Bls { series: *series, periods, durations, opts: *opts };

        /// The BLS search of every series of `batch` at the same periods and
        /// durations, on the GPU in one launch or on the CPU.
        fn bls_batch(
            batch: &BlsBatch<'_, T>,
            periods: &[T],
            durations: &[T],
            opts: &BlsOptions,
        ) -> Vec<BlsResults<T>>
            = BlsSearchBatch { batch: *batch, periods, durations, opts: *opts };

        /// The best `peaks.k` periods of every series of `batch`: the highest
        /// distinct peaks of its power (at least `peaks.separation` apart in
        /// period), best first, with their results, without keeping the
        /// results at every period ([`BlsSearchBatchPeaks`]).
        fn bls_batch_peaks(
            batch: &BlsBatch<'_, T>,
            periods: &[T],
            durations: &[T],
            opts: &BlsOptions,
            peaks: &PeakOptions,
        ) -> Vec<BlsPeaks<T>>
            = BlsSearchBatchPeaks { batch: *batch, periods, durations, opts: *opts, peaks: *peaks };
    }
}

impl MultiGpu {
    facade! {
        /// The BLS search of every series of `batch` on every GPU of this
        /// handle, in chunks of series: bitwise what
        /// [`Kernpack::bls_batch`] gives on one GPU (or on the CPU).
        fn bls_batch / bls_batch_profiled(
            batch: &BlsBatch<'_, T>,
            periods: &[T],
            durations: &[T],
            opts: &BlsOptions,
        ) -> Vec<BlsResults<T>>
            = BlsSearchBatch { batch: *batch, periods, durations, opts: *opts };

        /// The best periods of every series of `batch` on every GPU of this
        /// handle: what [`Kernpack::bls_batch_peaks`] gives.
        fn bls_batch_peaks / bls_batch_peaks_profiled(
            batch: &BlsBatch<'_, T>,
            periods: &[T],
            durations: &[T],
            opts: &BlsOptions,
            peaks: &PeakOptions,
        ) -> Vec<BlsPeaks<T>>
            = BlsSearchBatchPeaks { batch: *batch, periods, durations, opts: *opts, peaks: *peaks };
    }
}
