//! C ABI of the significance of periodogram peaks: the analytic false-alarm
//! probabilities and levels (plain functions, f64, no context), and the
//! bootstrap's maxima (an entry point per dtype, on the context's backend).
use super::{boundary, kp_context, kp_status, null_pointer, Entry, RawError};
use crate::api::lombscargle::bootstrap::BootstrapOptions;
use crate::api::Kernpack;
use crate::error::Error;
use crate::float::Float;
use crate::params::significance::{self, FapMethod, PowerNormalization};
use crate::raw::{self, check_apart, Span};

#[rustfmt::skip] // generated, one line per signature
mod entry_points;
pub use entry_points::*;

/// `normalization` value: `1 - chi2 / chi2_ref`, in [0, 1] (astropy's 'standard').
pub const KP_POWER_STANDARD: u32 = 0;
/// `normalization` value: `chi2_ref / chi2 - 1` ('model').
pub const KP_POWER_MODEL: u32 = 1;
/// `normalization` value: `ln(chi2_ref / chi2)` ('log').
pub const KP_POWER_LOG: u32 = 2;
/// `normalization` value: `(chi2_ref - chi2) / 2` ('psd').
pub const KP_POWER_PSD: u32 = 3;

/// `method` value: Baluev's alias-free approximation (astropy's default).
pub const KP_FAP_BALUEV: u32 = 0;
/// `method` value: Davies' upper bound.
pub const KP_FAP_DAVIES: u32 = 1;
/// `method` value: `fmax (max t - min t)` independent frequencies.
pub const KP_FAP_NAIVE: u32 = 2;
/// `method` value: the single-frequency probability.
pub const KP_FAP_SINGLE: u32 = 3;

fn normalization_of(value: u32) -> Result<PowerNormalization, Error> {
    Ok(match value {
        KP_POWER_STANDARD => PowerNormalization::Standard,
        KP_POWER_MODEL => PowerNormalization::Model,
        KP_POWER_LOG => PowerNormalization::Log,
        KP_POWER_PSD => PowerNormalization::Psd,
        other => {
            return Err(Error::invalid(format!(
                "unknown normalization value {other}"
            )))
        }
    })
}

pub(crate) fn method_of(value: u32) -> Result<FapMethod, Error> {
    Ok(match value {
        KP_FAP_BALUEV => FapMethod::Baluev,
        KP_FAP_DAVIES => FapMethod::Davies,
        KP_FAP_NAIVE => FapMethod::Naive,
        KP_FAP_SINGLE => FapMethod::Single,
        other => return Err(Error::invalid(format!("unknown method value {other}"))),
    })
}

/// The analytic FAP of each of `count` powers or the level of each of
/// `count` probabilities into `out`, after every check.
// The C arguments, as both entry points take them.
#[allow(clippy::too_many_arguments)]
unsafe fn analytic(
    inverse: bool,
    values: *const f64,
    count: usize,
    fmax: f64,
    t: *const f64,
    dy: *const f64,
    n: usize,
    normalization: u32,
    method: u32,
    out: *mut f64,
) -> kp_status {
    boundary(|| {
        let name = if inverse { "probabilities" } else { "powers" };
        let values_in = unsafe { raw::host(name, values, count) }?;
        let t_in = unsafe { raw::host("t", t, n) }?;
        let dy_in = unsafe { raw::optional_host("dy", dy, n) }?;
        let mut inputs = vec![Span::of(name, values, count), Span::of("t", t, n)];
        if !dy.is_null() {
            inputs.push(Span::of("dy", dy, n));
        }
        check_apart(&[Span::of("out", out, count)], &inputs)?;
        let out = unsafe { raw::host_mut("out", out, count) }?;
        let (normalization, method) = (normalization_of(normalization)?, method_of(method)?);
        // Computed in full before a single value is written.
        let result = if inverse {
            significance::false_alarm_level(values_in, fmax, t_in, dy_in, normalization, method)
        } else {
            significance::false_alarm_probability(
                values_in,
                fmax,
                t_in,
                dy_in,
                normalization,
                method,
            )
        }?;
        out.copy_from_slice(&result);
        Ok(())
    })
}

/// The false-alarm probability of the highest peak of a single-term
/// Lomb-Scargle periodogram (with a fitted mean) of `n` samples at times `t`
/// with errors `dy` (NULL: equal), up to the cyclic frequency `fmax`, for each
/// of the `count` powers `z` (in `normalization`, a KP_POWER_*), by `method`
/// (a KP_FAP_*): astropy's `false_alarm_probability`. Writes `count` values
/// to `out` (apart from the inputs); nothing on failure.
///
/// # Safety
/// `z`, `out`: `count` doubles; `t`, `dy` (unless NULL): `n` doubles.
#[no_mangle]
pub unsafe extern "C" fn kp_false_alarm_probability(
    z: *const f64,
    count: usize,
    fmax: f64,
    t: *const f64,
    dy: *const f64,
    n: usize,
    normalization: u32,
    method: u32,
    out: *mut f64,
) -> kp_status {
    unsafe { analytic(false, z, count, fmax, t, dy, n, normalization, method, out) }
}

/// The power whose false-alarm probability (as `kp_false_alarm_probability`)
/// is each of the `count` probabilities `p` (in [0, 1]): astropy's
/// `false_alarm_level`. Writes `count` values to `out`; nothing on failure.
///
/// # Safety
/// As `kp_false_alarm_probability`.
#[no_mangle]
pub unsafe extern "C" fn kp_false_alarm_level(
    p: *const f64,
    count: usize,
    fmax: f64,
    t: *const f64,
    dy: *const f64,
    n: usize,
    normalization: u32,
    method: u32,
    out: *mut f64,
) -> kp_status {
    unsafe { analytic(true, p, count, fmax, t, dy, n, normalization, method, out) }
}

/// The maxima of `resamples` periodograms of `n` samples `(t, y, dy)`
/// (`dy` NULL: equal errors) resampled with replacement (t fixed) from the
/// counter-based generator keyed by `seed`, on astropy's `autopower` grid up
/// to the cyclic frequency `fmax` with `samples_per_peak` points per peak
/// (astropy: 5), in `normalization` (a KP_POWER_*), in {precision}: astropy's
/// bootstrap false-alarm statistics. Writes `resamples` doubles to `maxima`
/// in resample order (the same for a seed on every backend); the FAP of a
/// power is the fraction of maxima not below it. Nothing is written on failure.
///
/// # Safety
/// `t`, `y`, `dy` (unless NULL): `n` values; `maxima`: `resamples` doubles.
struct kp_lombscargle_bootstrap<T> {
    t: *const T,
    y: *const T,
    dy: *const T,
    n: usize,
    fmax: f64,
    normalization: u32,
    resamples: usize,
    seed: u64,
    samples_per_peak: f64,
    maxima: *mut f64,
}

impl<T: Float> Entry for kp_lombscargle_bootstrap<T> {
    unsafe fn call(self, kp: &Kernpack) -> Result<(), RawError> {
        let n = self.n;
        let t = unsafe { raw::host("t", self.t, n) }?;
        let y = unsafe { raw::host("y", self.y, n) }?;
        let dy = unsafe { raw::optional_host("dy", self.dy, n) }?;
        if self.maxima.is_null() {
            return Err(null_pointer("maxima"));
        }
        let mut inputs = vec![Span::of("t", self.t, n), Span::of("y", self.y, n)];
        if !self.dy.is_null() {
            inputs.push(Span::of("dy", self.dy, n));
        }
        check_apart(&[Span::of("maxima", self.maxima, self.resamples)], &inputs)?;
        let maxima = unsafe { raw::host_mut("maxima", self.maxima, self.resamples) }?;
        let opts = BootstrapOptions {
            resamples: self.resamples,
            seed: self.seed,
            samples_per_peak: self.samples_per_peak,
        };
        let normalization = normalization_of(self.normalization)?;
        let got = kp.lombscargle_bootstrap(t, y, dy, self.fmax, normalization, &opts)?;
        maxima.copy_from_slice(&got);
        Ok(())
    }
}
