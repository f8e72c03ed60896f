//! Box filter options, boundary modes and image layouts: plain data shared by
//! the API and the reference (validation is the API's, in crate::api::stencil).
use std::str::FromStr;

use crate::error::{Error, Result};

/// Largest square window of the CPU backend's fast path for odd square
/// windows centred on their point (src/cpu/stencil.rs); no longer a limit of
/// the filter: other windows take the running-sum paths, of any size.
pub const MAX_BOX_SIZE: usize = 33;

/// What the filter reads outside the image (SciPy's `mode`). The
/// discriminants are the `KP_BOX_*` values of the C ABI (include/kernpack.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u32)]
pub enum BoundaryMode {
    /// `d c b a | a b c d | d c b a` (SciPy's default).
    #[default]
    Reflect = 0,
    /// `k k k k | a b c d | k k k k` with k = `cval`.
    Constant = 1,
    /// `a a a a | a b c d | d d d d`.
    Nearest = 2,
    /// `d c b | a b c d | c b a`.
    Mirror = 3,
    /// `a b c d | a b c d | a b c d`.
    Wrap = 4,
    /// Only points whose whole window lies inside the image are filtered; the
    /// others keep their input value (the interior-only stencil of hand-written
    /// 3x3 smoothing kernels).
    Interior = 5,
}

/// Every mode, in the order of its code, with its name.
const MODES: [(BoundaryMode, &str); 6] = [
    (BoundaryMode::Reflect, "reflect"),
    (BoundaryMode::Constant, "constant"),
    (BoundaryMode::Nearest, "nearest"),
    (BoundaryMode::Mirror, "mirror"),
    (BoundaryMode::Wrap, "wrap"),
    (BoundaryMode::Interior, "interior"),
];

impl BoundaryMode {
    /// The `KP_BOX_*` value of the C ABI (include/kernpack.h).
    pub fn code(self) -> u32 {
        self as u32
    }

    pub fn from_code(code: u32) -> Result<Self> {
        let mode = MODES.get(code as usize).map(|&(mode, _)| mode);
        mode.ok_or_else(|| {
            Error::invalid(format!(
                "unknown boundary mode {code}: expected 0 (reflect) .. 5 (interior)"
            ))
        })
    }
}

impl FromStr for BoundaryMode {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let name = s.to_ascii_lowercase();
        let mode = MODES
            .iter()
            .find(|&&(_, n)| n == name)
            .map(|&(mode, _)| mode);
        mode.ok_or_else(|| {
            Error::invalid(format!(
                "unknown boundary mode {name:?}: expected reflect, constant, nearest, mirror, wrap or interior"
            ))
        })
    }
}

/// Window and boundary of a box filter. Default: 3 x 3, reflect.
/// The square, centred special case of [`UniformFilterOptions`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxFilterOptions {
    /// Window size, the same along both axes, at least 1 (an even size
    /// places its window as SciPy does, see [`UniformFilterOptions`], which
    /// also takes one size and origin per axis).
    pub size: usize,
    pub mode: BoundaryMode,
    /// The value outside the image in [`BoundaryMode::Constant`].
    pub cval: f64,
}

impl Default for BoxFilterOptions {
    fn default() -> Self {
        BoxFilterOptions {
            size: 3,
            mode: BoundaryMode::Reflect,
            cval: 0.0,
        }
    }
}

/// Window, origin and boundary of a box filter along each axis, as
/// `scipy.ndimage.uniform_filter(size=(rows, cols), origin=(rows, cols))`.
/// Along an axis of size `n` and origin `o`, output `i` is the mean over
/// inputs `i - (n / 2 + o) ..= i - (n / 2 + o) + n - 1` (integer division):
/// SciPy's convention, so an even window reaches one more point before its
/// point than after it at origin 0. Valid origins: `-(n / 2) ..= (n - 1) / 2`,
/// which keep the point itself inside its window. Default: 3 x 3, centred,
/// reflect.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UniformFilterOptions {
    /// Window size along (rows, columns): at least 1, odd or even, any size
    /// (larger than the image too: the boundary mode extends it as far as needed).
    pub size: [usize; 2],
    /// SciPy's `origin` along (rows, columns).
    pub origin: [i64; 2],
    pub mode: BoundaryMode,
    /// The value outside the image in [`BoundaryMode::Constant`].
    pub cval: f64,
}

impl Default for UniformFilterOptions {
    fn default() -> Self {
        BoxFilterOptions::default().into()
    }
}

impl From<BoxFilterOptions> for UniformFilterOptions {
    fn from(o: BoxFilterOptions) -> Self {
        UniformFilterOptions {
            size: [o.size; 2],
            origin: [0; 2],
            mode: o.mode,
            cval: o.cval,
        }
    }
}

impl From<&BoxFilterOptions> for UniformFilterOptions {
    fn from(o: &BoxFilterOptions) -> Self {
        (*o).into()
    }
}

impl From<&UniformFilterOptions> for UniformFilterOptions {
    fn from(o: &UniformFilterOptions) -> Self {
        *o
    }
}

impl UniformFilterOptions {
    /// Points of the window before its point along `axis` (0: rows, 1:
    /// columns): `size / 2 + origin`, in `0 ..= size - 1` for a valid origin.
    pub fn before(&self, axis: usize) -> i64 {
        (self.size[axis] / 2) as i64 + self.origin[axis]
    }

    /// Points of the window after its point along `axis`: `size - 1 - before`.
    pub fn after(&self, axis: usize) -> i64 {
        self.size[axis] as i64 - 1 - self.before(axis)
    }

    /// True for SciPy's valid origin range of `axis`:
    /// `-(size / 2) ..= (size - 1) / 2`.
    pub fn origin_valid(&self, axis: usize) -> bool {
        let n = self.size[axis] as i64;
        (-(n / 2)..=(n - 1) / 2).contains(&self.origin[axis])
    }

    /// `1 / (rows size * cols size)`, the mean's factor.
    pub fn scale(&self) -> f64 {
        1.0 / (self.size[0] as f64 * self.size[1] as f64)
    }

    /// For [`BoundaryMode::Interior`]: true when the window of output
    /// `(y, x)` lies inside a `rows x cols` image.
    pub fn window_fits(&self, y: i64, x: i64, rows: i64, cols: i64) -> bool {
        y - self.before(0) >= 0
            && y + self.after(0) < rows
            && x - self.before(1) >= 0
            && x + self.after(1) < cols
    }
}

/// Shape of an image and of its output, row-major; pitches are the distances
/// between rows in elements (at least `cols`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLayout {
    pub rows: usize,
    pub cols: usize,
    pub in_pitch: usize,
    pub out_pitch: usize,
}

impl ImageLayout {
    /// Rows stored back to back, in the input and in the output.
    pub fn contiguous(rows: usize, cols: usize) -> Self {
        ImageLayout {
            rows,
            cols,
            in_pitch: cols,
            out_pitch: cols,
        }
    }

    /// Elements a buffer with `pitch` must hold: the last row needs only
    /// `cols`. None when that count overflows (no such buffer can exist).
    pub fn span(&self, pitch: usize) -> Option<usize> {
        match self.rows {
            0 => Some(0),
            rows => (rows - 1).checked_mul(pitch)?.checked_add(self.cols),
        }
    }

    /// Values the input spans (`usize::MAX` for a layout too large to exist,
    /// which validation rejects).
    pub fn input_len(&self) -> usize {
        self.span(self.in_pitch).unwrap_or(usize::MAX)
    }

    /// Values the output spans, as [`ImageLayout::input_len`].
    pub fn output_len(&self) -> usize {
        self.span(self.out_pitch).unwrap_or(usize::MAX)
    }

    /// No rows or no columns: nothing to filter.
    pub fn is_empty(&self) -> bool {
        self.rows == 0 || self.cols == 0
    }
}

/// Where SciPy reads index `i` of a line of `n` points; None: the constant.
pub fn extend(i: i64, n: i64, mode: BoundaryMode) -> Option<i64> {
    if (0..n).contains(&i) {
        return Some(i);
    }
    Some(match mode {
        BoundaryMode::Constant => return None,
        BoundaryMode::Reflect => {
            let m = i.rem_euclid(2 * n);
            if m < n {
                m
            } else {
                2 * n - 1 - m
            }
        }
        BoundaryMode::Mirror if n == 1 => 0,
        BoundaryMode::Mirror => {
            let m = i.rem_euclid(2 * n - 2);
            if m < n {
                m
            } else {
                2 * n - 2 - m
            }
        }
        BoundaryMode::Wrap => i.rem_euclid(n),
        BoundaryMode::Nearest | BoundaryMode::Interior => i.clamp(0, n - 1),
    })
}

/// The period of a line of `n` points extended by `mode`, for the modes that
/// repeat it (reflect `2n`, mirror `2n - 2`, wrap `n`); None for the others.
fn period(n: i64, mode: BoundaryMode) -> Option<i64> {
    match mode {
        BoundaryMode::Reflect => Some(2 * n),
        BoundaryMode::Mirror => Some((2 * n - 2).max(1)),
        BoundaryMode::Wrap => Some(n),
        BoundaryMode::Constant | BoundaryMode::Nearest | BoundaryMode::Interior => None,
    }
}

/// The sum of `value` over points `first .. first + len` of a line of `n >= 1`
/// points extended by `mode` (`cval` outside in constant mode), at a cost of
/// at most about `min(len, 4 n)` values whatever `len`: the points outside
/// that read an edge or the constant are counted, not visited, and whole
/// periods of the repeating modes are summed once and multiplied. Windows
/// from 1 to any size (a hostile `len` of 2^31 costs what the line costs).
pub fn line_sum(
    first: i64,
    len: i64,
    n: i64,
    mode: BoundaryMode,
    cval: f64,
    value: impl Fn(i64) -> f64,
) -> f64 {
    let direct = |lo: i64, hi: i64| {
        (lo..hi).fold(0.0, |s, i| {
            s + match extend(i, n, mode) {
                Some(i) => value(i),
                None => cval,
            }
        })
    };
    if len <= n {
        return direct(first, first + len);
    }
    let inside = || direct(first.max(0), (first + len).min(n).max(first.max(0)));
    let below = (-first).clamp(0, len) as f64; // points before the line
    let above = (first + len - n).clamp(0, len) as f64; // points after it
    match period(n, mode) {
        Some(p) => {
            let (whole, rest) = (len / p, len % p);
            whole as f64 * direct(0, p) + direct(first, first + rest)
        }
        None if mode == BoundaryMode::Constant => inside() + (below + above) * cval,
        None => inside() + below * value(0) + above * value(n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `line_sum` against the plain sum over every extended point, for
    /// every mode, windows before, across and far beyond the line.
    #[test]
    fn line_sum_is_the_direct_sum() {
        let modes = MODES.map(|(mode, _)| mode);
        for n in 1..7i64 {
            // Distinct small integers: every sum is exact in f64.
            let line: Vec<f64> = (0..n).map(|i| (3 * i * i + 1 - 2 * n) as f64).collect();
            let value = |i: i64| line[i as usize];
            for mode in modes {
                for first in -40..12 {
                    for len in 1..60 {
                        let direct: f64 = (first..first + len)
                            .map(|i| extend(i, n, mode).map_or(-7.0, value))
                            .sum();
                        let fast = line_sum(first, len, n, mode, -7.0, value);
                        assert_eq!(fast, direct, "n {n} {mode:?} first {first} len {len}");
                    }
                }
            }
        }
    }
}
