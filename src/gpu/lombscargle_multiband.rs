//! The flexible multiband periodogram's device description
//! (csrc/lombscargle_multiband.cu).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::device::{check_disjoint_of, DeviceOperation};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::Gpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lombscargle_multiband::MultibandOptions;

/// Frequencies per block of the kernel (one per thread).
const FREQS_PER_BLOCK: usize = 128;

/// The shapes of a call: options, at least one series and frequency, and
/// counts that index in `i64`.
pub(crate) fn check_call(nseries: usize, nf: usize, opts: &MultibandOptions) -> Result<()> {
    opts.validate()?;
    super::lombscargle_chi2::check_counts(nseries, nf)
}

/// The flexible periodograms of `nseries` prepared series on device memory
/// ([`Gpu::enqueue`]), into `T` values. Samples (`n` in all, f64) grouped by
/// band within each series, as
/// [`crate::params::lombscargle_multiband::MultibandPrepared`] orders them:
/// the time `t`, the normalised weight `w` and `wy` = w yhat.
/// Series s holds the band segments `series_bands[s]..series_bands[s + 1]`
/// (`nseries + 1` i64), segment j the samples
/// `band_starts[j]..band_starts[j + 1]` (`nsegments + 1` i64). Per series
/// `stats` = (chi2_ref, ridge_base, ridge_band) in f64. Frequencies (cycles
/// per unit time): `freqs` (`nf` per grid, f64) or, when `freqs` is 0, the
/// uniform grids `f0[g] + k df[g]` (f64); one grid (`per_series_grid` false)
/// or one per series. `out` receives `nseries * nf` values, series after
/// series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleMultibandOnDevice<T> {
    pub nseries: usize,
    pub n: usize,
    pub nsegments: usize,
    pub series_bands: CUdeviceptr,
    pub band_starts: CUdeviceptr,
    pub t: CUdeviceptr,
    pub w: CUdeviceptr,
    pub wy: CUdeviceptr,
    pub stats: CUdeviceptr,
    pub freqs: CUdeviceptr,
    pub f0: CUdeviceptr,
    pub df: CUdeviceptr,
    pub per_series_grid: bool,
    pub nf: usize,
    pub opts: MultibandOptions,
    pub out: CUdeviceptr,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleMultibandOnDevice<T> {
    fn grids(&self) -> usize {
        if self.per_series_grid {
            self.nseries
        } else {
            1
        }
    }
}

impl<T: Float> DeviceOperation for LombScargleMultibandOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_call(self.nseries, self.nf, &self.opts)?;
        if self.n == 0 || self.nsegments == 0 {
            return Err(Error::invalid("no samples"));
        }
        Ok(())
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (n, out_len) = (self.n, self.nseries * self.nf);
        gpu.check_device_array::<i64>("series_bands", self.series_bands, self.nseries + 1)?;
        gpu.check_device_array::<i64>("band_starts", self.band_starts, self.nsegments + 1)?;
        for (name, ptr) in [("t", self.t), ("w", self.w), ("wy", self.wy)] {
            gpu.check_device_array::<f64>(name, ptr, n)?;
            check_disjoint_of::<f64, T>(ptr, n, self.out, out_len)?;
        }
        gpu.check_device_array::<f64>("stats", self.stats, 3 * self.nseries)?;
        if self.freqs != 0 {
            let len = self.grids() * self.nf;
            gpu.check_device_array::<f64>("freqs", self.freqs, len)?;
            check_disjoint_of::<f64, T>(self.freqs, len, self.out, out_len)?;
        } else {
            gpu.check_device_array::<f64>("f0", self.f0, self.grids())?;
            gpu.check_device_array::<f64>("df", self.df, self.grids())?;
        }
        gpu.check_device_array::<T>("out", self.out, out_len)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let kernel = kernels::lombscargle_multiband(self.opts.harmonics());
        let units = self.nseries as u64 * self.nf.div_ceil(FREQS_PER_BLOCK) as u64;
        let blocks = gpu.kernel(&kernel)?.grid_for(units, 1);
        let (f0, df) = if self.freqs == 0 {
            (In::new(self.f0), In::new(self.df))
        } else {
            (In::null(), In::null())
        };
        let args = (
            self.nseries as i64,
            In::new(self.series_bands),
            In::new(self.band_starts),
            In::new(self.t),
            In::new(self.w),
            In::new(self.wy),
            In::new(self.stats),
            In::new(self.freqs),
            f0,
            df,
            i32::from(self.per_series_grid),
            self.nf as i64,
            self.opts.nterms_base as i32,
            self.opts.nterms_band as i32,
            i32::from(T::NAME == "f32"),
            Out::new(self.out),
        );
        // SAFETY: the caller vouches for the allocations (DeviceOperation::launch).
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(blocks), stream, args) }
    }
}
