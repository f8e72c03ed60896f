//! C ABI of the multi-term (chi2) Lomb-Scargle periodogram, astropy's
//! `LombScargle(nterms=K).power(method='chi2')`: host-pointer entry points
//! per dtype for one series on a frequency array or a uniform grid and for a
//! ragged batch on one shared grid (the per-dtype functions are in
//! `entry_points.rs`). Frequencies are in cycles per unit of time.
use super::args::{write_rows, Ragged, Samples};
use super::{kp_context, kp_status, or_default, value_boundary, Entry, RawError};
use crate::api::lombscargle::batch::BatchGrid;
use crate::api::lombscargle::UniformGrid;
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::params::lombscargle_chi2::{Chi2Normalization, Chi2Options};
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// `normalization` value: p / chi2_ref, in [0, 1] (astropy's default).
pub const KP_CHI2_STANDARD: u32 = 0;
/// `normalization` value: p / (chi2_ref - p).
pub const KP_CHI2_MODEL: u32 = 1;
/// `normalization` value: -ln(1 - p / chi2_ref).
pub const KP_CHI2_LOG: u32 = 2;
/// `normalization` value: p / 2 (in units of y^2 / dy^2).
pub const KP_CHI2_PSD: u32 = 3;

/// Options of a multi-term periodogram. Start from
/// `kp_chi2_options_default()`; non-zero flags mean true.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_chi2_options {
    /// Harmonics of the model, 1 to 8 (sin and cos of 2 pi k f t, k = 1..nterms).
    pub nterms: u32,
    /// Fit a constant offset at each frequency too.
    pub fit_mean: u32,
    /// Subtract the weighted mean of y first.
    pub center_data: u32,
    /// One of KP_CHI2_*.
    pub normalization: u32,
}

/// A `normalization` value (one of KP_CHI2_*) as the API's.
pub(crate) fn normalization_of(value: u32) -> Result<Chi2Normalization, Error> {
    Ok(match value {
        KP_CHI2_STANDARD => Chi2Normalization::Standard,
        KP_CHI2_MODEL => Chi2Normalization::Model,
        KP_CHI2_LOG => Chi2Normalization::Log,
        KP_CHI2_PSD => Chi2Normalization::Psd,
        other => {
            return Err(Error::invalid(format!(
                "unknown normalization value {other}: expected 0 (standard) .. 3 (psd)"
            )))
        }
    })
}

impl kp_chi2_options {
    fn to_options(self) -> Result<Chi2Options, RawError> {
        Ok(Chi2Options {
            nterms: self.nterms as usize,
            fit_mean: self.fit_mean != 0,
            center_data: self.center_data != 0,
            normalization: normalization_of(self.normalization)?,
        })
    }
}

/// One harmonic, a fitted mean, centred data, the standard normalization
/// (astropy's defaults).
#[no_mangle]
pub extern "C" fn kp_chi2_options_default() -> kp_chi2_options {
    let defaults = || {
        let o = Chi2Options::default();
        kp_chi2_options {
            nterms: o.nterms as u32,
            fit_mean: u32::from(o.fit_mean),
            center_data: u32::from(o.center_data),
            normalization: o.normalization.code() as u32,
        }
    };
    value_boundary(defaults, defaults)
}

/// NULL means the defaults.
unsafe fn options_from(options: *const kp_chi2_options) -> Result<Chi2Options, RawError> {
    unsafe { or_default(options, kp_chi2_options_default) }.to_options()
}

/// The multi-term periodogram in {precision} of the `n` samples `t`, `y`
/// (errors `dy`, NULL: equal) at the `nf` frequencies `freqs` (cycles per
/// unit time) into `out` (`nf` values), with `options` (NULL: the defaults).
/// Runs on the context's backend; nothing is written on failure.
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `freqs` and `out`: `nf` values,
/// `out` apart from the inputs.
struct kp_lombscargle_chi2<T> {
    options: *const kp_chi2_options,
    samples: Samples<T>,
    freqs: *const T,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_chi2<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nf = self.nf;
        let mut inputs = self.samples.spans();
        inputs.push(Span::of("freqs", self.freqs, nf));
        check_apart(&[Span::of("out", self.out, nf)], &inputs)?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        let freqs = unsafe { raw::host("freqs", self.freqs, nf) }?;
        raw::check_host("out", self.out as *const T, nf)?;
        let result = kp.lombscargle_chi2(&series, freqs, &opts)?;
        unsafe { write_rows(self.out, std::slice::from_ref(&result)) }
    }
}

/// As `kp_lombscargle_chi2_{dtype}`, on the `nf` frequencies `f0 + k df`
/// (cycles per unit time).
///
/// # Safety
/// As `kp_lombscargle_chi2_{dtype}`.
struct kp_lombscargle_chi2_uniform<T> {
    options: *const kp_chi2_options,
    samples: Samples<T>,
    f0: f64,
    df: f64,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_chi2_uniform<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nf = self.nf;
        check_apart(&[Span::of("out", self.out, nf)], &self.samples.spans())?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        raw::check_host("out", self.out as *const T, nf)?;
        let grid = UniformGrid::new(self.f0, self.df, nf);
        let result = kp.lombscargle_chi2_uniform(&series, &grid, &opts)?;
        unsafe { write_rows(self.out, std::slice::from_ref(&result)) }
    }
}

/// One multi-term periodogram in {precision} per series of a ragged batch,
/// all on the grid `f0 + k df` (`nf` frequencies): series `s` is samples
/// `offsets[s] .. offsets[s+1]-1` of the concatenated `t`, `y` and `dy`
/// (NULL: equal errors); `offsets` holds `nseries + 1` values from 0 up.
/// `out` gets `nseries` x `nf` values, series by series. On the GPU in one
/// launch or on the CPU; nothing is written on failure (an error names the
/// series).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `out`: `nseries * nf` values, apart from the
/// inputs.
struct kp_lombscargle_chi2_batch<T> {
    options: *const kp_chi2_options,
    ragged: Ragged<T>,
    f0: f64,
    df: f64,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_chi2_batch<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let len = raw::product("nseries", self.ragged.nseries, "nf", self.nf)?;
        check_apart(&[Span::of("out", self.out, len)], &ragged.spans())?;
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        raw::check_host("out", self.out as *const T, len)?;
        let grid = BatchGrid::Shared(UniformGrid::new(self.f0, self.df, self.nf));
        let result = kp.lombscargle_chi2_batch(&batch, &grid, &opts)?;
        unsafe { write_rows(self.out, &result) }
    }
}
