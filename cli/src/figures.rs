//! The figures the commands draw, built from the panels of [`crate::plot`].
//! This module only arranges data into panels; layout and drawing live in plot/.

use std::f64::consts::TAU;
use std::path::Path;

use kernpack::params::phasefold::phase_bin;

use crate::io::SeriesData;
use crate::plot::{self, palette, Figure, HeatMap, Panel, Series, SeriesKind};

/// Phases at which the fitted sinusoid is drawn.
const CURVE_POINTS: usize = 201;
/// Most histogram bins.
const MAX_BINS: usize = 40;

/// Periodogram panel (frequency in cycles per time unit vs power, best peak marked
/// with "best period P") above a panel with the light curve folded at the best
/// period: phase 0..1 on x, y on y, the samples as points and the fitted sinusoid
/// (weighted least squares y = c + a cos(2 pi f t) + b sin(2 pi f t) at best_freq) as a line.
///
/// `y_label` labels the periodogram's power axis ("power", "normalized power",
/// "|amplitude|"); the folded panel's vertical axis is the series' "y". Phase is
/// frac(best_freq * t). The series' weights (1/sigma^2) are those of the fit; a
/// non-finite or non-positive best frequency leaves the periodogram unmarked and
/// the folded panel empty.
pub fn periodogram(
    title: &str,
    y_label: &str,
    freqs: &[f64],
    power: &[f64],
    best_freq: f64,
    series: &SeriesData,
) -> Figure {
    let (t, y, w) = (&series.t[..], &series.y[..], series.w.as_deref());
    let mut spectrum = Panel::new(
        "Lomb-Scargle periodogram",
        "frequency (cycles per time unit)",
        y_label,
    );
    spectrum.series = vec![Series::new(SeriesKind::Line, "", freqs, power)];
    let best = (best_freq.is_finite() && best_freq > 0.0).then_some(best_freq);
    let Some(f) = best else {
        let folded = Panel::new("light curve (not folded: no period found)", "phase", "y");
        return figure(title, vec![spectrum, folded]);
    };
    let period = significant(1.0 / f, 6);
    spectrum.markers = vec![(f, format!("best period {period}"))];

    let mut folded = Panel {
        x_include: Some((0.0, 1.0)),
        ..Panel::new(folded_title(1.0 / f), "phase", "y")
    };
    if t.len() == y.len() {
        let phase: Vec<f64> = t.iter().map(|t| (t * f).rem_euclid(1.0)).collect();
        let samples = Series::new(SeriesKind::Points, "samples", phase, y);
        folded.series.push(samples);
    }
    if let Some((c, a, b)) = fit_sinusoid(t, y, w, f) {
        let phase: Vec<f64> = (0..CURVE_POINTS)
            .map(|i| i as f64 / (CURVE_POINTS - 1) as f64)
            .collect();
        let curve: Vec<f64> = phase
            .iter()
            .map(|p| c + a * (TAU * p).cos() + b * (TAU * p).sin())
            .collect();
        folded.series.push(Series {
            colour: palette::ORANGE,
            ..Series::new(SeriesKind::Line, "fitted sinusoid", phase, curve)
        });
    }
    figure(title, vec![spectrum, folded])
}

/// The best box of a transit search: its period, duration, mid-transit time
/// and depth (in units of the light curve).
#[derive(Clone, Copy, Debug)]
pub struct BoxFit {
    pub period: f64,
    pub duration: f64,
    pub transit_time: f64,
    pub depth: f64,
}

/// Transit search panel (period vs power, the best period marked) above a
/// panel with the light curve folded at the best period: time from mid-transit
/// (-period/2 .. period/2) on x, y on y, the samples as points and the box
/// model as a line: the weighted mean of the samples out of transit (weights
/// `1 / dy^2` from the series' third column), `depth` lower within
/// `duration / 2` of mid-transit. Without a fit (no box at any period) the
/// spectrum is unmarked and the folded panel empty.
pub fn transit_search(
    title: &str,
    periods: &[f64],
    power: &[f64],
    fit: Option<BoxFit>,
    series: &SeriesData,
) -> Figure {
    let (t, y) = (&series.t[..], &series.y[..]);
    let usable = fit.filter(|f| f.period.is_finite() && f.period > 0.0 && f.duration.is_finite());
    let spectrum = period_spectrum(
        "box least squares spectrum",
        "power",
        periods,
        power,
        usable.map(|f| f.period),
    );
    let Some(fit) = usable else {
        let folded = Panel::new(
            "light curve (not folded: no transit found)",
            "time from mid-transit",
            "y",
        );
        return figure(title, vec![spectrum, folded]);
    };
    let half = 0.5 * fit.period;
    let offset = |t: f64| (t - fit.transit_time + half).rem_euclid(fit.period) - half;
    let mut folded = Panel {
        x_include: Some((-half, half)),
        ..Panel::new(folded_title(fit.period), "time from mid-transit", "y")
    };
    if t.len() != y.len() {
        return figure(title, vec![spectrum, folded]);
    }
    let x: Vec<f64> = t.iter().map(|t| offset(*t)).collect();
    // The level out of transit: the weighted mean there (of every sample when none is out).
    let level = |keep: &dyn Fn(usize) -> bool| {
        let (mut sw, mut swy) = (0.0, 0.0);
        for i in (0..y.len()).filter(|&i| keep(i)) {
            sw += dy_weight(series, i);
            swy += dy_weight(series, i) * y[i];
        }
        (sw > 0.0).then(|| swy / sw)
    };
    let d = 0.5 * fit.duration;
    let out = level(&|i| x[i].abs() >= d).or_else(|| level(&|_| true));
    folded
        .series
        .push(Series::new(SeriesKind::Points, "samples", x, y));
    if let Some(out) = out.filter(|_| fit.depth.is_finite()) {
        let inside = out - fit.depth;
        folded.series.push(Series {
            colour: palette::ORANGE,
            ..Series::new(
                SeriesKind::Line,
                "box model",
                vec![-half, -d, -d, d, d, half],
                vec![out, out, inside, inside, out, out],
            )
        });
    }
    figure(title, vec![spectrum, folded])
}

/// Where a phase-folding search folds the light curve: the best frequency,
/// the statistic's phase bins, and whether the bins' means are weighted by
/// `1 / dy^2` (PDM's, from the series' third column) or plain (CE's).
#[derive(Clone, Copy, Debug)]
pub struct Fold {
    pub frequency: f64,
    pub bins: usize,
    pub weighted: bool,
}

/// Phase-folding search panel (titled `panel_title`: the statistic
/// `y_label` against period, 1 / frequency, lower at a better period, the
/// best period marked) above a panel with the light curve folded at the best
/// frequency f: phase frac((t - min t) f) on x (the statistic's phase, see
/// `kernpack::params::phasefold`), y on y, the samples as points and the
/// mean of each of the statistic's phase bins as a step line. Without a fold
/// (no best period) the spectrum is unmarked and the folded panel empty.
pub fn phase_fold_search(
    title: &str,
    panel_title: &str,
    y_label: &str,
    freqs: &[f64],
    values: &[f64],
    fold: Option<Fold>,
    series: &SeriesData,
) -> Figure {
    let (t, y) = (&series.t[..], &series.y[..]);
    let periods: Vec<f64> = freqs.iter().map(|f| 1.0 / f).collect();
    let usable = fold.filter(|f| f.frequency.is_finite() && f.frequency > 0.0 && f.bins > 0);
    let best = usable.map(|f| 1.0 / f.frequency);
    let mut spectrum = period_spectrum(panel_title, y_label, &periods, values, best);
    // A uniform grid in frequency crowds its short periods together on a
    // linear axis: a log one when the periods span more than a decade.
    let (lo, hi) = plot::extent(
        periods
            .iter()
            .copied()
            .filter(|p| p.is_finite() && *p > 0.0),
    );
    spectrum.log_x = hi > 10.0 * lo;
    let Some(fold) = usable else {
        let folded = Panel::new("light curve (not folded: no period found)", "phase", "y");
        return figure(title, vec![spectrum, folded]);
    };
    let mut folded = Panel {
        x_include: Some((0.0, 1.0)),
        ..Panel::new(folded_title(1.0 / fold.frequency), "phase", "y")
    };
    if t.len() != y.len() {
        return figure(title, vec![spectrum, folded]);
    }
    let t0 = plot::extent(t.iter().copied()).0;
    let (mut sw, mut swy) = (vec![0.0; fold.bins], vec![0.0; fold.bins]);
    let mut phase = Vec::with_capacity(t.len());
    for i in 0..t.len() {
        let x = (t[i] - t0) * fold.frequency;
        phase.push(x - x.floor());
        let b = phase_bin(t[i] - t0, fold.frequency, fold.bins);
        let w = if fold.weighted {
            dy_weight(series, i)
        } else {
            1.0
        };
        sw[b] += w;
        swy[b] += w * y[i];
    }
    folded
        .series
        .push(Series::new(SeriesKind::Points, "samples", phase, y));
    // A step per bin; an empty bin has no mean (NaN: the line passes over it).
    let width = 1.0 / fold.bins as f64;
    let (mut x, mut means) = (Vec::new(), Vec::new());
    for b in 0..fold.bins {
        let mean = if sw[b] > 0.0 {
            swy[b] / sw[b]
        } else {
            f64::NAN
        };
        x.extend([b as f64 * width, (b + 1) as f64 * width]);
        means.extend([mean, mean]);
    }
    folded.series.push(Series {
        colour: palette::ORANGE,
        ..Series::new(SeriesKind::Line, "bin means", x, means)
    });
    figure(title, vec![spectrum, folded])
}

/// A search's `y_label` against trial period, titled `title`, with `best`
/// marked ("best period P") when given; values that are not finite (periods
/// without a box, or without a statistic) are not drawn.
fn period_spectrum(
    title: &str,
    y_label: &str,
    periods: &[f64],
    values: &[f64],
    best: Option<f64>,
) -> Panel {
    let mut spectrum = Panel::new(title, "period (time units)", y_label);
    spectrum.series = vec![Series::new(SeriesKind::Line, "", periods, values)];
    if let Some(period) = best {
        let label = format!("best period {}", significant(period, 6));
        spectrum.markers = vec![(period, label)];
    }
    spectrum
}

/// The title of a light curve folded at `period`.
fn folded_title(period: f64) -> String {
    format!("light curve folded at period {}", significant(period, 6))
}

/// Sample `i`'s weight `1 / dy^2`, `dy` the series' third column (1 without one).
fn dy_weight(series: &SeriesData, i: usize) -> f64 {
    match &series.w {
        Some(dy) if dy.len() == series.y.len() => 1.0 / (dy[i] * dy[i]),
        _ => 1.0,
    }
}

fn figure(title: &str, panels: Vec<Panel>) -> Figure {
    let title = title.into();
    Figure { title, panels }
}

/// Histogram of the best periods of many series (log-spaced bins when they span more than a decade).
///
/// Non-finite and non-positive periods (series without a peak) are left out
/// and counted in the panel's title.
pub fn best_periods(title: &str, periods: &[f64]) -> Figure {
    let valid: Vec<f64> = periods
        .iter()
        .copied()
        .filter(|p| p.is_finite() && *p > 0.0)
        .collect();
    let missing = periods.len() - valid.len();
    let mut panel_title = format!("best periods of {} series", valid.len());
    if missing > 0 {
        panel_title.push_str(&format!(" ({missing} without one)"));
    }
    let mut panel = Panel::new(panel_title, "best period (time units)", "number of series");
    if valid.is_empty() {
        return figure(title, vec![panel]);
    }
    let (lo, hi) = plot::extent(valid.iter().copied());
    let log = hi > 10.0 * lo;
    // Map to a space where the bins are equal: log10 when they are log-spaced.
    let warp = |p: f64| if log { p.log10() } else { p };
    let unwarp = |v: f64| if log { 10f64.powf(v) } else { v };
    let (mut a, mut b) = (warp(lo), warp(hi));
    if b <= a {
        // All periods equal: one bin around them.
        (a, b) = (warp(lo * 0.95), warp(lo * 1.05));
    }
    let bins = ((valid.len() as f64).sqrt().ceil() as usize).clamp(1, MAX_BINS);
    let mut counts = vec![0.0; bins];
    for p in &valid {
        let k = ((warp(*p) - a) / (b - a) * bins as f64).floor();
        counts[(k.max(0.0) as usize).min(bins - 1)] += 1.0;
    }
    // Multiply rather than accumulate; the ends are the data's own values.
    let mut edges: Vec<f64> = (0..=bins)
        .map(|i| unwarp(a + (b - a) * i as f64 / bins as f64))
        .collect();
    edges[0] = unwarp(a);
    edges[bins] = unwarp(b);
    panel.series = vec![Series::new(SeriesKind::Bars, "", edges, counts)];
    panel.log_x = log;
    figure(title, vec![panel])
}

/// Lorenz ensembles: Hovmoller panel of the ensemble mean (`frames` x `n` row-major, time down,
/// site across) above a line panel of the ensemble spread against time
/// (`spread[f]` = RMS over sites of the standard deviation across members at frame f; `times[f]`).
///
/// Each heat-map row is centred on its time (frame index when `times` does not
/// hold `frames` finite values), each column on its site. The spread is drawn on
/// a log axis when it is positive and spans more than two decades (a small
/// perturbation growing in a chaotic system).
pub fn lorenz(
    title: &str,
    frames: usize,
    n: usize,
    mean: &[f64],
    times: &[f64],
    spread: &[f64],
) -> Figure {
    let valid_times = times.len() == frames && frames > 0 && times.iter().all(|t| t.is_finite());
    let y_extent = if valid_times {
        let (first, last) = (times[0], times[frames - 1]);
        let half = if frames > 1 {
            (last - first) / (frames - 1) as f64 / 2.0
        } else {
            0.5
        };
        (first - half, last + half)
    } else {
        (-0.5, frames as f64 - 0.5)
    };
    let heat = HeatMap {
        rows: frames,
        cols: n,
        values: mean.to_vec(),
        x_extent: (-0.5, n as f64 - 0.5),
        y_extent,
    };
    let time_label = if valid_times { "time" } else { "frame" };
    let mean_panel = Panel {
        heat: Some(heat),
        ..Panel::new("ensemble mean", "site", time_label)
    };

    let mut spread_panel = Panel::new(
        "ensemble spread: RMS over sites of the members' std. dev.",
        "time",
        "spread",
    );
    spread_panel.series = vec![Series::new(SeriesKind::Line, "", times, spread)];
    // (inf, -inf) without a finite value: linear.
    let (lo, hi) = plot::extent(spread.iter().copied().filter(|s| s.is_finite()));
    spread_panel.log_y = lo > 0.0 && hi > 100.0 * lo;
    figure(title, vec![mean_panel, spread_panel])
}

/// The coupled F/G system: |delta(t)| on a log y axis.
pub fn fg_delta(title: &str, t: &[f64], abs_delta: &[f64]) -> Figure {
    let panel = Panel {
        log_y: true,
        series: vec![Series::new(SeriesKind::Line, "", t, abs_delta)],
        ..Panel::new("|delta(t)| = |sum of F|", "t", "|delta|")
    };
    figure(title, vec![panel])
}

/// Refuses, before any work, the `outputs` given and the `plot` path if they
/// cannot be written: what [`crate::io::check_output`] refuses, and a plot's
/// unknown extension.
pub fn check_outputs(outputs: &[Option<&Path>], plot: Option<&Path>) -> Result<(), String> {
    for path in outputs.iter().flatten() {
        crate::io::check_output(path)?;
    }
    if let Some(path) = plot {
        plot::is_svg(path)?;
        crate::io::check_output(path)?;
    }
    Ok(())
}

/// The ensemble mean (`frames` x `n`, row-major) and spread per frame (RMS over
/// sites of the sample standard deviation across members; 0 for one member) of
/// `traj`, which holds `frames` x `members` x `n` values, row-major. Frames that
/// `traj` is too short for are NaN.
pub fn ensemble_spread(
    traj: &[f64],
    frames: usize,
    members: usize,
    n: usize,
) -> (Vec<f64>, Vec<f64>) {
    let mut mean = vec![f64::NAN; frames * n];
    let mut spread = vec![f64::NAN; frames];
    let len = members * n;
    if len == 0 {
        return (mean, spread);
    }
    for (f, states) in traj.chunks_exact(len).take(frames).enumerate() {
        let mut sum_var = 0.0;
        for i in 0..n {
            let site = || states[i..].iter().step_by(n);
            let m = site().sum::<f64>() / members as f64;
            let var = if members > 1 {
                site().map(|v| (v - m) * (v - m)).sum::<f64>() / (members - 1) as f64
            } else {
                0.0
            };
            mean[f * n + i] = m;
            sum_var += var;
        }
        spread[f] = (sum_var / n as f64).sqrt();
    }
    (mean, spread)
}

/// Weighted least squares y = c + a cos(2 pi f t) + b sin(2 pi f t): (c, a, b).
/// Samples with a non-finite t, y or weight, or a weight <= 0, are left out;
/// `None` when the lengths differ or the samples do not determine the fit.
pub fn fit_sinusoid(t: &[f64], y: &[f64], w: Option<&[f64]>, f: f64) -> Option<(f64, f64, f64)> {
    if t.len() != y.len() || w.is_some_and(|w| w.len() != t.len()) || !f.is_finite() {
        return None;
    }
    // Normal equations: (sum w b b^T) x = sum w y b, with b = (1, cos, sin).
    let (mut m, mut rhs) = ([[0.0f64; 3]; 3], [0.0; 3]);
    for i in 0..t.len() {
        let wi = w.map_or(1.0, |w| w[i]);
        if !(t[i].is_finite() && y[i].is_finite() && wi.is_finite() && wi > 0.0) {
            continue;
        }
        let phase = TAU * (f * t[i]).rem_euclid(1.0);
        let basis = [1.0, phase.cos(), phase.sin()];
        for r in 0..3 {
            for c in 0..3 {
                m[r][c] += wi * basis[r] * basis[c];
            }
            rhs[r] += wi * basis[r] * y[i];
        }
    }
    solve3(m, rhs).map(|[c, a, b]| (c, a, b))
}

/// The solution of `m x = rhs` by Cramer's rule: the cross products of the
/// rows of `m` are the columns of its adjugate. `None` when `m` is
/// (numerically) singular.
fn solve3(m: [[f64; 3]; 3], rhs: [f64; 3]) -> Option<[f64; 3]> {
    let cross = |u: [f64; 3], v: [f64; 3]| {
        [0, 1, 2].map(|i| u[(i + 1) % 3] * v[(i + 2) % 3] - u[(i + 2) % 3] * v[(i + 1) % 3])
    };
    let adjugate = [cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1])];
    let det: f64 = (0..3).map(|i| m[0][i] * adjugate[0][i]).sum();
    let scale = m.iter().flatten().fold(0.0f64, |s, v| s.max(v.abs()));
    // NaN (from overflowing sums) passes here and fails the final check.
    if det.abs() <= 1e-12 * scale.powi(3) {
        return None;
    }
    let x = [0, 1, 2].map(|i| (0..3).map(|k| adjugate[k][i] * rhs[k]).sum::<f64>() / det);
    x.iter().all(|v| v.is_finite()).then_some(x)
}

/// `v` with `digits` significant digits, in plain decimals where that is short.
fn significant(v: f64, digits: i32) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v}");
    }
    let exponent = v.abs().log10().floor() as i32;
    if (-4..9).contains(&exponent) {
        let decimals = (digits - 1 - exponent).max(0) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.*e}", (digits - 1) as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plot::testing::{render, svg_lines, svg_texts, to_png, to_svg, Image};
    use crate::synthetic::Uniform;
    use plotters::style::RGBColor;

    const MARKER: RGBColor = palette::RED;
    const POINTS: RGBColor = palette::GREY;
    const CURVE: RGBColor = palette::ORANGE;
    const LINE: RGBColor = palette::BLUE;

    /// The demo's data: an irregular light curve of period 3.7 with uneven errors.
    fn light_curve(samples: usize) -> SeriesData {
        let mut rng = Uniform::new(7);
        let (mut t, mut y, mut w) = (vec![], vec![], vec![]);
        for i in 0..samples {
            let ti = (i % 3) as f64 * 365.0 + rng.next() * 120.0;
            let sigma = 0.05 + 0.1 * rng.next();
            t.push(ti);
            y.push(12.0 + 0.8 * (TAU * ti / 3.7 + 0.4).sin() + sigma * rng.normal());
            w.push(1.0 / (sigma * sigma));
        }
        SeriesData { t, y, w: Some(w) }
    }

    /// A periodogram-like spectrum with one sharp peak at `peak`.
    fn spectrum(nf: usize, peak: f64) -> (Vec<f64>, Vec<f64>) {
        let freqs: Vec<f64> = (0..nf)
            .map(|k| 0.0025 + 2.0 * k as f64 / nf as f64)
            .collect();
        let power = freqs
            .iter()
            .map(|f| {
                0.05 + 0.03 * (f * 40.0).sin().abs() + 0.8 * (-((f - peak) * 300.0).powi(2)).exp()
            })
            .collect();
        (freqs, power)
    }

    #[test]
    fn the_fit_recovers_known_coefficients_and_refuses_underdetermined_data() {
        let (c, a, b, f) = (12.0, -0.3, 0.7, 1.0 / 3.7);
        let t: Vec<f64> = (0..50)
            .map(|i| 0.37 * i as f64 + 0.01 * (i * i) as f64)
            .collect();
        let y: Vec<f64> = t
            .iter()
            .map(|t| c + a * (TAU * f * t).cos() + b * (TAU * f * t).sin())
            .collect();
        let w: Vec<f64> = (0..50).map(|i| 1.0 + (i % 5) as f64).collect();
        for weights in [None, Some(&w[..])] {
            let (fc, fa, fb) = fit_sinusoid(&t, &y, weights, f).unwrap();
            assert!((fc - c).abs() < 1e-9 && (fa - a).abs() < 1e-9 && (fb - b).abs() < 1e-9);
        }
        // Outliers with a zero, negative or NaN weight, and NaN samples, do not matter.
        let (mut y2, mut w2) = (y.clone(), w.clone());
        (y2[3], w2[3]) = (1e6, 0.0);
        (y2[4], w2[4]) = (-1e6, -1.0);
        (y2[5], w2[5]) = (1e6, f64::NAN);
        y2[6] = f64::NAN;
        let (fc, _, _) = fit_sinusoid(&t, &y2, Some(&w2), f).unwrap();
        assert!((fc - c).abs() < 1e-9);
        assert_eq!(fit_sinusoid(&t[..2], &y[..2], None, f), None);
        assert_eq!(fit_sinusoid(&t, &y[1..], None, f), None);
        assert_eq!(fit_sinusoid(&[], &[], None, f), None);
        // Samples all at one phase cannot separate c, a and b.
        let same: Vec<f64> = (0..10).map(|i| i as f64 * 3.7).collect();
        assert_eq!(fit_sinusoid(&same, &[1.0; 10], None, f), None);
    }

    #[test]
    fn periodogram_png_marks_the_peak_and_the_fit_follows_the_sinusoid() {
        let lc = light_curve(300);
        let best = 1.0 / 3.7;
        let (freqs, power) = spectrum(20_000, best);
        let figure = periodogram("demo", "normalized power", &freqs, &power, best, &lc);
        let (image, frames) = render(&figure);
        assert_eq!(image.width, plot::WIDTH as usize);
        assert!(image.height > 2 * plot::PANEL_HEIGHT as usize);
        let (top, folded) = (&frames[0], &frames[1]);

        // The dashed marker runs down the best frequency's column, under the
        // spectrum: visible above its peak and below its floor, and nowhere else.
        let peak_row = top.py(power.iter().cloned().fold(0.0, f64::max));
        let floor_row = top.py(power.iter().cloned().fold(1.0, f64::min));
        let marker = image.rows_with(top.px(best), top.top..top.bottom, MARKER);
        assert!(
            marker.iter().any(|&r| (r as f64) < peak_row - 2.0),
            "{marker:?}"
        );
        assert!(
            marker.iter().any(|&r| (r as f64) > floor_row + 2.0),
            "{marker:?}"
        );
        for off in [-30.0, 30.0] {
            assert!(image
                .rows_with(top.px(best) + off, top.top..top.bottom, MARKER)
                .is_empty());
        }
        // The spectrum's peak reaches its row at the marker.
        let line_top = (-1..=1)
            .filter_map(|dx| {
                image
                    .rows_with(top.px(best) + dx as f64, top.top..top.bottom, LINE)
                    .first()
                    .copied()
            })
            .min()
            .unwrap();
        assert!(
            (line_top as f64 - peak_row).abs() <= 2.0,
            "{line_top} vs {peak_row}"
        );

        // Points spread over the whole phase range: every tenth of it has some.
        for tenth in 0..10 {
            let (x0, x1) = (
                folded.px(tenth as f64 / 10.0),
                folded.px((tenth + 1) as f64 / 10.0),
            );
            let found = (x0.ceil() as usize..x1 as usize).any(|x| {
                !image
                    .rows_with(x as f64, folded.top..folded.bottom, POINTS)
                    .is_empty()
            });
            assert!(found, "no samples in phase tenth {tenth}");
        }
        // The fitted curve passes through the rows the true sinusoid maps to.
        let (c, a, b) = fit_sinusoid(&lc.t, &lc.y, lc.w.as_deref(), best).unwrap();
        for phase in [0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95] {
            let expected = c + a * (TAU * phase).cos() + b * (TAU * phase).sin();
            // The data: 0.8 sin(2 pi phase + 0.4) around 12.
            assert!((expected - 12.0 - 0.8 * (TAU * phase + 0.4).sin()).abs() < 0.05);
            let rows = image.rows_with(folded.px(phase), folded.top..folded.bottom, CURVE);
            let row = folded.py(expected);
            assert!(
                !rows.is_empty() && rows.iter().all(|r| (*r as f64 - row).abs() <= 3.0),
                "phase {phase}: {rows:?} vs {row}"
            );
        }
    }

    #[test]
    fn periodogram_svg_has_the_labels_and_the_demo_png_is_small() {
        let lc = light_curve(800);
        let (freqs, power) = spectrum(200_000, 1.0 / 3.7);
        let title = "a synthetic light curve";
        let figure = periodogram(title, "normalized power", &freqs, &power, 1.0 / 3.7, &lc);
        let png = to_png(&figure);
        assert!(png.len() < 200_000, "{} bytes", png.len());
        let svg = to_svg(&figure);
        let texts = svg_texts(&svg);
        for text in [
            "a synthetic light curve",
            "Lomb-Scargle periodogram",
            "best period 3.70000",
            "light curve folded at period 3.70000",
            "frequency (cycles per time unit)",
            "normalized power",
            "phase",
            "samples",
            "fitted sinusoid",
        ] {
            assert!(texts.contains(&text), "{text}");
        }
        // One line each for the spectrum and the fit, besides their legend swatches.
        assert_eq!(svg_lines(&svg, LINE).len(), 1);
        assert_eq!(svg_lines(&svg, CURVE).len(), 2);
        // One dashed marker: its dashes all lie on one column.
        let dashes = svg_lines(&svg, MARKER);
        assert!(dashes.len() > 2);
        let x = dashes[0][0].0;
        assert!(dashes.iter().flatten().all(|p| p.0 == x));
    }

    #[test]
    fn periodogram_without_a_best_frequency_or_samples_still_draws() {
        let (freqs, power) = spectrum(100, 0.5);
        for best in [f64::NAN, 0.0, -1.0] {
            let one_t = SeriesData {
                t: vec![1.0],
                y: vec![],
                w: None,
            };
            let figure = periodogram("t", "power", &freqs, &power, best, &one_t);
            assert!(figure.has_data() && !figure.panels[1].has_data());
            assert!(!to_svg(&figure).contains("best period"));
        }
        let none = SeriesData {
            t: vec![],
            y: vec![],
            w: None,
        };
        let figure = periodogram("t", "power", &[], &[], 0.5, &none);
        assert!(!figure.has_data());
        Image::decode(&to_png(&figure));
    }

    /// A light curve of period 3.7 with uncertainties dy in its third column.
    fn light_curve_with_dy(samples: usize) -> SeriesData {
        let mut lc = light_curve(samples);
        lc.w = lc.w.map(|w| w.iter().map(|w| 1.0 / w.sqrt()).collect());
        lc
    }

    /// Whether pixel (x, y) is the ink of text (grey to black) or of the
    /// marker's label (red): anti-aliased text edges pass as neither.
    fn ink(image: &Image, x: usize, y: usize, red: bool) -> bool {
        let RGBColor(r, g, b) = image.at(x, y);
        let (r, g, b) = (i32::from(r), i32::from(g), i32::from(b));
        match red {
            true => r - g > 80 && r - b > 80,
            false => r < 128 && (r - g).abs() < 16 && (r - b).abs() < 16,
        }
    }

    /// The rows (`by_row`) or columns of the part `columns` x `rows` of the
    /// image that hold text ink, or the marker's red.
    fn ink_lines(
        image: &Image,
        columns: std::ops::Range<usize>,
        rows: std::ops::Range<usize>,
        red: bool,
        by_row: bool,
    ) -> Vec<usize> {
        let (outer, inner) = match by_row {
            true => (rows, columns),
            false => (columns, rows),
        };
        outer
            .filter(|&a| {
                inner.clone().any(|b| match by_row {
                    true => ink(image, b, a, red),
                    false => ink(image, a, b, red),
                })
            })
            .collect()
    }

    #[test]
    fn the_best_period_label_sits_between_the_panel_title_and_the_plot() {
        // The best period in the middle of the axis, under the panel's title.
        let lc = light_curve_with_dy(300);
        let periods: Vec<f64> = (0..=2000).map(|k| 2.7 + 2.0 * k as f64 / 2000.0).collect();
        let power: Vec<f64> = periods
            .iter()
            .map(|p| 1.0 + 50.0 * (-((p - 3.7) * 40.0).powi(2)).exp())
            .collect();
        let fit = BoxFit {
            period: 3.7,
            duration: 0.2,
            transit_time: 1.0,
            depth: 0.5,
        };
        let freqs: Vec<f64> = periods.iter().map(|p| 1.0 / p).collect();
        let theta: Vec<f64> = power.iter().map(|p| 1.0 / p).collect();
        let fold = Fold {
            frequency: 1.0 / 3.7,
            bins: 10,
            weighted: true,
        };
        let (t, y) = ("t", "theta");
        let panel = "PDM theta by trial period (lower is better)";
        for figure in [
            transit_search("transit search", &periods, &power, Some(fit), &lc),
            phase_fold_search(t, panel, y, &freqs, &theta, Some(fold), &lc),
        ] {
            let (image, frames) = render(&figure);
            let top = &frames[0];
            let band = image.height - 2 * plot::PANEL_HEIGHT as usize;
            let (above, all) = (band..top.top as usize, 0..image.width);
            let title = ink_lines(&image, all.clone(), above.clone(), false, true);
            let label = ink_lines(&image, all.clone(), above.clone(), true, true);
            assert!(!title.is_empty() && !label.is_empty(), "{}", figure.title);
            // Stacked, not overlapping: the title's last row above the label's first.
            assert!(
                title[title.len() - 1] < label[0],
                "{}: title rows {title:?}, label rows {label:?}",
                figure.title
            );
            // Side by side they would overlap: the label is under the title.
            let title_columns = ink_lines(&image, all.clone(), above.clone(), false, false);
            let label_columns = ink_lines(&image, all, above, true, false);
            let middle = label_columns[label_columns.len() / 2];
            assert!(
                title_columns[0] < middle && middle < title_columns[title_columns.len() - 1],
                "{}",
                figure.title
            );
        }
    }

    #[test]
    fn phase_fold_search_marks_the_lowest_value_and_draws_the_bin_means() {
        let lc = light_curve_with_dy(300);
        let best = 1.0 / 3.7;
        // A dip at the best frequency, on a grid of periods 0.5 .. 400: a log axis.
        let freqs: Vec<f64> = (0..20_000)
            .map(|k| 0.0025 + 2.0 * k as f64 / 20_000.0)
            .collect();
        let theta: Vec<f64> = freqs
            .iter()
            .map(|f| 1.0 - 0.9 * (-((f - best) * 300.0).powi(2)).exp())
            .collect();
        for weighted in [true, false] {
            let fold = Fold {
                frequency: best,
                bins: 10,
                weighted,
            };
            let figure = phase_fold_search(
                "a search",
                "PDM theta by trial period",
                "PDM theta",
                &freqs,
                &theta,
                Some(fold),
                &lc,
            );
            let (spectrum, folded) = (&figure.panels[0], &figure.panels[1]);
            assert!(spectrum.log_x);
            assert_eq!(spectrum.markers.len(), 1);
            assert!((spectrum.markers[0].0 - 3.7).abs() < 1e-12);
            assert_eq!(spectrum.markers[0].1, "best period 3.70000");
            assert_eq!(folded.title, "light curve folded at period 3.70000");
            // The step line: each bin's (weighted) mean over its width.
            let (samples, means) = (&folded.series[0], &folded.series[1]);
            assert_eq!(samples.x.len(), lc.t.len());
            assert!(samples.x.iter().all(|p| (0.0..1.0).contains(p)));
            assert_eq!(means.x.len(), 20);
            let t0 = lc.t.iter().copied().fold(f64::INFINITY, f64::min);
            for b in 0..10 {
                let (mut sw, mut swy) = (0.0, 0.0);
                for i in 0..lc.t.len() {
                    if phase_bin(lc.t[i] - t0, best, 10) == b {
                        let dy = lc.w.as_ref().unwrap()[i];
                        let w = if weighted { 1.0 / (dy * dy) } else { 1.0 };
                        sw += w;
                        swy += w * lc.y[i];
                    }
                }
                assert!(sw > 0.0);
                assert!((means.x[2 * b] - b as f64 / 10.0).abs() < 1e-12);
                assert!((means.x[2 * b + 1] - (b + 1) as f64 / 10.0).abs() < 1e-12);
                assert!((means.y[2 * b] - swy / sw).abs() < 1e-9, "bin {b}");
                assert_eq!(means.y[2 * b], means.y[2 * b + 1]);
            }
            let svg = to_svg(&figure);
            let texts = svg_texts(&svg);
            for text in [
                "a search",
                "PDM theta by trial period",
                "bin means",
                "phase",
            ] {
                assert!(texts.contains(&text), "{text}");
            }
        }
        // Without a fold, or over a narrow band: unmarked, unfolded, linear.
        let narrow = &freqs[100..200];
        let figure = phase_fold_search("t", "p", "y", narrow, &theta[100..200], None, &lc);
        assert!(!figure.panels[0].log_x && figure.panels[0].markers.is_empty());
        assert!(figure.has_data() && !figure.panels[1].has_data());
    }

    #[test]
    fn histogram_bars_have_the_relative_heights_of_the_counts() {
        // Linear bins over 1 .. 2: 4 bins for 16 periods, counts 2, 8, 0, 6.
        let mut periods = vec![1.0, 1.1];
        periods.extend([1.3, 1.3, 1.35, 1.4, 1.4, 1.45, 1.45, 1.49]);
        periods.extend([1.8, 1.8, 1.9, 1.9, 1.95, 2.0]);
        periods.extend([f64::NAN, -1.0]);
        let figure = best_periods("survey", &periods);
        let (image, frames) = render(&figure);
        let frame = &frames[0];
        let height = |centre: f64| {
            image
                .rows_with(frame.px(centre), frame.top..frame.bottom + 1.0, LINE)
                .len() as f64
        };
        let unit = frame.py(0.0) - frame.py(1.0);
        for (centre, count) in [(1.125, 2.0), (1.375, 8.0), (1.625, 0.0), (1.875, 6.0)] {
            assert!(
                (height(centre) - count * unit).abs() <= 1.5,
                "bin at {centre}: {} px, unit {unit}",
                height(centre)
            );
        }
        assert!(svg_texts(&to_svg(&figure)).contains(&"best periods of 16 series (2 without one)"));
    }

    #[test]
    fn histogram_of_periods_spanning_decades_has_log_bins() {
        let periods: Vec<f64> = (0..400)
            .map(|i| 10f64.powf(-1.0 + 3.0 * i as f64 / 399.0))
            .collect();
        let figure = best_periods("survey", &periods);
        let bars = &figure.panels[0].series[0];
        assert!(figure.panels[0].log_x);
        assert_eq!(bars.x.len(), 21);
        assert!((bars.x[0] - 0.1).abs() < 1e-12 && (bars.x[20] - 100.0).abs() < 1e-9);
        // Log-uniform periods fill log bins evenly, so every bar is as tall.
        assert!(
            bars.y.iter().all(|c| (*c - 20.0).abs() <= 1.0),
            "{:?}",
            bars.y
        );
        let (_, frames) = render(&figure);
        let frame = &frames[0];
        // Equal widths on the page: the bins are equal in log space.
        let (w0, w1) = (
            frame.px(bars.x[1]) - frame.px(bars.x[0]),
            frame.px(bars.x[20]) - frame.px(bars.x[19]),
        );
        assert!((w0 - w1).abs() < 1e-6);
        // Degenerate inputs.
        for periods in [vec![], vec![f64::NAN], vec![5.0; 3]] {
            let figure = best_periods("t", &periods);
            assert_eq!(figure.has_data(), !periods.is_empty() && periods[0] == 5.0);
            Image::decode(&to_png(&figure));
        }
    }

    #[test]
    fn the_log_axis_line_falls_the_right_way() {
        // |delta| decays from 1 to 1e-6.
        let t: Vec<f64> = (0..=100).map(|i| i as f64 * 0.01).collect();
        let d: Vec<f64> = t.iter().map(|t| 10f64.powf(-6.0 * t)).collect();
        let figure = fg_delta("the coupled F/G system", &t, &d);
        let (image, frames) = render(&figure);
        let frame = &frames[0];
        let row_at = |t: f64| {
            let rows = image.rows_with(frame.px(t), frame.top..frame.bottom, LINE);
            rows.iter().sum::<usize>() as f64 / rows.len() as f64
        };
        // A straight line on a log axis, from the top tick (1) to the bottom one (1e-6).
        for t in [0.1, 0.3, 0.5, 0.7, 0.9] {
            let expected = frame.top + t * (frame.bottom - frame.top);
            assert!(
                (row_at(t) - expected).abs() <= 2.0,
                "t = {t}: {} vs {expected}",
                row_at(t)
            );
        }
        let svg = to_svg(&figure);
        for label in ["1e-6", "1e-4", "1", "the coupled F/G system"] {
            assert!(svg_texts(&svg).contains(&label), "{label}");
        }
    }

    #[test]
    fn ensemble_spread_is_the_member_mean_and_rms_standard_deviation() {
        // 2 frames, 3 members, 2 sites.
        let traj = [
            1.0, 10.0, 2.0, 10.0, 3.0, 10.0, // frame 0: site 0 spread, site 1 flat
            0.0, 0.0, 0.0, 2.0, 0.0, 4.0, // frame 1
        ];
        let (mean, spread) = ensemble_spread(&traj, 2, 3, 2);
        assert_eq!(mean, [2.0, 10.0, 0.0, 2.0]);
        // Frame 0: variances 1 and 0; frame 1: 0 and 4.
        assert!((spread[0] - 0.5f64.sqrt()).abs() < 1e-12);
        assert!((spread[1] - 2f64.sqrt()).abs() < 1e-12);
        // Too short a trajectory leaves NaN; one member has no spread.
        let (mean, spread) = ensemble_spread(&traj[..6], 2, 3, 2);
        assert!(mean[2].is_nan() && spread[1].is_nan());
        assert_eq!(ensemble_spread(&[1.0, 2.0], 1, 1, 2).1, [0.0]);
        assert_eq!(ensemble_spread(&[], 1, 0, 2).1.len(), 1);
    }

    #[test]
    fn lorenz_heat_map_puts_low_and_high_values_where_they_are() {
        // 50 frames x 40 sites: the mean rises with site, and the left half
        // turns high after frame 25. Spread grows 1e-3 .. 1e1: a log axis.
        let (frames, n) = (50, 40);
        let mean: Vec<f64> = (0..frames * n)
            .map(|k| {
                let (f, i) = (k / n, k % n);
                if f >= 25 && i < 20 {
                    10.0
                } else {
                    i as f64 / 10.0
                }
            })
            .collect();
        let times: Vec<f64> = (0..frames).map(|f| f as f64 * 0.5).collect();
        let spread: Vec<f64> = (0..frames)
            .map(|f| 1e-3 * 10f64.powf(f as f64 / 12.25))
            .collect();
        let figure = lorenz("Lorenz 96", frames, n, &mean, &times, &spread);
        assert!(figure.panels[1].log_y);
        let (image, frames) = render(&figure);
        let (heat, line) = (&frames[0], &frames[1]);
        let low = RGBColor(33, 102, 172);
        let high = RGBColor(178, 24, 43);
        // Site 0 before frame 25 is the lowest value, sites 0..20 after it the highest.
        let at = |site: f64, time: f64| {
            image.at(
                heat.px(site).round() as usize,
                heat.py(time).round() as usize,
            )
        };
        assert_eq!(at(0.0, 2.0), low);
        assert_eq!(at(0.0, 20.0), high);
        assert_eq!(at(19.0, 24.0), high);
        assert_ne!(at(25.0, 20.0), high);
        // Time runs down: the first frame is at the top.
        assert!(heat.py(0.0) < heat.py(24.0));
        assert!(heat.py(-0.25) >= heat.top && heat.py(24.5) <= heat.bottom + 0.5);
        // The spread line rises (pixel rows fall) with time.
        let rows = |t: f64| image.rows_with(line.px(t), line.top..line.bottom, LINE);
        assert!(rows(2.0)[0] > rows(12.0)[0] + 20 && rows(12.0)[0] > rows(22.0)[0] + 20);
        let svg = to_svg(&figure);
        for text in ["Lorenz 96", "ensemble mean", "site", "time", "spread"] {
            assert!(svg_texts(&svg).contains(&text), "{text}");
        }
    }

    #[test]
    fn write_refuses_unknown_extensions_by_name() {
        let figure = fg_delta("t", &[0.0, 1.0], &[1.0, 2.0]);
        let path = std::path::Path::new("/nonexistent/plot.jpeg");
        let err = plot::write(&figure, path).unwrap_err();
        assert!(err.contains("plot.jpeg") && err.contains(".svg") && err.contains(".png"));
        assert!(err.contains("unsupported extension"), "{err}");
    }

    #[test]
    fn significant_digits() {
        assert_eq!(significant(3.700004, 6), "3.70000");
        assert_eq!(significant(123.4567, 6), "123.457");
        assert_eq!(significant(0.0123456789, 6), "0.0123457");
        assert_eq!(significant(1.5e12, 6), "1.50000e12");
    }
}
