//! kernpack: precompiled CUDA kernels in one multi-architecture fatbin, loaded
//! with no JIT, behind a safe Rust API and a C ABI, with a CPU backend for
//! machines without a GPU; every kernel is held to a plain Rust reference
//! implementation (`src/reference`, the oracle the tests compare with; it is
//! compiled for the crate's own tests and benches, or with the `reference`
//! feature, and is not part of the shipped library).
//!
//! ```no_run
//! use kernpack::{Backend, Kernpack, LombScargleOptions, Series};
//! let kp = Kernpack::new(Backend::Auto)?;          // the GPU if present, else the CPU
//! let t = [0.0f32, 0.7, 1.9, 3.2, 4.0];
//! let y = [1.0f32, -0.3, 0.8, -1.0, 0.4];
//! let freqs: Vec<f32> = (1..100).map(|k| k as f32 * 0.05).collect();
//! let power = kp.lombscargle(&Series::new(&t, &y), &freqs, &LombScargleOptions::default())?;
//! # Ok::<(), kernpack::Error>(())
//! ```
pub mod api;
pub mod cpu;
pub mod error;
pub mod fatbin;
pub mod ffi;
pub mod float;
pub mod gpu;
pub mod params;
pub mod raw;
#[cfg(any(test, feature = "reference"))]
pub mod reference;
#[cfg(test)]
mod test_rng;

pub use api::correlate::{
    CorrelateOnDevice, GaussianFilterOptions, GaussianOptions, Pass as CorrelatePass,
};
pub use api::device::{DeviceOperation, OnBuffers};
pub use api::fg::{FgOnDevice, FgOptions, FgPath, FgRun};
pub use api::lombscargle::batch::LombScargleBatchOnDevice;
pub use api::lombscargle::peaks::LombScarglePeaksOnDevice;
pub use api::lombscargle::{
    LombScargleOnDevice, LombScargleOptions, Normalize, Periodogram, Series,
};
pub use api::lorenz::{
    Ensemble, Lorenz05Model, Lorenz05OnDevice, Lorenz05Params, Lorenz96OnDevice, Lorenz96Params,
    Lorenz96TangentOnDevice, MemberParams, Tangent, WindowSumOnDevice,
};
pub use api::lorenz63::{
    AdaptiveControl, AdaptiveStatus, Lorenz63AdaptiveEnsemble, Lorenz63AdaptiveOnDevice,
    Lorenz63AdaptiveParams, Lorenz63Ensemble, Lorenz63OnDevice, Lorenz63Params, PerMember,
};
pub use api::multi::{release_staging, MultiGpu, MultiGpuOptions};
pub use api::rank::{Footprint, Rank, RankFilterOnDevice, RankFilterOptions, RankValue};
pub use api::reduce::{NormalizeOnDevice, SumOnDevice};
pub use api::reduce_batched::NormalizeBatchedOnDevice;
pub use api::stencil::{
    BoundaryMode, BoxFilterOnDevice, BoxFilterOptions, ImageLayout, UniformFilterOptions,
    MAX_BOX_SIZE, MAX_GPU_WINDOW_COLS, MAX_WINDOW,
};
pub use api::uniform::{BoxValue, UniformNdOnDevice, UniformNdOptions};
pub use api::{Backend, Kernpack};
pub use error::{Error, Result};
pub use float::{Complex, Float};
pub use gpu::{device_info, devices, DeviceInfo, Gpu};
pub use params::significance::{FapMethod, NullDistribution, PowerNormalization};
