//! The N-D box filter on the device (csrc/uniform.cu): the call's
//! description, the one validation of a call, and its passes' launches.
use std::marker::PhantomData;
use std::sync::Arc;

use cudarc::driver::sys::CUdeviceptr;
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut};

use super::c_params::{KP_UNIFORM_LINES_MAX_SIZE, KP_UNIFORM_LINE_OUTPUTS, KP_UNIFORM_THREADS};
use super::device::{check_disjoint, DeviceOperation, Guards, OnBuffers};
use super::launch::{In, LaunchConfig, Out};
use super::stencil::kernel_mode;
use super::{kernels, scratch, Gpu, UniformParams};
use crate::error::{Error, Result};
use crate::params::correlate::Lines;
use crate::params::rank::KeyKind;
use crate::params::uniform::{BoxPass, BoxValue, UniformNdOptions};

/// Threads the strided kernel's chunks aim at per multiprocessor (two
/// waves of its resident threads).
const THREADS_PER_SM: u64 = 4096;
/// Shortest chunk along the axis, in multiples of the window: a chunk seeds
/// its sum with a window's worth of loads.
const CHUNK_WINDOWS: u64 = 4;
/// Blocks per multiprocessor the grid asks for at most; it strides over the rest.
const BLOCKS_PER_SM: u64 = 32;

/// The one validation of an N-D box filter call: the shape, the options
/// for it and the buffers' lengths; the passes to run.
pub(crate) fn validate<T: BoxValue>(
    shape: &[usize],
    opts: &UniformNdOptions,
    input_len: usize,
    output_len: usize,
) -> Result<Vec<BoxPass<T>>> {
    let size = crate::params::array_size(shape)
        .filter(|&n| n <= i64::MAX as usize / 8)
        .ok_or_else(|| Error::invalid(format!("an array of shape {shape:?} is too large")))?;
    let passes = opts.passes::<T>(shape.len())?;
    for (what, len) in [("input", input_len), ("output", output_len)] {
        if len != size {
            return Err(Error::invalid(format!(
                "the {what} holds {len} values, an array of shape {shape:?} holds {size}"
            )));
        }
    }
    Ok(passes)
}

/// The N-D box filter on device memory ([`Gpu::enqueue`]): `input` and
/// `output` hold the row-major array of `shape`, apart; each pass reads the
/// previous one's output (with two passes or more, through device scratch
/// of the array's size, stream-ordered). No pass (every size 1): a copy.
#[derive(Debug, Clone)]
pub struct UniformNdOnDevice<T> {
    pub input: CUdeviceptr,
    pub output: CUdeviceptr,
    pub shape: Vec<usize>,
    pub opts: UniformNdOptions,
    pub dtype: PhantomData<T>,
}

impl<T: BoxValue> UniformNdOnDevice<T> {
    /// The filter over cudarc buffers of the array's size.
    pub fn buffers<'a>(
        stream: &'a Arc<CudaStream>,
        input: &'a impl DevicePtr<T>,
        output: &'a mut impl DevicePtrMut<T>,
        shape: &[usize],
        opts: &UniformNdOptions,
    ) -> Result<OnBuffers<'a, Self>> {
        validate::<T>(shape, opts, input.len(), output.len())?;
        let mut g = Guards::new(stream);
        let op = UniformNdOnDevice {
            input: g.read(input),
            output: g.write(output),
            shape: shape.to_vec(),
            opts: opts.clone(),
            dtype: PhantomData,
        };
        Ok(g.with(op))
    }

    fn size(&self) -> usize {
        self.shape.iter().product()
    }
}

impl<T: BoxValue> DeviceOperation for UniformNdOnDevice<T> {
    type Checked = ();

    fn check_shapes(&self) -> Result<()> {
        let size = crate::params::array_size(&self.shape).unwrap_or(usize::MAX);
        validate::<T>(&self.shape, &self.opts, size, size).map(|_| ())
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
        // Checked by check_shapes (or by `buffers`, for fresh buffers).
        let passes = self.opts.passes::<T>(self.shape.len())?;
        if passes.is_empty() {
            // SAFETY: both spans checked against the driver's record, apart.
            return unsafe {
                cudarc::driver::result::memcpy_dtod_async(
                    self.output,
                    self.input,
                    n * std::mem::size_of::<T>(),
                    stream.cu_stream(),
                )
            }
            .map_err(|e| Error::cuda("copying the array", e));
        }
        // Pass k writes the output when an even number of passes follow it.
        let mut scratch_buf = if passes.len() == 1 {
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
        for (k, pass) in passes.iter().enumerate() {
            let to = if (passes.len() - 1 - k) % 2 == 0 {
                self.output
            } else {
                scratch_ptr
            };
            let lines = Lines::along(&self.shape, pass.axis)?;
            // SAFETY: `from` and `to` each hold the array, apart.
            unsafe { launch_pass::<T>(gpu, stream, from, to, lines, pass) }?;
            from = to;
        }
        Ok(())
    }
}

/// One pass from `from` into `to`: the lines kernel along a contiguous axis
/// when its tiles fit in shared memory, the strided kernel otherwise.
///
/// # Safety
/// `from` and `to` hold `lines.size()` values of `T` each, apart.
unsafe fn launch_pass<T: BoxValue>(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    from: CUdeviceptr,
    to: CUdeviceptr,
    lines: Lines,
    pass: &BoxPass<T>,
) -> Result<()> {
    let (outer, n, inner) = (lines.outer as u64, lines.len as u64, lines.inner as u64);
    let size = pass.size as u64;
    let width = std::mem::size_of::<T>();
    // The lines kernel's tile: its values (4 bytes for f32, 8 for the
    // others: integers widen to 64 bits), one pad slot per 32.
    let tile = {
        let values = 32 * u64::from(KP_UNIFORM_LINE_OUTPUTS) + size - 1;
        values + values.div_ceil(32) + 1
    };
    let value_bytes = if T::KIND == KeyKind::Float && width == 4 {
        4
    } else {
        8
    };
    let warps_per_block = u64::from(KP_UNIFORM_THREADS) / 32;
    let shared_bytes = tile * value_bytes * warps_per_block;
    let lines_kernel = match T::KIND {
        KeyKind::Float if width == 4 => kernels::uniform_float::<f32>(true).name(),
        KeyKind::Float => kernels::uniform_float::<f64>(true).name(),
        _ if width == 8 => kernels::uniform_int64(true).name(),
        _ => kernels::uniform_int(true).name(),
    };
    let fits = shared_bytes <= u64::from(gpu.kernel_by_name(lines_kernel)?.max_dynamic_shared);
    let use_lines = inner == 1 && size <= u64::from(KP_UNIFORM_LINES_MAX_SIZE) && fits;
    let sm = u64::from(gpu.sm_count().max(1));
    let (chunk, units, threads) = if use_lines {
        let units = outer * n.div_ceil(32 * u64::from(KP_UNIFORM_LINE_OUTPUTS));
        (0, units, units * 32)
    } else {
        // Chunks long enough to amortise their seeds, short enough to fill the GPU.
        let for_threads = (outer * n * inner).div_ceil(THREADS_PER_SM * sm);
        let chunk = for_threads.max(CHUNK_WINDOWS * size.min(4 * n)).clamp(1, n);
        let units = outer * n.div_ceil(chunk) * inner;
        (chunk, units, units)
    };
    let blocks = threads
        .div_ceil(u64::from(KP_UNIFORM_THREADS))
        .clamp(1, BLOCKS_PER_SM * sm) as u32;
    let params = UniformParams {
        outer: outer as i64,
        n: n as i64,
        inner: inner as i64,
        first: pass.first,
        size: size as i64,
        chunk: chunk as i64,
        units: units as i64,
        tile: tile as i64,
        cval: pass.cval.bits(),
        mode: kernel_mode(pass.mode),
        width: width as i32,
        is_signed: i32::from(T::KIND == KeyKind::Signed),
        unused: 0,
    };
    let config = if use_lines {
        LaunchConfig::grid(blocks).shared(shared_bytes as u32)
    } else {
        LaunchConfig::grid(blocks)
    };
    // SAFETY: the caller's spans; the params describe them.
    unsafe {
        match T::KIND {
            KeyKind::Float if width == 4 => gpu.launch(
                &kernels::uniform_float::<f32>(use_lines),
                config,
                stream,
                (In::new(from), Out::new(to), params),
            ),
            KeyKind::Float => gpu.launch(
                &kernels::uniform_float::<f64>(use_lines),
                config,
                stream,
                (In::new(from), Out::new(to), params),
            ),
            _ if width == 8 => gpu.launch(
                &kernels::uniform_int64(use_lines),
                config,
                stream,
                (In::new(from), Out::new(to), params),
            ),
            _ => gpu.launch(
                &kernels::uniform_int(use_lines),
                config,
                stream,
                (In::new(from), Out::new(to), params),
            ),
        }
    }
}
