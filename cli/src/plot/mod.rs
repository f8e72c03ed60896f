//! Figures as SVG or PNG, drawn with the plotters crate: panels stacked
//! vertically (or in a grid), each with its own axes, title and labels, holding
//! line, point and bar series, labelled vertical markers, and optionally a heat
//! map underneath.
//!
//! This module describes a figure; [`draw`] lays it out and draws it with
//! plotters, once for either backend, so the two outputs cannot drift apart.
//!
//! Degenerate data is drawn, not rejected: `to_svg`/`to_png` always return a valid
//! file (a series whose `x` and `y` do not match draws nothing, non-finite values
//! — and non-positive ones on a log axis — are skipped, an axis without data spans
//! 0..1). Only [`write()`] refuses a figure with nothing to draw, with
//! `InvalidInput`, because a CLI that writes an empty plot almost certainly has a
//! bug upstream.

mod draw;

use std::io;
use std::path::Path;

use plotters::prelude::{BitMapBackend, IntoDrawingArea, SVGBackend};

/// An sRGB colour.
pub type Rgb = [u8; 3];

/// Series and marker colours (the Tableau 10 palette, which stays distinguishable
/// for the common forms of colour blindness).
pub mod palette {
    use super::Rgb;
    pub const BLUE: Rgb = [31, 119, 180];
    pub const ORANGE: Rgb = [255, 127, 14];
    pub const RED: Rgb = [214, 39, 40];
    pub const GREY: Rgb = [127, 127, 127];
}

/// A figure: a title over panels laid out in `columns` columns, row by row.
#[derive(Clone, Debug)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
    /// 1 stacks the panels vertically.
    pub columns: usize,
    /// Pixels; default 900.
    pub width: u32,
    /// Pixels per row of panels; default 340.
    pub panel_height: u32,
}

impl Figure {
    pub const DEFAULT_WIDTH: u32 = 900;
    pub const DEFAULT_PANEL_HEIGHT: u32 = 340;

    pub fn new(title: impl Into<String>) -> Figure {
        Figure {
            title: title.into(),
            panels: Vec::new(),
            columns: 1,
            width: Self::DEFAULT_WIDTH,
            panel_height: Self::DEFAULT_PANEL_HEIGHT,
        }
    }

    pub fn with_panel(mut self, panel: Panel) -> Figure {
        self.panels.push(panel);
        self
    }

    /// Whether any panel has something to draw.
    pub fn has_data(&self) -> bool {
        self.panels.iter().any(Panel::has_data)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    #[default]
    Linear,
    /// log10; values <= 0 are not drawn.
    Log,
}

/// One set of axes.
#[derive(Clone, Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    /// Values the x axis must span besides the data's, e.g. (0, 1) for phase.
    pub x_include: Option<(f64, f64)>,
    /// Drawn under the series; its extents set the axes' ranges, and its row 0
    /// is at the top, so the y axis grows downwards (time down in a Hovmoller
    /// diagram). The axes of a heat-map panel are always linear.
    pub heat: Option<HeatMap>,
    pub series: Vec<Series>,
    pub markers: Vec<Marker>,
}

impl Panel {
    pub fn new(
        title: impl Into<String>,
        x_label: impl Into<String>,
        y_label: impl Into<String>,
    ) -> Panel {
        Panel {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            ..Panel::default()
        }
    }

    pub fn with_series(mut self, series: Series) -> Panel {
        self.series.push(series);
        self
    }

    pub fn with_marker(mut self, x: f64, label: impl Into<String>) -> Panel {
        self.markers.push(Marker {
            x,
            label: label.into(),
            colour: palette::RED,
        });
        self
    }

    pub fn with_heat(mut self, heat: HeatMap) -> Panel {
        self.heat = Some(heat);
        self
    }

    pub fn log_x(mut self) -> Panel {
        self.x_scale = Scale::Log;
        self
    }

    pub fn log_y(mut self) -> Panel {
        self.y_scale = Scale::Log;
        self
    }

    pub fn including_x(mut self, lo: f64, hi: f64) -> Panel {
        self.x_include = Some((lo, hi));
        self
    }

    /// The scales in force: a heat map's grid is linear in both directions.
    fn scales(&self) -> (Scale, Scale) {
        match self.heat {
            Some(_) => (Scale::Linear, Scale::Linear),
            None => (self.x_scale, self.y_scale),
        }
    }

    pub fn has_data(&self) -> bool {
        let (xs, ys) = self.scales();
        self.heat.as_ref().is_some_and(HeatMap::has_data)
            || self
                .series
                .iter()
                .any(|s| s.drawable(xs, ys).next().is_some())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// A polyline through the points in order.
    Line,
    /// A small filled square per point.
    Points,
    /// A histogram: `x` holds the bin edges (one more than `y`), `y` the heights;
    /// each bar rises from zero (from the bottom of a log axis).
    Bars,
}

#[derive(Clone, Debug)]
pub struct Series {
    /// Shown in the panel's legend; an empty name adds no legend entry.
    pub name: String,
    pub kind: SeriesKind,
    pub colour: Rgb,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Series {
    pub fn line(name: impl Into<String>, x: Vec<f64>, y: Vec<f64>) -> Series {
        Series::new(name, SeriesKind::Line, palette::BLUE, x, y)
    }

    pub fn points(name: impl Into<String>, x: Vec<f64>, y: Vec<f64>) -> Series {
        Series::new(name, SeriesKind::Points, palette::GREY, x, y)
    }

    pub fn bars(name: impl Into<String>, edges: Vec<f64>, heights: Vec<f64>) -> Series {
        Series::new(name, SeriesKind::Bars, palette::BLUE, edges, heights)
    }

    fn new(
        name: impl Into<String>,
        kind: SeriesKind,
        colour: Rgb,
        x: Vec<f64>,
        y: Vec<f64>,
    ) -> Series {
        Series {
            name: name.into(),
            kind,
            colour,
            x,
            y,
        }
    }

    pub fn with_colour(mut self, colour: Rgb) -> Series {
        self.colour = colour;
        self
    }

    /// The drawable data (see [`draw::shown`]) as ((x, y),
    /// right): for bars x is the left edge and y the height, for lines and
    /// points right is x itself. Lengths that do not match the kind yield
    /// nothing rather than a silently truncated series.
    fn drawable(&self, xs: Scale, ys: Scale) -> impl Iterator<Item = ((f64, f64), f64)> + '_ {
        let (n, bars) = match self.kind {
            SeriesKind::Bars if self.x.len() == self.y.len() + 1 => (self.y.len(), true),
            SeriesKind::Line | SeriesKind::Points if self.x.len() == self.y.len() => {
                (self.y.len(), false)
            }
            _ => (0, false),
        };
        (0..n).filter_map(move |i| {
            let x = draw::shown(xs, self.x[i])?;
            let y = draw::shown(ys, self.y[i])?;
            let right = if bars {
                draw::shown(xs, self.x[i + 1]).filter(|r| *r > x)?
            } else {
                x
            };
            Some(((x, y), right))
        })
    }
}

/// A vertical line across the plot area, labelled above it.
#[derive(Clone, Debug)]
pub struct Marker {
    /// Non-finite (or, on a log axis, non-positive) positions are not drawn.
    pub x: f64,
    pub label: String,
    pub colour: Rgb,
}

/// Most cells drawn per axis (rows and columns are block-averaged beyond), so
/// that either file stays small.
const MAX_CELLS: usize = 160;

/// A heat map (a Hovmoller diagram: time down, site across, colour = value):
/// colours run blue (low) - white - red (high) over the finite range of the data.
///
/// `values` holds `rows` x `cols`, row-major; row 0 is drawn at the top.
/// Cell (r, c) covers an equal share of `x_extent` (left to right) and
/// `y_extent` (top to bottom), so for samples at x = 0, 1, .. the extent
/// -0.5 .. cols - 0.5 centres each cell on its coordinate.
#[derive(Clone, Debug)]
pub struct HeatMap {
    pub rows: usize,
    pub cols: usize,
    pub values: Vec<f64>,
    pub x_extent: (f64, f64),
    pub y_extent: (f64, f64),
}

impl HeatMap {
    /// Whether the grid is well formed and holds a finite value.
    pub fn has_data(&self) -> bool {
        self.is_well_formed() && self.values.iter().any(|v| v.is_finite())
    }

    fn is_well_formed(&self) -> bool {
        self.rows > 0
            && self.cols > 0
            && self.rows.checked_mul(self.cols) == Some(self.values.len())
    }

    /// Block averages: (drawn rows, drawn cols, values), non-finite values
    /// skipped (a block without any is NaN). A malformed grid gives no cells.
    pub(crate) fn cells(&self) -> (usize, usize, Vec<f64>) {
        if !self.is_well_formed() {
            return (0, 0, Vec::new());
        }
        let (r, c) = (self.rows.min(MAX_CELLS), self.cols.min(MAX_CELLS));
        let block = |i: usize, drawn: usize, total: usize| {
            let start = i * total / drawn;
            start..((i + 1) * total / drawn).max(start + 1)
        };
        let mut out = vec![f64::NAN; r * c];
        for (k, cell) in out.iter_mut().enumerate() {
            let (rows, cols) = (block(k / c, r, self.rows), block(k % c, c, self.cols));
            let (mut sum, mut count) = (0.0, 0usize);
            for row in rows {
                for v in &self.values[row * self.cols..][cols.clone()] {
                    if v.is_finite() {
                        sum += v;
                        count += 1;
                    }
                }
            }
            if count > 0 {
                *cell = sum / count as f64;
            }
        }
        (r, c, out)
    }
}

/// The canvas of `figure` in pixels: its width, and the title band over the rows
/// of panels.
fn canvas_size(figure: &Figure) -> (u32, u32) {
    let columns = figure.columns.clamp(1, figure.panels.len().max(1));
    let rows = figure.panels.len().div_ceil(columns) as u32;
    let band = if figure.title.is_empty() {
        draw::NO_TITLE_BAND
    } else {
        draw::TITLE_BAND
    };
    let height = band.saturating_add(rows.saturating_mul(figure.panel_height.max(1)));
    (figure.width.max(1), height)
}

pub fn to_svg(figure: &Figure) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, canvas_size(figure)).into_drawing_area();
        // Only a figure too small for its margins fails part-way; it keeps what was drawn.
        let _ = draw::figure(figure, &root);
        // Writing to a string cannot fail.
        let _ = root.present();
    }
    svg
}

/// A PNG file: 8-bit RGB, compressed.
pub fn to_png(figure: &Figure) -> Vec<u8> {
    render_png(figure).0
}

/// The PNG and the panels' frames (empty where the figure was too small to draw).
fn render_png(figure: &Figure) -> (Vec<u8>, Vec<draw::Frame>) {
    let (width, height) = canvas_size(figure);
    let mut rgb = vec![0; width as usize * height as usize * 3];
    let frames = {
        let root = BitMapBackend::with_buffer(&mut rgb, (width, height)).into_drawing_area();
        let frames = draw::figure(figure, &root).unwrap_or_default();
        let _ = root.present();
        frames
    };
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // The default: on plots (large flat areas) High saves about 3% for 30% more time.
    encoder.set_compression(png::Compression::Balanced);
    // The buffer matches the size, and writing to memory cannot fail, so neither call can.
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&rgb))
        .expect("a well-formed RGB canvas encodes");
    (out, frames)
}
/// Writes by extension: ".svg" or ".png" (case-insensitive). Fails with
/// `InvalidInput` for any other extension and for a figure with nothing to draw.
pub fn write(figure: &Figure, path: &Path) -> io::Result<()> {
    let is_svg = is_svg(path)?;
    if !figure.has_data() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot plot {:?}: no panel has a finite value to draw",
                figure.title
            ),
        ));
    }
    let bytes = if is_svg {
        to_svg(figure).into_bytes()
    } else {
        to_png(figure)
    };
    crate::io::write_file(path, |out| out.write_all(&bytes))
}

/// Whether a plot at `path` is an SVG (else a PNG); another extension is an error.
pub fn is_svg(path: &Path) -> io::Result<bool> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(true),
        Some("png") => Ok(false),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "cannot write a plot to {}: unsupported extension (supported: .svg, .png)",
                path.display()
            ),
        )),
    }
}

/// Decoding and pixel queries for the tests of this module and of the figures.
#[cfg(test)]
pub(crate) mod testing {
    pub(crate) use super::draw::Frame;

    /// The figure as a decoded PNG, with its panels' plot areas.
    pub(crate) fn render(figure: &super::Figure) -> (Image, Vec<Frame>) {
        let (png, frames) = super::render_png(figure);
        (Image::decode(&png), frames)
    }

    /// The text of every `<text>` element of an SVG, in order.
    pub(crate) fn svg_texts(svg: &str) -> Vec<&str> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| t.split_once('>')?.1.split_once("</text>"))
            .map(|(text, _)| text.trim())
            .collect()
    }

    /// The stroke colour and points of every `<polyline>` of an SVG, in order.
    pub(crate) fn svg_polylines(svg: &str) -> Vec<(super::Rgb, Vec<(f64, f64)>)> {
        let attribute = |tag: &str, name: &str| -> String {
            let value = tag.split(&format!(" {name}=\"")).nth(1).unwrap_or("");
            value.split('"').next().unwrap_or("").to_string()
        };
        svg.split("<polyline")
            .skip(1)
            .map(|tag| {
                let hex = attribute(tag, "stroke");
                let channel = |i: usize| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16);
                let rgb = [0, 1, 2].map(|i| channel(i).expect("a #RRGGBB stroke"));
                let points = attribute(tag, "points")
                    .split_whitespace()
                    .map(|xy| {
                        let (x, y) = xy.split_once(',').expect("x,y");
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect();
                (rgb, points)
            })
            .collect()
    }

    /// The points of the SVG's polylines of colour `rgb`.
    pub(crate) fn svg_lines(svg: &str, rgb: super::Rgb) -> Vec<Vec<(f64, f64)>> {
        svg_polylines(svg)
            .into_iter()
            .filter(|(c, _)| *c == rgb)
            .map(|(_, points)| points)
            .collect()
    }

    /// A decoded 8-bit RGB PNG.
    pub(crate) struct Image {
        pub width: usize,
        pub height: usize,
        pub rgb: Vec<u8>,
    }

    impl Image {
        pub(crate) fn decode(png: &[u8]) -> Image {
            let decoder = png::Decoder::new(std::io::Cursor::new(png));
            let mut reader = decoder.read_info().expect("a PNG header");
            let mut rgb = vec![0; reader.output_buffer_size().unwrap()];
            let info = reader.next_frame(&mut rgb).expect("PNG image data");
            assert_eq!(info.color_type, png::ColorType::Rgb);
            assert_eq!(info.bit_depth, png::BitDepth::Eight);
            rgb.truncate(info.buffer_size());
            Image {
                width: info.width as usize,
                height: info.height as usize,
                rgb,
            }
        }

        pub(crate) fn at(&self, x: usize, y: usize) -> super::Rgb {
            let i = (y * self.width + x) * 3;
            [self.rgb[i], self.rgb[i + 1], self.rgb[i + 2]]
        }

        /// Whether pixel (x, y) is at least half ink of colour `rgb` over the white
        /// background (lines are anti-aliased, so few of their pixels are exact).
        pub(crate) fn is(&self, x: usize, y: usize, rgb: super::Rgb) -> bool {
            let contrast = rgb.iter().map(|c| 255 - i32::from(*c)).max().unwrap_or(0);
            let pixel = self.at(x, y);
            (0..3).all(|i| (i32::from(pixel[i]) - i32::from(rgb[i])).abs() * 2 <= contrast)
        }

        /// Rows in `rows` of column `x` (rounded) that are ink of colour `rgb` (see [`Image::is`]).
        pub(crate) fn rows_with(
            &self,
            x: f64,
            rows: std::ops::Range<f64>,
            rgb: super::Rgb,
        ) -> Vec<usize> {
            let x = x.round() as usize;
            (rows.start.round() as usize..rows.end.round() as usize)
                .filter(|&y| self.is(x, y, rgb))
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{render, svg_lines, svg_texts, Image};
    use super::*;

    fn line_panel(x: Vec<f64>, y: Vec<f64>) -> Panel {
        Panel::new("p", "x", "y").with_series(Series::line("", x, y))
    }

    #[test]
    fn write_rejects_bad_extensions_and_figures_without_data() {
        let dir = std::env::temp_dir();
        let good = Figure::new("t").with_panel(line_panel(vec![1.0, 2.0], vec![3.0, 4.0]));
        let err = write(&good, &dir.join("kernpack_plot_test.jpg")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(".svg") && err.to_string().contains(".png"));
        let empty_log = Figure::new("t").with_panel(line_panel(vec![1.0], vec![-1.0]).log_y());
        for figure in [
            Figure::new("no panels"),
            Figure::new("t").with_panel(Panel::new("empty", "x", "y")),
            Figure::new("t").with_panel(line_panel(vec![], vec![])),
            Figure::new("t").with_panel(line_panel(vec![1.0], vec![])),
            Figure::new("t").with_panel(line_panel(vec![1.0], vec![f64::NAN])),
            empty_log,
        ] {
            let err = write(&figure, &dir.join("kernpack_plot_test.svg")).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{}", figure.title);
        }
        let path = dir.join(format!("kernpack_plot_test_{}.PNG", std::process::id()));
        write(&good, &path).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn degenerate_figures_still_render_both_formats() {
        let heat = |rows, cols, values| HeatMap {
            rows,
            cols,
            values,
            x_extent: (0.0, 1.0),
            y_extent: (f64::NAN, f64::INFINITY),
        };
        let figures = [
            Figure::new("nothing"),
            Figure::new("flat").with_panel(
                line_panel(vec![1.0, 2.0, 3.0], vec![4.0; 3]).with_marker(f64::NAN, "m"),
            ),
            Figure::new("one point").with_panel(line_panel(vec![2.5], vec![0.0])),
            Figure::new("extreme")
                .with_panel(line_panel(vec![-f64::MAX, f64::MAX], vec![1e-320, 2e-320])),
            Figure::new("log of nothing")
                .with_panel(line_panel(vec![0.0], vec![0.0]).log_x().log_y()),
            Figure::new("bad heat")
                .with_panel(Panel::new("h", "x", "y").with_heat(heat(2, 2, vec![f64::NAN; 4])))
                .with_panel(Panel::new("h", "x", "y").with_heat(heat(2, 3, vec![1.0; 2]))),
            Figure {
                width: 0,
                panel_height: 0,
                columns: 0,
                ..Figure::new("zero size").with_panel(line_panel(vec![1.0, 2.0], vec![1.0, 2.0]))
            },
        ];
        for figure in &figures {
            let svg = to_svg(figure);
            assert!(svg.trim_end().ends_with("</svg>"), "{}", figure.title);
            assert!(
                !svg.contains("NaN") && !svg.contains("inf"),
                "{}: {svg}",
                figure.title
            );
            let image = Image::decode(&to_png(figure));
            assert!(image.width >= 1 && image.height >= 1);
        }
    }

    #[test]
    fn a_grid_of_panels_shares_the_canvas_and_aligns_columns() {
        let mut figure = Figure::new("grid");
        for k in 0..4 {
            let scale = 10f64.powi(3 * k);
            figure = figure.with_panel(line_panel(vec![0.0, 1.0], vec![0.0, scale]));
        }
        figure.columns = 2;
        let (image, f) = render(&figure);
        assert_eq!(f.len(), 4);
        let title_band = image.height - 2 * Figure::DEFAULT_PANEL_HEIGHT as usize;
        assert!((1..60).contains(&title_band), "{title_band}");
        // Same column: the same left edge, however wide the tick labels are.
        assert_eq!(f[0].left, f[2].left);
        assert_eq!(f[1].left, f[3].left);
        assert!(f[0].right < f[1].left && f[0].bottom < f[2].top);
        assert!(f.iter().all(|f| f.right <= image.width as f64));
    }

    #[test]
    fn tick_labels_are_short_numbers_and_log_ticks_powers_of_ten() {
        // The tick labels of a panel "p" with axes "x" and "y".
        let labels = |panel| {
            let svg = to_svg(&Figure::new("t").with_panel(panel));
            let texts = svg_texts(&svg).into_iter().map(str::to_owned);
            texts.skip(4).collect::<Vec<_>>()
        };
        // Log axes end on whole decades and are labelled at each.
        let log = labels(line_panel(vec![3e-4, 2e5], vec![0.03, 0.4]).log_x().log_y());
        let decades = [
            "0.01", "0.1", "1", "1e-4", "0.001", "0.01", "0.1", "1", "10",
        ];
        assert_eq!(log[..9], decades);
        assert_eq!(log[9..], ["100", "1000", "1e4", "1e5", "1e6"]);
        // Linear ticks: round steps, in e-notation for extreme magnitudes.
        let lin = labels(line_panel(vec![0.0, 2e9], vec![1e-7, 3e-7]));
        for label in ["1e-7", "1.2e-7", "3e-7", "0", "2e8", "1.2e9", "2e9"] {
            assert!(lin.contains(&label.to_owned()), "{label}: {lin:?}");
        }
        assert!(lin.iter().all(|l| l.len() <= 6), "{lin:?}");
        let lin = labels(line_panel(vec![12345.0, 12400.0], vec![-3.2, 7.9]));
        assert_eq!(lin[..6], ["-2", "0", "2", "4", "6", "8"]);
        assert_eq!(
            lin[6..],
            ["12350", "12360", "12370", "12380", "12390", "12400"]
        );
    }

    #[test]
    fn non_finite_non_positive_and_mismatched_data_is_not_drawn() {
        let lines = |panel| svg_lines(&to_svg(&Figure::new("t").with_panel(panel)), palette::BLUE);
        let x = vec![0.0, 1.0, 2.0, 3.0];
        let y = vec![1.0, f64::NAN, f64::INFINITY, 2.0];
        assert_eq!(lines(line_panel(x, y))[0].len(), 2);
        assert!(lines(line_panel(vec![0.0, 1.0], vec![1.0])).is_empty());
        let log = line_panel(vec![1.0, 2.0, 3.0], vec![-1.0, 0.0, 5.0]).log_y();
        assert_eq!(lines(log)[0].len(), 2);
        // Bars need one more edge than heights.
        let bars = Series::bars("", vec![0.0, 1.0], vec![1.0, 2.0]).with_colour([1, 2, 3]);
        let svg = to_svg(&Figure::new("t").with_panel(Panel::new("b", "", "").with_series(bars)));
        assert!(!svg.contains("#010203"));
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
        let figure =
            Figure::new("t").with_panel(line_panel(x, y).with_marker(peak as f64 * 1e-6, "peak"));
        let svg = to_svg(&figure);
        let points = svg_lines(&svg, palette::BLUE).remove(0);
        assert!(
            points.len() <= 2 * figure.width as usize,
            "{} points",
            points.len()
        );
        let top = points.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let (peak_px, peak_py) = *points.iter().find(|p| p.1 == top).unwrap();
        let frame = &render(&figure).1[0];
        assert!((peak_px - frame.px(peak as f64 * 1e-6)).abs() <= 1.0);
        assert!(
            (peak_py - frame.py(50.0)).abs() <= 1.0,
            "{peak_py} vs {}",
            frame.py(50.0)
        );
        // The marker runs down the peak's column.
        let marker = svg_lines(&svg, palette::RED);
        assert!(marker.iter().flatten().all(|p| p.0 == peak_px));
    }

    #[test]
    fn points_are_one_dot_per_pixel_and_markers_widen_the_axis() {
        let x: Vec<f64> = (0..100_000).map(|i| (i % 7) as f64).collect();
        let y = x.clone();
        let mut panel = Panel::new("p", "x", "y").with_series(Series::points("dots", x, y));
        panel.markers.push(Marker {
            x: 20.0,
            label: "far".into(),
            colour: [0, 0, 0],
        });
        let figure = Figure::new("t").with_panel(panel);
        // The 7 distinct points, and the legend's swatch.
        assert_eq!(to_svg(&figure).matches("<circle").count(), 8);
        let (_, frames) = render(&figure);
        assert!((frames[0].px(20.0) - frames[0].right).abs() <= 1.0);
    }

    #[test]
    fn large_heat_maps_are_averaged_down_and_malformed_ones_give_no_cells() {
        let (rows, cols) = (500, 960);
        let values: Vec<f64> = (0..rows * cols)
            .map(|k| ((k % cols) as f64 * 0.05).sin())
            .collect();
        let map = HeatMap {
            rows,
            cols,
            values,
            x_extent: (0.0, 1.0),
            y_extent: (0.0, 1.0),
        };
        let (r, c, cells) = map.cells();
        assert_eq!((r, c), (MAX_CELLS, MAX_CELLS));
        assert!(cells.iter().all(|v| v.is_finite() && v.abs() <= 1.0));
        // Column 0 of the cells averages sites 0..6 of every row.
        let expected = (0..6).map(|i| (i as f64 * 0.05).sin()).sum::<f64>() / 6.0;
        assert!((cells[0] - expected).abs() < 1e-12);

        let bad = HeatMap {
            rows: 2,
            cols: 3,
            values: vec![1.0; 5],
            ..map
        };
        assert_eq!(bad.cells().0, 0);
        assert!(!bad.has_data());
    }
}
