//! Lomb-Scargle options, series and results: plain data shared by the API
//! and the reference.
use std::str::FromStr;

use crate::error::{Error, Result};
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
