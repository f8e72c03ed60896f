//! Lomb-Scargle as SciPy >= 1.15 computes it (`scipy.signal.lombscargle`), in f64:
//! a literal two-pass transcription (cos/sin of w t, then of w t - tau), kept
//! independent of the GPU kernel's one-pass rotated form so each checks the other.
//! Inputs are assumed validated (see `api::lombscargle`).
use super::fill_parallel;
use crate::float::{Complex, Float};
pub use crate::params::lombscargle::degenerate_below;
use crate::params::lombscargle::{LombScargleOptions, Normalize, Periodogram};

pub fn lombscargle<T: Float>(
    t: &[T],
    y: &[T],
    weights: Option<&[T]>,
    freqs: &[T],
    opts: &LombScargleOptions,
    progress: Option<&(dyn Fn(u64, u64) + Sync)>,
) -> Periodogram<T> {
    let n = t.len();
    let x: Vec<f64> = t.iter().map(|v| v.to_f64()).collect();
    let mut yv: Vec<f64> = y.iter().map(|v| v.to_f64()).collect();
    let w: Vec<f64> = match weights {
        Some(w) => w.iter().map(|v| v.to_f64()).collect(),
        None => vec![1.0; n],
    };
    let wsum: f64 = w.iter().sum();
    let w: Vec<f64> = w.iter().map(|wi| wi * (1.0 / wsum)).collect();
    if opts.precenter {
        let mean = yv.iter().sum::<f64>() / n as f64;
        yv.iter_mut().for_each(|v| *v -= mean);
    }
    let wy: Vec<f64> = w.iter().zip(&yv).map(|(w, y)| w * y).collect();
    let big_y: f64 = wy.iter().sum();
    // SciPy's YY (minus Y^2 with a floating mean), taken about Y directly so a
    // large offset in y does not cancel it away.
    let about = if opts.floating_mean { big_y } else { 0.0 };
    let yy: f64 = w
        .iter()
        .zip(&yv)
        .map(|(w, y)| w * (y - about) * (y - about))
        .sum();

    let degenerate = degenerate_below(n, f64::EPSILON);
    // (a, b, power before scaling, tau) at angular frequency omega.
    let at = |omega: f64| -> (f64, f64, f64, f64) {
        let fm = opts.floating_mean;
        // First pass: tau from the sums at phase w t.
        let (mut c, mut s, mut cc, mut cs) = (0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            let (sn, cn) = (omega * x[i]).sin_cos();
            c += w[i] * cn;
            s += w[i] * sn;
            cc += w[i] * cn * cn;
            cs += w[i] * cn * sn;
        }
        let mut ss = 1.0 - cc;
        if fm {
            cc -= c * c;
            ss -= s * s;
            cs -= c * s;
        }
        let tau = 0.5 * (2.0 * cs).atan2(cc - ss);
        // Second pass at phase w t - tau, where the cross term vanishes.
        let (mut yc, mut ys, mut cc, mut c, mut s) = (0.0, 0.0, 0.0, 0.0, 0.0);
        for i in 0..n {
            let (sn, cn) = (omega * x[i] - tau).sin_cos();
            yc += wy[i] * cn;
            ys += wy[i] * sn;
            cc += w[i] * cn * cn;
            c += w[i] * cn;
            s += w[i] * sn;
        }
        let mut ss = 1.0 - cc;
        if fm {
            yc -= big_y * c;
            ys -= big_y * s;
            cc -= c * c;
            ss -= s * s;
        }
        let a = if cc > degenerate { yc / cc } else { 0.0 };
        let b = if ss > degenerate { ys / ss } else { 0.0 };
        (a, b, 2.0 * (a * yc + b * ys), tau)
    };

    let chunk = 64;
    match opts.normalize {
        Normalize::Amplitude => {
            let mut out = vec![Complex::<T>::default(); freqs.len()];
            fill_parallel(&mut out, chunk, progress, |k| {
                let (a, b, _, tau) = at(freqs[k].to_f64());
                let (sn, cn) = tau.sin_cos();
                Complex {
                    re: T::from_f64(a * cn - b * sn),
                    im: T::from_f64(a * sn + b * cn),
                }
            });
            Periodogram::Complex(out)
        }
        mode => {
            let scale = match mode {
                Normalize::Power => n as f64 / 4.0,
                _ => 0.5 / yy,
            };
            let mut out = vec![T::default(); freqs.len()];
            fill_parallel(&mut out, chunk, progress, |k| {
                T::from_f64(at(freqs[k].to_f64()).2 * scale)
            });
            Periodogram::Real(out)
        }
    }
}
