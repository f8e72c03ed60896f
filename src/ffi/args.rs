//! C arguments several families share, as structs a declaration's fields
//! may name (the generator flattens them into C arguments as it does the
//! structs of the family's own file, see `tests/support/entry_points.rs`):
//! a measured series ([`Samples`]: BLS, the chi2 periodogram, the
//! phase-folding searches), a ragged batch of them ([`Ragged`]), a call's
//! frequencies ([`FreqArray`], [`Grid`]), and a batch's best peaks
//! ([`PeakArgs`], with [`peak_options`]: the `_peaks` forms of the phase
//! folds and Lomb-Scargle; BLS's take the options alone). Each becomes views
//! through [`crate::raw`] and nothing else: every check of the values is the
//! safe API's.
use super::phasefold::{kp_peak_options, kp_peak_options_default};
use super::{or_default, RawError};
use crate::api::lombscargle::batch::check_series_offsets;
use crate::api::lombscargle::chi2::{Chi2Batch, Chi2Freqs};
use crate::api::lombscargle::UniformGrid;
use crate::float::Float;
use crate::params::lombscargle_chi2::Chi2Series;
use crate::params::peaks::{write_peaks, Peak, PeakOptions};
use crate::raw::{self, check_apart, Span};

/// One series of `n` samples: `t`, `y` and `dy` (NULL: equal errors).
pub(crate) struct Samples<T> {
    pub(crate) t: *const T,
    pub(crate) y: *const T,
    pub(crate) dy: *const T,
    pub(crate) n: usize,
}

impl<T: Float> Samples<T> {
    /// The input spans, for the overlap check against the outputs.
    pub(crate) fn spans(&self) -> Vec<Span<'static>> {
        let n = self.n;
        let mut spans = vec![Span::of("t", self.t, n), Span::of("y", self.y, n)];
        if !self.dy.is_null() {
            spans.push(Span::of("dy", self.dy, n));
        }
        spans
    }

    /// # Safety
    /// As the entry points': non-NULL pointers valid for `n` values.
    pub(crate) unsafe fn series<'a>(&self) -> Result<Chi2Series<'a, T>, RawError> {
        let n = self.n;
        Ok(Chi2Series {
            t: unsafe { raw::host("t", self.t, n) }?,
            y: unsafe { raw::host("y", self.y, n) }?,
            dy: unsafe { raw::optional_host("dy", self.dy, n) }?,
        })
    }
}

/// A ragged batch of series: series `s` is samples `offsets[s] ..
/// offsets[s+1]-1` of the concatenated `t`, `y` and `dy` (NULL: equal
/// errors); `offsets` holds `nseries + 1` values.
pub(crate) struct Ragged<T> {
    pub(crate) t: *const T,
    pub(crate) y: *const T,
    pub(crate) dy: *const T,
    pub(crate) offsets: *const i64,
    pub(crate) nseries: usize,
}

/// A ragged batch whose offsets were read and checked: the samples they
/// span, and the offsets as indices.
pub(crate) struct RaggedOffsets<'a, T> {
    pub(crate) samples: Samples<T>,
    given: &'a [i64],
    pub(crate) offsets: Vec<usize>,
}

impl<T: Float> Ragged<T> {
    /// The offsets read (NULL, count, negative values) and checked as the
    /// API checks them (from 0, increasing, no empty series), before `t`, `y`
    /// and `dy` are sized by the last of them.
    ///
    /// # Safety
    /// A non-NULL `offsets` valid for `nseries + 1` values.
    pub(crate) unsafe fn read<'a>(&self) -> Result<RaggedOffsets<'a, T>, RawError> {
        let (given, offsets) = unsafe { raw::host_offsets("offsets", self.offsets, self.nseries) }?;
        let n = *offsets.last().unwrap_or(&0);
        check_series_offsets(&offsets, n)?;
        let samples = Samples {
            t: self.t,
            y: self.y,
            dy: self.dy,
            n,
        };
        Ok(RaggedOffsets {
            samples,
            given,
            offsets,
        })
    }
}

impl<T: Float> RaggedOffsets<'_, T> {
    /// The input spans (the samples', then the offsets'), for the overlap
    /// check against the outputs.
    pub(crate) fn spans(&self) -> Vec<Span<'static>> {
        let mut spans = self.samples.spans();
        spans.push(Span::of("offsets", self.given.as_ptr(), self.given.len()));
        spans
    }

    /// The batch as the API takes it.
    ///
    /// # Safety
    /// As [`Samples::series`], for `offsets[nseries]` values.
    pub(crate) unsafe fn batch<'a>(&'a self) -> Result<Chi2Batch<'a, T>, RawError> {
        let series = unsafe { self.samples.series() }?;
        Ok(Chi2Batch {
            t: series.t,
            y: series.y,
            dy: series.dy,
            offsets: &self.offsets,
        })
    }
}

/// The C arguments of an array of frequencies: `nf` of them at `freqs` (a
/// host pointer or a device address).
pub(crate) struct FreqArray<P> {
    pub(crate) freqs: P,
    pub(crate) nf: usize,
}

/// The C arguments of a uniform grid, `f0 + k df` for `k < nf`.
pub(crate) struct Grid {
    pub(crate) f0: f64,
    pub(crate) df: f64,
    pub(crate) nf: usize,
}

/// The frequencies of a host call (cycles per unit of `t`): an array
/// ([`FreqArray`] of a host pointer) or a uniform [`Grid`].
pub(crate) trait HostFreqs<T> {
    /// How many.
    fn len(&self) -> usize;

    /// The array's span, for the overlap check (none for a grid).
    fn spans(&self) -> Vec<Span<'static>>;

    /// The frequencies as the API takes them.
    ///
    /// # Safety
    /// An array's non-NULL pointer valid for `nf` values.
    unsafe fn view<'a>(&self) -> Result<Chi2Freqs<'a, T>, RawError>;
}

impl<T: Float> HostFreqs<T> for FreqArray<*const T> {
    fn len(&self) -> usize {
        self.nf
    }

    fn spans(&self) -> Vec<Span<'static>> {
        vec![Span::of("freqs", self.freqs, self.nf)]
    }

    unsafe fn view<'a>(&self) -> Result<Chi2Freqs<'a, T>, RawError> {
        Ok(Chi2Freqs::Array(unsafe {
            raw::host("freqs", self.freqs, self.nf)
        }?))
    }
}

impl<T: Float> HostFreqs<T> for Grid {
    fn len(&self) -> usize {
        self.nf
    }

    fn spans(&self) -> Vec<Span<'static>> {
        Vec::new()
    }

    unsafe fn view<'a>(&self) -> Result<Chi2Freqs<'a, T>, RawError> {
        Ok(Chi2Freqs::Uniform(UniformGrid::new(
            self.f0, self.df, self.nf,
        )))
    }
}

/// Writes `rows` (computed in full), one after another, to the caller's
/// `out`, which holds exactly their values.
///
/// # Safety
/// `out` valid for that many writes, apart from the inputs (checked before,
/// with [`raw::check_host`] and [`raw::check_apart`]).
pub(crate) unsafe fn write_rows<T: Copy>(out: *mut T, rows: &[Vec<T>]) -> Result<(), RawError> {
    let len = rows.iter().map(Vec::len).sum();
    let out = unsafe { raw::host_mut("out", out, len) }?;
    let mut at = 0;
    for row in rows {
        out[at..at + row.len()].copy_from_slice(row);
        at += row.len();
    }
    Ok(())
}

/// The peak options of a batch's `_peaks` call at `peaks` (NULL: the
/// defaults), checked as the API checks them, and the length of each of its
/// outputs, `nseries * k`. Checked before `k` sizes an output, so that a `k`
/// out of range is named as such, not as an output too long.
///
/// # Safety
/// `peaks` NULL or valid for one read.
pub(crate) unsafe fn peak_options(
    peaks: *const kp_peak_options,
    nseries: usize,
) -> Result<(PeakOptions, usize), RawError> {
    let o = unsafe { or_default(peaks, kp_peak_options_default) };
    let peaks = PeakOptions {
        k: o.k,
        separation: o.separation,
    };
    peaks.validate()?;
    let len = raw::product("nseries", nseries, "k", peaks.k)?;
    Ok((peaks, len))
}

/// The C arguments of a batch's best peaks: the peak options (NULL: the
/// defaults), and `index` and `value`, `nseries * k` values each, series
/// after series (-1 and NaN past a series' last peak).
pub(crate) struct PeakArgs {
    pub(crate) peaks: *const kp_peak_options,
    pub(crate) index: *mut i64,
    pub(crate) value: *mut f64,
}

impl PeakArgs {
    /// The options and the outputs' length ([`peak_options`]), with `index`
    /// and `value` apart from each other and from the `inputs`.
    ///
    /// # Safety
    /// As [`peak_options`].
    pub(crate) unsafe fn check(
        &self,
        nseries: usize,
        inputs: &[Span],
    ) -> Result<(PeakOptions, usize), RawError> {
        let (peaks, len) = unsafe { peak_options(self.peaks, nseries) }?;
        let outputs = [
            Span::of("index", self.index, len),
            Span::of("value", self.value, len),
        ];
        check_apart(&outputs, inputs)?;
        Ok((peaks, len))
    }

    /// The two outputs of `len` values (NULL, size and alignment checked),
    /// to be written once the peaks are found in full.
    ///
    /// # Safety
    /// Non-NULL `index` and `value` valid for `len` writes, apart (checked
    /// before by [`PeakArgs::check`]).
    pub(crate) unsafe fn outputs<'a>(&self, len: usize) -> Result<PeakOutputs<'a>, RawError> {
        Ok(PeakOutputs {
            index: unsafe { raw::host_mut("index", self.index, len) }?,
            value: unsafe { raw::host_mut("value", self.value, len) }?,
        })
    }
}

/// A batch's checked `index` and `value`.
pub(crate) struct PeakOutputs<'a> {
    index: &'a mut [i64],
    value: &'a mut [f64],
}

impl PeakOutputs<'_> {
    /// Each series' peaks (at most `k`), `k` a series.
    pub(crate) fn write(self, rows: &[Vec<Peak>], k: usize) {
        write_peaks(rows, k, self.index, self.value);
    }
}
