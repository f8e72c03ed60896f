//! Box Least Squares on the CPU: threads over periods. At each period the
//! samples are placed in phase bins ([`BlsGrid::placements`]) and every box
//! is judged from prefix sums, by one of two layouts that give the same
//! boxes and, the sums being in fixed point ([`crate::params::bls::FixedPoint`]),
//! the same sums:
//!
//! - *histogram*: when the bins are few beside the samples (long series,
//!   TESS-like), the sums are binned, prefix-summed over the bins, and every
//!   start bin of every duration is judged, as astropy does;
//! - *events*: when the bins far outnumber the samples (short series over
//!   fine phase grids, ZTF-like), the placements are sorted and only the
//!   start bins where a box's contents change are judged: start 0, each
//!   placement (the box has just let it go) and each placement minus the
//!   duration (the box has just taken it in). Between two such starts the
//!   box holds the same samples, so the first start of each run is the one
//!   the search keeps; the cost is O(samples log samples) per period instead
//!   of O(bins).
use crate::params::bls::{BlsGrid, BlsObjective, BlsPrepared, BoxCounts, BoxFit};

/// Periods per piece of work handed to a thread.
const PERIODS_PER_PIECE: usize = 16;

/// The histogram layout pays when the bins are at most this many times the
/// placements.
const HISTOGRAM_BINS_PER_SAMPLE: i64 = 64;

/// The best box at each period, as the GPU kernel reports it (a duration
/// index of -1: no box).
pub(crate) fn best_boxes(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    prep: &BlsPrepared,
    periods: &[f64],
    grid: &BlsGrid,
    objective: BlsObjective,
) -> Vec<BoxCounts> {
    let none = BoxCounts {
        duration: -1,
        ..BoxCounts::default()
    };
    // Time order: each sample's phase bin then follows the cycles, and the
    // histogram's additions walk the bins in order (7x faster than in
    // random order on 20,000 samples). The sums are the same integers.
    let sorted;
    let prep = if prep.dt.windows(2).all(|p| p[0] <= p[1]) {
        prep
    } else {
        sorted = time_sorted(prep);
        &sorted
    };
    let samples = Samples::of(prep);
    let mut out = vec![none; periods.len()];
    super::parallel::for_each_chunk(
        threads,
        &mut out,
        PERIODS_PER_PIECE,
        progress,
        |first, piece| {
            let mut scratch = Scratch::default();
            for (j, found) in piece.iter_mut().enumerate() {
                let period = periods[first + j];
                if let Some(best) = scratch.best_box(&samples, period, grid, objective) {
                    *found = best;
                }
            }
        },
    );
    out
}

/// `prep` with its samples in increasing `dt`.
fn time_sorted(prep: &BlsPrepared) -> BlsPrepared {
    let mut order: Vec<(f64, usize)> = prep.dt.iter().copied().zip(0..).collect();
    order.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    BlsPrepared {
        dt: order.iter().map(|&(dt, _)| dt).collect(),
        wy: order.iter().map(|&(_, i)| prep.wy[i]).collect(),
        w: order.iter().map(|&(_, i)| prep.w[i]).collect(),
        ..*prep
    }
}

/// 2^-45: a product `a * (1 / b)` is within 2^-51 of `a / b` relative
/// (three roundings), so when `floor` or `trunc` of the product stays the
/// same across this margin either side, it is that of the quotient.
const QUOTIENT_MARGIN: f64 = 1.0 / (1u64 << 45) as f64;

/// The phase bin of each sample at `period` ([`BlsGrid::phase_bin`], the
/// same value), or 0 where a product by a reciprocal (instead of the two
/// divisions) lands too near a bin edge to be sure: the caller computes
/// those exactly. Returns how many are 0 and the largest. Compiled for the
/// SIMD targets: without divisions the loop vectorises.
#[macro_rules_attribute::apply(simd_targets!)]
fn phase_bins(dt: &[f64], period: f64, bin: f64, out: &mut [i32]) -> (usize, i32) {
    let (inv_period, inv_bin) = (1.0 / period, 1.0 / bin);
    let (mut unsure, mut most) = (0, 0);
    for (o, &d) in out.iter_mut().zip(dt) {
        let q = d * inv_period;
        let cycle = q.floor();
        let sure_cycle = (q - q * QUOTIENT_MARGIN).floor() == (q + q * QUOTIENT_MARGIN).floor();
        // As `phase_bin`: x = dt - period * floor(dt / period), no FMA.
        let x = d - period * cycle;
        let r = x * inv_bin;
        let r_margin = r.abs() * QUOTIENT_MARGIN;
        let sure_bin = (r - r_margin).trunc() == (r + r_margin).trunc();
        let b = if sure_cycle && sure_bin {
            r.trunc() + 1.0
        } else {
            0.0
        };
        // SAFETY: clamped to 0..=i32::MAX (NaN to 0), so the conversion is
        // defined (and exact: `b` is whole); unlike `as`, it vectorises.
        *o = unsafe { b.max(0.0).min(i32::MAX as f64).to_int_unchecked::<i32>() };
        unsure += usize::from(*o == 0);
        most = most.max(*o);
    }
    (unsure, most)
}

/// Adds each sample of `prep` to the bins it is placed in at `period`
/// ([`BlsGrid::placements`] of [`BlsGrid::phase_bin`]), one by one: the
/// definition, for the cases [`place_runs`] does not take.
fn place_each(
    prep: &BlsPrepared,
    grid: &BlsGrid,
    period: f64,
    bins: i64,
    wy: &mut [i64],
    w: &mut [i64],
) {
    for i in 0..prep.dt.len() {
        let b = grid.phase_bin(prep.dt[i], period);
        for p in grid.placements(b, bins).into_iter().flatten() {
            wy[p as usize] += prep.wy[i];
            w[p as usize] += prep.w[i];
        }
    }
}

/// Adds the samples to the bins `bin_of` gives them (each in `1..=bins`,
/// `bins + 1` sums in `wy` and `w`) by runs: each run of consecutive
/// samples in one bin adds the difference of two prefix sums over the
/// samples (`wy_prefix`, `w_prefix`), so that samples in time order cost
/// one addition per phase bin of each cycle rather than one per sample.
/// Then the bins the copies replace are overwritten with the first
/// `oversample` bins: the same integer sums as adding each sample's
/// [`BlsGrid::placements`]. Compiled for the SIMD targets: the run ends are
/// found 64 samples at a time.
#[macro_rules_attribute::apply(simd_targets!)]
fn place_runs(
    bin_of: &[i32],
    wy_prefix: &[i64],
    w_prefix: &[i64],
    oversample: usize,
    wy: &mut [i64],
    w: &mut [i64],
) {
    let n = bin_of.len();
    let mut start = 0;
    let mut end_run = |i: usize, start: &mut usize| {
        let b = bin_of[i] as usize;
        wy[b] += wy_prefix[i + 1] - wy_prefix[*start];
        w[b] += w_prefix[i + 1] - w_prefix[*start];
        *start = i + 1;
    };
    // Run ends: the samples whose bin differs from the next one's.
    let (here, next) = (&bin_of[..n.saturating_sub(1)], &bin_of[n.min(1)..]);
    let (here_words, next_words) = (here.chunks_exact(64), next.chunks_exact(64));
    let tail = here_words.remainder().len();
    for (word, (a, b)) in here_words.zip(next_words).enumerate() {
        let mut ends = 0u64;
        for j in 0..64 {
            ends |= u64::from(a[j] != b[j]) << j;
        }
        while ends != 0 {
            end_run(word * 64 + ends.trailing_zeros() as usize, &mut start);
            ends &= ends - 1;
        }
    }
    for i in here.len() - tail..here.len() {
        if here[i] != next[i] {
            end_run(i, &mut start);
        }
    }
    if n > 0 {
        end_run(n - 1, &mut start);
    }
    let first_copy = wy.len() - 1 - oversample;
    for j in 0..oversample {
        wy[first_copy + j] = wy[1 + j];
        w[first_copy + j] = w[1 + j];
    }
}

/// The largest objective of the boxes of `d` bins over the prefix sums
/// `wy` and `w` ([`BoxFit::objective_or_neg_inf`] of every start), and the
/// first start reaching it (0 when every box is refused: -inf). Compiled
/// for the SIMD targets: the boxes are judged eight at a time, each lane
/// keeping its largest value and the first of its starts reaching it (a
/// strict improvement); the first start overall is the least of the lanes'
/// starts that reach the largest, the remainder's starts coming after them.
#[macro_rules_attribute::apply(simd_targets!)]
fn judge_all(
    prep: &BlsPrepared,
    wy: &[i64],
    w: &[i64],
    d: usize,
    objective: BlsObjective,
) -> (f64, usize) {
    #[inline(always)]
    fn judge(
        prep: &BlsPrepared,
        wy: &[i64],
        w: &[i64],
        d: usize,
        objective: BlsObjective,
    ) -> (f64, usize) {
        const LANES: usize = 8;
        let n = wy.len() - d;
        let mut most = [f64::NEG_INFINITY; LANES];
        let mut at = [0u64; LANES];
        let chunks = n / LANES;
        for k in 0..chunks {
            let first = k * LANES;
            let (wy_start, wy_end) = (&wy[first..first + LANES], &wy[first + d..first + d + LANES]);
            let (w_start, w_end) = (&w[first..first + LANES], &w[first + d..first + d + LANES]);
            for lane in 0..LANES {
                let (sy, sw) = (wy_end[lane] - wy_start[lane], w_end[lane] - w_start[lane]);
                let [sy_in, sw_in, sy_out, sw_out] = prep.sums(sy, sw);
                let v = BoxFit::objective_or_neg_inf(sy_in, sw_in, sy_out, sw_out, objective);
                // No value is NaN.
                if v > most[lane] {
                    most[lane] = v;
                    at[lane] = (first + lane) as u64;
                }
            }
        }
        let (mut best, mut start) = (f64::NEG_INFINITY, 0);
        for lane in 0..LANES {
            let s = at[lane] as usize;
            if most[lane] > best || (most[lane] == best && s < start) {
                (best, start) = (most[lane], s);
            }
        }
        // No closure: one would be compiled once, for no SIMD target, and
        // called box by box.
        for s in chunks * LANES..n {
            let [sy_in, sw_in, sy_out, sw_out] = prep.sums(wy[s + d] - wy[s], w[s + d] - w[s]);
            let v = BoxFit::objective_or_neg_inf(sy_in, sw_in, sy_out, sw_out, objective);
            if v > best {
                (best, start) = (v, s);
            }
        }
        (best, start)
    }
    match objective {
        BlsObjective::Likelihood => judge(prep, wy, w, d, BlsObjective::Likelihood),
        BlsObjective::Snr => judge(prep, wy, w, d, BlsObjective::Snr),
    }
}

/// A series as the layouts read it: `prep` (in time order, for speed
/// alone) and the prefix sums of its `wy` and `w` in that order (one more
/// than the samples).
struct Samples<'a> {
    prep: &'a BlsPrepared,
    wy_prefix: Vec<i64>,
    w_prefix: Vec<i64>,
}

impl<'a> Samples<'a> {
    fn of(prep: &'a BlsPrepared) -> Samples<'a> {
        let prefix = |v: &[i64]| {
            std::iter::once(0)
                .chain(v.iter().scan(0, |sum, &x| {
                    *sum += x;
                    Some(*sum)
                }))
                .collect()
        };
        Samples {
            prep,
            wy_prefix: prefix(&prep.wy),
            w_prefix: prefix(&prep.w),
        }
    }
}

/// Buffers reused from period to period by one thread.
#[derive(Default)]
struct Scratch {
    /// Histogram: prefix sums over bins 0..=n_bins. Events: prefix sums over
    /// the sorted placements (one more than there are placements).
    wy: Vec<i64>,
    w: Vec<i64>,
    /// Events: (position, sample) sorted by position, and the positions alone.
    placed: Vec<(i64, usize)>,
    positions: Vec<i64>,
    /// Histogram: the phase bin of each sample (0: to be computed exactly).
    bin_of: Vec<i32>,
}

/// The best box so far, in the search's order: candidates arrive by
/// duration, then by increasing start, so a strict improvement keeps the
/// first of equals.
struct Search<'a> {
    prep: &'a BlsPrepared,
    objective: BlsObjective,
    best: Option<(f64, BoxCounts)>,
}

impl Search<'_> {
    /// The boxes of duration `k` (`d` bins) at every start, whose largest
    /// objective is `most` (-inf: none), first reached at `start`: that
    /// box, if it beats the best so far.
    fn consider_all(&mut self, k: usize, most: f64, start: usize, wy: &[i64], w: &[i64], d: usize) {
        if most == f64::NEG_INFINITY || self.best.is_some_and(|(b, _)| most <= b) {
            return;
        }
        let found = BoxCounts {
            duration: k as i64,
            start: start as i64,
            wy_in: wy[start + d] - wy[start],
            w_in: w[start + d] - w[start],
        };
        self.best = Some((most, found));
    }

    #[inline]
    fn consider(&mut self, duration: usize, start: i64, wy_in: i64, w_in: i64) {
        let [sy_in, sw_in, sy_out, sw_out] = self.prep.sums(wy_in, w_in);
        let Some(value) = BoxFit::objective(sy_in, sw_in, sy_out, sw_out, self.objective) else {
            return;
        };
        if self.best.map_or(true, |(b, _)| value > b) {
            let found = BoxCounts {
                duration: duration as i64,
                start,
                wy_in,
                w_in,
            };
            self.best = Some((value, found));
        }
    }
}

impl Scratch {
    fn best_box(
        &mut self,
        samples: &Samples<'_>,
        period: f64,
        grid: &BlsGrid,
        objective: BlsObjective,
    ) -> Option<BoxCounts> {
        let (prep, bins) = (samples.prep, grid.bins(period));
        let mut search = Search {
            prep,
            objective,
            best: None,
        };
        if bins <= HISTOGRAM_BINS_PER_SAMPLE * prep.dt.len() as i64 {
            self.histogram(samples, period, bins, grid, &mut search);
        } else {
            self.events(prep, period, bins, grid, &mut search);
        }
        search.best.map(|(_, found)| found)
    }

    fn histogram(
        &mut self,
        samples: &Samples<'_>,
        period: f64,
        bins: i64,
        grid: &BlsGrid,
        search: &mut Search<'_>,
    ) {
        let prep = samples.prep;
        let len = bins as usize + 1;
        let (wy, w) = (&mut self.wy, &mut self.w);
        wy.clear();
        wy.resize(len, 0);
        w.clear();
        w.resize(len, 0);
        let bin_of = &mut self.bin_of;
        bin_of.resize(prep.dt.len(), 0);
        let (unsure, most) = phase_bins(&prep.dt, period, grid.bin, bin_of);
        let mut by_runs = i64::from(most) <= bins;
        if by_runs && unsure > 0 {
            for (b, &dt) in bin_of.iter_mut().zip(&prep.dt) {
                if *b == 0 {
                    let exact = grid.phase_bin(dt, period);
                    by_runs &= exact >= 1 && exact <= bins;
                    *b = exact as i32;
                }
            }
        }
        if by_runs {
            let oversample = grid.oversample as usize;
            place_runs(
                bin_of,
                &samples.wy_prefix,
                &samples.w_prefix,
                oversample,
                wy,
                w,
            );
        } else {
            place_each(prep, grid, period, bins, wy, w);
        }
        // Running sums in registers (not reloaded from the bin just stored).
        let (mut sum_wy, mut sum_w) = (0, 0);
        for (y, x) in wy.iter_mut().zip(w.iter_mut()) {
            sum_wy += *y;
            sum_w += *x;
            (*y, *x) = (sum_wy, sum_w);
        }
        // Every start of every duration, eight at a time; a box whose
        // contents equal those of an earlier box ties with it, and the
        // search keeps the first of equals.
        for (k, &d) in grid.duration_bins.iter().enumerate() {
            let d = d as usize;
            let (most, start) = judge_all(prep, wy, w, d, search.objective);
            search.consider_all(k, most, start, wy, w, d);
        }
    }

    fn events(
        &mut self,
        prep: &BlsPrepared,
        period: f64,
        bins: i64,
        grid: &BlsGrid,
        search: &mut Search<'_>,
    ) {
        let placed = &mut self.placed;
        placed.clear();
        for i in 0..prep.dt.len() {
            let b = grid.phase_bin(prep.dt[i], period);
            placed.extend(
                grid.placements(b, bins)
                    .into_iter()
                    .flatten()
                    .map(|p| (p, i)),
            );
        }
        placed.sort_unstable_by_key(|&(p, _)| p);
        let (wy, w, positions) = (&mut self.wy, &mut self.w, &mut self.positions);
        wy.clear();
        w.clear();
        positions.clear();
        let (mut sum_wy, mut sum_w) = (0, 0);
        wy.push(0);
        w.push(0);
        for &(p, i) in placed.iter() {
            sum_wy += prep.wy[i];
            sum_w += prep.w[i];
            wy.push(sum_wy);
            w.push(sum_w);
            positions.push(p);
        }
        let count = positions.len();
        for (k, &d) in grid.duration_bins.iter().enumerate() {
            let last_start = bins - d;
            // Starts in increasing order: 0, then the merge of positions[j]
            // (from `gone`) and positions[j] - d (from `coming`).
            let (mut gone, mut coming) = (0, 0);
            // Placements at or before the start, and at or before its end.
            let (mut below, mut within) = (0, 0);
            let mut start = 0;
            loop {
                if start > last_start {
                    break;
                }
                while below < count && positions[below] <= start {
                    below += 1;
                }
                while within < count && positions[within] <= start + d {
                    within += 1;
                }
                search.consider(k, start, wy[within] - wy[below], w[within] - w[below]);
                // The next start where the contents can change.
                while gone < count && positions[gone] <= start {
                    gone += 1;
                }
                while coming < count && positions[coming] - d <= start {
                    coming += 1;
                }
                start = match (positions.get(gone), positions.get(coming)) {
                    (Some(&a), Some(&b)) => a.min(b - d),
                    (Some(&a), None) => a,
                    (None, Some(&b)) => b - d,
                    (None, None) => break,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::bls::BlsOptions;
    use crate::test_rng::Rng;
    use proptest::prelude::*;

    /// The best box by the definition of the layouts: each sample's
    /// placements binned one by one ([`place_each`]), prefix sums, every
    /// start of every duration judged in the search's order.
    fn every_start(
        prep: &BlsPrepared,
        period: f64,
        grid: &BlsGrid,
        objective: BlsObjective,
    ) -> Option<BoxCounts> {
        let bins = grid.bins(period);
        let (mut wy, mut w) = (vec![0i64; bins as usize + 1], vec![0i64; bins as usize + 1]);
        place_each(prep, grid, period, bins, &mut wy, &mut w);
        for b in 1..wy.len() {
            wy[b] += wy[b - 1];
            w[b] += w[b - 1];
        }
        let mut search = Search {
            prep,
            objective,
            best: None,
        };
        for (k, &d) in grid.duration_bins.iter().enumerate() {
            for start in 0..=(bins - d) as usize {
                let d = d as usize;
                search.consider(
                    k,
                    start as i64,
                    wy[start + d] - wy[start],
                    w[start + d] - w[start],
                );
            }
        }
        search.best.map(|(_, found)| found)
    }

    /// Random curves: random or regular times (a cadence, some on exact bin
    /// edges), noisy or few-valued values (many boxes tie), with or without
    /// dy; each layout gives the box of [`every_start`] exactly.
    fn case(seed: u64) -> Result<(), TestCaseError> {
        let mut r = Rng(seed);
        let n = 1 + (r.next() * r.next() * 3000.0) as usize;
        let oversample = 1 + (r.next() * 12.0) as u32;
        let min_duration = [0.01, 0.04, 0.125][(r.next() * 3.0) as usize];
        let durations: Vec<f64> = (0..1 + (r.next() * 4.0) as usize)
            .map(|j| {
                if j == 0 {
                    min_duration
                } else {
                    min_duration * r.range(1.0, 3.0)
                }
            })
            .collect();
        let longest = durations.iter().copied().fold(0.0, f64::max);
        let baseline = r.range(0.5, 40.0);
        let bin = min_duration / oversample as f64;
        let t: Vec<f64> = match (r.next() * 3.0) as usize {
            0 => (0..n).map(|_| r.range(0.0, baseline)).collect(),
            1 => (0..n).map(|i| i as f64 * baseline / n as f64).collect(),
            _ => (0..n)
                .map(|i| (i * (1 + (seed % 3) as usize)) as f64 * bin)
                .collect(),
        };
        let few = r.next() < 0.3;
        let y: Vec<f64> = (0..n)
            .map(|_| {
                if few {
                    (r.next() * 3.0).floor()
                } else {
                    r.range(-1.0, 1.0)
                }
            })
            .collect();
        let dy: Option<Vec<f64>> =
            (r.next() < 0.5).then(|| (0..n).map(|_| r.range(0.1, 2.0)).collect());
        let mut periods: Vec<f64> = (0..8)
            .map(|_| longest * 1.01 + r.range(0.0, baseline))
            .collect();
        // Periods of whole bins: samples of a cadence fall on bin edges.
        periods.push((longest / bin).ceil() * bin + 3.0 * bin);
        periods.push(
            ((baseline / 3.0 / bin).round() + 1.0)
                .max(longest / bin + 1.0)
                .ceil()
                * bin,
        );
        for objective in [BlsObjective::Likelihood, BlsObjective::Snr] {
            let opts = BlsOptions {
                objective,
                oversample,
            };
            let grid = BlsGrid::new(&periods, &durations, &opts).unwrap();
            let prep = BlsPrepared::of(&t, &y, dy.as_deref(), &grid).unwrap();
            let (mut scratch, samples) = (Scratch::default(), Samples::of(&prep));
            let threads = 1 + (seed % 2) as usize;
            let all = best_boxes(threads, None, &prep, &periods, &grid, objective);
            for (&period, found) in periods.iter().zip(&all) {
                let want = every_start(&prep, period, &grid, objective);
                let bins = grid.bins(period);
                let none = found.duration < 0;
                prop_assert_eq!(
                    (!none).then_some(*found),
                    want,
                    "period {}, best_boxes",
                    period
                );
                for histogram in [true, false] {
                    let mut search = Search {
                        prep: &prep,
                        objective,
                        best: None,
                    };
                    if histogram {
                        scratch.histogram(&samples, period, bins, &grid, &mut search);
                    } else {
                        scratch.events(&prep, period, bins, &grid, &mut search);
                    }
                    let got = search.best.map(|(_, found)| found);
                    prop_assert_eq!(got, want, "period {}, histogram {}", period, histogram);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn layouts_give_the_box_of_every_start(seed in any::<u64>()) {
            case(seed)?;
        }
    }

    /// [`judge_all`]'s largest value and first start reaching it, lane by
    /// lane, equal a scalar walk with a strict improvement, on prefix sums
    /// of few values (boxes tie across lanes and in the remainder) and
    /// boxes all refused.
    #[test]
    fn judge_all_keeps_the_first_of_equal_boxes() {
        let mut r = Rng(777);
        for case in 0..2000 {
            let len = 2 + (r.next() * 90.0) as usize;
            let d = 1 + (r.next() * (len - 1) as f64) as usize;
            let empty = case % 10 == 0;
            let (mut wy, mut w) = (vec![0i64], vec![0i64]);
            for _ in 1..len {
                let step_w = if empty { 0 } else { (r.next() * 3.0) as i64 };
                let step_wy = (r.next() * 3.0) as i64 - 1;
                wy.push(wy.last().unwrap() + step_wy);
                w.push(w.last().unwrap() + step_w);
            }
            let prep = BlsPrepared {
                t_ref: 0.0,
                dt: vec![],
                wy: vec![],
                w: vec![],
                wy_all: *wy.last().unwrap(),
                w_all: *w.last().unwrap() + (r.next() * 3.0) as i64,
                wy_unit: crate::params::bls::FixedPoint { unit: 0.25 },
                w_unit: crate::params::bls::FixedPoint { unit: 0.5 },
            };
            for objective in [BlsObjective::Likelihood, BlsObjective::Snr] {
                let (mut most, mut start) = (f64::NEG_INFINITY, 0);
                for s in 0..len - d {
                    let [a, b, c, e] = prep.sums(wy[s + d] - wy[s], w[s + d] - w[s]);
                    let v = BoxFit::objective_or_neg_inf(a, b, c, e, objective);
                    if v > most {
                        (most, start) = (v, s);
                    }
                }
                let got = judge_all(&prep, &wy, &w, d, objective);
                assert_eq!(got.0.to_bits(), most.to_bits(), "case {case}");
                if most != f64::NEG_INFINITY {
                    assert_eq!(got.1, start, "case {case}");
                }
            }
        }
    }

    /// The fast phase bins equal [`BlsGrid::phase_bin`] wherever they are
    /// sure (not 0), and are rarely unsure off bin edges.
    #[test]
    fn fast_phase_bins_are_exact() {
        let mut r = Rng(12345);
        let mut unsure = 0;
        for _ in 0..200 {
            let bin = r.range(1e-4, 0.1);
            let period = r.range(1.0, 200.0) * bin;
            let dt: Vec<f64> = (0..500)
                .map(|i| {
                    if i % 2 == 0 {
                        r.range(0.0, 1e4 * bin)
                    } else {
                        (i as f64) * bin
                    }
                })
                .collect();
            let grid = BlsGrid {
                bin,
                oversample: 1,
                duration_bins: vec![1],
                max_bins: 0,
            };
            let mut out = vec![0; dt.len()];
            phase_bins(&dt, period, bin, &mut out);
            for (i, &b) in out.iter().enumerate() {
                if b == 0 {
                    // Samples on bin edges (odd i) may well be unsure.
                    unsure += usize::from(i % 2 == 0);
                } else {
                    assert_eq!(
                        b as i64,
                        grid.phase_bin(dt[i], period),
                        "dt {} period {}",
                        dt[i],
                        period
                    );
                }
            }
        }
        assert!(unsure < 500, "{unsure} random samples unsure of 50000");
    }
}
