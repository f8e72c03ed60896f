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
                if let Some(best) = scratch.best_box(prep, period, grid, objective) {
                    *found = best;
                }
            }
        },
    );
    out
}

/// Adds every sample of `prep` to the bins it is placed in at `period`
/// (`wy`, `w`: one value per bin) and marks those bins in `occupied`.
/// Compiled for the SIMD targets, where the fold's `floor` is one rounding
/// instruction rather than a call (a fifth of the time on long series).
#[macro_rules_attribute::apply(simd_targets!)]
fn place_samples(
    prep: &BlsPrepared,
    grid: &BlsGrid,
    period: f64,
    bins: i64,
    wy: &mut [i64],
    w: &mut [i64],
    occupied: &mut [u64],
) {
    for i in 0..prep.dt.len() {
        let b = grid.phase_bin(prep.dt[i], period);
        for p in grid.placements(b, bins).into_iter().flatten() {
            let p = p as usize;
            wy[p] += prep.wy[i];
            w[p] += prep.w[i];
            occupied[p / 64] |= 1 << (p % 64);
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
    /// Histogram: bit sets over the bins, of the bins holding samples and of
    /// the start bins to judge.
    occupied: Vec<u64>,
    starts: Vec<u64>,
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
        prep: &BlsPrepared,
        period: f64,
        grid: &BlsGrid,
        objective: BlsObjective,
    ) -> Option<BoxCounts> {
        let bins = grid.bins(period);
        let mut search = Search {
            prep,
            objective,
            best: None,
        };
        if bins <= HISTOGRAM_BINS_PER_SAMPLE * prep.dt.len() as i64 {
            self.histogram(prep, period, bins, grid, &mut search);
        } else {
            self.events(prep, period, bins, grid, &mut search);
        }
        search.best.map(|(_, found)| found)
    }

    fn histogram(
        &mut self,
        prep: &BlsPrepared,
        period: f64,
        bins: i64,
        grid: &BlsGrid,
        search: &mut Search<'_>,
    ) {
        let len = bins as usize + 1;
        let (wy, w) = (&mut self.wy, &mut self.w);
        wy.clear();
        wy.resize(len, 0);
        w.clear();
        w.resize(len, 0);
        let words = len.div_ceil(64);
        let (occupied, starts) = (&mut self.occupied, &mut self.starts);
        occupied.clear();
        occupied.resize(words, 0);
        place_samples(prep, grid, period, bins, wy, w, occupied);
        for b in 1..len {
            wy[b] += wy[b - 1];
            w[b] += w[b - 1];
        }
        // Only the boxes whose contents differ from the box one bin earlier
        // (start 0, or an occupied bin at the start or at the end): a box
        // skipped has the sums of an earlier one of the same duration, which
        // the search's order prefers. The starts are marked in a bit set and
        // visited in increasing order.
        for (k, &d) in grid.duration_bins.iter().enumerate() {
            let (d, last) = (d as usize, len - 1 - d as usize);
            starts.clear();
            starts.resize(words, 0);
            starts[0] |= 1;
            for (word, &bits) in occupied.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let b = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if b <= last {
                        starts[b / 64] |= 1 << (b % 64);
                    }
                    if b >= d && b - d <= last {
                        starts[(b - d) / 64] |= 1 << ((b - d) % 64);
                    }
                }
            }
            for (word, &bits) in starts.iter().enumerate() {
                let mut bits = bits;
                while bits != 0 {
                    let start = word * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    let (sy, sw) = (wy[start + d] - wy[start], w[start + d] - w[start]);
                    search.consider(k, start as i64, sy, sw);
                }
            }
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
