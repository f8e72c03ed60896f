//! Box Least Squares (BLS) transit search with the semantics of astropy's
//! `BoxLeastSquares(t, y, dy).power(period, duration, objective, oversample)`
//! (its default "fast" method): the phase of each trial period is cut into
//! bins of `min(duration) / oversample`, and every box of `round(duration /
//! bin)` consecutive bins is a candidate transit. For each period the result
//! is the best box over every duration and start bin.
//!
//! The binning is astropy's, quirks included, so results equal its own:
//! - a sample at phase `x = (t - min t) mod period` falls in bin
//!   `trunc(x / bin) + 1` of `ceil(period / bin) + oversample` bins;
//! - the first `oversample` bins are copied over the last `oversample`
//!   (so a box may wrap around phase zero by up to `oversample` bins), which
//!   replaces the samples of the last partial phase bin;
//! - boxes start at bins `0 ..= n_bins - duration_bins` and take bins
//!   `start + 1 ..= start + duration_bins`;
//! - the best box has the largest objective with a depth >= 0; ties go to
//!   the first duration in the order given, then to the earliest start.
//!
//! Every backend computes in f64 whatever the element type; values are
//! centred on their weighted mean first (astropy centres on the median: the
//! results are the same up to rounding, since every statistic is a
//! difference of means).
use crate::error::{Error, Result};

/// What the search maximises over phases and durations at each period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(i32)]
pub enum BlsObjective {
    /// The log likelihood gained by the box, `0.5 ivar_in depth^2` (astropy's default).
    #[default]
    Likelihood = 0,
    /// The signal-to-noise ratio of the depth, `depth / depth_err`.
    Snr = 1,
}

/// The options of a search: the objective and the phase resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlsOptions {
    pub objective: BlsObjective,
    /// Phase bins per shortest duration (astropy's `oversample`, default 10).
    pub oversample: u32,
}

impl Default for BlsOptions {
    fn default() -> Self {
        BlsOptions {
            objective: BlsObjective::Likelihood,
            oversample: 10,
        }
    }
}

/// The most phase bins a series' time span may hold: phases are folded in
/// f64, which resolves a bin of a span up to 2^52 bins; 2^50 leaves room.
pub const MAX_SPAN_BINS: f64 = (1u64 << 50) as f64;

/// The most phase bins of one period: bin indices are 32-bit on the GPU.
pub const MAX_PHASE_BINS: i64 = i32::MAX as i64 - 1;

/// The phase grid of a call, checked: the bin width, each duration in bins,
/// and the bins of each period.
#[derive(Debug, Clone, PartialEq)]
pub struct BlsGrid {
    /// `min(duration) / oversample`.
    pub bin: f64,
    pub oversample: i64,
    /// `round(duration / bin)` for each duration, in the order given.
    pub duration_bins: Vec<i64>,
    /// The most bins of any period (`n_bins` of the longest).
    pub max_bins: i64,
}

impl BlsGrid {
    /// The grid of `periods` and `durations` (both in units of `t`):
    /// each non-empty, finite and positive, every duration shorter than every
    /// period, `oversample >= 1`, and at most [`MAX_PHASE_BINS`] bins.
    pub fn new(periods: &[f64], durations: &[f64], opts: &BlsOptions) -> Result<BlsGrid> {
        positive_finite("period", periods)?;
        positive_finite("duration", durations)?;
        if opts.oversample == 0 {
            return Err(Error::invalid("oversample must be at least 1"));
        }
        let max_duration = durations.iter().copied().fold(0.0, f64::max);
        let min_duration = durations.iter().copied().fold(f64::INFINITY, f64::min);
        let min_period = periods.iter().copied().fold(f64::INFINITY, f64::min);
        let max_period = periods.iter().copied().fold(0.0, f64::max);
        if max_duration >= min_period {
            return Err(Error::invalid(format!(
                "the longest duration ({max_duration}) must be shorter than the shortest period ({min_period})"
            )));
        }
        let oversample = i64::from(opts.oversample);
        let bin = min_duration / oversample as f64;
        let bins = (max_period / bin).ceil() + oversample as f64;
        if bins > MAX_PHASE_BINS as f64 {
            return Err(Error::invalid(format!(
                "the longest period ({max_period}) holds {bins:e} phase bins of min(duration) / oversample = {bin:e}: at most {MAX_PHASE_BINS}; lengthen the durations or lower oversample"
            )));
        }
        Ok(BlsGrid {
            bin,
            oversample,
            duration_bins: durations
                .iter()
                .map(|&d| (d / bin).round() as i64)
                .collect(),
            max_bins: bins as i64,
        })
    }

    /// The bins of `period`: `ceil(period / bin) + oversample`.
    pub fn bins(&self, period: f64) -> i64 {
        (period / self.bin).ceil() as i64 + self.oversample
    }

    /// The 1-based phase bin of a sample `dt = t - min(t)` after its time
    /// origin: `trunc(wrap(dt, period) / bin) + 1`, rounded as astropy does.
    #[inline]
    pub fn phase_bin(&self, dt: f64, period: f64) -> i64 {
        let x = dt - period * (dt / period).floor();
        (x / self.bin) as i64 + 1
    }

    /// Where a sample of phase bin `b` counts in the padded array of
    /// `bins` values: its own bin, plus a copy at `bins - oversample + b - 1`
    /// for the first `oversample` bins; nothing for the bins those copies
    /// replace. At most two positions, in increasing order.
    #[inline]
    pub fn placements(&self, b: i64, bins: i64) -> [Option<i64>; 2] {
        let first_copy = bins - self.oversample;
        if b <= self.oversample {
            [Some(b), Some(first_copy + b - 1)]
        } else if b < first_copy || b == bins {
            [Some(b), None]
        } else {
            [None, None]
        }
    }
}

fn positive_finite(name: &str, values: &[f64]) -> Result<()> {
    if values.is_empty() {
        return Err(Error::invalid(format!(
            "no {name}s: at least one is needed"
        )));
    }
    if let Some(i) = values.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
        return Err(Error::invalid(format!(
            "{name}[{i}] = {} is not a finite positive number",
            values[i]
        )));
    }
    Ok(())
}

/// The box statistics of one candidate, from the weighted sums in and out
/// of transit (`wy` the sums of w (y - centre), `w` the sums of weights).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxFit {
    pub objective: f64,
    pub depth: f64,
    pub depth_err: f64,
    pub depth_snr: f64,
    pub log_likelihood: f64,
}

impl BoxFit {
    /// The objective alone (the search's inner loop); None when either side
    /// has no weight (below `f64::EPSILON`, astropy's test) or the box is
    /// brighter than the rest (a negative depth). The GPU kernel computes it
    /// with the same operations in the same order (csrc/bls.cu).
    #[inline]
    pub fn objective(
        wy_in: f64,
        w_in: f64,
        wy_out: f64,
        w_out: f64,
        objective: BlsObjective,
    ) -> Option<f64> {
        let value = BoxFit::objective_or_neg_inf(wy_in, w_in, wy_out, w_out, objective);
        (value != f64::NEG_INFINITY).then_some(value)
    }

    /// [`BoxFit::objective`] without branches, -inf for None (a box's
    /// objective is never -inf: it is >= 0 or +inf), so that a loop over
    /// many boxes vectorises. The same operations in the same order.
    #[inline(always)]
    pub fn objective_or_neg_inf(
        wy_in: f64,
        w_in: f64,
        wy_out: f64,
        w_out: f64,
        objective: BlsObjective,
    ) -> f64 {
        let depth = wy_out / w_out - wy_in / w_in;
        let value = match objective {
            BlsObjective::Likelihood => 0.5 * w_in * depth * depth,
            BlsObjective::Snr => depth / (1.0 / w_in + 1.0 / w_out).sqrt(),
        };
        let none = w_in < f64::EPSILON || w_out < f64::EPSILON || depth.is_nan() || depth < 0.0;
        if none {
            f64::NEG_INFINITY
        } else {
            value
        }
    }

    /// Every statistic of a box that [`BoxFit::objective`] accepted.
    pub fn of(wy_in: f64, w_in: f64, wy_out: f64, w_out: f64, objective: BlsObjective) -> BoxFit {
        let depth = wy_out / w_out - wy_in / w_in;
        let depth_err = (1.0 / w_in + 1.0 / w_out).sqrt();
        let depth_snr = depth / depth_err;
        let log_likelihood = 0.5 * w_in * depth * depth;
        BoxFit {
            objective: match objective {
                BlsObjective::Likelihood => log_likelihood,
                BlsObjective::Snr => depth_snr,
            },
            depth,
            depth_err,
            depth_snr,
            log_likelihood,
        }
    }
}

/// The best box of one period: which duration (index into the durations),
/// which start bin, and the sums in and out of transit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BestBox {
    pub objective: f64,
    pub duration: usize,
    pub start: i64,
    pub wy_in: f64,
    pub w_in: f64,
    pub wy_out: f64,
    pub w_out: f64,
}

/// The best box of one period as the GPU writes it: the duration's index
/// (-1: no box), the start bin and the fixed-point sums in transit.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BoxCounts {
    pub duration: i64,
    pub start: i64,
    pub wy_in: i64,
    pub w_in: i64,
}

impl BoxCounts {
    /// Boxes from the kernel's output: four i64 per box, in field order.
    pub fn from_raw(raw: &[i64]) -> Vec<BoxCounts> {
        raw.chunks_exact(4)
            .map(|c| BoxCounts {
                duration: c[0],
                start: c[1],
                wy_in: c[2],
                w_in: c[3],
            })
            .collect()
    }

    /// The box in f64 sums, or None for no box.
    pub fn best(&self, prep: &BlsPrepared, objective: BlsObjective) -> Option<BestBox> {
        let duration = usize::try_from(self.duration).ok()?;
        let [wy_in, w_in, wy_out, w_out] = prep.sums(self.wy_in, self.w_in);
        Some(BestBox {
            objective: BoxFit::objective(wy_in, w_in, wy_out, w_out, objective)?,
            duration,
            start: self.start,
            wy_in,
            w_in,
            wy_out,
            w_out,
        })
    }
}

/// Sums in fixed point: the backends bin and add a series' `w (y - centre)`
/// and `w` as integers, `value = count * unit` with `unit` a power of two
/// chosen so that the whole series sums to at most 2^60 units (2^61 with
/// the wrapped copies, far from i64's range). Integer sums
/// are exact in any order, so a box's sums do not depend on the layout, the
/// thread count or the GPU's atomic order: every backend picks the same box,
/// and boxes holding the same samples tie exactly. The quantisation is
/// 2^-61 of the series' total, far below the rounding of f64 sums of the
/// same values.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FixedPoint {
    pub unit: f64,
}

impl FixedPoint {
    /// The unit for values whose magnitudes sum to `total_abs`.
    pub fn for_total(total_abs: f64) -> FixedPoint {
        if total_abs.is_nan() || total_abs <= 0.0 {
            return FixedPoint { unit: 1.0 };
        }
        // 2^(e - 1) >= total_abs; unit = 2^(e - 61), or the least subnormal
        // when that is smaller (tiny values: their counts stay below 2^60).
        let e = total_abs.log2().ceil() as i32 + 1;
        FixedPoint {
            unit: power_of_two(e - 61),
        }
    }
    #[inline]
    pub fn count(&self, value: f64) -> i64 {
        (value / self.unit).round() as i64
    }
    #[inline]
    pub fn value(&self, count: i64) -> f64 {
        count as f64 * self.unit
    }
}

/// 2^k exactly, clamped to f64's least subnormal (2^-1074) below it and its
/// largest power of two above (`powi` would underflow through 1 / 2^-k).
fn power_of_two(k: i32) -> f64 {
    match k {
        k if k < -1074 => f64::from_bits(1),
        k if k < -1022 => f64::from_bits(1u64 << (k + 1074)),
        k => f64::from_bits(((k.min(1023) + 1023) as u64) << 52),
    }
}

/// One series as every backend takes it: `dt = t - min t`, and per sample
/// the weight `w = dy^-2` (1 without dy) and `wy = w (y - centre)` (the
/// weighted mean as centre) in fixed point, with their totals.
#[derive(Debug, Clone, PartialEq)]
pub struct BlsPrepared {
    pub t_ref: f64,
    pub dt: Vec<f64>,
    pub wy: Vec<i64>,
    pub w: Vec<i64>,
    pub wy_all: i64,
    pub w_all: i64,
    pub wy_unit: FixedPoint,
    pub w_unit: FixedPoint,
}

impl BlsPrepared {
    /// `t`, `y` and `dy` as f64, already checked (same lengths, at least one
    /// sample, finite, dy > 0). An error when the weights or the weighted
    /// values sum past f64's range, or when the time span holds more than
    /// [`MAX_SPAN_BINS`] phase bins of `grid` (the phase of a sample would
    /// then be lost to rounding).
    pub fn of(t: &[f64], y: &[f64], dy: Option<&[f64]>, grid: &BlsGrid) -> Result<BlsPrepared> {
        let t_ref = t.iter().copied().fold(f64::INFINITY, f64::min);
        let span = t.iter().copied().fold(f64::NEG_INFINITY, f64::max) - t_ref;
        if span / grid.bin > MAX_SPAN_BINS {
            return Err(Error::invalid(format!(
                "t spans {span:e}, {:e} phase bins of min(duration) / oversample = {:e}: at most {MAX_SPAN_BINS:e}",
                span / grid.bin,
                grid.bin
            )));
        }
        let w: Vec<f64> = match dy {
            Some(dy) => dy.iter().map(|d| 1.0 / (d * d)).collect(),
            None => vec![1.0; y.len()],
        };
        let w_total: f64 = w.iter().sum();
        let centre = w.iter().zip(y).map(|(w, y)| w * y).sum::<f64>() / w_total;
        let wy: Vec<f64> = w.iter().zip(y).map(|(w, y)| w * (y - centre)).collect();
        let wy_total: f64 = wy.iter().map(|v| v.abs()).sum();
        if !(w_total.is_finite() && centre.is_finite() && wy_total.is_finite()) {
            return Err(Error::invalid(
                "the weights 1 / dy^2 or the weighted values y / dy^2 sum past f64's range: scale y or dy",
            ));
        }
        let wy_unit = FixedPoint::for_total(wy_total);
        let w_unit = FixedPoint::for_total(w_total);
        let wy: Vec<i64> = wy.iter().map(|&v| wy_unit.count(v)).collect();
        let w: Vec<i64> = w.iter().map(|&v| w_unit.count(v)).collect();
        Ok(BlsPrepared {
            t_ref,
            dt: t.iter().map(|t| t - t_ref).collect(),
            wy_all: wy.iter().sum(),
            w_all: w.iter().sum(),
            wy,
            w,
            wy_unit,
            w_unit,
        })
    }

    /// What the kernel takes per series of `preps`: the totals (`wy_all`,
    /// `w_all`) and the units (`wy_unit`, `w_unit`), two values per series.
    pub fn series_stats(preps: &[BlsPrepared]) -> (Vec<i64>, Vec<f64>) {
        let totals = preps.iter().flat_map(|p| [p.wy_all, p.w_all]).collect();
        let units = preps
            .iter()
            .flat_map(|p| [p.wy_unit.unit, p.w_unit.unit])
            .collect();
        (totals, units)
    }

    /// The sums in and out of a box holding `wy_in` and `w_in` units, in
    /// the order [`BoxFit`] takes them.
    #[inline]
    pub fn sums(&self, wy_in: i64, w_in: i64) -> [f64; 4] {
        [
            self.wy_unit.value(wy_in),
            self.w_unit.value(w_in),
            self.wy_unit.value(self.wy_all - wy_in),
            self.w_unit.value(self.w_all - w_in),
        ]
    }
}

/// The search's result at each trial period (astropy's
/// `BoxLeastSquaresResults` fields, in units of `t` and `y`). At a period
/// where no box has weight both in and out of transit with a depth >= 0,
/// `power` is -inf (as astropy's) and every other field NaN.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlsResults<T> {
    pub power: Vec<T>,
    pub depth: Vec<T>,
    pub depth_err: Vec<T>,
    pub duration: Vec<T>,
    pub transit_time: Vec<T>,
    pub depth_snr: Vec<T>,
    pub log_likelihood: Vec<T>,
}

/// The number of fields of [`BlsResults`], in the order of its fields: the
/// row of a period on the device holds them in this order.
pub const BLS_FIELDS: usize = 7;

/// The fields of the best box at `period` (or of none), in [`BlsResults`]'s
/// order.
pub fn result_fields(
    best: Option<&BestBox>,
    t_ref: f64,
    grid: &BlsGrid,
    period: f64,
    objective: BlsObjective,
) -> [f64; BLS_FIELDS] {
    let Some(best) = best else {
        let nan = f64::NAN;
        return [f64::NEG_INFINITY, nan, nan, nan, nan, nan, nan];
    };
    let fit = BoxFit::of(best.wy_in, best.w_in, best.wy_out, best.w_out, objective);
    let duration = grid.duration_bins[best.duration] as f64 * grid.bin;
    let transit_time = (best.start as f64 * grid.bin + 0.5 * duration) % period + t_ref;
    [
        fit.objective,
        fit.depth,
        fit.depth_err,
        duration,
        transit_time,
        fit.depth_snr,
        fit.log_likelihood,
    ]
}

impl<T: crate::float::Float> BlsResults<T> {
    /// Results of `n` periods, every field poisoned with NaN.
    pub fn with_len(n: usize) -> Self {
        let nan = vec![T::from_f64(f64::NAN); n];
        BlsResults {
            power: nan.clone(),
            depth: nan.clone(),
            depth_err: nan.clone(),
            duration: nan.clone(),
            transit_time: nan.clone(),
            depth_snr: nan.clone(),
            log_likelihood: nan,
        }
    }

    /// Sets period `p` from its fields in [`BLS_FIELDS`] order.
    pub fn set(&mut self, p: usize, fields: &[f64; BLS_FIELDS]) {
        for (column, value) in self.columns_mut().into_iter().zip(fields) {
            column[p] = T::from_f64(*value);
        }
    }

    /// The fields as columns, in [`BLS_FIELDS`] order.
    pub fn columns_mut(&mut self) -> [&mut Vec<T>; BLS_FIELDS] {
        [
            &mut self.power,
            &mut self.depth,
            &mut self.depth_err,
            &mut self.duration,
            &mut self.transit_time,
            &mut self.depth_snr,
            &mut self.log_likelihood,
        ]
    }

    /// The fields as columns, in [`BLS_FIELDS`] order.
    pub fn columns(&self) -> [&Vec<T>; BLS_FIELDS] {
        [
            &self.power,
            &self.depth,
            &self.depth_err,
            &self.duration,
            &self.transit_time,
            &self.depth_snr,
            &self.log_likelihood,
        ]
    }

    /// Results from `rows` of [`BLS_FIELDS`] values per period, as the
    /// device writes them.
    pub fn from_rows(rows: &[T]) -> Self {
        let n = rows.len() / BLS_FIELDS;
        let mut out = BlsResults::with_len(n);
        for (c, column) in out.columns_mut().into_iter().enumerate() {
            for (p, v) in column.iter_mut().enumerate() {
                *v = rows[p * BLS_FIELDS + c];
            }
        }
        out
    }
}

/// The best periods of one series ([`crate::params::peaks`] of its `power`
/// over the trial periods): their indices into the periods, best first, and
/// the results at each, row `j` for `period_index[j]`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct BlsPeaks<T> {
    pub period_index: Vec<usize>,
    pub results: BlsResults<T>,
}

impl BoxCounts {
    /// The objective of the box (what `power` holds, before rounding to the
    /// results' type), -inf for no box: what the peaks are ranked by.
    pub fn power(&self, prep: &BlsPrepared, objective: BlsObjective) -> f64 {
        self.best(prep, objective)
            .map_or(f64::NEG_INFINITY, |b| b.objective)
    }
}

#[cfg(test)]
mod fixed_point_tests {
    use super::*;

    #[test]
    fn powers_of_two_are_exact_down_to_the_least_subnormal() {
        for k in [-1100, -1074, -1073, -1030, -1022, -60, 0, 1, 61, 1023, 1100] {
            let want = if k < -1074 {
                f64::from_bits(1)
            } else {
                (k.min(1023) as f64).exp2()
            };
            assert_eq!(power_of_two(k), want, "2^{k}");
        }
    }

    /// Totals from subnormal to huge: every count fits, and the counts sum
    /// without overflow (the fuzzer's case: tiny values once gave a zero
    /// unit and saturated counts).
    #[test]
    fn counts_fit_for_any_total() {
        for total in [5e-324, 1e-320, 1e-310, 1e-300, 1.0, 1e300, 1.7e308] {
            let fp = FixedPoint::for_total(total);
            assert!(fp.unit > 0.0 && fp.unit.is_finite(), "{total:e}");
            let parts = [total * 0.25, total * 0.5, total * 0.25];
            let counts: Vec<i64> = parts.iter().map(|&v| fp.count(v)).collect();
            let sum = counts.iter().try_fold(0i64, |a, &c| a.checked_add(c));
            assert!(sum.is_some_and(|s| s <= 1 << 61), "{total:e}: {counts:?}");
        }
    }
}
