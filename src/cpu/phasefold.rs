//! PDM and conditional entropy on the CPU: threads over pieces of (series,
//! frequency) pairs; within a piece, [`LANES`] frequencies of one series at
//! a time, their phase bins computed together (compiled for the SIMD
//! targets) and accumulated per lane in sample order, as each GPU thread
//! does for its frequency. The statistic is then finished by the functions
//! the kernel mirrors, so both backends give the same bits.
use crate::params::phasefold::{
    ce_entropy, nlogn_table_for, pdm_theta, phase_bin, FoldPrepared, Statistic,
};

/// Frequencies folded together by one thread.
const LANES: usize = 4;
/// (series, frequency) pairs per piece of work handed to a thread.
const PAIRS_PER_PIECE: usize = 64;

/// The statistic of every prepared series at every frequency, series after
/// series (`preps.len() x freqs.len()` values).
pub(crate) fn fold(
    threads: usize,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
    preps: &[FoldPrepared],
    freqs: &[f64],
    statistic: &Statistic,
) -> Vec<f64> {
    let nf = freqs.len();
    let table = nlogn_table_for(preps, statistic);
    let mut out = vec![0.0; preps.len() * nf];
    if nf == 0 {
        return out;
    }
    super::parallel::for_each_chunk(
        threads,
        &mut out,
        PAIRS_PER_PIECE,
        progress,
        |first, piece| {
            let mut cells = Cells::default();
            // The piece may span series: fold each series' part of it.
            let mut done = 0;
            while done < piece.len() {
                let (s, k0) = ((first + done) / nf, (first + done) % nf);
                let len = (nf - k0).min(piece.len() - done);
                for (g, values) in piece[done..done + len].chunks_mut(LANES).enumerate() {
                    let k = k0 + g * LANES;
                    // A short last group repeats its last frequency; the extra
                    // lanes are dropped.
                    let f: [f64; LANES] = std::array::from_fn(|l| freqs[(k + l).min(k0 + len - 1)]);
                    cells.fold(&preps[s], &f, statistic, &table, values);
                }
                done += len;
            }
        },
    );
    out
}

/// One thread's accumulators, reused from group to group: per cell, one
/// value per lane.
#[derive(Default)]
struct Cells {
    sums: Vec<[f64; LANES]>,
    counts: Vec<[u32; LANES]>,
    column: Vec<f64>,
    column_counts: Vec<u32>,
}

impl Cells {
    /// Writes the statistic of `prep` at the frequencies `f` into `values`
    /// (its first `values.len()` lanes).
    fn fold(
        &mut self,
        prep: &FoldPrepared,
        f: &[f64; LANES],
        statistic: &Statistic,
        table: &[f64],
        values: &mut [f64],
    ) {
        match *statistic {
            Statistic::Pdm(o) => {
                self.sums.clear();
                self.sums.resize(2 * o.bins, [0.0; LANES]);
                let (sw, swy) = self.sums.split_at_mut(o.bins);
                pdm_sums(prep, f, o.bins, sw, swy);
                for (l, v) in values.iter_mut().enumerate() {
                    self.column.clear();
                    self.column.extend(self.sums.iter().map(|c| c[l]));
                    let (sw, swy) = self.column.split_at(o.bins);
                    *v = pdm_theta(sw, swy, prep.scale);
                }
            }
            Statistic::ConditionalEntropy(o) => {
                self.counts.clear();
                self.counts.resize(o.phase_bins * o.mag_bins, [0; LANES]);
                ce_counts(prep, f, &o, &mut self.counts);
                for (l, v) in values.iter_mut().enumerate() {
                    self.column_counts.clear();
                    self.column_counts.extend(self.counts.iter().map(|c| c[l]));
                    *v = ce_entropy(&self.column_counts, o.mag_bins, table, prep.scale);
                }
            }
        }
    }
}

/// PDM's per-bin sums of `w` and `w (y - ybar)` at each lane's frequency.
#[macro_rules_attribute::apply(simd_targets!)]
fn pdm_sums(
    prep: &FoldPrepared,
    f: &[f64; LANES],
    bins: usize,
    sw: &mut [[f64; LANES]],
    swy: &mut [[f64; LANES]],
) {
    for i in 0..prep.dt.len() {
        let (dt, w, wy) = (prep.dt[i], prep.w[i], prep.wy[i]);
        let b: [usize; LANES] = std::array::from_fn(|l| phase_bin(dt, f[l], bins));
        for l in 0..LANES {
            sw[b[l]][l] += w;
            swy[b[l]][l] += wy;
        }
    }
}

/// CE's counts per (phase bin, magnitude bin) at each lane's frequency.
#[macro_rules_attribute::apply(simd_targets!)]
fn ce_counts(
    prep: &FoldPrepared,
    f: &[f64; LANES],
    o: &crate::params::phasefold::CeOptions,
    counts: &mut [[u32; LANES]],
) {
    let (np, nm) = (o.phase_bins, o.mag_bins);
    for i in 0..prep.dt.len() {
        let dt = prep.dt[i];
        let m = prep.mag[i] as usize;
        let b: [usize; LANES] = std::array::from_fn(|l| phase_bin(dt, f[l], np));
        for l in 0..LANES {
            for q in 0..=o.phase_overlap {
                let p = if b[l] >= q { b[l] - q } else { b[l] + np - q };
                for mm in m.saturating_sub(o.mag_overlap)..=m {
                    counts[p * nm + mm][l] += 1;
                }
            }
        }
    }
}
