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
pub mod heatmap;
mod png;
mod raster;
mod svg;

use std::io;
use std::path::Path;

/// A single-series line chart; build with [`LineChart::new`], then draw with
/// [`to_svg`], [`to_png`] or [`write`].
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
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .map(|(&x, &y)| (pin(x), pin(y)))
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
    /// Line height in pixels; a multiple of the bitmap font's `EM` so the PNG can
    /// scale glyphs by whole pixels.
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

/// Pins data to +-1e300, so that spans and pixel offsets never overflow to infinity.
fn pin(v: f64) -> f64 {
    v.clamp(-1e300, 1e300)
}

const TITLE_SIZE: f64 = 3.0 * font::EM as f64;
const TEXT_SIZE: f64 = 2.0 * font::EM as f64;
const TICK_LEN: f64 = 6.0;
const GAP: f64 = 8.0;

/// Width of `text` at line height `size`, using the bitmap font's proportions: the
/// PNG's exact width, and an over-estimate for SVG's narrower monospace, which only
/// makes margins a little generous.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * font::CELL_W as f64 / font::EM as f64
}

impl Layout {
    pub(crate) fn new(chart: &LineChart) -> Layout {
        let (width, height) = (chart.width.max(1), chart.height.max(1));
        let marker = chart.marker.as_ref().filter(|(x, _)| x.is_finite());
        let marker = marker.map(|(x, label)| (pin(*x), label));

        let mut x_range = Range::of(chart.finite_points().map(|p| p.0));
        if let Some((mx, _)) = marker {
            x_range.include(mx);
        }
        let x_axis = Axis::nice(x_range, Fit::Tight);
        let y_axis = Axis::nice(Range::of(chart.finite_points().map(|p| p.1)), Fit::Loose);
        let map = Mapping::fit(width, height, &x_axis, &y_axis, marker.is_some());

        let mut items = Items::default();
        items.grid(&map, &x_axis, &y_axis);
        // Under the data, so that the peak it marks stays visible.
        if let Some((mx, label)) = marker {
            items.marker(&map, mx, label);
        }
        items.data(&map, chart);
        items.axes(&map, &x_axis, &y_axis);
        items.labels(&map, chart);
        Layout {
            width,
            height,
            items: items.0,
        }
    }
}

/// The display list under construction.
#[derive(Default)]
struct Items(Vec<Item>);

impl Items {
    fn line(&mut self, (x0, y0): (f64, f64), (x1, y1): (f64, f64), ink: Ink) {
        self.0.push(Item::Line {
            x0,
            y0,
            x1,
            y1,
            ink,
        });
    }

    fn text(&mut self, text: &str, (x, y): (f64, f64), anchor: Anchor, size: f64, ink: Ink) {
        let text = text.to_string();
        self.0.push(Item::Text(Text {
            text,
            x,
            y,
            anchor,
            vertical: false,
            size,
            ink,
        }));
    }

    fn grid(&mut self, map: &Mapping, x_axis: &Axis, y_axis: &Axis) {
        for &v in &x_axis.values {
            self.line((map.px(v), map.top), (map.px(v), map.bottom), Ink::Grid);
        }
        for &v in &y_axis.values {
            self.line((map.left, map.py(v)), (map.right, map.py(v)), Ink::Grid);
        }
    }

    fn data(&mut self, map: &Mapping, chart: &LineChart) {
        let points = decimate(chart.finite_points().map(|(x, y)| (map.px(x), map.py(y))));
        match points.len() {
            0 => {}
            1 => self.0.push(Item::Polyline(vec![points[0], points[0]])),
            _ => self.0.push(Item::Polyline(points)),
        }
    }

    fn axes(&mut self, map: &Mapping, x_axis: &Axis, y_axis: &Axis) {
        self.line((map.left, map.bottom), (map.right, map.bottom), Ink::Axis);
        self.line((map.left, map.top), (map.left, map.bottom), Ink::Axis);
        let label_y = map.bottom + TICK_LEN + GAP / 2.0 + TEXT_SIZE / 2.0;
        for (&v, label) in x_axis.values.iter().zip(&x_axis.labels) {
            let px = map.px(v);
            self.line((px, map.bottom), (px, map.bottom + TICK_LEN), Ink::Axis);
            self.text(label, (px, label_y), Anchor::Middle, TEXT_SIZE, Ink::Axis);
        }
        let label_x = map.left - TICK_LEN - GAP;
        for (&v, label) in y_axis.values.iter().zip(&y_axis.labels) {
            let py = map.py(v);
            self.line((map.left - TICK_LEN, py), (map.left, py), Ink::Axis);
            self.text(label, (label_x, py), Anchor::End, TEXT_SIZE, Ink::Axis);
        }
    }

    /// The line spans the plot; its label sits above the plot area, where no data
    /// can hide it, centred on the line but pushed sideways rather than off the canvas.
    fn marker(&mut self, map: &Mapping, x: f64, label: &str) {
        let px = map.px(x);
        self.line((px, map.top), (px, map.bottom), Ink::Marker);
        let half = text_width(label, TEXT_SIZE) / 2.0;
        let (x, anchor) = if px - half < GAP {
            (GAP, Anchor::Start)
        } else if px + half > map.width - GAP {
            (map.width - GAP, Anchor::End)
        } else {
            (px, Anchor::Middle)
        };
        let y = map.top - GAP - TEXT_SIZE / 2.0;
        self.text(label, (x, y), anchor, TEXT_SIZE, Ink::Marker);
    }

    fn labels(&mut self, map: &Mapping, chart: &LineChart) {
        let title_at = (map.width / 2.0, GAP + TITLE_SIZE / 2.0);
        self.text(
            &chart.title,
            title_at,
            Anchor::Middle,
            TITLE_SIZE,
            Ink::Axis,
        );
        let x_label_at = (
            (map.left + map.right) / 2.0,
            map.height - GAP - TEXT_SIZE / 2.0,
        );
        self.text(
            &chart.x_label,
            x_label_at,
            Anchor::Middle,
            TEXT_SIZE,
            Ink::Axis,
        );
        self.0.push(Item::Text(Text {
            text: chart.y_label.clone(),
            x: GAP + TEXT_SIZE / 2.0,
            y: (map.top + map.bottom) / 2.0,
            anchor: Anchor::Middle,
            vertical: true,
            size: TEXT_SIZE,
            ink: Ink::Axis,
        }));
    }
}

/// The plot area inside the canvas, and data-to-pixel mapping onto it; pixel y
/// grows downwards.
struct Mapping {
    x: Range,
    y: Range,
    width: f64,
    height: f64,
    left: f64,
    right: f64,
    top: f64,
    bottom: f64,
}

impl Mapping {
    /// Sizes the margins from the text that must fit in them.
    fn fit(width: u32, height: u32, x_axis: &Axis, y_axis: &Axis, has_marker: bool) -> Mapping {
        let (width, height) = (f64::from(width), f64::from(height));
        let widest = |labels: &[String]| {
            labels
                .iter()
                .map(|l| text_width(l, TEXT_SIZE))
                .fold(0.0, f64::max)
        };
        let marker_row = if has_marker { TEXT_SIZE + GAP } else { 0.0 };
        // The y label, the tick labels, the ticks.
        let left = GAP + TEXT_SIZE + GAP + widest(&y_axis.labels) + GAP + TICK_LEN;
        // Room for half the last x tick label, which may sit on the right edge.
        let last_x_label = x_axis
            .labels
            .last()
            .map_or(0.0, |l| text_width(l, TEXT_SIZE));
        let right = width - (GAP + last_x_label / 2.0).max(3.0 * GAP);
        let top = GAP + TITLE_SIZE + GAP + marker_row;
        let bottom = height - (TICK_LEN + GAP / 2.0 + TEXT_SIZE + GAP + TEXT_SIZE + GAP);
        Mapping {
            x: x_axis.range,
            y: y_axis.range,
            width,
            height,
            left,
            // A chart too small for its margins still gets a (tiny) plot area.
            right: right.max(left + 1.0),
            top,
            bottom: bottom.max(top + 1.0),
        }
    }

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

    /// A range with a usable span: a flat series is padded around its value, and
    /// everything is pinned so that spans and steps stay finite and normal.
    fn widened(self) -> Range {
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
enum Fit {
    /// Ends exactly at the data, with ticks inside: a frequency grid fills the
    /// width instead of leaving empty bands at the sides.
    Tight,
    /// Extends to the enclosing ticks, so the top of the curve sits under a
    /// labelled value.
    Loose,
}

/// Tick values with their labels, and the range the axis spans.
struct Axis {
    range: Range,
    values: Vec<f64>,
    labels: Vec<String>,
}

impl Axis {
    /// Ticks at multiples of a 1, 2 or 5 x 10^k step, 5 to 8 of them where the
    /// 1-2-5 series allows (aiming for 6).
    fn nice(data: Range, fit: Fit) -> Axis {
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

/// Keeps at most two points per pixel column — the lowest and highest, in their
/// original order — so a million-point periodogram stays small and its peaks
/// survive. Columns are grouped by consecutive runs, so unsorted x still works
/// (merely with less reduction).
fn decimate(points: impl Iterator<Item = (f64, f64)>) -> Vec<(f64, f64)> {
    #[derive(Clone, Copy)]
    struct Extreme {
        index: usize,
        point: (f64, f64),
    }
    /// Pixel y grows downwards, so `top` holds the largest data value.
    struct Column {
        x: f64,
        top: Extreme,
        bottom: Extreme,
    }
    impl Column {
        fn flush(&self, out: &mut Vec<(f64, f64)>) {
            let (first, second) = if self.top.index <= self.bottom.index {
                (self.top, self.bottom)
            } else {
                (self.bottom, self.top)
            };
            out.push(first.point);
            if second.index != first.index {
                out.push(second.point);
            }
        }
    }

    let mut out = Vec::new();
    let mut column: Option<Column> = None;
    for (index, point) in points.enumerate() {
        let here = Extreme { index, point };
        match &mut column {
            Some(c) if c.x == point.0.floor() => {
                if point.1 < c.top.point.1 {
                    c.top = here;
                }
                if point.1 > c.bottom.point.1 {
                    c.bottom = here;
                }
            }
            _ => {
                if let Some(c) = &column {
                    c.flush(&mut out);
                }
                column = Some(Column {
                    x: point.0.floor(),
                    top: here,
                    bottom: here,
                });
            }
        }
    }
    if let Some(c) = &column {
        c.flush(&mut out);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(lo: f64, hi: f64, fit: Fit) -> Axis {
        Axis::nice(Range { lo, hi }, fit)
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
    fn flat_single_point_and_extreme_series_get_a_finite_layout() {
        for (x, y) in [
            (vec![1.0, 2.0, 3.0], vec![4.0; 3]),
            (vec![2.5], vec![0.0]),
            (vec![], vec![]),
            (vec![-f64::MAX, f64::MAX], vec![1e-320, 2e-320]),
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
