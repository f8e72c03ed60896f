//! Many short series in one launch: the survey workload (millions of light
//! curves of a few hundred samples), each with its own uniform grid or one
//! shared grid, all periodograms out of one call.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

pub use crate::params::lombscargle::{Batch, BatchDeviceBuffers, BatchGrid};

use super::{
    check_values, output_len, uniform_freqs_per_thread, LombScargleOptions, Periodogram, STATS_LEN,
};
use crate::api::device::DeviceOperation;
use crate::api::exec::{CpuRun, Operation, Split};
use crate::api::multi::MultiGpu;
use crate::api::{check_apart, check_host_room, Kernpack, Span};
use crate::cpu;
use crate::error::{Error, Result};
use crate::float::Float;
use crate::gpu::kernels;
use crate::gpu::launch::{In, LaunchConfig, Out};
use crate::gpu::{Gpu, LsGrid, LsParams};

/// The one validation of a batched call's counts: at least one series and
/// one frequency, counts that fit, one grid or one per series, and (where the
/// caller supplies it) the output's length. Returns the values the output holds.
pub(crate) fn check_batch_call(
    nseries: usize,
    nf: usize,
    ngrids: usize,
    out_len: Option<usize>,
    opts: &LombScargleOptions,
) -> Result<usize> {
    if nseries == 0 || nf == 0 {
        return Err(Error::invalid(
            "a batch needs at least one series and one frequency",
        ));
    }
    if ngrids != 1 && ngrids != nseries {
        return Err(Error::invalid(format!(
            "{ngrids} grids: 1 (shared) or one per series ({nseries})"
        )));
    }
    let limit = i64::MAX as usize / 2;
    let total = Some(nf)
        .filter(|&nf| nf <= limit)
        .and_then(|nf| output_len(nf, opts).checked_mul(nseries))
        .filter(|&total| total <= limit)
        .ok_or_else(|| {
            Error::invalid(format!("{nseries} series x {nf} frequencies is too many"))
        })?;
    match out_len {
        Some(len) if len != total => Err(Error::invalid(format!(
            "out holds {len} values, {total} needed"
        ))),
        _ => Ok(total),
    }
}

/// `offsets` of a batch of `n` samples: from 0 to `n`, at least one series,
/// every series at least one sample.
pub fn check_series_offsets(offsets: &[usize], n: usize) -> Result<()> {
    if offsets.len() < 2 || offsets[0] != 0 || offsets[offsets.len() - 1] != n {
        return Err(Error::invalid(format!(
            "offsets must start at 0, end at the sample count {n}, and hold at least one series"
        )));
    }
    if let Some(s) = offsets.windows(2).position(|w| w[1] <= w[0]) {
        return Err(Error::invalid(format!(
            "series {s} is empty or offsets decrease there"
        )));
    }
    Ok(())
}

/// Every check of a host batch: counts (`check_batch_call`), lengths and
/// offsets, and each series' grid and values as the single-series API checks them.
pub fn validate_batch<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
) -> Result<()> {
    let ngrids = match grids {
        BatchGrid::Shared(_) => 1,
        BatchGrid::PerSeries { f0, df, .. } => {
            if f0.len() != batch.len() || df.len() != batch.len() {
                return Err(Error::invalid(format!(
                    "{} series but {} f0 and {} df values",
                    batch.len(),
                    f0.len(),
                    df.len()
                )));
            }
            f0.len()
        }
    };
    check_batch_call(batch.len(), grids.nf(), ngrids, None, opts)?;
    let n = batch.t.len();
    if batch.y.len() != n || batch.weights.is_some_and(|w| w.len() != n) {
        return Err(Error::invalid(
            "t, y and weights of the batch differ in length",
        ));
    }
    check_series_offsets(batch.offsets, n)?;
    // Each series as the single-series API checks it; threads over ranges of
    // series for large batches (a survey's 10^8 samples take a serial pass
    // longer than their kernels), the error of the first bad series either way.
    let check = |range: std::ops::Range<usize>| -> Result<()> {
        for s in range {
            let in_series = |e: Error| match e {
                Error::InvalidInput(msg) => Error::invalid(format!("series {s}: {msg}")),
                other => other,
            };
            grids.grid(s).validate_for::<T>().map_err(in_series)?;
            check_values(&batch.series(s), None, opts).map_err(in_series)?;
        }
        Ok(())
    };
    let threads = cpu::threads()
        .min(batch.t.len() / PARALLEL_CHECK_SAMPLES)
        .max(1);
    // Ranges in order, each checked in order: the first error is the first bad series.
    cpu::parallel::map_ranges(threads, batch.len(), 1, check)
        .into_iter()
        .collect()
}

/// Samples per thread below which a batch is checked on one thread.
const PARALLEL_CHECK_SAMPLES: usize = 1 << 20;

/// The operation: one periodogram per series of a batch
/// ([`Kernpack::lombscargle_batch`]). It splits by series.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatch<'a, T> {
    pub batch: Batch<'a, T>,
    pub grids: BatchGrid<'a>,
    pub opts: LombScargleOptions,
}

impl<T: Float> Operation for LombScargleBatch<'_, T> {
    type Output = Vec<Periodogram<T>>;

    fn validate(&self) -> Result<()> {
        validate_batch(&self.batch, &self.grids, &self.opts)?;
        check_periodograms_room::<T>(&self.batch, &self.grids, &self.opts)
    }

    fn on_cpu(self, cpu: &CpuRun<'_>) -> Result<Self::Output> {
        let (batch, grids, opts) = (&self.batch, &self.grids, &self.opts);
        Ok(cpu::lombscargle::lombscargle_batch(
            cpu.threads,
            batch,
            grids,
            opts,
        ))
    }

    fn on_gpu(self, gpu: &Arc<Gpu>) -> Result<Self::Output> {
        gpu.lombscargle_batch_host(&self.batch, &self.grids, &self.opts)
    }

    fn split(&self) -> Option<Split> {
        let out_values = output_len(self.grids.nf(), &self.opts);
        Some(batch_split(&self.batch, &self.grids, out_values))
    }

    fn on_pipeline(self, gpus: &MultiGpu) -> Result<Self::Output> {
        let exec = crate::api::multi::Exec::Gpus(gpus);
        crate::api::multi::lombscargle::lombscargle_batch(
            &exec,
            &self.batch,
            &self.grids,
            &self.opts,
        )
        .map(|(periodograms, _)| periodograms)
    }
}

/// The device memory of a batch in one piece, and of its largest series,
/// with `out_values` values of `T` computed per series (its periodogram,
/// kept or reduced on the device): samples, offsets, grids, statistics and
/// those values.
pub(crate) fn batch_split<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    out_values: usize,
) -> Split {
    let columns = 2 + usize::from(batch.weights.is_some());
    let grid_values = match grids {
        BatchGrid::Shared(_) => 2,
        BatchGrid::PerSeries { .. } => 2 * batch.len(),
    };
    let value = std::mem::size_of::<T>();
    let per_series = |samples: usize| {
        (samples * columns + out_values)
            .saturating_mul(value)
            .saturating_add((STATS_LEN + 3) * 8)
    };
    let largest = batch
        .offsets
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or(0);
    Split {
        device_bytes: per_series(0)
            .saturating_mul(batch.len())
            .saturating_add(batch.t.len().saturating_mul(columns * value))
            .saturating_add(grid_values * 8),
        largest_item_bytes: per_series(largest),
    }
}

impl Kernpack {
    /// One periodogram per series of `batch`, on the GPU in one launch (load
    /// balanced over (series, frequency chunk) units) or on the CPU (threads
    /// over series).
    pub fn lombscargle_batch<T: Float>(
        &self,
        batch: &Batch<'_, T>,
        grids: &BatchGrid<'_>,
        opts: &LombScargleOptions,
    ) -> Result<Vec<Periodogram<T>>> {
        let (batch, grids, opts) = (*batch, *grids, *opts);
        self.run(LombScargleBatch { batch, grids, opts })
    }
}

/// The host memory for every periodogram of a validated batch.
fn check_periodograms_room<T: Float>(
    batch: &Batch<'_, T>,
    grids: &BatchGrid<'_>,
    opts: &LombScargleOptions,
) -> Result<()> {
    let nseries = batch.offsets.len().saturating_sub(1);
    let total = output_len(grids.nf(), opts)
        .checked_mul(nseries)
        .ok_or_else(|| Error::invalid("nf x nseries overflows"))?;
    check_host_room::<T>("the periodograms", total)
}

impl BatchDeviceBuffers {
    /// Refuses `outputs` that share a byte with each other or with what the
    /// batch surely reads: offsets and grids whole, and the samples' first
    /// `nseries` values (every series has one; their full count is in the
    /// device's offsets).
    pub(crate) fn check_outputs_apart<T: Float>(
        &self,
        nseries: usize,
        outputs: &[Span],
    ) -> Result<()> {
        let ngrids = if self.per_series_grid { nseries } else { 1 };
        let mut inputs = vec![
            Span::at::<T>("t", self.t, nseries),
            Span::at::<T>("y", self.y, nseries),
            Span::at::<i64>("offsets", self.offsets, nseries.saturating_add(1)),
            Span::at::<f64>("f0", self.f0, ngrids),
            Span::at::<f64>("df", self.df, ngrids),
        ];
        inputs.extend(self.weights.map(|w| Span::at::<T>("weights", w, nseries)));
        check_apart(outputs, &inputs)
    }

    /// The same batch seen from series `first` on, writing to `out`: the
    /// offsets are absolute positions in `t`/`y`, so only the offsets and the
    /// per-series grids move.
    pub(crate) fn starting_at_series(&self, first: usize, out: CUdeviceptr) -> BatchDeviceBuffers {
        let at = |ptr: CUdeviceptr, per_series: bool| {
            ptr + if per_series { (first * 8) as u64 } else { 0 }
        };
        BatchDeviceBuffers {
            offsets: at(self.offsets, true),
            f0: at(self.f0, self.per_series_grid),
            df: at(self.df, self.per_series_grid),
            out,
            ..*self
        }
    }
}

/// Periodograms of a batch on device memory ([`Gpu::enqueue`]): `nseries`
/// series of `nf` frequencies each, into `buffers.out` (nseries x
/// [`output_len`]`(nf)` values). The counts are checked, and every pointer
/// against the driver's record of the GPU's allocations: offsets, grids and
/// output for their exact sizes, the samples for at least one per series
/// (their count is in the device's offsets); the output apart from the
/// inputs. Offsets, grids and data on the device are the caller's to get
/// right (see [`validate_batch`]).
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatchOnDevice<T> {
    pub buffers: BatchDeviceBuffers,
    pub nseries: usize,
    pub nf: usize,
    pub opts: LombScargleOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleBatchOnDevice<T> {
    pub(crate) fn ngrids(&self) -> usize {
        if self.buffers.per_series_grid {
            self.nseries
        } else {
            1
        }
    }

    /// The counts (`check_batch_call`); returns the values the output holds.
    pub(crate) fn check_counts(&self) -> Result<usize> {
        check_batch_call(self.nseries, self.nf, self.ngrids(), None, &self.opts)
    }
}

impl<T: Float> DeviceOperation for LombScargleBatchOnDevice<T> {
    /// How many samples t, y and weights can all be read for.
    type Checked = usize;

    fn check_shapes(&self) -> Result<()> {
        self.check_counts().map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<usize> {
        let (b, nseries, total) = (&self.buffers, self.nseries, self.check_counts()?);
        let samples = gpu.check_batch_inputs::<T>(b, nseries)?;
        gpu.check_device_array::<T>("out", b.out, total)?;
        b.check_outputs_apart::<T>(nseries, &[Span::at::<T>("out", b.out, total)])?;
        Ok(samples)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, samples: usize) -> Result<()> {
        let nseries = self.nseries;
        let mut stats = stream
            .alloc::<f64>(STATS_LEN * nseries)
            .map_err(|e| Error::cuda("allocating scratch", e))?;
        let (stats_ptr, _s) = stats.device_ptr_mut(stream);
        unsafe { self.launch_with_stats(gpu, stream, samples, stats_ptr) }
    }
}

impl<T: Float> LombScargleBatchOnDevice<T> {
    /// The batched launch with the caller's scratch: `stats` holds
    /// `STATS_LEN * nseries` doubles (the multi-GPU pipeline carves it out of
    /// its own arena, so its memory is counted against its limit). `samples`
    /// values can be read at t, y and weights: a series whose device offsets
    /// leave that range (or decrease) reads nothing and its periodogram is NaN.
    ///
    /// # Safety
    /// As [`DeviceOperation::launch`]; `stats` as above, on `gpu`.
    pub(crate) unsafe fn launch_with_stats(
        &self,
        gpu: &Gpu,
        stream: &Arc<CudaStream>,
        samples: usize,
        stats_ptr: CUdeviceptr,
    ) -> Result<()> {
        let (buffers, nseries, nf, opts) = (&self.buffers, self.nseries, self.nf, &self.opts);
        // A series' nx comes from the offsets on the device, within `samples`.
        let samples = samples.min(i64::MAX as usize);
        let params = LsParams::new(samples, nf, buffers.weights.is_some(), opts);
        let (t, y) = (In::new(buffers.t), In::new(buffers.y));
        let w = In::new(buffers.weights.unwrap_or(0));
        let offsets = In::new(buffers.offsets);
        let nseries_arg = nseries as i64;
        let per_series_grid = buffers.per_series_grid as i32;

        let prepare = kernels::lombscargle_prepare::<T>();
        let grid = gpu.kernel(&prepare)?.grid_for(nseries as u64, 1);
        let args = (params, nseries_arg, offsets, t, y, w, Out::new(stats_ptr));
        gpu.launch(&prepare, LaunchConfig::grid(grid), stream, args)?;

        let uniform = kernels::lombscargle_uniform::<T>();
        let kernel = gpu.kernel(&uniform)?;
        let per_thread = uniform_freqs_per_thread(opts);
        let chunks = (nf as u64).div_ceil(kernel.block as u64 * per_thread);
        let blocks = kernel.grid_for(chunks * nseries as u64, 1);
        let unused_grid = LsGrid { f0: 0.0, df: 0.0 }; // the grids come from f0 / df
        let args = (
            params,
            unused_grid,
            nseries_arg,
            offsets,
            In::new(buffers.f0),
            In::new(buffers.df),
            per_series_grid,
            t,
            y,
            w,
            In::new(stats_ptr),
            Out::new(buffers.out),
        );
        gpu.launch(&uniform, LaunchConfig::grid(blocks), stream, args)
    }
}

impl Gpu {
    /// Host slices in, one periodogram per series out (waits for the
    /// result), after validation.
    fn lombscargle_batch_host<T: Float>(
        &self,
        batch: &Batch<'_, T>,
        grids: &BatchGrid<'_>,
        opts: &LombScargleOptions,
    ) -> Result<Vec<Periodogram<T>>> {
        let stream = self.stream();
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        let t = stream
            .clone_htod(batch.t)
            .map_err(cuda("copying inputs to the GPU"))?;
        let y = stream
            .clone_htod(batch.y)
            .map_err(cuda("copying inputs to the GPU"))?;
        let w = batch
            .weights
            .map(|w| stream.clone_htod(w))
            .transpose()
            .map_err(cuda("copying inputs to the GPU"))?;
        let offsets: Vec<i64> = batch.offsets.iter().map(|&o| o as i64).collect();
        let offsets = stream
            .clone_htod(&offsets)
            .map_err(cuda("copying inputs to the GPU"))?;
        let (f0, df) = grids.starts_and_steps();
        let f0 = stream
            .clone_htod(&f0)
            .map_err(cuda("copying inputs to the GPU"))?;
        let df = stream
            .clone_htod(&df)
            .map_err(cuda("copying inputs to the GPU"))?;
        let per_series = output_len(grids.nf(), opts);
        let mut out = unsafe { stream.alloc::<T>(per_series * batch.len()) }
            .map_err(cuda("allocating the output"))?;
        {
            let ptr = |p: (CUdeviceptr, _)| p.0;
            let (o, _o) = out.device_ptr_mut(stream);
            let buffers = BatchDeviceBuffers {
                t: ptr(t.device_ptr(stream)),
                y: ptr(y.device_ptr(stream)),
                weights: w.as_ref().map(|w| ptr(w.device_ptr(stream))),
                offsets: ptr(offsets.device_ptr(stream)),
                f0: ptr(f0.device_ptr(stream)),
                df: ptr(df.device_ptr(stream)),
                per_series_grid: matches!(grids, BatchGrid::PerSeries { .. }),
                out: o,
            };
            let (nseries, nf, opts, dtype) = (batch.len(), grids.nf(), *opts, PhantomData);
            #[rustfmt::skip]
            let op = LombScargleBatchOnDevice::<T> { buffers, nseries, nf, opts, dtype };
            // SAFETY: all buffers are live device allocations of the validated sizes.
            unsafe { op.launch(self, stream, batch.t.len()) }?;
        }
        let values = stream
            .clone_dtoh(&out)
            .map_err(cuda("copying the periodograms back"))?;
        Ok(values
            .chunks_exact(per_series)
            .map(|v| Periodogram::from_interleaved(v.to_vec(), opts.normalize))
            .collect())
    }

    /// The inputs of a batch on this GPU against the driver's record: the
    /// offsets and grids for their exact sizes, the samples for at least one
    /// per series (their count is in the device's offsets). Returns how many
    /// samples t, y and weights can all be read for: the kernels' bound on
    /// the device offsets, which the host cannot see.
    pub(crate) fn check_batch_inputs<T: Float>(
        &self,
        buffers: &BatchDeviceBuffers,
        nseries: usize,
    ) -> Result<usize> {
        let ngrids = if buffers.per_series_grid { nseries } else { 1 };
        let mut readable = usize::MAX;
        for (name, ptr) in [("t", buffers.t), ("y", buffers.y)]
            .into_iter()
            .chain(buffers.weights.map(|w| ("weights", w)))
        {
            readable = readable.min(self.readable_values::<T>(name, ptr, nseries)?);
        }
        self.check_device_array::<i64>("offsets", buffers.offsets, nseries + 1)?;
        self.check_device_array::<f64>("f0", buffers.f0, ngrids)?;
        self.check_device_array::<f64>("df", buffers.df, ngrids)?;
        Ok(readable)
    }
}
