//! Rank filters (`scipy.ndimage.rank_filter`, `median_filter`,
//! `percentile_filter`): the footprint, the rank, the element types and the
//! window geometry every backend reads.
//!
//! Output `i` (a multi-index) is the value of rank `r` (0 = smallest) among
//! the inputs at `i + j - (f / 2 + origin)` for every point `j` of the
//! footprint that is set, per axis, with SciPy's boundary modes past the
//! edges (one mode for all axes, as SciPy's rank filters). Values are
//! ordered as numbers; NaNs sort above +inf (as NumPy's sort), and -0.0 below
//! +0.0.
use crate::error::{Error, Result};
use crate::params::stencil::{extend, BoundaryMode};

/// Which value of the sorted window each output takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rank {
    /// SciPy's `rank`: 0 the smallest, -1 the largest.
    Index(i64),
    /// The middle value: rank `count / 2` (the upper middle of an even count,
    /// as SciPy).
    Median,
    /// SciPy's `percentile` (-100 ..= 100; negative counts from 100): rank
    /// `floor(count * p / 100)`, `count - 1` at 100.
    Percentile(f64),
}

/// The points of the window: a box of `shape` (one size per axis of the
/// array) where `mask` (row-major, `shape`'s product of values) is set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Footprint {
    pub shape: Vec<usize>,
    pub mask: Vec<bool>,
}

impl Footprint {
    /// Every point of a box of `shape` (SciPy's `size`).
    pub fn full(shape: &[usize]) -> Self {
        Footprint {
            shape: shape.to_vec(),
            mask: vec![true; shape.iter().product()],
        }
    }

    /// The points set.
    pub fn count(&self) -> usize {
        self.mask.iter().filter(|&&m| m).count()
    }

    /// Whether every point of the box is set.
    pub fn is_full(&self) -> bool {
        self.mask.iter().all(|&m| m)
    }
}

/// A rank filter's window and boundary (SciPy's `rank_filter` arguments but
/// the array).
#[derive(Debug, Clone, PartialEq)]
pub struct RankFilterOptions {
    pub footprint: Footprint,
    pub rank: Rank,
    /// SciPy's `origin`, one per axis (empty: all 0). Along an axis of
    /// footprint size `f`, valid origins are `-(f / 2) ..= (f - 1) / 2`.
    pub origin: Vec<i64>,
    /// Reflect, constant, nearest, mirror or wrap.
    pub mode: BoundaryMode,
    /// The value outside the array in [`BoundaryMode::Constant`], converted
    /// to the element type (integers: truncated toward zero, and it must fit).
    pub cval: f64,
}

impl RankFilterOptions {
    /// The median over a box of `size` (SciPy's `median_filter(size=...)`),
    /// centred, reflect.
    pub fn median(size: &[usize]) -> Self {
        RankFilterOptions {
            footprint: Footprint::full(size),
            rank: Rank::Median,
            origin: Vec::new(),
            mode: BoundaryMode::Reflect,
            cval: 0.0,
        }
    }

    /// The rank (0-based, from the smallest) among the footprint's points,
    /// or why there is none.
    pub fn resolved_rank(&self) -> Result<usize> {
        let count = self.footprint.count();
        if count == 0 {
            return Err(Error::invalid("the footprint has no point set"));
        }
        let n = count as i64;
        let rank = match self.rank {
            Rank::Median => n / 2,
            Rank::Index(r) => {
                if r < 0 {
                    r + n
                } else {
                    r
                }
            }
            Rank::Percentile(p) => {
                let p = if p < 0.0 { p + 100.0 } else { p };
                if !(0.0..=100.0).contains(&p) {
                    return Err(Error::invalid(format!(
                        "percentile {p}: expected -100 ..= 100"
                    )));
                }
                if p == 100.0 {
                    n - 1
                } else {
                    (n as f64 * p / 100.0) as i64
                }
            }
        };
        if !(0..n).contains(&rank) {
            return Err(Error::invalid(format!(
                "rank {:?} is outside a footprint of {count} points",
                self.rank
            )));
        }
        Ok(rank as usize)
    }

    /// The origin along `axis` (0 when not given).
    pub fn origin_of(&self, axis: usize) -> i64 {
        self.origin.get(axis).copied().unwrap_or(0)
    }

    /// Checks the options against an array of `shape`: one footprint size
    /// and origin per axis, valid origins, a mode rank filters take, a rank
    /// inside the footprint.
    pub fn check(&self, shape: &[usize]) -> Result<usize> {
        let fp = &self.footprint;
        if fp.shape.len() != shape.len() {
            return Err(Error::invalid(format!(
                "the footprint has {} axes, the array {}",
                fp.shape.len(),
                shape.len()
            )));
        }
        let points = crate::params::array_size(&fp.shape)
            .ok_or_else(|| Error::invalid("the footprint is too large"))?;
        if points != fp.mask.len() {
            return Err(Error::invalid(format!(
                "a footprint of shape {:?} holds {points} points, its mask {}",
                fp.shape,
                fp.mask.len()
            )));
        }
        if fp.shape.contains(&0) {
            return Err(Error::invalid(format!(
                "the footprint's shape {:?} has an empty axis",
                fp.shape
            )));
        }
        if !self.origin.is_empty() && self.origin.len() != shape.len() {
            return Err(Error::invalid(format!(
                "{} origins for an array of {} axes",
                self.origin.len(),
                shape.len()
            )));
        }
        for (axis, &f) in fp.shape.iter().enumerate() {
            let (o, f) = (self.origin_of(axis), f as i64);
            if !(-(f / 2)..=(f - 1) / 2).contains(&o) {
                return Err(Error::invalid(format!(
                    "origin {o} along axis {axis} is outside {} ..= {} for a footprint of size {f}",
                    -(f / 2),
                    (f - 1) / 2
                )));
            }
        }
        if self.mode == BoundaryMode::Interior {
            return Err(Error::invalid(
                "the interior mode is the box filter's; a rank filter takes reflect, constant, \
                 nearest, mirror or wrap",
            ));
        }
        self.resolved_rank()
    }
}

/// How element values are ordered by their bits ([`RankValue::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i32)]
pub enum KeyKind {
    Unsigned = 0,
    Signed = 1,
    Float = 2,
}

mod sealed {
    pub trait Sealed {}
}

/// The element types of rank filters: integers of 8 to 64 bits, f32, f64.
/// Each maps to an unsigned key of its width whose order is the values'.
pub trait RankValue:
    sealed::Sealed
    + Copy
    + Default
    + PartialEq
    + Send
    + Sync
    + std::fmt::Debug
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + 'static
{
    /// NumPy's name of the type.
    const NAME: &'static str;
    const KIND: KeyKind;
    /// The order-preserving key (in the low `size_of::<Self>()` bytes).
    fn key(self) -> u64;
    fn from_key(key: u64) -> Self;
    /// `cval` as this type, as SciPy converts it (integers: truncated toward
    /// zero); None when it does not fit.
    fn from_cval(cval: f64) -> Option<Self>;
    /// The raw bits (zero-extended), as the device kernels take a value.
    fn bits(self) -> u64;
}

macro_rules! rank_int {
    ($t:ty, $u:ty, $name:literal, $kind:expr, $flip:expr) => {
        impl sealed::Sealed for $t {}
        impl RankValue for $t {
            const NAME: &'static str = $name;
            const KIND: KeyKind = $kind;
            fn key(self) -> u64 {
                ((self as $u) ^ $flip) as u64
            }
            fn from_key(key: u64) -> Self {
                ((key as $u) ^ $flip) as $t
            }
            fn from_cval(cval: f64) -> Option<Self> {
                let t = cval.trunc();
                // NaN fails both comparisons; 2^63 and 2^64 saturate to
                // the 64-bit maxima they round from.
                (t >= <$t>::MIN as f64 && t <= <$t>::MAX as f64).then_some(t as $t)
            }
            fn bits(self) -> u64 {
                self as $u as u64
            }
        }
    };
}

rank_int!(u8, u8, "uint8", KeyKind::Unsigned, 0);
rank_int!(u16, u16, "uint16", KeyKind::Unsigned, 0);
rank_int!(u32, u32, "uint32", KeyKind::Unsigned, 0);
rank_int!(u64, u64, "uint64", KeyKind::Unsigned, 0);
rank_int!(i8, u8, "int8", KeyKind::Signed, 1 << 7);
rank_int!(i16, u16, "int16", KeyKind::Signed, 1 << 15);
rank_int!(i32, u32, "int32", KeyKind::Signed, 1 << 31);
rank_int!(i64, u64, "int64", KeyKind::Signed, 1 << 63);

macro_rules! rank_float {
    ($t:ty, $u:ty, $name:literal) => {
        impl sealed::Sealed for $t {}
        impl RankValue for $t {
            const NAME: &'static str = $name;
            const KIND: KeyKind = KeyKind::Float;
            fn key(self) -> u64 {
                // Every NaN as the positive quiet NaN, above +inf; negative
                // values' bits reversed, positive values' sign set.
                let b = if self.is_nan() {
                    <$t>::NAN.abs().to_bits()
                } else {
                    self.to_bits()
                };
                const SIGN: $u = 1 << (<$u>::BITS - 1);
                (if b & SIGN != 0 { !b } else { b | SIGN }) as u64
            }
            fn from_key(key: u64) -> Self {
                let k = key as $u;
                const SIGN: $u = 1 << (<$u>::BITS - 1);
                <$t>::from_bits(if k & SIGN != 0 { k & !SIGN } else { !k })
            }
            fn from_cval(cval: f64) -> Option<Self> {
                Some(cval as $t)
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
        }
    };
}

rank_float!(f32, u32, "float32");
rank_float!(f64, u64, "float64");

/// Steps the multi-index `index` of a row-major array of `shape` to the next
/// point, the last axis fastest (after the last point: back to all zeros).
pub fn next_index(index: &mut [usize], shape: &[usize]) {
    for a in (0..shape.len()).rev() {
        index[a] += 1;
        if index[a] < shape[a] {
            return;
        }
        index[a] = 0;
    }
}

/// The window of a rank filter over an array of `shape`: each set point's
/// offset per axis from the output (`j - (f / 2 + origin)`), in the mask's
/// order.
#[derive(Debug, Clone)]
pub struct Window {
    pub shape: Vec<usize>,
    /// `taps[k][axis]`.
    pub taps: Vec<Vec<i64>>,
    pub mode: BoundaryMode,
}

impl Window {
    /// The window of checked options over `shape`.
    pub fn new(shape: &[usize], opts: &RankFilterOptions) -> Self {
        let fp = &opts.footprint;
        let ndim = shape.len();
        let mut taps = Vec::with_capacity(fp.count());
        let mut j = vec![0usize; ndim];
        for &set in &fp.mask {
            if set {
                taps.push(
                    (0..ndim)
                        .map(|a| j[a] as i64 - (fp.shape[a] as i64 / 2 + opts.origin_of(a)))
                        .collect(),
                );
            }
            next_index(&mut j, &fp.shape);
        }
        Window {
            shape: shape.to_vec(),
            taps,
            mode: opts.mode,
        }
    }

    /// Row-major strides of the array.
    pub fn strides(&self) -> Vec<i64> {
        let mut s = vec![1i64; self.shape.len()];
        for a in (0..self.shape.len().saturating_sub(1)).rev() {
            s[a] = s[a + 1] * self.shape[a + 1] as i64;
        }
        s
    }

    /// Per axis, the smallest and largest tap offset.
    pub fn reach(&self) -> Vec<(i64, i64)> {
        (0..self.shape.len())
            .map(|a| {
                let lo = self.taps.iter().map(|t| t[a]).min().unwrap_or(0);
                let hi = self.taps.iter().map(|t| t[a]).max().unwrap_or(0);
                (lo, hi)
            })
            .collect()
    }

    /// The flat index read by tap `k` for the output at `index`; None: the
    /// constant.
    pub fn source(&self, index: &[usize], k: usize, strides: &[i64]) -> Option<usize> {
        let mut flat = 0i64;
        for (a, &i) in index.iter().enumerate() {
            let at = extend(i as i64 + self.taps[k][a], self.shape[a] as i64, self.mode)?;
            flat += at * strides[a];
        }
        Some(flat as usize)
    }
}
