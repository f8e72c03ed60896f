//! Draws a [`Figure`] with plotters onto any of its backends, so that the SVG and
//! the PNG come from the same code and cannot drift apart.
//!
//! Everything is plotted in *axis space*: the data value itself on a linear axis,
//! its log10 on a log axis (see [`to_axis`]), on linear plotters coordinates whose
//! ticks this module chooses, so that every panel has one coordinate type.

use std::collections::HashSet;
use std::sync::Once;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{Figure, Marker, Panel, Rgb, Scale, Series, SeriesKind};

/// The family name under which the embedded font is registered.
const FONT: &str = "sans-serif";
const TITLE_SIZE: f64 = 24.0;
const TEXT_SIZE: f64 = 16.0;
const TEXT_RGB: RGBColor = RGBColor(34, 34, 34);
const GRID_RGB: RGBColor = RGBColor(225, 225, 225);
const GAP: i32 = 8;
const TICK_LEN: i32 = 6;
const LINE_WIDTH: u32 = 2;
/// For lines with more points than pixel columns: plotters' rasteriser joins
/// wider polylines with unbounded inner miters, which would turn the spikes of a
/// dense spectrum into long streaks.
const DENSE_LINE_WIDTH: u32 = 1;
/// Radius of the dot drawn per point.
const POINT_RADIUS: i32 = 2;
const COLOUR_BAR_WIDTH: i32 = 14;
/// Distinct colours of the heat map's colour bar.
const BAR_LEVELS: usize = 64;
/// Most ticks on a linear axis.
const MAX_TICKS: usize = 8;
/// Height of the figure's title row, and of the band above the panels without one.
pub(crate) const TITLE_BAND: u32 = 40;
pub(crate) const NO_TITLE_BAND: u32 = 8;

type DrawResult<T, DB> = Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Pins data to +-1e300, so that spans and pixel offsets never overflow to infinity.
fn pin(v: f64) -> f64 {
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

/// DejaVu Sans, embedded by the dejavu crate, as plotters' "sans-serif": PNG text
/// needs no font installed, and SVG text is measured with the same metrics.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let font = dejavu::sans::regular();
        let registered = plotters::style::register_font(FONT, FontStyle::Normal, font);
        assert!(registered.is_ok(), "the embedded DejaVu Sans parses");
    });
}

fn text(size: f64, colour: RGBColor) -> TextStyle<'static> {
    (FONT, size).into_font().color(&colour)
}

fn colour([r, g, b]: Rgb) -> RGBColor {
    RGBColor(r, g, b)
}

/// The lowest and highest values seen.
#[derive(Clone, Copy, Debug)]
struct Extent {
    lo: f64,
    hi: f64,
}

impl Extent {
    const EMPTY: Extent = Extent {
        lo: f64::INFINITY,
        hi: f64::NEG_INFINITY,
    };

    fn include(&mut self, v: f64) {
        self.lo = self.lo.min(v);
        self.hi = self.hi.max(v);
    }

    /// An extent with a usable span: empty gives 0..1, a single value is padded
    /// around it, and everything is pinned so that spans stay finite and normal.
    fn widened(self) -> Extent {
        if self.lo > self.hi {
            return Extent { lo: 0.0, hi: 1.0 };
        }
        let (lo, hi) = (pin(self.lo), pin(self.hi));
        let mid = lo / 2.0 + hi / 2.0;
        if hi - lo > mid.abs() * 1e-12 && hi - lo > 1e-300 {
            return Extent { lo, hi };
        }
        let pad = if mid.abs() > 1e-300 {
            mid.abs() * 0.1
        } else {
            1.0
        };
        Extent {
            lo: mid - pad,
            hi: mid + pad,
        }
    }
}

/// An axis in axis space: the range it spans, its ticks and their labels.
struct Axis {
    range: Extent,
    ticks: Vec<f64>,
    labels: Vec<String>,
}

impl Axis {
    /// A tight axis ends exactly at the data (a frequency grid fills the width);
    /// a loose one extends to the enclosing ticks, so that the top of a curve sits
    /// under a labelled value.
    fn new(scale: Scale, data: Extent, loose: bool) -> Axis {
        let data = data.widened();
        match scale {
            Scale::Linear => Axis::linear(data, loose),
            Scale::Log => Axis::log(data, loose),
        }
    }

    /// plotters' 1-2-5 ticks; a loose axis is widened to the next multiples of
    /// their step.
    fn linear(data: Extent, loose: bool) -> Axis {
        let mut ticks = RangedCoordf64::from(data.lo..data.hi).key_points(MAX_TICKS);
        let step = match ticks[..] {
            // Their difference is 1, 2 or 5 x 10^k up to rounding; take the exact value.
            [a, b, ..] => {
                let decade = 10f64.powf((b - a).log10().floor());
                ((b - a) / decade).round() * decade
            }
            _ => data.hi - data.lo,
        };
        let mut range = data;
        if loose {
            // The 1e-9 slack keeps rounding (0.6 / 0.2 = 2.9999999999999996) from adding a tick.
            let (first, last) = (
                (data.lo / step + 1e-9).floor(),
                (data.hi / step - 1e-9).ceil(),
            );
            // Multiply rather than accumulate, so that rounding errors do not add up.
            ticks = (0..=(last - first) as i64)
                .map(|i| (first + i as f64) * step)
                .collect();
            range = Extent {
                lo: first * step,
                hi: last * step,
            };
        }
        let labels = tick_labels(&ticks, step);
        Axis {
            range,
            ticks,
            labels,
        }
    }

    /// Ticks at powers of ten (every k-th one when there are more than 8), with 2
    /// and 5 times them when the axis spans at most two decades; a loose axis
    /// ends on whole decades.
    fn log(data: Extent, loose: bool) -> Axis {
        let range = if loose {
            let lo = (data.lo + 1e-9).floor();
            let hi = (data.hi - 1e-9).ceil().max(lo + 1.0);
            Extent { lo, hi }
        } else {
            data
        };
        let span = range.hi - range.lo;
        let decade_step = (span / 8.0).ceil().max(1.0) as i64;
        let mantissas: &[f64] = if span <= 2.0 + 1e-9 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let inside = |v: f64| v >= range.lo - 1e-9 && v <= range.hi + 1e-9;
        let mut ticks = Vec::new();
        for k in (range.lo.floor() as i64..=range.hi.ceil() as i64)
            .filter(|k| k.rem_euclid(decade_step) == 0)
        {
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
        let (ticks, labels) = ticks.into_iter().unzip();
        Axis {
            range,
            ticks,
            labels,
        }
    }

    /// The plotters coordinate from `start` (bottom or left) to `end`, with these ticks.
    fn coord(&self, start: f64, end: f64) -> Coord {
        Coord {
            linear: RangedCoordf64::from(start..end),
            ticks: self.ticks.clone(),
            labels: self.labels.clone(),
        }
    }
}

/// A linear plotters coordinate over axis space, with an [`Axis`]' ticks and labels.
struct Coord {
    linear: RangedCoordf64,
    ticks: Vec<f64>,
    labels: Vec<String>,
}

impl Ranged for Coord {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.linear.range()
    }
}

impl ValueFormatter<f64> for Coord {
    fn format_ext(&self, tick: &f64) -> String {
        let i = self.ticks.iter().position(|t| t == tick);
        i.map_or_else(String::new, |i| self.labels[i].clone())
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

/// A panel's plot area in canvas pixels and the data-to-pixel mapping onto it:
/// what the tests need to find data in the rendered pixels.
#[derive(Clone, Debug)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Frame {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    scales: (Scale, Scale),
    /// Axis-space values at the left and right edges.
    x: (f64, f64),
    /// Axis-space values at the bottom and top edges (reversed on a heat map,
    /// whose first row is at the top).
    y: (f64, f64),
}

#[cfg_attr(not(test), allow(dead_code))]
impl Frame {
    /// Pixel column of data value `x`; NaN where the axis cannot show it.
    pub(crate) fn px(&self, x: f64) -> f64 {
        let a = to_axis(self.scales.0, x).unwrap_or(f64::NAN);
        self.left + (a - self.x.0) / (self.x.1 - self.x.0) * (self.right - self.left)
    }

    /// Pixel row of data value `y` (rows grow downwards); NaN where the axis
    /// cannot show it.
    pub(crate) fn py(&self, y: f64) -> f64 {
        let a = to_axis(self.scales.1, y).unwrap_or(f64::NAN);
        self.bottom + (a - self.y.0) / (self.y.1 - self.y.0) * (self.top - self.bottom)
    }
}

/// Draws `figure` onto `root` (sized by [`super::canvas_size`]); the panels' frames.
pub(crate) fn figure<DB: DrawingBackend>(
    figure: &Figure,
    root: &DrawingArea<DB, Shift>,
) -> DrawResult<Vec<Frame>, DB> {
    register_font();
    root.fill(&WHITE)?;
    let band = if figure.title.is_empty() {
        NO_TITLE_BAND
    } else {
        TITLE_BAND
    };
    let (title, body) = root.split_vertically(band);
    let centred = Pos::new(HPos::Center, VPos::Center);
    let (width, _) = title.dim_in_pixel();
    let at = (width as i32 / 2, band as i32 / 2);
    title.draw_text(&figure.title, &text(TITLE_SIZE, TEXT_RGB).pos(centred), at)?;

    let columns = figure.columns.clamp(1, figure.panels.len().max(1));
    let rows = figure.panels.len().div_ceil(columns).max(1);
    let prepared: Vec<Prepared> = figure.panels.iter().map(Prepared::new).collect();
    // Panels in one column share their left edge, however wide their tick labels.
    let mut left = vec![0; columns];
    for (i, p) in prepared.iter().enumerate() {
        let widest = widest(root, &p.y.labels)?;
        left[i % columns] = left[i % columns].max(widest + TEXT_SIZE as i32 + 3 * GAP);
    }
    let cells = body.split_evenly((rows, columns));
    prepared
        .iter()
        .zip(&cells)
        .enumerate()
        .map(|(i, (p, cell))| p.draw(cell, left[i % columns]))
        .collect()
}

fn widest<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    labels: &[String],
) -> DrawResult<i32, DB> {
    let style = text(TEXT_SIZE, TEXT_RGB);
    let mut widest = 0;
    for label in labels {
        widest = widest.max(area.estimate_text_size(label, &style)?.0 as i32);
    }
    Ok(widest)
}

/// A panel's axes and heat-map cells, decided before the panels share out the
/// canvas (the margins depend on the tick labels).
struct Prepared<'a> {
    panel: &'a Panel,
    scales: (Scale, Scale),
    x: Axis,
    y: Axis,
    heat: Option<Heat>,
    /// Marker positions in axis space, with the marker.
    markers: Vec<(f64, &'a Marker)>,
}

struct Heat {
    rows: usize,
    cols: usize,
    /// Block averages, row-major from the top.
    cells: Vec<f64>,
    /// The colour bar's value axis.
    values: Axis,
}

impl<'a> Prepared<'a> {
    fn new(panel: &'a Panel) -> Prepared<'a> {
        let scales = panel.scales();
        let (mut x, mut y) = (Extent::EMPTY, Extent::EMPTY);
        let heat = panel.heat.as_ref().filter(|h| h.has_data()).map(|map| {
            let extent = |(lo, hi): (f64, f64), count: usize| {
                if lo.is_finite() && hi.is_finite() && lo < hi {
                    (pin(lo), pin(hi))
                } else {
                    (0.0, count as f64)
                }
            };
            for (range, (lo, hi)) in [
                (&mut x, extent(map.x_extent, map.cols)),
                (&mut y, extent(map.y_extent, map.rows)),
            ] {
                range.include(lo);
                range.include(hi);
            }
            let (rows, cols, cells) = map.cells();
            let mut values = Extent::EMPTY;
            cells
                .iter()
                .filter(|v| v.is_finite())
                .for_each(|v| values.include(*v));
            Heat {
                rows,
                cols,
                cells,
                values: Axis::new(Scale::Linear, values, false),
            }
        });
        for series in &panel.series {
            for ((px, py), right) in series.drawable(scales.0, scales.1) {
                x.include(px);
                x.include(right);
                y.include(py);
                if series.kind == SeriesKind::Bars && scales.1 == Scale::Linear {
                    y.include(0.0);
                }
            }
        }
        let markers: Vec<_> = panel
            .markers
            .iter()
            .filter_map(|m| Some((to_axis(scales.0, m.x)?, m)))
            .collect();
        markers.iter().for_each(|(v, _)| x.include(*v));
        if let Some((lo, hi)) = panel.x_include {
            [lo, hi]
                .iter()
                .filter_map(|v| to_axis(scales.0, *v))
                .for_each(|v| x.include(v));
        }
        Prepared {
            panel,
            scales,
            x: Axis::new(scales.0, x, false),
            y: Axis::new(scales.1, y, heat.is_none()),
            heat,
            markers,
        }
    }

    /// Everything of one panel, bottom layer first: grid or heat map, markers
    /// (under the data, so that the peak one marks stays visible), series, axes,
    /// legend, and the title and marker labels above the plot area.
    fn draw<DB: DrawingBackend>(
        &self,
        cell: &DrawingArea<DB, Shift>,
        left: i32,
    ) -> DrawResult<Frame, DB> {
        let style = text(TEXT_SIZE, TEXT_RGB);
        let marker_row = if self.markers.is_empty() {
            0
        } else {
            TEXT_SIZE as i32 + GAP
        };
        let top = 2 * GAP + TEXT_SIZE as i32 + GAP + marker_row;
        // Room for half the last x tick label, which may sit on the right edge,
        // and for the colour bar with its labels.
        let last_label = self.x.labels.last().map_or(&[][..], std::slice::from_ref);
        let edge = (GAP + widest(cell, last_label)? / 2).max(3 * GAP);
        let bar = match &self.heat {
            Some(h) => {
                2 * GAP + COLOUR_BAR_WIDTH + TICK_LEN + GAP + widest(cell, &h.values.labels)?
            }
            None => 0,
        };
        let (x, y) = (self.x.range, self.y.range);
        // A heat map's first row is at the top.
        let (y_start, y_end) = if self.heat.is_some() {
            (y.hi, y.lo)
        } else {
            (y.lo, y.hi)
        };
        let mut chart = ChartBuilder::on(cell)
            .margin_top(top)
            .margin_right(edge + bar)
            .y_label_area_size(left)
            .x_label_area_size(TICK_LEN + GAP / 2 + 2 * TEXT_SIZE as i32 + 2 * GAP)
            .build_cartesian_2d(self.x.coord(x.lo, x.hi), self.y.coord(y_start, y_end))?;
        if let Some(heat) = &self.heat {
            self.draw_heat(heat, cell, &mut chart)?;
        }
        let mut mesh = chart.configure_mesh();
        mesh.label_style(style.clone())
            .axis_desc_style(style.clone())
            .bold_line_style(GRID_RGB)
            .axis_style(TEXT_RGB)
            .set_all_tick_mark_size(TICK_LEN);
        if self.heat.is_some() {
            mesh.disable_mesh();
        }
        if !self.panel.x_label.is_empty() {
            mesh.x_desc(self.panel.x_label.as_str());
        }
        if !self.panel.y_label.is_empty() {
            mesh.y_desc(self.panel.y_label.as_str());
        }
        mesh.draw()?;

        let (x0, y0) = cell.get_base_pixel();
        let (width, _) = cell.dim_in_pixel();
        let (left_px, bottom_px) = chart.backend_coord(&(x.lo, y_start));
        let (right_px, top_px) = chart.backend_coord(&(x.hi, y_end));
        for (at, marker) in &self.markers {
            let rgb = colour(marker.colour);
            let line = [(*at, y.lo), (*at, y.hi)];
            chart.draw_series(DashedLineSeries::new(
                line,
                6,
                4,
                rgb.stroke_width(LINE_WIDTH),
            ))?;
            // Above the plot area, where no data can hide it, centred on the line
            // but pushed sideways rather than out of the panel.
            let half = widest(cell, std::slice::from_ref(&marker.label))? / 2;
            let px = chart.backend_coord(&(*at, y.lo)).0 - x0;
            let px = px.min(width as i32 - GAP - half).max(GAP + half);
            let pos = Pos::new(HPos::Center, VPos::Bottom);
            let label = text(TEXT_SIZE, rgb).pos(pos);
            cell.draw_text(&marker.label, &label, (px, top_px - y0 - GAP / 2))?;
        }
        for series in &self.panel.series {
            self.draw_series(series, &mut chart)?;
        }
        if self.panel.series.iter().any(|s| !s.name.is_empty()) {
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE)
                .border_style(GRID_RGB)
                .label_font(style.clone())
                .draw()?;
        }
        let title_at = (left_px - x0, 2 * GAP + TEXT_SIZE as i32 / 2);
        let title = style.pos(Pos::new(HPos::Left, VPos::Center));
        cell.draw_text(&self.panel.title, &title, title_at)?;
        Ok(Frame {
            left: f64::from(left_px),
            right: f64::from(right_px),
            top: f64::from(top_px),
            bottom: f64::from(bottom_px),
            scales: self.scales,
            x: (x.lo, x.hi),
            y: (y_start, y_end),
        })
    }

    fn draw_series<'c, DB: DrawingBackend + 'c>(
        &self,
        series: &Series,
        chart: &mut ChartContext<'c, DB, Cartesian2d<Coord, Coord>>,
    ) -> DrawResult<(), DB> {
        let rgb = colour(series.colour);
        let data = series.drawable(self.scales.0, self.scales.1);
        let annotation = match series.kind {
            SeriesKind::Line => {
                let points: Vec<_> = data.map(|(p, _)| p).collect();
                let count = points.len();
                let points = decimate(points, |x| chart.backend_coord(&(x, 0.0)).0);
                let width = if points.len() < count {
                    DENSE_LINE_WIDTH
                } else {
                    LINE_WIDTH
                };
                // A lone point is repeated so that it still shows as a dot.
                let points = match points[..] {
                    [p] => vec![p, p],
                    _ => points,
                };
                chart.draw_series(LineSeries::new(points, rgb.stroke_width(width)))?
            }
            SeriesKind::Points => {
                // One dot per occupied pixel: a million points stay a small file.
                let mut seen = HashSet::new();
                let dots: Vec<_> = data
                    .map(|(p, _)| p)
                    .filter(|p| seen.insert(chart.backend_coord(p)))
                    .collect();
                let dot = |p| Circle::new(p, POINT_RADIUS, rgb.filled());
                chart.draw_series(dots.into_iter().map(dot))?
            }
            SeriesKind::Bars => {
                // Bars rise from zero on a linear axis, from its bottom on a log one.
                let base = match self.scales.1 {
                    Scale::Linear => 0.0,
                    Scale::Log => self.y.range.lo,
                };
                chart.draw_series(data.map(|((left, height), right)| {
                    let mut bar = Rectangle::new([(left, base), (right, height)], rgb.filled());
                    // A pixel of background between neighbouring bars.
                    bar.set_margin(0, 0, 0, 1);
                    bar
                }))?
            }
        };
        if !series.name.is_empty() {
            let kind = series.kind;
            annotation
                .label(series.name.as_str())
                .legend(move |(x, y)| match kind {
                    SeriesKind::Line => {
                        PathElement::new([(x, y), (x + 20, y)], rgb.stroke_width(LINE_WIDTH))
                            .into_dyn()
                    }
                    SeriesKind::Points => {
                        Circle::new((x + 10, y), POINT_RADIUS + 1, rgb.filled()).into_dyn()
                    }
                    SeriesKind::Bars => {
                        Rectangle::new([(x + 5, y - 5), (x + 15, y + 5)], rgb.filled()).into_dyn()
                    }
                });
        }
        Ok(())
    }

    /// The cells over the whole plot area, and a colour bar to its right with
    /// the values labelled.
    fn draw_heat<DB: DrawingBackend>(
        &self,
        heat: &Heat,
        cell: &DrawingArea<DB, Shift>,
        chart: &mut ChartContext<'_, DB, Cartesian2d<Coord, Coord>>,
    ) -> DrawResult<(), DB> {
        let (x, y) = (self.x.range, self.y.range);
        let values = heat.values.range;
        let level = |v: f64| match v {
            _ if !v.is_finite() => f64::NAN,
            _ => ((v - values.lo) / (values.hi - values.lo)).clamp(0.0, 1.0),
        };
        let (w, h) = (
            (x.hi - x.lo) / heat.cols as f64,
            (y.hi - y.lo) / heat.rows as f64,
        );
        chart.draw_series(heat.cells.iter().enumerate().map(|(k, v)| {
            let (r, c) = ((k / heat.cols) as f64, (k % heat.cols) as f64);
            let corners = [
                (x.lo + c * w, y.lo + r * h),
                (x.lo + (c + 1.0) * w, y.lo + (r + 1.0) * h),
            ];
            Rectangle::new(corners, colour(heat_colour(level(*v))).filled())
        }))?;

        let (x0, y0) = cell.get_base_pixel();
        let (width, height) = cell.dim_in_pixel();
        let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
        let bar_area = cell.margin(
            plot_y.start - y0,
            height as i32 - (plot_y.end - y0),
            plot_x.end - x0 + 2 * GAP,
            0,
        );
        let labels = width as i32 - (plot_x.end - x0 + 2 * GAP) - COLOUR_BAR_WIDTH;
        let mut bar = ChartBuilder::on(&bar_area)
            .right_y_label_area_size(labels.max(0))
            .build_cartesian_2d(
                heat.values.coord(0.0, 1.0),
                heat.values.coord(values.lo, values.hi),
            )?;
        let step = (values.hi - values.lo) / BAR_LEVELS as f64;
        bar.draw_series((0..BAR_LEVELS).map(|k| {
            let (lo, hi) = (
                values.lo + k as f64 * step,
                values.lo + (k + 1) as f64 * step,
            );
            let rgb = heat_colour(k as f64 / (BAR_LEVELS - 1) as f64);
            Rectangle::new([(0.0, lo), (1.0, hi)], colour(rgb).filled())
        }))?;
        bar.configure_mesh()
            .disable_mesh()
            .disable_x_axis()
            .label_style(text(TEXT_SIZE, TEXT_RGB))
            .axis_style(TEXT_RGB)
            .draw()
    }
}

/// Blue - white - red for t in [0, 1]; grey for NaN.
pub(crate) fn heat_colour(t: f64) -> Rgb {
    if !t.is_finite() {
        return [128, 128, 128];
    }
    let t = t.clamp(0.0, 1.0);
    let mix = |a: f64, b: f64, s: f64| (a + (b - a) * s).round() as u8;
    if t < 0.5 {
        let s = t * 2.0;
        [
            mix(33.0, 255.0, s),
            mix(102.0, 255.0, s),
            mix(172.0, 255.0, s),
        ]
    } else {
        let s = (t - 0.5) * 2.0;
        [
            mix(255.0, 178.0, s),
            mix(255.0, 24.0, s),
            mix(255.0, 43.0, s),
        ]
    }
}

/// Keeps at most two points per pixel column — the lowest and highest, in their
/// original order — so that a million-point periodogram stays a small file and
/// its peaks survive. Columns are grouped by consecutive runs, so unsorted x still
/// works (merely with less reduction).
fn decimate(points: Vec<(f64, f64)>, column: impl Fn(f64) -> i32) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for run in points.chunk_by(|a, b| column(a.0) == column(b.0)) {
        let by_y = |a: &usize, b: &usize| run[*a].1.total_cmp(&run[*b].1);
        // Runs are never empty.
        let lowest = (0..run.len()).min_by(by_y).unwrap_or(0);
        let highest = (0..run.len()).max_by(by_y).unwrap_or(0);
        out.push(run[lowest.min(highest)]);
        if lowest != highest {
            out.push(run[lowest.max(highest)]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(lo: f64, hi: f64, loose: bool) -> Axis {
        Axis::new(Scale::Linear, Extent { lo, hi }, loose)
    }

    fn is_1_2_5(step: f64) -> bool {
        let mantissa = step / 10f64.powi(step.log10().floor() as i32);
        [1.0, 2.0, 5.0, 10.0]
            .iter()
            .any(|m| (mantissa - m).abs() < 1e-9)
    }

    #[test]
    fn loose_ticks_enclose_the_data_with_round_values() {
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
            let a = axis(lo, hi, true);
            let t = &a.ticks;
            assert!((4..=10).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(t[0] <= lo && *t.last().unwrap() >= hi, "{lo}..{hi}: {t:?}");
            assert_eq!((a.range.lo, a.range.hi), (t[0], *t.last().unwrap()));
            assert!(is_1_2_5(t[1] - t[0]), "{lo}..{hi}: {t:?}");
        }
        let a = axis(0.0, 1.0, true);
        assert_eq!(a.labels, ["0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        // Rounding in 0.6 / 0.2 must not add a tick past 0.6.
        assert_eq!(*axis(0.0, 0.6, true).labels.last().unwrap(), "0.6");
    }

    #[test]
    fn tight_ticks_stay_inside_the_data() {
        for (lo, hi) in [(0.0, 1.0), (0.01, 2.01), (0.013, 9.87), (12345.0, 12400.0)] {
            let a = axis(lo, hi, false);
            let t = &a.ticks;
            assert!((4..=8).contains(&t.len()), "{lo}..{hi}: {t:?}");
            assert!(t[0] >= lo && *t.last().unwrap() <= hi, "{lo}..{hi}: {t:?}");
            assert_eq!((a.range.lo, a.range.hi), (lo, hi));
            assert!(is_1_2_5(t[1] - t[0]), "{lo}..{hi}: {t:?}");
        }
        // Rounding in 0.6 / 0.2 must not drop the tick at 0.6.
        assert_eq!(*axis(0.0, 0.6, false).labels.last().unwrap(), "0.6");
    }

    #[test]
    fn tick_labels_switch_to_scientific_for_extreme_magnitudes() {
        let labels = axis(1e-7, 3e-7, true).labels;
        assert!(labels.iter().all(|l| l.contains('e')), "{labels:?}");
        let labels = axis(0.0, 2.0e9, true).labels;
        assert_eq!((labels[1].as_str(), labels[3].as_str()), ("5e8", "1.5e9"));
    }

    #[test]
    fn log_ticks_are_decades_or_1_2_5_and_loose_axes_end_on_decades() {
        let log = |lo: f64, hi: f64, loose| Axis::log(Extent { lo, hi }, loose);
        // 3e-4 .. 2e5: 10 decades, every second one labelled.
        let a = log(3e-4f64.log10(), 2e5f64.log10(), true);
        assert_eq!((a.range.lo, a.range.hi), (-4.0, 6.0));
        assert_eq!(a.labels, ["0.0001", "0.01", "1", "100", "10000", "1e6"]);
        // 0.03 .. 0.4: two decades get 2 and 5 as well.
        let a = log(0.03f64.log10(), 0.4f64.log10(), true);
        assert_eq!(a.labels, ["0.01", "0.02", "0.05", "0.1", "0.2", "0.5", "1"]);
        // Tight: only ticks inside; extreme exponents in e-notation.
        let a = log(-12.5, -9.5, false);
        assert_eq!(a.labels, ["1e-12", "1e-11", "1e-10"]);
        // Inside one decade with no round value: the ends are labelled.
        assert_eq!(log(0.4, 0.6, false).labels.len(), 2);
        let empty = Extent::EMPTY.widened();
        assert!(Axis::new(Scale::Log, empty, true).ticks.len() >= 2);
    }

    #[test]
    fn the_heat_colour_scale_runs_blue_white_red() {
        assert_eq!(heat_colour(0.0), [33, 102, 172]);
        assert_eq!(heat_colour(0.5), [255, 255, 255]);
        assert_eq!(heat_colour(1.0), [178, 24, 43]);
        assert_eq!(heat_colour(f64::NAN), [128, 128, 128]);
    }
}
