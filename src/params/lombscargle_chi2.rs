//! Multi-term generalised Lomb-Scargle (astropy's `LombScargle(nterms=K)`,
//! `method='chi2'`): options and series, plain data shared by the API, the
//! backends and the reference. Frequencies are in cycles per unit of time.
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::params::significance::PowerNormalization;

/// astropy's `normalization` of a chi2 periodogram. With `p` the reduction
/// of chi^2 the model brings and `chi2_ref` the chi^2 of the reference model
/// (the weighted mean, or 0 without `center_data` and `fit_mean`):
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chi2Normalization {
    /// `p / chi2_ref`, in [0, 1].
    #[default]
    Standard,
    /// `p / (chi2_ref - p)`.
    Model,
    /// `-ln(1 - p / chi2_ref)`.
    Log,
    /// `p / 2` (in units of y^2 / dy^2; of y^2 without dy).
    Psd,
}

impl Chi2Normalization {
    /// The normalised power from `p` and `chi2_ref` (both in f64).
    pub fn apply(self, p: f64, chi2_ref: f64) -> f64 {
        match self {
            Chi2Normalization::Standard => p / chi2_ref,
            Chi2Normalization::Model => p / (chi2_ref - p),
            Chi2Normalization::Log => -(1.0 - p / chi2_ref).ln(),
            Chi2Normalization::Psd => 0.5 * p,
        }
    }

    /// The code the kernels take (csrc/lombscargle_chi2.cu).
    pub fn code(self) -> i32 {
        match self {
            Chi2Normalization::Standard => 0,
            Chi2Normalization::Model => 1,
            Chi2Normalization::Log => 2,
            Chi2Normalization::Psd => 3,
        }
    }
}

/// The same normalisation, as the false-alarm statistics name it.
impl From<Chi2Normalization> for PowerNormalization {
    fn from(n: Chi2Normalization) -> Self {
        match n {
            Chi2Normalization::Standard => PowerNormalization::Standard,
            Chi2Normalization::Model => PowerNormalization::Model,
            Chi2Normalization::Log => PowerNormalization::Log,
            Chi2Normalization::Psd => PowerNormalization::Psd,
        }
    }
}

impl FromStr for Chi2Normalization {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "standard" => Ok(Chi2Normalization::Standard),
            "model" => Ok(Chi2Normalization::Model),
            "log" => Ok(Chi2Normalization::Log),
            "psd" => Ok(Chi2Normalization::Psd),
            other => Err(Error::invalid(format!(
                "normalization='{other}' not recognized: expected standard, model, log or psd"
            ))),
        }
    }
}

/// The most harmonics a call may fit (the GPU kernels are compiled for each
/// count up to this; 2 K + 1 = 17 unknowns per frequency).
pub const MAX_NTERMS: usize = 8;

/// astropy's `LombScargle` arguments other than the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chi2Options {
    /// Harmonics K of the model: sin and cos of 2 pi k f t for k = 1..=K.
    pub nterms: usize,
    /// Fit a constant offset at each frequency too.
    pub fit_mean: bool,
    /// Subtract the weighted mean of y first.
    pub center_data: bool,
    pub normalization: Chi2Normalization,
}

impl Default for Chi2Options {
    fn default() -> Self {
        Chi2Options {
            nterms: 1,
            fit_mean: true,
            center_data: true,
            normalization: Chi2Normalization::Standard,
        }
    }
}

impl Chi2Options {
    /// Unknowns per frequency: 2 K, plus the offset with `fit_mean`.
    pub fn unknowns(&self) -> usize {
        2 * self.nterms + usize::from(self.fit_mean)
    }

    pub fn validate(&self) -> Result<()> {
        if self.nterms == 0 || self.nterms > MAX_NTERMS {
            return Err(Error::invalid(format!(
                "nterms = {} is not supported: 1 to {MAX_NTERMS}",
                self.nterms
            )));
        }
        Ok(())
    }
}

/// One series: times, values and optional uncertainties `dy` (weights
/// 1 / dy^2; without them every weight is 1).
#[derive(Debug, Clone, Copy)]
pub struct Chi2Series<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub dy: Option<&'a [T]>,
}

impl<'a, T> Chi2Series<'a, T> {
    pub fn new(t: &'a [T], y: &'a [T]) -> Self {
        Chi2Series { t, y, dy: None }
    }
    pub fn with_dy(mut self, dy: &'a [T]) -> Self {
        self.dy = Some(dy);
        self
    }
}

/// What every backend needs of a series, computed once in f64: per sample
/// the normalised weight `w_i = dy_i^-2 / W` (W = sum dy^-2) and
/// `w_i yhat_i` (yhat = y minus its weighted mean with `center_data` or
/// `fit_mean`, y otherwise); `chi2_ref / W`; and W, which scales the power
/// back to astropy's units (only 'psd' shows it: the other normalisations
/// are ratios).
#[derive(Debug, Clone, PartialEq)]
pub struct Chi2Prepared {
    pub w: Vec<f64>,
    pub wy: Vec<f64>,
    /// chi2_ref / W: sum w_i yhat_i^2.
    pub chi2_ref: f64,
    /// W = sum dy^-2 (N without dy).
    pub weight_sum: f64,
}

impl Chi2Prepared {
    /// From `y` and `dy` in f64 (inputs assumed validated: finite, dy > 0
    /// with a finite, normalisable sum of dy^-2).
    pub fn of(y: &[f64], dy: Option<&[f64]>, opts: &Chi2Options) -> Self {
        let raw: Vec<f64> = match dy {
            Some(dy) => dy.iter().map(|d| d.powi(-2)).collect(),
            None => vec![1.0; y.len()],
        };
        let weight_sum: f64 = raw.iter().sum();
        let w: Vec<f64> = raw.iter().map(|r| r / weight_sum).collect();
        let mean: f64 = if opts.center_data || opts.fit_mean {
            w.iter().zip(y).map(|(w, y)| w * y).sum()
        } else {
            0.0
        };
        let yhat = |i: usize| y[i] - mean;
        let wy: Vec<f64> = (0..y.len()).map(|i| w[i] * yhat(i)).collect();
        let chi2_ref = (0..y.len()).map(|i| wy[i] * yhat(i)).sum();
        Chi2Prepared {
            w,
            wy,
            chi2_ref,
            weight_sum,
        }
    }

    /// The power at one frequency in astropy's units and normalisation, from
    /// `p / W` (what the backends compute on normalised weights).
    pub fn finish(&self, p_normalised: f64, normalization: Chi2Normalization) -> f64 {
        match normalization {
            Chi2Normalization::Psd => 0.5 * p_normalised * self.weight_sum,
            other => other.apply(p_normalised, self.chi2_ref),
        }
    }
}
