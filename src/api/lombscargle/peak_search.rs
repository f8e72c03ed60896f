//! Peak searches over batches of periodograms on uniform grids in cycles per
//! unit time (the multi-term and multiband families): each series' best
//! peaks ([`crate::params::peaks`]), then, on request, each peak refined on
//! a finer grid about it ([`Refine`]) and its false-alarm probability.
//!
//! The refinement composes the family's own batch operation: a batch whose
//! series are the searched ones repeated once per peak, each on its peak's
//! local grid (per-series grids), run on the backend the coarse search ran
//! on. So it is the same periodogram on every backend, and only `k (2 steps
//! points + 1)` values per series are computed. It runs in groups of series
//! whose copies and values stay within `GROUP_VALUES` (2^22), so memory stays
//! bounded for any batch.
use std::ops::Range;
use std::sync::Arc;

use crate::api::check_host_room;
use crate::api::exec::{CpuRun, Operation};
use crate::api::multi::{GpuProfile, MultiGpu};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::Gpu;
use crate::params::lombscargle::BatchGrid;
use crate::params::peaks::{
    refine_peak, select_peaks, Better, Peak, PeakOptions, Refine, RefinedPeak, RefinedPeakOptions,
};
use crate::params::significance::{FapMethod, NullDistribution};

/// Values (and copied samples) a CPU group or a refinement group holds at
/// once: series are taken in groups of about this many, then reduced.
pub(crate) const GROUP_VALUES: usize = 1 << 22;

/// A backend that a composed operation runs its parts on (each part valid
/// by construction, so not validated again).
#[derive(Clone, Copy)]
pub(crate) enum On<'a> {
    Cpu(&'a CpuRun<'a>),
    Gpu(&'a Arc<Gpu>),
}

impl On<'_> {
    pub(crate) fn run<O: Operation>(self, op: O) -> Result<O::Output> {
        match self {
            On::Cpu(cpu) => op.on_cpu(cpu),
            On::Gpu(gpu) => op.on_gpu(gpu),
        }
    }
}

/// The best peaks of `values`, the rows (`nf` each) of series `first..` of
/// a batch on `grids`.
pub(crate) fn select_rows<T: Float>(
    values: &[T],
    grids: &BatchGrid<'_>,
    first: usize,
    peaks: &PeakOptions,
) -> Vec<Vec<Peak>> {
    values
        .chunks(grids.nf())
        .enumerate()
        .map(|(r, row)| {
            let row: Vec<f64> = row.iter().map(|v| v.to_f64()).collect();
            let axis = grids.grid(first + r).frequencies();
            select_peaks(&row, &axis, peaks, Better::Higher)
        })
        .collect()
}

/// The best peaks of each series of a batch (CSR `offsets`, on `grids`)
/// whose periodograms `rows` computes a group of series at a time (flat,
/// `nf` values per series), so that only a group's are held: `rows(samples,
/// offsets, grids)` gets the group's range of samples, its offsets from 0
/// and its grids.
pub(crate) fn peaks_in_groups<T: Float>(
    offsets: &[usize],
    grids: &BatchGrid<'_>,
    peaks: &PeakOptions,
    mut rows: impl FnMut(Range<usize>, &[usize], BatchGrid<'_>) -> Result<Vec<T>>,
) -> Result<Vec<Vec<Peak>>> {
    let nseries = offsets.len().saturating_sub(1);
    let group = (GROUP_VALUES / grids.nf()).max(1);
    let mut found = Vec::with_capacity(nseries);
    for first in (0..nseries).step_by(group) {
        let last = (first + group).min(nseries);
        let lo = offsets[first];
        let local: Vec<usize> = offsets[first..=last].iter().map(|o| o - lo).collect();
        let values = rows(lo..offsets[last], &local, grids.slice(first..last))?;
        found.extend(select_rows(&values, grids, first, peaks));
    }
    Ok(found)
}

/// The offsets of series `picks` of CSR `offsets` (repeats allowed) laid one
/// after another.
fn gathered_offsets(offsets: &[usize], picks: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(picks.len() + 1);
    out.push(0);
    for &s in picks {
        out.push(out[out.len() - 1] + offsets[s + 1] - offsets[s]);
    }
    out
}

/// The values of series `picks` of CSR `offsets` (repeats allowed), one
/// series after another.
pub(crate) fn gather<V: Copy>(values: &[V], offsets: &[usize], picks: &[usize]) -> Vec<V> {
    picks
        .iter()
        .flat_map(|&s| &values[offsets[s]..offsets[s + 1]])
        .copied()
        .collect()
}

/// A batch peaks operation whose peaks a [`RefinedPeaks`] search refines:
/// its batch's shape, and its family's periodograms of chosen series.
pub(crate) trait Searched: Operation<Output = Vec<Vec<Peak>>> + Copy {
    /// The periodograms' dtype.
    type Value: Float;
    /// How many peaks per series, how far apart.
    fn peak_options(&self) -> PeakOptions;
    /// The batch's CSR offsets.
    fn offsets(&self) -> &[usize];
    /// The batch's grids.
    fn grids(&self) -> BatchGrid<'_>;
    /// The periodograms of series `picks` (repeats allowed), pick `i` on
    /// grid `i` of `grids`, by the family's batch operation on `on`, flat
    /// (`grids.nf()` values per pick) and widened to f64.
    fn rows(&self, picks: &[usize], grids: BatchGrid<'_>, on: On<'_>) -> Result<Vec<f64>>;
    /// Whether a local grid gives this call's periodogram (an error saying
    /// why not): where a power depends on the whole grid, it does not.
    fn check_refine(&self) -> Result<()> {
        Ok(())
    }
    /// Whether astropy has a false-alarm probability for this call's
    /// periodograms (an error saying why not).
    fn check_fap(&self) -> Result<()>;
    /// The null distribution of series `s`'s highest peak, for its FAPs
    /// (after [`Searched::check_fap`]).
    fn null_distribution(&self, s: usize) -> Result<NullDistribution>;
}

/// The operation: a batch's best peaks ([`crate::params::peaks`]) by
/// `coarse` (a family's batch peaks call), each refined on a finer grid
/// about it when `refine` is given ([`Refine`]: the same periodogram on the
/// local grids, see the module documentation), with its false-alarm
/// probability by `fap` when given (astropy's analytic methods,
/// [`NullDistribution`], with the series' own samples and `fmax` its grid's
/// last frequency: astropy's `LombScargle.false_alarm_probability(power,
/// maximum_frequency=fmax)` where `fmax` lies on astropy's `autofrequency`
/// grid, onto which that method rounds it; not the bootstrap, which
/// resamples each series and is a call of its own).
#[derive(Debug, Clone, Copy)]
pub struct RefinedPeaks<P> {
    pub coarse: P,
    pub refine: Option<Refine>,
    pub fap: Option<FapMethod>,
}

impl<P> RefinedPeaks<P> {
    /// `coarse` (whose peak options are `search.peaks`) refined and with
    /// FAPs as `search` asks.
    pub fn of(coarse: P, search: &RefinedPeakOptions) -> Self {
        RefinedPeaks {
            coarse,
            refine: search.refine,
            fap: search.fap,
        }
    }
}

/// The samples of series `picks` of a ragged batch (repeats allowed), one
/// series after another, with their offsets: the batch a refinement runs.
pub(crate) struct Gathered<T> {
    pub t: Vec<T>,
    pub y: Vec<T>,
    pub dy: Option<Vec<T>>,
    pub offsets: Vec<usize>,
}

impl<T: Copy> Gathered<T> {
    pub fn of(t: &[T], y: &[T], dy: Option<&[T]>, offsets: &[usize], picks: &[usize]) -> Self {
        Gathered {
            t: gather(t, offsets, picks),
            y: gather(y, offsets, picks),
            dy: dy.map(|d| gather(d, offsets, picks)),
            offsets: gathered_offsets(offsets, picks),
        }
    }
}

/// `e` with `what` in front of its message (input errors only).
fn in_context(e: Error, what: impl std::fmt::Display) -> Error {
    match e {
        Error::InvalidInput(msg) => Error::invalid(format!("{what}: {msg}")),
        other => other,
    }
}

impl<P> RefinedPeaks<P> {
    /// The coarse peaks as found, each at its grid frequency, refined and
    /// with FAPs as asked.
    fn finish(&self, coarse: Vec<Vec<Peak>>, on: On<'_>) -> Result<Vec<Vec<RefinedPeak>>>
    where
        P: Searched,
    {
        let grids = self.coarse.grids();
        let mut peaks: Vec<Vec<RefinedPeak>> = coarse
            .iter()
            .enumerate()
            .map(|(s, row)| {
                let grid = grids.grid(s);
                row.iter()
                    .map(|p| RefinedPeak {
                        index: p.index,
                        frequency: grid.frequency(p.index),
                        power: p.value,
                        fap: None,
                    })
                    .collect()
            })
            .collect();
        if let Some(refine) = self.refine {
            self.refine_all(&mut peaks, refine, on)?;
        }
        if let Some(method) = self.fap {
            for (s, row) in peaks.iter_mut().enumerate() {
                let null = self.coarse.null_distribution(s)?;
                for p in row {
                    p.fap = Some(null.false_alarm_probability(p.power, method));
                }
            }
        }
        Ok(peaks)
    }

    /// Refines every peak, a group of series at a time.
    fn refine_all(&self, peaks: &mut [Vec<RefinedPeak>], refine: Refine, on: On<'_>) -> Result<()>
    where
        P: Searched,
    {
        let (offsets, grids, len) = (
            self.coarse.offsets(),
            self.coarse.grids(),
            refine.grid_len(),
        );
        let mut first = 0;
        while first < peaks.len() {
            // A group whose local values and copied samples stay within bounds.
            let (mut last, mut values, mut samples) = (first, 0usize, 0usize);
            while last < peaks.len() {
                let k = peaks[last].len();
                let (v, n) = (k * len, k * (offsets[last + 1] - offsets[last]));
                if last > first && (values + v > GROUP_VALUES || samples + n > GROUP_VALUES) {
                    break;
                }
                (values, samples, last) = (values + v, samples + n, last + 1);
            }
            let (mut picks, mut f0, mut df, mut counted) = (vec![], vec![], vec![], vec![]);
            for (s, row) in peaks.iter().enumerate().take(last).skip(first) {
                let step = grids.grid(s).df;
                for p in row {
                    let (local, count) = refine.local_grid(p.frequency, step);
                    picks.push(s);
                    f0.push(local.f0);
                    df.push(local.df);
                    counted.push(count);
                }
            }
            if !picks.is_empty() {
                let local = BatchGrid::PerSeries {
                    f0: &f0,
                    df: &df,
                    nf: len,
                };
                let values = self.coarse.rows(&picks, local, on)?;
                let mut rows = values.chunks(len).zip(counted).enumerate();
                for p in peaks[first..last].iter_mut().flatten() {
                    let (i, (row, count)) = rows.next().expect("one row per peak");
                    (p.frequency, p.power) =
                        refine_peak((p.frequency, p.power), &local.grid(i), &row[..count]);
                }
            }
            first = last;
        }
        Ok(())
    }
}

impl<P: Searched> Operation for RefinedPeaks<P> {
    type Output = Vec<Vec<RefinedPeak>>;

    fn validate(&self) -> Result<()> {
        self.coarse.validate()?;
        let grids = self.coarse.grids();
        let nseries = self.coarse.offsets().len().saturating_sub(1);
        if let Some(refine) = &self.refine {
            refine.validate()?;
            self.coarse.check_refine()?;
            // The local grid at a series' last frequency is its finest and
            // highest: if it is valid for T, every other one is.
            let shared = matches!(grids, BatchGrid::Shared(_));
            for s in 0..if shared { nseries.min(1) } else { nseries } {
                let grid = grids.grid(s);
                let (local, _) = refine.local_grid(grid.frequency(grid.nf - 1), grid.df);
                local.validate_for::<P::Value>().map_err(|e| {
                    let what = format!("refining peaks on steps of df / {}", refine.points);
                    let e = in_context(e, what);
                    if shared {
                        e
                    } else {
                        in_context(e, format!("series {s}"))
                    }
                })?;
            }
        }
        if self.fap.is_some() {
            self.coarse.check_fap()?;
            for s in 0..nseries {
                self.coarse
                    .null_distribution(s)
                    .map_err(|e| in_context(e, format!("series {s}: false-alarm probability")))?;
            }
        }
        check_peaks_room::<RefinedPeak>(self.coarse.peak_options().k, nseries)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        let coarse = self.coarse.on_cpu(cpu)?;
        self.finish(coarse, On::Cpu(cpu))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        let coarse = self.coarse.on_gpu(gpu)?;
        self.finish(coarse, On::Gpu(gpu))
    }

    /// The coarse search over every GPU; the refinement's small batches on
    /// the first.
    fn on_pipeline(self, gpus: &MultiGpu) -> Result<(Self::Output, Vec<GpuProfile>)> {
        let (coarse, profiles) = self.coarse.on_pipeline(gpus)?;
        Ok((self.finish(coarse, On::Gpu(&gpus.gpus()[0]))?, profiles))
    }
}

/// The host memory of `k` peaks for each of `nseries` series, checked.
pub(crate) fn check_peaks_room<V>(k: usize, nseries: usize) -> Result<()> {
    let total = k
        .checked_mul(nseries)
        .ok_or_else(|| Error::invalid("peaks x series overflows"))?;
    check_host_room::<V>("the peaks", total)
}
