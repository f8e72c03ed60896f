//! Heat maps (a Hovmoller diagram: time down, site across, colour = value) as
//! SVG or PNG. The grid is averaged down to at most `MAX_CELLS` per axis so
//! either file stays small; colours run blue (low) - white - red (high) over
//! the finite range of the data.
use std::fmt::Write;
use std::io;
use std::path::Path;

/// Most cells drawn per axis (rows and columns are block-averaged beyond).
const MAX_CELLS: usize = 160;
/// Pixels per drawn cell in the PNG.
const PNG_CELL: usize = 4;

/// `values` holds `rows` x `cols`, row-major (row = time, column = site).
pub struct HeatMap<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub rows: usize,
    pub cols: usize,
    pub values: &'a [f64],
}

impl HeatMap<'_> {
    /// Block averages: (drawn rows, drawn cols, values), non-finite values skipped.
    fn cells(&self) -> (usize, usize, Vec<f64>) {
        let (r, c) = (self.rows.min(MAX_CELLS), self.cols.min(MAX_CELLS));
        let mut out = vec![f64::NAN; r * c];
        for (k, cell) in out.iter_mut().enumerate() {
            let (i, j) = (k / c, k % c);
            let (r0, r1) = (
                i * self.rows / r,
                ((i + 1) * self.rows / r).max(i * self.rows / r + 1),
            );
            let (c0, c1) = (
                j * self.cols / c,
                ((j + 1) * self.cols / c).max(j * self.cols / c + 1),
            );
            let (mut sum, mut count) = (0.0, 0usize);
            for row in r0..r1 {
                for v in &self.values[row * self.cols + c0..row * self.cols + c1] {
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

/// Blue - white - red for t in [0, 1]; grey for NaN.
fn colour(t: f64) -> [u8; 3] {
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

fn scaled(cells: &[f64]) -> impl Fn(f64) -> f64 {
    let (lo, hi) = cells
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    let span = if hi > lo { hi - lo } else { 1.0 };
    move |v| (v - lo) / span
}

pub fn to_svg(map: &HeatMap<'_>) -> String {
    let (r, c, cells) = map.cells();
    let (cw, ch) = (5usize, (600 / r.max(1)).clamp(2, 8));
    let (left, top) = (60usize, 40usize);
    let (w, h) = (left + c * cw + 20, top + r * ch + 50);
    let t = scaled(&cells);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" font-family="monospace" font-size="13"><rect width="{w}" height="{h}" fill="#ffffff"/>"##
    );
    let escape = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="20" text-anchor="middle">{}</text>"#,
        w / 2,
        escape(map.title)
    );
    for (k, v) in cells.iter().enumerate() {
        let [cr, cg, cb] = colour(t(*v));
        let _ = writeln!(
            svg,
            r##"<rect x="{}" y="{}" width="{cw}" height="{ch}" fill="#{cr:02x}{cg:02x}{cb:02x}"/>"##,
            left + (k % c) * cw,
            top + (k / c) * ch
        );
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        left + c * cw / 2,
        top + r * ch + 30,
        escape(map.x_label)
    );
    let _ = writeln!(
        svg,
        r#"<text x="20" y="{}" text-anchor="middle" transform="rotate(-90 20 {})">{}</text></svg>"#,
        top + r * ch / 2,
        top + r * ch / 2,
        escape(map.y_label)
    );
    svg
}

/// Cells only (no text): PNG_CELL x PNG_CELL pixels each.
pub fn to_png(map: &HeatMap<'_>) -> Vec<u8> {
    let (r, c, cells) = map.cells();
    let t = scaled(&cells);
    let (w, h) = (c * PNG_CELL, r * PNG_CELL);
    let mut pixels = vec![0u8; w * h * 3];
    for y in 0..h {
        for x in 0..w {
            let rgb = colour(t(cells[(y / PNG_CELL) * c + x / PNG_CELL]));
            pixels[(y * w + x) * 3..][..3].copy_from_slice(&rgb);
        }
    }
    super::png::encode_rgb(w as u32, h as u32, &pixels)
}

/// Writes by extension, ".svg" or ".png"; an empty or mis-sized grid is an error.
pub fn write(map: &HeatMap<'_>, path: &Path) -> io::Result<()> {
    let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
    if map.rows == 0 || map.cols == 0 || map.values.len() != map.rows * map.cols {
        return Err(invalid(format!(
            "cannot draw a {} x {} heat map from {} values",
            map.rows,
            map.cols,
            map.values.len()
        )));
    }
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("svg") => std::fs::write(path, to_svg(map)),
        Some("png") => std::fs::write(path, to_png(map)),
        _ => Err(invalid(format!("{}: use .svg or .png", path.display()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_grids_are_averaged_down_and_both_formats_are_complete() {
        let (rows, cols) = (500, 960);
        let values: Vec<f64> = (0..rows * cols)
            .map(|k| ((k % cols) as f64 * 0.05).sin())
            .collect();
        let map = HeatMap {
            title: "t<1>",
            x_label: "site",
            y_label: "time",
            rows,
            cols,
            values: &values,
        };
        let (r, c, cells) = map.cells();
        assert_eq!((r, c), (MAX_CELLS, MAX_CELLS));
        assert!(cells.iter().all(|v| v.is_finite() && v.abs() <= 1.0));
        let svg = to_svg(&map);
        assert!(svg.ends_with("</svg>\n") && svg.contains("t&lt;1&gt;"));
        assert_eq!(svg.matches("<rect").count(), 1 + MAX_CELLS * MAX_CELLS);
        let png = to_png(&map);
        assert_eq!(&png[1..4], b"PNG");
        assert_eq!(colour(0.0), [33, 102, 172]);
        assert_eq!(colour(1.0), [178, 24, 43]);
        assert_eq!(colour(f64::NAN), [128, 128, 128]);
    }
}
