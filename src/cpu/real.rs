//! What the CPU kernels that compute in `T` itself (f32 in f32 lanes, as the
//! GPU does, rather than through f64) need of the element type.
use crate::float::Float;

/// `f32` or `f64` with its IEEE operators (from [`Float`]). Rust never
/// contracts `a * b + c` into an FMA, so code written with these operators
/// rounds exactly as scalar code with the same operators in the same order.
pub(crate) trait Real: Float {
    /// Values per 512-bit vector: the lane count of the member-blocked kernels.
    const VECTOR: usize = 64 / std::mem::size_of::<Self>();
}

impl<T: Float> Real for T {}
