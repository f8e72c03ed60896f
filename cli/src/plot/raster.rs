//! Renders a [`Layout`] into an RGB raster: Bresenham lines with a square brush and
//! text from the embedded bitmap font, scaled by whole pixels so it stays crisp.

use super::font::{self, ASCENT, CELL_W, EM, GLYPH_H, GLYPH_W};
use super::{Anchor, Ink, Item, Layout, Text};

const BACKGROUND: [u8; 3] = [255, 255, 255];

pub(crate) struct Canvas {
    pub width: u32,
    pub height: u32,
    /// Row-major RGB, 3 bytes per pixel.
    pub pixels: Vec<u8>,
}

pub(crate) fn render(layout: &Layout) -> Canvas {
    let mut canvas = Canvas::new(layout.width, layout.height);
    for item in &layout.items {
        match item {
            Item::Line {
                x0,
                y0,
                x1,
                y1,
                ink,
            } => {
                canvas.line((*x0, *y0), (*x1, *y1), ink.rgb(), brush(ink.width()));
            }
            Item::Polyline(points) => {
                for pair in points.windows(2) {
                    canvas.line(pair[0], pair[1], Ink::Data.rgb(), brush(Ink::Data.width()));
                }
            }
            Item::Text(text) => canvas.text(text),
        }
    }
    canvas
}

fn brush(width: f64) -> i64 {
    (width.round() as i64).max(1)
}

impl Canvas {
    fn new(width: u32, height: u32) -> Canvas {
        let pixels = BACKGROUND.repeat(width as usize * height as usize);
        Canvas {
            width,
            height,
            pixels,
        }
    }

    /// Silently clips, so callers need not care about the canvas edge.
    fn fill_rect(&mut self, x: i64, y: i64, w: i64, h: i64, rgb: [u8; 3]) {
        let x_range = x.max(0)..(x + w).min(i64::from(self.width));
        for py in y.max(0)..(y + h).min(i64::from(self.height)) {
            for px in x_range.clone() {
                let i = (py as usize * self.width as usize + px as usize) * 3;
                self.pixels[i..i + 3].copy_from_slice(&rgb);
            }
        }
    }

    /// A `width`-pixel line: Bresenham's walk, stamping a square brush at each step.
    fn line(&mut self, from: (f64, f64), to: (f64, f64), rgb: [u8; 3], width: i64) {
        // Clamping keeps the walk short even for wild coordinates; layouts only ever
        // produce points on the canvas, where it changes nothing.
        let limit = |v: f64, max: u32| v.round().clamp(-1.0, f64::from(max) + 1.0) as i64;
        let (mut x, mut y) = (limit(from.0, self.width), limit(from.1, self.height));
        let (x1, y1) = (limit(to.0, self.width), limit(to.1, self.height));
        let (dx, dy) = ((x1 - x).abs(), -(y1 - y).abs());
        let (sx, sy) = ((x1 - x).signum(), (y1 - y).signum());
        let offset = width / 2;
        let mut err = dx + dy;
        loop {
            self.fill_rect(x - offset, y - offset, width, width, rgb);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    fn text(&mut self, text: &Text) {
        let scale = ((text.size / EM as f64).round() as i64).max(1);
        let advance = CELL_W as i64 * scale;
        // The last glyph's spacing column is not part of the visible text.
        let length = (text.text.chars().count() as i64 * advance - scale).max(0);
        // Centred on the capitals, so descenders hang below like they do in SVG.
        let half_ascent = ASCENT as i64 * scale / 2;
        let along = match text.anchor {
            Anchor::Start => 0,
            Anchor::Middle => -length / 2,
            Anchor::End => -length,
        };
        let rgb = text.ink.rgb();
        // (u, v): along the text and down across it, in text-local pixels.
        let (x, y) = (text.x.round() as i64, text.y.round() as i64);
        let to_canvas = |u: i64, v: i64| {
            if text.vertical {
                // Reads upwards, so glyph tops face left.
                (x - half_ascent + v, y - along - u - scale)
            } else {
                (x + along + u, y - half_ascent + v)
            }
        };
        for (i, c) in text.text.chars().enumerate() {
            for col in 0..GLYPH_W {
                for row in 0..GLYPH_H {
                    if font::is_set(c, col, row) {
                        let u = i as i64 * advance + col as i64 * scale;
                        let (px, py) = to_canvas(u, row as i64 * scale);
                        self.fill_rect(px, py, scale, scale, rgb);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::png::tests::{chunks, inflate_stored};
    use super::super::{to_png, LineChart};
    use super::*;

    #[test]
    fn lines_cover_both_endpoints_in_every_direction() {
        let red = [255, 0, 0];
        for (from, to) in [
            ((1.0, 1.0), (8.0, 3.0)),
            ((8.0, 8.0), (2.0, 1.0)),
            ((5.0, 0.0), (5.0, 9.0)),
        ] {
            let mut canvas = Canvas::new(10, 10);
            canvas.line(from, to, red, 1);
            let at = |(x, y): (f64, f64)| {
                let i = (y as usize * 10 + x as usize) * 3;
                [canvas.pixels[i], canvas.pixels[i + 1], canvas.pixels[i + 2]]
            };
            assert_eq!(at(from), red);
            assert_eq!(at(to), red);
        }
    }

    #[test]
    fn png_decodes_to_the_chart_size_with_data_and_marker_pixels() {
        let x: Vec<f64> = (0..5000).map(|i| i as f64 / 1000.0).collect();
        let y: Vec<f64> = x.iter().map(|x| (x * 7.0).sin().powi(2)).collect();
        let mut chart =
            LineChart::new("Periodogram", "frequency (1/d)", "power", x, y).with_marker(2.0, "P");
        chart.width = 640;
        chart.height = 360;

        let png = to_png(&chart);
        let chunks = chunks(&png);
        let ihdr = chunks[0].1;
        assert_eq!(u32::from_be_bytes(ihdr[0..4].try_into().unwrap()), 640);
        assert_eq!(u32::from_be_bytes(ihdr[4..8].try_into().unwrap()), 360);

        let raw = inflate_stored(chunks[1].1);
        let row_len = 1 + 640 * 3;
        assert_eq!(raw.len(), row_len * 360);
        assert!(
            raw.chunks(row_len).all(|row| row[0] == 0),
            "filter byte must be 0"
        );
        let pixels: Vec<&[u8]> = raw
            .chunks(row_len)
            .flat_map(|row| row[1..].chunks(3))
            .collect();
        assert_eq!(pixels.len(), 640 * 360);
        let count = |ink: Ink| pixels.iter().filter(|p| **p == ink.rgb()).count();
        assert!(count(Ink::Data) > 500, "data pixels: {}", count(Ink::Data));
        assert!(
            count(Ink::Marker) > 200,
            "marker pixels: {}",
            count(Ink::Marker)
        );
    }
}
