//! How significant is a periodogram peak? The false-alarm probability of the
//! highest peak of a Lomb-Scargle periodogram of pure Gaussian noise, and its
//! inverse, the false-alarm level, by the analytic approximations surveys use
//! (the 'single', 'naive', 'davies' and 'baluev' methods of astropy's
//! `LombScargle.false_alarm_probability`), for the single-term periodogram
//! with a fitted mean (the null hypothesis has 1 parameter, the model 3), in
//! the four power normalisations.
//!
//! The formulas (Baluev 2008, MNRAS 385, 1279, Table 1 and equations 5-6),
//! with `N` samples, `NH = N - 1` and `NK = N - 3` degrees of freedom under
//! the null and the periodic hypotheses:
//! - single-frequency FAP `P1(Z)`: 'standard' `(1 - Z)^(NK/2)`, 'model'
//!   `(1 + Z)^(-NK/2)`, 'log' `exp(-NK Z / 2)`, 'psd' `exp(-Z)`;
//! - 'naive': `1 - (1 - P1)^Neff`, `Neff = fmax (max t - min t)` independent
//!   frequencies;
//! - 'davies': `P1 + tau(Z)`, an upper bound;
//! - 'baluev': `1 - (1 - P1) exp(-tau(Z))`, alias free;
//!   with `W = fmax sqrt(4 pi var_w(t))` (the weighted variance of the times,
//!   weights `1 / dy^2`) and `g(n) = sqrt(2 / n) Gamma(n/2) / Gamma((n-1)/2)`:
//!   'standard' `tau = g(NH) W (1 - Z)^((NK-1)/2) sqrt(NH Z / 2)`, 'model'
//!   `g(NK) W (1 + Z)^(-NK/2) sqrt(NK Z / 2)`, 'log'
//!   `g(NK) W exp(-Z (NK - 1/2) / 2) sqrt(NK sinh(Z / 2))`, 'psd'
//!   `W exp(-Z) sqrt(Z)`.
//!
//! `fmax` is a cyclic frequency (cycles per unit of `t`), as astropy takes it.
//! The levels of 'single' and 'naive' are closed forms; those of 'davies' and
//! 'baluev' are the root of `fap(Z) = p` on the branch where the FAP falls
//! (found by bisection to the last bit; astropy's Levenberg-Marquardt root
//! stops at a relative step of about 1.5e-8).
//!
//! Pure functions of plain data, f64 throughout: these run on the host for
//! any backend (a handful of operations per value).
use std::str::FromStr;

use crate::error::{readable, Error, Result};

/// The normalisation of the periodogram whose peaks are judged (astropy's
/// `normalization`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PowerNormalization {
    /// `1 - chi2(f) / chi2_ref`, in [0, 1].
    #[default]
    Standard,
    /// `chi2_ref / chi2(f) - 1`.
    Model,
    /// `ln(chi2_ref / chi2(f))`.
    Log,
    /// `(chi2_ref - chi2(f)) / 2`, in units of the errors' variance.
    Psd,
}

impl FromStr for PowerNormalization {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "standard" => Ok(PowerNormalization::Standard),
            "model" => Ok(PowerNormalization::Model),
            "log" => Ok(PowerNormalization::Log),
            "psd" => Ok(PowerNormalization::Psd),
            other => Err(Error::invalid(format!(
                "normalization='{other}' is not recognized: expected standard, model, log or psd"
            ))),
        }
    }
}

/// An analytic approximation of the false-alarm probability (astropy's
/// `method`; 'bootstrap' is an operation of its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FapMethod {
    /// The alias-free approximation (Baluev 2008, eq. 6): astropy's default.
    #[default]
    Baluev,
    /// Davies' upper bound (Baluev 2008, eq. 5); may exceed 1 for low peaks.
    Davies,
    /// `Neff = fmax T` independent frequencies.
    Naive,
    /// The single-frequency probability (no look-elsewhere correction).
    Single,
}

impl FromStr for FapMethod {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "baluev" => Ok(FapMethod::Baluev),
            "davies" => Ok(FapMethod::Davies),
            "naive" => Ok(FapMethod::Naive),
            "single" => Ok(FapMethod::Single),
            other => Err(Error::invalid(format!(
                "Unrecognized method: {other} (analytic methods: baluev, davies, naive, single)"
            ))),
        }
    }
}

/// Degrees of freedom of the null hypothesis (a constant) and of the model
/// (a constant and one sinusoid): the single-term periodogram with a fitted mean.
const PARAMS_NULL: usize = 1;
const PARAMS_MODEL: usize = 3;

/// What the approximations need of a series and its periodogram: the sample
/// count, the time baseline, the effective bandwidth `W = fmax Teff`, and the
/// normalisation. Built once, then asked for any number of powers or
/// probabilities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NullDistribution {
    pub n: usize,
    pub normalization: PowerNormalization,
    /// `fmax (max t - min t)`: the 'naive' count of independent frequencies.
    pub independent_frequencies: f64,
    /// `fmax sqrt(4 pi var_w(t))`.
    pub bandwidth: f64,
}

impl NullDistribution {
    /// Checks the inputs: at least `PARAMS_MODEL + 1` = 4 finite times, `dy`
    /// (if given) as long as `t`, finite and positive, `fmax` finite and not
    /// negative.
    pub fn new(
        fmax: f64,
        t: &[f64],
        dy: Option<&[f64]>,
        normalization: PowerNormalization,
    ) -> Result<Self> {
        let n = t.len();
        if n <= PARAMS_MODEL {
            return Err(Error::invalid(format!(
                "t has {n} samples: the false-alarm statistics need at least {} \
                 (a mean and a sinusoid are fitted)",
                PARAMS_MODEL + 1
            )));
        }
        if let Some(i) = t.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(format!("t[{i}] = {} is not finite", t[i])));
        }
        if !(fmax.is_finite() && fmax >= 0.0) {
            return Err(Error::invalid(format!(
                "fmax = {} must be finite and not negative",
                readable(fmax)
            )));
        }
        let weights: Vec<f64> = match dy {
            Some(dy) => {
                if dy.len() != n {
                    return Err(Error::invalid(format!(
                        "dy has {} values but t has {n}",
                        dy.len()
                    )));
                }
                if let Some(i) = dy.iter().position(|v| !(v.is_finite() && *v > 0.0)) {
                    return Err(Error::invalid(format!(
                        "dy[{i}] = {} must be finite and positive",
                        dy[i]
                    )));
                }
                dy.iter().map(|d| 1.0 / (d * d)).collect()
            }
            None => vec![1.0; n],
        };
        let wsum: f64 = weights.iter().sum();
        if !(wsum.is_finite() && wsum > 0.0) {
            return Err(Error::invalid(format!(
                "the weights 1/dy^2 sum to {}: scale dy",
                readable(wsum)
            )));
        }
        // Two passes (astropy takes mean(t^2) - mean(t)^2, which loses digits
        // when t is far from 0, e.g. Julian dates).
        let mean = weights.iter().zip(t).map(|(w, t)| w * t).sum::<f64>() / wsum;
        let var = weights
            .iter()
            .zip(t)
            .map(|(w, t)| w * (t - mean) * (t - mean))
            .sum::<f64>()
            / wsum;
        let (lo, hi) = t
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        Ok(NullDistribution {
            n,
            normalization,
            independent_frequencies: fmax * (hi - lo),
            bandwidth: fmax * (4.0 * std::f64::consts::PI * var).sqrt(),
        })
    }

    fn dof_null(&self) -> f64 {
        (self.n - PARAMS_NULL) as f64
    }
    fn dof_model(&self) -> f64 {
        (self.n - PARAMS_MODEL) as f64
    }

    /// The probability that the power at one given frequency exceeds `z`.
    pub fn fap_single(&self, z: f64) -> f64 {
        let nk = self.dof_model();
        match self.normalization {
            PowerNormalization::Psd => (-z).exp(),
            PowerNormalization::Standard => (1.0 - z).powf(0.5 * nk),
            PowerNormalization::Model => (1.0 + z).powf(-0.5 * nk),
            PowerNormalization::Log => (-0.5 * nk * z).exp(),
        }
    }

    /// The power whose single-frequency FAP is `p` (`p = 0` gives the top of
    /// the range: 1 for 'standard', infinity otherwise).
    pub fn level_single(&self, p: f64) -> f64 {
        let nk = self.dof_model();
        match self.normalization {
            PowerNormalization::Psd => -p.ln(),
            PowerNormalization::Standard => 1.0 - p.powf(2.0 / nk),
            PowerNormalization::Model => p.powf(-2.0 / nk) - 1.0,
            PowerNormalization::Log => -2.0 / nk * p.ln(),
        }
    }

    /// Davies' `tau(Z)`: the expected number of up-crossings of level `Z`.
    pub fn tau(&self, z: f64) -> f64 {
        let (nh, nk, w) = (self.dof_null(), self.dof_model(), self.bandwidth);
        match self.normalization {
            PowerNormalization::Psd => w * (-z).exp() * z.sqrt(),
            PowerNormalization::Standard => {
                gamma_factor(nh) * w * (1.0 - z).powf(0.5 * (nk - 1.0)) * (0.5 * nh * z).sqrt()
            }
            PowerNormalization::Model => {
                gamma_factor(nk) * w * (1.0 + z).powf(-0.5 * nk) * (0.5 * nk * z).sqrt()
            }
            PowerNormalization::Log => {
                gamma_factor(nk)
                    * w
                    * (-0.5 * z * (nk - 0.5)).exp()
                    * (nk * (0.5 * z).sinh()).sqrt()
            }
        }
    }

    /// The false-alarm probability of a highest peak of power `z`.
    pub fn false_alarm_probability(&self, z: f64, method: FapMethod) -> f64 {
        let single = self.fap_single(z);
        match method {
            FapMethod::Single => single,
            // 1 - (1 - P1)^Neff without the cancellation for small P1.
            FapMethod::Naive => -(self.independent_frequencies * (-single).ln_1p()).exp_m1(),
            FapMethod::Davies => single + self.tau(z),
            FapMethod::Baluev => {
                // 1 - (1 - P1) e^-tau, written so small results keep their digits.
                let tau = self.tau(z);
                -(-tau).exp_m1() + single * (-tau).exp()
            }
        }
    }

    /// The power of a highest peak whose false-alarm probability is `p`, in
    /// [0, 1]: the inverse of [`NullDistribution::false_alarm_probability`].
    pub fn false_alarm_level(&self, p: f64, method: FapMethod) -> Result<f64> {
        if !(0.0..=1.0).contains(&p) {
            return Err(Error::invalid(format!(
                "false_alarm_probability = {p} is outside [0, 1]"
            )));
        }
        Ok(match method {
            FapMethod::Single => self.level_single(p),
            FapMethod::Naive => self.level_single(self.naive_single(p)),
            FapMethod::Davies | FapMethod::Baluev => self.invert(p, method),
        })
    }

    /// The single-frequency FAP whose 'naive' FAP is `p`.
    fn naive_single(&self, p: f64) -> f64 {
        -((-p).ln_1p() / self.independent_frequencies).exp_m1()
    }

    /// The top of the power's range.
    fn top(&self) -> f64 {
        match self.normalization {
            PowerNormalization::Standard => 1.0,
            _ => f64::INFINITY,
        }
    }

    /// Where `tau` peaks: past it both `P1` and `tau` fall, so the
    /// 'davies' and 'baluev' FAPs fall strictly, and a level above it is the
    /// one root there.
    fn tau_peak(&self) -> f64 {
        let nk = self.dof_model();
        let z = match self.normalization {
            PowerNormalization::Psd => 0.5,
            PowerNormalization::Standard => 1.0 / nk,
            PowerNormalization::Model => 1.0 / (nk - 1.0),
            PowerNormalization::Log => 2.0 * (1.0 / (2.0 * nk - 1.0)).atanh(),
        };
        if z.is_finite() && z > 0.0 {
            z.min(self.top())
        } else {
            self.top().min(1.0)
        }
    }

    /// The root of `fap(z) = p` for 'davies' or 'baluev', by bisection to
    /// the last bit of `z`. Both FAPs are 1 at `z = 0`; past `tau_peak` they
    /// fall to 0 at the top of the range. When the FAP at `tau_peak` is above
    /// `p` the root is past it (and unique); otherwise it is in
    /// `[0, tau_peak]`, where the FAP goes from 1 to at most `p`.
    fn invert(&self, p: f64, method: FapMethod) -> f64 {
        if p >= 1.0 {
            return 0.0;
        }
        if p <= 0.0 {
            return self.top();
        }
        let fap = |z: f64| self.false_alarm_probability(z, method);
        let peak = self.tau_peak();
        let (mut lo, mut hi) = if fap(peak) > p {
            (peak, self.top())
        } else {
            (0.0, peak)
        };
        if hi.is_infinite() {
            // Grow to a power whose FAP is below p (it falls like e^-z or a
            // power of z): the first of 2x, 4x, ... the naive level.
            hi = self.level_single(self.naive_single(p)).max(lo).max(1.0);
            while fap(hi) > p && hi < f64::MAX / 2.0 {
                lo = hi;
                hi *= 2.0;
            }
        }
        loop {
            let mid = lo + 0.5 * (hi - lo);
            if mid <= lo || mid >= hi {
                break;
            }
            if fap(mid) > p {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        // The end nearer the root.
        if (fap(lo) - p).abs() < (fap(hi) - p).abs() {
            lo
        } else {
            hi
        }
    }
}

/// `fap` of each power in `z` ([`NullDistribution::false_alarm_probability`]),
/// as astropy's `false_alarm_probability(Z, fmax, t, y, dy, normalization,
/// method)` for an analytic method (`y` does not enter them).
pub fn false_alarm_probability(
    z: &[f64],
    fmax: f64,
    t: &[f64],
    dy: Option<&[f64]>,
    normalization: PowerNormalization,
    method: FapMethod,
) -> Result<Vec<f64>> {
    let null = NullDistribution::new(fmax, t, dy, normalization)?;
    if let Some(i) = z.iter().position(|v| v.is_nan()) {
        return Err(Error::invalid(format!("Z[{i}] is NaN")));
    }
    Ok(z.iter()
        .map(|&z| null.false_alarm_probability(z, method))
        .collect())
}

/// The level of each probability in `p` ([`NullDistribution::false_alarm_level`]),
/// as astropy's `false_alarm_level` for an analytic method.
pub fn false_alarm_level(
    p: &[f64],
    fmax: f64,
    t: &[f64],
    dy: Option<&[f64]>,
    normalization: PowerNormalization,
    method: FapMethod,
) -> Result<Vec<f64>> {
    let null = NullDistribution::new(fmax, t, dy, normalization)?;
    p.iter()
        .enumerate()
        .map(|(i, &p)| {
            null.false_alarm_level(p, method).map_err(|e| match e {
                Error::InvalidInput(msg) => {
                    Error::invalid(format!("false_alarm_probability[{i}]: {msg}"))
                }
                other => other,
            })
        })
        .collect()
}

/// The bootstrap's resampling: `resamples` copies of the series, each
/// drawing its samples with replacement (times fixed, values and errors
/// drawn together), from the counter-based generator [`resample_index`]
/// keyed by `seed`, and the periodogram grid astropy's `autopower` takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapOptions {
    /// Number of resampled periodograms (astropy's `n_bootstraps`, default 1000).
    pub resamples: usize,
    pub seed: u64,
    /// Grid points per peak width `1 / baseline` (astropy's default 5).
    pub samples_per_peak: f64,
}

impl Default for BootstrapOptions {
    fn default() -> Self {
        BootstrapOptions {
            resamples: 1000,
            seed: 0,
            samples_per_peak: 5.0,
        }
    }
}

/// The sample that position `i` of resample `r` takes, of `n`: a pure
/// function of (seed, r, i), so every backend and any split of the resamples
/// over GPUs draws the same indices. The first 64 bits of the counter-based
/// draw ([`crate::params::counter_rng::draw`]`(seed, r, i, 0)`, Philox-4x32-10,
/// as the Lorenz 96 noise), mapped to [0, n) by the high half of `bits * n`
/// (a bias of at most n / 2^64). csrc/bootstrap.cu computes it the same way.
pub fn resample_index(seed: u64, r: u64, i: u64, n: u64) -> u64 {
    let w = crate::params::counter_rng::draw(seed, r, i, 0);
    let bits = u64::from(w[0]) << 32 | u64::from(w[1]);
    ((u128::from(bits) * u128::from(n)) >> 64) as u64
}

/// astropy's `autofrequency` for a maximum frequency: cyclic frequencies
/// `fmin + k df`, `k < nf`, with `df = 1 / (baseline samples_per_peak)`,
/// `fmin = df / 2` and `nf = 1 + round((fmax - fmin) / df)` (ties to even,
/// as NumPy rounds). Returns (fmin, df, nf).
pub fn autofrequency(t: &[f64], fmax: f64, samples_per_peak: f64) -> Result<(f64, f64, usize)> {
    let (lo, hi) = t
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let baseline = hi - lo;
    if !(baseline > 0.0 && baseline.is_finite()) {
        return Err(Error::invalid(format!(
            "the times span {}: the frequency grid needs a positive, finite baseline",
            readable(baseline)
        )));
    }
    if !(samples_per_peak.is_finite() && samples_per_peak > 0.0) {
        return Err(Error::invalid(format!(
            "samples_per_peak = {} must be positive",
            readable(samples_per_peak)
        )));
    }
    let df = 1.0 / baseline / samples_per_peak;
    let fmin = 0.5 * df;
    let steps = ((fmax - fmin) / df).round_ties_even();
    if !(fmax.is_finite() && (0.0..1e12).contains(&steps)) {
        return Err(Error::invalid(format!(
            "fmax = {} gives no frequency grid from {} in steps of {}",
            readable(fmax),
            readable(fmin),
            readable(df)
        )));
    }
    Ok((fmin, df, 1 + steps as usize))
}

/// astropy's bootstrap FAP of a power `z` from the maxima of the resampled
/// periodograms: the fraction of maxima not below `z` (`1 -
/// searchsorted(sorted, z) / B`). NaN maxima sort last, as NumPy's do.
pub fn bootstrap_false_alarm_probability(maxima: &[f64], z: f64) -> f64 {
    let below = maxima.iter().filter(|&&m| m < z).count();
    1.0 - below as f64 / maxima.len() as f64
}

/// astropy's bootstrap level of a probability `p`: the sorted maxima at
/// `clip(floor((1 - p) B), 0, B - 1)`.
pub fn bootstrap_false_alarm_level(maxima: &[f64], p: f64) -> f64 {
    let mut sorted = maxima.to_vec();
    sorted.sort_by(|a, b| {
        a.partial_cmp(b)
            .unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
    });
    let b = sorted.len();
    let at = ((1.0 - p) * b as f64).floor().clamp(0.0, (b - 1) as f64) as usize;
    sorted[at]
}

/// The maximum of a resampled periodogram in `normalization`, from its
/// maximum in the 'standard' one (the maps to 'model' and 'log' increase,
/// so they keep the maximum) and, for 'psd', `chi2_ref / 2 = sum w (y - ybar_w)^2 / 2`
/// of the resample (`w = 1 / dy^2`, 1 without errors).
pub fn standard_to(normalization: PowerNormalization, standard: f64, half_chi2_ref: f64) -> f64 {
    match normalization {
        PowerNormalization::Standard => standard,
        PowerNormalization::Model => standard / (1.0 - standard),
        PowerNormalization::Log => -(-standard).ln_1p(),
        PowerNormalization::Psd => standard * half_chi2_ref,
    }
}

/// `sum w (y - ybar_w)^2 / 2` with `ybar_w` the w-weighted mean.
pub fn half_chi2_ref(
    y: impl Iterator<Item = f64> + Clone,
    w: impl Iterator<Item = f64> + Clone,
) -> f64 {
    let (sw, swy) = y
        .clone()
        .zip(w.clone())
        .fold((0.0, 0.0), |(sw, swy), (y, w)| (sw + w, swy + w * y));
    let mean = swy / sw;
    0.5 * y
        .zip(w)
        .map(|(y, w)| w * (y - mean) * (y - mean))
        .sum::<f64>()
}

/// `g(n) = sqrt(2 / n) Gamma(n/2) / Gamma((n-1)/2)` (about `1 - 3 / (4n)`).
fn gamma_factor(n: f64) -> f64 {
    (2.0 / n).sqrt() * ln_gamma_half_step(0.5 * n).exp()
}

/// `ln Gamma(x) - ln Gamma(x - 1/2)` for `x >= 1/2`, to a few ulps of the
/// result: for `x` below 16 through `Gamma(x + 1) = x Gamma(x)` from
/// `x + k >= 16`, and there by the difference of Stirling's series taken
/// term by term, so the large `x ln x` parts cancel exactly rather than in
/// rounding (two separate `ln Gamma` would leave an error of about
/// `eps x ln x`). At `x = 1/2` it is minus infinity (`Gamma(0)` is infinite).
fn ln_gamma_half_step(x: f64) -> f64 {
    const LARGE: f64 = 16.0;
    if x < LARGE {
        // D(x) = D(x + k) - sum_{j<k} [ln(x + j) - ln(x - 1/2 + j)]
        let k = (LARGE - x).ceil();
        let mut correction = 0.0;
        let mut j = 0.0;
        while j < k {
            correction += (x + j).ln() - (x - 0.5 + j).ln();
            j += 1.0;
        }
        return ln_gamma_half_step(x + k) - correction;
    }
    // ln Gamma(z) = (z - 1/2) ln z - z + ln(2 pi)/2 + S(z),
    // S(z) = sum_k B_2k / (2k (2k - 1) z^(2k-1)).
    // (x - 1/2) ln x - (x - 1) ln(x - 1/2) - 1/2
    //   = ln(x) / 2 + (x - 1) ln(x / (x - 1/2)) - 1/2,
    // and (x - 1) ln(x / (x - 1/2)) - 1/2 = (x - 1) u - 1/2 with
    // u = -ln(1 - 1/(2x)) = sum_m 1 / (m (2x)^m): the series is summed
    // without its leading 1/(2x) term, whose (x - 1) multiple is 1/2 - 1/(2x).
    let h = 0.5 / x; // 1/(2x) <= 1/32
    let mut tail = 0.0; // sum_{m >= 2} h^m / m
    let mut power = h * h;
    let mut m = 2.0;
    while power / m > 1e-18 * h {
        tail += power / m;
        power *= h;
        m += 1.0;
    }
    let lead = 0.5 * x.ln() - h + (x - 1.0) * tail;
    lead + stirling_tail(x) - stirling_tail(x - 0.5)
}

/// `S(z)` of Stirling's series for `z >= 15.5`: 8 terms leave under 1e-20.
fn stirling_tail(z: f64) -> f64 {
    // B_2k / (2k (2k - 1)), k = 1..8.
    const C: [f64; 8] = [
        1.0 / 12.0,
        -1.0 / 360.0,
        1.0 / 1260.0,
        -1.0 / 1680.0,
        1.0 / 1188.0,
        -691.0 / 360360.0,
        1.0 / 156.0,
        -3617.0 / 122400.0,
    ];
    let inv = 1.0 / z;
    let inv2 = inv * inv;
    let mut sum = 0.0;
    for c in C.iter().rev() {
        sum = sum * inv2 + c;
    }
    sum * inv
}

#[cfg(test)]
mod tests;
