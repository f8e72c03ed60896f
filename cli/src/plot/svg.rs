//! Writes a [`Layout`] as plain SVG 1.1, with a generic monospace font so that no
//! font file is referenced and text widths stay close to the layout's estimate.

use std::collections::HashMap;
use std::fmt::Write;

use super::layout::{Anchor, Item, Layout, Stroke};
use super::Rgb;

pub(crate) fn render(layout: &Layout) -> String {
    let (w, h) = (layout.width, layout.height);
    let mut svg = String::new();
    // Writing to a String cannot fail, hence the ignored fmt::Results.
    let _ = writeln!(svg, r#"<?xml version="1.0" encoding="UTF-8"?>"#);
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="monospace">"#
    );
    let _ = writeln!(svg, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    for item in &layout.items {
        let _ = match item {
            Item::Line { from, to, stroke } => writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}"{}/>"#,
                from.0,
                from.1,
                to.0,
                to.1,
                attributes(stroke)
            ),
            Item::Polyline { points, stroke } => {
                svg.push_str(
                    r#"<polyline fill="none" stroke-linejoin="round" stroke-linecap="round""#,
                );
                svg.push_str(&attributes(stroke));
                svg.push_str(r#" points=""#);
                for (i, (x, y)) in points.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    let _ = write!(svg, "{sep}{x:.1},{y:.1}");
                }
                writeln!(svg, r#""/>"#)
            }
            Item::Marks { centres, size, rgb } => {
                let _ = write!(svg, r#"<path fill="{}" d=""#, hex(*rgb));
                for (x, y) in centres {
                    let (x, y) = (x - size / 2.0, y - size / 2.0);
                    let _ = write!(svg, "M{x:.1},{y:.1}h{size}v{size}h-{size}z");
                }
                writeln!(svg, r#""/>"#)
            }
            Item::Rect { x, y, w, h, rgb } => writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{}" shape-rendering="crispEdges"/>"#,
                hex(*rgb)
            ),
            Item::Cells {
                x,
                y,
                w,
                h,
                cols,
                rows,
                rgb,
            } => {
                cells(
                    &mut svg,
                    (*x, *y),
                    (w / *cols as f64, h / *rows as f64),
                    *cols,
                    rgb,
                );
                Ok(())
            }
            Item::Text(t) => {
                let anchor = match t.anchor {
                    Anchor::Start => "start",
                    Anchor::Middle => "middle",
                    Anchor::End => "end",
                };
                let rotate = if t.vertical {
                    format!(r#" transform="rotate(-90 {:.1} {:.1})""#, t.x, t.y)
                } else {
                    String::new()
                };
                // dy centres the text on `y`: SVG 1.1 viewers disagree on
                // dominant-baseline, but all honour a shift of the baseline.
                writeln!(
                    svg,
                    r#"<text x="{:.1}" y="{:.1}" dy="0.35em" font-size="{}" fill="{}" text-anchor="{anchor}"{rotate}>{}</text>"#,
                    t.x,
                    t.y,
                    t.size,
                    hex(t.rgb),
                    escape(&t.text)
                )
            }
        };
    }
    svg.push_str("</svg>\n");
    svg
}

/// A grid of cells as one path per colour, each run of equal neighbours in a
/// row one rectangle: far smaller than a `<rect>` per cell.
fn cells(svg: &mut String, (x, y): (f64, f64), (cw, ch): (f64, f64), cols: usize, rgb: &[Rgb]) {
    let mut paths: Vec<(Rgb, String)> = Vec::new();
    let mut index: HashMap<Rgb, usize> = HashMap::new();
    for (r, row) in rgb.chunks(cols.max(1)).enumerate() {
        let mut c = 0;
        while c < row.len() {
            let run = row[c..].iter().take_while(|v| **v == row[c]).count();
            let i = *index.entry(row[c]).or_insert_with(|| {
                paths.push((row[c], String::new()));
                paths.len() - 1
            });
            let (x0, y0) = (x + c as f64 * cw, y + r as f64 * ch);
            let (x1, y1) = (x + (c + run) as f64 * cw, y + (r + 1) as f64 * ch);
            let _ = write!(paths[i].1, "M{x0:.1},{y0:.1}H{x1:.1}V{y1:.1}H{x0:.1}z");
            c += run;
        }
    }
    svg.push_str("<g shape-rendering=\"crispEdges\">\n");
    for (colour, d) in paths {
        let _ = writeln!(svg, r#"<path fill="{}" d="{d}"/>"#, hex(colour));
    }
    svg.push_str("</g>\n");
}

fn attributes(stroke: &Stroke) -> String {
    let mut extra = String::new();
    if stroke.dashed {
        extra.push_str(r#" stroke-dasharray="6,4""#);
    }
    if stroke.crisp {
        // Keeps 1-pixel rules sharp instead of smeared over two pixels.
        extra.push_str(r#" shape-rendering="crispEdges""#);
    }
    format!(
        r#" stroke="{}" stroke-width="{}"{extra}"#,
        hex(stroke.rgb),
        stroke.width
    )
}

fn hex([r, g, b]: Rgb) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Escapes markup characters and drops control characters, which XML 1.0 forbids
/// even when escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c if c.is_control() && !matches!(c, '\t' | '\n' | '\r') => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{to_svg, Figure, HeatMap, Panel, Series};

    #[test]
    fn svg_has_every_kind_of_item_and_escaped_text() {
        let panel = Panel::new("Power <\"A&B\"> \u{7}", "frequency", "power")
            .with_series(Series::line(
                "curve",
                vec![0.1, 0.2, 0.3],
                vec![1.0, 3.0, 2.0],
            ))
            .with_series(Series::points("dots", vec![0.1, 0.2], vec![1.0, 2.0]))
            .with_series(Series::bars("", vec![0.1, 0.2, 0.3], vec![1.0, 2.0]))
            .with_marker(0.2, "best period 5.00 d");
        let heat = HeatMap {
            rows: 2,
            cols: 3,
            values: vec![1.0, 1.0, 1.0, 2.0, 3.0, 3.0],
            x_extent: (0.0, 3.0),
            y_extent: (0.0, 2.0),
        };
        let figure = Figure::new("figure title")
            .with_panel(panel)
            .with_panel(Panel::new("heat", "site", "time").with_heat(heat));
        let svg = to_svg(&figure);
        assert!(svg.contains("<polyline "), "{svg}");
        assert!(
            svg.contains("Power &lt;&quot;A&amp;B&quot;&gt; </text>"),
            "{svg}"
        );
        assert!(svg.contains("stroke-dasharray"), "{svg}");
        for text in [
            "best period 5.00 d",
            "figure title",
            "curve",
            "dots",
            "heat",
            "site",
        ] {
            assert!(svg.contains(&format!(">{text}</text>")), "{text}: {svg}");
        }
        assert!(svg.contains(r#"transform="rotate(-90"#), "{svg}");
        // The bars, and the heat map's first row as one run of the low colour.
        assert_eq!(svg.matches("<rect ").count(), 1 + 2, "{svg}");
        assert!(svg.contains(r##"<path fill="#2166ac" d="M"##), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn a_million_points_give_a_small_svg() {
        let n = 1_000_000;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let y: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.001).sin()).collect();
        let panel = Panel::new("big", "x", "y").with_series(Series::line("", x.clone(), y));
        let svg = to_svg(&Figure::new("").with_panel(panel));
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
        // Points: one square per occupied pixel.
        let (x, y): (Vec<f64>, Vec<f64>) = (0..n / 5)
            .map(|i| (i as f64, (i as f64 * 5e-5).sin()))
            .unzip();
        let panel = Panel::new("big", "x", "y").with_series(Series::points("", x, y));
        let svg = to_svg(&Figure::new("").with_panel(panel));
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
    }
}
