//! The best peaks of each row of a batch on the device (csrc/peaks.cu,
//! [`crate::params::peaks`]).
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::launch::{In, LaunchConfig, Out};
use super::{kernels, Gpu};
use crate::error::Result;
use crate::float::Float;
use crate::params::peaks::{Better, PeakOptions};

/// Rows of values on the device and where their peaks go.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PeaksOnDevice {
    /// `nseries` rows of `nf` values of `T`.
    pub values: CUdeviceptr,
    pub nseries: usize,
    pub nf: usize,
    /// The `nf` trial frequencies (f64) every row shares; 0 for uniform
    /// grids: row `s`'s frequency `i` is then `f0[g] + i df[g]` (f64, `g` =
    /// `s` with `per_series_grid`, else 0).
    pub axis: CUdeviceptr,
    pub f0: CUdeviceptr,
    pub df: CUdeviceptr,
    pub per_series_grid: bool,
    /// `k` i64 and `k` f64 per row.
    pub index: CUdeviceptr,
    pub value: CUdeviceptr,
    /// `payload_bytes` per value (0: none) at `payload`, copied for each
    /// peak to `payload_out` (`k` per row; zeros past a row's last peak).
    pub payload_bytes: usize,
    pub payload: CUdeviceptr,
    pub payload_out: CUdeviceptr,
}

impl Gpu {
    /// Writes the best `opts.k` peaks of each row of `at`, best first.
    ///
    /// # Safety
    /// Every buffer of `at` holds what its field says, on this GPU, until
    /// the work on `stream` has finished; `opts` is valid.
    pub(crate) unsafe fn launch_best_peaks<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        at: &PeaksOnDevice,
        opts: &PeakOptions,
        better: Better,
    ) -> Result<()> {
        let kernel = kernels::best_peaks::<T>();
        let grid = self.kernel(&kernel)?.grid_for(at.nseries as u64, 1);
        let args = (
            at.nseries as i64,
            at.nf as i64,
            opts.k as i32,
            i32::from(better == Better::Lower),
            opts.separation,
            In::<T>::new(at.values),
            In::new(at.axis),
            In::new(at.f0),
            In::new(at.df),
            i32::from(at.per_series_grid),
            at.payload_bytes as i64,
            In::new(at.payload),
            Out::new(at.index),
            Out::new(at.value),
            Out::new(at.payload_out),
        );
        // SAFETY: the caller vouches for the buffers.
        unsafe { self.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}
