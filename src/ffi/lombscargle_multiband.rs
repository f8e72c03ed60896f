//! C ABI of the multiband Lomb-Scargle periodogram, astropy's
//! `LombScargleMultiband(t, y, bands, dy).power(frequency, method=...)`:
//! host-pointer entry points per dtype for one series on a frequency array
//! or a uniform grid, for a ragged batch on one shared grid, and for the
//! batch's best peaks (`kp_peak_options`, semantics:
//! [`crate::params::peaks`]); the per-dtype functions are in
//! `entry_points.rs`. Frequencies are in cycles per unit of time; bands are
//! `uint32_t` labels, any values (the bands are ordered by label).
use super::args::{write_rows, PeakArgs, Ragged, RaggedOffsets, Samples};
use super::lombscargle_chi2::normalization_of;
use super::phasefold::kp_peak_options;
use super::{kp_context, kp_status, or_default, value_boundary, Entry, RawError};
use crate::api::lombscargle::batch::BatchGrid;
use crate::api::lombscargle::multiband::{MultibandBatch, MultibandSeries};
use crate::api::lombscargle::UniformGrid;
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::params::lombscargle_multiband::{MultibandMethod, MultibandOptions};
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// `method` value: one regularised least-squares fit of a base model and
/// one model per band at each frequency (astropy's default, 'flexible').
pub const KP_MULTIBAND_FLEXIBLE: u32 = 0;
/// `method` value: each band's own multi-term periodogram (`nterms_base`
/// harmonics), combined with weights proportional to each band's sum of
/// squared powers (astropy's 'fast').
pub const KP_MULTIBAND_FAST: u32 = 1;

/// Options of a multiband periodogram. Start from
/// `kp_multiband_options_default()`; non-zero flags mean true.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_multiband_options {
    /// One of KP_MULTIBAND_*.
    pub method: u32,
    /// Harmonics of the model every band shares, 0 to 3 (the fast method's
    /// `nterms`: 1 to 3).
    pub nterms_base: u32,
    /// Harmonics of each band's own model, 0 to 3 (flexible only; not both
    /// counts 0).
    pub nterms_band: u32,
    /// Ridge added to the diagonal of the normal matrix at the base
    /// unknowns (flexible only). NaN (`NAN` of <math.h>) means none,
    /// astropy's `None`; otherwise finite and not negative: a negative or
    /// infinite value is KP_ERROR_INVALID_ARGUMENT.
    pub reg_base: f64,
    /// Ridge at the band unknowns (flexible only), as `reg_base`.
    pub reg_band: f64,
    /// Scale the ridges by the trace of the normal matrix (flexible only).
    pub regularize_by_trace: u32,
    /// Subtract each band's weighted mean of y first.
    pub center_data: u32,
    /// Fit an offset at each frequency (fast only: flexible always does).
    pub fit_mean: u32,
    /// One of KP_CHI2_* (fast only: flexible's power is always the
    /// standard one, as astropy's).
    pub normalization: u32,
}

/// A ridge as C passes it: NaN for none.
fn ridge_of(value: f64) -> Option<f64> {
    (!value.is_nan()).then_some(value)
}

/// A ridge as C receives it: NaN for none.
fn ridge_to_c(value: Option<f64>) -> f64 {
    value.unwrap_or(f64::NAN)
}

impl kp_multiband_options {
    fn to_options(self) -> Result<MultibandOptions, RawError> {
        let method = match self.method {
            KP_MULTIBAND_FLEXIBLE => MultibandMethod::Flexible,
            KP_MULTIBAND_FAST => MultibandMethod::Fast,
            other => {
                return Err(Error::invalid(format!(
                    "unknown method value {other}: expected 0 (flexible) or 1 (fast)"
                ))
                .into())
            }
        };
        Ok(MultibandOptions {
            method,
            nterms_base: self.nterms_base as usize,
            nterms_band: self.nterms_band as usize,
            reg_base: ridge_of(self.reg_base),
            reg_band: ridge_of(self.reg_band),
            regularize_by_trace: self.regularize_by_trace != 0,
            center_data: self.center_data != 0,
            fit_mean: self.fit_mean != 0,
            normalization: normalization_of(self.normalization)?,
        })
    }
}

/// astropy's defaults: the flexible method, one harmonic in the base and
/// the band models, no ridge on the base (`reg_base` NaN), 1e-6 on the
/// bands, scaled by the trace, centred data, a fitted mean, the standard
/// normalization.
#[no_mangle]
pub extern "C" fn kp_multiband_options_default() -> kp_multiband_options {
    let defaults = || {
        let o = MultibandOptions::default();
        kp_multiband_options {
            method: match o.method {
                MultibandMethod::Flexible => KP_MULTIBAND_FLEXIBLE,
                MultibandMethod::Fast => KP_MULTIBAND_FAST,
            },
            nterms_base: o.nterms_base as u32,
            nterms_band: o.nterms_band as u32,
            reg_base: ridge_to_c(o.reg_base),
            reg_band: ridge_to_c(o.reg_band),
            regularize_by_trace: u32::from(o.regularize_by_trace),
            center_data: u32::from(o.center_data),
            fit_mean: u32::from(o.fit_mean),
            normalization: o.normalization.code() as u32,
        }
    };
    value_boundary(defaults, defaults)
}

/// NULL means the defaults.
unsafe fn options_from(options: *const kp_multiband_options) -> Result<MultibandOptions, RawError> {
    unsafe { or_default(options, kp_multiband_options_default) }.to_options()
}

/// One multiband series of `n` samples: `t`, `y`, `dy` (NULL: equal errors)
/// and each sample's band label `bands`.
struct BandSamples<T> {
    t: *const T,
    y: *const T,
    dy: *const T,
    bands: *const u32,
    n: usize,
}

impl<T: Float> BandSamples<T> {
    fn samples(&self) -> Samples<T> {
        Samples {
            t: self.t,
            y: self.y,
            dy: self.dy,
            n: self.n,
        }
    }

    /// The input spans, for the overlap check against the output.
    fn spans(&self) -> Vec<Span<'static>> {
        let mut spans = self.samples().spans();
        spans.push(Span::of("bands", self.bands, self.n));
        spans
    }

    /// # Safety
    /// As the entry points': non-NULL pointers valid for `n` values.
    unsafe fn series<'a>(&self) -> Result<MultibandSeries<'a, T>, RawError> {
        let samples = unsafe { self.samples().series() }?;
        Ok(MultibandSeries {
            t: samples.t,
            y: samples.y,
            dy: samples.dy,
            bands: unsafe { raw::host("bands", self.bands, self.n) }?,
        })
    }
}

/// A ragged batch of multiband series: series `s` is samples
/// `offsets[s] .. offsets[s+1]-1` of the concatenated `t`, `y`, `dy` (NULL:
/// equal errors) and `bands`; `offsets` holds `nseries + 1` values.
struct BandRagged<T> {
    t: *const T,
    y: *const T,
    dy: *const T,
    bands: *const u32,
    offsets: *const i64,
    nseries: usize,
}

impl<T: Float> BandRagged<T> {
    /// The offsets read and checked as [`Ragged::read`] does, before the
    /// samples and the bands are sized by the last of them.
    ///
    /// # Safety
    /// A non-NULL `offsets` valid for `nseries + 1` values.
    unsafe fn read<'a>(&self) -> Result<BandOffsets<'a, T>, RawError> {
        let ragged = Ragged {
            t: self.t,
            y: self.y,
            dy: self.dy,
            offsets: self.offsets,
            nseries: self.nseries,
        };
        Ok(BandOffsets {
            ragged: unsafe { ragged.read() }?,
            bands: self.bands,
        })
    }
}

/// A multiband batch whose offsets were read and checked.
struct BandOffsets<'a, T> {
    ragged: RaggedOffsets<'a, T>,
    bands: *const u32,
}

impl<T: Float> BandOffsets<'_, T> {
    /// The input spans, for the overlap check against the outputs.
    fn spans(&self) -> Vec<Span<'static>> {
        let mut spans = self.ragged.spans();
        spans.push(Span::of("bands", self.bands, self.ragged.samples.n));
        spans
    }

    /// The batch as the API takes it.
    ///
    /// # Safety
    /// As the entry points': non-NULL pointers valid for `offsets[nseries]`
    /// values.
    unsafe fn batch(&self) -> Result<MultibandBatch<'_, T>, RawError> {
        let samples = unsafe { self.ragged.batch() }?;
        Ok(MultibandBatch {
            t: samples.t,
            y: samples.y,
            dy: samples.dy,
            bands: unsafe { raw::host("bands", self.bands, self.ragged.samples.n) }?,
            offsets: samples.offsets,
        })
    }
}

/// The multiband periodogram in {precision} of the `n` samples `t`, `y`
/// (errors `dy`, NULL: equal) in the bands `bands` (a `uint32_t` label per
/// sample) at the `nf` frequencies `freqs` (cycles per unit time) into `out`
/// (`nf` values), with `options` (NULL: the defaults). Runs on the context's
/// backend; nothing is written on failure.
///
/// # Safety
/// `t`, `y`, `bands` and a non-NULL `dy`: `n` values; `freqs` and `out`:
/// `nf` values, `out` apart from the inputs.
struct kp_lombscargle_multiband<T> {
    options: *const kp_multiband_options,
    samples: BandSamples<T>,
    freqs: *const T,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_multiband<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nf = self.nf;
        let mut inputs = self.samples.spans();
        inputs.push(Span::of("freqs", self.freqs, nf));
        check_apart(&[Span::of("out", self.out, nf)], &inputs)?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        let freqs = unsafe { raw::host("freqs", self.freqs, nf) }?;
        raw::check_host("out", self.out as *const T, nf)?;
        let result = kp.lombscargle_multiband(&series, freqs, &opts)?;
        unsafe { write_rows(self.out, std::slice::from_ref(&result)) }
    }
}

/// As `kp_lombscargle_multiband_{dtype}`, on the `nf` frequencies
/// `f0 + k df` (cycles per unit time).
///
/// # Safety
/// As `kp_lombscargle_multiband_{dtype}`.
struct kp_lombscargle_multiband_uniform<T> {
    options: *const kp_multiband_options,
    samples: BandSamples<T>,
    f0: f64,
    df: f64,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_multiband_uniform<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nf = self.nf;
        check_apart(&[Span::of("out", self.out, nf)], &self.samples.spans())?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        raw::check_host("out", self.out as *const T, nf)?;
        let grid = UniformGrid::new(self.f0, self.df, nf);
        let result = kp.lombscargle_multiband_uniform(&series, &grid, &opts)?;
        unsafe { write_rows(self.out, std::slice::from_ref(&result)) }
    }
}

/// One multiband periodogram in {precision} per series of a ragged batch,
/// all on the grid `f0 + k df` (`nf` frequencies): series `s` is samples
/// `offsets[s] .. offsets[s+1]-1` of the concatenated `t`, `y`, `dy` (NULL:
/// equal errors) and `bands`; `offsets` holds `nseries + 1` values from 0
/// up. `out` gets `nseries` x `nf` values, series by series. On the GPU in
/// one launch (the flexible method) or on the CPU; nothing is written on
/// failure (an error names the series).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y`, `bands` and a non-NULL `dy`:
/// `offsets[nseries]` values; `out`: `nseries * nf` values, apart from the
/// inputs.
struct kp_lombscargle_multiband_batch<T> {
    options: *const kp_multiband_options,
    ragged: BandRagged<T>,
    f0: f64,
    df: f64,
    nf: usize,
    out: *mut T,
}

impl<T: Float> Entry for kp_lombscargle_multiband_batch<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let len = raw::product("nseries", self.ragged.nseries, "nf", self.nf)?;
        check_apart(&[Span::of("out", self.out, len)], &ragged.spans())?;
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        raw::check_host("out", self.out as *const T, len)?;
        let grid = BatchGrid::Shared(UniformGrid::new(self.f0, self.df, self.nf));
        let result = kp.lombscargle_multiband_batch(&batch, &grid, &opts)?;
        unsafe { write_rows(self.out, std::slice::from_ref(&result)) }
    }
}

/// The best `peaks.k` peaks of the multiband periodogram of every series
/// of a ragged batch, in {precision}, without keeping the periodograms:
/// inputs as `kp_lombscargle_multiband_batch_{dtype}` (`options`, `t`,
/// `y`, `dy`, `bands`, `offsets`, `nseries`, the grid `f0 + k df` of `nf`
/// frequencies in cycles per unit time), and `peaks` (NULL: the defaults,
/// one peak). `index` and `value` each get `nseries * peaks.k` values,
/// series by series (series `s` at `index + s * peaks.k`), best first: the
/// `peaks.k` highest distinct local maxima of the series' periodogram (as
/// `kp_lombscargle_multiband_batch_{dtype}` gives it; NaN is never one),
/// each at least `peaks.separation` in frequency (cycles per unit time)
/// from those before it, as its `k` in the grid and its power (widened to
/// double); a series with fewer maxima gets index -1 and value NaN after
/// its last. A maximum is the first of equal values, and the best peak the
/// first highest value of the row. On a GPU the flexible method runs in
/// chunks of series whose periodograms are reduced on the device, so only
/// the peaks come back; the fast method's periodograms are computed whole
/// and reduced on the host. On the CPU series are computed and reduced a
/// group at a time.
///
/// Ownership: every buffer stays the caller's. kernpack reads the inputs
/// and writes `index` and `value` during the call only, keeps no pointer,
/// and writes neither on failure (the status says why,
/// kp_last_error_message() names the argument, or the series).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y`, `bands` and a non-NULL `dy`:
/// `offsets[nseries]` values; `index` and `value`: `nseries * peaks.k`
/// values each, apart from each other and from the inputs; `options` and
/// `peaks` NULL or one struct.
struct kp_lombscargle_multiband_batch_peaks<T> {
    options: *const kp_multiband_options,
    ragged: BandRagged<T>,
    f0: f64,
    df: f64,
    nf: usize,
    peaks: PeakArgs,
}

impl<T: Float> Entry for kp_lombscargle_multiband_batch_peaks<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let (peaks, len) = unsafe { self.peaks.check(self.ragged.nseries, &ragged.spans()) }?;
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        let out = unsafe { self.peaks.outputs(len) }?;
        // Found in full before a single index or value is written.
        let grid = BatchGrid::Shared(UniformGrid::new(self.f0, self.df, self.nf));
        let rows = kp.lombscargle_multiband_batch_peaks(&batch, &grid, &opts, &peaks)?;
        out.write(&rows, peaks.k);
        Ok(())
    }
}
