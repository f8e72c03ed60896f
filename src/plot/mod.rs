//! Dependency-free line charts (a periodogram: frequency against power) as SVG or PNG.
//!
//! Everything geometric — plot area, ticks, data-to-pixel mapping, decimation, text
//! placement — is decided once in [`Layout`], a display list in pixel coordinates.
//! The SVG writer and the PNG rasteriser only translate that list, so the two
//! outputs cannot drift apart.
//!
//! Degenerate data is drawn, not rejected: `to_svg`/`to_png` always return a valid
//! file (empty or mismatched `x`/`y` give empty axes over 0..1; non-finite points are
//! skipped). Only [`write`] refuses such a chart, with `InvalidInput`, because a CLI
//! that writes an empty periodogram almost certainly has a bug upstream.

mod font;
mod png;
mod raster;
mod svg;

use std::io;
use std::path::Path;

pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
    /// Optional vertical marker: (x position, label), e.g. the peak frequency with
    /// "best period 3.14 d". The x axis is widened to include it; a non-finite
    /// position is ignored.
    pub marker: Option<(f64, String)>,
    /// Pixels; default 900.
    pub width: u32,
    /// Pixels; default 500.
    pub height: u32,
}

impl LineChart {
    pub const DEFAULT_WIDTH: u32 = 900;
    pub const DEFAULT_HEIGHT: u32 = 500;

    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
        x: Vec<f64>,
        y: Vec<f64>,
    ) -> Self {
        LineChart {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            x,
            y,
            marker: None,
            width: Self::DEFAULT_WIDTH,
            height: Self::DEFAULT_HEIGHT,
        }
    }

    pub fn with_marker(mut self, x: f64, label: impl Into<String>) -> Self {
        self.marker = Some((x, label.into()));
        self
    }

    /// The points that will be drawn; a length mismatch yields none rather than a
    /// silently truncated curve.
    fn finite_points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        let n = if self.x.len() == self.y.len() {
            self.x.len()
        } else {
            0
        };
        self.x[..n]
            .iter()
            .zip(&self.y[..n])
            .map(|(&x, &y)| (x, y))
            .filter(|(x, y)| x.is_finite() && y.is_finite())
    }
}

pub fn to_svg(chart: &LineChart) -> String {
    svg::render(&Layout::new(chart))
}

/// A valid PNG file (8-bit RGB, uncompressed deflate).
pub fn to_png(chart: &LineChart) -> Vec<u8> {
    let canvas = raster::render(&Layout::new(chart));
    png::encode_rgb(canvas.width, canvas.height, &canvas.pixels)
}

/// Writes by extension: ".svg" or ".png" (case-insensitive). Fails with
/// `InvalidInput` for any other extension, for empty or mismatched `x`/`y`, and for
/// data without a single finite point.
pub fn write(chart: &LineChart, path: &Path) -> io::Result<()> {
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let is_svg = match ext.as_deref() {
        Some("svg") => true,
        Some("png") => false,
        _ => {
            return Err(invalid(format!(
                "cannot write plot to {}: unsupported extension (supported: .svg, .png)",
                path.display()
            )))
        }
    };
    if chart.x.is_empty() || chart.x.len() != chart.y.len() {
        return Err(invalid(format!(
            "cannot plot {} x values against {} y values",
            chart.x.len(),
            chart.y.len()
        )));
    }
    if chart.finite_points().next().is_none() {
        return Err(invalid("cannot plot: no point has finite x and y".into()));
    }
    if is_svg {
        std::fs::write(path, to_svg(chart))
    } else {
        std::fs::write(path, to_png(chart))
    }
}

// ---------------------------------------------------------------------------
// Layout: the display list both back ends render.

/// What a stroke or text is; each back end maps it to its own styling, from the
/// shared colour and width below.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ink {
    Grid,
    Axis,
    Data,
    Marker,
}

impl Ink {
    pub(crate) fn rgb(self) -> [u8; 3] {
        match self {
            Ink::Grid => [225, 225, 225],
            Ink::Axis => [34, 34, 34],
            Ink::Data => [31, 119, 180],
            Ink::Marker => [214, 39, 40],
        }
    }

    /// Stroke width in pixels.
    pub(crate) fn width(self) -> f64 {
        match self {
            Ink::Data | Ink::Marker => 2.0,
            Ink::Grid | Ink::Axis => 1.0,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Text {
    pub text: String,
    /// Anchor point; `y` is the vertical centre of the text (for `vertical` text,
    /// `x` is the centre across it and `y` runs along it).
    pub x: f64,
    pub y: f64,
    pub anchor: Anchor,
    /// Reads bottom to top (the y-axis label).
    pub vertical: bool,
    /// Line height in pixels; a multiple of the bitmap font's cell height so the PNG
    /// can scale glyphs by whole pixels.
    pub size: f64,
    pub ink: Ink,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    Line {
        x0: f64,
        y0: f64,
        x1: f64,
        y1: f64,
        ink: Ink,
    },
    /// The data curve; a lone point is repeated so that it still shows as a dot.
    Polyline(Vec<(f64, f64)>),
    Text(Text),
}

/// A chart reduced to pixel-space primitives, in painting order.
pub(crate) struct Layout {
    pub width: u32,
    pub height: u32,
    pub items: Vec<Item>,
}

const TITLE_SIZE: f64 = 3.0 * font::CELL_H as f64;
const TEXT_SIZE: f64 = 2.0 * font::CELL_H as f64;
const TICK_LEN: f64 = 6.0;
const GAP: f64 = 8.0;

/// Width of `text` at line height `size`, using the bitmap font's proportions: the
/// PNG's exact width, and an over-estimate for SVG's narrower monospace, which only
/// makes margins a little generous.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * font::CELL_W as f64 / font::CELL_H as f64
}

impl Layout {
    pub(crate) fn new(chart: &LineChart) -> Layout {
        let width = chart.width.max(1);
        let height = chart.height.max(1);
        let (w, h) = (f64::from(width), f64::from(height));
        let marker = chart.marker.as_ref().filter(|(x, _)| x.is_finite());

        let mut x_range = Range::of(chart.finite_points().map(|p| p.0));
        if let Some((mx, _)) = marker {
            x_range.include(*mx);
        }
        let x_axis = Axis::nice(x_range);
        let y_axis = Axis::nice(Range::of(chart.finite_points().map(|p| p.1)));

        // Margins are sized from the text that must fit in them.
        let y_tick_width = y_axis
            .labels
            .iter()
            .map(|l| text_width(l, TEXT_SIZE))
            .fold(0.0, f64::max);
        let last_x_label = x_axis
            .labels
            .last()
            .map_or(0.0, |l| text_width(l, TEXT_SIZE));
        let marker_row = if marker.is_some() {
            TEXT_SIZE + GAP
        } else {
            0.0
        };
        let left = GAP + TEXT_SIZE + GAP + y_tick_width + GAP + TICK_LEN;
        let right = w - (GAP + last_x_label / 2.0).max(3.0 * GAP);
        let top = GAP + TITLE_SIZE + GAP + marker_row;
        let bottom = h - (TICK_LEN + GAP / 2.0 + TEXT_SIZE + GAP + TEXT_SIZE + GAP);
        // A chart too small for its margins still gets a (tiny) plot area.
        let (right, bottom) = (right.max(left + 1.0), bottom.max(top + 1.0));

        let map = Mapping {
            x: x_axis.range,
            y: y_axis.range,
            left,
            right,
            top,
            bottom,
        };
        let text = |text: &str, x, y, anchor, size, ink| {
            Item::Text(Text {
                text: text.to_string(),
                x,
                y,
                anchor,
                vertical: false,
                size,
                ink,
            })
        };
        let line = |x0, y0, x1, y1, ink| Item::Line {
            x0,
            y0,
            x1,
            y1,
            ink,
        };

        let mut items = Vec::new();
        for &v in &x_axis.values {
            let px = map.px(v);
            items.push(line(px, top, px, bottom, Ink::Grid));
        }
        for &v in &y_axis.values {
            let py = map.py(v);
            items.push(line(left, py, right, py, Ink::Grid));
        }

        let points = decimate(chart.finite_points().map(|(x, y)| (map.px(x), map.py(y))));
        match points.len() {
            0 => {}
            1 => items.push(Item::Polyline(vec![points[0], points[0]])),
            _ => items.push(Item::Polyline(points)),
        }

        items.push(line(left, bottom, right, bottom, Ink::Axis));
        items.push(line(left, top, left, bottom, Ink::Axis));
        for (&v, label) in x_axis.values.iter().zip(&x_axis.labels) {
            let px = map.px(v);
            items.push(line(px, bottom, px, bottom + TICK_LEN, Ink::Axis));
            let y = bottom + TICK_LEN + GAP / 2.0 + TEXT_SIZE / 2.0;
            items.push(text(label, px, y, Anchor::Middle, TEXT_SIZE, Ink::Axis));
        }
        for (&v, label) in y_axis.values.iter().zip(&y_axis.labels) {
            let py = map.py(v);
            items.push(line(left - TICK_LEN, py, left, py, Ink::Axis));
            items.push(text(
                label,
                left - TICK_LEN - GAP,
                py,
                Anchor::End,
                TEXT_SIZE,
                Ink::Axis,
            ));
        }

        if let Some((mx, label)) = marker {
            let px = map.px(*mx);
            items.push(line(px, top, px, bottom, Ink::Marker));
            // Centred above the line, but pushed sideways rather than off the canvas.
            let half = text_width(label, TEXT_SIZE) / 2.0;
            let (x, anchor) = if px - half < GAP {
                (GAP, Anchor::Start)
            } else if px + half > w - GAP {
                (w - GAP, Anchor::End)
            } else {
                (px, Anchor::Middle)
            };
            items.push(text(
                label,
                x,
                top - GAP - TEXT_SIZE / 2.0,
                anchor,
                TEXT_SIZE,
                Ink::Marker,
            ));
        }

        let mid_x = (left + right) / 2.0;
        items.push(text(
            &chart.title,
            w / 2.0,
            GAP + TITLE_SIZE / 2.0,
            Anchor::Middle,
            TITLE_SIZE,
            Ink::Axis,
        ));
        items.push(text(
            &chart.x_label,
            mid_x,
            h - GAP - TEXT_SIZE / 2.0,
            Anchor::Middle,
            TEXT_SIZE,
            Ink::Axis,
        ));
        items.push(Item::Text(Text {
            text: chart.y_label.clone(),
            x: GAP + TEXT_SIZE / 2.0,
            y: (top + bottom) / 2.0,
            anchor: Anchor::Middle,
            vertical: true,
            size: TEXT_SIZE,
            ink: Ink::Axis,
        }));

        Layout {
            width,
            height,
            items,
        }
    }
}

/// Data-to-pixel mapping; pixel y grows downwards.
struct Mapping {
    x: Range,
    y: Range,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Mapping {
    fn px(&self, x: f64) -> f64 {
        self.left + (x - self.x.lo) / self.x.span() * (self.right - self.left)
    }

    fn py(&self, y: f64) -> f64 {
        self.bottom - (y - self.y.lo) / self.y.span() * (self.bottom - self.top)
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct Range {
    lo: f64,
    hi: f64,
}

impl Range {
    /// The extent of finite `values`; empty input gives 0..1.
    fn of(values: impl Iterator<Item = f64>) -> Range {
        let mut r = Range {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
        };
        values.for_each(|v| r.include(v));
        if r.lo > r.hi {
            Range { lo: 0.0, hi: 1.0 }
        } else {
            r
        }
    }

    fn include(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    fn span(&self) -> f64 {
        self.hi - self.lo
    }
}

/// Tick values with their labels; `range` runs from the first tick to the last, so
/// the data never touches an unlabelled edge.
struct Axis {
    range: Range,
    values: Vec<f64>,
    labels: Vec<String>,
}

impl Axis {
    fn nice(data: Range) -> Axis {
        let (values, step) = nice_ticks(data.lo, data.hi);
        let labels = tick_labels(&values, step);
        let range = Range {
            lo: values[0],
            hi: values[values.len() - 1],
        };
        Axis {
            range,
            values,
            labels,
        }
    }
}

/// Between 5 and 8 ticks (aiming for 6) at multiples of a 1, 2 or 5 x 10^k step,
/// covering `lo..=hi`. Returns the ticks and the step.
fn nice_ticks(lo: f64, hi: f64) -> (Vec<f64>, f64) {
    const TARGET: f64 = 6.0;
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        // A flat series still needs a non-zero span to map onto.
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        (lo - pad, lo + pad)
    };
    // Cap the span so that hi - lo cannot overflow to infinity for extreme inputs.
    let span = (hi - lo).min(f64::MAX);
    let base = 10f64.powi(span.log10().floor() as i32 - 2);
    let mut best: Option<(f64, f64, f64)> = None; // (score, step, first multiple)
    for decade in [1.0, 10.0, 100.0, 1000.0] {
        for mantissa in [1.0, 2.0, 5.0] {
            let step = base * decade * mantissa;
            let (first, last) = ((lo / step).floor(), (hi / step).ceil());
            let count = last - first + 1.0;
            // Outside 5..=8 only as a last resort.
            let score = (count - TARGET).abs()
                + if (5.0..=8.0).contains(&count) {
                    0.0
                } else {
                    100.0
                };
            if best.map_or(true, |(s, _, _)| score < s) {
                best = Some((score, step, first));
            }
        }
    }
    let (_, step, first) = best.expect("candidate steps are never empty");
    let count = ((hi / step).ceil() - first) as i64 + 1;
    // Multiply rather than accumulate, so 0.1 * 3 is not 0.30000000000000004 + drift.
    let values = (0..count).map(|i| (first + i as f64) * step).collect();
    (values, step)
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

/// Keeps at most two points per pixel column — the lowest and highest, in their
/// original order — so a million-point periodogram stays small and its peaks
/// survive. Columns are grouped by consecutive runs, so unsorted x still works
/// (merely with less reduction).
fn decimate(points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    struct Run {
        column: f64,
        low: (usize, (f64, f64)),
        high: (usize, (f64, f64)),
    }
    fn flush(run: &Run, out: &mut Vec<(f64, f64)>) {
        // Pixel y grows downwards, so `high` is the smallest y.
        let (a, b) = if run.low.0 <= run.high.0 {
            (run.low, run.high)
        } else {
            (run.high, run.low)
        };
        out.push(a.1);
        if b.0 != a.0 {
            out.push(b.1);
        }
    }

    let mut out = Vec::new();
    let mut run: Option<Run> = None;
    for (i, p) in points.enumerate() {
        let column = p.0.floor();
        match &mut run {
            Some(r) if r.column == column => {
                if p.1 > r.low.1 .1 {
                    r.low = (i, p);
                }
                if p.1 < r.high.1 .1 {
                    r.high = (i, p);
                }
            }
            _ => {
                if let Some(r) = &run {
                    flush(r, &mut out);
                }
                run = Some(Run {
                    column,
                    low: (i, p),
                    high: (i, p),
                });
            }
        }
    }
    if let Some(r) = &run {
        flush(r, &mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticks(lo: f64, hi: f64) -> Vec<f64> {
        nice_ticks(lo, hi).0
    }

    #[test]
    fn nice_ticks_cover_the_range_with_5_to_8_round_values() {
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
            let t = ticks(lo, hi);
            assert!((5..=8).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            let step = t[1] - t[0];
            let mantissa = step / 10f64.powi(step.log10().floor() as i32);
            assert!(
                [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .any(|m| (mantissa - m).abs() < 1e-9),
                "{lo}..{hi}: step {step}"
            );
        }
        assert_eq!(
            ticks(0.0, 1.0),
            vec![0.0, 0.2, 0.4, 0.6000000000000001, 0.8, 1.0]
        );
        assert_eq!(
            tick_labels(&ticks(0.0, 1.0), 0.2),
            ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]
        );
        assert_eq!(ticks(-3.2, 7.9), vec![-4.0, -2.0, 0.0, 2.0, 4.0, 6.0, 8.0]);
    }

    #[test]
    fn tick_labels_switch_to_scientific_for_extreme_magnitudes() {
        let t = ticks(1e-7, 3e-7);
        let labels = tick_labels(&t, t[1] - t[0]);
        assert!(labels.iter().all(|l| l.contains('e')), "{labels:?}");
        let t = ticks(0.0, 2.0e9);
        assert_eq!(tick_labels(&t, t[1] - t[0])[1], "5e8");
    }

    #[test]
    fn flat_and_single_point_series_get_a_finite_layout() {
        for (x, y) in [
            (vec![1.0, 2.0, 3.0], vec![4.0; 3]),
            (vec![2.5], vec![0.0]),
            (vec![], vec![]),
        ] {
            let layout = Layout::new(&LineChart::new("t", "x", "y", x, y));
            for item in &layout.items {
                match item {
                    Item::Line { x0, y0, x1, y1, .. } => {
                        assert!([x0, y0, x1, y1].iter().all(|v| v.is_finite()))
                    }
                    Item::Polyline(p) => {
                        assert!(p.iter().all(|(a, b)| a.is_finite() && b.is_finite()))
                    }
                    Item::Text(t) => assert!(t.x.is_finite() && t.y.is_finite()),
                }
            }
        }
    }

    #[test]
    fn non_finite_and_mismatched_data_is_not_drawn() {
        let polyline = |chart: &LineChart| {
            Layout::new(chart).items.into_iter().find_map(|i| match i {
                Item::Polyline(p) => Some(p),
                _ => None,
            })
        };
        let chart = LineChart::new(
            "t",
            "x",
            "y",
            vec![0.0, 1.0, 2.0, 3.0],
            vec![1.0, f64::NAN, f64::INFINITY, 2.0],
        );
        assert_eq!(polyline(&chart).unwrap().len(), 2);
        let chart = LineChart::new("t", "x", "y", vec![0.0, 1.0], vec![1.0]);
        assert_eq!(polyline(&chart), None);
    }

    #[test]
    fn decimation_keeps_the_global_peak_of_a_million_points() {
        let n = 1_000_000;
        let peak = 654_321;
        let x: Vec<f64> = (0..n).map(|i| i as f64 * 1e-6).collect();
        let y: Vec<f64> = (0..n)
            .map(|i| {
                if i == peak {
                    50.0
                } else {
                    ((i as u64 * 7919) % 1000) as f64 / 100.0
                }
            })
            .collect();
        let chart = LineChart::new("t", "x", "y", x, y).with_marker(peak as f64 * 1e-6, "peak");
        let layout = Layout::new(&chart);
        let points = layout
            .items
            .iter()
            .find_map(|i| match i {
                Item::Polyline(p) => Some(p.clone()),
                _ => None,
            })
            .unwrap();
        assert!(
            points.len() <= 2 * chart.width as usize,
            "{} points",
            points.len()
        );
        let top = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let (peak_px, peak_py) = *points.iter().find(|p| p.1 == top).unwrap();
        let marker_px = layout
            .items
            .iter()
            .find_map(|i| match i {
                Item::Line {
                    x0,
                    ink: Ink::Marker,
                    ..
                } => Some(*x0),
                _ => None,
            })
            .unwrap();
        assert_eq!(peak_px, marker_px);
        // 50 lies on the top tick, so the peak must sit on the top of the plot area.
        let plot_top = layout
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Line {
                    y0,
                    ink: Ink::Axis,
                    x0,
                    x1,
                    y1,
                } if x0 == x1 => Some(y0.min(*y1)),
                _ => None,
            })
            .fold(f64::INFINITY, f64::min);
        assert_eq!(peak_py, plot_top);
    }

    #[test]
    fn write_rejects_bad_extensions_and_empty_data() {
        let dir = std::env::temp_dir();
        let good = LineChart::new("t", "x", "y", vec![1.0, 2.0], vec![3.0, 4.0]);
        let err = write(&good, &dir.join("kernpack_plot_test.jpg")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(".svg") && err.to_string().contains(".png"));
        for (x, y) in [
            (vec![], vec![]),
            (vec![1.0], vec![]),
            (vec![1.0], vec![f64::NAN]),
        ] {
            let chart = LineChart::new("t", "x", "y", x, y);
            let err = write(&chart, &dir.join("kernpack_plot_test.svg")).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
        let path = dir.join(format!("kernpack_plot_test_{}.PNG", std::process::id()));
        write(&good, &path).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
        std::fs::remove_file(&path).unwrap();
    }
}
