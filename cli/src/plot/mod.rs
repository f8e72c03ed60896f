//! Dependency-free figures as SVG or PNG: panels stacked vertically (or in a
//! grid), each with its own axes, title and labels, holding line, point and bar
//! series, labelled vertical markers, and optionally a heat map underneath.
//!
//! Everything geometric — plot areas, ticks, data-to-pixel mapping, decimation,
//! text placement — is decided once in [`layout::Layout`], a display list in pixel
//! coordinates. The SVG writer and the PNG rasteriser only translate that list,
//! so the two outputs cannot drift apart.
//!
//! Degenerate data is drawn, not rejected: `to_svg`/`to_png` always return a valid
//! file (a series whose `x` and `y` do not match draws nothing, non-finite values
//! — and non-positive ones on a log axis — are skipped, an axis without data spans
//! 0..1). Only [`write()`] refuses a figure with nothing to draw, with
//! `InvalidInput`, because a CLI that writes an empty plot almost certainly has a
//! bug upstream.

mod axis;
mod font;
mod heatmap;
mod layout;
mod raster;
mod svg;

use std::io;
use std::path::Path;

pub use heatmap::HeatMap;

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

    /// The drawable data in axis space (see [`axis::to_axis`]) as ((x, y),
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
            let x = axis::to_axis(xs, self.x[i])?;
            let y = axis::to_axis(ys, self.y[i])?;
            let right = if bars {
                axis::to_axis(xs, self.x[i + 1]).filter(|r| *r > x)?
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

pub fn to_svg(figure: &Figure) -> String {
    svg::render(&layout::Layout::new(figure))
}

/// A PNG file: 8-bit RGB, compressed.
pub fn to_png(figure: &Figure) -> Vec<u8> {
    let canvas = raster::render(&layout::Layout::new(figure));
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, canvas.width, canvas.height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // The default: on plots (large flat areas) High saves about 3% for 30% more time.
    encoder.set_compression(png::Compression::Balanced);
    // The canvas is at least 1 x 1 and its buffer matches its size, and writing
    // to memory cannot fail, so neither call can.
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(&canvas.pixels))
        .expect("a well-formed RGB canvas encodes");
    out
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
    pub(crate) use super::layout::Layout;

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

        /// Rows in `rows` of column `x` (rounded) that have colour `rgb`.
        pub(crate) fn rows_with(
            &self,
            x: f64,
            rows: std::ops::Range<f64>,
            rgb: super::Rgb,
        ) -> Vec<usize> {
            let x = x.round() as usize;
            (rows.start.round() as usize..rows.end.round() as usize)
                .filter(|&y| self.at(x, y) == rgb)
                .collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{Image, Layout};
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
        let layout = Layout::new(&figure);
        assert_eq!(layout.panels.len(), 4);
        let title_band = layout.height - 2 * Figure::DEFAULT_PANEL_HEIGHT;
        assert!((1..60).contains(&title_band), "{title_band}");
        let f = &layout.panels;
        // Same column: the same left edge, however wide the tick labels are.
        assert_eq!(f[0].left, f[2].left);
        assert_eq!(f[1].left, f[3].left);
        assert!(f[0].right < f[1].left && f[0].bottom < f[2].top);
        assert!(f.iter().all(|f| f.right <= f64::from(layout.width)));
    }
}
