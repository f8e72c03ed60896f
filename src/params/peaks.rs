//! The best few peaks of a row of values: the `k` best distinct peaks of a
//! search statistic (a periodogram, PDM's theta, an entropy) over its trial
//! frequencies, so that a survey keeps a few numbers per series instead of
//! its whole statistic.
//!
//! The definition, the same on every backend (values widened to f64, every
//! comparison exact, so the GPU picks the CPU's indices):
//! - a value's *score* is the value where higher is better and its negation
//!   where lower is better ([`Better`]); NaN scores as -inf, and a score of
//!   -inf is never a peak;
//! - index `i` is a *peak* when its score is above its left neighbour's and
//!   not below its right neighbour's (a row's ends compare with -inf), so the
//!   first of a plateau's equal values is its peak and the best peak is the
//!   first best value of the row;
//! - peaks are taken best score first (the lower index among equal scores),
//!   each one only when its trial frequency lies at least
//!   [`PeakOptions::separation`] away from every peak already taken; at most
//!   [`PeakOptions::k`] are taken, fewer when the row has fewer.
//!
//! A peak search may then refine each peak on a finer grid about it
//! ([`Refine`], [`RefinedPeakOptions`]), evaluated by the same periodogram.
use crate::error::{Error, Result};
use crate::params::lombscargle::UniformGrid;
use crate::params::significance::FapMethod;

/// The most peaks a call may ask per series.
pub const MAX_PEAKS: usize = 256;

/// One peak of a row: its index (in the row, i.e. among the trial
/// frequencies) and its value, widened to f64.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Peak {
    pub index: usize,
    pub value: f64,
}

impl Peak {
    /// What a device reduction wrote for one peak (index -1: none).
    pub(crate) fn from_raw(index: i64, value: f64) -> Option<Peak> {
        usize::try_from(index)
            .ok()
            .map(|index| Peak { index, value })
    }
}

/// Which values of a statistic are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Higher values: periodogram power, BLS objectives.
    Higher,
    /// Lower values: PDM's theta, conditional entropy.
    Lower,
}

/// How many peaks to keep per series and how far apart they must lie.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeakOptions {
    /// Peaks per series, 1 to [`MAX_PEAKS`].
    pub k: usize,
    /// The least distance between the trial frequencies of two peaks kept
    /// (in the frequencies' unit; 0: any two distinct peaks). About one peak
    /// width, `1 / (time span)`, keeps a peak's side lobes out.
    pub separation: f64,
}

impl Default for PeakOptions {
    fn default() -> Self {
        PeakOptions {
            k: 1,
            separation: 0.0,
        }
    }
}

impl PeakOptions {
    /// `k` within 1..=[`MAX_PEAKS`], `separation` finite and >= 0.
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_PEAKS).contains(&self.k) {
            return Err(Error::invalid(format!(
                "k = {} peaks per series is out of range: 1 to {MAX_PEAKS}",
                self.k
            )));
        }
        if !(self.separation.is_finite() && self.separation >= 0.0) {
            return Err(Error::invalid(format!(
                "separation = {} must be finite and >= 0",
                self.separation
            )));
        }
        Ok(())
    }
}

/// The score of `value`: larger is better, -inf for NaN.
pub fn score(value: f64, better: Better) -> f64 {
    if value.is_nan() {
        f64::NEG_INFINITY
    } else if better == Better::Higher {
        value
    } else {
        -value
    }
}

/// Whether `values[i]` is a peak (see the module documentation).
pub fn is_peak(values: &[f64], i: usize, better: Better) -> bool {
    let at = |j: Option<usize>| {
        j.and_then(|j| values.get(j))
            .map_or(f64::NEG_INFINITY, |&v| score(v, better))
    };
    let s = at(Some(i));
    s > f64::NEG_INFINITY && s > at(i.checked_sub(1)) && s >= at(Some(i + 1))
}

/// The peaks of `values` over the trial frequencies `axis` (one per value),
/// best first, as the module documentation defines them: the peaks ranked,
/// then taken in turn where far enough from those taken. Only the best few
/// are sorted (more when separations reject some).
pub fn select_peaks(values: &[f64], axis: &[f64], opts: &PeakOptions, better: Better) -> Vec<Peak> {
    debug_assert_eq!(values.len(), axis.len());
    let mut found: Vec<(f64, usize)> = (0..values.len())
        .filter(|&i| is_peak(values, i, better))
        .map(|i| (score(values[i], better), i))
        .collect();
    // Best first; scores of peaks are never NaN, so the order is total.
    let order = |a: &(f64, usize), b: &(f64, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
    let mut ranked = opts.k.max(16);
    loop {
        let limit = ranked.min(found.len());
        if limit == 0 {
            return Vec::new();
        }
        if limit < found.len() {
            found.select_nth_unstable_by(limit - 1, order);
        }
        found[..limit].sort_unstable_by(order);
        let mut taken: Vec<Peak> = Vec::with_capacity(opts.k);
        for &(_, i) in &found[..limit] {
            let apart = |p: &Peak| (axis[i] - axis[p.index]).abs() >= opts.separation;
            if taken.iter().all(apart) {
                taken.push(Peak {
                    index: i,
                    value: values[i],
                });
                if taken.len() == opts.k {
                    break;
                }
            }
        }
        if taken.len() == opts.k || limit == found.len() {
            return taken;
        }
        ranked = ranked.saturating_mul(4);
    }
}

/// `k` peaks per row as flat arrays (index -1 and value NaN past a row's
/// last peak): the layout the device reduction and the C ABI write.
pub fn write_peaks(rows: &[Vec<Peak>], k: usize, index: &mut [i64], value: &mut [f64]) {
    let indices = rows.iter().map(|r| r.iter().map(|p| p.index as i64));
    write_padded(index, k, indices, -1);
    write_padded(
        value,
        k,
        rows.iter().map(|r| r.iter().map(|p| p.value)),
        f64::NAN,
    );
}

/// `rows` of at most `k` values each as flat arrays, `k` a row, `fill` past
/// a row's last value: [`write_peaks`]' layout for any per-peak column (a
/// BLS result field at its best periods, in the C ABI). Rows past `out`'s
/// end, and values past `k`, are not written.
pub fn write_padded<V: Copy, R: IntoIterator<Item = V>>(
    out: &mut [V],
    k: usize,
    rows: impl IntoIterator<Item = R>,
    fill: V,
) {
    if k == 0 {
        return;
    }
    for (slot, row) in out.chunks_mut(k).zip(rows) {
        let mut row = row.into_iter();
        for v in slot {
            *v = row.next().unwrap_or(fill);
        }
    }
}

/// The most values a refinement's local grid may hold (`2 steps points + 1`).
pub const MAX_REFINE_LEN: usize = 1 << 20;

/// Each peak refined on a finer grid about it: with `h = df / points` (`df`
/// the step of the series' grid) and `S = steps * points`, the local grid
/// of a peak at grid frequency `fc` is `f_j = (fc - m h) + j h` for `j = 0
/// ..= m + S`, where `m = S` unless the grid would pass below frequency 0:
/// then `m` is the largest count with `fc - m h >= 0` (in f64). The grid
/// thus runs from `fc - steps df` (or the first such point at or above 0)
/// to `fc + steps df`. The refined peak is the first highest value there,
/// if it is higher than the coarse peak's value, else the coarse peak
/// itself ([`refine_peak`]), so refining never lowers a peak. Each local
/// grid is evaluated as a whole `2 S + 1` frequencies (the points past
/// `m + S` of a clipped grid are computed and not looked at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refine {
    /// Fine points per coarse step, at least 2.
    pub points: usize,
    /// Half width of the local grid, in coarse steps, at least 1.
    pub steps: usize,
}

impl Refine {
    /// `points >= 2`, `steps >= 1`, and a local grid of at most
    /// [`MAX_REFINE_LEN`] values.
    pub fn validate(&self) -> Result<()> {
        if self.points < 2 {
            return Err(Error::invalid(format!(
                "refine points = {} per coarse step must be at least 2",
                self.points
            )));
        }
        if self.steps < 1 {
            return Err(Error::invalid(
                "refine steps = 0: the local grid's half width must be at least 1 coarse step",
            ));
        }
        if self.len_checked().map_or(true, |n| n > MAX_REFINE_LEN) {
            return Err(Error::invalid(format!(
                "refine points = {} x steps = {}: a local grid of 2 x points x steps + 1 values \
                 is more than {MAX_REFINE_LEN}",
                self.points, self.steps
            )));
        }
        Ok(())
    }

    fn len_checked(&self) -> Option<usize> {
        self.points
            .checked_mul(self.steps)?
            .checked_mul(2)?
            .checked_add(1)
    }

    /// Frequencies of each local grid, `2 steps points + 1` (valid options).
    pub fn grid_len(&self) -> usize {
        2 * self.points * self.steps + 1
    }

    /// The local grid of a peak at frequency `fc` of a grid of step `df`,
    /// and how many of its first values count (`m + S + 1`, see [`Refine`]).
    pub fn local_grid(&self, fc: f64, df: f64) -> (UniformGrid, usize) {
        let h = df / self.points as f64;
        let span = self.points * self.steps;
        let mut m = span.min((fc / h).floor() as usize);
        while m > 0 && fc - m as f64 * h < 0.0 {
            m -= 1;
        }
        (
            UniformGrid::new(fc - m as f64 * h, h, self.grid_len()),
            m + span + 1,
        )
    }
}

/// A coarse peak refined: the first highest of `values` (the local grid's
/// counted values, widened to f64; NaN is never one) when it beats `coarse`,
/// else `coarse` itself. Returns (frequency, power).
pub fn refine_peak(coarse: (f64, f64), grid: &UniformGrid, values: &[f64]) -> (f64, f64) {
    let best = values.iter().enumerate().filter(|(_, v)| !v.is_nan()).fold(
        None,
        |best: Option<(usize, f64)>, (j, &v)| match best {
            Some((_, b)) if b >= v => best,
            _ => Some((j, v)),
        },
    );
    match best {
        Some((j, v)) if v > coarse.1 => (grid.frequency(j), v),
        _ => coarse,
    }
}

/// What a batch's peak search keeps per series: its best peaks
/// ([`PeakOptions`]), optionally refined on finer local grids ([`Refine`];
/// each row keeps the coarse ranking, so refining can leave a lower-ranked
/// peak above a higher one: a refined peak is matched to its coarse one by
/// [`RefinedPeak::index`] and position),
/// with each peak's false-alarm probability when `fap` names a method (for
/// the periodograms astropy has one for: single-term, with a fitted or
/// subtracted mean; bootstrap FAPs are not offered per peak).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RefinedPeakOptions {
    pub peaks: PeakOptions,
    pub refine: Option<Refine>,
    pub fap: Option<FapMethod>,
}

impl RefinedPeakOptions {
    /// The peak options and the refinement's (the FAP's depend on the call).
    pub fn validate(&self) -> Result<()> {
        self.peaks.validate()?;
        self.refine.as_ref().map_or(Ok(()), Refine::validate)
    }
}

/// One peak of a peak search ([`RefinedPeakOptions`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefinedPeak {
    /// The coarse peak's index in the series' grid (as [`Peak::index`]).
    pub index: usize,
    /// The peak's frequency: the refined one, or without refinement (or
    /// when no local value beat the coarse one) the grid's `f0 + index df`.
    pub frequency: f64,
    /// The periodogram at `frequency`, widened to f64.
    pub power: f64,
    /// The false-alarm probability of `power`, when asked for.
    pub fap: Option<f64>,
}

/// The rows of peaks that flat arrays of `k` per row describe.
pub(crate) fn read_peaks(k: usize, index: &[i64], value: &[f64]) -> Vec<Vec<Peak>> {
    index
        .chunks(k)
        .zip(value.chunks(k))
        .map(|(i, v)| {
            i.iter()
                .zip(v)
                .map_while(|(&i, &v)| Peak::from_raw(i, v))
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peaks_are_local_and_apart() {
        let nan = f64::NAN;
        let axis: Vec<f64> = (0..8).map(|i| i as f64).collect();
        let v = [1.0, 3.0, 3.0, 2.0, nan, 5.0, 4.0, 4.5];
        let all = PeakOptions {
            k: 8,
            separation: 0.0,
        };
        let idx = |p: Vec<Peak>| p.iter().map(|p| p.index).collect::<Vec<_>>();
        // 1 (the first of a plateau), 5 (NaN to its left), 7 (the last).
        assert_eq!(
            idx(select_peaks(&v, &axis, &all, Better::Higher)),
            [5, 7, 1]
        );
        let apart = PeakOptions {
            separation: 2.5,
            ..all
        };
        assert_eq!(idx(select_peaks(&v, &axis, &apart, Better::Higher)), [5, 1]);
        // Lower is better: 0 (the row's start), 3 (NaN to its right), 6.
        assert_eq!(idx(select_peaks(&v, &axis, &all, Better::Lower)), [0, 3, 6]);
        assert!(select_peaks(&[nan, nan], &axis[..2], &all, Better::Higher).is_empty());
        let mut index = [0i64; 4];
        let mut value = [0.0; 4];
        let rows = vec![select_peaks(&v, &axis, &apart, Better::Higher), vec![]];
        write_peaks(&rows, 2, &mut index, &mut value);
        assert_eq!(index, [5, 1, -1, -1]);
        assert_eq!(read_peaks(2, &index, &value), rows);
    }

    #[test]
    fn local_grids_are_clipped_at_zero_and_refining_never_lowers_a_peak() {
        let refine = Refine {
            points: 4,
            steps: 2,
        };
        refine.validate().unwrap();
        assert_eq!(refine.grid_len(), 17);
        // Far from 0: fc - 2 df .. fc + 2 df in steps of df / 4.
        let (grid, count) = refine.local_grid(1.0, 0.1);
        assert_eq!((grid.df, grid.nf, count), (0.025, 17, 17));
        assert!((grid.f0 - 0.8).abs() < 1e-15);
        // Near 0: from the last point at or above 0.
        let (grid, count) = refine.local_grid(0.06, 0.1);
        assert_eq!(count, 2 + 8 + 1);
        assert!(grid.f0 >= 0.0 && (grid.f0 - 0.01).abs() < 1e-15);
        let (grid, count) = refine.local_grid(0.0, 0.1);
        assert_eq!((grid.f0, count), (0.0, 9));
        // The first best value, when it beats the coarse one.
        let nan = f64::NAN;
        let grid = UniformGrid::new(1.0, 0.5, 4);
        assert_eq!(
            refine_peak((1.0, 2.0), &grid, &[1.0, 3.0, nan, 3.0]),
            (1.5, 3.0)
        );
        assert_eq!(refine_peak((1.0, 3.0), &grid, &[1.0, 3.0]), (1.0, 3.0));
        assert_eq!(refine_peak((1.0, 3.0), &grid, &[nan, nan]), (1.0, 3.0));
        for (points, steps) in [(1, 1), (2, 0), (1 << 20, 1), (usize::MAX, 2)] {
            assert!(Refine { points, steps }.validate().is_err());
        }
    }

    #[test]
    fn options_are_checked() {
        PeakOptions::default().validate().unwrap();
        for (k, separation) in [(0, 0.0), (MAX_PEAKS + 1, 0.0), (1, -1.0), (1, f64::NAN)] {
            assert!(PeakOptions { k, separation }.validate().is_err());
        }
    }
}
