//! Renders a [`Layout`] into an RGB raster: Bresenham lines with a square brush,
//! rectangles snapped to whole pixels, and text from the embedded bitmap font,
//! scaled by whole pixels so it stays crisp.

use super::font::{self, ASCENT, CELL_W, EM, GLYPH_H, GLYPH_W};
use super::layout::{Anchor, Item, Layout, Stroke, Text};
use super::Rgb;

const BACKGROUND: Rgb = [255, 255, 255];
/// Dashed strokes draw `DASH_ON` of every `DASH_PERIOD` steps (SVG: "6,4").
const DASH_PERIOD: u64 = 10;
const DASH_ON: u64 = 6;

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
            Item::Line { from, to, stroke } => canvas.line(*from, *to, stroke),
            Item::Polyline { points, stroke } => {
                for pair in points.windows(2) {
                    canvas.line(pair[0], pair[1], stroke);
                }
            }
            Item::Marks { centres, size, rgb } => {
                let side = size.round().max(1.0);
                for (x, y) in centres {
                    canvas.fill(x - side / 2.0, y - side / 2.0, side, side, *rgb);
                }
            }
            Item::Rect { x, y, w, h, rgb } => canvas.fill(*x, *y, *w, *h, *rgb),
            Item::Cells {
                x,
                y,
                w,
                h,
                cols,
                rows,
                rgb,
            } => {
                let (cw, ch) = (w / *cols as f64, h / *rows as f64);
                for (k, colour) in rgb.iter().enumerate() {
                    let (r, c) = ((k / cols) as f64, (k % cols) as f64);
                    canvas.fill(x + c * cw, y + r * ch, cw, ch, *colour);
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

    /// Fills the pixels whose centres lie in the rectangle (so that abutting
    /// rectangles tile without gaps or overlaps), clipped to the canvas.
    fn fill(&mut self, x: f64, y: f64, w: f64, h: f64, rgb: Rgb) {
        let (x0, y0) = (x.round(), y.round());
        let (x1, y1) = ((x + w).round(), (y + h).round());
        let clamp = |v: f64| v.clamp(-1.0, 1e9) as i64;
        let (x0, y0) = (clamp(x0), clamp(y0));
        self.fill_rect(x0, y0, clamp(x1) - x0, clamp(y1) - y0, rgb);
    }

    /// Silently clips, so callers need not care about the canvas edge.
    fn fill_rect(&mut self, x: i64, y: i64, w: i64, h: i64, rgb: Rgb) {
        let x_range = x.max(0)..(x + w).min(i64::from(self.width));
        for py in y.max(0)..(y + h).min(i64::from(self.height)) {
            for px in x_range.clone() {
                let i = (py as usize * self.width as usize + px as usize) * 3;
                self.pixels[i..i + 3].copy_from_slice(&rgb);
            }
        }
    }

    /// Bresenham's walk, stamping a square brush of the stroke's width at each
    /// step (only on the "on" steps of a dashed stroke).
    fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: &Stroke) {
        let (rgb, width) = (stroke.rgb, brush(stroke.width));
        // Clamping keeps the walk short even for wild coordinates; layouts only ever
        // produce points on the canvas, where it changes nothing.
        let limit = |v: f64, max: u32| v.round().clamp(-1.0, f64::from(max) + 1.0) as i64;
        let (mut x, mut y) = (limit(from.0, self.width), limit(from.1, self.height));
        let (x1, y1) = (limit(to.0, self.width), limit(to.1, self.height));
        let (dx, dy) = ((x1 - x).abs(), -(y1 - y).abs());
        let (sx, sy) = ((x1 - x).signum(), (y1 - y).signum());
        let offset = width / 2;
        let mut err = dx + dy;
        for step in 0u64.. {
            if !stroke.dashed || step % DASH_PERIOD < DASH_ON {
                self.fill_rect(x - offset, y - offset, width, width, rgb);
            }
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
        let rgb = text.rgb;
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
    use super::*;

    fn at(canvas: &Canvas, (x, y): (f64, f64)) -> Rgb {
        let i = (y as usize * canvas.width as usize + x as usize) * 3;
        [canvas.pixels[i], canvas.pixels[i + 1], canvas.pixels[i + 2]]
    }

    #[test]
    fn lines_cover_both_endpoints_in_every_direction() {
        let stroke = Stroke {
            rgb: [255, 0, 0],
            width: 1.0,
            dashed: false,
            crisp: false,
        };
        for (from, to) in [
            ((1.0, 1.0), (8.0, 3.0)),
            ((8.0, 8.0), (2.0, 1.0)),
            ((5.0, 0.0), (5.0, 9.0)),
        ] {
            let mut canvas = Canvas::new(10, 10);
            canvas.line(from, to, &stroke);
            assert_eq!(at(&canvas, from), stroke.rgb);
            assert_eq!(at(&canvas, to), stroke.rgb);
        }
        let mut canvas = Canvas::new(1, 40);
        canvas.line(
            (0.0, 0.0),
            (0.0, 39.0),
            &Stroke {
                dashed: true,
                ..stroke
            },
        );
        let drawn = (0..40)
            .filter(|&y| at(&canvas, (0.0, y as f64)) == stroke.rgb)
            .count();
        assert_eq!(drawn, 24);
    }

    #[test]
    fn abutting_rectangles_tile_without_gaps_or_overlap() {
        let mut canvas = Canvas::new(10, 1);
        let cw = 10.0 / 3.0;
        for (k, rgb) in [[1, 0, 0], [2, 0, 0], [3, 0, 0]].into_iter().enumerate() {
            canvas.fill(k as f64 * cw, 0.0, cw, 1.0, rgb);
        }
        let row: Vec<u8> = (0..10).map(|x| at(&canvas, (x as f64, 0.0))[0]).collect();
        assert_eq!(row, [1, 1, 1, 2, 2, 2, 2, 3, 3, 3]);
    }
}
