//! C ABI of the phase-folding period searches (semantics:
//! [`crate::params::phasefold`]): phase dispersion minimisation (PDM,
//! `kp_pdm_*`) and conditional entropy (CE, `kp_conditional_entropy_*`),
//! host-pointer entry points per dtype for one series and for a ragged
//! batch searched at the same frequencies, each on a frequency array or a
//! uniform grid (the per-dtype functions are in `entry_points.rs`).
//! Frequencies are in cycles per unit of time; each call writes one value
//! per frequency and series, or, for a batch's `_peaks` forms, only the
//! best few minima of each series' statistic (`kp_peak_options`, semantics:
//! [`crate::params::peaks`]).
//!
//! The two statistics are one operation ([`Statistic`]), so each shape of
//! call is declared once, over the option struct `O` that picks the
//! statistic (`FoldOptions`) and the frequencies `F` (`FreqArray` or
//! `Grid`, from `args.rs`).
//!
//! There is no device-pointer variant, for BLS's reasons
//! ([`crate::ffi::bls`]): the kernel folds *prepared* series (times after
//! their minimum, PDM's weighted values, CE's magnitude bins), made on the
//! host after the values are checked; a caller with device data copies it
//! to the host first.
use super::args::{write_rows, FreqArray, Grid, HostFreqs, PeakArgs, Ragged, Samples};
use super::{kp_context, kp_status, or_default, value_boundary, Entry, RawError};
use crate::api::phasefold::{
    CeOptions, PdmOptions, PeakOptions, PhaseFold, Statistic, MAX_CE_CELLS, MAX_PDM_BINS, MAX_PEAKS,
};
use crate::api::Kernpack;
use crate::float::Float;
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// The most phase bins `kp_pdm_options.bins` may ask for.
pub const KP_PDM_MAX_BINS: u32 = 4096;
const _: () = assert!(KP_PDM_MAX_BINS as usize == MAX_PDM_BINS);

/// The most cells (`phase_bins` x `mag_bins`) `kp_ce_options` may ask for.
pub const KP_CE_MAX_CELLS: u32 = 65536;
const _: () = assert!(KP_CE_MAX_CELLS as usize == MAX_CE_CELLS);

/// The most peaks per series `kp_peak_options.k` may ask for.
pub const KP_MAX_PEAKS: usize = 256;
const _: () = assert!(KP_MAX_PEAKS == MAX_PEAKS);

/// Options of a PDM search. Start from `kp_pdm_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_pdm_options {
    /// Phase bins, 2 to KP_PDM_MAX_BINS (default 10, cuvarbase's).
    pub bins: u32,
}

/// Options of a conditional entropy search. Start from
/// `kp_ce_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_ce_options {
    /// Phase bins, at least 1 (default 10).
    pub phase_bins: u32,
    /// Magnitude bins, at least 1 (default 5); phase_bins x mag_bins at
    /// most KP_CE_MAX_CELLS.
    pub mag_bins: u32,
    /// Extra phase bins below its own that a sample also counts in, below
    /// phase_bins (default 0).
    pub phase_overlap: u32,
    /// Extra magnitude bins below its own that a sample also counts in,
    /// below mag_bins (default 0).
    pub mag_overlap: u32,
}

/// How many peaks the `_peaks` entry points keep per series, and how far
/// apart. Start from `kp_peak_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_peak_options {
    /// Peaks per series, 1 to KP_MAX_PEAKS (default 1: the best period).
    pub k: usize,
    /// The least distance between the trial frequencies of two peaks kept,
    /// in the frequencies' unit (the BLS calls': between trial periods, in
    /// the periods' unit), finite and >= 0 (default 0: any two distinct
    /// peaks). About one peak width, 1 / (time span) in frequency, keeps a
    /// peak's side lobes out.
    pub separation: f64,
}

/// 10 phase bins (cuvarbase's default).
#[no_mangle]
pub extern "C" fn kp_pdm_options_default() -> kp_pdm_options {
    let defaults = || kp_pdm_options {
        bins: PdmOptions::default().bins as u32,
    };
    value_boundary(defaults, defaults)
}

/// 10 phase bins x 5 magnitude bins, no overlap (cuvarbase's defaults).
#[no_mangle]
pub extern "C" fn kp_ce_options_default() -> kp_ce_options {
    let defaults = || {
        let o = CeOptions::default();
        kp_ce_options {
            phase_bins: o.phase_bins as u32,
            mag_bins: o.mag_bins as u32,
            phase_overlap: o.phase_overlap as u32,
            mag_overlap: o.mag_overlap as u32,
        }
    };
    value_boundary(defaults, defaults)
}

/// One peak per series (k = 1), no separation.
#[no_mangle]
pub extern "C" fn kp_peak_options_default() -> kp_peak_options {
    let defaults = || {
        let o = PeakOptions::default();
        kp_peak_options {
            k: o.k,
            separation: o.separation,
        }
    };
    value_boundary(defaults, defaults)
}

/// An option struct of the C ABI: the statistic it asks for (its ranges
/// are checked by the API, with the rest of the call).
pub(crate) trait FoldOptions: Copy {
    /// Its `kp_*_options_default()`, what NULL options mean.
    const DEFAULT: extern "C" fn() -> Self;

    fn statistic(self) -> Statistic;
}

impl FoldOptions for kp_pdm_options {
    const DEFAULT: extern "C" fn() -> Self = kp_pdm_options_default;

    fn statistic(self) -> Statistic {
        Statistic::Pdm(PdmOptions {
            bins: self.bins as usize,
        })
    }
}

impl FoldOptions for kp_ce_options {
    const DEFAULT: extern "C" fn() -> Self = kp_ce_options_default;

    fn statistic(self) -> Statistic {
        Statistic::ConditionalEntropy(CeOptions {
            phase_bins: self.phase_bins as usize,
            mag_bins: self.mag_bins as usize,
            phase_overlap: self.phase_overlap as usize,
            mag_overlap: self.mag_overlap as usize,
        })
    }
}

/// The statistic `options` asks for; NULL means the defaults.
///
/// # Safety
/// `options` is NULL or valid for reads.
unsafe fn statistic_from<O: FoldOptions>(options: *const O) -> Statistic {
    unsafe { or_default(options, O::DEFAULT) }.statistic()
}

/// One series on host buffers: the C arguments of kp_pdm_{dtype},
/// kp_conditional_entropy_{dtype} and their `_uniform` forms, `O` the
/// options (the statistic), `F` the frequencies.
pub(crate) struct SeriesFold<T, O, F> {
    options: *const O,
    samples: Samples<T>,
    freqs: F,
    out: *mut T,
}

impl<T: Float, O: FoldOptions, F: HostFreqs<T>> Entry for SeriesFold<T, O, F> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nf = self.freqs.len();
        let mut inputs = self.samples.spans();
        inputs.extend(self.freqs.spans());
        check_apart(&[Span::of("out", self.out, nf)], &inputs)?;
        let statistic = unsafe { statistic_from(self.options) };
        let series = unsafe { self.samples.series() }?;
        let freqs = unsafe { self.freqs.view() }?;
        raw::check_host("out", self.out as *const T, nf)?;
        // The operation behind Kernpack::pdm, conditional_entropy and their
        // _uniform forms, computed in full before `out` is written.
        let values = kp.run(PhaseFold {
            series,
            freqs,
            statistic,
        })?;
        unsafe { write_rows(self.out, std::slice::from_ref(&values)) }
    }
}

/// A ragged batch on host buffers, every series at the same frequencies:
/// the C arguments of kp_pdm_batch_{dtype},
/// kp_conditional_entropy_batch_{dtype} and their `_uniform` forms.
pub(crate) struct BatchFold<T, O, F> {
    options: *const O,
    ragged: Ragged<T>,
    freqs: F,
    out: *mut T,
}

impl<T: Float, O: FoldOptions, F: HostFreqs<T>> Entry for BatchFold<T, O, F> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        // The offsets checked before t, y and dy are sized by the last one.
        let ragged = unsafe { self.ragged.read() }?;
        let len = raw::product("nseries", self.ragged.nseries, "nf", self.freqs.len())?;
        let mut inputs = ragged.spans();
        inputs.extend(self.freqs.spans());
        check_apart(&[Span::of("out", self.out, len)], &inputs)?;
        let statistic = unsafe { statistic_from(self.options) };
        let batch = unsafe { ragged.batch() }?;
        let freqs = unsafe { self.freqs.view() }?;
        raw::check_host("out", self.out as *const T, len)?;
        let rows = kp.phase_fold_batch(&batch, &freqs, &statistic)?;
        unsafe { write_rows(self.out, &rows) }
    }
}

/// A ragged batch's best peaks, every series at the same frequencies: the
/// C arguments of kp_pdm_batch_peaks_{dtype},
/// kp_conditional_entropy_batch_peaks_{dtype} and their `_uniform_peaks`
/// forms (`BatchFold`'s, with `peaks`, `index` and `value` for `out`).
pub(crate) struct BatchPeaks<T, O, F> {
    options: *const O,
    ragged: Ragged<T>,
    freqs: F,
    peaks: PeakArgs,
}

impl<T: Float, O: FoldOptions, F: HostFreqs<T>> Entry for BatchPeaks<T, O, F> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let mut inputs = ragged.spans();
        inputs.extend(self.freqs.spans());
        let (peaks, len) = unsafe { self.peaks.check(self.ragged.nseries, &inputs) }?;
        let statistic = unsafe { statistic_from(self.options) };
        let batch = unsafe { ragged.batch() }?;
        let freqs = unsafe { self.freqs.view() }?;
        let out = unsafe { self.peaks.outputs(len) }?;
        // Found in full before a single index or value is written.
        let rows = kp.phase_fold_batch_peaks(&batch, &freqs, &statistic, &peaks)?;
        out.write(&rows, peaks.k);
        Ok(())
    }
}

/// Phase dispersion minimisation in {precision}: PDM's theta of the `n`
/// samples `t`, `y` (errors `dy`: weights 1 / dy^2; NULL: equal weights)
/// folded at each of the `nf` trial frequencies `freqs` (cycles per unit of
/// `t`: finite, >= 0) into `options.bins` phase bins (NULL options: the
/// defaults), written to `out` (`nf` values). theta = sum w (y - mean of
/// the sample's bin)^2 / sum w (y - mean)^2, weighted means, in [0, 1] and
/// lower at a better period (cuvarbase reports 1 - theta); a series whose
/// `y` do not vary (one sample, say) has no theta: NaN at every frequency.
/// Binning and sums are in f64 whatever the dtype; runs on the context's
/// backend, with the same results on the CPU and the GPU.
///
/// Ownership: every buffer stays the caller's. kernpack reads the inputs
/// and writes `out` during the call only, keeps no pointer, and writes
/// nothing on failure (the status says why, kp_last_error_message() names
/// the argument).
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `freqs` and `out`: `nf`
/// values, `out` apart from the inputs; `options` NULL or one struct.
type kp_pdm<T> = SeriesFold<T, kp_pdm_options, FreqArray<*const T>>;

/// As `kp_pdm_{dtype}`, at the `nf` frequencies `f0 + k df`, `k = 0 ..
/// nf-1` (cycles per unit of `t`; f0 >= 0, df > 0 when nf > 1), in
/// {precision}.
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `out`: `nf` values, apart
/// from the inputs; `options` NULL or one struct.
type kp_pdm_uniform<T> = SeriesFold<T, kp_pdm_options, Grid>;

/// PDM's theta (as `kp_pdm_{dtype}`'s) in {precision} of every series of a
/// ragged batch, all at the same `nf` frequencies `freqs`: series `s` is
/// samples `offsets[s] .. offsets[s+1]-1` of the concatenated `t`, `y` and
/// `dy` (NULL: equal weights); `offsets` holds `nseries + 1` values from 0
/// up, increasing (every series has at least one sample). `out` gets
/// `nseries` x `nf` values, series by series (row `s` at `out + s * nf`).
/// On the GPU in one launch or on the CPU, with the same results, each row
/// what `kp_pdm_{dtype}` gives for its series; nothing is written on
/// failure (an error in a series' values names the series). Every buffer
/// stays the caller's; no pointer is kept.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `freqs`: `nf`; `out`: `nseries * nf` values,
/// apart from the inputs; `options` NULL or one struct.
type kp_pdm_batch<T> = BatchFold<T, kp_pdm_options, FreqArray<*const T>>;

/// As `kp_pdm_batch_{dtype}`, at the `nf` frequencies `f0 + k df` (cycles
/// per unit of `t`), in {precision}.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `out`: `nseries * nf` values, apart from the
/// inputs; `options` NULL or one struct.
type kp_pdm_batch_uniform<T> = BatchFold<T, kp_pdm_options, Grid>;

/// The best periods by PDM of every series of a ragged batch, in
/// {precision}, without keeping the statistic: inputs as
/// `kp_pdm_batch_{dtype}` (`options`, `t`, `y`, `dy`, `offsets`,
/// `nseries`, `freqs`, `nf`), and `peaks` (NULL: the defaults, one peak).
/// `index` and `value` each get `nseries * peaks.k` values, series by
/// series (series `s` at `index + s * peaks.k`), best first: the `peaks.k`
/// lowest distinct minima of the series' theta over `freqs`, each at least
/// `peaks.separation` in frequency from those before it, as its index into
/// `freqs` and its theta (as `kp_pdm_batch_{dtype}` gives it, widened to
/// double); a series with fewer minima (a series with no theta has none)
/// gets index -1 and value NaN after its last. A minimum is the first of
/// equal values, and the best peak the first lowest value of the row.
/// On a GPU the batch runs in chunks whose values are reduced on the
/// device, so only the peaks come back; the same peaks on the CPU and the
/// GPU.
///
/// Ownership: every buffer stays the caller's. kernpack reads the inputs
/// and writes `index` and `value` during the call only, keeps no pointer,
/// and writes neither on failure (the status says why,
/// kp_last_error_message() names the argument).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `freqs`: `nf`; `index` and `value`:
/// `nseries * peaks.k` values each, apart from each other and from the
/// inputs; `options` and `peaks` NULL or one struct.
type kp_pdm_batch_peaks<T> = BatchPeaks<T, kp_pdm_options, FreqArray<*const T>>;

/// As `kp_pdm_batch_peaks_{dtype}`, at the `nf` frequencies `f0 + i df`,
/// `i = 0 .. nf-1` (cycles per unit of `t`; a peak's index is its `i`), in
/// {precision}.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `index` and `value`: `nseries * peaks.k`
/// values each, apart from each other and from the inputs; `options` and
/// `peaks` NULL or one struct.
type kp_pdm_batch_uniform_peaks<T> = BatchPeaks<T, kp_pdm_options, Grid>;

/// The conditional entropy in {precision} (Graham et al. 2013, as
/// cuvarbase's and periodfind's) of the `n` samples `t`, `y` folded at each
/// of the `nf` trial frequencies `freqs` (cycles per unit of `t`: finite, >=
/// 0), written to `out` (`nf` values), with `options` (NULL: the
/// defaults). `y` is scaled to [0, 1] by its minimum and maximum and cut
/// into `mag_bins` magnitude bins, the phase into `phase_bins` (a sample
/// also counts in the `phase_overlap` phase bins and `mag_overlap`
/// magnitude bins below its own); with N_pm the counts and N_p their sum
/// over m, H = sum N_pm ln(N_p / N_pm) / sum N_pm, lower at a better
/// period (cuvarbase's standard CE is H + ln((mag_overlap + 1) /
/// mag_bins)). `dy` does not enter the statistic, but when given (non-NULL)
/// it is checked as everywhere (finite, > 0). A series whose `y` do not
/// vary has no entropy: NaN at every frequency. Binning and sums are in
/// f64 whatever the dtype; runs on the context's backend, with the same
/// results on the CPU and the GPU.
///
/// Ownership: every buffer stays the caller's. kernpack reads the inputs
/// and writes `out` during the call only, keeps no pointer, and writes
/// nothing on failure (the status says why, kp_last_error_message() names
/// the argument).
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `freqs` and `out`: `nf`
/// values, `out` apart from the inputs; `options` NULL or one struct.
type kp_conditional_entropy<T> = SeriesFold<T, kp_ce_options, FreqArray<*const T>>;

/// As `kp_conditional_entropy_{dtype}`, at the `nf` frequencies `f0 + k
/// df`, `k = 0 .. nf-1` (cycles per unit of `t`; f0 >= 0, df > 0 when nf >
/// 1), in {precision}.
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `out`: `nf` values, apart
/// from the inputs; `options` NULL or one struct.
type kp_conditional_entropy_uniform<T> = SeriesFold<T, kp_ce_options, Grid>;

/// The conditional entropy (as `kp_conditional_entropy_{dtype}`'s) in
/// {precision} of every series of a ragged batch, all at the same `nf`
/// frequencies `freqs`: series `s` is samples `offsets[s] ..
/// offsets[s+1]-1` of the concatenated `t`, `y` and `dy` (NULL: none);
/// `offsets` holds `nseries + 1` values from 0 up, increasing (every
/// series has at least one sample). `out` gets `nseries` x `nf` values,
/// series by series (row `s` at `out + s * nf`). On the GPU in one launch
/// or on the CPU, with the same results, each row what
/// `kp_conditional_entropy_{dtype}` gives for its series; nothing is
/// written on failure (an error in a series' values names the series).
/// Every buffer stays the caller's; no pointer is kept.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `freqs`: `nf`; `out`: `nseries * nf` values,
/// apart from the inputs; `options` NULL or one struct.
type kp_conditional_entropy_batch<T> = BatchFold<T, kp_ce_options, FreqArray<*const T>>;

/// As `kp_conditional_entropy_batch_{dtype}`, at the `nf` frequencies
/// `f0 + k df` (cycles per unit of `t`), in {precision}.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `out`: `nseries * nf` values, apart from the
/// inputs; `options` NULL or one struct.
type kp_conditional_entropy_batch_uniform<T> = BatchFold<T, kp_ce_options, Grid>;

/// The best periods by conditional entropy of every series of a ragged
/// batch, in {precision}, as `kp_pdm_batch_peaks_{dtype}` finds them by
/// PDM's theta: inputs as `kp_conditional_entropy_batch_{dtype}`, and
/// `peaks` (NULL: the defaults, one peak). `index` and `value` each get
/// `nseries * peaks.k` values, series by series, best first: the lowest
/// distinct minima of the series' entropy over `freqs` (as
/// `kp_conditional_entropy_batch_{dtype}` gives it, widened to double),
/// then index -1 and value NaN past the series' last. Every buffer stays
/// the caller's; no pointer is kept; nothing is written on failure.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `freqs`: `nf`; `index` and `value`:
/// `nseries * peaks.k` values each, apart from each other and from the
/// inputs; `options` and `peaks` NULL or one struct.
type kp_conditional_entropy_batch_peaks<T> = BatchPeaks<T, kp_ce_options, FreqArray<*const T>>;

/// As `kp_conditional_entropy_batch_peaks_{dtype}`, at the `nf`
/// frequencies `f0 + i df`, `i = 0 .. nf-1` (cycles per unit of `t`; a
/// peak's index is its `i`), in {precision}.
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `index` and `value`: `nseries * peaks.k`
/// values each, apart from each other and from the inputs; `options` and
/// `peaks` NULL or one struct.
type kp_conditional_entropy_batch_uniform_peaks<T> = BatchPeaks<T, kp_ce_options, Grid>;
