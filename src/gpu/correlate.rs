//! The 1-D correlation passes' device description (csrc/correlate.cu), and
//! the one validation of a correlation call.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{KP_CORRELATE_MAX_TAPS, KP_CORRELATE_OUTPUTS, KP_CORRELATE_WARPS};
use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::launch::{In, LaunchConfig, Out};
use super::stencil::kernel_mode;
use super::{kernels, scratch, CorrelateParams, Gpu};
use crate::error::{Error, Result};
use crate::float::Float;
use crate::params::correlate::{Lines, Pass, MAX_TAPS};
use crate::params::stencil::BoundaryMode;
use crate::params::FixedWeights;

/// Taps per launch: the weights' capacity in the kernel parameter.
const LAUNCH_TAPS: usize = KP_CORRELATE_MAX_TAPS as usize;
/// Outputs per thread along the axis.
const OUTPUTS: u64 = KP_CORRELATE_OUTPUTS as u64;
/// Threads the strided kernel's chunks aim at per multiprocessor (two
/// waves of its resident threads).
const THREADS_PER_SM: u64 = 4096;

/// The one validation of a correlation call: the shape, each pass, and the
/// buffers' lengths against the shape.
pub(crate) fn validate(
    shape: &[usize],
    passes: &[Pass],
    input_len: usize,
    output_len: usize,
) -> Result<()> {
    let size = crate::params::array_size(shape)
        .filter(|&n| n <= i64::MAX as usize / 8)
        .ok_or_else(|| Error::invalid(format!("an array of shape {shape:?} is too large")))?;
    for pass in passes {
        let len = pass.weights.len();
        Lines::along(shape, pass.axis)?;
        if !(1..=MAX_TAPS).contains(&len) {
            return Err(Error::invalid(format!(
                "{len} weights: a filter takes 1 to {MAX_TAPS}"
            )));
        }
        if let Some(w) = pass.weights.iter().find(|w| !w.is_finite()) {
            return Err(Error::invalid(format!("the weights hold {w}")));
        }
        let n = len as i64;
        if !(-(n / 2)..=(n - 1) / 2).contains(&pass.origin) {
            return Err(Error::invalid(format!(
                "origin {} is outside {} ..= {} for {len} weights",
                pass.origin,
                -(n / 2),
                (n - 1) / 2
            )));
        }
        if pass.mode == BoundaryMode::Interior {
            return Err(Error::invalid(
                "the interior mode is the box filter's; a correlation takes reflect, constant, \
                 nearest, mirror or wrap",
            ));
        }
    }
    for (what, len) in [("input", input_len), ("output", output_len)] {
        if len != size {
            return Err(Error::invalid(format!(
                "the {what} holds {len} values, an array of shape {shape:?} holds {size}"
            )));
        }
    }
    Ok(())
}

/// Correlation passes on device memory ([`Gpu::enqueue`]): `input` and
/// `output` hold the row-major array of `shape`, apart; each pass reads the
/// previous one's output (with two passes or more, through device scratch
/// of the array's size, stream-ordered). No pass: a copy.
#[derive(Debug, Clone)]
pub struct CorrelateOnDevice<T> {
    pub input: CUdeviceptr,
    pub output: CUdeviceptr,
    pub shape: Vec<usize>,
    pub passes: Vec<Pass>,
    pub dtype: PhantomData<T>,
}

impl<T: Float> CorrelateOnDevice<T> {
    /// The passes over cudarc buffers of the array's size.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        input: &'a impl DevicePtr<T>,
        output: &'a mut impl DevicePtrMut<T>,
        shape: &[usize],
        passes: &[Pass],
    ) -> Result<OnBuffers<'a, Self>> {
        validate(shape, passes, input.len(), output.len())?;
        let mut g = Guards::new(stream);
        let op = CorrelateOnDevice {
            input: g.read(input),
            output: g.write(output),
            shape: shape.to_vec(),
            passes: passes.to_vec(),
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }

    fn size(&self) -> usize {
        self.shape.iter().product()
    }
}

impl<T: Float> DeviceOperation for CorrelateOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let size = crate::params::array_size(&self.shape).unwrap_or(usize::MAX);
        validate(&self.shape, &self.passes, size, size)
    }

    fn check_memory(&self, gpu: &Gpu) -> Result<()> {
        let n = self.size();
        if n == 0 {
            return Ok(());
        }
        check_disjoint::<T>(self.input, n, self.output, n)?;
        gpu.check_device_array::<T>("input", self.input, n)?;
        gpu.check_device_array::<T>("output", self.output, n)
    }

    unsafe fn launch(&self, gpu: &Gpu, stream: &Arc<CudaStream>, _: ()) -> Result<()> {
        let n = self.size();
        if n == 0 {
            return Ok(());
        }
        let bytes = n * std::mem::size_of::<T>();
        if self.passes.is_empty() {
            // SAFETY: both spans checked against the driver's record, apart.
            return unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    self.output,
                    self.input,
                    bytes,
                    stream.cu_stream(),
                )
            }
            .map_err(|e| Error::cuda("copying the array", e));
        }
        let lines = |pass: &Pass| Lines::along(&self.shape, pass.axis).expect("checked");
        // As on the CPU: pass k writes the output when an even number of
        // passes follow it, the scratch otherwise.
        let mut scratch_buf = if self.passes.len() == 1 {
            None
        } else {
            // SAFETY: each pass writes all of its destination before the next reads it.
            Some(unsafe { scratch::<T>(stream, n) }?)
        };
        let scratch_ptr = match &mut scratch_buf {
            Some(buf) => buf.device_ptr_mut(stream).0,
            None => 0,
        };
        let mut from = self.input;
        for (k, pass) in self.passes.iter().enumerate() {
            let to = if (self.passes.len() - 1 - k) % 2 == 0 {
                self.output
            } else {
                scratch_ptr
            };
            // SAFETY: `from` and `to` each hold the array, apart.
            unsafe { launch_pass::<T>(gpu, stream, from, to, lines(pass), pass) }?;
            from = to;
        }
        debug_assert_eq!(from, self.output);
        Ok(())
    }
}

/// One pass, in launches of up to [`LAUNCH_TAPS`] taps (each after the
/// first adds its slice to `to`).
///
/// # Safety
/// `from` and `to` hold `lines.size()` values of `T` each, apart.
unsafe fn launch_pass<T: Float>(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    from: CUdeviceptr,
    to: CUdeviceptr,
    lines: Lines,
    pass: &Pass,
) -> Result<()> {
    let strided = lines.inner > 1;
    let (outer, n, inner) = (lines.outer as u64, lines.len as u64, lines.inner as u64);
    for (s, slice) in pass.weights.chunks(LAUNCH_TAPS).enumerate() {
        let mut weights = FixedWeights {
            w: [T::default(); LAUNCH_TAPS],
        };
        for (w, &v) in weights.w.iter_mut().zip(slice) {
            *w = T::from_f64(v);
        }
        let taps = slice.len() as u64;
        let (chunk, units, threads) = if strided {
            // Chunks long enough to amortise their halo (taps - 1 extra rows
            // read) and short enough to fill the GPU.
            let target = THREADS_PER_SM * u64::from(gpu.sm_count().max(1));
            let for_threads = (outer * n * inner).div_ceil(target);
            let chunk = for_threads
                .max(4 * taps)
                .max(4 * OUTPUTS)
                .min(n)
                .next_multiple_of(OUTPUTS);
            let units = outer * n.div_ceil(chunk) * inner;
            (chunk, units, units)
        } else {
            let units = outer * n.div_ceil(32 * OUTPUTS);
            (0, units, units * 32)
        };
        let blocks = threads.div_ceil(32 * u64::from(KP_CORRELATE_WARPS));
        if blocks > i32::MAX as u64 {
            return Err(Error::invalid("the array is too large for one launch"));
        }
        let params = CorrelateParams {
            outer: outer as i64,
            n: n as i64,
            inner: inner as i64,
            first: pass.first() + (s * LAUNCH_TAPS) as i64,
            taps: taps as i64,
            chunk: chunk as i64,
            units: units as i64,
            cval: pass.cval,
            mode: kernel_mode(pass.mode),
            accumulate: i32::from(s > 0),
        };
        let kernel = kernels::correlate::<T>(strided);
        let args = (In::new(from), Out::new(to), params, weights);
        // SAFETY: the caller's spans; the params describe them.
        unsafe { gpu.launch(&kernel, LaunchConfig::grid(blocks as u32), stream, args) }?;
    }
    Ok(())
}
