//! The Lomb-Scargle periodograms' device descriptions (csrc/lombscargle.cu):
//! one series, a batch, and the peaks of a batch, with their checks.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{
    KP_LS_AMPLITUDE, KP_LS_FREQS_PER_THREAD, KP_LS_NORMALIZE, KP_LS_POWER,
    KP_LS_UNIFORM_FREQS_PER_THREAD, KP_LS_UNIFORM_FREQS_PER_THREAD_FM,
};
use super::device::{DeviceOperation, Guards, OnBuffers};
use super::kernels;
use super::launch::{In, LaunchConfig, Out};
use super::{scratch, Gpu, LsGrid, LsParams, LsStats};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::lombscargle::{
    output_len, BatchDeviceBuffers, DeviceFreqs, LombScargleOptions, LsDeviceBuffers, Normalize,
    PeakBuffers, UniformGrid,
};
use crate::params::DEFAULT_CHUNK_BYTES;
use crate::raw::{check_apart, Span, MAX_ARRAY_BYTES};

/// Doubles in `kp_ls_stats`: the scratch each series needs.
pub(crate) const STATS_LEN: usize = std::mem::size_of::<LsStats>() / std::mem::size_of::<f64>();

/// Frequencies each thread of the uniform-grid kernel carries.
pub(crate) fn uniform_freqs_per_thread(opts: &LombScargleOptions) -> u64 {
    u64::from(if opts.floating_mean {
        KP_LS_UNIFORM_FREQS_PER_THREAD_FM
    } else {
        KP_LS_UNIFORM_FREQS_PER_THREAD
    })
}

impl LsParams {
    fn new(nx: usize, nf: usize, has_weights: bool, opts: &LombScargleOptions) -> Self {
        LsParams {
            nx: nx as i64,
            nf: nf as i64,
            normalize: match opts.normalize {
                Normalize::Power => KP_LS_POWER,
                Normalize::Normalize => KP_LS_NORMALIZE,
                Normalize::Amplitude => KP_LS_AMPLITUDE,
            },
            floating_mean: opts.floating_mean as i32,
            precenter: opts.precenter as i32,
            has_weights: has_weights as i32,
        }
    }
}

/// The one validation of a periodogram call's shapes: sample counts, the
/// frequencies (their count, and the grid when uniform) and, where the caller
/// supplies the output, its length. Every entry point runs it once; host
/// values are checked by `check_values` (device data cannot be inspected
/// without a synchronisation).
pub(crate) fn check_call(
    nx: usize,
    ny: usize,
    nw: Option<usize>,
    nf: usize,
    grid: Option<&UniformGrid>,
    out_len: Option<usize>,
    opts: &LombScargleOptions,
) -> Result<()> {
    if nx == 0 {
        return Err(Error::invalid("the series is empty (t has no samples)"));
    }
    if ny != nx {
        return Err(Error::invalid(format!("t has {nx} samples but y has {ny}")));
    }
    if let Some(nw) = nw.filter(|&nw| nw != nx) {
        return Err(Error::invalid(format!(
            "t has {nx} samples but weights has {nw}"
        )));
    }
    if nf == 0 {
        return Err(Error::invalid("no frequencies given"));
    }
    if nx > i64::MAX as usize / 2 || nf > i64::MAX as usize / 2 {
        return Err(Error::invalid("too many samples or frequencies"));
    }
    if let Some(grid) = grid {
        grid.validate()?;
    }
    let want = output_len(nf, opts);
    match out_len {
        Some(len) if len != want => Err(Error::invalid(format!(
            "out holds {len} values, {want} needed"
        ))),
        _ => Ok(()),
    }
}

/// The periodogram of one series on device memory ([`Gpu::enqueue`]):
/// `t`, `y` (and `weights` when given) hold `nx` values of `T`, an array
/// `freqs` its `len`, `out` [`output_len`] values. Only shapes are checked
/// (device data cannot be inspected without a sync): NaN/Inf, negative
/// weights or frequencies give NaN or meaningless output rather than an error.
#[derive(Debug, Clone, Copy)]
pub struct LombScargleOnDevice<T> {
    pub buffers: LsDeviceBuffers,
    pub nx: usize,
    pub freqs: DeviceFreqs,
    pub opts: LombScargleOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleOnDevice<T> {
    /// The periodogram of cudarc buffers at the angular frequencies `freqs`;
    /// their lengths are the call's shapes (`out` holds [`output_len`]).
    pub fn buffers<'a, In: DevicePtr<T>>(
        stream: &'a Arc<CudaStream>,
        t: &'a In,
        y: &'a In,
        weights: Option<&'a In>,
        freqs: &'a In,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let mut g = Guards::new(stream);
        let (ptr, len) = (g.read(freqs), freqs.len());
        Self::on_buffers(
            g,
            (t, y, weights),
            DeviceFreqs::Array { ptr, len },
            out,
            opts,
        )
    }

    /// As [`LombScargleOnDevice::buffers`], on a uniform grid.
    pub fn uniform_buffers<'a, In: DevicePtr<T>>(
        stream: &'a Arc<CudaStream>,
        t: &'a In,
        y: &'a In,
        weights: Option<&'a In>,
        grid: &UniformGrid,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let freqs = DeviceFreqs::Uniform(*grid);
        Self::on_buffers(Guards::new(stream), (t, y, weights), freqs, out, opts)
    }

    fn on_buffers<'a, In: DevicePtr<T>>(
        mut g: Guards<'a>,
        (t, y, weights): (&'a In, &'a In, Option<&'a In>),
        freqs: DeviceFreqs,
        out: &'a mut impl DevicePtrMut<T>,
        opts: &LombScargleOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        let nw = weights.map(|w| w.len());
        let (nf, grid) = freqs.count_and_grid();
        let (nx, ny, out_len) = (t.len(), y.len(), Some(out.len()));
        check_call(nx, ny, nw, nf, grid.as_ref(), out_len, opts)?;
        let buffers = LsDeviceBuffers {
            t: g.read(t),
            y: g.read(y),
            weights: weights.map(|w| g.read(w)),
            out: g.write(out),
        };
        let (opts, dtype) = (*opts, PhantomData);
        Ok(g.with(LombScargleOnDevice {
            buffers,
            nx,
            freqs,
            opts,
            dtype,
        }))
    }
}

impl<T: Float> DeviceOperation for LombScargleOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let (nf, grid) = self.freqs.count_and_grid();
        check_call(self.nx, self.nx, None, nf, grid.as_ref(), None, &self.opts)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let (b, nx) = (&self.buffers, self.nx);
        for (name, ptr) in [("t", b.t), ("y", b.y)]
            .into_iter()
            .chain(b.weights.map(|w| ("weights", w)))
        {
            gpu.check_device_array::<T>(name, ptr, nx)?;
        }
        if let DeviceFreqs::Array { ptr, len } = self.freqs {
            gpu.check_device_array::<T>("freqs", ptr, len)?;
        }
        let out_len = output_len(self.freqs.len(), &self.opts);
        gpu.check_device_array::<T>("out", b.out, out_len)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let (buffers, nx, freqs, opts) = (&self.buffers, self.nx, self.freqs, &self.opts);
        let nf = freqs.len();
        let params = LsParams::new(nx, nf, buffers.weights.is_some(), opts);
        // Per-series statistics stay on the device: no host round trip.
        let mut stats = unsafe { scratch::<f64>(stream, STATS_LEN) }?;
        let (stats_ptr, _s) = stats.device_ptr_mut(stream);
        let (t, y) = (In::new(buffers.t), In::new(buffers.y));
        let w = In::new(buffers.weights.unwrap_or(0));
        let out = Out::new(buffers.out);

        // One series: no offsets (the kernels then take nseries = 1 and p.nx).
        let (nseries, offsets) = (1, In::null());
        let prepare = kernels::lombscargle_prepare::<T>();
        let args = (params, nseries, offsets, t, y, w, Out::new(stats_ptr));
        gpu.launch(&prepare, LaunchConfig::grid(1), stream, args)?;
        let stats = In::new(stats_ptr);

        match freqs {
            DeviceFreqs::Array { ptr, .. } => {
                let direct = kernels::lombscargle_direct::<T>();
                let kernel = gpu.kernel(&direct)?;
                let per_block = kernel.block as u64 * u64::from(KP_LS_FREQS_PER_THREAD);
                let grid = kernel.grid_for(nf as u64, per_block);
                let args = (params, t, y, w, In::new(ptr), stats, out);
                gpu.launch(&direct, LaunchConfig::grid(grid), stream, args)
            }
            DeviceFreqs::Uniform(grid) => {
                let uniform = kernels::lombscargle_uniform::<T>();
                let kernel = gpu.kernel(&uniform)?;
                let per_thread = uniform_freqs_per_thread(opts);
                let blocks = kernel.grid_for(nf as u64, kernel.block as u64 * per_thread);
                let grid = LsGrid {
                    f0: grid.f0,
                    df: grid.df,
                };
                // One grid for the one series: no per-series grids.
                let (f0, df, per_series_grid) = (In::null(), In::null(), 0);
                let args = (
                    params,
                    grid,
                    nseries,
                    offsets,
                    f0,
                    df,
                    per_series_grid,
                    t,
                    y,
                    w,
                    stats,
                    out,
                );
                gpu.launch(&uniform, LaunchConfig::grid(blocks), stream, args)
            }
        }
    }
}

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
        let ngrids = self.ngrids(nseries);
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
/// right (see the host API's `validate_batch`).
#[derive(Debug, Clone, Copy)]
pub struct LombScargleBatchOnDevice<T> {
    pub buffers: BatchDeviceBuffers,
    pub nseries: usize,
    pub nf: usize,
    pub opts: LombScargleOptions,
    pub dtype: PhantomData<T>,
}

impl<T: Float> LombScargleBatchOnDevice<T> {
    /// The counts (`check_batch_call`); returns the values the output holds.
    pub(crate) fn check_counts(&self) -> Result<usize> {
        let ngrids = self.buffers.ngrids(self.nseries);
        check_batch_call(self.nseries, self.nf, ngrids, None, &self.opts)
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
        let mut stats = unsafe { scratch::<f64>(stream, STATS_LEN * nseries) }?;
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
        let ngrids = buffers.ngrids(nseries);
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

/// The peaks of a batch already on the GPU ([`Gpu::enqueue`]): as
/// [`LombScargleBatchOnDevice`] with `batch.buffers.out` unused (it must be
/// 0), each chunk of series computed into scratch of at most
/// `max_scratch_bytes` (None: [`DEFAULT_CHUNK_BYTES`]; at least one series'
/// periodogram) and reduced into `peaks` (nseries values each, apart from
/// each other and from the inputs).
#[derive(Debug, Clone, Copy)]
pub struct LombScarglePeaksOnDevice<T> {
    pub batch: LombScargleBatchOnDevice<T>,
    pub peaks: PeakBuffers,
    pub max_scratch_bytes: Option<usize>,
}

impl<T: Float> DeviceOperation for LombScarglePeaksOnDevice<T> {
    /// How many samples t, y and weights can all be read for.
    type Checked = usize;

    fn check_shapes(&self) -> Result<()> {
        if self.batch.buffers.out != 0 {
            return Err(Error::invalid(
                "the peaks of a batch need no periodogram output: pass out = 0",
            ));
        }
        self.batch.check_counts().map(drop)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<usize> {
        let (buffers, nseries, peaks) = (&self.batch.buffers, self.batch.nseries, &self.peaks);
        let samples = gpu.check_batch_inputs::<T>(buffers, nseries)?;
        gpu.check_device_array::<i64>("index", peaks.index, nseries)?;
        gpu.check_device_array::<f64>("value", peaks.value, nseries)?;
        buffers.check_outputs_apart::<T>(
            nseries,
            &[
                Span::at::<i64>("index", peaks.index, nseries),
                Span::at::<f64>("value", peaks.value, nseries),
            ],
        )?;
        Ok(samples)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, samples: usize) -> Result<()> {
        let LombScargleBatchOnDevice {
            ref buffers,
            nseries,
            nf,
            ref opts,
            ..
        } = self.batch;
        let peaks = &self.peaks;
        // A series' periodogram and statistics in the scratch.
        let values_per_series = output_len(nf, opts)
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b <= MAX_ARRAY_BYTES)
            .ok_or_else(|| Error::invalid(format!("{nf} frequencies per series is too many")))?;
        let per_series = values_per_series + STATS_LEN * 8;
        let limit = self.max_scratch_bytes.unwrap_or(DEFAULT_CHUNK_BYTES);
        let chunk = (limit / per_series).clamp(1, nseries);
        let cuda = |during: &'static str| move |e| Error::cuda(during, e);
        let values_bytes = chunk * values_per_series;
        let stats_at = values_bytes.next_multiple_of(8);
        let mut scratch = unsafe { stream.alloc::<u8>(stats_at + chunk * STATS_LEN * 8) }
            .map_err(cuda("allocating the periodograms' scratch"))?;
        let (base, _guard) = scratch.device_ptr_mut(stream);
        let stats = base + stats_at as u64;
        for first in (0..nseries).step_by(chunk) {
            let count = chunk.min(nseries - first);
            let shifted = buffers.starting_at_series(first, base);
            let at = PeakBuffers {
                index: peaks.index + (first * 8) as u64,
                value: peaks.value + (first * 8) as u64,
            };
            // SAFETY: checked; the scratch holds `chunk` periodograms and their stats.
            unsafe {
                let chunk = LombScargleBatchOnDevice {
                    buffers: shifted,
                    nseries: count,
                    ..self.batch
                };
                chunk.launch_with_stats(gpu, stream, samples, stats)?;
                gpu.launch_peaks::<T>(stream, base, count, nf, opts, &at)?;
            }
        }
        Ok(())
    }
}

impl Gpu {
    /// The peaks of `nseries` periodograms of `nf` frequencies at `pgrams`.
    ///
    /// # Safety
    /// `pgrams` holds nseries x [`output_len`]`(nf)` values of `T` and `peaks`
    /// nseries values each, on this GPU, until the work on `stream` has finished.
    pub(crate) unsafe fn launch_peaks<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        pgrams: CUdeviceptr,
        nseries: usize,
        nf: usize,
        opts: &LombScargleOptions,
        peaks: &PeakBuffers,
    ) -> Result<()> {
        let kernel = kernels::lombscargle_peaks::<T>();
        let grid = self.kernel(&kernel)?.grid_for(nseries as u64, 1);
        let amplitude = i32::from(opts.normalize == Normalize::Amplitude);
        let args = (
            nseries as i64,
            nf as i64,
            amplitude,
            In::new(pgrams),
            Out::new(peaks.index),
            Out::new(peaks.value),
        );
        unsafe { self.launch(&kernel, LaunchConfig::grid(grid), stream, args) }
    }
}
