//! The resampling launch of the bootstrap false-alarm probability
//! (csrc/bootstrap.cu): copies of one series with samples drawn by a
//! counter-based hash, laid out as a batch for the Lomb-Scargle kernels.
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::Gpu;
use crate::error::Result;
use crate::float::Float;

/// Where one resampling reads and writes: `n` samples of t, y and the
/// optional weights, and `n x nresamples` of each out.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResampleBuffers {
    pub t: CUdeviceptr,
    pub y: CUdeviceptr,
    pub weights: Option<CUdeviceptr>,
    pub out_t: CUdeviceptr,
    pub out_y: CUdeviceptr,
    /// Written when `weights` is given.
    pub out_weights: CUdeviceptr,
}

impl Gpu {
    /// Copy `r < nresamples` of the series at `out_*[r n .. (r + 1) n]`,
    /// position i holding sample `resample_index(seed, r, i, n)`.
    ///
    /// # Safety
    /// The buffers hold the counts above, as `T`, on this GPU, until the work
    /// on `stream` has finished; the outputs are apart from each other and
    /// from the inputs.
    pub(crate) unsafe fn launch_bootstrap_resample<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        n: usize,
        nresamples: usize,
        seed: u64,
        b: &ResampleBuffers,
    ) -> Result<()> {
        let kernel = kernels::bootstrap_resample::<T>();
        let k = self.kernel(&kernel)?;
        let grid = k.grid_for((n * nresamples) as u64, u64::from(k.block));
        let args = (
            n as i64,
            nresamples as i64,
            // The seed's bits, as the kernel reads them back (uint64_t).
            seed as i64,
            In::new(b.t),
            In::new(b.y),
            b.weights.map_or(In::null(), In::new),
            Out::new(b.out_t),
            Out::new(b.out_y),
            Out::new(b.out_weights),
        );
        unsafe { self.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}
