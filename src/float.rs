//! The element types every kernel family is instantiated for.
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`: selects the `_f32` / `_f64` entry point of a kernel.
/// Its IEEE operators are part of it, so the CPU backend computes in `T`:
/// Rust never contracts `a * b + c` into an FMA, so code written with these
/// operators rounds exactly as scalar code with the same operators in the
/// same order.
pub trait Float:
    sealed::Sealed
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Neg<Output = Self>
    + std::ops::AddAssign
    + Copy
    + Default
    + PartialOrd
    + Send
    + Sync
    + std::fmt::Debug
    + std::fmt::Display
    + DeviceRepr
    + ValidAsZeroBits
    + 'static
{
    /// Suffix of the kernel entry points and name used in messages: "f32" or "f64".
    const NAME: &'static str;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl Float for f32 {
    const NAME: &'static str = "f32";
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> Self {
        v as f32
    }
}

impl Float for f64 {
    const NAME: &'static str = "f64";
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> Self {
        v
    }
}

/// The index of the first NaN or infinity in `values`. Blocks are checked
/// without an early exit, so the scan vectorises (a survey's 10^8 samples go
/// at memory speed); only a block with a bad value is searched.
pub(crate) fn first_non_finite<T: Float>(values: &[T]) -> Option<usize> {
    const BLOCK: usize = 256;
    let finite = |block: &[T]| block.iter().fold(true, |ok, v| ok & v.to_f64().is_finite());
    let b = values.chunks(BLOCK).position(|block| !finite(block))?;
    let block = &values[b * BLOCK..values.len().min((b + 1) * BLOCK)];
    block
        .iter()
        .position(|v| !v.to_f64().is_finite())
        .map(|i| b * BLOCK + i)
}

/// A complex number laid out as two consecutive values, as C99 `_Complex` and
/// `std::complex<T>` are, so complex outputs can be shared with C and C++.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Complex<T> {
    pub re: T,
    pub im: T,
}

impl<T: Float> Complex<T> {
    pub fn norm(self) -> f64 {
        self.re.to_f64().hypot(self.im.to_f64())
    }
}
