//! Figures as SVG or PNG, drawn with the plotters crate: a title over panels
//! stacked vertically, each with its own axes, title and labels, holding line,
//! point and bar series, labelled vertical markers, and optionally a heat map
//! underneath.
//!
//! This module describes a figure; [`draw`] lays it out and draws it with
//! plotters, once for either backend, so the two outputs cannot drift apart.
//!
//! Degenerate data is drawn, not rejected: rendering always gives a valid file
//! (a series whose `x` and `y` do not match draws nothing, non-finite values —
//! and non-positive ones on a log axis — are skipped, an axis without data spans
//! 0..1). Only [`write()`] refuses a figure with nothing to draw, because a CLI
//! that writes an empty plot almost certainly has a bug upstream.

mod draw;

use std::path::Path;

use plotters::prelude::{BitMapBackend, IntoDrawingArea, RGBColor, SVGBackend};

/// Series and marker colours (the Tableau 10 palette, which stays distinguishable
/// for the common forms of colour blindness).
pub mod palette {
    use plotters::style::RGBColor;
    pub const BLUE: RGBColor = RGBColor(31, 119, 180);
    pub const ORANGE: RGBColor = RGBColor(255, 127, 14);
    pub const RED: RGBColor = RGBColor(214, 39, 40);
    pub const GREY: RGBColor = RGBColor(127, 127, 127);
}

/// Width of a figure in pixels.
pub const WIDTH: u32 = 900;
/// Height of each panel in pixels.
pub const PANEL_HEIGHT: u32 = 340;

/// A figure: a title over panels stacked vertically.
#[derive(Debug)]
pub struct Figure {
    pub title: String,
    pub panels: Vec<Panel>,
}

impl Figure {
    /// Whether any panel has something to draw.
    pub fn has_data(&self) -> bool {
        self.panels.iter().any(Panel::has_data)
    }
}

/// One set of axes.
#[derive(Debug, Default)]
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// log10 axes; values <= 0 are not drawn on them.
    pub log_x: bool,
    pub log_y: bool,
    /// Values the x axis must span besides the data's, e.g. (0, 1) for phase.
    pub x_include: Option<(f64, f64)>,
    /// Drawn under the series; its extents set the axes' ranges, and its row 0
    /// is at the top, so the y axis grows downwards (time down in a Hovmoller
    /// diagram). A heat-map panel's axes are linear.
    pub heat: Option<HeatMap>,
    pub series: Vec<Series>,
    /// Vertical lines across the plot area at x, each labelled above it; a
    /// position the x axis cannot show (non-finite, or non-positive on a log
    /// axis) is not drawn.
    pub markers: Vec<(f64, String)>,
}

impl Panel {
    pub fn new(title: impl Into<String>, x_label: &str, y_label: &str) -> Panel {
        Panel {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            ..Panel::default()
        }
    }

    pub fn has_data(&self) -> bool {
        self.heat.as_ref().is_some_and(HeatMap::has_data)
            || self
                .series
                .iter()
                .any(|s| s.drawable(self).next().is_some())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SeriesKind {
    /// A polyline through the points in order.
    Line,
    /// A small filled circle per point.
    Points,
    /// A histogram: `x` holds the bin edges (one more than `y`), `y` the heights;
    /// each bar rises from zero (from the bottom of a log axis).
    Bars,
}

#[derive(Debug)]
pub struct Series {
    /// Shown in the panel's legend; an empty name adds no legend entry.
    pub name: String,
    pub kind: SeriesKind,
    pub colour: RGBColor,
    pub x: Vec<f64>,
    pub y: Vec<f64>,
}

impl Series {
    /// A series in its kind's colour: blue lines and bars, grey points.
    pub fn new(
        kind: SeriesKind,
        name: &str,
        x: impl Into<Vec<f64>>,
        y: impl Into<Vec<f64>>,
    ) -> Series {
        let colour = match kind {
            SeriesKind::Points => palette::GREY,
            SeriesKind::Line | SeriesKind::Bars => palette::BLUE,
        };
        Series {
            name: name.into(),
            kind,
            colour,
            x: x.into(),
            y: y.into(),
        }
    }

    /// The data the axes of `panel` can show (see [`draw::shown`]) as ((x, y),
    /// right): for bars x is the left edge and y the height, for lines and
    /// points right is x itself. Lengths that do not match the kind yield
    /// nothing rather than a silently truncated series.
    fn drawable(&self, panel: &Panel) -> impl Iterator<Item = ((f64, f64), f64)> + '_ {
        let (n, bars) = match self.kind {
            SeriesKind::Bars if self.x.len() == self.y.len() + 1 => (self.y.len(), true),
            SeriesKind::Line | SeriesKind::Points if self.x.len() == self.y.len() => {
                (self.y.len(), false)
            }
            _ => (0, false),
        };
        let (log_x, log_y) = (panel.log_x, panel.log_y);
        (0..n).filter_map(move |i| {
            let x = draw::shown(log_x, self.x[i])?;
            let y = draw::shown(log_y, self.y[i])?;
            let right = if bars {
                draw::shown(log_x, self.x[i + 1]).filter(|r| *r > x)?
            } else {
                x
            };
            Some(((x, y), right))
        })
    }
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

/// The smallest and largest of `values`; (inf, -inf) for none.
pub fn extent(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let none = (f64::INFINITY, f64::NEG_INFINITY);
    values
        .into_iter()
        .fold(none, |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// `figure` as an SVG (else a PNG: 8-bit RGB, compressed), and its panels' frames.
fn render(figure: &Figure, svg: bool) -> (Vec<u8>, Vec<draw::Frame>) {
    let panels = figure.panels.len() as u32;
    let size = (WIDTH, draw::title_band(figure) + panels * PANEL_HEIGHT);
    if svg {
        let mut text = String::new();
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        let frames = draw::figure(figure, root);
        return (text.into_bytes(), frames);
    }
    let mut rgb = vec![0; size.0 as usize * size.1 as usize * 3];
    let root = BitMapBackend::with_buffer(&mut rgb, size).into_drawing_area();
    let frames = draw::figure(figure, root);
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, size.0, size.1);
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

/// Writes `figure` as .svg or .png by extension (case-insensitive) and says so
/// on stderr. Errors name the path: another extension (naming the supported
/// ones, see [`is_svg`]), a figure with nothing to draw, a failed write.
pub fn write(figure: &Figure, path: &Path) -> Result<(), String> {
    let svg = is_svg(path)?;
    let fail = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    if !figure.has_data() {
        let title = &figure.title;
        return Err(fail(&format_args!(
            "cannot plot {title:?}: no panel has a finite value to draw"
        )));
    }
    let bytes = render(figure, svg).0;
    crate::io::write_file(path, |out| out.write_all(&bytes)).map_err(|e| fail(&e))?;
    eprintln!("plot written to {}", path.display());
    Ok(())
}

/// Whether a plot at `path` is an SVG (else a PNG); another extension is an
/// error naming the path and the supported ones.
pub fn is_svg(path: &Path) -> Result<bool, String> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => Ok(true),
        Some("png") => Ok(false),
        _ => Err(format!(
            "cannot write a plot to {}: unsupported extension (supported: .svg, .png)",
            path.display()
        )),
    }
}

/// Rendering, decoding and pixel queries for the tests of this module and of
/// the figures.
#[cfg(test)]
pub(crate) mod testing {
    pub(crate) use super::draw::Frame;
    use plotters::style::RGBColor;

    pub(crate) fn to_svg(figure: &super::Figure) -> String {
        String::from_utf8(super::render(figure, true).0).expect("SVG is text")
    }

    pub(crate) fn to_png(figure: &super::Figure) -> Vec<u8> {
        super::render(figure, false).0
    }

    /// The figure as a decoded PNG, with its panels' plot areas.
    pub(crate) fn render(figure: &super::Figure) -> (Image, Vec<Frame>) {
        let (png, frames) = super::render(figure, false);
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
    pub(crate) fn svg_polylines(svg: &str) -> Vec<(RGBColor, Vec<(f64, f64)>)> {
        let attribute = |tag: &str, name: &str| -> String {
            let value = tag.split(&format!(" {name}=\"")).nth(1).unwrap_or("");
            value.split('"').next().unwrap_or("").to_string()
        };
        svg.split("<polyline")
            .skip(1)
            .map(|tag| {
                let hex = attribute(tag, "stroke");
                let channel = |i: usize| u8::from_str_radix(&hex[1 + 2 * i..3 + 2 * i], 16);
                let [r, g, b] = [0, 1, 2].map(|i| channel(i).expect("a #RRGGBB stroke"));
                let points = attribute(tag, "points")
                    .split_whitespace()
                    .map(|xy| {
                        let (x, y) = xy.split_once(',').expect("x,y");
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect();
                (RGBColor(r, g, b), points)
            })
            .collect()
    }

    /// The points of the SVG's polylines of colour `rgb`.
    pub(crate) fn svg_lines(svg: &str, rgb: RGBColor) -> Vec<Vec<(f64, f64)>> {
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

        pub(crate) fn at(&self, x: usize, y: usize) -> RGBColor {
            let i = (y * self.width + x) * 3;
            RGBColor(self.rgb[i], self.rgb[i + 1], self.rgb[i + 2])
        }

        /// Whether pixel (x, y) is at least half ink of colour `rgb` over the white
        /// background (lines are anti-aliased, so few of their pixels are exact).
        pub(crate) fn is(&self, x: usize, y: usize, rgb: RGBColor) -> bool {
            let channels = |c: RGBColor| [c.0, c.1, c.2];
            let (want, got) = (channels(rgb), channels(self.at(x, y)));
            let contrast = want.iter().map(|c| 255 - i32::from(*c)).max().unwrap_or(0);
            (0..3).all(|i| (i32::from(got[i]) - i32::from(want[i])).abs() * 2 <= contrast)
        }

        /// Rows in `rows` of column `x` (rounded) that are ink of colour `rgb` (see [`Image::is`]).
        pub(crate) fn rows_with(
            &self,
            x: f64,
            rows: std::ops::Range<f64>,
            rgb: RGBColor,
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
    use super::testing::{render, svg_lines, svg_texts, to_png, to_svg, Image};
    use super::*;

    fn figure(title: &str, panels: Vec<Panel>) -> Figure {
        let title = title.into();
        Figure { title, panels }
    }

    fn line_panel(x: &[f64], y: &[f64]) -> Panel {
        let series = vec![Series::new(SeriesKind::Line, "", x, y)];
        Panel {
            series,
            ..Panel::new("p", "x", "y")
        }
    }

    fn log(log_x: bool, log_y: bool, panel: Panel) -> Panel {
        Panel {
            log_x,
            log_y,
            ..panel
        }
    }

    #[test]
    fn write_rejects_bad_extensions_and_figures_without_data() {
        let dir = std::env::temp_dir();
        let good = figure("t", vec![line_panel(&[1.0, 2.0], &[3.0, 4.0])]);
        let err = write(&good, &dir.join("kernpack_plot_test.jpg")).unwrap_err();
        assert!(
            err.contains("kernpack_plot_test.jpg") && err.contains(".svg") && err.contains(".png")
        );
        let empty_log = figure("t", vec![log(false, true, line_panel(&[1.0], &[-1.0]))]);
        for figure in [
            figure("no panels", vec![]),
            figure("t", vec![Panel::new("empty", "x", "y")]),
            figure("t", vec![line_panel(&[], &[])]),
            figure("t", vec![line_panel(&[1.0], &[])]),
            figure("t", vec![line_panel(&[1.0], &[f64::NAN])]),
            empty_log,
        ] {
            let err = write(&figure, &dir.join("kernpack_plot_test.svg")).unwrap_err();
            assert!(
                err.contains("no panel has a finite value"),
                "{}",
                figure.title
            );
        }
        let path = dir.join(format!("kernpack_plot_test_{}.PNG", std::process::id()));
        write(&good, &path).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(b"\x89PNG"));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn degenerate_figures_still_render_both_formats() {
        let heat = |rows, cols, values| Panel {
            heat: Some(HeatMap {
                rows,
                cols,
                values,
                x_extent: (0.0, 1.0),
                y_extent: (f64::NAN, f64::INFINITY),
            }),
            ..Panel::new("h", "x", "y")
        };
        let mut flat = line_panel(&[1.0, 2.0, 3.0], &[4.0; 3]);
        flat.markers.push((f64::NAN, "m".into()));
        let figures = [
            figure("nothing", vec![]),
            figure("flat", vec![flat]),
            figure("one point", vec![line_panel(&[2.5], &[0.0])]),
            figure(
                "extreme",
                vec![line_panel(&[-f64::MAX, f64::MAX], &[1e-320, 2e-320])],
            ),
            figure(
                "log of nothing",
                vec![log(true, true, line_panel(&[0.0], &[0.0]))],
            ),
            figure(
                "bad heat",
                vec![heat(2, 2, vec![f64::NAN; 4]), heat(2, 3, vec![1.0; 2])],
            ),
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
    fn stacked_panels_share_the_canvas_and_align() {
        let panels = (0..4)
            .map(|k| line_panel(&[0.0, 1.0], &[0.0, 10f64.powi(3 * k)]))
            .collect();
        let (image, f) = render(&figure("stack", panels));
        assert_eq!(f.len(), 4);
        let title_band = image.height - 4 * PANEL_HEIGHT as usize;
        assert!((1..60).contains(&title_band), "{title_band}");
        // The same left edge, however wide the tick labels are.
        assert!(f.iter().all(|g| g.left == f[0].left));
        assert!(f.windows(2).all(|f| f[0].bottom < f[1].top));
        assert!(f.iter().all(|f| f.right <= image.width as f64));
    }

    #[test]
    fn tick_labels_are_short_numbers_and_log_ticks_powers_of_ten() {
        // The tick labels of a panel "p" with axes "x" and "y".
        let labels = |panel| {
            let svg = to_svg(&figure("t", vec![panel]));
            let texts = svg_texts(&svg).into_iter().map(str::to_owned);
            texts.skip(4).collect::<Vec<_>>()
        };
        // Log axes end on whole decades and are labelled at each.
        let log = labels(log(true, true, line_panel(&[3e-4, 2e5], &[0.03, 0.4])));
        let decades = [
            "0.01", "0.1", "1", "1e-4", "0.001", "0.01", "0.1", "1", "10",
        ];
        assert_eq!(log[..9], decades);
        assert_eq!(log[9..], ["100", "1000", "1e4", "1e5", "1e6"]);
        // Linear ticks: round steps, in e-notation for extreme magnitudes.
        let lin = labels(line_panel(&[0.0, 2e9], &[1e-7, 3e-7]));
        for label in ["1e-7", "1.2e-7", "3e-7", "0", "2e8", "1.2e9", "2e9"] {
            assert!(lin.contains(&label.to_owned()), "{label}: {lin:?}");
        }
        assert!(lin.iter().all(|l| l.len() <= 6), "{lin:?}");
        let lin = labels(line_panel(&[12345.0, 12400.0], &[-3.2, 7.9]));
        assert_eq!(lin[..6], ["-2", "0", "2", "4", "6", "8"]);
        assert_eq!(
            lin[6..],
            ["12350", "12360", "12370", "12380", "12390", "12400"]
        );
    }

    #[test]
    fn non_finite_non_positive_and_mismatched_data_is_not_drawn() {
        let lines = |panel| svg_lines(&to_svg(&figure("t", vec![panel])), palette::BLUE);
        let x = [0.0, 1.0, 2.0, 3.0];
        let y = [1.0, f64::NAN, f64::INFINITY, 2.0];
        assert_eq!(lines(line_panel(&x, &y))[0].len(), 2);
        assert!(lines(line_panel(&[0.0, 1.0], &[1.0])).is_empty());
        let log_y = log(false, true, line_panel(&[1.0, 2.0, 3.0], &[-1.0, 0.0, 5.0]));
        assert_eq!(lines(log_y)[0].len(), 2);
        // Bars need one more edge than heights.
        let bars = Series {
            colour: RGBColor(1, 2, 3),
            ..Series::new(SeriesKind::Bars, "", [0.0, 1.0], [1.0, 2.0])
        };
        let panel = Panel {
            series: vec![bars],
            ..Panel::new("b", "", "")
        };
        assert!(!to_svg(&figure("t", vec![panel])).contains("#010203"));
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
        let mut panel = line_panel(&x, &y);
        panel.markers.push((peak as f64 * 1e-6, "peak".into()));
        let figure = figure("t", vec![panel]);
        let svg = to_svg(&figure);
        let points = svg_lines(&svg, palette::BLUE).remove(0);
        assert!(
            points.len() <= 2 * WIDTH as usize,
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
        let panel = Panel {
            series: vec![Series::new(SeriesKind::Points, "dots", x.clone(), x)],
            markers: vec![(20.0, "far".into())],
            ..Panel::new("p", "x", "y")
        };
        let figure = figure("t", vec![panel]);
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
