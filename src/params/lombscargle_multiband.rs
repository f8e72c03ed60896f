//! Multiband Lomb-Scargle (astropy's `LombScargleMultiband`): one period
//! shared by every band of a series, options and prepared series as plain
//! data for the API, the backends and the reference. Frequencies are in
//! cycles per unit of time; bands are `u32` labels, their columns ordered by
//! label (Python maps its labels to codes in `np.unique` order).
//!
//! **Flexible** (astropy's default, `method='flexible'`): per frequency, the
//! weighted least-squares fit of a base model (an offset and `nterms_base`
//! harmonics) plus, per band present, a band model (an offset and
//! `nterms_band` harmonics, zero outside its band), with a ridge added to
//! the normal matrix's diagonal: `reg_base` on the base unknowns, `reg_band`
//! on the band ones (`None` adds nothing), times the matrix's trace with
//! `regularize_by_trace`. The power is `p / chi2_ref`, p the reduction of
//! chi^2 the fit brings and chi2_ref that of y (each band centred on its
//! weighted mean with `center_data`). As in astropy, this method has the
//! standard normalisation only: `normalization` and `fit_mean` are the fast
//! method's.
//!
//! **Fast** (`method='fast'`): each band's own (multi-term, `nterms_base`
//! harmonics) periodogram with `fit_mean`, `center_data` and
//! `normalization`, combined with weights proportional to the sum over the
//! frequencies of each band's squared power, as astropy combines them.
use std::str::FromStr;

use crate::error::{Error, Result};
pub use crate::params::lombscargle_chi2::Chi2Normalization;

/// The most harmonics of either model a call may fit (the GPU kernels are
/// compiled for each count up to this).
pub const MAX_MULTIBAND_NTERMS: usize = 3;

/// astropy's multiband `method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MultibandMethod {
    /// One regularised fit of the base and band models per frequency.
    #[default]
    Flexible,
    /// Each band's own periodogram, combined.
    Fast,
}

impl FromStr for MultibandMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "flexible" => Ok(MultibandMethod::Flexible),
            "fast" => Ok(MultibandMethod::Fast),
            other => Err(Error::invalid(format!(
                "method='{other}' not recognized: expected flexible or fast"
            ))),
        }
    }
}

/// astropy's `LombScargleMultiband` arguments other than the data.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultibandOptions {
    pub method: MultibandMethod,
    /// Harmonics of the model shared by every band (the fast method's
    /// `nterms`).
    pub nterms_base: usize,
    /// Harmonics of each band's own model (flexible only).
    pub nterms_band: usize,
    /// Ridge on the base unknowns (flexible only); `None` adds nothing.
    pub reg_base: Option<f64>,
    /// Ridge on the band unknowns (flexible only); `None` adds nothing.
    pub reg_band: Option<f64>,
    /// Scale the ridges by the trace of the normal matrix (flexible only).
    pub regularize_by_trace: bool,
    /// Subtract each band's weighted mean of y first.
    pub center_data: bool,
    /// Fit an offset at each frequency (fast only; flexible always does).
    pub fit_mean: bool,
    /// The fast method's normalisation (flexible's power is always the
    /// standard one, as astropy's).
    pub normalization: Chi2Normalization,
}

impl Default for MultibandOptions {
    fn default() -> Self {
        MultibandOptions {
            method: MultibandMethod::Flexible,
            nterms_base: 1,
            nterms_band: 1,
            reg_base: None,
            reg_band: Some(1e-6),
            regularize_by_trace: true,
            center_data: true,
            fit_mean: true,
            normalization: Chi2Normalization::Standard,
        }
    }
}

impl MultibandOptions {
    /// Harmonics of the sums a flexible fit needs: max(nterms_base, nterms_band).
    pub fn harmonics(&self) -> usize {
        self.nterms_base.max(self.nterms_band)
    }

    /// Unknowns of a flexible fit with `nbands` bands present:
    /// 1 + 2 nterms_base + nbands (1 + 2 nterms_band), astropy's
    /// `model_parameters` length.
    pub fn unknowns(&self, nbands: usize) -> usize {
        1 + 2 * self.nterms_base + nbands * (1 + 2 * self.nterms_band)
    }

    pub fn validate(&self) -> Result<()> {
        let (nb, nbd) = (self.nterms_base, self.nterms_band);
        if nb == 0 && nbd == 0 {
            return Err(Error::invalid(
                "at least one of nterms_base and nterms_band must be greater than 0",
            ));
        }
        if nb > MAX_MULTIBAND_NTERMS || nbd > MAX_MULTIBAND_NTERMS {
            return Err(Error::invalid(format!(
                "nterms_base = {nb}, nterms_band = {nbd}: kernpack fits 0 to \
                 {MAX_MULTIBAND_NTERMS} harmonics in each model"
            )));
        }
        if self.method == MultibandMethod::Fast && nb == 0 {
            return Err(Error::invalid(
                "the fast method fits nterms_base harmonics per band: it needs nterms_base >= 1",
            ));
        }
        for (name, reg) in [("reg_base", self.reg_base), ("reg_band", self.reg_band)] {
            if let Some(r) = reg {
                if !(r.is_finite() && r >= 0.0) {
                    return Err(Error::invalid(format!(
                        "{name} = {r} must be finite and not negative (or None)"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// One multiband series: times, values, optional uncertainties `dy`
/// (weights 1 / dy^2) and each sample's band label.
#[derive(Debug, Clone, Copy)]
pub struct MultibandSeries<'a, T> {
    pub t: &'a [T],
    pub y: &'a [T],
    pub dy: Option<&'a [T]>,
    pub bands: &'a [u32],
}

/// What the flexible fit needs of a series, in f64, its samples grouped by
/// band (ascending label, sample order kept within a band):
/// `order[j]` is the series' sample at grouped position j, band `k` holds
/// positions `band_starts[k]..band_starts[k + 1]`; `w` the normalised
/// weights (sum 1) and `wy` = w yhat (yhat = y minus its band's weighted
/// mean with `center_data`, y otherwise) in grouped order; `chi2_ref`
/// = sum w yhat^2; and the ridges to add to the normal matrix's diagonal
/// (of normalised weights: scaled by 1 / W when not by trace).
#[derive(Debug, Clone, PartialEq)]
pub struct MultibandPrepared {
    pub order: Vec<usize>,
    pub labels: Vec<u32>,
    pub band_starts: Vec<usize>,
    pub w: Vec<f64>,
    pub wy: Vec<f64>,
    pub chi2_ref: f64,
    pub ridge_base: f64,
    pub ridge_band: f64,
}

impl MultibandPrepared {
    /// From `y`, `dy` in f64 and the labels (inputs assumed validated:
    /// finite, dy > 0 with a normalisable sum of dy^-2).
    pub fn of(y: &[f64], dy: Option<&[f64]>, bands: &[u32], opts: &MultibandOptions) -> Self {
        let n = y.len();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| bands[i]); // stable: sample order within a band
        let mut labels = Vec::new();
        let mut band_starts = Vec::new();
        for (j, &i) in order.iter().enumerate() {
            if labels.last() != Some(&bands[i]) {
                labels.push(bands[i]);
                band_starts.push(j);
            }
        }
        band_starts.push(n);
        let raw = |i: usize| dy.map_or(1.0, |d| d[i].powi(-2));
        let weight_sum: f64 = (0..n).map(raw).sum();
        let w: Vec<f64> = order.iter().map(|&i| raw(i) / weight_sum).collect();
        let mut yhat: Vec<f64> = order.iter().map(|&i| y[i]).collect();
        if opts.center_data {
            for k in 0..labels.len() {
                let r = band_starts[k]..band_starts[k + 1];
                let band_w: f64 = w[r.clone()].iter().sum();
                let mean = w[r.clone()]
                    .iter()
                    .zip(&yhat[r.clone()])
                    .map(|(w, y)| w * y)
                    .sum::<f64>()
                    / band_w;
                yhat[r].iter_mut().for_each(|v| *v -= mean);
            }
        }
        let wy: Vec<f64> = w.iter().zip(&yhat).map(|(w, y)| w * y).collect();
        let chi2_ref = wy.iter().zip(&yhat).map(|(wy, y)| wy * y).sum();
        // The trace of the normal matrix of normalised weights: sum w = 1
        // per offset column and per sin/cos pair, over the base columns and
        // (each sample in one band) the band columns.
        let scale = if opts.regularize_by_trace {
            (2 + opts.nterms_base + opts.nterms_band) as f64
        } else {
            1.0 / weight_sum
        };
        MultibandPrepared {
            order,
            labels,
            band_starts,
            w,
            wy,
            chi2_ref,
            ridge_base: opts.reg_base.unwrap_or(0.0) * scale,
            ridge_band: opts.reg_band.unwrap_or(0.0) * scale,
        }
    }

    pub fn nbands(&self) -> usize {
        self.labels.len()
    }
}

/// Prepared series laid out as the flexible kernel reads them
/// (csrc/lombscargle_multiband.cu), series after series: each sample's time
/// (in grouped order), weight and `wy` in f64; the band segments' sample
/// offsets `band_starts` (one more than the segments); each series' first
/// segment in `series_bands` (one more than the series); and per series
/// `(chi2_ref, ridge_base, ridge_band)`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MultibandFlat {
    pub t: Vec<f64>,
    pub w: Vec<f64>,
    pub wy: Vec<f64>,
    pub band_starts: Vec<i64>,
    pub series_bands: Vec<i64>,
    pub stats: Vec<f64>,
}

impl MultibandFlat {
    /// `series`: each one's times in its own order and its preparation.
    pub fn of<'s, T: crate::float::Float + 's>(
        series: impl IntoIterator<Item = (&'s [T], &'s MultibandPrepared)>,
    ) -> Self {
        let mut flat = MultibandFlat {
            band_starts: vec![0],
            series_bands: vec![0],
            ..MultibandFlat::default()
        };
        for (t, prep) in series {
            let first = flat.t.len();
            flat.t.extend(prep.order.iter().map(|&i| t[i].to_f64()));
            flat.w.extend(&prep.w);
            flat.wy.extend(&prep.wy);
            let ends = prep.band_starts[1..].iter().map(|&j| (first + j) as i64);
            flat.band_starts.extend(ends);
            flat.series_bands.push(flat.band_starts.len() as i64 - 1);
            flat.stats
                .extend([prep.chi2_ref, prep.ridge_base, prep.ridge_band]);
        }
        flat
    }

    /// Band segments (of every series).
    pub fn segments(&self) -> usize {
        self.band_starts.len() - 1
    }
}
