//! Heat-map panels (a Hovmoller diagram: time down, site across, colour = value).
//! The grid is block-averaged down to at most `MAX_CELLS` per axis so that
//! either file stays small; colours run blue (low) - white - red (high) over the
//! finite range of the data, in `LEVELS` steps, so that the SVG can draw each
//! colour as one path.

/// Most cells drawn per axis (rows and columns are block-averaged beyond).
const MAX_CELLS: usize = 160;
/// Distinct colours of the scale.
pub(crate) const LEVELS: usize = 64;

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
    pub(crate) fn has_data(&self) -> bool {
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

/// The finite range of `values`, if any.
pub(crate) fn value_range(values: &[f64]) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .iter()
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
            (l.min(*v), h.max(*v))
        });
    (lo <= hi).then_some((lo, hi))
}

/// Where `v` lies in `lo..hi`, quantised to one of `LEVELS` steps: 0 for `lo`,
/// 1 for `hi`, the middle (white) for everything when the range is flat; NaN
/// stays NaN.
pub(crate) fn level(v: f64, (lo, hi): (f64, f64)) -> f64 {
    if !v.is_finite() {
        return f64::NAN;
    }
    if hi <= lo {
        return 0.5;
    }
    let steps = (LEVELS - 1) as f64;
    (((v - lo) / (hi - lo)).clamp(0.0, 1.0) * steps).round() / steps
}

/// Blue - white - red for t in [0, 1]; grey for NaN.
pub(crate) fn colour(t: f64) -> [u8; 3] {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_grids_are_averaged_down_and_malformed_ones_give_no_cells() {
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

    #[test]
    fn the_colour_scale_runs_blue_white_red_in_quantised_levels() {
        assert_eq!(colour(0.0), [33, 102, 172]);
        assert_eq!(colour(0.5), [255, 255, 255]);
        assert_eq!(colour(1.0), [178, 24, 43]);
        assert_eq!(colour(f64::NAN), [128, 128, 128]);
        assert_eq!(level(-3.0, (-3.0, 5.0)), 0.0);
        assert_eq!(level(5.0, (-3.0, 5.0)), 1.0);
        assert_eq!(level(2.0, (2.0, 2.0)), 0.5);
        let distinct: std::collections::HashSet<u64> = (0..1000)
            .map(|i| level(i as f64, (0.0, 999.0)).to_bits())
            .collect();
        assert_eq!(distinct.len(), LEVELS);
    }
}
