//! C ABI of the multi-term (chi2) Lomb-Scargle periodogram, astropy's
//! `LombScargle(nterms=K).power(method='chi2')`: host-pointer entry points
//! per dtype for one series on a frequency array or a uniform grid and for a
//! ragged batch on one shared grid, and the batch's best peaks, refined and
//! with false-alarm probabilities on request (the per-dtype functions are
//! in `entry_points.rs`). Frequencies are in cycles per unit of time.
use super::args::{peak_options, write_rows, Grid, Ragged, Samples};
use super::phasefold::kp_peak_options;
use super::significance::{method_of, KP_FAP_BALUEV};
use super::{kp_context, kp_status, or_default, value_boundary, Entry, RawError};
use crate::api::lombscargle::batch::BatchGrid;
use crate::api::lombscargle::bootstrap::BootstrapOptions;
use crate::api::lombscargle::UniformGrid;
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::params::lombscargle_chi2::{Chi2Normalization, Chi2Options};
use crate::params::peaks::{write_padded, Refine, RefinedPeakOptions};
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

/// What a peak search adds to each peak: a refinement on a finer grid about
/// it and its false-alarm probability. Start from
/// `kp_refined_peak_options_default()` (neither); non-zero flags mean true.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_refined_peak_options {
    /// Fine points per coarse grid step of each peak's local grid, 2 or
    /// more; 0 (the default): no refinement. The local grid runs from the
    /// peak's grid frequency - `refine_steps` df to + `refine_steps` df in
    /// steps of df / `refine_points` (from the first point at or above 0
    /// near 0), and the peak moves to its first highest value if that is
    /// higher than the peak's, so refining never lowers a peak.
    pub refine_points: usize,
    /// Half width of the local grid, in coarse steps, 1 or more (default 1).
    pub refine_steps: usize,
    /// Each peak's false-alarm probability into `fap`: astropy's
    /// `false_alarm_probability` of its power for its series (`fmax` its
    /// grid's last frequency), for one-term periodograms (`nterms` 1) of
    /// centred data (`fit_mean` or `center_data`) only: otherwise
    /// KP_ERROR_INVALID_ARGUMENT, as astropy has none. The bootstrap is not
    /// offered per peak.
    pub fap: u32,
    /// One of KP_FAP_* (default KP_FAP_BALUEV).
    pub fap_method: u32,
}

/// No refinement, no false-alarm probability.
#[no_mangle]
pub extern "C" fn kp_refined_peak_options_default() -> kp_refined_peak_options {
    let defaults = || kp_refined_peak_options {
        refine_points: 0,
        refine_steps: 1,
        fap: 0,
        fap_method: KP_FAP_BALUEV,
    };
    value_boundary(defaults, defaults)
}

impl kp_refined_peak_options {
    /// As the API's options, with the peaks of `peaks`.
    fn to_options(
        self,
        peaks: crate::params::peaks::PeakOptions,
    ) -> Result<RefinedPeakOptions, RawError> {
        let refine = (self.refine_points != 0).then_some(Refine {
            points: self.refine_points,
            steps: self.refine_steps,
        });
        let fap = (self.fap != 0)
            .then(|| method_of(self.fap_method))
            .transpose()?;
        Ok(RefinedPeakOptions { peaks, refine, fap })
    }
}

/// Each series' best `peaks.k` peaks of its multi-term periodogram in
/// {precision}, without keeping the periodograms (on a GPU only the peaks
/// leave it): the batch and grid as `kp_lombscargle_chi2_batch_{dtype}`,
/// `peaks` as `kp_lombscargle_batch_top_peaks_{dtype}` (NULL: one peak;
/// the separation in cycles per unit time), `search` the refinement and
/// false-alarm probability (NULL: neither). Series `s`'s peaks go to
/// `index`, `frequency`, `power` and `fap` from `s * peaks.k`, best first:
/// the peak's index in the grid, its frequency (refined, or `f0 + index
/// df`), the power there (widened to double) and its false-alarm
/// probability (NaN when not asked for; `fap` may be NULL then); a series
/// with fewer peaks gets index -1 and NaN after its last. Nothing is
/// written on failure (an error names the series).
///
/// # Safety
/// As `kp_lombscargle_chi2_batch_{dtype}`; `index`, `frequency`, `power`
/// and a non-NULL `fap`: `nseries * peaks.k` values each, apart from each
/// other and from the inputs; `peaks` and `search` NULL or one struct.
struct kp_lombscargle_chi2_batch_peaks<T> {
    options: *const kp_chi2_options,
    ragged: Ragged<T>,
    grid: Grid,
    peaks: *const kp_peak_options,
    search: *const kp_refined_peak_options,
    index: *mut i64,
    frequency: *mut f64,
    power: *mut f64,
    fap: *mut f64,
}

impl<T: Float> Entry for kp_lombscargle_chi2_batch_peaks<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let nseries = self.ragged.nseries;
        let (peaks, len) = unsafe { peak_options(self.peaks, nseries) }?;
        let search = unsafe { or_default(self.search, kp_refined_peak_options_default) };
        let search = search.to_options(peaks)?;
        let mut outputs = vec![
            Span::of("index", self.index, len),
            Span::of("frequency", self.frequency, len),
            Span::of("power", self.power, len),
        ];
        if !self.fap.is_null() {
            outputs.push(Span::of("fap", self.fap, len));
        }
        check_apart(&outputs, &ragged.spans())?;
        let index = unsafe { raw::host_mut("index", self.index, len) }?;
        let frequency = unsafe { raw::host_mut("frequency", self.frequency, len) }?;
        let power = unsafe { raw::host_mut("power", self.power, len) }?;
        // Asked for, `fap` must be given; given, it is written (NaN when not asked).
        let fap = if search.fap.is_some() || !self.fap.is_null() {
            Some(unsafe { raw::host_mut("fap", self.fap, len) }?)
        } else {
            None
        };
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        let g = &self.grid;
        let grid = BatchGrid::Shared(UniformGrid::new(g.f0, g.df, g.nf));
        // Found in full before a single value is written.
        let rows = kp.lombscargle_chi2_batch_refined_peaks(&batch, &grid, &opts, &search)?;
        let k = peaks.k;
        let column = |of: fn(&crate::params::peaks::RefinedPeak) -> f64| {
            rows.iter().map(move |r| r.iter().map(of))
        };
        let indices = rows.iter().map(|r| r.iter().map(|p| p.index as i64));
        write_padded(index, k, indices, -1);
        write_padded(frequency, k, column(|p| p.frequency), f64::NAN);
        write_padded(power, k, column(|p| p.power), f64::NAN);
        if let Some(fap) = fap {
            write_padded(fap, k, column(|p| p.fap.unwrap_or(f64::NAN)), f64::NAN);
        }
        Ok(())
    }
}

/// The maxima of `resamples` multi-term periodograms in {precision} (with
/// `options`, NULL: the defaults) of the `n` samples `t`, `y` (errors `dy`,
/// NULL: equal) resampled with replacement (t fixed) by the counter-based
/// generator keyed by `seed` (the draws of `kp_lombscargle_bootstrap_{dtype}`),
/// on astropy's `autopower` grid up to the cyclic frequency `fmax` with
/// `samples_per_peak` points per peak (astropy: 5): bootstrap false-alarm
/// statistics for multi-term periodograms, for which astropy has none.
/// Writes `resamples` doubles to `maxima` in resample order (NaN for a copy
/// whose values do not vary); the FAP of a power is the fraction of maxima
/// not below it. Nothing is written on failure.
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `maxima`: `resamples` doubles,
/// apart from the inputs.
struct kp_lombscargle_chi2_bootstrap<T> {
    options: *const kp_chi2_options,
    samples: Samples<T>,
    fmax: f64,
    resamples: usize,
    seed: u64,
    samples_per_peak: f64,
    maxima: *mut f64,
}

impl<T: Float> Entry for kp_lombscargle_chi2_bootstrap<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let count = self.resamples;
        check_apart(
            &[Span::of("maxima", self.maxima, count)],
            &self.samples.spans(),
        )?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        let maxima = unsafe { raw::host_mut("maxima", self.maxima, count) }?;
        let boot = BootstrapOptions {
            resamples: count,
            seed: self.seed,
            samples_per_peak: self.samples_per_peak,
        };
        let got = kp.lombscargle_chi2_bootstrap(&series, self.fmax, &opts, &boot)?;
        maxima.copy_from_slice(&got);
        Ok(())
    }
}
