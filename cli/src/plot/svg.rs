//! Writes a [`Layout`] as plain SVG 1.1, with a generic monospace font so that no
//! font file is referenced and text widths stay close to the layout's estimate.

use std::fmt::Write;

use super::{Anchor, Ink, Item, Layout};

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
            Item::Line {
                x0,
                y0,
                x1,
                y1,
                ink,
            } => writeln!(
                svg,
                r#"<line x1="{x0:.1}" y1="{y0:.1}" x2="{x1:.1}" y2="{y1:.1}"{}/>"#,
                stroke(*ink)
            ),
            Item::Polyline(points) => {
                svg.push_str(
                    r#"<polyline fill="none" stroke-linejoin="round" stroke-linecap="round""#,
                );
                svg.push_str(&stroke(Ink::Data));
                svg.push_str(r#" points=""#);
                for (i, (x, y)) in points.iter().enumerate() {
                    let sep = if i == 0 { "" } else { " " };
                    let _ = write!(svg, "{sep}{x:.1},{y:.1}");
                }
                writeln!(svg, r#""/>"#)
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
                    hex(t.ink.rgb()),
                    escape(&t.text)
                )
            }
        };
    }
    svg.push_str("</svg>\n");
    svg
}

fn stroke(ink: Ink) -> String {
    let extra = match ink {
        Ink::Marker => r#" stroke-dasharray="6,4""#,
        // Keeps 1-pixel rules sharp instead of smeared over two pixels.
        Ink::Grid | Ink::Axis => r#" shape-rendering="crispEdges""#,
        Ink::Data => "",
    };
    format!(
        r#" stroke="{}" stroke-width="{}"{extra}"#,
        hex(ink.rgb()),
        ink.width()
    )
}

fn hex([r, g, b]: [u8; 3]) -> String {
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
    use super::super::{to_svg, LineChart};

    #[test]
    fn svg_has_polyline_dashed_marker_and_escaped_text() {
        let chart = LineChart::new(
            "Power <\"A&B\"> \u{7}",
            "frequency",
            "power",
            vec![0.1, 0.2, 0.3],
            vec![1.0, 3.0, 2.0],
        )
        .with_marker(0.2, "best period 5.00 d");
        let svg = to_svg(&chart);
        assert!(svg.contains("<polyline "), "{svg}");
        assert!(
            svg.contains("Power &lt;&quot;A&amp;B&quot;&gt; </text>"),
            "{svg}"
        );
        assert!(svg.contains("stroke-dasharray"), "{svg}");
        assert!(svg.contains(">best period 5.00 d</text>"), "{svg}");
        assert!(svg.contains(r#"transform="rotate(-90"#), "{svg}");
        assert!(svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn empty_chart_is_still_a_complete_svg() {
        let svg = to_svg(&LineChart::new("empty", "x", "y", vec![], vec![]));
        assert!(!svg.contains("<polyline"));
        assert!(svg.contains("<line ") && svg.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn a_million_points_give_a_small_svg() {
        let n = 1_000_000;
        let x: Vec<f64> = (0..n).map(|i| i as f64).collect();
        let y: Vec<f64> = (0..n).map(|i| ((i as f64) * 0.001).sin()).collect();
        let svg = to_svg(&LineChart::new("big", "x", "y", x, y));
        assert!(svg.len() < 100_000, "{} bytes", svg.len());
    }
}
