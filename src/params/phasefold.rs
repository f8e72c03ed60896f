//! Phase-folding period searches: phase dispersion minimisation (PDM) and
//! conditional entropy (CE). Plain data shared by the API, the backends and
//! the reference; frequencies are in cycles per unit of time.
//!
//! Both statistics fold a series at each trial frequency `f`. Sample `i`
//! falls in phase bin [`phase_bin`]: `floor(frac((t_i - min t) f) bins)`
//! (the last bin where rounding gives `bins`), computed in f64 by the same
//! operations in the same order on every backend, so every backend bins
//! every sample alike.
//!
//! - **PDM** (binned variance ratio, Stellingwerf 1978 with weights, as
//!   cuvarbase's binned step model): with weights `w = 1 / dy^2` (1 without
//!   `dy`), `ybar` the weighted mean and `ybar_b` the weighted mean of bin
//!   `b`, `theta(f) = sum_i w_i (y_i - ybar_b(i))^2 / sum_i w_i (y_i -
//!   ybar)^2`, in [0, 1]; lower is better (cuvarbase reports `1 - theta`).
//!   Empty bins contribute nothing.
//! - **CE** (Graham et al. 2013; cuvarbase and periodfind semantics):
//!   values scaled to [0, 1] by `(y - min y) / (max y - min y)`, magnitude
//!   bin `floor(y' mag_bins)` (the last for `y' = 1`). A sample counts in
//!   phase bins `b, b - 1, ..., b - phase_overlap` (cyclically) and
//!   magnitude bins `m, m - 1, ..., max(0, m - mag_overlap)`. With `N_pm`
//!   the counts and `N_p = sum_m N_pm`, `H(f) = sum_pm N_pm ln(N_p / N_pm) /
//!   sum_pm N_pm`; lower is better. `dy` is not used. cuvarbase's standard
//!   CE is `H + ln((mag_overlap + 1) / mag_bins)`.
//!
//! A series without spread (constant `y`, or one sample) has no statistic:
//! NaN at every frequency.
use crate::error::{Error, Result};

/// The most PDM phase bins a call may ask for.
pub const MAX_PDM_BINS: usize = 4096;
/// The most CE cells (phase bins x magnitude bins) a call may ask for.
pub const MAX_CE_CELLS: usize = 1 << 16;

/// PDM's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PdmOptions {
    /// Phase bins, 2..=[`MAX_PDM_BINS`].
    pub bins: usize,
}

impl Default for PdmOptions {
    /// 10 bins, cuvarbase's default.
    fn default() -> Self {
        PdmOptions { bins: 10 }
    }
}

/// Conditional entropy's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeOptions {
    /// Phase bins, >= 1.
    pub phase_bins: usize,
    /// Magnitude bins, >= 1; `phase_bins * mag_bins <= MAX_CE_CELLS`.
    pub mag_bins: usize,
    /// Extra phase bins below its own that a sample also counts in,
    /// `< phase_bins`.
    pub phase_overlap: usize,
    /// Extra magnitude bins below its own that a sample also counts in,
    /// `< mag_bins`.
    pub mag_overlap: usize,
}

impl Default for CeOptions {
    /// 10 phase bins x 5 magnitude bins, no overlap (cuvarbase's defaults).
    fn default() -> Self {
        CeOptions {
            phase_bins: 10,
            mag_bins: 5,
            phase_overlap: 0,
            mag_overlap: 0,
        }
    }
}

/// Which statistic a call computes: the one dispatch behind
/// [`crate::Kernpack::pdm`] and [`crate::Kernpack::conditional_entropy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Statistic {
    Pdm(PdmOptions),
    ConditionalEntropy(CeOptions),
}

impl Statistic {
    /// The options within their ranges.
    pub fn validate(&self) -> Result<()> {
        match *self {
            Statistic::Pdm(o) => {
                if !(2..=MAX_PDM_BINS).contains(&o.bins) {
                    return Err(Error::invalid(format!(
                        "bins = {} is out of range: PDM takes 2 to {MAX_PDM_BINS} phase bins",
                        o.bins
                    )));
                }
            }
            Statistic::ConditionalEntropy(o) => {
                if o.phase_bins == 0 || o.mag_bins == 0 {
                    return Err(Error::invalid(format!(
                        "phase_bins = {} and mag_bins = {}: each must be at least 1",
                        o.phase_bins, o.mag_bins
                    )));
                }
                if o.phase_bins.saturating_mul(o.mag_bins) > MAX_CE_CELLS {
                    return Err(Error::invalid(format!(
                        "phase_bins x mag_bins = {} x {} exceeds {MAX_CE_CELLS} cells",
                        o.phase_bins, o.mag_bins
                    )));
                }
                if o.phase_overlap >= o.phase_bins || o.mag_overlap >= o.mag_bins {
                    return Err(Error::invalid(format!(
                        "phase_overlap = {} and mag_overlap = {} must be below phase_bins = {} \
                         and mag_bins = {}",
                        o.phase_overlap, o.mag_overlap, o.phase_bins, o.mag_bins
                    )));
                }
            }
        }
        Ok(())
    }

    /// Phase bins of the fold.
    pub fn phase_bins(&self) -> usize {
        match *self {
            Statistic::Pdm(o) => o.bins,
            Statistic::ConditionalEntropy(o) => o.phase_bins,
        }
    }

    /// Accumulators one frequency needs: PDM's two f64 sums per bin, CE's
    /// u32 count per cell.
    pub fn cells(&self) -> usize {
        match *self {
            Statistic::Pdm(o) => 2 * o.bins,
            Statistic::ConditionalEntropy(o) => o.phase_bins * o.mag_bins,
        }
    }

    /// Bytes of one accumulator.
    pub fn cell_bytes(&self) -> usize {
        match self {
            Statistic::Pdm(_) => 8,
            Statistic::ConditionalEntropy(_) => 4,
        }
    }

    /// Lower values are better for both statistics.
    pub fn better(&self) -> crate::params::peaks::Better {
        crate::params::peaks::Better::Lower
    }

    /// The code the kernel takes (csrc/phasefold.cu).
    pub fn code(&self) -> i32 {
        match self {
            Statistic::Pdm(_) => 0,
            Statistic::ConditionalEntropy(_) => 1,
        }
    }

    /// The statistic's name in messages.
    pub fn name(&self) -> &'static str {
        match self {
            Statistic::Pdm(_) => "PDM",
            Statistic::ConditionalEntropy(_) => "conditional entropy",
        }
    }
}

/// The phase bin of a sample `dt` after the series' first time at frequency
/// `f` (>= 0): `floor(frac(dt f) bins)`, at most `bins - 1`. The kernel
/// repeats these operations (csrc/phasefold.cu `phase_bin`).
#[inline(always)]
pub fn phase_bin(dt: f64, f: f64, bins: usize) -> usize {
    let x = dt * f;
    let frac = x - x.floor();
    ((frac * bins as f64) as usize).min(bins - 1)
}

/// One series prepared for a fold, in f64 (the same on every backend).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FoldPrepared {
    /// `t - min t` per sample.
    pub dt: Vec<f64>,
    /// PDM: `w (y - ybar)` and `w` per sample; empty for CE.
    pub wy: Vec<f64>,
    pub w: Vec<f64>,
    /// CE: the magnitude bin of each sample; empty for PDM.
    pub mag: Vec<i32>,
    /// PDM: `sum w (y - ybar)^2`; CE: 1. Zero: the series has no spread and
    /// its statistic is NaN at every frequency.
    pub scale: f64,
}

impl FoldPrepared {
    /// The series `t`, `y`, `dy` (checked: same lengths, at least one
    /// sample, finite, `dy > 0`) prepared for `statistic`; an error when
    /// PDM's weighted sums leave f64's range.
    pub fn of(t: &[f64], y: &[f64], dy: Option<&[f64]>, statistic: &Statistic) -> Result<Self> {
        let t_min = t.iter().copied().fold(f64::INFINITY, f64::min);
        let dt = t.iter().map(|&v| v - t_min).collect();
        match *statistic {
            Statistic::Pdm(_) => {
                let w: Vec<f64> = match dy {
                    Some(dy) => dy.iter().map(|&d| 1.0 / (d * d)).collect(),
                    None => vec![1.0; y.len()],
                };
                let w_all: f64 = w.iter().sum();
                let mean = y.iter().zip(&w).map(|(&v, &w)| w * v).sum::<f64>() / w_all;
                let wy: Vec<f64> = y.iter().zip(&w).map(|(&v, &w)| w * (v - mean)).collect();
                // All values equal: no spread, whatever the rounding of the mean.
                let constant = y.iter().all(|&v| v == y[0]);
                let scale: f64 = if constant {
                    0.0
                } else {
                    y.iter().zip(&wy).map(|(&v, &wy)| wy * (v - mean)).sum()
                };
                if !(w_all.is_finite() && mean.is_finite() && scale.is_finite()) {
                    return Err(Error::invalid(
                        "the weighted sums of y and 1 / dy^2 exceed the range of f64",
                    ));
                }
                Ok(FoldPrepared {
                    dt,
                    wy,
                    w,
                    mag: Vec::new(),
                    scale,
                })
            }
            Statistic::ConditionalEntropy(o) => {
                let lo = y.iter().copied().fold(f64::INFINITY, f64::min);
                let hi = y.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let span = hi - lo;
                if !span.is_finite() {
                    return Err(Error::invalid("max(y) - min(y) exceeds the range of f64"));
                }
                let mag = y
                    .iter()
                    .map(|&v| mag_bin(v, lo, span, o.mag_bins))
                    .collect();
                Ok(FoldPrepared {
                    dt,
                    wy: Vec::new(),
                    w: Vec::new(),
                    mag,
                    scale: if span > 0.0 { 1.0 } else { 0.0 },
                })
            }
        }
    }

    pub fn len(&self) -> usize {
        self.dt.len()
    }

    pub fn is_empty(&self) -> bool {
        self.dt.is_empty()
    }
}

/// The magnitude bin of `v` among `bins` over `[lo, lo + span]` (0 when the
/// span is 0).
fn mag_bin(v: f64, lo: f64, span: f64, bins: usize) -> i32 {
    if span > 0.0 {
        (((v - lo) / span * bins as f64) as usize).min(bins - 1) as i32
    } else {
        0
    }
}

/// `k ln k` for `k = 0..=max` (0 at 0): CE's entropy from integer counts is
/// `(sum_p T[N_p] - sum_pm T[N_pm]) / sum_pm N_pm`. The GPU reads the same
/// table, so both backends add the same values in the same order.
pub fn nlogn_table(max: usize) -> Vec<f64> {
    (0..=max)
        .map(|k| {
            if k == 0 {
                0.0
            } else {
                k as f64 * (k as f64).ln()
            }
        })
        .collect()
}

/// The largest count a CE cell or phase bin can reach for a series of `n`
/// samples: the table [`nlogn_table`] must reach it.
pub fn ce_max_count(n: usize, opts: &CeOptions) -> usize {
    n * (opts.mag_overlap + 1)
}

/// The [`nlogn_table`] a call over `preps` needs: up to the longest series'
/// [`ce_max_count`] for CE, empty for PDM.
pub fn nlogn_table_for(preps: &[FoldPrepared], statistic: &Statistic) -> Vec<f64> {
    match statistic {
        Statistic::ConditionalEntropy(o) => {
            let longest = preps.iter().map(FoldPrepared::len).max().unwrap_or(0);
            nlogn_table(ce_max_count(longest, o))
        }
        Statistic::Pdm(_) => Vec::new(),
    }
}

/// PDM's theta from one frequency's bin sums (`sw`, `swy`: one per bin) and
/// the series' `scale`; the kernel repeats these operations.
#[inline]
pub fn pdm_theta(sw: &[f64], swy: &[f64], scale: f64) -> f64 {
    if scale == 0.0 {
        return f64::NAN;
    }
    let mut between = 0.0;
    for (&w, &wy) in sw.iter().zip(swy) {
        if w > 0.0 {
            between += wy * wy / w;
        }
    }
    (scale - between) / scale
}

/// CE's entropy from one frequency's counts (`phase_bins` rows of
/// `mag_bins`), with `table` from [`nlogn_table`]; the kernel repeats these
/// operations.
#[inline]
pub fn ce_entropy(counts: &[u32], mag_bins: usize, table: &[f64], scale: f64) -> f64 {
    if scale == 0.0 {
        return f64::NAN;
    }
    let (mut acc, mut total) = (0.0, 0u64);
    for row in counts.chunks_exact(mag_bins) {
        let np: u32 = row.iter().sum();
        acc += table[np as usize];
        for &c in row {
            acc -= table[c as usize];
        }
        total += u64::from(np);
    }
    acc / total as f64
}
