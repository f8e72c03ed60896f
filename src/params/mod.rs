//! Plain data of every family: grids, batches, options, parameter structs,
//! results and device-buffer descriptions, with the small pure rules that
//! define them (a uniform grid's validity, a boundary mode's index map).
//! Every layer (the safe API, the CPU backend, the GPU launch code, the
//! reference, the C ABI and Python) imports them; they import nothing of
//! those layers, so no layer depends on another through its types. The API
//! re-exports them where users find them.
pub mod bls;
pub mod correlate;
pub mod counter_rng;
pub mod dopri5;
pub mod fg;
pub mod lombscargle;
pub mod lombscargle_chi2;
pub mod lombscargle_multiband;
pub mod lorenz;
pub mod lorenz63;
pub mod peaks;
pub mod phasefold;
pub mod rank;
pub mod reduce;
pub mod save_at;
pub mod significance;
pub mod stencil;
pub mod uniform;

/// The number of values of an array of `shape` (1 for no axis); None when
/// the product overflows.
pub fn array_size(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d))
}

/// Weights as kernels take them: by value, so they sit in the constant bank
/// (`kp::Weights<T, L>` of csrc/common.cuh: Model III's, the 1-D
/// correlation's).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct FixedWeights<T, const L: usize> {
    pub(crate) w: [T; L],
}

/// The default pipelining target of one chunk: inputs, outputs and scratch.
pub const DEFAULT_CHUNK_BYTES: usize = 256 << 20;
