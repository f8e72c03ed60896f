//! A [`Figure`] reduced to a display list in pixel coordinates, which the SVG
//! writer and the rasteriser translate item by item.

use std::collections::HashSet;

use super::axis::{to_axis, Axis, Fit, Range};
use super::heatmap::{self, LEVELS};
use super::{font, Figure, Panel, Rgb, Scale, Series, SeriesKind};

pub(crate) const TEXT_RGB: Rgb = [34, 34, 34];
pub(crate) const GRID_RGB: Rgb = [225, 225, 225];

const TITLE_SIZE: f64 = 3.0 * font::EM as f64;
const TEXT_SIZE: f64 = 2.0 * font::EM as f64;
const TICK_LEN: f64 = 6.0;
const GAP: f64 = 8.0;
/// Above each panel's title, separating it from the panel above.
const PANEL_PAD: f64 = 2.0 * GAP;
/// Side of the square drawn per point.
const POINT_SIZE: f64 = 4.0;
const LINE_WIDTH: f64 = 2.0;
const COLOUR_BAR_WIDTH: f64 = 14.0;
const BAR_TICK_LEN: f64 = 3.0;
const SWATCH: f64 = 20.0;
const LEGEND_SPACING: f64 = 2.0 * GAP;

/// Width of `text` at line height `size`, using the bitmap font's proportions: the
/// PNG's exact width, and an over-estimate for SVG's narrower monospace, which only
/// makes margins a little generous.
fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * font::CELL_W as f64 / font::EM as f64
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Stroke {
    pub rgb: Rgb,
    pub width: f64,
    pub dashed: bool,
    /// A horizontal or vertical rule that SVG should keep on whole pixels.
    pub crisp: bool,
}

impl Stroke {
    const GRID: Stroke = Stroke {
        rgb: GRID_RGB,
        width: 1.0,
        dashed: false,
        crisp: true,
    };
    const AXIS: Stroke = Stroke {
        rgb: TEXT_RGB,
        width: 1.0,
        dashed: false,
        crisp: true,
    };

    fn data(rgb: Rgb) -> Stroke {
        Stroke {
            rgb,
            width: LINE_WIDTH,
            dashed: false,
            crisp: false,
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
    pub rgb: Rgb,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Item {
    Line {
        from: (f64, f64),
        to: (f64, f64),
        stroke: Stroke,
    },
    /// A data curve; a lone point is repeated so that it still shows as a dot.
    Polyline {
        points: Vec<(f64, f64)>,
        stroke: Stroke,
    },
    /// Filled squares of side `size` centred on the points.
    Marks {
        centres: Vec<(f64, f64)>,
        size: f64,
        rgb: Rgb,
    },
    Rect {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        rgb: Rgb,
    },
    /// `rows` x `cols` equal cells filling the rectangle, row-major from the top.
    Cells {
        x: f64,
        y: f64,
        w: f64,
        h: f64,
        cols: usize,
        rows: usize,
        rgb: Vec<Rgb>,
    },
    Text(Text),
}

/// A figure reduced to pixel-space primitives, in painting order.
pub(crate) struct Layout {
    pub width: u32,
    pub height: u32,
    pub items: Vec<Item>,
    /// Each panel's plot area and data-to-pixel mapping, in panel order: what
    /// the tests need to find data in the rendered pixels.
    #[cfg_attr(not(test), allow(dead_code))]
    pub panels: Vec<Frame>,
}

/// A panel's plot area inside the canvas, and the data-to-pixel mapping onto it.
#[derive(Clone, Debug)]
pub(crate) struct Frame {
    pub left: f64,
    pub right: f64,
    pub top: f64,
    pub bottom: f64,
    #[cfg_attr(not(test), allow(dead_code))]
    x_scale: Scale,
    y_scale: Scale,
    /// Axis-space ranges (log10 on a log axis).
    x: Range,
    y: Range,
    /// Heat-map panels put their first row, the low end of y, at the top.
    y_down: bool,
}

impl Frame {
    /// Pixel column of data value `x`; NaN where the axis cannot show it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn px(&self, x: f64) -> f64 {
        self.px_axis(to_axis(self.x_scale, x).unwrap_or(f64::NAN))
    }

    /// Pixel row of data value `y` (pixel rows grow downwards); NaN where the
    /// axis cannot show it.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn py(&self, y: f64) -> f64 {
        self.py_axis(to_axis(self.y_scale, y).unwrap_or(f64::NAN))
    }

    fn px_axis(&self, a: f64) -> f64 {
        self.left + (a - self.x.lo) / self.x.span() * (self.right - self.left)
    }

    fn py_axis(&self, a: f64) -> f64 {
        let f = (a - self.y.lo) / self.y.span() * (self.bottom - self.top);
        if self.y_down {
            self.top + f
        } else {
            self.bottom - f
        }
    }

    /// Where bars rise from: zero on a linear axis, the axis end on a log one.
    fn base(&self) -> f64 {
        match self.y_scale {
            Scale::Linear => self.py_axis(0.0),
            Scale::Log => self.py_axis(self.y.lo),
        }
    }
}

/// A panel's axes and heat-map cells, decided before the panels share out the
/// canvas (the margins depend on the tick labels).
struct Prepared<'a> {
    panel: &'a Panel,
    x_scale: Scale,
    y_scale: Scale,
    x_axis: Axis,
    y_axis: Axis,
    heat: Option<Heat>,
    /// Marker positions in axis space, with the marker.
    markers: Vec<(f64, &'a super::Marker)>,
}

struct Heat {
    rows: usize,
    cols: usize,
    rgb: Vec<Rgb>,
    /// The colour bar's value axis.
    scale: Axis,
}

impl<'a> Prepared<'a> {
    fn new(panel: &'a Panel) -> Prepared<'a> {
        let (x_scale, y_scale) = panel.scales();
        let (mut x, mut y) = (Range::EMPTY, Range::EMPTY);
        let heat = panel.heat.as_ref().filter(|h| h.has_data()).map(|map| {
            let extent = |(lo, hi): (f64, f64), count: usize| {
                if lo.is_finite() && hi.is_finite() && lo < hi {
                    (lo, hi)
                } else {
                    (0.0, count as f64)
                }
            };
            for (range, (lo, hi)) in [
                (&mut x, extent(map.x_extent, map.cols)),
                (&mut y, extent(map.y_extent, map.rows)),
            ] {
                range.include(to_axis(Scale::Linear, lo).unwrap_or(0.0));
                range.include(to_axis(Scale::Linear, hi).unwrap_or(1.0));
            }
            let (rows, cols, cells) = map.cells();
            // has_data guarantees a finite cell.
            let values = heatmap::value_range(&cells).unwrap_or((0.0, 1.0));
            Heat {
                rows,
                cols,
                rgb: cells
                    .iter()
                    .map(|v| heatmap::colour(heatmap::level(*v, values)))
                    .collect(),
                scale: Axis::new(
                    Scale::Linear,
                    Range {
                        lo: values.0,
                        hi: values.1,
                    },
                    Fit::Tight,
                ),
            }
        });
        for series in &panel.series {
            for ((px, py), right) in series.drawable(x_scale, y_scale) {
                x.include(px);
                x.include(right);
                y.include(py);
                if series.kind == SeriesKind::Bars && y_scale == Scale::Linear {
                    y.include(0.0);
                }
            }
        }
        let markers: Vec<_> = panel
            .markers
            .iter()
            .filter_map(|m| Some((to_axis(x_scale, m.x)?, m)))
            .collect();
        markers.iter().for_each(|(v, _)| x.include(*v));
        if let Some((lo, hi)) = panel.x_include {
            [lo, hi]
                .iter()
                .filter_map(|v| to_axis(x_scale, *v))
                .for_each(|v| x.include(v));
        }
        let y_fit = if heat.is_some() {
            Fit::Tight
        } else {
            Fit::Loose
        };
        Prepared {
            panel,
            x_scale,
            y_scale,
            x_axis: Axis::new(x_scale, x, Fit::Tight),
            y_axis: Axis::new(y_scale, y, y_fit),
            heat,
            markers,
        }
    }

    /// Room left of the plot area: the y label, the tick labels, the ticks.
    fn left_margin(&self) -> f64 {
        GAP + TEXT_SIZE + GAP + widest(&self.y_axis.labels) + GAP + TICK_LEN
    }

    /// Room right of the plot area: half the last x tick label, which may sit
    /// on the right edge, and the colour bar with its labels.
    fn right_margin(&self) -> f64 {
        let last_x_label = self
            .x_axis
            .labels
            .last()
            .map_or(0.0, |l| text_width(l, TEXT_SIZE));
        let edge = (GAP + last_x_label / 2.0).max(3.0 * GAP);
        let bar = self.heat.as_ref().map_or(0.0, |h| {
            2.0 * GAP + COLOUR_BAR_WIDTH + BAR_TICK_LEN + GAP + widest(&h.scale.labels)
        });
        edge + bar
    }
}

fn widest(labels: &[String]) -> f64 {
    labels
        .iter()
        .map(|l| text_width(l, TEXT_SIZE))
        .fold(0.0, f64::max)
}

impl Layout {
    pub(crate) fn new(figure: &Figure) -> Layout {
        let width = figure.width.max(1);
        let columns = figure.columns.clamp(1, figure.panels.len().max(1));
        let rows = figure.panels.len().div_ceil(columns);
        // The large size where the title fits, else the size of other text.
        let title_size = if text_width(&figure.title, TITLE_SIZE) <= f64::from(width) - 2.0 * GAP {
            TITLE_SIZE
        } else {
            TEXT_SIZE
        };
        let title_band = if figure.title.is_empty() {
            GAP
        } else {
            GAP + title_size + GAP
        } as u32;
        let panel_height = figure.panel_height.max(1);
        let height = title_band.saturating_add((rows as u32).saturating_mul(panel_height));

        let prepared: Vec<Prepared> = figure.panels.iter().map(Prepared::new).collect();
        // Panels in one column share their left and right edges.
        let (mut left, mut right) = (vec![0.0f64; columns], vec![0.0f64; columns]);
        for (i, p) in prepared.iter().enumerate() {
            left[i % columns] = left[i % columns].max(p.left_margin());
            right[i % columns] = right[i % columns].max(p.right_margin());
        }

        let mut items = Items::default();
        items.text(
            &figure.title,
            (f64::from(width) / 2.0, GAP + title_size / 2.0),
            Anchor::Middle,
            title_size,
        );
        let cell_w = f64::from(width) / columns as f64;
        let panels = prepared
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (col, row) = (i % columns, i / columns);
                let cell_left = col as f64 * cell_w;
                let cell_top = f64::from(title_band) + row as f64 * f64::from(panel_height);
                let left = cell_left + left[col];
                // A figure too small for its margins still gets (tiny) plot areas.
                let right = (cell_left + cell_w - right[col]).max(left + 1.0);
                // The legend shares the title's row where both fit, else gets its own.
                let title_y = cell_top + PANEL_PAD + TEXT_SIZE / 2.0;
                let legend = legend_width(&p.panel.series);
                let title = text_width(&p.panel.title, TEXT_SIZE);
                let (legend_y, legend_row) =
                    if legend > 0.0 && title + 2.0 * GAP + legend > right - left {
                        (title_y + TEXT_SIZE + GAP / 2.0, TEXT_SIZE + GAP / 2.0)
                    } else {
                        (title_y, 0.0)
                    };
                let marker_row = if p.markers.is_empty() {
                    0.0
                } else {
                    TEXT_SIZE + GAP
                };
                let top = cell_top + PANEL_PAD + TEXT_SIZE + GAP + legend_row + marker_row;
                let bottom = cell_top + f64::from(panel_height)
                    - (TICK_LEN + GAP / 2.0 + TEXT_SIZE + GAP + TEXT_SIZE + GAP);
                let frame = Frame {
                    left,
                    right,
                    top,
                    bottom: bottom.max(top + 1.0),
                    x_scale: p.x_scale,
                    y_scale: p.y_scale,
                    x: p.x_axis.range,
                    y: p.y_axis.range,
                    y_down: p.heat.is_some(),
                };
                let rows = (title_y, legend_y);
                items.panel(p, &frame, (cell_left, cell_left + cell_w), rows);
                frame
            })
            .collect();
        Layout {
            width,
            height: height.max(1),
            items: items.0,
            panels,
        }
    }
}

/// The display list under construction.
#[derive(Default)]
struct Items(Vec<Item>);

impl Items {
    fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: Stroke) {
        self.0.push(Item::Line { from, to, stroke });
    }

    fn text(&mut self, text: &str, (x, y): (f64, f64), anchor: Anchor, size: f64) {
        self.coloured_text(text, (x, y), anchor, size, TEXT_RGB);
    }

    fn coloured_text(
        &mut self,
        text: &str,
        (x, y): (f64, f64),
        anchor: Anchor,
        size: f64,
        rgb: Rgb,
    ) {
        if text.is_empty() {
            return;
        }
        self.0.push(Item::Text(Text {
            text: text.to_string(),
            x,
            y,
            anchor,
            vertical: false,
            size,
            rgb,
        }));
    }

    /// Everything of one panel, bottom layer first: grid, heat map, markers
    /// (under the data, so that the peak one marks stays visible), series,
    /// axes, text.
    /// `title_y` and `legend_y`: the centres of the rows above the plot area.
    fn panel(
        &mut self,
        p: &Prepared,
        f: &Frame,
        (cell_left, cell_right): (f64, f64),
        (title_y, legend_y): (f64, f64),
    ) {
        match &p.heat {
            Some(heat) => self.heat(heat, f),
            None => self.grid(p, f),
        }
        for (x, marker) in &p.markers {
            let px = f.px_axis(*x);
            let stroke = Stroke {
                dashed: true,
                crisp: true,
                ..Stroke::data(marker.colour)
            };
            self.line((px, f.top), (px, f.bottom), stroke);
            // Above the plot area, where no data can hide it, centred on the line
            // but pushed sideways rather than out of the panel.
            let half = text_width(&marker.label, TEXT_SIZE) / 2.0;
            let (x, anchor) = if px - half < cell_left + GAP {
                (cell_left + GAP, Anchor::Start)
            } else if px + half > cell_right - GAP {
                (cell_right - GAP, Anchor::End)
            } else {
                (px, Anchor::Middle)
            };
            let y = f.top - GAP / 2.0 - TEXT_SIZE / 2.0;
            self.coloured_text(&marker.label, (x, y), anchor, TEXT_SIZE, marker.colour);
        }
        for series in &p.panel.series {
            self.series(series, p, f);
        }
        self.axes(p, f);

        self.text(&p.panel.title, (f.left, title_y), Anchor::Start, TEXT_SIZE);
        self.legend(&p.panel.series, f.right, legend_y);
        let x_label_y = f.bottom + TICK_LEN + GAP / 2.0 + TEXT_SIZE + GAP + TEXT_SIZE / 2.0;
        self.text(
            &p.panel.x_label,
            ((f.left + f.right) / 2.0, x_label_y),
            Anchor::Middle,
            TEXT_SIZE,
        );
        if !p.panel.y_label.is_empty() {
            self.0.push(Item::Text(Text {
                text: p.panel.y_label.clone(),
                x: cell_left + GAP + TEXT_SIZE / 2.0,
                y: (f.top + f.bottom) / 2.0,
                anchor: Anchor::Middle,
                vertical: true,
                size: TEXT_SIZE,
                rgb: TEXT_RGB,
            }));
        }
    }

    fn grid(&mut self, p: &Prepared, f: &Frame) {
        for &v in &p.x_axis.values {
            let x = f.px_axis(v);
            self.line((x, f.top), (x, f.bottom), Stroke::GRID);
        }
        for &v in &p.y_axis.values {
            let y = f.py_axis(v);
            self.line((f.left, y), (f.right, y), Stroke::GRID);
        }
    }

    /// The cells over the whole plot area, and a colour bar to its right with
    /// the values labelled.
    fn heat(&mut self, heat: &Heat, f: &Frame) {
        self.0.push(Item::Cells {
            x: f.left,
            y: f.top,
            w: f.right - f.left,
            h: f.bottom - f.top,
            cols: heat.cols,
            rows: heat.rows,
            rgb: heat.rgb.clone(),
        });
        let bar_left = f.right + 2.0 * GAP;
        let bar_right = bar_left + COLOUR_BAR_WIDTH;
        let steps = (LEVELS - 1) as f64;
        self.0.push(Item::Cells {
            x: bar_left,
            y: f.top,
            w: COLOUR_BAR_WIDTH,
            h: f.bottom - f.top,
            cols: 1,
            rows: LEVELS,
            rgb: (0..LEVELS)
                .map(|k| heatmap::colour(1.0 - k as f64 / steps))
                .collect(),
        });
        let range = heat.scale.range;
        for (&v, label) in heat.scale.values.iter().zip(&heat.scale.labels) {
            let y = f.bottom - (v - range.lo) / range.span() * (f.bottom - f.top);
            self.line((bar_right, y), (bar_right + BAR_TICK_LEN, y), Stroke::AXIS);
            // A full gap, so that tick and label do not read as a minus sign.
            let at = (bar_right + BAR_TICK_LEN + GAP, y);
            self.text(label, at, Anchor::Start, TEXT_SIZE);
        }
    }

    fn series(&mut self, series: &Series, p: &Prepared, f: &Frame) {
        let data = series.drawable(p.x_scale, p.y_scale);
        match series.kind {
            SeriesKind::Line => {
                let points = decimate(data.map(|((x, y), _)| (f.px_axis(x), f.py_axis(y))));
                let points = match points.len() {
                    0 => return,
                    1 => vec![points[0], points[0]],
                    _ => points,
                };
                let stroke = Stroke::data(series.colour);
                self.0.push(Item::Polyline { points, stroke });
            }
            SeriesKind::Points => {
                // One square per occupied pixel: a million points stay a small file.
                let mut seen = HashSet::new();
                let centres: Vec<_> = data
                    .map(|((x, y), _)| (f.px_axis(x), f.py_axis(y)))
                    .filter(|(x, y)| seen.insert((x.round() as i64, y.round() as i64)))
                    .collect();
                if !centres.is_empty() {
                    self.0.push(Item::Marks {
                        centres,
                        size: POINT_SIZE,
                        rgb: series.colour,
                    });
                }
            }
            SeriesKind::Bars => {
                let base = f.base();
                for ((x0, h), x1) in data {
                    let (left, right) = (f.px_axis(x0), f.px_axis(x1));
                    // A pixel of background between neighbouring bars that are wide enough.
                    let w = if right - left >= 4.0 {
                        right - left - 1.0
                    } else {
                        right - left
                    };
                    let top = f.py_axis(h);
                    let (y, h) = (top.min(base), (top - base).abs());
                    if h > 0.0 {
                        let rgb = series.colour;
                        self.0.push(Item::Rect {
                            x: left,
                            y,
                            w,
                            h: h.max(1.0),
                            rgb,
                        });
                    }
                }
            }
        }
    }

    fn axes(&mut self, p: &Prepared, f: &Frame) {
        self.line((f.left, f.bottom), (f.right, f.bottom), Stroke::AXIS);
        self.line((f.left, f.top), (f.left, f.bottom), Stroke::AXIS);
        let label_y = f.bottom + TICK_LEN + GAP / 2.0 + TEXT_SIZE / 2.0;
        for (&v, label) in p.x_axis.values.iter().zip(&p.x_axis.labels) {
            let x = f.px_axis(v);
            self.line((x, f.bottom), (x, f.bottom + TICK_LEN), Stroke::AXIS);
            self.text(label, (x, label_y), Anchor::Middle, TEXT_SIZE);
        }
        let label_x = f.left - TICK_LEN - GAP;
        for (&v, label) in p.y_axis.values.iter().zip(&p.y_axis.labels) {
            let y = f.py_axis(v);
            self.line((f.left - TICK_LEN, y), (f.left, y), Stroke::AXIS);
            self.text(label, (label_x, y), Anchor::End, TEXT_SIZE);
        }
    }

    /// Named series, right-aligned at `right` on the title row: a swatch in the
    /// series' style, then its name.
    fn legend(&mut self, series: &[Series], right: f64, y: f64) {
        let mut x = right - legend_width(series);
        for s in series.iter().filter(|s| !s.name.is_empty()) {
            match s.kind {
                SeriesKind::Line => self.line((x, y), (x + SWATCH, y), Stroke::data(s.colour)),
                SeriesKind::Points => self.0.push(Item::Marks {
                    centres: vec![(x + SWATCH / 2.0, y)],
                    size: POINT_SIZE + 2.0,
                    rgb: s.colour,
                }),
                SeriesKind::Bars => self.0.push(Item::Rect {
                    x: x + SWATCH / 4.0,
                    y: y - SWATCH / 4.0,
                    w: SWATCH / 2.0,
                    h: SWATCH / 2.0,
                    rgb: s.colour,
                }),
            }
            self.text(
                &s.name,
                (x + SWATCH + GAP / 2.0, y),
                Anchor::Start,
                TEXT_SIZE,
            );
            x += legend_entry(s) + LEGEND_SPACING;
        }
    }
}

fn legend_entry(s: &Series) -> f64 {
    SWATCH + GAP / 2.0 + text_width(&s.name, TEXT_SIZE)
}

/// The legend of the named series; 0 when none is named.
fn legend_width(series: &[Series]) -> f64 {
    let named = series.iter().filter(|s| !s.name.is_empty());
    let total: f64 = named.map(|s| legend_entry(s) + LEGEND_SPACING).sum();
    (total - LEGEND_SPACING).max(0.0)
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
    use super::super::{HeatMap, Marker};
    use super::*;

    fn all_finite(layout: &Layout) -> bool {
        let finite = |p: &(f64, f64)| p.0.is_finite() && p.1.is_finite();
        layout.items.iter().all(|item| match item {
            Item::Line { from, to, .. } => finite(from) && finite(to),
            Item::Polyline { points, .. } => points.iter().all(finite),
            Item::Marks { centres, .. } => centres.iter().all(finite),
            Item::Rect { x, y, w, h, .. } | Item::Cells { x, y, w, h, .. } => {
                [x, y, w, h].iter().all(|v| v.is_finite())
            }
            Item::Text(t) => t.x.is_finite() && t.y.is_finite(),
        })
    }

    fn figure(panel: Panel) -> Figure {
        Figure::new("t").with_panel(panel)
    }

    fn line(x: Vec<f64>, y: Vec<f64>) -> Panel {
        Panel::new("p", "x", "y").with_series(Series::line("", x, y))
    }

    fn polyline(layout: &Layout) -> Option<Vec<(f64, f64)>> {
        layout.items.iter().find_map(|i| match i {
            Item::Polyline { points, .. } => Some(points.clone()),
            _ => None,
        })
    }

    #[test]
    fn flat_single_point_and_extreme_series_get_a_finite_layout() {
        for (x, y) in [
            (vec![1.0, 2.0, 3.0], vec![4.0; 3]),
            (vec![2.5], vec![0.0]),
            (vec![], vec![]),
            (vec![-f64::MAX, f64::MAX], vec![1e-320, 2e-320]),
        ] {
            assert!(all_finite(&Layout::new(&figure(line(
                x.clone(),
                y.clone()
            )))));
            assert!(all_finite(&Layout::new(&figure(
                line(x, y).log_x().log_y()
            ))));
        }
        let heat = HeatMap {
            rows: 1,
            cols: 1,
            values: vec![3.0],
            x_extent: (f64::NAN, 0.0),
            y_extent: (1.0, 1.0),
        };
        let layout = Layout::new(&figure(Panel::new("h", "", "").with_heat(heat)));
        assert!(all_finite(&layout));
    }

    #[test]
    fn non_finite_non_positive_and_mismatched_data_is_not_drawn() {
        let x = vec![0.0, 1.0, 2.0, 3.0];
        let y = vec![1.0, f64::NAN, f64::INFINITY, 2.0];
        assert_eq!(
            polyline(&Layout::new(&figure(line(x, y)))).unwrap().len(),
            2
        );
        assert_eq!(
            polyline(&Layout::new(&figure(line(vec![0.0, 1.0], vec![1.0])))),
            None
        );
        let log = line(vec![1.0, 2.0, 3.0], vec![-1.0, 0.0, 5.0]).log_y();
        assert_eq!(polyline(&Layout::new(&figure(log))).unwrap().len(), 2);
        // Bars need one more edge than heights.
        let bars =
            Panel::new("b", "", "").with_series(Series::bars("", vec![0.0, 1.0], vec![1.0, 2.0]));
        let layout = Layout::new(&figure(bars));
        assert!(!layout.items.iter().any(|i| matches!(i, Item::Rect { .. })));
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
        let figure = figure(line(x, y).with_marker(peak as f64 * 1e-6, "peak"));
        let layout = Layout::new(&figure);
        let points = polyline(&layout).unwrap();
        assert!(
            points.len() <= 2 * figure.width as usize,
            "{} points",
            points.len()
        );
        let top = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let (peak_px, peak_py) = *points.iter().find(|p| p.1 == top).unwrap();
        let frame = &layout.panels[0];
        assert_eq!(peak_px, frame.px(peak as f64 * 1e-6));
        // 50 lies on the top tick, so the peak must sit on the top of the plot area.
        assert_eq!(peak_py, frame.top);
        let marker = layout.items.iter().find_map(|i| match i {
            Item::Line { from, stroke, .. } if stroke.dashed => Some(from.0),
            _ => None,
        });
        assert_eq!(marker, Some(peak_px));
    }

    #[test]
    fn points_are_one_square_per_pixel_and_markers_widen_the_axis() {
        let x: Vec<f64> = (0..100_000).map(|i| (i % 7) as f64).collect();
        let y = x.clone();
        let mut panel = Panel::new("p", "x", "y").with_series(Series::points("dots", x, y));
        panel.markers.push(Marker {
            x: 20.0,
            label: "far".into(),
            colour: [0, 0, 0],
        });
        let layout = Layout::new(&figure(panel));
        let centres = layout.items.iter().find_map(|i| match i {
            Item::Marks { centres, size, .. } if *size == POINT_SIZE => Some(centres.len()),
            _ => None,
        });
        assert_eq!(centres, Some(7));
        let frame = &layout.panels[0];
        assert!((frame.px(20.0) - frame.right).abs() < 1e-9);
    }
}
