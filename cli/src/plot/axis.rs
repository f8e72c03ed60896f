//! Axis ranges and ticks. Everything here works in *axis space*: the data value
//! itself on a linear axis, its log10 on a log axis.

use super::Scale;

/// Pins data to +-1e300, so that spans and pixel offsets never overflow to infinity.
pub(crate) fn pin(v: f64) -> f64 {
    v.clamp(-1e300, 1e300)
}

/// `v` in axis space, or `None` where the axis cannot show it (non-finite, or
/// not positive on a log axis).
pub(crate) fn to_axis(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        _ if !v.is_finite() => None,
        Scale::Linear => Some(pin(v)),
        Scale::Log if v > 0.0 => Some(v.log10()),
        Scale::Log => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Range {
    pub lo: f64,
    pub hi: f64,
}

impl Range {
    pub(crate) const EMPTY: Range = Range {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    pub(crate) fn include(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    pub(crate) fn span(&self) -> f64 {
        self.hi - self.lo
    }

    /// A range with a usable span: empty gives 0..1, a single value is padded
    /// around it, and everything is pinned so that spans and steps stay finite
    /// and normal.
    fn widened(self) -> Range {
        if self.is_empty() {
            return Range { lo: 0.0, hi: 1.0 };
        }
        let (lo, hi) = (pin(self.lo), pin(self.hi));
        let mid = lo / 2.0 + hi / 2.0;
        if hi - lo > mid.abs() * 1e-12 && hi - lo > 1e-300 {
            return Range { lo, hi };
        }
        let pad = if mid.abs() > 1e-300 {
            mid.abs() * 0.1
        } else {
            1.0
        };
        Range {
            lo: mid - pad,
            hi: mid + pad,
        }
    }
}

/// How an axis meets its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fit {
    /// Ends exactly at the data, with ticks inside: a frequency grid fills the
    /// width instead of leaving empty bands at the sides.
    Tight,
    /// Extends to the enclosing ticks, so the top of the curve sits under a
    /// labelled value.
    Loose,
}

/// Tick positions (axis space) with their labels, and the range the axis spans.
pub(crate) struct Axis {
    pub range: Range,
    pub values: Vec<f64>,
    pub labels: Vec<String>,
}

impl Axis {
    pub(crate) fn new(scale: Scale, data: Range, fit: Fit) -> Axis {
        match scale {
            Scale::Linear => Axis::linear(data, fit),
            Scale::Log => Axis::log(data, fit),
        }
    }

    /// Ticks at multiples of a 1, 2 or 5 x 10^k step, 5 to 8 of them where the
    /// 1-2-5 series allows (aiming for 6).
    fn linear(data: Range, fit: Fit) -> Axis {
        const TARGET: f64 = 6.0;
        let data = data.widened();
        let base = 10f64.powi(data.span().log10().floor() as i32 - 2);
        let candidates = [1.0, 10.0, 100.0, 1000.0]
            .into_iter()
            .flat_map(|decade| [1.0, 2.0, 5.0].map(|mantissa| base * decade * mantissa));
        let score = |step: f64| {
            let (first, last) = tick_indices(data, step, fit);
            let count = last - first + 1.0;
            // Outside 5..=8 only as a last resort.
            let penalty = if (5.0..=8.0).contains(&count) {
                0.0
            } else {
                100.0
            };
            (count - TARGET).abs() + penalty
        };
        let step = candidates
            .min_by(|a, b| score(*a).total_cmp(&score(*b)))
            .expect("there are always candidate steps");

        let (first, last) = tick_indices(data, step, fit);
        // Multiply rather than accumulate, so that rounding errors do not add up.
        let values: Vec<f64> = (0..=(last - first) as i64)
            .map(|i| (first + i as f64) * step)
            .collect();
        let range = match (fit, values.first(), values.last()) {
            (Fit::Loose, Some(&lo), Some(&hi)) => Range { lo, hi },
            _ => data,
        };
        let labels = tick_labels(&values, step);
        Axis {
            range,
            values,
            labels,
        }
    }

    /// `data` holds log10 values. Ticks at powers of ten (every k-th one when
    /// there are more than 8), with 2 and 5 times them when the axis spans at
    /// most two decades; a loose axis ends on whole decades.
    fn log(data: Range, fit: Fit) -> Axis {
        let data = data.widened();
        let range = match fit {
            Fit::Loose => {
                let lo = (data.lo + 1e-9).floor();
                Range {
                    lo,
                    hi: (data.hi - 1e-9).ceil().max(lo + 1.0),
                }
            }
            Fit::Tight => data,
        };
        let decade_step = (range.span() / 8.0).ceil().max(1.0) as i64;
        let mantissas: &[f64] = if range.span() <= 2.0 + 1e-9 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let inside = |v: f64| v >= range.lo - 1e-9 && v <= range.hi + 1e-9;
        let mut ticks = Vec::new();
        for k in range.lo.floor() as i64..=range.hi.ceil() as i64 {
            if k.rem_euclid(decade_step) != 0 {
                continue;
            }
            for &m in mantissas {
                let v = k as f64 + m.log10();
                if inside(v) {
                    ticks.push((v, log_label(m, k)));
                }
            }
        }
        // A tight axis inside one decade may hold no round value at all.
        if ticks.len() < 2 {
            ticks = [range.lo, range.hi]
                .iter()
                .map(|&v| (v, format!("{:.2}", 10f64.powf(v))))
                .collect();
        }
        let (values, labels) = ticks.into_iter().unzip();
        Axis {
            range,
            values,
            labels,
        }
    }
}

/// `m` x 10^`k` as plain decimals when short, else as "2e-7".
fn log_label(m: f64, k: i64) -> String {
    if (-4..=5).contains(&k) {
        let decimals = (-k).max(0) as usize;
        format!("{:.decimals$}", m * 10f64.powi(k as i32))
    } else {
        format!("{m}e{k}")
    }
}

/// The first and last multiples of `step` on the axis. The 1e-9 slack keeps
/// rounding (0.6 / 0.2 = 2.9999999999999996) from dropping or adding a tick.
fn tick_indices(data: Range, step: f64, fit: Fit) -> (f64, f64) {
    let (lo, hi) = (data.lo / step, data.hi / step);
    match fit {
        Fit::Tight => ((lo - 1e-9).ceil(), (hi + 1e-9).floor()),
        Fit::Loose => ((lo + 1e-9).floor(), (hi - 1e-9).ceil()),
    }
}

/// Labels with just enough decimals to tell ticks apart; scientific notation when
/// plain decimals would be unreadably long.
fn tick_labels(values: &[f64], step: f64) -> Vec<String> {
    let step_exp = step.log10().floor() as i32;
    let max_abs = values.iter().fold(0.0, |m: f64, v| m.max(v.abs()));
    let max_exp = if max_abs > 0.0 {
        max_abs.log10().floor() as i32
    } else {
        step_exp
    };
    let scientific = step_exp < -4 || max_exp >= 6;
    values
        .iter()
        .map(|&v| {
            if v == 0.0 {
                "0".to_string()
            } else if scientific {
                // {:e} normalises each value, so the digits needed depend on its own exponent.
                let digits = (v.abs().log10().floor() as i32 - step_exp).max(0) as usize;
                format!("{v:.digits$e}")
            } else {
                let decimals = (-step_exp).max(0) as usize;
                format!("{v:.decimals$}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(lo: f64, hi: f64, fit: Fit) -> Axis {
        Axis::linear(Range { lo, hi }, fit)
    }

    fn is_1_2_5(step: f64) -> bool {
        let mantissa = step / 10f64.powi(step.log10().floor() as i32);
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|m| (mantissa - m).abs() < 1e-9)
    }

    #[test]
    fn loose_ticks_enclose_the_data_with_5_to_8_round_values() {
        for (lo, hi) in [
            (0.0, 1.0),
            (0.0, 0.37),
            (0.013, 9.87),
            (-3.2, 7.9),
            (1e-7, 3e-7),
            (12345.0, 12400.0),
            (0.0, 1.0e9),
            (-1.0, -0.999),
        ] {
            let a = axis(lo, hi, Fit::Loose);
            let t = &a.values;
            assert!((5..=8).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            assert_eq!(
                a.range,
                Range {
                    lo: t[0],
                    hi: *t.last().unwrap()
                }
            );
            assert!(is_1_2_5(t[1] - t[0]), "{lo}..{hi}: {t:?}");
        }
        let a = axis(0.0, 1.0, Fit::Loose);
        assert_eq!(a.values, [0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]);
        assert_eq!(a.labels, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        assert_eq!(
            axis(-3.2, 7.9, Fit::Loose).values,
            [-4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]
        );
        // Rounding in 0.6 / 0.2 must not add a tick past 0.6.
        assert_eq!(*axis(0.0, 0.6, Fit::Loose).labels.last().unwrap(), "0.6");
    }

    #[test]
    fn tight_ticks_stay_inside_the_data() {
        for (lo, hi) in [(0.0, 1.0), (0.01, 2.01), (0.013, 9.87), (12345.0, 12400.0)] {
            let a = axis(lo, hi, Fit::Tight);
            let t = &a.values;
            assert!((4..=8).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(t[0] >= lo && *t.last().unwrap() <= hi, "{lo}..{hi}: {t:?}");
            assert_eq!(a.range, Range { lo, hi });
            assert!(is_1_2_5(t[1] - t[0]), "{lo}..{hi}: {t:?}");
        }
        assert_eq!(
            axis(0.01, 2.01, Fit::Tight).labels,
            ["0.5", "1.0", "1.5", "2.0"]
        );
        // Rounding in 0.6 / 0.2 must not drop the tick at 0.6.
        assert_eq!(*axis(0.0, 0.6, Fit::Tight).labels.last().unwrap(), "0.6");
    }

    #[test]
    fn tick_labels_switch_to_scientific_for_extreme_magnitudes() {
        let labels = axis(1e-7, 3e-7, Fit::Loose).labels;
        assert!(labels.iter().all(|l| l.contains('e')), "{labels:?}");
        assert_eq!(axis(0.0, 2.0e9, Fit::Loose).labels[1], "5e8");
        assert_eq!(axis(0.0, 2.0e9, Fit::Loose).labels[3], "1.5e9");
    }

    #[test]
    fn log_ticks_are_decades_or_1_2_5_and_loose_axes_end_on_decades() {
        let log = |lo: f64, hi: f64, fit| Axis::log(Range { lo, hi }, fit);
        // 3e-4 .. 2e5: 10 decades, every second one labelled.
        let a = log(3e-4f64.log10(), 2e5f64.log10(), Fit::Loose);
        assert_eq!(a.range, Range { lo: -4.0, hi: 6.0 });
        assert_eq!(a.labels, ["0.0001", "0.01", "1", "100", "10000", "1e6"]);
        // 0.03 .. 0.4: two decades get 2 and 5 as well.
        let a = log(0.03f64.log10(), 0.4f64.log10(), Fit::Loose);
        assert_eq!(a.labels, ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]);
        // Tight: only ticks inside; extreme exponents in e-notation.
        let a = log(-12.5, -9.5, Fit::Tight);
        assert_eq!(a.labels, ["1e-12", "1e-11", "1e-10"]);
        // Inside one decade with no round value: the ends are labelled.
        assert_eq!(log(0.4, 0.6, Fit::Tight).labels.len(), 2);
        assert!(
            log(f64::INFINITY, f64::NEG_INFINITY, Fit::Loose)
                .values
                .len()
                >= 2
        );
    }
}
