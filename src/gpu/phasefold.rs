//! The phase-folding kernel's device description (csrc/phasefold.cu) and
//! its host-memory run.
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::CudaStream;

use super::device::{check_disjoint, check_ragged_search, DeviceOperation, Guards};
use super::launch::{In, LaunchConfig, Out};
use super::{kernels, scratch, Gpu, PhasefoldParams};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::phasefold::{nlogn_table_for, FoldPrepared, Statistic};

/// Threads (frequencies) per block: csrc/phasefold.cu `BLOCK`.
const BLOCK: usize = 128;
/// Samples staged per round: csrc/phasefold.cu `CHUNK`; the staging takes
/// `4 CHUNK` doubles of shared memory.
const STAGING_BYTES: usize = 4 * 256 * 8;
/// Global scratch the kernel may take when the accumulators do not fit in
/// shared memory.
const SCRATCH_BUDGET: usize = 1 << 30;

/// The statistic of `nseries` prepared series (samples
/// `offsets[s]..offsets[s + 1]`, `nseries + 1` i64 offsets, `n` in all) at
/// `nf` frequencies (`freqs`, f64), on device memory ([`Gpu::enqueue`]):
/// per sample `dt` (f64), and `wy`, `w` (f64) for PDM or `mag` (i32) for
/// CE (the others 0);
/// per series `scale` (f64); for CE `nlogn`, [`crate::params::phasefold::nlogn_table`] up to
/// `nlogn_len - 1`. `out` receives `nseries x nf` values, series after
/// series: f32 when `out_f32`, else f64.
#[derive(Debug, Clone)]
pub struct FoldOnDevice {
    pub statistic: Statistic,
    pub nseries: usize,
    pub n: usize,
    pub offsets: CUdeviceptr,
    pub dt: CUdeviceptr,
    pub wy: CUdeviceptr,
    pub w: CUdeviceptr,
    pub mag: CUdeviceptr,
    pub scale: CUdeviceptr,
    pub nf: usize,
    pub freqs: CUdeviceptr,
    pub nlogn: CUdeviceptr,
    pub nlogn_len: usize,
    pub out: CUdeviceptr,
    pub out_f32: bool,
}

impl DeviceOperation for FoldOnDevice {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        self.statistic.validate()?;
        if self.nseries == 0 || self.nf == 0 {
            return Err(Error::invalid(
                "at least one series and one frequency are needed",
            ));
        }
        // Up to 8 bytes per value.
        check_ragged_search(self.nseries, self.n, self.nf, "frequencies", 8)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let out_len = self.nseries * self.nf;
        gpu.check_device_array::<i64>("offsets", self.offsets, self.nseries + 1)?;
        gpu.check_device_array::<f64>("dt", self.dt, self.n)?;
        gpu.check_device_array::<f64>("scale", self.scale, self.nseries)?;
        gpu.check_device_array::<f64>("freqs", self.freqs, self.nf)?;
        // The output as bytes: 4 or 8 per value.
        let out_bytes = out_len * if self.out_f32 { 4 } else { 8 };
        gpu.check_device_array::<u8>("out", self.out, out_bytes)?;
        check_disjoint::<u8>(self.dt, 8 * self.n, self.out, out_bytes)?;
        match self.statistic {
            Statistic::Pdm(_) => {
                gpu.check_device_array::<f64>("wy", self.wy, self.n)?;
                gpu.check_device_array::<f64>("w", self.w, self.n)?;
                check_disjoint::<u8>(self.wy, 8 * self.n, self.out, out_bytes)?;
                check_disjoint::<u8>(self.w, 8 * self.n, self.out, out_bytes)?;
            }
            Statistic::ConditionalEntropy(_) => {
                gpu.check_device_array::<i32>("mag", self.mag, self.n)?;
                gpu.check_device_array::<f64>("nlogn", self.nlogn, self.nlogn_len)?;
            }
        }
        Ok(())
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let kernel = kernels::phasefold();
        let info = gpu.kernel(&kernel)?;
        let tiles = self.nf.div_ceil(BLOCK) as u64;
        let items = self.nseries as u64 * tiles;
        let (cells, cell_bytes) = (self.statistic.cells(), self.statistic.cell_bytes());
        let slice = cells * cell_bytes * BLOCK;
        let in_shared = STAGING_BYTES + slice <= info.max_dynamic_shared as usize;
        let blocks = if in_shared {
            info.grid_for(items, 1)
        } else {
            let most = (SCRATCH_BUDGET / slice).max(1) as u64;
            info.grid_for(items, 1)
                .min(most.min(u32::MAX as u64) as u32)
        };
        let shared_bytes = STAGING_BYTES + if in_shared { slice } else { 0 };
        let scratch_buf = if in_shared {
            None
        } else {
            // SAFETY: each thread zeroes its accumulators before it adds to them.
            Some(unsafe { scratch::<u8>(stream, slice * blocks as usize) }?)
        };
        let scratch_ptr = scratch_buf.as_ref().map_or(0, |b| {
            use cudarc::driver::DevicePtr;
            b.device_ptr(stream).0
        });
        let (mag_bins, phase_overlap, mag_overlap) = match self.statistic {
            Statistic::Pdm(_) => (0, 0, 0),
            Statistic::ConditionalEntropy(o) => (o.mag_bins, o.phase_overlap, o.mag_overlap),
        };
        let p = PhasefoldParams {
            nseries: self.nseries as i64,
            nf: self.nf as i64,
            cells: cells as i64,
            cell_bytes: cell_bytes as i32,
            statistic: self.statistic.code(),
            phase_bins: self.statistic.phase_bins() as i32,
            mag_bins: mag_bins as i32,
            phase_overlap: phase_overlap as i32,
            mag_overlap: mag_overlap as i32,
            in_shared: i32::from(in_shared),
            out_f32: i32::from(self.out_f32),
        };
        let args = (
            p,
            In::new(self.offsets),
            In::new(self.dt),
            In::new(self.wy),
            In::new(self.w),
            In::new(self.mag),
            In::new(self.scale),
            In::new(self.freqs),
            In::new(self.nlogn),
            Out::new(scratch_ptr),
            Out::new(self.out),
        );
        let config = LaunchConfig::grid(blocks).shared(shared_bytes as u32);
        // SAFETY: the caller vouches for the allocations (DeviceOperation::launch);
        // the scratch is freed in stream order after the kernel.
        unsafe { gpu.launch(&kernel, config, stream, args) }
    }
}

/// The statistic of every prepared series at every frequency, series after
/// series, as `T`: uploads the series and runs [`FoldOnDevice`].
pub(crate) fn fold<T: Float>(
    gpu: &Arc<Gpu>,
    preps: &[FoldPrepared],
    freqs: &[f64],
    statistic: &Statistic,
) -> Result<Vec<T>> {
    let mut offsets = vec![0i64];
    for p in preps {
        offsets.push(offsets[offsets.len() - 1] + p.len() as i64);
    }
    let cat = |f: &dyn Fn(&FoldPrepared) -> &[f64]| {
        preps.iter().flat_map(f).copied().collect::<Vec<f64>>()
    };
    let scale: Vec<f64> = preps.iter().map(|p| p.scale).collect();
    let pdm = matches!(statistic, Statistic::Pdm(_));
    let (d_offsets, d_dt, d_scale, d_freqs) = (
        gpu.upload(&offsets)?,
        gpu.upload(&cat(&|p| &p.dt))?,
        gpu.upload(&scale)?,
        gpu.upload(freqs)?,
    );
    let upload_if = |yes: bool, v: &[f64]| yes.then(|| gpu.upload(v)).transpose();
    let d_wy = upload_if(pdm, &cat(&|p| &p.wy))?;
    let d_w = upload_if(pdm, &cat(&|p| &p.w))?;
    let nlogn = nlogn_table_for(preps, statistic);
    let d_nlogn = upload_if(!pdm, &nlogn)?;
    let mag: Vec<i32> = preps.iter().flat_map(|p| p.mag.iter().copied()).collect();
    let d_mag = (!pdm).then(|| gpu.upload(&mag)).transpose()?;
    // SAFETY: the kernel writes every value.
    let mut out = unsafe { gpu.uninit::<T>(preps.len() * freqs.len()) }?;
    let mut g = Guards::new(gpu.stream());
    let call = FoldOnDevice {
        statistic: *statistic,
        nseries: preps.len(),
        n: offsets[preps.len()] as usize,
        offsets: g.read(&d_offsets),
        dt: g.read(&d_dt),
        wy: d_wy.as_ref().map_or(0, |b| g.read(b)),
        w: d_w.as_ref().map_or(0, |b| g.read(b)),
        mag: d_mag.as_ref().map_or(0, |b| g.read(b)),
        scale: g.read(&d_scale),
        nf: freqs.len(),
        freqs: g.read(&d_freqs),
        nlogn: d_nlogn.as_ref().map_or(0, |b| g.read(b)),
        nlogn_len: nlogn.len(),
        out: g.write(&mut out),
        out_f32: T::NAME == "f32",
    };
    // SAFETY: buffers just allocated on this GPU, of the lengths the call names.
    unsafe { gpu.launch_fresh(g.with(call), ()) }?;
    gpu.download(&out)
}
