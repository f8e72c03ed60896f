//! C ABI of the reductions: sum and normalise in place, of one array or of a
//! batch, on host pointers (any context: the CPU backend computes the same
//! thing with its reference) and on device pointers enqueued on a stream (GPU
//! contexts). One generic body per entry point, one-line wrappers per dtype.
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use super::{boundary, context, kp_context, kp_status, null_pointer, Failure};
use crate::api::reduce_batched::{BATCH_BAD_SUM, BATCH_OK};
use crate::error::Error;
use crate::float::Float;

/// A caller's device buffer seen as a cudarc slice, never freed here (also
/// when a panic unwinds past it).
struct Borrowed<T>(Option<CudaSlice<T>>);

impl<T> Borrowed<T> {
    /// # Safety
    /// `ptr` holds `len` values of `T` on the stream's GPU, alive until the work completes.
    unsafe fn new(stream: &Arc<CudaStream>, ptr: u64, len: usize) -> Self {
        Borrowed(Some(unsafe { stream.upgrade_device_ptr(ptr, len) }))
    }
    fn get(&mut self) -> &mut CudaSlice<T> {
        self.0.as_mut().expect("present until dropped")
    }
}

impl<T> Drop for Borrowed<T> {
    fn drop(&mut self) {
        if let Some(slice) = self.0.take() {
            slice.leak();
        }
    }
}

unsafe fn host_slice<'a, T>(name: &str, ptr: *const T, len: usize) -> Result<&'a [T], Failure> {
    if ptr.is_null() {
        return Err(null_pointer(name));
    }
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

fn non_zero(pointers: &[(&str, u64)]) -> Result<(), Failure> {
    match pointers.iter().find(|(_, p)| *p == 0) {
        Some((name, _)) => Err(null_pointer(name)),
        None => Ok(()),
    }
}

unsafe fn sum_host<T: Float>(
    ctx: *const kp_context,
    x: *const T,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let x = unsafe { host_slice("x", x, n) }?;
        let out = unsafe { sum.as_mut() }.ok_or_else(|| null_pointer("sum"))?;
        *out = ctx.kernpack.sum(x)?;
        Ok(())
    })
}

unsafe fn sum_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        non_zero(&[("x", x), ("sum", sum)])?;
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.sum_raw::<T>(&stream, x, n, sum) }?;
        Ok(())
    })
}

unsafe fn normalize_host<T: Float>(
    ctx: *const kp_context,
    x: *mut T,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        if x.is_null() {
            return Err(null_pointer("x"));
        }
        let x = unsafe { std::slice::from_raw_parts_mut(x, n) };
        let total = ctx.kernpack.normalize(x)?;
        if let Some(out) = unsafe { sum.as_mut() } {
            *out = total;
        }
        Ok(())
    })
}

unsafe fn normalize_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        non_zero(&[("x", x), ("sum", sum), ("status", status)])?;
        let stream = unsafe { ctx.stream(stream) }?;
        let (mut dx, mut dsum, mut dstatus) = unsafe {
            (
                Borrowed::<T>::new(&stream, x, n),
                Borrowed::<f64>::new(&stream, sum, 1),
                Borrowed::<i32>::new(&stream, status, 1),
            )
        };
        gpu.normalize_device(&stream, dx.get(), dsum.get(), dstatus.get())?;
        Ok(())
    })
}

unsafe fn batched_host<T: Float>(
    ctx: *const kp_context,
    x: *mut T,
    offsets: *const u64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let count = narrays
            .checked_add(1)
            .ok_or_else(|| Failure::from(Error::invalid("narrays is too large")))?;
        let offsets: Vec<usize> = unsafe { host_slice("offsets", offsets, count) }?
            .iter()
            .map(|&o| o as usize)
            .collect();
        if x.is_null() {
            return Err(null_pointer("x"));
        }
        if sums.is_null() {
            return Err(null_pointer("sums"));
        }
        if status.is_null() {
            return Err(null_pointer("status"));
        }
        let x = unsafe { std::slice::from_raw_parts_mut(x, *offsets.last().unwrap_or(&0)) };
        let done = ctx.kernpack.normalize_batched(x, &offsets)?;
        let sums = unsafe { std::slice::from_raw_parts_mut(sums, narrays) };
        let status = unsafe { std::slice::from_raw_parts_mut(status, narrays) };
        sums.copy_from_slice(&done.sums);
        status.fill(BATCH_OK);
        for &a in &done.failed {
            status[a] = BATCH_BAD_SUM;
        }
        Ok(())
    })
}

#[allow(clippy::too_many_arguments)]
unsafe fn batched_device<T: Float>(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    boundary(|| {
        let ctx = unsafe { context(ctx) }?;
        let gpu = ctx.gpu()?;
        non_zero(&[
            ("x", x),
            ("offsets", offsets),
            ("sums", sums),
            ("status", status),
        ])?;
        if narrays.checked_add(2).is_none() {
            return Err(Error::invalid("narrays is too large").into());
        }
        let stream = unsafe { ctx.stream(stream) }?;
        unsafe { gpu.normalize_batched_raw::<T>(&stream, x, n, offsets, narrays, sums, status) }?;
        Ok(())
    })
}

/// Sum of the `n` floats at host `x`, accumulated in double precision,
/// written to `*sum` (the same bits on every run of a GPU context). Runs on
/// the context's backend and returns with the result.
///
/// # Safety
/// `x` readable for `n` values; `sum` valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_f32(
    ctx: *const kp_context,
    x: *const f32,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { sum_host(ctx, x, n, sum) }
}

/// As `kp_sum_f32`, for doubles.
///
/// # Safety
/// As `kp_sum_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_f64(
    ctx: *const kp_context,
    x: *const f64,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { sum_host(ctx, x, n, sum) }
}

/// Sum of the `n` floats at device `x` into the device double at `sum`,
/// enqueued on `stream` (0: the default stream) with no synchronisation.
/// Needs a GPU context.
///
/// # Safety
/// `x` (n floats) and `sum` (one double) device allocations of this GPU,
/// alive until the work completes; `stream` 0 or a CUstream of the GPU's
/// primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    unsafe { sum_device::<f32>(ctx, x, n, sum, stream) }
}

/// As `kp_sum_device_f32`, for doubles.
///
/// # Safety
/// As `kp_sum_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_sum_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    stream: u64,
) -> kp_status {
    unsafe { sum_device::<f64>(ctx, x, n, sum, stream) }
}

/// Normalises the `n` floats at host `x` in place, `x <- x / sum(x)`, on the
/// context's backend, and writes the sum to `*sum` (NULL: not wanted). A zero
/// or non-finite sum (an empty array included) is KP_ERROR_INVALID_ARGUMENT,
/// and then `x` and `*sum` are unchanged.
///
/// # Safety
/// `x` readable and writable for `n` values; `sum` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_f32(
    ctx: *const kp_context,
    x: *mut f32,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { normalize_host(ctx, x, n, sum) }
}

/// As `kp_normalize_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_f64(
    ctx: *const kp_context,
    x: *mut f64,
    n: usize,
    sum: *mut f64,
) -> kp_status {
    unsafe { normalize_host(ctx, x, n, sum) }
}

/// Normalises the `n` floats at device `x` in place, enqueued on `stream`
/// (0: the default stream) with no synchronisation. The device double at
/// `sum` receives the sum and the device int at `status` 0, or 1 when the sum
/// is zero or not finite and `x` was left unchanged: read `status` before
/// trusting `x`. Needs a GPU context.
///
/// # Safety
/// `x` (n floats), `sum` (one double), `status` (one int) device allocations
/// of this GPU, alive until the work completes; `stream` 0 or a CUstream of
/// the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { normalize_device::<f32>(ctx, x, n, sum, status, stream) }
}

/// As `kp_normalize_device_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    sum: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { normalize_device::<f64>(ctx, x, n, sum, status, stream) }
}

/// Normalises `narrays` arrays of host floats in place in one call: array a
/// is `x[offsets[a] .. offsets[a+1]-1]`, `offsets` has narrays + 1 entries,
/// from 0, non-decreasing. Writes every array's sum to `sums[a]` and its
/// status to `status[a]`: 0 normalised, 1 sum zero or not finite (empty
/// arrays too), array unchanged. Returns KP_OK when the call ran, whether or
/// not some arrays had a bad sum. Invalid offsets: KP_ERROR_INVALID_ARGUMENT
/// and nothing written. On a GPU context the sums have the bits of
/// `kp_sum_f32` of each array alone.
///
/// # Safety
/// `offsets` readable for narrays + 1 values, `x` for offsets[narrays]
/// (readable and writable), `sums` and `status` writable for narrays.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_f32(
    ctx: *const kp_context,
    x: *mut f32,
    offsets: *const u64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    unsafe { batched_host(ctx, x, offsets, narrays, sums, status) }
}

/// As `kp_normalize_batched_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_batched_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_f64(
    ctx: *const kp_context,
    x: *mut f64,
    offsets: *const u64,
    narrays: usize,
    sums: *mut f64,
    status: *mut i32,
) -> kp_status {
    unsafe { batched_host(ctx, x, offsets, narrays, sums, status) }
}

/// The batch on device memory, enqueued on `stream` (0: the default stream)
/// with no synchronisation, four launches whatever `narrays`: `x` holds `n`
/// floats, `offsets` narrays + 1 `int64_t`, `sums` narrays doubles and
/// `status` narrays ints, all on the device. `status[a]`: 0 normalised, 1 sum
/// zero or not finite (array a unchanged), 2 offsets invalid (outside
/// 0..n or decreasing: checked on the device, nothing changed, sums NaN).
/// Needs a GPU context.
///
/// # Safety
/// Device allocations of this GPU with the stated sizes, alive until the
/// work completes; `stream` 0 or a CUstream of the GPU's primary context.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_device_f32(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { batched_device::<f32>(ctx, x, n, offsets, narrays, sums, status, stream) }
}

/// As `kp_normalize_batched_device_f32`, for doubles.
///
/// # Safety
/// As `kp_normalize_batched_device_f32`.
#[no_mangle]
pub unsafe extern "C" fn kp_normalize_batched_device_f64(
    ctx: *const kp_context,
    x: u64,
    n: usize,
    offsets: u64,
    narrays: usize,
    sums: u64,
    status: u64,
    stream: u64,
) -> kp_status {
    unsafe { batched_device::<f64>(ctx, x, n, offsets, narrays, sums, status, stream) }
}
