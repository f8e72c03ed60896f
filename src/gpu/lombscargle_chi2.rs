//! The multi-term periodogram's device description (csrc/lombscargle_chi2.cu).
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::device::{check_disjoint, DeviceOperation};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::Gpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lombscargle_chi2::Chi2Options;

/// Frequencies per block of the kernel (its lanes).
const FREQS_PER_BLOCK: usize = 32;

/// The shapes of a call: options, at least one series and frequency, and
/// counts that index in `i64`.
pub(crate) fn check_call(nseries: usize, nf: usize, opts: &Chi2Options) -> Result<()> {
    opts.validate()?;
    check_counts(nseries, nf)
}

/// At least one series and one frequency, and `nseries x nf` values that
/// index in `i64` (the periodogram kernels of this family and the
/// multiband one).
pub(crate) fn check_counts(nseries: usize, nf: usize) -> Result<()> {
    if nseries == 0 {
        return Err(Error::invalid("no series: at least one is needed"));
    }
    if nf == 0 {
        return Err(Error::invalid("no frequencies: at least one is needed"));
    }
    if nf
        .checked_mul(nseries)
        .map_or(true, |v| v > i64::MAX as usize / 8)
    {
        return Err(Error::invalid(format!(
            "{nseries} series x {nf} frequencies overflow"
        )));
    }
    Ok(())
}

/// The periodograms of `nseries` prepared series on device memory
/// ([`Gpu::enqueue`]). Per sample (`n` in all, series s at
/// `offsets[s]..offsets[s + 1]`, `nseries + 1` i64 offsets): the time `t`,
/// the normalised weight `w` and `wy` = w (y - mean), as
/// [`crate::params::lombscargle_chi2::Chi2Prepared`] computes them; per
/// series `stats` = (chi2_ref / W, W) in f64. Frequencies (cycles per unit
/// time): `freqs` (`nf` per grid, `T`) or, when `freqs` is 0, the uniform
/// grids `f0[g] + k df[g]` (f64); one grid (`per_series_grid` false) or one per
/// series. `out` receives `nseries * nf` values, series after series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleChi2OnDevice<T> {
    pub nseries: usize,
    pub n: usize,
    pub offsets: CUdeviceptr,
    pub t: CUdeviceptr,
    pub w: CUdeviceptr,
    pub wy: CUdeviceptr,
    pub stats: CUdeviceptr,
    pub freqs: CUdeviceptr,
    pub f0: CUdeviceptr,
    pub df: CUdeviceptr,
    pub per_series_grid: bool,
    pub nf: usize,
    pub opts: Chi2Options,
    pub out: CUdeviceptr,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleChi2OnDevice<T> {
    fn grids(&self) -> usize {
        if self.per_series_grid {
            self.nseries
        } else {
            1
        }
    }
}

impl<T: Float> DeviceOperation for LombScargleChi2OnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        check_call(self.nseries, self.nf, &self.opts)?;
        if self.n == 0 {
            return Err(Error::invalid("no samples"));
        }
        Ok(())
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (n, out_len) = (self.n, self.nseries * self.nf);
        gpu.check_device_array::<i64>("offsets", self.offsets, self.nseries + 1)?;
        for (name, ptr) in [("t", self.t), ("w", self.w), ("wy", self.wy)] {
            gpu.check_device_array::<T>(name, ptr, n)?;
            check_disjoint::<T>(ptr, n, self.out, out_len)?;
        }
        gpu.check_device_array::<f64>("stats", self.stats, 2 * self.nseries)?;
        if self.freqs != 0 {
            gpu.check_device_array::<T>("freqs", self.freqs, self.grids() * self.nf)?;
            check_disjoint::<T>(self.freqs, self.grids() * self.nf, self.out, out_len)?;
        } else {
            gpu.check_device_array::<f64>("f0", self.f0, self.grids())?;
            gpu.check_device_array::<f64>("df", self.df, self.grids())?;
        }
        gpu.check_device_array::<T>("out", self.out, out_len)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let kernel = kernels::lombscargle_chi2::<T>(self.opts.nterms);
        let units = self.nseries as u64 * self.nf.div_ceil(FREQS_PER_BLOCK) as u64;
        let blocks = gpu.kernel(&kernel)?.grid_for(units, 1);
        let (f0, df) = if self.freqs == 0 {
            (In::new(self.f0), In::new(self.df))
        } else {
            (In::null(), In::null())
        };
        let args = (
            self.nseries as i64,
            In::new(self.offsets),
            In::new(self.t),
            In::new(self.w),
            In::new(self.wy),
            In::new(self.stats),
            In::new(self.freqs),
            f0,
            df,
            i32::from(self.per_series_grid),
            self.nf as i64,
            i32::from(self.opts.fit_mean),
            self.opts.normalization.code(),
            Out::new(self.out),
        );
        // SAFETY: the caller vouches for the allocations (DeviceOperation::launch).
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(blocks), stream, args) }
    }
}
