//! Draws a [`Figure`] with plotters onto any of its backends, so that the SVG and
//! the PNG come from the same code and cannot drift apart. plotters picks the
//! ticks (powers of ten on a log axis), draws mesh, labels, legend and series;
//! this module chooses each axis' range and lays out the panels.

use std::collections::HashSet;
use std::sync::Once;

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::data::float::pretty_print_float;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{palette, Figure, HeatMap, Panel, Series, SeriesKind};

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
/// Room left of every plot area for the y tick labels and the axis description,
/// the same in every panel, so that the panels line up.
const Y_LABEL_AREA: i32 = 80;
/// Room under every plot area for the x tick labels and the axis description.
const X_LABEL_AREA: i32 = TICK_LEN + GAP / 2 + 2 * TEXT_SIZE as i32 + 2 * GAP;
/// Room right of the plot area for half the last x tick label.
const RIGHT_MARGIN: i32 = 4 * GAP;
const COLOUR_BAR_WIDTH: i32 = 14;
/// Room right of the colour bar for its labels.
const COLOUR_BAR_LABELS: i32 = 80;
/// Distinct colours of the heat map's colour bar.
const BAR_LEVELS: usize = 64;

type DrawResult<T, DB> = Result<T, DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Height of the figure's title row, or of the band above the panels without one.
pub(super) fn title_band(figure: &Figure) -> u32 {
    if figure.title.is_empty() {
        8
    } else {
        40
    }
}

/// `v` as an axis (log10 if `log`) draws it, or `None` where it cannot
/// (non-finite, or not positive on a log axis). Linear values are pinned to
/// +-1e300, so that spans and pixel offsets never overflow to infinity.
pub(super) fn shown(log: bool, v: f64) -> Option<f64> {
    match log {
        _ if !v.is_finite() => None,
        false => Some(v.clamp(-1e300, 1e300)),
        true => (v > 0.0).then_some(v),
    }
}

/// A value in axis space, where the axis is linear: log10 on a log axis.
fn to_axis(log: bool, v: f64) -> f64 {
    if log {
        v.log10()
    } else {
        v
    }
}

fn from_axis(log: bool, a: f64) -> f64 {
    if log {
        10f64.powf(a)
    } else {
        a
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

/// A tick label: plain decimals, or "2e-7" where that is shorter.
fn tick_label(v: &f64) -> String {
    pretty_print_float(*v, true)
}

/// The span in axis space of an axis (log10 if `log`) over the `values` it can
/// show: none gives 0..1, a single value is padded around it, and a log axis
/// extends to whole decades (where plotters puts its ticks; the 1e-9 keeps
/// rounding from dropping the end ones).
fn span(log: bool, values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = super::extent(values.filter_map(|v| Some(to_axis(log, shown(log, v)?))));
    let (lo, hi) = if lo > hi { (0.0, 1.0) } else { (lo, hi) };
    let mid = lo / 2.0 + hi / 2.0;
    let (lo, hi) = if hi - lo > mid.abs() * 1e-12 && hi - lo > 1e-300 {
        (lo, hi)
    } else {
        let pad = if mid.abs() > 1e-300 {
            mid.abs() * 0.1
        } else {
            1.0
        };
        (mid - pad, mid + pad)
    };
    if !log {
        return (lo, hi);
    }
    let lo = (lo + 1e-9).floor();
    let hi = (hi - 1e-9).ceil().max(lo + 1.0);
    (lo - 1e-9, hi + 1e-9)
}

/// A panel's plot area in canvas pixels and the data-to-pixel mapping onto it:
/// what the tests need to find data in the rendered pixels.
#[derive(Clone, Debug, Default)]
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct Frame {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    log: (bool, bool),
    /// Axis-space values at the left and right edges.
    x: (f64, f64),
    /// Axis-space values at the bottom and top edges (reversed on a heat map,
    /// whose first row is at the top).
    y: (f64, f64),
}

#[cfg(test)]
impl Frame {
    /// Pixel column of data value `x`; NaN where the axis cannot show it.
    pub(crate) fn px(&self, x: f64) -> f64 {
        let a = shown(self.log.0, x).map_or(f64::NAN, |x| to_axis(self.log.0, x));
        self.left + (a - self.x.0) / (self.x.1 - self.x.0) * (self.right - self.left)
    }

    /// Pixel row of data value `y` (rows grow downwards); NaN where the axis
    /// cannot show it.
    pub(crate) fn py(&self, y: f64) -> f64 {
        let a = shown(self.log.1, y).map_or(f64::NAN, |y| to_axis(self.log.1, y));
        self.bottom + (a - self.y.0) / (self.y.1 - self.y.0) * (self.top - self.bottom)
    }
}

/// Draws `figure` onto `root` and presents it: the panels' frames (none if the
/// drawing failed part-way, which keeps what was drawn).
pub(super) fn figure<DB: DrawingBackend>(
    figure: &Figure,
    root: DrawingArea<DB, Shift>,
) -> Vec<Frame> {
    register_font();
    let draw = || -> DrawResult<Vec<Frame>, DB> {
        root.fill(&WHITE)?;
        let band = title_band(figure);
        let (title, body) = root.split_vertically(band);
        let centred = Pos::new(HPos::Center, VPos::Center);
        let at = (title.dim_in_pixel().0 as i32 / 2, band as i32 / 2);
        title.draw_text(&figure.title, &text(TITLE_SIZE, TEXT_RGB).pos(centred), at)?;
        let cells = body.split_evenly((figure.panels.len().max(1), 1));
        let panels = figure.panels.iter().zip(&cells);
        panels
            .map(|(panel, cell)| draw_panel(panel, cell))
            .collect()
    };
    let frames = draw().unwrap_or_default();
    // Writing to a string or a buffer cannot fail.
    let _ = root.present();
    frames
}

/// Chooses the axes of `panel` from what it holds, and draws it on them.
fn draw_panel<DB: DrawingBackend>(
    panel: &Panel,
    cell: &DrawingArea<DB, Shift>,
) -> DrawResult<Frame, DB> {
    let log = (panel.log_x, panel.log_y);
    let heat = panel.heat.as_ref().filter(|h| h.has_data());
    let data = || {
        panel
            .series
            .iter()
            .flat_map(|s| s.drawable(panel).map(move |p| (s, p)))
    };
    let heat_x = heat.into_iter().flat_map(|h| [h.x_extent.0, h.x_extent.1]);
    let include = panel.x_include.into_iter().flat_map(|(lo, hi)| [lo, hi]);
    let marked = panel.markers.iter().map(|m| m.0);
    let xs = data().flat_map(|(_, ((x, _), right))| [x, right]);
    let x = span(log.0, xs.chain(heat_x).chain(include).chain(marked));
    // Bars rise from zero on a linear axis.
    let ys = data().flat_map(|(s, ((_, y), _))| {
        let from_zero = s.kind == SeriesKind::Bars && !log.1;
        [Some(y), from_zero.then_some(0.0)].into_iter().flatten()
    });
    let heat_y = heat.into_iter().flat_map(|h| [h.y_extent.0, h.y_extent.1]);
    let mut y = span(log.1, ys.chain(heat_y));
    if heat.is_some() {
        // A heat map's first row is at the top.
        y = (y.1, y.0);
    } else if !log.1 {
        // Room around the data, where a marker shows above the highest peak
        // (an axis from zero, where bars rise from, keeps it).
        let pad = (y.1 - y.0) / 20.0;
        y.1 += pad;
        if y.0 != 0.0 {
            y.0 -= pad;
        }
    }
    let frame = Frame {
        log,
        x,
        y,
        ..Frame::default()
    };
    let xr = from_axis(log.0, x.0)..from_axis(log.0, x.1);
    let yr = from_axis(log.1, y.0)..from_axis(log.1, y.1);
    match log {
        (false, false) => draw_on(panel, heat, cell, xr, yr, frame),
        (true, false) => draw_on(panel, heat, cell, xr.log_scale(), yr, frame),
        (false, true) => draw_on(panel, heat, cell, xr, yr.log_scale(), frame),
        (true, true) => draw_on(panel, heat, cell, xr.log_scale(), yr.log_scale(), frame),
    }
}

/// Everything of one panel on axes `x` and `y`, bottom layer first: heat map or
/// grid, markers (under the data, so that the peak one marks stays visible),
/// series, axes and legend; the title and the marker labels above the plot area.
fn draw_on<DB, X, Y>(
    panel: &Panel,
    heat: Option<&HeatMap>,
    cell: &DrawingArea<DB, Shift>,
    x: X,
    y: Y,
    mut frame: Frame,
) -> DrawResult<Frame, DB>
where
    DB: DrawingBackend,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let style = text(TEXT_SIZE, TEXT_RGB);
    let marker_row = i32::from(!panel.markers.is_empty()) * (TEXT_SIZE as i32 + GAP);
    let bar = heat.map_or(0, |_| 2 * GAP + COLOUR_BAR_WIDTH + COLOUR_BAR_LABELS);
    // The title first, then the row of marker labels under it, then the plot
    // area: a caption of the chart itself would sit directly on the plot area,
    // where the marker labels go (its top margin lies above the caption).
    let below_title = cell
        .margin(GAP, 0, 0, 0)
        .titled(&panel.title, style.clone())?;
    let mut chart = ChartBuilder::on(&below_title)
        .margin(GAP)
        .margin_top(marker_row)
        .margin_right(RIGHT_MARGIN + bar)
        .y_label_area_size(Y_LABEL_AREA)
        .x_label_area_size(X_LABEL_AREA)
        .build_cartesian_2d(x, y)?;
    let (xr, yr) = (chart.x_range(), chart.y_range());
    if let Some(map) = heat {
        draw_heat(map, cell, &mut chart)?;
    }
    let mut mesh = chart.configure_mesh();
    mesh.label_style(style.clone())
        .axis_desc_style(style.clone())
        .bold_line_style(GRID_RGB)
        .max_light_lines(4)
        .axis_style(TEXT_RGB)
        .set_all_tick_mark_size(TICK_LEN)
        .x_label_formatter(&tick_label)
        .y_label_formatter(&tick_label)
        .x_desc(panel.x_label.as_str())
        .y_desc(panel.y_label.as_str());
    if heat.is_some() {
        mesh.disable_mesh();
    }
    mesh.draw()?;

    (frame.left, frame.bottom) = pixel(chart.backend_coord(&(xr.start, yr.start)));
    (frame.right, frame.top) = pixel(chart.backend_coord(&(xr.end, yr.end)));
    let (x0, y0) = cell.get_base_pixel();
    let width = cell.dim_in_pixel().0 as i32;
    for (at, label) in &panel.markers {
        let Some(at) = shown(frame.log.0, *at) else {
            continue;
        };
        let line = [(at, yr.start), (at, yr.end)];
        let stroke = palette::RED.stroke_width(LINE_WIDTH);
        chart.draw_series(DashedLineSeries::new(line, 6, 4, stroke))?;
        // Above the plot area, where no data can hide it, centred on the line
        // but pushed sideways rather than out of the panel.
        let half = cell.estimate_text_size(label, &style)?.0 as i32 / 2;
        let px = chart.backend_coord(&(at, yr.start)).0 - x0;
        let px = px.min(width - GAP - half).max(GAP + half);
        let style = text(TEXT_SIZE, palette::RED).pos(Pos::new(HPos::Center, VPos::Bottom));
        let py = frame.top as i32 - y0 - GAP / 2;
        cell.draw_text(label, &style, (px, py))?;
    }
    for series in &panel.series {
        draw_series(series, panel, &mut chart)?;
    }
    if panel.series.iter().any(|s| !s.name.is_empty()) {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE)
            .border_style(GRID_RGB)
            .label_font(style)
            .draw()?;
    }
    Ok(frame)
}

fn pixel((x, y): (i32, i32)) -> (f64, f64) {
    (f64::from(x), f64::from(y))
}

fn draw_series<'c, DB, X, Y>(
    series: &Series,
    panel: &Panel,
    chart: &mut ChartContext<'c, DB, Cartesian2d<X, Y>>,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend + 'c,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let rgb = series.colour;
    let data = series.drawable(panel);
    let bottom = chart.y_range().start;
    let annotation = match series.kind {
        SeriesKind::Line => {
            let points: Vec<_> = data.map(|(p, _)| p).collect();
            let count = points.len();
            let points = decimate(points, |x| chart.backend_coord(&(x, bottom)).0);
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
            let base = if panel.log_y { bottom } else { 0.0 };
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
                    PathElement::new([(x, y), (x + 20, y)], rgb.stroke_width(LINE_WIDTH)).into_dyn()
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

/// The cells over the whole plot area, and a colour bar to its right with the
/// values labelled.
fn draw_heat<DB, X, Y>(
    map: &HeatMap,
    cell: &DrawingArea<DB, Shift>,
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
) -> DrawResult<(), DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let (rows, cols, cells) = map.cells();
    let (lo, hi) = span(false, cells.iter().copied());
    let level = |v: f64| (v - lo) / (hi - lo);
    let heat_colour = heat_colours();
    // The y axis runs down: row 0 at the end of its range, the top.
    let (xr, yr) = (chart.x_range(), chart.y_range());
    let w = (xr.end - xr.start) / cols as f64;
    let h = (yr.start - yr.end) / rows as f64;
    chart.draw_series(cells.iter().enumerate().map(|(k, v)| {
        let (r, c) = ((k / cols) as f64, (k % cols) as f64);
        let corners = [
            (xr.start + c * w, yr.end + r * h),
            (xr.start + (c + 1.0) * w, yr.end + (r + 1.0) * h),
        ];
        Rectangle::new(corners, heat_colour(level(*v)).filled())
    }))?;

    let (x0, y0) = cell.get_base_pixel();
    let (width, height) = cell.dim_in_pixel();
    let (plot_x, plot_y) = chart.plotting_area().get_pixel_range();
    let left = plot_x.end - x0 + 2 * GAP;
    let bar_area = cell.margin(
        plot_y.start - y0,
        height as i32 - (plot_y.end - y0),
        left,
        0,
    );
    let labels = width as i32 - left - COLOUR_BAR_WIDTH;
    let mut bar = ChartBuilder::on(&bar_area)
        .right_y_label_area_size(labels.max(0))
        .build_cartesian_2d(0.0..1.0, lo..hi)?;
    let step = (hi - lo) / BAR_LEVELS as f64;
    bar.draw_series((0..BAR_LEVELS).map(|k| {
        let from = lo + k as f64 * step;
        let rgb = heat_colour(k as f64 / (BAR_LEVELS - 1) as f64);
        Rectangle::new([(0.0, from), (1.0, from + step)], rgb.filled())
    }))?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .label_style(text(TEXT_SIZE, TEXT_RGB))
        .axis_style(TEXT_RGB)
        .set_all_tick_mark_size(TICK_LEN)
        .y_label_formatter(&tick_label)
        .draw()
}

/// Blue (0) - white - red (1); grey for NaN.
fn heat_colours() -> impl Fn(f64) -> RGBColor {
    let map = DerivedColorMap::new(&[RGBColor(33, 102, 172), WHITE, RGBColor(178, 24, 43)]);
    move |t| match t.is_finite() {
        true => map.get_color_normalized(t, 0.0, 1.0),
        false => RGBColor(128, 128, 128),
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

    #[test]
    fn the_heat_colour_scale_runs_blue_white_red() {
        let heat_colour = heat_colours();
        assert_eq!(heat_colour(0.0), RGBColor(33, 102, 172));
        assert_eq!(heat_colour(0.5), RGBColor(255, 255, 255));
        assert_eq!(heat_colour(1.0), RGBColor(178, 24, 43));
        assert_eq!(heat_colour(f64::NAN), RGBColor(128, 128, 128));
    }
}
