//! C ABI of the Box Least Squares (BLS) transit search, astropy's
//! `BoxLeastSquares(t, y, dy).power(period, duration, objective=...,
//! oversample=...)` (semantics: [`crate::params::bls`]): host-pointer entry
//! points per dtype for one series and for a ragged batch searched at the
//! same periods and durations, and for only the best few periods of each
//! series of a batch (the per-dtype functions are in `entry_points.rs`).
//! Each writes the seven fields of astropy's results, one array per field
//! (the peaks' call, at its peaks only, with their indices).
//!
//! There is no device-pointer variant. The kernel's device description
//! ([`crate::gpu::bls::BlsOnDevice`]) takes *prepared* series (times after
//! their minimum, fixed-point weighted values with per-series units and
//! totals), and what it writes is each period's best box, which the host
//! turns into the seven fields. Both steps are reductions in a fixed order
//! on the host, which is what makes every backend pick the same box, and
//! the values must be checked (finite, dy > 0) before they are prepared: a
//! `_device` entry point over raw t, y and dy would have to download them,
//! prepare, upload, launch, download the boxes, finish and upload the
//! results, synchronising the stream twice. That is the host entry point
//! with the caller's two copies moved inside it, and no longer what every
//! other `_device` function promises (enqueued on the caller's stream, no
//! synchronisation). The search's cost is in the kernel (per period, the N
//! samples and every box of every duration), so those copies are small
//! next to it; a caller with device data copies it to the host first.
use super::args::{peak_options, Ragged, Samples};
use super::phasefold::kp_peak_options;
use super::{kp_context, kp_status, or_default, value_boundary, Entry, RawError};
use crate::api::bls::{BlsObjective, BlsOptions, BlsResults, BLS_FIELDS};
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::params::peaks::write_padded;
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// `objective` value: the log likelihood gained by the box, 0.5 ivar_in
/// depth^2 (astropy's default, "likelihood").
pub const KP_BLS_LIKELIHOOD: u32 = 0;
/// `objective` value: the signal-to-noise ratio of the depth, depth /
/// depth_err (astropy's "snr").
pub const KP_BLS_SNR: u32 = 1;

/// Options of a BLS search. Start from `kp_bls_options_default()`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct kp_bls_options {
    /// What the search maximises over durations and phases at each period:
    /// one of KP_BLS_* (default KP_BLS_LIKELIHOOD).
    pub objective: u32,
    /// Phase bins per shortest duration, at least 1 (astropy's
    /// `oversample`, default 10): the phase is cut into bins of
    /// min(durations) / oversample.
    pub oversample: u32,
}

impl kp_bls_options {
    fn to_options(self) -> Result<BlsOptions, RawError> {
        let objective = match self.objective {
            KP_BLS_LIKELIHOOD => BlsObjective::Likelihood,
            KP_BLS_SNR => BlsObjective::Snr,
            other => {
                return Err(Error::invalid(format!(
                "unknown objective value {other}: expected 0 (KP_BLS_LIKELIHOOD) or 1 (KP_BLS_SNR)"
            ))
                .into())
            }
        };
        Ok(BlsOptions {
            objective,
            oversample: self.oversample,
        })
    }
}

/// The likelihood objective, oversample 10 (astropy's defaults).
#[no_mangle]
pub extern "C" fn kp_bls_options_default() -> kp_bls_options {
    let defaults = || {
        let o = BlsOptions::default();
        kp_bls_options {
            objective: o.objective as u32,
            oversample: o.oversample,
        }
    };
    value_boundary(defaults, defaults)
}

/// NULL means the defaults.
unsafe fn options_from(options: *const kp_bls_options) -> Result<BlsOptions, RawError> {
    unsafe { or_default(options, kp_bls_options_default) }.to_options()
}

/// The trial periods and the durations, in units of `t`.
struct Trials<T> {
    periods: *const T,
    nperiods: usize,
    durations: *const T,
    ndurations: usize,
}

impl<T: Float> Trials<T> {
    fn spans(&self) -> [Span<'static>; 2] {
        [
            Span::of("periods", self.periods, self.nperiods),
            Span::of("durations", self.durations, self.ndurations),
        ]
    }

    /// # Safety
    /// As the entry points': non-NULL pointers valid for their counts.
    unsafe fn views<'a>(&self) -> Result<(&'a [T], &'a [T]), RawError> {
        Ok((
            unsafe { raw::host("periods", self.periods, self.nperiods) }?,
            unsafe { raw::host("durations", self.durations, self.ndurations) }?,
        ))
    }
}

/// The seven output arrays, in [`BlsResults`]'s order (and astropy's
/// names): each holds one value per (series, period), series after series.
struct Results<T> {
    power: *mut T,
    depth: *mut T,
    depth_err: *mut T,
    duration: *mut T,
    transit_time: *mut T,
    depth_snr: *mut T,
    log_likelihood: *mut T,
}

/// The C names of the outputs, in [`BlsResults`]'s order.
const FIELD_NAMES: [&str; BLS_FIELDS] = [
    "power",
    "depth",
    "depth_err",
    "duration",
    "transit_time",
    "depth_snr",
    "log_likelihood",
];

impl<T: Float> Results<T> {
    fn pointers(&self) -> [*mut T; BLS_FIELDS] {
        [
            self.power,
            self.depth,
            self.depth_err,
            self.duration,
            self.transit_time,
            self.depth_snr,
            self.log_likelihood,
        ]
    }

    /// The outputs of `len` values each, for the overlap check.
    fn spans(&self, len: usize) -> Vec<Span<'static>> {
        FIELD_NAMES
            .iter()
            .zip(self.pointers())
            .map(|(name, ptr)| Span::of(name, ptr as *const T, len))
            .collect()
    }

    /// Every output can take `len` values (NULL, size, alignment), before
    /// the search runs.
    fn check(&self, len: usize) -> Result<(), RawError> {
        for (name, ptr) in FIELD_NAMES.iter().zip(self.pointers()) {
            raw::check_host(name, ptr as *const T, len)?;
        }
        Ok(())
    }

    /// Writes `results` (computed in full, at most `per_series` values per
    /// field each) one series after another, each series' values then NaN
    /// up to `per_series` (none for a search's results at every period).
    ///
    /// # Safety
    /// Each output valid for `results.len() * per_series` writes, apart from
    /// each other and from the inputs (checked before).
    unsafe fn write<'r>(
        &self,
        results: impl Iterator<Item = &'r BlsResults<T>> + Clone,
        nseries: usize,
        per_series: usize,
    ) -> Result<(), RawError>
    where
        T: 'r,
    {
        let len = nseries * per_series;
        for (f, (name, ptr)) in FIELD_NAMES.iter().zip(self.pointers()).enumerate() {
            let out = unsafe { raw::host_mut(name, ptr, len) }?;
            let columns = results.clone().map(|r| r.columns()[f].iter().copied());
            write_padded(out, per_series, columns, T::from_f64(f64::NAN));
        }
        Ok(())
    }
}

/// The BLS search in {precision} of the `n` samples `t`, `y` (errors `dy`,
/// NULL: equal) at the `nperiods` trial `periods` over the `ndurations`
/// `durations` (both in units of `t`: finite and positive, every duration
/// shorter than every period), with `options` (NULL: the defaults), as
/// astropy's `BoxLeastSquares(t, y, dy).power(periods, durations)`. For
/// each period the best box (over every duration and phase) goes to the
/// seven outputs, `nperiods` values each: `power` (the objective), `depth`,
/// `depth_err`, `duration`, `transit_time` (a mid-transit time, on `t`'s
/// scale), `depth_snr` and `log_likelihood`. At a period where no box has weight
/// both in and out of transit with a depth >= 0, `power` is -inf and the
/// other six NaN (as astropy's). Sums are in f64 whatever the dtype; runs
/// on the context's backend, with the same results on the CPU and the GPU;
/// nothing is written on failure.
///
/// # Safety
/// `t`, `y` and a non-NULL `dy`: `n` values; `periods`: `nperiods`;
/// `durations`: `ndurations`; each output: `nperiods` values, apart from
/// each other and from the inputs.
struct kp_bls<T> {
    options: *const kp_bls_options,
    samples: Samples<T>,
    trials: Trials<T>,
    results: Results<T>,
}

impl<T: Float> Entry for kp_bls<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let nperiods = self.trials.nperiods;
        let mut inputs = self.samples.spans();
        inputs.extend(self.trials.spans());
        check_apart(&self.results.spans(nperiods), &inputs)?;
        let opts = unsafe { options_from(self.options) }?;
        let series = unsafe { self.samples.series() }?;
        let (periods, durations) = unsafe { self.trials.views() }?;
        self.results.check(nperiods)?;
        let result = kp.bls(&series, periods, durations, &opts)?;
        unsafe { self.results.write([&result].into_iter(), 1, nperiods) }
    }
}

/// One BLS search in {precision} per series of a ragged batch, all at the
/// same `nperiods` `periods` over the same `ndurations` `durations`:
/// series `s` is samples `offsets[s] .. offsets[s+1]-1` of the
/// concatenated `t`, `y` and `dy` (NULL: equal errors); `offsets` holds
/// `nseries + 1` values from 0 up, increasing (every series has at least
/// one sample). Each of the seven outputs (as `kp_bls_{dtype}`'s) gets
/// `nseries` x `nperiods` values, series by series. On the GPU in one
/// launch or on the CPU, with the same results; nothing is written on
/// failure (an error names the series).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `periods`: `nperiods`; `durations`:
/// `ndurations`; each output: `nseries * nperiods` values, apart from each
/// other and from the inputs.
struct kp_bls_batch<T> {
    options: *const kp_bls_options,
    ragged: Ragged<T>,
    trials: Trials<T>,
    results: Results<T>,
}

impl<T: Float> Entry for kp_bls_batch<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        // The offsets checked before t, y and dy are sized by the last one.
        let ragged = unsafe { self.ragged.read() }?;
        let nperiods = self.trials.nperiods;
        let len = raw::product("nseries", self.ragged.nseries, "nperiods", nperiods)?;
        let mut inputs = ragged.spans();
        inputs.extend(self.trials.spans());
        check_apart(&self.results.spans(len), &inputs)?;
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        let (periods, durations) = unsafe { self.trials.views() }?;
        self.results.check(len)?;
        let results = kp.bls_batch(&batch, periods, durations, &opts)?;
        unsafe { self.results.write(results.iter(), results.len(), nperiods) }
    }
}

/// The best periods of every series of a ragged batch by BLS, in
/// {precision}, without keeping the results at every period: inputs as
/// `kp_bls_batch_{dtype}` (`options`, `t`, `y`, `dy`, `offsets`,
/// `nseries`, `periods`, `nperiods`, `durations`, `ndurations`), and
/// `peaks` (NULL: the defaults, one peak). A series' peaks are the
/// `peaks.k` highest distinct local maxima of its `power` over `periods`
/// (as `kp_bls_batch_{dtype}` gives it; a period with no box, power -inf,
/// is never one), best first, each at least `peaks.separation` away from
/// those before it in period (in the unit of `periods`, not in
/// frequency). A maximum is the first of equal values, and the best peak
/// the first highest power of the series. `index` gets `nseries * peaks.k`
/// values, series by series (series `s` from `index + s * peaks.k`): each
/// peak's index into `periods`. Each of the seven fields (`power` to
/// `log_likelihood`, as `kp_bls_batch_{dtype}` names them) gets `nseries *
/// peaks.k` values in the same layout: the results at each peak's period,
/// as `kp_bls_batch_{dtype}` gives them there. A series with fewer peaks
/// gets index -1 and NaN in every field, `power` included, after its last
/// (-inf marks a period searched without a box, which is never a peak). On
/// a GPU the batch runs in chunks whose powers are reduced on the device,
/// so only the boxes of the peaks come back; the same peaks and results on
/// the CPU and the GPU.
///
/// Ownership: every buffer stays the caller's. kernpack reads the inputs
/// and writes the outputs during the call only, keeps no pointer, and
/// writes none on failure (the status says why, kp_last_error_message()
/// names the argument).
///
/// # Safety
/// `offsets`: `nseries + 1` values; `t`, `y` and a non-NULL `dy`:
/// `offsets[nseries]` values; `periods`: `nperiods`; `durations`:
/// `ndurations`; `index` and each field output: `nseries * peaks.k` values,
/// apart from each other and from the inputs; `options` and `peaks` NULL
/// or one struct.
struct kp_bls_batch_peaks<T> {
    options: *const kp_bls_options,
    ragged: Ragged<T>,
    trials: Trials<T>,
    peaks: *const kp_peak_options,
    index: *mut i64,
    results: Results<T>,
}

impl<T: Float> Entry for kp_bls_batch_peaks<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let ragged = unsafe { self.ragged.read() }?;
        let nseries = self.ragged.nseries;
        // The peak options before k sizes the outputs.
        let (peaks, len) = unsafe { peak_options(self.peaks, nseries) }?;
        let mut inputs = ragged.spans();
        inputs.extend(self.trials.spans());
        let mut outputs = vec![Span::of("index", self.index, len)];
        outputs.extend(self.results.spans(len));
        check_apart(&outputs, &inputs)?;
        let opts = unsafe { options_from(self.options) }?;
        let batch = unsafe { ragged.batch() }?;
        let (periods, durations) = unsafe { self.trials.views() }?;
        let index = unsafe { raw::host_mut("index", self.index, len) }?;
        self.results.check(len)?;
        // Found in full before a single value is written.
        let found = kp.bls_batch_peaks(&batch, periods, durations, &opts, &peaks)?;
        let indices = found
            .iter()
            .map(|p| p.period_index.iter().map(|&i| i as i64));
        write_padded(index, peaks.k, indices, -1);
        let results = found.iter().map(|p| &p.results);
        unsafe { self.results.write(results, nseries, peaks.k) }
    }
}
