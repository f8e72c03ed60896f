//! Lomb-Scargle options, series and results: plain data shared by the API
//! and the reference.
use std::str::FromStr;

use cudarc::driver::sys::CUdeviceptr;

use crate::error::{readable, Error, Result};
use crate::float::{Complex, Float};

/// SciPy's `normalize` argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Normalize {
    /// `(A^2) N / 4` for a harmonic of amplitude A (SciPy's `False` / "power").
    #[default]
    Power,
    /// Power relative to the residuals around a constant model, in [0, 1] (`True` / "normalize").
    Normalize,
    /// The complex amplitude `(a + ib) e^{i tau}` of the best fit ("amplitude").
    Amplitude,
}

impl FromStr for Normalize {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "power" | "false" => Ok(Normalize::Power),
            "normalize" | "true" => Ok(Normalize::Normalize),
            "amplitude" => Ok(Normalize::Amplitude),
            other => Err(Error::invalid(format!(
                "unknown normalize mode {other:?}: expected power, normalize or amplitude"
            ))),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LombScargleOptions {
    pub normalize: Normalize,
    /// Fit an offset per frequency (the generalised periodogram). Recommended
    /// whenever y may have a non-zero mean.
    pub floating_mean: bool,
    /// SciPy's legacy option: subtract mean(y) before the fit.
    pub precenter: bool,
}

/// Number of `T` values the output holds per frequency: 1, or 2 interleaved
/// (re, im) for `Amplitude`.
pub fn values_per_frequency(opts: &LombScargleOptions) -> usize {
    match opts.normalize {
        Normalize::Amplitude => 2,
        _ => 1,
    }
}

/// Number of `T` values the output holds for `nf` frequencies: nf, or 2 nf
/// interleaved (re, im) for `Amplitude`. `nf` is at most `i64::MAX / 2`, as
/// validation requires, so this cannot overflow.
pub fn output_len(nf: usize, opts: &LombScargleOptions) -> usize {
    values_per_frequency(opts) * nf
}

/// One time series: times, values and optional non-negative weights (default 1).
#[derive(Debug, Clone, Copy)]
pub struct Series<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub weights: Option<&'a [T]>,
}

impl<'a, T> Series<'a, T> {
    pub fn new(t: &'a [T], y: &'a [T]) -> Self {
        Series {
            t,
            y,
            weights: None,
        }
    }
    pub fn with_weights(mut self, weights: &'a [T]) -> Self {
        self.weights = Some(weights);
        self
    }
}

/// A periodogram: real for `Power`/`Normalize`, complex for `Amplitude`.
#[derive(Debug, Clone, PartialEq)]
pub enum Periodogram<T> {
    Real(Vec<T>),
    Complex(Vec<Complex<T>>),
}

impl<T: Float> Periodogram<T> {
    pub fn len(&self) -> usize {
        match self {
            Periodogram::Real(v) => v.len(),
            Periodogram::Complex(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The real values, or the moduli of the complex ones, as f64.
    pub fn magnitudes(&self) -> Vec<f64> {
        match self {
            Periodogram::Real(v) => v.iter().map(|x| x.to_f64()).collect(),
            Periodogram::Complex(v) => v.iter().map(|c| c.norm()).collect(),
        }
    }
    /// The same periodogram in another precision.
    pub fn cast<U: Float>(&self) -> Periodogram<U> {
        let c = |x: &T| U::from_f64(x.to_f64());
        match self {
            Periodogram::Real(v) => Periodogram::Real(v.iter().map(c).collect()),
            Periodogram::Complex(v) => Periodogram::Complex(
                v.iter()
                    .map(|z| Complex {
                        re: c(&z.re),
                        im: c(&z.im),
                    })
                    .collect(),
            ),
        }
    }

    /// The periodograms of consecutive series, `per_series` values each in
    /// `values` (as the kernels write them: interleaved for 'amplitude').
    pub(crate) fn split(values: &[T], per_series: usize, normalize: Normalize) -> Vec<Self> {
        values
            .chunks_exact(per_series)
            .map(|v| Periodogram::from_interleaved(v.to_vec(), normalize))
            .collect()
    }

    pub(crate) fn from_interleaved(values: Vec<T>, normalize: Normalize) -> Self {
        match normalize {
            Normalize::Amplitude => Periodogram::Complex(
                values
                    .chunks_exact(2)
                    .map(|p| Complex { re: p[0], im: p[1] })
                    .collect(),
            ),
            _ => Periodogram::Real(values),
        }
    }
}

/// A uniform grid of angular frequencies `f0 + k df`, `k = 0 .. nf`: the
/// common case, computed by the recurrence kernel (no sincos per pair).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UniformGrid {
    pub f0: f64,
    pub df: f64,
    pub nf: usize,
}

impl UniformGrid {
    pub fn new(f0: f64, df: f64, nf: usize) -> Self {
        UniformGrid { f0, df, nf }
    }

    /// `nf` frequencies from `first` to `last` inclusive.
    pub fn spanning(first: f64, last: f64, nf: usize) -> Self {
        let df = if nf > 1 {
            (last - first) / (nf - 1) as f64
        } else {
            0.0
        };
        UniformGrid { f0: first, df, nf }
    }

    pub fn frequency(&self, k: usize) -> f64 {
        self.f0 + k as f64 * self.df
    }

    pub fn frequencies(&self) -> Vec<f64> {
        (0..self.nf).map(|k| self.frequency(k)).collect()
    }

    /// Non-empty, finite, non-negative, increasing.
    pub fn validate(&self) -> Result<()> {
        if self.nf == 0 {
            return Err(Error::invalid("the frequency grid is empty (nf = 0)"));
        }
        let last = self.frequency(self.nf - 1);
        if !(self.f0.is_finite() && self.df.is_finite()) {
            return Err(Error::invalid(format!(
                "grid f0 {} df {} is not finite",
                readable(self.f0),
                readable(self.df)
            )));
        }
        if !last.is_finite() {
            return Err(Error::invalid(format!(
                "grid f0 {} df {} nf {}: the last frequency overflows",
                readable(self.f0),
                readable(self.df),
                self.nf
            )));
        }
        if self.f0 < 0.0 {
            return Err(Error::invalid(format!(
                "grid f0 = {} is negative: a peak at -f is the peak at +f",
                self.f0
            )));
        }
        // One frequency has no step: any finite df will do.
        if self.nf > 1 && self.df <= 0.0 {
            return Err(Error::invalid(format!(
                "grid df = {} must be positive",
                self.df
            )));
        }
        if self.nf > i64::MAX as usize / 2 {
            return Err(Error::invalid("too many frequencies"));
        }
        if self.nf > 1 && self.f0 + self.df <= self.f0 {
            return Err(Error::invalid(format!(
                "grid df {} is below the spacing of f64 at f0 {}: the grid would not increase",
                readable(self.df),
                readable(self.f0)
            )));
        }
        Ok(())
    }

    /// [`UniformGrid::validate`], and every frequency representable in `T`
    /// (an f32 call computes its grid in f32: 1e39 would be infinite there).
    pub fn validate_for<T: Float>(&self) -> Result<()> {
        self.validate()?;
        let last = self.frequency(self.nf - 1);
        if [self.f0, self.df, last]
            .iter()
            .any(|&v| !T::from_f64(v).to_f64().is_finite())
        {
            return Err(Error::invalid(format!(
                "grid f0 {} df {} (last frequency {}) exceeds the range of {}",
                readable(self.f0),
                readable(self.df),
                readable(last),
                T::NAME
            )));
        }
        // The grid is formed in T: a step below T's spacing at f0 does not
        // move it. (Far along a long grid T's spacing may pass df too: f32
        // holds 2^24 steps at most before values repeat, a loss of resolution
        // there, as with any f32 frequencies.)
        let in_t = |v: f64| T::from_f64(v).to_f64();
        if self.nf > 1 && in_t(self.f0 + self.df) <= in_t(self.f0) {
            return Err(Error::invalid(format!(
                "grid df {} is below the spacing of {} at f0 {}: the grid would not \
                 increase (use f64)",
                readable(self.df),
                T::NAME,
                readable(self.f0)
            )));
        }
        Ok(())
    }
}

/// Where a device call's frequencies are.
#[derive(Debug, Clone, Copy)]
pub enum DeviceFreqs {
    /// `len` angular frequencies in device memory.
    Array { ptr: CUdeviceptr, len: usize },
    /// A uniform grid, generated on the fly.
    Uniform(UniformGrid),
}

impl DeviceFreqs {
    pub(crate) fn count_and_grid(&self) -> (usize, Option<UniformGrid>) {
        match self {
            DeviceFreqs::Array { len, .. } => (*len, None),
            DeviceFreqs::Uniform(grid) => (grid.nf, Some(*grid)),
        }
    }
    pub fn len(&self) -> usize {
        self.count_and_grid().0
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Raw device pointers of one Lomb-Scargle call (`LombScargleOnDevice`, run by `Gpu::enqueue`).
#[derive(Debug, Clone, Copy)]
pub struct LsDeviceBuffers {
    pub t: CUdeviceptr,
    pub y: CUdeviceptr,
    pub weights: Option<CUdeviceptr>,
    pub out: CUdeviceptr,
}

/// Series concatenated CSR-style: series `s` is `t[offsets[s]..offsets[s + 1]]`
/// (likewise y and the optional weights); `offsets` has one entry more than
/// there are series, starts at 0 and ends at `t.len()`.
#[derive(Debug, Clone, Copy)]
pub struct Batch<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub weights: Option<&'a [T]>,
    pub offsets: &'a [usize],
}

impl<T> Batch<'_, T> {
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Series `s` as a single series.
    ///
    /// # Panics
    /// When `s >= self.len()` or the offsets pass the samples: an indexing
    /// helper, for batches that passed `validate_batch` (every call does).
    pub fn series(&self, s: usize) -> Series<'_, T> {
        let range = self.offsets[s]..self.offsets[s + 1];
        Series {
            t: &self.t[range.clone()],
            y: &self.y[range.clone()],
            weights: self.weights.map(|w| &w[range]),
        }
    }
}

/// The frequencies of every series: one grid for all, or `f0[s] + k df[s]`.
#[derive(Debug, Clone, Copy)]
pub enum BatchGrid<'a> {
    Shared(UniformGrid),
    PerSeries {
        f0: &'a [f64],
        df: &'a [f64],
        nf: usize,
    },
}

impl<'a> BatchGrid<'a> {
    pub fn nf(&self) -> usize {
        match self {
            BatchGrid::Shared(grid) => grid.nf,
            BatchGrid::PerSeries { nf, .. } => *nf,
        }
    }
    /// The grid of series `s`.
    ///
    /// # Panics
    /// When a per-series grid has no entry `s` (`validate_batch` checks the lengths).
    pub fn grid(&self, s: usize) -> UniformGrid {
        match self {
            BatchGrid::Shared(grid) => *grid,
            BatchGrid::PerSeries { f0, df, nf } => UniformGrid::new(f0[s], df[s], *nf),
        }
    }
    /// The grids of series `r` (a shared grid stays shared).
    pub(crate) fn slice(&self, r: std::ops::Range<usize>) -> BatchGrid<'a> {
        match *self {
            BatchGrid::Shared(grid) => BatchGrid::Shared(grid),
            BatchGrid::PerSeries { f0, df, nf } => BatchGrid::PerSeries {
                f0: &f0[r.clone()],
                df: &df[r],
                nf,
            },
        }
    }
    /// Per-series grids: one `f0` and one `df` for each of `nseries` series.
    pub(crate) fn check_len(&self, nseries: usize) -> crate::error::Result<()> {
        match self {
            BatchGrid::PerSeries { f0, df, .. } if f0.len() != nseries || df.len() != nseries => {
                Err(crate::error::Error::invalid(format!(
                    "{nseries} series but {} f0 and {} df values",
                    f0.len(),
                    df.len()
                )))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn starts_and_steps(&self) -> (Vec<f64>, Vec<f64>) {
        match self {
            BatchGrid::Shared(grid) => (vec![grid.f0], vec![grid.df]),
            BatchGrid::PerSeries { f0, df, .. } => (f0.to_vec(), df.to_vec()),
        }
    }
}

/// Raw device pointers of a batched call (`LombScargleBatchOnDevice`, run by `Gpu::enqueue`).
#[derive(Debug, Clone, Copy)]
pub struct BatchDeviceBuffers {
    pub t: CUdeviceptr,
    pub y: CUdeviceptr,
    pub weights: Option<CUdeviceptr>,
    /// nseries + 1 `i64` offsets.
    pub offsets: CUdeviceptr,
    /// `f64` grid starts and steps: nseries of each, or 1 when `per_series_grid` is false.
    pub f0: CUdeviceptr,
    pub df: CUdeviceptr,
    pub per_series_grid: bool,
    /// nseries x `output_len(nf)` values.
    pub out: CUdeviceptr,
}

impl BatchDeviceBuffers {
    /// The grids of a batch of `nseries` series: one each, or one shared.
    pub(crate) fn ngrids(&self, nseries: usize) -> usize {
        if self.per_series_grid {
            nseries
        } else {
            1
        }
    }
}

/// Where the peaks of a batch on the device (`LombScarglePeaksOnDevice`) go: one `i64` index (-1
/// when every value of the series' periodogram is NaN) and one `f64` value
/// (NaN then) per series.
#[derive(Debug, Clone, Copy)]
pub struct PeakBuffers {
    pub index: CUdeviceptr,
    pub value: CUdeviceptr,
}

/// Denominators (SciPy's CC and SS, weights summing to 1) at or under this
/// are rounding noise, and so are their numerators (Cauchy-Schwarz): the term
/// is taken as 0. Sums of `n` terms carry ~sqrt(n) eps of rounding, hence the
/// scaling. SciPy instead divides by epsneg, which returns noise in those
/// degenerate cases (e.g. f = 0 with a floating mean); elsewhere the two agree.
/// The kernels use the same rule with their own epsilon.
pub fn degenerate_below(n: usize, eps: f64) -> f64 {
    32.0 * eps * (n as f64).sqrt().max(1.0)
}

/// The peaks of periodograms: see [`crate::params::peaks`].
pub use super::peaks::Peak;

impl Peak {
    /// The highest non-NaN value of `p`, the first of equal ones; `None` when
    /// every value is NaN. The GPU's reduction picks the same index, and the
    /// same value bit for bit except for [`Normalize::Amplitude`], whose
    /// modulus is a `hypot` on each side (within an ulp or two).
    pub fn of<T: Float>(p: &Periodogram<T>) -> Option<Peak> {
        let mut best: Option<Peak> = None;
        let mut consider = |index: usize, value: f64| {
            if !value.is_nan() && best.map_or(true, |b| value > b.value) {
                best = Some(Peak { index, value });
            }
        };
        match p {
            Periodogram::Real(v) => v
                .iter()
                .enumerate()
                .for_each(|(k, x)| consider(k, x.to_f64())),
            Periodogram::Complex(v) => v
                .iter()
                .enumerate()
                .for_each(|(k, c)| consider(k, c.norm())),
        }
        best
    }
}
