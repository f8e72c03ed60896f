//! The BLS search's device description (csrc/bls.cu) and its host-memory
//! run.
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::device::{check_disjoint, check_ragged_search, DeviceOperation, Guards};
use super::launch::{In, LaunchConfig, Out};
use super::{kernels, scratch, BlsParams, Gpu};
use crate::error::{Error, Result};
use crate::params::bls::{BlsGrid, BlsObjective, BlsOptions, BlsPrepared, BoxCounts};

/// Global scratch the kernel may take when a histogram does not fit in
/// shared memory: slices of `2 (max_bins + 1)` int64, one per block.
const SCRATCH_BUDGET: usize = 1 << 30;

/// The search of `nseries` prepared series (samples `offsets[s]..offsets[s +
/// 1]`, `nseries + 1` i64 offsets, `n` in all) at `nperiods` periods, on
/// device memory ([`Gpu::enqueue`]): per sample `dt` (f64) and the
/// fixed-point `wy` and `w` (i64) of [`BlsPrepared`]; per series `totals`
/// (its `wy_all`, `w_all`: 2 i64) and `units` (its `wy_unit`, `w_unit`: 2
/// f64); `periods` (f64) and `duration_bins` (i64, `grid.duration_bins`).
/// `out` receives one [`BoxCounts`] (4 i64) per (series, period), series
/// after series, and `power` (when not 0) the best box's objective (f64,
/// -inf for no box) of each.
#[derive(Debug, Clone)]
pub struct BlsOnDevice {
    pub nseries: usize,
    pub n: usize,
    pub offsets: CUdeviceptr,
    pub dt: CUdeviceptr,
    pub wy: CUdeviceptr,
    pub w: CUdeviceptr,
    pub totals: CUdeviceptr,
    pub units: CUdeviceptr,
    pub nperiods: usize,
    pub periods: CUdeviceptr,
    pub duration_bins: CUdeviceptr,
    pub grid: BlsGrid,
    pub objective: BlsObjective,
    pub out: CUdeviceptr,
    pub power: CUdeviceptr,
}

impl DeviceOperation for BlsOnDevice {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        if self.nseries == 0 || self.nperiods == 0 || self.grid.duration_bins.is_empty() {
            return Err(Error::invalid(
                "at least one series, one period and one duration are needed",
            ));
        }
        // A BoxCounts (4 i64) per result.
        check_ragged_search(self.nseries, self.n, self.nperiods, "periods", 32)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let out_len = 4 * self.nseries * self.nperiods;
        gpu.check_device_array::<i64>("offsets", self.offsets, self.nseries + 1)?;
        gpu.check_device_array::<f64>("dt", self.dt, self.n)?;
        gpu.check_device_array::<i64>("wy", self.wy, self.n)?;
        gpu.check_device_array::<i64>("w", self.w, self.n)?;
        gpu.check_device_array::<i64>("totals", self.totals, 2 * self.nseries)?;
        gpu.check_device_array::<f64>("units", self.units, 2 * self.nseries)?;
        gpu.check_device_array::<f64>("periods", self.periods, self.nperiods)?;
        let nd = self.grid.duration_bins.len();
        gpu.check_device_array::<i64>("duration_bins", self.duration_bins, nd)?;
        gpu.check_device_array::<i64>("out", self.out, out_len)?;
        for (ptr, len) in [(self.dt, self.n), (self.wy, self.n), (self.w, self.n)] {
            check_disjoint::<i64>(ptr, len, self.out, out_len)?;
        }
        if self.power != 0 {
            let len = self.nseries * self.nperiods;
            gpu.check_device_array::<f64>("power", self.power, len)?;
            check_disjoint::<i64>(self.out, out_len, self.power, len)?;
        }
        Ok(())
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let kernel = kernels::bls_binned();
        let info = gpu.kernel(&kernel)?;
        let items = (self.nseries * self.nperiods) as u64;
        // Two int64 per bin, bins 0..=max_bins.
        let slice = 16 * (self.grid.max_bins as usize + 1);
        let in_shared = slice <= info.max_dynamic_shared as usize;
        let (blocks, shared_bytes) = if in_shared {
            (info.grid_for(items, 1), slice as u32)
        } else {
            let most = (SCRATCH_BUDGET / slice).max(1) as u64;
            (
                info.grid_for(items, 1)
                    .min(most.min(u32::MAX as u64) as u32),
                0,
            )
        };
        let scratch_buf = if in_shared {
            None
        } else {
            // SAFETY: the kernel zeroes each slice before it reads it.
            Some(unsafe { scratch::<u64>(stream, slice / 8 * blocks as usize) }?)
        };
        let scratch_ptr = scratch_buf.as_ref().map_or(0, |b| {
            use cudarc::driver::DevicePtr;
            b.device_ptr(stream).0
        });
        let p = BlsParams {
            bin: self.grid.bin,
            max_bins: self.grid.max_bins,
            oversample: self.grid.oversample as i32,
            snr: i32::from(self.objective == BlsObjective::Snr),
            ndurations: self.grid.duration_bins.len() as i32,
            unused: 0,
        };
        let args = (
            p,
            self.nseries as i64,
            In::new(self.offsets),
            In::new(self.dt),
            In::new(self.wy),
            In::new(self.w),
            In::new(self.totals),
            In::new(self.units),
            self.nperiods as i64,
            In::new(self.periods),
            In::new(self.duration_bins),
            Out::new(scratch_ptr),
            Out::new(self.out),
            Out::new(self.power),
        );
        let config = LaunchConfig::grid(blocks).shared(shared_bytes);
        // SAFETY: the caller vouches for the allocations (DeviceOperation::launch);
        // the scratch is freed in stream order after the kernel.
        unsafe { gpu.launch(&kernel, config, stream, args) }
    }
}

/// The best box of every (series, period), series after series: uploads the
/// prepared series and runs [`BlsOnDevice`].
pub(crate) fn search(
    gpu: &Arc<Gpu>,
    preps: &[BlsPrepared],
    periods: &[f64],
    grid: &BlsGrid,
    opts: &BlsOptions,
) -> Result<Vec<BoxCounts>> {
    let mut offsets = vec![0i64];
    for p in preps {
        offsets.push(offsets[offsets.len() - 1] + p.dt.len() as i64);
    }
    let cat = |f: &dyn Fn(&BlsPrepared) -> &[i64]| {
        preps.iter().flat_map(f).copied().collect::<Vec<i64>>()
    };
    let dt: Vec<f64> = preps.iter().flat_map(|p| p.dt.iter().copied()).collect();
    let (wy, w) = (cat(&|p| &p.wy), cat(&|p| &p.w));
    let (totals, units) = BlsPrepared::series_stats(preps);
    let (d_offsets, d_dt, d_wy, d_w) = (
        gpu.upload(&offsets)?,
        gpu.upload(&dt)?,
        gpu.upload(&wy)?,
        gpu.upload(&w)?,
    );
    let (d_totals, d_units, d_periods, d_durations) = (
        gpu.upload(&totals)?,
        gpu.upload(&units)?,
        gpu.upload(periods)?,
        gpu.upload(&grid.duration_bins)?,
    );
    // SAFETY: the kernel writes every value.
    let mut out = unsafe { gpu.uninit::<i64>(4 * preps.len() * periods.len()) }?;
    let mut g = Guards::new(gpu.stream());
    let call = BlsOnDevice {
        nseries: preps.len(),
        n: dt.len(),
        offsets: g.read(&d_offsets),
        dt: g.read(&d_dt),
        wy: g.read(&d_wy),
        w: g.read(&d_w),
        totals: g.read(&d_totals),
        units: g.read(&d_units),
        nperiods: periods.len(),
        periods: g.read(&d_periods),
        duration_bins: g.read(&d_durations),
        grid: grid.clone(),
        objective: opts.objective,
        out: g.write(&mut out),
        power: 0,
    };
    // SAFETY: buffers just allocated on this GPU, of the lengths the call names.
    unsafe { gpu.launch_fresh(g.with(call), ()) }?;
    Ok(BoxCounts::from_raw(&gpu.download(&out)?))
}
