//! The N-D box (uniform) filter of any element type: options, the window
//! sums each element type accumulates in, and the sum over a window of a
//! line extended by its boundary mode. Plain data and rules shared by the
//! API, the backends and the reference (validation is the API's, in
//! crate::gpu::uniform).
//!
//! Semantics are `scipy.ndimage.uniform_filter`'s: one 1-D pass per axis
//! whose size exceeds 1, in axis order, each reading the previous pass's
//! output as stored in the element type. Along an axis of window `s` and
//! origin `o`, output `i` is the mean of inputs `i - (s / 2 + o) ..` (`s`
//! of them) of the line extended by that axis's mode. Floats sum in f64
//! and round the mean once to their type (NaN and infinities as the direct
//! sum gives them); integers sum exactly and truncate the mean toward zero,
//! as SciPy's cast of its mean does (equal to SciPy wherever its f64
//! arithmetic is exact: every 8- to 32-bit image).
use crate::error::{Error, Result};
use crate::params::rank::RankValue;
use crate::params::stencil::{extend, BoundaryMode};

/// Sizes, origins and modes per axis of an N-D box filter, as
/// `scipy.ndimage.uniform_filter(size, mode, cval, origin)` with one value
/// per axis of the array.
#[derive(Debug, Clone, PartialEq)]
pub struct UniformNdOptions {
    /// Window size per axis, at least 1 (1: the axis is not filtered).
    pub size: Vec<usize>,
    /// SciPy's origin per axis: `-(s / 2) ..= (s - 1) / 2`.
    pub origin: Vec<i64>,
    /// Boundary mode per axis; any mode but [`BoundaryMode::Interior`].
    pub mode: Vec<BoundaryMode>,
    /// The value outside the array in [`BoundaryMode::Constant`]; for
    /// integer types an integer within the type's range.
    pub cval: f64,
}

impl UniformNdOptions {
    /// A centred window of `size` (one per axis), reflect mode.
    pub fn new(size: &[usize]) -> Self {
        UniformNdOptions {
            size: size.to_vec(),
            origin: vec![0; size.len()],
            mode: vec![BoundaryMode::Reflect; size.len()],
            cval: 0.0,
        }
    }

    /// The passes, in order (axes whose size exceeds 1), with `cval` as `T`;
    /// the one check of the options against an array of `ndim` axes.
    pub fn passes<T: BoxValue>(&self, ndim: usize) -> Result<Vec<BoxPass<T>>> {
        let per_axis = [
            ("size", self.size.len()),
            ("origin", self.origin.len()),
            ("mode", self.mode.len()),
        ];
        for (what, len) in per_axis {
            if len != ndim {
                return Err(Error::invalid(format!(
                    "{len} {what} values for an array of {ndim} dimensions: give one per axis"
                )));
            }
        }
        let cval = T::box_cval(self.cval).ok_or_else(|| {
            Error::invalid(format!(
                "cval {} is not a {} value (integer images take an integer cval within their range)",
                self.cval,
                T::NAME
            ))
        })?;
        let mut passes = Vec::new();
        for axis in 0..ndim {
            let (size, origin, mode) = (self.size[axis], self.origin[axis], self.mode[axis]);
            if size == 0 || size > MAX_AXIS_WINDOW {
                return Err(Error::invalid(format!(
                    "size {size} along axis {axis}: a window holds 1 to {MAX_AXIS_WINDOW} points"
                )));
            }
            let s = size as i64;
            if !(-(s / 2)..=(s - 1) / 2).contains(&origin) {
                return Err(Error::invalid(format!(
                    "origin {origin} along axis {axis} is outside {} ..= {} for a window of {size}",
                    -(s / 2),
                    (s - 1) / 2
                )));
            }
            if mode == BoundaryMode::Interior {
                return Err(Error::invalid(
                    "the interior mode is the 2-D box filter's; the N-D filter takes reflect, \
                     constant, nearest, mirror or wrap",
                ));
            }
            if size > 1 {
                passes.push(BoxPass {
                    axis,
                    size,
                    first: -(s / 2 + origin),
                    mode,
                    cval,
                });
            }
        }
        Ok(passes)
    }
}

/// Largest window along one axis (2^31 - 1: the device kernels index a
/// window with 32-bit integers, and 64-bit integer sums stay exact).
pub const MAX_AXIS_WINDOW: usize = i32::MAX as usize;

/// One pass along `axis`: output `i` is the mean of inputs
/// `i + first .. i + first + size` of the extended line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BoxPass<T> {
    pub axis: usize,
    pub size: usize,
    /// `-(size / 2 + origin)`.
    pub first: i64,
    pub mode: BoundaryMode,
    pub cval: T,
}

/// A running window sum of values of `T`: exact for integers, f64 with
/// counts of the non-finite values for floats (so that a value leaving the
/// window takes its NaN or infinity with it).
pub trait WindowSum<T>: Copy + Default + Send + Sync + std::fmt::Debug {
    fn add(&mut self, v: T);
    fn sub(&mut self, v: T);
    /// `self += times * other`.
    fn add_times(&mut self, other: Self, times: u64);
    /// The mean of the `size` values summed, as `T`.
    fn mean(self, size: usize) -> T;
}

/// The element types of the N-D box filter: integers of 8 to 64 bits, f32
/// and f64 (booleans as u8 holding 0 and 1: their truncated means are 0 or 1).
pub trait BoxValue: RankValue {
    type Sum: WindowSum<Self>;
    /// `cval` as this type: floats any value, integers only integers within
    /// their range (SciPy casts a mean holding a fractional or outside
    /// constant through f64, which kernpack does not follow).
    fn box_cval(cval: f64) -> Option<Self>;
}

/// The exact sum of integers that widen into `W`.
#[derive(Debug, Clone, Copy, Default)]
pub struct IntSum<W>(pub W);

macro_rules! box_int {
    ($wide:ty: $($t:ty),*) => {$(
        impl WindowSum<$t> for IntSum<$wide> {
            fn add(&mut self, v: $t) {
                self.0 += v as $wide;
            }
            fn sub(&mut self, v: $t) {
                self.0 -= v as $wide;
            }
            fn add_times(&mut self, other: Self, times: u64) {
                self.0 += other.0 * times as $wide;
            }
            fn mean(self, size: usize) -> $t {
                (self.0 / size as $wide) as $t
            }
        }
        impl BoxValue for $t {
            type Sum = IntSum<$wide>;
            fn box_cval(cval: f64) -> Option<Self> {
                (cval.fract() == 0.0).then(|| <$t as RankValue>::from_cval(cval)).flatten()
            }
        }
    )*};
}
// Windows hold at most 2^31 points: 32-bit values sum exactly in i64,
// 64-bit ones in i128.
box_int!(i64: u8, i8, u16, i16, u32, i32);
box_int!(i128: u64, i64);

/// The f64 sum of a float window's finite values and the counts of its NaNs
/// and infinities.
#[derive(Debug, Clone, Copy, Default)]
pub struct FloatSum {
    pub finite: f64,
    pub nan: u64,
    pub pos_inf: u64,
    pub neg_inf: u64,
}

impl FloatSum {
    fn count(&mut self, v: f64, by: i64) {
        let slot = if v.is_nan() {
            &mut self.nan
        } else if v > 0.0 {
            &mut self.pos_inf
        } else {
            &mut self.neg_inf
        };
        *slot = slot.wrapping_add_signed(by);
    }
}

macro_rules! box_float {
    ($($t:ty),*) => {$(
        impl WindowSum<$t> for FloatSum {
            fn add(&mut self, v: $t) {
                let v = v as f64;
                if v.is_finite() { self.finite += v } else { self.count(v, 1) }
            }
            fn sub(&mut self, v: $t) {
                let v = v as f64;
                if v.is_finite() { self.finite -= v } else { self.count(v, -1) }
            }
            fn add_times(&mut self, other: Self, times: u64) {
                self.finite += other.finite * times as f64;
                self.nan += other.nan * times;
                self.pos_inf += other.pos_inf * times;
                self.neg_inf += other.neg_inf * times;
            }
            fn mean(self, size: usize) -> $t {
                if self.nan > 0 || (self.pos_inf > 0 && self.neg_inf > 0) {
                    <$t>::NAN
                } else if self.pos_inf > 0 {
                    <$t>::INFINITY
                } else if self.neg_inf > 0 {
                    <$t>::NEG_INFINITY
                } else {
                    (self.finite / size as f64) as $t
                }
            }
        }
        impl BoxValue for $t {
            type Sum = FloatSum;
            fn box_cval(cval: f64) -> Option<Self> {
                Some(cval as $t)
            }
        }
    )*};
}
box_float!(f32, f64);

/// The sum over points `first .. first + len` of a line of `n >= 1` points
/// (`value(i)`) extended by `mode` (`cval` outside in constant mode), at a
/// cost of at most about `min(len, 4 n)` values whatever `len`: whole
/// periods of the repeating modes are summed once and multiplied, points
/// past an edge in the constant and nearest modes are counted.
pub fn window_sum<T: BoxValue>(
    first: i64,
    len: i64,
    n: i64,
    mode: BoundaryMode,
    cval: T,
    value: impl Fn(i64) -> T,
) -> T::Sum {
    let direct = |lo: i64, hi: i64| {
        let mut s = T::Sum::default();
        for i in lo..hi {
            s.add(extend(i, n, mode).map_or(cval, &value));
        }
        s
    };
    let one = |v: T| {
        let mut s = T::Sum::default();
        s.add(v);
        s
    };
    if len <= n {
        return direct(first, first + len);
    }
    let below = (-first).clamp(0, len) as u64;
    let above = (first + len - n).clamp(0, len) as u64;
    let inside = || direct(first.max(0), (first + len).min(n).max(first.max(0)));
    let period = match mode {
        BoundaryMode::Reflect => 2 * n,
        BoundaryMode::Mirror => (2 * n - 2).max(1),
        BoundaryMode::Wrap => n,
        BoundaryMode::Constant => {
            let mut sum = inside();
            sum.add_times(one(cval), below + above);
            return sum;
        }
        BoundaryMode::Nearest | BoundaryMode::Interior => {
            let mut sum = inside();
            sum.add_times(one(value(0)), below);
            sum.add_times(one(value(n - 1)), above);
            return sum;
        }
    };
    let mut sum = direct(first, first + len % period);
    sum.add_times(direct(0, period), (len / period) as u64);
    sum
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODES: [BoundaryMode; 5] = [
        BoundaryMode::Reflect,
        BoundaryMode::Constant,
        BoundaryMode::Nearest,
        BoundaryMode::Mirror,
        BoundaryMode::Wrap,
    ];

    /// `window_sum` against the sum over every extended point, exact in
    /// integers, for every mode, windows before, across and far past the line.
    #[test]
    fn window_sum_is_the_direct_sum() {
        for n in 1..7i64 {
            let line: Vec<i32> = (0..n).map(|i| (3 * i * i + 1 - 2 * n) as i32).collect();
            let value = |i: i64| line[i as usize];
            for mode in MODES {
                for first in -40..12 {
                    for len in 1..60 {
                        let direct: i64 = (first..first + len)
                            .map(|i| extend(i, n, mode).map_or(-7, value) as i64)
                            .sum();
                        let sum = window_sum::<i32>(first, len, n, mode, -7, value);
                        assert_eq!(sum.0, direct, "n {n} {mode:?} first {first} len {len}");
                    }
                }
            }
        }
    }

    #[test]
    fn integer_means_truncate_toward_zero_and_floats_carry_non_finite_values() {
        let mut s = <i16 as BoxValue>::Sum::default();
        for v in [-5i16, 2, 1] {
            WindowSum::<i16>::add(&mut s, v);
        }
        assert_eq!(WindowSum::<i16>::mean(s, 3), 0); // -2 / 3 truncates to 0
        WindowSum::<i16>::sub(&mut s, -5);
        assert_eq!(WindowSum::<i16>::mean(s, 2), 1);
        let mut f = FloatSum::default();
        for v in [1.0f32, f32::INFINITY, 2.0] {
            f.add(v);
        }
        assert_eq!(WindowSum::<f32>::mean(f, 3), f32::INFINITY);
        f.sub(f32::INFINITY);
        assert_eq!(WindowSum::<f32>::mean(f, 2), 1.5);
        f.add(f32::NEG_INFINITY);
        f.add(f32::INFINITY);
        assert!(WindowSum::<f32>::mean(f, 4).is_nan());
    }

    #[test]
    fn options_check_every_axis_and_the_constant() {
        let mut opts = UniformNdOptions::new(&[3, 1, 4]);
        let passes = opts.passes::<u8>(3).unwrap();
        assert_eq!(passes.iter().map(|p| p.axis).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(passes[1].first, -2);
        assert!(opts.passes::<u8>(2).is_err());
        opts.cval = 0.5;
        assert!(opts.passes::<u8>(3).is_err());
        assert!(opts.passes::<f32>(3).is_ok());
        opts.cval = 256.0;
        assert!(opts.passes::<u8>(3).is_err());
        assert!(opts.passes::<u16>(3).is_ok());
        opts.origin[2] = 2;
        assert!(opts.passes::<u16>(3).is_err());
        opts.origin[2] = -2;
        assert!(opts.passes::<u16>(3).is_ok());
        opts.mode[0] = BoundaryMode::Interior;
        assert!(opts.passes::<u16>(3).is_err());
    }
}
